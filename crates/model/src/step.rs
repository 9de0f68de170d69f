//! What a step of a run is, as figures: the front ends, the engine and the results keep this,
//! and only the report's words module puts it in words, so that one level reads the same in
//! every report and message however it came to be.

use schemars::JsonSchema;
use serde::{Deserialize, Deserializer, Serialize};

/// A load level: users (closed model) or arrivals per second (open model).
#[derive(Clone, Copy, Debug, PartialEq, Serialize, Deserialize, JsonSchema)]
#[serde(rename_all = "snake_case", deny_unknown_fields)]
// The schema has a capacity search's `Level` already.
#[schemars(rename = "StepLevel")]
pub enum Level {
    /// Users of the closed model.
    Users(u64),
    /// Arrivals per second of the open model.
    Rate(f64),
}

/// A kind of step at a level.
type KindAt = fn(Level) -> StepKind;

/// What one step of a run is.
#[derive(Clone, Debug, PartialEq, Serialize, JsonSchema)]
#[serde(rename_all = "snake_case")]
pub enum StepKind {
    /// The whole of a run without steps.
    Run,
    /// A level held from the step's start: a constant load, a level of quick mode or of a
    /// stepping profile, or a change made by hand.
    Level(Level),
    /// A stage ramping to a level.
    Ramp(Level),
    /// A stage holding the level reached.
    Hold(Level),
    /// A spike profile's load before the spike.
    Baseline(Level),
    /// A spike profile's spike.
    Spike(Level),
    /// A spike profile's load after the spike, back at the baseline.
    Recovery(Level),
    /// A scenario's `threads` with `loops`: so many users, each running its flow so many times.
    Loops {
        /// Users.
        threads: u64,
        /// Iterations of each user.
        loops: u64,
    },
    /// A scenario's `run_once`: so many users, each running its flow once.
    Once(u64),
    /// Paused by hand: no iteration starts.
    Paused,
    /// Resumed by hand with neither users nor a rate set, the plan's load coming back.
    Resumed,
    /// A run steered by hand (`--load manual`) before its first change.
    Manual,
    /// A probe of a capacity search (`crest find`), numbered from 1, at its level.
    Probe {
        /// Its number among the search's probes, from 1.
        number: u32,
        /// The level it ran at.
        level: Level,
    },
    /// A point of a sweep, by its label (`conns=8`), as the sweep made it.
    Point(String),
    /// A name kept as written: by the user, or by a document written before steps were kept
    /// as figures (those carry only their name).
    Named(String),
}

/// The stored form, tagged as [`StepKind`] writes it, or a bare string: the `name` a document
/// written before the kind was kept carries. The step names crest wrote then that are no level
/// (`run`, `paused`, `resumed`, `manual`) read back as their kind, any other as written.
#[derive(Deserialize)]
#[serde(untagged)]
enum Stored {
    Kind(Tagged),
    Name(String),
}

/// [`StepKind`] as serde reads it.
#[derive(Deserialize)]
#[serde(rename_all = "snake_case")]
enum Tagged {
    Run,
    Level(Level),
    Ramp(Level),
    Hold(Level),
    Baseline(Level),
    Spike(Level),
    Recovery(Level),
    Loops { threads: u64, loops: u64 },
    Once(u64),
    Paused,
    Resumed,
    Manual,
    Probe { number: u32, level: Level },
    Point(String),
    Named(String),
}

impl Tagged {
    fn kind(self) -> StepKind {
        match self {
            Tagged::Run => StepKind::Run,
            Tagged::Level(l) => StepKind::Level(l),
            Tagged::Ramp(l) => StepKind::Ramp(l),
            Tagged::Hold(l) => StepKind::Hold(l),
            Tagged::Baseline(l) => StepKind::Baseline(l),
            Tagged::Spike(l) => StepKind::Spike(l),
            Tagged::Recovery(l) => StepKind::Recovery(l),
            Tagged::Loops { threads, loops } => StepKind::Loops { threads, loops },
            Tagged::Once(n) => StepKind::Once(n),
            Tagged::Paused => StepKind::Paused,
            Tagged::Resumed => StepKind::Resumed,
            Tagged::Manual => StepKind::Manual,
            Tagged::Probe { number, level } => StepKind::Probe { number, level },
            Tagged::Point(p) => StepKind::Point(p),
            Tagged::Named(n) => StepKind::Named(n),
        }
    }
}

impl<'de> Deserialize<'de> for StepKind {
    fn deserialize<D: Deserializer<'de>>(d: D) -> Result<Self, D::Error> {
        Ok(match Stored::deserialize(d)? {
            Stored::Kind(t) => t.kind(),
            Stored::Name(n) => StepKind::from_name(n),
        })
    }
}

