//! `Work::Spin` (issue 34): CPU-bound workers on too few cores are capped at cores / service
//! time, checked against what the client saw and the target's own counters. In a test binary of
//! its own, so that only this target's threads are in the process when their cores are read.
#![allow(clippy::unwrap_used)]

mod support;

use crest_demo::{spawn, Config, Work};
use rustix::thread::{sched_getaffinity, sched_setaffinity, CpuSet};
use std::net::TcpStream;
use std::time::{Duration, Instant};
use support::{exchange, metric};

/// The first core this process may run on.
fn first_core() -> usize {
    let allowed = sched_getaffinity(None).unwrap();
    (0..CpuSet::MAX_CPU).find(|&c| allowed.is_set(c)).unwrap()
}

/// The cores a thread of this process named `name` may run on, from /proc, once it has started.
fn allowed_cores_of_thread(name: &str) -> String {
    let deadline = Instant::now() + Duration::from_secs(5);
    loop {
        for task in std::fs::read_dir("/proc/self/task").unwrap() {
            let dir = task.unwrap().path();
            if std::fs::read_to_string(dir.join("comm")).unwrap_or_default().trim() == name {
                let status = std::fs::read_to_string(dir.join("status")).unwrap();
                return status
                    .lines()
                    .find_map(|l| l.strip_prefix("Cpus_allowed_list:"))
                    .unwrap()
                    .trim()
                    .to_string();
            }
        }
        assert!(Instant::now() < deadline, "no thread named {name}");
        std::thread::sleep(Duration::from_millis(10));
    }
}

/// 4 spinning workers of 20 ms of CPU, all on one core, serve at most 1 / 20 ms = 50 requests a
/// second, where sleeping workers would serve 200: the core is the bottleneck, not the workers.
/// A ceiling only, so that a loaded machine cannot fail it.
#[test]
fn spinning_workers_on_one_core_serve_at_most_one_core_over_the_service_time() {
    let config = Config {
        workers: 4,
        service_time: Duration::from_millis(20),
        work: Work::Spin,
        queue: 64,
        ..Default::default()
    };
    let core = first_core();
    // Started from a thread pinned to one core: its runtime and worker threads inherit that.
    let addr = std::thread::spawn(move || {
        let mut one = CpuSet::new();
        one.set(core);
        sched_setaffinity(None, &one).unwrap();
        spawn("127.0.0.1:0".parse().unwrap(), config).unwrap()
    })
    .join()
    .unwrap();
    assert_eq!(allowed_cores_of_thread("target-worker-3"), core.to_string());

    let clients = 8;
    let run = Duration::from_secs(3);
    let start = Instant::now();
    let codes: Vec<u16> = (0..clients)
        .map(|_| {
            std::thread::spawn(move || {
                let mut codes = Vec::new();
                while start.elapsed() < run {
                    codes.push(exchange(TcpStream::connect(addr).unwrap(), "/").unwrap());
                }
                codes
            })
        })
        .collect::<Vec<_>>()
        .into_iter()
        .flat_map(|h| h.join().unwrap())
        .collect();
    let elapsed = start.elapsed().as_secs_f64();
    let count = |code| codes.iter().filter(|c| **c == code).count() as f64;
    let ok = count(200);
    assert!(ok > 0.0, "nothing served: {codes:?}");
    assert!(
        ok / elapsed <= 60.0,
        "{ok} served in {elapsed:.2} s: {:.1}/s on one core, above 1 / 20 ms = 50/s",
        ok / elapsed
    );
    assert_eq!(metric(addr, "crest_target_requests_total"), codes.len() as f64);
    assert_eq!(metric(addr, "crest_target_served_total"), ok);
    assert_eq!(metric(addr, "crest_target_rejected_total"), count(503));
    assert_eq!(metric(addr, "crest_target_timeouts_total"), count(500));
    assert_eq!(count(200) + count(503) + count(500), codes.len() as f64, "{codes:?}");
    // Each job held its worker at least its 20 ms of CPU, in wall time.
    let busy = metric(addr, "crest_target_worker_busy_seconds_total");
    assert!(busy >= ok * 0.020 * 0.99, "{busy} s busy for {ok} jobs");
}
