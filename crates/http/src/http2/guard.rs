//! crest's own limits on what an HTTP/2 server may send, the same for both clients: crest's
//! framing ([`super::conn`]) checks them as it handles frames; for the `h2` crate's connections
//! ([`super::mux`]) a [`Guarded`] transport watches the frame headers going by.
//!
//! - A header block (HEADERS and its CONTINUATION frames) over [`MAX_HEADER_BLOCK`] is refused
//!   as crest's limit, not as the server's error: it may be valid HTTP/2.
//! - More than [`MAX_SETTINGS_PER_SEC`] SETTINGS frames in a second is the server's abuse, as
//!   servers treat a client's (each one costs an acknowledgement and a pass over the settings):
//!   the connection ends as a protocol error. Servers send one or two per connection.

use super::frame;
use std::io;
use std::pin::Pin;
use std::sync::atomic::{AtomicU8, Ordering};
use std::sync::Arc;
use std::task::{Context, Poll};
use std::time::{Duration, Instant};
use tokio::io::{AsyncRead, AsyncWrite, ReadBuf};

/// The largest header block accepted across CONTINUATION frames (bytes as sent, compressed).
pub(crate) const MAX_HEADER_BLOCK: usize = 256 * 1024;
/// Most SETTINGS frames (not acknowledgements) a server may send on a connection in a second.
pub(crate) const MAX_SETTINGS_PER_SEC: u32 = 100;

pub(crate) const HEADER_BLOCK_WHAT: &str = "a response header block over crest's 256 KiB limit";
pub(crate) const SETTINGS_FLOOD_WHAT: &str = "more than 100 SETTINGS frames in a second, crest's cap per connection";
/// A server without HTTP/2 on a cleartext port answers the preface in HTTP/1.1.
pub(crate) const HTTP1_ANSWER_WHAT: &str =
    "an HTTP/1.1 response: the server does not speak HTTP/2 with prior knowledge on this port";

/// SETTINGS frames counted in windows of a second from the first of each window.
#[derive(Debug, Default)]
pub(crate) struct SettingsRate {
    since: Option<Instant>,
    count: u32,
}

impl SettingsRate {
    /// Counts one SETTINGS frame; false once the cap is passed.
    pub(crate) fn allow(&mut self, now: Instant) -> bool {
        match self.since {
            Some(s) if now.saturating_duration_since(s) < Duration::from_secs(1) => {
                self.count += 1;
                self.count <= MAX_SETTINGS_PER_SEC
            }
            _ => {
                self.since = Some(now);
                self.count = 1;
                true
            }
        }
    }
}

/// Which limit a guarded connection's server went past, if any.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) enum Tripped {
    HeaderBlock = 1,
    SettingsFlood = 2,
    /// The server answered the preface in HTTP/1.1.
    Http1Answer = 3,
    /// The server closed the connection before sending a byte: no SETTINGS, no HTTP/2.
    Unframed = 4,
}

/// Shared between a [`Guarded`] transport and the handles on its connection: the `h2` crate
/// turns a transport's error into one of its own, keeping only its message, so the cause is
/// passed beside it.
#[derive(Debug, Default)]
pub(crate) struct Tripwire(AtomicU8);

impl Tripwire {
    pub(crate) fn get(&self) -> Option<Tripped> {
        match self.0.load(Ordering::Relaxed) {
            1 => Some(Tripped::HeaderBlock),
            2 => Some(Tripped::SettingsFlood),
            3 => Some(Tripped::Http1Answer),
            4 => Some(Tripped::Unframed),
            _ => None,
        }
    }

    fn set(&self, t: Tripped) {
        self.0.store(t as u8, Ordering::Relaxed);
    }
}

