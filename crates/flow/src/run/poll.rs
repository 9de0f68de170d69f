//! Poll steps: a request sent again until the values it extracts say the work is done.

use super::{Failed, FlowUser, FlowWorkload};
use crate::plan::PollStep;
use crest_engine::Ctx;
use std::time::Instant;

impl FlowWorkload {
    pub(super) async fn poll(
        &self,
        p: &PollStep,
        user: &mut FlowUser,
        ctx: &Ctx<'_>,
        intended: &mut Option<Instant>,
    ) -> Result<(), Failed> {
        let started = Instant::now();
        loop {
            let done = |u: &FlowUser| {
                p.until
                    .iter()
                    .all(|(var, values)| u.vars.get(var).is_some_and(|v| values.contains(v)))
            };
            let give_up = started.elapsed() + p.every > p.max_wait;
            let verdict = move |u: &FlowUser| {
                if done(u) {
                    PollVerdict::Done
                } else if give_up {
                    let now: Vec<String> = p
                        .until
                        .iter()
                        .map(|(v, _)| match u.vars.get(v) {
                            // A token being polled for is a credential: say only whether it is set.
                            Some(_) if crest_model::redact::is_secret_name(v) => {
                                format!("{v} is {}", crest_model::redact::REDACTED)
                            }
                            value => format!("{v} is {:?}", value.map_or("", |s| s)),
                        })
                        .collect();
                    PollVerdict::GiveUp(format!(
                        "gave up after {} s: {}",
                        p.max_wait.as_secs_f64(),
                        now.join(", ")
                    ))
                } else {
                    PollVerdict::Again
                }
            };
            match self
                .send(&p.request, user, ctx, intended.take(), Some(&verdict))
                .await?
            {
                PollVerdict::Done => return Ok(()),
                PollVerdict::GiveUp(_) => return Err(Failed::default()),
                PollVerdict::Again => tokio::time::sleep(p.every).await,
            }
        }
    }
}

/// What a poll decided after a response.
#[derive(Debug)]
pub(super) enum PollVerdict {
    Done,
    Again,
    GiveUp(String),
}
