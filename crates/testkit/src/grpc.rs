//! A gRPC server for tests: tonic's own server with the standard health and reflection
//! services and a small `test.Echo` service that counts every call it received and how each
//! ended, can hold calls to a concurrency limit (refusing the rest with UNAVAILABLE, as an
//! overloaded service does), answers with any status a request asks for, and sleeps on request.

use futures_util::StreamExt;
use std::net::SocketAddr;
use std::pin::Pin;
use std::sync::atomic::{AtomicU64, Ordering};
use std::sync::Arc;
use std::task::{Context, Poll};
use std::time::Duration;
use tonic::{Request, Response, Status};

/// The service's description, for `protos:` in a test scenario and for the server's reflection.
pub const ECHO_PROTO: &str = r#"syntax = "proto3";
package test;

message Req {
  string text = 1;
  int32 count = 2;
  // A status name (UNAVAILABLE, NOT_FOUND, ...) to answer with instead of OK.
  string fail = 3;
  int32 sleep_ms = 4;
}

message Res {
  string text = 1;
  int32 n = 2;
}

service Echo {
  rpc Say(Req) returns (Res);
  rpc Count(Req) returns (stream Res);
  rpc Collect(stream Req) returns (Res);
}
"#;

#[derive(Clone, PartialEq, prost::Message)]
pub struct Req {
    #[prost(string, tag = "1")]
    pub text: String,
    #[prost(int32, tag = "2")]
    pub count: i32,
    #[prost(string, tag = "3")]
    pub fail: String,
    #[prost(int32, tag = "4")]
    pub sleep_ms: i32,
}

#[derive(Clone, PartialEq, prost::Message)]
pub struct Res {
    #[prost(string, tag = "1")]
    pub text: String,
    #[prost(int32, tag = "2")]
    pub n: i32,
}

/// What the server counted.
#[derive(Debug, Default)]
pub struct Counts {
    /// Calls of any Echo method that reached the service.
    pub calls: AtomicU64,
    /// Calls answered OK.
    pub ok: AtomicU64,
    /// Calls refused with UNAVAILABLE because the service was at its limit.
    pub refused: AtomicU64,
    /// Calls answered with a status the request asked for.
    pub failed: AtomicU64,
    /// Messages received from clients (Collect's stream included).
    pub received: AtomicU64,
    /// Messages Count sent.
    pub streamed: AtomicU64,
    /// Calls holding a metadata `x-user` key.
    pub with_user: AtomicU64,
    /// TLS handshakes that failed.
    pub tls_failures: AtomicU64,
}

impl Counts {
    pub fn get(c: &AtomicU64) -> u64 {
        c.load(Ordering::SeqCst)
    }
}

/// How the server behaves.
#[derive(Clone, Copy, Debug, Default)]
pub struct Behaviour {
    /// Calls served at once; the rest are refused with UNAVAILABLE. 0: no limit.
    pub limit: u64,
    /// How long each Say takes.
    pub service_time: Duration,
}

/// A running gRPC server.
#[derive(Debug)]
pub struct GrpcServer {
    pub addr: SocketAddr,
    pub counts: Arc<Counts>,
    task: tokio::task::JoinHandle<()>,
}

impl Drop for GrpcServer {
    fn drop(&mut self) {
        self.task.abort();
    }
}

impl GrpcServer {
    /// Starts the server on 127.0.0.1:0 in the current runtime; with `reflection`, it also
    /// serves the reflection service (v1 and v1alpha).
    pub async fn start(behaviour: Behaviour, reflection: bool) -> GrpcServer {
        Self::start_on(0, behaviour, reflection).await
    }

    /// As [`GrpcServer::start`], on 127.0.0.1:`port`.
    pub async fn start_on(port: u16, behaviour: Behaviour, reflection: bool) -> GrpcServer {
        let listener = tokio::net::TcpListener::bind(("127.0.0.1", port)).await.expect("bind");
        let addr = listener.local_addr().expect("addr");
        // tonic sets no TCP_NODELAY on connections it is handed: without it, a client that
        // writes a call's headers and body apart waits for a delayed ACK (40 ms) on each call.
        let incoming = tokio_stream::wrappers::TcpListenerStream::new(listener).map(|tcp| {
            let tcp = tcp?;
            tcp.set_nodelay(true)?;
            Ok::<_, std::io::Error>(tcp)
        });
        Self::serve(behaviour, reflection, incoming, addr, Arc::new(Counts::default()))
    }

