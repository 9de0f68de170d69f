//! A study's cells about a point's cost and resources: its setup command, and what each watched
//! process used.

use super::*;
use crest_analysis::resources::MIN_SAMPLES;
use crest_analysis::study::ProcessFigures;
use crest_model::results::SetupRecord;

/// A setup command's duration in seconds, with one decimal.
fn setup_time(s: &SetupRecord) -> String {
    format!("{:.1} s", s.duration_s)
}

/// How a setup command ended, when not well: `exit 1`, `killed by a signal`.
fn setup_end(s: &SetupRecord) -> Option<String> {
    match s.exit_code {
        Some(0) => None,
        Some(code) => Some(format!("exit {code}")),
        None => Some("killed by a signal".to_string()),
    }
}

/// A study's setup cell: `12.3 s`, or `12.3 s, exit 1` when it failed.
pub fn setup_cell(s: &SetupRecord) -> String {
    match setup_end(s) {
        Some(end) => format!("{}, {end}", setup_time(s)),
        None => setup_time(s),
    }
}

/// How a failed setup command went, for the sweep's error: `exit 3 after 0.3 s`.
pub fn setup_failed(s: &SetupRecord) -> String {
    format!(
        "{} after {}",
        setup_end(s).unwrap_or_else(|| "exit 0".to_string()),
        setup_time(s)
    )
}

/// What a figure shows when too few samples are behind it.
fn too_few(samples: usize) -> String {
    format!("too few samples ({samples} of {MIN_SAMPLES})")
}

/// A process's mean CPU in millicores, whole: `125`.
pub fn process_cpu_cell(p: &ProcessFigures) -> String {
    match p.cpu_millicores {
        Some(m) => format!("{m:.0}"),
        None if p.cpu_samples == 0 => "-".to_string(),
        None => too_few(p.cpu_samples),
    }
}

/// A process's peak memory, private / resident: `38.2 MiB / 52.1 MiB`; `-` for a series not
/// watched.
pub fn process_memory_cell(p: &ProcessFigures) -> String {
    let one = |peak: Option<f64>, samples: usize| match peak {
        Some(b) => value(Unit::Bytes, b),
        None if samples == 0 => "-".to_string(),
        None => too_few(samples),
    };
    format!(
        "{} / {}",
        one(p.private_peak_bytes, p.private_samples),
        one(p.resident_peak_bytes, p.resident_samples)
    )
}
