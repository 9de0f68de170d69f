//! What crest itself uses, read from /proc: for the results' client figures and `/metrics`.

/// CPU seconds this process has used (Linux reports them in 1/100 s).
pub fn cpu_s() -> f64 {
    let stat = std::fs::read_to_string("/proc/self/stat").unwrap_or_default();
    // Fields after the command name, which is in parentheses and may contain spaces.
    let rest = stat.rsplit_once(')').map_or("", |(_, r)| r);
    let f: Vec<&str> = rest.split_whitespace().collect();
    let ticks = |i: usize| f.get(i).and_then(|v| v.parse::<f64>().ok()).unwrap_or(0.0);
    // utime and stime are fields 14 and 15 of the whole line: 11 and 12 after the name.
    (ticks(11) + ticks(12)) / 100.0
}

/// Peak resident memory of this process in bytes.
pub fn peak_rss_bytes() -> u64 {
    status_kb("VmHWM:")
}

/// Resident memory of this process now, in bytes.
pub fn rss_bytes() -> u64 {
    status_kb("VmRSS:")
}

fn status_kb(field: &str) -> u64 {
    std::fs::read_to_string("/proc/self/status")
        .unwrap_or_default()
        .lines()
        .find_map(|l| l.strip_prefix(field))
        .and_then(|v| v.trim().trim_end_matches("kB").trim().parse::<u64>().ok())
        .map_or(0, |kb| kb * 1024)
}

/// The CPU quota of crest's own cgroup, in cores, when it has one: a generator held to part
/// of a core is busy at that part, which its core count (rounded up to whole cores) hides.
pub fn cpu_quota_cores() -> Option<f64> {
    let m = crate::cgroup::Membership::of(std::process::id() as i32)?;
    crate::cgroup::Cgroups::default().cpu_quota(&m).map(|b| b.value)
}
