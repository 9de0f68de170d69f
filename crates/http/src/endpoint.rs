//! Where requests go: scheme, resolved addresses, TLS, and the Host header; and building the
//! bytes of a request to it.

use crate::http2;
use crate::io::Stream;
use crate::tls;
use crate::Failure;
use crest_model::address;
use crest_model::plan::TlsOptions;
use crest_model::protocol::{HttpOptions, HttpVersion};
use crest_model::Outcome;
use std::fmt;
use std::net::{SocketAddr, ToSocketAddrs};
use std::sync::Arc;
use tokio::net::{TcpSocket, TcpStream};
use tokio_rustls::TlsConnector;

/// A request or endpoint could not be prepared. The message names the offending part.
#[derive(Debug, thiserror::Error)]
#[error("{0}")]
pub struct InvalidRequest(pub(crate) String);

pub(crate) fn invalid(msg: impl Into<String>) -> InvalidRequest {
    InvalidRequest(msg.into())
}

/// A server that requests are sent to. Resolved once, when the plan is prepared.
pub struct Endpoint {
    addrs: Vec<SocketAddr>,
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
}

impl fmt::Debug for Endpoint {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("Endpoint")
            .field("addrs", &self.addrs)
            .field("tls", &self.tls.is_some())
            .field("authority", &self.authority)
            .field("version", &self.version)
            .finish()
    }
}

impl Endpoint {
    /// Parses an absolute URL into its endpoint and its path with query (`/a?b=c`), for
    /// HTTP/1.1.
    pub fn parse(url: &str, tls: &TlsOptions) -> Result<(Endpoint, String), InvalidRequest> {
        Self::parse_with(url, tls, &HttpOptions::default())
    }

    /// Like [`Endpoint::parse`], speaking the version `http` asks for.
    pub fn parse_with(url: &str, tls: &TlsOptions, http: &HttpOptions) -> Result<(Endpoint, String), InvalidRequest> {
        let url = address::parse(url, address::HTTP).map_err(|e| invalid(e.to_string()))?;
        let https = url.scheme() == "https";
        let host = url.host_str().unwrap_or_default().to_string();
        let port = url.port_or_known_default().unwrap_or(if https { 443 } else { 80 });
        let bare_host = host.trim_start_matches('[').trim_end_matches(']').to_string();
        let addrs: Vec<SocketAddr> = (bare_host.as_str(), port)
            .to_socket_addrs()
            .map_err(|e| invalid(format!("cannot resolve host {host:?}: {e}")))?
            .collect();
        if addrs.is_empty() {
            return Err(invalid(format!("host {host:?} resolved to no address")));
        }
        let authority = address::authority(&url);
        let tls = if https {
            let alpn: &[&[u8]] = match http.version {
                HttpVersion::Http1 => &[b"http/1.1"],
                HttpVersion::Http2 => &[b"h2"],
                HttpVersion::Auto => &[b"h2", b"http/1.1"],
            };
            let config = tls::client_config(tls, alpn).map_err(invalid)?;
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
                tls,
                authority,
                host: bare_host.to_ascii_lowercase(),
                options: *http,
                version: http.version,
                pool,
                alpn_h2: tokio::sync::OnceCell::new(),
            },
            path,
        ))
    }

    pub(crate) fn https(&self) -> bool {
        self.tls.is_some()
    }

    /// The value of the Host header for this endpoint.
    pub fn authority(&self) -> &str {
        &self.authority
    }

    /// Opens a transport: TCP, then TLS for https.
    pub(crate) async fn connect(&self) -> Result<Stream, Failure> {
        let addr = self.addrs[0];
        let socket = if addr.is_ipv4() {
            TcpSocket::new_v4()
        } else {
            TcpSocket::new_v6()
        }
        .map_err(Failure::io)?;
        let tcp: TcpStream = socket.connect(addr).await.map_err(Failure::io)?;
        // Requests are written whole; Nagle would only add delay.
        let _ = tcp.set_nodelay(true);
        let stream = match &self.tls {
            None => Stream::Plain(tcp),
            Some((connector, name)) => {
                let tls = connector.connect(name.clone(), tcp).await.map_err(|e| {
                    let mut f = Failure::io(e);
                    if matches!(f.outcome, Outcome::Other | Outcome::Protocol) {
                        f.outcome = Outcome::Tls;
                    }
                    f
                })?;
                Stream::Tls(Box::new(tls))
            }
        };
        Ok(stream)
    }
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
