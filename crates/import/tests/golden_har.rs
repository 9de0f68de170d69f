//! Each recording under golden/har/ against the scenario and dotenv file it must import to,
//! byte for byte; `CREST_UPDATE_GOLDEN=1` writes them anew (review the diff before committing).
#![allow(clippy::unwrap_used)]

use crest_import::har::{import, HarOptions};
use crest_import::write;
use std::path::{Path, PathBuf};

fn dir() -> PathBuf {
    Path::new(env!("CARGO_MANIFEST_DIR")).join("tests/golden/har")
}

/// Compares `got` with the file at `path` (absent when `got` is `None`), or writes it.
fn check(path: &Path, got: Option<&str>, failures: &mut Vec<String>) {
    if std::env::var_os("CREST_UPDATE_GOLDEN").is_some() {
        match got {
            Some(text) => std::fs::write(path, text).unwrap(),
            None => {
                let _ = std::fs::remove_file(path);
            }
        }
        return;
    }
    let want = std::fs::read_to_string(path).ok();
    if want.as_deref() != got {
        failures.push(format!(
            "{} differs (CREST_UPDATE_GOLDEN=1 rewrites it)\n--- want\n{}\n--- got\n{}",
            path.display(),
            want.as_deref().unwrap_or("(no file)"),
            got.unwrap_or("(no file)")
        ));
    }
}

#[test]
fn recordings_import_to_their_golden_scenarios() {
    let mut hars: Vec<PathBuf> = std::fs::read_dir(dir())
        .unwrap()
        .map(|e| e.unwrap().path())
        .filter(|p| p.extension().is_some_and(|x| x == "har"))
        .collect();
    hars.sort();
    assert!(!hars.is_empty());
    let mut failures = Vec::new();
    for har in hars {
        let stem = har.file_stem().unwrap().to_string_lossy().into_owned();
        // `NAME.keep-static.har` is imported with --keep-static.
        let options = HarOptions {
            keep_static: stem.ends_with(".keep-static"),
            ..HarOptions::default()
        };
        let text = std::fs::read_to_string(&har).unwrap();
        let imported = import(&text, &format!("{stem}.har"), &options).unwrap();
        let files = write::files(&imported, &format!("{stem}.yaml"), Some(&format!("{stem}.env"))).unwrap();
        check(&har.with_extension("yaml"), Some(&files.scenario), &mut failures);
        check(&har.with_extension("env"), files.env.as_deref(), &mut failures);
    }
    assert!(failures.is_empty(), "{}", failures.join("\n\n"));
}
