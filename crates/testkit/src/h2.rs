//! An HTTP/2 test server, over TLS (ALPN `h2`) or cleartext with prior knowledge.
//!
//! Built on the `h2` crate rather than hyper's server (which uses it underneath) because the
//! tests need what hyper does not expose: a GOAWAY with an error code while streams are in
//! flight, and RST_STREAM with a chosen code.

use crate::{Listening, Received};
use bytes::Bytes;
use std::sync::atomic::{AtomicBool, AtomicU64, Ordering};
use std::sync::{Arc, Mutex};
use std::time::{Duration, Instant};
use tokio::io::{AsyncRead, AsyncWrite};
use tokio::sync::mpsc;

/// What the server does with one stream.
#[derive(Clone, Debug)]
pub enum H2Reply {
    /// Wait, then answer with this status, extra headers and body.
    Respond {
        delay: Duration,
        status: u16,
        headers: Vec<(String, String)>,
        body: Vec<u8>,
    },
    /// Reset the stream with this error code.
    Reset(u32),
    /// Shut the whole connection down with GOAWAY and this error code, without answering:
    /// streams still in flight on it fail.
    GoAway(u32),
    /// Close the connection at once, without answering and without GOAWAY, as a crashing
    /// process would: the client is never told which streams were processed.
    Crash,
    /// Answer, then shut the connection down gracefully (GOAWAY with NO_ERROR, as nginx does
    /// after `keepalive_requests`): the streams it took are answered, and those the client sent
    /// after the GOAWAY's last stream are refused unprocessed, never seen by the behaviour.
    Drain,
}

/// How a stream asks its connection to end.
enum End {
    GoAway(u32),
    Crash,
    Drain,
}

impl H2Reply {
    pub fn ok() -> Self {
        H2Reply::Respond {
            delay: Duration::ZERO,
            status: 200,
            headers: Vec::new(),
            body: b"ok".to_vec(),
        }
    }
    pub fn delayed(delay: Duration) -> Self {
        H2Reply::Respond {
            delay,
            status: 200,
            headers: Vec::new(),
            body: b"ok".to_vec(),
        }
    }
}

type Behaviour = Arc<dyn Fn(&Received, u64) -> H2Reply + Send + Sync>;

/// A running HTTP/2 test server (see [`Listening`] for what it tells).
#[derive(Debug)]
pub struct H2Server(Listening);

impl std::ops::Deref for H2Server {
    type Target = Listening;
    fn deref(&self) -> &Listening {
        &self.0
    }
}

impl H2Server {
    /// Starts a cleartext HTTP/2 server (prior knowledge: no upgrade from HTTP/1.1).
    pub async fn start(behaviour: impl Fn(&Received, u64) -> H2Reply + Send + Sync + 'static) -> H2Server {
        Self::spawn(Arc::new(behaviour), None).await
    }

    /// Starts an HTTPS server that offers only `h2` in ALPN, with a certificate for `localhost`
    /// and 127.0.0.1 signed by a fresh private CA (in [`Listening::ca_pem`]).
    pub async fn start_tls(behaviour: impl Fn(&Received, u64) -> H2Reply + Send + Sync + 'static) -> H2Server {
        let (acceptor, ca_pem, _) = crate::tls_acceptor(&[b"h2"], false);
        let mut s = Self::spawn(Arc::new(behaviour), Some(acceptor)).await;
        s.0.ca_pem = Some(ca_pem);
        s
    }

    async fn spawn(behaviour: Behaviour, tls: Option<tokio_rustls::TlsAcceptor>) -> H2Server {
        let counter = Arc::new(AtomicU64::new(0));
        H2Server(
            Listening::start(tls, move |io, conn, rec| {
                let shared = Shared {
                    behaviour: behaviour.clone(),
                    rec,
                    counter: counter.clone(),
                    conn,
                    gone: Arc::default(),
                };
                serve(io, shared)
            })
            .await,
        )
    }
}

#[derive(Clone)]
struct Shared {
    behaviour: Behaviour,
    rec: Arc<Mutex<Vec<Received>>>,
    counter: Arc<AtomicU64>,
    conn: u64,
    /// Set when this connection was shut down with GOAWAY: its streams go unanswered, as when
    /// a server aborts.
    gone: Arc<AtomicBool>,
}

