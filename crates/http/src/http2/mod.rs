//! HTTP/2 connections shared by virtual users.
//!
//! Which client speaks on a connection was chosen by measurement (bench/README.md, "HTTP/2"):
//! where each connection carries one stream (`--max-streams 1`), crest's own framing (RFC 9113)
//! and header compression (RFC 7541), driven by the user's own task as an HTTP/1.1 exchange
//! is; where it carries many, the `h2` crate, whose slower connection task finds more
//! responses at each read, and so makes fewer system calls per request than crest's own
//! framing did.
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
//!
//! - [`frame`]: the frame layout and the frames a client writes;
//! - [`hpack`] and [`huffman`]: decoding servers' header blocks without allocating, encoding
//!   requests once;
//! - [`conn`]: one connection's state, driven by its users' own tasks (no connection task);
//! - [`mux`]: the `h2` crate's client, for many streams per connection.

mod conn;
mod frame;
mod guard;
mod hpack;
mod huffman;
mod mux;

pub(crate) use conn::Conn;
#[cfg(test)]
pub(crate) use frame::Malformed;

use crate::exchange::{Progress, Response};
use crate::{Detail, Failure};
use bytes::Bytes;
use std::fmt;
use std::sync::atomic::{AtomicBool, AtomicUsize, Ordering};
use std::sync::{Arc, Mutex};
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
    pub conn: OnceCell<Handle>,
}

/// A user's place on a connection, given back when dropped.
#[derive(Debug)]
pub(crate) struct Seat(pub Arc<Slot>);

/// A user's HTTP/2 state, boxed in its session (an HTTP/1.1 user carries one empty pointer).
#[derive(Default)]
pub(crate) struct H2Session {
    pub seat: Option<Seat>,
    /// The user's own handle on its seat's connection, cloned once when it is seated.
    pub send: Option<Handle>,
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

