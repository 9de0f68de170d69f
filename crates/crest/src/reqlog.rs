//! The request log (`--log-requests`): every request as a row of `request-log.csv.gz` in the run
//! directory, as pgbench's `-l` and JMeter's result files keep them, for questions the
//! histograms cannot answer (which user failed, what happened around one slow request).
//!
//! Engine threads only keep each sample in their interval's rows (see
//! `crest_metrics::Recorder::logging`); the run loop hands each closed second's rows to this
//! module's thread, which formats and compresses them, so the engine never formats and its
//! threads never compress. Each batch is written as one whole gzip member, and the file is
//! synced every [`SYNC_EVERY`] as the journal is: a file of several members is one gzip stream
//! to `zcat`, gzip and every library reading `.gz`, so a killed run's log reads up to its last
//! seconds. gzip rather than zstd: every machine and every data tool reads it without
//! installing anything, and `flate2` is already crest's.

use anyhow::{Context, Result};
use crest_metrics::Row;
use flate2::write::GzEncoder;
use flate2::Compression;
use std::fs::File;
use std::io::Write;
use std::path::{Path, PathBuf};
use std::sync::mpsc::{channel, Receiver, Sender};
use std::thread::JoinHandle;
use std::time::{Duration, Instant};

/// The header row; docs/reports.md says what each column means.
pub const HEADER: &str = "intended_us,start_us,name,user,iteration,status,outcome,dns_us,connect_us,first_byte_us,total_us,bytes_sent,bytes_received\n";

/// Longest rows may wait in the kernel's cache before they are on disk, as for the journal.
const SYNC_EVERY: Duration = Duration::from_secs(2);

/// gzip's fastest level. Measured with zlib on 690,000 rows of a benchmark run's log: level 1
/// compresses them 4.1x (14 bytes a row) in a fifth of the CPU level 6 takes for 5.2x (11
/// bytes), and this thread shares the machine with the engine.
const LEVEL: u32 = 1;

/// An open request log, written on its own thread.
#[derive(Debug)]
pub struct Log {
    tx: Sender<Vec<Row>>,
    thread: JoinHandle<Result<u64>>,
    path: PathBuf,
}

impl Log {
    /// Creates the log (it must not exist yet) with its header, and starts its thread. `names`
    /// are the plan's request names, which the rows refer to by index.
    pub fn create(path: &Path, names: &[String]) -> Result<Log> {
        let mut file = crate::rundir::create_new(path)?;
        file.write_all(&member(HEADER.as_bytes())?)
            .with_context(|| format!("cannot write {}", path.display()))?;
        let names: Vec<String> = names.iter().map(|n| csv_field(n)).collect();
        let (tx, rx) = channel();
        let shown = path.to_path_buf();
        let thread = std::thread::Builder::new()
            .name("crest-reqlog".into())
            .spawn(move || write_rows(file, &names, &rx).with_context(|| format!("cannot write {}", shown.display())))
            .context("cannot start the request log's thread")?;
        Ok(Log {
            tx,
            thread,
            path: path.to_path_buf(),
        })
    }

    /// Hands over one closed interval's rows; never blocks the run loop.
    pub fn send(&self, rows: Vec<Row>) {
        if !rows.is_empty() {
            // A thread that stopped on an error says so when the log is finished.
            let _ = self.tx.send(rows);
        }
    }

    /// Writes what is left and closes the log; the number of rows written, or the first error.
    pub fn finish(self) -> Result<(PathBuf, u64)> {
        drop(self.tx);
        let rows = self
            .thread
            .join()
            .map_err(|_| anyhow::anyhow!("the request log's thread panicked"))??;
        Ok((self.path, rows))
    }
}

/// The thread: each wake-up writes every batch waiting as one gzip member.
fn write_rows(mut file: File, names: &[String], rx: &Receiver<Vec<Row>>) -> Result<u64> {
    let mut text = Vec::with_capacity(1 << 20);
    let mut synced = Instant::now();
    let mut written = 0u64;
    while let Ok(first) = rx.recv() {
        let mut rows = first;
        for more in rx.try_iter() {
            rows.extend(more);
        }
        // In the order they ended, as the intervals are; threads' rows interleave within one.
        rows.sort_by_key(Row::end_us);
        text.clear();
        for s in &rows {
            row(&mut text, s, names)?;
        }
        file.write_all(&member(&text)?)?;
        written += rows.len() as u64;
        if synced.elapsed() >= SYNC_EVERY {
            file.sync_data()?;
            synced = Instant::now();
        }
    }
    file.sync_data()?;
    Ok(written)
}

/// `bytes` as one complete gzip member, written to the file in one piece.
fn member(bytes: &[u8]) -> std::io::Result<Vec<u8>> {
    let mut gz = GzEncoder::new(Vec::with_capacity(bytes.len() / 4 + 64), Compression::new(LEVEL));
    gz.write_all(bytes)?;
    gz.finish()
}

/// One row. Times are whole µs from the run's start (results.json's `started_at`); a missing
/// value (no status, no new connection, no first byte) is an empty field.
fn row(out: &mut Vec<u8>, r: &Row, names: &[String]) -> std::io::Result<()> {
    let name = names.get(r.name as usize).map_or("", String::as_str);
    write!(
        out,
        "{},{},{},{},{},",
        r.intended_us,
        r.intended_us + u64::from(r.lag_us),
        name,
        r.user,
        r.iteration
    )?;
    if let Some(code) = r.status {
        write!(out, "{code}")?;
    }
    write!(out, ",{},", r.outcome)?;
    if let Some(d) = r.dns_us.get() {
        write!(out, "{d}")?;
    }
    out.push(b',');
    if let Some(c) = r.connect_us.get() {
        write!(out, "{c}")?;
    }
    out.push(b',');
    if let Some(t) = r.ttfb_us.get() {
        write!(out, "{t}")?;
    }
    writeln!(out, ",{},{},{}", r.total_us, r.bytes_sent, r.bytes_received)
}

/// A name as a CSV field: quoted when it holds a comma, a quote or a line break (RFC 4180).
fn csv_field(s: &str) -> String {
    if s.contains([',', '"', '\n', '\r']) {
        format!("\"{}\"", s.replace('"', "\"\""))
    } else {
        s.to_string()
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crest_model::Outcome;

    #[test]
    fn a_row_has_every_column_and_empty_fields_for_what_is_missing() {
        let s = crest_model::Sample {
            name: 1,
            segment: 0,
            user: 7,
            iteration: 3,
            intended: Duration::from_micros(1_000_500),
            send_lag: Duration::from_micros(20),
            dns: None,
            connect: None,
            ttfb: None,
            total: Duration::from_micros(30_000_000),
            bytes_sent: 80,
            bytes_received: 0,
            messages_sent: 0,
            messages_received: 0,
            status: None,
            outcome: Outcome::Timeout,
        };
        let mut out = Vec::new();
        row(&mut out, &Row::of(&s), &["a".into(), csv_field("GET /x, \"y\"")]).unwrap();
        assert_eq!(
            String::from_utf8(out).unwrap(),
            "1000500,1000520,\"GET /x, \"\"y\"\"\",7,3,,timeout,,,,30000000,80,0\n"
        );
        assert_eq!(HEADER.split(',').count(), 13);
    }
}
