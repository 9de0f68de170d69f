//! One measured HTTP exchange on a user's session.

use crate::endpoint::Endpoint;
use crate::exchange::{Opened, Progress, Response, Took};
use crate::h1::{self, H1Error};
use crate::http2::{self, H2Fail};
use crate::io::Stream;
use crate::{Detail, Failure};
use crest_model::protocol::HttpVersion;
use crest_model::{NameId, Outcome, Sample};
use std::fmt;
use std::future::Future;
use std::pin::Pin;
use std::sync::atomic::{AtomicU64, Ordering};
use std::task::Poll;
use std::time::{Duration, Instant};
use tokio::time::{timeout_at, Sleep};

/// One user's connection to one endpoint (its own for HTTP/1.1, a seat on a shared one for
/// HTTP/2), and its request timer.
#[derive(Default)]
pub struct Session {
    conn: Option<h1::Conn>,
    /// Armed at or before the current request's deadline; see [`Endpoint::call`].
    timer: Option<Pin<Box<Sleep>>>,
    /// What most users never need, boxed together: at 10,000 users a session's size is memory
    /// (issue 35).
    pub(crate) rare: Option<Box<Rare>>,
}

/// A session's HTTP/2 seat and its sessions with other servers.
#[derive(Default)]
pub(crate) struct Rare {
    pub h2: http2::H2Session,
    /// The user's sessions with servers that redirects led to.
    pub others: OtherSessions,
}

impl fmt::Debug for Session {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("Session")
            .field(
                "connected",
                &(self.conn.is_some() || self.rare.as_ref().is_some_and(|r| r.h2.seat.is_some())),
            )
            .finish()
    }
}

/// A user's sessions with the servers redirects led to, by endpoint.
pub(crate) type OtherSessions = Vec<(std::sync::Arc<Endpoint>, Session)>;

/// What to send, and how ([`CallOptions`], which it dereferences to).
#[derive(Clone, Copy, Debug)]
pub struct Call<'a> {
    /// The whole request, from [`crate::build_request`].
    pub request: &'a [u8],
    /// Borrowed, so that a workload sending the same request every time lends its own: each
    /// user's task holds the call while it waits on its response, and at 10,000 users a copy
    /// each was 320 KB (issue 35).
    pub how: &'a CallOptions,
}

impl std::ops::Deref for Call<'_> {
    type Target = CallOptions;

    fn deref(&self) -> &CallOptions {
        self.how
    }
}

/// How a [`Call`] is sent.
#[derive(Clone, Copy, Debug)]
pub struct CallOptions {
    /// A HEAD request, whose response has no body.
    pub head: bool,
    /// Limit from the start of the call to the end of the response.
    pub timeout: Duration,
    /// Limit on opening a connection.
    pub connect_timeout: Duration,
    /// Keep the connection for the next call.
    pub keepalive: bool,
}

/// What one call measured.
#[derive(Debug)]
pub struct Exchange {
    /// When the call started.
    pub started: Instant,
    /// When it ended.
    pub ended: Instant,
    /// Time to open a connection, when this call opened one.
    pub connect: Option<Duration>,
    /// Time to resolve the host, when this call's new connection resolved it.
    pub dns: Option<Duration>,
    /// When the first response byte arrived.
    pub first_byte: Option<Instant>,
    /// Bytes written.
    pub bytes_sent: u64,
    /// Bytes read.
    pub bytes_received: u64,
    /// The status, when the whole response arrived. A head followed by a reset is no 200 in
    /// the status table: the response failed.
    pub status: Option<u16>,
    /// How the call ended; an HTTP status of 400 or more is `Outcome::Status`.
    pub outcome: Outcome,
    /// Redirects followed on the way ([`Endpoint::fetch`]).
    pub redirects: Vec<crate::Hop>,
    /// The kept body's length after decoding, when it came compressed (`bytes_received`
    /// counts it as it came).
    pub decoded_body: Option<u64>,
    pub(crate) error: Option<Detail>,
}

impl Exchange {
    /// Why the call failed, for an example message; `None` on success.
    pub fn error(&self) -> Option<&dyn fmt::Display> {
        self.error.as_ref().map(|d| d as &dyn fmt::Display)
    }

