//! Watching and steering a running test: the run loop publishes each journal entry once to a
//! [`Hub`]; the page, its JSON API and `/metrics` (served by [`serve`]) read what the hub keeps,
//! and steer the engine through its [`crest_engine::Control`].
#![warn(missing_docs)]

mod hub;
pub mod metrics;
mod server;
pub mod verdict;

pub use hub::{Ended, Hub, Monitored, Point, Row, State, KEPT_POINTS};
pub use server::{bears, new_token, serve, serve_with, Server, WebError};
pub use verdict::{Validity, Verdict};
