//! Steps: what a flow does in order, and the steps that are not requests (poll, think, loop,
//! set).

use super::vars::Known;
use super::{exactly_one, Cx};
use crate::error::did_you_mean;
use crate::raw::{self, Sp};
use crest_flow::plan::{OnFailure, PollStep, Step};
use std::time::Duration;

/// Defaults of the steps only scenarios have; the others are [`defaults`].
const DEFAULT_POLL_EVERY: Duration = Duration::from_secs(1);
const DEFAULT_POLL_MAX_WAIT: Duration = Duration::from_secs(60);
/// Deepest nesting of `loop` steps.
pub const MAX_LOOP_DEPTH: usize = 32;

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
            ];
            if !exactly_one(&kinds) {
                let at = self.mapping_at(s);
                self.err(
                    at,
                    "a step is exactly one of `request`, `poll`, `think`, `loop`, `sql` or `set`",
                    None,
                );
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
                for (name, v) in vars.iter() {
                    if let Some(t) = self.template(v, known) {
                        set.push((name.clone(), t));
                    }
                }
                for (name, _) in vars.iter() {
                    known.add(name);
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
                out.push(Step::Loop { times: *l.times, steps });
            }
        }
        out
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
