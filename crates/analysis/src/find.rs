//! The capacity search's decisions, as pure functions so that the search can be tested without
//! running a probe: given the probes so far, what to probe next or why to stop; and, afterwards,
//! the Universal Scalability Law fit and the summary.
//!
//! Closed model: levels are users, doubled from 1 while every probe meets the service level
//! and throughput keeps growing, then bisected between the last good level and the first bad
//! one. Open model: the same over arrivals per second.

use crate::capacity::Capacity;
use crate::figures::{Judged, SegmentAnalysis, WorkUnit};
use serde::Serialize;

/// Throughput must grow by this share when the level doubles, or it has stopped growing.
const GROWTH: f64 = 0.05;
/// In the open model, a probe that achieves less than this share of its rate fails.
const ACHIEVED: f64 = 0.95;
/// Bisection ends when the gap between good and bad is at most this share of the good level.
const RESOLUTION: f64 = 0.05;

/// The service level each probe must meet.
#[derive(Clone, Debug, PartialEq)]
pub struct Slo {
    /// Highest error rate.
    pub max_error_rate: f64,
    /// Highest p99 latency in ms, when given.
    pub max_p99_ms: Option<f64>,
}

pub use crest_model::reason::{Done, Level, Miss, Probe};
use crest_model::reason::{FiguresOrWords, SearchEnd};

/// Whether a probe met the service level, and why not.
pub fn judge(p: &Probe, slo: &Slo, open: bool) -> Result<(), Miss> {
    if p.error_rate > slo.max_error_rate {
        return Err(Miss::ErrorRate {
            rate: p.error_rate,
            max: slo.max_error_rate,
        });
    }
    if let Some(max) = slo.max_p99_ms {
        if p.p99_ms > max {
            return Err(Miss::P99 { ms: p.p99_ms, max });
        }
    }
    if open && p.achieved_share < ACHIEVED {
        return Err(Miss::RateNotKept {
            share: p.achieved_share,
        });
    }
    Ok(())
}

/// The next step of the search.
#[derive(Clone, Debug, PartialEq)]
pub enum Next {
    /// Probe this level.
    Probe(f64),
    /// Stop, for this reason.
    Done(Done),
}

/// Share of the maximum throughput where the recommended range starts.
const RECOMMENDED: f64 = 0.8;

/// Share of the best throughput that marks the knee.
const KNEE: f64 = 0.95;

