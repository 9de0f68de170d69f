//! The run directory under hostile conditions: a crest killed mid-run, a disk that fills, a
//! directory that already holds a run, links planted in it, a run that fails before it starts.
#![allow(clippy::unwrap_used)]

mod common;

use common::{crest, target_process};
use std::path::Path;
use std::time::Duration;

fn results(dir: &Path) -> serde_json::Value {
    serde_json::from_str(&std::fs::read_to_string(dir.join("results.json")).unwrap()).unwrap()
}

/// SIGKILL leaves no chance to write anything at the end: the journal written as the run went
/// keeps all but its last seconds, of the requests and of the watched process alike, and
/// `crest report` rebuilds results.json and the reports.
#[test]
fn a_killed_run_is_rebuilt_from_its_journal() {
    let _serial = common::serial();
    let t = target_process(&["--workers", "4", "--service-time", "5ms"]);
    let dir = tempfile::tempdir().unwrap();
    let out = dir.path().join("run");
    let pid = t.child.id().to_string();
    let child = common::spawn_out(
        &["run", &t.url, "-c", "4", "-d", "30s", "--quiet", "--monitor-pid", &pid],
        &out,
    );
    // Killed once its journal shows the run under way, however long a busy machine took to
    // start it.
    common::wait_for_intervals(&out, 4);
    common::kill(child);
    let served = common::target_metric(&t.url, "crest_target_requests_total");
    assert!(!out.join("results.json").exists());
    // The journal's reserve is still there: nothing ran at the end to give it back.
    let reserve = out.join("journal.reserve");
    let had_reserve = reserve.exists();

    let r = crest().arg("report").arg(&out).output().unwrap();
    assert_eq!(r.status.code(), Some(0), "{}", String::from_utf8_lossy(&r.stderr));
    let err = String::from_utf8_lossy(&r.stderr);
    assert!(err.contains("rebuilt") && err.contains("journal.jsonl"), "{err}");
    assert!(had_reserve, "the run kept room for its journal");
    assert!(!reserve.exists(), "the rebuilt run gives the journal's reserve back");
    let v = results(&out);
    assert_eq!(v["ended_by"], "unfinished");
    let intervals = v["intervals"].as_array().unwrap();
    assert!(intervals.len() >= 4, "{} intervals kept", intervals.len());
    let kept: u64 = intervals.iter().map(|i| i["requests"].as_u64().unwrap()).sum();
    // At most the last few seconds are lost: a few seconds at the rate the kept ones had (a
    // ratio within this run, whatever rate the machine allowed).
    let per_s = kept as f64 / intervals.len() as f64;
    assert!(kept <= served, "{kept} kept, {served} served");
    assert!(
        (served - kept) as f64 <= 3.5 * per_s,
        "{kept} kept of {served} served ({per_s:.0}/s): more than the last seconds were lost"
    );
    // The target's memory was sampled every second until the kill, and each sample was
    // journaled as it was taken.
    let series = v["monitor"]["series"].as_array().expect("monitor series kept");
    let rss = series
        .iter()
        .find(|s| s["key"]["metric"] == "process_resident_memory_bytes")
        .expect("the target's memory");
    let points = rss["points"].as_array().unwrap();
    let last_t = points.last().unwrap()[0].as_f64().unwrap();
    assert!(
        points.len() >= 3 && last_t >= 2.5,
        "{} points, the last at {last_t} s",
        points.len()
    );
    assert!(points.iter().all(|p| p[1].as_f64().unwrap() > 1e6), "{points:?}");
    let sources = v["monitor"]["sources"].as_array().unwrap();
    assert!(sources.iter().any(|s| s["kind"] == "process"), "{sources:?}");
    for f in ["report.md", "report.html", "requests.csv", "latency.hlog"] {
        assert!(out.join(f).is_file(), "{f}");
    }
    let md = std::fs::read_to_string(out.join("report.md")).unwrap();
    assert!(md.contains("rebuilt from its journal"), "{md}");
    assert!(md.contains("process_resident_memory_bytes"), "{md}");
    common::check_counts(&out.join("results.json"));
}

