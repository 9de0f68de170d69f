//! Data feeders: rows of a CSV file handed to users.

use std::sync::atomic::{AtomicUsize, Ordering};

/// How rows are handed out.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum FeedMode {
    /// Each iteration takes the next row, shared by all users, wrapping at the end.
    Sequential,
    /// Each iteration takes a random row.
    Random,
    /// Each user keeps its own row, never shared (credentials): user n gets row n.
    Unique,
}

/// A data file loaded in memory.
#[derive(Debug)]
pub struct Feeder {
    /// Its name in templates: `${name.column}`.
    pub name: String,
    /// Column names, from the header row.
    pub columns: Vec<String>,
    /// The rows; never empty.
    pub rows: Vec<Vec<String>>,
    /// How rows are handed out.
    pub mode: FeedMode,
    next: AtomicUsize,
}

/// What is wrong with a data file.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
pub enum FeedError {
    /// The first row cannot be read.
    #[error("cannot read the header row: {0}")]
    Header(String),
    /// A data row cannot be read; `line` counts from 1 with the header row.
    #[error("line {line}: {reason}")]
    Row {
        /// The row's line.
        line: usize,
        /// The reader's reason.
        reason: String,
    },
    /// Nothing to hand out.
    #[error("the file has a header row but no data")]
    Empty,
}

impl Feeder {
    /// Parses CSV text with a header row. The error says what is wrong, with the line.
    pub fn from_csv(name: &str, text: &[u8], mode: FeedMode) -> Result<Self, FeedError> {
        let mut reader = csv::ReaderBuilder::new().has_headers(true).from_reader(text);
        let columns: Vec<String> = reader
            .headers()
            .map_err(|e| FeedError::Header(e.to_string()))?
            .iter()
            .map(|c| c.trim().to_string())
            .collect();
        let mut rows = Vec::new();
        for (i, rec) in reader.records().enumerate() {
            let rec = rec.map_err(|e| FeedError::Row {
                line: i + 2,
                reason: e.to_string(),
            })?;
            rows.push(rec.iter().map(str::to_string).collect());
        }
        if rows.is_empty() {
            return Err(FeedError::Empty);
        }
        Ok(Feeder {
            name: name.to_string(),
            columns,
            rows,
            mode,
            next: AtomicUsize::new(0),
        })
    }

    /// The row for a user's iteration, or `None` when a unique feeder has no row for this user.
    pub fn take(&self, user: u64, rng: &mut fastrand::Rng) -> Option<usize> {
        match self.mode {
            FeedMode::Sequential => Some(self.next.fetch_add(1, Ordering::Relaxed) % self.rows.len()),
            FeedMode::Random => Some(rng.usize(..self.rows.len())),
            FeedMode::Unique => usize::try_from(user).ok().filter(|u| *u < self.rows.len()),
        }
    }

    /// A column's value in a row.
    pub fn value(&self, row: usize, column: &str) -> Option<&str> {
        let c = self.columns.iter().position(|n| n == column)?;
        self.rows.get(row)?.get(c).map(String::as_str)
    }
}
