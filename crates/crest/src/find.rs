//! `crest find`: probes the target at rising load until the service level breaks or throughput
//! stops growing, then narrows down the knee and the limit. The decisions are
//! `crest_analysis::find::next`; this module runs the probes and joins them into one results
//! document, so the report shows every probe as a step.

use crate::cli::{FindArgs, OutputArgs};
use crate::measure::Readers;
use crate::parts::Parts;
use crate::{output, rundir};
use anyhow::{bail, Context, Result};
use crest_analysis::find::{judge, next, Level, Next, Probe, Slo};
use crest_engine::Workload;
use crest_model::expr::{Bound, Expr, Metric, Op};
use crest_model::number::short;
use crest_model::plan::{defaults, Draft, LoadDraft, Plan, StopRule};
use crest_model::reason::{SearchEnd, WorkUnit};
use crest_model::results::{FindRecord, LoadKind, ProbeRecord, Segment, StopRecord};
use crest_model::step::StepKind;
use crest_report::fmt::words;
use std::sync::Arc;
use std::time::{Duration, Instant};

/// Reads `--slo` expressions into a service level, over the default one (`--slo` may change
/// its error rate).
pub fn slo(exprs: &[String]) -> Result<Slo> {
    let mut slo = Slo {
        max_error_rate: 1.0,
        max_p99_ms: None,
    };
    for text in std::iter::once(defaults::SLO).chain(exprs.iter().map(String::as_str)) {
        let e = Expr::parse(text).map_err(|m| anyhow::anyhow!("--slo {m}"))?;
        let Bound::Value(v) = e.bound else {
            bail!("--slo {text:?}: compare with a value")
        };
        if !matches!(e.op, Op::Lt | Op::Le) || e.name.is_some() {
            bail!("--slo {text:?}: write an upper bound for all requests, e.g. 'p99 < 200ms'");
        }
        match e.metric {
            Metric::ErrorRate => slo.max_error_rate = v,
            Metric::Latency(q) if (q - 99.0).abs() < f64::EPSILON => slo.max_p99_ms = Some(v),
            _ => bail!("--slo {text:?}: crest find checks p99 and error_rate"),
        }
    }
    Ok(slo)
}

/// The flags of `crest find` that add to its plan (its thresholds and stop conditions are its
/// service level).
fn flags(a: &FindArgs) -> crate::plan::Flags<'_> {
    crate::plan::Flags {
        threads: a.threads,
        workers: None,
        thresholds: &[],
        stop_when: &[],
        monitor: &a.monitor,
        log_requests: a.output.log_requests,
        collected: false,
        manual: false,
        duration: false,
        provenance: &a.output.provenance,
    }
}

/// What the search is run on: a workload and the draft each probe is resolved from.
pub struct Subject<W> {
    pub workload: Arc<W>,
    pub base: Draft,
}

/// `crest find URL` or `crest find SCENARIO`: the subject's draft and workload, resolved from
/// the flags. Returns the exit code.
pub fn command(a: &FindArgs, args: &[String], readers: &Readers) -> Result<u8> {
    crate::output::check_before(&a.output)?;
    // The draft as given, resolved once here for the workload (and to refuse a bad one before
    // the first probe).
    let base = |mut draft: Draft| -> Result<(Plan, Draft)> {
        crate::plan::add_flags(&mut draft, &flags(a))?;
        Ok((crate::plan::finish(draft.clone())?, draft))
    };
    if a.url.contains("://") {
        let (plan, base) = base(crate::plan::url_draft(&a.url, &a.request)?)?;
        let workload = Arc::new(crate::plan::http_workload(&plan)?);
        search_flags(Subject { workload, base }, a, args, readers)
    } else {
        let s = crest_scenario::draft(std::path::Path::new(&a.url))?;
        let (plan, base) = base(s.draft)?;
        let workload = Arc::new(crest_flow::FlowWorkload::new(s.flow.finish(&plan)?));
        search_flags(Subject { workload, base }, a, args, readers)
    }
}

/// Checks the search's flags, then runs it on `subject` (see [`search`]). Returns the exit code.
fn search_flags<W: Workload>(
    subject: Subject<W>,
    a: &FindArgs,
    command_line: &[String],
    readers: &Readers,
) -> Result<u8> {
    let slo = slo(&a.slo)?;
    if a.probe < Duration::from_secs(2) {
        bail!(
            "--probe {}: probes need at least 2s to reach a steady state",
            humantime::format_duration(a.probe)
        );
    }
    if a.max.is_nan() || a.max < 1.0 {
        bail!("--max {}: give a level of at least 1", short(a.max));
    }
    let problem = if a.open {
        crest_model::plan::rate_problem(a.max)
    } else {
        crest_model::plan::users_problem(a.max.min(u64::MAX as f64) as u64)
    };
    if let Some(problem) = problem {
        bail!("--max {}: {problem}", short(a.max));
    }
    if let Some(problem) = crest_model::plan::users_problem(a.concurrency) {
        bail!("-c {}: {problem}", a.concurrency);
    }
    let how = Search {
        slo,
        open: a.open,
        budget: a.budget,
        probe: a.probe,
        max: a.max,
        cap: a.concurrency,
        slo_text: &a.slo,
    };
    search(subject, &how, &a.output, command_line, readers)
}

/// How a search goes: the service level each probe must meet and the bounds of the search.
pub struct Search<'a> {
    /// The service level.
    pub slo: Slo,
    /// Levels are arrivals per second (open model) rather than users.
    pub open: bool,
    /// The time the whole search may take.
    pub budget: Duration,
    /// The length of one probe.
    pub probe: Duration,
    /// The highest level to probe.
    pub max: f64,
    /// Open model: the cap on requests in flight.
    pub cap: u64,
    /// The service level as written (`--slo`), for the report; empty for the default.
    pub slo_text: &'a [String],
}