    /// Whether this endpoint's connections carry one stream each, and so speak crest's own
    /// framing.
    pub fn own_framing(&self) -> bool {
        self.max_streams == 1
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
    pub fn seat_new(&self, send: Handle) -> Seat {
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

/// A handle on an HTTP/2 connection: crest's own framing for one stream per connection, the
/// `h2` crate's for many.
#[derive(Clone, Debug)]
pub(crate) enum Handle {
    Own(Arc<Conn>),
    Mux(mux::Mux),
}

/// Starts HTTP/2 on an open transport. With crest's own framing nothing is awaited: the preface
/// and settings go out with the first request.
pub(crate) async fn handshake(stream: crate::io::Stream, own: bool) -> Result<Handle, Failure> {
    if own {
        Ok(Handle::Own(Conn::new(stream)))
    } else {
        Ok(Handle::Mux(mux::handshake(stream).await?))
    }
}

/// A request in the parts HTTP/2 sends: for crest's own framing its header block, encoded once;
/// for the `h2` crate its head.
pub(crate) struct H2Request {
    block: Vec<u8>,
    head: Option<http::Request<()>>,
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

/// A field value HTTP allows: no control characters but tab.
fn valid_value(v: &[u8]) -> bool {
    v.iter().all(|&b| b == b'\t' || (b >= 0x20 && b != 0x7f))
}

/// Translates a request built by [`crate::build_request`] for HTTP/2.
pub(crate) fn translate(request: &[u8], https: bool, own: bool) -> Result<H2Request, Failure> {
    let bad = || Failure {
        outcome: crest_model::Outcome::Other,
        detail: Detail::Text("the request could not be translated to HTTP/2"),
    };
    let mut headers = [httparse::EMPTY_HEADER; 64];
    let mut req = httparse::Request::new(&mut headers);
    let len = match req.parse(request) {
        Ok(httparse::Status::Complete(len)) => len,
        _ => return Err(bad()),
    };
    let method = req.method.unwrap_or("GET");
    let path = req.path.unwrap_or("/");
    let authority = req
        .headers
        .iter()
        .find(|h| h.name.eq_ignore_ascii_case("host"))
        .map_or(&b"localhost"[..], |h| h.value);
    if !crate::is_token(method) || !valid_value(path.as_bytes()) || path.is_empty() || !valid_value(authority) {
        return Err(bad());
    }
    let scheme: &[u8] = if https { b"https" } else { b"http" };
    let mut block = Vec::new();
    let mut head = None;
    if own {
        block.reserve(request.len());
        hpack::put_field(&mut block, b":method", method.as_bytes());
        hpack::put_field(&mut block, b":scheme", scheme);
        hpack::put_field(&mut block, b":authority", authority);
        hpack::put_field(&mut block, b":path", path.as_bytes());
    } else {
        let uri = http::Uri::builder()
            .scheme(if https { "https" } else { "http" })
            .authority(authority)
            .path_and_query(path)
            .build()
            .map_err(|_| bad())?;
        let mut h = http::Request::new(());
        *h.method_mut() = http::Method::from_bytes(method.as_bytes()).map_err(|_| bad())?;
        *h.uri_mut() = uri;
        *h.version_mut() = http::Version::HTTP_2;
        head = Some(h);
    }
    let mut name = Vec::new();
    for h in req.headers.iter() {
        if h.name.eq_ignore_ascii_case("host")
            || CONNECTION_SPECIFIC.iter().any(|c| h.name.eq_ignore_ascii_case(c))
            || (h.name.eq_ignore_ascii_case("te") && !h.value.eq_ignore_ascii_case(b"trailers"))
        {
            continue;
        }
        if !crate::is_token(h.name) || !valid_value(h.value) {
            return Err(bad());
        }
        // HTTP/2 field names are lowercase (RFC 9113 section 8.2.1).
        name.clear();
        name.extend(h.name.bytes().map(|b| b.to_ascii_lowercase()));
        match &mut head {
            None => hpack::put_field(&mut block, &name, h.value),
            Some(head) => {
                let n = http::HeaderName::from_bytes(&name).map_err(|_| bad())?;
                let v = http::HeaderValue::from_bytes(h.value).map_err(|_| bad())?;
                head.headers_mut().append(n, v);
            }
        }
    }
    Ok(H2Request {
        block,
        head,
        body: Bytes::copy_from_slice(&request[len..]),
        size: request.len() as u64,
    })
}

/// Why an HTTP/2 exchange failed.
pub(crate) enum H2Fail {
    /// The connection could not take the request (it went away first), or the server's
    /// GOAWAY said that it was not processed: the server did not act on it, so it may be sent
    /// again on a new connection.
    NotSent(H2Error),
    /// The request was sent and then failed.
    Sent(H2Error),
}

/// An HTTP/2 failure, as a stream or as a whole connection saw it.
#[derive(Debug, Clone)]
pub(crate) enum H2Error {
    /// The socket failed.
    Io(Arc<std::io::Error>),
    /// The server closed the connection without GOAWAY.
    Closed,
    /// The server closed the connection before its first frame (a server must send SETTINGS
    /// first): it does not speak HTTP/2 on this port.
    Unframed,
    /// The server sent GOAWAY with this code; the connection ends (streams above its last
    /// stream were not processed; the others fail if the connection closes first).
    GoAway(u32),
    /// The server reset the stream with this code.
    Reset(u32),
    /// crest found the server breaking the protocol and sent GOAWAY with this code.
    Local(frame::Malformed),
    /// crest found the server breaking the protocol on one stream and reset it with this code.
    LocalReset(frame::Malformed),
    /// The response went past one of crest's own limits ([`guard`]); crest closed the
    /// connection with GOAWAY.
    Limit(&'static str),
    /// The connection used up its stream identifiers.
    Exhausted,
    /// The `h2` crate's error, on a connection with many streams.
    Mux(Arc<h2::Error>),
}

impl H2Error {
    /// The HTTP/2 error code it carries, if any.
    pub(crate) fn code(&self) -> Option<u32> {
        match self {
            H2Error::GoAway(c) | H2Error::Reset(c) => Some(*c),
            H2Error::Local(m) | H2Error::LocalReset(m) => Some(m.code),
            H2Error::Mux(e) => e.reason().map(u32::from),
            _ => None,
        }
    }

    /// Whether the connection goes on: only a reset ends one stream alone.
    pub(crate) fn ends_connection(&self) -> bool {
        match self {
            H2Error::Reset(_) | H2Error::LocalReset(_) => false,
            H2Error::Mux(e) => !e.is_reset(),
            _ => true,
        }
    }
}

impl fmt::Display for H2Error {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            H2Error::Io(e) => write!(f, "{e}"),
            H2Error::Closed => f.write_str("the server closed the HTTP/2 connection"),
            H2Error::Unframed => f.write_str(
                "the server closed the connection without an HTTP/2 frame, not even the SETTINGS a server sends first: it likely does not speak HTTP/2 here (in cleartext, HTTP/2 with prior knowledge, h2c); without --http2 crest speaks HTTP/1.1",
            ),
            H2Error::GoAway(c) => write!(f, "the server sent GOAWAY with {} ({c})", frame::code_name(*c)),
            H2Error::Reset(c) => write!(f, "the server reset the stream with {} ({c})", frame::code_name(*c)),
            H2Error::Local(m) => write!(
                f,
                "HTTP/2 protocol error from the server: {} (crest sent GOAWAY {})",
                m.what,
                frame::code_name(m.code)
            ),
            H2Error::Limit(what) => write!(f, "crest refused the response: {what}"),
            H2Error::LocalReset(m) => write!(
                f,
                "HTTP/2 {} from the server on a stream: {}",
                frame::code_name(m.code),
                m.what
            ),
            H2Error::Exhausted => f.write_str("the connection used up its stream identifiers"),
            // Said as crest's own framing says them, not in the crate's words ("not a result
            // of an error" for a GOAWAY with NO_ERROR).
            H2Error::Mux(e) if e.is_remote() && (e.is_go_away() || e.is_reset()) => {
                let c = e.reason().map_or(0, u32::from);
                let what = if e.is_go_away() {
                    "the server sent GOAWAY with"
                } else {
                    "the server reset the stream with"
                };
                write!(f, "{what} {} ({c})", frame::code_name(c))
            }
            H2Error::Mux(e) => write!(f, "{e}"),
        }
    }
}

/// Sends `req` on `conn` and reads the whole response.
pub(crate) async fn exchange(
    conn: &mut Handle,
    req: &H2Request,
    p: &mut Progress,
    keep: Option<&mut Response>,
) -> Result<u16, H2Fail> {
    match conn {
        Handle::Own(c) => c.exchange(req, p, keep).await,
        Handle::Mux(send) => mux::exchange(send, req, p, keep).await,
    }
}

/// Bytes written as hex, spaces ignored: the RFCs' test vectors as they print them.
#[cfg(test)]
pub(crate) fn unhex(s: &str) -> Vec<u8> {
    let s: String = s.split_whitespace().collect();
    (0..s.len())
        .step_by(2)
        .map(|i| u8::from_str_radix(&s[i..i + 2], 16).unwrap_or_else(|_| panic!("not hex: {s}")))
        .collect()
}