/// A disk that fills during the run: the summary still reaches stdout, the error says what was
/// kept, the exit code says the results are incomplete, and `crest report` rebuilds them once
/// there is room.
#[test]
fn a_full_disk_keeps_the_summary_and_the_journal() {
    let _serial = common::serial();
    let t = target_process(&["--workers", "4", "--service-time", "2ms"]);
    let Some(small) = SmallDisk::mount("16k") else { return };
    let mnt = small.path();
    let out = mnt.join("run");
    let r = crest()
        .args(["run", &t.url, "-c", "4", "-d", "8s", "--summary-json", "-", "--out"])
        .arg(&out)
        .output()
        .unwrap();
    let stderr = String::from_utf8_lossy(&r.stderr);
    assert_eq!(r.status.code(), Some(4), "{stderr}");
    assert!(stderr.contains("kept:") && stderr.contains("journal.jsonl"), "{stderr}");
    let summary: serde_json::Value = serde_json::from_slice(&r.stdout).unwrap();
    assert!(summary["requests"].as_u64().unwrap() > 0);
    assert!(!out.join("results.json").exists() && !out.join("results.json.tmp").exists());

    // Room again: the report is rebuilt from what the journal kept.
    let grown = std::process::Command::new("mount")
        .args(["-o", "remount,size=64m"])
        .arg(mnt)
        .status()
        .unwrap();
    assert!(grown.success());
    let rep = crest().arg("report").arg(&out).output().unwrap();
    assert_eq!(rep.status.code(), Some(0), "{}", String::from_utf8_lossy(&rep.stderr));
    let v = results(&out);
    assert!(!v["intervals"].as_array().unwrap().is_empty());
}

/// A tmpfs of a few KiB, unmounted however the test ends.
struct SmallDisk {
    mnt: std::path::PathBuf,
    _base: tempfile::TempDir,
}

impl SmallDisk {
    /// None (the test skips) only off CI where this process may not mount; CI runs as root.
    fn mount(size: &str) -> Option<SmallDisk> {
        let base = tempfile::tempdir().unwrap();
        let mnt = base.path().join("small");
        std::fs::create_dir(&mnt).unwrap();
        let mounted = std::process::Command::new("mount")
            .args(["-t", "tmpfs", "-o", &format!("size={size}"), "tmpfs"])
            .arg(&mnt)
            .status()
            .is_ok_and(|s| s.success());
        if !mounted {
            assert!(
                std::env::var_os("CI").is_none(),
                "CI runs as root and must mount a tmpfs"
            );
            eprintln!("skipped: cannot mount a tmpfs here (not root)");
            return None;
        }
        Some(SmallDisk { mnt, _base: base })
    }

    fn path(&self) -> &Path {
        &self.mnt
    }

    /// Fills what room is left with one file.
    fn fill(&self) {
        use std::io::Write;
        let mut f = std::fs::File::create(self.mnt.join("filler")).unwrap();
        let block = [0u8; 1024];
        while f.write_all(&block).is_ok() {}
        let _ = f.write_all(&[0]);
    }
}

impl Drop for SmallDisk {
    fn drop(&mut self) {
        let _ = std::process::Command::new("umount").arg(&self.mnt).status();
    }
}

/// A disk with no room at all before the run: the request log's first bytes cannot be written,
/// so the run stops before sending anything, exits as a full disk does (4, not bad input), and
/// leaves no directory behind, as any run that fails before sending.
#[test]
fn a_disk_full_before_the_start_sends_nothing_and_leaves_nothing() {
    let _serial = common::serial();
    let t = target_process(&["--workers", "4", "--service-time", "2ms"]);
    let Some(small) = SmallDisk::mount("16k") else { return };
    small.fill();
    let out = small.path().join("run");
    let r = crest()
        .args([
            "run",
            &t.url,
            "-c",
            "4",
            "-d",
            "3s",
            "--log-requests",
            "--quiet",
            "--out",
        ])
        .arg(&out)
        .output()
        .unwrap();
    let stderr = String::from_utf8_lossy(&r.stderr);
    assert_eq!(r.status.code(), Some(4), "{stderr}");
    assert!(stderr.contains("No space left on device"), "{stderr}");
    assert!(
        !out.exists(),
        "left behind: {:?}",
        std::fs::read_dir(&out).map(|d| d.count())
    );
    assert_eq!(common::target_metric(&t.url, "crest_target_requests_total"), 0);
}

