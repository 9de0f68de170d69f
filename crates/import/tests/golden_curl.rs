//! Each `golden/curl/NAME.sh` imported must give exactly `NAME.yaml` (and `NAME.env` when it has
//! secrets): the whole file, comments and order included, so any change to what an import
//! writes is seen in review. `CREST_UPDATE_GOLDEN=1` writes the files anew.
#![allow(clippy::unwrap_used)]

use std::path::{Path, PathBuf};

fn dir() -> PathBuf {
    Path::new(env!("CARGO_MANIFEST_DIR")).join("tests/golden/curl")
}

#[test]
fn curl_imports_match_their_golden_files() {
    let update = std::env::var_os("CREST_UPDATE_GOLDEN").is_some();
    let mut inputs: Vec<PathBuf> = std::fs::read_dir(dir())
        .unwrap()
        .map(|e| e.unwrap().path())
        .filter(|p| p.extension().is_some_and(|e| e == "sh"))
        .collect();
    inputs.sort();
    assert!(inputs.len() >= 5, "golden inputs missing: {inputs:?}");
    let mut wrong = Vec::new();
    for input in &inputs {
        let stem = input.file_stem().unwrap().to_string_lossy().into_owned();
        let text = std::fs::read_to_string(input).unwrap();
        let imported =
            crest_import::curl::import(&text, &format!("{stem}.sh")).unwrap_or_else(|e| panic!("{stem}: {e}"));
        let files =
            crest_import::write::files(&imported, &format!("{stem}.yaml"), Some(&format!("{stem}.env"))).unwrap();
        // Twice the same: nothing in an import depends on hashing or time.
        let again = crest_import::write::files(
            &crest_import::curl::import(&text, &format!("{stem}.sh")).unwrap(),
            &format!("{stem}.yaml"),
            Some(&format!("{stem}.env")),
        )
        .unwrap();
        assert_eq!(files, again, "{stem}: not deterministic");
        let yaml_path = dir().join(format!("{stem}.yaml"));
        let env_path = dir().join(format!("{stem}.env"));
        if update {
            std::fs::write(&yaml_path, &files.scenario).unwrap();
            match &files.env {
                Some(env) => std::fs::write(&env_path, env).unwrap(),
                None => {
                    let _ = std::fs::remove_file(&env_path);
                }
            }
            continue;
        }
        let want_yaml = std::fs::read_to_string(&yaml_path).unwrap_or_default();
        if want_yaml != files.scenario {
            wrong.push(format!(
                "{stem}.yaml:\n--- want\n{want_yaml}\n--- got\n{}",
                files.scenario
            ));
        }
        let want_env = std::fs::read_to_string(&env_path).ok();
        if want_env != files.env {
            wrong.push(format!("{stem}.env:\n--- want\n{want_env:?}\n--- got\n{:?}", files.env));
        }
        // Whatever the golden files say, no secret may be in the scenario.
        for s in imported.secrets.iter() {
            assert!(
                !files.scenario.contains(&s.value),
                "{stem}: secret {} is in the scenario",
                s.name
            );
        }
    }
    assert!(
        wrong.is_empty(),
        "golden files differ (CREST_UPDATE_GOLDEN=1 rewrites them):\n{}",
        wrong.join("\n")
    );
}
