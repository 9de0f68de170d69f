//! Processes of the system under test, from /proc: CPU, resident and private memory, open
//! files, threads.
//!
//! A spec is resolved to process ids again at every sample, so a restarted service or a new
//! worker (a PostgreSQL backend, a forked server) is followed rather than lost. A spec that
//! matches several processes is recorded as their sum, the way `ps` users add up a server's
//! workers; crest's own process is never counted.
//!
//! Each sample also reads what bounds the processes ([`crate::limits`]), the share of CPU
//! periods their cgroup's quota throttled, how busy the cores they may run on were (by anyone),
//! and what happened to them ([`crate::events`]).

use crate::cgroup::{Cgroups, Group, Membership, Throttling};
use crate::error::{MonitorError, SampleError};
use crate::events::Fates;
use crate::limits::Bounds;
use crate::store::Reading;
use crest_model::monitor::{MonitorNote, ProcessEvent, ProcessLimits, ProcessSelect, ProcessSpec, SeriesKey, Unit};
use procfs::process::Process;
use procfs::WithCurrentSystemInfo;
use regex::Regex;
use std::collections::{BTreeMap, BTreeSet, HashMap};
use std::path::Path;
use std::time::Instant;

/// One spec being watched.
#[derive(Debug)]
pub(crate) struct Watched {
    spec: ProcessSpec,
    pattern: Option<Regex>,
    /// CPU ticks of each process at the last sample.
    last: HashMap<i32, (u64, Instant)>,
    /// The processes matched at the last sample; `None` before the first.
    pids: Option<BTreeSet<i32>>,
    ticks_per_s: f64,
    /// For a process watched by its id, its [`command_label`] when watching began.
    name: Option<String>,
    /// Whether the note that the kernel gives no private memory has been written.
    said_no_private: bool,
    /// The cgroup filesystem.
    cgroups: Cgroups,
    /// The throttling counters of the cgroup holding the quota, at the last sample.
    throttled: Option<(Group, Throttling)>,
    /// Every CPU's busy and total ticks at the last sample, while the processes may run on
    /// fewer CPUs than the machine has.
    cores: Option<BTreeMap<u32, (u64, u64)>>,
    /// What happened to the processes, from sample to sample.
    fates: Fates,
}

/// One sample of a spec.
#[derive(Debug, Default)]
pub(crate) struct ProcessSample {
    pub(crate) readings: Vec<Reading>,
    pub(crate) notes: Vec<MonitorNote>,
    /// What bounds the processes, when any could be read.
    pub(crate) limits: Option<ProcessLimits>,
    /// What happened to them since the last sample; their `source` is left for the caller.
    pub(crate) events: Vec<ProcessEvent>,
}

impl Watched {
    /// Checks the spec (a pattern must compile).
    pub(crate) fn new(spec: ProcessSpec) -> Result<Self, MonitorError> {
        let pattern = match &spec.select {
            ProcessSelect::Pattern(p) => Some(Regex::new(p).map_err(|e| MonitorError::Pattern {
                what: "process pattern",
                pattern: p.clone(),
                reason: e.to_string(),
            })?),
            _ => None,
        };
        let mut w = Watched {
            pattern,
            last: HashMap::new(),
            pids: None,
            ticks_per_s: procfs::ticks_per_second().max(1) as f64,
            name: None,
            said_no_private: false,
            fates: Fates::new(matches!(spec.select, ProcessSelect::Pid(_) | ProcessSelect::PidFile(_))),
            spec,
            cgroups: Cgroups::default(),
            throttled: None,
            cores: None,
        };
        w.name = w.named();
        Ok(w)
    }

    /// The name of a process watched by its id, by its command line (see [`command_label`]);
    /// `None` for the other selections, whose label already names what is watched, or when it
    /// is not running.
    pub(crate) fn name(&self) -> Option<String> {
        self.name.clone()
    }

    fn named(&self) -> Option<String> {
        if !self.single() {
            return None;
        }
        let p = Process::new(*self.resolve().ok()?.first()?).ok()?;
        p.cmdline()
            .ok()
            .and_then(|argv| command_label(&argv))
            .or_else(|| p.stat().ok().map(|s| s.comm))
    }

    fn describe(&self) -> String {
        match &self.spec.select {
            ProcessSelect::Pid(p) => format!("pid {p}"),
            ProcessSelect::PidFile(f) => format!("the pid in {}", f.display()),
            ProcessSelect::Name(n) => format!("processes named {n:?}"),
            ProcessSelect::Pattern(p) => format!("processes matching {p:?}"),
        }
    }

