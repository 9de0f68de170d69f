//! cgroup v1 groups of a test's own, to hold a real process to a CPU quota or a memory limit,
//! for tests of what the monitor reads of them (throttling, OOM kills).
//!
//! Each group is made under `/sys/fs/cgroup/cpu/` or `/sys/fs/cgroup/memory/` with a name no
//! other test takes, and on drop every process in it is killed and the directory removed, so a
//! failing or panicking test leaves nothing behind. Groups a killed test runner left are
//! removed the next time one is made. Making them needs root; [`available`] says whether a
//! controller can be written, and [`require`] turns its absence into a failure under CI
//! (`CREST_CI=1`), where these tests must run, and into a skip elsewhere.

use std::path::{Path, PathBuf};
use std::sync::atomic::{AtomicU64, Ordering};
use std::time::{Duration, Instant};

/// Where v1 controllers are mounted.
const ROOT: &str = "/sys/fs/cgroup";
/// The prefix of every group a test makes.
const PREFIX: &str = "crest-test-";

/// Whether the v1 `controller` (`cpu`, `memory`) is mounted and this process may make groups
/// in it.
pub fn available(controller: &str) -> bool {
    let base = Path::new(ROOT).join(controller);
    if !base.join("cgroup.procs").is_file() {
        return false;
    }
    let probe = base.join(format!("{PREFIX}{}-probe-{}", std::process::id(), unique()));
    let made = std::fs::create_dir(&probe).is_ok();
    if made {
        let _ = std::fs::remove_dir(&probe);
    }
    made
}

/// Whether a test that needs `controller` can run: panics when it cannot under CI
/// (`CREST_CI=1`), where a missing controller is a broken machine, not a reason to skip.
pub fn require(controller: &str) -> bool {
    if available(controller) {
        return true;
    }
    assert!(
        std::env::var_os("CREST_CI").is_none_or(|v| v != "1"),
        "CI runs as root with cgroup v1 controllers, but {ROOT}/{controller} cannot be written"
    );
    eprintln!("skipped: {ROOT}/{controller} cannot be written (not root, or no v1 controller)");
    false
}

/// A group of a test's own in one v1 controller; its processes are killed and it is removed
/// when dropped.
#[derive(Debug)]
pub struct Cgroup {
    dir: PathBuf,
}

impl Cgroup {
    /// Makes a new, uniquely named group in `controller`, after removing the empty ones earlier
    /// test runs left.
    pub fn new(controller: &str) -> std::io::Result<Cgroup> {
        let base = Path::new(ROOT).join(controller);
        sweep(&base);
        let dir = base.join(format!("{PREFIX}{}-{}", std::process::id(), unique()));
        std::fs::create_dir(&dir)?;
        Ok(Cgroup { dir })
    }

    /// The group's directory.
    pub fn dir(&self) -> &Path {
        &self.dir
    }

    /// Writes `value` to the group's `file`.
    pub fn set(&self, file: &str, value: &str) -> std::io::Result<()> {
        std::fs::write(self.dir.join(file), value)
    }

    /// Moves a process into the group.
    pub fn add(&self, pid: u32) -> std::io::Result<()> {
        self.set("cgroup.procs", &pid.to_string())
    }

    /// The processes in the group now.
    pub fn pids(&self) -> Vec<u32> {
        pids(&self.dir)
    }
}

impl Drop for Cgroup {
    fn drop(&mut self) {
        empty(&self.dir);
        let _ = std::fs::remove_dir(&self.dir);
    }
}

/// A CPU group whose processes share a quota of so many cores.
#[derive(Debug)]
pub struct CpuCgroup(Cgroup);

impl CpuCgroup {
    /// A group held to `quota_cores` (0.25 is a quarter of one core) in periods of 100 ms.
    pub fn new(quota_cores: f64) -> std::io::Result<CpuCgroup> {
        let g = Cgroup::new("cpu")?;
        let period = 100_000u64;
        g.set("cpu.cfs_period_us", &period.to_string())?;
        g.set(
            "cpu.cfs_quota_us",
            &((quota_cores * period as f64).round() as u64).to_string(),
        )?;
        Ok(CpuCgroup(g))
    }

    /// Moves a process into the group.
    pub fn add(&self, pid: u32) -> std::io::Result<()> {
        self.0.add(pid)
    }

    /// The group.
    pub fn group(&self) -> &Cgroup {
        &self.0
    }
}

