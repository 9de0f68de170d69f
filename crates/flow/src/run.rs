//! Running a flow plan: the engine workload for scenarios.

use crate::extract::LazyJson;
use crate::plan::{Body, FlowPlan, JsonTemplate, OnFailure, Part, PartContent, PollStep, RequestStep, Step};
use crate::template::{Scope, Template, MAX_VALUE};
use crest_engine::{Ctx, Workload};
use crest_http::{build_request, Call, CookieJar, Response, Session};
use crest_model::Outcome;
use std::cell::RefCell;
use std::collections::HashMap;
use std::sync::atomic::Ordering;
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

/// One virtual user's state: its variables, current data rows and connections.
#[derive(Debug)]
pub struct FlowUser {
    id: u64,
    iteration: u64,
    vars: HashMap<String, String>,
    rows: Vec<Option<usize>>,
    sessions: Vec<Session>,
    /// The user's cookies, as a browser keeps them: a session cookie from a login goes back
    /// with every later request of this user.
    cookies: CookieJar,
    rng: RefCell<fastrand::Rng>,
    started: bool,
    /// Set by `on_failure: stop_user`; the engine runs no more iterations for this user.
    stopped: bool,
    /// Set when a step of the current iteration failed, even one the flow continued past: the
    /// iteration then counts as failed.
    step_failed: bool,
    pg: Option<crest_pg::PgSession>,
}