    pub(crate) fn set_error(&mut self, d: Detail) {
        self.error = Some(d);
    }

    /// The sample for this call, whose latency counts from `intended`.
    pub fn sample(&self, name: NameId, intended: Instant, offset: Duration) -> Sample {
        let intended = intended.min(self.started);
        Sample {
            name,
            segment: 0,
            user: 0,
            iteration: 0,
            intended: offset,
            send_lag: self.started - intended,
            dns: self.dns,
            connect: self.connect,
            ttfb: self.first_byte.map(|f| f.saturating_duration_since(self.started)),
            total: self.ended - intended,
            bytes_sent: self.bytes_sent,
            bytes_received: self.bytes_received,
            messages_sent: 0,
            messages_received: 0,
            status: self.status,
            outcome: self.outcome,
        }
    }
}

/// One call's exchange as the version-specific paths take it: the call and its clock, and
/// what the exchange measures.
/// Holds what it measures rather than references to the caller's: it is in every user's task
/// while the call waits (issue 35).
struct Attempt<'a, 'c> {
    call: &'a Call<'c>,
    /// When the call started, and when its timer ends it.
    limit: &'a Limit,
    /// When the connection being opened began opening, after the call's start; nothing once
    /// it is open.
    opening: Took,
    opened: Opened,
    p: Progress,
    keep: Option<&'a mut Response>,
}

impl Attempt<'_, '_> {
    fn started(&self) -> Instant {
        self.limit.started
    }

    fn deadline(&self) -> Instant {
        self.limit.started + self.call.timeout
    }
}

/// When a call's timer ends it: at its deadline, or earlier while a connection is opened under
/// its connect timeout. The HTTP/1.1 attempt opens its connection under the session's timer
/// rather than one of its own, which every user's task would carry (issue 35), and lowers
/// the limit while it does. Atomic only so that the call stays `Send`: one task reads it.
struct Limit {
    started: Instant,
    /// Nanoseconds after `started`.
    after: AtomicU64,
}

impl Limit {
    fn new(started: Instant, after: Duration) -> Self {
        let limit = Limit {
            started,
            after: AtomicU64::new(0),
        };
        limit.set(after);
        limit
    }

    fn at(&self) -> Instant {
        self.started + Duration::from_nanos(self.after.load(Ordering::Relaxed))
    }

    fn set(&self, after: Duration) {
        let ns = u64::try_from(after.as_nanos()).unwrap_or(u64::MAX);
        self.after.store(ns, Ordering::Relaxed);
    }
}

impl Endpoint {
    /// Sends `call` on `session` (opening a connection if needed) and reads the whole response,
    /// keeping it in `keep` when given. Never fails: failures are outcomes.
    ///
    /// The timeout uses one timer per session that is re-armed only when it fires before the
    /// current request's deadline. A fresh timer per request would be inserted into and removed
    /// from tokio's timer wheel every time, which the profile showed as the largest user-space
    /// cost after parsing. The armed deadline never lies after the real one, so no request can
    /// outlive its timeout.
    pub async fn call(&self, session: &mut Session, call: &Call<'_>, keep: Option<&mut Response>) -> Exchange {
        // Boxed: the request rewritten for a proxy and its call would otherwise sit in every
        // user's task, proxied or not, for as long as it waits on its response. Not a `match`,
        // whose scrutinee (the `None`) would be kept across the unproxied call's await too.
        if let Some(request) = self.for_proxy(call.request) {
            return Box::pin(self.call_as_is(
                session,
                &Call {
                    request: &request,
                    ..*call
                },
                keep,
            ))
            .await;
        }
        self.call_as_is(session, call, keep).await
    }

