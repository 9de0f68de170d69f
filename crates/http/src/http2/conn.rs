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

use super::frame::{self, Head, Malformed};
use super::hpack::Decoder;
use super::{H2Error, H2Fail, H2Request};
use crate::h1::{Progress, Response};
use crate::io::Stream;
use std::io;
use std::pin::Pin;
use std::sync::{Arc, Mutex, MutexGuard, PoisonError};
use std::task::{Context, Poll, Waker};
use std::time::Instant;
use tokio::io::{AsyncRead, AsyncWrite, ReadBuf};

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
/// The largest header block accepted across CONTINUATION frames.
const MAX_HEADER_BLOCK: usize = 256 * 1024;
/// The largest stream identifier a client may use.
const MAX_STREAM_ID: u32 = (1 << 31) - 1;

/// A connection shared by the users seated on it.
pub(crate) struct Conn {
    state: Mutex<State>,
}

impl std::fmt::Debug for Conn {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str("Conn")
    }
}

/// Where a stream stands.
enum Phase {
    Open,
    Done,
    Failed(H2Error),
    /// The server will not process it (above GOAWAY's last stream): it may be sent again.
    NotSent(H2Error),
}

/// One open stream: what its response has brought so far.
struct Slot {
    id: u32,
    waker: Option<Waker>,
    phase: Phase,
    status: Option<u16>,
    /// Final response headers seen; HEADERS after this are trailers.
    head_seen: bool,
    /// The response's size as [`super::exchange`] reports it.
    read: u64,
    first_byte: Option<Instant>,
    keep: Option<Box<Response>>,
    /// The request body's bytes framed so far.
    body_sent: usize,
    /// Some of the request body waits for the send windows to open.
    body_waiting: bool,
    send_window: i64,
    recv_window: i64,
    recv_unacked: i64,
}

/// A header block spread over HEADERS and CONTINUATION frames.
struct Continuation {
    stream: u32,
    end_stream: bool,
    block: Vec<u8>,
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

/// A user's stream on the connection; dropping it before the response is complete (a timeout)
/// resets the stream and frees its place.
struct Exchange<'a> {
    conn: &'a Conn,
    id: Option<u32>,
    base_read: u64,
}

impl Drop for Exchange<'_> {
    fn drop(&mut self) {
        let Some(id) = self.id.take() else { return };
        let mut st = self.conn.lock();
        if let Some(i) = st.find(id) {
            if matches!(st.streams[i].phase, Phase::Open) && st.dead.is_none() {
                frame::put_frame(&mut st.wbuf, frame::RST_STREAM, 0, id, &frame::CANCEL.to_be_bytes());
            }
            st.streams.swap_remove(i);
        }
        st.release(id);
    }
}

impl Exchange<'_> {
    fn poll(
        &mut self,
        req: &H2Request,
        p: &mut Progress,
        keep: &mut Option<&mut Response>,
        cx: &mut Context<'_>,
    ) -> Poll<Result<u16, H2Fail>> {
        let mut guard = self.conn.lock();
        let st = &mut *guard;
        let id = match self.id {
            Some(id) => id,
            None => {
                if st.reader.is_none() && st.streams.is_empty() {
                    st.catch_up(cx);
                }
                if let Some(e) = &st.dead {
                    return Poll::Ready(Err(H2Fail::NotSent(e.clone())));
                }
                if let Some((_, code)) = st.goaway {
                    return Poll::Ready(Err(H2Fail::NotSent(H2Error::GoAway(code))));
                }
                if st.next_id > MAX_STREAM_ID {
                    return Poll::Ready(Err(H2Fail::NotSent(H2Error::Exhausted)));
                }
                if st.streams.len() >= st.peer_max_streams {
                    st.waiting.push(cx.waker().clone());
                    return Poll::Pending;
                }
                let id = st.next_id;
                st.next_id += 2;
                st.open(id, req, keep.is_some());
                p.wrote(req.size);
                self.id = Some(id);
                id
            }
        };
        let mut drained = false;
        loop {
            let Some(i) = st.find(id) else {
                // Only this exchange removes its slot.
                unreachable!("stream {id} lost its slot");
            };
            let slot = &mut st.streams[i];
            p.status = slot.status;
            p.first_byte = slot.first_byte;
            p.read = self.base_read + slot.read;
            let open = matches!(slot.phase, Phase::Open);
            if !open && (st.reader != Some(id) || st.dead.is_some()) {
                return Poll::Ready(self.finish(st, i, keep, cx));
            }
            if slot.body_waiting {
                st.send_body(i, &req.body);
            }
            if st.reader.is_some_and(|r| r != id) {
                let slot = &mut st.streams[i];
                match &slot.waker {
                    Some(w) if w.will_wake(cx.waker()) => {}
                    _ => slot.waker = Some(cx.waker().clone()),
                }
                if st.wbuf.len() > st.wpos && !st.yielded {
                    // The reader writes what was queued, all of it in one write (a reader that
                    // yielded comes back by itself).
                    if let Some(r) = st.reader.and_then(|r| st.find(r)) {
                        if let Some(w) = &st.streams[r].waker {
                            w.wake_by_ref();
                        }
                    }
                }
                return Poll::Pending;
            }
            st.reader = Some(id);
            // Read until the socket has nothing more, even when this stream's response is
            // complete: one round serves every response that has arrived, and the requests
            // that follow go out together.
            if !drained {
                if st.rpos < st.rend {
                    // Frames a previous reader left whole in the buffer come first.
                    let before = (st.rpos, st.rend);
                    st.process(Instant::now());
                    if (st.rpos, st.rend) != before {
                        continue;
                    }
                }
                match st.read(cx) {
                    Poll::Ready(()) => continue,
                    Poll::Pending => drained = true,
                }
            }
            if open && st.streams.len() > 1 && !st.yielded {
                // The users this round's responses woke are about to queue their next
                // requests: let them run first, and write all of them in one go. Written in
                // bits as they come, the requests would come back in bits too, and a
                // connection's batches would only ever get smaller.
                st.yielded = true;
                st.streams[i].waker = Some(cx.waker().clone());
                cx.waker().wake_by_ref();
                return Poll::Pending;
            }
            if st.wpos < st.wbuf.len() {
                st.yielded = false;
                if let Poll::Ready(Err(e)) = st.flush(cx) {
                    st.fail_io(e);
                    continue;
                }
            }
            if !open {
                return Poll::Ready(self.finish(st, i, keep, cx));
            }
            let slot = &mut st.streams[i];
            match &slot.waker {
                Some(w) if w.will_wake(cx.waker()) => {}
                _ => slot.waker = Some(cx.waker().clone()),
            }
            return Poll::Pending;
        }
    }

    /// The stream's response is complete or failed: its slot goes, and with it the reading.
    fn finish(
        &mut self,
        st: &mut State,
        i: usize,
        keep: &mut Option<&mut Response>,
        cx: &mut Context<'_>,
    ) -> Result<u16, H2Fail> {
        let slot = st.streams.swap_remove(i);
        self.id = None;
        if let (Some(k), Some(kept)) = (keep.as_deref_mut(), slot.keep) {
            *k = *kept;
        }
        if st.reader == Some(slot.id) && st.wpos < st.wbuf.len() {
            // Acknowledgements queued while reading go out now, not with the next request.
            let _ = st.flush(cx);
        }
        st.release(slot.id);
        match slot.phase {
            Phase::Done => Ok(slot.status.unwrap_or(0)),
            Phase::Failed(e) => Err(H2Fail::Sent(e)),
            Phase::NotSent(e) => Err(H2Fail::NotSent(e)),
            Phase::Open => unreachable!(),
        }
    }
}

