//! HTTP/2 connections shared by virtual users, through the `h2` crate.
//!
//! HTTP/1.1 gives each user its own connection; HTTP/2 exists to carry many requests on one, so
//! users are seated on shared connections, at most `max_streams` per connection. Each user has
//! at most one request in flight, so the seats bound the streams: a run of N users opens
//! ceil(N / max_streams) connections, the way h2load's `-c` and `-m` do. The user whose request
//! opened a connection records its connect time; the others ride on it, as a reused HTTP/1.1
//! connection does.
//!
//! Requests arrive as the HTTP/1.1 bytes every other part of crest builds ([`crate::build_request`])
//! and are translated here: one request format for the front ends, and the wire version a
//! property of the endpoint.

use crate::h1::{Progress, Response};
use crate::{Detail, Failure};
use bytes::Bytes;
use h2::client::SendRequest;
use std::sync::atomic::{AtomicBool, AtomicUsize, Ordering};
use std::sync::{Arc, Mutex};
use std::time::Instant;
use tokio::sync::OnceCell;

/// The HTTP/2 connections of one endpoint.
#[derive(Debug)]
pub(crate) struct Pool {
    slots: Mutex<Vec<Arc<Slot>>>,
    max_streams: usize,
}

/// One connection (opened by its first user) and how many users sit on it.
#[derive(Debug)]
pub(crate) struct Slot {
    /// The thread whose runtime drives the connection. Each engine thread runs its own
    /// runtime, which drops its tasks when its users are done: only users of the same thread
    /// may share the connection.
    thread: std::thread::ThreadId,
    users: AtomicUsize,
    /// Set once a request on it failed in a way that ends the connection (GOAWAY, I/O error);
    /// no user is seated on it after that.
    dead: AtomicBool,
    pub conn: OnceCell<SendRequest<Bytes>>,
}

/// A user's place on a connection, given back when dropped.
#[derive(Debug)]
pub(crate) struct Seat(pub Arc<Slot>);

/// A user's HTTP/2 state, boxed in its session (an HTTP/1.1 user carries one empty pointer).
#[derive(Default)]
pub(crate) struct H2Session {
    pub seat: Option<Seat>,
    /// The user's own handle on its seat's connection, cloned once when it is seated: a clone
    /// and a drop per request each cost a trip through the connection's lock.
    pub send: Option<SendRequest<Bytes>>,
    /// The last request's bytes and their translation, reused while they repeat (quick mode
    /// sends the same bytes every time).
    pub request: Option<(Vec<u8>, H2Request)>,
}

impl H2Session {
    /// Leaves the seat for good: no one else sits on its connection from now on.
    pub fn retire(&mut self) {
        self.send = None;
        if let Some(seat) = self.seat.take() {
            seat.retire();
        }
    }
}

impl Drop for Seat {
    fn drop(&mut self) {
        self.0.users.fetch_sub(1, Ordering::Relaxed);
    }
}

impl Seat {
    /// No one else is seated here from now on.
    pub fn retire(&self) {
        self.0.dead.store(true, Ordering::Relaxed);
    }
}

impl Pool {
    pub fn new(max_streams: u32) -> Self {
        Pool {
            slots: Mutex::new(Vec::new()),
            max_streams: max_streams.max(1) as usize,
        }
    }

    /// A seat on a live connection with room, or on a new one (opened by its first request).
    pub fn seat(&self) -> Seat {
        let mut slots = self.slots.lock().unwrap_or_else(|e| e.into_inner());
        slots.retain(|s| !s.dead.load(Ordering::Relaxed));
        let thread = std::thread::current().id();
        let slot = match slots
            .iter()
            .find(|s| s.thread == thread && s.users.load(Ordering::Relaxed) < self.max_streams)
        {
            Some(s) => s.clone(),
            None => {
                let s = Arc::new(Slot {
                    thread,
                    users: AtomicUsize::new(0),
                    dead: AtomicBool::new(false),
                    conn: OnceCell::new(),
                });
                slots.push(s.clone());
                s
            }
        };
        slot.users.fetch_add(1, Ordering::Relaxed);
        Seat(slot)
    }

    /// A seat on a new connection that the caller has already opened.
    pub fn seat_new(&self, send: SendRequest<Bytes>) -> Seat {
        let slot = Arc::new(Slot {
            thread: std::thread::current().id(),
            users: AtomicUsize::new(1),
            dead: AtomicBool::new(false),
            conn: OnceCell::new_with(Some(send)),
        });
        self.slots.lock().unwrap_or_else(|e| e.into_inner()).push(slot.clone());
        Seat(slot)
    }
}

/// Starts HTTP/2 on an open transport; the connection is driven by its own task until every
/// handle to it is gone.
pub(crate) async fn handshake(stream: crate::io::Stream) -> Result<SendRequest<Bytes>, Failure> {
    let (send, conn) = h2::client::Builder::new()
        .enable_push(false)
        // Larger windows than the 64 KiB default, so large bodies are not paced by
        // WINDOW_UPDATE round trips (h2load uses the same sizes).
        .initial_window_size(1 << 20)
        .initial_connection_window_size(1 << 24)
        .handshake::<_, Bytes>(stream)
        .await
        .map_err(Failure::h2)?;
    tokio::spawn(async move {
        let _ = conn.await;
    });
    Ok(send)
}

/// A request in the parts HTTP/2 sends.
pub(crate) struct H2Request {
    head: http::Request<()>,
    body: Bytes,
    /// The request's size as HTTP/1.1 would send it, for `bytes_sent`.
    size: u64,
}