    /// [`Endpoint::call`] with `call` sent as it is, already in a proxy's form when it goes
    /// through one.
    ///
    /// This and the HTTP/1.1 attempt under it return blocks rather than being async fns, which
    /// keep a second copy of each argument used after an await: these futures are in every
    /// user's task for as long as it waits on its response (issue 35).
    #[allow(clippy::manual_async_fn)]
    fn call_as_is<'a, 'c>(
        &'a self,
        session: &'a mut Session,
        call: &'a Call<'c>,
        keep: Option<&'a mut Response>,
    ) -> impl Future<Output = Exchange> + use<'a, 'c> {
        async move {
            let limit = Limit::new(Instant::now(), call.timeout);
            // Lent to the layers below, not moved: each would keep its own copy in the task.
            let mut a = Attempt {
                call,
                limit: &limit,
                opening: Took::default(),
                opened: Opened::default(),
                p: Progress::default(),
                keep,
            };
            let result = {
                let Session { conn, rare, timer } = &mut *session;
                let timer = timer.get_or_insert_with(|| Box::pin(tokio::time::sleep_until(limit.at().into())));
                let work = self.attempt((conn, rare), &mut a);
                tokio::pin!(work);
                std::future::poll_fn(|cx| {
                    if let Poll::Ready(r) = work.as_mut().poll(cx) {
                        return Poll::Ready(Ok(r));
                    }
                    loop {
                        let limit = limit.at();
                        // A shorter limit than the one armed (a connect's, a step's own
                        // timeout, a redirect chain's remainder) must not wait for the later.
                        if timer.deadline() > limit.into() {
                            timer.as_mut().reset(limit.into());
                        }
                        std::task::ready!(timer.as_mut().poll(cx));
                        if Instant::now() >= limit {
                            return Poll::Ready(Err(limit));
                        }
                        timer.as_mut().reset(limit.into());
                    }
                })
                .await
            };
            let result = result.unwrap_or_else(|limit| Err(self.expired(&mut a, limit)));
            let ended = Instant::now();
            // The timer wakes at the first tick of its wheel (a millisecond) past the deadline,
            // and a response read before it wakes would pass as a success slower than the
            // timeout. The timeout bounds what counts as a success, so what ended past it timed
            // out, however whole its response; its connection is as good as any.
            let late = ended > a.deadline();
            let complete = result.is_ok() && !late;
            let (outcome, error) = match result {
                Ok(status) => {
                    if !call.keepalive || !session.conn.as_ref().is_some_and(h1::Conn::reusable) {
                        session.conn = None;
                    }
                    if !call.keepalive {
                        if let Some(r) = &mut session.rare {
                            r.h2.retire();
                        }
                    }
                    if late {
                        (Outcome::Timeout, Some(Detail::Text("request timed out")))
                    } else if status >= 400 {
                        (Outcome::Status(status), None)
                    } else {
                        (Outcome::Success, None)
                    }
                }
                Err(f) => {
                    // A connection in an unknown state is never reused.
                    session.conn = None;
                    (f.outcome, Some(f.detail))
                }
            };
            let Attempt { opened, p, .. } = a;
            Exchange {
                started: limit.started,
                ended,
                connect: opened.connect.get(),
                dns: opened.dns.get(),
                first_byte: p.first_byte,
                bytes_sent: p.written,
                bytes_received: p.read,
                status: p.status.filter(|_| complete),
                outcome,
                redirects: Vec::new(),
                decoded_body: None,
                error,
            }
        }
    }

