//! Steps: what a flow does in order, and the steps that are not requests (poll, think, loop,
//! set, if, foreach, break, next).

use super::vars::Known;
use super::{exactly_one, Cx};
use crate::error::{did_you_mean, Problem};
use crate::raw::{self, Sp};
use crest_flow::condition::Condition;
use crest_flow::plan::{OnFailure, PollStep, Step};
use std::time::Duration;

/// Defaults of the steps only scenarios have; the others are [`defaults`].
const DEFAULT_POLL_EVERY: Duration = Duration::from_secs(1);
const DEFAULT_POLL_MAX_WAIT: Duration = Duration::from_secs(60);
/// Deepest nesting of `loop`, `foreach` and `if` steps: users run them by recursion.
pub const MAX_LOOP_DEPTH: usize = 32;
/// Elements a `foreach` visits unless it says otherwise.
const DEFAULT_FOREACH_MAX: u64 = 100;
/// Most elements a `foreach` may visit: each one is at least a round of steps per iteration.
const MAX_FOREACH: u64 = 100_000;

impl Cx<'_> {
    pub(super) fn steps(&mut self, steps: &[Sp<raw::Step>], known: &mut Known) -> Vec<Step> {
        let mut out = Vec::new();
        for s in steps {
            let kinds = [
                s.request.is_some(),
                s.poll.is_some(),
                s.think.is_some(),
                s.repeat.is_some(),
                s.sql.is_some(),
                s.set.is_some(),
                s.condition.is_some(),
                s.foreach.is_some(),
                s.leave.is_some(),
                s.next.is_some(),
                s.sse.is_some(),
                s.ws.is_some(),
                s.grpc.is_some(),
            ];
            if s.condition.is_none() && (s.then.is_some() || s.otherwise.is_some()) {
                let at = self.mapping_at(s);
                self.err(at, "`then` and `else` go with an `if`", None);
                continue;
            }
            if !exactly_one(&kinds) {
                let at = self.mapping_at(s);
                self.err(
                    at,
                    "a step is exactly one of `request`, `poll`, `think`, `loop`, `sql`, `set`, `if`, `foreach`, \
                     `break`, `next`, `sse`, `ws` or `grpc`",
                    None,
                );
                continue;
            }
            if let Some(c) = &s.condition {
                if let Some(step) = self.branch(s, c, known) {
                    out.push(step);
                }
                continue;
            }
            if let Some(f) = &s.foreach {
                if let Some(step) = self.foreach(f, known) {
                    out.push(step);
                }
                continue;
            }
            for (flag, step, word) in [(&s.leave, Step::Break, "break"), (&s.next, Step::Next, "next")] {
                if let Some(b) = flag {
                    if **b {
                        out.push(step);
                    } else {
                        self.err(
                            b.at(),
                            format!("`{word}: false` does nothing: leave the step out"),
                            None,
                        );
                    }
                }
            }
            if s.leave.is_some() || s.next.is_some() {
                continue;
            }
            if let Some(w) = &s.ws {
                if let Some(step) = self.ws(w, known) {
                    out.push(Step::Ws(Box::new(step)));
                }
                continue;
            }
            if let Some(g) = &s.grpc {
                if let Some(step) = self.grpc(g, known) {
                    out.push(Step::Grpc(Box::new(step)));
                }
                continue;
            }
            if let Some(e) = &s.sse {
                if let Some(step) = self.sse(e, known) {
                    out.push(Step::Sse(Box::new(step)));
                }
                continue;
            }
            if let Some(q) = &s.sql {
                if let Some(step) = self.sql(q, known) {
                    out.push(Step::Sql(step));
                }
                continue;
            }
            if let Some(vars) = &s.set {
                let mut set = Vec::new();
                let mut bounds = Vec::new();
                for (name, v) in vars.iter() {
                    if let Some(t) = self.template(v, known) {
                        bounds.push((name, self.template_bound(&t, known)));
                        set.push((name.clone(), t));
                    }
                }
                // What a `set` gives from values known before the run is bounded as
                // `variables:` are; what it adds at run time is held to the limit as it runs.
                for (name, _) in vars.iter() {
                    known.add(name);
                }
                for (name, bound) in bounds {
                    known.add_bounded(name, bound);
                }
                out.push(Step::Set(set));
                continue;
            }
            if let Some(r) = &s.request {
                if let Some(r) = self.request(r, known) {
                    out.push(Step::Request(r));
                }
            } else if let Some(p) = &s.poll {
                if let Some(p) = self.poll(p, known) {
                    out.push(Step::Poll(p));
                }
            } else if let Some(t) = &s.think {
                if let Some((min, max)) = self.think(t) {
                    out.push(Step::Think { min, max });
                }
            } else if let Some(l) = &s.repeat {
                if *l.times == 0 {
                    self.err(l.times.at(), "loop: `times` must be at least 1", None);
                }
                if l.steps.is_empty() {
                    let at = self.mapping_at(s);
                    self.err(at, "loop: `steps` is empty", None);
                }
                // Users run loops by recursion: the depth is bounded here, where it is located.
                if self.loop_depth >= MAX_LOOP_DEPTH {
                    let at = self.mapping_at(s);
                    self.err(
                        at,
                        format!("loops nest deeper than {MAX_LOOP_DEPTH} levels"),
                        Some("flatten the inner loops: `times` multiplies".into()),
                    );
                    continue;
                }
                self.loop_depth += 1;
                let steps = self.steps(&l.steps, known);
                self.loop_depth -= 1;
                if !steps.iter().any(Step::sends) {
                    let at = self.mapping_at(s);
                    self.warnings.push(Problem {
                        at,
                        message: format!(
                            "loop: none of its steps sends anything, yet each user runs it {} times in every iteration",
                            *l.times
                        ),
                        hint: Some("a loop without a request only burns CPU; did a request step go missing?".into()),
                    });
                }
                out.push(Step::Loop { times: *l.times, steps });
            }
        }
        out
    }

    /// Nesting is bounded where it is written: users run nested steps by recursion.
    fn nested(&mut self, at: Option<(usize, usize)>) -> bool {
        if self.loop_depth >= MAX_LOOP_DEPTH {
            self.err(
                at,
                format!("loops, foreach and if nest deeper than {MAX_LOOP_DEPTH} levels"),
                Some("flatten the inner ones".into()),
            );
            return false;
        }
        true
    }

    /// `if:` with `then:` and `else:`. A variable is known after it only when both branches
    /// set it.
    fn branch(&mut self, s: &Sp<raw::Step>, c: &Sp<String>, known: &mut Known) -> Option<Step> {
        let at = self.mapping_at(s);
        if s.then.is_none() && s.otherwise.is_none() {
            self.err(at, "if: give `then`, `else` or both", None);
        }
        let condition = match Condition::parse(c.as_str(), self.env) {
            Ok(cond) => cond,
            Err(e) => {
                self.err(
                    c.at(),
                    format!("if {:?}: {} (at character {})", c.as_str(), e.message, e.offset + 1),
                    None,
                );
                return None;
            }
        };
        self.check_vars(c.as_str(), c.at(), &condition.vars(), known);
        if !self.nested(at) {
            return None;
        }
        self.loop_depth += 1;
        let mut after_then = known.clone();
        let then = self.steps(s.then.as_deref().unwrap_or_default(), &mut after_then);
        let mut after_else = known.clone();
        let otherwise = self.steps(s.otherwise.as_deref().unwrap_or_default(), &mut after_else);
        self.loop_depth -= 1;
        for (v, bound) in &after_then.0 {
            if let Some(other) = after_else.0.get(v) {
                known.add_bounded(v, (*bound).max(*other));
            }
        }
        Some(Step::If {
            condition,
            then,
            otherwise,
        })
    }

    /// `foreach:`. Its variable is known inside it; what its steps set is not known after it,
    /// since an empty array runs them no times.
    fn foreach(&mut self, f: &Sp<raw::Foreach>, known: &mut Known) -> Option<Step> {
        let items = self.template(&f.items, known);
        let var = f.var.as_str().to_string();
        if var.is_empty() || !var.chars().all(|c| c.is_ascii_alphanumeric() || c == '_') {
            self.err(
                f.var.at(),
                format!("foreach: `as: {var:?}` is not a variable name"),
                None,
            );
        }
        let max = f.max.as_ref().map_or(DEFAULT_FOREACH_MAX, |m| **m);
        if let Some(m) = &f.max {
            if **m == 0 || **m > MAX_FOREACH {
                self.err(m.at(), format!("foreach: `max` must be 1 to {MAX_FOREACH}"), None);
            }
        }
        if f.steps.is_empty() {
            self.err(f.at(), "foreach: `steps` is empty", None);
        }
        if !self.nested(f.at()) {
            return None;
        }
        let mut inside = known.clone();
        inside.add(&var);
        self.loop_depth += 1;
        let steps = self.steps(&f.steps, &mut inside);
        self.loop_depth -= 1;
        Some(Step::Foreach {
            items: items?,
            var,
            max,
            steps,
        })
    }

    pub(super) fn poll(&mut self, p: &Sp<raw::Poll>, known: &mut Known) -> Option<PollStep> {
        let request = self.request(&p.request, known);
        let mut until = Vec::new();
        for (var, values) in &p.until {
            if !known.has(var) {
                let hint = Some(format!("extract `{var}` in the poll's request"));
                self.err(
                    values.at(),
                    format!("poll: `until` reads `{var}`, which is never extracted"),
                    hint,
                );
            }
            until.push((var.clone(), values.to_vec()));
        }
        if until.is_empty() {
            self.err(p.at(), "poll: `until` needs at least one variable and its values", None);
        }
        let every = p
            .every
            .as_ref()
            .map_or(Some(DEFAULT_POLL_EVERY), |e| self.positive_duration(e, "every"));
        let max_wait = p
            .max_wait
            .as_ref()
            .map_or(Some(DEFAULT_POLL_MAX_WAIT), |e| self.duration(e, "max_wait"));
        Some(PollStep {
            request: request?,
            until,
            every: every?,
            max_wait: max_wait?,
        })
    }

    pub(super) fn on_failure(&mut self, f: &Sp<String>) -> OnFailure {
        OnFailure::parse(f).unwrap_or_else(|| {
            let hint = did_you_mean(f, OnFailure::NAMES)
                .or_else(|| Some(format!("write one of {}", OnFailure::NAMES.join(", "))));
            self.err(f.at(), format!("on_failure: unknown choice {:?}", f.as_str()), hint);
            OnFailure::default()
        })
    }

    pub(super) fn think(&mut self, t: &Sp<String>) -> Option<(Duration, Duration)> {
        let text = t.trim();
        let (a, b) = text.split_once("..").unwrap_or((text, text));
        match (humantime::parse_duration(a.trim()), humantime::parse_duration(b.trim())) {
            (Ok(min), Ok(max)) if min <= max => Some((min, self.bounded(max, t.at(), "think")?)),
            (Ok(_), Ok(_)) => {
                self.err(t.at(), format!("think {text:?}: the range goes backwards"), None);
                None
            }
            _ => {
                self.err(
                    t.at(),
                    format!("think {text:?} is not a duration or a range"),
                    Some("write e.g. 2s or 1s..3s".into()),
                );
                None
            }
        }
    }
}