/// A transport that reads the server's frame headers as they pass and fails the read that
/// breaks one of the limits above. The payloads are skipped, not copied or parsed.
pub(crate) struct Guarded<S> {
    inner: S,
    tripwire: Arc<Tripwire>,
    /// The frame header being read, and how much of it has arrived.
    head: [u8; 9],
    head_len: usize,
    /// Payload bytes of the current frame still to pass.
    skip: usize,
    /// Bytes of the header block in progress, when one is open (HEADERS without END_HEADERS).
    block: Option<usize>,
    settings: SettingsRate,
    /// A byte has come from the server.
    heard: bool,
}

impl<S> Guarded<S> {
    pub(crate) fn new(inner: S) -> (Self, Arc<Tripwire>) {
        let tripwire = Arc::new(Tripwire::default());
        let g = Guarded {
            inner,
            tripwire: tripwire.clone(),
            head: [0; 9],
            head_len: 0,
            skip: 0,
            block: None,
            settings: SettingsRate::default(),
            heard: false,
        };
        (g, tripwire)
    }

    /// Follows the frames in `bytes`, the next bytes from the server.
    fn scan(&mut self, mut bytes: &[u8]) -> Result<(), Tripped> {
        while !bytes.is_empty() {
            if self.skip > 0 {
                let n = self.skip.min(bytes.len());
                self.skip -= n;
                bytes = &bytes[n..];
                continue;
            }
            let n = (9 - self.head_len).min(bytes.len());
            self.head[self.head_len..self.head_len + n].copy_from_slice(&bytes[..n]);
            self.head_len += n;
            bytes = &bytes[n..];
            if self.head_len < 9 {
                break;
            }
            self.head_len = 0;
            let Some(h) = frame::Head::parse(&self.head) else {
                break;
            };
            self.skip = h.len;
            self.frame(h)?;
        }
        Ok(())
    }

    fn frame(&mut self, h: frame::Head) -> Result<(), Tripped> {
        match h.kind {
            frame::HEADERS | frame::PUSH_PROMISE => {
                self.block = (h.flags & frame::END_HEADERS == 0).then_some(h.len);
            }
            frame::CONTINUATION => {
                if let Some(b) = &mut self.block {
                    *b += h.len;
                    if *b > MAX_HEADER_BLOCK {
                        return Err(Tripped::HeaderBlock);
                    }
                    if h.flags & frame::END_HEADERS != 0 {
                        self.block = None;
                    }
                }
            }
            frame::SETTINGS if h.flags & frame::ACK == 0 && !self.settings.allow(Instant::now()) => {
                return Err(Tripped::SettingsFlood);
            }
            _ => {}
        }
        Ok(())
    }
}

impl<S: AsyncRead + Unpin> AsyncRead for Guarded<S> {
    fn poll_read(self: Pin<&mut Self>, cx: &mut Context<'_>, buf: &mut ReadBuf<'_>) -> Poll<io::Result<()>> {
        let this = self.get_mut();
        if let Some(t) = this.tripwire.get() {
            return Poll::Ready(Err(refused(t)));
        }
        let before = buf.filled().len();
        match Pin::new(&mut this.inner).poll_read(cx, buf) {
            Poll::Ready(Ok(())) => {
                let read = &buf.filled()[before..];
                if !this.heard {
                    // The server's first bytes say whether it speaks HTTP/2 at all: none before
                    // it closed, or an HTTP/1.1 status line, are what a server without h2c does
                    // with the preface; the report names that rather than a closed connection or
                    // a frame of 4.7 MB.
                    let first = if read.is_empty() {
                        Some(Tripped::Unframed)
                    } else {
                        read.starts_with(b"HTTP/1.").then_some(Tripped::Http1Answer)
                    };
                    this.heard = !read.is_empty();
                    if let Some(t) = first {
                        this.tripwire.set(t);
                        buf.set_filled(before);
                        return Poll::Ready(Err(refused(t)));
                    }
                }
                if let Err(t) = this.scan(&buf.filled()[before..]) {
                    this.tripwire.set(t);
                    // The server's frames from this read are not handed on: the connection
                    // ends here.
                    buf.set_filled(before);
                    return Poll::Ready(Err(refused(t)));
                }
                Poll::Ready(Ok(()))
            }
            other => other,
        }
    }
}

