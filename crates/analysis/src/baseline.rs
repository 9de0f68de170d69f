//! The baseline latency is compared with: one rule for a run's steps (the report's "ratio"
//! column and its growth finding) and for a study's points (study.md's "ratio"), so that a
//! sweep's report.md and its study.md divide by the same point. A leaf, like [`crate::figures`].

/// One step or point as the baseline rule sees it.
#[derive(Clone, Copy, Debug, PartialEq)]
pub struct Candidate {
    /// Its load level: users or arrivals per second; 0 for a step that is no load level (a
    /// sweep's point, which may set data volumes or pool sizes rather than load).
    pub load: f64,
    /// Its mean latency, ms; `None` when nothing of it can be measured.
    pub mean_ms: Option<f64>,
}

/// Which candidate the others are compared with: the lowest load level measured, or, where no
/// measured candidate is a load level, the first measured (a sweep's first point). `None` when
/// nothing was measured.
pub fn baseline(c: &[Candidate]) -> Option<usize> {
    let measured = || c.iter().enumerate().filter(|(_, x)| x.mean_ms.is_some());
    match measured().any(|(_, x)| x.load > 0.0) {
        true => measured()
            .filter(|(_, x)| x.load > 0.0)
            .min_by(|(_, a), (_, b)| a.load.total_cmp(&b.load))
            .map(|(i, _)| i),
        false => measured().next().map(|(i, _)| i),
    }
}

/// Each measured candidate's mean latency over the baseline's (1 for the baseline itself);
/// `None` for a candidate not measured, and for all when the baseline's mean is 0.
pub fn ratios(c: &[Candidate]) -> Vec<Option<f64>> {
    let base = baseline(c).and_then(|i| c[i].mean_ms).filter(|m| *m > 0.0);
    c.iter().map(|x| Some(x.mean_ms? / base?)).collect()
}

#[cfg(test)]
mod tests {
    use super::*;

    fn c(load: f64, mean_ms: Option<f64>) -> Candidate {
        Candidate { load, mean_ms }
    }

    #[test]
    fn the_lowest_load_measured_or_else_the_first_point_measured() {
        let levels = [c(50.0, Some(30.0)), c(10.0, None), c(20.0, Some(10.0))];
        assert_eq!(baseline(&levels), Some(2));
        assert_eq!(ratios(&levels), [Some(3.0), None, Some(1.0)]);
        let points = [c(0.0, None), c(0.0, Some(1001.0)), c(0.0, Some(5763.0))];
        assert_eq!(baseline(&points), Some(1));
        assert_eq!(baseline(&[c(0.0, None)]), None);
        assert_eq!(ratios(&[c(0.0, Some(0.0)), c(0.0, Some(5.0))]), [None, None]);
    }
}
