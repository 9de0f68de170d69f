//! curl's options, read as curl reads them: long (`--data x`, `--data=x`, `--no-compressed`) and
//! short (`-d x`, `-dx`, `-sSL`, `-XPOST`), in any order around the URLs. Each option is
//! handled, ignored (it changes only what curl shows or writes, or how it waits), noted (it is
//! about the client's network, which the scenario leaves to crest's settings) or refused (it
//! changes what is sent in a way crest cannot), so nothing curl would send is silently lost.

use crate::ImportError;

/// What an option does to the import.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
enum Kind {
    Request,
    Header,
    Data,
    DataRaw,
    DataBinary,
    DataUrlencode,
    Json,
    Form,
    FormString,
    User,
    Bearer,
    Cookie,
    UserAgent,
    Referer,
    Url,
    UrlQuery,
    MaxRedirs,
    Range,
    Compressed,
    Insecure,
    Location,
    Get,
    Head,
    Http11,
    Http2,
    Http2Prior,
    /// Nothing to do: the option changes what curl shows, writes or how long it waits.
    Ignore,
    /// Left out with a note: the client's network or trust, set in crest's own settings.
    Note(&'static str),
    /// Refused: crest cannot send what curl would.
    Refuse(&'static str),
}

struct Spec {
    long: &'static str,
    short: Option<char>,
    value: bool,
    kind: Kind,
}

const fn o(long: &'static str, short: Option<char>, value: bool, kind: Kind) -> Spec {
    Spec {
        long,
        short,
        value,
        kind,
    }
}

const AUTH: &str = "crest sends Basic authorization (-u) or headers you give; other schemes need their handshake";
const PROXY_AUTH: &str = "crest's proxy (defaults.proxy) takes Basic credentials only";
const CERT: &str = "a client certificate is a scenario setting: set defaults.cert and defaults.key";

#[rustfmt::skip]
const SPECS: &[Spec] = &[
    o("request", Some('X'), true, Kind::Request),
    o("header", Some('H'), true, Kind::Header),
    o("data", Some('d'), true, Kind::Data),
    o("data-ascii", None, true, Kind::Data),
    o("data-raw", None, true, Kind::DataRaw),
    o("data-binary", None, true, Kind::DataBinary),
    o("data-urlencode", None, true, Kind::DataUrlencode),
    o("json", None, true, Kind::Json),
    o("form", Some('F'), true, Kind::Form),
    o("form-string", None, true, Kind::FormString),
    o("user", Some('u'), true, Kind::User),
    o("oauth2-bearer", None, true, Kind::Bearer),
    o("cookie", Some('b'), true, Kind::Cookie),
    o("user-agent", Some('A'), true, Kind::UserAgent),
    o("referer", Some('e'), true, Kind::Referer),
    o("url", None, true, Kind::Url),
    o("url-query", None, true, Kind::UrlQuery),
    o("max-redirs", None, true, Kind::MaxRedirs),
    o("range", Some('r'), true, Kind::Range),
    o("compressed", None, false, Kind::Compressed),
    o("insecure", Some('k'), false, Kind::Insecure),
    o("location", Some('L'), false, Kind::Location),
    o("location-trusted", None, false, Kind::Location),
    o("get", Some('G'), false, Kind::Get),
    o("head", Some('I'), false, Kind::Head),
    o("http1.1", None, false, Kind::Http11),
    o("http2", None, false, Kind::Http2),
    o("http2-prior-knowledge", None, false, Kind::Http2Prior),
    o("basic", None, false, Kind::Ignore),
    // What curl shows or writes, and how long or how often it tries.
    o("silent", Some('s'), false, Kind::Ignore),
    o("show-error", Some('S'), false, Kind::Ignore),
    o("verbose", Some('v'), false, Kind::Ignore),
    o("include", Some('i'), false, Kind::Ignore),
    o("show-headers", None, false, Kind::Ignore),
    o("output", Some('o'), true, Kind::Ignore),
    o("output-dir", None, true, Kind::Ignore),
    o("remote-name", Some('O'), false, Kind::Ignore),
    o("remote-name-all", None, false, Kind::Ignore),
    o("remote-header-name", Some('J'), false, Kind::Ignore),
    o("remote-time", Some('R'), false, Kind::Ignore),
    o("create-dirs", None, false, Kind::Ignore),
    o("write-out", Some('w'), true, Kind::Ignore),
    o("dump-header", Some('D'), true, Kind::Ignore),
    o("cookie-jar", Some('c'), true, Kind::Ignore),
    o("junk-session-cookies", Some('j'), false, Kind::Ignore),
    o("trace", None, true, Kind::Ignore),
    o("trace-ascii", None, true, Kind::Ignore),
    o("trace-time", None, false, Kind::Ignore),
    o("stderr", None, true, Kind::Ignore),
    o("libcurl", None, true, Kind::Ignore),
    o("progress-bar", Some('#'), false, Kind::Ignore),
    o("no-progress-meter", None, false, Kind::Ignore),
    o("styled-output", None, false, Kind::Ignore),
    o("fail", Some('f'), false, Kind::Ignore),
    o("fail-with-body", None, false, Kind::Ignore),
    o("fail-early", None, false, Kind::Ignore),
    o("no-buffer", Some('N'), false, Kind::Ignore),
    o("disable", Some('q'), false, Kind::Ignore),
    o("globoff", Some('g'), false, Kind::Ignore),
    o("path-as-is", None, false, Kind::Ignore),
    o("parallel", Some('Z'), false, Kind::Ignore),
    o("parallel-max", None, true, Kind::Ignore),
    o("max-time", Some('m'), true, Kind::Ignore),
    o("connect-timeout", None, true, Kind::Ignore),
    o("expect100-timeout", None, true, Kind::Ignore),
    o("retry", None, true, Kind::Ignore),
    o("retry-delay", None, true, Kind::Ignore),
    o("retry-max-time", None, true, Kind::Ignore),
    o("retry-all-errors", None, false, Kind::Ignore),
    o("retry-connrefused", None, false, Kind::Ignore),
    o("speed-time", Some('y'), true, Kind::Ignore),
    o("speed-limit", Some('Y'), true, Kind::Ignore),
    o("limit-rate", None, true, Kind::Ignore),
    o("max-filesize", None, true, Kind::Ignore),
    o("keepalive", None, false, Kind::Ignore),
    o("keepalive-time", None, true, Kind::Ignore),
    o("tcp-nodelay", None, false, Kind::Ignore),
    o("tcp-fastopen", None, false, Kind::Ignore),
    o("sessionid", None, false, Kind::Ignore),
    o("alpn", None, false, Kind::Ignore),
    o("npn", None, false, Kind::Ignore),
    o("ipv4", Some('4'), false, Kind::Ignore),
    o("ipv6", Some('6'), false, Kind::Ignore),
    o("ssl-no-revoke", None, false, Kind::Ignore),
    o("ssl-revoke-best-effort", None, false, Kind::Ignore),
    o("ssl-reqd", None, false, Kind::Ignore),
    o("tlsv1", Some('1'), false, Kind::Ignore),
    o("tlsv1.0", None, false, Kind::Ignore),
    o("tlsv1.1", None, false, Kind::Ignore),
    o("tlsv1.2", None, false, Kind::Ignore),
    o("tlsv1.3", None, false, Kind::Ignore),
    o("tls-max", None, true, Kind::Ignore),
    o("ciphers", None, true, Kind::Ignore),
    o("tls13-ciphers", None, true, Kind::Ignore),
    o("raw", None, false, Kind::Ignore),
    o("xattr", None, false, Kind::Ignore),
    o("suppress-connect-headers", None, false, Kind::Ignore),
    o("happy-eyeballs-timeout-ms", None, true, Kind::Ignore),
    // The client's network and trust: crest's own settings.
    o("proxy", Some('x'), true, Kind::Note("left out: set defaults.proxy (or HTTPS_PROXY) for crest's proxy")),
    o("proxy-user", Some('U'), true, Kind::Note("left out: give the proxy's credentials in defaults.proxy")),
    o("noproxy", None, true, Kind::Note("left out: crest reads NO_PROXY")),
    o("resolve", None, true, Kind::Note("left out: set defaults.resolve")),
    o("connect-to", None, true, Kind::Note("left out: set defaults.resolve, or CREST_TARGET")),
    o("cacert", None, true, Kind::Note("left out: set defaults.cacert")),
    o("capath", None, true, Kind::Note("left out: set defaults.cacert")),
    o("pinnedpubkey", None, true, Kind::Note("left out: crest does not pin keys")),
    o("interface", None, true, Kind::Note("left out: crest picks its own source address")),
    o("dns-servers", None, true, Kind::Note("left out: crest uses the system's resolver")),
    // What crest cannot send.
    o("upload-file", Some('T'), true, Kind::Refuse("crest sends bodies with a request's body_file; use --data-binary @FILE with -X PUT")),
    o("unix-socket", None, true, Kind::Refuse("crest connects over TCP only")),
    o("abstract-unix-socket", None, true, Kind::Refuse("crest connects over TCP only")),
    o("digest", None, false, Kind::Refuse(AUTH)),
    o("ntlm", None, false, Kind::Refuse(AUTH)),
    o("ntlm-wb", None, false, Kind::Refuse(AUTH)),
    o("negotiate", None, false, Kind::Refuse(AUTH)),
    o("anyauth", None, false, Kind::Refuse(AUTH)),
    o("aws-sigv4", None, true, Kind::Refuse("each request would need a fresh signature, which crest does not compute")),
    o("delegation", None, true, Kind::Refuse(AUTH)),
    o("proxy-ntlm", None, false, Kind::Refuse(PROXY_AUTH)),
    o("proxy-digest", None, false, Kind::Refuse(PROXY_AUTH)),
    o("proxy-negotiate", None, false, Kind::Refuse(PROXY_AUTH)),
    o("proxy-anyauth", None, false, Kind::Refuse(PROXY_AUTH)),
    o("cert", Some('E'), true, Kind::Refuse(CERT)),
    o("key", None, true, Kind::Refuse(CERT)),
    o("cert-type", None, true, Kind::Refuse(CERT)),
    o("key-type", None, true, Kind::Refuse(CERT)),
    o("pass", None, true, Kind::Refuse(CERT)),
    o("http1.0", Some('0'), false, Kind::Refuse("crest speaks HTTP/1.1 and HTTP/2")),
    o("http0.9", None, false, Kind::Refuse("crest speaks HTTP/1.1 and HTTP/2")),
    o("http3", None, false, Kind::Refuse("crest speaks HTTP/1.1 and HTTP/2")),
    o("http3-only", None, false, Kind::Refuse("crest speaks HTTP/1.1 and HTTP/2")),
    o("next", Some(':'), false, Kind::Refuse("give each request a curl command of its own")),
    o("config", Some('K'), true, Kind::Refuse("give the options on the command line")),
    o("netrc", Some('n'), false, Kind::Refuse("give the credentials with -u")),
    o("netrc-optional", None, false, Kind::Refuse("give the credentials with -u")),
    o("netrc-file", None, true, Kind::Refuse("give the credentials with -u")),
    o("time-cond", Some('z'), true, Kind::Refuse("give the If-Modified-Since header with -H")),
    o("continue-at", Some('C'), true, Kind::Refuse("give the Range header with -H")),
    o("tr-encoding", None, false, Kind::Refuse("crest does not ask for transfer compression")),
    o("request-target", None, true, Kind::Refuse("crest sends the URL's path")),
    o("quote", Some('Q'), true, Kind::Refuse("crest speaks HTTP only")),
    o("telnet-option", Some('t'), true, Kind::Refuse("crest speaks HTTP only")),
    o("mail-from", None, true, Kind::Refuse("crest speaks HTTP only")),
    o("mail-rcpt", None, true, Kind::Refuse("crest speaks HTTP only")),
    o("variable", None, true, Kind::Refuse("give the values themselves")),
    o("expand-data", None, true, Kind::Refuse("give the values themselves")),
    o("expand-url", None, true, Kind::Refuse("give the values themselves")),
    o("expand-header", None, true, Kind::Refuse("give the values themselves")),
];

/// One curl command's options, as read.
#[derive(Debug, Default)]
pub(crate) struct Options {
    pub urls: Vec<String>,
    pub method: Option<String>,
    pub head: bool,
    pub get: bool,
    /// `-H` values as given, in order.
    pub headers: Vec<String>,
    pub data: Vec<Data>,
    pub json: bool,
    pub form: Vec<FormArg>,
    pub url_query: Vec<String>,
    pub user: Option<String>,
    pub bearer: Option<String>,
    pub cookies: Vec<String>,
    pub user_agent: Option<String>,
    pub referer: Option<String>,
    pub range: Option<String>,
    pub compressed: bool,
    pub insecure: bool,
    pub location: bool,
    pub max_redirs: Option<i64>,
    pub http: Option<&'static str>,
    pub notes: Vec<String>,
}

/// A piece of `-d`-like data, in order.
#[derive(Debug, Clone, PartialEq, Eq)]
pub(crate) enum Data {
    /// Text sent as it is.
    Text(String),
    /// A file sent as it is; the option that named it, for messages.
    File { path: String, option: String },
}

/// A `-F` argument: the text after the option, and whether it was `--form-string` (no `@`,
/// `<` or `;type=` in it).
#[derive(Debug, Clone, PartialEq, Eq)]
pub(crate) struct FormArg {
    pub text: String,
    pub literal: bool,
}

fn refuse(option: &str, message: impl Into<String>) -> ImportError {
    ImportError::CurlOption {
        option: option.to_string(),
        message: message.into(),
    }
}

/// The options of one command (`words` after `curl`).
pub(crate) fn parse(words: &[String]) -> Result<Options, ImportError> {
    let mut out = Options::default();
    let mut i = 0;
    let mut only_urls = false;
    while i < words.len() {
        let w = &words[i];
        i += 1;
        if only_urls || !w.starts_with('-') || w == "-" {
            out.urls.push(w.clone());
            continue;
        }
        if w == "--" {
            only_urls = true;
            continue;
        }
        if let Some(long) = w.strip_prefix("--") {
            let (name, inline) = match long.split_once('=') {
                Some((n, v)) => (n, Some(v.to_string())),
                None => (long, None),
            };
            let shown = format!("--{name}");
            let (spec, negated) = match SPECS.iter().find(|s| s.long == name) {
                Some(s) => (s, false),
                None => match name
                    .strip_prefix("no-")
                    .and_then(|n| SPECS.iter().find(|s| s.long == n && !s.value))
                {
                    Some(s) => (s, true),
                    None => return Err(refuse(&shown, "not a curl option crest knows")),
                },
            };
            let value = if spec.value {
                match inline {
                    Some(v) => Some(v),
                    None => {
                        let v = words
                            .get(i)
                            .ok_or_else(|| refuse(&shown, "needs a value, and none follows"))?;
                        i += 1;
                        Some(v.clone())
                    }
                }
            } else {
                if inline.is_some() {
                    return Err(refuse(&shown, "takes no value"));
                }
                None
            };
            apply(&mut out, spec, &shown, value, negated)?;
            continue;
        }
        // Short options, several to a word; one that takes a value takes the rest of the word,
        // or the next word.
        let chars: Vec<char> = w.chars().skip(1).collect();
        let mut j = 0;
        while j < chars.len() {
            let c = chars[j];
            j += 1;
            let shown = format!("-{c}");
            let spec = SPECS
                .iter()
                .find(|s| s.short == Some(c))
                .ok_or_else(|| refuse(&shown, "not a curl option crest knows"))?;
            let value = if spec.value {
                let rest: String = chars[j..].iter().collect();
                j = chars.len();
                if rest.is_empty() {
                    let v = words
                        .get(i)
                        .ok_or_else(|| refuse(&shown, "needs a value, and none follows"))?;
                    i += 1;
                    Some(v.clone())
                } else {
                    Some(rest)
                }
            } else {
                None
            };
            apply(&mut out, spec, &shown, value, false)?;
        }
    }
    Ok(out)
}

fn apply(out: &mut Options, spec: &Spec, shown: &str, value: Option<String>, negated: bool) -> Result<(), ImportError> {
    let v = value.unwrap_or_default();
    let on = !negated;
    match spec.kind {
        Kind::Request => {
            // A method is a token (RFC 9110): what curl would send as it is, a server refuses.
            let token = |c: char| c.is_ascii_alphanumeric() || "!#$%&'*+-.^_`|~".contains(c);
            if v.is_empty() || !v.chars().all(token) {
                return Err(refuse(
                    shown,
                    format!("{v:?} is not an HTTP method: one word of letters, digits and !#$%&'*+-.^_`|~"),
                ));
            }
            out.method = Some(v)
        }
        Kind::Header => {
            if v.starts_with('@') {
                return Err(refuse(
                    shown,
                    "reads headers from a file; give each with -H 'Name: value'",
                ));
            }
            out.headers.push(v);
        }
        Kind::Data => match v.strip_prefix('@') {
            Some(path) => {
                file_data(path, shown)?;
                out.notes.push(format!(
                    "{shown} @{path}: the file is sent as it is; curl would have left out its line breaks (--data-binary sends it as it is)"
                ));
                out.data.push(Data::File {
                    path: path.to_string(),
                    option: shown.to_string(),
                });
            }
            None => out.data.push(Data::Text(v)),
        },
        Kind::DataRaw => out.data.push(Data::Text(v)),
        Kind::DataBinary | Kind::Json => {
            if spec.kind == Kind::Json {
                out.json = true;
            }
            match v.strip_prefix('@') {
                Some(path) => {
                    file_data(path, shown)?;
                    out.data.push(Data::File {
                        path: path.to_string(),
                        option: shown.to_string(),
                    });
                }
                None => out.data.push(Data::Text(v)),
            }
        }
        Kind::DataUrlencode => out.data.push(Data::Text(urlencode_arg(&v, shown)?)),
        Kind::Form => out.form.push(FormArg {
            text: v,
            literal: false,
        }),
        Kind::FormString => out.form.push(FormArg { text: v, literal: true }),
        Kind::User => out.user = Some(v),
        Kind::Bearer => out.bearer = Some(v),
        Kind::Cookie => out.cookies.push(v),
        Kind::UserAgent => out.user_agent = Some(v),
        Kind::Referer => out.referer = Some(v.strip_suffix(";auto").unwrap_or(&v).to_string()),
        Kind::Url => out.urls.push(v),
        Kind::UrlQuery => out.url_query.push(match v.strip_prefix('+') {
            Some(raw) => raw.to_string(),
            None => urlencode_arg(&v, shown)?,
        }),
        Kind::MaxRedirs => {
            out.max_redirs = Some(
                v.trim()
                    .parse()
                    .map_err(|_| refuse(shown, format!("{v:?} is not a number")))?,
            )
        }
        Kind::Range => out.range = Some(v),
        Kind::Compressed => out.compressed = on,
        Kind::Insecure => out.insecure = on,
        Kind::Location => out.location = on,
        Kind::Get => out.get = on,
        Kind::Head => out.head = on,
        Kind::Http11 => out.http = None,
        Kind::Http2 => out.http = Some("auto"),
        Kind::Http2Prior => out.http = Some("2"),
        Kind::Ignore => {}
        Kind::Note(why) => out.notes.push(format!("{shown}: {why}")),
        Kind::Refuse(why) => return Err(refuse(shown, why)),
    }
    Ok(())
}

fn file_data(path: &str, shown: &str) -> Result<(), ImportError> {
    if path == "-" {
        return Err(refuse(
            shown,
            "@- reads the body from stdin; save it to a file and give @FILE",
        ));
    }
    Ok(())
}

/// `--data-urlencode`'s argument as curl sends it: `content`, `=content`, `name=content`, with
/// the content encoded; `@file` and `name@file` read a file, which an import does not.
fn urlencode_arg(v: &str, shown: &str) -> Result<String, ImportError> {
    match v.find(['=', '@']) {
        Some(at) if v.as_bytes()[at] == b'=' => {
            let (name, content) = (&v[..at], &v[at + 1..]);
            Ok(if name.is_empty() {
                form_escape(content)
            } else {
                format!("{name}={}", form_escape(content))
            })
        }
        Some(_) => Err(refuse(
            shown,
            "@FILE encodes a file's content, which the import does not read; give the value itself",
        )),
        None => Ok(form_escape(v)),
    }
}

/// `--data-urlencode`'s encoding: curl's URL encoding, but a space as `+`, as forms write it
/// (and curl has since 7.86).
fn form_escape(s: &str) -> String {
    escape(s).replace("%20", "+")
}

/// curl's URL encoding (`curl_easy_escape`): every byte but letters, digits and `-._~` as `%XX`.
pub(crate) fn escape(s: &str) -> String {
    let mut out = String::with_capacity(s.len());
    for b in s.bytes() {
        if b.is_ascii_alphanumeric() || b"-._~".contains(&b) {
            out.push(b as char);
        } else {
            out.push_str(&format!("%{b:02X}"));
        }
    }
    out
}

#[cfg(test)]
mod tests {
    #![allow(clippy::unwrap_used)]
    use super::*;

    fn p(args: &[&str]) -> Result<Options, ImportError> {
        parse(&args.iter().map(|s| s.to_string()).collect::<Vec<_>>())
    }

    #[test]
    fn long_short_combined_and_inline_values() {
        let o = p(&[
            "-sSLkXPUT",
            "https://a/x",
            "--header=A: 1",
            "-H",
            "B: 2",
            "-dq=1",
            "--data",
            "r=2",
        ])
        .unwrap();
        assert!(o.location && o.insecure);
        assert_eq!(o.method.as_deref(), Some("PUT"));
        assert_eq!(o.urls, vec!["https://a/x"]);
        assert_eq!(o.headers, vec!["A: 1", "B: 2"]);
        assert_eq!(o.data, vec![Data::Text("q=1".into()), Data::Text("r=2".into())]);
    }

    #[test]
    fn no_prefix_turns_a_flag_off() {
        let o = p(&["--compressed", "--no-compressed", "-L", "--no-location", "x"]).unwrap();
        assert!(!o.compressed && !o.location);
    }

    #[test]
    fn data_urlencode_forms() {
        let o = p(&[
            "--data-urlencode",
            "a b",
            "--data-urlencode",
            "=c&d",
            "--data-urlencode",
            "n=x y/z",
        ])
        .unwrap();
        assert_eq!(
            o.data,
            vec![
                Data::Text("a+b".into()),
                Data::Text("c%26d".into()),
                Data::Text("n=x+y%2Fz".into())
            ]
        );
    }

    #[test]
    fn unsupported_options_are_named() {
        for (args, option) in [
            (&["-T", "f", "x"][..], "-T"),
            (&["--proxy-ntlm", "x"][..], "--proxy-ntlm"),
            (&["--unix-socket", "/s", "x"][..], "--unix-socket"),
            (&["-sST", "f", "x"][..], "-T"),
            (&["--frobnicate", "x"][..], "--frobnicate"),
            (&["x", "-H"][..], "-H"),
            (&["--data-urlencode", "n@file", "x"][..], "--data-urlencode"),
        ] {
            match p(args) {
                Err(ImportError::CurlOption { option: o, .. }) => assert_eq!(o, option, "{args:?}"),
                other => panic!("{args:?}: {other:?}"),
            }
        }
    }

    #[test]
    fn output_options_are_ignored_and_network_ones_noted() {
        let o = p(&[
            "-o",
            "out.html",
            "-w",
            "%{http_code}",
            "--max-time",
            "5",
            "-x",
            "http://p:3128",
            "x",
        ])
        .unwrap();
        assert_eq!(o.urls, vec!["x"]);
        assert_eq!(o.notes.len(), 1);
        assert!(o.notes[0].starts_with("-x: "), "{:?}", o.notes);
    }
}
