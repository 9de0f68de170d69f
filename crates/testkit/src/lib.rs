//! Test servers on 127.0.0.1:0 with scripted behaviour, for crest's own tests.
//!
//! A hand-written HTTP/1.1 server rather than hyper's, because the tests need to misbehave in
//! ways a correct server library will not: stall, reset in the middle of a body, never answer.
//! Every server records what it received so tests can check both sides of the wire.
#![allow(missing_docs)]

pub mod cgroup;
pub mod faulty;
pub mod grpc;
pub mod h2;
pub mod proxy;
pub mod results;
pub mod toucher;

use std::net::SocketAddr;
use std::sync::atomic::{AtomicU64, Ordering};
use std::sync::{Arc, Mutex};
use std::time::{Duration, Instant};
use tokio::io::{AsyncReadExt, AsyncWriteExt};
use tokio::net::{TcpListener, TcpStream};

/// A request as the server received it.
#[derive(Clone, Debug)]
pub struct Received {
    pub method: String,
    pub path: String,
    pub headers: Vec<(String, String)>,
    pub body: Vec<u8>,
    pub at: Instant,
    pub connection: u64,
    /// The index the behaviour was called with (arrival order at the server).
    pub index: u64,
}

impl Received {
    /// The parts of a multipart body, each head (its header lines) and content, split at the
    /// boundary its Content-Type names. Panics on a body that is not one: that is the test's
    /// failure.
    pub fn multipart_parts(&self) -> Vec<(String, Vec<u8>)> {
        let ct = self
            .headers
            .iter()
            .find(|(n, _)| n.eq_ignore_ascii_case("content-type"))
            .map(|(_, v)| v.as_str())
            .expect("a Content-Type");
        let boundary = ct.split("boundary=").nth(1).expect("a boundary in the Content-Type");
        let delim = format!("--{boundary}");
        let mut parts = Vec::new();
        let mut rest: &[u8] = &self.body;
        assert!(rest.starts_with(delim.as_bytes()), "the body starts with its boundary");
        loop {
            rest = &rest[delim.len()..];
            if rest.starts_with(b"--") {
                break;
            }
            rest = &rest[2..];
            let end = rest
                .windows(delim.len())
                .position(|w| w == delim.as_bytes())
                .expect("a part ends at a boundary");
            let part = &rest[..end - 2];
            let split = part
                .windows(4)
                .position(|w| w == b"\r\n\r\n")
                .expect("a part's head ends with an empty line");
            parts.push((
                String::from_utf8_lossy(&part[..split]).into_owned(),
                part[split + 4..].to_vec(),
            ));
            rest = &rest[end..];
        }
        parts
    }
}

/// What the server does with one request.
#[derive(Clone, Debug)]
pub enum Reply {
    /// Wait, then answer with this status and a body of `body_len` bytes.
    Respond {
        delay: Duration,
        status: u16,
        body_len: usize,
    },
    /// Send the head and `sent` bytes of a `declared`-byte body, then reset the connection.
    ResetMidBody { declared: usize, sent: usize },
    /// Never answer; hold the connection open.
    Hang,
    /// Answer with this status, extra headers (Location, Set-Cookie, Content-Encoding) and
    /// body.
    Full {
        status: u16,
        headers: Vec<(String, String)>,
        body: Vec<u8>,
    },
    /// Wait, then do as the reply inside says.
    Delayed(Duration, Box<Reply>),
    /// Answer with this status and body (JSON, say), after a delay.
    Body {
        delay: Duration,
        status: u16,
        body: Vec<u8>,
    },
}

