//! `crest find`: probes the target at rising load until the service level breaks or throughput
//! stops growing, then narrows down the knee and the limit. The decisions are
//! `crest_analysis::find::next`; this module runs the probes and joins them into one results
//! document, so the report shows every probe as a step.

use crate::cli::{FindArgs, OutputArgs};
use crate::measure::{measure, Interrupt};
use crate::{output, rundir};
use anyhow::{bail, Context, Result};
use crest_analysis::find::{judge, next, Level, Next, Probe, Slo};
use crest_engine::Workload;
use crest_model::expr::{Bound, Expr, Metric, Op};
use crest_model::number::short;
use crest_model::plan::{defaults, Draft, LoadDraft, Plan, StopRule};
use crest_model::reason::{SearchEnd, WorkUnit};
use crest_model::results::{self, EndReason, FindRecord, LoadKind, ProbeRecord, Results, Segment, StopRecord};
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
    }
}

/// What the search is run on: a workload and the draft each probe is resolved from.
pub struct Subject<W> {
    pub workload: Arc<W>,
    pub base: Draft,
}

/// `crest find URL` or `crest find SCENARIO`. Returns the exit code.
pub fn command(a: &FindArgs, args: &[String]) -> Result<u8> {
    // The draft as given, resolved once here for the workload (and to refuse a bad one before
    // the first probe).
    let base = |mut draft: Draft| -> Result<(Plan, Draft)> {
        crate::plan::add_flags(&mut draft, &flags(a))?;
        Ok((crate::plan::finish(draft.clone())?, draft))
    };
    if a.url.contains("://") {
        let (plan, base) = base(crate::plan::url_draft(&a.url, &a.request)?)?;
        let workload = Arc::new(crate::plan::http_workload(&plan)?);
        find(Subject { workload, base }, a, args)
    } else {
        let s = crest_scenario::draft(std::path::Path::new(&a.url))?;
        let (plan, base) = base(s.draft)?;
        let workload = Arc::new(crest_flow::FlowWorkload::new(s.flow.finish(&plan)?));
        find(Subject { workload, base }, a, args)
    }
}

/// Runs the search and writes the report. Returns the exit code.
fn find<W: Workload>(subject: Subject<W>, a: &FindArgs, command_line: &[String]) -> Result<u8> {
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
    search(subject, &how, &a.output, command_line)
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

/// Runs the search described by `how` on `subject` and writes the report. Returns the exit code.
pub fn search<W: Workload>(
    subject: Subject<W>,
    how: &Search<'_>,
    out: &OutputArgs,
    command_line: &[String],
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
    let mut parts: Vec<(Segment, Results)> = Vec::new();
    // False once a probe's journal or request log could not be written in full.
    let mut whole = true;
    let mut interrupted = None;
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
        let journal = dir.join(rundir::journal_part(parts.len()));
        let m = measure(
            &plan,
            Arc::clone(&subject.workload),
            command_line,
            true,
            Some((&journal, Some(label.clone()))),
        )?;
        let a = crest_analysis::analyze(&m.results).context("cannot analyse a probe")?;
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
        let stop = m.results.stopped_by.clone();
        whole &= m.whole;
        parts.push((label, m.results));
        probes.push(p);
        if m.interrupted.is_some() {
            interrupted = m.interrupted;
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
    if parts.is_empty() {
        bail!("no probe ran: {}", words::search_end(&ended, unit));
    }
    let mut results = joined(parts, interrupted, open, cap, command_line)?;
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
    let mut written = output::write_all(&dir, &results, out)?;
    written.complete &= whole;
    if written.complete {
        crate::journal::remove_find(&dir);
    }
    Ok(crate::run::exit_code(results.ended_by, &written, out.strict))
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

/// Runs made one level after another, joined into one results document with a step per level:
/// its load is the highest level's, and it ended as the last part did.
pub fn joined(
    parts: Vec<(Segment, Results)>,
    interrupted: Option<Interrupt>,
    open: bool,
    cap: u64,
    command_line: &[String],
) -> Result<Results> {
    let levels: Vec<f64> = parts
        .iter()
        .filter_map(|(s, _)| if open { s.rate } else { s.users.map(|u| u as f64) })
        .collect();
    // Levels run one after another, so the last one's end is the whole run's: its duration or
    // its request count, not "every user finishing its iterations".
    let last_end = parts.last().map(|(_, r)| r.ended_by);
    let mut parts = parts.into_iter();
    let Some(first) = parts.next() else {
        bail!("no level ran");
    };
    let mut results = results::concat(first, parts)?;
    results.ended_by = match (interrupted, last_end) {
        (Some(Interrupt::Int), _) => EndReason::Sigint,
        (Some(Interrupt::Term), _) => EndReason::Sigterm,
        (None, Some(end)) => end,
        (None, None) => EndReason::Completed,
    };
    results.config.model = LoadKind::of(open);
    results.config.concurrency = if open {
        cap
    } else {
        levels.iter().fold(0.0, |a: f64, b| a.max(*b)) as u64
    };
    results.config.rate = open.then(|| levels.iter().fold(0.0, |a: f64, b| a.max(*b)));
    results.config.duration_s = Some(results.duration_s);
    results.config.command_line = crest_model::redact::command_line(command_line);
    Ok(results)
}
