//! The bottleneck against real servers, each with a cause the test set up itself (issue 34):
//! one core, a quarter-core CPU quota, eight workers, PostgreSQL on one core, a memory limit, a
//! generator held to a fraction of a core, a cap on connections. Each run steps its load past
//! that limit while crest watches the server, and the summary must name the cause, quote the
//! figures the monitor recorded (recomputed here from results.json), and size the process from
//! what it used. Kinds, subjects and equalities with what was recorded are asserted, never
//! timings: a busy machine changes how much is served, not what limits it.
#![allow(clippy::unwrap_used)]

mod common;

use common::{crest, pg_url, run_from, target_metric, target_process};
use crest_analysis::figures::{SegmentAnalysis, WorkUnit};
use crest_testkit::cgroup::{require, Cgroup, CpuCgroup, MemoryCgroup};
use serde_json::Value;
use std::process::Command;

const MIB: f64 = 1024.0 * 1024.0;

/// A run's conclusions read three ways: the summary JSON it printed, its results.json, and
/// the analysis of that document.
struct Seen {
    run: common::Run,
    summary: Value,
    results: Value,
    analysis: crest_analysis::Analysis,
}

/// A closed-model run over the users `levels`, each held for `each`, watching the target
/// `pid` every 250 ms (and the host when `host`), as most cases step theirs.
fn stepped(crest: Command, url: &str, pid: u32, levels: &str, each: &str, host: bool) -> Seen {
    let pid = pid.to_string();
    let mut args = vec![
        "-c",
        levels,
        "-d",
        each,
        "--monitor-pid",
        &pid,
        "--monitor-interval",
        "250ms",
    ];
    if !host {
        args.push("--no-monitor-host");
    }
    seen(run_from(crest, url, &args))
}

fn seen(run: common::Run) -> Seen {
    let summary = run.summary();
    let results = run.results();
    let typed: crest_model::results::Results = serde_json::from_value(results.clone()).unwrap();
    let analysis = crest_analysis::analyze(&typed).unwrap();
    // Shown on the test's output, to be read with `--nocapture`.
    eprintln!(
        "bottleneck: {}\nsizing: {}\nevents: {}",
        summary["bottleneck"], summary["sizing"], summary["events"]
    );
    for g in analysis
        .segments
        .iter()
        .chain(&analysis.iteration_segments)
        .filter(|g| g.requests > 0)
    {
        eprintln!(
            "step {:?}: {} requests, {:.1}/s successful, p95 {:.1} ms, {:.2}% failed",
            g.load(),
            g.requests,
            g.success_rps,
            g.success_latency_ms.p95,
            g.error_rate * 100.0
        );
    }
    Seen {
        run,
        summary,
        results,
        analysis,
    }
}

impl Seen {
    fn bottleneck(&self) -> &Value {
        &self.summary["bottleneck"]
    }

    /// What the run printed and concluded, for a failing assertion's message.
    fn why(&self) -> String {
        format!(
            "bottleneck: {:#}\nsizing: {:#}\nevents: {:#}\nsegments: {:#}\nstderr:\n{}",
            self.summary["bottleneck"],
            self.summary["sizing"],
            self.summary["events"],
            self.summary["segments"],
            self.run.stderr
        )
    }

    /// The steps the answers are counted in, as the bottleneck and sizing read them.
    fn steps(&self) -> &[SegmentAnalysis] {
        match self.analysis.unit {
            WorkUnit::Iterations => &self.analysis.iteration_segments,
            WorkUnit::Requests | WorkUnit::Transactions => &self.analysis.segments,
        }
    }

    /// The loaded step at `load` (`{"users": 4}`, `{"rate": 50.0}`).
    fn step_at(&self, load: &Value) -> &SegmentAnalysis {
        self.steps()
            .iter()
            .find(|g| g.requests > 0 && serde_json::to_value(g.load()).unwrap() == *load)
            .unwrap_or_else(|| panic!("no step at {load}\n{}", self.why()))
    }

    /// The one series of `metric` of a watched process.
    fn process_series(&self, metric: &str) -> &Value {
        let m = &self.results["monitor"];
        let found: Vec<&Value> = m["series"]
            .as_array()
            .unwrap()
            .iter()
            .filter(|s| {
                s["key"]["metric"] == metric
                    && m["sources"][s["source"].as_u64().unwrap() as usize]["kind"] == "process"
            })
            .collect();
        assert_eq!(found.len(), 1, "one {metric} series: {:#}", m["sources"]);
        found[0]
    }