impl Reply {
    pub fn ok() -> Self {
        Reply::Respond {
            delay: Duration::ZERO,
            status: 200,
            body_len: 2,
        }
    }
    pub fn delayed(delay: Duration) -> Self {
        Reply::Respond {
            delay,
            status: 200,
            body_len: 2,
        }
    }
    /// A redirect to `location`.
    pub fn redirect(status: u16, location: &str) -> Self {
        Reply::Full {
            status,
            headers: vec![("Location".into(), location.into())],
            body: Vec::new(),
        }
    }
    /// `body` compressed with `coding` (gzip, deflate or br), labelled as such.
    pub fn encoded(coding: &str, body: &[u8]) -> Self {
        use std::io::Write;
        let data = match coding {
            "gzip" => {
                let mut e = flate2::write::GzEncoder::new(Vec::new(), flate2::Compression::default());
                e.write_all(body).expect("gzip");
                e.finish().expect("gzip")
            }
            "deflate" => {
                let mut e = flate2::write::ZlibEncoder::new(Vec::new(), flate2::Compression::default());
                e.write_all(body).expect("deflate");
                e.finish().expect("deflate")
            }
            "br" => {
                let mut out = Vec::new();
                let mut e = brotli::CompressorWriter::new(&mut out, 4096, 5, 22);
                e.write_all(body).expect("br");
                drop(e);
                out
            }
            other => panic!("no coding {other}"),
        };
        Reply::Full {
            status: 200,
            headers: vec![
                ("Content-Encoding".into(), coding.into()),
                ("Content-Type".into(), "application/json".into()),
            ],
            body: data,
        }
    }
    pub fn json(status: u16, body: impl Into<String>) -> Self {
        Reply::Body {
            delay: Duration::ZERO,
            status,
            body: body.into().into_bytes(),
        }
    }
}

type Behaviour = Arc<dyn Fn(&Received, u64) -> Reply + Send + Sync>;

/// A running test server of either protocol: where it listens and what it saw. It stops when
/// dropped.
#[derive(Debug)]
pub struct Listening {
    pub addr: SocketAddr,
    received: Arc<Mutex<Vec<Received>>>,
    connections: Arc<AtomicU64>,
    task: tokio::task::JoinHandle<()>,
    /// The CA certificate (PEM) for TLS servers.
    pub ca_pem: Option<String>,
}

impl Drop for Listening {
    fn drop(&mut self) {
        self.task.abort();
    }
}

/// A connection as a server reads it: plain, or after the TLS handshake.
pub trait Io: tokio::io::AsyncRead + tokio::io::AsyncWrite + Unpin + Send {
    /// Closes it with a TCP reset rather than a FIN.
    fn reset_box(self: Box<Self>);
}

impl Io for TcpStream {
    fn reset_box(self: Box<Self>) {
        (*self).reset();
    }
}

impl Io for tokio_rustls::server::TlsStream<TcpStream> {
    fn reset_box(self: Box<Self>) {
        (*self).reset();
    }
}

impl AsRawSocket for Box<dyn Io> {
    fn reset(self) {
        self.reset_box();
    }
}

impl Listening {
    /// Listens on 127.0.0.1:0 and hands each connection (after the TLS handshake, when `tls`
    /// is given) to `serve`, with its number from 0 and the list of requests to add to.
    async fn start<S, F>(tls: Option<tokio_rustls::TlsAcceptor>, serve: S) -> Listening
    where
        S: Fn(Box<dyn Io>, u64, Arc<Mutex<Vec<Received>>>) -> F + Send + Sync + 'static,
        F: std::future::Future<Output = ()> + Send + 'static,
    {
        Self::start_at("127.0.0.1:0".parse().expect("addr"), tls, serve).await
    }

    /// Like [`Listening::start`], on `at`.
    async fn start_at<S, F>(at: SocketAddr, tls: Option<tokio_rustls::TlsAcceptor>, serve: S) -> Listening
    where
        S: Fn(Box<dyn Io>, u64, Arc<Mutex<Vec<Received>>>) -> F + Send + Sync + 'static,
        F: std::future::Future<Output = ()> + Send + 'static,
    {
        let listener = TcpListener::bind(at).await.unwrap_or_else(|e| panic!("bind {at}: {e}"));
        let addr = listener.local_addr().expect("local addr");
        let received = Arc::new(Mutex::new(Vec::new()));
        let connections = Arc::new(AtomicU64::new(0));
        let (rec, conns) = (received.clone(), connections.clone());
        let serve = Arc::new(serve);
        let task = tokio::spawn(async move {
            loop {
                let Ok((stream, _)) = listener.accept().await else {
                    continue;
                };
                let _ = stream.set_nodelay(true);
                let conn_id = conns.fetch_add(1, Ordering::SeqCst);
                let (serve, rec, tls) = (serve.clone(), rec.clone(), tls.clone());
                tokio::spawn(async move {
                    let io: Box<dyn Io> = match tls {
                        None => Box::new(stream),
                        Some(acc) => match acc.accept(stream).await {
                            Ok(s) => Box::new(s),
                            Err(_) => return,
                        },
                    };
                    serve(io, conn_id, rec).await;
                });
            }
        });
        Listening {
            addr,
            received,
            connections,
            task,
            ca_pem: None,
        }
    }