    /// The processes the spec names now, or why none can be named. crest itself is never one
    /// of them: its own load would be read as the target's (a `name: crest` for a `crest
    /// target` service matched the load generator too). Its threads are not processes, so
    /// excluding its pid excludes them all.
    fn resolve(&self) -> Result<BTreeSet<i32>, SampleError> {
        let own = std::process::id() as i32;
        let one = |pid: i32| {
            if pid == own {
                return Err(SampleError::Itself(pid));
            }
            Ok([pid].into_iter().filter(|p| alive(*p)).collect())
        };
        Ok(match &self.spec.select {
            ProcessSelect::Pid(p) => one(*p as i32)?,
            ProcessSelect::PidFile(f) => {
                let text = std::fs::read_to_string(f).map_err(|reason| SampleError::PidFile {
                    path: f.clone(),
                    reason,
                })?;
                let pid: i32 = text.trim().parse().map_err(|_| SampleError::NotAPid(f.clone()))?;
                one(pid)?
            }
            ProcessSelect::Name(name) => all()?
                .filter(|p| p.pid != own && name_matches(p, name))
                .map(|p| p.pid)
                .collect(),
            ProcessSelect::Pattern(_) => {
                let re = self
                    .pattern
                    .as_ref()
                    .ok_or(SampleError::Internal("pattern not compiled"))?;
                all()?
                    .filter(|p| p.pid != own && p.cmdline().is_ok_and(|c| !c.is_empty() && re.is_match(&c.join(" "))))
                    .map(|p| p.pid)
                    .collect()
            }
        })
    }

    /// The note for what changed in the processes found since the last sample, if anything did.
    fn presence(&self, what: &str, pids: &BTreeSet<i32>, t_s: f64) -> Option<MonitorNote> {
        let what = what.to_string();
        let listed = || pids.iter().copied().collect();
        match (&self.pids, pids.is_empty()) {
            (None, true) => Some(MonitorNote::NotFound { what, at_s: t_s }),
            (Some(before), true) if !before.is_empty() => Some(MonitorNote::Gone { what, at_s: t_s }),
            (Some(before), false) if before.is_empty() => Some(MonitorNote::Back {
                what,
                pids: listed(),
                at_s: t_s,
            }),
            (Some(before), false) if self.single() && before != pids => Some(MonitorNote::NewPid {
                what,
                pids: listed(),
                at_s: t_s,
            }),
            _ => None,
        }
    }

    /// The processes' name in their series' titles. A name as its own label would read as one
    /// program (`crest` as the load generator, which is never among the processes it sums).
    fn label(&self, by_name: bool) -> String {
        match (&self.spec.select, &self.name) {
            (ProcessSelect::Pid(p), Some(name)) if self.spec.label == p.to_string() => format!("{name} (pid {p})"),
            (ProcessSelect::Pid(p), None) if self.spec.label == p.to_string() => format!("pid {p}"),
            _ if by_name => format!("processes named {}", self.spec.label),
            _ => self.spec.label.clone(),
        }
    }

    /// Reads `pids` and sums them; none when not one of them could be read (all ended since
    /// they were found). Keeps each one's CPU ticks for the next sample's rate.
    fn read(&mut self, pids: &BTreeSet<i32>) -> Option<Totals> {
        let now = Instant::now();
        let mut t = Totals {
            rss: 0,
            private: Private::Bytes(0),
            fds: 0,
            threads: 0,
            cpu_ticks: 0,
            cpu_secs: 0.0,
            timed: false,
        };
        let mut read_any = false;
        let mut last = HashMap::new();
        for &pid in pids {
            let Ok(p) = Process::new(pid) else { continue };
            let Ok(stat) = p.stat() else { continue };
            read_any = true;
            let ticks = stat.utime + stat.stime;
            if let Some((t0, at)) = self.last.get(&pid) {
                t.cpu_ticks += ticks.saturating_sub(*t0);
                t.cpu_secs = t.cpu_secs.max(now.duration_since(*at).as_secs_f64());
                t.timed = true;
            }
            last.insert(pid, (ticks, now));
            t.rss += stat.rss_bytes().get();
            t.private = t.private.add(private_memory(&p));
            t.threads += stat.num_threads.max(0) as u64;
            t.fds += p.fd_count().unwrap_or(0) as u64;
        }
        self.last = last;
        read_any.then_some(t)
    }

