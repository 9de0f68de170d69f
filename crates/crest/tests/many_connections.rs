//! One crest process holds 10,000 concurrent connections.
#![allow(clippy::unwrap_used)]

mod common;

use common::{crest, f, run};
use std::io::{BufRead, BufReader};
use std::process::Stdio;

/// Kills the target process when the test ends, however it ends.
struct Child(std::process::Child);

impl Drop for Child {
    fn drop(&mut self) {
        let _ = self.0.kill();
        let _ = self.0.wait();
    }
}

#[test]
fn ten_thousand_concurrent_connections_from_one_process() {
    // The target runs in its own process so that each side has its own open-file limit.
    let mut target = Child(
        crest()
            .args([
                "target",
                "--listen",
                "127.0.0.1:0",
                "--workers",
                "100",
                "--service-time",
                "10ms",
                "--queue",
                "20000",
                "--server-timeout",
                "30s",
                "--size",
                "64",
            ])
            .stderr(Stdio::piped())
            .spawn()
            .unwrap(),
    );
    let mut line = String::new();
    BufReader::new(target.0.stderr.take().unwrap())
        .read_line(&mut line)
        .unwrap();
    let url = line
        .split_whitespace()
        .find(|w| w.starts_with("http://"))
        .unwrap()
        .to_string();

    let r = run(&url, &["-c", "10000", "-d", "4s", "--timeout", "20s"]);
    assert_eq!(r.code, 0, "{}", r.stderr);
    let s = r.summary();
    assert_eq!(s["connections"], 10_000, "one connection per user, all open at once");
    assert_eq!(s["failures"], 0, "{}", s["errors"]);
    // Each user waits 1 s per request, so 10,000 users make about 10,000 requests a second.
    let tput = f(&s, &["throughput_rps"]);
    assert!(tput > 5_000.0, "throughput {tput}");
}
