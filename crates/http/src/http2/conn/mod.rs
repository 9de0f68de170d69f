//! One HTTP/2 connection, driven by the users whose streams it carries.
//!
//! There is no connection task. A user's exchange writes its request into the connection's
//! write buffer, and then, if no other user is reading the socket, becomes the reader: it
//! flushes everyone's queued frames, reads, and handles every frame that arrived, for all
//! streams, waking the users whose responses completed. When the reader's own response is
//! complete it hands the socket to another waiting user. With one stream per connection the
//! user always reads for itself, as an HTTP/1.1 exchange does; with many, one read serves many
//! responses and one write carries the requests queued since the last.
//!
//! The state sits behind a mutex that is never held across an await. Users of one connection
//! run on one engine thread, so it is never contended there; it is a mutex rather than a
//! `RefCell` because a call's future must be `Send` (tests and embedders run it on
//! multi-threaded runtimes).
//!
//! Response headers are decoded straight out of the read buffer ([`super::hpack`]): a response
//! costs no allocation unless the caller keeps it.
//!
//! - [`exchange`]: one user's request as a future, and the reading it does for everyone;
//! - [`stream`]: a stream's state, from its request to its end;
//! - [`frames`]: the server's frames, handled for all streams;
//! - this module: the connection's state, its socket reads and writes, and its failing.

use super::frame::{self, Malformed};
use super::hpack::Decoder;
use super::{H2Error, H2Fail, H2Request};
use crate::exchange::{Progress, Response};
use crate::io::Stream;
use std::io;
use std::pin::Pin;
use std::sync::{Arc, Mutex, MutexGuard, PoisonError};
use std::task::{Context, Poll, Waker};
use std::time::Instant;
use tokio::io::{AsyncRead, AsyncWrite, ReadBuf};

mod exchange;
mod frames;
mod stream;
#[cfg(test)]
mod tests;

use exchange::Exchange;
use frames::Continuation;
use stream::{wake, Phase, Slot};

/// The receive window each stream starts with (SETTINGS_INITIAL_WINDOW_SIZE), larger than the
/// 64 KiB default so that large bodies are not paced by WINDOW_UPDATE round trips (h2load uses
/// the same sizes).
const STREAM_WINDOW: i64 = 1 << 20;
/// The connection's receive window.
const CONN_WINDOW: i64 = 1 << 24;
/// The read buffer: room for a few whole frames of the largest size crest accepts, so that one
/// read brings many small responses.
const READ_BUF: usize = 64 * 1024;
/// Most spare read buffers kept per thread.
const SPARE_MAX: usize = 16;

thread_local! {
    /// Read buffers not in use: a connection holds one only while response bytes are in hand,
    /// so connections waiting on their servers hold none (as `h1`'s do).
    static SPARE: std::cell::RefCell<Vec<Vec<u8>>> = const { std::cell::RefCell::new(Vec::new()) };
}

fn take_buf() -> Vec<u8> {
    SPARE
        .with(|s| s.borrow_mut().pop())
        .unwrap_or_else(|| vec![0; READ_BUF])
}

fn give_buf(buf: Vec<u8>) {
    SPARE.with(|s| {
        let mut s = s.borrow_mut();
        if s.len() < SPARE_MAX {
            s.push(buf);
        }
    });
}

/// A connection shared by the users seated on it.
pub(crate) struct Conn {
    state: Mutex<State>,
}

impl std::fmt::Debug for Conn {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str("Conn")
    }
}

struct State {
    io: Stream,
    rbuf: Vec<u8>,
    rpos: usize,
    rend: usize,
    wbuf: Vec<u8>,
    wpos: usize,
    decoder: Decoder,
    streams: Vec<Slot>,
    next_id: u32,
    /// The stream whose user reads the socket for everyone.
    reader: Option<u32>,
    /// Users waiting for the server's MAX_CONCURRENT_STREAMS to leave room.
    waiting: Vec<Waker>,
    peer_max_streams: usize,
    peer_window: i64,
    peer_max_frame: usize,
    /// The server lowered its header table below the default: the next header block starts
    /// with a size update (RFC 7541 section 4.2). crest's blocks never use the table.
    table_update: bool,
    send_window: i64,
    recv_window: i64,
    recv_unacked: i64,
    goaway: Option<(u32, u32)>,
    /// The reader let the users it woke run before writing their requests.
    yielded: bool,
    dead: Option<H2Error>,
    continuation: Option<Continuation>,
    /// A frame has arrived: the server speaks HTTP/2.
    framed: bool,
    settings_rate: super::guard::SettingsRate,
}

impl Conn {
    /// A connection over `io`, its preface and settings queued to go out with the first request.
    pub(crate) fn new(io: Stream) -> Arc<Conn> {
        let mut wbuf = Vec::with_capacity(4096);
        wbuf.extend_from_slice(frame::PREFACE);
        let mut settings = Vec::with_capacity(12);
        for (id, value) in [
            (frame::ENABLE_PUSH, 0u32),
            (frame::INITIAL_WINDOW_SIZE, STREAM_WINDOW as u32),
        ] {
            settings.extend_from_slice(&id.to_be_bytes());
            settings.extend_from_slice(&value.to_be_bytes());
        }
        frame::put_frame(&mut wbuf, frame::SETTINGS, 0, 0, &settings);
        let increment = (CONN_WINDOW - 65_535) as u32;
        frame::put_frame(&mut wbuf, frame::WINDOW_UPDATE, 0, 0, &increment.to_be_bytes());
        Arc::new(Conn {
            state: Mutex::new(State {
                io,
                rbuf: Vec::new(),
                rpos: 0,
                rend: 0,
                wbuf,
                wpos: 0,
                decoder: Decoder::default(),
                streams: Vec::new(),
                next_id: 1,
                reader: None,
                waiting: Vec::new(),
                peer_max_streams: usize::MAX,
                peer_window: 65_535,
                peer_max_frame: frame::MAX_PAYLOAD,
                table_update: false,
                send_window: 65_535,
                recv_window: CONN_WINDOW,
                recv_unacked: 0,
                goaway: None,
                yielded: false,
                dead: None,
                continuation: None,
                framed: false,
                settings_rate: Default::default(),
            }),
        })
    }