    /// As [`GrpcServer::start`], over TLS (ALPN `h2`) with a certificate for 127.0.0.1 from a
    /// test CA, whose PEM is returned. Handshakes that fail (a client without the CA) are
    /// dropped and counted in [`Counts::tls_failures`].
    pub async fn start_tls(behaviour: Behaviour, reflection: bool) -> (GrpcServer, String) {
        let listener = tokio::net::TcpListener::bind("127.0.0.1:0").await.expect("bind");
        let addr = listener.local_addr().expect("addr");
        let (acceptor, ca, _) = crate::tls_acceptor(&[b"h2"], false);
        let counts = Arc::new(Counts::default());
        let failed = counts.clone();
        let incoming = futures_util::stream::unfold(listener, move |listener| {
            let acceptor = acceptor.clone();
            let failed = failed.clone();
            async move {
                loop {
                    let Ok((tcp, _)) = listener.accept().await else {
                        return None;
                    };
                    let _ = tcp.set_nodelay(true);
                    match acceptor.accept(tcp).await {
                        Ok(tls) => return Some((Ok::<_, std::io::Error>(Tls(tls)), listener)),
                        Err(_) => {
                            failed.tls_failures.fetch_add(1, Ordering::SeqCst);
                        }
                    }
                }
            }
        });
        (Self::serve(behaviour, reflection, incoming, addr, counts), ca)
    }

    fn serve<S, IO>(
        behaviour: Behaviour,
        reflection: bool,
        incoming: S,
        addr: SocketAddr,
        counts: Arc<Counts>,
    ) -> GrpcServer
    where
        S: futures_util::Stream<Item = Result<IO, std::io::Error>> + Send + 'static,
        IO: tonic::transport::server::Connected + tokio::io::AsyncRead + tokio::io::AsyncWrite + Unpin + Send + 'static,
    {
        let echo = Echo {
            counts: counts.clone(),
            behaviour,
            in_flight: Arc::new(AtomicU64::new(0)),
        };
        let (_reporter, health) = tonic_health::server::health_reporter();
        let mut router = tonic::transport::Server::builder()
            .add_service(health)
            .add_service(echo);
        if reflection {
            let set = descriptor_set();
            let v1 = tonic_reflection::server::Builder::configure()
                .register_encoded_file_descriptor_set(&set)
                .register_encoded_file_descriptor_set(tonic_health::pb::FILE_DESCRIPTOR_SET)
                .build_v1()
                .expect("reflection");
            let v1alpha = tonic_reflection::server::Builder::configure()
                .register_encoded_file_descriptor_set(&set)
                .register_encoded_file_descriptor_set(tonic_health::pb::FILE_DESCRIPTOR_SET)
                .build_v1alpha()
                .expect("reflection");
            router = router.add_service(v1).add_service(v1alpha);
        }
        let task = tokio::spawn(async move {
            let _ = router.serve_with_incoming(incoming).await;
        });
        GrpcServer { addr, counts, task }
    }

    /// `http://127.0.0.1:PORT`.
    pub fn url(&self) -> String {
        format!("http://{}", self.addr)
    }
}

/// A TLS connection as tonic's server takes one.
struct Tls(tokio_rustls::server::TlsStream<tokio::net::TcpStream>);

impl tonic::transport::server::Connected for Tls {
    type ConnectInfo = ();

    fn connect_info(&self) {}
}

impl tokio::io::AsyncRead for Tls {
    fn poll_read(
        self: Pin<&mut Self>,
        cx: &mut Context<'_>,
        buf: &mut tokio::io::ReadBuf<'_>,
    ) -> Poll<std::io::Result<()>> {
        Pin::new(&mut self.get_mut().0).poll_read(cx, buf)
    }
}

impl tokio::io::AsyncWrite for Tls {
    fn poll_write(self: Pin<&mut Self>, cx: &mut Context<'_>, buf: &[u8]) -> Poll<std::io::Result<usize>> {
        Pin::new(&mut self.get_mut().0).poll_write(cx, buf)
    }

    fn poll_flush(self: Pin<&mut Self>, cx: &mut Context<'_>) -> Poll<std::io::Result<()>> {
        Pin::new(&mut self.get_mut().0).poll_flush(cx)
    }

    fn poll_shutdown(self: Pin<&mut Self>, cx: &mut Context<'_>) -> Poll<std::io::Result<()>> {
        Pin::new(&mut self.get_mut().0).poll_shutdown(cx)
    }
}

/// [`ECHO_PROTO`] compiled, as the reflection service hands it over.
fn descriptor_set() -> Vec<u8> {
    let dir = tempfile::tempdir().expect("tempdir");
    std::fs::write(dir.path().join("echo.proto"), ECHO_PROTO).expect("write");
    let mut c = protox::Compiler::new([dir.path()]).expect("compiler");
    c.open_file("echo.proto").expect("compiles");
    c.encode_file_descriptor_set()
}

#[derive(Clone)]
struct Echo {
    counts: Arc<Counts>,
    behaviour: Behaviour,
    in_flight: Arc<AtomicU64>,
}

impl tonic::server::NamedService for Echo {
    const NAME: &'static str = "test.Echo";
}

type BoxFuture<T> = Pin<Box<dyn std::future::Future<Output = T> + Send>>;

impl tower_service::Service<http::Request<tonic::body::Body>> for Echo {
    type Response = http::Response<tonic::body::Body>;
    type Error = std::convert::Infallible;
    type Future = BoxFuture<Result<Self::Response, Self::Error>>;

    fn poll_ready(&mut self, _: &mut Context<'_>) -> Poll<Result<(), Self::Error>> {
        Poll::Ready(Ok(()))
    }

