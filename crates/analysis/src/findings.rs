//! Findings: a few plain sentences, each backed by figures shown in the report.

use crate::analyze::{load_of, step_label, Analysis, SegmentAnalysis};

/// The findings for a run, most important first.
pub fn findings(a: &Analysis) -> Vec<String> {
    let mut out = Vec::new();
    let s = &a.summary;
    // A run with nothing to measure is said before anything else: every other figure then
    // describes failures.
    if s.successes == 0 {
        out.push(match s.errors.first() {
            Some(top) if s.requests > 0 => format!(
                "No request succeeded: all {} failed, most as {} ({}), e.g. \"{}\".",
                s.requests, top.description, top.count, top.example
            ),
            _ => "No request completed.".to_string(),
        });
    }
    if !s.client_bound.is_empty() {
        out.push(format!(
            "The result may describe crest rather than the target: {}.",
            s.client_bound.join("; ")
        ));
    }
    // A leak ends runs that last longer than the test; it is said before the capacity figures.
    out.extend(s.leaks.iter().map(|l| l.sentence.clone()));
    let loaded: Vec<_> = a.segments.iter().filter(|g| g.requests > 0).collect();
    if let Some(st) = &s.stopped_by {
        out.push(format!(
            "The run stopped at {:.0} s because `{}` held: {}.",
            st.at_s, st.condition, st.detail
        ));
    }
    if let Some(sentence) = latency_growth(&loaded) {
        out.push(sentence);
    }
    if let Some(o) = &a.capacity.optimal {
        out.push(format!(
            "The optimal operating point is {} (p95 {:.1} ms): {}.",
            o.load, o.p95_ms, o.why
        ));
    }
    if let Some(why) = a.capacity.no_optimal.as_ref().filter(|_| a.capacity.levels >= 2) {
        out.push(format!("No optimal operating point is named: {why}."));
    }
    if let Some(p) = &a.capacity.saturation {
        out.push(format!("The service saturates at {}: {}.", p.load, p.why));
    }
    if let Some(p) = &a.capacity.breaking {
        let before = loaded
            .iter()
            .filter(|g| load_of(g) < p.load_value)
            .max_by(|x, y| load_of(x).total_cmp(&load_of(y)));
        let between = before.map(|g| format!(" The breaking point lies between {} and {}.", step_label(g), p.load));
        out.push(format!(
            "The service breaks at {}: {}.{}",
            p.load,
            p.why,
            between.unwrap_or_default()
        ));
    }
    for f in &a.failures {
        if let Some(c) = &f.cluster {
            out.push(format!("{} {} ({}): {c}.", f.count, f.description, f.outcome));
        }
    }
    // With no success at all, the first finding already said this.
    if s.failures > 0 && s.successes > 0 {
        if let Some(top) = s.errors.first() {
            out.push(format!(
                "{} of {} requests failed ({:.2}%), most as {} ({}), e.g. \"{}\".",
                s.failures,
                s.requests,
                s.error_rate * 100.0,
                top.description,
                top.count,
                top.example
            ));
        }
    } else if s.requests > 0 {
        out.push(format!("All {} requests succeeded.", s.requests));
    }
    if loaded.len() >= 2 {
        let connect: Vec<f64> = loaded
            .iter()
            .filter(|g| g.connect_ms.count > 0)
            .map(|g| g.connect_ms.p95)
            .collect();
        if connect.len() >= 2 {
            let (min, max) = connect
                .iter()
                .fold((f64::MAX, 0.0f64), |(a, b), v| (a.min(*v), b.max(*v)));
            if max <= 2.0 * min.max(0.05) {
                out.push(format!(
                    "Connect time stayed within {min:.2} to {max:.2} ms (p95) at every step: the bottleneck is not the network connection layer."
                ));
            }
        }
    }
    if let Some(rec) = &s.recovery {
        let figures = match (rec.p95_ms, rec.error_rate) {
            (Some(p), Some(e)) => format!(
                "p95 {p:.1} ms and {:.2}% errors over 3 s, against the baseline's {:.1} ms and {:.2}%",
                e * 100.0,
                rec.baseline_p95_ms,
                rec.baseline_error_rate * 100.0
            ),
            _ => format!(
                "no 3 s after it to measure, against the baseline's p95 {:.1} ms and {:.2}% errors",
                rec.baseline_p95_ms,
                rec.baseline_error_rate * 100.0
            ),
        };
        out.push(match rec.seconds {
            Some(t) => format!("After the spike the service was back to its baseline in {t:.0} s ({figures})."),
            None => {
                format!("After the spike the service did not return to its baseline before the run ended ({figures}).")
            }
        });
    }
    let failed: Vec<String> = s
        .thresholds
        .iter()
        .filter(|t| !t.pass)
        .map(|t| format!("`{}` (measured {})", t.threshold, t.shown))
        .collect();
    if !failed.is_empty() {
        out.push(format!("Thresholds failed: {}.", failed.join(", ")));
    } else if !s.thresholds.is_empty() {
        out.push(format!("All {} thresholds held.", s.thresholds.len()));
    }
    out
}

/// How mean latency grew from the baseline to the slowest step: across load levels (from the
/// lowest load), or across the points of a sweep (from the first point), which are not load
/// levels. `None` with fewer than two levels or points, or growth under 1.5x.
fn latency_growth(loaded: &[&SegmentAnalysis]) -> Option<String> {
    let levels: Vec<&SegmentAnalysis> = loaded.iter().copied().filter(|g| load_of(g) > 0.0).collect();
    let mut distinct: Vec<f64> = levels.iter().map(|g| load_of(g)).collect();
    distinct.sort_by(f64::total_cmp);
    distinct.dedup();
    if levels.len() >= 2 && distinct.len() >= 2 {
        let lo = levels.iter().min_by(|x, y| load_of(x).total_cmp(&load_of(y)))?;
        let hi = levels.iter().max_by(|x, y| load_of(x).total_cmp(&load_of(y)))?;
        let ratio = hi.ratio_to_lowest.filter(|r| *r >= 1.5)?;
        return Some(format!(
            "Latency grew {ratio:.1}x from {} to {} (mean {:.1} ms to {:.1} ms): response time does not scale with load.",
            step_label(lo),
            step_label(hi),
            lo.latency_ms.mean,
            hi.latency_ms.mean
        ));
    }
    if levels.is_empty() && loaded.len() >= 2 {
        let first = loaded[0];
        let worst = loaded[1..]
            .iter()
            .filter_map(|g| g.ratio_to_lowest.map(|r| (g, r)))
            .max_by(|a, b| a.1.total_cmp(&b.1))?;
        let (g, ratio) = worst;
        if ratio >= 1.5 {
            return Some(format!(
                "Mean latency grew {ratio:.1}x from {} to {} ({:.1} ms to {:.1} ms).",
                first.name, g.name, first.latency_ms.mean, g.latency_ms.mean
            ));
        }
    }
    None
}