    /// A step's steady window, as the analysis bounds it: never past the step's end nor into
    /// the next step.
    fn window(&self, g: &SegmentAnalysis) -> (f64, f64) {
        let next = self
            .steps()
            .get(g.index + 1)
            .map_or(f64::INFINITY, |n| n.start_s - 1e-6);
        (
            g.steady_start_s,
            g.steady_end_s.min(g.end_s.max(g.steady_start_s)).min(next),
        )
    }

    /// A series' values over a step's steady window.
    fn steady(&self, series: &Value, g: &SegmentAnalysis) -> Vec<f64> {
        let (from, to) = self.window(g);
        points(series)
            .into_iter()
            .filter(|(t, _)| *t >= from && *t <= to)
            .map(|(_, v)| v)
            .collect()
    }

    /// Checks a resource bottleneck's figures against the series they come from: `used` is the
    /// mean over the knee's steady window, `samples` how many, the step below likewise, and the
    /// share is used over the ceiling.
    fn check_resource(&self, metric: &str, ceiling: f64) -> &Value {
        let b = self.bottleneck();
        let fig = &b["figures"];
        let series = self.process_series(metric);
        let v = self.steady(series, self.step_at(&b["at"]));
        assert!(v.len() >= 3, "{} samples at the knee\n{}", v.len(), self.why());
        assert_eq!(fig["samples"].as_u64(), Some(v.len() as u64), "{}", self.why());
        close(fig["used"].as_f64().unwrap(), mean(&v), "figures.used");
        assert_eq!(fig["ceiling"].as_f64(), Some(ceiling), "{}", self.why());
        close(fig["share"].as_f64().unwrap(), mean(&v) / ceiling, "figures.share");
        // The cores' busy time, when quoted, is the mean of its own series over the same window.
        let busy = fig["cores_busy_percent"].as_f64();
        if let Some(busy) = busy {
            let b = self.steady(
                self.process_series("process_cores_busy_percent"),
                self.step_at(&b["at"]),
            );
            close(busy, mean(&b), "figures.cores_busy_percent");
        }
        // At its ceiling by its own samples, by its cgroup's throttling, or by its cores' being
        // full with it using at least half of them.
        let share = fig["share"].as_f64().unwrap();
        let throttled = fig["throttled_percent"].as_f64();
        assert!(
            share >= 0.9 || throttled.is_some_and(|t| t >= 50.0) || share >= 0.5 && busy.is_some_and(|b| b >= 90.0),
            "{}",
            self.why()
        );
        let below = &fig["below"];
        assert!(below.is_object(), "the step below is quoted\n{}", self.why());
        let under = self.steady(series, self.step_at(&below["load"]));
        close(below["used"].as_f64().unwrap(), mean(&under), "figures.below.used");
        assert!(below["share"].as_f64().unwrap() < 0.9, "{}", self.why());
        fig
    }

    /// Checks the sizing of `subject` against what it used: the CPU request is its mean CPU at
    /// the load requests are sized for, rounded up to the next 10 millicores, and the memory
    /// request covers its resident peak up to there, rounded up to the next 16 MiB.
    fn check_sizing(&self, subject: &str) -> &Value {
        let z = self.summary["sizing"]
            .as_array()
            .unwrap()
            .iter()
            .find(|z| z["subject"] == subject)
            .unwrap_or_else(|| panic!("no sizing of {subject}\n{}", self.why()));
        let basis = &z["basis"];
        let g = self.step_at(&basis["request_at"]);
        match &self.analysis.capacity.optimal {
            Some(o) => {
                assert_eq!(basis["optimum"], true);
                assert_eq!(o.segment, g.index, "requests are sized at the optimum\n{}", self.why());
            }
            None => assert_eq!(basis["optimum"], false),
        }
        let cpu = mean(&self.steady(self.process_series("process_cpu_percent"), g));
        close(
            basis["cpu_at_request_percent"].as_f64().unwrap(),
            cpu,
            "cpu_at_request_percent",
        );
        let m = z["cpu_request_millicores"].as_f64().unwrap();
        assert!(
            m >= cpu * 10.0 - 1e-6 && m < (cpu * 10.0).max(10.0) + 10.0,
            "{m}m requested for {cpu}% of a core\n{}",
            self.why()
        );
        let first = self
            .steps()
            .iter()
            .filter(|s| s.requests > 0)
            .min_by(|a, b| a.load_value().total_cmp(&b.load_value()))
            .unwrap();
        let (_, end) = self.window(g);
        // A group of processes (postgres by name) is sized on its private memory: its resident
        // memory counts each shared page once per process.
        let memory = if basis["memory_of_group"] == true {
            "process_private_memory_bytes"
        } else {
            "process_resident_memory_bytes"
        };
        let peak = points(self.process_series(memory))
            .into_iter()
            .filter(|(t, _)| *t >= first.start_s && *t <= end)
            .map(|(_, v)| v)
            .fold(0.0, f64::max);
        assert!(peak > 0.0);
        close(
            basis["resident_at_request_bytes"].as_f64().unwrap(),
            peak,
            "resident_at_request_bytes",
        );
        let mib = z["memory_request_mib"].as_f64().unwrap() * MIB;
        assert!(
            mib >= peak && mib < peak + 16.0 * MIB,
            "{mib} bytes requested for a peak of {peak}\n{}",
            self.why()
        );
        z
    }
}

