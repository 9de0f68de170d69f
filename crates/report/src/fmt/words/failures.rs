//! Failures: why requests are not plotted one by one, and what a timeout cluster looks like.

use super::*;

/// Milliseconds as seconds: whole from 10 s on, else to a tenth with no trailing `.0`, so a
/// 1.5 s timeout is not rounded into another one.
fn seconds(ms: f64) -> String {
    let s = ms / 1000.0;
    if s >= 10.0 || (s * 10.0).round() % 10.0 == 0.0 {
        format!("{s:.0}")
    } else {
        format!("{s:.1}")
    }
}

/// Why a run's requests are not plotted one by one; `None` when they are (or there were none).
pub fn each_request_absent(e: &EachRequest) -> Option<String> {
    match e {
        EachRequest::TooMany { requests, kept } => Some(format!(
            "Each request's latency is plotted for runs of at most {} requests; this one made {}. \
             The charts above show its percentiles per second, and --log-requests keeps every \
             request in request-log.csv.gz.",
            crate::fmt::int(*kept),
            crate::fmt::int(*requests)
        )),
        EachRequest::NotKept => Some(
            "These results do not hold each request one by one (written by an older crest, or \
             joined from parts that did not keep theirs), so they are not plotted one by one."
                .into(),
        ),
        EachRequest::Plotted { .. } | EachRequest::NoRequests => None,
    }
}

/// Failures that look like a timeout.
pub fn cluster(c: &Cluster) -> String {
    let whose = match c.whose {
        TimeoutOf::Crest => "crest's own request timeout",
        TimeoutOf::ServerOrProxy => "a server or proxy timeout",
        TimeoutOf::Unknown => "a timeout",
    };
    if c.p50_ms < 1000.0 {
        return format!(
            "most of these took {} to {} ms, above what succeeded: it looks like {whose} near {} ms",
            crate::fmt::ms(c.p10_ms),
            crate::fmt::ms(c.p90_ms),
            crate::fmt::ms(c.p50_ms)
        );
    }
    format!(
        "most of these took {} to {} s: it looks like {whose} near {} s",
        seconds(c.p10_ms),
        seconds(c.p90_ms),
        seconds(c.p50_ms)
    )
}
