//! What happened to a watched process between two samples: it exited, the OOM killer killed
//! it, or it came back under a new pid.
//!
//! A service that dies under load is the most important thing a run can find, and a line in a
//! source's notes is not enough for the report to mark it on a chart or name it as the cause.
//! An OOM kill leaves no trace in the process itself, only in its memory cgroup's count of
//! kills, so the count is read at every sample while the process lives and read again, from the
//! same cgroup (which usually outlives it), once it has gone: a rise means the kernel killed it.
//! A spec of one process (a pid, a pid file) follows that process; a spec of a group (a name,
//! a pattern) has members that come and go as a matter of course (PostgreSQL's backends, a
//! server's workers), so only the whole group going, coming back, or a member ending as its
//! cgroup counts an OOM kill, is an event.

use crate::cgroup::{Cgroups, Group};
use crest_model::monitor::{EventKind, ProcessEvent};
use std::collections::{BTreeMap, BTreeSet, HashMap};

/// A cgroup's OOM kill count and memory limit, as last read.
#[derive(Clone, Copy, Debug, Default)]
struct Count {
    kills: Option<u64>,
    limit: Option<f64>,
}

/// The fate of one spec's processes, from sample to sample.
#[derive(Debug, Default)]
pub(crate) struct Fates {
    /// Whether the spec is one process (a pid or a pid file) rather than a group.
    single: bool,
    /// The members at the last sample, each with the memory cgroup its OOM kills count in.
    members: BTreeMap<i32, Option<Group>>,
    /// OOM kill counts of the cgroups of the members, now and at the last sample.
    counts: HashMap<Group, Count>,
    /// The members when the spec was last seen running, while it is gone.
    ended: Option<BTreeSet<i32>>,
    /// Kill counts that rose with no member gone yet, and the samples they have waited: the
    /// kernel counts a kill before its victim has finished exiting (freeing a large heap takes
    /// a while), so the victim may vanish a sample later.
    pending: HashMap<Group, (u64, Option<f64>, u8)>,
}

/// Samples an OOM kill count's rise waits for its victim to vanish.
const PENDING_SAMPLES: u8 = 3;

impl Fates {
    pub(crate) fn new(single: bool) -> Self {
        Fates {
            single,
            ..Fates::default()
        }
    }