/// A memory group whose processes share a limit, past which the OOM killer kills one.
#[derive(Debug)]
pub struct MemoryCgroup(Cgroup);

impl MemoryCgroup {
    /// A group limited to `limit_bytes`, with swapping off where it can be turned off, so the
    /// OOM killer acts instead of the kernel swapping the group out.
    pub fn new(limit_bytes: u64) -> std::io::Result<MemoryCgroup> {
        let g = Cgroup::new("memory")?;
        g.set("memory.limit_in_bytes", &limit_bytes.to_string())?;
        let _ = g.set("memory.swappiness", "0");
        // Memory and swap together, where swap accounting is on (it must be set after the
        // memory limit, which it may not be below).
        let _ = g.set("memory.memsw.limit_in_bytes", &limit_bytes.to_string());
        Ok(MemoryCgroup(g))
    }

    /// Moves a process into the group.
    pub fn add(&self, pid: u32) -> std::io::Result<()> {
        self.0.add(pid)
    }

    /// The group.
    pub fn group(&self) -> &Cgroup {
        &self.0
    }
}

fn unique() -> String {
    static NEXT: AtomicU64 = AtomicU64::new(0);
    let nanos = std::time::SystemTime::now()
        .duration_since(std::time::UNIX_EPOCH)
        .map_or(0, |d| d.subsec_nanos());
    format!("{}-{nanos}", NEXT.fetch_add(1, Ordering::Relaxed))
}

fn pids(dir: &Path) -> Vec<u32> {
    std::fs::read_to_string(dir.join("cgroup.procs"))
        .unwrap_or_default()
        .lines()
        .filter_map(|l| l.trim().parse().ok())
        .collect()
}

/// Kills every process in the group until none is left (a process may fork as it dies), for
/// at most 10 s.
fn empty(dir: &Path) {
    let until = Instant::now() + Duration::from_secs(10);
    loop {
        let left = pids(dir);
        if left.is_empty() || Instant::now() > until {
            return;
        }
        let _ = std::process::Command::new("kill")
            .arg("-KILL")
            .args(left.iter().map(u32::to_string))
            .stderr(std::process::Stdio::null())
            .status();
        std::thread::sleep(Duration::from_millis(20));
    }
}

/// Removes the groups that test runs no longer running left with no process in them (each
/// group's name holds the pid of the run that made it). A group of a run still going may be
/// empty only for the moment before its process is added, and is left alone; one still holding
/// processes is not this run's to kill.
fn sweep(base: &Path) {
    let Ok(entries) = std::fs::read_dir(base) else { return };
    for e in entries.flatten() {
        let name = e.file_name().to_string_lossy().into_owned();
        let Some(owner) = name.strip_prefix(PREFIX).and_then(|n| n.split('-').next()) else {
            continue;
        };
        let running = owner
            .parse::<u32>()
            .is_ok_and(|pid| Path::new(&format!("/proc/{pid}")).exists());
        if !running && pids(&e.path()).is_empty() {
            let _ = std::fs::remove_dir(e.path());
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_group_kills_its_processes_and_is_removed_when_dropped() {
        if !require("cpu") {
            return;
        }
        let g = CpuCgroup::new(0.5).unwrap();
        let dir = g.group().dir().to_path_buf();
        assert_eq!(
            std::fs::read_to_string(dir.join("cpu.cfs_quota_us")).unwrap().trim(),
            "50000"
        );
        let mut child = std::process::Command::new("sleep").arg("600").spawn().unwrap();
        g.add(child.id()).unwrap();
        assert_eq!(g.group().pids(), vec![child.id()]);
        // Reaped here so the kernel can drop it from the group.
        let reaper = std::thread::spawn(move || child.wait());
        drop(g);
        assert!(!reaper.join().unwrap().unwrap().success());
        assert!(!dir.exists());
    }

    #[test]
    fn a_group_is_cleaned_up_when_its_test_panics() {
        if !require("memory") {
            return;
        }
        let dir = std::sync::Mutex::new(PathBuf::new());
        let result = std::panic::catch_unwind(|| {
            let g = MemoryCgroup::new(64 << 20).unwrap();
            *dir.lock().unwrap() = g.group().dir().to_path_buf();
            panic!("a test failing with its group made");
        });
        assert!(result.is_err());
        let dir = dir.into_inner().unwrap();
        assert!(dir.starts_with(ROOT) && !dir.exists(), "{}", dir.display());
    }
}