async fn serve<S: AsyncRead + AsyncWrite + Unpin>(io: S, shared: Shared) {
    let Ok(mut conn) = h2::server::Builder::new()
        .max_concurrent_streams(1000)
        .handshake::<_, Bytes>(io)
        .await
    else {
        return;
    };
    // Streams ask the accept loop, which owns the connection, to send GOAWAY or to crash.
    let (goaway_tx, mut goaway_rx) = mpsc::unbounded_channel::<End>();
    loop {
        tokio::select! {
            next = conn.accept() => {
                let Some(Ok((req, respond))) = next else {
                    // Closing at once with unread requests in the socket would reset it, and
                    // the client could lose the GOAWAY: servers linger before closing.
                    tokio::time::sleep(Duration::from_millis(100)).await;
                    return;
                };
                tokio::spawn(stream(req, respond, shared.clone(), goaway_tx.clone()));
            }
            Some(end) = goaway_rx.recv() => match end {
                End::GoAway(code) => conn.abrupt_shutdown(h2::Reason::from(code)),
                End::Crash => return,
                End::Drain => conn.graceful_shutdown(),
            },
        }
    }
}

async fn stream(
    req: http::Request<h2::RecvStream>,
    mut respond: h2::server::SendResponse<Bytes>,
    shared: Shared,
    goaway: mpsc::UnboundedSender<End>,
) {
    let (parts, mut body) = req.into_parts();
    let mut data = Vec::new();
    while let Some(chunk) = body.data().await {
        let Ok(chunk) = chunk else { return };
        let _ = body.flow_control().release_capacity(chunk.len());
        data.extend_from_slice(&chunk);
    }
    let mut headers: Vec<(String, String)> = Vec::new();
    if let Some(a) = parts.uri.authority() {
        headers.push((":authority".into(), a.to_string()));
    }
    headers.extend(
        parts
            .headers
            .iter()
            .map(|(n, v)| (n.to_string(), String::from_utf8_lossy(v.as_bytes()).into_owned())),
    );
    let idx = shared.counter.fetch_add(1, Ordering::SeqCst);
    let r = Received {
        method: parts.method.to_string(),
        path: parts.uri.path_and_query().map(|p| p.to_string()).unwrap_or_default(),
        headers,
        body: data,
        at: Instant::now(),
        connection: shared.conn,
        index: idx,
    };
    let reply = (shared.behaviour)(&r, idx);
    shared.rec.lock().expect("lock").push(r);
    let reply = match reply {
        H2Reply::Drain => {
            let _ = goaway.send(End::Drain);
            H2Reply::ok()
        }
        other => other,
    };
    match reply {
        H2Reply::Drain => unreachable!("answered as ok"),
        H2Reply::Respond {
            delay,
            status,
            headers,
            body,
        } => {
            if !delay.is_zero() {
                tokio::time::sleep(delay).await;
            }
            if shared.gone.load(Ordering::SeqCst) {
                // Hold the stream (dropping it would reset it) until the connection is gone.
                tokio::time::sleep(Duration::from_secs(2)).await;
                return;
            }
            let mut resp = http::Response::builder().status(status);
            for (n, v) in &headers {
                resp = resp.header(n, v);
            }
            let resp = resp.header("content-length", body.len()).body(()).expect("response");
            let Ok(mut send) = respond.send_response(resp, body.is_empty()) else {
                return;
            };
            if !body.is_empty() {
                let _ = send.send_data(Bytes::from(body), true);
            }
        }
        H2Reply::Reset(code) => respond.send_reset(h2::Reason::from(code)),
        H2Reply::GoAway(code) => {
            shared.gone.store(true, Ordering::SeqCst);
            let _ = goaway.send(End::GoAway(code));
            // Dropping the stream now would reset it with CANCEL, and a client that gets the
            // reset before the GOAWAY would never see the GOAWAY on this stream: it is held
            // until the connection is gone, so the stream that asked fails as its peers do.
            tokio::time::sleep(Duration::from_secs(2)).await;
            drop(respond);
        }
        H2Reply::Crash => {
            shared.gone.store(true, Ordering::SeqCst);
            let _ = goaway.send(End::Crash);
            // Dropping the stream first would reset it: the connection goes before it does.
            tokio::time::sleep(Duration::from_secs(2)).await;
            drop(respond);
        }
    }
}
