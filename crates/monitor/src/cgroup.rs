//! What a process's control groups bound it by: CPU quota, the share of periods it was
//! throttled, memory limit and OOM kills, from cgroup v1 or v2.
//!
//! A service is often slow not because the machine is busy but because its cgroup is: a CPU
//! quota of a quarter core throttles it at 25% of one core on an idle 32-core machine, and a
//! memory limit kills it long before the host runs short. These are the ceilings crest judges
//! its series against when it names a bottleneck. Kubernetes nodes run v2 today; older hosts
//! (and this project's CI) mount v1 controllers one directory each. Every reader takes the
//! filesystem root and the text of `/proc/PID/cgroup`, so v2 is tested from fixture directories.
//! A file that is missing or unreadable is "not known", never an error: most processes run in
//! cgroups with no limit at all, and a monitor that complained of it would only be noise.

use std::collections::BTreeMap;
use std::path::{Path, PathBuf};

/// Where the kernel mounts the cgroup filesystems.
pub(crate) const ROOT: &str = "/sys/fs/cgroup";

/// v1 memory limits at or above this mean "no limit" (the kernel writes 2^63 rounded down to a
/// page).
const V1_NO_LIMIT: u64 = 1 << 62;

/// Where a process sits in each cgroup hierarchy, as `/proc/PID/cgroup` says.
#[derive(Clone, Debug, Default, PartialEq, Eq, Hash, PartialOrd, Ord)]
pub(crate) struct Membership {
    /// v1: each controller's hierarchy (as named in the line, `cpu,cpuacct` for joined ones)
    /// and the path in it, by controller.
    v1: BTreeMap<String, (String, String)>,
    /// v2: the path in the unified hierarchy.
    v2: Option<String>,
}

impl Membership {
    /// Parses `/proc/PID/cgroup`: `4:memory:/app`, `1:cpu,cpuacct:/`, `0::/app`.
    pub(crate) fn parse(text: &str) -> Membership {
        let mut m = Membership::default();
        for line in text.lines() {
            let mut parts = line.splitn(3, ':');
            let (Some(_), Some(controllers), Some(path)) = (parts.next(), parts.next(), parts.next()) else {
                continue;
            };
            if controllers.is_empty() {
                m.v2 = Some(path.to_string());
                continue;
            }
            for c in controllers.split(',').filter(|c| !c.starts_with("name=")) {
                m.v1.insert(c.to_string(), (controllers.to_string(), path.to_string()));
            }
        }
        m
    }

    /// The membership of a running process; `None` when it cannot be read (it has exited).
    pub(crate) fn of(pid: i32) -> Option<Membership> {
        std::fs::read_to_string(format!("/proc/{pid}/cgroup"))
            .ok()
            .map(|t| Membership::parse(&t))
    }
}

/// A cgroup directory and the version of the hierarchy it is in.
#[derive(Clone, Debug, PartialEq, Eq, Hash, PartialOrd, Ord)]
pub(crate) struct Group {
    /// The directory.
    pub(crate) dir: PathBuf,
    /// 1 or 2.
    pub(crate) version: u8,
}

/// A limit found up a cgroup's tree, and the cgroup that set it.
#[derive(Clone, Debug, PartialEq)]
pub(crate) struct Bound {
    /// The limit: cores for CPU, bytes for memory.
    pub(crate) value: f64,
    /// The cgroup (the process's own or a parent) whose limit is the tightest.
    pub(crate) at: Group,
}

/// CFS periods a cgroup ran in, and those in which it was throttled, as counted since it was
/// made; two readings give the share of periods throttled between them.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub(crate) struct Throttling {
    pub(crate) periods: u64,
    pub(crate) throttled: u64,
}

impl Throttling {
    /// The percentage of periods throttled since `before`; 0 when the cgroup ran in none (it
    /// was idle, so nothing held it back). `None` when the counters went back (the cgroup was
    /// made anew).
    pub(crate) fn percent_since(self, before: Throttling) -> Option<f64> {
        let periods = self.periods.checked_sub(before.periods)?;
        let throttled = self.throttled.checked_sub(before.throttled)?;
        Some(if periods == 0 {
            0.0
        } else {
            (throttled as f64 / periods as f64 * 100.0).min(100.0)
        })
    }
}

