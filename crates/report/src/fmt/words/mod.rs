//! The analysis's findings and figures in sentences: one wording per finding, used by every
//! format, the JSON summary and the binary's messages alike.

use super::{num, quantity, value};
use crate::fmt::scale;
use crest_analysis::capacity::{Beyond, Failed, NoOptimal, Why};
use crest_analysis::compare::{LatencyStat, Metric as Compared, Note, Shape, Verdict};
use crest_analysis::failures::{Cluster, EachRequest, TimeoutOf};
use crest_analysis::figures::WorkUnit;
use crest_analysis::figures::{Judged, StepLoad};
use crest_analysis::find::{Done, Level, Limit, Miss, Probe, Recommended};
use crest_analysis::findings::Finding;
use crest_analysis::recovery::Recovery;
use crest_analysis::resources::Leak;
use crest_analysis::stop::StopReason;
use crest_analysis::summary::GroupSummary;
use crest_analysis::thresholds::Measured;
use crest_analysis::validity::{ClientLimit, CoreWait};
use crest_analysis::workers::{WorkerFigures, WorkerVerdict};
use crest_model::expr::Metric;
use crest_model::monitor::Unit;
use crest_model::reason::{FiguresOrWords, SearchEnd};
use crest_model::results::{EndReason, ProbeRecord, Results, RunConfig, StopRecord};
use crest_model::step::{Level as StepLevel, StepKind};

mod bottleneck;
mod capacity;
mod compare;
mod conditions;
mod failures;
mod findings;
mod resources;
mod run;
mod search;
mod study;
mod validity;

pub use bottleneck::*;
pub use capacity::*;
pub use compare::*;
pub use conditions::*;
pub use failures::*;
pub use findings::*;
pub use resources::*;
pub use run::*;
pub use search::*;
pub use study::*;
pub use validity::*;

#[cfg(test)]
mod tests {
    use super::*;
    use crest_analysis::resources::Growth;
    use crest_analysis::units::Quantity;
    use crest_model::monitor::SeriesKey;

    #[test]
    fn comparison_cells_read_counts_whole_and_series_as_their_reports_do() {
        assert_eq!(compared_cell(&Compared::Requests, 9724.0), "9,724");
        assert_eq!(compared_cell(&Compared::Failures, 0.0), "0");
        assert_eq!(compared_cell(&Compared::OptimalLoad, 40.0), "40");
        // An open model's load is a rate with a fraction.
        assert_eq!(compared_cell(&Compared::BreakingLoad, 312.5), "312.5");
        assert_eq!(compared_cell(&Compared::ErrorRate, 0.0001), "0.01%");
        assert_eq!(compared_cell(&Compared::Throughput, 394.44), "394.4 req/s");
        assert_eq!(compared_cell(&Compared::AllDone, 4.417), "4.42 s");
        assert_eq!(compared_beyond(&StepLoad::Users(200)), "beyond 200 users");
        let fds = "process_open_fds".to_string();
        assert_eq!(compared_cell(&Compared::SeriesMean(fds, Unit::Count), 208.0), "208");
        let cpu = "process_cpu_percent".to_string();
        assert_eq!(compared_cell(&Compared::SeriesPeak(cpu, Unit::Percent), 99.84), "99.8%");
    }

    #[test]
    fn a_late_send_says_how_long_the_engine_waited_for_a_core_when_the_kernel_told() {
        let late = |core_wait| ClientLimit::LateTail {
            lag_p99_ms: 14.7,
            latency_p50_ms: 0.04,
            core_wait,
        };
        assert_eq!(
            client_limit(&late(None)),
            "requests started late: the send lag's p99 was 14.7 ms (median latency 0.0 ms), so crest could not keep the schedule"
        );
        assert_eq!(
            client_limit(&late(Some(CoreWait { ms: 61.5, share: 0.0123 }))),
            "requests started late: the send lag's p99 was 14.7 ms (median latency 0.0 ms), so crest could not keep the schedule; meanwhile its engine thread(s) waited 61.5 ms for a CPU core that other threads held (1.23% of the time they could run, by the kernel's account; other processes', the kernel's or crest's own)"
        );
    }

