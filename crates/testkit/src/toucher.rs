//! A real process whose shared or private memory grows on command (python3, as in CI), for
//! tests of what the monitor reads and what the leak analysis concludes from it.
//!
//! Shared anonymous memory counts in a process's resident memory the moment it touches a page,
//! as a database's shared buffers do, though it is no growth of the process's own; private
//! memory is what a leak grows. The helper does either, at the test's pace.

use std::io::{BufRead, BufReader, Write};
use std::process::{Child, ChildStdin, ChildStdout, Command, Stdio};

/// Which memory a [`Toucher`] maps.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Memory {
    /// `MAP_SHARED | MAP_ANONYMOUS`: counted by the kernel as RssShmem.
    Shared,
    /// `MAP_PRIVATE | MAP_ANONYMOUS`: counted as RssAnon.
    Private,
}

/// The helper process; killed when dropped, however the test ends.
#[derive(Debug)]
pub struct Toucher {
    child: Child,
    stdin: ChildStdin,
    stdout: BufReader<ChildStdout>,
}

impl Toucher {
    /// Starts a helper with `size` bytes mapped and none touched; returns once it has mapped them.
    pub fn spawn(memory: Memory, size: u64) -> Toucher {
        let kind = match memory {
            Memory::Shared => "shared",
            Memory::Private => "private",
        };
        let mut child = Command::new("python3")
            .args(["-c", include_str!("toucher.py"), kind, &size.to_string()])
            .stdin(Stdio::piped())
            .stdout(Stdio::piped())
            .spawn()
            .expect("python3 runs the memory toucher");
        let (Some(stdin), Some(stdout)) = (child.stdin.take(), child.stdout.take()) else {
            panic!("the toucher's pipes were asked for");
        };
        let mut t = Toucher {
            child,
            stdin,
            stdout: BufReader::new(stdout),
        };
        t.expect("ready");
        t
    }

    /// The helper's process id.
    pub fn pid(&self) -> u32 {
        self.child.id()
    }

    /// Touches the next `bytes` of the region; returns once they are resident.
    pub fn touch(&mut self, bytes: u64) {
        self.say(&format!("touch {bytes}"));
        self.expect("touched");
    }

    /// Starts touching `per_second` bytes a second for `secs` seconds, and returns at once.
    pub fn ramp(&mut self, per_second: u64, secs: f64) {
        self.say(&format!("ramp {per_second} {secs}"));
        self.expect("ramping");
    }

    fn say(&mut self, line: &str) {
        writeln!(self.stdin, "{line}").expect("the toucher reads its commands");
        self.stdin.flush().expect("the toucher reads its commands");
    }

    fn expect(&mut self, word: &str) {
        let mut line = String::new();
        self.stdout.read_line(&mut line).expect("the toucher answers");
        assert!(line.starts_with(word), "the toucher said {line:?}, not {word:?}");
    }
}

impl Drop for Toucher {
    fn drop(&mut self) {
        let _ = self.child.kill();
        let _ = self.child.wait();
    }
}
