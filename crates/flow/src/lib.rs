//! Executes user flows: what a scenario's virtual users do in each iteration.
//!
//! A [`FlowPlan`] is validated data (templates parsed, JSONPaths and regexes compiled, data
//! files loaded); [`FlowWorkload`] runs it as an engine workload. Each request is recorded as a
//! sample under its step's name; a failed extraction or check is a `check_failed` outcome. What
//! a failed step does next is the flow's [`plan::OnFailure`]: by default it ends the iteration,
//! since later steps usually depend on its values, after the think time it skipped.
#![warn(missing_docs)]

pub mod condition;
pub mod event_stream;
pub mod extract;
pub mod feeder;
pub mod plan;
mod run;
pub mod template;

pub use plan::FlowPlan;
pub use run::{json_template, FlowUser, FlowWorkload};
