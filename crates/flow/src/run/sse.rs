//! Server-sent event steps: the user's stream, opened when it has none, read until enough
//! events match, reopened with `Last-Event-ID` when the server ends it.

use super::{Failed, FlowUser, FlowWorkload, UserScope};
use crate::event_stream::{Event, Parser};
use crate::plan::SseStep;
use crest_engine::Ctx;
use crest_http::Streaming;
use crest_model::Outcome;
use std::collections::VecDeque;
use std::time::{Duration, Instant};

/// A user's open event stream.
#[derive(Debug)]
pub(crate) struct Subscription {
    stream: Option<Streaming>,
    parser: Parser,
    /// Events read but not yet taken by a step: one chunk may hold several.
    queued: VecDeque<(Event, Instant)>,
}

/// What the step measured so far, for its sample.
#[derive(Default)]
struct Tally {
    connect: Option<Duration>,
    first_event: Option<Instant>,
    status: Option<u16>,
    events: u64,
    bytes: u64,
    bytes_sent: u64,
}

use super::message::StepError;

impl FlowWorkload {
    /// Runs an `sse` step and records its sample.
    pub(super) async fn sse(
        &self,
        s: &SseStep,
        user: &mut FlowUser,
        ctx: &Ctx<'_>,
        intended: Option<Instant>,
    ) -> Result<(), Failed> {
        let started = Instant::now();
        let intended = intended.unwrap_or(started).min(started);
        let mut tally = Tally::default();
        let result = {
            // The step's sample is one request the server holds from the subscription on.
            let _sent = crest_engine::Unanswered::sent();
            self.receive(s, user, ctx, started, &mut tally).await
        };
        let (result, done) = match result {
            Ok(at) => (Ok(()), at),
            Err(e) => (Err(e), Instant::now()),
        };
        if result.is_err() || s.close {
            user.sse = None;
        }
        let measured = super::message::Measured {
            connect: tally.connect,
            ttfb: tally.first_event.map(|t| t.saturating_duration_since(intended)),
            status: tally.status,
            sent: 0,
            received: tally.events,
            bytes_sent: tally.bytes_sent,
            bytes_received: tally.bytes,
        };
        super::message::record(ctx, s.name, (intended, started, done), &measured, result)
    }

    /// Reads events until the step's condition holds; the instant the event that met it came.
    async fn receive(
        &self,
        s: &SseStep,
        user: &mut FlowUser,
        ctx: &Ctx<'_>,
        started: Instant,
        tally: &mut Tally,
    ) -> Result<Instant, StepError> {
        let deadline = tokio::time::Instant::from_std(started + s.timeout);
        let mut reconnects = s.reconnects;
        let mut counted = 0;
        let mut last = started;
        loop {
            if user.sse.as_ref().is_none_or(|sub| sub.stream.is_none()) {
                self.subscribe(s, user, ctx, deadline, tally, None).await?;
            }
            if let Some((event, at)) = user.sse.as_mut().and_then(|sub| sub.queued.pop_front()) {
                tally.events += 1;
                tally.bytes += event.bytes;
                tally.first_event.get_or_insert(at);
                if let Some(gap) = s.max_gap {
                    let waited = at.saturating_duration_since(last);
                    if waited > gap {
                        return Err((
                            Outcome::CheckFailed,
                            format!(
                                "check: {}ms between events, more than max_gap {}ms",
                                waited.as_millis(),
                                gap.as_millis()
                            ),
                        ));
                    }
                }
                last = at;
                let wanted = s.event.as_ref().is_none_or(|k| *k == event.kind)
                    && s.matches.as_ref().is_none_or(|re| re.is_match(&event.data));
                if wanted {
                    counted += 1;
                    if counted >= s.count {
                        self.take_values(s, user, &event)?;
                        return Ok(at);
                    }
                }
                continue;
            }
            let Some(sub) = user.sse.as_mut() else {
                return Err((Outcome::Other, "no stream".into()));
            };
            let Some(stream) = sub.stream.as_mut() else { continue };
            // A silence longer than `max_gap` fails the step when it has lasted that long, not
            // only when (if ever) the next event comes.
            let gap_ends = s
                .max_gap
                .map(|gap| tokio::time::Instant::from_std(last + gap))
                .filter(|at| *at < deadline);
            let read = tokio::time::timeout_at(gap_ends.unwrap_or(deadline), stream.chunk()).await;
            match read {
                Err(_) if gap_ends.is_some() => {
                    let gap = s.max_gap.unwrap_or_default();
                    return Err((
                        Outcome::CheckFailed,
                        format!("check: no event for {}ms (max_gap)", gap.as_millis()),
                    ));
                }
                Err(_) => {
                    return Err((
                        Outcome::ReceiveTimeout,
                        format!("{counted} of {} events in {}ms", s.count, s.timeout.as_millis()),
                    ));
                }
                Ok(Ok(Some(bytes))) => {
                    let now = Instant::now();
                    let events = sub.parser.feed(&bytes);
                    sub.queued.extend(events.into_iter().map(|e| (e, now)));
                }
                Ok(ended) => {
                    let why = match ended {
                        Err(e) => (e.outcome, format!("the stream broke: {e}")),
                        _ => (Outcome::Closed, "the server ended the stream".to_string()),
                    };
                    sub.stream = None;
                    if reconnects == 0 {
                        return if s.end_ok { Ok(Instant::now()) } else { Err(why) };
                    }
                    reconnects -= 1;
                    // The server's `retry:` is how long it asked clients to wait.
                    let wait = Duration::from_millis(sub.parser.retry.unwrap_or(0));
                    let last_id = sub.parser.last_id.clone();
                    sub.parser.reset();
                    if tokio::time::timeout_at(deadline, tokio::time::sleep(wait))
                        .await
                        .is_err()
                    {
                        return Err((
                            Outcome::ReceiveTimeout,
                            "the stream ended; its retry wait outlasted the step".into(),
                        ));
                    }
                    self.subscribe(s, user, ctx, deadline, tally, Some(last_id)).await?;
                }
            }
        }
    }

