//! The variables a template may read at each point of a flow, and templates checked against
//! them.

use super::Cx;
use crate::error::did_you_mean;
use crate::raw::{self, Sp};
use crest_flow::feeder::{FeedMode, Feeder};
use crest_flow::template::Template;
use std::collections::HashSet;

/// Variables known at a point of a flow, for checking templates.
/// A set, so that checking a reference costs the same with 100,000 variables as with ten.
#[derive(Clone, Default)]
pub(super) struct Known(pub(super) HashSet<String>);

impl Known {
    pub(super) fn add(&mut self, name: &str) {
        if !self.0.contains(name) {
            self.0.insert(name.to_string());
        }
    }

    pub(super) fn has(&self, name: &str) -> bool {
        self.0.contains(name)
    }
}

impl Cx<'_> {
    /// `data:`, the files whose rows feed users; their columns are known everywhere.
    pub(super) fn data(&mut self, data: Option<&indexmap::IndexMap<String, raw::Feeder>>) -> Vec<Feeder> {
        let mut feeders = Vec::new();
        for (name, f) in data.into_iter().flatten() {
            let mode = match f.mode.as_ref().map(|m| m.as_str()) {
                None | Some("sequential") => FeedMode::Sequential,
                Some("random") => FeedMode::Random,
                Some("unique") => FeedMode::Unique,
                Some(other) => {
                    let hint = did_you_mean(other, ["sequential", "random", "unique"]);
                    self.err(
                        f.mode.as_ref().and_then(|m| m.at()),
                        format!("data {name}: unknown mode {other:?}"),
                        hint,
                    );
                    FeedMode::Sequential
                }
            };
            let path = self.source(&f.file);
            match crest_model::input::read_file(&path, crest_model::input::MAX_DATA_FILE)
                .map_err(|e| format!("cannot read it: {e}"))
                .and_then(|b| Feeder::from_csv(name, &b, mode).map_err(|e| e.to_string()))
            {
                Ok(feeder) => {
                    self.feeders.push((name.clone(), feeder.columns.clone()));
                    feeders.push(feeder);
                }
                Err(m) => self.err(f.file.at(), format!("data {name}: {:?}: {m}", f.file.as_str()), None),
            }
        }
        feeders
    }

    /// Parses a template and checks that every variable it reads is known here.
    /// Text that may read the environment and nothing else (URLs, passwords, names), rendered.
    pub(super) fn env_text(&mut self, s: &Sp<String>) -> Option<String> {
        self.template(s, &Known::default())
            .map(|t| t.render(&NoScope::default()))
    }

    pub(super) fn template(&mut self, s: &Sp<String>, known: &Known) -> Option<Template> {
        self.template_at(s.as_str(), s.at(), known)
    }

    pub(super) fn template_at(&mut self, text: &str, at: Option<(usize, usize)>, known: &Known) -> Option<Template> {
        let t = match Template::parse(text, self.env) {
            Ok(t) => t,
            Err(e) => {
                self.err(at, format!("in {text:?}: {}", e.message), None);
                return None;
            }
        };
        self.check_vars(text, at, &t.vars(), known).then_some(t)
    }

    /// Every variable is set before it is read, and every data column exists; each one that is
    /// not is an error at `at`.
    pub(super) fn check_vars(
        &mut self,
        text: &str,
        at: Option<(usize, usize)>,
        vars: &[String],
        known: &Known,
    ) -> bool {
        let mut ok = true;
        for v in vars {
            if let Some((feeder, column)) = v.split_once('.') {
                match self.feeders.iter().find(|(n, _)| n == feeder) {
                    None => {
                        let hint = did_you_mean(feeder, self.feeders.iter().map(|(n, _)| n.as_str()))
                            .or_else(|| Some("data files are declared under `data:`".into()));
                        self.err(at, format!("in {text:?}: no data file named `{feeder}`"), hint);
                        ok = false;
                    }
                    Some((_, cols)) if !cols.iter().any(|c| c == column) => {
                        let hint = did_you_mean(column, cols.iter().map(String::as_str))
                            .or_else(|| Some(format!("its columns are {}", cols.join(", "))));
                        self.err(
                            at,
                            format!("in {text:?}: data file `{feeder}` has no column `{column}`"),
                            hint,
                        );
                        ok = false;
                    }
                    _ => {}
                }
            } else if !known.has(v) {
                let hint = did_you_mean(v, known.0.iter().map(String::as_str))
                    .or_else(|| Some("variables come from `variables:`, or from `extract:` in an earlier step".into()));
                self.err(at, format!("in {text:?}: undefined variable `{v}`"), hint);
                ok = false;
            }
        }
        ok
    }
}

/// Renders templates that read nothing but the environment.
#[derive(Default)]
pub(crate) struct NoScope(std::cell::RefCell<fastrand::Rng>);

impl crest_flow::template::Scope for NoScope {
    fn var(&self, _: &str) -> Option<&str> {
        None
    }
    fn column(&self, _: &str, _: &str) -> Option<&str> {
        None
    }
    fn user(&self) -> u64 {
        0
    }
    fn iteration(&self) -> u64 {
        0
    }
    fn next_seq(&self) -> u64 {
        0
    }
    fn rng(&self) -> &std::cell::RefCell<fastrand::Rng> {
        &self.0
    }
}
