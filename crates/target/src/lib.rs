//! The built-in demo system under test, served on loopback.
//!
//! It lets anyone try crest in one command, with no server of their own: `crest demo` starts it
//! in-process, and `crest target` serves it for other tools. This first version answers every
//! request after a fixed service time with a body of a fixed size; the capacity-finder issue
//! grows it into the seeds' services (bounded workers and queue, task API, large responses).
#![warn(missing_docs)]

use bytes::Bytes;
use http_body_util::Full;
use hyper::{Request, Response, StatusCode};
use hyper_util::rt::TokioIo;
use std::convert::Infallible;
use std::net::SocketAddr;
use std::sync::Arc;
use std::time::Duration;
use tokio::net::{TcpListener, TcpSocket};

/// Pending connections the kernel may queue (capped by net.core.somaxconn).
const LISTEN_BACKLOG: u32 = 8192;

/// How the demo target behaves.
#[derive(Clone, Debug)]
pub struct Config {
    /// Time to answer each request.
    pub delay: Duration,
    /// Size of each response body in bytes.
    pub body_size: usize,
}

impl Default for Config {
    fn default() -> Self {
        Config {
            delay: Duration::from_millis(10),
            body_size: 1024,
        }
    }
}

/// Serves the target on `listener` until the task is dropped.
pub async fn serve(listener: TcpListener, config: Config) -> std::io::Result<()> {
    let body = Bytes::from(vec![b'x'; config.body_size]);
    let config = Arc::new(config);
    loop {
        let (stream, _) = listener.accept().await?;
        let _ = stream.set_nodelay(true);
        let (config, body) = (Arc::clone(&config), body.clone());
        tokio::spawn(async move {
            let service = hyper::service::service_fn(move |req: Request<hyper::body::Incoming>| {
                let (config, body) = (Arc::clone(&config), body.clone());
                async move { Ok::<_, Infallible>(respond(&req, &config, body).await) }
            });
            let _ = hyper::server::conn::http1::Builder::new()
                .serve_connection(TokioIo::new(stream), service)
                .await;
        });
    }
}

async fn respond(req: &Request<hyper::body::Incoming>, config: &Config, body: Bytes) -> Response<Full<Bytes>> {
    if req.uri().path() == "/health" {
        return Response::new(Full::new(Bytes::from_static(b"ok")));
    }
    if !config.delay.is_zero() {
        tokio::time::sleep(config.delay).await;
    }
    let mut resp = Response::new(Full::new(body));
    if req.uri().path() != "/" {
        *resp.status_mut() = StatusCode::NOT_FOUND;
    }
    resp
}

/// Starts the target on its own thread and runtime, so that it never competes with the load
/// generator's event loops. Returns the address it listens on.
pub fn spawn(addr: SocketAddr, config: Config) -> std::io::Result<SocketAddr> {
    let rt = tokio::runtime::Builder::new_multi_thread()
        .worker_threads(1)
        .enable_all()
        .build()?;
    let listener = rt.block_on(async {
        let socket = if addr.is_ipv4() {
            TcpSocket::new_v4()?
        } else {
            TcpSocket::new_v6()?
        };
        socket.set_reuseaddr(true)?;
        socket.bind(addr)?;
        // A deep backlog, so that thousands of users connecting at once are queued by the
        // kernel rather than dropped and retried a second later.
        socket.listen(LISTEN_BACKLOG)
    })?;
    let local = listener.local_addr()?;
    std::thread::Builder::new().name("crest-target".into()).spawn(move || {
        rt.block_on(async move {
            let _ = serve(listener, config).await;
        })
    })?;
    Ok(local)
}