impl StepKind {
    /// The kind a name crest wrote before kinds were kept stands for (`20 users`, `rate 50/s`,
    /// `spike 500/s`, `ramp to 40 users`), so that an old document's steps read as a new one's;
    /// any other name as written.
    pub fn from_name(name: String) -> Self {
        let level = |s: &str| {
            if let Some(n) = s.strip_suffix(" users").or_else(|| s.strip_suffix(" user")) {
                n.parse().ok().map(Level::Users)
            } else {
                let r = s.strip_prefix("rate ").unwrap_or(s).strip_suffix("/s")?;
                r.parse().ok().filter(|r: &f64| r.is_finite()).map(Level::Rate)
            }
        };
        let kinds: [(&str, KindAt); 5] = [
            ("ramp to ", StepKind::Ramp),
            ("hold ", StepKind::Hold),
            ("baseline ", StepKind::Baseline),
            ("spike ", StepKind::Spike),
            ("recovery ", StepKind::Recovery),
        ];
        let known = match name.as_str() {
            "run" => Some(StepKind::Run),
            "paused" => Some(StepKind::Paused),
            "resumed" => Some(StepKind::Resumed),
            "manual" => Some(StepKind::Manual),
            n => kinds
                .iter()
                .find_map(|(p, k)| n.strip_prefix(p).and_then(level).map(k))
                .or_else(|| level(n).map(StepKind::Level)),
        };
        known.unwrap_or(StepKind::Named(name))
    }

    /// The level the step holds or ramps to, when it has one.
    pub fn level(&self) -> Option<Level> {
        match self {
            StepKind::Level(l)
            | StepKind::Ramp(l)
            | StepKind::Hold(l)
            | StepKind::Baseline(l)
            | StepKind::Spike(l)
            | StepKind::Recovery(l)
            | StepKind::Probe { level: l, .. } => Some(*l),
            StepKind::Once(n) | StepKind::Loops { threads: n, .. } => Some(Level::Users(*n)),
            StepKind::Run
            | StepKind::Paused
            | StepKind::Resumed
            | StepKind::Manual
            | StepKind::Point(_)
            | StepKind::Named(_) => None,
        }
    }

    /// A level held, from users or a rate: what a step of one level is, and a run's only step
    /// when its load is constant. The whole run when it has neither.
    pub fn at(users: Option<u64>, rate: Option<f64>) -> Self {
        match (users, rate) {
            (Some(u), _) => StepKind::Level(Level::Users(u)),
            (None, Some(r)) => StepKind::Level(Level::Rate(r)),
            (None, None) => StepKind::Run,
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn kinds_read_back_as_written() {
        for k in [
            StepKind::Run,
            StepKind::Level(Level::Users(20)),
            StepKind::Ramp(Level::Rate(12.5)),
            StepKind::Spike(Level::Rate(500.0)),
            StepKind::Loops { threads: 5, loops: 10 },
            StepKind::Once(3),
            StepKind::Paused,
            StepKind::Probe {
                number: 2,
                level: Level::Users(40),
            },
            StepKind::Point("conns=8".into()),
            StepKind::Named("warm up".into()),
        ] {
            let json = serde_json::to_string(&k).unwrap();
            assert_eq!(serde_json::from_str::<StepKind>(&json).unwrap(), k, "{json}");
        }
    }

    #[test]
    fn names_of_documents_before_kinds_read_as_their_kind_or_as_written() {
        let read = |s: &str| serde_json::from_str::<StepKind>(s).unwrap();
        assert_eq!(read(r#""run""#), StepKind::Run);
        assert_eq!(read(r#""paused""#), StepKind::Paused);
        assert_eq!(read(r#""manual""#), StepKind::Manual);
        assert_eq!(read(r#""20 users""#), StepKind::Level(Level::Users(20)));
        assert_eq!(read(r#""rate 50/s""#), StepKind::Level(Level::Rate(50.0)));
        assert_eq!(read(r#""250.0/s""#), StepKind::Level(Level::Rate(250.0)));
        assert_eq!(read(r#""spike 500/s""#), StepKind::Spike(Level::Rate(500.0)));
        assert_eq!(read(r#""ramp to 40 users""#), StepKind::Ramp(Level::Users(40)));
        assert_eq!(read(r#""hold 1 user""#), StepKind::Hold(Level::Users(1)));
        assert_eq!(read(r#""warm up""#), StepKind::Named("warm up".into()));
        assert_eq!(
            read(r#""probe 2: 40 users""#),
            StepKind::Named("probe 2: 40 users".into())
        );
    }

    #[test]
    fn a_segment_of_results_json_before_kinds_reads_from_its_name_and_writes_its_kind() {
        let old = r#"{"name":"spike 500/s","start_s":10.0,"end_s":20.0,"users":null,"rate":500.0}"#;
        let g: crate::results::Segment = serde_json::from_str(old).unwrap();
        assert_eq!(g.kind, StepKind::Spike(Level::Rate(500.0)));
        let new = serde_json::to_value(&g).unwrap();
        assert_eq!(new["kind"], serde_json::json!({"spike": {"rate": 500.0}}));
        assert!(new.get("name").is_none(), "{new}");
    }
}
