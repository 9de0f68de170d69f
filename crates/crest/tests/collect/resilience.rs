//! A collected run that outlives its collector or waits on workers that never join, and a
//! collector's memory over a long run. A module of the collect tests rather than a test binary of
//! its own.

use super::*;

/// The run directory a worker kept in `cwd` by default: `crest-results/worker-I-<timestamp>`.
fn kept_part(cwd: &Path, index: u32) -> PathBuf {
    let found: Vec<PathBuf> = std::fs::read_dir(cwd.join("crest-results"))
        .unwrap()
        .map(|e| e.unwrap().path())
        .filter(|p| {
            p.file_name()
                .unwrap()
                .to_string_lossy()
                .starts_with(&format!("worker-{index}-"))
        })
        .collect();
    assert_eq!(found.len(), 1, "{found:?}");
    found.into_iter().next().unwrap()
}

/// Each interval's requests in a run's results, by its start in seconds.
fn per_interval(r: &Value) -> std::collections::BTreeMap<u64, u64> {
    r["intervals"]
        .as_array()
        .unwrap()
        .iter()
        .map(|i| {
            (
                i["t_s"].as_f64().unwrap().round() as u64,
                i["requests"].as_u64().unwrap(),
            )
        })
        .collect()
}

/// A collector SIGKILLed mid-run: its run directory holds the merged run as far as it was
/// added up, and `crest report` rebuilds it, each of its seconds the sum of the workers' own
/// for that second. Each worker, cut off, stops, ends its part by `collector_lost` (not by its
/// duration) and keeps it by default; the parts add up to what `crest target` counted, and
/// merge into one run.
#[test]
fn a_killed_collectors_run_is_rebuilt_and_its_workers_keep_their_parts() {
    let _serial = common::serial();
    let target = common::target_process(&[]);
    let dir = tempfile::tempdir().unwrap();
    let out = dir.path().join("run");
    let mut c = Collector::start(&[&target.url, "--rate", "200", "-d", "60s"], 2, &out, &[]);
    let workers: Vec<Child> = (0..2).map(|i| c.worker_in(i, dir.path(), &[])).collect();
    common::wait_for_intervals(&out, 3);
    c.child.kill().unwrap();
    c.child.wait().unwrap();
    let mut parts = Vec::new();
    for (i, w) in workers.into_iter().enumerate() {
        let o = w.wait_with_output().unwrap();
        let err = String::from_utf8_lossy(&o.stderr);
        assert_eq!(o.status.code(), Some(2), "{err}");
        assert!(err.contains("collector_lost"), "{err}");
        let part = kept_part(dir.path(), i as u32);
        let named = part.strip_prefix(dir.path()).unwrap();
        assert!(err.contains(&named.display().to_string()), "{err}");
        let r = results(&part);
        assert_eq!(r["ended_by"], "collector_lost", "{:#}", r["ended_by"]);
        assert!(r["duration_s"].as_f64().unwrap() < 60.0);
        parts.push(part);
    }

    let printed = crest().arg("report").arg(&out).output().unwrap();
    assert_eq!(
        printed.status.code(),
        Some(0),
        "{}",
        String::from_utf8_lossy(&printed.stderr)
    );
    let whole = results(&out);
    assert_eq!(whole["ended_by"], "unfinished");
    let merged = per_interval(&whole);
    assert!(merged.len() >= 3, "{merged:?}");
    let each: Vec<_> = parts.iter().map(|p| per_interval(&results(p))).collect();
    for (t, n) in &merged {
        let of_parts: u64 = each.iter().map(|e| e.get(t).copied().unwrap_or(0)).sum();
        assert_eq!(*n, of_parts, "second {t}: the collector's against the workers' parts");
    }
    // The parts are the whole of what was sent: crest target's own count, and one run.
    let counted = common::target_metric(&target.url, "crest_target_requests_total");
    let in_parts: u64 = each.iter().flat_map(|e| e.values()).sum();
    assert_eq!(in_parts, counted);
    let kept: u64 = merged.values().sum();
    assert!(kept > 0 && kept <= in_parts, "{kept} of {in_parts}");
    let m = dir.path().join("merged");
    let o = crest()
        .args(["merge", "--quiet", "--out"])
        .arg(&m)
        .args(&parts)
        .output()
        .unwrap();
    assert_eq!(o.status.code(), Some(0), "{}", String::from_utf8_lossy(&o.stderr));
    let r = results(&m);
    assert_eq!(r["ended_by"], "collector_lost");
    assert_eq!(worker_requests(&r).iter().sum::<u64>(), counted);
}

