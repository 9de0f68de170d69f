//! The monitor: samples the system under test while load runs.
//!
//! It runs on its own thread with its own event loop, so that a slow scrape or a stalled
//! database connection can never delay the load, and the load can never delay a sample. Every
//! interval it reads each source (processes from /proc, the host, Prometheus endpoints,
//! PostgreSQL's statistics views), records the values as time series, and sends a snapshot to
//! the run loop, which uses it for live stop conditions. When the run ends it takes one last
//! sample and hands back the whole [`MonitorRecord`] for `results.json`.
#![warn(missing_docs)]

mod cgroup;
mod error;
mod events;
mod host;
mod limits;
pub mod own;
mod postgres;
mod process;
mod prometheus;
pub mod spec;
mod store;

pub use crest_model::monitor::MetricError;
pub use error::MonitorError;
use error::SampleError;
pub use store::Reading;

use crest_model::monitor::{MonitorNote, MonitorPlan, MonitorRecord, MonitorSample, SeriesKey, Unit};
use std::collections::HashSet;
use std::sync::{mpsc, Arc};
use std::time::{Duration, Instant};
use store::Store;
use tokio::sync::Notify;

/// The values of one sample, for stop conditions.
#[derive(Clone, Debug, PartialEq)]
pub struct Snapshot {
    /// Seconds from the start of the run.
    pub t_s: f64,
    /// Every series that has a value at this sample, with its unit.
    pub values: Vec<(SeriesKey, Unit, f64)>,
    /// What this sample added to the record, to be journaled.
    pub sample: MonitorSample,
}

/// The configured sources, checked and ready to sample.
#[derive(Debug)]
pub struct Sampler {
    interval: Duration,
    host: Option<(u32, host::Host)>,
    processes: Vec<(u32, process::Watched)>,
    scrapers: Vec<(u32, prometheus::Scraper)>,
    databases: Vec<(u32, postgres::Watched)>,
    store: Store,
    failing: HashSet<u32>,
    capped: HashSet<u32>,
}

impl Sampler {
    /// Checks the plan: patterns compile, URLs parse. Nothing is contacted yet.
    pub fn new(plan: &MonitorPlan) -> Result<Self, MonitorError> {
        if plan.interval.is_zero() {
            return Err(MonitorError::ZeroInterval);
        }
        let mut store = Store::new(plan.interval.as_secs_f64());
        let host = plan
            .host
            .then(|| (store.source("host", "this machine"), host::Host::default()));
        let mut processes = Vec::new();
        for p in &plan.processes {
            let w = process::Watched::new(p.clone())?;
            processes.push((store.named_source("process", &p.label, w.name()), w));
        }
        let several = |n: usize| n > 1;
        let mut scrapers = Vec::new();
        for p in &plan.prometheus {
            let shown = crest_model::redact::url(&p.url);
            let extra = if several(plan.prometheus.len()) {
                vec![("endpoint".to_string(), authority(&p.url))]
            } else {
                Vec::new()
            };
            let s = prometheus::Scraper::new(p, extra).map_err(|e| MonitorError::Source {
                source_name: format!("Prometheus endpoint {shown}"),
                error: Box::new(e),
            })?;
            scrapers.push((store.source("prometheus", &shown), s));
        }
        let mut databases = Vec::new();
        for p in &plan.postgres {
            let extra = if several(plan.postgres.len()) {
                vec![("server".to_string(), authority(&p.url))]
            } else {
                Vec::new()
            };
            let w = postgres::Watched::new(p, extra).map_err(|e| MonitorError::Source {
                source_name: format!("database {}", crest_model::redact::url(&p.url)),
                error: Box::new(e),
            })?;
            databases.push((store.source("postgres", w.shown()), w));
        }
        Ok(Sampler {
            interval: plan.interval,
            host,
            processes,
            scrapers,
            databases,
            store,
            failing: HashSet::new(),
            capped: HashSet::new(),
        })
    }