/// The cgroup filesystem, read from `root` (the real one is [`ROOT`]).
#[derive(Clone, Debug)]
pub(crate) struct Cgroups {
    root: PathBuf,
}

impl Default for Cgroups {
    fn default() -> Self {
        Cgroups::new(ROOT)
    }
}

impl Cgroups {
    pub(crate) fn new(root: impl Into<PathBuf>) -> Self {
        Cgroups { root: root.into() }
    }

    /// The cgroup of `m` that holds `controller`: its v1 hierarchy's directory when the process
    /// is in one, else its v2 directory when the unified hierarchy is mounted at the root (a v2
    /// host) or at `unified` (a hybrid one).
    pub(crate) fn group(&self, m: &Membership, controller: &str) -> Option<Group> {
        if let Some((hierarchy, path)) = m.v1.get(controller) {
            // Joined controllers are mounted once, as `cpu,cpuacct`, often with a link per name.
            for name in [hierarchy.as_str(), controller] {
                let base = self.root.join(name);
                if base.is_dir() {
                    return under(&base, path).map(|dir| Group { dir, version: 1 });
                }
            }
        }
        let path = m.v2.as_ref()?;
        [self.root.clone(), self.root.join("unified")]
            .into_iter()
            .find(|base| base.join("cgroup.controllers").is_file())
            .and_then(|base| under(&base, path))
            .map(|dir| Group { dir, version: 2 })
    }

    /// The tightest CPU quota, in cores, of the process's cgroup and its parents.
    pub(crate) fn cpu_quota(&self, m: &Membership) -> Option<Bound> {
        let g = self.group(m, "cpu")?;
        self.tightest(&g, |dir| match g.version {
            1 => {
                let quota: i64 = read(&dir.join("cpu.cfs_quota_us"))?.parse().ok()?;
                let period: u64 = read(&dir.join("cpu.cfs_period_us"))?.parse().ok()?;
                (quota > 0 && period > 0).then(|| quota as f64 / period as f64)
            }
            _ => {
                let text = read(&dir.join("cpu.max"))?;
                let mut words = text.split_whitespace();
                let quota: u64 = words.next()?.parse().ok()?;
                let period: u64 = words.next().map_or(Some(100_000), |p| p.parse().ok())?;
                (period > 0).then(|| quota as f64 / period as f64)
            }
        })
    }

    /// The tightest memory limit, in bytes, of the process's cgroup and its parents.
    pub(crate) fn memory_limit(&self, m: &Membership) -> Option<Bound> {
        let g = self.group(m, "memory")?;
        self.memory_limit_of(&g)
    }

    /// The tightest memory limit of a cgroup and its parents; read again after a process has
    /// gone, as the cgroup may outlive it.
    pub(crate) fn memory_limit_of(&self, g: &Group) -> Option<Bound> {
        self.tightest(g, |dir| match g.version {
            1 => {
                let n: u64 = read(&dir.join("memory.limit_in_bytes"))?.parse().ok()?;
                (n < V1_NO_LIMIT).then_some(n as f64)
            }
            _ => read(&dir.join("memory.max"))?.parse::<u64>().ok().map(|n| n as f64),
        })
    }

    /// The memory cgroup a process's OOM kills are counted in: its own.
    pub(crate) fn memory_group(&self, m: &Membership) -> Option<Group> {
        self.group(m, "memory")
    }

    /// How many processes the OOM killer has killed in this cgroup (and, in v2, below it).
    pub(crate) fn oom_kills(g: &Group) -> Option<u64> {
        let file = match g.version {
            1 => "memory.oom_control",
            _ => "memory.events",
        };
        counter(&read(&g.dir.join(file))?, "oom_kill")
    }

    /// The throttling counters of a cgroup (the one that holds the quota).
    pub(crate) fn throttling(g: &Group) -> Option<Throttling> {
        let text = read(&g.dir.join("cpu.stat"))?;
        Some(Throttling {
            periods: counter(&text, "nr_periods")?,
            throttled: counter(&text, "nr_throttled")?,
        })
    }

