//! The series being recorded, and what each round of sampling added to them.

use crest_model::monitor::{
    MonitorBuilder, MonitorNote, MonitorOpening, MonitorPoint, MonitorRecord, MonitorSample, ProcessEvent,
    ProcessLimits, SeriesKey, SourceRecord, Unit,
};

/// A reading of one series at one time.
#[derive(Clone, Debug, PartialEq)]
pub struct Reading {
    /// Which series.
    pub key: SeriesKey,
    /// Its title, used when the series is new.
    pub title: String,
    /// Its unit.
    pub unit: Unit,
    /// A limit it cannot pass, when known.
    pub limit: Option<f64>,
    /// The value.
    pub value: f64,
}

/// The record so far, and the sample being taken: what it adds is handed out as one
/// [`MonitorSample`] so that the run can journal it.
#[derive(Debug)]
pub(crate) struct Store {
    interval_s: f64,
    sources: Vec<SourceRecord>,
    built: Option<MonitorBuilder>,
    pending: MonitorSample,
}

impl Store {
    pub(crate) fn new(interval_s: f64) -> Self {
        Store {
            interval_s,
            sources: Vec::new(),
            built: None,
            pending: MonitorSample::default(),
        }
    }

    /// Registers a source (before sampling starts); its index goes into its series.
    pub(crate) fn source(&mut self, kind: &str, label: &str) -> u32 {
        self.named_source(kind, label, None)
    }

    /// Registers a source that has a name apart from its label (a process watched by pid).
    pub(crate) fn named_source(&mut self, kind: &str, label: &str, name: Option<String>) -> u32 {
        self.sources.push(SourceRecord {
            limits: None,
            kind: kind.into(),
            label: label.into(),
            name,
            notes: Vec::new(),
        });
        (self.sources.len() - 1) as u32
    }

    /// The builder, created with the sources on first use; the first sample carries them.
    fn builder(&mut self) -> &mut MonitorBuilder {
        let (interval_s, sources, pending) = (self.interval_s, &self.sources, &mut self.pending);
        self.built.get_or_insert_with(|| {
            let opening = MonitorOpening {
                interval_s,
                sources: sources.clone(),
            };
            pending.opening = Some(opening.clone());
            MonitorBuilder::new(opening)
        })
    }

    /// Records what bounds a source's processes, when it differs from what was last recorded:
    /// limits change rarely (a restart under new ones), and the journal carries each change once.
    pub(crate) fn limits(&mut self, source: u32, limits: ProcessLimits) {
        let known = self
            .builder()
            .record()
            .sources
            .get(source as usize)
            .and_then(|s| s.limits.as_ref());
        if known == Some(&limits) {
            return;
        }
        self.builder().set_limits(source, limits.clone());
        self.pending.limits.push((source, limits));
    }

    /// Records something that happened to a source's processes.
    pub(crate) fn event(&mut self, source: u32, mut event: ProcessEvent) {
        event.source = source;
        self.builder().event(event.clone());
        self.pending.events.push(event);
    }

    pub(crate) fn note(&mut self, source: u32, note: MonitorNote) {
        self.builder().note(source, &note);
        self.pending.notes.push((source, note));
    }

    /// Series recorded from one source.
    pub(crate) fn series_of(&mut self, source: u32) -> usize {
        self.builder().series_of(source)
    }

    pub(crate) fn has(&mut self, key: &SeriesKey) -> bool {
        self.builder().has(key)
    }

    pub(crate) fn push(&mut self, source: u32, t_s: f64, r: &Reading) {
        if !r.value.is_finite() {
            return;
        }
        let p = MonitorPoint {
            key: r.key.clone(),
            source,
            title: r.title.clone(),
            unit: r.unit,
            limit: r.limit,
            value: r.value,
        };
        self.builder().push(t_s, &p);
        self.pending.points.push(p);
    }

    /// What this round added, taken at `t_s`.
    pub(crate) fn take_sample(&mut self, t_s: f64) -> MonitorSample {
        self.builder();
        let mut s = std::mem::take(&mut self.pending);
        s.t_s = t_s;
        s
    }

    pub(crate) fn finish(mut self) -> MonitorRecord {
        self.builder();
        self.built.map(MonitorBuilder::finish).unwrap_or_default()
    }
}