    /// True when there is nothing to sample.
    pub fn is_empty(&self) -> bool {
        self.host.is_none() && self.processes.is_empty() && self.scrapers.is_empty() && self.databases.is_empty()
    }

    /// Starts sampling on a thread of its own; `start` is time zero of the run.
    pub fn spawn(self, start: Instant) -> std::io::Result<Monitor> {
        let stop = Arc::new(Notify::new());
        let (tx, rx) = mpsc::channel();
        let thread = {
            let stop = stop.clone();
            std::thread::Builder::new()
                .name("crest-monitor".into())
                .spawn(move || self.run(start, &stop, &tx))?
        };
        Ok(Monitor { stop, thread, rx })
    }

    fn run(mut self, start: Instant, stop: &Notify, tx: &mpsc::Sender<Snapshot>) -> MonitorRecord {
        let rt = match tokio::runtime::Builder::new_current_thread().enable_all().build() {
            Ok(rt) => rt,
            Err(e) => {
                for i in 0..self.store_sources() {
                    self.store.note(i, MonitorNote::CouldNotStart { error: e.to_string() });
                }
                return self.store.finish();
            }
        };
        let local = tokio::task::LocalSet::new();
        local.block_on(&rt, async {
            let mut next = start;
            loop {
                let sampled = Instant::now();
                let t_s = sampled.saturating_duration_since(start).as_secs_f64();
                let values = self.sample(t_s).await;
                let sample = self.store.take_sample(t_s);
                let _ = tx.send(Snapshot { t_s, values, sample });
                // Samples stay on the grid of the run's intervals; a late one skips ahead.
                let now = Instant::now();
                while next <= now {
                    next += self.interval;
                }
                tokio::select! {
                    () = tokio::time::sleep_until(next.into()) => {}
                    () = stop.notified() => {
                        // A last sample catches the end of the run, unless the previous one just
                        // did: rates over a few milliseconds say nothing (a database flushing its
                        // statistics as connections close showed as 25 times its real rate).
                        if sampled.elapsed() >= self.interval / 2 {
                            let t_s = Instant::now().saturating_duration_since(start).as_secs_f64();
                            let values = self.sample(t_s).await;
                            let sample = self.store.take_sample(t_s);
                            let _ = tx.send(Snapshot { t_s, values, sample });
                        }
                        break;
                    }
                }
            }
        });
        self.store.finish()
    }

    fn store_sources(&self) -> u32 {
        (self.host.is_some() as usize + self.processes.len() + self.scrapers.len() + self.databases.len()) as u32
    }

    /// Reads every source once.
    async fn sample(&mut self, t_s: f64) -> Vec<(SeriesKey, Unit, f64)> {
        // A source may take at most the interval (and never more than 5 s), so one slow
        // source delays the next sample by at most that.
        let limit = self.interval.min(Duration::from_secs(5));
        let mut got: Vec<(u32, Result<Vec<Reading>, SampleError>)> = Vec::new();
        if let Some((i, h)) = self.host.as_mut() {
            got.push((*i, h.sample()));
        }
        for (i, w) in &mut self.processes {
            let s = w.sample(t_s);
            for n in s.notes {
                self.store.note(*i, n);
            }
            if let Some(limits) = s.limits {
                self.store.limits(*i, limits);
            }
            for e in s.events {
                self.store.event(*i, e);
            }
            got.push((*i, Ok(s.readings)));
        }
        for (i, s) in &mut self.scrapers {
            got.push((*i, s.sample(limit).await));
        }
        for (i, d) in &mut self.databases {
            let r = match tokio::time::timeout(limit, d.sample()).await {
                Ok(r) => r,
                Err(_) => Err(SampleError::Timeout(limit)),
            };
            got.push((*i, r));
        }
        let scrapers: HashSet<u32> = self.scrapers.iter().map(|(i, _)| *i).collect();
        let mut values = Vec::new();
        for (source, result) in got {
            match result {
                Ok(readings) => {
                    if self.failing.remove(&source) {
                        self.store.note(source, MonitorNote::ReadAgain { at_s: t_s });
                    }
                    for r in readings {
                        if scrapers.contains(&source)
                            && !self.store.has(&r.key)
                            && self.store.series_of(source) >= prometheus::MAX_SERIES
                        {
                            if self.capped.insert(source) {
                                self.store.note(
                                    source,
                                    MonitorNote::TooManySeries {
                                        most: prometheus::MAX_SERIES,
                                    },
                                );
                            }
                            continue;
                        }
                        self.store.push(source, t_s, &r);
                        values.push((r.key, r.unit, r.value));
                    }
                }
                Err(e) => {
                    if self.failing.insert(source) {
                        self.store.note(
                            source,
                            MonitorNote::Unreadable {
                                error: e.to_string(),
                                at_s: t_s,
                            },
                        );
                    }
                }
            }
        }
        values
    }
}

