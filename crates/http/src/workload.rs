//! One repeated HTTP request as an engine workload.

use crate::classify;
use crate::h1::{self, H1Error};
use crate::io::Stream;
use crate::tls;
use crest_engine::{Ctx, Workload};
use crest_model::plan::HttpRequest;
use crest_model::{NameId, Outcome, Sample};
use http::Uri;
use std::fmt;
use std::net::{SocketAddr, ToSocketAddrs};
use std::pin::Pin;
use std::sync::Arc;
use std::time::{Duration, Instant};
use tokio::net::{TcpSocket, TcpStream};
use tokio::time::{timeout_at, Sleep};
use tokio_rustls::TlsConnector;

/// The request could not be prepared. The message names the offending part.
#[derive(Debug, thiserror::Error)]
#[error("{0}")]
pub struct InvalidRequest(String);

fn invalid(msg: impl Into<String>) -> InvalidRequest {
    InvalidRequest(msg.into())
}

/// A prepared request: its bytes are built once, so the hot path only writes them.
pub struct HttpWorkload {
    name: NameId,
    /// The whole request as written on the wire. Holds header values, secrets included: never
    /// show it.
    request: Vec<u8>,
    head_request: bool,
    addrs: Vec<SocketAddr>,
    tls: Option<(TlsConnector, rustls::pki_types::ServerName<'static>)>,
    timeout: Duration,
    connect_timeout: Duration,
    keepalive: bool,
}

impl fmt::Debug for HttpWorkload {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        // The request bytes are left out: they may hold secrets.
        f.debug_struct("HttpWorkload")
            .field("addrs", &self.addrs)
            .field("tls", &self.tls.is_some())
            .field("keepalive", &self.keepalive)
            .finish_non_exhaustive()
    }
}

/// One virtual user: at most one open connection, and its request timer.
#[derive(Default)]
pub struct HttpUser {
    conn: Option<h1::Conn>,
    /// Armed at or before the current request's deadline; see [`HttpWorkload::exchange`].
    timer: Option<Pin<Box<Sleep>>>,
}

impl fmt::Debug for HttpUser {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("HttpUser")
            .field("connected", &self.conn.is_some())
            .finish()
    }
}

/// Why a request failed, kept unformatted until a sink asks for an example message.
enum Detail {
    Io(std::io::Error),
    H1(H1Error),
    Text(&'static str),
}

impl fmt::Display for Detail {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            Detail::Io(e) => write!(f, "{e}"),
            Detail::H1(e) => write!(f, "{e}"),
            Detail::Text(t) => f.write_str(t),
        }
    }
}

struct Failure {
    outcome: Outcome,
    detail: Detail,
}

impl Failure {
    fn io(e: std::io::Error) -> Self {
        Failure {
            outcome: classify::io_error(&e),
            detail: Detail::Io(e),
        }
    }
    fn h1(e: H1Error) -> Self {
        Failure {
            outcome: classify::h1_error(&e),
            detail: Detail::H1(e),
        }
    }
}

/// RFC 9110 token characters, which header names and methods are made of.
fn is_token(s: &str) -> bool {
    !s.is_empty()
        && s.bytes()
            .all(|b| b.is_ascii_alphanumeric() || b"!#$%&'*+-.^_`|~".contains(&b))
}

impl HttpWorkload {
    /// Prepares `req`; its statistics are grouped under `name`. Resolves the host once, here.
    pub fn new(req: &HttpRequest, name: NameId) -> Result<Self, InvalidRequest> {
        let uri: Uri = req
            .url
            .parse()
            .map_err(|e| invalid(format!("the URL is not valid: {e}")))?;
        let https = match uri.scheme_str() {
            Some("http") => false,
            Some("https") => true,
            None => return Err(invalid("the URL needs a scheme: http:// or https://")),
            Some(other) => {
                return Err(invalid(format!(
                    "the URL scheme {other:?} is not supported; use http or https"
                )))
            }
        };
        let host = uri.host().ok_or_else(|| invalid("the URL has no host"))?.to_string();
        let port = uri.port_u16().unwrap_or(if https { 443 } else { 80 });
        let bare_host = host.trim_start_matches('[').trim_end_matches(']').to_string();
        let addrs: Vec<SocketAddr> = (bare_host.as_str(), port)
            .to_socket_addrs()
            .map_err(|e| invalid(format!("cannot resolve host {host:?}: {e}")))?
            .collect();
        if addrs.is_empty() {
            return Err(invalid(format!("host {host:?} resolved to no address")));
        }
        if !is_token(&req.method) {
            return Err(invalid(format!("{:?} is not a valid HTTP method", req.method)));
        }
        let path = uri.path_and_query().map(|p| p.as_str()).unwrap_or("/");
        let authority = uri.authority().map(|a| a.as_str()).unwrap_or(&host);
        let authority = authority.rsplit_once('@').map_or(authority, |(_, a)| a);

        let mut head = format!(
            "{} {} HTTP/1.1\r\n",
            req.method,
            if path.is_empty() { "/" } else { path }
        );
        let has = |n: &str| req.headers.iter().any(|(h, _)| h.eq_ignore_ascii_case(n));
        if !has("host") {
            head.push_str(&format!("Host: {authority}\r\n"));
        }
        if !has("user-agent") {
            head.push_str(concat!("User-Agent: crest/", env!("CARGO_PKG_VERSION"), "\r\n"));
        }
        for (name, value) in &req.headers {
            if !is_token(name) {
                return Err(invalid(format!("header name {name:?} is not valid")));
            }
            if value.bytes().any(|b| b == b'\r' || b == b'\n' || b == 0) {
                return Err(invalid(format!("the value of header {name:?} contains a line break")));
            }
            head.push_str(&format!("{name}: {value}\r\n"));
        }
        let method_has_body = matches!(req.method.as_str(), "POST" | "PUT" | "PATCH");
        if (!req.body.is_empty() || method_has_body) && !has("content-length") {
            head.push_str(&format!("Content-Length: {}\r\n", req.body.len()));
        }
        if !req.keepalive && !has("connection") {
            head.push_str("Connection: close\r\n");
        }
        head.push_str("\r\n");
        let mut request = head.into_bytes();
        request.extend_from_slice(&req.body);

        let tls = if https {
            let config = tls::client_config(&req.tls).map_err(invalid)?;
            let server_name = rustls::pki_types::ServerName::try_from(bare_host.clone())
                .map_err(|_| invalid(format!("{host:?} is not a valid TLS server name")))?;
            Some((TlsConnector::from(Arc::new(config)), server_name))
        } else {
            None
        };
        Ok(HttpWorkload {
            name,
            request,
            head_request: req.method == "HEAD",
            addrs,
            tls,
            timeout: req.timeout,
            connect_timeout: req.connect_timeout,
            keepalive: req.keepalive,
        })
    }