    #[test]
    fn stop_details_read_as_results_json_keeps_them() {
        assert_eq!(
            stop_detail(&StopReason::Series {
                key: SeriesKey::new("load_average"),
                value: Quantity::Monitored(Unit::Number, 3.4),
                window_s: None,
                bound: Quantity::Monitored(Unit::Number, 3.0),
            }),
            "load_average was 3.4, beyond 3"
        );
        assert_eq!(
            stop_detail(&StopReason::Relative {
                metric: Metric::Latency(95.0),
                value: Quantity::Ms(8.0),
                bound: Quantity::Ms(6.0),
                times: 3.0,
                reference: Quantity::Ms(2.0),
            }),
            "p95 was 8.0 ms in the steady state of the step that ended, beyond 6.0 ms (3x the first step's steady 2.0 ms)"
        );
        assert_eq!(
            stop_detail(&StopReason::Window {
                metric: Metric::ErrorRate,
                value: Quantity::Fraction(0.128),
                secs: 5.0,
                bound: Quantity::Fraction(0.05),
            }),
            "the error rate was 12.80% over the last 5 s, beyond 5.00%"
        );
    }

    #[test]
    fn a_leak_says_how_fast_and_when_it_reaches_its_limit() {
        let l = Leak {
            key: "process_open_fds{process=\"api\"}".into(),
            metric: "process_open_fds".into(),
            title: "open files of api".into(),
            unit: Unit::Count,
            step: StepKind::Level(StepLevel::Users(40)),
            step_load: None,
            per_minute: 40.3,
            per_second: 40.3 / 60.0,
            from: 51.2,
            to: 449.0,
            window_s: (0.0, 600.0),
            limit: Some(1024.0),
            minutes_to_limit: Some(14.2),
            resident: None,
        };
        assert_eq!(
            leak(&l),
            "Open files of api grow by about 40 a minute under steady load (from 51 to 449 over 10 minutes); the limit of 1024 is reached in about 14 minutes."
        );
        let memory = Leak {
            metric: "process_resident_memory_bytes".into(),
            title: "resident memory of api".into(),
            unit: Unit::Bytes,
            per_minute: 3e6,
            per_second: 5e4,
            limit: None,
            minutes_to_limit: None,
            step_load: Some(StepLoad::Users(20)),
            ..l
        };
        assert!(
            leak(&memory).starts_with(
                "Resident memory of api grows by about 2.9 MiB a minute under steady load (20 users: from"
            ),
            "{}",
            leak(&memory)
        );
        let private = Leak {
            metric: "process_private_memory_bytes".into(),
            title: "private memory of crest target (pid 4242)".into(),
            from: 20.0 * 1048576.0,
            to: 90.0 * 1048576.0,
            window_s: (1.0, 71.0),
            per_minute: 60.0 * 1048576.0,
            step_load: None,
            resident: Some(Growth {
                per_minute: 61.2 * 1048576.0,
                from: 30.0 * 1048576.0,
                to: 101.0 * 1048576.0,
            }),
            ..memory
        };
        assert_eq!(
            leak(&private),
            "Private memory of crest target (pid 4242) grows by about 60.1 MiB a minute under steady load (from 20.0 MiB to 90.0 MiB over 70 s; resident memory, which counts shared pages too, by about 61.0 MiB a minute)."
        );
        assert_eq!(round2(41.7), 42.0);
        assert_eq!(round2(0.1234), 0.12);
    }

    #[test]
    fn the_load_reads_the_same_wherever_it_is_described() {
        assert_eq!(
            load(
                Load::Open {
                    rate: 1500.0,
                    max_in_flight: 1000,
                    on_cap: crest_model::plan::OnCap::Drop,
                },
                WorkUnit::Requests
            ),
            "open model, up to 1500 req/s, at most 1000 in flight"
        );
        assert_eq!(
            load(
                Load::Open {
                    rate: 200.0,
                    max_in_flight: 2,
                    on_cap: crest_model::plan::OnCap::Queue,
                },
                WorkUnit::Iterations
            ),
            "open model, up to 200 iterations/s, at most 2 in flight, arrivals past it queued (pgbench -R)"
        );
        assert_eq!(
            load(
                Load::Closed {
                    users: 4,
                    iterations: Some(10)
                },
                WorkUnit::Iterations
            ),
            "closed model, 4 users x 10 iterations"
        );
    }