/// Headers HTTP/2 forbids, since its framing does their work (RFC 9113 section 8.2.2).
const CONNECTION_SPECIFIC: [&str; 5] = [
    "connection",
    "keep-alive",
    "proxy-connection",
    "transfer-encoding",
    "upgrade",
];

/// Translates a request built by [`crate::build_request`] for HTTP/2.
pub(crate) fn translate(request: &[u8], https: bool) -> Result<H2Request, Failure> {
    let bad = |_| Failure {
        outcome: crest_model::Outcome::Other,
        detail: Detail::Text("the request could not be translated to HTTP/2"),
    };
    let mut headers = [httparse::EMPTY_HEADER; 64];
    let mut req = httparse::Request::new(&mut headers);
    let len = match req.parse(request) {
        Ok(httparse::Status::Complete(len)) => len,
        _ => return Err(bad(())),
    };
    let mut authority = None;
    let mut map = http::HeaderMap::with_capacity(req.headers.len());
    for h in req.headers.iter() {
        if h.name.eq_ignore_ascii_case("host") {
            authority = std::str::from_utf8(h.value).ok();
            continue;
        }
        if CONNECTION_SPECIFIC.iter().any(|c| h.name.eq_ignore_ascii_case(c))
            || (h.name.eq_ignore_ascii_case("te") && !h.value.eq_ignore_ascii_case(b"trailers"))
        {
            continue;
        }
        let name = http::HeaderName::from_bytes(h.name.as_bytes()).map_err(|_| bad(()))?;
        let value = http::HeaderValue::from_bytes(h.value).map_err(|_| bad(()))?;
        map.append(name, value);
    }
    let uri = http::Uri::builder()
        .scheme(if https { "https" } else { "http" })
        .authority(authority.unwrap_or("localhost"))
        .path_and_query(req.path.unwrap_or("/"))
        .build()
        .map_err(|_| bad(()))?;
    let mut head = http::Request::new(());
    *head.method_mut() = http::Method::from_bytes(req.method.unwrap_or("GET").as_bytes()).map_err(|_| bad(()))?;
    *head.uri_mut() = uri;
    *head.version_mut() = http::Version::HTTP_2;
    *head.headers_mut() = map;
    Ok(H2Request {
        head,
        body: Bytes::copy_from_slice(&request[len..]),
        size: request.len() as u64,
    })
}

/// Why an HTTP/2 exchange failed.
pub(crate) enum H2Fail {
    /// The connection could not take the request (it went away first): the server never saw
    /// it, so it may be sent again on a new connection.
    NotSent(h2::Error),
    /// The request was sent and then failed.
    Sent(h2::Error),
}

/// The error to report for a stream that failed with `e`. When the connection ended after the
/// server's GOAWAY, streams still open see only the closed socket; the GOAWAY, which the
/// connection remembers, is the cause worth reporting. Asked without waiting: the connection
/// already knows.
pub(crate) fn cause(conn: &SendRequest<Bytes>, e: h2::Error) -> h2::Error {
    if e.is_go_away() || e.is_reset() {
        return e;
    }
    let mut probe = conn.clone();
    match probe.poll_ready(&mut std::task::Context::from_waker(std::task::Waker::noop())) {
        std::task::Poll::Ready(Err(conn_err)) if conn_err.is_go_away() && conn_err.is_remote() => conn_err,
        _ => e,
    }
}

/// Sends `req` on `conn` and reads the whole response.
pub(crate) async fn exchange(
    send: &mut SendRequest<Bytes>,
    req: &H2Request,
    p: &mut Progress,
    mut keep: Option<&mut Response>,
) -> Result<u16, H2Fail> {
    std::future::poll_fn(|cx| send.poll_ready(cx))
        .await
        .map_err(H2Fail::NotSent)?;
    let mut head = http::Request::new(());
    *head.method_mut() = req.head.method().clone();
    *head.uri_mut() = req.head.uri().clone();
    *head.version_mut() = http::Version::HTTP_2;
    *head.headers_mut() = req.head.headers().clone();
    let (response, mut body_tx) = send.send_request(head, req.body.is_empty()).map_err(H2Fail::NotSent)?;
    if !req.body.is_empty() {
        body_tx.send_data(req.body.clone(), true).map_err(H2Fail::Sent)?;
    }
    p.written += req.size;
    let response = response.await.map_err(H2Fail::Sent)?;
    p.first_byte = Some(Instant::now());
    let status = response.status().as_u16();
    p.status = Some(status);
    // The head's size as HTTP/1.1 would carry it: a stream's share of the compressed header
    // blocks and frames of a multiplexed connection cannot be observed.
    p.read += 17
        + response
            .headers()
            .iter()
            .map(|(n, v)| (n.as_str().len() + v.len() + 4) as u64)
            .sum::<u64>();
    if let Some(k) = keep.as_deref_mut() {
        *k = Response {
            status,
            headers: response
                .headers()
                .iter()
                .map(|(n, v)| {
                    (
                        n.as_str().to_string(),
                        String::from_utf8_lossy(v.as_bytes()).into_owned(),
                    )
                })
                .collect(),
            ..Response::default()
        };
    }
    let mut body = response.into_body();
    while let Some(chunk) = body.data().await {
        let chunk = chunk.map_err(H2Fail::Sent)?;
        p.read += chunk.len() as u64;
        let _ = body.flow_control().release_capacity(chunk.len());
        if let Some(k) = keep.as_deref_mut() {
            k.keep(&chunk);
        }
    }
    Ok(status)
}
