//! The frames a server sends, handled for every stream of the connection.

use super::frame::{self, Head, Malformed};
use super::stream::{wake, Phase};
use super::{State, CONN_WINDOW, STREAM_WINDOW};
use crate::http2::guard::{self, MAX_HEADER_BLOCK};
use crate::http2::H2Error;
use std::time::Instant;

/// A header block spread over HEADERS and CONTINUATION frames.
pub(super) struct Continuation {
    pub(super) stream: u32,
    pub(super) end_stream: bool,
    pub(super) block: Vec<u8>,
}

impl State {
    /// Handles every whole frame in the read buffer.
    pub(super) fn process(&mut self, now: Instant) {
        let rbuf = std::mem::take(&mut self.rbuf);
        while self.dead.is_none() {
            // A server without HTTP/2 on a cleartext port answers the preface in HTTP/1.1; read
            // as a frame, its status line would be a frame of 4.7 MB and the report would call
            // it a frame-size error.
            if !self.framed && rbuf[self.rpos..self.rend].starts_with(b"HTTP/1.") {
                self.connection_error(Malformed {
                    code: frame::PROTOCOL_ERROR,
                    what: super::super::guard::HTTP1_ANSWER_WHAT,
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
            if self
                .continuation
                .as_ref()
                .is_some_and(|c| h.kind == frame::CONTINUATION && c.block.len() + h.len > MAX_HEADER_BLOCK)
            {
                self.refuse(guard::HEADER_BLOCK_WHAT);
                break;
            }
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
    pub(super) fn frame(&mut self, h: Head, payload: &[u8], now: Instant) -> Result<(), Malformed> {
        let protocol = |what| Malformed {
            code: frame::PROTOCOL_ERROR,
            what,
        };
        if let Some(c) = &mut self.continuation {
            if h.kind != frame::CONTINUATION || h.stream != c.stream {
                return Err(protocol("a frame inside a header block"));
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
                if !self.settings_rate.allow(now) {
                    return Err(Malformed {
                        code: frame::ENHANCE_YOUR_CALM,
                        what: guard::SETTINGS_FLOOD_WHAT,
                    });
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
    pub(super) fn idle_check(&self, stream: u32, what: &'static str) -> Result<(), Malformed> {
        if stream >= self.next_id || stream.is_multiple_of(2) {
            return Err(Malformed {
                code: frame::PROTOCOL_ERROR,
                what,
            });
        }
        Ok(())
    }

    pub(super) fn data(&mut self, h: Head, payload: &[u8]) -> Result<(), Malformed> {
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
    pub(super) fn headers(
        &mut self,
        stream: u32,
        end_stream: bool,
        block: &[u8],
        now: Instant,
    ) -> Result<(), Malformed> {
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

    pub(super) fn setting(&mut self, id: u16, value: u32) -> Result<(), Malformed> {
        match id {
            frame::HEADER_TABLE_SIZE if (value as usize) < crate::http2::hpack::TABLE_LIMIT => self.table_update = true,
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

    pub(super) fn window_update(&mut self, stream: u32, inc: i64) -> Result<(), Malformed> {
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
