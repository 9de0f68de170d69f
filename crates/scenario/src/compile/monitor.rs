//! What is sampled while the load runs: processes, Prometheus endpoints, PostgreSQL.

use super::{exactly_one, Cx};
use crate::raw;
use crest_model::monitor::{MonitorPlan, PostgresSpec, ProcessSelect, ProcessSpec, PrometheusSpec};
use crest_model::plan::Given;
use crest_monitor::spec::{self, SpecError};
use std::time::Duration;

impl Cx<'_> {
    /// What `monitor:` asks to watch, and how often, when it says.
    pub(super) fn monitor(&mut self, m: Option<&raw::Monitor>) -> (MonitorPlan, Option<Given<Duration>>) {
        let mut plan = MonitorPlan::default();
        let Some(m) = m else { return (plan, None) };
        let interval = m.interval.as_ref().and_then(|i| {
            self.duration(i, "monitor: interval")
                .map(|d| self.given(d, "monitor: interval", i.at()))
        });
        plan.host = m.host.as_ref().is_none_or(|h| **h);
        for p in m.processes.iter().flatten() {
            let given = [
                p.pid.is_some(),
                p.pid_file.is_some(),
                p.name.is_some(),
                p.pattern.is_some(),
            ];
            if !exactly_one(&given) {
                self.err(
                    p.at(),
                    "monitor: each process needs exactly one of pid, pid_file, name, pattern",
                    None,
                );
                continue;
            }
            // Names, files and patterns may come from the environment, like URLs.
            let (select, default_label) = if let Some(pid) = &p.pid {
                (ProcessSelect::Pid(**pid), pid.to_string())
            } else if let Some(f) = &p.pid_file {
                let Some(f) = self.env_text(f) else { continue };
                (ProcessSelect::PidFile(self.resolve(&f)), f)
            } else if let Some(n) = &p.name {
                let Some(n) = self.env_text(n) else { continue };
                (ProcessSelect::Name(n.clone()), n)
            } else if let Some(pat) = &p.pattern {
                let Some(text) = self.env_text(pat) else { continue };
                (ProcessSelect::Pattern(text.clone()), text)
            } else {
                continue;
            };
            let label = p.label.as_ref().map_or(default_label, |l| l.to_string());
            match spec::add_process(&mut plan, ProcessSpec { label, select }) {
                Ok(()) => {}
                Err(e @ SpecError::Pattern(..)) => {
                    let at = p.pattern.as_ref().and_then(|x| x.at());
                    self.err(at, format!("monitor: pattern {e}"), None);
                }
                Err(e) => self.err(p.at(), format!("monitor: {e}"), None),
            }
        }
        for p in m.prometheus.iter().flatten() {
            let Some(url) = self.env_text(&p.url) else {
                continue;
            };
            let mut metrics = Vec::new();
            for name in p.metrics.iter().flatten() {
                match spec::metric_pattern(name) {
                    Ok(()) => metrics.push(name.to_string()),
                    Err(e) => self.err(name.at(), format!("monitor: metric pattern {e}"), None),
                }
            }
            if let Err(e) = spec::add_prometheus(&mut plan, PrometheusSpec { url, metrics }) {
                self.err(p.url.at(), format!("monitor: {e}"), None);
            }
        }
        for p in m.postgres.iter().flatten() {
            let url = self.env_text(&p.url);
            let password = p.password.as_ref().and_then(|x| self.env_text(x));
            if let Some(url) = url {
                if let Err(e) = spec::add_postgres(&mut plan, PostgresSpec { url, password }) {
                    self.err(p.url.at(), format!("monitor: postgres: {e}"), None);
                }
            }
        }
        if let Some(d) = m.database.as_ref().filter(|d| ***d) {
            match self.database_spec.clone() {
                Some(spec) => plan.postgres.push(spec),
                None => self.err(
                    d.at(),
                    "monitor: database: true needs a `database` in the scenario",
                    None,
                ),
            }
        }
        (plan, interval)
    }
}