    /// Opens the user's stream; `last_id` (possibly empty) marks a reconnect, recorded under
    /// the step's reconnect name.
    async fn subscribe(
        &self,
        s: &SseStep,
        user: &mut FlowUser,
        ctx: &Ctx<'_>,
        deadline: tokio::time::Instant,
        tally: &mut Tally,
        last_id: Option<String>,
    ) -> Result<(), StepError> {
        let t0 = Instant::now();
        let (target, mut headers) = {
            let scope = UserScope { user, plan: &self.plan };
            let mut headers: Vec<(String, String)> = Vec::new();
            for (n, t) in self.plan.headers.iter().chain(&s.headers) {
                let v = t.render(&scope);
                // A step's header replaces a default of the same name.
                match headers.iter_mut().find(|(h, _)| h.eq_ignore_ascii_case(n)) {
                    Some(slot) => slot.1 = v,
                    None => headers.push((n.clone(), v)),
                }
            }
            (s.path.render(&scope), headers)
        };
        if let Some(id) = last_id.as_ref().filter(|id| !id.is_empty()) {
            headers.push(("Last-Event-ID".into(), id.clone()));
        }
        let endpoint = &self.plan.endpoints[s.endpoint];
        let opened =
            tokio::time::timeout_at(deadline, endpoint.open_stream(&target, &headers, &mut user.cookies)).await;
        let result = match opened {
            Err(_) => Err((Outcome::Timeout, "no response to the subscription in time".to_string())),
            Ok(Err(e)) => Err((e.outcome, e.message)),
            Ok(Ok(stream)) => {
                tally.connect = Some(stream.connect);
                tally.status = Some(stream.status);
                tally.bytes_sent += stream.bytes_sent;
                let content_type = stream.header("content-type").unwrap_or("");
                if !(200..300).contains(&stream.status) {
                    Err((
                        Outcome::Status(stream.status),
                        format!("subscription answered {}", stream.status),
                    ))
                } else if !content_type.trim_start().starts_with("text/event-stream") {
                    Err((
                        Outcome::Protocol,
                        format!("the subscription's content type is {content_type:?}, not text/event-stream"),
                    ))
                } else {
                    Ok(stream)
                }
            }
        };
        if last_id.is_some() {
            let sample = crest_model::Sample {
                name: s.reconnect_name,
                segment: 0,
                user: 0,
                iteration: 0,
                intended: ctx.offset(t0),
                send_lag: Duration::ZERO,
                dns: None,
                connect: tally.connect,
                ttfb: None,
                total: t0.elapsed(),
                bytes_sent: 0,
                bytes_received: 0,
                messages_sent: 0,
                messages_received: 0,
                status: tally.status,
                outcome: result.as_ref().map_or_else(|e| e.0, |_| Outcome::Success),
            };
            ctx.record(sample, result.as_ref().err().map(|e| &e.1 as &dyn std::fmt::Display));
        }
        let stream = result?;
        match user.sse.as_mut() {
            Some(sub) => sub.stream = Some(stream),
            None => {
                user.sse = Some(Subscription {
                    stream: Some(stream),
                    parser: Parser::default(),
                    queued: VecDeque::new(),
                });
            }
        }
        Ok(())
    }

    /// Checks and extraction on the event that completed the step: its data is the body, its
    /// type and id are the `event` and `id` headers.
    fn take_values(&self, s: &SseStep, user: &mut FlowUser, event: &Event) -> Result<(), StepError> {
        let headers = || vec![("event".into(), event.kind.clone()), ("id".into(), event.id.clone())];
        super::message::take(&s.checks, &s.extract, user, event.data.as_bytes(), headers)
    }
}
