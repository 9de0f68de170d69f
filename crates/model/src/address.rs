//! The one place where crest reads a URL: targets, request URLs, Prometheus endpoints and
//! database URLs all go through [`parse`].
//!
//! Hand-written splitting let `http://127.0.0.1:83999/` through with port 80; the `url` crate
//! follows the WHATWG rules every browser uses, and the checks crest adds on top (a known scheme,
//! a host, a port from 1 to 65535) are made here once, with messages that name the URL without
//! its password.

use crate::redact;
pub use url::Url;

/// A URL crest cannot use. The message names the URL as it may be shown.
#[derive(Clone, Debug, PartialEq, Eq, thiserror::Error)]
#[error("{0}")]
pub struct UrlError(String);

/// Schemes of HTTP targets.
pub const HTTP: &[&str] = &["http", "https"];
/// Schemes of PostgreSQL URLs.
pub const POSTGRES: &[&str] = &["postgres", "postgresql"];

/// A `ws://` or `wss://` URL as the `http://` or `https://` one its WebSocket upgrade is sent
/// to, and a `grpc://` or `grpcs://` one as the HTTP/2 server it names, so that such a target
/// is an endpoint like any other; anything else as it is.
pub fn stream_as_http(text: &str) -> std::borrow::Cow<'_, str> {
    let t = text.trim_start();
    for (ws, http) in [
        ("ws://", "http://"),
        ("wss://", "https://"),
        ("grpc://", "http://"),
        ("grpcs://", "https://"),
    ] {
        if t.get(..ws.len()).is_some_and(|p| p.eq_ignore_ascii_case(ws)) {
            return format!("{http}{}", &t[ws.len()..]).into();
        }
    }
    text.into()
}

/// Parses an absolute URL whose scheme is one of `schemes`, with a host and, when given, a port
/// from 1 to 65535.
pub fn parse(text: &str, schemes: &[&str]) -> Result<Url, UrlError> {
    let shown = redact::url(text);
    let err = |why: String| UrlError(format!("URL {shown:?}: {why}"));
    let wanted = || {
        schemes
            .iter()
            .map(|s| format!("{s}://"))
            .collect::<Vec<_>>()
            .join(" or ")
    };
    let url = Url::parse(text.trim()).map_err(|e| match e {
        url::ParseError::InvalidPort => err(match written_port(text) {
            Some(p) => format!("the port {p} is out of range (1 to 65535)"),
            None => "the port is not a number from 1 to 65535".into(),
        }),
        url::ParseError::RelativeUrlWithoutBase => err(format!("it must start with {}", wanted())),
        other => err(format!("not a valid URL: {other}")),
    })?;
    if !schemes.contains(&url.scheme()) {
        return Err(err(format!("it must start with {}", wanted())));
    }
    if url.port() == Some(0) {
        return Err(err("the port 0 is out of range (1 to 65535)".into()));
    }
    let needs_host = schemes.iter().any(|s| HTTP.contains(s));
    // WHATWG reads `http:///x` as host `x`; written that way, the host was forgotten.
    let written_host = text
        .trim()
        .split_once("://")
        .is_some_and(|(_, r)| !r.is_empty() && !r.starts_with(['/', '?', '#']));
    if needs_host && (!written_host || url.host_str().is_none_or(str::is_empty)) {
        return Err(err("it has no host".into()));
    }
    Ok(url)
}

/// The port as written after the host, for messages: `83999` in `http://h:83999/`.
fn written_port(text: &str) -> Option<&str> {
    let rest = text.split_once("://")?.1;
    let authority = rest.split(['/', '?', '#']).next()?;
    let host_port = authority.rsplit_once('@').map_or(authority, |(_, h)| h);
    let port = host_port.rsplit_once(':')?.1;
    (!port.is_empty() && !port.ends_with(']')).then_some(port)
}

/// Splits an HTTP URL into its checked base (`https://host:port`) and the rest as written
/// (`/path?query`, `/` when absent), so that the rest may be a template. The base cannot be.
pub fn split_base(text: &str) -> Result<(Url, String), UrlError> {
    let text = text.trim();
    let after = text.find("://").map_or(0, |i| i + 3);
    let end = text[after..].find(['/', '?', '#']).map_or(text.len(), |i| after + i);
    let base = parse(&text[..end], HTTP)?;
    let rest = match &text[end..] {
        "" => "/".to_string(),
        r if r.starts_with('/') => r.to_string(),
        r => format!("/{r}"),
    };
    Ok((base, rest))
}

/// `host:port` as the Host header gives it: the port only when it is not the scheme's default.
pub fn authority(url: &Url) -> String {
    let host = url.host_str().unwrap_or("");
    match url.port() {
        Some(p) => format!("{host}:{p}"),
        None => host.to_string(),
    }
}

/// The request target of an HTTP URL: path and query, `/` when empty. The fragment is never sent.
pub fn path_and_query(url: &Url) -> &str {
    let s = &url[url::Position::BeforePath..url::Position::AfterQuery];
    if s.is_empty() {
        "/"
    } else {
        s
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn ports_out_of_range_are_refused_with_the_url() {
        for (text, needle) in [
            ("http://127.0.0.1:83999/", "83999"),
            ("http://127.0.0.1:70000", "70000"),
            ("http://127.0.0.1:-1/", "-1"),
            ("http://127.0.0.1:0/", "port 0"),
            ("https://u:hunter2@h:99999/", "99999"),
        ] {
            let e = parse(text, HTTP).unwrap_err().to_string();
            assert!(e.contains(needle), "{text}: {e}");
            assert!(!e.contains("hunter2"), "{e}");
        }
        assert_eq!(parse("http://127.0.0.1:65535/", HTTP).unwrap().port(), Some(65535));
        let e = parse("ftp://h/", HTTP).unwrap_err().to_string();
        assert!(e.contains("http:// or https://"), "{e}");
        assert!(parse("http:///x", HTTP).is_err());
        assert!(parse("127.0.0.1:8080", HTTP).is_err());
        assert!(parse("postgres://u@127.0.0.1:70000/db", POSTGRES).is_err());
    }

    #[test]
    fn bases_split_from_templated_rests() {
        let (b, r) = split_base("http://h:8080/a/${id}?x=${y}").unwrap();
        assert_eq!((authority(&b).as_str(), r.as_str()), ("h:8080", "/a/${id}?x=${y}"));
        let (b, r) = split_base("https://[::1]:443").unwrap();
        assert_eq!((authority(&b).as_str(), r.as_str()), ("[::1]", "/"));
        let (_, r) = split_base("http://h?q=1").unwrap();
        assert_eq!(r, "/?q=1");
        assert!(split_base("http://h:83999/x").is_err());
        let u = parse("http://u:p@h:81/a%20b?q=1#frag", HTTP).unwrap();
        assert_eq!(path_and_query(&u), "/a%20b?q=1");
        assert_eq!(path_and_query(&parse("http://h", HTTP).unwrap()), "/");
    }
}
