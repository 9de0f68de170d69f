//! crest's own HTTP/1.1 client connection, for the hot path.
//!
//! Measured against hyper's low-level client (bench/README.md), this runs each exchange inside
//! the virtual user's own task: the request is written from bytes prepared once, the response
//! head is parsed in place with `httparse`, and the body is framed (length, chunked, or until
//! close) and discarded without copying. hyper drives each connection from a second task and
//! hands requests over a channel, which cost about a fifth of crest's throughput per CPU-second.
//!
//! It is a client for load testing, not a general one: no pipelining, no upgrades, no
//! decompression. Bodies are counted, not kept.

use crate::exchange::{Opened, Progress, Response};
use crate::io::Stream;
use std::future::Future;
use std::io;
use std::time::Instant;
use tokio::io::{AsyncReadExt, AsyncWriteExt};

/// Read buffer; grown for large response heads.
const BUF: usize = 16 * 1024;
/// Most spare read buffers kept per thread.
const SPARE_MAX: usize = 64;

thread_local! {
    /// Read buffers not in use. A connection holds one only while response bytes are in hand:
    /// it gives it back before waiting for the socket and when an exchange ends, so 10,000
    /// connections waiting on their servers hold none (wrk, likewise, reads into one buffer per
    /// thread). A buffer per connection cost 16 KiB of address space and at least a touched
    /// page of resident memory each: most of crest's 119 MiB at 10,000 connections.
    static SPARE: std::cell::RefCell<Vec<Box<[u8]>>> = const { std::cell::RefCell::new(Vec::new()) };
}

fn take_buf() -> Box<[u8]> {
    SPARE
        .with(|s| s.borrow_mut().pop())
        .unwrap_or_else(|| vec![0; BUF].into_boxed_slice())
}

/// Keeps `buf` for the next reader on this thread; buffers grown for a large head are freed.
fn give_buf(buf: Box<[u8]>) {
    if buf.len() == BUF {
        SPARE.with(|s| {
            let mut s = s.borrow_mut();
            if s.len() < SPARE_MAX {
                s.push(buf);
            }
        });
    }
}
/// A response head larger than this is refused: a limit of crest's, reported as one
/// ([`H1Error::Limit`]), not as the server's error.
const MAX_HEAD: usize = 256 * 1024;
/// Most headers parsed in one response.
const MAX_HEADERS: usize = 100;

/// Why an exchange failed.
#[derive(Debug)]
pub(crate) enum H1Error {
    /// Reading or writing failed.
    Io(io::Error),
    /// The peer closed the connection before the response was complete.
    Closed,
    /// The response was not valid HTTP/1.x.
    Parse(&'static str),
    /// The response went past a limit of crest's own; it may be valid HTTP.
    Limit(&'static str),
}

impl std::fmt::Display for H1Error {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        match self {
            H1Error::Io(e) => write!(f, "{e}"),
            H1Error::Closed => f.write_str("connection closed before the response was complete"),
            H1Error::Parse(what) => write!(f, "invalid response: {what}"),
            H1Error::Limit(what) => write!(f, "crest refused the response: {what}"),
        }
    }
}

impl From<io::Error> for H1Error {
    fn from(e: io::Error) -> Self {
        H1Error::Io(e)
    }
}

/// How the response body is delimited.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
enum Framing {
    None,
    Length(u64),
    Chunked,
    UntilClose,
}

/// One HTTP/1.1 connection.
pub(crate) struct Conn {
    stream: Stream,
    /// Empty while no response bytes are in hand (see [`SPARE`]).
    /// A slice rather than a `Vec`: 8 bytes less in every user's task (issue 35).
    buf: Box<[u8]>,
    /// Unconsumed bytes are `buf[start..end]` ([`Conn::pending`]). 32 bits, as the buffer
    /// never outgrows [`MAX_HEAD`] and the connection is in every user's task (issue 35).
    start: u32,
    end: u32,
    reusable: bool,
    /// Exchanges completed on this connection.
    pub uses: u32,
    /// How opening it went, when it was opened ahead of its first exchange
    /// ([`crate::Endpoint::open_ahead`]): that exchange reports it as its own connect. Boxed:
    /// only the open model opens ahead, and every user's task holds its connection (issue 35).
    pub ahead: Option<Box<Opened>>,
}

// Its futures are blocks rather than async fns: see `Conn::exchange`.
#[allow(clippy::manual_async_fn)]
impl Conn {
    pub fn new(stream: Stream) -> Self {
        Conn {
            stream,
            buf: Box::default(),
            start: 0,
            end: 0,
            reusable: true,
            uses: 0,
            ahead: None,
        }
    }