/// Decides the next probe from the probes so far (in the order they ran). Levels are whole
/// users in the closed model; `start` is the first level; `max_level` bounds the search.
///
/// 1. Double the level while every probe meets the service level and throughput grows.
/// 2. Then bisect for the knee: the smallest level reaching 95% of the best throughput.
/// 3. Then, if a probe failed the service level, bisect for the limit: between the highest
///    level that passed and the lowest that failed.
pub fn next(probes: &[Probe], slo: &Slo, open: bool, start: f64, max_level: f64) -> Next {
    let Some(last) = probes.last() else {
        return Next::Probe(start);
    };
    let level = |value: f64| Level { value, open };
    let mut sorted: Vec<&Probe> = probes.iter().collect();
    sorted.sort_by(|a, b| a.level.total_cmp(&b.level));
    let passing: Vec<&Probe> = sorted.iter().copied().filter(|p| judge(p, slo, open).is_ok()).collect();
    let failing: Vec<(&Probe, Miss)> = sorted
        .iter()
        .copied()
        .filter_map(|p| judge(p, slo, open).err().map(|e| (p, e)))
        .collect();
    let Some(&top) = passing.last() else {
        let (p, why) = failing[0];
        return Next::Done(Done::FirstFailed(level(p.level), why));
    };
    let best = passing.iter().map(|p| p.success_rps).fold(0.0, f64::max);
    // Growth: the highest passing level, if it is the newest probe, keeps doubling while it
    // brought more throughput than the passing level below it and nothing failed.
    let below = passing.iter().rev().nth(1);
    let grew = below.is_none_or(|b| top.success_rps >= b.success_rps * (1.0 + GROWTH));
    if failing.is_empty() && grew && (top.level - last.level).abs() < f64::EPSILON {
        let next = if open {
            top.level * 2.0
        } else {
            (top.level * 2.0).round()
        };
        return if next > max_level {
            Next::Done(Done::HighestAllowed(level(max_level)))
        } else {
            Next::Probe(next)
        };
    }
    let close = |lo: f64, hi: f64| {
        if open {
            hi - lo <= RESOLUTION * lo
        } else {
            hi - lo <= 1.0 || hi - lo <= RESOLUTION * lo
        }
    };
    let mid = |lo: f64, hi: f64| {
        if open {
            (lo + hi) / 2.0
        } else {
            ((lo + hi) / 2.0).round().clamp(lo + 1.0, hi - 1.0)
        }
    };
    // The knee.
    let reach = passing.iter().copied().find(|p| p.success_rps >= KNEE * best);
    if let Some(hi) = reach {
        if let Some(lo) = passing.iter().copied().rfind(|p| p.level < hi.level) {
            if !close(lo.level, hi.level) {
                return Next::Probe(mid(lo.level, hi.level));
            }
        }
    }
    // The limit.
    if let Some((bad, why)) = failing.iter().find(|(p, _)| p.level > top.level) {
        if !close(top.level, bad.level) {
            return Next::Probe(mid(top.level, bad.level));
        }
        return Next::Done(Done::LimitBetween(level(top.level), level(bad.level), *why));
    }
    if let Some((bad, why)) = failing.first() {
        return Next::Done(Done::Failed(level(bad.level), *why));
    }
    let knee = reach.map_or(top.level, |p| p.level);
    Next::Done(Done::Plateau {
        rps: best,
        from: level(knee),
    })
}

/// The Universal Scalability Law, X(N) = λN / (1 + σ(N − 1) + κN(N − 1)).
#[derive(Clone, Debug, PartialEq, Serialize)]
pub struct Usl {
    /// Throughput of one user, req/s.
    pub lambda: f64,
    /// Contention (0 to 1).
    pub sigma: f64,
    /// Coherency (crosstalk).
    pub kappa: f64,
    /// Users at which throughput peaks, when κ > 0.
    pub peak_users: Option<f64>,
    /// R² of the fit on throughput.
    pub r2: f64,
}

/// Fits the USL to (users, throughput) points by least squares on N/X, which is quadratic in N.
/// `None` when there are fewer than three distinct levels or the fit is not physical.
pub fn usl(points: &[(f64, f64)]) -> Option<Usl> {
    let pts: Vec<(f64, f64)> = points.iter().copied().filter(|(n, x)| *n >= 1.0 && *x > 0.0).collect();
    let mut levels: Vec<f64> = pts.iter().map(|p| p.0).collect();
    levels.sort_by(f64::total_cmp);
    levels.dedup();
    if levels.len() < 3 {
        return None;
    }
    // y = N / X = a + b (N - 1) + c N (N - 1), with a = 1/λ, b = σ/λ, c = κ/λ.
    let mut m = [[0.0f64; 3]; 3];
    let mut v = [0.0f64; 3];
    for (n, x) in &pts {
        let row = [1.0, n - 1.0, n * (n - 1.0)];
        let y = n / x;
        for i in 0..3 {
            for j in 0..3 {
                m[i][j] += row[i] * row[j];
            }
            v[i] += row[i] * y;
        }
    }
    let [a, b, c] = solve3(m, v)?;
    if a <= 0.0 {
        return None;
    }
    let (lambda, sigma, kappa) = (1.0 / a, (b / a).max(0.0), (c / a).max(0.0));
    if sigma > 1.0 {
        return None;
    }
    let model = |n: f64| lambda * n / (1.0 + sigma * (n - 1.0) + kappa * n * (n - 1.0));
    let mean = pts.iter().map(|p| p.1).sum::<f64>() / pts.len() as f64;
    let ss_tot: f64 = pts.iter().map(|p| (p.1 - mean).powi(2)).sum();
    let ss_res: f64 = pts.iter().map(|p| (p.1 - model(p.0)).powi(2)).sum();
    let r2 = if ss_tot > 0.0 { 1.0 - ss_res / ss_tot } else { 1.0 };
    let peak_users = (kappa > 0.0).then(|| ((1.0 - sigma) / kappa).sqrt());
    Some(Usl {
        lambda,
        sigma,
        kappa,
        peak_users,
        r2,
    })
}