fn authority(url: &str) -> String {
    let schemes = [crest_model::address::HTTP, crest_model::address::POSTGRES].concat();
    crest_model::address::parse(url, &schemes)
        .map(|u| crest_model::address::authority(&u))
        .unwrap_or_default()
}

/// A running monitor.
#[derive(Debug)]
pub struct Monitor {
    stop: Arc<Notify>,
    thread: std::thread::JoinHandle<MonitorRecord>,
    rx: mpsc::Receiver<Snapshot>,
}

impl Monitor {
    /// Samples taken since the last call.
    pub fn snapshots(&self) -> mpsc::TryIter<'_, Snapshot> {
        self.rx.try_iter()
    }

    /// Takes a last sample, stops, and returns everything recorded.
    pub fn finish(self) -> MonitorRecord {
        self.stop.notify_one();
        self.thread.join().unwrap_or_default()
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crest_model::monitor::{ProcessSelect, ProcessSpec, PrometheusSpec};

    /// Issue 14: a process watched by its pid is recorded with its name, which runs are
    /// compared by (the pid is new in every run).
    #[test]
    fn a_process_watched_by_pid_is_recorded_with_its_name() {
        let mut child = std::process::Command::new("sleep").arg("5").spawn().unwrap();
        let plan = MonitorPlan {
            host: false,
            processes: vec![ProcessSpec {
                label: child.id().to_string(),
                select: ProcessSelect::Pid(child.id()),
            }],
            ..MonitorPlan::default()
        };
        let record = Sampler::new(&plan).unwrap().spawn(Instant::now()).unwrap().finish();
        let _ = child.kill();
        let _ = child.wait();
        assert_eq!(record.sources[0].name.as_deref(), Some("sleep"));
    }

    #[test]
    fn the_monitor_samples_on_the_interval_and_once_more_at_the_end() {
        let plan = MonitorPlan {
            interval: Duration::from_millis(100),
            ..MonitorPlan::default()
        };
        let start = Instant::now();
        let m = Sampler::new(&plan).unwrap().spawn(start).unwrap();
        std::thread::sleep(Duration::from_millis(470));
        let live: Vec<Snapshot> = m.snapshots().collect();
        let ended_s = start.elapsed().as_secs_f64();
        let record = m.finish();
        // At most one sample an interval (a busy machine may take fewer, never more).
        assert!((1..=6).contains(&live.len()), "{} snapshots", live.len());
        let load = record.series.iter().find(|s| s.key.metric == "load_average").unwrap();
        assert!(load.points.len() >= live.len(), "every sample shown live is kept");
        assert!(load.points.windows(2).all(|w| w[0].0 < w[1].0));
        // The end is sampled: by one last sample, or by one within half an interval of it (which
        // of the two depends on when the machine ran the monitor's thread; that one is there
        // does not).
        let last = load.points.last().unwrap().0;
        assert!(
            last >= ended_s - 0.05,
            "the last sample at {last} s, the run ended at {ended_s} s"
        );
        assert_eq!(record.sources[0].kind, "host");

        // A run that ends just after a sample gets no second one milliseconds later.
        let plan = MonitorPlan::default();
        let m = Sampler::new(&plan).unwrap().spawn(Instant::now()).unwrap();
        std::thread::sleep(Duration::from_millis(20));
        let record = m.finish();
        let load = record.series.iter().find(|s| s.key.metric == "load_average").unwrap();
        assert_eq!(load.points.len(), 1);
    }

    #[test]
    fn an_endpoint_with_too_many_series_is_capped_at_its_own_count_with_a_note() {
        let rt = tokio::runtime::Builder::new_multi_thread()
            .enable_all()
            .build()
            .unwrap();
        let page: String = (0..250).map(|i| format!("gauge_{i} {i}\n")).collect();
        let server = rt.block_on(crest_testkit::Server::start(move |_, _| {
            crest_testkit::Reply::json(200, page.clone())
        }));
        let plan = MonitorPlan {
            interval: Duration::from_millis(100),
            prometheus: vec![PrometheusSpec {
                url: server.url("/metrics"),
                metrics: vec![],
            }],
            ..MonitorPlan::default()
        };
        let m = Sampler::new(&plan).unwrap().spawn(Instant::now()).unwrap();
        std::thread::sleep(Duration::from_millis(250));
        let record = m.finish();
        let scraped = record.series.iter().filter(|s| s.source == 1).count();
        // The host's own series do not count against the endpoint's cap.
        assert_eq!(scraped, prometheus::MAX_SERIES);
        assert!(record.series.iter().any(|s| s.source == 0));
        assert_eq!(record.sources[1].notes.len(), 1, "{:?}", record.sources[1].notes);
        assert_eq!(record.sources[1].notes[0], MonitorNote::TooManySeries { most: 200 });
    }

    /// Issue 34: limits and events travel in the samples the run journals (limits only when
    /// they change), so a record rebuilt from the journal holds them as the monitor did.
    #[test]
    fn issue_34_limits_and_events_travel_in_the_samples() {
        let mut child = std::process::Command::new("sleep").arg("4248.5").spawn().unwrap();
        let plan = MonitorPlan {
            interval: Duration::from_millis(100),
            host: false,
            processes: vec![ProcessSpec {
                label: "sleeper".into(),
                select: ProcessSelect::Pid(child.id()),
            }],
            ..MonitorPlan::default()
        };
        let m = Sampler::new(&plan).unwrap().spawn(Instant::now()).unwrap();
        std::thread::sleep(Duration::from_millis(350));
        let _ = child.kill();
        let _ = child.wait();
        std::thread::sleep(Duration::from_millis(250));
        let samples: Vec<MonitorSample> = m.snapshots().map(|s| s.sample).collect();
        let record = m.finish();
        assert_eq!(samples.iter().filter(|s| !s.limits.is_empty()).count(), 1, "sent once");
        assert!(record.sources[0].limits.as_ref().unwrap().cores.is_some());
        assert_eq!(record.events.len(), 1, "{:?}", record.events);
        assert_eq!(record.events[0].kind, crest_model::monitor::EventKind::Exited);
        assert_eq!(record.events[0].pid, Some(child.id()));
        let mut rebuilt = crest_model::monitor::MonitorBuilder::default();
        for s in &samples {
            rebuilt.apply(s);
        }
        let rebuilt = rebuilt.finish();
        assert_eq!(rebuilt.events, record.events);
        assert_eq!(rebuilt.sources, record.sources);
    }

    #[test]
    fn authority_drops_user_and_path() {
        assert_eq!(authority("postgres://u:secret@db:5432/app"), "db:5432");
        assert_eq!(authority("http://127.0.0.1:9100/metrics"), "127.0.0.1:9100");
    }
}