    fn lock(&self) -> MutexGuard<'_, State> {
        self.state.lock().unwrap_or_else(PoisonError::into_inner)
    }

    /// Sends `req` and reads its whole response.
    pub(crate) async fn exchange(
        &self,
        req: &H2Request,
        p: &mut Progress,
        mut keep: Option<&mut Response>,
    ) -> Result<u16, H2Fail> {
        let mut ex = Exchange {
            conn: self,
            id: None,
            base_read: p.read,
        };
        std::future::poll_fn(|cx| ex.poll(req, p, &mut keep, cx)).await
    }
}

impl State {
    /// Reads what arrived while no stream was open: no one reads an idle connection, so a
    /// GOAWAY or the server's closing (idle timeout) waits in the socket. Read before a request
    /// is sent, it makes the request one the server never saw, sent again on a new connection
    /// as HTTP/1.1 does; read after, the request would fail. Costs no system call when nothing
    /// arrived since the last read.
    fn catch_up(&mut self, cx: &mut Context<'_>) {
        while self.dead.is_none() && self.read(cx).is_ready() {}
    }

    /// Reads once and handles the whole frames that came; `Ready` also when the connection
    /// failed. The read buffer is held only while bytes are in hand, as HTTP/1.1's is.
    fn read(&mut self, cx: &mut Context<'_>) -> Poll<()> {
        if self.rbuf.is_empty() {
            self.rbuf = take_buf();
        }
        if self.rpos > 0 {
            let (rpos, rend) = (self.rpos, self.rend);
            self.rbuf.copy_within(rpos..rend, 0);
            self.rend -= rpos;
            self.rpos = 0;
        }
        let State { io, rbuf, rend, .. } = self;
        let mut buf = ReadBuf::new(&mut rbuf[*rend..]);
        let r = match Pin::new(io).poll_read(cx, &mut buf) {
            Poll::Ready(Ok(())) => {
                let n = buf.filled().len();
                if n == 0 {
                    self.fail_eof();
                } else {
                    self.rend += n;
                    self.process(Instant::now());
                }
                Poll::Ready(())
            }
            Poll::Ready(Err(e)) => {
                self.fail_io(e);
                Poll::Ready(())
            }
            Poll::Pending => Poll::Pending,
        };
        if self.rpos == self.rend {
            self.rpos = 0;
            self.rend = 0;
            give_buf(std::mem::take(&mut self.rbuf));
        }
        r
    }

    /// Writes the queued frames.
    fn flush(&mut self, cx: &mut Context<'_>) -> Poll<io::Result<()>> {
        if self.wpos == self.wbuf.len() {
            return Poll::Ready(Ok(()));
        }
        while self.wpos < self.wbuf.len() {
            match Pin::new(&mut self.io).poll_write(cx, &self.wbuf[self.wpos..]) {
                Poll::Ready(Ok(0)) => return Poll::Ready(Err(io::ErrorKind::WriteZero.into())),
                Poll::Ready(Ok(n)) => self.wpos += n,
                Poll::Ready(Err(e)) => return Poll::Ready(Err(e)),
                Poll::Pending => return Poll::Pending,
            }
        }
        self.wbuf.clear();
        self.wpos = 0;
        Pin::new(&mut self.io).poll_flush(cx)
    }

    /// The socket failed: every open stream fails, with the server's GOAWAY as the cause when
    /// there was one (the socket closing after it is its consequence).
    fn fail_io(&mut self, e: io::Error) {
        let err = match self.goaway {
            Some((_, code)) => H2Error::GoAway(code),
            None => H2Error::Io(Arc::new(e)),
        };
        self.fail_all(err);
    }

    fn fail_eof(&mut self) {
        let err = match self.goaway {
            Some((_, code)) => H2Error::GoAway(code),
            // Not a frame before the end: the server does not speak HTTP/2 here.
            None if !self.framed => H2Error::Unframed,
            None => H2Error::Closed,
        };
        self.fail_all(err);
    }

    fn fail_all(&mut self, err: H2Error) {
        for s in &mut self.streams {
            if matches!(s.phase, Phase::Open) {
                s.phase = Phase::Failed(err.clone());
                wake(s);
            }
        }
        self.dead.get_or_insert(err);
        for w in self.waiting.drain(..) {
            w.wake();
        }
    }

    /// A connection error found by crest: GOAWAY with its code, and every stream fails.
    fn connection_error(&mut self, m: Malformed) {
        if self.dead.is_some() {
            return;
        }
        let mut payload = [0u8; 8];
        payload[4..].copy_from_slice(&m.code.to_be_bytes());
        frame::put_frame(&mut self.wbuf, frame::GOAWAY, 0, 0, &payload);
        self.fail_all(H2Error::Local(m));
    }

    /// The server went past one of crest's own limits: the connection ends as a connection
    /// error would, but the cause is crest's limit, not the server's error.
    fn refuse(&mut self, what: &'static str) {
        if self.dead.is_some() {
            return;
        }
        let mut payload = [0u8; 8];
        payload[4..].copy_from_slice(&frame::ENHANCE_YOUR_CALM.to_be_bytes());
        frame::put_frame(&mut self.wbuf, frame::GOAWAY, 0, 0, &payload);
        self.fail_all(H2Error::Limit(what));
    }
}
