//! The `crest` binary: the only place that knows about flags, the terminal and exit codes.

mod cli;
mod limits;
mod output;
mod plan;
mod progress;
mod run;

use anyhow::{bail, Context, Result};
use clap::Parser;
use cli::{Cli, Command, DemoArgs, TargetArgs};
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
        Command::Run(a) => {
            let plan = plan::resolve(&a)?;
            run::execute(plan, args, &a.output)
        }
        Command::Demo(a) => demo(a, args),
        Command::Target(a) => target(a),
    }
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
    run::execute(plan, args, &a.output)
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