    /// Reads every matched process; `t_s` is the time of the sample in the run.
    pub(crate) fn sample(&mut self, t_s: f64) -> ProcessSample {
        let mut out = ProcessSample::default();
        let what = self.describe();
        let pids = match self.resolve() {
            Ok(p) => p,
            Err(e) => {
                if self.pids.as_ref().is_none_or(|p| !p.is_empty()) {
                    out.notes.push(MonitorNote::Unresolved {
                        error: e.to_string(),
                        at_s: t_s,
                    });
                }
                self.pids = Some(BTreeSet::new());
                out.events = self.fates.update(BTreeMap::new(), &self.cgroups, t_s, alive);
                return out;
            }
        };
        let members: BTreeMap<i32, Option<Membership>> = pids.iter().map(|&p| (p, Membership::of(p))).collect();
        let memory_groups = members
            .iter()
            .map(|(p, m)| (*p, m.as_ref().and_then(|m| self.cgroups.memory_group(m))))
            .collect();
        out.events = self.fates.update(memory_groups, &self.cgroups, t_s, alive);
        // None when every member ended between two reads: the limits last sent stand.
        let read = crate::limits::read(&members, &self.cgroups);
        let bounds = read.clone().unwrap_or_default();
        let throttled = self.throttling(&bounds);
        let cores_busy = self.cores_busy(&bounds);
        out.notes.extend(self.presence(&what, &pids, t_s));
        let grouped = matches!(self.spec.select, ProcessSelect::Name(_) | ProcessSelect::Pattern(_));
        let process = self.spec.label.clone();
        let key = |m: &str| SeriesKey::new(m).with("process", &process);
        let by_name = matches!(&self.spec.select, ProcessSelect::Name(n) if *n == self.spec.label);
        let label = &self.label(by_name);
        if grouped {
            out.readings.push(Reading {
                key: key("process_count"),
                title: if by_name {
                    label.clone()
                } else {
                    format!("processes of {label}")
                },
                unit: Unit::Count,
                limit: None,
                value: pids.len() as f64,
            });
        }
        let totals = self.read(&pids);
        self.pids = Some(pids.clone());
        let Some(Totals {
            rss,
            private,
            fds,
            threads,
            cpu_ticks,
            cpu_secs,
            timed,
        }) = totals
        else {
            return out;
        };
        // rlimits are per process, so they only bound a series that is one process; a cgroup's
        // memory limit bounds what its processes hold together, which resident memory summed
        // over processes overstates (each counts the shared pages it touched).
        let one = pids.len() == 1;
        let fd_limit = bounds.limits.open_files;
        let mem_limit = bounds.limits.memory_limit_bytes;
        if timed && cpu_secs > 0.0 {
            out.readings.push(Reading {
                key: key("process_cpu_percent"),
                title: format!("CPU of {label} (100% = one core)"),
                unit: Unit::Percent,
                limit: bounds.cpu_percent(),
                value: cpu_ticks as f64 / self.ticks_per_s / cpu_secs * 100.0,
            });
        }
        if let Some(share) = throttled {
            out.readings.push(Reading {
                key: key("process_cpu_throttled_percent"),
                title: format!("CPU periods of {label} throttled by its cgroup's quota"),
                unit: Unit::Percent,
                limit: None,
                value: share,
            });
        }
        if let (Some(busy), Some(cpus)) = (cores_busy, &bounds.cpus) {
            out.readings.push(Reading {
                key: key("process_cores_busy_percent"),
                title: match cpus.len() {
                    1 => format!("busy time of the core {label} may run on (any process's)"),
                    n => format!("busy time of the {n} cores {label} may run on (any process's)"),
                },
                unit: Unit::Percent,
                limit: Some(100.0),
                value: busy,
            });
        }
        out.readings.push(Reading {
            key: key("process_resident_memory_bytes"),
            title: format!("resident memory of {label}"),
            unit: Unit::Bytes,
            limit: mem_limit.filter(|_| one),
            value: rss as f64,
        });
        match private {
            Private::Bytes(bytes) => out.readings.push(Reading {
                key: key("process_private_memory_bytes"),
                title: format!("private memory of {label}"),
                unit: Unit::Bytes,
                limit: mem_limit,
                value: bytes as f64,
            }),
            Private::NotGiven if !self.said_no_private => {
                self.said_no_private = true;
                out.notes.push(MonitorNote::NoPrivateMemory { what: what.clone() });
            }
            Private::NotGiven | Private::Unread => {}
        }
        out.readings.push(Reading {
            key: key("process_open_fds"),
            title: format!("open files of {label}"),
            unit: Unit::Count,
            limit: fd_limit,
            value: fds as f64,
        });
        out.readings.push(Reading {
            key: key("process_threads"),
            title: format!("threads of {label}"),
            unit: Unit::Count,
            limit: None,
            value: threads as f64,
        });
        out.limits = read.map(|b| b.limits);
        out
    }

    /// The share of CFS periods, in percent, in which the cgroup holding the processes' CPU
    /// quota was throttled since the last sample; `None` with no quota, or on the first sample
    /// under it. The counters are the cgroup's: other processes in it are held back with these.
    fn throttling(&mut self, bounds: &Bounds) -> Option<f64> {
        let Some(quota) = &bounds.quota else {
            self.throttled = None;
            return None;
        };
        let Some(now) = Cgroups::throttling(&quota.at) else {
            self.throttled = None;
            return None;
        };
        let before = self.throttled.replace((quota.at.clone(), now));
        before
            .filter(|(g, _)| *g == quota.at)
            .and_then(|(_, t)| now.percent_since(t))
    }

    /// How busy the CPUs the processes may run on were since the last sample, in percent of
    /// them, counting every process's time: pinned to a core that other work shares, a
    /// process is held back by the core's being full, not by its own share of it. `None`
    /// while they may run on every CPU (the host's CPU says it), and on the first sample.
    fn cores_busy(&mut self, bounds: &Bounds) -> Option<f64> {
        let now = crate::host::cpu_ticks().ok();
        let cpus = bounds.cpus.as_ref();
        let fewer = match (cpus, &now) {
            (Some(c), Some(n)) => !c.is_empty() && c.len() < n.len(),
            _ => false,
        };
        if !fewer {
            self.cores = None;
            return None;
        }
        let (cpus, now) = (cpus?, now?);
        let before = self.cores.replace(now.clone())?;
        crate::host::busy_percent(cpus, &before, &now)
    }

    fn single(&self) -> bool {
        matches!(self.spec.select, ProcessSelect::Pid(_) | ProcessSelect::PidFile(_))
    }
}