    /// The smallest value `read` gives for the cgroup and each parent up to the hierarchy's
    /// root, and where it was found.
    fn tightest(&self, g: &Group, read: impl Fn(&Path) -> Option<f64>) -> Option<Bound> {
        let mut best: Option<Bound> = None;
        let mut dir = g.dir.clone();
        loop {
            if let Some(v) = read(&dir) {
                if best.as_ref().is_none_or(|b| v < b.value) {
                    best = Some(Bound {
                        value: v,
                        at: Group {
                            dir: dir.clone(),
                            version: g.version,
                        },
                    });
                }
            }
            if dir == self.root || !dir.starts_with(&self.root) || !dir.pop() {
                break;
            }
        }
        best
    }
}

/// The directory of `path` (as `/proc/PID/cgroup` writes it) under a hierarchy's mount point;
/// `None` for a path outside the cgroup namespace crest sees (`/../..`), which it cannot read.
fn under(base: &Path, path: &str) -> Option<PathBuf> {
    let path = Path::new(path.trim_start_matches('/'));
    let inside = path.components().all(|c| matches!(c, std::path::Component::Normal(_)));
    inside.then(|| base.join(path))
}

fn read(file: &Path) -> Option<String> {
    std::fs::read_to_string(file).ok().map(|s| s.trim().to_string())
}

/// The value of `name` in a flat keyed file (`name value` a line).
fn counter(text: &str, name: &str) -> Option<u64> {
    text.lines().find_map(|l| {
        let (k, v) = l.split_once(char::is_whitespace)?;
        (k == name).then(|| v.trim().parse().ok()).flatten()
    })
}

#[cfg(test)]
mod tests {
    use super::*;

    /// A v2 hierarchy in a temporary directory: `files` are (path under the root, text).
    fn fixture(files: &[(&str, &str)]) -> tempfile::TempDir {
        let root = tempfile::tempdir().unwrap();
        std::fs::write(root.path().join("cgroup.controllers"), "cpu memory\n").unwrap();
        for (path, text) in files {
            let file = root.path().join(path);
            std::fs::create_dir_all(file.parent().unwrap()).unwrap();
            std::fs::write(file, text).unwrap();
        }
        root
    }

    fn v2(path: &str) -> Membership {
        Membership::parse(&format!("0::{path}\n"))
    }

    #[test]
    fn proc_cgroup_lines_are_read_for_both_versions() {
        let m = Membership::parse("4:memory:/process_api/abc\n2:cpu,cpuacct:/\n9:name=systemd:/\n0::/app\n");
        assert_eq!(m.v1["memory"], ("memory".into(), "/process_api/abc".into()));
        assert_eq!(m.v1["cpuacct"], ("cpu,cpuacct".into(), "/".into()));
        assert!(!m.v1.contains_key("name=systemd"));
        assert_eq!(m.v2.as_deref(), Some("/app"));
    }

    #[test]
    fn v2_cpu_max_gives_the_tightest_quota_of_the_cgroup_and_its_parents() {
        let root = fixture(&[
            ("kubepods/cpu.max", "50000 100000\n"),
            ("kubepods/pod/cpu.max", "max 100000\n"),
            ("kubepods/pod/app/cpu.max", "200000 100000\n"),
            (
                "kubepods/pod/app/cpu.stat",
                "usage_usec 5\nnr_periods 40\nnr_throttled 30\n",
            ),
        ]);
        let c = Cgroups::new(root.path());
        let q = c.cpu_quota(&v2("/kubepods/pod/app")).unwrap();
        assert_eq!(q.value, 0.5, "the parent's half core bounds the child's two");
        assert_eq!(q.at.dir, root.path().join("kubepods"));
        assert_eq!(q.at.version, 2);
        let app = Group {
            dir: root.path().join("kubepods/pod/app"),
            version: 2,
        };
        let now = Cgroups::throttling(&app).unwrap();
        assert_eq!(
            now,
            Throttling {
                periods: 40,
                throttled: 30
            }
        );
        let before = Throttling {
            periods: 20,
            throttled: 20,
        };
        assert_eq!(now.percent_since(before), Some(50.0));
        assert_eq!(now.percent_since(now), Some(0.0), "no period run, none throttled");
        assert_eq!(before.percent_since(now), None, "counters that went back");
        // "max" everywhere is no quota.
        let root = fixture(&[("a/cpu.max", "max 100000\n")]);
        assert_eq!(Cgroups::new(root.path()).cpu_quota(&v2("/a")), None);
        // A cgroup with no cpu.stat counters says nothing of throttling.
        let root = fixture(&[("a/cpu.stat", "usage_usec 5\n")]);
        let a = Group {
            dir: root.path().join("a"),
            version: 2,
        };
        assert_eq!(Cgroups::throttling(&a), None);
    }