fn points(series: &Value) -> Vec<(f64, f64)> {
    series["points"]
        .as_array()
        .unwrap()
        .iter()
        .map(|p| (p[0].as_f64().unwrap(), p[1].as_f64().unwrap()))
        .collect()
}

fn mean(v: &[f64]) -> f64 {
    v.iter().sum::<f64>() / v.len() as f64
}

/// Equal within floating-point rounding (a mean summed in the same order is equal to the bit).
fn close(got: f64, want: f64, what: &str) {
    assert!(
        (got - want).abs() <= 1e-9 * want.abs().max(1.0),
        "{what}: {got} quoted, {want} measured"
    );
}

/// The cores this test may use, from the kernel's list (`0-1`, `2,5-7`).
fn cores() -> Vec<u32> {
    let status = std::fs::read_to_string("/proc/self/status").unwrap();
    let list = status
        .lines()
        .find_map(|l| l.strip_prefix("Cpus_allowed_list:"))
        .unwrap()
        .trim();
    let mut out = Vec::new();
    for part in list.split(',') {
        match part.split_once('-') {
            Some((a, b)) => out.extend(a.parse::<u32>().unwrap()..=b.parse().unwrap()),
            None => out.push(part.parse().unwrap()),
        }
    }
    out
}

/// Pins every thread of `pid` to `core`.
fn pin(pid: u32, core: u32) {
    let out = Command::new("taskset")
        .args(["-a", "-p", "-c", &core.to_string(), &pid.to_string()])
        .output()
        .unwrap();
    assert!(out.status.success(), "{}", String::from_utf8_lossy(&out.stderr));
}

/// A CPU group weighted far above the machine's other work (a build, other tests, each in a
/// group of equal weight by the kernel's autogroups), with no quota: a server whose CPU is
/// judged against its core, and the generator loading it, get the cores they ask for, so that
/// what is tested is that crest finds the core the limit, not that the machine was idle.
struct Favoured(Cgroup);

impl Favoured {
    fn new() -> Favoured {
        let g = Cgroup::new("cpu").unwrap();
        g.set("cpu.shares", "65536").unwrap();
        Favoured(g)
    }

    fn add(&self, pid: u32) {
        self.0.add(pid).unwrap();
    }

    /// `crest`, started in the group (and on `core` when one is given, another than the
    /// server's).
    fn crest(&self, core: Option<u32>) -> Command {
        let mut cmd = in_group(&self.0);
        if let Some(c) = core {
            cmd.args(["taskset", "-c", &c.to_string()]);
        }
        cmd.arg(env!("CARGO_BIN_EXE_crest"));
        cmd
    }
}

impl Drop for Favoured {
    /// Moves every process still in the group back to the root group, so that the group's own
    /// drop kills none of them (a shared PostgreSQL's backends and workers among them).
    fn drop(&mut self) {
        let root = self.0.dir().parent().unwrap().join("cgroup.procs");
        for _ in 0..100 {
            let left = self.0.pids();
            if left.is_empty() {
                return;
            }
            for pid in left {
                let _ = std::fs::write(&root, pid.to_string());
            }
        }
    }
}

