//! Monitored resources: leaks and their limits.

use super::*;
use crest_model::monitor::MonitorNote;

/// What the monitor saw of a source, in words: `pid 12: no longer running at 4.0 s`.
pub fn monitor_note(n: &MonitorNote) -> String {
    let pids = |p: &[i32]| p.iter().map(i32::to_string).collect::<Vec<_>>().join(", ");
    match n {
        MonitorNote::Unresolved { error, at_s } => format!("{error} (at {at_s:.1} s)"),
        MonitorNote::NotFound { what, at_s } => format!("no process found for {what} at {at_s:.1} s"),
        MonitorNote::Gone { what, at_s } => format!("{what}: no longer running at {at_s:.1} s"),
        MonitorNote::Back { what, pids: p, at_s } => {
            format!("{what}: running again at {at_s:.1} s (pid {})", pids(p))
        }
        MonitorNote::NewPid { what, pids: p, at_s } => format!("{what}: now pid {} at {at_s:.1} s", pids(p)),
        MonitorNote::NoPrivateMemory { what } => format!(
            "{what}: the kernel gives no RssAnon in /proc/PID/status (Linux 4.5 or later does), so private memory is not recorded and leaks of memory are not judged"
        ),
        MonitorNote::CouldNotStart { error } => format!("the monitor could not start: {error}"),
        MonitorNote::ReadAgain { at_s } => format!("read again from {at_s:.1} s"),
        MonitorNote::Unreadable { error, at_s } => format!("could not be read at {at_s:.1} s: {error}"),
        MonitorNote::TooManySeries { most } => {
            format!("more than {most} series: the rest are left out; choose metrics by name")
        }
        MonitorNote::InPart { from_s, note } => {
            format!("{} (in the part from {from_s:.0} s)", monitor_note(note))
        }
        MonitorNote::Written(words) => words.clone(),
    }
}

/// Two significant digits, as "about" deserves.
pub(super) fn round2(v: f64) -> f64 {
    if v == 0.0 || !v.is_finite() {
        return v;
    }
    let mag = 10f64.powi(v.abs().log10().floor() as i32 - 1);
    (v / mag).round() * mag
}

/// A span of time in the unit that reads best.
pub(super) fn span(secs: f64) -> String {
    if secs < 120.0 {
        format!("{:.0} s", secs)
    } else if secs < 2.0 * 3600.0 {
        format!("{:.0} minutes", secs / 60.0)
    } else if secs < 2.0 * 86400.0 {
        format!("{:.0} hours", secs / 3600.0)
    } else {
        format!("{:.0} days", secs / 86400.0)
    }
}

fn capitalise(s: &str) -> String {
    let mut c = s.chars();
    match c.next() {
        Some(f) => f.to_uppercase().chain(c).collect(),
        None => String::new(),
    }
}

/// Growth of `per_minute`: fast growth of a count reads better per second, the rest per minute.
fn growth(unit: Unit, per_minute: f64) -> String {
    if per_minute >= 600.0 && unit == Unit::Count {
        format!("{} a second", value(unit, round2(per_minute / 60.0)))
    } else {
        format!("{} a minute", value(unit, round2(per_minute)))
    }
}

/// A leak, with how fast it grows and when it reaches its limit.
pub fn leak(l: &Leak) -> String {
    // Counts are whole; the trend line's ends need not be.
    let level = |v: f64| if l.unit == Unit::Count { v.round() } else { v };
    let rate = growth(l.unit, l.per_minute);
    let at = l
        .step_load
        .as_ref()
        .map(|s| format!("{}: ", step(s)))
        .unwrap_or_default();
    let beside = l
        .resident
        .as_ref()
        .map(|r| {
            format!(
                "; resident memory, which counts shared pages too, by about {}",
                growth(Unit::Bytes, r.per_minute)
            )
        })
        .unwrap_or_default();
    let mut sentence = format!(
        "{} {} by about {rate} under steady load ({at}from {} to {} over {}{beside})",
        capitalise(&l.title),
        if l.metric.contains("memory") { "grows" } else { "grow" },
        value(l.unit, level(l.from)),
        value(l.unit, level(l.to)),
        span(l.window_s.1 - l.window_s.0)
    );
    match (l.limit, l.minutes_to_limit) {
        (Some(lim), Some(m)) => sentence.push_str(&format!(
            "; the limit of {} is reached in about {}",
            value(l.unit, lim),
            span(m * 60.0)
        )),
        (Some(lim), None) => sentence.push_str(&format!("; it has reached its limit of {}", value(l.unit, lim))),
        _ => {}
    }
    sentence.push('.');
    sentence
}