/// A collector waits for its workers at most `--join-timeout`, then exits with 2 naming the
/// worker that never joined, tells the one that did, and leaves no run directory: nothing
/// was sent.
#[test]
fn a_collector_gives_up_on_workers_that_never_join() {
    let _serial = common::serial();
    let rt = rt();
    let server = rt.block_on(Server::start(|_, _| Reply::ok()));
    let url = server.url("/");
    let dir = tempfile::tempdir().unwrap();
    let out = dir.path().join("run");
    let c = Collector::start(&[&url, "-n", "10", "--join-timeout", "2s"], 2, &out, &[]);
    let w = c.worker(0, None, &[]);
    let (code, _, err, _) = c.finish();
    assert_eq!(code, Some(2), "{err}");
    assert!(err.contains("1 of 2 workers joined; worker 1 never joined"), "{err}");
    assert!(err.contains("--join-timeout 2s"), "{err}");
    let o = w.wait_with_output().unwrap();
    let werr = String::from_utf8_lossy(&o.stderr);
    assert_eq!(o.status.code(), Some(2), "{werr}");
    assert!(werr.contains("worker 1 never joined"), "{werr}");
    assert!(!out.exists(), "a run that never started leaves no directory");
    assert_eq!(server.received().len(), 0);
}

/// A field of /proc/PID/status, in KiB.
fn status_kib(pid: u32, field: &str) -> u64 {
    std::fs::read_to_string(format!("/proc/{pid}/status"))
        .unwrap()
        .lines()
        .find_map(|l| l.strip_prefix(field))
        .and_then(|v| v.trim_start_matches(':').split_whitespace().next())
        .unwrap()
        .parse()
        .unwrap()
}

/// The collector's memory does not grow with the run: four workers of a scenario of 64 request
/// names, its resident set when its journal has 30 merged seconds is within 4 MiB of what it
/// was at 10 (measured: 20 KiB). Keeping each worker's intervals to the end, as it once did,
/// grew it by 20 MiB over those 20 seconds. The first request of each name is slow
/// (1.5 s), so every latency histogram of the run has grown to its size before the first
/// sample, rather than on an outlier between the two.
#[test]
fn the_collectors_memory_stays_flat_over_a_long_run() {
    let _serial = common::serial();
    let rt = rt();
    let seen = Mutex::new(std::collections::HashSet::new());
    let server = rt.block_on(Server::start(move |r, _| {
        if seen.lock().unwrap().insert(r.path.clone()) {
            Reply::delayed(Duration::from_millis(1500))
        } else {
            Reply::ok()
        }
    }));
    // Enough names that what the old collector kept (each worker's seconds, every name's
    // histograms in each) grew by about 10 MiB from the 10th second to the 30th, far above what
    // the allocator and the run's own totals move by.
    let steps: String = (0..64).map(|i| format!("  - request: {{path: /n{i}}}\n")).collect();
    let (dir, file) = scenario_file(&format!(
        "target: http://{}\nsteps:\n{steps}load: {{rate: 20, duration: 33s}}\n",
        server.addr
    ));
    let out = dir.path().join("run");
    let c = Collector::start(&[file.to_str().unwrap()], 4, &out, &[]);
    let workers: Vec<Child> = (0..4).map(|i| c.worker_in(i, dir.path(), &["--no-keep"])).collect();
    let pid = c.child.id();
    common::wait_for_intervals(&out, 10);
    let at_10 = status_kib(pid, "VmRSS");
    common::wait_for_intervals(&out, 30);
    let at_30 = status_kib(pid, "VmRSS");
    for w in workers {
        ok(w);
    }
    let (code, s, err, r) = c.finish();
    assert_eq!(code, Some(0), "{err}");
    eprintln!("collector VmRSS: {at_10} KiB at 10 s, {at_30} KiB at 30 s");
    assert!(
        at_30 <= at_10 + 4096,
        "the collector grew from {at_10} KiB at 10 s to {at_30} KiB at 30 s"
    );
    assert_eq!(s["requests"], server.received().len() as u64);
    assert_eq!(r["names"].as_array().unwrap().len(), 64);
    assert!(!dir.path().join("crest-results").exists(), "--no-keep kept nothing");
}