/// `sh`, moving itself into `group` and then running the command its arguments name.
fn in_group(group: &Cgroup) -> Command {
    let mut cmd = Command::new("sh");
    cmd.args([
        "-c",
        &format!(
            "echo $$ > {} && exec \"$@\"",
            group.dir().join("cgroup.procs").display()
        ),
        "sh",
    ])
    .stdin(std::process::Stdio::null());
    cmd
}

/// A `crest target` watched by pid, as the reports name it: by its name, not its pid, which
/// differs from run to run.
const TARGET: &str = "crest target";

/// A scenario of one request to `target`'s `/`, in open-model steps of `rates` arrivals per
/// second, each held `hold`.
fn rate_steps(target: &str, rates: &[u32], hold: &str) -> String {
    let stages: Vec<String> = rates
        .iter()
        .map(|r| format!("    - {{ramp_to: {r}, over: 0s}}\n    - {{hold: {hold}}}\n"))
        .collect();
    format!(
        "target: {}\nsteps: [{{request: {{path: /}}}}]\nload:\n  rate_stages:\n{}",
        target.trim_end_matches('/'),
        stages.concat()
    )
}

/// Runs the scenario `text` with `crest run FILE ARGS...` started by `cmd`.
fn run_text(cmd: Command, text: &str, args: &[&str]) -> common::Run {
    let (_dir, file) = common::scenario_file(text);
    run_from(cmd, file.to_str().unwrap(), args)
}

/// A run of the CPU-bound server `pid` (see below) in open-model steps of 50, 100 and 300 a
/// second, crest on the second core, whose bottleneck must be the server's CPU.
fn spun(favoured: &Favoured, cores: &[u32], pid: u32, url: &str) -> Seen {
    let s = seen(run_text(
        favoured.crest(cores.get(1).copied()),
        &rate_steps(url, &[50, 100, 300], "4s"),
        &["--monitor-pid", &pid.to_string(), "--monitor-interval", "250ms"],
    ));
    let b = s.bottleneck();
    assert_eq!(b["kind"], "cpu", "{}", s.why());
    assert_eq!(b["subject"], TARGET, "{}", s.why());
    assert_eq!(b["figures"]["resource"], "cpu", "{}", s.why());
    s
}

/// A CPU-bound server (4 workers spinning 5 ms of CPU per request) pinned to one core serves at
/// most 200 requests a second. Stepped in the open model from a quarter of that to past it (a
/// closed user would keep the core busy alone), the core is the answer: `cpu`, naming the
/// server, with the mean CPU of the step that broke against the 100% of its one core, below 90%
/// at the step before.
#[test]
fn a_cpu_bound_server_on_one_core_is_bound_by_its_cpu() {
    let _serial = common::serial();
    if !require("cpu") {
        return;
    }
    let cores = cores();
    let favoured = Favoured::new();
    let t = target_process(&["--work", "spin", "--workers", "4", "--service-time", "5ms"]);
    let pid = t.child.id();
    pin(pid, cores[0]);
    favoured.add(pid);
    let s = spun(&favoured, &cores, pid, &t.url);
    s.check_resource("process_cpu_percent", 100.0);
    assert_eq!(s.bottleneck()["at"]["rate"].as_f64(), Some(300.0), "{}", s.why());
    s.check_sizing(TARGET);
}

/// A child killed and waited for however the test ends.
struct Reaped(std::process::Child);

impl Drop for Reaped {
    fn drop(&mut self) {
        let _ = self.0.kill();
        let _ = self.0.wait();
    }
}