#[test]
fn an_earlier_run_is_not_overwritten_unless_forced() {
    let _serial = common::serial();
    let t = target_process(&[]);
    let dir = tempfile::tempdir().unwrap();
    let out = dir.path().to_path_buf();
    let run = |extra: &[&str]| {
        crest()
            .args(["run", &t.url, "-n", "20", "-c", "2", "--quiet", "--out"])
            .arg(&out)
            .args(extra)
            .output()
            .unwrap()
    };
    assert_eq!(run(&[]).status.code(), Some(0));
    let first = std::fs::read_to_string(out.join("results.json")).unwrap();
    let again = run(&[]);
    assert_eq!(again.status.code(), Some(2));
    let err = String::from_utf8_lossy(&again.stderr);
    assert!(
        err.contains("--out") && err.contains("not empty") && err.contains("--force"),
        "{err}"
    );
    assert_eq!(std::fs::read_to_string(out.join("results.json")).unwrap(), first);
    let forced = run(&["--force"]);
    assert_eq!(
        forced.status.code(),
        Some(0),
        "{}",
        String::from_utf8_lossy(&forced.stderr)
    );
    assert_ne!(std::fs::read_to_string(out.join("results.json")).unwrap(), first);
}

/// A link planted in a run directory is never followed: what it points to is left alone.
#[test]
fn links_in_the_run_directory_are_never_followed() {
    let _serial = common::serial();
    let t = target_process(&[]);
    let dir = tempfile::tempdir().unwrap();
    let out = dir.path().join("run");
    let r = crest()
        .args(["run", &t.url, "-n", "10", "-c", "1", "--quiet", "--out"])
        .arg(&out)
        .output()
        .unwrap();
    assert_eq!(r.status.code(), Some(0));
    let victim = dir.path().join("victim.txt");
    std::fs::write(&victim, "precious").unwrap();
    std::fs::remove_file(out.join("report.html")).unwrap();
    std::os::unix::fs::symlink(&victim, out.join("report.html")).unwrap();
    let rep = crest().arg("report").arg(&out).output().unwrap();
    assert_eq!(rep.status.code(), Some(0), "{}", String::from_utf8_lossy(&rep.stderr));
    assert_eq!(std::fs::read_to_string(&victim).unwrap(), "precious");
    assert!(!out
        .join("report.html")
        .symlink_metadata()
        .unwrap()
        .file_type()
        .is_symlink());

    // --out itself a link: refused.
    let link = dir.path().join("link");
    std::os::unix::fs::symlink(dir.path().join("elsewhere"), &link).unwrap();
    let r = crest()
        .args(["run", &t.url, "-n", "1", "--quiet", "--out"])
        .arg(&link)
        .output()
        .unwrap();
    assert_eq!(r.status.code(), Some(2));
    assert!(String::from_utf8_lossy(&r.stderr).contains("symbolic link"));
    assert!(!dir.path().join("elsewhere").exists());
}

/// A run that fails its checks before sending (here: more connections than the open-file
/// limit allows) leaves no directory behind.
#[test]
fn a_run_that_never_starts_leaves_no_directory() {
    let limits = std::fs::read_to_string("/proc/self/limits").unwrap();
    let hard: u64 = limits
        .lines()
        .find(|l| l.starts_with("Max open files"))
        .and_then(|l| l.split_whitespace().nth(4))
        .and_then(|v| v.parse().ok())
        .unwrap_or(u64::MAX);
    assert!(
        hard < 1_000_000,
        "this test needs a hard open-file limit below 1,000,000"
    );
    let dir = tempfile::tempdir().unwrap();
    let out = dir.path().join("run");
    let r = crest()
        .args(["run", "http://127.0.0.1:9/", "-n", "1", "-c", "999999", "--out"])
        .arg(&out)
        .output()
        .unwrap();
    assert_eq!(r.status.code(), Some(2), "{}", String::from_utf8_lossy(&r.stderr));
    assert!(!out.exists(), "{:?}", std::fs::read_dir(&out).map(|d| d.count()));
}