/// Memory only this process uses, summed over the processes of a spec: what a leak grows.
/// Resident memory also counts shared pages (a database's shared buffers, a mapped file) the
/// moment a process first touches them, which is not growth of its own.
#[derive(Clone, Copy, Debug, PartialEq)]
enum Private {
    Bytes(u64),
    /// A process's status could not be read (it exited between two reads): no sum this time.
    Unread,
    /// The kernel does not count anonymous memory apart (before Linux 4.5).
    NotGiven,
}

impl Private {
    fn add(self, other: Private) -> Private {
        match (self, other) {
            (Private::NotGiven, _) | (_, Private::NotGiven) => Private::NotGiven,
            (Private::Unread, _) | (_, Private::Unread) => Private::Unread,
            (Private::Bytes(a), Private::Bytes(b)) => Private::Bytes(a + b),
        }
    }
}

/// RssAnon + VmSwap of /proc/PID/status: private pages resident or swapped out. Shared anonymous
/// mappings and tmpfs pages are RssShmem, file pages RssFile, so neither is counted.
fn private_memory(p: &Process) -> Private {
    match p.status() {
        Ok(s) => match s.rssanon {
            Some(anon) => Private::Bytes((anon + s.vmswap.unwrap_or(0)) * 1024),
            None => Private::NotGiven,
        },
        Err(_) => Private::Unread,
    }
}

/// A process's name for its series, from its command line as `ps` shows it: the program's file
/// name, and the first argument when it is a word (a subcommand or a script: `crest target`,
/// `python3 app.py`), or the words of a title the process wrote over its arguments, up to
/// three and up to the first that is not a word (`postgres: checkpointer`, not a backend's
/// address and state). The comm of `ps -o comm` would name a `crest target` "crest",
/// which reads as the load generator. Nothing else of the command line is kept, so flags and
/// their values (`--web-token X`, `password=...`) are never shown, and the name stays the same
/// from run to run (ports and paths left out). `None` for a process with no command line (a
/// kernel thread, a zombie).
fn command_label(argv: &[String]) -> Option<String> {
    // A title written over the arguments may leave the old ones' ends after it. Its words are
    // the title's own (`postgres: background writer`); an argument after the first is most
    // often a flag's value.
    let (words, most): (Vec<String>, usize) = match argv.first() {
        Some(title) if title.contains(char::is_whitespace) => (title.split_whitespace().map(String::from).collect(), 3),
        _ => (argv.to_vec(), 1),
    };
    let shown = crest_model::redact::command_line(&words[..words.len().min(most + 1)]);
    let program = Path::new(shown.first()?).file_name()?.to_str()?.to_string();
    let is_word = |w: &&String| {
        w.len() <= 32
            && w.starts_with(|c: char| c.is_ascii_alphabetic())
            && w.chars()
                .all(|c| c.is_ascii_alphanumeric() || matches!(c, '.' | '_' | '-' | ':'))
            && !crest_model::redact::is_secret_name(w)
    };
    let name: Vec<&str> = std::iter::once(program.as_str())
        .chain(shown.iter().skip(1).take_while(is_word).map(String::as_str))
        .collect();
    Some(name.join(" "))
}

fn all() -> Result<impl Iterator<Item = Process>, SampleError> {
    Ok(procfs::process::all_processes()
        .map_err(SampleError::ListProcesses)?
        .filter_map(Result::ok))
}

/// True when `name` is the process's name (which the kernel cuts to 15 bytes), its executable's
/// file name, or the file name of its first argument (scripts run by an interpreter).
fn name_matches(p: &Process, name: &str) -> bool {
    let short = &name.as_bytes()[..name.len().min(15)];
    match p.stat() {
        Ok(s) if s.state == 'Z' => return false,
        Ok(s) if s.comm.as_bytes() == short => return true,
        _ => {}
    }
    if p.exe().is_ok_and(|e| e.file_name().is_some_and(|f| f == name)) {
        return true;
    }
    p.cmdline().is_ok_and(|c| {
        c.first()
            .is_some_and(|a| Path::new(a).file_name().is_some_and(|f| f == name))
    })
}

/// Whether a process runs: it exists and is not a zombie (a killed child its parent has not yet
/// reaped is gone for every purpose of a monitor).
fn alive(pid: i32) -> bool {
    Process::new(pid).is_ok_and(|p| p.stat().is_ok_and(|s| s.state != 'Z'))
}

/// What the matched processes add up to at one sample.
struct Totals {
    rss: u64,
    private: Private,
    fds: u64,
    threads: u64,
    /// CPU ticks since each one's last sample, over the longest time between two samples.
    cpu_ticks: u64,
    cpu_secs: f64,
    /// False until some process was read twice: there is no rate yet.
    timed: bool,
}

#[cfg(test)]
mod tests {
    use super::*;
    use crest_model::monitor::EventKind;
    use crest_testkit::toucher::{Memory, Toucher};
    use procfs::process::LimitValue;
    use std::process::{Child, Command};

    struct Kill(Child);
    impl Drop for Kill {
        fn drop(&mut self) {
            let _ = self.0.kill();
            let _ = self.0.wait();
        }
    }