    /// Compares the members now (each with its memory cgroup) with those at the last sample,
    /// taken at `at_s`, and says what happened. `alive` says whether a pid still runs (one that
    /// has left a spec of one process may have been replaced in its pid file while running).
    pub(crate) fn update(
        &mut self,
        now: BTreeMap<i32, Option<Group>>,
        cgroups: &Cgroups,
        at_s: f64,
        alive: impl Fn(i32) -> bool,
    ) -> Vec<ProcessEvent> {
        let mut rises = self.read_counts(&now, cgroups);
        for (g, (rise, limit, _)) in &self.pending {
            let r = rises.entry(g.clone()).or_insert((0, *limit));
            r.0 += rise;
        }
        let event = |kind, pid: Option<i32>| ProcessEvent {
            kind,
            source: 0,
            at_s,
            pid: pid.map(|p| p as u32),
            new_pid: None,
            oom_kills: None,
            memory_limit_bytes: None,
        };
        let vanished: BTreeMap<i32, Option<Group>> = self
            .members
            .iter()
            .filter(|(pid, _)| !now.contains_key(pid))
            .map(|(p, g)| (*p, g.clone()))
            .collect();
        // Each cgroup whose count rose as a member in it ended: one kill event, naming the
        // lowest such member.
        let mut killed: BTreeMap<&Group, i32> = BTreeMap::new();
        for (pid, g) in &vanished {
            if let Some(g) = g.as_ref().filter(|g| rises.contains_key(*g)) {
                killed.entry(g).or_insert(*pid);
            }
        }
        // Rises no vanished member explains yet wait a few samples for their victim.
        let mut pending = HashMap::new();
        for (g, (rise, limit)) in &rises {
            if !killed.contains_key(g) {
                let waited = self.pending.get(g).map_or(0, |p| p.2) + 1;
                if waited < PENDING_SAMPLES {
                    pending.insert(g.clone(), (*rise, *limit, waited));
                }
            }
        }
        let kills: Vec<ProcessEvent> = killed
            .into_iter()
            .map(|(g, pid)| {
                let (rise, limit) = rises[g];
                ProcessEvent {
                    oom_kills: Some(rise),
                    memory_limit_bytes: limit,
                    ..event(EventKind::OomKilled, Some(pid))
                }
            })
            .collect();
        let mut out = Vec::new();
        let before: BTreeSet<i32> = self.members.keys().copied().collect();
        let gone = if self.single {
            !vanished.is_empty()
        } else {
            !before.is_empty() && now.is_empty()
        };
        if gone {
            let dead = vanished.keys().copied().filter(|p| !alive(*p)).min();
            match (self.single, dead) {
                // Replaced in its pid file while still running: it did not end.
                (true, None) => {}
                _ if !kills.is_empty() => out.extend(kills),
                _ => out.push(event(EventKind::Exited, vanished.keys().copied().min())),
            }
            self.ended = Some(before);
        } else {
            out.extend(kills);
        }
        if let (Some(ended), Some(&new)) = (&self.ended, now.keys().next()) {
            // The same processes back (a pid file read while being rewritten) did not restart.
            let same = now.keys().copied().collect::<BTreeSet<i32>>() == *ended;
            if !same {
                out.push(ProcessEvent {
                    new_pid: Some(new as u32),
                    ..event(EventKind::Restarted, ended.first().copied())
                });
            }
            self.ended = None;
        }
        self.members = now;
        self.pending = pending;
        out
    }