    /// `http://127.0.0.1:PORT{path}` (or https for TLS servers).
    pub fn url(&self, path: &str) -> String {
        let scheme = if self.ca_pem.is_some() { "https" } else { "http" };
        format!("{scheme}://{}{path}", self.addr)
    }

    /// Everything received so far.
    pub fn received(&self) -> Vec<Received> {
        self.received.lock().expect("lock").clone()
    }

    /// Connections accepted so far.
    pub fn connections(&self) -> u64 {
        self.connections.load(Ordering::SeqCst)
    }
}

/// A running HTTP/1.1 test server (see [`Listening`] for what it tells).
#[derive(Debug)]
pub struct Server(Listening);

impl std::ops::Deref for Server {
    type Target = Listening;
    fn deref(&self) -> &Listening {
        &self.0
    }
}

impl Server {
    /// Starts a plain HTTP server. `behaviour` gets each request and its index (from 0).
    pub async fn start(behaviour: impl Fn(&Received, u64) -> Reply + Send + Sync + 'static) -> Server {
        Self::spawn(Arc::new(behaviour), None).await
    }

    /// Starts an HTTPS server whose certificate, for `localhost` and 127.0.0.1, is signed by a
    /// fresh private CA (returned in [`Listening::ca_pem`]).
    pub async fn start_tls(behaviour: impl Fn(&Received, u64) -> Reply + Send + Sync + 'static) -> Server {
        let (acceptor, ca_pem, _) = tls_acceptor(&[], false);
        let mut s = Self::spawn(Arc::new(behaviour), Some(acceptor)).await;
        s.0.ca_pem = Some(ca_pem);
        s
    }

    /// Starts an HTTPS server that requires a client certificate signed by its own CA (mutual
    /// TLS), and returns one such certificate with its key, in PEM.
    pub async fn start_mtls(
        behaviour: impl Fn(&Received, u64) -> Reply + Send + Sync + 'static,
    ) -> (Server, ClientCert) {
        let (acceptor, ca_pem, client) = tls_acceptor(&[], true);
        let mut s = Self::spawn(Arc::new(behaviour), Some(acceptor)).await;
        s.0.ca_pem = Some(ca_pem);
        (s, client.expect("client certificate"))
    }

    /// Starts a plain HTTP server on `at` (another loopback address, say `127.0.0.2:PORT`).
    pub async fn start_at(
        at: SocketAddr,
        behaviour: impl Fn(&Received, u64) -> Reply + Send + Sync + 'static,
    ) -> Server {
        let behaviour: Behaviour = Arc::new(behaviour);
        let counter = Arc::new(AtomicU64::new(0));
        Server(
            Listening::start_at(at, None, move |io, conn_id, rec| {
                serve(io, conn_id, behaviour.clone(), rec, counter.clone())
            })
            .await,
        )
    }

    async fn spawn(behaviour: Behaviour, tls: Option<tokio_rustls::TlsAcceptor>) -> Server {
        let counter = Arc::new(AtomicU64::new(0));
        Server(
            Listening::start(tls, move |io, conn_id, rec| {
                serve(io, conn_id, behaviour.clone(), rec, counter.clone())
            })
            .await,
        )
    }
}

/// An address on which nothing listens: connections to it are refused.
pub fn refused_addr() -> SocketAddr {
    let l = std::net::TcpListener::bind("127.0.0.1:0").expect("bind");
    l.local_addr().expect("addr")
}

