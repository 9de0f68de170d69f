//! One repeated HTTP request as an engine workload.

use crate::classify;
use crate::io::{Counters, Counting, Stream};
use crate::tls;
use bytes::Bytes;
use crest_engine::{Ctx, Workload};
use crest_model::plan::HttpRequest;
use crest_model::{NameId, Outcome, Sample};
use http::header::{HeaderName, HeaderValue, CONNECTION, CONTENT_LENGTH, HOST, USER_AGENT};
use http::{HeaderMap, Method, Request, Uri};
use http_body_util::{BodyExt, Full};
use hyper::client::conn::http1::SendRequest;
use hyper_util::rt::TokioIo;
use std::fmt;
use std::net::{SocketAddr, ToSocketAddrs};
use std::rc::Rc;
use std::sync::Arc;
use std::time::{Duration, Instant};
use tokio::net::{TcpSocket, TcpStream};
use tokio::time::timeout_at;
use tokio_rustls::TlsConnector;

/// The request could not be prepared. The message names the offending part.
#[derive(Debug, thiserror::Error)]
#[error("{0}")]
pub struct InvalidRequest(String);

fn invalid(msg: impl Into<String>) -> InvalidRequest {
    InvalidRequest(msg.into())
}

/// A prepared request: everything parsed once, so the hot path only clones.
pub struct HttpWorkload {
    name: NameId,
    method: Method,
    path: Uri,
    headers: HeaderMap,
    body: Bytes,
    addrs: Vec<SocketAddr>,
    tls: Option<(TlsConnector, rustls::pki_types::ServerName<'static>)>,
    timeout: Duration,
    connect_timeout: Duration,
    keepalive: bool,
}

impl fmt::Debug for HttpWorkload {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        // Headers are left out: they may hold secrets.
        f.debug_struct("HttpWorkload")
            .field("method", &self.method)
            .field("path", &self.path)
            .field("addrs", &self.addrs)
            .field("tls", &self.tls.is_some())
            .finish_non_exhaustive()
    }
}

/// One virtual user: at most one open connection.
#[derive(Debug, Default)]
pub struct HttpUser {
    conn: Option<Conn>,
}

struct Conn {
    sender: SendRequest<Full<Bytes>>,
    counters: Rc<Counters>,
}

impl fmt::Debug for Conn {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("Conn").finish_non_exhaustive()
    }
}

/// Why a request failed, kept unformatted until a sink asks for an example message.
enum Detail {
    Io(std::io::Error),
    Hyper(hyper::Error),
    Text(&'static str),
}

impl fmt::Display for Detail {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            Detail::Io(e) => write!(f, "{e}"),
            Detail::Hyper(e) => {
                write!(f, "{e}")?;
                let mut src = std::error::Error::source(e);
                while let Some(s) = src {
                    write!(f, ": {s}")?;
                    src = s.source();
                }
                Ok(())
            }
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
        Failure { outcome: classify::io_error(&e), detail: Detail::Io(e) }
    }
    fn hyper(e: hyper::Error) -> Self {
        Failure { outcome: classify::hyper_error(&e), detail: Detail::Hyper(e) }
    }
}

