//! crest's plain data.
//!
//! Everything that crosses a boundary between crest's stages lives here: the validated [`plan`]
//! the engine executes, with its thresholds and stop conditions parsed into [`expr`] values, the
//! [`Outcome`] of each request, the [`Sample`] the engine emits through a
//! [`Sink`], the [`journal`] of closed intervals a run writes as it goes, and the [`results`]
//! document that every analysis and report is rendered from. The crate knows no runtime and
//! opens no file but through [`input::read_file`], the bounded reader of every input, so
//! analysis, reports and tests can use it freely.
#![warn(missing_docs)]

pub mod address;
pub mod expr;
pub mod hist;
pub mod input;
pub mod journal;
pub mod merge;
pub mod monitor;
pub mod number;
pub mod outcome;
pub mod plan;
pub mod protocol;
pub mod reason;
pub mod redact;
pub mod results;
pub mod sample;
pub mod step;
pub mod template;

pub use hist::{EncodedHistogram, HistError};
pub use outcome::Outcome;
pub use plan::Plan;
pub use results::Results;
pub use sample::{IterationSample, NameId, Sample, Sink};
