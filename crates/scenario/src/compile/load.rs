//! The load shape: the model, the stop rule and the steps of a run.

use super::{parse_duration_str, Cx};
use crate::raw::{self, Sp};
use crest_model::plan::{
    Given, LoadDraft, LoadShape, OnCap, RateProfile, RateStage, SegmentPlan, StopRule, UsersProfile, UsersStage,
};
use crest_model::step::{Level, StepKind};
use std::time::Duration;

/// The load shapes a file may give, each with what it is given.
#[derive(Clone, Copy)]
enum Shape<'r> {
    Users(&'r Sp<u64>),
    Stages(&'r [Sp<raw::Stage>]),
    Stepping(&'r Sp<raw::Stepping>),
    Threads(&'r Sp<u64>),
    RunOnce(&'r Sp<u64>),
    Rate(&'r Sp<f64>),
    RateStages(&'r [Sp<raw::Stage>]),
    Spike(&'r Sp<raw::Spike>),
}

/// The shapes `l` gives, by their key; one is right.
fn shapes(l: &raw::Load) -> Vec<(&'static str, Shape<'_>)> {
    let given = [
        ("users", l.users.as_ref().map(Shape::Users)),
        ("stages", l.stages.as_deref().map(Shape::Stages)),
        ("stepping", l.stepping.as_ref().map(Shape::Stepping)),
        ("threads", l.threads.as_ref().map(Shape::Threads)),
        ("run_once", l.run_once.as_ref().map(Shape::RunOnce)),
        ("rate", l.rate.as_ref().map(Shape::Rate)),
        ("rate_stages", l.rate_stages.as_deref().map(Shape::RateStages)),
        ("spike", l.spike.as_ref().map(Shape::Spike)),
    ];
    given.into_iter().filter_map(|(key, s)| Some((key, s?))).collect()
}

/// A load shape's model, stop rule and steps.
type Shaped = (LoadDraft, StopRule, Vec<SegmentPlan>);

impl Cx<'_> {
    /// The load shape: model, stop rule and segments.
    pub(super) fn load(&mut self, l: &Sp<raw::Load>) -> Option<Shaped> {
        let at = l.at();
        let given = shapes(l);
        let [(_, shape)] = given[..] else {
            let names: Vec<&str> = given.iter().map(|(n, _)| *n).collect();
            let msg = if names.is_empty() {
                "load: give one shape".to_string()
            } else {
                format!("load: give one shape, not {}", names.join(" and "))
            };
            self.err(at, msg, Some("users + duration, stages, stepping, threads + loops, run_once, rate + duration, rate_stages, or spike".into()));
            return None;
        };
        let duration = l.duration.as_ref().and_then(|d| self.positive_duration(d, "duration"));
        let ramp_up = l.ramp_up.as_ref().and_then(|d| self.duration(d, "ramp_up"));
        let cap = l.max_in_flight.as_ref().map(|c| **c);
        if let Some(c) = &l.max_in_flight {
            self.positive(**c, c.at(), "max_in_flight")?;
            self.users(**c, c.at(), "load: max_in_flight")?;
        }
        let mut stop = StopRule {
            requests: l.iterations.as_ref().map(|i| **i),
            duration,
        };
        // Iterations end a constant load as well as a duration does: `crest import` writes
        // `{users: 1, iterations: 1}`, the run's flags then set the load.
        let stop_given = l.duration.is_some() || l.iterations.is_some();
        let need_duration = |cx: &mut Self, what: &str| {
            if !stop_given {
                cx.err(
                    at,
                    format!("load: `{what}` needs `duration` (or `iterations`)"),
                    Some("e.g. duration: 5m".into()),
                );
            }
        };
        match shape {
            Shape::Users(u) => {
                let n = **u;
                need_duration(self, "users");
                self.positive(n, u.at(), "users")?;
                self.users(n, u.at(), "load: users")?;
                // A duration given but not valid has been reported; none at all is iterations'.
                if l.duration.is_some() {
                    duration?;
                }
                Some((
                    LoadDraft::users(n),
                    stop,
                    vec![seg(StepKind::Level(Level::Users(n)), Duration::ZERO, Some(n), None)],
                ))
            }
            Shape::Rate(rate) => {
                let r = **rate;
                need_duration(self, "rate");
                self.rate(r, rate.at(), "load: rate")?;
                // A duration given but not valid has been reported; none at all is iterations'.
                if l.duration.is_some() {
                    duration?;
                }
                Some((
                    LoadDraft::rate(r, cap),
                    stop,
                    vec![seg(StepKind::Level(Level::Rate(r)), Duration::ZERO, None, Some(r))],
                ))
            }
            Shape::Stages(given) => {
                let start = l.start_users.as_ref().map_or(0, |s| **s);
                self.users(start, l.start_users.as_ref().and_then(|s| s.at()), "load: start_users")?;
                let (levels, segments) = self.stages(given, start as f64, "users")?;
                let stages = levels
                    .iter()
                    .map(|(d, to)| UsersStage {
                        duration: *d,
                        to: *to as u64,
                    })
                    .collect();
                stop.duration = Some(levels.iter().map(|(d, _)| *d).sum());
                let segs = segments
                    .into_iter()
                    .map(|(n, s, lvl)| seg(n, s, Some(lvl as u64), None))
                    .collect();
                Some((
                    LoadDraft::Closed {
                        users: Some(UsersProfile { start, stages }),
                        iterations: None,
                    },
                    stop,
                    segs,
                ))
            }
            Shape::RateStages(given) => {
                let start = l.start_rate.as_ref().map_or(0.0, |s| **s);
                if let Some(r) = &l.start_rate {
                    if **r != 0.0 {
                        self.rate(**r, r.at(), "load: start_rate")?;
                    }
                }
                let (levels, segments) = self.stages(given, start, "/s")?;
                let stages = levels
                    .iter()
                    .map(|(d, to)| RateStage { duration: *d, to: *to })
                    .collect();
                stop.duration = Some(levels.iter().map(|(d, _)| *d).sum());
                let segs = segments
                    .into_iter()
                    .map(|(n, s, lvl)| seg(n, s, None, Some(lvl)))
                    .collect();
                let model = LoadDraft::Open {
                    rate: RateProfile { start, stages },
                    max_in_flight: cap,
                };
                Some((model, stop, segs))
            }
            Shape::Stepping(s) => self.stepping(s, stop),
            shape @ (Shape::Threads(n) | Shape::RunOnce(n)) => {
                let n = **n;
                let (loops, label) = if let Shape::Threads(_) = shape {
                    let Some(loops) = l.loops.as_ref().map(|x| **x) else {
                        self.err(
                            at,
                            "load: `threads` needs `loops`",
                            Some("e.g. threads: 5, loops: 10".into()),
                        );
                        return None;
                    };
                    (loops, StepKind::Loops { threads: n, loops })
                } else {
                    (1, StepKind::Once(n))
                };
                self.positive(n, at, "users")?;
                self.users(n, at, "load")?;
                self.positive(loops, at, "loops")?;
                let users = match ramp_up {
                    Some(r) if !r.is_zero() => UsersProfile {
                        start: 0,
                        stages: vec![UsersStage { duration: r, to: n }],
                    },
                    _ => UsersProfile::constant(n),
                };
                Some((
                    LoadDraft::Closed {
                        users: Some(users),
                        iterations: Some(loops),
                    },
                    stop,
                    vec![seg(label, Duration::ZERO, Some(n), None)],
                ))
            }
            Shape::Spike(s) => self.spike(s, stop, cap),
        }
    }

    /// The shape `l` gives and where, for the run's flags to replace or name; none when it
    /// gives no single shape (reported by [`Self::load`]).
    pub(super) fn load_shape(&self, l: &Sp<raw::Load>) -> Option<Given<LoadShape>> {
        let [(key, shape)] = shapes(l)[..] else {
            return None;
        };
        let (shape, at) = match shape {
            Shape::Users(v) => (LoadShape::Constant, v.at()),
            Shape::Rate(v) => (LoadShape::Constant, v.at()),
            Shape::Threads(v) | Shape::RunOnce(v) => (LoadShape::Loops(key), v.at()),
            Shape::Stepping(v) => (LoadShape::Staged(key), v.at()),
            Shape::Spike(v) => (LoadShape::Staged(key), v.at()),
            Shape::Stages(v) | Shape::RateStages(v) => (LoadShape::Staged(key), v.first().and_then(Sp::at)),
        };
        Some(self.given(shape, "load", at.or_else(|| l.at())))
    }

    /// `load: on_cap`, with where it stands for the resolver, which allows it with a rate only.
    pub(super) fn on_cap(&mut self, l: &raw::Load) -> Option<Given<OnCap>> {
        let c = l.on_cap.as_ref()?;
        match OnCap::parse(c.trim()) {
            Some(v) => Some(self.given(v, "load: on_cap", c.at())),
            None => {
                self.err(
                    c.at(),
                    format!("load: on_cap: {:?} is neither queue nor drop", c.as_str()),
                    Some("on_cap: queue (wait for a place, as pgbench -R) or drop (the default)".into()),
                );
                None
            }
        }
    }

    fn positive(&mut self, n: u64, at: Option<(usize, usize)>, what: &str) -> Option<()> {
        if n == 0 {
            self.err(at, format!("load: {what} must be at least 1"), None);
            None
        } else {
            Some(())
        }
    }

    /// Stages as (duration, level at the end) plus segments (kind, start, level).
    #[allow(clippy::type_complexity)]
    fn stages(
        &mut self,
        stages: &[Sp<raw::Stage>],
        start: f64,
        unit: &str,
    ) -> Option<(Vec<(Duration, f64)>, Vec<(StepKind, Duration, f64)>)> {
        if stages.is_empty() {
            self.err(None, "load: stages are empty", None);
            return None;
        }
        // A level of users is checked whole below, before the step is kept.
        let label = |lvl: f64| {
            if unit == "users" {
                Level::Users(lvl as u64)
            } else {
                Level::Rate(lvl)
            }
        };
        let (mut level, mut t) = (start, Duration::ZERO);
        let (mut levels, mut segs) = (Vec::new(), Vec::new());
        for s in stages {
            let (d, to, name) = match (&s.ramp_to, &s.over, &s.hold) {
                (Some(to), Some(over), None) => {
                    let Some(d) = parse_duration_str(over) else {
                        self.err(s.at(), format!("stage: over {over:?} is not a duration"), None);
                        return None;
                    };
                    (self.bounded(d, s.at(), "stage")?, *to, StepKind::Ramp(label(*to)))
                }
                (None, None, Some(hold)) => {
                    let Some(d) = parse_duration_str(hold) else {
                        self.err(s.at(), format!("stage: hold {hold:?} is not a duration"), None);
                        return None;
                    };
                    (self.bounded(d, s.at(), "stage")?, level, StepKind::Hold(label(level)))
                }
                _ => {
                    self.err(s.at(), "a stage is `{ramp_to: N, over: 1m}` or `{hold: 5m}`", None);
                    return None;
                }
            };
            if !(to.is_finite() && to >= 0.0) || (unit == "users" && to.fract() != 0.0) {
                self.err(
                    s.at(),
                    format!("stage: ramp_to {} is not a valid level", crest_model::number::short(to)),
                    None,
                );
                return None;
            }
            if unit == "users" {
                self.users(to as u64, s.at(), "stage: ramp_to")?;
            } else if to > 0.0 {
                self.rate(to, s.at(), "stage: ramp_to")?;
            }
            // A ramp of no time is a jump, not a step anyone ran: its level starts the next one.
            if !d.is_zero() {
                segs.push((name, t, to));
            }
            levels.push((d, to));
            level = to;
            t += d;
        }
        if t.is_zero() {
            self.err(stages[0].at(), "load: the stages last no time at all", None);
            return None;
        }
        Some((levels, segs))
    }

    /// `spike`: a baseline, a jump to the spike's level, and a recovery at the baseline.
    fn spike(&mut self, s: &Sp<raw::Spike>, mut stop: StopRule, cap: Option<u64>) -> Option<Shaped> {
        let times = [("after", &s.after), ("for", &s.lasts), ("then", &s.then)];
        let mut ds = Vec::new();
        for (what, text) in times {
            match parse_duration_str(text) {
                Some(d) => ds.push(self.bounded(d, s.at(), "spike")?),
                None => {
                    self.err(s.at(), format!("spike: {what} {text:?} is not a duration"), None);
                    return None;
                }
            }
        }
        let (after, lasts, then) = (ds[0], ds[1], ds[2]);
        stop.duration = Some(after + lasts + then);
        match (s.users, s.rate) {
            (Some(base), None) => {
                self.users(base.max(s.to.min(u64::MAX as f64) as u64), s.at(), "spike")?;
                let to = s.to as u64;
                let stages = vec![
                    UsersStage {
                        duration: after,
                        to: base,
                    },
                    UsersStage {
                        duration: Duration::ZERO,
                        to,
                    },
                    UsersStage { duration: lasts, to },
                    UsersStage {
                        duration: Duration::ZERO,
                        to: base,
                    },
                    UsersStage {
                        duration: then,
                        to: base,
                    },
                ];
                let segs = vec![
                    seg(StepKind::Baseline(Level::Users(base)), Duration::ZERO, Some(base), None),
                    seg(StepKind::Spike(Level::Users(to)), after, Some(to), None),
                    seg(StepKind::Recovery(Level::Users(base)), after + lasts, Some(base), None),
                ];
                Some((
                    LoadDraft::Closed {
                        users: Some(UsersProfile { start: base, stages }),
                        iterations: None,
                    },
                    stop,
                    segs,
                ))
            }
            (None, Some(base)) => {
                self.rate(base, s.at(), "spike: rate")?;
                self.rate(s.to, s.at(), "spike: to")?;
                let to = s.to;
                let stages = vec![
                    RateStage {
                        duration: after,
                        to: base,
                    },
                    RateStage {
                        duration: Duration::ZERO,
                        to,
                    },
                    RateStage { duration: lasts, to },
                    RateStage {
                        duration: Duration::ZERO,
                        to: base,
                    },
                    RateStage {
                        duration: then,
                        to: base,
                    },
                ];
                let segs = vec![
                    seg(StepKind::Baseline(Level::Rate(base)), Duration::ZERO, None, Some(base)),
                    seg(StepKind::Spike(Level::Rate(to)), after, None, Some(to)),
                    seg(StepKind::Recovery(Level::Rate(base)), after + lasts, None, Some(base)),
                ];
                let model = LoadDraft::Open {
                    rate: RateProfile { start: base, stages },
                    max_in_flight: cap,
                };
                Some((model, stop, segs))
            }
            _ => {
                self.err(
                    s.at(),
                    "spike: give `users` (closed model) or `rate` (open model)",
                    None,
                );
                None
            }
        }
    }

    /// `stepping`: users rising by `step` every `every` up to `max`, each level a step of its own.
    fn stepping(&mut self, s: &Sp<raw::Stepping>, mut stop: StopRule) -> Option<Shaped> {
        let every = parse_duration_str(&s.every).or_else(|| {
            self.err(s.at(), format!("stepping: every {:?} is not a duration", s.every), None);
            None
        })?;
        let every = self.bounded(every, s.at(), "stepping: every")?;
        self.users(s.max, s.at(), "stepping: max")?;
        if s.step == 0 || s.start == 0 || s.max < s.start || every.is_zero() {
            self.err(
                s.at(),
                "stepping: needs start >= 1, step >= 1, max >= start and every > 0",
                None,
            );
            return None;
        }
        let mut levels = vec![s.start];
        while let Some(&last) = levels.last() {
            if last >= s.max {
                break;
            }
            levels.push((last + s.step).min(s.max));
        }
        let mut stages = vec![UsersStage {
            duration: every,
            to: s.start,
        }];
        let mut segs = vec![seg(
            StepKind::Level(Level::Users(s.start)),
            Duration::ZERO,
            Some(s.start),
            None,
        )];
        for (i, lvl) in levels.iter().enumerate().skip(1) {
            stages.push(UsersStage {
                duration: Duration::ZERO,
                to: *lvl,
            });
            stages.push(UsersStage {
                duration: every,
                to: *lvl,
            });
            segs.push(seg(
                StepKind::Level(Level::Users(*lvl)),
                every * i as u32,
                Some(*lvl),
                None,
            ));
        }
        stop.duration = Some(every * levels.len() as u32);
        Some((
            LoadDraft::Closed {
                users: Some(UsersProfile { start: s.start, stages }),
                iterations: None,
            },
            stop,
            segs,
        ))
    }
}

/// A step of the run, for reports.
fn seg(kind: StepKind, start: Duration, users: Option<u64>, rate: Option<f64>) -> SegmentPlan {
    SegmentPlan {
        kind,
        start,
        users,
        rate,
    }
}