/// A results document of another version or schema is refused by name, not misread.
#[test]
fn a_results_document_of_another_version_is_refused() {
    let dir = tempfile::tempdir().unwrap();
    let fixture = crest_testkit::results::stepping_fixture();
    let mut v = serde_json::to_value(&fixture).unwrap();
    v["version"] = serde_json::json!(99);
    std::fs::write(dir.path().join("results.json"), v.to_string()).unwrap();
    let r = crest().arg("report").arg(dir.path()).output().unwrap();
    assert_eq!(r.status.code(), Some(2));
    let err = String::from_utf8_lossy(&r.stderr);
    assert!(
        err.contains("version 99") && err.contains("reads versions 1 to 2"),
        "{err}"
    );
    v["version"] = serde_json::json!(1);
    v["schema"] = serde_json::json!("something.else");
    std::fs::write(dir.path().join("results.json"), v.to_string()).unwrap();
    let r = crest().arg("report").arg(dir.path()).output().unwrap();
    assert_eq!(r.status.code(), Some(2));
    assert!(String::from_utf8_lossy(&r.stderr).contains("something.else"));
}

/// A document of the first version, whose steps carry their words (`name`) where later ones
/// carry their kind, is still read: each name is taken for the kind it stands for.
#[test]
fn a_results_document_of_the_first_version_is_read_with_its_step_names() {
    let dir = tempfile::tempdir().unwrap();
    let mut v = serde_json::to_value(crest_testkit::results::stepping_fixture()).unwrap();
    v["version"] = serde_json::json!(1);
    for (i, seg) in v["segments"].as_array_mut().unwrap().iter_mut().enumerate() {
        let seg = seg.as_object_mut().unwrap();
        seg.remove("kind");
        let name = if i == 0 {
            "rate 50/s".to_string()
        } else {
            format!("{} users", 10 * i)
        };
        seg.insert("name".into(), serde_json::json!(name));
    }
    std::fs::write(dir.path().join("results.json"), v.to_string()).unwrap();
    let r = crest().arg("report").arg(dir.path()).output().unwrap();
    assert_eq!(r.status.code(), Some(0), "{}", String::from_utf8_lossy(&r.stderr));
    let md = std::fs::read_to_string(dir.path().join("report.md")).unwrap();
    // The first name in today's words (a rate is "50/s"), the others as they were.
    assert!(md.contains("50/s") && !md.contains("rate 50/s"), "{md}");
    assert!(md.contains("10 users") && md.contains("20 users"), "{md}");
}

/// A sweep whose setup fails at its third point keeps the two points measured before it: their
/// journals are in the run directory, and `crest report` writes their report.
#[test]
fn a_sweep_whose_setup_fails_keeps_the_points_before_it() {
    let _serial = common::serial();
    let t = target_process(&[]);
    let (dir, file) = common::scenario_file(&format!(
        "target: {}\nsteps: [{{request: {{path: /}}}}]\nload: {{threads: 2, loops: 3}}\n",
        t.url.trim_end_matches('/')
    ));
    let out = dir.path().join("run");
    let r = crest()
        .arg("sweep")
        .arg(&file)
        .args(["--param", "n=1,2,3", "--setup", "test $n -lt 3", "--quiet", "--out"])
        .arg(&out)
        .output()
        .unwrap();
    let err = String::from_utf8_lossy(&r.stderr);
    assert_eq!(r.status.code(), Some(2), "{err}");
    assert!(
        err.contains("n=3 failed") && err.contains("2 point(s) measured"),
        "{err}"
    );
    // The points measured are kept whole, with the study of them.
    let study = std::fs::read_to_string(out.join("study.md")).unwrap();
    assert!(
        study.contains("| n=1 | 6 |") && study.contains("| n=2 | 6 |"),
        "{study}"
    );
    assert!(!study.contains("n=3"), "{study}");
    common::check_counts(&out.join("point-002").join("results.json"));
    assert!(!out.join("point-003").exists());
    let rep = crest().arg("report").arg(&out).output().unwrap();
    assert_eq!(rep.status.code(), Some(0), "{}", String::from_utf8_lossy(&rep.stderr));
    let v = results(&out);
    assert_eq!(common::step_names(&v), ["n=1", "n=2"]);
    let requests: u64 = v["stats"]
        .as_array()
        .unwrap()
        .iter()
        .map(|s| s["count"].as_u64().unwrap())
        .sum();
    assert_eq!(requests, 12, "2 points of 2 threads x 3 loops");
    assert_eq!(common::target_metric(&t.url, "crest_target_requests_total"), 12);
}

