//! Command-line flags as typed, before any validation across flags. `plan.rs` turns them into a
//! [`crest_model::Plan`]; nothing else in crest looks at flags.

use clap::{Args, Parser, Subcommand};
use std::net::SocketAddr;
use std::path::PathBuf;
use std::time::Duration;

/// crest: load testing and capacity analysis.
#[derive(Debug, Parser)]
#[command(name = "crest", version, about, long_about = None, after_help = EXIT_CODES)]
pub struct Cli {
    #[command(subcommand)]
    pub command: Command,
}

pub const EXIT_CODES: &str = "\
Exit codes:
  0    the run finished
  1    the run finished but failed its checks
  2    bad usage or input, or the run could not start
  130  interrupted by Ctrl-C (results gathered so far are written)
  143  interrupted by SIGTERM (results gathered so far are written)";

#[derive(Debug, Subcommand)]
pub enum Command {
    /// Send load to a URL, or run a scenario file, and report what happened.
    Run(Box<RunArgs>),
    /// Check a scenario file without sending anything.
    Validate(ValidateArgs),
    /// Write every report of a run again from its results.json.
    Report(ReportArgs),
    /// Compare two runs: throughput, latency and errors side by side, with the change.
    Compare(CompareArgs),
    /// Start the built-in demo target and run a short test against it.
    Demo(DemoArgs),
    /// Serve the built-in demo target on loopback until interrupted.
    Target(TargetArgs),
}

#[derive(Debug, Args)]
pub struct ReportArgs {
    /// A run directory (holding results.json), or a results.json file.
    pub dir: PathBuf,
}

#[derive(Debug, Args)]
pub struct CompareArgs {
    /// Run A: a run directory or its results.json.
    pub a: PathBuf,
    /// Run B.
    pub b: PathBuf,
    /// Directory for compare.md, compare.html and compare.json [default: crest-results/compare-<timestamp>]
    #[arg(long, value_name = "DIR")]
    pub out: Option<PathBuf>,
}

#[derive(Debug, Args)]
pub struct ValidateArgs {
    /// The scenario file (YAML).
    pub file: PathBuf,
}

#[derive(Debug, Args)]
pub struct RunArgs {
    /// The URL to load (http:// or https://), or a scenario file (YAML; see docs/scenario.md).
    pub url: String,

    /// Concurrent users, each with its own connection (closed model). With --rate: the most
    /// requests in flight at once [default: 50, or 1000 with --rate]
    #[arg(short = 'c', long = "concurrency", value_name = "N")]
    pub concurrency: Option<u64>,

    /// Stop after N requests.
    #[arg(short = 'n', long = "requests", value_name = "N")]
    pub requests: Option<u64>,

    /// Stop after this long, e.g. 30s, 5m, 250ms [default: 10s when -n is not given]
    #[arg(short = 'd', long = "duration", value_name = "DURATION", value_parser = parse_duration)]
    pub duration: Option<Duration>,

    /// Open model: send R requests per second on a fixed schedule, whatever the latency.
    #[arg(long, value_name = "R", allow_negative_numbers = true)]
    pub rate: Option<f64>,

    /// HTTP method [default: GET, or POST when a body is given]
    #[arg(short = 'm', long, value_name = "METHOD")]
    pub method: Option<String>,

    /// A request header, 'Name: value'. Repeatable. Secret values are never written anywhere.
    #[arg(short = 'H', long = "header", value_name = "HEADER")]
    pub headers: Vec<String>,

    /// The request body.
    #[arg(long, value_name = "TEXT", conflicts_with = "body_file")]
    pub body: Option<String>,

    /// Read the request body from a file.
    #[arg(long, value_name = "PATH")]
    pub body_file: Option<PathBuf>,

    /// Limit on each request, from its start until its response is complete [default: 30s]
    #[arg(long, value_name = "DURATION", value_parser = parse_duration)]
    pub timeout: Option<Duration>,

    /// Limit on establishing a connection [default: the smaller of 10s and --timeout]
    #[arg(long, value_name = "DURATION", value_parser = parse_duration)]
    pub connect_timeout: Option<Duration>,

    /// Open a new connection for every request.
    #[arg(long)]
    pub no_keepalive: bool,

    /// Accept any TLS certificate (self-signed test servers).
    #[arg(long)]
    pub insecure: bool,

    /// Trust the CA certificates in this PEM file as well.
    #[arg(long, value_name = "PATH")]
    pub cacert: Option<PathBuf>,

    /// Engine threads [default: the number of CPU cores]
    #[arg(long, value_name = "N")]
    pub threads: Option<usize>,

    #[command(flatten)]
    pub output: OutputArgs,
}

#[derive(Debug, Args, Clone)]
pub struct OutputArgs {
    /// Directory for results.json [default: crest-results/<timestamp>]
    #[arg(long, value_name = "DIR")]
    pub out: Option<PathBuf>,

    /// Also write the summary as JSON to PATH, or to stdout with '-'.
    #[arg(long, value_name = "PATH")]
    pub summary_json: Option<String>,

    /// No live progress and no text summary.
    #[arg(short, long)]
    pub quiet: bool,
}

#[derive(Debug, Args)]
pub struct DemoArgs {
    /// How long the demo run lasts.
    #[arg(short = 'd', long, value_parser = parse_duration, default_value = "10s")]
    pub duration: Duration,

    #[command(flatten)]
    pub output: OutputArgs,
}

#[derive(Debug, Args)]
pub struct TargetArgs {
    /// Where to listen. Only loopback addresses are accepted.
    #[arg(long, default_value = "127.0.0.1:8080")]
    pub listen: SocketAddr,

    /// Service time of each request.
    #[arg(long, value_parser = parse_duration, default_value = "10ms")]
    pub delay: Duration,

    /// Response body size in bytes.
    #[arg(long, default_value_t = 1024)]
    pub size: usize,
}

/// Parses `30s`, `5m`, `250ms`, `1h30m`.
pub fn parse_duration(s: &str) -> Result<Duration, String> {
    humantime::parse_duration(s.trim()).map_err(|e| format!("{e}; write a duration like 30s, 5m or 250ms"))
}
