//! Running a flow plan: the engine workload for scenarios.
//!
//! This module runs an iteration: it picks a flow by weight and runs its steps in order. The
//! steps' work lives beside it: [`user`] (a user's state and think times), [`http`] (request
//! steps), [`poll`], [`sql`], [`sse`], [`ws`] and [`grpc`] (message streams and calls, with
//! [`message`] for what they take from a message) and [`body`] (rendering request bodies).

mod body;
mod grpc;
mod http;
mod message;
mod poll;
mod sql;
mod sse;
mod user;
mod ws;

pub use body::json_template;
pub use user::FlowUser;
use user::UserScope;

use crate::plan::{FlowPlan, OnFailure, Step};
use crate::template::MAX_VALUE;
use crest_engine::{Ctx, Workload};
use crest_http::{CookieJar, Session};
use std::cell::RefCell;
use std::collections::HashMap;
use std::time::{Duration, Instant};

/// A flow plan as an engine workload.
#[derive(Debug)]
pub struct FlowWorkload {
    plan: FlowPlan,
    total_weight: u32,
}

impl FlowWorkload {
    /// Wraps a validated plan.
    pub fn new(plan: FlowPlan) -> Self {
        let total_weight = plan.flows.iter().map(|f| f.weight).sum();
        FlowWorkload { plan, total_weight }
    }
}

/// How a list of steps ended when none failed.
#[derive(Debug, PartialEq, Eq)]
enum Control {
    /// It ran to its end.
    Done,
    /// A `break` asked to leave the innermost loop.
    Break,
    /// A `next` asked for the innermost loop's next round.
    Next,
}

/// A step failed; the iteration ends there.
#[derive(Debug, Default)]
struct Failed {
    /// The think time of the steps the failure skipped; with `on_failure: next_iteration` the
    /// user still waits it before its next iteration.
    skipped: Duration,
}

impl Workload for FlowWorkload {
    type User = FlowUser;

    fn new_user(&self, id: u64) -> FlowUser {
        let mut user = FlowUser {
            id,
            iteration: 0,
            vars: HashMap::new(),
            rows: vec![None; self.plan.feeders.len()],
            sessions: self.plan.endpoints.iter().map(|_| Session::default()).collect(),
            cookies: CookieJar::default(),
            rng: RefCell::new(fastrand::Rng::new()),
            started: false,
            stopped: false,
            step_failed: false,
            pg: None,
            sse: None,
            ws: None,
            grpc: Vec::new(),
        };
        for (i, f) in self.plan.feeders.iter().enumerate() {
            if f.mode == crate::feeder::FeedMode::Unique {
                user.rows[i] = f.take(id, &mut user.rng.borrow_mut());
            }
        }
        for (name, t) in &self.plan.variables {
            let v = t.render(&UserScope {
                user: &user,
                plan: &self.plan,
            });
            user.vars.insert(name.clone(), v);
        }
        user
    }

    async fn iterate<'a>(&'a self, user: &'a mut FlowUser, ctx: Ctx<'a>) {
        let mut intended = Some(ctx.intended());
        if !user.started {
            user.started = true;
            let on_start = self
                .run_steps(&self.plan.on_start, user, &ctx, &mut intended, OnFailure::NextIteration)
                .await;
            if let Err(failed) = on_start {
                if user.stopped {
                    // Stopped before its first iteration (a value past its limit): counted as
                    // a failed iteration of the flow it would have run, so it does not vanish.
                    if let Some((index, _)) = self.pick(user) {
                        ctx.iteration_started(index as u32);
                        ctx.iteration_ended(index as u32, true);
                    }
                }
                tokio::time::sleep(failed.skipped).await;
                user.iteration += 1;
                return;
            }
        }
        for (i, f) in self.plan.feeders.iter().enumerate() {
            if f.mode != crate::feeder::FeedMode::Unique {
                user.rows[i] = f.take(user.id, &mut user.rng.borrow_mut());
            }
        }
        if let Some((index, flow)) = self.pick(user) {
            let index = index as u32;
            ctx.iteration_started(index);
            user.step_failed = false;
            let run = self
                .run_steps(&flow.steps, user, &ctx, &mut intended, flow.on_failure)
                .await;
            // Ended before any pause for the steps a failure skipped: that pause keeps the
            // user's pace, it is not the iteration's time.
            ctx.iteration_ended(index, run.is_err() || user.step_failed);
            if let Err(failed) = run {
                match flow.on_failure {
                    OnFailure::StopUser => user.stopped = true,
                    OnFailure::NextIteration | OnFailure::Continue => {
                        if !failed.skipped.is_zero() {
                            tokio::time::sleep(failed.skipped).await;
                        }
                    }
                }
            }
        }
        user.iteration += 1;
    }

    fn stopped(&self, user: &FlowUser) -> bool {
        user.stopped
    }

    async fn finish<'a>(&'a self, user: &'a mut FlowUser, ctx: Ctx<'a>) {
        if user.started && !self.plan.on_stop.is_empty() {
            let _ = self
                .run_steps(&self.plan.on_stop, user, &ctx, &mut None, OnFailure::NextIteration)
                .await;
        }
    }
}

