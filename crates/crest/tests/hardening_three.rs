//! Issue 35: hardening, round three. Bounds known before the run, data files held once, numbers
//! in errors as a person writes them. Memory is read from the kernel's own accounting of each
//! crest process (its peak resident set, from `wait4`), never from time.
#![allow(clippy::unwrap_used)]
// One call, `wait4`, for a child's own peak memory: std's `Child::wait` drops the rusage.
#![allow(unsafe_code)]

mod common;

use common::{scenario_file, target_metric, target_process};
use std::io::Read;
use std::process::Stdio;

/// What a crest process did: exit code, stdout, stderr, and its peak resident memory in bytes.
struct Ran {
    code: i32,
    stdout: String,
    stderr: String,
    peak: u64,
}

/// `crest ARGS...` in `dir`, waited for with `wait4`, which gives this child's own rusage
/// (RUSAGE_CHILDREN would mix in every other child of the test binary).
#[allow(clippy::zombie_processes)] // waited for by wait4, which clippy does not know
fn crest_in(dir: &std::path::Path, args: &[&str]) -> Ran {
    let mut child = common::crest()
        .args(args)
        .current_dir(dir)
        .stdout(Stdio::piped())
        .stderr(Stdio::piped())
        .spawn()
        .unwrap();
    let read = |mut r: Box<dyn Read + Send>| {
        std::thread::spawn(move || {
            let mut s = String::new();
            r.read_to_string(&mut s).unwrap();
            s
        })
    };
    let out = read(Box::new(child.stdout.take().unwrap()));
    let err = read(Box::new(child.stderr.take().unwrap()));
    let mut status = 0;
    // SAFETY: a zeroed rusage is a valid value for wait4 to fill.
    let mut usage: libc::rusage = unsafe { std::mem::zeroed() };
    // SAFETY: the pid is our own child's, not yet waited for; both pointers live across the call.
    let pid = unsafe { libc::wait4(child.id() as libc::pid_t, &mut status, 0, &mut usage) };
    assert_eq!(
        pid,
        child.id() as libc::pid_t,
        "wait4: {}",
        std::io::Error::last_os_error()
    );
    let code = if libc::WIFEXITED(status) {
        libc::WEXITSTATUS(status)
    } else {
        128 + libc::WTERMSIG(status)
    };
    let stderr = err.join().unwrap();
    assert!(
        !stderr.contains("panicked") && !stderr.contains("memory allocation"),
        "{args:?}: {stderr}"
    );
    Ran {
        code,
        stdout: out.join().unwrap(),
        stderr,
        // ru_maxrss is in KiB on Linux.
        peak: usage.ru_maxrss as u64 * 1024,
    }
}

const MIB: u64 = 1 << 20;

/// The 753-byte scenario: v0 is two bytes and each of v1 ... v30 is the one before it
/// twice, 2 GiB at the end. v21 is 4 MiB, the most a value may hold; v22 is the first past it.
fn doubling(target: &str) -> String {
    let mut text = format!("target: {target}\nload: {{users: 1, duration: 1s}}\nvariables:\n  v0: 'ab'\n");
    for i in 1..=30 {
        text.push_str(&format!("  v{i}: '${{v{}}}${{v{}}}'\n", i - 1, i - 1));
    }
    text.push_str("steps:\n  - request: {path: '/${v30}'}\n");
    text
}

#[test]
fn variables_that_double_are_refused_by_validate_and_run_before_sending() {
    let target = target_process(&[]);
    let (dir, file) = scenario_file(&doubling(target.url.trim_end_matches('/')));
    let name = file.to_str().unwrap();
    for cmd in ["validate", "run"] {
        let r = crest_in(dir.path(), &[cmd, name]);
        assert_eq!(r.code, 2, "{cmd}: {}{}", r.stdout, r.stderr);
        // v22 stands on line 26; its value starts at column 8.
        assert!(
            r.stderr.contains(&format!(
                "{name}:26:8: in \"${{v21}}${{v21}}\": it can expand to 8 MiB, more than the 4 MiB a value may hold"
            )),
            "{cmd}: {}",
            r.stderr
        );
        // Reported once, where it first overflows, not once for each variable built on it.
        assert_eq!(r.stderr.matches("it can expand to").count(), 1, "{cmd}: {}", r.stderr);
        assert!(r.peak < 200 * MIB, "{cmd}: peak {} MiB", r.peak / MIB);
    }
    assert_eq!(
        target_metric(&target.url, "crest_target_requests_total"),
        0,
        "nothing was sent"
    );

    // Functions and data columns count too: five 1 MiB random strings are 5 MiB.
    let big = "${random_string(1048576)}".repeat(5);
    let (dir, file) = scenario_file(&format!(
        "target: {}\nload: {{users: 1, duration: 1s}}\nsteps:\n  - request: {{path: /, body: '{big}'}}\n",
        target.url.trim_end_matches('/')
    ));
    let r = crest_in(dir.path(), &["validate", file.to_str().unwrap()]);
    assert_eq!(r.code, 2, "{}", r.stderr);
    assert!(
        r.stderr.contains("it can expand to 5242880 bytes, more than the 4 MiB"),
        "{}",
        r.stderr
    );
}