/// Gauss-Jordan elimination with partial pivoting on a 3x3 system.
#[allow(clippy::needless_range_loop)]
fn solve3(mut m: [[f64; 3]; 3], mut v: [f64; 3]) -> Option<[f64; 3]> {
    for col in 0..3 {
        let pivot = (col..3).max_by(|&a, &b| m[a][col].abs().total_cmp(&m[b][col].abs()))?;
        if m[pivot][col].abs() < 1e-12 {
            return None;
        }
        m.swap(col, pivot);
        v.swap(col, pivot);
        for r in 0..3 {
            if r != col {
                let f = m[r][col] / m[col][col];
                for k in 0..3 {
                    m[r][k] -= f * m[col][k];
                }
                v[r] -= f * v[col];
            }
        }
    }
    Some([v[0] / m[0][0], v[1] / m[1][1], v[2] / m[2][2]])
}

/// What `crest find` concluded, for the summary JSON and the report.
#[derive(Clone, Debug, Serialize)]
pub struct CapacitySummary {
    /// What the search's throughputs count: the run's unit of work (iterations of a
    /// scenario's flows, transactions, requests). Probes, knee, plateau and limit are judged
    /// in it.
    pub unit: WorkUnit,
    /// The most successful units of work per second any probe that met the service level
    /// sustained.
    pub max_per_s: f64,
    /// The most successful requests per second any such probe sustained, whatever the unit.
    pub max_throughput_rps: f64,
    /// The optimal operating point.
    pub optimal: Option<OptimalPoint>,
    /// The first level that failed the service level or stopped adding throughput.
    pub limit: Option<Limit>,
    /// Why the search stopped.
    pub stopped_because: Option<FiguresOrWords<SearchEnd>>,
    /// A range to run the service in: from the lowest level that already gives most of the
    /// maximum up to the optimal one.
    pub recommended: Option<Recommended>,
    /// The Universal Scalability Law fit (closed model).
    pub usl: Option<Usl>,
}

/// Where the search found the service's limit.
#[derive(Clone, Copy, Debug, PartialEq, Serialize)]
#[serde(rename_all = "snake_case")]
pub enum Limit {
    /// The lowest level that failed the service level.
    Failed(Level),
    /// Throughput stopped growing at this many successful units per second from this level on.
    Plateau {
        /// Successful units per second, in the search's unit.
        rps: f64,
        /// Where the plateau starts.
        from: Level,
    },
}

/// The recommended operating range.
#[derive(Clone, Copy, Debug, PartialEq, Serialize)]
#[serde(rename_all = "snake_case")]
pub enum Recommended {
    /// About this level.
    About(Level),
    /// From the first level to the second.
    Between(Level, Level),
}

/// The optimal operating point.
#[derive(Clone, Debug, Serialize)]
pub struct OptimalPoint {
    /// Users (closed model).
    #[serde(skip_serializing_if = "Option::is_none")]
    pub concurrency: Option<f64>,
    /// Arrivals per second (open model).
    #[serde(skip_serializing_if = "Option::is_none")]
    pub rate: Option<f64>,
    /// Successful units of work per second there, in the search's unit.
    pub per_s: f64,
    /// Mean latency (iteration time) of the successful units there, ms.
    pub latency_ms: f64,
}