async fn serve<S>(mut s: S, conn: u64, behaviour: Behaviour, rec: Arc<Mutex<Vec<Received>>>, counter: Arc<AtomicU64>)
where
    S: tokio::io::AsyncRead + tokio::io::AsyncWrite + Unpin + AsRawSocket,
{
    let mut buf = Vec::with_capacity(8192);
    loop {
        // Read one request head.
        let head_end = loop {
            if let Some(pos) = find(&buf, b"\r\n\r\n") {
                break pos + 4;
            }
            let mut chunk = [0u8; 8192];
            match s.read(&mut chunk).await {
                Ok(0) | Err(_) => return,
                Ok(n) => buf.extend_from_slice(&chunk[..n]),
            }
        };
        let mut headers = [httparse::EMPTY_HEADER; 64];
        let mut req = httparse::Request::new(&mut headers);
        if req.parse(&buf[..head_end]).is_err() {
            return;
        }
        let method = req.method.unwrap_or("").to_string();
        let path = req.path.unwrap_or("").to_string();
        let hdrs: Vec<(String, String)> = req
            .headers
            .iter()
            .map(|h| (h.name.to_string(), String::from_utf8_lossy(h.value).to_string()))
            .collect();
        let len: usize = hdrs
            .iter()
            .find(|(n, _)| n.eq_ignore_ascii_case("content-length"))
            .and_then(|(_, v)| v.trim().parse().ok())
            .unwrap_or(0);
        let close = hdrs
            .iter()
            .any(|(n, v)| n.eq_ignore_ascii_case("connection") && v.eq_ignore_ascii_case("close"));
        while buf.len() < head_end + len {
            let mut chunk = [0u8; 8192];
            match s.read(&mut chunk).await {
                Ok(0) | Err(_) => return,
                Ok(n) => buf.extend_from_slice(&chunk[..n]),
            }
        }
        let body = buf[head_end..head_end + len].to_vec();
        buf.drain(..head_end + len);
        let idx = counter.fetch_add(1, Ordering::SeqCst);
        let r = Received {
            method,
            path,
            headers: hdrs,
            body,
            at: Instant::now(),
            connection: conn,
            index: idx,
        };
        let reply = behaviour(&r, idx);
        rec.lock().expect("lock").push(r);
        let reply = match reply {
            Reply::Delayed(delay, then) => {
                precise_sleep(delay).await;
                *then
            }
            reply => reply,
        };
        match reply {
            Reply::Respond {
                delay,
                status,
                body_len,
            } => {
                precise_sleep(delay).await;
                let head = format!(
                    "HTTP/1.1 {status} X\r\ncontent-length: {body_len}\r\ncontent-type: text/plain\r\n{}\r\n",
                    if close { "connection: close\r\n" } else { "" }
                );
                if s.write_all(head.as_bytes()).await.is_err() {
                    return;
                }
                let chunk = vec![b'x'; body_len.min(64 * 1024)];
                let mut left = body_len;
                while left > 0 {
                    let n = left.min(chunk.len());
                    if s.write_all(&chunk[..n]).await.is_err() {
                        return;
                    }
                    left -= n;
                }
                if close {
                    let _ = s.shutdown().await;
                    return;
                }
            }
            Reply::ResetMidBody { declared, sent } => {
                let head = format!("HTTP/1.1 200 OK\r\ncontent-length: {declared}\r\n\r\n");
                let _ = s.write_all(head.as_bytes()).await;
                let _ = s.write_all(&vec![b'x'; sent]).await;
                let _ = s.flush().await;
                tokio::time::sleep(Duration::from_millis(20)).await;
                s.reset();
                return;
            }
            Reply::Body { delay, status, body } => {
                precise_sleep(delay).await;
                let head = format!(
                    "HTTP/1.1 {status} X\r\ncontent-length: {}\r\ncontent-type: application/json\r\n{}\r\n",
                    body.len(),
                    if close { "connection: close\r\n" } else { "" }
                );
                if s.write_all(head.as_bytes()).await.is_err() || s.write_all(&body).await.is_err() {
                    return;
                }
                if close {
                    let _ = s.shutdown().await;
                    return;
                }
            }
            Reply::Full { status, headers, body } => {
                let mut head = format!("HTTP/1.1 {status} X\r\ncontent-length: {}\r\n", body.len());
                for (n, v) in &headers {
                    head.push_str(&format!("{n}: {v}\r\n"));
                }
                head.push_str("\r\n");
                if s.write_all(head.as_bytes()).await.is_err() || s.write_all(&body).await.is_err() {
                    return;
                }
            }
            Reply::Hang => {
                tokio::time::sleep(Duration::from_secs(3600)).await;
                return;
            }
            Reply::Delayed(..) => unreachable!("waited for above"),
        }
    }
}

