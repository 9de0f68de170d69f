//! A transport wrapper that counts bytes and notes when the response's first byte arrived.

use std::cell::Cell;
use std::io;
use std::pin::Pin;
use std::rc::Rc;
use std::task::{Context, Poll};
use std::time::Instant;
use tokio::io::{AsyncRead, AsyncWrite, ReadBuf};
use tokio::net::TcpStream;
use tokio_rustls::client::TlsStream;

/// Byte counts and first-byte time for the request in progress on one connection.
#[derive(Debug, Default)]
pub(crate) struct Counters {
    pub read: Cell<u64>,
    pub written: Cell<u64>,
    pub first_read: Cell<Option<Instant>>,
}

impl Counters {
    /// Starts counting for a new request.
    pub fn reset(&self) {
        self.read.set(0);
        self.written.set(0);
        self.first_read.set(None);
    }
}

/// Plain TCP or TLS over TCP.
pub(crate) enum Stream {
    Plain(TcpStream),
    Tls(Box<TlsStream<TcpStream>>),
}

/// Counts what passes through. Counting above TLS gives HTTP bytes, not TLS record overhead.
pub(crate) struct Counting {
    pub inner: Stream,
    pub counters: Rc<Counters>,
}

impl AsyncRead for Counting {
    fn poll_read(self: Pin<&mut Self>, cx: &mut Context<'_>, buf: &mut ReadBuf<'_>) -> Poll<io::Result<()>> {
        let this = self.get_mut();
        let before = buf.filled().len();
        let res = match &mut this.inner {
            Stream::Plain(s) => Pin::new(s).poll_read(cx, buf),
            Stream::Tls(s) => Pin::new(s.as_mut()).poll_read(cx, buf),
        };
        let n = (buf.filled().len() - before) as u64;
        if n > 0 {
            let c = &this.counters;
            if c.first_read.get().is_none() {
                c.first_read.set(Some(Instant::now()));
            }
            c.read.set(c.read.get() + n);
        }
        res
    }
}

impl AsyncWrite for Counting {
    fn poll_write(self: Pin<&mut Self>, cx: &mut Context<'_>, buf: &[u8]) -> Poll<io::Result<usize>> {
        let this = self.get_mut();
        let res = match &mut this.inner {
            Stream::Plain(s) => Pin::new(s).poll_write(cx, buf),
            Stream::Tls(s) => Pin::new(s.as_mut()).poll_write(cx, buf),
        };
        if let Poll::Ready(Ok(n)) = res {
            this.counters.written.set(this.counters.written.get() + n as u64);
        }
        res
    }

    fn poll_write_vectored(self: Pin<&mut Self>, cx: &mut Context<'_>, bufs: &[io::IoSlice<'_>]) -> Poll<io::Result<usize>> {
        let this = self.get_mut();
        let res = match &mut this.inner {
            Stream::Plain(s) => Pin::new(s).poll_write_vectored(cx, bufs),
            Stream::Tls(s) => Pin::new(s.as_mut()).poll_write_vectored(cx, bufs),
        };
        if let Poll::Ready(Ok(n)) = res {
            this.counters.written.set(this.counters.written.get() + n as u64);
        }
        res
    }

    fn is_write_vectored(&self) -> bool {
        match &self.inner {
            Stream::Plain(s) => s.is_write_vectored(),
            Stream::Tls(s) => s.is_write_vectored(),
        }
    }

    fn poll_flush(self: Pin<&mut Self>, cx: &mut Context<'_>) -> Poll<io::Result<()>> {
        match &mut self.get_mut().inner {
            Stream::Plain(s) => Pin::new(s).poll_flush(cx),
            Stream::Tls(s) => Pin::new(s.as_mut()).poll_flush(cx),
        }
    }

    fn poll_shutdown(self: Pin<&mut Self>, cx: &mut Context<'_>) -> Poll<io::Result<()>> {
        match &mut self.get_mut().inner {
            Stream::Plain(s) => Pin::new(s).poll_shutdown(cx),
            Stream::Tls(s) => Pin::new(s.as_mut()).poll_shutdown(cx),
        }
    }
}