    #[test]
    fn every_kind_of_step_has_its_words_and_a_rate_one_spelling() {
        let (u, r) = (StepLevel::Users(40), StepLevel::Rate(50.0));
        let cases = [
            (StepKind::Run, "run"),
            (StepKind::Level(u), "40 users"),
            (StepKind::Level(StepLevel::Users(1)), "1 user"),
            (StepKind::Level(r), "50/s"),
            (StepKind::Level(StepLevel::Rate(12.5)), "12.5/s"),
            (StepKind::Level(StepLevel::Rate(1000.0 / 3.0)), "333.333/s"),
            (StepKind::Level(StepLevel::Rate(0.0)), "0/s"),
            (StepKind::Ramp(u), "ramp to 40 users"),
            (StepKind::Hold(r), "hold 50/s"),
            (StepKind::Baseline(r), "baseline 50/s"),
            (StepKind::Spike(StepLevel::Rate(500.0)), "spike 500/s"),
            (StepKind::Recovery(u), "recovery 40 users"),
            (StepKind::Loops { threads: 5, loops: 10 }, "5 threads x 10 loops"),
            (StepKind::Once(3), "3 users, once"),
            (StepKind::Paused, "paused"),
            (StepKind::Resumed, "resumed"),
            (StepKind::Manual, "manual"),
            (StepKind::Probe { number: 2, level: r }, "probe 2: 50/s"),
            (StepKind::Point("conns=8".into()), "conns=8"),
            (StepKind::Named("warm up".into()), "warm up"),
        ];
        for (kind, words) in cases {
            assert_eq!(step_kind(&kind), words, "{kind:?}");
        }
        // A capacity search's level and a step's load read as the step does.
        assert_eq!(
            level(crest_model::reason::Level {
                value: 250.0,
                open: true
            }),
            "250/s"
        );
        assert_eq!(step(&StepLoad::Rate(50.0)), "50/s");
        assert_eq!(
            step_in_part(Some(&StepKind::Level(u)), &StepKind::Ramp(r)),
            "40 users / ramp to 50/s"
        );
        assert_eq!(rate(1e300), "1e300/s");
    }

    #[test]
    fn every_monitor_note_has_its_words() {
        use crest_model::monitor::MonitorNote;
        let what = || "pid 12".to_string();
        let cases = [
            (
                MonitorNote::Unresolved {
                    error: "cannot read /run/app.pid".into(),
                    at_s: 0.0,
                },
                "cannot read /run/app.pid (at 0.0 s)",
            ),
            (
                MonitorNote::NotFound {
                    what: what(),
                    at_s: 0.0,
                },
                "no process found for pid 12 at 0.0 s",
            ),
            (
                MonitorNote::Gone {
                    what: what(),
                    at_s: 4.0,
                },
                "pid 12: no longer running at 4.0 s",
            ),
            (
                MonitorNote::Back {
                    what: "processes named \"api\"".into(),
                    pids: vec![30, 31],
                    at_s: 6.5,
                },
                "processes named \"api\": running again at 6.5 s (pid 30, 31)",
            ),
            (
                MonitorNote::NewPid {
                    what: what(),
                    pids: vec![13],
                    at_s: 2.0,
                },
                "pid 12: now pid 13 at 2.0 s",
            ),
            (
                MonitorNote::CouldNotStart {
                    error: "no runtime".into(),
                },
                "the monitor could not start: no runtime",
            ),
            (MonitorNote::ReadAgain { at_s: 9.0 }, "read again from 9.0 s"),
            (
                MonitorNote::Unreadable {
                    error: "connection refused".into(),
                    at_s: 3.0,
                },
                "could not be read at 3.0 s: connection refused",
            ),
            (
                MonitorNote::TooManySeries { most: 200 },
                "more than 200 series: the rest are left out; choose metrics by name",
            ),
            (
                MonitorNote::InPart {
                    from_s: 30.0,
                    note: Box::new(MonitorNote::Gone {
                        what: what(),
                        at_s: 4.0,
                    }),
                },
                "pid 12: no longer running at 4.0 s (in the part from 30 s)",
            ),
            (MonitorNote::Written("as it was".into()), "as it was"),
        ];
        for (note, words) in cases {
            assert_eq!(monitor_note(&note), words, "{note:?}");
        }
        assert!(monitor_note(&MonitorNote::NoPrivateMemory { what: what() })
            .starts_with("pid 12: the kernel gives no RssAnon"));
    }
}