    /// False once the server asked to close, or the body ran to the end of the connection.
    pub fn reusable(&self) -> bool {
        self.reusable
    }

    /// Whether the server closed or reset this connection while it sat idle, as the runtime
    /// last saw the socket (no system call). A request is only ever sent again on another
    /// connection when this says so before any of its bytes were written: after that, the
    /// server may have read it, and a second copy would be a request the user never asked
    /// for. A close that arrives after this check fails the request as `closed`.
    pub fn closed_while_idle(&self) -> bool {
        let tcp = match &self.stream {
            Stream::Plain(tcp) => tcp,
            Stream::Tls(tls) => tls.get_ref().0,
        };
        let ready = std::pin::pin!(tcp.ready(tokio::io::Interest::READABLE));
        let mut cx = std::task::Context::from_waker(std::task::Waker::noop());
        match std::future::Future::poll(ready, &mut cx) {
            // The closed state is kept once seen; a stale readable one is not a close.
            std::task::Poll::Ready(Ok(r)) => r.is_read_closed(),
            std::task::Poll::Ready(Err(_)) => true,
            std::task::Poll::Pending => false,
        }
    }

    /// Writes `request` and reads the whole response. Its head and body are kept in `keep` when
    /// given, and otherwise discarded as they are read.
    ///
    /// This and the reads under it return blocks rather than being async fns: an async fn keeps
    /// a second copy of each argument it uses after an await, and these futures sit in every
    /// user's task while it waits on its response, so at 10,000 users their size is memory
    /// (issue 35).
    pub fn exchange<'a>(
        &'a mut self,
        request: &'a [u8],
        head_request: bool,
        p: &'a mut Progress,
        mut keep: Option<&'a mut Response>,
    ) -> impl Future<Output = Result<u16, H1Error>> + 'a {
        async move {
            // Counted as the socket takes them, so that a failed write says whether any byte left:
            // a request of which none did may go out again on another connection.
            let mut rest = request;
            while !rest.is_empty() {
                let n = self.stream.write(rest).await?;
                if n == 0 {
                    return Err(io::Error::from(io::ErrorKind::WriteZero).into());
                }
                p.wrote(n as u64);
                rest = &rest[n..];
            }
            self.stream.flush().await?;
            let (status, framing) = loop {
                if let Some(k) = keep.as_deref_mut() {
                    *k = Response::default();
                }
                let head = self.read_head(head_request, p, keep.as_deref_mut()).await?;
                // After 101 Switching Protocols the connection speaks another protocol: never reused.
                if head.close || head.status == 101 {
                    self.reusable = false;
                }
                // Interim responses (100 Continue, 103 Early Hints) precede the real one.
                if (100..200).contains(&head.status) && head.status != 101 {
                    continue;
                }
                break (head.status, head.framing);
            };
            p.status = Some(status);
            if let Some(k) = keep.as_deref_mut() {
                k.status = status;
            }
            match framing {
                Framing::None => {}
                Framing::Length(n) => self.skip(n, p, keep).await?,
                Framing::Chunked => self.skip_chunked(p, keep).await?,
                Framing::UntilClose => {
                    self.reusable = false;
                    loop {
                        if let Some(k) = keep.as_deref_mut() {
                            k.keep(self.pending());
                        }
                        self.start = self.end;
                        if self.fill(p).await? == 0 {
                            break;
                        }
                    }
                }
            }
            if self.start < self.end {
                // More than the response framed: the server broke the framing, and whatever
                // follows on this connection could be read as the next request's answer.
                self.reusable = false;
                self.release();
                return Err(H1Error::Parse("bytes after the end of the response"));
            }
            self.uses += 1;
            self.release();
            self.drained();
            Ok(status)
        }
    }

    /// Marks the socket as read to the end once a whole response is in, which it is: nothing
    /// more comes before the next request, so the runtime's readiness flag left by the last
    /// read is stale, and would cost the next response a read that finds nothing (one system
    /// call per request). A close is kept: the runtime never clears it.
    fn drained(&self) {
        if let Stream::Plain(tcp) = &self.stream {
            let _ = tcp.try_io(tokio::io::Interest::READABLE, || {
                Err::<(), _>(io::Error::from(io::ErrorKind::WouldBlock))
            });
        }
    }

    /// The response bytes read and not yet consumed.
    fn pending(&self) -> &[u8] {
        &self.buf[self.start as usize..self.end as usize]
    }

    /// Gives the read buffer back.
    fn release(&mut self) {
        self.start = 0;
        self.end = 0;
        if !self.buf.is_empty() {
            give_buf(std::mem::take(&mut self.buf));
        }
    }

    /// Reads more bytes into the buffer; returns how many (0 at end of stream).
    fn fill<'a>(&'a mut self, p: &'a mut Progress) -> impl Future<Output = Result<usize, H1Error>> + 'a {
        async move {
            if self.start == self.end {
                self.release();
                if let Stream::Plain(tcp) = &self.stream {
                    // Wait without a buffer; take one only once there is something to read.
                    loop {
                        // Polled rather than awaited through `readable()`, whose future carries a
                        // waiter node of ~150 bytes: this wait is where 10,000 idle users sit, so
                        // its size is in every user's task. One task reads a connection, so the
                        // socket's single reader slot is enough.
                        std::future::poll_fn(|cx| tcp.poll_read_ready(cx)).await?;
                        let mut buf = take_buf();
                        match tcp.try_read(&mut buf) {
                            Ok(n) => {
                                self.buf = buf;
                                self.got(n, p);
                                return Ok(n);
                            }
                            Err(e) if e.kind() == io::ErrorKind::WouldBlock => give_buf(buf),
                            Err(e) => {
                                give_buf(buf);
                                return Err(e.into());
                            }
                        }
                    }
                }
                self.buf = take_buf();
            } else if self.end as usize == self.buf.len() {
                if self.start > 0 {
                    self.buf.copy_within(self.start as usize..self.end as usize, 0);
                    self.end -= self.start;
                    self.start = 0;
                } else if self.buf.len() < MAX_HEAD {
                    let mut grown = vec![0; self.buf.len() * 2].into_boxed_slice();
                    grown[..self.buf.len()].copy_from_slice(&self.buf);
                    self.buf = grown;
                } else {
                    return Err(H1Error::Limit("response head over crest's 256 KiB limit"));
                }
            }
            let n = self.stream.read(&mut self.buf[self.end as usize..]).await?;
            self.got(n, p);
            Ok(n)
        }
    }

    fn got(&mut self, n: usize, p: &mut Progress) {
        if n > 0 {
            if p.first_byte.is_none() {
                p.first_byte = Some(Instant::now());
            }
            p.read += n as u64;
            self.end += n as u32;
        }
    }

    fn fill_or_closed<'a>(&'a mut self, p: &'a mut Progress) -> impl Future<Output = Result<(), H1Error>> + 'a {
        async move {
            match self.fill(p).await? {
                0 => Err(H1Error::Closed),
                _ => Ok(()),
            }
        }
    }

    /// Reads one response head; returns its status, body framing and whether the connection
    /// must close afterwards.
    fn read_head<'a>(
        &'a mut self,
        head_request: bool,
        p: &'a mut Progress,
        mut keep: Option<&'a mut Response>,
    ) -> impl Future<Output = Result<Head, H1Error>> + 'a {
        async move {
            loop {
                if let Some(head) = parse_head(self.pending(), head_request, keep.as_deref_mut())? {
                    self.start += head.len as u32;
                    return Ok(head);
                }
                self.fill_or_closed(p).await?;
            }
        }
    }

    /// Consumes `n` body bytes, keeping them in `keep` if given.
    fn skip<'a>(
        &'a mut self,
        mut n: u64,
        p: &'a mut Progress,
        mut keep: Option<&'a mut Response>,
    ) -> impl Future<Output = Result<(), H1Error>> + 'a {
        async move {
            loop {
                let avail = (self.end - self.start) as u64;
                let take = avail.min(n);
                if let Some(k) = keep.as_deref_mut() {
                    k.keep(&self.pending()[..take as usize]);
                }
                self.start += take as u32;
                n -= take;
                if n == 0 {
                    return Ok(());
                }
                self.fill_or_closed(p).await?;
            }
        }
    }

    /// Reads up to and including the next CRLF; returns the line's range in the buffer.
    fn line<'a>(&'a mut self, p: &'a mut Progress) -> impl Future<Output = Result<(usize, usize), H1Error>> + 'a {
        async move {
            loop {
                if let Some(i) = self.pending().windows(2).position(|w| w == b"\r\n") {
                    let line = (self.start as usize, self.start as usize + i);
                    self.start += i as u32 + 2;
                    return Ok(line);
                }
                if self.end - self.start > 4096 {
                    return Err(H1Error::Parse("chunk line too long"));
                }
                self.fill_or_closed(p).await?;
            }
        }
    }

    fn skip_chunked<'a>(
        &'a mut self,
        p: &'a mut Progress,
        mut keep: Option<&'a mut Response>,
    ) -> impl Future<Output = Result<(), H1Error>> + 'a {
        async move {
            loop {
                let (a, b) = self.line(p).await?;
                let size_text = self.buf[a..b].split(|&c| c == b';').next().unwrap_or(&[]);
                let size_text = std::str::from_utf8(size_text).map_err(|_| H1Error::Parse("bad chunk size"))?;
                let size = u64::from_str_radix(size_text.trim(), 16).map_err(|_| H1Error::Parse("bad chunk size"))?;
                if size == 0 {
                    // Trailers, then the empty line that ends the message.
                    loop {
                        let (a, b) = self.line(p).await?;
                        if a == b {
                            return Ok(());
                        }
                    }
                }
                self.skip(size, p, keep.as_deref_mut()).await?;
                let (a, b) = self.line(p).await?;
                if a != b {
                    return Err(H1Error::Parse("chunk not followed by CRLF"));
                }
            }
        }
    }
}

