//! The series being recorded, and the notes on their sources.

use crest_model::monitor::{MonitorRecord, MonitorSeries, SeriesKey, SourceRecord, Unit};
use std::collections::HashMap;

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

/// Series by key, in the order they first appeared.
#[derive(Debug, Default)]
pub(crate) struct Store {
    record: MonitorRecord,
    index: HashMap<SeriesKey, usize>,
}

impl Store {
    pub(crate) fn new(interval_s: f64) -> Self {
        Store {
            record: MonitorRecord {
                interval_s,
                ..MonitorRecord::default()
            },
            index: HashMap::new(),
        }
    }

    /// Registers a source; its index goes into its series.
    pub(crate) fn source(&mut self, kind: &str, label: &str) -> u32 {
        self.record.sources.push(SourceRecord {
            kind: kind.into(),
            label: label.into(),
            notes: Vec::new(),
        });
        (self.record.sources.len() - 1) as u32
    }

    pub(crate) fn note(&mut self, source: u32, note: String) {
        if let Some(s) = self.record.sources.get_mut(source as usize) {
            s.notes.push(note);
        }
    }

    /// Series recorded from one source.
    pub(crate) fn series_of(&self, source: u32) -> usize {
        self.record.series.iter().filter(|s| s.source == source).count()
    }

    pub(crate) fn has(&self, key: &SeriesKey) -> bool {
        self.index.contains_key(key)
    }

    pub(crate) fn push(&mut self, source: u32, t_s: f64, r: &Reading) {
        if !r.value.is_finite() {
            return;
        }
        let i = *self.index.entry(r.key.clone()).or_insert_with(|| {
            self.record.series.push(MonitorSeries {
                key: r.key.clone(),
                source,
                title: r.title.clone(),
                unit: r.unit,
                limit: r.limit,
                points: Vec::new(),
            });
            self.record.series.len() - 1
        });
        let s = &mut self.record.series[i];
        // A limit can be learnt late (a process that appears after the start) or change.
        if r.limit.is_some() {
            s.limit = r.limit;
        }
        s.points.push((t_s, r.value));
    }

    pub(crate) fn finish(self) -> MonitorRecord {
        self.record
    }
}
