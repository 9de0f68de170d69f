//! Responses read as they arrive (server-sent events), where the exchange never ends on its
//! own. crest's own client hands back whole responses, which a stream never is; hyper's
//! HTTP/1.1 client reads the body frame by frame (chunked or until close) over crest's own
//! transport, so the endpoint's addresses, proxy and TLS settings still apply.

use crate::{CookieJar, Endpoint};
use bytes::Bytes;
use crest_model::Outcome;
use http_body_util::BodyExt;
use std::fmt;
use std::time::{Duration, Instant};

/// Why opening or reading a stream failed; its message never holds header values.
#[derive(Debug)]
pub struct StreamError {
    /// The outcome it is recorded as.
    pub outcome: Outcome,
    /// What happened.
    pub message: String,
}

impl fmt::Display for StreamError {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(&self.message)
    }
}

impl std::error::Error for StreamError {}

impl StreamError {
    fn hyper(e: &hyper::Error) -> Self {
        // A stream cut off mid-way (the peer closed or reset) is `closed`/`reset`, as a
        // request's would be; what hyper could not parse is the server's protocol error.
        let outcome = if e.is_incomplete_message() || e.is_closed() || e.is_canceled() {
            Outcome::Closed
        } else if e.is_parse() || e.is_user() {
            Outcome::Protocol
        } else {
            std::error::Error::source(e)
                .and_then(|s| s.downcast_ref::<std::io::Error>())
                .map_or(Outcome::Reset, crate::classify::io_error)
        };
        StreamError {
            outcome,
            message: e.to_string(),
        }
    }
}

/// A response whose body is read as it arrives, on a connection of its own.
pub struct Streaming {
    /// Its status.
    pub status: u16,
    /// Its headers, values converted lossily.
    pub headers: Vec<(String, String)>,
    /// Opening the connection (TCP, proxy, TLS).
    pub connect: Duration,
    /// Bytes of the request and of the response head.
    pub bytes_sent: u64,
    body: hyper::body::Incoming,
    /// Drives the connection; aborted when the stream is dropped, which closes it.
    conn: tokio::task::JoinHandle<()>,
}

impl fmt::Debug for Streaming {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("Streaming").field("status", &self.status).finish()
    }
}

impl Drop for Streaming {
    fn drop(&mut self) {
        self.conn.abort();
    }
}

impl Streaming {
    /// The first header with this name, compared without case.
    pub fn header(&self, name: &str) -> Option<&str> {
        self.headers
            .iter()
            .find(|(n, _)| n.eq_ignore_ascii_case(name))
            .map(|(_, v)| v.as_str())
    }

    /// The next bytes of the body; `None` when the server ended it.
    pub async fn chunk(&mut self) -> Result<Option<Bytes>, StreamError> {
        loop {
            match self.body.frame().await {
                None => return Ok(None),
                Some(Err(e)) => return Err(StreamError::hyper(&e)),
                Some(Ok(frame)) => {
                    if let Ok(data) = frame.into_data() {
                        if !data.is_empty() {
                            return Ok(Some(data));
                        }
                    }
                }
            }
        }
    }
}

impl Endpoint {
    /// Sends a GET for `target` on a new connection and returns once the response head is in:
    /// the body is then read with [`Streaming::chunk`]. The user's cookies go with it and the
    /// response's are kept, as for any request.
    pub async fn open_stream(
        &self,
        target: &str,
        headers: &[(String, String)],
        cookies: &mut CookieJar,
    ) -> Result<Streaming, StreamError> {
        let (io, connect) = self.open_transport().await?;
        let (mut send, conn) = hyper::client::conn::http1::handshake(hyper_util::rt::TokioIo::new(io.0))
            .await
            .map_err(|e| StreamError::hyper(&e))?;
        let conn = tokio::spawn(async move {
            let _ = conn.await;
        });
        let path = target.split('?').next().unwrap_or("/");
        let mut req = hyper::Request::get(if target.is_empty() { "/" } else { target })
            .header(hyper::header::HOST, self.authority())
            .header(hyper::header::ACCEPT, "text/event-stream")
            .header(hyper::header::USER_AGENT, concat!("crest/", env!("CARGO_PKG_VERSION")));
        let mut bytes_sent = target.len() as u64 + 16;
        for (name, value) in headers {
            crate::check_header(name, value).map_err(|e| StreamError {
                outcome: Outcome::Other,
                message: e.to_string(),
            })?;
            bytes_sent += (name.len() + value.len() + 4) as u64;
            req = req.header(name.as_str(), value.as_str());
        }
        if let Some(c) = cookies.header(&self.host, path, self.https()) {
            bytes_sent += c.len() as u64 + 10;
            req = req.header(hyper::header::COOKIE, c);
        }
        let req = req
            .body(http_body_util::Empty::<Bytes>::new())
            .map_err(|e| StreamError {
                outcome: Outcome::Other,
                message: format!("the request cannot be built: {e}"),
            })?;
        let res = send.send_request(req).await.map_err(|e| StreamError::hyper(&e))?;
        let (parts, body) = res.into_parts();
        let headers: Vec<(String, String)> = parts
            .headers
            .iter()
            .map(|(n, v)| {
                (
                    n.as_str().to_string(),
                    String::from_utf8_lossy(v.as_bytes()).into_owned(),
                )
            })
            .collect();
        cookies.store(
            &self.host,
            path,
            headers
                .iter()
                .filter(|(n, _)| n == "set-cookie")
                .map(|(_, v)| v.as_str()),
        );
        Ok(Streaming {
            status: parts.status.as_u16(),
            headers,
            connect,
            bytes_sent,
            body,
            conn,
        })
    }
}

