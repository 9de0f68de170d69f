//! Thresholds and stop conditions, parsed once and marked with where they stand.

use super::Cx;
use crate::raw::Sp;
use crest_model::expr::{StopCondition, Threshold};
use crest_model::plan::{Given, Origin};

impl Cx<'_> {
    pub(super) fn thresholds(&mut self, list: Option<&[Sp<String>]>) -> Vec<Given<Threshold>> {
        let mut out = Vec::new();
        for e in list.unwrap_or(&[]) {
            match Threshold::parse(e) {
                Ok(value) => out.push(Given {
                    value,
                    origin: self.origin("thresholds", e),
                }),
                Err(m) => self.err(e.at(), format!("thresholds: {m}"), None),
            }
        }
        out
    }

    pub(super) fn origin(&self, key: &'static str, e: &Sp<String>) -> Origin {
        Origin::File {
            file: self.file.clone(),
            key,
            at: e.at(),
        }
    }

    pub(super) fn stop_when(&mut self, list: Option<&[Sp<String>]>) -> Vec<Given<StopCondition>> {
        let mut out = Vec::new();
        for e in list.unwrap_or(&[]) {
            match StopCondition::parse(e) {
                Ok(value) => out.push(Given {
                    value,
                    origin: self.origin("stop_when", e),
                }),
                Err(m) => self.err(e.at(), format!("stop_when: {m}"), None),
            }
        }
        out
    }
}
