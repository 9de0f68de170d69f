//! Runs made one after another into one run directory, joined into one results document with a
//! step per part: the levels of `crest run -c 10,20,40`, the probes of `crest find` and the
//! points of `crest sweep`. Each part is journaled on its own, so that a study killed half-way
//! is rebuilt by `crest report` from the parts it finished.

use crate::measure::{measure, Interrupt, Readers};
use crate::rundir;
use anyhow::{bail, Result};
use crest_engine::Workload;
use crest_model::plan::Plan;
use crest_model::results::{self, EndReason, LoadKind, Results, Segment};
use std::path::{Path, PathBuf};
use std::sync::Arc;

/// The parts measured so far, in order.
pub struct Parts<'a> {
    dir: PathBuf,
    command_line: &'a [String],
    readers: &'a Readers,
    done: Vec<(Segment, Results)>,
    /// False once a part's journal, request log or own files could not be written in full.
    journaled: bool,
    interrupted: Option<Interrupt>,
}

impl<'a> Parts<'a> {
    /// No part yet, in the run directory `dir`.
    pub fn new(dir: &Path, command_line: &'a [String], readers: &'a Readers) -> Self {
        Parts {
            dir: dir.to_path_buf(),
            command_line,
            readers,
            done: Vec::new(),
            journaled: true,
            interrupted: None,
        }
    }

    /// Measures the next part: `plan` sent by `workload`, shown as the step `label`. Returns
    /// its results, for the caller to judge or keep on their own.
    pub fn measure<W: Workload>(
        &mut self,
        plan: &Plan,
        workload: Arc<W>,
        label: Segment,
        quiet: bool,
    ) -> Result<&mut Results> {
        let journal = self.dir.join(rundir::journal_part(self.done.len()));
        let m = measure(
            plan,
            workload,
            self.command_line,
            quiet,
            Some((&journal, Some(label.clone()))),
            self.readers,
        )?;
        self.journaled &= m.journaled;
        self.interrupted = self.interrupted.or(m.interrupted);
        self.done.push((label, m.results));
        Ok(&mut self.done.last_mut().expect("a part was just added").1)
    }

    /// A signal stopped the last part: the study ends with it.
    pub fn interrupted(&self) -> bool {
        self.interrupted.is_some()
    }

    /// The parts measured, each with its step.
    pub fn done(&self) -> &[(Segment, Results)] {
        &self.done
    }

    /// A file of the last part's own could not be written: the study's files are not whole.
    pub fn lost_a_file(&mut self) {
        self.journaled = false;
    }

    /// The parts as one run with a step per part: its load is the highest level's (users, or
    /// arrivals per second with `cap` in flight when `open`), and it ended as the last part did,
    /// or by the signal that stopped it. Returns it with whether every part's files were whole.
    pub fn join(self, open: bool, cap: u64) -> Result<(Results, bool)> {
        let levels: Vec<f64> = self
            .done
            .iter()
            .filter_map(|(s, _)| if open { s.rate } else { s.users.map(|u| u as f64) })
            .collect();
        // Levels run one after another, so the last one's end is the whole run's: its duration
        // or its request count, not "every user finishing its iterations".
        let last_end = self.done.last().map(|(_, r)| r.ended_by);
        let mut parts = self.done.into_iter();
        let Some(first) = parts.next() else {
            bail!("no level ran");
        };
        let mut results = results::concat(first, parts)?;
        results.ended_by = match (self.interrupted, last_end) {
            (Some(Interrupt::Int), _) => EndReason::Sigint,
            (Some(Interrupt::Term), _) => EndReason::Sigterm,
            (None, Some(end)) => end,
            (None, None) => EndReason::Completed,
        };
        let highest = levels.iter().fold(0.0, |a: f64, b| a.max(*b));
        results.config.model = LoadKind::of(open);
        results.config.concurrency = if open { cap } else { highest as u64 };
        results.config.rate = open.then_some(highest);
        results.config.duration_s = Some(results.duration_s);
        results.config.command_line = crest_model::redact::command_line(self.command_line);
        Ok((results, self.journaled))
    }
}