/// The same server on a core that other work shares: a spinning process pinned beside it, in a
/// CPU group weighted a third of the server's, keeps a quarter of the core, so the server's own
/// samples stay near three quarters of it. The core is still the answer (it had no more to give),
/// quoted with how busy it was in all, and said to be full with other work.
#[test]
fn a_cpu_bound_server_on_a_core_other_work_shares_is_bound_by_its_cpu() {
    let _serial = common::serial();
    if !require("cpu") {
        return;
    }
    let cores = cores();
    if cores.len() < 2 {
        return;
    }
    let favoured = Favoured::new();
    let server = Cgroup::new("cpu").unwrap();
    server.set("cpu.shares", "24576").unwrap();
    let other = Cgroup::new("cpu").unwrap();
    other.set("cpu.shares", "8192").unwrap();
    let t = target_process(&["--work", "spin", "--workers", "4", "--service-time", "5ms"]);
    let pid = t.child.id();
    pin(pid, cores[0]);
    server.add(pid).unwrap();
    let _spinner = Reaped(
        in_group(&other)
            .args([
                "taskset",
                "-c",
                &cores[0].to_string(),
                "sh",
                "-c",
                "while :; do :; done",
            ])
            .spawn()
            .unwrap(),
    );
    let s = spun(&favoured, &cores, pid, &t.url);
    let (b, fig) = (s.bottleneck(), s.check_resource("process_cpu_percent", 100.0));
    let share = fig["share"].as_f64().unwrap();
    assert!(share < 0.9, "the spinner kept its quarter of the core: {}", s.why());
    assert!(fig["cores_busy_percent"].as_f64().unwrap() >= 90.0, "{}", s.why());
    let said = b["sentence"].as_str().unwrap();
    assert!(said.contains("% busy in all (other work took the rest)"), "{said}");
}

/// The same server in a cgroup held to a quarter of a core serves at most 50 a second: the
/// quota is the answer, against 25% of a core, with the periods it was throttled in.
#[test]
fn a_cpu_bound_server_under_a_quarter_core_quota_is_bound_by_its_quota() {
    let _serial = common::serial();
    if !require("cpu") {
        return;
    }
    let g = CpuCgroup::new(0.25).unwrap();
    let favoured = Favoured::new();
    let t = target_process(&["--work", "spin", "--workers", "4", "--service-time", "5ms"]);
    let pid = t.child.id();
    g.add(pid).unwrap();
    let s = seen(run_text(
        favoured.crest(None),
        &rate_steps(&t.url, &[10, 20, 80], "4s"),
        &["--monitor-pid", &pid.to_string(), "--monitor-interval", "250ms"],
    ));
    let b = s.bottleneck();
    assert_eq!(b["kind"], "cpu_quota", "{}", s.why());
    assert_eq!(b["subject"], TARGET, "{}", s.why());
    let fig = s.check_resource("process_cpu_percent", 25.0);
    assert_eq!(fig["resource"], "cpu_quota");
    let throttled = s.steady(s.process_series("process_cpu_throttled_percent"), s.step_at(&b["at"]));
    let quoted = fig["throttled_percent"].as_f64().unwrap();
    close(quoted, mean(&throttled), "figures.throttled_percent");
    assert!(quoted > 0.0, "{}", s.why());
    s.check_sizing(TARGET);
}

/// A server of 8 workers that each sleep 40 ms per request (waiting on something no monitor
/// sees) serves 8 at once: stepped from 2 users to 32, no watched resource nears a ceiling, and
/// Little's law says 8, within one.
#[test]
fn a_server_of_eight_sleeping_workers_is_bound_by_its_concurrency() {
    let _serial = common::serial();
    if !require("cpu") {
        return;
    }
    let favoured = Favoured::new();
    let t = target_process(&["--workers", "8", "--service-time", "40ms", "--queue", "256"]);
    let pid = t.child.id();
    let s = stepped(favoured.crest(None), &t.url, pid, "2,4,8,16,32", "3s", false);
    let b = s.bottleneck();
    assert_eq!(b["kind"], "concurrency", "{}", s.why());
    assert_eq!(b["subject"], "service", "{}", s.why());
    let fig = &b["figures"];
    let n = fig["concurrency"].as_u64().unwrap();
    assert!((7..=9).contains(&n), "{}", s.why());
    assert_eq!(fig["watched"], true);
    // Little's law on the run's own figures: the best step's throughput times the lightest
    // step's mean time.
    let best = s.analysis.segments.iter().map(|g| g.success_rps).fold(0.0, f64::max);
    let lightest = s.step_at(&fig["lightest"]);
    assert_eq!(fig["lightest"]["users"], 2);
    close(fig["best_rps"].as_f64().unwrap(), best, "figures.best_rps");
    close(
        fig["service_ms"].as_f64().unwrap(),
        lightest.success_latency_ms.mean,
        "figures.service_ms",
    );
    close(
        fig["exact"].as_f64().unwrap(),
        best * lightest.success_latency_ms.mean / 1000.0,
        "figures.exact",
    );
    s.check_sizing(TARGET);
}

