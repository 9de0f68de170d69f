//! What the kernel bounds a watched process by: the CPUs it may run on, its cgroup's CPU quota
//! and memory limit, and its rlimits, read at every sample (a service restarted under new
//! limits is followed).
//!
//! These are the ceilings a series is judged against when crest names a bottleneck: 100% of a
//! core is the ceiling of a process pinned to one core on a 16-core host, 25% that of one held
//! to a quarter core by its cgroup. For a group of processes (a name or a pattern) only what
//! bounds them together is given: the CPUs any of them may use, and a cgroup's limits when all
//! share one cgroup; an rlimit is per process, so it bounds only a spec of one.

use crate::cgroup::{Bound, Cgroups, Membership};
use crest_model::monitor::ProcessLimits;
use procfs::process::{LimitValue, Process};
use std::collections::{BTreeMap, BTreeSet};

/// The limits of a spec's processes, and the cgroup whose quota bounds them (its throttling is
/// theirs).
#[derive(Clone, Debug, Default, PartialEq)]
pub(crate) struct Bounds {
    pub(crate) limits: ProcessLimits,
    pub(crate) quota: Option<Bound>,
    /// The CPUs any of them may run on, by affinity.
    pub(crate) cpus: Option<BTreeSet<u32>>,
}

impl Bounds {
    /// The ceiling of the spec's CPU series, in percent of one core: the fewer of the cores it
    /// may run on and its quota.
    pub(crate) fn cpu_percent(&self) -> Option<f64> {
        let l = &self.limits;
        match (l.cores, l.cpu_quota_cores) {
            (Some(a), Some(b)) => Some(a.min(b)),
            (a, b) => a.or(b),
        }
        .map(|cores| cores * 100.0)
    }
}

/// Reads the bounds of `members` (each process with its cgroup membership, when it could be
/// read); `None` when none of them could be read.
pub(crate) fn read(members: &BTreeMap<i32, Option<Membership>>, cgroups: &Cgroups) -> Option<Bounds> {
    let mut cpus = BTreeSet::new();
    let mut any_affinity = false;
    for &pid in members.keys() {
        if let Some(set) = affinity(pid) {
            cpus.extend(set);
            any_affinity = true;
        }
    }
    let memberships: BTreeSet<&Membership> = members.values().flatten().collect();
    if !any_affinity && memberships.is_empty() {
        return None;
    }
    // A cgroup bounds a group only when it holds every member.
    let shared = match (memberships.len(), members.values().all(Option::is_some)) {
        (1, true) => memberships.first().copied(),
        _ => None,
    };
    let quota = shared.and_then(|m| cgroups.cpu_quota(m));
    let memory = shared.and_then(|m| cgroups.memory_limit(m));
    let version = shared.and_then(|m| cgroups.group(m, "memory").or_else(|| cgroups.group(m, "cpu")));
    let one = match members.len() {
        1 => members
            .keys()
            .next()
            .and_then(|&pid| Process::new(pid).ok()?.limits().ok()),
        _ => None,
    };
    let soft = |v: &LimitValue| match v {
        LimitValue::Value(v) => Some(*v as f64),
        LimitValue::Unlimited => None,
    };
    Some(Bounds {
        limits: ProcessLimits {
            cores: any_affinity.then_some(cpus.len() as f64),
            cpu_quota_cores: quota.as_ref().map(|q| q.value),
            memory_limit_bytes: memory.map(|m| m.value),
            address_space_bytes: one.as_ref().and_then(|l| soft(&l.max_address_space.soft_limit)),
            open_files: one.as_ref().and_then(|l| soft(&l.max_open_files.soft_limit)),
            cgroup_version: version.map(|g| g.version),
        },
        quota,
        cpus: any_affinity.then_some(cpus),
    })
}

/// The CPUs a process may run on, from `Cpus_allowed_list` in /proc/PID/status.
fn affinity(pid: i32) -> Option<BTreeSet<u32>> {
    let status = std::fs::read_to_string(format!("/proc/{pid}/status")).ok()?;
    let list = status.lines().find_map(|l| l.strip_prefix("Cpus_allowed_list:"))?;
    cpu_list(list)
}

/// A kernel CPU list, `0-3,8,10-11`.
fn cpu_list(text: &str) -> Option<BTreeSet<u32>> {
    let mut set = BTreeSet::new();
    for part in text.trim().split(',').filter(|p| !p.is_empty()) {
        let (a, b): (u32, u32) = match part.split_once('-') {
            Some((a, b)) => (a.trim().parse().ok()?, b.trim().parse().ok()?),
            None => {
                let n = part.trim().parse().ok()?;
                (n, n)
            }
        };
        set.extend(a..=b);
    }
    Some(set)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn cpu_lists_are_counted() {
        let n = |t: &str| cpu_list(t).map(|s| s.len());
        assert_eq!(n("0-1"), Some(2));
        assert_eq!(n("0-3,8,10-11\n"), Some(7));
        assert_eq!(n("5"), Some(1));
        assert_eq!(n("x"), None);
    }

    #[test]
    fn the_cpu_ceiling_is_the_fewer_of_cores_and_quota() {
        let b = |cores, quota| Bounds {
            limits: ProcessLimits {
                cores,
                cpu_quota_cores: quota,
                ..ProcessLimits::default()
            },
            quota: None,
            cpus: None,
        };
        assert_eq!(b(Some(2.0), Some(0.25)).cpu_percent(), Some(25.0));
        assert_eq!(b(Some(1.0), Some(4.0)).cpu_percent(), Some(100.0));
        assert_eq!(b(Some(2.0), None).cpu_percent(), Some(200.0));
        assert_eq!(b(None, None).cpu_percent(), None);
    }
}
