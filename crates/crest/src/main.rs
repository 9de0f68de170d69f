//! The `crest` binary: the only place that knows about flags, the terminal and exit codes.

mod cli;
mod environment;
mod find;
mod journal;
mod levels;
mod limits;
mod output;
mod plan;
mod progress;
mod reqlog;
mod run;
mod sweep;
mod web;

use anyhow::{bail, Context, Result};
use clap::Parser;
use cli::{Cli, Command, DemoArgs, TargetArgs};
use std::path::Path;
use std::process::ExitCode;
use std::sync::Arc;
use std::time::Duration;

fn main() -> ExitCode {
    let cli = Cli::parse();
    crest_model::redact::also_secret(&cli.redact);
    let args: Vec<String> = std::env::args().collect();
    match dispatch(cli, &args) {
        Ok(code) => ExitCode::from(code),
        Err(e) => {
            eprintln!("error: {e:#}");
            ExitCode::from(2)
        }
    }
}

fn dispatch(cli: Cli, args: &[String]) -> Result<u8> {
    let output = match &cli.command {
        Command::Run(a) => Some(&a.output),
        Command::Find(a) => Some(&a.output),
        Command::Sweep(a) => Some(&a.output),
        Command::Demo(a) => Some(&a.output),
        _ => None,
    };
    if let Some(o) = output {
        web::start(&o.web)?;
    }
    match cli.command {
        Command::Run(a) if a.url.contains("://") => {
            let plan = plan::resolve(&a)?;
            match plan::levels(&a)?.as_slice() {
                [_] => run::quick(plan, args, &a.output),
                levels => levels::run(plan, levels, &a, args),
            }
        }
        Command::Run(a) => {
            let given = plan::quick_flags_given(&a);
            if !Path::new(&a.url).exists() {
                // Neither a URL nor a file: saying which flags need a URL would hide that.
                bail!(
                    "{:?} is not a URL (http://host/path) nor a scenario file that exists",
                    a.url
                );
            }
            if !given.is_empty() {
                bail!(
                    "{}: these flags apply to a URL; a scenario sets them itself (see docs/scenario.md)",
                    given.join(", ")
                );
            }
            let scenario = crest_scenario::draft(Path::new(&a.url))?;
            warn(&a.url, &scenario.warnings);
            let mut draft = scenario.draft;
            plan::add_flags(&mut draft, &plan::Flags::of_run(&a))?;
            let workload = crest_flow::FlowWorkload::new(scenario.flow);
            run::execute(plan::finish(draft)?, workload, args, &a.output)
        }
        Command::Validate(a) => validate(&a.file),
        Command::Find(a) if a.url.contains("://") => {
            let (request, name) = plan::request(&a.url, &a.request)?;
            let workload = Arc::new(
                crest_http::HttpWorkload::new(&request, 0)
                    .with_context(|| format!("URL {}", crest_model::redact::url(&request.url)))?,
            );
            let mut draft = plan::url_draft(request, name);
            plan::add_flags(&mut draft, &find::flags(&a))?;
            let base = plan::finish(draft)?;
            find::find(find::Subject { workload, base }, &a, args)
        }
        Command::Find(a) => {
            let s = crest_scenario::draft(Path::new(&a.url))?;
            let mut draft = s.draft;
            plan::add_flags(&mut draft, &find::flags(&a))?;
            let base = plan::finish(draft)?;
            let workload = Arc::new(crest_flow::FlowWorkload::new(s.flow));
            find::find(find::Subject { workload, base }, &a, args)
        }
        Command::Sweep(a) => sweep::sweep(&a, args),
        Command::Pg(cli::PgCommand::Init(a)) => pg_init(&a),
        Command::Report(a) => {
            let results = match (a.dir.is_dir() && !a.dir.join("results.json").exists())
                .then(|| journal::rebuild(&a.dir))
                .transpose()?
                .flatten()
            {
                Some(r) => {
                    // A run that was killed, or could not write its results: they are what its
                    // journal adds up to.
                    let path = a.dir.join("results.json");
                    output::write_atomic(&path, &serde_json::to_vec_pretty(&r)?)?;
                    eprintln!(
                        "rebuilt {} from {} ({} intervals, ended by {})",
                        path.display(),
                        journal::in_dir(&a.dir)
                            .iter()
                            .map(|p| p.display().to_string())
                            .collect::<Vec<_>>()
                            .join(", "),
                        r.intervals.len(),
                        crest_report::fmt::words::ended(&r)
                    );
                    r
                }
                None => output::read_results(&a.dir)?,
            };
            let dir = if a.dir.is_dir() {
                a.dir.clone()
            } else {
                a.dir.parent().map(Path::to_path_buf).unwrap_or_default()
            };
            let summary = crest_report::write_run(&dir, &results)
                .with_context(|| a.dir.display().to_string())?
                .summary;
            output::stdout(&crest_report::terminal::render(&results, &summary));
            for f in crest_report::RUN_FILES {
                eprintln!("wrote {}", dir.join(f).display());
            }
            // A sweep's directory also holds the study of its points.
            if dir.join(sweep::SWEEP_FILE).is_file() {
                eprintln!("wrote {}", sweep::write_study(&dir)?.display());
            }
            Ok(0)
        }
        Command::Compare(a) => {
            // A run is called by its directory, also when its results.json was named.
            let label = |p: &Path| {
                let dir = if p.is_file() { p.parent().unwrap_or(p) } else { p };
                dir.file_name()
                    .map_or_else(|| p.display().to_string(), |n| n.to_string_lossy().into_owned())
            };
            let mut runs = Vec::with_capacity(a.runs.len());
            for p in &a.runs {
                let analysis = crest_analysis::analyze(&output::read_results(p)?)
                    .with_context(|| format!("cannot analyse {}", p.display()))?;
                runs.push((analysis, label(p)));
            }
            let runs: Vec<_> = runs.iter().map(|(x, l)| (x, l.as_str())).collect();
            let c = crest_analysis::compare::compare(&runs);
            let dir = output::prepare_named(a.out.as_deref(), "compare-", false)?;
            let md = crest_report::write_compare(&dir, &c)?;
            print!("{md}");
            eprintln!("\ncomparison: {}", dir.join("compare.html").display());
            Ok(0)
        }
        Command::Demo(a) => demo(a, args),
        Command::Target(a) => target(a),
    }
}

