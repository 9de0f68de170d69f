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

/// A data file loaded in memory: every field's text once, one after another, and where each
/// ends. A row of owned strings costs about 80 bytes even for a one-letter field (a 20 MB file
/// of ten million rows took 1.7 GB); this costs the text plus 4 bytes a field, at most about
/// 5 times the file's size (a file of empty fields, `,` and a newline), and the file itself is
/// read as a stream, never held whole. Every read mode reads it by row number.
#[derive(Debug)]
pub struct Feeder {
    /// Its name in templates: `${name.column}`.
    pub name: String,
    /// Column names, from the header row.
    pub columns: Vec<String>,
    /// How rows are handed out.
    pub mode: FeedMode,
    /// The fields' text, row after row.
    text: String,
    /// Where each field ends in `text`, row after row: field `c` of row `r` is number
    /// `r * columns + c`, and starts where the one before it ends. 32 bits hold any offset in a
    /// data file (at most 64 MiB), at half the cost of a `usize`.
    ends: Vec<u32>,
    /// The longest field of each column, in bytes: the most `${name.column}` can give.
    longest: Vec<u64>,
    rows: usize,
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
    /// The file could not be read (too large, or the read failed).
    #[error("cannot read it: {0}")]
    Read(String),
    /// Nothing to hand out.
    #[error("the file has a header row but no data")]
    Empty,
}

impl Feeder {
    /// Parses CSV text with a header row. The error says what is wrong, with the line.
    pub fn from_csv(name: &str, text: &[u8], mode: FeedMode) -> Result<Self, FeedError> {
        Self::from_reader(name, text, mode)
    }

    /// Parses CSV with a header row as it is read, keeping only the fields (see [`Feeder`]).
    pub fn from_reader(name: &str, input: impl std::io::Read, mode: FeedMode) -> Result<Self, FeedError> {
        let mut reader = csv::ReaderBuilder::new().has_headers(true).from_reader(input);
        let columns: Vec<String> = reader
            .headers()
            .map_err(|e| read_error(e, FeedError::Header))?
            .iter()
            .map(|c| c.trim().to_string())
            .collect();
        let mut text = String::new();
        let mut ends = Vec::new();
        let mut longest = vec![0u64; columns.len()];
        let mut rows = 0;
        // One record, reused: nothing is allocated per row.
        let mut record = csv::StringRecord::new();
        loop {
            match reader.read_record(&mut record) {
                Ok(true) => {}
                Ok(false) => break,
                Err(e) => {
                    return Err(read_error(e, |reason| FeedError::Row { line: rows + 2, reason }));
                }
            }
            for (c, field) in record.iter().enumerate() {
                text.push_str(field);
                let end =
                    u32::try_from(text.len()).map_err(|_| FeedError::Read("its fields hold more than 4 GiB".into()))?;
                ends.push(end);
                if let Some(l) = longest.get_mut(c) {
                    *l = (*l).max(field.len() as u64);
                }
            }
            rows += 1;
        }
        if rows == 0 {
            return Err(FeedError::Empty);
        }
        text.shrink_to_fit();
        ends.shrink_to_fit();
        Ok(Feeder {
            name: name.to_string(),
            columns,
            mode,
            text,
            ends,
            longest,
            rows,
            next: AtomicUsize::new(0),
        })
    }

    /// How many data rows it has; never 0.
    pub fn len(&self) -> usize {
        self.rows
    }

    /// Never true: a data file without rows is refused when it is read.
    pub fn is_empty(&self) -> bool {
        self.rows == 0
    }

    /// The longest value of a column, in bytes, when the column exists.
    pub fn longest(&self, column: &str) -> Option<u64> {
        let c = self.columns.iter().position(|n| n == column)?;
        self.longest.get(c).copied()
    }

    /// The row for a user's iteration, or `None` when a unique feeder has no row for this user.
    pub fn take(&self, user: u64, rng: &mut fastrand::Rng) -> Option<usize> {
        match self.mode {
            FeedMode::Sequential => Some(self.next.fetch_add(1, Ordering::Relaxed) % self.rows),
            FeedMode::Random => Some(rng.usize(..self.rows)),
            FeedMode::Unique => usize::try_from(user).ok().filter(|u| *u < self.rows),
        }
    }

    /// A column's value in a row.
    pub fn value(&self, row: usize, column: &str) -> Option<&str> {
        let c = self.columns.iter().position(|n| n == column)?;
        if row >= self.rows {
            return None;
        }
        let i = row * self.columns.len() + c;
        let start = if i == 0 { 0 } else { self.ends[i - 1] as usize };
        self.text.get(start..*self.ends.get(i)? as usize)
    }
}

/// A reader's error as a [`FeedError`]: one from reading the file as such (too large, a failed
/// read) as [`FeedError::Read`], one in its text by `in_text`.
fn read_error(e: csv::Error, in_text: impl FnOnce(String) -> FeedError) -> FeedError {
    match e.kind() {
        csv::ErrorKind::Io(io) => FeedError::Read(io.to_string()),
        _ => in_text(e.to_string()),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn rows_are_read_back_field_by_field() {
        let csv = b"name, pass\nann,\"a,\"\"b\"\n\"\",x\nbob,longer\n";
        let f = Feeder::from_csv("users", csv, FeedMode::Random).unwrap();
        assert_eq!(f.len(), 3);
        assert_eq!(f.value(0, "name"), Some("ann"));
        assert_eq!(f.value(0, "pass"), Some("a,\"b"));
        assert_eq!(f.value(1, "name"), Some(""));
        assert_eq!(f.value(1, "pass"), Some("x"));
        assert_eq!(f.value(2, "pass"), Some("longer"));
        assert_eq!(f.value(3, "pass"), None);
        assert_eq!(f.value(0, "nope"), None);
        assert_eq!(f.longest("name"), Some(3));
        assert_eq!(f.longest("pass"), Some(6));
    }

    #[test]
    fn a_ragged_row_is_named_by_its_line() {
        let e = Feeder::from_csv("d", b"a,b\n1,2\n3\n", FeedMode::Sequential).unwrap_err();
        assert!(matches!(e, FeedError::Row { line: 3, .. }), "{e}");
        assert_eq!(
            Feeder::from_csv("d", b"a\n", FeedMode::Sequential).unwrap_err(),
            FeedError::Empty
        );
    }
}