/// The capacity summary of a `crest find` run: `steps` are the probes in the run's unit of
/// work, `requests` the same probes in requests.
pub fn capacity_summary(
    r: &crest_model::results::Results,
    steps: &[SegmentAnalysis],
    requests: &[SegmentAnalysis],
    capacity: &Capacity,
) -> Option<CapacitySummary> {
    let f = r.find.as_ref()?;
    let open = f.model.is_open();
    let level = |value: f64| Level { value, open };
    // Only probes that met the service level speak for the service's capacity: a probe that
    // failed it (errors, latency, a rate not kept) shows what the service cannot do; and only
    // probes with the data to be judged (see `Judged`).
    let passed: Vec<(f64, &SegmentAnalysis)> = f
        .probes
        .iter()
        .zip(steps)
        .filter(|(p, s)| p.passed && s.judged == Judged::Yes)
        .map(|(p, s)| (p.level, s))
        .collect();
    let max_per_s = passed.iter().map(|(_, s)| s.success_rps).fold(0.0, f64::max);
    let max_throughput_rps = f
        .probes
        .iter()
        .zip(requests)
        .filter(|(p, s)| p.passed && s.judged == Judged::Yes)
        .map(|(_, s)| s.success_rps)
        .fold(0.0, f64::max);
    let optimal = capacity
        .optimal
        .as_ref()
        .and_then(|o| passed.iter().find(|(_, s)| s.index == o.segment))
        .map(|(level, s)| OptimalPoint {
            concurrency: (!open).then_some(*level),
            rate: open.then_some(*level),
            per_s: s.success_rps,
            latency_ms: s.success_latency_ms.mean,
        });
    // Recommended: from the lowest passing level that already gives 80% of the maximum, up to
    // the optimal point: below it capacity is wasted, above it only latency grows.
    let passing: Vec<(f64, f64)> = passed.iter().map(|(l, s)| (*l, s.success_rps)).collect();
    let knee = optimal.as_ref().and_then(|o| o.concurrency.or(o.rate));
    let recommended = knee.map(|k| {
        let lo = passing
            .iter()
            .filter(|(l, x)| *l <= k && *x >= RECOMMENDED * max_per_s)
            .map(|(l, _)| *l)
            .fold(k, f64::min);
        if (lo - k).abs() < f64::EPSILON {
            Recommended::About(level(k))
        } else {
            Recommended::Between(level(lo), level(k))
        }
    });
    // A plateau starts where the steps' own analysis says the service saturates (the answers'
    // limit), so the search's table and the answers name one level; the knee stands in only
    // when the steps show no saturation.
    let saturated = capacity
        .saturation
        .as_ref()
        .and_then(|p| passed.iter().find(|(_, s)| s.index == p.segment))
        .map(|(level, _)| *level);
    let limit = f
        .probes
        .iter()
        .filter(|p| !p.passed)
        .map(|p| p.level)
        .min_by(f64::total_cmp)
        .map(|l| Limit::Failed(level(l)))
        .or_else(|| {
            saturated.or(knee).map(|k| Limit::Plateau {
                rps: max_per_s,
                from: level(k),
            })
        });
    // The fit describes the service where it worked: probes that failed the service level
    // would bend it towards their failures. A peak beyond the levels probed (or past the
    // lowest failing level) is an extrapolation, not a finding, and is left out.
    let usl = if open {
        None
    } else {
        let ceiling = f
            .probes
            .iter()
            .filter(|p| !p.passed)
            .map(|p| p.level)
            .fold(passing.iter().map(|(l, _)| *l).fold(0.0, f64::max), f64::min);
        usl(&passing).map(|mut u| {
            if u.peak_users.is_some_and(|p| p > ceiling) {
                u.peak_users = None;
            }
            u
        })
    };
    Some(CapacitySummary {
        unit: capacity.unit,
        max_per_s,
        max_throughput_rps,
        optimal,
        limit,
        stopped_because: f.why_ended().map(FiguresOrWords::cloned),
        recommended,
        usl,
    })
}

#[cfg(test)]
mod tests {
    use super::*;

    /// An M/D/c-like service: C workers of S seconds; past C users latency grows, throughput
    /// stays at C/S.
    fn service(users: f64, c: f64, s: f64) -> Probe {
        let x = (users / s).min(c / s);
        let latency = users / x;
        Probe {
            level: users,
            success_rps: x,
            p99_ms: latency * 1000.0 * 1.1,
            error_rate: 0.0,
            achieved_share: 1.0,
        }
    }