fn wake(slot: &mut Slot) {
    if let Some(w) = slot.waker.take() {
        w.wake();
    }
}

impl State {
    fn find(&self, id: u32) -> Option<usize> {
        self.streams.iter().position(|s| s.id == id)
    }

    /// Stream `id` is gone: if it was reading, another waiting user takes over; a place is free
    /// for a user waiting on MAX_CONCURRENT_STREAMS.
    fn release(&mut self, id: u32) {
        if self.reader == Some(id) {
            self.reader = None;
            if let Some(s) = self.streams.iter_mut().find(|s| s.waker.is_some()) {
                wake(s);
            }
        }
        if let Some(w) = self.waiting.pop() {
            w.wake();
        }
    }

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

    /// Queues a new stream's HEADERS, and as much of its body as the windows allow.
    fn open(&mut self, id: u32, req: &H2Request, keep: bool) {
        let mut block = &req.block[..];
        let update;
        if self.table_update {
            self.table_update = false;
            let mut b = Vec::with_capacity(block.len() + 1);
            b.push(0x20);
            b.extend_from_slice(block);
            update = b;
            block = &update;
        }
        let end_stream = if req.body.is_empty() { frame::END_STREAM } else { 0 };
        let mut kind = frame::HEADERS;
        let mut flags = end_stream;
        loop {
            let n = block.len().min(self.peer_max_frame);
            let (part, rest) = block.split_at(n);
            let last = if rest.is_empty() { frame::END_HEADERS } else { 0 };
            frame::put_frame(&mut self.wbuf, kind, flags | last, id, part);
            if rest.is_empty() {
                break;
            }
            block = rest;
            kind = frame::CONTINUATION;
            flags = 0;
        }
        self.streams.push(Slot {
            id,
            waker: None,
            phase: Phase::Open,
            status: None,
            head_seen: false,
            read: 0,
            first_byte: None,
            keep: keep.then(Box::default),
            body_sent: 0,
            body_waiting: !req.body.is_empty(),
            send_window: self.peer_window,
            recv_window: STREAM_WINDOW,
            recv_unacked: 0,
        });
        if !req.body.is_empty() {
            let i = self.streams.len() - 1;
            self.send_body(i, &req.body);
        }
    }

