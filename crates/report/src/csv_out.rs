//! CSV files, for spreadsheets and scripts: one row per interval, per request kind, per
//! failure class; their columns are documented in docs/reports.md.

use crest_analysis::Analysis;
use crest_model::hist::us_to_ms;
use crest_model::results::Results;
use crest_model::HistError;
use std::io::Write;

/// Errors writing a CSV.
#[derive(Debug, thiserror::Error)]
pub enum CsvError {
    /// Writing failed.
    #[error(transparent)]
    Csv(#[from] csv::Error),
    /// A histogram in the results could not be decoded.
    #[error(transparent)]
    Hist(#[from] HistError),
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
        let h = i.latency.decode()?;
        let t = i.ttfb.decode()?;
        let max = if h.is_empty() { 0.0 } else { us_to_ms(h.max() as f64) };
        let ttfb = if t.is_empty() {
            0.0
        } else {
            us_to_ms(t.value_at_quantile(0.5) as f64)
        };
        out.write_record([
            f(i.t_s),
            i.requests.to_string(),
            i.failures.to_string(),
            f(p.rps),
            f(p.p50_ms),
            f(p.p95_ms),
            f(p.p99_ms),
            f(max),
            f(ttfb),
            i.bytes_sent.to_string(),
            i.bytes_received.to_string(),
            i.dropped.to_string(),
            f(p.load),
        ])?;
    }
    out.flush().map_err(csv::Error::from)?;
    Ok(())
}

/// `requests.csv`: one row per segment, request name and outcome.
pub fn requests<W: Write>(r: &Results, w: W) -> Result<(), CsvError> {
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
    for s in &r.stats {
        let h = s.latency.decode()?;
        let q = |q: f64| f(us_to_ms(h.value_at_quantile(q) as f64));
        let ttfb = match &s.ttfb {
            Some(t) => f(us_to_ms(t.decode()?.value_at_quantile(0.5) as f64)),
            None => String::new(),
        };
        let segment = r
            .segments
            .get(s.segment as usize)
            .map_or(String::new(), |g| g.name.clone());
        let name = r.names.get(s.name as usize).cloned().unwrap_or_default();
        let sizes = match &s.size {
            Some(z) => {
                let z = z.decode()?;
                let q = |q: f64| z.median_equivalent(z.value_at_quantile(q)).to_string();
                [q(0.5), q(0.95), z.median_equivalent(z.max()).to_string()]
            }
            None => Default::default(),
        };
        let [size_p50, size_p95, size_max] = sizes;
        // Names come from URLs and scenarios: one starting with `=` must stay text.
        out.write_record([
            crate::fmt::csv_text(&segment),
            crate::fmt::csv_text(&name),
            s.outcome.key(),
            s.count.to_string(),
            q(0.5),
            q(0.9),
            q(0.95),
            q(0.99),
            f(us_to_ms(h.max() as f64)),
            f(us_to_ms(h.mean())),
            ttfb,
            s.bytes_sent.to_string(),
            s.bytes_received.to_string(),
            size_p50,
            size_p95,
            size_max,
        ])?;
    }
    out.flush().map_err(csv::Error::from)?;
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
            crate::fmt::csv_text(x.first_segment.as_deref().unwrap_or_default()),
            f(x.duration_ms.p50),
            f(x.duration_ms.p90),
            f(x.duration_ms.max),
            x.cluster.as_ref().map(crate::fmt::words::cluster).unwrap_or_default(),
            crate::fmt::csv_text(&x.example),
        ])?;
    }
    out.flush().map_err(csv::Error::from)?;
    Ok(())
}