    /// The soft limit on open files of a process, as in /proc/PID/limits.
    fn open_files_limit(pid: i32) -> Option<f64> {
        match Process::new(pid).ok()?.limits().ok()?.max_open_files.soft_limit {
            LimitValue::Value(v) => Some(v as f64),
            LimitValue::Unlimited => None,
        }
    }

    fn spec(label: &str, select: ProcessSelect) -> ProcessSpec {
        ProcessSpec {
            label: label.into(),
            select,
        }
    }

    fn value(s: &ProcessSample, metric: &str) -> Option<f64> {
        s.readings.iter().find(|r| r.key.metric == metric).map(|r| r.value)
    }

    #[test]
    fn a_process_is_found_by_pid_name_and_pattern_and_its_exit_noted() {
        let child = Kill(Command::new("sleep").arg("4242.5").spawn().unwrap());
        let pid = child.0.id();
        // Just after exec the new image has no pages yet.
        std::thread::sleep(std::time::Duration::from_millis(100));
        let mut by_pid = Watched::new(spec("sleeper", ProcessSelect::Pid(pid))).unwrap();
        let first = by_pid.sample(0.0);
        assert!(first.notes.is_empty(), "{:?}", first.notes);
        assert!(value(&first, "process_cpu_percent").is_none(), "CPU needs two readings");
        assert!(value(&first, "process_resident_memory_bytes").unwrap() > 0.0);
        assert!(value(&first, "process_open_fds").unwrap() >= 1.0);
        assert_eq!(value(&first, "process_threads"), Some(1.0));
        let fds = first
            .readings
            .iter()
            .find(|r| r.key.metric == "process_open_fds")
            .unwrap();
        assert_eq!(fds.limit, open_files_limit(pid as i32));
        assert!(fds.limit.is_some());
        let second = by_pid.sample(1.0);
        let cpu = value(&second, "process_cpu_percent").unwrap();
        assert!((0.0..5.0).contains(&cpu), "a sleeping process uses no CPU: {cpu}");

        let mut by_pattern = Watched::new(spec("s", ProcessSelect::Pattern("^sleep 4242\\.5$".into()))).unwrap();
        assert_eq!(value(&by_pattern.sample(0.0), "process_count"), Some(1.0));
        let mut by_name = Watched::new(spec("s", ProcessSelect::Name("sleep".into()))).unwrap();
        assert!(value(&by_name.sample(0.0), "process_count").unwrap() >= 1.0);

        drop(child);
        let gone = by_pid.sample(2.0);
        assert!(gone.readings.is_empty());
        assert_eq!(
            gone.notes,
            vec![MonitorNote::Gone {
                what: format!("pid {pid}"),
                at_s: 2.0
            }]
        );
        assert_eq!(value(&by_pattern.sample(2.0), "process_count"), Some(0.0));
    }

    /// Issue 11, item 7: a monitor on processes named `crest` counted the load generator.
    #[test]
    fn issue_11_crest_never_watches_itself() {
        let own = std::process::id();
        let exe = std::env::current_exe().unwrap();
        let name = exe.file_name().unwrap().to_str().unwrap().to_string();
        let mut by_name = Watched::new(spec("me", ProcessSelect::Name(name.clone()))).unwrap();
        assert_eq!(value(&by_name.sample(0.0), "process_count"), Some(0.0), "{name}");
        let mut by_pattern =
            Watched::new(spec("me", ProcessSelect::Pattern(regex::escape(exe.to_str().unwrap())))).unwrap();
        assert_eq!(value(&by_pattern.sample(0.0), "process_count"), Some(0.0));
        let mut by_pid = Watched::new(spec("me", ProcessSelect::Pid(own))).unwrap();
        let s = by_pid.sample(0.0);
        assert!(s.readings.is_empty());
        assert_eq!(
            s.notes,
            vec![MonitorNote::Unresolved {
                error: format!("pid {own} is crest itself, which is never watched"),
                at_s: 0.0
            }]
        );
    }

    /// Issue 33: resident memory counts the shared pages a process merely touches (PostgreSQL's
    /// shared buffers on first use, read as a leak); private memory counts only its own.
    #[test]
    fn issue_33_private_memory_counts_only_what_the_process_alone_holds() {
        const MIB: f64 = 1048576.0;
        for (memory, private_growth) in [(Memory::Shared, 0.0), (Memory::Private, 48.0 * MIB)] {
            let mut t = Toucher::spawn(memory, 64 << 20);
            let mut w = Watched::new(spec("t", ProcessSelect::Pid(t.pid()))).unwrap();
            let before = w.sample(0.0);
            t.touch(48 << 20);
            let after = w.sample(1.0);
            let grew = |m: &str| value(&after, m).unwrap() - value(&before, m).unwrap();
            let rss = grew("process_resident_memory_bytes");
            assert!(rss >= 47.0 * MIB, "{memory:?}: resident memory grew {rss}");
            // The interpreter allocates a little as it runs: a few MiB either way.
            let private = grew("process_private_memory_bytes");
            assert!(
                (private - private_growth).abs() < 3.0 * MIB,
                "{memory:?}: private memory grew {private}"
            );
        }
    }

