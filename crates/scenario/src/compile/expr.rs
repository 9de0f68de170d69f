//! Thresholds and stop conditions, parsed once and marked with where they stand.

use super::Cx;
use crate::raw::Sp;
use crest_model::expr::{StopCondition, Threshold};
use crest_model::plan::Given;
use std::fmt::Display;

impl Cx<'_> {
    pub(super) fn thresholds(&mut self, list: Option<&[Sp<String>]>) -> Vec<Given<Threshold>> {
        self.exprs(list, "thresholds", Threshold::parse)
    }

    pub(super) fn stop_when(&mut self, list: Option<&[Sp<String>]>) -> Vec<Given<StopCondition>> {
        self.exprs(list, "stop_when", StopCondition::parse)
    }

    /// The expressions under `key`, each marked with where it stands.
    fn exprs<T, E: Display>(
        &mut self,
        list: Option<&[Sp<String>]>,
        key: &'static str,
        parse: fn(&str) -> Result<T, E>,
    ) -> Vec<Given<T>> {
        let mut out = Vec::new();
        for e in list.unwrap_or(&[]) {
            match parse(e) {
                Ok(value) => out.push(self.given(value, key, e.at())),
                Err(m) => self.err(e.at(), format!("{key}: {m}"), None),
            }
        }
        out
    }
}