fn refused(t: Tripped) -> io::Error {
    let what = match t {
        Tripped::HeaderBlock => HEADER_BLOCK_WHAT,
        Tripped::SettingsFlood => SETTINGS_FLOOD_WHAT,
        Tripped::Http1Answer => HTTP1_ANSWER_WHAT,
        Tripped::Unframed => return io::ErrorKind::UnexpectedEof.into(),
    };
    io::Error::new(io::ErrorKind::InvalidData, what)
}

impl<S: AsyncWrite + Unpin> AsyncWrite for Guarded<S> {
    fn poll_write(self: Pin<&mut Self>, cx: &mut Context<'_>, buf: &[u8]) -> Poll<io::Result<usize>> {
        Pin::new(&mut self.get_mut().inner).poll_write(cx, buf)
    }

    fn poll_write_vectored(
        self: Pin<&mut Self>,
        cx: &mut Context<'_>,
        bufs: &[io::IoSlice<'_>],
    ) -> Poll<io::Result<usize>> {
        Pin::new(&mut self.get_mut().inner).poll_write_vectored(cx, bufs)
    }

    fn is_write_vectored(&self) -> bool {
        self.inner.is_write_vectored()
    }

    fn poll_flush(self: Pin<&mut Self>, cx: &mut Context<'_>) -> Poll<io::Result<()>> {
        Pin::new(&mut self.get_mut().inner).poll_flush(cx)
    }

    fn poll_shutdown(self: Pin<&mut Self>, cx: &mut Context<'_>) -> Poll<io::Result<()>> {
        Pin::new(&mut self.get_mut().inner).poll_shutdown(cx)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn head(len: usize, kind: u8, flags: u8, stream: u32) -> Vec<u8> {
        let mut v = (len as u32).to_be_bytes()[1..].to_vec();
        v.extend([kind, flags]);
        v.extend(stream.to_be_bytes());
        v
    }

    #[test]
    fn header_blocks_are_measured_across_continuations_split_anywhere() {
        let (mut g, _) = Guarded::new(());
        let mut wire = head(16_000, frame::HEADERS, 0, 1);
        wire.extend(vec![0; 16_000]);
        for _ in 0..15 {
            wire.extend(head(16_000, frame::CONTINUATION, 0, 1));
            wire.extend(vec![0; 16_000]);
        }
        // 256,000 bytes so far: within the limit, whichever way the reads cut the stream.
        for chunk in wire.chunks(7) {
            assert_eq!(g.scan(chunk), Ok(()));
        }
        let mut more = head(10_000, frame::CONTINUATION, 0, 1);
        more.extend(vec![0; 10_000]);
        assert_eq!(g.scan(&more), Err(Tripped::HeaderBlock));
    }

    #[test]
    fn settings_past_the_cap_in_a_second_trip_and_acks_do_not_count() {
        let (mut g, _) = Guarded::new(());
        let mut wire = Vec::new();
        for _ in 0..1000 {
            wire.extend(head(0, frame::SETTINGS, frame::ACK, 0));
        }
        for _ in 0..MAX_SETTINGS_PER_SEC {
            wire.extend(head(6, frame::SETTINGS, 0, 0));
            wire.extend([0, 3, 0, 0, 0, 100]);
        }
        assert_eq!(g.scan(&wire), Ok(()));
        assert_eq!(g.scan(&head(0, frame::SETTINGS, 0, 0)), Err(Tripped::SettingsFlood));

        let mut r = SettingsRate::default();
        let t = Instant::now();
        assert!((0..MAX_SETTINGS_PER_SEC).all(|_| r.allow(t)));
        assert!(!r.allow(t + Duration::from_millis(999)));
        assert!(r.allow(t + Duration::from_secs(1)), "a new second starts a new count");
    }
}
