//! Where requests go: scheme, resolved addresses, TLS, and the Host header; and building the
//! bytes of a request to it.

use crate::exchange::Opened;
use crate::http2;
use crate::io::Stream;
use crate::tls;
use crate::Failure;
use crest_model::address;
use crest_model::plan::TlsOptions;
use crest_model::protocol::{HttpOptions, HttpVersion, Network};
use crest_model::Outcome;
use std::fmt;
use std::future::Future;
use std::net::{SocketAddr, ToSocketAddrs};
use std::sync::atomic::{AtomicUsize, Ordering};
use std::sync::Arc;
use std::time::Instant;
use tokio::io::{AsyncReadExt, AsyncWriteExt};
use tokio::net::TcpStream;
use tokio_rustls::TlsConnector;

/// A request or endpoint could not be prepared. The message names the offending part.
#[derive(Debug, thiserror::Error)]
#[error("{0}")]
pub struct InvalidRequest(pub(crate) String);

pub(crate) fn invalid(msg: impl Into<String>) -> InvalidRequest {
    InvalidRequest(msg.into())
}

/// A server that requests are sent to. Resolved once, when the plan is prepared, unless each
/// connection resolves it ([`Network::dns_per_connection`]).
pub struct Endpoint {
    /// Empty when each connection resolves the host (`resolve_each`) or a proxy does.
    addrs: Vec<SocketAddr>,
    /// The host and port that each new connection resolves for itself, timed as its own
    /// phase; `None` when the addresses above are used.
    resolve_each: Option<Box<(Arc<str>, u16)>>,
    /// Which address the next connection uses: connections go to every address in turn, as
    /// a load balancer in front of several hosts expects.
    next: AtomicUsize,
    /// `host:port`, as a CONNECT request names it.
    host_port: String,
    pub(crate) proxy: Option<Box<Proxy>>,
    tls: Option<(TlsConnector, rustls::pki_types::ServerName<'static>)>,
    authority: String,
    /// The host alone, lowercase, for cookies.
    pub(crate) host: String,
    /// Redirects, compression and the version, as the plan set them.
    pub(crate) options: HttpOptions,
    pub(crate) version: HttpVersion,
    /// HTTP/2 connections, shared by users; for `Http2` and `Auto`.
    pub(crate) pool: Option<http2::Pool>,
    /// `Auto` over TLS: whether the server chose `h2`, learnt from the first connection.
    pub(crate) alpn_h2: tokio::sync::OnceCell<bool>,
    /// What this endpoint was made with, for the servers its redirects lead to.
    made_with: Box<(TlsOptions, Network)>,
    /// Servers that redirects led to, by `scheme://authority`, resolved once and shared by
    /// users.
    others: std::sync::Mutex<Vec<(String, Arc<Endpoint>)>>,
}

impl fmt::Debug for Endpoint {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("Endpoint")
            .field("addrs", &self.addrs)
            .field("resolve_each", &self.resolve_each)
            .field("tls", &self.tls.is_some())
            .field("authority", &self.authority)
            .field("version", &self.version)
            .field("proxy", &self.proxy.as_ref().map(|p| p.addrs[0]))
            .finish()
    }
}

/// The proxy an endpoint is reached through.
pub(crate) struct Proxy {
    addrs: Vec<SocketAddr>,
    /// The `Proxy-Authorization` value, from `user:pass@` in the proxy's URL: a secret.
    auth: Option<String>,
    /// Tunnel with CONNECT (HTTPS, and HTTP/2 which needs the connection to itself), rather
    /// than sending each request to the proxy in absolute form.
    pub(crate) tunnel: bool,
}

