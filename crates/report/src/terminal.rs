//! The end-of-run summary printed on stdout: the figures a reader checks first, laid out for a
//! terminal, in the words [`crate::fmt`] gives every format.

use crate::fmt::{bytes, int, ms, num, pct, words};
use crest_analysis::figures::{Percentiles, WorkUnit};
use crest_analysis::summary::{Answer, Answers, Summary};
use crest_analysis::Analysis;
use crest_model::reason::FiguresOrWords;
use crest_model::results::Results;
use std::fmt::Write;

/// The summary as plain text, for a terminal or a log.
pub fn render(results: &Results, a: &Analysis) -> String {
    let mut out = String::new();
    // Writing to a String cannot fail.
    let _ = write_summary(&mut out, results, &a.summary);
    out
}

/// The summary's sections, in the order a reader checks them.
fn write_summary(out: &mut String, r: &Results, s: &Summary) -> std::fmt::Result {
    header(out, r, s)?;
    totals(out, s)?;
    latency(out, s)?;
    open_model(out, s)?;
    responses(out, s)?;
    steps(out, s)?;
    answers(out, s)?;
    requests(out, s)?;
    workers(out, s)?;
    validity(out, s)?;
    resources(out, r, s)?;
    leaks(out, s)?;
    capacity(out, s)?;
    recovery(out, s)?;
    stopped_by(out, s)?;
    thresholds(out, s)
}

/// What was run and how it ended, after a warning when nothing succeeded.
fn header(out: &mut String, r: &Results, s: &Summary) -> std::fmt::Result {
    let c = &r.config;
    if s.successes == 0 {
        // Every figure below describes failures; say so before any of them.
        match s.errors.first() {
            Some(top) if s.requests > 0 => writeln!(
                out,
                "NO REQUEST SUCCEEDED: all {} failed, most as {} ({})",
                int(s.requests),
                top.description,
                int(top.count)
            )?,
            _ => writeln!(out, "NO REQUEST COMPLETED")?,
        }
    }
    if let Some(h) = &c.http {
        writeln!(out, "{} {}", h.method, h.url)?;
    }
    if let Some(sc) = &c.scenario {
        let flows: Vec<String> = sc.flows.iter().map(|(n, w)| format!("{n} (weight {w})")).collect();
        writeln!(out, "scenario {}: {}", sc.path, flows.join(", "))?;
    }
    writeln!(out, "  {}, ended by {}", words::run_load(r), words::ended(r))?;
    Ok(())
}

/// What was sent and how it fared: units of work, iterations, users, requests cut off.
fn totals(out: &mut String, s: &Summary) -> std::fmt::Result {
    writeln!(out)?;
    writeln!(
        out,
        "  {:<13}{} in {:.2} s = {} {} ({} ok, {} failed, {})",
        capitalized(words::counted(s.unit)),
        int(s.requests),
        s.duration_s,
        num(s.throughput_rps),
        words::counted_rate(s.unit),
        int(s.successes),
        int(s.failures),
        pct(s.error_rate)
    )?;
    if let Some(it) = &s.iterations {
        writeln!(
            out,
            "  Iterations   {} completed, {} failed, {} started = {} per s, {} requests each",
            int(it.completed),
            int(it.failed),
            int(it.started),
            num(it.per_s),
            num(it.requests_per_iteration)
        )?;
        for f in &it.flows {
            writeln!(
                out,
                "    {:<26} {:>9} completed {:>7} failed {:>9}/s   took p50 {} ms, p95 {} ms, p99 {} ms",
                f.name,
                int(f.completed),
                int(f.failed),
                num(f.per_s),
                ms(f.duration_ms.p50),
                ms(f.duration_ms.p95),
                ms(f.duration_ms.p99)
            )?;
        }
    }
    if let Some(u) = &s.users {
        writeln!(out, "  Users        {}", words::users_done(u))?;
    }
    if s.abandoned > 0 {
        writeln!(
            out,
            "  Abandoned    {} requests still in flight at the end were cut off",
            int(s.abandoned)
        )?;
    }
    Ok(())
}