    /// Reads the OOM kill count of every cgroup a member is in now or was in at the last
    /// sample; returns those that rose since, with the rise and the cgroup's memory limit.
    fn read_counts(
        &mut self,
        now: &BTreeMap<i32, Option<Group>>,
        cgroups: &Cgroups,
    ) -> HashMap<Group, (u64, Option<f64>)> {
        let groups: BTreeSet<&Group> = now.values().chain(self.members.values()).flatten().collect();
        let mut counts = HashMap::new();
        let mut rises = HashMap::new();
        for g in groups {
            let before = self.counts.get(g).copied().unwrap_or_default();
            let c = Count {
                kills: Cgroups::oom_kills(g).or(before.kills),
                limit: cgroups.memory_limit_of(g).map(|b| b.value).or(before.limit),
            };
            if let (Some(a), Some(b)) = (before.kills, c.kills) {
                if b > a {
                    rises.insert(g.clone(), (b - a, c.limit));
                }
            }
            counts.insert(g.clone(), c);
        }
        self.counts = counts;
        rises
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    /// A v2 cgroup in a temporary directory whose OOM kill count the test sets.
    struct Fixture {
        root: tempfile::TempDir,
    }

    impl Fixture {
        fn new() -> Self {
            let root = tempfile::tempdir().unwrap();
            std::fs::create_dir(root.path().join("app")).unwrap();
            std::fs::write(root.path().join("app/memory.max"), "1048576\n").unwrap();
            let f = Fixture { root };
            f.kills(0);
            f
        }
        fn kills(&self, n: u64) {
            std::fs::write(
                self.root.path().join("app/memory.events"),
                format!("oom 0\noom_kill {n}\n"),
            )
            .unwrap();
        }
        fn group(&self) -> Option<Group> {
            Some(Group {
                dir: self.root.path().join("app"),
                version: 2,
            })
        }
        fn cgroups(&self) -> Cgroups {
            Cgroups::new(self.root.path())
        }
        fn members(&self, pids: &[i32]) -> BTreeMap<i32, Option<Group>> {
            pids.iter().map(|p| (*p, self.group())).collect()
        }
    }

    fn kinds(e: &[ProcessEvent]) -> Vec<(EventKind, Option<u32>, Option<u32>)> {
        e.iter().map(|e| (e.kind, e.pid, e.new_pid)).collect()
    }

    #[test]
    fn a_group_whose_members_come_and_go_has_no_events_until_it_is_all_gone() {
        let f = Fixture::new();
        let c = f.cgroups();
        let mut fates = Fates::new(false);
        let dead = |_| false;
        assert!(fates.update(f.members(&[10, 11, 12]), &c, 0.0, dead).is_empty());
        assert!(fates.update(f.members(&[10, 13]), &c, 1.0, dead).is_empty(), "backends");
        // A member killed for memory while the rest run.
        f.kills(1);
        let e = fates.update(f.members(&[10]), &c, 2.0, dead);
        assert_eq!(kinds(&e), vec![(EventKind::OomKilled, Some(13), None)]);
        assert_eq!((e[0].oom_kills, e[0].memory_limit_bytes), (Some(1), Some(1048576.0)));
        let e = fates.update(f.members(&[]), &c, 3.0, dead);
        assert_eq!(kinds(&e), vec![(EventKind::Exited, Some(10), None)]);
        assert!(fates.update(f.members(&[]), &c, 4.0, dead).is_empty());
        let e = fates.update(f.members(&[20, 21]), &c, 5.0, dead);
        assert_eq!(kinds(&e), vec![(EventKind::Restarted, Some(10), Some(20))]);
        assert_eq!(e[0].at_s, 5.0);
    }

    #[test]
    fn one_process_killed_for_memory_then_restarted_under_a_new_pid() {
        let f = Fixture::new();
        let c = f.cgroups();
        let mut fates = Fates::new(true);
        let dead = |_| false;
        assert!(fates.update(f.members(&[7]), &c, 0.0, dead).is_empty());
        f.kills(2);
        let e = fates.update(f.members(&[]), &c, 1.0, dead);
        assert_eq!(kinds(&e), vec![(EventKind::OomKilled, Some(7), None)]);
        assert_eq!(e[0].oom_kills, Some(2));
        let e = fates.update(f.members(&[8]), &c, 2.0, dead);
        assert_eq!(kinds(&e), vec![(EventKind::Restarted, Some(7), Some(8))]);
        // Died and replaced within one interval: both.
        let e = fates.update(f.members(&[9]), &c, 3.0, dead);
        assert_eq!(
            kinds(&e),
            vec![
                (EventKind::Exited, Some(8), None),
                (EventKind::Restarted, Some(8), Some(9))
            ]
        );
        // Replaced in its pid file while still running: a restart, not an exit.
        let e = fates.update(f.members(&[10]), &c, 4.0, |_| true);
        assert_eq!(kinds(&e), vec![(EventKind::Restarted, Some(9), Some(10))]);
    }

    #[test]
    fn a_kill_counted_before_its_victim_vanishes_is_still_an_oom_kill() {
        let f = Fixture::new();
        let c = f.cgroups();
        let mut fates = Fates::new(true);
        let dead = |_| false;
        assert!(fates.update(f.members(&[7]), &c, 0.0, dead).is_empty());
        // The kernel counted the kill; the victim is still freeing its memory.
        f.kills(1);
        assert!(fates.update(f.members(&[7]), &c, 1.0, dead).is_empty());
        let e = fates.update(f.members(&[]), &c, 2.0, dead);
        assert_eq!(kinds(&e), vec![(EventKind::OomKilled, Some(7), None)]);
        assert_eq!(e[0].oom_kills, Some(1));
    }

    #[test]
    fn a_pid_file_read_empty_while_rewritten_is_no_restart() {
        let f = Fixture::new();
        let c = f.cgroups();
        let mut fates = Fates::new(true);
        assert!(fates.update(f.members(&[7]), &c, 0.0, |_| true).is_empty());
        // Read empty: the process still runs.
        assert!(fates.update(f.members(&[]), &c, 1.0, |_| true).is_empty());
        assert!(fates.update(f.members(&[7]), &c, 2.0, |_| true).is_empty());
    }
}