impl Proxy {
    fn parse(url: &str, tunnel: bool) -> Result<Proxy, InvalidRequest> {
        // Shown without its credentials, whatever went wrong.
        let shown = crest_model::redact::url(url);
        let with_scheme = if url.contains("://") {
            url.to_string()
        } else {
            format!("http://{url}")
        };
        let parsed = url::Url::parse(&with_scheme).map_err(|e| invalid(format!("proxy {shown}: {e}")))?;
        if parsed.scheme() != "http" {
            return Err(invalid(format!(
                "proxy {shown}: only http:// proxies are supported (HTTPS targets go through them with CONNECT)"
            )));
        }
        let host = parsed.host_str().unwrap_or_default();
        let bare = host.trim_start_matches('[').trim_end_matches(']');
        let port = parsed.port_or_known_default().unwrap_or(80);
        let addrs: Vec<SocketAddr> = (bare, port)
            .to_socket_addrs()
            .map_err(|e| invalid(format!("proxy {shown}: cannot resolve {host:?}: {e}")))?
            .collect();
        if addrs.is_empty() {
            return Err(invalid(format!("proxy {shown}: {host:?} resolved to no address")));
        }
        let auth = (!parsed.username().is_empty()).then(|| {
            use base64::Engine;
            let pair = format!(
                "{}:{}",
                percent_decode(parsed.username()),
                percent_decode(parsed.password().unwrap_or(""))
            );
            format!("Basic {}", base64::engine::general_purpose::STANDARD.encode(pair))
        });
        Ok(Proxy { addrs, auth, tunnel })
    }
}

/// `%XX` escapes in a URL's user name or password, decoded.
fn percent_decode(s: &str) -> String {
    let b = s.as_bytes();
    let mut out = Vec::with_capacity(b.len());
    let mut i = 0;
    while i < b.len() {
        let hex = |c: u8| (c as char).to_digit(16);
        match (
            b[i],
            b.get(i + 1).copied().and_then(hex),
            b.get(i + 2).copied().and_then(hex),
        ) {
            (b'%', Some(h), Some(l)) => {
                out.push((h * 16 + l) as u8);
                i += 3;
            }
            (c, _, _) => {
                out.push(c);
                i += 1;
            }
        }
    }
    String::from_utf8_lossy(&out).into_owned()
}

impl Endpoint {
    /// Parses an absolute URL into its endpoint and its path with query (`/a?b=c`), for
    /// HTTP/1.1.
    pub fn parse(url: &str, tls: &TlsOptions) -> Result<(Endpoint, String), InvalidRequest> {
        Self::parse_with(url, tls, &HttpOptions::default())
    }

    /// Like [`Endpoint::parse`], speaking the version `http` asks for.
    pub fn parse_with(url: &str, tls: &TlsOptions, http: &HttpOptions) -> Result<(Endpoint, String), InvalidRequest> {
        Self::parse_on(url, tls, http, &Network::default())
    }

    /// Like [`Endpoint::parse_with`], reached as `net` says: through its proxy for this URL,
    /// at the addresses it gives for the host.
    pub fn parse_on(
        url: &str,
        tls: &TlsOptions,
        http: &HttpOptions,
        net: &Network,
    ) -> Result<(Endpoint, String), InvalidRequest> {
        let made_with = Box::new((tls.clone(), net.clone()));
        let url = address::parse(url, address::HTTP).map_err(|e| invalid(e.to_string()))?;
        let https = url.scheme() == "https";
        let host = url.host_str().unwrap_or_default().to_string();
        let port = url.port_or_known_default().unwrap_or(if https { 443 } else { 80 });
        let bare_host = host.trim_start_matches('[').trim_end_matches(']').to_string();
        let proxy = net
            .proxy_for(https, &bare_host)
            .map(|p| Proxy::parse(p, https || http.version == HttpVersion::Http2).map(Box::new))
            .transpose()?;
        // Per connection, only a name that crest itself would resolve: not one `--resolve`
        // gives addresses for, not an address literal, not one a proxy resolves.
        let resolve_each = (net.dns_per_connection
            && proxy.is_none()
            && net.resolved(&bare_host, port).is_none()
            && bare_host.parse::<std::net::IpAddr>().is_err())
        .then(|| Box::new((Arc::from(bare_host.as_str()), port)));
        let addrs: Vec<SocketAddr> = match net.resolved(&bare_host, port) {
            Some(given) => given.iter().map(|ip| SocketAddr::new(*ip, port)).collect(),
            // Behind a proxy, the proxy resolves the name.
            None if proxy.is_some() || resolve_each.is_some() => Vec::new(),
            None => (bare_host.as_str(), port)
                .to_socket_addrs()
                .map_err(|e| invalid(format!("cannot resolve host {host:?}: {e}")))?
                .collect(),
        };
        if addrs.is_empty() && proxy.is_none() && resolve_each.is_none() {
            return Err(invalid(format!("host {host:?} resolved to no address")));
        }
        let authority = address::authority(&url);
        let tls = if https {
            let alpn: &[&[u8]] = match http.version {
                HttpVersion::Http1 => &[b"http/1.1"],
                HttpVersion::Http2 => &[b"h2"],
                HttpVersion::Auto => &[b"h2", b"http/1.1"],
            };
            let config = tls::client_config(tls, alpn).map_err(|e| invalid(e.to_string()))?;
            let server_name = rustls::pki_types::ServerName::try_from(bare_host.clone())
                .map_err(|_| invalid(format!("{host:?} is not a valid TLS server name")))?;
            Some((TlsConnector::from(Arc::new(config)), server_name))
        } else {
            None
        };
        let path = address::path_and_query(&url).to_string();
        let pool = (http.version != HttpVersion::Http1).then(|| http2::Pool::new(http.max_streams));
        Ok((
            Endpoint {
                addrs,
                resolve_each,
                next: AtomicUsize::new(0),
                host_port: format!("{host}:{port}"),
                proxy,
                tls,
                authority,
                host: bare_host.to_ascii_lowercase(),
                options: *http,
                version: http.version,
                pool,
                alpn_h2: tokio::sync::OnceCell::new(),
                made_with,
                others: std::sync::Mutex::new(Vec::new()),
            },
            path,
        ))
    }