/// Latency's percentiles, total and by phase.
fn latency(out: &mut String, s: &Summary) -> std::fmt::Result {
    writeln!(out)?;
    writeln!(
        out,
        "  Latency ms       p50       p90       p95       p99     p99.9       max      mean"
    )?;
    row(out, "total", &s.latency_ms)?;
    row(out, "first byte", &s.ttfb_ms)?;
    row(out, "connect", &s.connect_ms)?;
    if let Some(dns) = &s.dns_ms {
        row(out, "dns", dns)?;
    }
    writeln!(out, "  ({} connections opened)", int(s.connections))?;
    Ok(())
}

/// The open model's schedule against what was sent, and how late.
fn open_model(out: &mut String, s: &Summary) -> std::fmt::Result {
    if let Some(open) = crate::fmt::words::open_model(s) {
        writeln!(out)?;
        writeln!(out, "  Open model   {open}")?;
        if let Some(lag) = &s.send_lag_ms {
            writeln!(
                out,
                "  Send lag     p50 {} ms, p99 {} ms, max {} ms",
                ms(lag.p50),
                ms(lag.p99),
                ms(lag.max)
            )?;
        }
        if let Some(service) = &s.service_ms {
            writeln!(
                out,
                "  Service time p50 {} ms, p99 {} ms, max {} ms (from the actual send; latency counts from the schedule)",
                ms(service.p50),
                ms(service.p99),
                ms(service.max)
            )?;
        }
    }
    Ok(())
}

/// What came back: status codes, error classes, bytes.
fn responses(out: &mut String, s: &Summary) -> std::fmt::Result {
    writeln!(out)?;
    if !s.status_codes.is_empty() {
        let codes: Vec<String> = s
            .status_codes
            .iter()
            .map(|(k, v)| format!("{k}: {}", int(*v)))
            .collect();
        writeln!(out, "  Status       {}", codes.join("   "))?;
    }
    if !s.errors.is_empty() {
        writeln!(out, "  Errors")?;
        for e in &s.errors {
            writeln!(
                out,
                "    {:<26} {:>10}   e.g. {}",
                e.description,
                int(e.count),
                e.example
            )?;
        }
    }
    // SQL sends and receives rows, which crest does not count as bytes: no byte figure then.
    if s.bytes_sent > 0 || s.bytes_received > 0 {
        writeln!(
            out,
            "  Data         sent {}, received {}",
            bytes(s.bytes_sent),
            bytes(s.bytes_received)
        )?;
    }
    Ok(())
}

/// Each step's row, and its iterations' when the run has flows.
fn steps(out: &mut String, s: &Summary) -> std::fmt::Result {
    if s.segments.len() > 1 {
        writeln!(out)?;
        writeln!(
            out,
            "  {:<36}{:>9} {:>STEP_OK$} {:>10} {:>9} {:>9} {:>9} {:>8}",
            "By step",
            words::counted(s.unit),
            "ok per s",
            "all per s",
            "p50 ms",
            "p95 ms",
            "p99 ms",
            "failed"
        )?;
        for g in &s.segments {
            step_row(out, g)?;
        }
        if s.segments.iter().any(|g| g.iterations.is_some()) {
            writeln!(out)?;
            writeln!(
                out,
                "  By step, iterations                 completed   per s    p50 ms    p95 ms    p99 ms   failed   requests each"
            )?;
            for g in &s.segments {
                if let Some(it) = &g.iterations {
                    let ended = it.completed + it.failed;
                    let name = column(words::group_name(g));
                    writeln!(
                        out,
                        "    {name:<34}{:>9} {:>9} {:>9} {:>9} {:>9} {:>9} {:>15}",
                        int(it.completed),
                        num(it.per_s),
                        lat(it.duration_ms.count, it.duration_ms.p50),
                        lat(it.duration_ms.count, it.duration_ms.p95),
                        lat(it.duration_ms.count, it.duration_ms.p99),
                        int(it.failed),
                        if ended > 0 {
                            num(g.requests as f64 / ended as f64)
                        } else {
                            "-".into()
                        }
                    )?;
                }
            }
        }
    }
    Ok(())
}