/// A connection of its own to an endpoint (TCP, through its proxy's tunnel, with its TLS), for
/// a protocol that speaks on it after an HTTP/1.1 upgrade (WebSocket): its bytes are the
/// caller's, so the endpoint's addresses, proxy and certificate settings apply to it as to a
/// request.
pub struct Transport(crate::io::Stream);

impl fmt::Debug for Transport {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str("Transport")
    }
}

impl tokio::io::AsyncRead for Transport {
    fn poll_read(
        self: std::pin::Pin<&mut Self>,
        cx: &mut std::task::Context<'_>,
        buf: &mut tokio::io::ReadBuf<'_>,
    ) -> std::task::Poll<std::io::Result<()>> {
        std::pin::Pin::new(&mut self.get_mut().0).poll_read(cx, buf)
    }
}

impl tokio::io::AsyncWrite for Transport {
    fn poll_write(
        self: std::pin::Pin<&mut Self>,
        cx: &mut std::task::Context<'_>,
        buf: &[u8],
    ) -> std::task::Poll<std::io::Result<usize>> {
        std::pin::Pin::new(&mut self.get_mut().0).poll_write(cx, buf)
    }

    fn poll_flush(
        self: std::pin::Pin<&mut Self>,
        cx: &mut std::task::Context<'_>,
    ) -> std::task::Poll<std::io::Result<()>> {
        std::pin::Pin::new(&mut self.get_mut().0).poll_flush(cx)
    }

    fn poll_shutdown(
        self: std::pin::Pin<&mut Self>,
        cx: &mut std::task::Context<'_>,
    ) -> std::task::Poll<std::io::Result<()>> {
        std::pin::Pin::new(&mut self.get_mut().0).poll_shutdown(cx)
    }
}

impl Endpoint {
    /// Opens a connection of its own, as a request would (resolving, connecting through the
    /// proxy's tunnel, TLS), and says how long that took.
    pub async fn open_transport(&self) -> Result<(Transport, Duration), StreamError> {
        let failed = |f: crate::Failure| StreamError {
            outcome: f.outcome,
            message: f.detail.to_string(),
        };
        if self.proxy.as_ref().is_some_and(|p| !p.tunnel) {
            return Err(StreamError {
                outcome: Outcome::Other,
                // Such a proxy wants each request in absolute form, one by one.
                message: "a stream or an upgraded connection cannot go through a proxy without a CONNECT tunnel".into(),
            });
        }
        let t0 = Instant::now();
        let mut opened = crate::exchange::Opened::default();
        let resolved = self.resolve(&mut opened).await.map_err(failed)?;
        let io = self.connect(resolved.as_deref()).await.map_err(failed)?;
        Ok((Transport(io), t0.elapsed()))
    }

    /// The URL of `path` on this endpoint for a WebSocket: `ws://` or `wss://`.
    pub fn websocket_url(&self, path: &str) -> String {
        let scheme = if self.https() { "wss" } else { "ws" };
        let path = if path.starts_with('/') {
            path.to_string()
        } else {
            format!("/{path}")
        };
        format!("{scheme}://{}{path}", self.authority())
    }

    /// The `Cookie` header the user's jar holds for `path` on this endpoint.
    pub fn cookie_header(&self, cookies: &CookieJar, path: &str) -> Option<String> {
        let path = path.split('?').next().unwrap_or("/");
        cookies.header(&self.host, path, self.https()).map(|c| c.to_string())
    }
}