/// Checks a scenario file and describes what it would run.
/// A scenario's warnings, on stderr, located as its errors are.
fn warn(file: &str, warnings: &[crest_scenario::Problem]) {
    for w in warnings {
        let one = crest_scenario::ScenarioError {
            file: file.to_string(),
            problems: vec![w.clone()],
        };
        eprintln!("warning: {one}");
    }
}

fn validate(file: &std::path::Path) -> Result<u8> {
    use std::fmt::Write;
    let s = crest_scenario::load(file)?;
    warn(&file.display().to_string(), &s.warnings);
    let mut out = String::new();
    let flows: Vec<String> = s
        .flow
        .flows
        .iter()
        .map(|f| format!("{} (weight {})", f.name, f.weight))
        .collect();
    let _ = writeln!(out, "{}: valid", file.display());
    let _ = writeln!(out, "  flows: {}", flows.join(", "));
    let _ = writeln!(out, "  requests: {}", s.plan.names.join(", "));
    let load = match &s.plan.load {
        crest_model::plan::LoadModel::Closed { users, iterations } => crest_report::fmt::words::Load::Closed {
            users: users.max(),
            iterations: *iterations,
        },
        crest_model::plan::LoadModel::Open { rate, max_in_flight } => crest_report::fmt::words::Load::Open {
            rate: rate.max(),
            max_in_flight: *max_in_flight,
        },
    };
    let load = crest_report::fmt::words::load(load);
    let _ = writeln!(out, "  load: {load}");
    let segments: Vec<String> = s
        .plan
        .segments
        .iter()
        .map(|g| format!("{} (from {} s)", g.name, g.start.as_secs()))
        .collect();
    let _ = writeln!(out, "  steps: {}", segments.join(", "));
    if let Some(d) = s.plan.stop.duration {
        let _ = writeln!(out, "  duration: {}", humantime::format_duration(d));
    }
    for t in &s.plan.thresholds {
        let _ = writeln!(out, "  threshold: {t}");
    }
    for c in &s.plan.stop_when {
        let _ = writeln!(out, "  stop when: {c}");
    }
    let m = &s.plan.monitor;
    let mut watched: Vec<String> = Vec::new();
    if m.host {
        watched.push("this machine".into());
    }
    watched.extend(m.processes.iter().map(|p| format!("process {}", p.label)));
    watched.extend(
        m.prometheus
            .iter()
            .map(|p| format!("Prometheus {}", crest_model::redact::url(&p.url))),
    );
    watched.extend(
        m.postgres
            .iter()
            .map(|p| format!("PostgreSQL {}", crest_model::redact::url(&p.url))),
    );
    let _ = writeln!(
        out,
        "  monitor: {} every {}",
        watched.join(", "),
        humantime::format_duration(m.interval)
    );
    output::stdout(&out);
    Ok(0)
}