    /// Frames more of stream `i`'s body, within the send windows and frame size.
    fn send_body(&mut self, i: usize, body: &[u8]) {
        let slot = &mut self.streams[i];
        while slot.body_sent < body.len() {
            let room = slot.send_window.min(self.send_window).min(self.peer_max_frame as i64);
            if room <= 0 {
                return;
            }
            let n = (body.len() - slot.body_sent).min(room as usize);
            let end = slot.body_sent + n == body.len();
            frame::put_frame(
                &mut self.wbuf,
                frame::DATA,
                if end { frame::END_STREAM } else { 0 },
                slot.id,
                &body[slot.body_sent..slot.body_sent + n],
            );
            slot.body_sent += n;
            slot.send_window -= n as i64;
            self.send_window -= n as i64;
        }
        slot.body_waiting = false;
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

    /// A stream error found by crest: RST_STREAM with its code; the stream fails.
    fn stream_error(&mut self, i: usize, m: Malformed) {
        let slot = &mut self.streams[i];
        frame::put_frame(&mut self.wbuf, frame::RST_STREAM, 0, slot.id, &m.code.to_be_bytes());
        slot.phase = Phase::Failed(H2Error::LocalReset(m));
        wake(slot);
    }

    /// Handles every whole frame in the read buffer.
    fn process(&mut self, now: Instant) {
        let rbuf = std::mem::take(&mut self.rbuf);
        while self.dead.is_none() {
            // A server without HTTP/2 on a cleartext port answers the preface in HTTP/1.1; read
            // as a frame, its status line would be a frame of 4.7 MB and the report would call
            // it a frame-size error.
            if !self.framed && rbuf[self.rpos..self.rend].starts_with(b"HTTP/1.") {
                self.connection_error(Malformed {
                    code: frame::PROTOCOL_ERROR,
                    what: "an HTTP/1.1 response: the server does not speak HTTP/2 with prior knowledge on this port",
                });
                break;
            }
            let Some(h) = Head::parse(&rbuf[self.rpos..self.rend]) else {
                break;
            };
            self.framed = true;
            if h.len > frame::MAX_PAYLOAD {
                self.connection_error(Malformed {
                    code: frame::FRAME_SIZE_ERROR,
                    what: "a frame larger than SETTINGS_MAX_FRAME_SIZE",
                });
                break;
            }
            if self.rend - self.rpos < 9 + h.len {
                break;
            }
            let start = self.rpos + 9;
            self.rpos = start + h.len;
            if let Err(m) = self.frame(h, &rbuf[start..start + h.len], now) {
                self.connection_error(m);
            }
        }
        if self.rpos == self.rend {
            self.rpos = 0;
            self.rend = 0;
        }
        self.rbuf = rbuf;
    }

    /// Handles one frame; an error returned is a connection error.
    fn frame(&mut self, h: Head, payload: &[u8], now: Instant) -> Result<(), Malformed> {
        let protocol = |what| Malformed {
            code: frame::PROTOCOL_ERROR,
            what,
        };
        if let Some(c) = &mut self.continuation {
            if h.kind != frame::CONTINUATION || h.stream != c.stream {
                return Err(protocol("a frame inside a header block"));
            }
            if c.block.len() + payload.len() > MAX_HEADER_BLOCK {
                return Err(protocol("a header block larger than 256 KiB"));
            }
            c.block.extend_from_slice(payload);
            if h.flags & frame::END_HEADERS != 0 {
                let c = self.continuation.take().unwrap_or_else(|| unreachable!());
                self.headers(c.stream, c.end_stream, &c.block, now)?;
            }
            return Ok(());
        }
        let on_stream = |what| if h.stream == 0 { Err(protocol(what)) } else { Ok(()) };
        let on_conn = |what| if h.stream != 0 { Err(protocol(what)) } else { Ok(()) };
        match h.kind {
            frame::DATA => {
                on_stream("DATA on stream 0")?;
                self.data(h, payload)?;
            }
            frame::HEADERS => {
                on_stream("HEADERS on stream 0")?;
                let block = frame::header_fragment(h.flags, payload)?;
                let end_stream = h.flags & frame::END_STREAM != 0;
                if h.flags & frame::END_HEADERS == 0 {
                    self.continuation = Some(Continuation {
                        stream: h.stream,
                        end_stream,
                        block: block.to_vec(),
                    });
                } else {
                    self.headers(h.stream, end_stream, block, now)?;
                }
            }
            frame::PRIORITY => on_stream("PRIORITY on stream 0")?,
            frame::RST_STREAM => {
                on_stream("RST_STREAM on stream 0")?;
                let code = frame::u32_payload(payload, "RST_STREAM not 4 bytes long")?;
                self.idle_check(h.stream, "RST_STREAM on an idle stream")?;
                if let Some(i) = self.find(h.stream) {
                    let slot = &mut self.streams[i];
                    if matches!(slot.phase, Phase::Open) {
                        slot.phase = Phase::Failed(H2Error::Reset(code));
                        wake(slot);
                    }
                }
            }
            frame::SETTINGS => {
                on_conn("SETTINGS on a stream")?;
                if h.flags & frame::ACK != 0 {
                    if !payload.is_empty() {
                        return Err(Malformed {
                            code: frame::FRAME_SIZE_ERROR,
                            what: "SETTINGS ack with a payload",
                        });
                    }
                    return Ok(());
                }
                for (id, value) in frame::settings(payload)? {
                    self.setting(id, value)?;
                }
                frame::put_frame(&mut self.wbuf, frame::SETTINGS, frame::ACK, 0, &[]);
            }
            frame::PUSH_PROMISE => return Err(protocol("PUSH_PROMISE though push is disabled")),
            frame::PING => {
                on_conn("PING on a stream")?;
                if payload.len() != 8 {
                    return Err(Malformed {
                        code: frame::FRAME_SIZE_ERROR,
                        what: "PING not 8 bytes long",
                    });
                }
                if h.flags & frame::ACK == 0 {
                    frame::put_frame(&mut self.wbuf, frame::PING, frame::ACK, 0, payload);
                }
            }
            frame::GOAWAY => {
                on_conn("GOAWAY on a stream")?;
                let (last, code) = frame::goaway(payload)?;
                self.goaway = Some((last, code));
                for s in &mut self.streams {
                    if s.id > last && matches!(s.phase, Phase::Open) {
                        s.phase = Phase::NotSent(H2Error::GoAway(code));
                        wake(s);
                    }
                }
            }
            frame::WINDOW_UPDATE => {
                let inc = i64::from(frame::u32_payload(payload, "WINDOW_UPDATE not 4 bytes long")? & 0x7fff_ffff);
                self.window_update(h.stream, inc)?;
            }
            frame::CONTINUATION => return Err(protocol("CONTINUATION outside a header block")),
            _ => {} // Unknown frame types are ignored (RFC 9113 section 4.1).
        }
        Ok(())
    }

    /// A frame on a stream crest has not opened yet is a connection error.
    fn idle_check(&self, stream: u32, what: &'static str) -> Result<(), Malformed> {
        if stream >= self.next_id || stream.is_multiple_of(2) {
            return Err(Malformed {
                code: frame::PROTOCOL_ERROR,
                what,
            });
        }
        Ok(())
    }

    fn data(&mut self, h: Head, payload: &[u8]) -> Result<(), Malformed> {
        self.idle_check(h.stream, "DATA on an idle stream")?;
        let data = frame::unpad(h.flags, payload)?;
        // Flow control counts the whole payload, padding too.
        let len = h.len as i64;
        self.recv_window -= len;
        if self.recv_window < 0 {
            return Err(Malformed {
                code: frame::FLOW_CONTROL_ERROR,
                what: "DATA beyond the connection's window",
            });
        }
        self.recv_unacked += len;
        if self.recv_unacked >= CONN_WINDOW / 2 {
            let inc = self.recv_unacked as u32;
            frame::put_frame(&mut self.wbuf, frame::WINDOW_UPDATE, 0, 0, &inc.to_be_bytes());
            self.recv_window += self.recv_unacked;
            self.recv_unacked = 0;
        }
        let Some(i) = self.find(h.stream) else {
            // A stream crest has reset; its data still counted against the connection.
            return Ok(());
        };
        let slot = &mut self.streams[i];
        if !matches!(slot.phase, Phase::Open) {
            return Ok(());
        }
        if !slot.head_seen {
            self.stream_error(
                i,
                Malformed {
                    code: frame::PROTOCOL_ERROR,
                    what: "DATA before the response's HEADERS",
                },
            );
            return Ok(());
        }
        slot.recv_window -= len;
        if slot.recv_window < 0 {
            self.stream_error(
                i,
                Malformed {
                    code: frame::FLOW_CONTROL_ERROR,
                    what: "DATA beyond the stream's window",
                },
            );
            return Ok(());
        }
        slot.read += data.len() as u64;
        if let Some(k) = &mut slot.keep {
            k.keep(data);
        }
        if h.flags & frame::END_STREAM != 0 {
            slot.phase = Phase::Done;
            wake(slot);
        } else {
            slot.recv_unacked += len;
            if slot.recv_unacked >= STREAM_WINDOW / 2 {
                let inc = slot.recv_unacked as u32;
                slot.recv_window += slot.recv_unacked;
                slot.recv_unacked = 0;
                let id = slot.id;
                frame::put_frame(&mut self.wbuf, frame::WINDOW_UPDATE, 0, id, &inc.to_be_bytes());
            }
        }
        Ok(())
    }

    /// A complete header block on `stream`: a response head, an informational one, or trailers.
    /// It is decoded even for a stream crest no longer wants, since it changes the table.
    fn headers(&mut self, stream: u32, end_stream: bool, block: &[u8], now: Instant) -> Result<(), Malformed> {
        self.idle_check(stream, "HEADERS on a stream crest did not open")?;
        let i = self
            .find(stream)
            .filter(|&i| matches!(self.streams[i].phase, Phase::Open));
        let State { decoder, streams, .. } = self;
        let mut slot = i.map(|i| &mut streams[i]);
        let mut status: Option<Result<u16, ()>> = None;
        let mut head: u64 = 0;
        let trailers = slot.as_ref().is_some_and(|s| s.head_seen);
        let mut keep = slot.as_mut().filter(|_| !trailers).and_then(|s| s.keep.as_deref_mut());
        let kept_before = keep.as_ref().map_or(0, |k| k.headers.len());
        decoder
            .decode(block, |name, value| {
                if name == b":status" {
                    status = Some(parse_status(value));
                } else if name.first() != Some(&b':') {
                    head += (name.len() + value.len() + 4) as u64;
                    if let Some(k) = keep.as_deref_mut() {
                        k.headers.push((
                            String::from_utf8_lossy(name).into_owned(),
                            String::from_utf8_lossy(value).into_owned(),
                        ));
                    }
                }
            })
            .map_err(|e| Malformed {
                code: frame::COMPRESSION_ERROR,
                what: e.0,
            })?;
        let (Some(i), Some(slot)) = (i, slot) else {
            return Ok(());
        };
        let bad = |what| Malformed {
            code: frame::PROTOCOL_ERROR,
            what,
        };
        if trailers {
            if !end_stream {
                self.stream_error(i, bad("trailers without END_STREAM"));
            } else {
                slot.phase = Phase::Done;
                wake(slot);
            }
            return Ok(());
        }
        match status {
            Some(Ok(s)) if (100..200).contains(&s) => {
                // Informational: the final head is still to come.
                if let Some(k) = &mut slot.keep {
                    k.headers.truncate(kept_before);
                }
                if end_stream {
                    self.stream_error(i, bad("an informational response that ends the stream"));
                }
            }
            Some(Ok(s)) => {
                slot.status = Some(s);
                slot.head_seen = true;
                slot.first_byte = Some(now);
                // The head's size as HTTP/1.1 would carry it: a stream's share of the
                // compressed header blocks and frames of a multiplexed connection cannot be
                // observed.
                slot.read += 17 + head;
                if let Some(k) = &mut slot.keep {
                    k.status = s;
                }
                if end_stream {
                    slot.phase = Phase::Done;
                    wake(slot);
                }
            }
            Some(Err(())) => self.stream_error(i, bad("a malformed :status")),
            None => self.stream_error(i, bad("a response without :status")),
        }
        Ok(())
    }

    fn setting(&mut self, id: u16, value: u32) -> Result<(), Malformed> {
        match id {
            frame::HEADER_TABLE_SIZE if (value as usize) < super::hpack::TABLE_LIMIT => self.table_update = true,
            frame::ENABLE_PUSH if value != 0 => {
                return Err(Malformed {
                    code: frame::PROTOCOL_ERROR,
                    what: "SETTINGS_ENABLE_PUSH from a server",
                })
            }
            frame::MAX_CONCURRENT_STREAMS => {
                let more = value as usize > self.peer_max_streams;
                self.peer_max_streams = value as usize;
                if more {
                    for w in self.waiting.drain(..) {
                        w.wake();
                    }
                }
            }
            frame::INITIAL_WINDOW_SIZE => {
                let value = i64::from(value);
                if value > frame::MAX_WINDOW {
                    return Err(Malformed {
                        code: frame::FLOW_CONTROL_ERROR,
                        what: "SETTINGS_INITIAL_WINDOW_SIZE above 2^31-1",
                    });
                }
                let delta = value - self.peer_window;
                self.peer_window = value;
                for s in &mut self.streams {
                    s.send_window += delta;
                    if s.send_window > frame::MAX_WINDOW {
                        return Err(Malformed {
                            code: frame::FLOW_CONTROL_ERROR,
                            what: "a stream window above 2^31-1",
                        });
                    }
                    if delta > 0 && s.body_waiting {
                        wake(s);
                    }
                }
            }
            frame::MAX_FRAME_SIZE => {
                if !(16_384..=16_777_215).contains(&value) {
                    return Err(Malformed {
                        code: frame::PROTOCOL_ERROR,
                        what: "SETTINGS_MAX_FRAME_SIZE out of range",
                    });
                }
                self.peer_max_frame = value as usize;
            }
            _ => {}
        }
        Ok(())
    }

    fn window_update(&mut self, stream: u32, inc: i64) -> Result<(), Malformed> {
        if stream == 0 {
            if inc == 0 {
                return Err(Malformed {
                    code: frame::PROTOCOL_ERROR,
                    what: "WINDOW_UPDATE of 0",
                });
            }
            self.send_window += inc;
            if self.send_window > frame::MAX_WINDOW {
                return Err(Malformed {
                    code: frame::FLOW_CONTROL_ERROR,
                    what: "the connection's send window above 2^31-1",
                });
            }
            for s in &mut self.streams {
                if s.body_waiting {
                    wake(s);
                }
            }
            return Ok(());
        }
        self.idle_check(stream, "WINDOW_UPDATE on an idle stream")?;
        let Some(i) = self.find(stream) else { return Ok(()) };
        let slot = &mut self.streams[i];
        if inc == 0 {
            self.stream_error(
                i,
                Malformed {
                    code: frame::PROTOCOL_ERROR,
                    what: "WINDOW_UPDATE of 0",
                },
            );
            return Ok(());
        }
        slot.send_window += inc;
        if slot.send_window > frame::MAX_WINDOW {
            self.stream_error(
                i,
                Malformed {
                    code: frame::FLOW_CONTROL_ERROR,
                    what: "a stream's send window above 2^31-1",
                },
            );
            return Ok(());
        }
        if slot.body_waiting {
            wake(slot);
        }
        Ok(())
    }
}

fn parse_status(v: &[u8]) -> Result<u16, ()> {
    match v {
        [a @ b'1'..=b'9', b, c] if b.is_ascii_digit() && c.is_ascii_digit() => {
            Ok(u16::from(a - b'0') * 100 + u16::from(b - b'0') * 10 + u16::from(c - b'0'))
        }
        _ => Err(()),
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::http2::translate;
    use tokio::io::{AsyncReadExt, AsyncWriteExt};
    use tokio::net::{TcpListener, TcpStream};

    /// Reads one frame from the client, skipping its preface.
    async fn read_frame(s: &mut TcpStream, preface: &mut bool) -> (Head, Vec<u8>) {
        if !*preface {
            let mut p = [0u8; 24];
            s.read_exact(&mut p).await.unwrap();
            assert_eq!(&p[..], frame::PREFACE);
            *preface = true;
        }
        let mut h = [0u8; 9];
        s.read_exact(&mut h).await.unwrap();
        let head = Head::parse(&h).unwrap();
        let mut payload = vec![0; head.len];
        s.read_exact(&mut payload).await.unwrap();
        (head, payload)
    }

    /// Reads client frames until one of `kind` arrives.
    async fn until(s: &mut TcpStream, preface: &mut bool, kind: u8) -> (Head, Vec<u8>) {
        loop {
            let f = read_frame(s, preface).await;
            if f.0.kind == kind {
                return f;
            }
        }
    }

    fn put(out: &mut Vec<u8>, kind: u8, flags: u8, stream: u32, payload: &[u8]) {
        frame::put_frame(out, kind, flags, stream, payload);
    }

    /// A response head: `:status: 200` indexed, then `server: x` as a literal.
    const HEAD_200: &[u8] = b"\x88\x76\x01x";

    /// Runs one exchange of `body` against a server that sends `reply(stream_id)` once it has the
    /// request's HEADERS, then lingers.
    async fn scripted(
        body: &[u8],
        reply: impl FnOnce(u32) -> Vec<u8> + Send + 'static,
    ) -> (Result<u16, H2Fail>, Progress, Response) {
        interactive(body, move |mut s| async move {
            let mut preface = false;
            let (h, _) = until(&mut s, &mut preface, frame::HEADERS).await;
            let mut out = Vec::new();
            put(&mut out, frame::SETTINGS, 0, 0, &[]);
            out.extend(reply(h.stream));
            s.write_all(&out).await.unwrap();
            tokio::time::sleep(std::time::Duration::from_millis(300)).await;
        })
        .await
    }

    async fn interactive<F: std::future::Future<Output = ()> + Send + 'static>(
        body: &[u8],
        server: impl FnOnce(TcpStream) -> F + Send + 'static,
    ) -> (Result<u16, H2Fail>, Progress, Response) {
        let listener = TcpListener::bind("127.0.0.1:0").await.unwrap();
        let addr = listener.local_addr().unwrap();
        let server = tokio::spawn(async move {
            let (s, _) = listener.accept().await.unwrap();
            server(s).await;
        });
        let conn = Conn::new(Stream::Plain(TcpStream::connect(addr).await.unwrap()));
        let method = if body.is_empty() { "GET" } else { "POST" };
        let request = crate::build_request(method, "/x", "h", &[], body, true).unwrap();
        let req = translate(&request, false, true).ok().unwrap();
        let mut p = Progress::default();
        let mut keep = Response::default();
        let r = tokio::time::timeout(
            std::time::Duration::from_secs(5),
            conn.exchange(&req, &mut p, Some(&mut keep)),
        )
        .await
        .expect("the exchange ends");
        server.abort();
        (r, p, keep)
    }

    fn local_code(r: &Result<u16, H2Fail>) -> Option<u32> {
        match r {
            Err(H2Fail::Sent(H2Error::Local(m))) => Some(m.code),
            _ => None,
        }
    }

    #[tokio::test]
    async fn a_padded_response_with_trailers_is_read_and_kept() {
        let (r, p, keep) = scripted(b"", |id| {
            let mut out = Vec::new();
            // HEADERS with padding and priority fields.
            let mut h = vec![2, 0, 0, 0, 0, 7];
            h.extend_from_slice(HEAD_200);
            h.extend_from_slice(&[0, 0]);
            put(
                &mut out,
                frame::HEADERS,
                frame::END_HEADERS | frame::PADDED | frame::PRIORITY_FLAG,
                id,
                &h,
            );
            put(&mut out, frame::DATA, frame::PADDED, id, b"\x03hel\0\0\0");
            put(&mut out, frame::PRIORITY, 0, id, &[0, 0, 0, 0, 1]);
            put(&mut out, frame::PING, 0, 0, b"12345678");
            put(&mut out, frame::DATA, 0, id, b"lo");
            put(&mut out, 0xfa, 0, id, b"an unknown frame type is ignored");
            // Trailers.
            put(
                &mut out,
                frame::HEADERS,
                frame::END_HEADERS | frame::END_STREAM,
                id,
                b"\x00\x01t\x01v",
            );
            out
        })
        .await;
        assert!(matches!(r, Ok(200)));
        assert_eq!(keep.status, 200);
        assert_eq!(keep.headers, [("server".to_string(), "x".to_string())]);
        assert_eq!(keep.body, b"hello");
        assert_eq!(p.status, Some(200));
        assert!(p.first_byte.is_some());
        // 17 for the status line, "server: x\r\n", and the body; no padding, no trailers.
        assert_eq!(p.read, 17 + 6 + 1 + 4 + 5);
    }

    #[tokio::test]
    async fn a_body_larger_than_the_read_buffer_arrives_whole_and_is_counted() {
        let (r, p, keep) = scripted(b"", |id| {
            let mut out = Vec::new();
            put(&mut out, frame::HEADERS, frame::END_HEADERS, id, HEAD_200);
            for k in 0..13u8 {
                let last = if k == 12 { frame::END_STREAM } else { 0 };
                put(&mut out, frame::DATA, last, id, &[b'a' + k; 16_384]);
            }
            out
        })
        .await;
        assert!(matches!(r, Ok(200)));
        assert_eq!(keep.body.len(), 13 * 16_384);
        assert!(keep.body[16_384..32_768].iter().all(|&b| b == b'b'));
        assert_eq!(p.read, 17 + 11 + 13 * 16_384);
    }

    /// The machinery for many streams on one connection (taking turns at reading, handing the
    /// socket on) is not what crest runs at many streams (the h2 crate is, bench/README.md),
    /// but it must hold: 20 users at once, 5 requests each, on one connection.
    #[tokio::test(flavor = "multi_thread", worker_threads = 2)]
    async fn many_streams_on_one_connection_take_turns_at_reading() {
        use crest_testkit::h2::{H2Reply, H2Server};
        let server = H2Server::start(|r, i| {
            if r.path == "/slow" || i % 7 == 0 {
                H2Reply::delayed(std::time::Duration::from_millis(3))
            } else {
                H2Reply::ok()
            }
        })
        .await;
        let tcp = TcpStream::connect(server.addr).await.unwrap();
        let conn = Conn::new(Stream::Plain(tcp));
        let mut tasks = Vec::new();
        for u in 0..20 {
            let conn = conn.clone();
            tasks.push(tokio::spawn(async move {
                let path = if u % 3 == 0 { "/slow" } else { "/" };
                let request = crate::build_request("GET", path, "h", &[], b"", true).unwrap();
                let req = translate(&request, false, true).ok().unwrap();
                let mut statuses = Vec::new();
                for _ in 0..5 {
                    let mut p = Progress::default();
                    let mut keep = Response::default();
                    let r = conn.exchange(&req, &mut p, Some(&mut keep)).await;
                    statuses.push((r.ok(), keep.status, p.read > 17));
                }
                statuses
            }));
        }
        for t in tasks {
            let got = tokio::time::timeout(std::time::Duration::from_secs(10), t).await;
            for (r, status, read) in got.expect("no user is left waiting").unwrap() {
                assert_eq!((r, status, read), (Some(200), 200, true));
            }
        }
        assert_eq!(server.received().len(), 100);
        assert_eq!(server.connections(), 1);
        let st = conn.lock();
        assert!(
            st.streams.is_empty() && st.reader.is_none(),
            "every stream gave its place back"
        );
    }

    #[tokio::test]
    async fn a_header_block_continues_across_continuation_frames() {
        let (r, _, keep) = scripted(b"", |id| {
            let mut out = Vec::new();
            put(&mut out, frame::HEADERS, 0, id, &HEAD_200[..2]);
            put(&mut out, frame::CONTINUATION, 0, id, &HEAD_200[2..3]);
            put(&mut out, frame::CONTINUATION, frame::END_HEADERS, id, &HEAD_200[3..]);
            put(&mut out, frame::DATA, frame::END_STREAM, id, b"ok");
            out
        })
        .await;
        assert!(matches!(r, Ok(200)));
        assert_eq!(keep.header("server"), Some("x"));
        assert_eq!(keep.body, b"ok");
    }

    #[tokio::test]
    async fn hostile_frames_are_protocol_errors_not_panics() {
        type Script = fn(u32) -> Vec<u8>;
        let cases: [(Script, u32); 9] = [
            // A frame longer than SETTINGS_MAX_FRAME_SIZE.
            (
                |id| {
                    let mut out = Vec::new();
                    frame::put_head(&mut out, 16_385, frame::DATA, 0, id);
                    out.extend(vec![0; 16_385]);
                    out
                },
                frame::FRAME_SIZE_ERROR,
            ),
            // A huge length: refused from its header, without waiting for 16 MiB.
            (
                |id| {
                    let mut out = Vec::new();
                    frame::put_head(&mut out, 0xff_ffff, frame::HEADERS, 0, id);
                    out
                },
                frame::FRAME_SIZE_ERROR,
            ),
            // Padding longer than the frame.
            (
                |id| {
                    let mut out = Vec::new();
                    put(
                        &mut out,
                        frame::HEADERS,
                        frame::END_HEADERS | frame::PADDED,
                        id,
                        b"\x09\x88",
                    );
                    out
                },
                frame::PROTOCOL_ERROR,
            ),
            // An index past the HPACK tables.
            (
                |id| {
                    let mut out = Vec::new();
                    put(&mut out, frame::HEADERS, frame::END_HEADERS, id, b"\xff\x00");
                    out
                },
                frame::COMPRESSION_ERROR,
            ),
            // Push, which crest disabled.
            (
                |id| {
                    let mut out = Vec::new();
                    put(
                        &mut out,
                        frame::PUSH_PROMISE,
                        frame::END_HEADERS,
                        id,
                        &[0, 0, 0, 2, 0x88],
                    );
                    out
                },
                frame::PROTOCOL_ERROR,
            ),
            // A frame interleaved in a header block.
            (
                |id| {
                    let mut out = Vec::new();
                    put(&mut out, frame::HEADERS, 0, id, b"\x88");
                    put(&mut out, frame::PING, 0, 0, b"12345678");
                    out
                },
                frame::PROTOCOL_ERROR,
            ),
            // A connection window pushed past 2^31-1.
            (
                |_| {
                    let mut out = Vec::new();
                    put(&mut out, frame::WINDOW_UPDATE, 0, 0, &0x7fff_ffffu32.to_be_bytes());
                    out
                },
                frame::FLOW_CONTROL_ERROR,
            ),
            // A PING of the wrong size.
            (
                |_| {
                    let mut out = Vec::new();
                    put(&mut out, frame::PING, 0, 0, b"1234");
                    out
                },
                frame::FRAME_SIZE_ERROR,
            ),
            // Frames on a stream crest never opened.
            (
                |_| {
                    let mut out = Vec::new();
                    put(&mut out, frame::DATA, 0, 9, b"x");
                    out
                },
                frame::PROTOCOL_ERROR,
            ),
        ];
        for (i, (script, code)) in cases.into_iter().enumerate() {
            let (r, _, _) = scripted(b"", script).await;
            assert_eq!(local_code(&r), Some(code), "case {i}");
            let outcome = crate::classify::h2_error(match &r {
                Err(H2Fail::Sent(e)) => e,
                _ => unreachable!(),
            });
            let want = if code == frame::FLOW_CONTROL_ERROR {
                crest_model::Outcome::H2FlowControl
            } else {
                crest_model::Outcome::H2Protocol
            };
            assert_eq!(outcome, want, "case {i}");
        }
    }

    #[tokio::test]
    async fn a_server_answering_in_http_1_is_named() {
        let (r, _, _) = interactive(b"", |mut s| async move {
            let mut preface = [0u8; 24];
            s.read_exact(&mut preface).await.unwrap();
            s.write_all(b"HTTP/1.1 400 Bad Request\r\nContent-Length: 0\r\nConnection: close\r\n\r\n")
                .await
                .unwrap();
            tokio::time::sleep(std::time::Duration::from_millis(300)).await;
        })
        .await;
        let Err(H2Fail::Sent(e)) = r else {
            panic!("failed as sent")
        };
        assert_eq!(local_code(&Err(H2Fail::Sent(e.clone()))), Some(frame::PROTOCOL_ERROR));
        assert!(e.to_string().contains("does not speak HTTP/2"), "{e}");
    }

    #[tokio::test]
    async fn a_truncated_frame_then_close_fails_the_stream() {
        let (r, _, _) = interactive(b"", |mut s| async move {
            let mut preface = false;
            let (h, _) = until(&mut s, &mut preface, frame::HEADERS).await;
            let mut out = Vec::new();
            put(&mut out, frame::HEADERS, frame::END_HEADERS, h.stream, HEAD_200);
            frame::put_head(&mut out, 100, frame::DATA, 0, h.stream);
            out.extend_from_slice(b"only part");
            s.write_all(&out).await.unwrap();
        })
        .await;
        assert!(matches!(r, Err(H2Fail::Sent(H2Error::Closed))));
    }

    #[tokio::test]
    async fn a_connection_the_server_closed_while_idle_fails_the_next_request_unsent() {
        let listener = TcpListener::bind("127.0.0.1:0").await.unwrap();
        let addr = listener.local_addr().unwrap();
        let server = tokio::spawn(async move {
            let (mut s, _) = listener.accept().await.unwrap();
            let mut preface = false;
            let (h, _) = until(&mut s, &mut preface, frame::HEADERS).await;
            let mut out = Vec::new();
            put(&mut out, frame::SETTINGS, 0, 0, &[]);
            put(
                &mut out,
                frame::HEADERS,
                frame::END_HEADERS | frame::END_STREAM,
                h.stream,
                HEAD_200,
            );
            s.write_all(&out).await.unwrap();
            // The idle timeout: closed without GOAWAY.
            tokio::time::sleep(std::time::Duration::from_millis(50)).await;
        });
        let conn = Conn::new(Stream::Plain(TcpStream::connect(addr).await.unwrap()));
        let request = crate::build_request("GET", "/", "h", &[], b"", true).unwrap();
        let req = translate(&request, false, true).ok().unwrap();
        let mut p = Progress::default();
        assert!(matches!(conn.exchange(&req, &mut p, None).await, Ok(200)));
        server.await.unwrap();
        tokio::time::sleep(std::time::Duration::from_millis(50)).await;
        let mut p = Progress::default();
        let r = conn.exchange(&req, &mut p, None).await;
        // Closed, or reset when the server dropped the socket with our acknowledgements unread.
        match r {
            Err(H2Fail::NotSent(H2Error::Closed | H2Error::Io(_))) => {}
            Err(H2Fail::NotSent(e) | H2Fail::Sent(e)) => panic!("{e}"),
            Ok(_) => panic!("answered"),
        }
        assert_eq!(p.written, 0);
    }

    #[tokio::test]
    async fn rst_stream_and_goaway_carry_their_codes() {
        let (r, p, _) = scripted(b"", |id| {
            let mut out = Vec::new();
            put(&mut out, frame::HEADERS, frame::END_HEADERS, id, HEAD_200);
            put(&mut out, frame::RST_STREAM, 0, id, &11u32.to_be_bytes());
            out
        })
        .await;
        assert!(matches!(r, Err(H2Fail::Sent(H2Error::Reset(11)))));
        assert_eq!(p.status, Some(200), "the head arrived before the reset");
        // A GOAWAY below the stream: the server did not process it, so it may be sent again.
        let (r, _, _) = scripted(b"", |_| {
            let mut out = Vec::new();
            put(&mut out, frame::GOAWAY, 0, 0, &[0, 0, 0, 0, 0, 0, 0, 0]);
            out
        })
        .await;
        assert!(matches!(r, Err(H2Fail::NotSent(H2Error::GoAway(0)))));
        // A GOAWAY that covers the stream, then the socket closes: the GOAWAY is the cause.
        let (r, _, _) = interactive(b"", |mut s| async move {
            let mut preface = false;
            let (h, _) = until(&mut s, &mut preface, frame::HEADERS).await;
            let mut out = Vec::new();
            let mut payload = h.stream.to_be_bytes().to_vec();
            payload.extend_from_slice(&2u32.to_be_bytes());
            put(&mut out, frame::GOAWAY, 0, 0, &payload);
            s.write_all(&out).await.unwrap();
        })
        .await;
        match r {
            Err(H2Fail::Sent(e @ H2Error::GoAway(2))) => {
                assert_eq!(e.to_string(), "the server sent GOAWAY with INTERNAL_ERROR (2)")
            }
            _ => panic!("not GOAWAY"),
        }
    }

    #[tokio::test]
    async fn settings_and_pings_are_acknowledged_and_a_large_body_waits_for_window_updates() {
        let body = vec![b'b'; 100_000];
        let (r, _, keep) = interactive(&body, |mut s| async move {
            let mut preface = false;
            let mut out = Vec::new();
            put(&mut out, frame::SETTINGS, 0, 0, &[0, 5, 0, 0, 0x40, 0]);
            put(&mut out, frame::PING, 0, 0, b"pingpong");
            s.write_all(&out).await.unwrap();
            let mut got = 0;
            let mut acked = (false, false);
            let mut id = 0;
            let mut opened = false;
            loop {
                let (h, payload) = read_frame(&mut s, &mut preface).await;
                match h.kind {
                    frame::SETTINGS if h.flags & frame::ACK != 0 => acked.0 = true,
                    frame::PING if h.flags & frame::ACK != 0 => {
                        assert_eq!(payload, b"pingpong");
                        acked.1 = true;
                    }
                    frame::HEADERS => id = h.stream,
                    frame::DATA => {
                        got += payload.len();
                        assert!(got <= 65_535 || opened, "the client kept to the default window");
                        if got == 65_535 {
                            // Open both windows; the rest of the body may come now.
                            let mut out = Vec::new();
                            put(&mut out, frame::WINDOW_UPDATE, 0, 0, &100_000u32.to_be_bytes());
                            put(&mut out, frame::WINDOW_UPDATE, 0, id, &100_000u32.to_be_bytes());
                            s.write_all(&out).await.unwrap();
                            opened = true;
                        }
                        if h.flags & frame::END_STREAM != 0 {
                            break;
                        }
                    }
                    _ => {}
                }
            }
            assert!(acked.0 && acked.1, "SETTINGS and PING acknowledged");
            let mut out = Vec::new();
            put(&mut out, frame::HEADERS, frame::END_HEADERS, id, HEAD_200);
            put(&mut out, frame::DATA, frame::END_STREAM, id, got.to_string().as_bytes());
            s.write_all(&out).await.unwrap();
            tokio::time::sleep(std::time::Duration::from_millis(300)).await;
        })
        .await;
        assert!(matches!(r, Ok(200)));
        assert_eq!(keep.body, b"100000", "the server got the whole body");
    }
}
