//! Errors that point at the file, line and column, with a hint.

use std::fmt;

/// One problem in a scenario file.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Problem {
    /// Line and column (from 1), when known.
    pub at: Option<(usize, usize)>,
    /// What is wrong.
    pub message: String,
    /// How to fix it, when there is something to say.
    pub hint: Option<String>,
}

/// Everything wrong with a scenario file.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct ScenarioError {
    /// The file as given.
    pub file: String,
    /// The problems, in file order.
    pub problems: Vec<Problem>,
}

impl fmt::Display for ScenarioError {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        for (i, p) in self.problems.iter().enumerate() {
            if i > 0 {
                writeln!(f)?;
            }
            match p.at {
                Some((line, col)) => write!(f, "{}:{line}:{col}: {}", self.file, p.message)?,
                None => write!(f, "{}: {}", self.file, p.message)?,
            }
            if let Some(h) = &p.hint {
                write!(f, "\n  hint: {h}")?;
            }
        }
        Ok(())
    }
}

impl std::error::Error for ScenarioError {}

/// "did you mean `x`?" when a candidate is close enough.
pub fn did_you_mean<'a>(word: &str, candidates: impl IntoIterator<Item = &'a str>) -> Option<String> {
    candidates
        .into_iter()
        .map(|c| (strsim::levenshtein(word, c), c))
        .filter(|(d, c)| *d <= 2.max(c.len() / 3))
        .min()
        .map(|(_, c)| format!("did you mean `{c}`?"))
}