    /// The endpoint for another server (`scheme://authority`) a redirect leads to, made with
    /// this one's TLS, HTTP and proxy settings; made once, then shared.
    pub(crate) fn other(&self, base: &str) -> Result<Arc<Endpoint>, InvalidRequest> {
        if let Some((_, e)) = self
            .others
            .lock()
            .unwrap_or_else(|e| e.into_inner())
            .iter()
            .find(|(b, _)| b == base)
        {
            return Ok(e.clone());
        }
        // Resolved outside the lock; two users racing here make two, and one is kept.
        let (tls, net) = &*self.made_with;
        let made = Arc::new(Self::parse_on(base, tls, &self.options, net)?.0);
        let mut others = self.others.lock().unwrap_or_else(|e| e.into_inner());
        if let Some((_, e)) = others.iter().find(|(b, _)| b == base) {
            return Ok(e.clone());
        }
        others.push((base.to_string(), made.clone()));
        Ok(made)
    }

    /// Whether each new connection resolves the host itself.
    pub(crate) fn resolves_each(&self) -> bool {
        self.resolve_each.is_some()
    }

    /// Whether its connections are TLS.
    pub fn https(&self) -> bool {
        self.tls.is_some()
    }

    /// The value of the Host header for this endpoint.
    pub fn authority(&self) -> &str {
        &self.authority
    }

    /// Resolves the host for one new connection when the endpoint asks for that, timing the
    /// resolver alone: `Ok(None)` when the addresses resolved up front are used.
    ///
    /// The lookup is the system's (getaddrinfo: /etc/hosts, nsswitch and resolv.conf, as curl
    /// and the service's other clients see them), which blocks, so it runs on the runtime's
    /// blocking pool, never on the engine thread's event loop. It is timed inside that thread,
    /// so a wait for a free pool thread is not counted as resolution.
    pub(crate) async fn resolve(&self, timing: &mut Opened) -> Result<Option<Vec<SocketAddr>>, Failure> {
        let Some(each) = &self.resolve_each else {
            return Ok(None);
        };
        let (host, port) = (each.0.clone(), each.1);
        let looked = tokio::task::spawn_blocking(move || {
            let t0 = Instant::now();
            let addrs = (&*host, port).to_socket_addrs().map(Iterator::collect::<Vec<_>>);
            (addrs, t0.elapsed(), host)
        })
        .await;
        let (addrs, took, host) = looked.map_err(|_| Failure {
            outcome: Outcome::Other,
            detail: crate::Detail::Text("the resolver's thread failed"),
        })?;
        timing.dns.set(took);
        match addrs {
            Ok(addrs) if !addrs.is_empty() => Ok(Some(addrs)),
            Ok(_) => Err(Failure {
                outcome: Outcome::DnsFailed,
                detail: crate::Detail::Dns(host, None),
            }),
            Err(e) => Err(Failure {
                outcome: Outcome::DnsFailed,
                detail: crate::Detail::Dns(host, Some(e)),
            }),
        }
    }

