//! WebSocket steps: messages on the user's own connection, opened when first needed over the
//! endpoint's own transport (its addresses, proxy tunnel and TLS), so `ws://` and `wss://` reach
//! what a request to the same target would.

use super::{Failed, FlowUser, FlowWorkload, UserScope};
use crate::plan::WsStep;
use crest_engine::Ctx;
use crest_model::Outcome;
use futures_util::{SinkExt, StreamExt};
use std::time::Instant;
use tokio_tungstenite::tungstenite::client::IntoClientRequest;
use tokio_tungstenite::tungstenite::http::HeaderValue;
use tokio_tungstenite::tungstenite::protocol::frame::coding::CloseCode;
use tokio_tungstenite::tungstenite::protocol::CloseFrame;
use tokio_tungstenite::tungstenite::{self, Message};

/// A user's open WebSocket.
pub(super) type WsConn = tokio_tungstenite::WebSocketStream<crest_http::Transport>;

type Tally = super::message::Measured;

use super::message::StepError;

impl FlowWorkload {
    /// Runs a WebSocket step (open if needed, send, read until, close) and records its sample.
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
        let result = {
            // The step is one request the server holds from the upgrade or the send on.
            let _sent = crest_engine::Unanswered::sent();
            self.ws_exchange(s, user, &mut t).await
        };
        if result.is_err() {
            // After a failure the connection's state is unknown: the next step opens a new one.
            user.ws = None;
        }
        super::message::record(ctx, s.name, (intended, started, Instant::now()), &t, result)
    }

    async fn ws_exchange(&self, s: &WsStep, user: &mut FlowUser, t: &mut Tally) -> Result<(), StepError> {
        let deadline = tokio::time::Instant::now() + s.timeout;
        let text = s.send.as_ref().map(|m| m.render(&UserScope { user, plan: &self.plan }));
        if user.ws.is_none() {
            user.ws = Some(self.ws_open(s, user, t, deadline).await?);
        }
        let Some(conn) = user.ws.as_mut() else {
            return Err((Outcome::Closed, "no connection".into()));
        };
        if let Some(text) = text {
            t.bytes_sent += text.len() as u64;
            t.sent += 1;
            let message = if s.binary {
                Message::binary(text.into_bytes())
            } else {
                Message::text(text)
            };
            conn.send(message).await.map_err(ws_error)?;
        }
        let mut last = None;
        if let Some(until) = &s.until {
            let mut matched = 0;
            while matched < until.count {
                let next = tokio::time::timeout_at(deadline, conn.next()).await.map_err(|_| {
                    (
                        Outcome::ReceiveTimeout,
                        format!(
                            "{matched} of {} matching messages within {} ms",
                            until.count,
                            s.timeout.as_millis()
                        ),
                    )
                })?;
                let msg = match next {
                    None => return Err((Outcome::Closed, "the server closed the connection".into())),
                    Some(m) => m.map_err(ws_error)?,
                };
                let body = match msg {
                    Message::Text(x) => x.as_bytes().to_vec(),
                    Message::Binary(b) => b.to_vec(),
                    Message::Close(frame) => {
                        let code = frame.as_ref().map_or(1005, |f| u16::from(f.code));
                        return Err((
                            Outcome::WsClosed(code),
                            format!("the server closed the connection with code {code}"),
                        ));
                    }
                    // Pings are answered by tungstenite; neither they nor pongs are messages.
                    _ => continue,
                };
                t.received += 1;
                t.bytes_received += body.len() as u64;
                if until
                    .matches
                    .as_ref()
                    .is_none_or(|re| re.is_match(&String::from_utf8_lossy(&body)))
                {
                    matched += 1;
                    last = Some(body);
                }
            }
        }
        if let Some(body) = &last {
            super::message::take(&s.checks, &s.extract, user, body, Vec::new)?;
        }
        if let Some(code) = s.close {
            let Some(conn) = user.ws.as_mut() else {
                return Ok(());
            };
            let frame = CloseFrame {
                code: CloseCode::from(code),
                reason: "".into(),
            };
            conn.close(Some(frame)).await.map_err(ws_error)?;
            // The server's close reply completes the close; messages still in flight are read
            // past (bounded by the step's timeout), as a client that is leaving ignores them.
            let _ = tokio::time::timeout_at(deadline, async { while let Some(Ok(_)) = conn.next().await {} }).await;
            user.ws = None;
        }
        Ok(())
    }

    /// Connects and upgrades: the connection (TCP, TLS) in `connect`, the upgrade's answer in
    /// `ttfb` and its status in `status`.
    async fn ws_open(
        &self,
        s: &WsStep,
        user: &FlowUser,
        t: &mut Tally,
        deadline: tokio::time::Instant,
    ) -> Result<WsConn, StepError> {
        let endpoint = &self.plan.endpoints[s.endpoint];
        let scope = UserScope { user, plan: &self.plan };
        let path = s.path.render(&scope);
        let mut request = endpoint.websocket_url(&path).into_client_request().map_err(|e| {
            (
                Outcome::CheckFailed,
                format!("the upgrade request cannot be built: {e}"),
            )
        })?;
        for (name, value) in self.plan.headers.iter().chain(&s.headers) {
            let value = value.render(&scope);
            crest_http::check_header(name, &value).map_err(|e| (Outcome::CheckFailed, e.to_string()))?;
            let (Ok(name), Ok(value)) = (
                tungstenite::http::HeaderName::try_from(name.as_str()),
                HeaderValue::try_from(value),
            ) else {
                return Err((Outcome::CheckFailed, format!("header {name} cannot be sent")));
            };
            request.headers_mut().insert(name, value);
        }
        if let Some(c) = endpoint.cookie_header(&user.cookies, &path) {
            if let Ok(v) = HeaderValue::try_from(c) {
                request.headers_mut().insert(tungstenite::http::header::COOKIE, v);
            }
        }
        let (io, connect) = tokio::time::timeout_at(deadline, endpoint.open_transport())
            .await
            .map_err(|_| {
                (
                    Outcome::ConnectTimeout,
                    "no connection within the step's timeout".into(),
                )
            })?
            .map_err(|e| (e.outcome, e.message))?;
        t.connect = Some(connect);
        let t1 = Instant::now();
        let (conn, response) = tokio::time::timeout_at(deadline, tokio_tungstenite::client_async(request, io))
            .await
            .map_err(|_| (Outcome::Timeout, "no upgrade answer within the step's timeout".into()))?
            .map_err(|e| match e {
                tungstenite::Error::Http(r) => {
                    let code = r.status().as_u16();
                    t.status = Some(code);
                    let outcome = if code >= 400 {
                        Outcome::Status(code)
                    } else {
                        Outcome::Protocol
                    };
                    (outcome, format!("the upgrade was refused: HTTP {code}"))
                }
                e => ws_error(e),
            })?;
        t.ttfb = Some(t1.elapsed());
        t.status = Some(response.status().as_u16());
        Ok(conn)
    }
}

/// The outcome of a WebSocket error.
fn ws_error(e: tungstenite::Error) -> StepError {
    let outcome = match &e {
        tungstenite::Error::ConnectionClosed | tungstenite::Error::AlreadyClosed => Outcome::Closed,
        tungstenite::Error::Io(io) if io.kind() == std::io::ErrorKind::ConnectionReset => Outcome::Reset,
        tungstenite::Error::Io(io) if io.kind() == std::io::ErrorKind::UnexpectedEof => Outcome::Closed,
        tungstenite::Error::Io(_) => Outcome::Other,
        tungstenite::Error::Tls(_) => Outcome::Tls,
        _ => Outcome::Protocol,
    };
    (outcome, format!("WebSocket: {e}"))
}