    async fn connect(&self) -> Result<h1::Conn, Failure> {
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
        Ok(h1::Conn::new(stream))
    }

    /// Opens a connection, timing it.
    async fn open(&self, started: Instant, deadline: Instant) -> Result<(h1::Conn, Duration), Failure> {
        let t0 = Instant::now();
        let limit = deadline.min(started + self.connect_timeout);
        match timeout_at(limit.into(), self.connect()).await {
            Ok(conn) => Ok((conn?, t0.elapsed())),
            Err(_) => {
                let outcome = if limit < deadline {
                    Outcome::ConnectTimeout
                } else {
                    Outcome::Timeout
                };
                Err(Failure {
                    outcome,
                    detail: Detail::Text("timed out while connecting"),
                })
            }
        }
    }

    /// Sends the request on `user`'s connection (opening one if needed) and reads the whole
    /// response, within the request timeout.
    ///
    /// The timeout uses one timer per user that is re-armed only when it fires before the
    /// current request's deadline. A fresh timer per request would be inserted into and removed
    /// from tokio's timer wheel every time, which the profile showed as the largest user-space
    /// cost after parsing. The armed deadline never lies after the real one, so no request can
    /// outlive its timeout.
    async fn exchange(
        &self,
        user: &mut HttpUser,
        started: Instant,
        connect: &mut Option<Duration>,
        p: &mut h1::Progress,
    ) -> Result<u16, Failure> {
        let deadline = started + self.timeout;
        let HttpUser { conn, timer } = user;
        let timer = timer.get_or_insert_with(|| Box::pin(tokio::time::sleep_until(deadline.into())));
        let work = self.attempt(conn, started, deadline, connect, p);
        tokio::pin!(work);
        loop {
            tokio::select! {
                biased;
                r = &mut work => return r,
                () = timer.as_mut() => {
                    if Instant::now() >= deadline {
                        return Err(Failure { outcome: Outcome::Timeout, detail: Detail::Text("request timed out") });
                    }
                    timer.as_mut().reset(deadline.into());
                }
            }
        }
    }

    /// One exchange, opening a connection when there is none. A keep-alive connection that the
    /// server closed while idle is retried once on a new connection, as browsers do, since the
    /// server never saw the request.
    async fn attempt(
        &self,
        conn: &mut Option<h1::Conn>,
        started: Instant,
        deadline: Instant,
        connect: &mut Option<Duration>,
        p: &mut h1::Progress,
    ) -> Result<u16, Failure> {
        let mut retried = false;
        loop {
            let c = match conn {
                Some(c) => c,
                None => {
                    let (c, took) = self.open(started, deadline).await?;
                    *connect = Some(took);
                    conn.insert(c)
                }
            };
            let reused = c.uses > 0;
            match c.exchange(&self.request, self.head_request, p).await {
                Ok(status) => return Ok(status),
                Err(H1Error::Closed | H1Error::Io(_)) if reused && !retried && p.read == 0 => {
                    *conn = None;
                    retried = true;
                    *p = h1::Progress::default();
                }
                Err(e) => return Err(Failure::h1(e)),
            }
        }
    }
}

impl Workload for HttpWorkload {
    type User = HttpUser;

    fn new_user(&self, _id: u64) -> HttpUser {
        HttpUser::default()
    }

    async fn iterate<'a>(&'a self, user: &'a mut HttpUser, ctx: Ctx<'a>) {
        let started = Instant::now();
        let intended = ctx.intended().min(started);
        let mut connect = None;
        let mut p = h1::Progress::default();
        let result = self.exchange(user, started, &mut connect, &mut p).await;
        let end = Instant::now();
        let mut sample = Sample {
            name: self.name,
            intended: ctx.offset(intended),
            send_lag: started - intended,
            connect,
            ttfb: p.first_byte.map(|f| f.saturating_duration_since(started)),
            total: end - intended,
            bytes_sent: p.written,
            bytes_received: p.read,
            status: p.status,
            outcome: Outcome::Success,
        };
        match result {
            Ok(status) => {
                if status >= 400 {
                    sample.outcome = Outcome::Status(status);
                }
                if !self.keepalive || !user.conn.as_ref().is_some_and(h1::Conn::reusable) {
                    user.conn = None;
                }
                ctx.record(&sample, None);
            }
            Err(f) => {
                // A connection in an unknown state is never reused.
                user.conn = None;
                sample.outcome = f.outcome;
                ctx.record(&sample, Some(&f.detail));
            }
        }
    }
}
