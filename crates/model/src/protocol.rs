//! How HTTP requests are spoken: the version and the client features a plan turns on.
//!
//! Kept apart from the plan types so that quick mode and scenarios share one description, and
//! the HTTP driver reads the same options whichever front end produced them.

use std::fmt;
use std::str::FromStr;

/// Which HTTP version requests use.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub enum HttpVersion {
    /// HTTP/1.1, one request at a time per connection.
    #[default]
    Http1,
    /// HTTP/2: over TLS negotiated with ALPN, over cleartext with prior knowledge.
    Http2,
    /// HTTP/2 when the TLS server picks `h2` in ALPN, HTTP/1.1 otherwise (and on cleartext).
    Auto,
}

impl HttpVersion {
    /// The names a scenario or flag uses, in order.
    pub const NAMES: [&'static str; 3] = ["1.1", "2", "auto"];
}

impl fmt::Display for HttpVersion {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(match self {
            HttpVersion::Http1 => "1.1",
            HttpVersion::Http2 => "2",
            HttpVersion::Auto => "auto",
        })
    }
}

/// The text named no HTTP version.
#[derive(Debug, thiserror::Error)]
#[error("unknown HTTP version {0:?} (expected 1.1, 2 or auto)")]
pub struct UnknownVersion(String);

impl FromStr for HttpVersion {
    type Err = UnknownVersion;

    fn from_str(s: &str) -> Result<Self, Self::Err> {
        match s {
            "1" | "1.1" => Ok(HttpVersion::Http1),
            "2" => Ok(HttpVersion::Http2),
            "auto" => Ok(HttpVersion::Auto),
            _ => Err(UnknownVersion(s.to_string())),
        }
    }
}

/// The most redirects a request may follow: curl's default limit. A chain longer than this is a
/// loop, and each hop it follows is kept in the request's record.
pub const MAX_REDIRECTS: u32 = 50;

/// HTTP client behaviour for one run.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct HttpOptions {
    /// The version spoken.
    pub version: HttpVersion,
    /// HTTP/2: most virtual users sharing one connection, each with one stream in flight.
    pub max_streams: u32,
    /// Redirects followed per request (0: none; the 3xx response is the result), at most
    /// [`MAX_REDIRECTS`].
    pub max_redirects: u32,
    /// Send `Accept-Encoding: gzip, deflate, br` and decode what comes back.
    pub compression: bool,
    /// Keep cookies per virtual user and send them back.
    pub cookies: bool,
}

impl Default for HttpOptions {
    fn default() -> Self {
        HttpOptions {
            version: HttpVersion::Http1,
            max_streams: 100,
            max_redirects: 0,
            compression: false,
            cookies: false,
        }
    }
}

/// How connections reach servers: through which proxy, and at which addresses. Shared by quick
/// mode and scenarios, like [`HttpOptions`].
#[derive(Clone, Default, PartialEq, Eq)]
pub struct Network {
    /// The proxy for `http://` URLs (`--proxy`, `HTTP_PROXY`). May hold `user:pass@`: a secret.
    pub http_proxy: Option<String>,
    /// The proxy for `https://` URLs (`--proxy`, `HTTPS_PROXY`).
    pub https_proxy: Option<String>,
    /// Hosts reached directly (`NO_PROXY`): a name matches itself and its subdomains; `*` all.
    pub no_proxy: Vec<String>,
    /// Addresses given for `host:port`, in place of the resolver's (`--resolve`).
    pub resolve: Vec<Resolve>,
    /// Each new connection resolves its host itself, timed as its own phase
    /// (`--dns-per-connection`), rather than every connection using the addresses resolved
    /// once when the plan was prepared. Names with `--resolve` addresses, IP literals and
    /// hosts behind a proxy are not resolved by crest, so they have no such phase.
    pub dns_per_connection: bool,
}

impl fmt::Debug for Network {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        let shown = |p: &Option<String>| p.as_deref().map(crate::redact::url);
        f.debug_struct("Network")
            .field("http_proxy", &shown(&self.http_proxy))
            .field("https_proxy", &shown(&self.https_proxy))
            .field("no_proxy", &self.no_proxy)
            .field("resolve", &self.resolve)
            .field("dns_per_connection", &self.dns_per_connection)
            .finish()
    }
}

/// `--resolve host:port:addr[,addr...]`: the addresses connections to `host:port` use.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Resolve {
    /// The host name, lowercase.
    pub host: String,
    /// The port.
    pub port: u16,
    /// The addresses, used in turn.
    pub addrs: Vec<std::net::IpAddr>,
}

