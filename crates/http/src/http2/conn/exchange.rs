//! The future of one user's request: it opens a stream, reads the socket for everyone while
//! no other user does, and ends with its own response.

use super::frame;
use super::stream::Phase;
use super::{Conn, State};
use crate::exchange::{Progress, Response};
use crate::http2::{H2Error, H2Fail, H2Request};
use std::task::{Context, Poll};
use std::time::Instant;

/// The largest stream identifier a client may use.
const MAX_STREAM_ID: u32 = (1 << 31) - 1;

/// A user's stream on the connection; dropping it before the response is complete (a timeout)
/// resets the stream and frees its place.
pub(super) struct Exchange<'a> {
    pub(super) conn: &'a Conn,
    pub(super) id: Option<u32>,
    pub(super) base_read: u64,
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
    pub(super) fn poll(
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
                // requests: let them run first, and write all of them in one go, a write per
                // round rather than one per user.
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
