//! `crest import openapi` of the specs under tests/golden/openapi/ (and crest target's own,
//! examples/openapi/target.yaml) against the scenarios they gave when last reviewed: an import
//! must not change without its golden file changing with it. `CREST_UPDATE_GOLDEN=1` writes
//! them anew.
#![allow(clippy::unwrap_used)]

use crest_import::openapi::{import, OpenApiOptions};
use std::path::{Path, PathBuf};

fn check(spec: &Path, golden: &Path) {
    let text = std::fs::read_to_string(spec).unwrap();
    let name = spec.file_name().unwrap().to_string_lossy().into_owned();
    let imported = import(&text, &name, &OpenApiOptions::default()).unwrap();
    let files = crest_import::write::files(&imported, "scenario.yaml", Some("scenario.env")).unwrap();
    let mut got = files.scenario;
    if let Some(env) = files.env {
        got.push_str("\n# --- scenario.env ---\n");
        got.push_str(&env);
    }
    if std::env::var_os("CREST_UPDATE_GOLDEN").is_some() {
        std::fs::write(golden, &got).unwrap();
        return;
    }
    let want = std::fs::read_to_string(golden)
        .unwrap_or_else(|e| panic!("{}: {e}; run with CREST_UPDATE_GOLDEN=1", golden.display()));
    assert!(
        got == want,
        "{} changed; if that is meant, run with CREST_UPDATE_GOLDEN=1 and review the diff:\n{got}",
        golden.display()
    );
}

fn dir() -> PathBuf {
    Path::new(env!("CARGO_MANIFEST_DIR")).join("tests/golden/openapi")
}

#[test]
fn a_small_3_0_json_spec() {
    check(&dir().join("store.json"), &dir().join("store.yaml"));
}

#[test]
fn crest_targets_spec() {
    let spec = Path::new(env!("CARGO_MANIFEST_DIR")).join("../../examples/openapi/target.yaml");
    check(&spec, &dir().join("target.yaml"));
}
