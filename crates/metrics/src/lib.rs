//! The sink: turns the engine's samples into histograms, counters and a time series.
//!
//! Each engine thread owns one [`Recorder`], so recording takes no lock. A recorder keeps run
//! totals per request name and outcome, and an accumulator for the current interval; when an
//! interval closes it is sent to the [`Series`], which merges the threads' intervals into one
//! time series for live progress and the results document. Memory does not grow with the number
//! of requests: only with the number of distinct (name, outcome) pairs and of intervals.
#![warn(missing_docs)]

mod interval;
mod recorder;
mod series;

pub use interval::IntervalAcc;
pub use recorder::{Recorder, Totals};
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
            intended: Duration::from_millis(end_ms - total_ms),
            send_lag: Duration::ZERO,
            connect: None,
            ttfb: Some(Duration::from_millis(total_ms / 2)),
            total: Duration::from_millis(total_ms),
            bytes_sent: 10,
            bytes_received: 100,
            status: match outcome {
                Outcome::Success => Some(200),
                Outcome::Status(c) => Some(c),
                _ => None,
            },
            outcome,
        }
    }

    #[test]
    fn two_threads_merge_into_one_series_and_one_total() {
        let (tx, rx) = channel();
        let mut a = Recorder::new(Duration::from_secs(1), false, tx.clone());
        let mut b = Recorder::new(Duration::from_secs(1), false, tx);
        a.record(&sample(100, 20, Outcome::Success), None);
        b.record(&sample(200, 20, Outcome::Status(503)), Some(&"busy"));
        // Thread a is idle for two seconds, then records; b only ticks.
        a.record(&sample(3_100, 20, Outcome::Success), None);
        b.tick(Duration::from_millis(3_500));
        b.record(&sample(3_600, 40, Outcome::Reset), Some(&"reset by peer"));
        let ta = a.finish();
        let tb = b.finish();

        let mut series = Series::new(2, 1.0);
        let mut completed = Vec::new();
        for acc in rx.try_iter() {
            completed.extend(series.add(acc).into_iter().map(|i| i.index));
        }
        assert_eq!(
            completed,
            vec![0, 1, 2, 3],
            "every interval completes once both threads pass it"
        );
        let intervals = series.finish(3);
        assert_eq!(intervals.len(), 4);
        assert_eq!(
            intervals.iter().map(|i| i.requests).collect::<Vec<_>>(),
            vec![2, 0, 0, 2]
        );
        assert_eq!(intervals[0].failures, 1);
        assert_eq!(intervals[3].outcomes.get("reset"), Some(&1));

        let mut total = ta;
        total.merge(&tb);
        assert_eq!(total.requests(), 4);
        assert_eq!(total.status_codes().get("200"), Some(&2));
        assert_eq!(total.status_codes().get("503"), Some(&1));
        let errors = total.errors();
        assert_eq!(errors.len(), 2);
        assert!(errors
            .iter()
            .any(|e| e.outcome == Outcome::Reset && e.example == "reset by peer"));
        let ok = total
            .stats()
            .into_iter()
            .find(|s| s.outcome == Outcome::Success)
            .unwrap();
        let h = ok.latency.decode().unwrap();
        assert_eq!(h.len(), 2);
        assert!((19_900..=20_100).contains(&h.value_at_quantile(0.5)));
    }
}