/// Each named request's row.
fn requests(out: &mut String, s: &Summary) -> std::fmt::Result {
    if s.names.len() > 1 {
        writeln!(out)?;
        writeln!(
            out,
            "  By request                           requests     req/s    p50 ms    p95 ms    p99 ms   failed   size p50"
        )?;
        for g in &s.names {
            group_row(out, g)?;
        }
    }
    if let Some(all) = &s.messages {
        writeln!(out)?;
        writeln!(
            out,
            "  {:<36}{:>9} {:>9} {:>10} {:>11} {:>11}",
            "Messages on streams", "sent", "received", "recv/s", "bytes sent", "bytes recv"
        )?;
        let named = s
            .names
            .iter()
            .filter_map(|g| Some((column(g.name.clone()), g.messages.as_ref()?)));
        for (name, m) in named.chain([("all".to_string(), all)]) {
            writeln!(
                out,
                "    {name:<34}{:>9} {:>9} {:>10} {:>11} {:>11}",
                int(m.sent),
                int(m.received),
                num(m.received_per_s),
                crate::fmt::bytes(m.bytes_sent),
                crate::fmt::bytes(m.bytes_received)
            )?;
        }
    }
    if let Some(grpc) = &s.grpc {
        writeln!(out)?;
        writeln!(out, "  {:<36}{:>9}", "gRPC calls by status", "calls")?;
        for (status, calls) in grpc {
            writeln!(out, "    {status:<34}{:>9}", int(*calls))?;
        }
    }
    Ok(())
}

/// How crest itself may have limited the run.
fn validity(out: &mut String, s: &Summary) -> std::fmt::Result {
    if !s.client_bound.is_empty() {
        writeln!(out)?;
        writeln!(out, "  Validity     crest itself may have limited this run:")?;
        for reason in &s.client_bound {
            writeln!(out, "    - {}", words::client_limit(reason))?;
        }
    }
    Ok(())
}

/// What the monitor saw of the target's resources, and its notes.
fn resources(out: &mut String, r: &Results, s: &Summary) -> std::fmt::Result {
    if !s.resources.is_empty() {
        writeln!(out)?;
        writeln!(
            out,
            "  Resources                                                  mean        peak"
        )?;
        for r in &s.resources {
            if let Some(all) = &r.all {
                writeln!(
                    out,
                    "    {:<52} {:>10}  {:>10}",
                    r.key,
                    crate::fmt::value(r.unit, all.mean),
                    crate::fmt::value(r.unit, all.peak)
                )?;
            }
        }
    }
    for n in r
        .monitor
        .iter()
        .flat_map(|m| m.sources.iter())
        .flat_map(|s| s.notes.iter().map(move |n| (s, n)))
    {
        writeln!(
            out,
            "  Monitor      {} {}: {}",
            n.0.kind,
            n.0.label,
            words::monitor_note(n.1)
        )?;
    }
    Ok(())
}

/// Resources that grew through the run.
fn leaks(out: &mut String, s: &Summary) -> std::fmt::Result {
    if !s.leaks.is_empty() {
        writeln!(out)?;
        for l in &s.leaks {
            writeln!(out, "  Leak         {}", words::leak(l))?;
        }
    }
    Ok(())
}

