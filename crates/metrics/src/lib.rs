//! The sink: turns the engine's samples into histograms, counters and a stream of closed
//! intervals.
//!
//! Each engine thread owns one [`Recorder`], so recording takes no lock. A recorder keeps only
//! the interval in progress: the totals of each step, name and outcome of the requests that
//! ended in it. When an interval closes it is sent to the [`Series`], which merges the threads'
//! intervals and hands each closed interval out once, in order: the run loop shows it as
//! progress, checks stop conditions on it, appends it to the journal and folds it into the
//! results (`crest_model::journal::Fold`). Memory does not grow with the number of requests.
#![warn(missing_docs)]

mod interval;
mod recorder;
mod row;
mod series;

pub use interval::IntervalAcc;
pub use recorder::Recorder;
pub use row::{Row, Span};
pub use series::Series;

#[cfg(test)]
mod tests {
    use super::*;
    use crest_model::{Outcome, Sample, Sink};
    use std::sync::mpsc::channel;
    use std::time::Duration;

    fn sample(end_ms: u64, total_ms: u64, outcome: Outcome) -> Sample {
        Sample {
            name: 0,
            segment: 0,
            user: 0,
            iteration: 0,
            intended: Duration::from_millis(end_ms - total_ms),
            send_lag: Duration::ZERO,
            dns: None,
            connect: None,
            ttfb: Some(Duration::from_millis(total_ms / 2)),
            total: Duration::from_millis(total_ms),
            bytes_sent: 10,
            bytes_received: 100,
            messages_sent: 0,
            messages_received: 0,
            status: match outcome {
                Outcome::Success => Some(200),
                Outcome::Status(c) => Some(c),
                _ => None,
            },
            outcome,
        }
    }

    #[test]
    fn two_threads_merge_into_one_stream_that_adds_up() {
        let (tx, rx) = channel();
        let mut a = Recorder::new(Duration::from_secs(1), false, tx.clone());
        let mut b = Recorder::new(Duration::from_secs(1), false, tx);
        a.record(&sample(100, 20, Outcome::Success), None);
        b.record(&sample(200, 20, Outcome::Status(503)), Some(&"busy"));
        // Thread a is idle for two seconds, then records; b only ticks.
        a.record(&sample(3_100, 20, Outcome::Success), None);
        b.tick(Duration::from_millis(3_500));
        b.record(&sample(3_600, 40, Outcome::Reset), Some(&"reset by peer"));
        a.finish();
        b.finish();

        let mut series = Series::new(2);
        let mut closed = Vec::new();
        for acc in rx.try_iter() {
            closed.extend(series.add(acc));
        }
        assert_eq!(
            closed.iter().map(|i| i.index).collect::<Vec<_>>(),
            vec![0, 1, 2, 3],
            "every interval closes once both threads pass it"
        );
        closed.extend(series.finish(3));
        assert_eq!(closed.len(), 4);
        let records: Vec<_> = closed.iter().map(|i| i.to_record(1.0)).collect();
        assert_eq!(
            records.iter().map(|r| r.interval.requests).collect::<Vec<_>>(),
            vec![2, 0, 0, 2]
        );
        assert_eq!(records[0].interval.failures, 1);
        assert_eq!(records[3].interval.outcomes.get("reset"), Some(&1));

        let mut fold = crest_model::journal::Fold::default();
        for r in &records {
            fold.add(r).unwrap();
        }
        let start = empty_start();
        let total = fold.finish(&start, None);
        assert_eq!(total.stats.iter().map(|s| s.count).sum::<u64>(), 4);
        assert_eq!(total.status_codes.get("200"), Some(&2));
        assert_eq!(total.status_codes.get("503"), Some(&1));
        assert_eq!(total.errors.len(), 2);
        assert!(total
            .errors
            .iter()
            .any(|e| e.outcome == Outcome::Reset && e.example == "reset by peer"));
        let ok = total.stats.iter().find(|s| s.outcome == Outcome::Success).unwrap();
        let h = ok.latency.decode().unwrap();
        assert_eq!(h.len(), 2);
        assert!((19_900..=20_100).contains(&h.value_at_quantile(0.5)));
    }

    #[test]
    fn a_part_is_kept_under_its_name_only() {
        let (tx, rx) = channel();
        let mut a = Recorder::new(Duration::from_secs(1), false, tx).with_parts(&[None, Some(0)]);
        a.record(&sample(100, 20, Outcome::Success), None);
        a.record(
            &Sample {
                name: 1,
                ..sample(90, 5, Outcome::Success)
            },
            None,
        );
        a.finish();
        let mut series = Series::new(1);
        let mut closed: Vec<_> = rx.try_iter().flat_map(|acc| series.add(acc)).collect();
        closed.extend(series.finish(0));
        let r = closed[0].to_record(1.0);
        assert_eq!(r.interval.requests, 1);
        assert_eq!(r.interval.latency.decode().unwrap().len(), 1, "the transaction's only");
        assert_eq!(r.stats.iter().map(|s| s.count).sum::<u64>(), 2);
    }

    /// An SQL statement or transaction receives rows, not bytes: it has no size, where the
    /// histogram's floor once made it "1 B". A response keeps its size.
    #[test]
    fn a_request_that_received_nothing_has_no_size() {
        let (tx, rx) = channel();
        let mut a = Recorder::new(Duration::from_secs(1), false, tx);
        a.record(
            &Sample {
                bytes_received: 0,
                status: None,
                ..sample(100, 20, Outcome::Success)
            },
            None,
        );
        a.record(
            &Sample {
                name: 1,
                ..sample(100, 20, Outcome::Success)
            },
            None,
        );
        a.finish();
        let mut series = Series::new(1);
        let mut closed: Vec<_> = rx.try_iter().flat_map(|acc| series.add(acc)).collect();
        closed.extend(series.finish(0));
        let r = closed[0].to_record(1.0);
        let size = |name: u32| r.stats.iter().find(|s| s.name == name).unwrap().size.clone();
        assert!(size(0).is_none(), "{:?}", size(0));
        let h = size(1).unwrap().decode().unwrap();
        assert_eq!((h.len(), h.median_equivalent(h.max())), (1, 100));
    }

    /// A journal start with nothing in it, for folding in tests.
    fn empty_start() -> crest_model::journal::Start {
        crest_model::journal::Start {
            schema: crest_model::journal::JOURNAL_SCHEMA.into(),
            version: crest_model::journal::JOURNAL_VERSION,
            crest_version: "test".into(),
            started_at: "2026-01-01T00:00:00Z".into(),
            config: crest_model::results::RunConfig {
                command_line: vec![],
                model: crest_model::results::LoadKind::Closed,
                concurrency: 2,
                rate: None,
                on_cap: None,
                requests: None,
                iterations: None,
                duration_s: None,
                threads: 2,
                worker: None,
                http: None,
                scenario: None,
                thresholds: vec![],
                stop_conditions: vec![],
                provenance: None,
            },
            environment: None,
            names: vec!["a".into(), "b".into()],
            part_of: vec![],
            flows: vec![],
            segments: vec![],
            interval_s: 1.0,
            target_rps: None,
            part: None,
        }
    }
}
