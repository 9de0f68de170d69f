//! The `crest` binary: the only place that knows about flags, the terminal and exit codes.

mod cli;
mod environment;
mod limits;
mod output;
mod plan;
mod progress;
mod run;

use anyhow::{bail, Context, Result};
use clap::Parser;
use cli::{Cli, Command, DemoArgs, TargetArgs};
use std::path::Path;
use std::process::ExitCode;

fn main() -> ExitCode {
    let cli = Cli::parse();
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
    match cli.command {
        Command::Run(a) if a.url.contains("://") => {
            let plan = plan::resolve(&a)?;
            run::quick(plan, args, &a.output)
        }
        Command::Run(a) => {
            let given = plan::quick_flags_given(&a);
            if !given.is_empty() {
                bail!(
                    "{}: these flags apply to a URL; a scenario sets them itself (see docs/scenario.md)",
                    given.join(", ")
                );
            }
            let mut scenario = crest_scenario::load(std::path::Path::new(&a.url))?;
            if let Some(t) = a.threads {
                if t == 0 {
                    bail!("--threads 0: at least one thread is needed");
                }
                scenario.plan.threads = t;
            }
            let workload = crest_flow::FlowWorkload::new(scenario.flow);
            run::execute(scenario.plan, workload, args, &a.output)
        }
        Command::Validate(a) => validate(&a.file),
        Command::Report(a) => {
            let results = output::read_results(&a.dir)?;
            let dir = if a.dir.is_dir() {
                a.dir.clone()
            } else {
                a.dir.parent().map(Path::to_path_buf).unwrap_or_default()
            };
            crest_report::write_run(&dir, &results)?;
            let summary = crest_analysis::summarize(&results)?;
            print!("{}", crest_report::terminal::render(&results, &summary));
            for f in crest_report::RUN_FILES {
                eprintln!("wrote {}", dir.join(f).display());
            }
            Ok(0)
        }
        Command::Compare(a) => {
            let (ra, rb) = (output::read_results(&a.a)?, output::read_results(&a.b)?);
            let (xa, xb) = (crest_analysis::analyze(&ra)?, crest_analysis::analyze(&rb)?);
            let label = |p: &Path| {
                p.file_name()
                    .map_or_else(|| p.display().to_string(), |n| n.to_string_lossy().into_owned())
            };
            let c = crest_analysis::compare::compare(&xa, &label(&a.a), &xb, &label(&a.b));
            let dir = output::prepare_named(a.out.as_deref(), "compare-")?;
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
fn validate(file: &std::path::Path) -> Result<u8> {
    let s = crest_scenario::load(file)?;
    let flows: Vec<String> = s
        .flow
        .flows
        .iter()
        .map(|f| format!("{} (weight {})", f.name, f.weight))
        .collect();
    println!("{}: valid", file.display());
    println!("  flows: {}", flows.join(", "));
    println!("  requests: {}", s.plan.names.join(", "));
    let load = match &s.plan.load {
        crest_model::plan::LoadModel::Closed {
            users,
            iterations: Some(n),
        } => format!("{} users x {n} iterations", users.max()),
        crest_model::plan::LoadModel::Closed { users, .. } => format!("closed model, up to {} users", users.max()),
        crest_model::plan::LoadModel::Open { rate, max_in_flight } => {
            format!("open model, up to {}/s, at most {max_in_flight} in flight", rate.max())
        }
    };
    println!("  load: {load}");
    let segments: Vec<String> = s
        .plan
        .segments
        .iter()
        .map(|g| format!("{} (from {} s)", g.name, g.start.as_secs()))
        .collect();
    println!("  steps: {}", segments.join(", "));
    if let Some(d) = s.plan.stop.duration {
        println!("  duration: {}", humantime::format_duration(d));
    }
    for t in &s.plan.thresholds {
        println!("  threshold: {t}");
    }
    for c in &s.plan.stop_when {
        println!("  stop when: {c}");
    }
    Ok(0)
}

/// Starts the demo target in-process and runs a short closed-model test against it.
fn demo(a: DemoArgs, args: &[String]) -> Result<u8> {
    let config = crest_target::Config::default();
    let addr = crest_target::spawn("127.0.0.1:0".parse()?, config.clone()).context("cannot start the demo target")?;
    if !a.output.quiet {
        eprintln!(
            "demo target on http://{addr}/ (service time {} ms, {} byte responses); 20 users for {}",
            config.delay.as_millis(),
            config.body_size,
            humantime::format_duration(a.duration)
        );
    }
    let run_args = cli::Cli::try_parse_from([
        "crest".to_string(),
        "run".into(),
        format!("http://{addr}/"),
        "-c".into(),
        "20".into(),
        "-d".into(),
        humantime::format_duration(a.duration).to_string(),
    ])?;
    let Command::Run(run_args) = run_args.command else {
        bail!("internal: demo arguments")
    };
    let plan = plan::resolve(&run_args)?;
    run::quick(plan, args, &a.output)
}

/// Serves the demo target until interrupted.
fn target(a: TargetArgs) -> Result<u8> {
    if !a.listen.ip().is_loopback() {
        bail!(
            "--listen {}: the demo target only listens on loopback addresses",
            a.listen
        );
    }
    let config = crest_target::Config {
        delay: a.delay,
        body_size: a.size,
    };
    let addr =
        crest_target::spawn(a.listen, config).with_context(|| format!("--listen {}: cannot listen", a.listen))?;
    eprintln!("demo target on http://{addr}/ (Ctrl-C stops it)");
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
