//! The machine crest runs on: load average, CPU and memory, from /proc.
//!
//! When the target runs on the same machine (a local test), these are its figures too; when it
//! does not, they are the load generator's, which is how a busy generator shows itself.

use crate::error::SampleError;
use crate::store::Reading;
use crest_model::monitor::{SeriesKey, Unit};
use procfs::{CpuTime, Current, CurrentSI, FromBufReadSI, KernelStats, LoadAverage, Meminfo};
use std::collections::{BTreeMap, BTreeSet};

/// Busy and total CPU time at the last sample, to turn counters into a percentage.
#[derive(Debug, Default)]
pub(crate) struct Host {
    last_cpu: Option<(u64, u64)>,
}

fn busy_and_total(t: &CpuTime) -> (u64, u64) {
    let idle = t.idle + t.iowait.unwrap_or(0);
    let total = t.user
        + t.nice
        + t.system
        + t.idle
        + t.iowait.unwrap_or(0)
        + t.irq.unwrap_or(0)
        + t.softirq.unwrap_or(0)
        + t.steal.unwrap_or(0);
    (total - idle.min(total), total)
}

/// Busy and total ticks of each online CPU by its number, from /proc/stat. The kernel leaves
/// offline CPUs out, so the numbers are read from the lines' names rather than their order.
pub(crate) fn cpu_ticks() -> Result<BTreeMap<u32, (u64, u64)>, SampleError> {
    let text = std::fs::read_to_string("/proc/stat").map_err(|e| SampleError::Proc {
        file: "/proc/stat",
        reason: e.into(),
    })?;
    let stats = KernelStats::from_buf_read(text.as_bytes(), procfs::current_system_info()).map_err(|reason| {
        SampleError::Proc {
            file: "/proc/stat",
            reason,
        }
    })?;
    let ids = text
        .lines()
        .filter_map(|l| l.split_whitespace().next()?.strip_prefix("cpu"))
        .filter(|n| !n.is_empty())
        .map(|n| n.parse::<u32>().ok());
    Ok(ids
        .zip(&stats.cpu_time)
        .filter_map(|(id, t)| Some((id?, busy_and_total(t))))
        .collect())
}

/// How busy a set of CPUs was between two readings of [`cpu_ticks`], in percent of them all;
/// `None` when either reading lacks one of them or no time passed.
pub(crate) fn busy_percent(
    cpus: &BTreeSet<u32>,
    before: &BTreeMap<u32, (u64, u64)>,
    now: &BTreeMap<u32, (u64, u64)>,
) -> Option<f64> {
    let (mut busy, mut total) = (0u64, 0u64);
    for cpu in cpus {
        let ((b0, t0), (b1, t1)) = (before.get(cpu)?, now.get(cpu)?);
        busy += b1.saturating_sub(*b0);
        total += t1.saturating_sub(*t0);
    }
    (total > 0).then(|| busy as f64 / total as f64 * 100.0)
}

impl Host {
    pub(crate) fn sample(&mut self) -> Result<Vec<Reading>, SampleError> {
        let mut out = Vec::new();
        let load = LoadAverage::current().map_err(|reason| SampleError::Proc {
            file: "/proc/loadavg",
            reason,
        })?;
        out.push(Reading {
            key: SeriesKey::new("load_average"),
            title: "load average (1 min)".into(),
            unit: Unit::Number,
            limit: None,
            value: f64::from(load.one),
        });
        let stats = KernelStats::current().map_err(|reason| SampleError::Proc {
            file: "/proc/stat",
            reason,
        })?;
        let (busy, total) = busy_and_total(&stats.total);
        if let Some((b0, t0)) = self.last_cpu.replace((busy, total)) {
            if total > t0 {
                out.push(Reading {
                    key: SeriesKey::new("host_cpu_percent"),
                    title: "host CPU (all cores)".into(),
                    unit: Unit::Percent,
                    limit: Some(100.0),
                    value: busy.saturating_sub(b0) as f64 / (total - t0) as f64 * 100.0,
                });
            }
        }
        let mem = Meminfo::current().map_err(|reason| SampleError::Proc {
            file: "/proc/meminfo",
            reason,
        })?;
        let available = mem
            .mem_available
            .unwrap_or(mem.mem_free + mem.cached.min(mem.mem_total));
        out.push(Reading {
            key: SeriesKey::new("host_memory_used_bytes"),
            title: "host memory in use".into(),
            unit: Unit::Bytes,
            limit: Some(mem.mem_total as f64),
            value: mem.mem_total.saturating_sub(available) as f64,
        });
        Ok(out)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_host_reads_plausible_figures() {
        let mut h = Host::default();
        let first = h.sample().unwrap();
        assert!(
            first.iter().all(|r| r.key.metric != "host_cpu_percent"),
            "CPU needs two readings"
        );
        // Burn a little CPU so the counters move.
        let t = std::time::Instant::now();
        let mut x = 0u64;
        while t.elapsed() < std::time::Duration::from_millis(50) {
            x = x.wrapping_add(std::hint::black_box(1));
        }
        let second = h.sample().unwrap();
        let get = |m: &str| second.iter().find(|r| r.key.metric == m).map(|r| r.value);
        let cpu = get("host_cpu_percent").unwrap();
        assert!(cpu > 0.0 && cpu <= 100.0, "{cpu} (x = {x})");
        assert!(get("load_average").unwrap() >= 0.0);
        let mem = second
            .iter()
            .find(|r| r.key.metric == "host_memory_used_bytes")
            .unwrap();
        assert!(mem.value > 0.0 && mem.value < mem.limit.unwrap());
    }
}
