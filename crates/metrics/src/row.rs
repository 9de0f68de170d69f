//! One request as the request log and a small run's points keep it: the sample's figures in
//! whole µs, 72 bytes rather than a `Sample`'s 136, because with the log on every request of
//! the last seconds waits in memory until it is compressed.

use crest_model::{NameId, Outcome, Sample};
use std::time::Duration;

/// A request kept one by one. Times are µs from the start of the run (starts) or spans in µs.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct Row {
    /// When it was meant to start.
    pub intended_us: u64,
    /// From its intended to its actual start.
    pub lag_us: u32,
    /// From its intended start to its end: its latency.
    pub total_us: u64,
    /// The virtual user that sent it (ids count from 0 up to the users a run has had, far
    /// below 2^32).
    pub user: u32,
    /// Which of the user's iterations sent it.
    pub iteration: u64,
    /// Time to open a new connection, when it opened one.
    pub connect_us: Option<u32>,
    /// From its actual start to the first byte of the response, when one arrived.
    pub ttfb_us: Option<u32>,
    /// Bytes written.
    pub bytes_sent: u32,
    /// Bytes read.
    pub bytes_received: u32,
    /// Its name.
    pub name: NameId,
    /// How it ended.
    pub outcome: Outcome,
    /// The HTTP status, when a response head arrived.
    pub status: Option<u16>,
}

fn us(d: Duration) -> u64 {
    d.as_micros().min(u128::from(u64::MAX)) as u64
}

/// Spans that fit in u32 µs (71 minutes, past the histograms' hour); byte counts past 4 GiB
/// saturate, which only a log of one enormous response would notice.
fn small(v: u64) -> u32 {
    v.min(u64::from(u32::MAX)) as u32
}

impl Row {
    /// The row of a sample.
    pub fn of(s: &Sample) -> Self {
        Row {
            intended_us: us(s.intended),
            lag_us: small(us(s.send_lag)),
            total_us: us(s.total),
            user: small(s.user),
            iteration: s.iteration,
            connect_us: s.connect.map(|d| small(us(d))),
            ttfb_us: s.ttfb.map(|d| small(us(d))),
            bytes_sent: small(s.bytes_sent),
            bytes_received: small(s.bytes_received),
            name: s.name,
            outcome: s.outcome,
            status: s.status,
        }
    }

    /// When it ended, µs from the start of the run.
    pub fn end_us(&self) -> u64 {
        self.intended_us + self.total_us
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_row_is_small() {
        assert!(std::mem::size_of::<Row>() <= 72, "{}", std::mem::size_of::<Row>());
    }
}