/// A search's verdicts are decided between probes and exist nowhere else until the end: a
/// search killed midway keeps the verdicts of the probes it finished, and the rebuilt report
/// shows them.
#[test]
fn a_killed_search_keeps_its_probe_verdicts() {
    let _serial = common::serial();
    let t = target_process(&["--workers", "2", "--service-time", "10ms"]);
    let dir = tempfile::tempdir().unwrap();
    let out = dir.path().join("find");
    let child = common::spawn_out(&["find", &t.url, "--probe", "2s", "--budget", "60s", "--quiet"], &out);
    // Wait for two probes' verdicts to be saved (after each probe's journal ends and it is
    // judged; a fixed pause after the journal's end was too short on a busy machine).
    let deadline = std::time::Instant::now() + Duration::from_secs(60);
    let judged = |dir: &Path| {
        std::fs::read_to_string(dir.join("find.json"))
            .ok()
            .and_then(|t| serde_json::from_str::<serde_json::Value>(&t).ok())
            .and_then(|v| v["probes"].as_array().map(Vec::len))
            .unwrap_or(0)
    };
    while judged(&out) < 2 {
        assert!(std::time::Instant::now() < deadline, "two probes did not finish");
        std::thread::sleep(Duration::from_millis(100));
    }
    common::kill(child);
    assert!(!out.join("results.json").exists());
    // Killed as a probe began, a search leaves that probe's journal empty (the suite once caught
    // it so): it is left out, and the probes before it stand.
    let part = |k: usize| out.join(format!("journal-{k:03}.jsonl"));
    let parts = (1..).take_while(|k| part(*k).exists()).count();
    assert!(parts >= 2, "the probes' journals");
    if std::fs::metadata(part(parts)).unwrap().len() > 0 {
        std::fs::File::create(part(parts + 1)).unwrap();
    }

    let r = crest().arg("report").arg(&out).output().unwrap();
    let stderr = String::from_utf8_lossy(&r.stderr);
    assert_eq!(r.status.code(), Some(0), "{stderr}");
    assert!(
        stderr.contains("cut off before its first line was written; left out"),
        "{stderr}"
    );
    let v = results(&out);
    let probes = v["find"]["probes"].as_array().expect("the probes' verdicts");
    assert!(probes.len() >= 2, "{probes:?}");
    // results.json keeps each probe's figures, never a sentence; the report puts them in words.
    for p in probes {
        assert!(p["measured"]["success_rps"].as_f64().unwrap() > 0.0, "{p}");
        assert!(p.get("verdict").is_none(), "{p}");
    }
    assert_eq!(
        v["find"]["ended"]["cut_short"]["probes"].as_u64(),
        Some(probes.len() as u64),
        "{}",
        v["find"]
    );
    let md = std::fs::read_to_string(out.join("report.md")).unwrap();
    assert!(md.contains("cut short"), "{md}");
    assert_eq!(md.matches("req/s ok").count(), probes.len(), "{md}");
}

/// `--summary-json` names a place the user chose, which may be a pipe or a device
/// (`/dev/stdout`, `/dev/null`): crest writes into it. Renaming a file over it, as results files
/// are written, would replace the pipe or device itself (run as root, `--summary-json
/// /dev/null` once left a regular file where /dev/null was). A pipe shows it without touching
/// the machine's devices.
#[test]
fn a_summary_named_by_a_pipe_is_written_into_it_not_over_it() {
    use std::io::Read;
    use std::os::unix::fs::FileTypeExt;
    let _serial = common::serial();
    let t = target_process(&[]);
    let dir = tempfile::tempdir().unwrap();
    let fifo = dir.path().join("summary.pipe");
    assert!(std::process::Command::new("mkfifo")
        .arg(&fifo)
        .status()
        .unwrap()
        .success());
    let reader = {
        let fifo = fifo.clone();
        std::thread::spawn(move || {
            let mut text = String::new();
            std::fs::File::open(&fifo).unwrap().read_to_string(&mut text).unwrap();
            text
        })
    };
    let out = dir.path().join("run");
    let r = crest()
        .args(["run", &t.url, "-c", "2", "-n", "20", "--quiet", "--summary-json"])
        .arg(&fifo)
        .arg("--out")
        .arg(&out)
        .output()
        .unwrap();
    let kind = std::fs::symlink_metadata(&fifo).unwrap().file_type();
    assert!(kind.is_fifo(), "the pipe was replaced: {kind:?}");
    assert_eq!(r.status.code(), Some(0), "{}", String::from_utf8_lossy(&r.stderr));
    let summary: serde_json::Value = serde_json::from_str(&reader.join().unwrap()).unwrap();
    assert_eq!(summary["requests"], 20);
}