    fn title(s: &ProcessSample, metric: &str) -> String {
        s.readings
            .iter()
            .find(|r| r.key.metric == metric)
            .unwrap()
            .title
            .clone()
    }

    /// Issue 33: `--monitor-process crest` titled the target's series "resident memory of
    /// crest", as if they were the load generator's. A name is titled as the processes it sums.
    #[test]
    fn issue_33_processes_watched_by_name_are_titled_as_processes_of_that_name() {
        let _child = Kill(Command::new("sleep").arg("4243.5").spawn().unwrap());
        std::thread::sleep(std::time::Duration::from_millis(100));
        let s = Watched::new(spec("sleep", ProcessSelect::Name("sleep".into())))
            .unwrap()
            .sample(0.0);
        assert_eq!(
            title(&s, "process_resident_memory_bytes"),
            "resident memory of processes named sleep"
        );
        assert_eq!(title(&s, "process_count"), "processes named sleep");
        let s = Watched::new(spec("api", ProcessSelect::Name("sleep".into())))
            .unwrap()
            .sample(0.0);
        assert_eq!(
            title(&s, "process_resident_memory_bytes"),
            "resident memory of api",
            "a label given is kept"
        );
        assert_eq!(title(&s, "process_count"), "processes of api");
    }

    /// Issue 33: a `crest target` watched by pid was labelled "crest", its comm, which reads as
    /// the load generator's own series.
    #[test]
    fn issue_33_a_process_is_named_by_its_command_line_without_secrets() {
        let label = |args: &[&str]| command_label(&args.iter().map(|a| a.to_string()).collect::<Vec<_>>());
        assert_eq!(
            label(&["/usr/local/bin/crest", "target", "--listen", "127.0.0.1:8080"]).as_deref(),
            Some("crest target")
        );
        assert_eq!(
            label(&["postgres: checkpointer "]).as_deref(),
            Some("postgres: checkpointer")
        );
        assert_eq!(
            label(&["nginx: worker process", "-g", "daemon off;"]).as_deref(),
            Some("nginx: worker process")
        );
        // A backend's address and state change from one connection to the next.
        assert_eq!(
            label(&["postgres: app orders 127.0.0.1(41234) idle"]).as_deref(),
            Some("postgres: app orders")
        );
        assert_eq!(
            label(&[
                "/usr/lib/postgresql/16/bin/postgres",
                "-D",
                "/var/lib/postgresql/16/main"
            ])
            .as_deref(),
            Some("postgres")
        );
        assert_eq!(
            label(&["python3", "app.py", "--port", "8000"]).as_deref(),
            Some("python3 app.py")
        );
        for secret in [
            &["crest", "--web-token", "s3cret", "target"][..],
            &["api", "password=s3cret"],
            &["api", "postgres://u:s3cret@db/app"],
            &["api", "--token=s3cret"],
            &["api", "s3cret-key"],
        ] {
            let l = label(secret).unwrap();
            assert!(l == "crest" || l == "api", "{l}");
        }
        assert_eq!(
            label(&["sleep", "4242.5"]).as_deref(),
            Some("sleep"),
            "numbers change from run to run"
        );
        assert_eq!(label(&[]), None);
    }

    #[test]
    fn a_missing_pid_file_or_bad_pattern_says_so() {
        let mut w = Watched::new(spec("x", ProcessSelect::PidFile("/nonexistent/app.pid".into()))).unwrap();
        let s = w.sample(0.0);
        assert!(
            matches!(&s.notes[0], MonitorNote::Unresolved { error, .. } if error.contains("cannot read /nonexistent/app.pid")),
            "{:?}",
            s.notes
        );
        assert!(w.sample(1.0).notes.is_empty(), "the same problem is noted once");
        let e = Watched::new(spec("x", ProcessSelect::Pattern("(".into()))).unwrap_err();
        assert!(e.to_string().contains("not a valid regular expression"), "{e}");
    }

    /// Issue 34: a busy loop in a cgroup held to a quarter core is bounded at 25% of a core,
    /// and every period it runs in ends throttled, however busy the machine is.
    #[test]
    fn issue_34_a_cpu_quota_bounds_the_cpu_series_and_its_throttling_is_recorded() {
        if !crest_testkit::cgroup::require("cpu") {
            return;
        }
        let group = crest_testkit::cgroup::CpuCgroup::new(0.25).unwrap();
        let child = Kill(Command::new("sh").args(["-c", "while :; do :; done"]).spawn().unwrap());
        // The most CPU weight a group can have: however busy the machine, the loop gets its
        // quarter core in every period and is throttled in each, which is what is asserted.
        group.group().set("cpu.shares", "262144").unwrap();
        group.add(child.0.id()).unwrap();
        let mut w = Watched::new(spec("busy", ProcessSelect::Pid(child.0.id()))).unwrap();
        let first = w.sample(0.0);
        let limits = first.limits.clone().unwrap();
        assert_eq!(limits.cpu_quota_cores, Some(0.25));
        assert_eq!(limits.cgroup_version, Some(1));
        assert!(limits.open_files.is_some() && limits.cores.is_some(), "{limits:?}");
        assert!(
            value(&first, "process_cpu_throttled_percent").is_none(),
            "it needs two readings"
        );
        std::thread::sleep(std::time::Duration::from_millis(1500));
        let second = w.sample(1.5);
        let cpu = second
            .readings
            .iter()
            .find(|r| r.key.metric == "process_cpu_percent")
            .unwrap();
        assert_eq!(cpu.limit, Some(25.0));
        assert!(cpu.value <= 30.0, "a quarter core's quota let it use {}%", cpu.value);
        let throttled = value(&second, "process_cpu_throttled_percent").unwrap();
        assert!(throttled > 50.0, "a busy loop under a quota is throttled: {throttled}%");
        assert!(second.events.is_empty(), "{:?}", second.events);
    }