/// Every postgres process pinned to one core and favoured, with its affinity and CPU group put
/// back when dropped (backends started meanwhile inherit both from the postmaster, and end with
/// their connections).
struct PinnedPostgres(Vec<(u32, String)>, Favoured);

impl PinnedPostgres {
    fn to(core: u32, favoured: Favoured) -> PinnedPostgres {
        let out = Command::new("pgrep").args(["-x", "postgres"]).output().unwrap();
        let pids: Vec<u32> = String::from_utf8_lossy(&out.stdout)
            .lines()
            .filter_map(|l| l.trim().parse().ok())
            .collect();
        assert!(!pids.is_empty(), "no postgres process is running");
        let mut was = Vec::new();
        for pid in pids {
            let status = std::fs::read_to_string(format!("/proc/{pid}/status")).unwrap_or_default();
            let Some(list) = status.lines().find_map(|l| l.strip_prefix("Cpus_allowed_list:")) else {
                continue;
            };
            was.push((pid, list.trim().to_string()));
            pin(pid, core);
            let _ = favoured.0.add(pid);
        }
        PinnedPostgres(was, favoured)
    }
}

impl Drop for PinnedPostgres {
    fn drop(&mut self) {
        for (pid, list) in &self.0 {
            let _ = Command::new("taskset")
                .args(["-a", "-p", "-c", list, &pid.to_string()])
                .output();
        }
    }
}

/// PostgreSQL on one core, its queries CPU-heavy (a sum over 100,000 generated rows, some
/// 20-30 ms of CPU each), driven by crest's SQL steps directly (no HTTP service in front):
/// users with a think time between queries, stepped past what one core serves. Its CPU is the
/// answer, named `postgres`, as seed 001's author found. Steps of 6 s: at 32 users a query takes
/// up to 0.8 s, and over 4 s steps the fall past the peak (57/s to 50/s) was once within the
/// steps' own noise on a busy machine, leaving no knee to judge.
#[test]
fn postgresql_on_one_core_with_cpu_heavy_queries_is_bound_by_its_cpu() {
    let _serial = common::serial();
    let Some(url) = pg_url() else { return };
    if !require("cpu") {
        return;
    }
    let cores = cores();
    let pinned = PinnedPostgres::to(cores[0], Favoured::new());
    let text = format!(
        "database: {{url: \"{url}\"}}\nsteps:\n  - sql: {{name: sum, query: \"SELECT sum(i) FROM generate_series(1, 100000) i\"}}\n  - think: 50ms\nload:\n  stages:\n{}",
        [1, 2, 4, 8, 16, 32]
            .iter()
            .map(|u| format!("    - {{ramp_to: {u}, over: 0s}}\n    - {{hold: 6s}}\n"))
            .collect::<String>()
    );
    let s = seen(run_text(
        pinned.1.crest(cores.get(1).copied()),
        &text,
        // Every 500 ms: a group of a dozen backends is read one process after another, and
        // over 250 ms the reads' own spread moves a sample by a fifth.
        &["--monitor-process", "postgres", "--monitor-interval", "500ms"],
    ));
    let b = s.bottleneck();
    assert_eq!(b["kind"], "cpu", "{}", s.why());
    assert_eq!(b["subject"], "postgres", "{}", s.why());
    s.check_resource("process_cpu_percent", 100.0);
    let z = s.check_sizing("postgres");
    assert_eq!(z["basis"]["memory_of_group"], true, "{}", s.why());
}