/// A capacity search's findings.
fn capacity(out: &mut String, s: &Summary) -> std::fmt::Result {
    if let Some(c) = &s.capacity {
        writeln!(out)?;
        let rate = words::unit_rate(c.unit);
        if c.unit == WorkUnit::Requests {
            writeln!(out, "  Capacity     max {} req/s successful", num(c.max_throughput_rps))?;
        } else {
            writeln!(
                out,
                "  Capacity     max {} {rate} successful ({} req/s)",
                num(c.max_per_s),
                num(c.max_throughput_rps)
            )?;
        }
        // The optimum and the limit are said here, once: the steps' own, with the figures they rest
        // on, or the search's where the steps could not name one.
        let a = &s.answers;
        answer(out, "Optimal", a.optimal.as_ref(), a.unit)?;
        if let Some(o) = c.optimal.as_ref().filter(|_| a.optimal.is_none()) {
            let at = match (o.concurrency, o.rate) {
                (Some(n), _) => format!("{n:.0} users"),
                (None, Some(r)) => format!("{}/s", num(r)),
                _ => "-".into(),
            };
            writeln!(
                out,
                "  Optimal      {at}: {} {rate} at a mean of {} ms",
                num(o.per_s),
                ms(o.latency_ms)
            )?;
        }
        if let Some(r) = &c.recommended {
            writeln!(out, "  Recommended  {}", words::recommended(r))?;
        }
        answer(out, "Limit", a.limit.as_ref(), a.unit)?;
        if let Some(l) = c.limit.as_ref().filter(|_| a.limit.is_none()) {
            writeln!(out, "  Limit        {}", words::limit(l, c.unit))?;
        }
        if a.optimal.is_some() || a.limit.is_some() {
            unjudged(out, a)?;
        }
        if let Some(u) = &c.usl {
            let peak = u
                .peak_users
                .map_or_else(|| "no peak".to_string(), |p| format!("peak at {p:.0} users"));
            writeln!(
                out,
                "  USL fit      lambda {} {rate}, sigma {:.4}, kappa {:.6}, {peak} (R² {:.3})",
                num(u.lambda),
                u.sigma,
                u.kappa,
                u.r2
            )?;
        }
        writeln!(
            out,
            "  Stopped      {}",
            words::search_ended(c.stopped_because.as_ref().map(FiguresOrWords::as_ref), c.unit)
        )?;
    }
    Ok(())
}

/// How long the service took to recover from a spike.
fn recovery(out: &mut String, s: &Summary) -> std::fmt::Result {
    if let Some(rec) = &s.recovery {
        writeln!(out)?;
        writeln!(out, "  Recovery     {}", words::recovery(rec))?;
    }
    Ok(())
}

/// The stop condition that ended the run, and what held.
fn stopped_by(out: &mut String, s: &Summary) -> std::fmt::Result {
    if let Some(st) = &s.stopped_by {
        writeln!(out)?;
        writeln!(
            out,
            "  Stopped at {:.0} s because `{}` held: {}",
            st.at_s,
            st.condition,
            words::stop_held(st)
        )?;
    }
    Ok(())
}

/// Each threshold, passed or failed, with what was measured.
fn thresholds(out: &mut String, s: &Summary) -> std::fmt::Result {
    if !s.thresholds.is_empty() {
        writeln!(out)?;
        writeln!(out, "  Thresholds")?;
        for t in &s.thresholds {
            let mark = if t.pass { "pass" } else { "FAIL" };
            writeln!(
                out,
                "    {mark}  {:<30} measured {}",
                t.threshold,
                words::measured(&t.measured)
            )?;
        }
    }
    Ok(())
}

/// The optimum and the limit in the run's unit, each with the step and figures it rests on, after
/// the steps; a capacity search says them in its own section instead (see [`capacity`]).
fn answers(out: &mut String, s: &Summary) -> std::fmt::Result {
    let a = &s.answers;
    if s.capacity.is_some() || (a.optimal.is_none() && a.limit.is_none()) {
        return Ok(());
    }
    writeln!(out)?;
    answer(out, "Optimal", a.optimal.as_ref(), a.unit)?;
    answer(out, "Limit", a.limit.as_ref(), a.unit)?;
    unjudged(out, a)
}

/// One answer's line, when there is one: its step, and the figures it rests on.
fn answer(out: &mut String, label: &str, p: Option<&Answer>, unit: WorkUnit) -> std::fmt::Result {
    let Some(p) = p else { return Ok(()) };
    writeln!(
        out,
        "  {label:<12} {}: {} {} successful, successes' p95 {} ms, {} failed",
        words::step_kind(&p.kind),
        num(p.per_s),
        words::unit_rate(unit),
        ms(p.latency_ms.p95),
        pct(p.error_rate)
    )
}

/// The steps the answers leave out, when any are.
fn unjudged(out: &mut String, a: &Answers) -> std::fmt::Result {
    if !a.unjudged.is_empty() {
        writeln!(
            out,
            "  Not judged   {} (cut short or empty)",
            a.unjudged.iter().map(words::step_kind).collect::<Vec<_>>().join(", ")
        )?;
    }
    Ok(())
}