    /// One exchange in the version the endpoint speaks.
    #[allow(clippy::manual_async_fn)]
    fn attempt<'a, 'x, 'c>(
        &'a self,
        (conn, rare): (&'a mut Option<h1::Conn>, &'a mut Option<Box<Rare>>),
        a: &'a mut Attempt<'x, 'c>,
    ) -> impl Future<Output = Result<u16, Failure>> + use<'a, 'x, 'c> {
        async move {
            let call = a.call;
            // The HTTP/2 paths are boxed so that the HTTP/1.1 exchange, which every user's task
            // holds for its whole life, stays small: at 10,000 users its size is memory.
            let h2 = match self.version {
                HttpVersion::Http1 => false,
                HttpVersion::Http2 => true,
                HttpVersion::Auto => {
                    Box::pin(self.use_h2(conn, rare, call, a.started(), a.deadline(), &mut a.opened)).await?
                }
            };
            if h2 {
                let http2::H2Session { seat, send, request } = &mut rare.get_or_insert_with(Default::default).h2;
                let req = match request {
                    Some((bytes, translated)) if bytes.as_slice() == call.request => &*translated,
                    _ => {
                        let own = self.pool.as_ref().is_some_and(http2::Pool::own_framing);
                        let translated = http2::translate(call.request, self.https(), own)?;
                        &request.insert((call.request.to_vec(), translated)).1
                    }
                };
                Box::pin(self.attempt_h2(seat, send, req, a)).await
            } else {
                self.attempt_h1(conn, a).await
            }
        }
    }

    /// Whether this call speaks HTTP/2. For `auto` over TLS, the first call opens a connection
    /// and learns the answer from ALPN, leaving that connection to the user for this call.
    async fn use_h2(
        &self,
        conn: &mut Option<h1::Conn>,
        rare: &mut Option<Box<Rare>>,
        call: &Call<'_>,
        started: Instant,
        deadline: Instant,
        opened: &mut Opened,
    ) -> Result<bool, Failure> {
        match self.version {
            HttpVersion::Http1 => Ok(false),
            HttpVersion::Http2 => Ok(true),
            HttpVersion::Auto if !self.https() => Ok(false),
            HttpVersion::Auto => {
                // One user finds out; the others wait for its answer rather than each opening
                // a connection to ask.
                let h2 = self
                    .alpn_h2
                    .get_or_try_init(|| async {
                        let stream = Box::pin(self.open(call, started, deadline, opened)).await?;
                        let h2 = stream.alpn_h2();
                        match (h2, &self.pool) {
                            (true, Some(pool)) => {
                                rare.get_or_insert_with(Default::default).h2.seat =
                                    Some(pool.seat_new(http2::handshake(stream, pool.own_framing()).await?));
                            }
                            _ => *conn = Some(h1::Conn::new(stream)),
                        }
                        Ok::<_, Failure>(h2)
                    })
                    .await?;
                Ok(*h2)
            }
        }
    }

    /// One HTTP/2 exchange on the user's seat, seating it first. A request the connection
    /// could not take is sent once more on another connection: either none of it was written
    /// (the connection was found closed or going away first), or the server's GOAWAY named a
    /// last processed stream below it, which is the protocol's own statement that the server
    /// did not act on it (RFC 9113 section 6.8). No other failure is sent again: a stream that
    /// was written and then lost with its connection is the request's outcome.
    async fn attempt_h2(
        &self,
        seat: &mut Option<http2::Seat>,
        send: &mut Option<http2::Handle>,
        req: &http2::H2Request,
        a: &mut Attempt<'_, '_>,
    ) -> Result<u16, Failure> {
        let Some(pool) = &self.pool else {
            return Err(Failure {
                outcome: Outcome::Other,
                detail: Detail::Text("HTTP/2 is not set up for this endpoint"),
            });
        };
        let mut retried = false;
        loop {
            let conn = match send {
                Some(conn) => conn,
                None => {
                    let slot = seat.get_or_insert_with(|| pool.seat()).0.clone();
                    // Boxed: opening a connection needs a large future, and it happens once
                    // per seat, not per request.
                    match Box::pin(self.open_h2(&slot, a.call, a.started(), a.deadline(), &mut a.opened)).await {
                        Ok(conn) => send.insert(conn),
                        Err(f) => {
                            *seat = None;
                            return Err(f);
                        }
                    }
                }
            };
            let failed = match http2::exchange(conn, req, &mut a.p, a.keep.as_deref_mut()).await {
                Ok(status) => return Ok(status),
                Err(H2Fail::NotSent(_)) if !retried => None,
                Err(H2Fail::NotSent(e) | H2Fail::Sent(e)) => Some(e),
            };
            // A reset ends one stream; anything else ends the connection.
            if failed.as_ref().is_none_or(http2::H2Error::ends_connection) {
                *send = None;
                if let Some(s) = seat.take() {
                    s.retire();
                }
            }
            match failed {
                None => retried = true,
                Some(e) => return Err(Failure::h2(e)),
            }
        }
    }

    /// The connection of `slot`, opened by the first of its users to ask; a handle of the
    /// caller's own on it.
    async fn open_h2(
        &self,
        slot: &http2::Slot,
        call: &Call<'_>,
        started: Instant,
        deadline: Instant,
        opened: &mut Opened,
    ) -> Result<http2::Handle, Failure> {
        let conn = slot
            .conn
            .get_or_try_init(|| async {
                // The handshake is not part of the connect time.
                let mut timing = Opened::default();
                let result = Box::pin(self.open(call, started, deadline, &mut timing)).await;
                opened.dns = timing.dns;
                let own = self.pool.as_ref().is_some_and(http2::Pool::own_framing);
                let send = http2::handshake(result?, own).await?;
                opened.connect = timing.connect;
                Ok::<_, Failure>(send)
            })
            .await?;
        Ok(conn.clone())
    }

    /// One HTTP/1.1 exchange, opening a connection when there is none, or when the user's
    /// connection was closed by the server while idle. A request goes out again on a new
    /// connection only when none of its bytes were written (the connection was found closed
    /// before, or the very first write failed): once a byte left, the server may have read the
    /// request, so its failure is the request's outcome (`closed`, `reset`), never hidden by a
    /// copy the user did not ask for.
    #[allow(clippy::manual_async_fn)]
    fn attempt_h1<'a, 'x, 'c>(
        &'a self,
        conn: &'a mut Option<h1::Conn>,
        a: &'a mut Attempt<'x, 'c>,
    ) -> impl Future<Output = Result<u16, Failure>> + use<'a, 'x, 'c> {
        async move {
            let mut retried = false;
            loop {
                if conn.as_ref().is_some_and(h1::Conn::closed_while_idle) {
                    *conn = None;
                }
                let c = match conn {
                    Some(c) => c,
                    None => {
                        // Not boxed: at 10,000 users all connecting at once, a box each was
                        // the run's peak memory, and malloc kept it after the storm. The
                        // opening and the exchange share the task's room instead.
                        a.opening.set(a.started().elapsed());
                        a.limit.set(a.call.timeout.min(a.call.connect_timeout));
                        let stream = self.open_untimed(&mut a.opened).await;
                        a.opening = Took::default();
                        a.limit.set(a.call.timeout);
                        conn.insert(h1::Conn::new(stream?))
                    }
                };
                // A connection opened ahead is counted by its first exchange, and may have been
                // closed by the server while it waited, as an idle one may.
                let reused = match c.ahead.take() {
                    Some(ahead) => {
                        a.opened = *ahead;
                        true
                    }
                    None => c.uses > 0,
                };
                match c
                    .exchange(a.call.request, a.call.head, &mut a.p, a.keep.as_deref_mut())
                    .await
                {
                    Ok(status) => return Ok(status),
                    Err(H1Error::Io(_)) if reused && !retried && a.p.written == 0 => {
                        *conn = None;
                        retried = true;
                    }
                    Err(e) => return Err(Failure::h1(e)),
                }
            }
        }
    }

    /// True when [`Endpoint::open_ahead`] opens a connection: HTTP/1.1 (known before a
    /// connection says so) with keep-alive.
    pub fn opens_ahead(&self, keepalive: bool) -> bool {
        keepalive
            && match self.version {
                HttpVersion::Http1 => true,
                HttpVersion::Http2 => false,
                HttpVersion::Auto => !self.https(),
            }
    }

    /// Opens `session`'s HTTP/1.1 connection before its first call, as `call` would open it
    /// (resolution, proxy, TLS, the connect timeout). The call that first uses it reports its
    /// opening as its own, so connections opened and connect times count it once, as the server
    /// does. Nothing is done without keep-alive (each call opens its own), for HTTP/2 (users
    /// share connections, opened by the first to ask) or when the connection's version is
    /// still to be learnt. A failure is left for the call to meet and measure.
    pub async fn open_ahead(&self, session: &mut Session, call: &Call<'_>) {
        if !self.opens_ahead(call.keepalive) || session.conn.is_some() {
            return;
        }
        let started = Instant::now();
        let mut opened = Opened::default();
        if let Ok(stream) = Box::pin(self.open(call, started, started + call.timeout, &mut opened)).await {
            let mut conn = h1::Conn::new(stream);
            conn.ahead = Some(Box::new(opened));
            session.conn = Some(conn);
        }
    }

    /// Opens a transport, timing its phases into `opened` (resolution, when this connection
    /// resolves the host, even when it fails). Callers box it: connecting (TLS above all) needs
    /// a large future that an idle connection must not carry. The connect timeout covers
    /// resolution too, as curl's does.
    async fn open(
        &self,
        call: &Call<'_>,
        started: Instant,
        deadline: Instant,
        opened: &mut Opened,
    ) -> Result<Stream, Failure> {
        let limit = deadline.min(started + call.connect_timeout);
        let resolving = Instant::now();
        match timeout_at(limit.into(), self.open_untimed(opened)).await {
            Ok(stream) => stream,
            Err(_) => Err(self.open_expired(limit < deadline, resolving, opened)),
        }
    }

    /// [`Endpoint::open`] without a limit of its own, for a caller that keeps one.
    #[allow(clippy::manual_async_fn)]
    fn open_untimed<'a>(&'a self, opened: &'a mut Opened) -> impl Future<Output = Result<Stream, Failure>> + 'a {
        async move {
            let addrs = self.resolve(opened).await?;
            let t0 = Instant::now();
            let stream = self.connect(addrs.as_deref()).await?;
            opened.connect.set(t0.elapsed());
            Ok(stream)
        }
    }

    /// The failure of a connection that was still opening at its limit: a connect timeout
    /// when that limit came before the call's deadline.
    fn open_expired(&self, before_deadline: bool, resolving: Instant, opened: &mut Opened) -> Failure {
        let outcome = if before_deadline {
            Outcome::ConnectTimeout
        } else {
            Outcome::Timeout
        };
        let detail = if self.resolves_each() && opened.dns.get().is_none() {
            // The resolver never answered: its phase lasted until the limit.
            opened.dns.set(resolving.elapsed());
            Detail::Text("timed out while resolving the host")
        } else {
            Detail::Text("timed out while connecting")
        };
        Failure { outcome, detail }
    }

    /// The failure of a call whose timer reached `limit`.
    fn expired(&self, a: &mut Attempt<'_, '_>, limit: Instant) -> Failure {
        match a.opening.get() {
            Some(after) => self.open_expired(limit < a.deadline(), a.started() + after, &mut a.opened),
            None => Failure {
                outcome: Outcome::Timeout,
                detail: Detail::Text("request timed out"),
            },
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    /// A call with nothing to send, whose futures are measured.
    fn empty_call() -> Call<'static> {
        const HOW: CallOptions = CallOptions {
            head: false,
            timeout: Duration::from_secs(1),
            connect_timeout: Duration::from_secs(1),
            keepalive: true,
        };
        Call {
            request: b"",
            how: &HOW,
        }
    }

    /// At 10,000 users, every user connects at once. The HTTP/1.1 attempt opens its
    /// connection in the user's own task, in the room the exchange uses afterwards, so a plain
    /// connect must stay within the exchange's size: the proxy tunnel and TLS handshake are
    /// boxed apart, and the timeout is the session's timer.
    #[tokio::test]
    async fn opening_a_plain_connection_stays_small() {
        let (e, _) = Endpoint::parse("http://127.0.0.1:1/", &Default::default()).unwrap();
        let mut opened = Opened::default();
        let f = e.open_untimed(&mut opened);
        // 584 bytes (debug build) with its own timeout and tokio's `TcpSocket::connect`; 248
        // without them.
        assert!(std::mem::size_of_val(&f) <= 300, "{}", std::mem::size_of_val(&f));
    }

    /// Every user's task holds a call for as long as it waits on its response, so at 10,000
    /// idle keep-alive connections the call's size is most of crest's memory (issue 35).
    #[tokio::test]
    async fn a_call_waiting_on_its_response_stays_small() {
        let (e, _) = Endpoint::parse("http://127.0.0.1:1/", &Default::default()).unwrap();
        let call = empty_call();
        let mut session = Session::default();
        let f = e.call(&mut session, &call, None);
        // 1,040 bytes (debug build) with the proxy's request and the socket's waiter node inline;
        // 888 without; 568 once no layer kept second copies of its arguments; 560 with the
        // connect inline (which spares each user a box of 584 while all connect at once) and
        // the phases' times in 8 bytes each.
        assert!(std::mem::size_of_val(&f) <= 576, "{}", std::mem::size_of_val(&f));
        // The session is in every user's task too: 128 bytes with the HTTP/2 seat and the
        // other servers' sessions boxed apart and a `Vec` for the read buffer, 96 now.
        assert!(
            std::mem::size_of::<Session>() <= 96,
            "{}",
            std::mem::size_of::<Session>()
        );
    }
}