/// Ten million one-column rows, 20 MB: `0\n`, `1\n`, ... under an `id` header.
fn ten_million_rows(dir: &std::path::Path) -> u64 {
    let mut text = Vec::with_capacity(20_000_010);
    text.extend_from_slice(b"id\n");
    for i in 0..10_000_000u32 {
        text.push(b'0' + (i % 10) as u8);
        text.push(b'\n');
    }
    std::fs::write(dir.join("big.csv"), &text).unwrap();
    std::fs::write(dir.join("small.csv"), b"id\n0\n1\n2\n3\n").unwrap();
    text.len() as u64
}

/// Each read mode, over a file of ten million rows and over one of four: the large file may
/// cost at most 4 times its size more than the small one (the fields once, 4 bytes each for
/// where they end; about 2.5 times measured). Each row was a vector of strings, 83 times the
/// file: 1.67 GB.
#[test]
fn a_large_data_file_is_held_in_a_small_multiple_of_its_size() {
    let target = target_process(&[]);
    let dir = tempfile::tempdir().unwrap();
    let size = ten_million_rows(dir.path());
    let scenario = |file: &str, mode: &str| {
        let name = format!("{mode}-{file}.yaml");
        std::fs::write(
            dir.path().join(&name),
            format!(
                "target: {}\ndata:\n  d: {{file: {file}.csv, mode: {mode}}}\nload: {{users: 2, duration: 1s}}\nsteps:\n  - request: {{path: '/rows/${{d.id}}'}}\n",
                target.url.trim_end_matches('/')
            ),
        )
        .unwrap();
        name
    };
    let peak = |args: &[&str]| {
        let r = crest_in(dir.path(), args);
        assert_eq!(r.code, 0, "{args:?}: {}{}", r.stdout, r.stderr);
        r.peak
    };
    let small = scenario("small", "sequential");
    let large = scenario("big", "sequential");
    let extra = peak(&["validate", &large]).saturating_sub(peak(&["validate", &small]));
    eprintln!("validate: {} MiB more for {} bytes", extra / MIB, size);
    assert!(
        extra < 4 * size,
        "validate: {} MiB more for a {} MB file",
        extra / MIB,
        size / 1_000_000
    );
    for mode in ["sequential", "random", "unique"] {
        let before = target_metric(&target.url, "crest_target_requests_total");
        let (small, large) = (scenario("small", mode), scenario("big", mode));
        let base = peak(&["run", &small, "--out", &format!("{mode}-small")]);
        let r = crest_in(dir.path(), &["run", &large, "--out", &format!("{mode}-big")]);
        assert_eq!(r.code, 0, "{mode}: {}", r.stderr);
        let extra = r.peak.saturating_sub(base);
        eprintln!(
            "{mode}: {} MiB more for {} bytes ({} MiB in all)",
            extra / MIB,
            size,
            r.peak / MIB
        );
        assert!(
            extra < 4 * size,
            "{mode}: {} MiB more for a {} MB file",
            extra / MIB,
            size / 1_000_000
        );
        assert!(
            target_metric(&target.url, "crest_target_requests_total") > before,
            "{mode}: the rows were sent"
        );
        common::check_counts(&dir.path().join(format!("{mode}-big/results.json")));
    }
}

#[test]
fn numbers_in_errors_read_as_written_not_as_hundreds_of_digits() {
    let target = target_process(&[]);
    let dir = tempfile::tempdir().unwrap();
    let r = crest_in(dir.path(), &["run", &target.url, "--rate", "1e300", "-d", "1s"]);
    assert_eq!(r.code, 2, "{}", r.stderr);
    assert!(r.stderr.contains("--rate 1e300: the rate is at most"), "{}", r.stderr);
    assert!(r.stderr.len() < 200, "{}", r.stderr);

    // A results document whose duration_s is 1e308, read back by `crest report`.
    let run = common::run(&target.url, &["-n", "5", "-c", "1"]);
    assert_eq!(run.code, 0, "{}", run.stderr);
    let mut doc = run.results();
    doc["duration_s"] = serde_json::json!(1e308);
    let file = dir.path().join("results.json");
    std::fs::write(&file, serde_json::to_vec(&doc).unwrap()).unwrap();
    let r = crest_in(dir.path(), &["report", file.to_str().unwrap()]);
    assert_eq!(r.code, 2, "{}", r.stderr);
    assert!(
        r.stderr
            .contains("duration_s is 1e308: give a time of 0 to 3200000000 seconds"),
        "{}",
        r.stderr
    );
    assert!(r.stderr.len() < 300, "{}", r.stderr);
}
