//! What machine a run happened on, read from /proc and /etc (Linux); blanks where unknown.

use crest_model::results::Environment;

pub fn capture() -> Environment {
    let read = |p: &str| std::fs::read_to_string(p).unwrap_or_default();
    let os = read("/etc/os-release")
        .lines()
        .find_map(|l| l.strip_prefix("PRETTY_NAME="))
        .map(|v| v.trim_matches('"').to_string())
        .unwrap_or_else(|| std::env::consts::OS.to_string());
    let cpu = read("/proc/cpuinfo")
        .lines()
        .find_map(|l| {
            l.strip_prefix("model name")
                .and_then(|r| r.split_once(':'))
                .map(|(_, v)| v.trim().to_string())
        })
        .unwrap_or_default();
    let memory_bytes = read("/proc/meminfo")
        .lines()
        .find_map(|l| l.strip_prefix("MemTotal:"))
        .and_then(|v| v.trim().trim_end_matches("kB").trim().parse::<u64>().ok())
        .map_or(0, |kb| kb * 1024);
    Environment {
        os,
        kernel: read("/proc/sys/kernel/osrelease").trim().to_string(),
        cpu,
        cores: std::thread::available_parallelism().map_or(0, |n| n.get() as u64),
        memory_bytes,
    }
}