/// Sleeps for `d` to within about a tenth of a millisecond. tokio's timer has millisecond
/// granularity and rounds up, which would add up to a millisecond to every delay.
pub async fn precise_sleep(d: Duration) {
    if d.is_zero() {
        return;
    }
    let _ = tokio::task::spawn_blocking(move || std::thread::sleep(d)).await;
}

fn find(hay: &[u8], needle: &[u8]) -> Option<usize> {
    hay.windows(needle.len()).position(|w| w == needle)
}

/// Streams that can be closed with a TCP reset (SO_LINGER 0), which is how servers abort.
pub trait AsRawSocket {
    fn reset(self);
}

impl AsRawSocket for TcpStream {
    fn reset(self) {
        let _ = self.set_zero_linger();
        drop(self);
    }
}

impl AsRawSocket for tokio_rustls::server::TlsStream<TcpStream> {
    fn reset(self) {
        let (tcp, _) = self.into_inner();
        tcp.reset();
    }
}

/// A client certificate and its private key, in PEM.
#[derive(Clone, Debug)]
pub struct ClientCert {
    pub cert_pem: String,
    pub key_pem: String,
}

/// A TLS acceptor offering `alpn` (none: no ALPN), and its CA's certificate in PEM; with
/// `client_auth`, it requires a client certificate signed by the same CA, and one is returned.
pub fn tls_acceptor(alpn: &[&[u8]], client_auth: bool) -> (tokio_rustls::TlsAcceptor, String, Option<ClientCert>) {
    use rcgen::{BasicConstraints, CertificateParams, IsCa, KeyPair};
    let ca_key = KeyPair::generate().expect("ca key");
    let mut ca_params = CertificateParams::new(Vec::<String>::new()).expect("ca params");
    ca_params.is_ca = IsCa::Ca(BasicConstraints::Unconstrained);
    ca_params
        .distinguished_name
        .push(rcgen::DnType::CommonName, "crest test CA");
    let ca = ca_params.self_signed(&ca_key).expect("ca cert");
    let leaf_key = KeyPair::generate().expect("leaf key");
    let leaf_params =
        CertificateParams::new(vec!["localhost".to_string(), "127.0.0.1".to_string()]).expect("leaf params");
    let leaf = leaf_params.signed_by(&leaf_key, &ca, &ca_key).expect("leaf cert");
    let key = rustls::pki_types::PrivateKeyDer::try_from(leaf_key.serialize_der()).expect("key der");
    let provider = Arc::new(rustls::crypto::ring::default_provider());
    let builder = rustls::ServerConfig::builder_with_provider(provider.clone())
        .with_safe_default_protocol_versions()
        .expect("protocols");
    let (builder, client) = if client_auth {
        let mut roots = rustls::RootCertStore::empty();
        roots.add(ca.der().clone()).expect("ca root");
        let verifier = rustls::server::WebPkiClientVerifier::builder_with_provider(Arc::new(roots), provider)
            .build()
            .expect("client verifier");
        let client_key = KeyPair::generate().expect("client key");
        let client_cert = CertificateParams::new(vec!["crest-client".to_string()])
            .expect("client params")
            .signed_by(&client_key, &ca, &ca_key)
            .expect("client cert");
        let pems = ClientCert {
            cert_pem: client_cert.pem(),
            key_pem: client_key.serialize_pem(),
        };
        (builder.with_client_cert_verifier(verifier), Some(pems))
    } else {
        (builder.with_no_client_auth(), None)
    };
    let mut config = builder
        .with_single_cert(vec![leaf.der().clone()], key)
        .expect("server config");
    config.alpn_protocols = alpn.iter().map(|p| p.to_vec()).collect();
    (tokio_rustls::TlsAcceptor::from(Arc::new(config)), ca.pem(), client)
}
