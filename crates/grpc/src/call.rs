//! One HTTP/2 connection and the calls made on it, each ending as one of crest's outcomes.

use bytes::{Buf, BufMut, Bytes};
use crest_model::Outcome;
use futures_util::StreamExt;
use http::uri::{PathAndQuery, Uri};
use std::future::Future;
use std::pin::Pin;
use std::task::{Context, Poll};
use std::time::{Duration, Instant};
use tonic::codec::{Codec, DecodeBuf, Decoder, EncodeBuf, Encoder};
use tonic::metadata::{MetadataKey, MetadataValue};
use tonic::Status;

/// Why a call, or opening its connection, failed.
#[derive(Debug)]
pub struct CallError {
    /// The outcome it is recorded as.
    pub outcome: Outcome,
    /// What happened; never holds metadata values.
    pub message: String,
}

impl std::fmt::Display for CallError {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str(&self.message)
    }
}

impl std::error::Error for CallError {}

impl CallError {
    fn new(outcome: Outcome, message: impl Into<String>) -> Self {
        CallError {
            outcome,
            message: message.into(),
        }
    }
}

/// What a call sent and received, kept up to date as it goes so that a call that fails half
/// way still counts what it moved.
#[derive(Debug, Default, Clone, Copy)]
pub struct Counts {
    /// Messages sent.
    pub sent: u64,
    /// Messages received.
    pub received: u64,
    /// Bytes of the messages sent, with their 5-byte frame prefixes.
    pub bytes_sent: u64,
    /// Bytes of the messages received, with their prefixes.
    pub bytes_received: u64,
    /// From the call's start to the server's response headers.
    pub ttfb: Option<Duration>,
}

/// Whether a header is gRPC's or HTTP/2's own, never sent as metadata: the scenario's headers
/// for its HTTP requests (a `Content-Type: application/json`) must not reach a call.
pub fn reserved(name: &str) -> bool {
    let name = name.to_ascii_lowercase();
    name.starts_with("grpc-")
        || name.starts_with(':')
        || [
            "content-type",
            "te",
            "host",
            "connection",
            "content-length",
            "transfer-encoding",
            "keep-alive",
        ]
        .contains(&name.as_str())
}

/// hyper's HTTP/2 client connection as the service tonic's client framing runs on.
#[derive(Clone)]
struct H2(hyper::client::conn::http2::SendRequest<tonic::body::Body>);

type Responding = Pin<Box<dyn Future<Output = Result<http::Response<hyper::body::Incoming>, hyper::Error>> + Send>>;

impl tower_service::Service<http::Request<tonic::body::Body>> for H2 {
    type Response = http::Response<hyper::body::Incoming>;
    type Error = hyper::Error;
    type Future = Responding;

    fn poll_ready(&mut self, cx: &mut Context<'_>) -> Poll<Result<(), hyper::Error>> {
        self.0.poll_ready(cx)
    }

    fn call(&mut self, req: http::Request<tonic::body::Body>) -> Responding {
        Box::pin(self.0.send_request(req))
    }
}

/// Messages as the caller's bytes: encoded from JSON before the call, decoded only when read.
#[derive(Clone, Copy, Debug, Default)]
struct Raw;

impl Codec for Raw {
    type Encode = Bytes;
    type Decode = Bytes;
    type Encoder = Raw;
    type Decoder = Raw;

    fn encoder(&mut self) -> Raw {
        Raw
    }

    fn decoder(&mut self) -> Raw {
        Raw
    }
}

impl Encoder for Raw {
    type Item = Bytes;
    type Error = Status;

    fn encode(&mut self, item: Bytes, dst: &mut EncodeBuf<'_>) -> Result<(), Status> {
        dst.put(item);
        Ok(())
    }
}

impl Decoder for Raw {
    type Item = Bytes;
    type Error = Status;

    fn decode(&mut self, src: &mut DecodeBuf<'_>) -> Result<Option<Bytes>, Status> {
        Ok(Some(src.copy_to_bytes(src.remaining())))
    }
}

/// The largest response message a call reads (gRPC's usual default): past it the call ends as
/// `crest_limit`, so a server cannot make crest hold an unbounded message.
pub const MAX_MESSAGE: usize = 4 << 20;

/// One HTTP/2 connection to a gRPC server; its calls are streams on it.
pub struct Conn {
    client: tonic::client::Grpc<H2>,
    /// Drives the connection; aborted when the connection is dropped, which closes it.
    driver: tokio::task::JoinHandle<()>,
}

impl std::fmt::Debug for Conn {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str("grpc::Conn")
    }
}

impl Drop for Conn {
    fn drop(&mut self) {
        self.driver.abort();
    }
}

impl Conn {
    /// Speaks HTTP/2 on `io` (already connected, with TLS when `https`) to `authority`.
    pub async fn open<T>(io: T, authority: &str, https: bool) -> Result<Conn, CallError>
    where
        T: tokio::io::AsyncRead + tokio::io::AsyncWrite + Send + Unpin + 'static,
    {
        let origin: Uri = format!("{}://{authority}", if https { "https" } else { "http" })
            .parse()
            .map_err(|_| CallError::new(Outcome::Other, format!("{authority:?} is not an authority")))?;
        let (send, conn) = hyper::client::conn::http2::Builder::new(hyper_util::rt::TokioExecutor::new())
            .handshake(hyper_util::rt::TokioIo::new(io))
            .await
            .map_err(|e| transport(&e))?;
        let driver = tokio::spawn(async move {
            let _ = conn.await;
        });
        let client = tonic::client::Grpc::with_origin(H2(send), origin).max_decoding_message_size(MAX_MESSAGE);
        Ok(Conn { client, driver })
    }

