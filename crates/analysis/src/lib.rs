//! Pure functions over the results document.
//!
//! Nothing here measures, reads files or formats text: it takes [`crest_model::Results`] and
//! returns plain values that renderers display. This analysis is the end-of-run
//! [`summary`]; steady state, knee and limits come later as further modules.
#![warn(missing_docs)]

pub mod analyze;
pub mod capacity;
pub mod compare;
pub mod failures;
pub mod find;
pub mod findings;
pub mod recovery;
pub mod resources;
pub mod stop;
pub mod summary;
pub mod thresholds;
pub mod validity;

pub use analyze::{analyze, Analysis};
pub use summary::{summarize, Summary};
