//! gRPC steps: calls on the user's own HTTP/2 connection to the step's server, opened when
//! first needed over the endpoint's own transport (its addresses, proxy tunnel and TLS).

use super::{Failed, FlowUser, FlowWorkload, UserScope};
use crate::plan::GrpcStep;
use bytes::Bytes;
use crest_engine::Ctx;
use crest_model::Outcome;
use std::time::Instant;

use super::message::StepError;

impl FlowWorkload {
    /// Runs a gRPC step (connect if needed, call, read, take) and records its sample.
    pub(super) async fn grpc(
        &self,
        s: &GrpcStep,
        user: &mut FlowUser,
        ctx: &Ctx<'_>,
        intended: Option<Instant>,
    ) -> Result<(), Failed> {
        let started = Instant::now();
        let intended = intended.unwrap_or(started).min(started);
        let mut t = super::message::Measured::default();
        let result = {
            let _sent = crest_engine::Unanswered::sent();
            self.grpc_call(s, user, &mut t).await
        };
        if let Err((outcome, _)) = &result {
            // A status or a failed check leaves the connection as it was; anything else broke
            // it or left it unknown, and the next call opens a new one.
            if !matches!(outcome, Outcome::Grpc(_) | Outcome::CheckFailed) {
                if let Some(c) = user.grpc.get_mut(s.endpoint) {
                    *c = None;
                }
            }
        }
        super::message::record(ctx, s.name, (intended, started, Instant::now()), &t, result)
    }

    async fn grpc_call(
        &self,
        s: &GrpcStep,
        user: &mut FlowUser,
        t: &mut super::message::Measured,
    ) -> Result<(), StepError> {
        let Some(m) = s.method.get() else {
            return Err((Outcome::Other, "the method was never described".into()));
        };
        let scope = UserScope { user, plan: &self.plan };
        let messages = match &m.fixed {
            Some(fixed) => fixed.clone(),
            None => s
                .messages
                .iter()
                .map(|j| m.method.encode(&super::body::render_json(j, &scope)))
                .collect::<Result<Vec<_>, _>>()
                .map_err(|e| (Outcome::CheckFailed, format!("request message: {e}")))?,
        };
        let metadata: Vec<(String, String)> = self
            .plan
            .headers
            .iter()
            .filter(|(name, _)| !crest_grpc::reserved(name))
            .chain(&s.metadata)
            .map(|(name, value)| (name.to_ascii_lowercase(), value.render(&scope)))
            .collect();
        if user.grpc.len() <= s.endpoint {
            user.grpc.resize_with(s.endpoint + 1, || None);
        }
        if user.grpc[s.endpoint].as_ref().is_none_or(crest_grpc::Conn::is_closed) {
            user.grpc[s.endpoint] = Some(self.grpc_open(s.endpoint, t).await?);
        }
        let Some(conn) = user.grpc[s.endpoint].as_mut() else {
            return Err((Outcome::Closed, "no connection".into()));
        };
        let mut matched = 0;
        let mut last: Option<Bytes> = None;
        let mut refused = None;
        let mut counts = crest_grpc::Counts::default();
        let called = conn
            .call(
                m.method.path().clone(),
                messages,
                &metadata,
                s.timeout,
                &mut counts,
                &mut |message: &Bytes| {
                    let Some(until) = &s.until else {
                        last = Some(message.clone());
                        return false;
                    };
                    if let Some(re) = &until.matches {
                        match m.method.decode(message) {
                            Ok(json) if re.is_match(&String::from_utf8_lossy(&json)) => {}
                            Ok(_) => return false,
                            Err(e) => {
                                refused = Some(e);
                                return true;
                            }
                        }
                    }
                    matched += 1;
                    last = Some(message.clone());
                    matched >= until.count
                },
            )
            .await;
        t.sent = counts.sent;
        t.received = counts.received;
        t.bytes_sent = counts.bytes_sent;
        t.bytes_received = counts.bytes_received;
        t.ttfb = counts.ttfb;
        called.map_err(|e| (e.outcome, e.message))?;
        if let Some(e) = refused {
            return Err((Outcome::Protocol, e));
        }
        if let Some(until) = &s.until {
            if matched < until.count {
                return Err((
                    Outcome::CheckFailed,
                    format!("the stream ended after {matched} of {} matching messages", until.count),
                ));
            }
        }
        if s.checks.is_empty() && s.extract.is_empty() {
            return Ok(());
        }
        let Some(last) = last else {
            return Err((Outcome::CheckFailed, "no response message to check".into()));
        };
        let json = m.method.decode(&last).map_err(|e| (Outcome::Protocol, e))?;
        super::message::take(&s.checks, &s.extract, user, &json, Vec::new)
    }

    /// Connects (TCP, TLS with ALPN `h2`) and starts HTTP/2: the connection's time in `connect`.
    async fn grpc_open(
        &self,
        endpoint: usize,
        t: &mut super::message::Measured,
    ) -> Result<crest_grpc::Conn, StepError> {
        let endpoint = &self.plan.endpoints[endpoint];
        let (io, connect) = tokio::time::timeout(self.plan.connect_timeout, endpoint.open_transport())
            .await
            .map_err(|_| {
                (
                    Outcome::ConnectTimeout,
                    format!("no connection within {} ms", self.plan.connect_timeout.as_millis()),
                )
            })?
            .map_err(|e| (e.outcome, e.message))?;
        t.connect = Some(connect);
        crest_grpc::Conn::open(io, endpoint.authority(), endpoint.https())
            .await
            .map_err(|e| (e.outcome, e.message))
    }
}