impl FlowWorkload {
    /// The flow this iteration runs, by weight, with its index among the scenario's flows.
    fn pick(&self, user: &FlowUser) -> Option<(usize, &crate::plan::Flow)> {
        if self.total_weight == 0 {
            return None;
        }
        let mut r = user.rng.borrow_mut().u32(..self.total_weight);
        for (i, f) in self.plan.flows.iter().enumerate() {
            if r < f.weight {
                return Some((i, f));
            }
            r -= f.weight;
        }
        None
    }

    /// Runs steps in order; a failed one ends them unless `on_failure` says to continue, and
    /// the error carries the think time of the steps skipped. `intended` is the iteration's
    /// scheduled start, used (once) by the first request so that open-model latency counts
    /// from the schedule. A `break` or `next` ends them too, and says which.
    async fn run_steps(
        &self,
        steps: &[Step],
        user: &mut FlowUser,
        ctx: &Ctx<'_>,
        intended: &mut Option<Instant>,
        on_failure: OnFailure,
    ) -> Result<Control, Failed> {
        for (i, step) in steps.iter().enumerate() {
            // Steps that do no I/O (a `set` in a loop of a billion rounds) never wait, so they
            // spend the task's cooperative budget to hand the thread back now and then: the
            // ticker, the deadline and a signal's stop all run on this thread.
            tokio::task::coop::consume_budget().await;
            let done = match step {
                Step::Request(r) => self
                    .request(r, user, ctx, intended.take())
                    .await
                    .map(|()| Control::Done),
                Step::Poll(p) => self.poll(p, user, ctx, intended).await.map(|()| Control::Done),
                Step::Think { min, max } => {
                    tokio::time::sleep(user.think(*min, *max)).await;
                    Ok(Control::Done)
                }
                Step::Set(vars) => {
                    let mut done = Ok(Control::Done);
                    for (name, t) in vars {
                        match t.render_at_most(&UserScope { user, plan: &self.plan }, MAX_VALUE) {
                            Some(v) => {
                                user.vars.insert(name.clone(), v);
                            }
                            None => {
                                // A value that outgrows the limit grows every round (it is set
                                // from itself): this user could only fail again, so it stops.
                                user.vars.remove(name);
                                user.stopped = true;
                                done = Err(Failed::default());
                                break;
                            }
                        }
                    }
                    done
                }
                Step::Sql(s) => self.sql(s, user, ctx, intended.take()).await.map(|()| Control::Done),
                Step::Ws(s) => self.ws(s, user, ctx, intended.take()).await.map(|()| Control::Done),
                Step::Grpc(s) => self.grpc(s, user, ctx, intended.take()).await.map(|()| Control::Done),
                Step::Loop { times, steps } => {
                    let mut done = Ok(Control::Done);
                    for rep in 0..*times {
                        match Box::pin(self.run_steps(steps, user, ctx, intended, on_failure)).await {
                            Ok(Control::Break) => break,
                            Ok(Control::Done | Control::Next) => {}
                            Err(mut failed) => {
                                for _ in rep + 1..*times {
                                    failed.skipped += user.think_time(steps);
                                }
                                done = Err(failed);
                                break;
                            }
                        }
                    }
                    done
                }
                Step::If {
                    condition,
                    then,
                    otherwise,
                } => {
                    let branch = if condition.holds(&UserScope { user, plan: &self.plan }) {
                        then
                    } else {
                        otherwise
                    };
                    // A break or next inside a branch belongs to the loop around the `if`.
                    Box::pin(self.run_steps(branch, user, ctx, intended, on_failure)).await
                }
                Step::Foreach { items, var, max, steps } => {
                    let text = items.render(&UserScope { user, plan: &self.plan });
                    let elements = match serde_json::from_str::<serde_json::Value>(&text) {
                        Ok(serde_json::Value::Array(a)) => a,
                        _ => Vec::new(),
                    };
                    let mut done = Ok(Control::Done);
                    for element in elements.into_iter().take(usize::try_from(*max).unwrap_or(usize::MAX)) {
                        let value = match element {
                            serde_json::Value::String(s) => s,
                            other => other.to_string(),
                        };
                        user.vars.insert(var.clone(), value);
                        match Box::pin(self.run_steps(steps, user, ctx, intended, on_failure)).await {
                            Ok(Control::Break) => break,
                            Ok(Control::Done | Control::Next) => {}
                            Err(failed) => {
                                done = Err(failed);
                                break;
                            }
                        }
                    }
                    done
                }
                Step::Break => Ok(Control::Break),
                Step::Next => Ok(Control::Next),
                Step::Sse(s) => self.sse(s, user, ctx, intended.take()).await.map(|()| Control::Done),
            };
            match done {
                Ok(Control::Done) => {}
                Ok(control) => return Ok(control),
                Err(mut failed) => {
                    user.step_failed = true;
                    if on_failure != OnFailure::Continue {
                        failed.skipped += user.think_time(&steps[i + 1..]);
                        return Err(failed);
                    }
                }
            }
        }
        Ok(Control::Done)
    }
}