    /// Opens a transport: TCP (to the next address in turn, or to the proxy and through its
    /// tunnel), then TLS for https. `resolved` holds this connection's own addresses when it
    /// resolved the host itself.
    ///
    /// The tunnel and the TLS handshake are boxed: their futures (a ClientConnection, a read
    /// buffer) are over a kilobyte, and every user of a plain-TCP run would otherwise carry
    /// that room while it connects. With 10,000 users connecting at once, that room was the
    /// run's peak resident memory, which malloc does not give back after the connect storm
    /// (bench/README.md).
    ///
    /// A block rather than an async fn, which would keep second copies of its arguments: the
    /// HTTP/1.1 attempt opens its connection in the user's own task (issue 35).
    #[allow(clippy::manual_async_fn)]
    pub(crate) fn connect<'a>(
        &'a self,
        resolved: Option<&'a [SocketAddr]>,
    ) -> impl Future<Output = Result<Stream, Failure>> + 'a {
        async move {
            let turn = self.next.fetch_add(1, Ordering::Relaxed);
            let tcp = match &self.proxy {
                None => tcp_connect(resolved.unwrap_or(&self.addrs), turn).await?,
                Some(p) => {
                    let mut tcp = tcp_connect(&p.addrs, turn).await?;
                    if p.tunnel {
                        Box::pin(self.tunnel(&mut tcp, p)).await?;
                    }
                    tcp
                }
            };
            match &self.tls {
                None => Ok(Stream::Plain(tcp)),
                Some((connector, name)) => Box::pin(handshake(connector, name, tcp)).await,
            }
        }
    }

    /// Asks the proxy for a tunnel to the origin with CONNECT; a proxy that answers other
    /// than 2xx (407 when it wants credentials) refused the connection.
    async fn tunnel(&self, tcp: &mut TcpStream, p: &Proxy) -> Result<(), Failure> {
        let mut req = format!("CONNECT {0} HTTP/1.1\r\nHost: {0}\r\n", self.host_port);
        if let Some(auth) = &p.auth {
            req.push_str(&format!("Proxy-Authorization: {auth}\r\n"));
        }
        req.push_str("\r\n");
        tcp.write_all(req.as_bytes()).await.map_err(Failure::io)?;
        // The proxy says nothing more until the client speaks through the tunnel, so reading
        // past the head cannot swallow the origin's bytes.
        let mut head = Vec::with_capacity(256);
        let mut chunk = [0u8; 1024];
        let end = loop {
            if let Some(i) = head.windows(4).position(|w| w == b"\r\n\r\n") {
                break i + 4;
            }
            if head.len() > 16 * 1024 {
                return Err(Failure::h1(crate::h1::H1Error::Parse(
                    "the proxy's answer to CONNECT is too long",
                )));
            }
            match tcp.read(&mut chunk).await.map_err(Failure::io)? {
                0 => return Err(Failure::h1(crate::h1::H1Error::Closed)),
                n => head.extend_from_slice(&chunk[..n]),
            }
        };
        let mut headers = [httparse::EMPTY_HEADER; 32];
        let mut resp = httparse::Response::new(&mut headers);
        let status = match resp.parse(&head[..end]) {
            Ok(httparse::Status::Complete(_)) => resp.code.unwrap_or(0),
            _ => return Err(Failure::h1(crate::h1::H1Error::Parse("the proxy's answer to CONNECT"))),
        };
        if !(200..300).contains(&status) {
            // No connection to the origin was made: the origin's statuses stay its own.
            return Err(Failure {
                outcome: Outcome::ConnectRefused,
                detail: crate::Detail::ProxyRefused(status),
            });
        }
        if end != head.len() {
            return Err(Failure::h1(crate::h1::H1Error::Parse(
                "the proxy sent bytes before the tunnel was used",
            )));
        }
        Ok(())
    }

    /// Through a forwarding proxy: `request` with its target in absolute form and the proxy's
    /// credentials added. `None` when the request goes as it is.
    pub(crate) fn for_proxy(&self, request: &[u8]) -> Option<Vec<u8>> {
        let p = self.proxy.as_deref().filter(|p| !p.tunnel)?;
        let line_end = request.windows(2).position(|w| w == b"\r\n")? + 2;
        let target_at = request.iter().position(|b| *b == b' ')? + 1;
        let mut out = Vec::with_capacity(request.len() + 64 + self.authority.len());
        out.extend_from_slice(&request[..target_at]);
        if request[target_at] == b'/' {
            out.extend_from_slice(b"http://");
            out.extend_from_slice(self.authority.as_bytes());
        }
        out.extend_from_slice(&request[target_at..line_end]);
        if let Some(auth) = &p.auth {
            push(&mut out, &["Proxy-Authorization: ", auth, "\r\n"]);
        }
        out.extend_from_slice(&request[line_end..]);
        Some(out)
    }
}