/// A distributed run's workers, one row each: what each sent, how late, at what CPU share, what
/// it dropped, and its own verdict.
fn workers(out: &mut String, s: &Summary) -> std::fmt::Result {
    if s.workers.is_empty() {
        return Ok(());
    }
    writeln!(out)?;
    writeln!(
        out,
        "  By worker      requests    failed {:>12}   lag p50   lag p99       CPU      dropped   verdict",
        words::unit_rate(s.unit)
    )?;
    let or_dash = |v: Option<String>| v.unwrap_or_else(|| "-".into());
    for w in &s.workers {
        writeln!(
            out,
            "    worker {:<3}{:>11} {:>9} {:>12} {:>9} {:>9} {:>9} {:>12}   {}",
            w.index,
            int(w.requests),
            int(w.failures),
            num(w.per_s),
            or_dash(w.send_lag_ms.map(|l| ms(l.p50))),
            or_dash(w.send_lag_ms.map(|l| ms(l.p99))),
            or_dash(w.cpu_share.map(pct)),
            words::worker_drops(w),
            words::worker_verdict(w)
        )?;
    }
    Ok(())
}

/// Width of a step's successful throughput with its uncertainty, "1,234.5 ± 12.3".
const STEP_OK: usize = 17;

/// A step's row: its successful throughput first, with its uncertainty, then all of it.
fn step_row(out: &mut String, g: &crest_analysis::summary::GroupSummary) -> std::fmt::Result {
    let failed = if g.requests > 0 {
        g.failures as f64 / g.requests as f64
    } else {
        0.0
    };
    let ok = match (g.success_per_s, g.success_per_s_se) {
        (Some(x), Some(se)) if se > 0.0 => format!("{} ± {}", num(x), num(2.0 * se)),
        (Some(x), _) => num(x),
        (None, _) => "-".into(),
    };
    writeln!(
        out,
        "    {:<34}{:>9} {:>STEP_OK$} {:>10} {:>9} {:>9} {:>9} {:>8}",
        column(words::group_name(g)),
        int(g.requests),
        ok,
        num(g.throughput_rps),
        lat(g.latency_ms.count, g.latency_ms.p50),
        lat(g.latency_ms.count, g.latency_ms.p95),
        lat(g.latency_ms.count, g.latency_ms.p99),
        pct(failed)
    )
}

/// A step's latency: none to show for a step with nothing in it (a ramp of no length), not
/// 0 ms.
fn lat(count: u64, v: f64) -> String {
    if count > 0 {
        ms(v)
    } else {
        "-".into()
    }
}

/// `requests` as a line's first word.
fn capitalized(w: &str) -> String {
    let mut c = w.chars();
    c.next()
        .map(|f| f.to_uppercase().collect::<String>() + c.as_str())
        .unwrap_or_default()
}

/// A name cut to the tables' first column.
fn column(name: String) -> String {
    if name.chars().count() > 34 {
        name.chars().take(33).collect::<String>() + "…"
    } else {
        name
    }
}

fn group_row(out: &mut String, g: &crest_analysis::summary::GroupSummary) -> std::fmt::Result {
    let failed = if g.requests > 0 {
        g.failures as f64 / g.requests as f64
    } else {
        0.0
    };
    let name = column(match &g.part_of {
        Some(_) => format!("↳ {}", g.name),
        None => g.name.clone(),
    });
    let size = g
        .size_bytes
        .map(|z| format!(" {:>10}", crate::fmt::bytes(z.p50.round() as u64)))
        .unwrap_or_default();
    writeln!(
        out,
        "    {name:<34}{:>9} {:>9} {:>9} {:>9} {:>9} {:>8}{size}",
        int(g.requests),
        num(g.throughput_rps),
        ms(g.latency_ms.p50),
        ms(g.latency_ms.p95),
        ms(g.latency_ms.p99),
        pct(failed)
    )
}

fn row(out: &mut String, label: &str, p: &Percentiles) -> std::fmt::Result {
    if p.count == 0 {
        return writeln!(out, "    {label:<11}  (none)");
    }
    writeln!(
        out,
        "    {label:<11}{:>9} {:>9} {:>9} {:>9} {:>9} {:>9} {:>9}",
        ms(p.p50),
        ms(p.p90),
        ms(p.p95),
        ms(p.p99),
        ms(p.p999),
        ms(p.max),
        ms(p.mean)
    )
}
