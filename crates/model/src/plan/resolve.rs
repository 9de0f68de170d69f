//! The resolver: the one place where a [`Draft`] from any front end becomes a [`Plan`], every
//! rule between settings applied and every default filled in.

use super::{
    defaults, Connection, ConnectionDraft, Draft, DraftProblem, Given, LoadDraft, LoadModel, OnCap, Plan, PlanError,
    PlanProblem, SegmentPlan, Shard, StopRule, Target, UsersProfile,
};
use crate::protocol::{HttpOptions, HttpVersion};
use crate::step::StepKind;
use std::time::Duration;

impl LoadDraft {
    /// The load model, with the defaults filled in.
    fn resolve(self, on_cap: OnCap) -> LoadModel {
        match self {
            LoadDraft::Closed { users, iterations } => LoadModel::Closed {
                users: users.unwrap_or_else(|| UsersProfile::constant(defaults::USERS)),
                iterations,
            },
            LoadDraft::Open { rate, max_in_flight } => LoadModel::Open {
                rate,
                max_in_flight: max_in_flight.unwrap_or(defaults::MAX_IN_FLIGHT),
                on_cap,
            },
            LoadDraft::Manual => LoadModel::Closed {
                users: UsersProfile {
                    start: 0,
                    stages: Vec::new(),
                },
                iterations: None,
            },
        }
    }

    /// The one step a load of a single level runs as, of kind `kind`: its users or rate when
    /// they are constant.
    fn step(&self, kind: StepKind) -> SegmentPlan {
        let (users, rate) = match self {
            LoadDraft::Closed { users, .. } => (users.as_ref().filter(|u| u.stages.is_empty()).map(|u| u.start), None),
            LoadDraft::Open { rate, .. } => (None, rate.stages.is_empty().then_some(rate.start)),
            LoadDraft::Manual => (Some(0), None),
        };
        SegmentPlan {
            kind,
            start: Duration::ZERO,
            users,
            rate,
        }
    }
}

impl Draft {
    /// This draft at one load alone, run as one step of kind `step`: a level of quick mode
    /// (`-c 10,20,40`) or a probe of a search. Each is resolved on its own, so that what the
    /// resolver chooses by the load (the open model's threads, the default duration) is chosen
    /// for that load rather than kept from another.
    pub fn at(&self, load: LoadDraft, step: StepKind) -> Draft {
        Draft {
            segments: vec![load.step(step)],
            load,
            ..self.clone()
        }
    }

    /// The validated plan: every rule between settings applied and every default filled in,
    /// for every front end alike. Metrics read by thresholds and stop conditions are checked
    /// against what the draft's monitor records ([`MonitorPlan::records`](crate::monitor::MonitorPlan::records)).
    pub fn resolve(self) -> Result<Plan, PlanError> {
        let mut problems = Vec::new();
        let shard = self.shard.as_ref().map(|given| {
            self.shard_problems(given, &mut problems);
            given.value
        });
        let threads = match self.threads {
            Some(Given { value: 0, origin }) => {
                problems.push(PlanProblem {
                    origin,
                    problem: DraftProblem::NoThreads,
                });
                Some(0)
            }
            Some(t) => Some(t.value),
            None => None,
        };
        let monitored = self
            .thresholds
            .iter()
            .map(|t| (t.value.expr().monitored(), t.value.text(), &t.origin))
            .chain(
                self.stop_when
                    .iter()
                    .map(|c| (c.value.monitored(), c.value.text(), &c.origin)),
            );
        for (m, text, origin) in monitored {
            if let Some(Err(why)) = m.map(|m| self.monitor.records(&m.metric)) {
                problems.push(PlanProblem {
                    origin: origin.clone(),
                    problem: DraftProblem::Unmonitored {
                        text: text.to_string(),
                        why,
                    },
                });
            }
        }
        let mut monitor = self.monitor;
        monitor.interval = match self.monitor_interval {
            Some(Given { value, origin }) if value < defaults::MIN_MONITOR_INTERVAL => {
                problems.push(PlanProblem {
                    origin,
                    problem: DraftProblem::SamplesTooOften(value),
                });
                value
            }
            Some(given) => given.value,
            None => defaults::MONITOR_INTERVAL,
        };
        let on_cap = match self.on_cap {
            Some(Given { origin, .. }) if matches!(self.load, LoadDraft::Closed { .. } | LoadDraft::Manual) => {
                problems.push(PlanProblem {
                    origin,
                    problem: DraftProblem::OnCapClosed,
                });
                OnCap::Drop
            }
            Some(given) => given.value,
            None => OnCap::Drop,
        };
        let flows = matches!(self.target, Target::Scenario(_));
        let connection = self.connection.resolve(flows, &mut problems);
        if !problems.is_empty() {
            return Err(PlanError(problems));
        }
        let manual = self.load == LoadDraft::Manual;
        let segments = if manual {
            vec![self.load.step(StepKind::Manual)]
        } else {
            self.segments
        };
        let load = self.load.resolve(on_cap);
        let threads = threads.unwrap_or_else(|| match &load {
            LoadModel::Open { rate, .. } => defaults::open_threads(rate.max()),
            LoadModel::Closed { .. } => defaults::threads(),
        });
        let unbounded = matches!(
            load,
            LoadModel::Closed { iterations: None, .. } | LoadModel::Open { .. }
        );
        let stop = match self.stop {
            StopRule {
                requests: None,
                duration: None,
            } if unbounded && !manual => StopRule {
                requests: None,
                duration: Some(defaults::DURATION),
            },
            given => given,
        };
        Ok(Plan {
            load,
            stop,
            names: self.names,
            part_of: self.part_of,
            segments,
            threads,
            shard,
            grace: connection.timeout.min(defaults::MAX_GRACE),
            target: self.target,
            connection,
            stop_when: self.stop_when.into_iter().map(|c| c.value).collect(),
            thresholds: self.thresholds.into_iter().map(|t| t.value).collect(),
            monitor,
            log_requests: self.log_requests,
            provenance: Some(self.provenance).filter(|p| *p != crate::results::Provenance::default()),
        })
    }
}

