//! The per-interval latency histograms as an HdrHistogram interval log (`latency.hlog`), for
//! HdrHistogram's own tools (HistogramLogAnalyzer, hdr-plot). Values are in microseconds.

use crest_model::results::Results;
use hdrhistogram::serialization::interval_log::{IntervalLogWriterBuilder, Tag};
use hdrhistogram::serialization::V2DeflateSerializer;
use std::io::Write;
use std::time::{Duration, SystemTime};

/// The log could not be written.
#[derive(Debug, thiserror::Error)]
pub enum HlogError {
    /// Writing its header failed.
    #[error(transparent)]
    Io(#[from] std::io::Error),
    /// A histogram in the results could not be decoded.
    #[error(transparent)]
    Hist(#[from] crest_model::HistError),
    /// A histogram could not be encoded or written; hdrhistogram gives only a debug form.
    #[error("cannot write an interval: {0}")]
    Interval(String),
}

/// Writes the log.
pub fn write<W: Write>(r: &Results, w: &mut W) -> Result<(), HlogError> {
    let start = chrono::DateTime::parse_from_rfc3339(&r.started_at)
        .map(|t| SystemTime::UNIX_EPOCH + Duration::from_millis(t.timestamp_millis().max(0) as u64))
        .unwrap_or(SystemTime::UNIX_EPOCH);
    let mut serializer = V2DeflateSerializer::new();
    let mut log = IntervalLogWriterBuilder::new()
        .add_comment("crest latency per interval, microseconds")
        .with_start_time(start)
        .with_base_time(start)
        .with_max_value_divisor(1000.0)
        .begin_log_with(w, &mut serializer)?;
    let tag = Tag::new("total");
    for i in &r.intervals {
        let h = i.latency.decode()?;
        let secs = |s: f64| {
            Duration::try_from_secs_f64(s).map_err(|_| HlogError::Interval(format!("time {s} s")))
        };
        log.write_histogram(&h, secs(i.t_s)?, secs(r.interval_s)?, tag)
        .map_err(|e| HlogError::Interval(format!("{e:?}")))?;
    }
    Ok(())
}