/// The TLS handshake over `tcp`; a failure that is not the network's is a TLS failure.
async fn handshake(
    connector: &TlsConnector,
    name: &rustls::pki_types::ServerName<'static>,
    tcp: TcpStream,
) -> Result<Stream, Failure> {
    let tls = connector.connect(name.clone(), tcp).await.map_err(|e| {
        let mut f = Failure::io(e);
        if matches!(f.outcome, Outcome::Other | Outcome::Protocol) {
            f.outcome = Outcome::Tls;
        }
        f
    })?;
    Ok(Stream::Tls(Box::new(tls)))
}

/// Connects to `addrs[turn]`, or to the addresses after it in turn when it refuses (a name
/// with an IPv6 address where the server listens on IPv4 only, a host that is down), as curl
/// does; the last failure is the result.
///
/// Waits on the socket's writer slot rather than through tokio's `TcpSocket::connect`, whose
/// future is three times the size: the HTTP/1.1 attempt connects in the user's own task, and
/// at 10,000 users connecting at once every byte of it is 10 KB (issue 35).
#[allow(clippy::manual_async_fn)]
pub(crate) fn tcp_connect(addrs: &[SocketAddr], turn: usize) -> impl Future<Output = Result<TcpStream, Failure>> + '_ {
    async move {
        let mut last = None;
        for i in 0..addrs.len() {
            let connected = match start_connect(addrs[(turn + i) % addrs.len()]) {
                Ok(tcp) => match std::future::poll_fn(|cx| tcp.poll_write_ready(cx)).await {
                    // Writable once the connection is made or has failed; which, the socket's
                    // pending error says.
                    Ok(()) => match tcp.take_error() {
                        Ok(None) => Ok(tcp),
                        Ok(Some(e)) | Err(e) => Err(e),
                    },
                    Err(e) => Err(e),
                },
                Err(e) => Err(e),
            };
            match connected {
                Ok(tcp) => {
                    // Requests are written whole; Nagle would only add delay.
                    let _ = tcp.set_nodelay(true);
                    return Ok(tcp);
                }
                Err(e)
                    if matches!(
                        e.kind(),
                        std::io::ErrorKind::ConnectionRefused | std::io::ErrorKind::AddrNotAvailable
                    ) || e.raw_os_error() == Some(libc::ENETUNREACH) =>
                {
                    last = Some(e)
                }
                Err(e) => return Err(Failure::io(e)),
            }
        }
        Err(Failure::io(
            last.unwrap_or_else(|| std::io::Error::other("no address to connect to")),
        ))
    }
}

