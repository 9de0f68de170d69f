//! How much crest reads of each input: every file it is given has a stated limit, checked while
//! reading, so no input, hostile or mistaken, can take memory without bound; and every input
//! must be a regular file, so none can hold crest waiting (a FIFO with no writer) or feed it
//! without end (`/dev/zero`). The limits are listed in docs/measurement.md.

use std::io::Read;

/// A scenario file. Loading one takes about 175 bytes of memory per byte of YAML (the node tree
/// with its locations), so this bounds a load to under 200 MB; the largest example is 6 KB.
pub const MAX_SCENARIO: u64 = 1 << 20;
/// A data file of a scenario (CSV or JSON rows), a body or multipart file, `--body-file`: each
/// is held in memory for the whole run.
pub const MAX_DATA_FILE: u64 = 64 << 20;
/// A results document (`results.json`, a sweep's or a search's parts). A run's is a few hundred
/// KB: histograms are compressed and requests are kept one by one only up to 10,000.
pub const MAX_RESULTS: u64 = 256 << 20;
/// Request names in a plan, a journal or a results document. Each name costs a row in every
/// table and histograms per step; 10,000 is more than any report can show.
pub const MAX_NAMES: usize = 10_000;

/// An input larger than its limit, or one that could not be read.
#[derive(Debug, thiserror::Error)]
pub enum ReadError {
    /// It is larger than its limit.
    #[error("it is larger than {} (the most crest reads of such a file)", size(*.0))]
    TooLarge(u64),
    /// It is no regular file: a FIFO, a socket, a device or a directory.
    #[error("it is {0}, not a regular file: crest reads its inputs from files")]
    NotAFile(&'static str),
    /// Reading it failed.
    #[error(transparent)]
    Io(#[from] std::io::Error),
}

/// All of `r`, unless it holds more than `limit` bytes. Stops reading past the limit, so an
/// endless input (`/dev/zero`) costs at most `limit` bytes.
pub fn read_at_most(r: impl Read, limit: u64) -> Result<Vec<u8>, ReadError> {
    let mut out = Vec::new();
    r.take(limit.saturating_add(1)).read_to_end(&mut out)?;
    if out.len() as u64 > limit {
        return Err(ReadError::TooLarge(limit));
    }
    Ok(out)
}

/// The file at `path`, unless it holds more than `limit` bytes (see [`read_at_most`]). The
/// one place crest reads an input file, so that each is bounded.
pub fn read_file(path: &std::path::Path, limit: u64) -> Result<Vec<u8>, ReadError> {
    read_at_most(open_file(path)?, limit)
}

/// The file at `path` as a stream, for an input parsed as it is read (a data file), so that
/// it is never held whole: reading fails with [`ReadError::TooLarge`]'s words once it gives
/// more than `limit` bytes.
pub fn open_at_most(path: &std::path::Path, limit: u64) -> Result<impl Read, ReadError> {
    Ok(AtMost {
        inner: std::io::BufReader::new(open_file(path)?),
        left: limit,
        limit,
    })
}

struct AtMost<R> {
    inner: R,
    left: u64,
    limit: u64,
}

impl<R: Read> Read for AtMost<R> {
    fn read(&mut self, buf: &mut [u8]) -> std::io::Result<usize> {
        // One byte past the limit is asked for, to tell a file of exactly `limit` bytes from
        // a longer one.
        let want = buf
            .len()
            .min(usize::try_from(self.left.saturating_add(1)).unwrap_or(usize::MAX));
        let n = self.inner.read(&mut buf[..want])?;
        if n as u64 > self.left {
            return Err(std::io::Error::other(ReadError::TooLarge(self.limit).to_string()));
        }
        self.left -= n as u64;
        Ok(n)
    }
}

/// Opens an input, refusing anything but a regular file. Opening a FIFO waits for a writer,
/// forever when none comes, and a device or socket is no document: the file is opened without
/// waiting (`O_NONBLOCK`, which a regular file ignores) and its type checked on the open file,
/// so that nothing can be put in its place between a check and the open.
pub fn open_file(path: &std::path::Path) -> Result<std::fs::File, ReadError> {
    use std::os::unix::fs::{FileTypeExt, OpenOptionsExt};
    let file = std::fs::OpenOptions::new()
        .read(true)
        .custom_flags(libc::O_NONBLOCK)
        .open(path)?;
    let t = file.metadata()?.file_type();
    let what = if t.is_file() {
        return Ok(file);
    } else if t.is_fifo() {
        "a pipe (FIFO)"
    } else if t.is_socket() {
        "a socket"
    } else if t.is_char_device() || t.is_block_device() {
        "a device"
    } else if t.is_dir() {
        "a directory"
    } else {
        "a special file"
    };
    Err(ReadError::NotAFile(what))
}

/// [`read_file`], as UTF-8 text.
pub fn read_text_file(path: &std::path::Path, limit: u64) -> Result<String, ReadError> {
    String::from_utf8(read_file(path, limit)?)
        .map_err(|e| ReadError::Io(std::io::Error::new(std::io::ErrorKind::InvalidData, e)))
}

/// A size for a message, in its largest whole binary unit: `64 MiB`, `2 GiB`, `16 EiB`.
pub fn size(bytes: u64) -> String {
    for (shift, unit) in [
        (60, "EiB"),
        (50, "PiB"),
        (40, "TiB"),
        (30, "GiB"),
        (20, "MiB"),
        (10, "KiB"),
    ] {
        if bytes >= 1 << shift {
            return format!("{} {unit}", bytes >> shift);
        }
    }
    format!("{bytes} bytes")
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn an_endless_input_is_refused_after_its_limit() {
        let endless = std::io::repeat(0);
        match read_at_most(endless, 1000) {
            Err(ReadError::TooLarge(1000)) => {}
            other => panic!("{other:?}"),
        }
        assert_eq!(read_at_most(&b"abc"[..], 3).unwrap(), b"abc");
        let mut streamed = Vec::new();
        let e = open_at_most(std::path::Path::new("/dev/zero"), 10).err().unwrap();
        assert!(matches!(e, ReadError::NotAFile("a device")), "{e:?}");
        let dir = tempfile::tempdir().unwrap();
        let file = dir.path().join("d.csv");
        std::fs::write(&file, b"0123456789").unwrap();
        open_at_most(&file, 10).unwrap().read_to_end(&mut streamed).unwrap();
        assert_eq!(streamed, b"0123456789");
        let e = open_at_most(&file, 9).unwrap().read_to_end(&mut streamed).unwrap_err();
        assert!(e.to_string().starts_with("it is larger than"), "{e}");
        assert_eq!(
            ReadError::TooLarge(MAX_SCENARIO).to_string(),
            "it is larger than 1 MiB (the most crest reads of such a file)"
        );
    }

    #[test]
    fn a_fifo_a_device_and_a_directory_are_refused_at_once() {
        let dir = tempfile::tempdir().unwrap();
        let fifo = dir.path().join("scenario.yaml");
        let made = std::process::Command::new("mkfifo").arg(&fifo).status().unwrap();
        assert!(made.success());
        // No writer: opening it the usual way would wait forever.
        for (path, what) in [
            (fifo.as_path(), "a pipe (FIFO)"),
            (std::path::Path::new("/dev/zero"), "a device"),
            (dir.path(), "a directory"),
        ] {
            match read_file(path, MAX_SCENARIO) {
                Err(ReadError::NotAFile(w)) => assert_eq!(w, what, "{}", path.display()),
                other => panic!("{}: {other:?}", path.display()),
            }
        }
        let file = dir.path().join("ok.yaml");
        std::fs::write(&file, "a: 1\n").unwrap();
        assert_eq!(read_file(&file, MAX_SCENARIO).unwrap(), b"a: 1\n");
    }
}