/// A server that keeps 64 KiB of every request, in a memory cgroup of 96 MiB, is OOM-killed
/// under load: the event names it, and report.md's key findings say so.
#[test]
fn a_server_that_leaks_into_its_memory_limit_is_found_oom_killed() {
    let _serial = common::serial();
    if !require("memory") {
        return;
    }
    let g = MemoryCgroup::new(96 << 20).unwrap();
    let t = target_process(&["--leak-bytes", "65536", "--service-time", "5ms"]);
    let pid = t.child.id();
    g.add(pid).unwrap();
    let s = stepped(crest(), &t.url, pid, "1,2,4", "4s", true);
    let killed: Vec<&Value> = s.summary["events"]
        .as_array()
        .unwrap()
        .iter()
        .filter(|e| e["kind"] == "oom_killed")
        .collect();
    assert_eq!(killed.len(), 1, "{}", s.why());
    let e = killed[0];
    assert_eq!(e["subject"], TARGET);
    assert_eq!(e["pid"].as_u64(), Some(pid as u64));
    assert_eq!(e["memory_limit_bytes"].as_f64(), Some((96u64 << 20) as f64));
    assert!(e["oom_kills"].as_u64().unwrap() >= 1);
    let at = e["at_s"].as_f64().unwrap();
    assert!(at > 0.0 && at <= s.summary["duration_s"].as_f64().unwrap_or(f64::MAX) + 1.0);
    let sentence = e["sentence"].as_str().unwrap();
    let md = std::fs::read_to_string(s.run.dir.path().join("report.md")).unwrap();
    let findings = md
        .split("## ")
        .find(|p| p.starts_with("Key findings"))
        .unwrap_or_else(|| panic!("{md}"));
    assert!(findings.contains(sentence), "{sentence}\n{md}");
    assert!(sentence.contains(TARGET), "{sentence}");
}

/// crest held to a tenth of a core, against a server that answers at once: crest limited the
/// run, and says so rather than blaming the server. It reads its own quota, so its busy CPU is
/// counted against a tenth of a core, not the machine's two.
#[test]
fn crest_held_to_a_tenth_of_a_core_is_the_bottleneck() {
    let _serial = common::serial();
    if !require("cpu") {
        return;
    }
    let g = CpuCgroup::new(0.1).unwrap();
    // Held to its quota, but weighted above the machine's other work, so that it gets all of it.
    g.group().set("cpu.shares", "65536").unwrap();
    let t = target_process(&["--workers", "64", "--service-time", "0ms"]);
    let pid = t.child.id();
    let mut cmd = in_group(g.group());
    cmd.arg(env!("CARGO_BIN_EXE_crest"));
    let s = stepped(cmd, &t.url, pid, "1,4,16", "3s", true);
    let b = s.bottleneck();
    assert_eq!(b["kind"], "load_generator", "{}", s.why());
    assert_eq!(b["subject"], "crest", "{}", s.why());
    // crest read its own quota, and counted its CPU against it: the CPU-seconds it recorded over
    // the run's time, of a tenth of a core.
    let own = &s.results["client"];
    assert_eq!(own["cpu_quota_cores"].as_f64(), Some(0.1), "{own}");
    let busy = b["figures"]["client"]
        .as_array()
        .unwrap()
        .iter()
        .find_map(|c| c.get("busy_cpu"))
        .unwrap_or_else(|| panic!("crest's CPU is not the limit quoted\n{}", s.why()));
    assert_eq!(busy["cpu_s"], own["cpu_s"], "{}", s.why());
    assert_eq!(busy["threads"], 1, "a tenth of a core is less than one thread's");
    close(
        busy["share"].as_f64().unwrap(),
        own["cpu_s"].as_f64().unwrap() / busy["duration_s"].as_f64().unwrap() / 0.1,
        "busy_cpu.share",
    );
    assert!(!s.summary["client_bound"].as_array().unwrap().is_empty());
}

/// A server that resets connections past 10 open, stepped from 5 users to 20: the refusals
/// are the answer, and the count quoted is the one the server kept.
#[test]
fn a_server_that_refuses_connections_past_ten_is_bound_by_connections() {
    let _serial = common::serial();
    if !require("cpu") {
        return;
    }
    let favoured = Favoured::new();
    let t = target_process(&["--max-connections", "10", "--service-time", "5ms", "--workers", "64"]);
    let pid = t.child.id();
    let s = stepped(favoured.crest(None), &t.url, pid, "2,5,20", "3s", false);
    let b = s.bottleneck();
    assert_eq!(b["kind"], "connections", "{}", s.why());
    assert_eq!(b["subject"], "service", "{}", s.why());
    assert_eq!(b["at"]["users"], 20, "{}", s.why());
    let fig = &b["figures"];
    let refused = target_metric(&t.url, "crest_target_refused_connections_total");
    assert_eq!(fig["refused"].as_u64(), Some(refused), "{}", s.why());
    assert_eq!(fig["clean_at"]["users"], 5, "{}", s.why());
    let in_hand = fig["in_hand"].as_f64().unwrap();
    assert!((9.0..=11.0).contains(&in_hand.round()), "{}", s.why());
    s.check_sizing(TARGET);
}
