//! CSV files, for spreadsheets and scripts: one row per interval, per request kind, per
//! failure class; their columns are documented in docs/reports.md.

use crest_analysis::Analysis;
use crest_model::results::Results;
use std::io::Write;

/// Errors writing a CSV.
#[derive(Debug, thiserror::Error)]
pub enum CsvError {
    /// Writing failed.
    #[error(transparent)]
    Csv(#[from] csv::Error),
    /// Flushing failed.
    #[error(transparent)]
    Io(#[from] std::io::Error),
}

fn f(v: f64) -> String {
    format!("{v:.3}")
}

/// `intervals.csv`: one row per interval.
pub fn intervals<W: Write>(r: &Results, a: &Analysis, w: W) -> Result<(), CsvError> {
    let mut out = csv::Writer::from_writer(w);
    out.write_record([
        "t_s",
        "requests",
        "failures",
        "rps",
        "p50_ms",
        "p95_ms",
        "p99_ms",
        "max_ms",
        "ttfb_p50_ms",
        "bytes_sent",
        "bytes_received",
        "dropped",
        "load",
    ])?;
    for (i, p) in r.intervals.iter().zip(&a.series) {
        out.write_record([
            f(i.t_s),
            i.requests.to_string(),
            i.failures.to_string(),
            f(p.rps),
            f(p.p50_ms),
            f(p.p95_ms),
            f(p.p99_ms),
            f(p.max_ms),
            f(p.ttfb_p50_ms),
            i.bytes_sent.to_string(),
            i.bytes_received.to_string(),
            i.dropped.to_string(),
            f(p.load),
        ])?;
    }
    out.flush()?;
    Ok(())
}

/// `requests.csv`: one row per segment, request name and outcome.
pub fn requests<W: Write>(r: &Results, a: &Analysis, w: W) -> Result<(), CsvError> {
    let mut out = csv::Writer::from_writer(w);
    out.write_record([
        "segment",
        "name",
        "outcome",
        "count",
        "p50_ms",
        "p90_ms",
        "p95_ms",
        "p99_ms",
        "max_ms",
        "mean_ms",
        "ttfb_p50_ms",
        "bytes_sent",
        "bytes_received",
        "size_p50_bytes",
        "size_p95_bytes",
        "size_max_bytes",
    ])?;
    for (s, row) in r.stats.iter().zip(&a.stats) {
        let segment = r
            .segments
            .get(s.segment as usize)
            .map_or(String::new(), |g| crate::fmt::words::step_kind(&g.kind));
        let name = r.names.get(s.name as usize).cloned().unwrap_or_default();
        let [size_p50, size_p95, size_max] = row.size_bytes.map(|z| z.map(|b| b.to_string())).unwrap_or_default();
        // Names come from URLs and scenarios: one starting with `=` must stay text.
        out.write_record([
            crate::fmt::csv_text(&segment),
            crate::fmt::csv_text(&name),
            s.outcome.key(),
            s.count.to_string(),
            f(row.p50_ms),
            f(row.p90_ms),
            f(row.p95_ms),
            f(row.p99_ms),
            f(row.max_ms),
            f(row.mean_ms),
            row.ttfb_p50_ms.map(f).unwrap_or_default(),
            s.bytes_sent.to_string(),
            s.bytes_received.to_string(),
            size_p50,
            size_p95,
            size_max,
        ])?;
    }
    out.flush()?;
    Ok(())
}

/// `failures.csv`: one row per failure class.
pub fn failures<W: Write>(a: &Analysis, w: W) -> Result<(), CsvError> {
    let mut out = csv::Writer::from_writer(w);
    out.write_record([
        "outcome",
        "description",
        "count",
        "first_at_s",
        "first_segment",
        "p50_ms",
        "p90_ms",
        "max_ms",
        "cluster",
        "example",
    ])?;
    for x in &a.failures {
        out.write_record([
            x.outcome.clone(),
            x.description.clone(),
            x.count.to_string(),
            x.first_at_s.map(f).unwrap_or_default(),
            crate::fmt::csv_text(
                &x.first_segment
                    .as_ref()
                    .map(crate::fmt::words::step_kind)
                    .unwrap_or_default(),
            ),
            f(x.duration_ms.p50),
            f(x.duration_ms.p90),
            f(x.duration_ms.max),
            x.cluster.as_ref().map(crate::fmt::words::cluster).unwrap_or_default(),
            crate::fmt::csv_text(&x.example),
        ])?;
    }
    out.flush()?;
    Ok(())
}