impl FlowUser {
    /// A think time: uniformly between `min` and `max`.
    fn think(&self, min: Duration, max: Duration) -> Duration {
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
    fn think_time(&self, steps: &[Step]) -> Duration {
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

fn has_think(steps: &[Step]) -> bool {
    steps.iter().any(|s| match s {
        Step::Think { .. } => true,
        Step::Loop { steps, .. } | Step::Foreach { steps, .. } => has_think(steps),
        Step::If { then, otherwise, .. } => has_think(then) || has_think(otherwise),
        _ => false,
    })
}

/// What rendering sees: the user's state and the plan's shared parts.
struct UserScope<'a> {
    user: &'a FlowUser,
    plan: &'a FlowPlan,
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

    async fn poll(
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

    async fn request(
        &self,
        r: &RequestStep,
        user: &mut FlowUser,
        ctx: &Ctx<'_>,
        intended: Option<Instant>,
    ) -> Result<(), Failed> {
        self.send(r, user, ctx, intended, None).await.map(|_| ())
    }

    /// Sends one request, extracts and checks, and records its sample. For a poll, `verdict`
    /// decides after extraction whether it is done; the request's checks apply only then.
    async fn send(
        &self,
        r: &RequestStep,
        user: &mut FlowUser,
        ctx: &Ctx<'_>,
        intended: Option<Instant>,
        verdict: Option<&dyn Fn(&FlowUser) -> PollVerdict>,
    ) -> Result<PollVerdict, Failed> {
        let endpoint = &self.plan.endpoints[r.endpoint];
        let request = {
            let scope = UserScope { user, plan: &self.plan };
            self.render(r, &scope, endpoint.authority())
        };
        let request = match request {
            Ok(bytes) => bytes,
            Err(msg) => {
                // A rendered value made the request invalid (a line break in a header, say).
                let now = Instant::now();
                let sample = crest_model::Sample {
                    name: r.name,
                    segment: 0,
                    user: 0,
                    iteration: 0,
                    intended: ctx.offset(intended.unwrap_or(now)),
                    send_lag: Duration::ZERO,
                    dns: None,
                    connect: None,
                    ttfb: None,
                    total: Duration::ZERO,
                    bytes_sent: 0,
                    bytes_received: 0,
                    status: None,
                    outcome: Outcome::CheckFailed,
                };
                ctx.record(sample, Some(&format!("the request could not be built: {msg}")));
                return Err(Failed::default());
            }
        };
        let call = Call {
            request: &request,
            head: r.method == "HEAD",
            timeout: r.timeout.unwrap_or(self.plan.timeout),
            connect_timeout: self.plan.connect_timeout,
            keepalive: self.plan.keepalive,
        };
        let needs_response = !r.extract.is_empty() || !r.checks.is_empty();
        let mut response = Response::default();
        let ex = endpoint
            .fetch(
                &mut user.sessions[r.endpoint],
                &call,
                needs_response.then_some(&mut response),
                Some(&mut user.cookies),
            )
            .await;
        let intended = intended.unwrap_or(ex.started).min(ex.started);
        let mut sample = ex.sample(r.name, intended, ctx.offset(intended));
        let transport_ok = matches!(ex.outcome, Outcome::Success | Outcome::Status(_));
        if !transport_ok || (matches!(ex.outcome, Outcome::Status(_)) && !r.checks_status()) {
            ctx.record(sample, ex.error());
            return Err(Failed::default());
        }
        let mut json = LazyJson::default();
        let mut problem: Option<String> = None;
        for (var, e) in &r.extract {
            match e.extract(&response, &mut json) {
                Ok(v) => {
                    user.vars.insert(var.clone(), v);
                }
                Err(why) => {
                    problem = Some(format!("extract {var}: {why}"));
                    break;
                }
            }
        }
        let mut result = PollVerdict::Done;
        if problem.is_none() {
            if let Some(v) = verdict {
                result = v(user);
                if let PollVerdict::GiveUp(why) = &result {
                    problem = Some(why.clone());
                }
            }
        }
        if problem.is_none() && matches!(result, PollVerdict::Done) {
            let took = ex.ended - ex.started;
            problem = r
                .checks
                .iter()
                .find_map(|c| c.check(&response, took, &mut json).err().map(|m| format!("check: {m}")));
        }
        match problem {
            // A failing status stays the primary class even when a check lets it through:
            // the failed check or extraction is usually only its consequence (an error page
            // has no `$.id`), so it is the secondary reason in the example.
            Some(msg) if matches!(ex.outcome, Outcome::Status(_)) => {
                ctx.record(sample, Some(&format_args!("{}; {msg}", ex.outcome.describe())));
                Err(Failed::default())
            }
            Some(msg) => {
                sample.outcome = Outcome::CheckFailed;
                ctx.record(sample, Some(&msg));
                Err(Failed::default())
            }
            None => {
                sample.outcome = Outcome::Success;
                ctx.record(sample, None);
                Ok(result)
            }
        }
    }

    /// The request's bytes for this user.
    fn render(&self, r: &RequestStep, scope: &UserScope<'_>, authority: &str) -> Result<Vec<u8>, String> {
        let mut target = r.path.render(scope);
        if !r.query.is_empty() {
            let mut q = form_urlencoded::Serializer::new(String::new());
            for (k, v) in &r.query {
                q.append_pair(k, &v.render(scope));
            }
            target.push(if target.contains('?') { '&' } else { '?' });
            target.push_str(&q.finish());
        }
        let mut headers: Vec<(String, String)> = Vec::with_capacity(self.plan.headers.len() + r.headers.len() + 1);
        for (n, t) in self.plan.headers.iter().chain(r.headers.iter()) {
            let v = t.render(scope);
            // A step's header replaces a default of the same name.
            match headers.iter_mut().find(|(h, _)| h.eq_ignore_ascii_case(n)) {
                Some(slot) => slot.1 = v,
                None => headers.push((n.clone(), v)),
            }
        }
        let body = match &r.body {
            Body::None => Vec::new(),
            Body::Text(t) => t.render(scope).into_bytes(),
            Body::Bytes(b) => b.clone(),
            Body::Json(j) => {
                if !headers.iter().any(|(h, _)| h.eq_ignore_ascii_case("content-type")) {
                    headers.push(("Content-Type".into(), "application/json".into()));
                }
                serde_json::to_vec(&render_json(j, scope)).map_err(|e| e.to_string())?
            }
            Body::Form(fields) => {
                let mut f = form_urlencoded::Serializer::new(String::new());
                for (k, v) in fields {
                    f.append_pair(k, &v.render(scope));
                }
                set_content_type(&mut headers, "application/x-www-form-urlencoded".into());
                f.finish().into_bytes()
            }
            Body::Multipart(parts) => {
                let (body, boundary) = multipart(parts, scope);
                set_content_type(&mut headers, format!("multipart/form-data; boundary={boundary}"));
                body
            }
        };
        build_request(&r.method, &target, authority, &headers, &body, self.plan.keepalive).map_err(|e| e.to_string())
    }
}

impl FlowWorkload {
    /// Runs an SQL step on the user's connection, opening it if needed.
    async fn sql(
        &self,
        s: &crate::plan::SqlStep,
        user: &mut FlowUser,
        ctx: &Ctx<'_>,
        intended: Option<Instant>,
    ) -> Result<(), Failed> {
        let started = Instant::now();
        let intended = intended.unwrap_or(started).min(started);
        let sample = |name, total: Duration, connect: Option<Duration>, outcome| crest_model::Sample {
            name,
            segment: 0,
            user: 0,
            iteration: 0,
            intended: ctx.offset(intended),
            send_lag: started - intended,
            dns: None,
            connect,
            ttfb: None,
            total,
            bytes_sent: 0,
            bytes_received: 0,
            status: None,
            outcome,
        };
        let mut connect = None;
        if user.pg.as_ref().is_none_or(crest_pg::PgSession::is_closed) {
            let Some(target) = &self.plan.database else {
                ctx.record(
                    sample(s.name, Duration::ZERO, None, Outcome::SqlError),
                    Some(&"no database configured"),
                );
                return Err(Failed::default());
            };
            match target.connect().await {
                Ok(session) => {
                    connect = Some(started.elapsed());
                    user.pg = Some(session);
                }
                Err(e) => {
                    ctx.record(sample(s.name, Instant::now() - intended, None, e.outcome), Some(&e));
                    return Err(Failed::default());
                }
            }
        }
        let result = self.sql_statements(s, user, ctx, intended).await;
        let total = Instant::now() - intended;
        match result {
            Ok(()) => {
                ctx.record(sample(s.name, total, connect, Outcome::Success), None);
                Ok(())
            }
            Err((outcome, message)) => {
                if matches!(outcome, Outcome::SqlConnectionLost) {
                    user.pg = None;
                }
                ctx.record(sample(s.name, total, connect, outcome), Some(&message));
                Err(Failed::default())
            }
        }
    }

    async fn sql_statements(
        &self,
        s: &crate::plan::SqlStep,
        user: &mut FlowUser,
        ctx: &Ctx<'_>,
        intended: Instant,
    ) -> Result<(), (Outcome, String)> {
        let params: Vec<Vec<String>> = {
            let scope = UserScope { user, plan: &self.plan };
            s.statements
                .iter()
                .map(|st| st.params.iter().map(|p| p.render(&scope)).collect())
                .collect()
        };
        let Some(pg) = user.pg.as_mut() else {
            return Err((Outcome::SqlConnectionLost, "no connection".into()));
        };
        // The step's sample is its one request; the server holds it from its first statement.
        let _sent = crest_engine::Unanswered::sent();
        if s.transaction {
            pg.simple("BEGIN").await.map_err(|e| (e.outcome, e.message))?;
        }
        let mut last = None;
        for (st, p) in s.statements.iter().zip(&params) {
            let t0 = Instant::now();
            let r = pg.run(&st.query, p).await;
            if s.transaction {
                // Each statement of a transaction is also recorded on its own.
                let outcome = r.as_ref().map_or_else(|e| e.outcome, |_| Outcome::Success);
                let one = crest_model::Sample {
                    name: st.name,
                    segment: 0,
                    user: 0,
                    iteration: 0,
                    intended: ctx.offset(t0),
                    send_lag: Duration::ZERO,
                    dns: None,
                    connect: None,
                    ttfb: None,
                    total: t0.elapsed(),
                    bytes_sent: 0,
                    bytes_received: 0,
                    status: None,
                    outcome,
                };
                ctx.record(one, r.as_ref().err().map(|e| e as &dyn std::fmt::Display));
            }
            match r {
                Ok(v) => last = Some(v),
                Err(e) => {
                    if s.transaction {
                        let _ = pg.simple("ROLLBACK").await;
                    }
                    return Err((e.outcome, e.message));
                }
            }
        }
        if s.transaction {
            pg.simple("COMMIT").await.map_err(|e| (e.outcome, e.message))?;
        }
        let _ = intended;
        let Some(last) = last else { return Ok(()) };
        for c in &s.checks {
            let ok = match c {
                crate::plan::SqlCheck::Rows(n) => (last.rows == *n)
                    .then_some(())
                    .ok_or_else(|| format!("{} rows, expected {n}", last.rows)),
                crate::plan::SqlCheck::RowsMin(n) => (last.rows >= *n)
                    .then_some(())
                    .ok_or_else(|| format!("{} rows, expected at least {n}", last.rows)),
                crate::plan::SqlCheck::Value(col, want) => {
                    match last.returned.first().map(|row| crest_pg::value(row, col)) {
                        Some(Ok(Some(v))) if v == *want => Ok(()),
                        Some(Ok(_)) if crest_model::redact::is_secret_name(col) => Err(format!(
                            "{col} is not the expected value (neither is shown: the name looks secret)"
                        )),
                        Some(Ok(v)) => Err(format!("{col} is {v:?}, expected {want:?}")),
                        Some(Err(m)) => Err(m.to_string()),
                        None => Err(format!("no row to read {col} from")),
                    }
                }
            };
            ok.map_err(|m| (Outcome::CheckFailed, format!("check: {m}")))?;
        }
        for (var, col) in &s.extract {
            let v = match last.returned.first().map(|row| crest_pg::value(row, col)) {
                Some(Ok(Some(v))) => v,
                Some(Ok(None)) => return Err((Outcome::CheckFailed, format!("extract {var}: {col} is NULL"))),
                Some(Err(m)) => return Err((Outcome::CheckFailed, format!("extract {var}: {m}"))),
                None => return Err((Outcome::CheckFailed, format!("extract {var}: no row returned"))),
            };
            user.vars.insert(var.clone(), v);
        }
        Ok(())
    }
}

/// What a poll decided after a response.
#[derive(Debug)]
enum PollVerdict {
    Done,
    Again,
    GiveUp(String),
}

/// Sets the body's media type unless the request set its own.
fn set_content_type(headers: &mut Vec<(String, String)>, value: String) {
    if !headers.iter().any(|(h, _)| h.eq_ignore_ascii_case("content-type")) {
        headers.push(("Content-Type".into(), value));
    }
}

/// A multipart/form-data body (RFC 7578) and its boundary, which is random and checked not to
/// occur in any part.
fn multipart(parts: &[Part], scope: &dyn Scope) -> (Vec<u8>, String) {
    let values: Vec<Option<String>> = parts
        .iter()
        .map(|p| match &p.content {
            PartContent::Value(t) => Some(t.render(scope)),
            PartContent::File { .. } => None,
        })
        .collect();
    let boundary = loop {
        // Drawn after the values are rendered, which may use the same generator.
        let b = format!("crest-{:016x}", scope.rng().borrow_mut().u64(..));
        let inside = |bytes: &[u8]| bytes.windows(b.len()).any(|w| w == b.as_bytes());
        let clash = parts.iter().zip(&values).any(|(p, v)| match (&p.content, v) {
            (_, Some(v)) => inside(v.as_bytes()),
            (PartContent::File { bytes, .. }, None) => inside(bytes),
            _ => false,
        });
        if !clash {
            break b;
        }
    };
    // Quotes and line breaks in names would end the header they sit in.
    let quoted = |s: &str| s.replace('"', "%22").replace('\r', "%0D").replace('\n', "%0A");
    let mut out = Vec::new();
    for (p, v) in parts.iter().zip(values) {
        out.extend_from_slice(
            format!(
                "--{boundary}\r\nContent-Disposition: form-data; name=\"{}\"",
                quoted(&p.name)
            )
            .as_bytes(),
        );
        match (&p.content, v) {
            (
                PartContent::File {
                    filename,
                    content_type,
                    bytes,
                },
                _,
            ) => {
                out.extend_from_slice(
                    format!(
                        "; filename=\"{}\"\r\nContent-Type: {content_type}\r\n\r\n",
                        quoted(filename)
                    )
                    .as_bytes(),
                );
                out.extend_from_slice(bytes);
            }
            (_, v) => {
                out.extend_from_slice(b"\r\n\r\n");
                out.extend_from_slice(v.unwrap_or_default().as_bytes());
            }
        }
        out.extend_from_slice(b"\r\n");
    }
    out.extend_from_slice(format!("--{boundary}--\r\n").as_bytes());
    (out, boundary)
}

fn render_json(j: &JsonTemplate, scope: &dyn Scope) -> serde_json::Value {
    match j {
        JsonTemplate::Value(v) => v.clone(),
        JsonTemplate::String(t) => serde_json::Value::String(t.render(scope)),
        JsonTemplate::Array(items) => serde_json::Value::Array(items.iter().map(|i| render_json(i, scope)).collect()),
        JsonTemplate::Object(fields) => {
            serde_json::Value::Object(fields.iter().map(|(k, v)| (k.clone(), render_json(v, scope))).collect())
        }
    }
}

/// Templates of a JSON value: strings are parsed as templates by `parse`, whose error is passed on.
pub fn json_template<E>(
    v: &serde_json::Value,
    parse: &mut dyn FnMut(&str) -> Result<Template, E>,
) -> Result<JsonTemplate, E> {
    Ok(match v {
        serde_json::Value::String(s) => {
            let t = parse(s)?;
            if t.is_constant() && !t.has_secret() {
                // The rendered text, not the source: `${env:X:-default}` and `$${` are
                // constant too, and must be sent as what they stand for.
                JsonTemplate::Value(serde_json::Value::String(t.to_string()))
            } else {
                JsonTemplate::String(t)
            }
        }
        serde_json::Value::Array(items) => JsonTemplate::Array(
            items
                .iter()
                .map(|i| json_template(i, parse))
                .collect::<Result<_, _>>()?,
        ),
        serde_json::Value::Object(fields) => JsonTemplate::Object(
            fields
                .iter()
                .map(|(k, v)| Ok((k.clone(), json_template(v, parse)?)))
                .collect::<Result<_, E>>()?,
        ),
        other => JsonTemplate::Value(other.clone()),
    })
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn constant_json_strings_are_sent_rendered() {
        let unset = |_: &str| None;
        let mut parse = |s: &str| Template::parse(s, &unset).map_err(|e| e.message);
        let v = serde_json::json!({"password": "${env:UNSET_PASSWORD:-demo}", "raw": "$${x}", "n": 3});
        let JsonTemplate::Object(fields) = json_template(&v, &mut parse).unwrap() else {
            panic!("an object stays an object")
        };
        let shown: Vec<String> = fields
            .iter()
            .map(|(k, t)| match t {
                JsonTemplate::Value(v) => format!("{k}={v}"),
                other => format!("{k}: not constant: {other:?}"),
            })
            .collect();
        assert_eq!(shown, ["n=3", "password=\"demo\"", "raw=\"${x}\""]);
    }
}
