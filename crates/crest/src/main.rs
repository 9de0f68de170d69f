//! The `crest` binary: the only place that knows about flags, the terminal and exit codes.

// One module per subcommand, each entered by its `command`: run (with levels), find, sweep,
// report, merge, compare, history, validate, demo, target, pg, kube, import, and a run over several
// machines: collect and its workers.
mod collect;
mod compare;
mod demo;
mod find;
mod history;
mod import;
mod kube;
mod levels;
mod merge;
mod pg;
mod report;
mod run;
mod sweep;
mod target;
mod validate;
mod worker;

// What they share: flags, plans, the run loop and its stop conditions, runs made in parts, the
// exit codes, and what a run leaves on disk (the outputs, the journal and the request log above
// the run directory's layout and safe writes).
mod cli;
mod env_file;
mod environment;
mod exit;
mod journal;
mod judge;
mod limits;
mod link;
mod measure;
mod output;
mod parts;
mod plan;
mod progress;
mod provenance;
mod reqlog;
mod rundir;
mod web;
mod wire;

use anyhow::Result;
use cli::{Cli, Command};
use std::process::ExitCode;

fn main() -> ExitCode {
    let cli = cli::parse();
    crest_model::redact::also_secret(&cli.redact);
    if let Some(path) = &cli.env_file {
        // Before any thread starts: the environment is the process's, read by every part.
        if let Err(e) = env_file::load(path) {
            eprintln!("error: {e:#}");
            return ExitCode::from(2);
        }
    }
    let args: Vec<String> = std::env::args().collect();
    match dispatch(cli, &args) {
        Ok(code) => ExitCode::from(code),
        Err(e) => {
            eprintln!("error: {e:#}");
            ExitCode::from(if disk_full(&e) { exit::NOT_WRITTEN } else { 2 })
        }
    }
}

/// A full disk (or quota) is not bad input: the same command succeeds once there is room, so it
/// exits as a run whose files could not be written does, wherever it stopped.
fn disk_full(e: &anyhow::Error) -> bool {
    e.chain().any(|c| {
        c.downcast_ref::<std::io::Error>().is_some_and(|io| {
            io.kind() == std::io::ErrorKind::StorageFull || io.kind() == std::io::ErrorKind::QuotaExceeded
        })
    })
}

fn dispatch(cli: Cli, args: &[String]) -> Result<u8> {
    let output = match &cli.command {
        Command::Run(a) => Some(&a.output),
        Command::Find(a) => Some(&a.output),
        Command::Sweep(a) => Some(&a.output),
        Command::Demo(a) => Some(&a.output),
        _ => None,
    };
    // The run loop reads no process-wide page: a command hands its runs their readers.
    let readers = measure::Readers {
        page: output.map(|o| web::start(&o.web)).transpose()?.flatten(),
        collector: None,
    };
    match cli.command {
        Command::Run(a) => run::command(&a, args, &readers),
        Command::Validate(a) => validate::command(&a.file),
        Command::Find(a) => find::command(&a, args, &readers),
        Command::Sweep(a) => sweep::command(&a, args, &readers),
        Command::Pg(cli::PgCommand::Init(a)) => pg::init(&a),
        Command::Report(a) => report::command(&a),
        Command::Merge(a) => merge::command(&a),
        Command::Compare(a) => compare::command(&a),
        Command::History(a) => history::command(&a),
        Command::Demo(a) => demo::command(a, args, &readers),
        Command::Target(a) => target::command(a),
        Command::Collect(a) => collect::command(*a, args),
        Command::Worker(a) => worker::command(&a),
        Command::Kube(cli::KubeCommand::Render(a)) => kube::render(&a, args),
        Command::Import(c) => import::command(&c),
    }
}