impl HttpWorkload {
    /// Prepares `req`; its statistics are grouped under `name`. Resolves the host once, here.
    pub fn new(req: &HttpRequest, name: NameId) -> Result<Self, InvalidRequest> {
        let uri: Uri = req.url.parse().map_err(|e| invalid(format!("the URL is not valid: {e}")))?;
        let scheme = uri.scheme_str().unwrap_or("");
        let https = match scheme {
            "http" => false,
            "https" => true,
            "" => return Err(invalid("the URL needs a scheme: http:// or https://")),
            other => return Err(invalid(format!("the URL scheme {other:?} is not supported; use http or https"))),
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
        let path: Uri = uri
            .path_and_query()
            .map(|p| p.as_str())
            .unwrap_or("/")
            .parse()
            .map_err(|e| invalid(format!("the URL path is not valid: {e}")))?;
        let method = Method::from_bytes(req.method.as_bytes())
            .map_err(|_| invalid(format!("{:?} is not a valid HTTP method", req.method)))?;

        let mut headers = HeaderMap::new();
        let authority = uri.authority().map(|a| a.as_str()).unwrap_or(&host);
        let authority = authority.rsplit_once('@').map_or(authority, |(_, a)| a);
        headers.insert(HOST, HeaderValue::from_str(authority).map_err(|_| invalid("the URL host is not a valid Host header"))?);
        headers.insert(USER_AGENT, HeaderValue::from_static(concat!("crest/", env!("CARGO_PKG_VERSION"))));
        for (name, value) in &req.headers {
            let n = HeaderName::from_bytes(name.as_bytes())
                .map_err(|_| invalid(format!("header name {name:?} is not valid")))?;
            let mut v = HeaderValue::from_str(value)
                .map_err(|_| invalid(format!("the value of header {name:?} is not valid")))?;
            if crest_model::redact::is_secret_name(name) {
                v.set_sensitive(true);
            }
            // User headers replace crest's defaults (Host, User-Agent) but repeat otherwise.
            if n == HOST || n == USER_AGENT {
                headers.insert(n, v);
            } else {
                headers.append(n, v);
            }
        }
        if !req.body.is_empty() || matches!(method, Method::POST | Method::PUT | Method::PATCH) {
            headers.insert(CONTENT_LENGTH, HeaderValue::from(req.body.len()));
        }
        if !req.keepalive {
            headers.insert(CONNECTION, HeaderValue::from_static("close"));
        }
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
            method,
            path,
            headers,
            body: Bytes::from(req.body.clone()),
            addrs,
            tls,
            timeout: req.timeout,
            connect_timeout: req.connect_timeout,
            keepalive: req.keepalive,
        })
    }

    fn request(&self) -> Request<Full<Bytes>> {
        let mut req = Request::new(Full::new(self.body.clone()));
        *req.method_mut() = self.method.clone();
        *req.uri_mut() = self.path.clone();
        *req.headers_mut() = self.headers.clone();
        req
    }

    async fn connect(&self) -> Result<Conn, Failure> {
        let addr = self.addrs[0];
        let socket = if addr.is_ipv4() { TcpSocket::new_v4() } else { TcpSocket::new_v6() }.map_err(Failure::io)?;
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
        let counters = Rc::new(Counters::default());
        let io = TokioIo::new(Counting { inner: stream, counters: Rc::clone(&counters) });
        let (sender, connection) = hyper::client::conn::http1::handshake(io).await.map_err(Failure::hyper)?;
        tokio::task::spawn_local(async move {
            // Errors surface through the sender; here they only end the connection.
            let _ = connection.await;
        });
        Ok(Conn { sender, counters })
    }

    /// Sends one request on `user`'s connection (opening one if needed) and reads the whole
    /// response. Returns the status.
    async fn exchange(
        &self,
        user: &mut HttpUser,
        started: Instant,
        connect: &mut Option<Duration>,
        status: &mut Option<u16>,
    ) -> Result<u16, Failure> {
        let deadline = started + self.timeout;
        if user.conn.as_ref().is_none_or(|c| c.sender.is_closed()) {
            user.conn = None;
            let limit = deadline.min(started + self.connect_timeout);
            let conn = match timeout_at(limit.into(), self.connect()).await {
                Ok(conn) => conn?,
                Err(_) => {
                    let outcome = if limit < deadline { Outcome::ConnectTimeout } else { Outcome::Timeout };
                    return Err(Failure { outcome, detail: Detail::Text("timed out while connecting") });
                }
            };
            *connect = Some(started.elapsed());
            user.conn = Some(conn);
        }
        let Some(conn) = user.conn.as_mut() else {
            return Err(Failure { outcome: Outcome::Other, detail: Detail::Text("no connection") });
        };
        conn.counters.reset();
        let req = self.request();
        let work = async {
            conn.sender.ready().await.map_err(Failure::hyper)?;
            let resp = conn.sender.send_request(req).await.map_err(Failure::hyper)?;
            let code = resp.status().as_u16();
            // Kept even if the body then fails: the head did arrive.
            *status = Some(code);
            let mut body = resp.into_body();
            while let Some(frame) = body.frame().await {
                frame.map_err(Failure::hyper)?;
            }
            Ok(code)
        };
        match timeout_at(deadline.into(), work).await {
            Ok(r) => r,
            Err(_) => Err(Failure { outcome: Outcome::Timeout, detail: Detail::Text("request timed out") }),
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
        let (mut connect, mut status) = (None, None);
        let result = self.exchange(user, started, &mut connect, &mut status).await;
        let end = Instant::now();
        let counters = user.conn.as_ref().map(|c| Rc::clone(&c.counters));
        let (bytes_sent, bytes_received, first) = match &counters {
            Some(c) => (c.written.get(), c.read.get(), c.first_read.get()),
            None => (0, 0, None),
        };
        let mut sample = Sample {
            name: self.name,
            intended: ctx.offset(intended),
            send_lag: started - intended,
            connect,
            ttfb: first.map(|f| f.saturating_duration_since(started)),
            total: end - intended,
            bytes_sent,
            bytes_received,
            status,
            outcome: Outcome::Success,
        };
        match result {
            Ok(status) => {
                if status >= 400 {
                    sample.outcome = Outcome::Status(status);
                }
                if !self.keepalive {
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
