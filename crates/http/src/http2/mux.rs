//! Many streams per connection, through the `h2` crate: its connection runs as a task of its
//! own, and users send requests through their handles on it.
//!
//! crest's own framing ([`super::conn`]) replaced this path where each connection carries one
//! stream, but not here. At 100 streams per connection against nginx, which writes each
//! response apart, it spends half the user time per request of this path but, quicker, waits
//! idle between the server's writes and reads one to three responses per wake-up, so the system
//! time it adds ate what it saved (bench/README.md, "HTTP/2").

use super::guard::{Guarded, Tripped, Tripwire};
use super::{frame, H2Error, H2Fail, H2Request};
use crate::exchange::{Progress, Response};
use crate::Failure;
use bytes::Bytes;
use h2::client::SendRequest;
use std::sync::Arc;
use std::time::Instant;

/// A user's handle on a connection driven by the `h2` crate.
#[derive(Clone, Debug)]
pub(crate) struct Mux {
    send: SendRequest<Bytes>,
    /// Set when the server went past one of crest's limits ([`super::guard`]).
    tripwire: Arc<Tripwire>,
}

/// Starts HTTP/2 on an open transport; the connection is driven by its own task until every
/// handle to it is gone.
pub(crate) async fn handshake(stream: crate::io::Stream) -> Result<Mux, Failure> {
    let (stream, tripwire) = Guarded::new(stream);
    let (send, conn) = h2::client::Builder::new()
        .enable_push(false)
        // Larger windows than the 64 KiB default, so large bodies are not paced by
        // WINDOW_UPDATE round trips (h2load uses the same sizes).
        .initial_window_size(1 << 20)
        .initial_connection_window_size(1 << 24)
        .handshake::<_, Bytes>(stream)
        .await
        .map_err(|e| Failure::h2(tripped(&tripwire).unwrap_or_else(|| mux_error(e))))?;
    tokio::spawn(async move {
        let _ = conn.await;
    });
    Ok(Mux { send, tripwire })
}

/// The error for a connection whose server went past one of crest's limits.
fn tripped(t: &Tripwire) -> Option<H2Error> {
    Some(match t.get()? {
        Tripped::HeaderBlock => H2Error::Limit(super::guard::HEADER_BLOCK_WHAT),
        Tripped::SettingsFlood => H2Error::Local(frame::Malformed {
            code: frame::ENHANCE_YOUR_CALM,
            what: super::guard::SETTINGS_FLOOD_WHAT,
        }),
        Tripped::Http1Answer => H2Error::Local(frame::Malformed {
            code: frame::PROTOCOL_ERROR,
            what: super::guard::HTTP1_ANSWER_WHAT,
        }),
        Tripped::Unframed => H2Error::Unframed,
    })
}

pub(crate) fn mux_error(e: h2::Error) -> H2Error {
    H2Error::Mux(Arc::new(e))
}

/// The error to report for a stream that failed with `e`. When the connection ended after the
/// server's GOAWAY, streams still open see only the closed socket; the GOAWAY, which the
/// connection remembers, is the cause worth reporting. Asked without waiting: the connection
/// already knows.
fn cause(conn: &SendRequest<Bytes>, e: h2::Error) -> h2::Error {
    if e.is_go_away() || e.is_reset() {
        return e;
    }
    let mut probe = conn.clone();
    match probe.poll_ready(&mut std::task::Context::from_waker(std::task::Waker::noop())) {
        std::task::Poll::Ready(Err(conn_err)) if conn_err.is_go_away() && conn_err.is_remote() => conn_err,
        _ => e,
    }
}

/// Sends `req` on `send` and reads the whole response.
pub(crate) async fn exchange(
    mux: &mut Mux,
    req: &H2Request,
    p: &mut Progress,
    keep: Option<&mut Response>,
) -> Result<u16, H2Fail> {
    match exchange_inner(&mut mux.send, req, p, keep).await {
        Ok(status) => Ok(status),
        Err(Fail::NotSent(e)) => Err(H2Fail::NotSent(tripped(&mux.tripwire).unwrap_or_else(|| mux_error(e)))),
        Err(Fail::Sent(e)) => Err(H2Fail::Sent(
            tripped(&mux.tripwire).unwrap_or_else(|| mux_error(cause(&mux.send, e))),
        )),
    }
}

enum Fail {
    NotSent(h2::Error),
    Sent(h2::Error),
}

async fn exchange_inner(
    send: &mut SendRequest<Bytes>,
    req: &H2Request,
    p: &mut Progress,
    mut keep: Option<&mut Response>,
) -> Result<u16, Fail> {
    let Some(head) = &req.head else {
        unreachable!("requests for shared connections are translated for h2");
    };
    std::future::poll_fn(|cx| send.poll_ready(cx))
        .await
        .map_err(Fail::NotSent)?;
    let mut h = http::Request::new(());
    *h.method_mut() = head.method().clone();
    *h.uri_mut() = head.uri().clone();
    *h.version_mut() = http::Version::HTTP_2;
    *h.headers_mut() = head.headers().clone();
    let (response, mut body_tx) = send.send_request(h, req.body.is_empty()).map_err(Fail::NotSent)?;
    if !req.body.is_empty() {
        body_tx.send_data(req.body.clone(), true).map_err(Fail::Sent)?;
    }
    p.wrote(req.size);
    // A stream above the last one a GOAWAY says the server processed failed with that GOAWAY
    // itself (those below it fail with the closed connection, if at all): the server never
    // acted on it, so it may go again on a new connection, as crest's own framing sends it.
    let response = response.await.map_err(|e| {
        if e.is_go_away() && e.is_remote() {
            Fail::NotSent(e)
        } else {
            Fail::Sent(e)
        }
    })?;
    p.first_byte = Some(Instant::now());
    let status = response.status().as_u16();
    p.status = Some(status);
    // The head's size as HTTP/1.1 would carry it: a stream's share of the compressed header
    // blocks and frames of a multiplexed connection cannot be observed.
    p.read += 17
        + response
            .headers()
            .iter()
            .map(|(n, v)| (n.as_str().len() + v.len() + 4) as u64)
            .sum::<u64>();
    if let Some(k) = keep.as_deref_mut() {
        *k = Response {
            status,
            headers: response
                .headers()
                .iter()
                .map(|(n, v)| {
                    (
                        n.as_str().to_string(),
                        String::from_utf8_lossy(v.as_bytes()).into_owned(),
                    )
                })
                .collect(),
            ..Response::default()
        };
    }
    let mut body = response.into_body();
    while let Some(chunk) = body.data().await {
        let chunk = chunk.map_err(Fail::Sent)?;
        p.read += chunk.len() as u64;
        let _ = body.flow_control().release_capacity(chunk.len());
        if let Some(k) = keep.as_deref_mut() {
            k.keep(&chunk);
        }
    }
    Ok(status)
}
