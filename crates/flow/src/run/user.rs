//! A virtual user's state: its variables, data rows, connections and think times.

use crate::plan::{FlowPlan, Step};
use crate::template::Scope;
use crest_http::{CookieJar, Session};
use std::cell::RefCell;
use std::collections::HashMap;
use std::sync::atomic::Ordering;
use std::time::Duration;

/// One virtual user's state: its variables, current data rows and connections.
#[derive(Debug)]
pub struct FlowUser {
    pub(super) id: u64,
    pub(super) iteration: u64,
    pub(super) vars: HashMap<String, String>,
    pub(super) rows: Vec<Option<usize>>,
    pub(super) sessions: Vec<Session>,
    /// The user's cookies, as a browser keeps them: a session cookie from a login goes back
    /// with every later request of this user.
    pub(super) cookies: CookieJar,
    pub(super) rng: RefCell<fastrand::Rng>,
    pub(super) started: bool,
    /// Set by `on_failure: stop_user`; the engine runs no more iterations for this user.
    pub(super) stopped: bool,
    /// Set when a step of the current iteration failed, even one the flow continued past: the
    /// iteration then counts as failed.
    pub(super) step_failed: bool,
    pub(super) pg: Option<crest_pg::PgSession>,
    /// The user's open event stream, kept across `sse` steps as `pg` keeps its connection.
    pub(super) sse: Option<super::sse::Subscription>,
    /// The user's WebSocket connection, kept across steps and iterations like `pg`.
    pub(super) ws: Option<super::ws::WsConn>,
    /// The user's gRPC connections by endpoint, kept across steps and iterations like `pg`.
    pub(super) grpc: Vec<Option<crest_grpc::Conn>>,
}

impl FlowUser {
    /// A think time: uniformly between `min` and `max`.
    pub(super) fn think(&self, min: Duration, max: Duration) -> Duration {
        let span = max.saturating_sub(min).as_nanos() as u64;
        let extra = if span == 0 {
            0
        } else {
            self.rng.borrow_mut().u64(..=span)
        };
        min + Duration::from_nanos(extra)
    }

    /// The think time of `steps`, had they run: each think step drawn as it would have been,
    /// loops counted as many times as they repeat.
    pub(super) fn think_time(&self, steps: &[Step]) -> Duration {
        steps
            .iter()
            .map(|s| match s {
                Step::Think { min, max } => self.think(*min, *max),
                Step::Loop { times, steps } if has_think(steps) => (0..*times).map(|_| self.think_time(steps)).sum(),
                // The branch not yet taken is unknown: the shorter one is what the user would
                // have waited at least.
                Step::If { then, otherwise, .. } => self.think_time(then).min(self.think_time(otherwise)),
                // How many elements a foreach would have had is unknown too: none, at least.
                _ => Duration::ZERO,
            })
            .sum()
    }
}

pub(super) fn has_think(steps: &[Step]) -> bool {
    steps.iter().any(|s| match s {
        Step::Think { .. } => true,
        Step::Loop { steps, .. } | Step::Foreach { steps, .. } => has_think(steps),
        Step::If { then, otherwise, .. } => has_think(then) || has_think(otherwise),
        _ => false,
    })
}

/// What rendering sees: the user's state and the plan's shared parts.
pub(super) struct UserScope<'a> {
    pub(super) user: &'a FlowUser,
    pub(super) plan: &'a FlowPlan,
}

impl Scope for UserScope<'_> {
    fn var(&self, name: &str) -> Option<&str> {
        self.user.vars.get(name).map(String::as_str)
    }
    fn column(&self, feeder: &str, column: &str) -> Option<&str> {
        let i = self.plan.feeders.iter().position(|f| f.name == feeder)?;
        let row = self.user.rows.get(i).copied().flatten()?;
        self.plan.feeders[i].value(row, column)
    }
    fn user(&self) -> u64 {
        self.user.id
    }
    fn iteration(&self) -> u64 {
        self.user.iteration
    }
    fn next_seq(&self) -> u64 {
        self.plan.seq.fetch_add(1, Ordering::Relaxed)
    }
    fn rng(&self) -> &RefCell<fastrand::Rng> {
        &self.user.rng
    }
}