/// Creates and fills the TPC-B tables.
fn pg_init(a: &cli::PgInitArgs) -> Result<u8> {
    if a.scale == 0 || a.scale > 100_000 {
        bail!("--scale {}: give 1 to 100000", a.scale);
    }
    let password = std::env::var("PGPASSWORD").ok();
    let target = crest_pg::PgTarget::parse(&a.url, password.as_deref(), None)
        .with_context(|| format!("URL {}", crest_model::redact::url(&a.url)))?;
    let rt = tokio::runtime::Builder::new_current_thread().enable_all().build()?;
    let started = std::time::Instant::now();
    tokio::task::LocalSet::new().block_on(&rt, async {
        let mut s = target
            .connect()
            .await
            .map_err(|e| anyhow::anyhow!("{}: cannot connect: {e}", target.shown()))?;
        for statement in crest_pg::tpcb_init(a.scale) {
            s.simple(&statement)
                .await
                .map_err(|e| anyhow::anyhow!("{}: {e}", target.shown()))?;
        }
        Ok::<(), anyhow::Error>(())
    })?;
    eprintln!(
        "{}: pgbench tables at scale {} ({} accounts) in {:.1} s",
        target.shown(),
        a.scale,
        a.scale * 100_000,
        started.elapsed().as_secs_f64()
    );
    Ok(0)
}

/// The demo target's settings from flags.
fn target_config(a: &TargetArgs) -> Result<crest_target::Config> {
    let distribution = match a.distribution.as_str() {
        "uniform" => crest_target::Distribution::Uniform,
        "exponential" => crest_target::Distribution::Exponential,
        _ => crest_target::Distribution::Fixed,
    };
    let c = crest_target::Config {
        workers: a.workers,
        service_time: a.service_time,
        distribution,
        queue: a.queue,
        timeout: a.server_timeout,
        body_size: a.size,
        leak_fd_every: a.leak_fd_every,
        leak_bytes_per_request: a.leak_bytes,
        pool: a.pool,
        pool_wait: a.pool_wait,
        pool_work: a.pool_work,
        max_plans: a.max_plans,
    };
    c.check().map_err(|e| anyhow::anyhow!("--{e}"))?;
    Ok(c)
}

/// Starts the demo target in-process, finds its capacity, and writes the report.
fn demo(a: DemoArgs, args: &[String]) -> Result<u8> {
    let config = crest_target::Config::default();
    let addr = crest_target::spawn("127.0.0.1:0".parse()?, config.clone()).context("cannot start the demo target")?;
    let capacity = config.workers as f64 / config.service_time.as_secs_f64();
    if !a.output.quiet {
        eprintln!(
            "demo target on http://{addr}/: {} workers, {} ms service time, so a capacity of {capacity:.0} req/s; \
             finding it (at most {})",
            config.workers,
            config.service_time.as_millis(),
            humantime::format_duration(a.budget)
        );
    }
    let (request, name) = plan::request(&format!("http://{addr}/"), &demo_request())?;
    let workload = Arc::new(crest_http::HttpWorkload::new(&request, 0)?);
    let base = plan::finish(plan::url_draft(request, name))?;
    let slo = find::slo(&[])?;
    find::search(
        find::Subject { workload, base },
        &slo,
        false,
        a.budget,
        Duration::from_secs(4),
        10_000.0,
        crest_model::plan::defaults::MAX_IN_FLIGHT,
        &a.output,
        args,
        &[],
    )
}

/// The demo's request: a GET of the demo target, which answers within its own 5 s timeout.
fn demo_request() -> cli::RequestArgs {
    cli::RequestArgs {
        method: None,
        headers: Vec::new(),
        body: None,
        body_file: None,
        timeout: Some(Duration::from_secs(10)),
        connect_timeout: None,
        no_keepalive: false,
        insecure: false,
        cacert: None,
        http_version: None,
        http2: false,
        max_streams: None,
        proxy: None,
        cert: None,
        key: None,
        resolve: Vec::new(),
        dns_per_connection: false,
    }
}

/// Serves the demo target until interrupted.
fn target(a: TargetArgs) -> Result<u8> {
    if !a.listen.ip().is_loopback() {
        bail!(
            "--listen {}: the demo target only listens on loopback addresses",
            a.listen
        );
    }
    limits::raise_file_limit()?;
    let config = target_config(&a)?;
    let addr = crest_target::spawn(a.listen, config.clone())
        .with_context(|| format!("--listen {}: cannot listen", a.listen))?;
    eprintln!(
        "demo target on http://{addr}/ ({} workers, {} ms service time, queue {}; API pool {} x {:?}; Ctrl-C stops it)",
        config.workers,
        config.service_time.as_millis(),
        config.queue,
        config.pool,
        config.pool_work
    );
    let rt = tokio::runtime::Builder::new_current_thread().enable_all().build()?;
    rt.block_on(async {
        let mut term = tokio::signal::unix::signal(tokio::signal::unix::SignalKind::terminate())?;
        tokio::select! {
            r = tokio::signal::ctrl_c() => r,
            _ = term.recv() => Ok(()),
        }
    })?;
    Ok(0)
}