    #[test]
    fn v2_memory_max_and_oom_kills_are_read_and_max_means_none() {
        let root = fixture(&[
            ("pod/memory.max", "536870912\n"),
            ("pod/app/memory.max", "1073741824\n"),
            (
                "pod/app/memory.events",
                "low 0\nhigh 0\nmax 12\noom 2\noom_kill 2\noom_group_kill 0\n",
            ),
            ("free/memory.max", "max\n"),
        ]);
        let c = Cgroups::new(root.path());
        let m = v2("/pod/app");
        let limit = c.memory_limit(&m).unwrap();
        assert_eq!(limit.value, 536870912.0, "the parent's 512 MiB is the tighter");
        let g = c.memory_group(&m).unwrap();
        assert_eq!(g.dir, root.path().join("pod/app"));
        assert_eq!(Cgroups::oom_kills(&g), Some(2));
        assert_eq!(c.memory_limit(&v2("/free")), None);
        // Missing files are not known, not an error.
        assert_eq!(c.memory_limit(&v2("/nowhere")), None);
        assert_eq!(Cgroups::oom_kills(&c.memory_group(&v2("/nowhere")).unwrap()), None);
    }

    #[test]
    fn a_hybrid_host_reads_v1_controllers_before_the_unified_hierarchy() {
        let root = tempfile::tempdir().unwrap();
        let put = |path: &str, text: &str| {
            let file = root.path().join(path);
            std::fs::create_dir_all(file.parent().unwrap()).unwrap();
            std::fs::write(file, text).unwrap();
        };
        put("unified/cgroup.controllers", "\n");
        put("memory/memory.limit_in_bytes", "9223372036854771712\n");
        put("memory/app/memory.limit_in_bytes", "67108864\n");
        put(
            "memory/app/memory.oom_control",
            "oom_kill_disable 0\nunder_oom 0\noom_kill 3\n",
        );
        put("cpu,cpuacct/app/cpu.cfs_quota_us", "25000\n");
        put("cpu,cpuacct/app/cpu.cfs_period_us", "100000\n");
        put("cpu,cpuacct/cpu.cfs_quota_us", "-1\n");
        put("cpu,cpuacct/cpu.cfs_period_us", "100000\n");
        let c = Cgroups::new(root.path());
        let m = Membership::parse("4:memory:/app\n1:cpu,cpuacct:/app\n0::/\n");
        assert_eq!(c.memory_limit(&m).unwrap().value, 67108864.0);
        assert_eq!(Cgroups::oom_kills(&c.memory_group(&m).unwrap()), Some(3));
        let q = c.cpu_quota(&m).unwrap();
        assert_eq!((q.value, q.at.version), (0.25, 1));
        // The root's "unlimited" is no limit.
        let top = Membership::parse("4:memory:/\n0::/\n");
        assert_eq!(c.memory_limit(&top), None);
        // A cgroup outside crest's cgroup namespace cannot be read.
        assert_eq!(c.group(&Membership::parse("4:memory:/../../other\n"), "memory"), None);
        // A process in no v1 memory hierarchy falls back to the unified one.
        assert_eq!(c.group(&Membership::parse("0::/x\n"), "memory").unwrap().version, 2);
    }

    /// This machine's own cgroups, read live: whatever they hold, nothing fails.
    #[test]
    fn the_live_hierarchy_reads_without_errors() {
        let m = Membership::of(std::process::id() as i32).unwrap();
        let c = Cgroups::default();
        let _ = (c.cpu_quota(&m), c.memory_limit(&m));
        if let Some(g) = c.memory_group(&m) {
            let _ = Cgroups::oom_kills(&g);
        }
    }
}