/// A parsed response head.
struct Head {
    /// Length of the head in bytes.
    len: usize,
    status: u16,
    framing: Framing,
    /// The connection must close after this response.
    close: bool,
}

/// Parses a response head at the start of `buf`; `None` if it is not complete yet.
///
/// Synchronous on purpose: the header array lives only for this call, so it never becomes part
/// of an exchange's future (which would make every future several kilobytes, moved per request).
fn parse_head(buf: &[u8], head_request: bool, keep: Option<&mut Response>) -> Result<Option<Head>, H1Error> {
    let mut headers = [const { std::mem::MaybeUninit::<httparse::Header<'_>>::uninit() }; MAX_HEADERS];
    let mut resp = httparse::Response::new(&mut []);
    let len = match httparse::ParserConfig::default().parse_response_with_uninit_headers(&mut resp, buf, &mut headers) {
        Ok(httparse::Status::Complete(len)) => len,
        Ok(httparse::Status::Partial) => return Ok(None),
        Err(httparse::Error::TooManyHeaders) => {
            return Err(H1Error::Limit("more than 100 response headers, crest's limit"))
        }
        Err(_) => return Err(H1Error::Parse("malformed response head")),
    };
    let status = resp.code.ok_or(H1Error::Parse("no status code"))?;
    let http10 = resp.version == Some(0);
    let (mut length, mut chunked, mut close, mut keep_alive) = (None, false, http10, false);
    for h in resp.headers.iter() {
        // Compare lengths first: most headers are none of these three.
        match h.name.len() {
            14 if h.name.eq_ignore_ascii_case("content-length") => {
                let v = std::str::from_utf8(h.value).map_err(|_| H1Error::Parse("bad content-length"))?;
                let n: u64 = v.trim().parse().map_err(|_| H1Error::Parse("bad content-length"))?;
                if length.is_some_and(|l| l != n) {
                    return Err(H1Error::Parse("conflicting content-length headers"));
                }
                length = Some(n);
            }
            17 if h.name.eq_ignore_ascii_case("transfer-encoding") => chunked = has_token(h.value, b"chunked"),
            10 if h.name.eq_ignore_ascii_case("connection") => {
                close |= has_token(h.value, b"close");
                keep_alive |= has_token(h.value, b"keep-alive");
            }
            _ => {}
        }
    }
    if http10 && keep_alive {
        close = false;
    }
    if let Some(k) = keep {
        k.headers = resp
            .headers
            .iter()
            .map(|h| (h.name.to_string(), String::from_utf8_lossy(h.value).into_owned()))
            .collect();
    }
    let framing = if head_request || status == 204 || status == 304 || (100..200).contains(&status) {
        Framing::None
    } else if chunked {
        Framing::Chunked
    } else if let Some(n) = length {
        Framing::Length(n)
    } else {
        Framing::UntilClose
    };
    Ok(Some(Head {
        len,
        status,
        framing,
        close,
    }))
}

fn has_token(value: &[u8], token: &[u8]) -> bool {
    value
        .split(|&c| c == b',')
        .any(|t| t.trim_ascii().eq_ignore_ascii_case(token))
}

#[cfg(test)]
mod tests {
    use super::*;
    use tokio::io::AsyncWriteExt;
    use tokio::net::{TcpListener, TcpStream};

    /// Serves `responses` (raw bytes, one per request read) on a loopback socket.
    async fn conn_to(responses: Vec<&'static [u8]>, close_after: bool) -> Conn {
        let listener = TcpListener::bind("127.0.0.1:0").await.unwrap();
        let addr = listener.local_addr().unwrap();
        tokio::spawn(async move {
            let (mut s, _) = listener.accept().await.unwrap();
            let mut buf = [0u8; 4096];
            for r in responses {
                let _ = s.read(&mut buf).await;
                // Split writes to exercise partial reads.
                let (a, b) = r.split_at(r.len() / 2);
                s.write_all(a).await.unwrap();
                s.flush().await.unwrap();
                tokio::time::sleep(std::time::Duration::from_millis(5)).await;
                s.write_all(b).await.unwrap();
            }
            if close_after {
                drop(s);
            } else {
                tokio::time::sleep(std::time::Duration::from_secs(5)).await;
            }
        });
        Conn::new(Stream::Plain(TcpStream::connect(addr).await.unwrap()))
    }

    const REQ: &[u8] = b"GET / HTTP/1.1\r\nHost: x\r\n\r\n";

    #[tokio::test]
    async fn length_chunked_and_interim_responses_on_one_connection() {
        let mut c = conn_to(
            vec![
                b"HTTP/1.1 200 OK\r\nContent-Length: 5\r\n\r\nhello",
                b"HTTP/1.1 201 Created\r\nTransfer-Encoding: chunked\r\n\r\n5;ext=1\r\nhello\r\n6\r\n world\r\n0\r\nX-Trailer: 1\r\n\r\n",
                b"HTTP/1.1 100 Continue\r\n\r\nHTTP/1.1 204 No Content\r\n\r\n",
                b"HTTP/1.1 503 Busy\r\ncontent-length: 0\r\nConnection: close\r\n\r\n",
            ],
            false,
        )
        .await;
        let mut p = Progress::default();
        assert_eq!(c.exchange(REQ, false, &mut p, None).await.unwrap(), 200);
        assert_eq!(p.read, 43);
        assert_eq!(p.written, REQ.len() as u64);
        assert!(c.reusable());
        let mut p = Progress::default();
        assert_eq!(c.exchange(REQ, false, &mut p, None).await.unwrap(), 201);
        assert!(c.reusable());
        assert_eq!(
            c.exchange(REQ, false, &mut Progress::default(), None).await.unwrap(),
            204
        );
        assert_eq!(
            c.exchange(REQ, false, &mut Progress::default(), None).await.unwrap(),
            503
        );
        assert!(!c.reusable(), "Connection: close is honoured");
        assert_eq!(c.uses, 4);
    }

    #[tokio::test]
    async fn kept_responses_have_headers_and_the_decoded_body() {
        let mut c = conn_to(
            vec![
                b"HTTP/1.1 200 OK\r\nX-Id: 42\r\nContent-Length: 10\r\n\r\n{\"id\": 42}",
                b"HTTP/1.1 200 OK\r\nTransfer-Encoding: chunked\r\n\r\n3\r\nabc\r\n2\r\nde\r\n0\r\n\r\n",
            ],
            false,
        )
        .await;
        let mut r = Response::default();
        c.exchange(REQ, false, &mut Progress::default(), Some(&mut r))
            .await
            .unwrap();
        assert_eq!(r.header("x-id"), Some("42"));
        assert_eq!(r.body, b"{\"id\": 42}");
        c.exchange(REQ, false, &mut Progress::default(), Some(&mut r))
            .await
            .unwrap();
        assert_eq!(r.body, b"abcde", "chunk framing is removed");
        assert_eq!(r.header("x-id"), None, "a kept response starts afresh");
    }

    #[tokio::test]
    async fn body_until_close_and_http10() {
        let mut c = conn_to(vec![b"HTTP/1.0 200 OK\r\n\r\nall of this is the body"], true).await;
        let mut p = Progress::default();
        assert_eq!(c.exchange(REQ, false, &mut p, None).await.unwrap(), 200);
        assert!(!c.reusable());
        assert_eq!(p.read, 42);
    }

    #[tokio::test]
    async fn a_short_body_is_closed_and_garbage_is_a_parse_error() {
        let mut c = conn_to(vec![b"HTTP/1.1 200 OK\r\nContent-Length: 100\r\n\r\nshort"], true).await;
        let mut p = Progress::default();
        assert!(matches!(
            c.exchange(REQ, false, &mut p, None).await,
            Err(H1Error::Closed)
        ));
        assert_eq!(p.status, Some(200), "the head arrived");

        let mut c = conn_to(vec![b"SSH-2.0-OpenSSH_9.2\r\n\r\n"], true).await;
        assert!(matches!(
            c.exchange(REQ, false, &mut Progress::default(), None).await,
            Err(H1Error::Parse(_))
        ));

        let mut c = conn_to(
            vec![b"HTTP/1.1 200 OK\r\nTransfer-Encoding: chunked\r\n\r\nzz\r\n"],
            true,
        )
        .await;
        assert!(matches!(
            c.exchange(REQ, false, &mut Progress::default(), None).await,
            Err(H1Error::Parse(_))
        ));
    }

    #[tokio::test]
    async fn bytes_after_the_framed_body_are_a_protocol_error() {
        let mut c = conn_to(
            vec![b"HTTP/1.1 200 OK\r\nContent-Length: 2\r\n\r\nokHTTP/1.1 200 OK\r\n\r\n"],
            false,
        )
        .await;
        let mut p = Progress::default();
        assert!(matches!(
            c.exchange(REQ, false, &mut p, None).await,
            Err(H1Error::Parse("bytes after the end of the response"))
        ));
        assert!(!c.reusable(), "what follows would be read as the next answer");
    }

    #[tokio::test]
    async fn head_requests_have_no_body_whatever_the_length_says() {
        let mut c = conn_to(vec![b"HTTP/1.1 200 OK\r\nContent-Length: 1000\r\n\r\n"], false).await;
        assert_eq!(
            c.exchange(
                b"HEAD / HTTP/1.1\r\nHost: x\r\n\r\n",
                true,
                &mut Progress::default(),
                None
            )
            .await
            .unwrap(),
            200
        );
        assert!(c.reusable());
    }
}
