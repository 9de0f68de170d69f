//! `--env-file`: environment variables from a dotenv file, for `${env:NAME}` in scenarios (an
//! import's secrets live in one).

use anyhow::{bail, Context, Result};
use std::path::Path;

/// Sets the variables of the dotenv file at `path` that the environment does not already set
/// (the environment wins, as dotenv readers do, so one can be overridden for a run). Called
/// before any thread starts. Returns how many it set.
pub fn load(path: &Path) -> Result<usize> {
    let shown = path.display();
    // Read through crest's own reader: a FIFO or device is refused before anything blocks.
    let text = crest_model::input::read_text_file(path, crest_model::input::MAX_SCENARIO)
        .with_context(|| format!("--env-file {shown}"))?;
    let mut set = 0;
    for (read, entry) in dotenvy::from_read_iter(text.as_bytes()).enumerate() {
        let (name, value) = match entry {
            Ok(pair) => pair,
            // The parser's message quotes the line, which may hold a secret: say where only.
            Err(dotenvy::Error::LineParse(..)) => match entry_line(&text, read) {
                Some(n) => {
                    bail!("--env-file {shown}:{n}: not a NAME=value line (its text is not shown: it may hold a secret)")
                }
                None => bail!("--env-file {shown}: a line is not NAME=value (not shown: it may hold a secret)"),
            },
            Err(e) => bail!("--env-file {shown}: {e}"),
        };
        if std::env::var_os(&name).is_none() {
            std::env::set_var(&name, value);
            set += 1;
        }
    }
    Ok(set)
}

/// The line (from 1) of the entry after the first `read` ones: the parser says which text it
/// could not read but not where, and its lines other than blanks and comments are its entries.
fn entry_line(text: &str, read: usize) -> Option<usize> {
    text.lines()
        .enumerate()
        .filter(|(_, l)| {
            let l = l.trim();
            !l.is_empty() && !l.starts_with('#')
        })
        .nth(read)
        .map(|(i, _)| i + 1)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_bad_line_is_located_and_not_quoted() {
        let dir = tempfile::tempdir().unwrap();
        let path = dir.path().join("s.env");
        for (text, line) in [
            ("# secrets\nCREST_TEST_ENV_FILE_A='x'\nthis is s3cret\n", 3),
            ("CREST_TEST_ENV_FILE_A='x'\n\nPASSWORD=\"de\\qs3cret\"\n", 3),
            ("PASSWORD='s3cret\n# more\n", 1),
        ] {
            std::fs::write(&path, text).unwrap();
            let err = format!("{:#}", load(&path).unwrap_err());
            assert!(err.contains(&format!("s.env:{line}: ")), "{text:?}: {err}");
            assert!(!err.contains("s3cret"), "{err}");
        }
    }

    #[test]
    fn values_are_read_literally_and_the_environment_wins() {
        let dir = tempfile::tempdir().unwrap();
        let path = dir.path().join("s.env");
        std::fs::write(
            &path,
            "CREST_TEST_ENV_FILE_B='Bearer a$b'\nCREST_TEST_ENV_FILE_C=\"it's \\$x\"\nPATH='nope'\n",
        )
        .unwrap();
        load(&path).unwrap();
        assert_eq!(std::env::var("CREST_TEST_ENV_FILE_B").unwrap(), "Bearer a$b");
        assert_eq!(std::env::var("CREST_TEST_ENV_FILE_C").unwrap(), "it's $x");
        assert_ne!(std::env::var("PATH").unwrap(), "nope");
    }
}
