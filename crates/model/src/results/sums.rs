//! The accumulators that add up requests and iterations (an engine thread's interval, the merge
//! of threads' intervals, the fold of a journal) before they are encoded as [`Stat`] and
//! [`IterationStat`]: decoded histograms, which the document itself never holds.

use super::{IterationStat, Stat};
use crate::{EncodedHistogram, Outcome};

/// One step's and one flow's iterations while they are added up: by an engine thread's
/// interval, by the merge of the threads' intervals, and by the fold of a journal, which all
/// add the same way.
#[derive(Clone, Debug)]
pub struct IterationSum {
    /// Index into [`Results::segments`](super::Results::segments).
    pub segment: u32,
    /// Index into [`Results::flows`](super::Results::flows).
    pub flow: u32,
    /// Iterations that started.
    pub started: u64,
    /// Iterations that completed.
    pub completed: u64,
    /// Iterations that failed.
    pub failed: u64,
    duration: crate::hist::Hist,
    failed_duration: Option<crate::hist::Hist>,
}

impl IterationSum {
    /// Nothing yet for this step and flow.
    pub fn new(segment: u32, flow: u32) -> Self {
        IterationSum {
            segment,
            flow,
            started: 0,
            completed: 0,
            failed: 0,
            duration: crate::hist::Hist::new(),
            failed_duration: None,
        }
    }

    /// Adds one iteration that ended.
    pub fn record(&mut self, it: &crate::IterationSample) {
        if it.failed {
            self.failed += 1;
            self.failed_duration
                .get_or_insert_with(Default::default)
                .record(it.took);
        } else {
            self.completed += 1;
            self.duration.record(it.took);
        }
    }

    /// Adds another sum of the same step and flow. Counts saturate: a journal read back may
    /// have been edited, and a wrapped count would read as a small one.
    pub fn add(&mut self, o: &IterationSum) {
        self.started = self.started.saturating_add(o.started);
        self.completed = self.completed.saturating_add(o.completed);
        self.failed = self.failed.saturating_add(o.failed);
        self.duration.add(&o.duration);
        if let Some(f) = &o.failed_duration {
            self.failed_duration.get_or_insert_with(Default::default).add(f);
        }
    }

    /// Adds an encoded one, as a journal holds it.
    pub fn add_stat(&mut self, s: &IterationStat) -> Result<(), crate::HistError> {
        self.started = self.started.saturating_add(s.started);
        self.completed = self.completed.saturating_add(s.completed);
        self.failed = self.failed.saturating_add(s.failed);
        self.duration.add_encoded(&s.duration)?;
        if let Some(f) = &s.failed_duration {
            self.failed_duration
                .get_or_insert_with(Default::default)
                .add_encoded(f)?;
        }
        Ok(())
    }

    /// Adds every iteration's time, completed and failed, in µs, into `into`.
    pub fn add_durations_into(&self, into: &mut hdrhistogram::Histogram<u64>) {
        self.duration.add_into(into);
        if let Some(f) = &self.failed_duration {
            f.add_into(into);
        }
    }

    /// As the results document and the journal hold it.
    pub fn to_stat(&self) -> IterationStat {
        IterationStat {
            segment: self.segment,
            flow: self.flow,
            started: self.started,
            completed: self.completed,
            failed: self.failed,
            duration: self.duration.encode(),
            failed_duration: self.failed_duration.as_ref().map(crate::hist::Hist::encode),
        }
    }
}

/// One step's, name's and outcome's requests while they are added up: by an engine thread's
/// interval as requests end, by the merge of the threads' intervals, and by the fold of a
/// journal, which all add the same way.
#[derive(Clone, Debug)]
pub struct StatSum {
    /// As [`Stat::segment`].
    pub segment: u32,
    /// As [`Stat::name`].
    pub name: u32,
    /// As [`Stat::outcome`].
    pub outcome: Outcome,
    /// As [`Stat::count`].
    pub count: u64,
    /// As [`Stat::bytes_sent`].
    pub bytes_sent: u64,
    /// As [`Stat::bytes_received`].
    pub bytes_received: u64,
    /// As [`Stat::messages_sent`].
    pub messages_sent: u64,
    /// As [`Stat::messages_received`].
    pub messages_received: u64,
    /// [`Stat::latency`], decoded.
    pub latency: crate::hist::Hist,
    /// [`Stat::ttfb`], decoded.
    pub ttfb: Option<crate::hist::Hist>,
    /// [`Stat::connect`], decoded.
    pub connect: Option<crate::hist::Hist>,
    /// [`Stat::dns`], decoded.
    pub dns: Option<crate::hist::Hist>,
    /// [`Stat::size`], decoded.
    pub size: Option<crate::hist::Hist>,
}