impl Draft {
    /// What keeps a plan from being split into `shard`'s part: each worker must have a share of
    /// everything that is split, and what judges the whole run can't run on a part of it.
    fn shard_problems(&self, shard: &Given<Shard>, problems: &mut Vec<PlanProblem>) {
        let Shard { index, count } = shard.value;
        if count == 0 || index >= count {
            problems.push(PlanProblem {
                origin: shard.origin.clone(),
                problem: DraftProblem::NoSuchWorker { index, count },
            });
            return;
        }
        let mut too_few = |n: u64, what: &str| {
            if n < u64::from(count) {
                problems.push(PlanProblem {
                    origin: shard.origin.clone(),
                    problem: DraftProblem::TooFewToShare {
                        what: format!("{n} {what}"),
                        workers: count,
                    },
                });
            }
        };
        match &self.load {
            LoadDraft::Closed { users, .. } => {
                too_few(users.as_ref().map_or(defaults::USERS, UsersProfile::max), "users")
            }
            LoadDraft::Open { max_in_flight, .. } => {
                too_few(max_in_flight.unwrap_or(defaults::MAX_IN_FLIGHT), "requests in flight")
            }
            // The users come from the page, which shares them out.
            LoadDraft::Manual => {}
        }
        if let Some(n) = self.stop.requests {
            too_few(n, "requests");
        }
        if self.collected {
            return;
        }
        let judges = self
            .stop_when
            .iter()
            .map(|c| &c.origin)
            .chain(self.thresholds.iter().map(|t| &t.origin));
        for origin in judges {
            problems.push(PlanProblem {
                origin: origin.clone(),
                problem: DraftProblem::WholeRunOnly,
            });
        }
    }
}

impl ConnectionDraft {
    /// The connection settings, defaults filled in; problems are added to `problems`. `flows`:
    /// the requests are a scenario's users', who keep cookies by default.
    fn resolve(self, flows: bool, problems: &mut Vec<PlanProblem>) -> Connection {
        let timeout = self.timeout.map_or(defaults::TIMEOUT, |t| t.value);
        // A connection is part of its request, so its limit is never the longer one.
        let connect_timeout = self
            .connect_timeout
            .map_or(defaults::CONNECT_TIMEOUT, |t| t.value)
            .min(timeout);
        let mut http = HttpOptions {
            version: self.version.unwrap_or_default(),
            cookies: self.cookies.unwrap_or(flows),
            ..HttpOptions::default()
        };
        if let Some(n) = self.max_streams {
            if n.value == 0 {
                problems.push(PlanProblem {
                    origin: n.origin.clone(),
                    problem: DraftProblem::NoStreams,
                });
            }
            if http.version == HttpVersion::Http1 {
                problems.push(PlanProblem {
                    origin: n.origin,
                    problem: DraftProblem::StreamsWithoutHttp2,
                });
            }
            http.max_streams = n.value;
        }
        if let Some(n) = self.redirects {
            http.max_redirects = n;
        }
        if let Some(c) = self.compression {
            http.compression = c;
        }
        Connection {
            timeout,
            connect_timeout,
            keepalive: self.keepalive.unwrap_or(true),
            tls: self.tls,
            http,
            network: Box::new(self.network),
        }
    }
}