/// The text is not a `--resolve` entry; it holds the text as given.
#[derive(Debug, thiserror::Error)]
#[error("{0:?} is not host:port:address[,address...]")]
pub struct BadResolve(pub String);

impl FromStr for Resolve {
    type Err = BadResolve;

    fn from_str(s: &str) -> Result<Self, BadResolve> {
        let form = || BadResolve(s.to_string());
        let (host, rest) = s.split_once(':').ok_or_else(form)?;
        let (port, addrs) = rest.split_once(':').ok_or_else(form)?;
        let port = port.parse().map_err(|_| form())?;
        let addrs = addrs
            .split(',')
            .map(|a| a.trim().trim_start_matches('[').trim_end_matches(']').parse())
            .collect::<Result<Vec<_>, _>>()
            .map_err(|_| form())?;
        if host.is_empty() || addrs.is_empty() {
            return Err(form());
        }
        Ok(Resolve {
            host: host.to_ascii_lowercase(),
            port,
            addrs,
        })
    }
}

impl Network {
    /// The proxies the environment names (`HTTP_PROXY`, `HTTPS_PROXY`, `NO_PROXY`, or their
    /// lower-case forms, which curl prefers), read through `get`.
    pub fn from_env(get: &dyn Fn(&str) -> Option<String>) -> Network {
        let var = |name: &str| {
            get(&name.to_ascii_lowercase())
                .or_else(|| get(name))
                .filter(|v| !v.trim().is_empty())
        };
        Network {
            http_proxy: var("HTTP_PROXY"),
            https_proxy: var("HTTPS_PROXY"),
            no_proxy: var("NO_PROXY")
                .map(|v| {
                    v.split(',')
                        .map(|h| h.trim().trim_start_matches('.').to_ascii_lowercase())
                        .filter(|h| !h.is_empty())
                        .collect()
                })
                .unwrap_or_default(),
            resolve: Vec::new(),
            dns_per_connection: false,
        }
    }

    /// One proxy for every URL (`--proxy`), over what the environment said.
    pub fn set_proxy(&mut self, url: &str) {
        self.http_proxy = Some(url.to_string());
        self.https_proxy = Some(url.to_string());
    }

    /// The proxy for a URL of this scheme and host, unless `NO_PROXY` names the host.
    pub fn proxy_for(&self, https: bool, host: &str) -> Option<&str> {
        let host = host.trim_start_matches('[').trim_end_matches(']').to_ascii_lowercase();
        let direct = self.no_proxy.iter().any(|n| {
            n == "*"
                || host == *n
                || (host.len() > n.len() && host.ends_with(n.as_str()) && host[..host.len() - n.len()].ends_with('.'))
        });
        if direct {
            return None;
        }
        if https { &self.https_proxy } else { &self.http_proxy }.as_deref()
    }

    /// The addresses `--resolve` gives for `host:port`.
    pub fn resolved(&self, host: &str, port: u16) -> Option<&[std::net::IpAddr]> {
        self.resolve
            .iter()
            .find(|r| r.port == port && r.host.eq_ignore_ascii_case(host))
            .map(|r| r.addrs.as_slice())
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn proxies_come_from_the_environment_lower_case_first_and_no_proxy_skips_them() {
        let env = |k: &str| match k {
            "https_proxy" => Some("http://lower:1".to_string()),
            "HTTPS_PROXY" => Some("http://upper:1".to_string()),
            "HTTP_PROXY" => Some("http://plain:2".to_string()),
            "NO_PROXY" => Some("internal.example, .corp".to_string()),
            _ => None,
        };
        let n = Network::from_env(&env);
        assert_eq!(n.proxy_for(true, "example.com"), Some("http://lower:1"));
        assert_eq!(n.proxy_for(false, "example.com"), Some("http://plain:2"));
        assert_eq!(n.proxy_for(false, "internal.example"), None);
        assert_eq!(n.proxy_for(true, "a.corp"), None);
        assert_eq!(n.proxy_for(true, "notcorp"), Some("http://lower:1"));
        assert!(!format!("{n:?}").contains("lower:1@"));
    }

    #[test]
    fn resolve_overrides_parse_several_addresses() {
        let r: Resolve = "API.test:8080:127.0.0.1,127.0.0.2".parse().unwrap();
        assert_eq!((r.host.as_str(), r.port, r.addrs.len()), ("api.test", 8080, 2));
        let e = "api.test:8080".parse::<Resolve>().unwrap_err();
        assert_eq!(
            e.to_string(),
            r#""api.test:8080" is not host:port:address[,address...]"#
        );
        assert!("api.test:x:127.0.0.1".parse::<Resolve>().is_err());
    }
}