/// Runs the search described by `how` on `subject` and writes the report: the one search of
/// `crest find` and `crest demo`. Returns the exit code.
pub fn search<W: Workload>(
    subject: Subject<W>,
    how: &Search<'_>,
    out: &OutputArgs,
    command_line: &[String],
    readers: &Readers,
) -> Result<u8> {
    let Search {
        ref slo,
        open,
        budget,
        probe: probe_len,
        max,
        cap,
        slo_text,
    } = *how;
    let dir = rundir::prepare_dir(out.out.as_deref(), out.force)?;
    let started = Instant::now();
    let start_level = if open { 10.0 } else { 1.0 };
    let mut probes: Vec<Probe> = Vec::new();
    let mut unit = WorkUnit::Requests;
    let mut records: Vec<ProbeRecord> = Vec::new();
    let mut parts = Parts::new(&dir, command_line, readers);
    let ended = loop {
        let level = match next(&probes, slo, open, start_level, max) {
            Next::Probe(l) => l,
            Next::Done(done) => break SearchEnd::Done(done),
        };
        if started.elapsed() + probe_len > budget {
            break SearchEnd::Budget {
                budget_s: budget.as_secs_f64(),
            };
        }
        let plan = probe_plan(&subject.base, Level { value: level, open }, cap, probe_len)?;
        let label = Segment {
            setup: None,
            kind: StepKind::Probe {
                number: probes.len() as u32 + 1,
                level: Level { value: level, open }.step(),
            },
            start_s: 0.0,
            end_s: 0.0,
            users: (!open).then_some(level as u64),
            rate: open.then_some(level),
        };
        let results = parts.measure(&plan, Arc::clone(&subject.workload), label, true)?;
        let a = crest_analysis::analyze(results).context("cannot analyse a probe")?;
        let stop = results.stopped_by.clone();
        // A probe is judged in the run's unit of work: a flow's polls multiply its requests as
        // the service's queue lengthens, so requests per second would keep growing past the
        // point where tasks per second stopped.
        unit = a.unit;
        let seg = &a.unit_segments()[0];
        let achieved = a
            .summary
            .achieved_rps
            .map_or(1.0, |x| if level > 0.0 { x / level } else { 1.0 });
        let p = Probe {
            level,
            success_rps: seg.success_rps,
            p99_ms: seg.latency_ms.p99,
            error_rate: seg.error_rate,
            achieved_share: achieved,
        };
        let miss = judge(&p, slo, open).err();
        let record = ProbeRecord {
            level,
            passed: miss.is_none(),
            measured: Some(p),
            miss,
            verdict: None,
        };
        if !out.quiet {
            eprintln!(
                "probe {} ({}): {}",
                probes.len() + 1,
                words::level(Level { value: level, open }),
                words::probe_record(&record, unit)
            );
        }
        records.push(record);
        // The verdicts exist nowhere else until results.json is written: a search killed later
        // keeps them here, and `crest report` puts them back.
        let so_far = FindRecord {
            model: LoadKind::of(open),
            slo: slo_list(slo_text),
            probes: records.clone(),
            unit,
            ended: Some(SearchEnd::CutShort { probes: records.len() }),
            stopped_because: None,
        };
        if let Err(e) = crate::journal::write_find(&dir, &so_far) {
            eprintln!("warning: {e:#}");
        }
        probes.push(p);
        if parts.interrupted() {
            break SearchEnd::Interrupted;
        }
        if let Some(StopRecord {
            condition,
            saw: Some(saw),
            ..
        }) = stop
        {
            break SearchEnd::Stopped {
                at: Level { value: level, open },
                condition,
                saw,
            };
        }
    };
    if parts.done().is_empty() {
        bail!("no probe ran: {}", words::search_end(&ended, unit));
    }
    let (mut results, journaled) = parts.join(open, cap)?;
    // The search says why it stopped; a stop condition was a probe's verdict, not the run's.
    results.stopped_by = None;
    results.find = Some(FindRecord {
        model: results.config.model,
        slo: slo_list(slo_text),
        probes: records,
        unit,
        ended: Some(ended),
        stopped_because: None,
    });
    let written = output::write_all(&dir, &results, out, journaled, readers.page.as_deref())?;
    if written.complete {
        crate::journal::remove_find(&dir);
    }
    Ok(crate::exit::of_run(results.ended_by, &written, out.strict))
}

/// The service level as given, or the default a search applies without one.
fn slo_list(slo_text: &[String]) -> Vec<String> {
    if slo_text.is_empty() {
        vec![defaults::SLO.to_string()]
    } else {
        slo_text.to_vec()
    }
}

/// The plan of one probe: the base draft at one level (users, or arrivals per second up to
/// `cap` in flight), for one probe's length, as one step named after its level.
fn probe_plan(base: &Draft, level: Level, cap: u64, len: Duration) -> Result<Plan> {
    let load = if level.open {
        LoadDraft::rate(level.value, Some(cap))
    } else {
        LoadDraft::users(level.value.max(1.0) as u64)
    };
    let mut draft = base.at(load, StepKind::Level(level.step()));
    draft.stop = StopRule {
        requests: None,
        duration: Some(len),
    };
    // The service level is the search's own, judged probe by probe.
    draft.thresholds.clear();
    crate::plan::finish(draft)
}