    /// Issue 34: a process pinned to one core may use one core, whatever the host has.
    #[test]
    fn issue_34_a_process_pinned_to_one_core_is_bounded_at_one_core() {
        let child = Kill(
            Command::new("taskset")
                .args(["-c", "0", "sleep", "4244.5"])
                .spawn()
                .unwrap(),
        );
        std::thread::sleep(std::time::Duration::from_millis(100));
        let mut w = Watched::new(spec("pinned", ProcessSelect::Pid(child.0.id()))).unwrap();
        w.sample(0.0);
        std::thread::sleep(std::time::Duration::from_millis(200));
        let s = w.sample(0.2);
        let limits = s.limits.clone().unwrap();
        assert_eq!(limits.cores, Some(1.0));
        let quota = limits.cpu_quota_cores.unwrap_or(1.0).min(1.0);
        let cpu = s
            .readings
            .iter()
            .find(|r| r.key.metric == "process_cpu_percent")
            .unwrap();
        assert_eq!(cpu.limit, Some(quota * 100.0));
        assert_eq!(limits.address_space_bytes, address_space_limit(child.0.id() as i32));
    }

    /// The core a process is pinned to, kept busy by another process beside it, reads full:
    /// every process's time on it counts, not only the watched one's (which sleeps here).
    #[test]
    fn the_cores_a_pinned_process_may_run_on_read_busy_with_other_work() {
        if crate::host::cpu_ticks().unwrap().len() < 2 {
            return;
        }
        let spin = Kill(
            Command::new("taskset")
                .args(["-c", "0", "sh", "-c", "while :; do :; done"])
                .spawn()
                .unwrap(),
        );
        let child = Kill(
            Command::new("taskset")
                .args(["-c", "0", "sleep", "4244.6"])
                .spawn()
                .unwrap(),
        );
        std::thread::sleep(std::time::Duration::from_millis(100));
        let mut w = Watched::new(spec("pinned", ProcessSelect::Pid(child.0.id()))).unwrap();
        let free = Kill(Command::new("sleep").arg("4244.7").spawn().unwrap());
        let mut unpinned = Watched::new(spec("free", ProcessSelect::Pid(free.0.id()))).unwrap();
        let busy_of = |s: &ProcessSample| {
            s.readings
                .iter()
                .find(|r| r.key.metric == "process_cores_busy_percent")
                .map(|r| (r.value, r.limit))
        };
        assert_eq!(busy_of(&w.sample(0.0)), None, "busy time needs two readings");
        unpinned.sample(0.0);
        std::thread::sleep(std::time::Duration::from_millis(300));
        let s = w.sample(0.3);
        let (busy, limit) = busy_of(&s).unwrap();
        assert!(busy > 90.0 && busy <= 100.0, "core 0 {busy}% busy with a spinner on it");
        assert_eq!(limit, Some(100.0));
        let cpu = value(&s, "process_cpu_percent").unwrap();
        assert!(cpu < 10.0, "the sleeper used {cpu}% of a core");
        assert_eq!(
            busy_of(&unpinned.sample(0.3)),
            None,
            "a process that may run on every core has the host's CPU for it"
        );
        drop(spin);
    }

    fn address_space_limit(pid: i32) -> Option<f64> {
        match Process::new(pid).ok()?.limits().ok()?.max_address_space.soft_limit {
            LimitValue::Value(v) => Some(v as f64),
            LimitValue::Unlimited => None,
        }
    }

