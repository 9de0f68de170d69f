//! Thresholds and stop conditions: what they measured and the figures that made them hold.

use super::*;

/// What a threshold measured.
pub fn measured(m: &Measured) -> String {
    match m {
        Measured::Nothing => "nothing measured".into(),
        Measured::Figure(q) => quantity(*q),
        Measured::Series { quantity: q, key } => format!("{} ({key})", quantity(*q)),
    }
}

/// A threshold with what it measured, as a CI report states it: `p95 < 100ms: measured
/// 143.2 ms`.
pub fn threshold_outcome(t: &crest_analysis::thresholds::ThresholdResult) -> String {
    format!("{}: measured {}", t.threshold, measured(&t.measured))
}

/// A metric of the expression language, as a sentence's subject.
fn metric(m: &Metric) -> String {
    match m {
        Metric::Latency(q) => format!("p{q}"),
        Metric::Mean => "mean latency".into(),
        Metric::Max => "max latency".into(),
        Metric::ErrorRate => "the error rate".into(),
        Metric::Throughput => "throughput".into(),
        Metric::Requests => "requests".into(),
        Metric::Failures => "failures".into(),
        Metric::Monitored(m) => m.metric.clone(),
    }
}

/// The figures that made a stop condition hold.
pub fn stop_detail(r: &StopReason) -> String {
    match r {
        StopReason::Series {
            key,
            value,
            window_s,
            bound,
        } => {
            let over = window_s.map(|w| format!(" over the last {w} s")).unwrap_or_default();
            format!("{key} was {}{over}, beyond {}", quantity(*value), quantity(*bound))
        }
        StopReason::Window {
            metric: m,
            value,
            secs,
            bound,
        } => format!(
            "{} was {} over the last {secs:.0} s, beyond {}",
            metric(m),
            quantity(*value),
            quantity(*bound)
        ),
        StopReason::Relative {
            metric: m,
            value,
            bound,
            times,
            reference,
        } => format!(
            "{} was {} in the steady state of the step that ended, beyond {} ({times}x the first step's steady {})",
            metric(m),
            quantity(*value),
            quantity(*bound),
            quantity(*reference)
        ),
        StopReason::Throughput {
            fell,
            rps,
            previous_rps,
            unit,
        } => format!(
            "throughput {}: {rps_} {rate} in the steady state of the step that ended, {previous_rps_} {rate} in the one before",
            if *fell { "fell" } else { "stopped growing" },
            rate = unit_rate(*unit),
            rps_ = num(*rps),
            previous_rps_ = num(*previous_rps)
        ),
    }
}

/// What made a run's stop condition hold, as its results keep it.
pub fn stop_held(st: &StopRecord) -> String {
    match st.what_held() {
        Some(FiguresOrWords::Figures(r)) => stop_detail(r),
        Some(FiguresOrWords::Words(w)) => w,
        None => String::new(),
    }
}