/// A non-blocking socket connecting to `addr`, registered with the runtime; the connection
/// is made (or refused) once it is writable.
fn start_connect(addr: SocketAddr) -> std::io::Result<TcpStream> {
    use socket2::{Domain, Protocol, Socket, Type};
    let socket = Socket::new(
        Domain::for_address(addr),
        Type::STREAM.nonblocking(),
        Some(Protocol::TCP),
    )?;
    match socket.connect(&addr.into()) {
        Ok(()) => {}
        Err(e) if e.raw_os_error() == Some(libc::EINPROGRESS) => {}
        Err(e) => return Err(e),
    }
    TcpStream::from_std(socket.into())
}

/// RFC 9110 token characters, which header names and methods are made of.
pub fn is_token(s: &str) -> bool {
    !s.is_empty()
        && s.bytes()
            .all(|b| b.is_ascii_alphanumeric() || b"!#$%&'*+-.^_`|~".contains(&b))
}

/// Checks a header for use in a request; the error names it.
pub fn check_header(name: &str, value: &str) -> Result<(), InvalidRequest> {
    if !is_token(name) {
        return Err(invalid(format!("header name {name:?} is not valid")));
    }
    if value.bytes().any(|b| b == b'\r' || b == b'\n' || b == 0) {
        return Err(invalid(format!("the value of header {name:?} contains a line break")));
    }
    Ok(())
}

/// The bytes of an HTTP/1.1 request. Host, User-Agent and Content-Length are added unless given;
/// `Connection: close` is added without keep-alive. Names and values must have been checked with
/// [`check_header`] (templated values are checked for line breaks here too, where they end up).
pub fn build_request(
    method: &str,
    target: &str,
    authority: &str,
    headers: &[(String, String)],
    body: &[u8],
    keepalive: bool,
) -> Result<Vec<u8>, InvalidRequest> {
    let mut out = Vec::with_capacity(128 + target.len() + body.len() + headers.len() * 32);
    let target = if target.is_empty() { "/" } else { target };
    if target.bytes().any(|b| b.is_ascii_whitespace() || b.is_ascii_control()) {
        return Err(invalid(format!(
            "the request target {:?} contains spaces or control characters",
            crest_model::redact::url(target)
        )));
    }
    let has = |n: &str| headers.iter().any(|(h, _)| h.eq_ignore_ascii_case(n));
    push(&mut out, &[method, " ", target, " HTTP/1.1\r\n"]);
    if !has("host") {
        push(&mut out, &["Host: ", authority, "\r\n"]);
    }
    if !has("user-agent") {
        push(
            &mut out,
            &[concat!("User-Agent: crest/", env!("CARGO_PKG_VERSION"), "\r\n")],
        );
    }
    for (name, value) in headers {
        check_header(name, value)?;
        push(&mut out, &[name, ": ", value, "\r\n"]);
    }
    let method_has_body = matches!(method, "POST" | "PUT" | "PATCH");
    if (!body.is_empty() || method_has_body) && !has("content-length") {
        push(&mut out, &["Content-Length: ", &body.len().to_string(), "\r\n"]);
    }
    if !keepalive && !has("connection") {
        push(&mut out, &["Connection: close\r\n"]);
    }
    out.extend_from_slice(b"\r\n");
    out.extend_from_slice(body);
    Ok(out)
}

fn push(out: &mut Vec<u8>, parts: &[&str]) {
    for p in parts {
        out.extend_from_slice(p.as_bytes());
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn requests_are_built_with_defaults_unless_given() {
        let r = build_request("POST", "/a?b=1", "h:1", &[("X-A".into(), "1".into())], b"{}", false).unwrap();
        let text = String::from_utf8(r).unwrap();
        assert!(text.starts_with("POST /a?b=1 HTTP/1.1\r\nHost: h:1\r\nUser-Agent: crest/"));
        assert!(text.contains("X-A: 1\r\nContent-Length: 2\r\nConnection: close\r\n\r\n{}"));
        let r = build_request("GET", "/", "h", &[("host".into(), "other".into())], b"", true).unwrap();
        let text = String::from_utf8(r).unwrap();
        assert!(text.contains("host: other") && !text.contains("Host: h"));
        assert!(build_request("GET", "/a b", "h", &[], b"", true).is_err());
        assert!(build_request("GET", "/", "h", &[("X".into(), "a\r\nInjected: 1".into())], b"", true).is_err());
    }
}
