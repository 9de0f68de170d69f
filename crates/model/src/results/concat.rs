//! Joining runs made one after another into one document (the probes of a capacity search, the
//! points of a sweep), the one place parts' counters, series and histograms are added up.

use super::{OpenStats, RequestPoint, Results, Segment, POINTS_KEPT};
use crate::EncodedHistogram;

/// Joins runs made one after another (the probes of a capacity search, the points of a sweep)
/// into one document: run `k` becomes segment `k`, its intervals follow the previous run's, and
/// counters and histograms add. Each part is labelled with its segment's name and load.
pub fn concat(
    (first_seg, first): (Segment, Results),
    rest: impl IntoIterator<Item = (Segment, Results)>,
) -> Result<Results, crate::HistError> {
    let it = rest.into_iter();
    let mut out = first.clone();
    out.segments.clear();
    out.stats.clear();
    out.iterations.clear();
    out.intervals.clear();
    out.status_codes.clear();
    out.errors.clear();
    out.abandoned = 0;
    out.duration_s = 0.0;
    out.monitor = None;
    // Each part's users are its own; their times do not add up across parts.
    out.users = None;
    out.failed.clear();
    out.points.clear();
    // Points are kept only when every part kept all of its own and they add up to few enough.
    let mut points_whole = true;
    let mut send_lag: Option<hdrhistogram::Histogram<u64>> = None;
    let mut service: Option<hdrhistogram::Histogram<u64>> = None;
    let (mut arrivals, mut dropped, mut behind, mut queued, mut target) = (0u64, 0u64, 0u64, 0u64, 0.0f64);
    for (k, (label, part)) in std::iter::once((first_seg, first)).chain(it).enumerate() {
        // Parts start on whole intervals, so intervals never overlap.
        let offset = out.duration_s;
        let len = (part.duration_s / part.interval_s).ceil().max(1.0) * part.interval_s;
        out.segments.push(Segment {
            start_s: offset,
            end_s: offset + part.duration_s,
            ..label
        });
        let samples = part.stats.iter().map(|s| s.count).fold(0, u64::saturating_add);
        for mut s in part.stats {
            s.segment = k as u32;
            out.stats.push(s);
        }
        for mut it in part.iterations {
            it.segment = k as u32;
            out.iterations.push(it);
        }
        for mut i in part.intervals {
            i.t_s += offset;
            out.intervals.push(i);
        }
        points_whole &= part.points.len() as u64 == samples;
        // Offsets are whole intervals, so the shift is exact in µs.
        let shift = (offset * 1e6).round() as u64;
        out.points.extend(
            part.points
                .iter()
                .map(|p| RequestPoint(p.0.saturating_add(shift), p.1, p.2, p.3)),
        );
        for (code, n) in part.status_codes {
            let c = out.status_codes.entry(code).or_default();
            *c = c.saturating_add(n);
        }
        for e in part.errors {
            match out.errors.iter_mut().find(|x| x.outcome == e.outcome) {
                Some(x) => x.count = x.count.saturating_add(e.count),
                None => out.errors.push(e),
            }
        }
        out.abandoned = out.abandoned.saturating_add(part.abandoned);
        if let Some(o) = part.open {
            arrivals = arrivals.saturating_add(o.arrivals);
            dropped = dropped.saturating_add(o.dropped);
            behind = behind.saturating_add(o.behind);
            queued = queued.saturating_add(o.queued);
            target = target.max(o.target_rps);
            for (acc, h) in [(&mut send_lag, Some(&o.send_lag)), (&mut service, o.service.as_ref())] {
                if let Some(h) = h {
                    let h = h.decode()?;
                    match acc {
                        Some(acc) => {
                            let _ = acc.add(&h);
                        }
                        None => *acc = Some(h),
                    }
                }
            }
        }
        if part.ended_by.interrupted() {
            out.ended_by = part.ended_by;
        }
        if let Some(m) = part.monitor {
            match &mut out.monitor {
                Some(acc) => acc.append(m, offset),
                None => {
                    let mut acc = crate::monitor::MonitorRecord {
                        interval_s: m.interval_s,
                        ..Default::default()
                    };
                    acc.append(m, offset);
                    out.monitor = Some(acc);
                }
            }
        }
        if let (Some(acc), Some(c)) = (out.client.as_mut(), part.client.as_ref()) {
            if k > 0 {
                acc.cpu_s += c.cpu_s;
                acc.peak_rss_bytes = acc.peak_rss_bytes.max(c.peak_rss_bytes);
                acc.core_wait_s = acc.core_wait_s.zip(c.core_wait_s).map(|(a, b)| a + b);
            }
        }
        out.duration_s = offset + len;
    }
    if !points_whole || out.points.len() as u64 > POINTS_KEPT {
        out.points.clear();
    }
    out.errors.sort_by_key(|e| std::cmp::Reverse(e.count));
    out.open = send_lag.map(|h| OpenStats {
        target_rps: target,
        arrivals,
        dropped,
        behind,
        queued,
        send_lag: EncodedHistogram::encode(&h),
        service: service.as_ref().map(EncodedHistogram::encode),
    });
    Ok(out)
}