impl StatSum {
    /// Nothing yet for this step, name and outcome.
    pub fn new(segment: u32, name: u32, outcome: Outcome) -> Self {
        StatSum {
            segment,
            name,
            outcome,
            count: 0,
            bytes_sent: 0,
            bytes_received: 0,
            messages_sent: 0,
            messages_received: 0,
            latency: crate::hist::Hist::new(),
            ttfb: None,
            connect: None,
            dns: None,
            size: None,
        }
    }

    /// Adds another sum of the same step, name and outcome. Counts saturate: a journal read
    /// back may have been edited, and a wrapped count would read as a small one.
    pub fn add(&mut self, o: &StatSum) {
        self.count = self.count.saturating_add(o.count);
        self.bytes_sent = self.bytes_sent.saturating_add(o.bytes_sent);
        self.bytes_received = self.bytes_received.saturating_add(o.bytes_received);
        self.messages_sent = self.messages_sent.saturating_add(o.messages_sent);
        self.messages_received = self.messages_received.saturating_add(o.messages_received);
        self.latency.add(&o.latency);
        add_opt(&mut self.ttfb, o.ttfb.as_ref());
        add_opt(&mut self.connect, o.connect.as_ref());
        add_opt(&mut self.dns, o.dns.as_ref());
        add_opt(&mut self.size, o.size.as_ref());
    }

    /// Adds an encoded one, as a journal holds it.
    pub fn add_stat(&mut self, s: &Stat) -> Result<(), crate::HistError> {
        self.count = self.count.saturating_add(s.count);
        self.bytes_sent = self.bytes_sent.saturating_add(s.bytes_sent);
        self.bytes_received = self.bytes_received.saturating_add(s.bytes_received);
        self.messages_sent = self.messages_sent.saturating_add(s.messages_sent);
        self.messages_received = self.messages_received.saturating_add(s.messages_received);
        self.latency.add_encoded(&s.latency)?;
        add_encoded_opt(&mut self.ttfb, s.ttfb.as_ref())?;
        add_encoded_opt(&mut self.connect, s.connect.as_ref())?;
        add_encoded_opt(&mut self.dns, s.dns.as_ref())?;
        add_encoded_opt(&mut self.size, s.size.as_ref())
    }

    /// As the results document and the journal hold it.
    pub fn to_stat(&self) -> Stat {
        Stat {
            segment: self.segment,
            name: self.name,
            outcome: self.outcome,
            count: self.count,
            bytes_sent: self.bytes_sent,
            bytes_received: self.bytes_received,
            messages_sent: self.messages_sent,
            messages_received: self.messages_received,
            latency: self.latency.encode(),
            ttfb: self.ttfb.as_ref().map(crate::hist::Hist::encode),
            connect: self.connect.as_ref().map(crate::hist::Hist::encode),
            dns: self.dns.as_ref().map(crate::hist::Hist::encode),
            size: self.size.as_ref().map(crate::hist::Hist::encode),
        }
    }
}

fn add_opt(into: &mut Option<crate::hist::Hist>, from: Option<&crate::hist::Hist>) {
    if let Some(f) = from {
        into.get_or_insert_with(Default::default).add(f);
    }
}

fn add_encoded_opt(
    into: &mut Option<crate::hist::Hist>,
    from: Option<&EncodedHistogram>,
) -> Result<(), crate::HistError> {
    match from {
        Some(f) => into.get_or_insert_with(Default::default).add_encoded(f),
        None => Ok(()),
    }
}