    /// Issue 34: a process that outgrows its memory cgroup is killed by the kernel; the
    /// cgroup's count of OOM kills says so after the process has gone.
    #[test]
    fn issue_34_a_process_killed_by_its_memory_cgroup_is_an_oom_kill_at_its_limit() {
        if !crest_testkit::cgroup::require("memory") {
            return;
        }
        const LIMIT: u64 = 64 << 20;
        let group = crest_testkit::cgroup::MemoryCgroup::new(LIMIT).unwrap();
        // It waits for a line before growing, so it grows inside the group.
        let grow = "import sys\nsys.stdin.readline()\nheld = []\nwhile True:\n    held.append(b'x' * (1 << 20))\n";
        let mut child = Kill(
            Command::new("python3")
                .args(["-c", grow])
                .stdin(std::process::Stdio::piped())
                .spawn()
                .unwrap(),
        );
        let pid = child.0.id();
        group.add(pid).unwrap();
        let mut w = Watched::new(spec("hog", ProcessSelect::Pid(pid))).unwrap();
        let first = w.sample(0.0);
        assert_eq!(first.limits.unwrap().memory_limit_bytes, Some(LIMIT as f64));
        let resident = first
            .readings
            .iter()
            .find(|r| r.key.metric == "process_resident_memory_bytes")
            .unwrap();
        assert_eq!(
            resident.limit,
            Some(LIMIT as f64),
            "v1 memory.limit_in_bytes bounds the series"
        );
        use std::io::Write;
        child.0.stdin.take().unwrap().write_all(b"go\n").unwrap();
        let until = Instant::now() + std::time::Duration::from_secs(60);
        let status = loop {
            if let Some(status) = child.0.try_wait().unwrap() {
                break status;
            }
            assert!(Instant::now() < until, "the OOM killer never acted");
            std::thread::sleep(std::time::Duration::from_millis(50));
        };
        assert!(!status.success());
        let after = w.sample(1.0);
        assert_eq!(after.events.len(), 1, "{:?}", after.events);
        let e = &after.events[0];
        assert_eq!(e.kind, EventKind::OomKilled);
        assert_eq!(e.pid, Some(pid));
        assert!(e.oom_kills.unwrap() >= 1);
        assert_eq!(e.memory_limit_bytes, Some(LIMIT as f64));
        assert_eq!(
            after.notes,
            vec![MonitorNote::Gone {
                what: format!("pid {pid}"),
                at_s: 1.0
            }]
        );
        assert!(w.sample(2.0).events.is_empty(), "said once");
    }

    /// Issue 34: a process stopped with SIGTERM exited; nothing killed it for memory.
    #[test]
    fn issue_34_a_process_ended_by_sigterm_exited() {
        let mut child = Kill(Command::new("sleep").arg("4245.5").spawn().unwrap());
        let pid = child.0.id();
        let mut w = Watched::new(spec("s", ProcessSelect::Pid(pid))).unwrap();
        assert!(w.sample(0.0).events.is_empty());
        Command::new("kill").args(["-TERM", &pid.to_string()]).status().unwrap();
        child.0.wait().unwrap();
        let e = w.sample(1.0).events;
        assert_eq!(e.len(), 1, "{e:?}");
        assert_eq!((e[0].kind, e[0].pid, e[0].at_s), (EventKind::Exited, Some(pid), 1.0));
    }

    /// Issue 34: a service restarted writes its new pid in its pid file: it exited, then came
    /// back.
    #[test]
    fn issue_34_a_pid_file_naming_a_new_process_is_a_restart() {
        let dir = tempfile::tempdir().unwrap();
        let file = dir.path().join("app.pid");
        let mut old = Kill(Command::new("sleep").arg("4246.5").spawn().unwrap());
        std::fs::write(&file, format!("{}\n", old.0.id())).unwrap();
        let mut w = Watched::new(spec("app", ProcessSelect::PidFile(file.clone()))).unwrap();
        assert!(w.sample(0.0).events.is_empty());
        old.0.kill().unwrap();
        old.0.wait().unwrap();
        let e = w.sample(1.0).events;
        assert_eq!(e.len(), 1, "{e:?}");
        assert_eq!((e[0].kind, e[0].pid), (EventKind::Exited, Some(old.0.id())));
        let new = Kill(Command::new("sleep").arg("4246.5").spawn().unwrap());
        std::fs::write(&file, format!("{}\n", new.0.id())).unwrap();
        let e = w.sample(2.0).events;
        assert_eq!(e.len(), 1, "{e:?}");
        assert_eq!(
            (e[0].kind, e[0].pid, e[0].new_pid, e[0].at_s),
            (EventKind::Restarted, Some(old.0.id()), Some(new.0.id()), 2.0)
        );
        assert!(w.sample(3.0).events.is_empty());
    }

    /// Issue 34: members of a group come and go (PostgreSQL's backends); only the whole group
    /// going and coming back are events.
    #[test]
    fn issue_34_a_group_exits_only_when_all_of_it_has_gone() {
        let sleeper = || Kill(Command::new("sleep").arg("4247.5").spawn().unwrap());
        let (mut a, mut b) = (sleeper(), sleeper());
        std::thread::sleep(std::time::Duration::from_millis(100));
        let mut w = Watched::new(spec("g", ProcessSelect::Pattern("^sleep 4247\\.5$".into()))).unwrap();
        let first = w.sample(0.0);
        assert!(first.events.is_empty());
        let limits = first.limits.unwrap();
        assert!(limits.cores.is_some());
        assert_eq!(limits.open_files, None, "an rlimit bounds one process, not a group");
        a.0.kill().unwrap();
        a.0.wait().unwrap();
        assert!(w.sample(1.0).events.is_empty(), "one member of two ended");
        b.0.kill().unwrap();
        b.0.wait().unwrap();
        let e = w.sample(2.0).events;
        assert_eq!((e.len(), e[0].kind, e[0].pid), (1, EventKind::Exited, Some(b.0.id())));
        let c = sleeper();
        std::thread::sleep(std::time::Duration::from_millis(100));
        let e = w.sample(3.0).events;
        assert_eq!(
            (e.len(), e[0].kind, e[0].new_pid),
            (1, EventKind::Restarted, Some(c.0.id()))
        );
    }
}
