//! A capacity search: its levels, how a probe fared and why the search ended.

use super::*;

/// A level of a capacity search: `12 users`, `250/s`.
pub fn level(l: Level) -> String {
    if l.open {
        rate(l.value)
    } else {
        count(l.value.round() as u64, "user")
    }
}

/// How a probe missed the service level.
pub fn slo_miss(m: &Miss) -> String {
    match m {
        Miss::ErrorRate { rate, max } => {
            format!("error rate {} above {}", crate::fmt::pct(*rate), crate::fmt::pct(*max))
        }
        Miss::P99 { ms, max } => format!("p99 {ms:.1} ms above {max:.1} ms"),
        Miss::RateNotKept { share } => format!("only {:.0}% of the asked rate was served", share * 100.0),
    }
}

/// What a probe measured, in the search's unit, and how it fared against the service level:
/// `812.4 req/s ok, p99 3.2 ms, 0.00% errors: meets the service level`.
pub fn probe(p: &Probe, miss: Option<&Miss>, unit: WorkUnit) -> String {
    format!(
        "{:.1} {} ok, p99 {:.1} ms, {} errors: {}",
        p.success_rps,
        unit_rate(unit),
        p.p99_ms,
        crate::fmt::pct(p.error_rate),
        miss.map_or_else(|| "meets the service level".into(), slo_miss)
    )
}

/// A probe as results.json keeps it, in words.
pub fn probe_record(r: &ProbeRecord, unit: WorkUnit) -> String {
    match r.how_it_fared() {
        Some(FiguresOrWords::Figures((p, miss))) => probe(p, miss, unit),
        Some(FiguresOrWords::Words(w)) => w,
        None => String::new(),
    }
}

/// Why the search's own decisions ended it.
pub fn search_done(d: &Done, unit: WorkUnit) -> String {
    match d {
        Done::FirstFailed(l, m) => format!("the first probe already failed at {}: {}", level(*l), slo_miss(m)),
        Done::HighestAllowed(l) => format!("reached the highest level allowed ({})", level(*l)),
        Done::LimitBetween(good, bad, m) => {
            format!(
                "limit found between {} and {}: {}",
                level(*good),
                level(*bad),
                slo_miss(m)
            )
        }
        Done::Failed(l, m) => format!("{} failed: {}", level(*l), slo_miss(m)),
        // The level the search reached 95% of its best at is its own rule for stopping, not
        // where the service saturates: that is the limit, judged on the steps and said once.
        Done::Plateau { rps, .. } => format!(
            "throughput stopped growing at {} {}; more load only adds latency",
            num(*rps),
            unit_rate(unit)
        ),
    }
}

/// Why a capacity search ended.
pub fn search_end(e: &SearchEnd, unit: WorkUnit) -> String {
    match e {
        SearchEnd::Done(d) => search_done(d, unit),
        SearchEnd::Budget { budget_s } => format!(
            "the search budget of {} was used",
            humantime::format_duration(std::time::Duration::from_secs_f64(budget_s.max(0.0)))
        ),
        SearchEnd::Interrupted => "interrupted".into(),
        SearchEnd::Stopped { at, condition, saw } => {
            format!(
                "stop condition `{condition}` held at {}: {}",
                level(*at),
                stop_detail(saw)
            )
        }
        SearchEnd::CutShort { probes } => cut_short(*probes),
    }
}

/// Why a capacity search ended, as a document keeps it.
pub fn search_ended(e: Option<FiguresOrWords<&SearchEnd>>, unit: WorkUnit) -> String {
    match e {
        Some(FiguresOrWords::Figures(e)) => search_end(e, unit),
        Some(FiguresOrWords::Words(w)) => w,
        None => String::new(),
    }
}

/// Why a capacity search rebuilt from its journals has no ending: it was killed after `probes`.
pub fn cut_short(probes: usize) -> String {
    format!("the search was cut short after probe {probes}, before it could conclude")
}

/// Where a capacity search found the limit.
pub fn limit(l: &Limit, unit: WorkUnit) -> String {
    match l {
        Limit::Failed(l) => level(*l),
        Limit::Plateau { rps, from } => format!(
            "a throughput plateau of {} {} from {}",
            num(*rps),
            unit_rate(unit),
            level(*from)
        ),
    }
}

/// The recommended operating range.
pub fn recommended(r: &Recommended) -> String {
    match r {
        Recommended::About(l) => format!("about {}", level(*l)),
        Recommended::Between(lo, hi) => format!("{} to {}", level(*lo), level(*hi)),
    }
}

/// What a capacity search found: its maximum throughput among the probes that met the service
/// level, and its limit.
pub fn search_found(c: &crest_analysis::find::CapacitySummary) -> String {
    let max = format!(
        "maximum throughput {} {} successful, among the probes that met the service level",
        num(c.max_per_s),
        unit_rate(c.unit)
    );
    match &c.limit {
        Some(l) => format!("{max}; limit: {}", limit(l, c.unit)),
        None => max,
    }
}
