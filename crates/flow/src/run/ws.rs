//! WebSocket steps: messages on the user's own connection, opened when first needed.

use super::{Failed, FlowUser, FlowWorkload, UserScope};
use crate::plan::WsStep;
use crest_engine::Ctx;
use crest_model::Outcome;
use futures_util::{SinkExt, StreamExt};
use std::time::{Duration, Instant};
use tokio_tungstenite::tungstenite::{self, protocol::frame::coding::CloseCode, protocol::CloseFrame, Message};

/// A user's open WebSocket.
pub(super) type WsConn = tokio_tungstenite::WebSocketStream<tokio::net::TcpStream>;

/// What one step did, for its sample.
#[derive(Default)]
struct Tally {
    connect: Option<Duration>,
    ttfb: Option<Duration>,
    status: Option<u16>,
    sent: u64,
    received: u64,
    bytes_sent: u64,
    bytes_received: u64,
}

impl FlowWorkload {
    /// Runs a WebSocket step: open if needed, send, receive, close.
    pub(super) async fn ws(
        &self,
        s: &WsStep,
        user: &mut FlowUser,
        ctx: &Ctx<'_>,
        intended: Option<Instant>,
    ) -> Result<(), Failed> {
        let started = Instant::now();
        let intended = intended.unwrap_or(started).min(started);
        let mut t = Tally::default();
        let result = self.ws_exchange(s, user, &mut t).await;
        if result.is_err() {
            // After a failure the connection's state is unknown: the next step opens a new one.
            user.ws = None;
        }
        let (outcome, message) = match result {
            Ok(()) => (Outcome::Success, None),
            Err((o, m)) => (o, Some(m)),
        };
        let sample = crest_model::Sample {
            name: s.name,
            segment: 0,
            user: 0,
            iteration: 0,
            intended: ctx.offset(intended),
            send_lag: started - intended,
            dns: None,
            connect: t.connect,
            ttfb: t.ttfb,
            total: Instant::now() - intended,
            bytes_sent: t.bytes_sent,
            bytes_received: t.bytes_received,
            messages_sent: t.sent,
            messages_received: t.received,
            status: t.status,
            outcome,
        };
        ctx.record(sample, message.as_ref().map(|m| m as &dyn std::fmt::Display));
        if outcome.is_success() {
            Ok(())
        } else {
            Err(Failed::default())
        }
    }

    async fn ws_exchange(&self, s: &WsStep, user: &mut FlowUser, t: &mut Tally) -> Result<(), (Outcome, String)> {
        let (url, text) = {
            let scope = UserScope { user, plan: &self.plan };
            (s.url.render(&scope), s.send.as_ref().map(|m| m.render(&scope)))
        };
        let deadline = tokio::time::Instant::now() + s.timeout;
        if user.ws.is_none() {
            user.ws = Some(self.ws_open(&url, t).await?);
        }
        let Some(conn) = user.ws.as_mut() else {
            return Err((Outcome::Closed, "no connection".into()));
        };
        if let Some(text) = text {
            t.bytes_sent += text.len() as u64;
            t.sent += 1;
            conn.send(Message::text(text)).await.map_err(ws_error)?;
        }
        if let Some(until) = &s.receive {
            loop {
                let next = tokio::time::timeout_at(deadline, conn.next())
                    .await
                    .map_err(|_| (Outcome::ReceiveTimeout, format!("no message within {:?}", s.timeout)))?;
                let msg = match next {
                    None => return Err((Outcome::Closed, "the server closed the connection".into())),
                    Some(m) => m.map_err(ws_error)?,
                };
                let body = match &msg {
                    Message::Text(x) => x.as_str().to_owned(),
                    Message::Binary(b) => String::from_utf8_lossy(b).into_owned(),
                    Message::Close(frame) => {
                        let code = frame.as_ref().map_or(1005, |f| u16::from(f.code));
                        return Err((
                            Outcome::WsClosed(code),
                            format!("the server closed the connection ({code})"),
                        ));
                    }
                    // Pings are answered by tungstenite; neither they nor pongs are messages.
                    _ => continue,
                };
                t.received += 1;
                t.bytes_received += body.len() as u64;
                if until.as_ref().is_none_or(|re| re.is_match(&body)) {
                    break;
                }
            }
        }
        if let Some(code) = s.close {
            let frame = CloseFrame {
                code: CloseCode::from(code),
                reason: "".into(),
            };
            conn.close(Some(frame)).await.map_err(ws_error)?;
            // Wait (bounded) for the server's close reply, so that the close is complete.
            let _ = tokio::time::timeout_at(deadline, async { while let Some(Ok(_)) = conn.next().await {} }).await;
            user.ws = None;
        }
        Ok(())
    }

    /// Connects and upgrades: TCP in `connect`, the upgrade's response in `ttfb`.
    async fn ws_open(&self, url: &str, t: &mut Tally) -> Result<WsConn, (Outcome, String)> {
        let t0 = Instant::now();
        let request = tungstenite::client::IntoClientRequest::into_client_request(url)
            .map_err(|e| (Outcome::Other, format!("bad WebSocket URL: {e}")))?;
        let host = request.uri().host().unwrap_or("").to_owned();
        let port = request.uri().port_u16().unwrap_or(80);
        let tcp = tokio::time::timeout(
            self.plan.connect_timeout,
            tokio::net::TcpStream::connect((host.as_str(), port)),
        )
        .await
        .map_err(|_| (Outcome::ConnectTimeout, "connect timeout".into()))?
        .map_err(|e| {
            let o = if e.kind() == std::io::ErrorKind::ConnectionRefused {
                Outcome::ConnectRefused
            } else {
                Outcome::Other
            };
            (o, format!("connect: {e}"))
        })?;
        let _ = tcp.set_nodelay(true);
        t.connect = Some(t0.elapsed());
        let t1 = Instant::now();
        let (conn, response) = tokio::time::timeout(self.plan.timeout, tokio_tungstenite::client_async(request, tcp))
            .await
            .map_err(|_| (Outcome::Timeout, "no upgrade response before the timeout".into()))?
            .map_err(|e| match e {
                tungstenite::Error::Http(r) => {
                    t.status = Some(r.status().as_u16());
                    (
                        Outcome::Status(r.status().as_u16()),
                        format!("upgrade refused: {}", r.status()),
                    )
                }
                e => ws_error(e),
            })?;
        t.ttfb = Some(t1.elapsed());
        t.status = Some(response.status().as_u16());
        Ok(conn)
    }
}

/// The outcome of a WebSocket error.
fn ws_error(e: tungstenite::Error) -> (Outcome, String) {
    let outcome = match &e {
        tungstenite::Error::ConnectionClosed | tungstenite::Error::AlreadyClosed => Outcome::Closed,
        tungstenite::Error::Io(io) if io.kind() == std::io::ErrorKind::ConnectionReset => Outcome::Reset,
        tungstenite::Error::Io(_) => Outcome::Closed,
        _ => Outcome::Protocol,
    };
    (outcome, format!("WebSocket: {e}"))
}
