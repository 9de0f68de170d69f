//! A stream's life on the connection: opened with its request, fed by the frames that
//! answer it, ended when complete, failed or reset.

use super::frame::{self, Malformed};
use super::{State, STREAM_WINDOW};
use crate::exchange::Response;
use crate::http2::{H2Error, H2Request};
use std::task::Waker;
use std::time::Instant;

/// Where a stream stands.
pub(super) enum Phase {
    Open,
    Done,
    Failed(H2Error),
    /// The server will not process it (above GOAWAY's last stream): it may be sent again.
    NotSent(H2Error),
}

/// One open stream: what its response has brought so far.
pub(super) struct Slot {
    pub(super) id: u32,
    pub(super) waker: Option<Waker>,
    pub(super) phase: Phase,
    pub(super) status: Option<u16>,
    /// Final response headers seen; HEADERS after this are trailers.
    pub(super) head_seen: bool,
    /// The response's size as [`crate::http2::exchange`] reports it.
    pub(super) read: u64,
    pub(super) first_byte: Option<Instant>,
    pub(super) keep: Option<Box<Response>>,
    /// The request body's bytes framed so far.
    pub(super) body_sent: usize,
    /// Some of the request body waits for the send windows to open.
    pub(super) body_waiting: bool,
    pub(super) send_window: i64,
    pub(super) recv_window: i64,
    pub(super) recv_unacked: i64,
}

pub(super) fn wake(slot: &mut Slot) {
    if let Some(w) = slot.waker.take() {
        w.wake();
    }
}

impl State {
    pub(super) fn find(&self, id: u32) -> Option<usize> {
        self.streams.iter().position(|s| s.id == id)
    }

    /// Stream `id` is gone: if it was reading, another waiting user takes over; a place is free
    /// for a user waiting on MAX_CONCURRENT_STREAMS.
    pub(super) fn release(&mut self, id: u32) {
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

    /// Queues a new stream's HEADERS, and as much of its body as the windows allow.
    pub(super) fn open(&mut self, id: u32, req: &H2Request, keep: bool) {
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
    pub(super) fn send_body(&mut self, i: usize, body: &[u8]) {
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

    /// A stream error found by crest: RST_STREAM with its code; the stream fails.
    pub(super) fn stream_error(&mut self, i: usize, m: Malformed) {
        let slot = &mut self.streams[i];
        frame::put_frame(&mut self.wbuf, frame::RST_STREAM, 0, slot.id, &m.code.to_be_bytes());
        slot.phase = Phase::Failed(H2Error::LocalReset(m));
        wake(slot);
    }
}