    /// Whether the connection can take no more calls (the server went away or it broke).
    pub fn is_closed(&self) -> bool {
        self.driver.is_finished()
    }

    /// Calls `path` with `messages` (one for a unary or server-streaming method, any number
    /// for a client-streaming one) and `metadata`, within `deadline` (sent as `grpc-timeout`
    /// too, so the server can give up when crest does). Each message received goes to
    /// `received`, which returns true to stop reading: the rest of the stream is cancelled
    /// and the call counts as done. `counts` holds what moved, whatever the end.
    pub async fn call(
        &mut self,
        path: PathAndQuery,
        messages: Vec<Bytes>,
        metadata: &[(String, String)],
        deadline: Duration,
        counts: &mut Counts,
        received: &mut (dyn FnMut(&Bytes) -> bool + Send),
    ) -> Result<(), CallError> {
        let started = Instant::now();
        let exchange = self.exchange(path, messages, metadata, deadline, started, counts, received);
        match tokio::time::timeout(deadline, exchange).await {
            Ok(done) => done,
            Err(_) => Err(CallError::new(
                Outcome::Grpc(tonic::Code::DeadlineExceeded as u8),
                format!("no status within the deadline ({} ms)", deadline.as_millis()),
            )),
        }
    }

    #[allow(clippy::too_many_arguments)]
    async fn exchange(
        &mut self,
        path: PathAndQuery,
        messages: Vec<Bytes>,
        metadata: &[(String, String)],
        deadline: Duration,
        started: Instant,
        counts: &mut Counts,
        received: &mut (dyn FnMut(&Bytes) -> bool + Send),
    ) -> Result<(), CallError> {
        for m in &messages {
            counts.sent += 1;
            counts.bytes_sent += m.len() as u64 + 5;
        }
        let mut request = tonic::Request::new(futures_util::stream::iter(messages));
        request.set_timeout(deadline);
        let meta = request.metadata_mut();
        for (name, value) in metadata {
            let bad = || CallError::new(Outcome::CheckFailed, format!("metadata {name} cannot be sent"));
            if name.ends_with("-bin") {
                let key = MetadataKey::from_bytes(name.as_bytes()).map_err(|_| bad())?;
                meta.append_bin(key, MetadataValue::from_bytes(value.as_bytes()));
            } else {
                let key = MetadataKey::from_bytes(name.as_bytes()).map_err(|_| bad())?;
                let value = MetadataValue::try_from(value.as_str()).map_err(|_| bad())?;
                meta.append(key, value);
            }
        }
        if !meta.contains_key("user-agent") {
            meta.insert(
                "user-agent",
                MetadataValue::from_static(concat!("crest/", env!("CARGO_PKG_VERSION"))),
            );
        }
        self.client.ready().await.map_err(|e| transport(&e))?;
        let response = self.client.streaming(request, path, Raw).await.map_err(status)?;
        counts.ttfb = Some(started.elapsed());
        let mut stream = response.into_inner();
        loop {
            match stream.next().await {
                None => return Ok(()),
                Some(Err(s)) => return Err(status(s)),
                Some(Ok(m)) => {
                    counts.received += 1;
                    counts.bytes_received += m.len() as u64 + 5;
                    if received(&m) {
                        // Enough read: dropping the stream cancels the rest (RST_STREAM CANCEL).
                        return Ok(());
                    }
                }
            }
        }
    }
}

/// A failed call's outcome: the status the server sent, or what broke under the call.
fn status(s: Status) -> CallError {
    if let Some(source) = std::error::Error::source(&s) {
        if let Some(e) = find::<hyper::Error>(source) {
            return transport(e);
        }
        if let Some(e) = find::<h2::Error>(source) {
            return h2_error(e);
        }
    }
    let code = s.code() as u8;
    if s.code() == tonic::Code::OutOfRange && s.message().contains("message length too large") {
        // tonic's own decoding limit, reported as if the server had sent OUT_OF_RANGE.
        return CallError::new(
            Outcome::CrestLimit,
            format!("a response message over {MAX_MESSAGE} bytes"),
        );
    }
    let message = if s.message().is_empty() {
        format!("status {}", crest_model::outcome::grpc_code_name(code))
    } else {
        format!("status {}: {}", crest_model::outcome::grpc_code_name(code), s.message())
    };
    CallError::new(
        if code == 0 {
            Outcome::Protocol
        } else {
            Outcome::Grpc(code)
        },
        message,
    )
}

/// What a connection's failure under a call is, as it would be for a request.
fn transport(e: &hyper::Error) -> CallError {
    let source = std::error::Error::source(e);
    if let Some(h2) = source.and_then(find::<h2::Error>) {
        return h2_error(h2);
    }
    let outcome = if let Some(io) = source.and_then(find::<std::io::Error>) {
        crest_http::io_error(io)
    } else if e.is_canceled() || e.is_closed() || e.is_incomplete_message() {
        Outcome::Closed
    } else {
        Outcome::Protocol
    };
    CallError::new(outcome, format!("gRPC connection: {e}"))
}

fn h2_error(e: &h2::Error) -> CallError {
    CallError::new(crest_http::h2_crate_error(e), format!("gRPC connection: HTTP/2 {e}"))
}

/// The first error of type `E` in `e`'s chain of sources, `e` included.
fn find<'a, E: std::error::Error + 'static>(mut e: &'a (dyn std::error::Error + 'static)) -> Option<&'a E> {
    loop {
        if let Some(found) = e.downcast_ref::<E>() {
            return Some(found);
        }
        e = e.source()?;
    }
}
