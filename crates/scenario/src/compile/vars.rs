//! The variables a template may read at each point of a flow, and templates checked against
//! them.

use super::Cx;
use crate::error::did_you_mean;
use crate::raw::{self, Sp};
use crest_flow::feeder::{FeedMode, Feeder};
use crest_flow::template::Template;
use crest_flow::template::MAX_VALUE;
use std::collections::HashMap;

/// Variables known at a point of a flow, for checking templates, each with the most bytes it
/// can hold as far as is known before the run: a `variables:` value's whole expansion. A value
/// given at run time (extracted, `set`, a `foreach` element) counts 0 here: it is bounded as it
/// is given (a `set` at [`MAX_VALUE`], an extracted one by the response body crest keeps).
/// A map, so that checking a reference costs the same with 100,000 variables as with ten.
#[derive(Clone, Default)]
pub(super) struct Known(pub(super) HashMap<String, u64>);

impl Known {
    /// A variable given at run time.
    pub(super) fn add(&mut self, name: &str) {
        self.add_bounded(name, 0);
    }

    /// A variable whose value is known before the run to hold at most `bound` bytes. A name
    /// given twice keeps the larger bound.
    pub(super) fn add_bounded(&mut self, name: &str, bound: u64) {
        match self.0.get_mut(name) {
            Some(b) => *b = (*b).max(bound),
            None => {
                self.0.insert(name.to_string(), bound);
            }
        }
    }

    pub(super) fn has(&self, name: &str) -> bool {
        self.0.contains_key(name)
    }

    fn bound(&self, name: &str) -> u64 {
        self.0.get(name).copied().unwrap_or(0)
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
            // Parsed as it is read: the file is never held whole beside its rows.
            match crest_model::input::open_at_most(&path, crest_model::input::MAX_DATA_FILE)
                .map_err(|e| format!("cannot read it: {e}"))
                .and_then(|r| Feeder::from_reader(name, r, mode).map_err(|e| e.to_string()))
            {
                Ok(feeder) => {
                    let columns = feeder
                        .columns
                        .iter()
                        .map(|c| (c.clone(), feeder.longest(c).unwrap_or(0)))
                        .collect();
                    self.feeders.push((name.clone(), columns));
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
        if !self.check_vars(text, at, &t.vars(), known) {
            return None;
        }
        self.bounded_template(text, at, known, &t).then_some(t)
    }

    /// The most bytes `t` can expand to from what is known before the run: its text, the
    /// `variables:` it reads, its data columns and its functions (see [`Known`]).
    pub(super) fn template_bound(&self, t: &Template, known: &Known) -> u64 {
        let column = |feeder: &str, column: &str| {
            self.feeders
                .iter()
                .find(|(n, _)| n == feeder)
                .and_then(|(_, cols)| cols.iter().find(|(c, _)| c == column))
                .map_or(0, |(_, longest)| *longest)
        };
        t.bound(&|v| known.bound(v), &column)
    }

    /// Whether `t` is within [`MAX_VALUE`]; if not, an error at `at`. Found here, a value that
    /// doubles through a chain of variables is refused by `validate` and `run` alike, before
    /// anything is sent, instead of being built until memory runs out.
    fn bounded_template(&mut self, text: &str, at: Option<(usize, usize)>, known: &Known, t: &Template) -> bool {
        let bound = self.template_bound(t, known);
        if bound <= MAX_VALUE as u64 {
            return true;
        }
        let shown: String = if text.chars().count() > 60 {
            text.chars().take(57).chain("...".chars()).collect()
        } else {
            text.to_string()
        };
        self.err(
            at,
            format!(
                "in {shown:?}: it can expand to {}, more than the {} a value may hold",
                // Just past the limit, a rounded size would read as the limit itself.
                if bound < 2 * MAX_VALUE as u64 {
                    format!("{bound} bytes")
                } else {
                    crest_model::input::size(bound)
                },
                crest_model::input::size(MAX_VALUE as u64)
            ),
            Some("each `${name}` counts the most that name can hold: the variables it reads, their longest data field, or a function's longest result".into()),
        );
        false
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
                    Some((_, cols)) if !cols.iter().any(|(c, _)| c == column) => {
                        let names: Vec<&str> = cols.iter().map(|(c, _)| c.as_str()).collect();
                        let hint = did_you_mean(column, names.iter().copied())
                            .or_else(|| Some(format!("its columns are {}", names.join(", "))));
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
                let hint = did_you_mean(v, known.0.keys().map(String::as_str))
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