    fn call(&mut self, req: http::Request<tonic::body::Body>) -> Self::Future {
        let echo = self.clone();
        Box::pin(async move {
            if req.headers().contains_key("x-user") {
                echo.counts.with_user.fetch_add(1, Ordering::SeqCst);
            }
            let mut grpc = tonic::server::Grpc::new(tonic_prost::ProstCodec::<Res, Req>::default());
            Ok(match req.uri().path() {
                "/test.Echo/Say" => grpc.unary(Say(echo), req).await,
                "/test.Echo/Count" => grpc.server_streaming(Count(echo), req).await,
                "/test.Echo/Collect" => grpc.client_streaming(Collect(echo), req).await,
                _ => Status::unimplemented("no such method").into_http(),
            })
        })
    }
}

impl Echo {
    /// Counts a call in, refusing it when the service is at its limit or the request asks.
    fn admit(&self, r: &Req) -> Result<InFlight, Status> {
        self.counts.calls.fetch_add(1, Ordering::SeqCst);
        self.counts.received.fetch_add(1, Ordering::SeqCst);
        let now = self.in_flight.fetch_add(1, Ordering::SeqCst) + 1;
        let held = InFlight(self.in_flight.clone());
        if self.behaviour.limit > 0 && now > self.behaviour.limit {
            self.counts.refused.fetch_add(1, Ordering::SeqCst);
            return Err(Status::unavailable("at capacity"));
        }
        if !r.fail.is_empty() {
            self.counts.failed.fetch_add(1, Ordering::SeqCst);
            let code = (0..17)
                .map(tonic::Code::from_i32)
                .find(|c| format!("{c:?}").eq_ignore_ascii_case(&r.fail.replace('_', "")))
                .unwrap_or(tonic::Code::Unknown);
            return Err(Status::new(code, "asked to fail"));
        }
        Ok(held)
    }
}

/// One call in flight, until dropped.
struct InFlight(Arc<AtomicU64>);

impl Drop for InFlight {
    fn drop(&mut self) {
        self.0.fetch_sub(1, Ordering::SeqCst);
    }
}

struct Say(Echo);

impl tonic::server::UnaryService<Req> for Say {
    type Response = Res;
    type Future = BoxFuture<Result<Response<Res>, Status>>;

    fn call(&mut self, request: Request<Req>) -> Self::Future {
        let echo = self.0.clone();
        Box::pin(async move {
            let r = request.into_inner();
            let _held = echo.admit(&r)?;
            let wait = echo.behaviour.service_time + Duration::from_millis(r.sleep_ms.max(0) as u64);
            if !wait.is_zero() {
                tokio::time::sleep(wait).await;
            }
            echo.counts.ok.fetch_add(1, Ordering::SeqCst);
            Ok(Response::new(Res {
                text: r.text,
                n: r.count,
            }))
        })
    }
}

struct Count(Echo);

impl tonic::server::ServerStreamingService<Req> for Count {
    type Response = Res;
    type ResponseStream = Pin<Box<dyn futures_util::Stream<Item = Result<Res, Status>> + Send>>;
    type Future = BoxFuture<Result<Response<Self::ResponseStream>, Status>>;

    fn call(&mut self, request: Request<Req>) -> Self::Future {
        let echo = self.0.clone();
        Box::pin(async move {
            let r = request.into_inner();
            let held = echo.admit(&r)?;
            echo.counts.ok.fetch_add(1, Ordering::SeqCst);
            let gap = Duration::from_millis(r.sleep_ms.max(0) as u64);
            let counts = echo.counts.clone();
            let stream = futures_util::stream::iter(1..=r.count.max(0)).then(move |n| {
                let text = r.text.clone();
                let counts = counts.clone();
                let _held = &held;
                async move {
                    if !gap.is_zero() {
                        tokio::time::sleep(gap).await;
                    }
                    counts.streamed.fetch_add(1, Ordering::SeqCst);
                    Ok(Res { text, n })
                }
            });
            Ok(Response::new(Box::pin(stream) as Self::ResponseStream))
        })
    }
}

struct Collect(Echo);

impl tonic::server::ClientStreamingService<Req> for Collect {
    type Response = Res;
    type Future = BoxFuture<Result<Response<Res>, Status>>;

    fn call(&mut self, request: Request<tonic::Streaming<Req>>) -> Self::Future {
        let echo = self.0.clone();
        Box::pin(async move {
            let mut stream = request.into_inner();
            let mut n = 0;
            let mut text = String::new();
            let mut first = true;
            let mut held = None;
            while let Some(r) = stream.next().await {
                let r = r?;
                if first {
                    held = Some(echo.admit(&r)?);
                    first = false;
                } else {
                    echo.counts.received.fetch_add(1, Ordering::SeqCst);
                }
                n += 1;
                text.push_str(&r.text);
            }
            drop(held);
            echo.counts.ok.fetch_add(1, Ordering::SeqCst);
            Ok(Response::new(Res { text, n }))
        })
    }
}