    fn search(c: f64, s: f64, slo: &Slo) -> (Vec<Probe>, Done) {
        let mut probes = Vec::new();
        loop {
            match next(&probes, slo, false, 1.0, 10_000.0) {
                Next::Probe(l) => probes.push(service(l, c, s)),
                Next::Done(why) => return (probes, why),
            }
            assert!(probes.len() < 40, "the search must end");
        }
    }

    #[test]
    fn closed_search_brackets_the_worker_count() {
        let slo = Slo {
            max_error_rate: 0.01,
            max_p99_ms: None,
        };
        for c in [3.0, 8.0, 20.0] {
            let (probes, why) = search(c, 0.01, &slo);
            let levels: Vec<f64> = probes.iter().map(|p| p.level).collect();
            assert!(levels.contains(&c), "c={c}: probed {levels:?}");
            // The knee is the smallest level reaching 95% of the best: at or just below C.
            let knee = probes
                .iter()
                .filter(|p| p.success_rps >= 0.95 * c / 0.01)
                .map(|p| p.level)
                .fold(f64::MAX, f64::min);
            assert!(knee <= c && knee >= 0.9 * c, "knee {knee} for c={c}: {levels:?}");
            assert!(matches!(why, Done::Plateau { .. }), "{why:?}");
            let max = probes.iter().map(|p| p.success_rps).fold(0.0, f64::max);
            assert!((max - c / 0.01).abs() < 1e-6);
        }
    }

    #[test]
    fn a_latency_slo_ends_the_search_where_p99_crosses_it() {
        let slo = Slo {
            max_error_rate: 0.01,
            max_p99_ms: Some(30.0),
        };
        let (probes, why) = search(8.0, 0.01, &slo);
        // Past 8 workers, latency = users / 800 s; p99 = 1.1x that: 30 ms at about 21 users.
        assert!(
            matches!(
                why,
                Done::LimitBetween(_, _, Miss::P99 { .. }) | Done::Failed(_, Miss::P99 { .. }) | Done::Plateau { .. }
            ),
            "{why:?}"
        );
        let best_good = probes
            .iter()
            .filter(|p| judge(p, &slo, false).is_ok())
            .map(|p| p.level)
            .fold(0.0, f64::max);
        assert!(best_good >= 8.0, "{probes:?}");
    }

    #[test]
    fn errors_fail_a_probe_and_open_probes_must_keep_their_rate() {
        let slo = Slo {
            max_error_rate: 0.01,
            max_p99_ms: None,
        };
        let p = Probe {
            level: 100.0,
            success_rps: 90.0,
            p99_ms: 5.0,
            error_rate: 0.05,
            achieved_share: 1.0,
        };
        assert_eq!(judge(&p, &slo, false), Err(Miss::ErrorRate { rate: 0.05, max: 0.01 }));
        let p = Probe {
            error_rate: 0.0,
            achieved_share: 0.8,
            ..p
        };
        assert_eq!(judge(&p, &slo, true), Err(Miss::RateNotKept { share: 0.8 }));
        assert_eq!(next(&[], &slo, true, 10.0, 1e6), Next::Probe(10.0));
    }

    #[test]
    fn usl_recovers_known_parameters() {
        let (lambda, sigma, kappa) = (100.0, 0.05, 0.002);
        let pts: Vec<(f64, f64)> = [1.0, 2.0, 4.0, 8.0, 16.0, 32.0, 64.0]
            .iter()
            .map(|&n: &f64| (n, lambda * n / (1.0 + sigma * (n - 1.0) + kappa * n * (n - 1.0))))
            .collect();
        let u = usl(&pts).unwrap();
        assert!(
            (u.lambda - lambda).abs() < 0.01 && (u.sigma - sigma).abs() < 1e-4 && (u.kappa - kappa).abs() < 1e-6,
            "{u:?}"
        );
        assert!((u.peak_users.unwrap() - ((1.0 - sigma) / kappa).sqrt()).abs() < 0.01);
        assert!(u.r2 > 0.999);
        assert_eq!(usl(&pts[..2]), None, "two levels cannot fit three parameters");
    }
}
