//! The built-in demo system under test, served on loopback.
//!
//! It plays the kinds of services crest is pointed at, so that anyone can try crest in one
//! command and the tests have realistic targets whose own counters they can read back:
//!
//! - `/` (and any unknown path): a service with C workers, a service time S (fixed, uniform or
//!   exponential), a bounded queue (503 when full) and a server timeout (500 after T). Its
//!   capacity is exactly C / S, which is what `crest find` must report.
//! - a task queue: `POST /tasks/submissions`, `GET /tasks/submissions/{id}`,
//!   `GET /tasks/{id}`; factorial and fetch tasks run asynchronously on the same workers.
//! - a state replay, `GET /replay/state?entities=N`: a JSON document that grows with N, streamed.
//! - a validation API, `POST /api/v1/validate` with a JSON body.
//! - an orchestration API: `POST /auth/token`, `POST /plans`, `GET /plans/{id}`,
//!   `PUT /plans/{id}/state`, its work done on a fixed pool (`pool` slots, as a service's
//!   database connections), so that two pool sizes compare.
//! - `/metrics`: Prometheus text format; `/health`.
//! - switches that leak file descriptors or memory slowly, for leak-detection demos.
//! - known bottlenecks: workers that spin on the CPU for their service time (CPU-bound: at most
//!   cores / S), and a cap on open connections past which one is reset at accept.
#![warn(missing_docs)]

mod plans;
mod service;
mod workers;

pub use plans::PASSWORD;
pub use service::{serve, spawn, Config, Distribution, InvalidConfig};
pub use workers::Work;
