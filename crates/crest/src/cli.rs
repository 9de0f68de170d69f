//! The command line as clap reads it: the subcommands and their flags, typed (durations parsed
//! and bounded) but not yet checked against each other, plus the exit codes `--help` lists.
//! `plan.rs` turns the flags that describe load (a URL, its request, `--threshold`,
//! `--monitor-*`, `--threads`...) into a plan through the one resolver; each subcommand's own
//! flags (`find`'s search bounds, `sweep`'s parameter, `target`'s service) are read by its module.

use clap::{Args, Parser, Subcommand};
use std::net::SocketAddr;
use std::path::PathBuf;
use std::time::Duration;

/// The command line, parsed; exits with clap's message on a bad one. clap suggests the nearest
/// flag for an unknown one however far it is (`--bogus` -> `--log-requests`) and then shows a
/// usage line built around its guess; a guess that is not a near miss is left out.
pub fn parse() -> Cli {
    Cli::try_parse().unwrap_or_else(|e| without_far_guess(e).exit())
}

fn without_far_guess(e: clap::Error) -> clap::Error {
    use clap::error::{ContextKind, ContextValue, ErrorKind};
    if e.kind() != ErrorKind::UnknownArgument {
        return e;
    }
    let text = |k| match e.get(k) {
        Some(ContextValue::String(s)) => Some(s.clone()),
        Some(ContextValue::Strings(v)) => v.first().cloned(),
        _ => None,
    };
    let (Some(given), Some(guess)) = (text(ContextKind::InvalidArg), text(ContextKind::SuggestedArg)) else {
        return e;
    };
    let (a, b) = (given.trim_start_matches('-'), guess.trim_start_matches('-'));
    if strsim::levenshtein(a, b) <= 2.max(b.len() / 3) {
        return e;
    }
    let usage = match e.get(ContextKind::Usage) {
        Some(ContextValue::StyledStr(u)) => u.to_string().replacen(&guess, "[OPTIONS]", 1),
        _ => String::new(),
    };
    let mut plain = clap::Error::new(ErrorKind::UnknownArgument).with_cmd(&<Cli as clap::CommandFactory>::command());
    plain.insert(ContextKind::InvalidArg, ContextValue::String(given));
    if !usage.is_empty() {
        plain.insert(ContextKind::Usage, ContextValue::StyledStr(usage.into()));
    }
    plain
}

/// crest: load testing and capacity analysis.
#[derive(Debug, Parser)]
#[command(name = "crest", version, about, long_about = None, after_help = EXIT_CODES)]
pub struct Cli {
    #[command(subcommand)]
    pub command: Command,

    /// Treat headers, query parameters and NAME=value assignments whose name contains NAME as
    /// secret too (besides token, secret, pass, key, sig, jwt, auth, session, cookie, code...):
    /// their values are never written or shown. Repeatable.
    #[arg(long = "redact", value_name = "NAME", global = true)]
    pub redact: Vec<String>,

    /// Read environment variables from this dotenv file (NAME=value lines, as `crest import`
    /// writes its secrets) for `${env:NAME}` in scenarios; variables already set in the
    /// environment win. Their values are secrets: never written or shown.
    #[arg(long = "env-file", value_name = "FILE", global = true)]
    pub env_file: Option<PathBuf>,
}

pub const EXIT_CODES: &str = "\
Exit codes:
  0    the run finished
  1    the run finished but failed its checks
  2    bad usage or input, or the run could not start
  3    with --strict: crest itself limited the run
  4    the run finished but an output could not be written in full (a full disk): results.json,
       a report, --junit, --markdown-summary, the journal or the request log; what was written
       is whole. Also a run the full
       disk stopped before it sent anything (it leaves no directory), or a --store that could
       not be written
  5    history --check: a figure of the newest run regressed against its baseline
  130  interrupted by Ctrl-C (results gathered so far are written)
  143  interrupted by SIGTERM or SIGHUP (results gathered so far are written)";

#[derive(Debug, Subcommand)]
pub enum Command {
    /// Send load to a URL, or run a scenario file, and report what happened.
    Run(Box<RunArgs>),
    /// Check a scenario file without sending anything.
    Validate(ValidateArgs),
    /// Write every report of a run again from its results.json.
    Report(ReportArgs),
    /// Merge the parts of a run that several generators sent at once (each run with --workers
    /// N --worker-index I) into the one run they add up to, with its reports.
    Merge(MergeArgs),
    /// Compare runs: throughput, latency, errors and monitored series side by side, each with
    /// its change against the first.
    Compare(CompareArgs),
    /// Find the maximum sustainable throughput and the optimal operating point.
    Find(Box<FindArgs>),
    /// The runs of each test (--label) over time, and with --check the regression gate: the
    /// newest run of each test against the runs before it.
    History(HistoryArgs),
    /// Run a scenario once per value of a parameter, with a setup command before each.
    Sweep(Box<SweepArgs>),
    /// Start the built-in demo target, find its capacity, and write the report.
    Demo(DemoArgs),
    /// PostgreSQL helpers.
    #[command(subcommand)]
    Pg(PgCommand),
    /// Serve the built-in demo target on loopback until interrupted.
    Target(TargetArgs),
    /// Run one plan over N workers (`crest worker`) that join here: start them together,
    /// merge their measurements as they come, judge stop conditions and thresholds on the
    /// whole, and write the one run they add up to.
    Collect(Box<CollectArgs>),
    /// Join a collector (`crest collect`), take its plan, and send this worker's part of it.
    Worker(WorkerArgs),
    /// Kubernetes: the manifests of a run spread over pods (docs/distributed.md).
    #[command(subcommand)]
    Kube(KubeCommand),
    /// Make a scenario from what you have: a curl command, a browser's HAR recording, an
    /// OpenAPI spec. Values the server hands out are carried to the requests that send them
    /// back, and secrets go to a .env file beside the scenario (docs/import.md).
    #[command(subcommand)]
    Import(ImportCommand),
}

#[derive(Debug, Subcommand)]
pub enum ImportCommand {
    /// A curl command (as API docs and browsers' "copy as cURL" give), or a file of several,
    /// one request step each.
    Curl(ImportCurlArgs),
    /// A browser's recorded session (HAR 1.2, from the devtools' network tab) as one flow.
    Har(ImportHarArgs),
    /// An OpenAPI 3.0 or 3.1 spec (YAML or JSON): one request per operation, chained.
    Openapi(ImportOpenapiArgs),
}

/// Where an import writes, for every importer.
#[derive(Debug, Args)]
pub struct ImportOut {
    /// Write the scenario to this file, and its secrets to the .env file beside it (mode
    /// 0600); without it the scenario is printed
    #[arg(long, short = 'o', value_name = "FILE")]
    pub out: Option<PathBuf>,

    /// Replace the scenario and its .env file when they exist
    #[arg(long, requires = "out")]
    pub force: bool,
}

#[derive(Debug, Args)]
pub struct ImportCurlArgs {
    /// The curl command (quoted as one argument), or `-` to read commands from stdin
    #[arg(value_name = "COMMAND", required_unless_present = "file", conflicts_with = "file")]
    pub command: Option<String>,

    /// Read the curl commands from this file (one or more, as "copy all as cURL" gives)
    #[arg(long, short = 'f', value_name = "FILE")]
    pub file: Option<PathBuf>,

    #[command(flatten)]
    pub out: ImportOut,
}

#[derive(Debug, Args)]
pub struct ImportHarArgs {
    /// The HAR file (HAR 1.2, as browsers save it)
    pub file: PathBuf,

    /// Keep static assets (images, scripts, stylesheets, fonts, favicons) and requests to
    /// other hosts, which are left out by default
    #[arg(long)]
    pub keep_static: bool,

    /// Leave out the recorded gaps between requests (think times)
    #[arg(long, conflicts_with = "max_think")]
    pub no_think: bool,

    /// The longest recorded gap kept as a think time; longer ones are cut to it
    #[arg(long, value_name = "DURATION", value_parser = parse_duration, default_value = "5s")]
    pub max_think: Duration,

    #[command(flatten)]
    pub out: ImportOut,
}

#[derive(Debug, Args)]
pub struct ImportOpenapiArgs {
    /// The spec (OpenAPI 3.0 or 3.1, YAML or JSON)
    pub file: PathBuf,

    /// Take only this operation, by operationId or as "METHOD /path"; repeatable, in the order
    /// given [default: every operation, in the spec's order]
    #[arg(long = "operation", value_name = "OPERATION")]
    pub operations: Vec<String>,

    /// The base URL requests go to, instead of the spec's first server
    #[arg(long, value_name = "URL")]
    pub server: Option<String>,

    #[command(flatten)]
    pub out: ImportOut,
}

/// `crest collect`: the run's flags, as `crest run` takes them, and where workers join.
#[derive(Debug, Args)]
#[command(after_help = EXIT_CODES)]
pub struct CollectArgs {
    #[command(flatten)]
    pub run: RunArgs,

    /// Where workers join, and where the live page, its API and /metrics are served, e.g.
    /// 0.0.0.0:7700
    #[arg(long, value_name = "ADDR")]
    pub listen: SocketAddr,

    /// The token workers must give [default: $CREST_TOKEN, or a new one, printed]
    #[arg(long, value_name = "TOKEN")]
    pub token: Option<String>,

    /// How long to wait for every worker to join; then it exits with 2, naming the workers
    /// that never joined, and nothing is sent
    #[arg(long, value_name = "DURATION", value_parser = parse_duration, default_value = "5m")]
    pub join_timeout: Duration,
}

/// `crest worker`: where the collector is; the plan comes from it.
#[derive(Debug, Args)]
pub struct WorkerArgs {
    /// The collector's address, HOST:PORT (tried again for up to 2 minutes while it starts)
    #[arg(long, value_name = "HOST:PORT")]
    pub collector: String,

    /// The collector's token [default: $CREST_TOKEN]
    #[arg(long, value_name = "TOKEN")]
    pub token: Option<String>,

    /// This worker's part, 0 to N-1 [default: $JOB_COMPLETION_INDEX, or the next the collector
    /// has free]
    #[arg(long, value_name = "I")]
    pub worker_index: Option<u32>,

    /// Keep this worker's own part here, a run directory `crest merge` reads, so a lost
    /// collector loses seconds, not the run [default: crest-results/worker-I-<UTC timestamp>]
    #[arg(long, value_name = "DIR", conflicts_with = "no_keep")]
    pub out: Option<PathBuf>,

    /// Keep no part on this machine: the collector's run is the only record
    #[arg(long)]
    pub no_keep: bool,
}

#[derive(Debug, Subcommand)]
pub enum KubeCommand {
    /// Write the manifests of a distributed run to stdout, one YAML stream for `kubectl apply
    /// -f -`: the scenario, the token's Secret, the collector and its Service, and the workers
    /// as one Indexed Job.
    Render(Box<KubeRenderArgs>),
}

/// `crest kube render`: the run as `crest run` takes it (a URL or a scenario, its load flags,
/// and `--workers N`), and where and how its pods run.
#[derive(Debug, Args)]
pub struct KubeRenderArgs {
    #[command(flatten)]
    pub run: RunArgs,

    /// The container image with crest [default: crest:<this crest's version>]
    #[arg(long, value_name = "IMAGE")]
    pub image: Option<String>,

    /// The namespace of every object [default: kubectl's current one]
    #[arg(long, value_name = "NS")]
    pub namespace: Option<String>,

    /// A Secret whose keys reach the collector and every worker as environment variables (the
    /// scenario's `${env:NAME}`); its values are never read or written here. Repeatable.
    #[arg(long = "secret", value_name = "NAME")]
    pub secrets: Vec<String>,

    /// The token the workers join with, stored in the Secret crest-token [default: $CREST_TOKEN,
    /// or a new random one]
    #[arg(long, value_name = "TOKEN")]
    pub token: Option<String>,

    /// CPU each worker asks for (a Kubernetes quantity: 2, 1500m).
    #[arg(long, value_name = "CPU", default_value = "1")]
    pub worker_cpu: String,

    /// Memory each worker asks for (512Mi, 2Gi).
    #[arg(long, value_name = "BYTES", default_value = "1Gi")]
    pub worker_memory: String,

    /// CPU the collector asks for.
    #[arg(long, value_name = "CPU", default_value = "1")]
    pub collector_cpu: String,

    /// Memory the collector asks for.
    #[arg(long, value_name = "BYTES", default_value = "1Gi")]
    pub collector_memory: String,
}

#[derive(Debug, Subcommand)]
pub enum PgCommand {
    /// Create and fill pgbench's TPC-B tables (as `pgbench -i -s N`), for examples/tpcb.yaml.
    Init(PgInitArgs),
}

#[derive(Debug, Args)]
pub struct PgInitArgs {
    /// postgres://user@host:port/dbname; the password may come from PGPASSWORD.
    pub url: String,
    /// Scale factor: branches; 10 tellers and 100,000 accounts per branch.
    #[arg(short, long, default_value_t = 1)]
    pub scale: u64,
}

#[derive(Debug, Args)]
pub struct ReportArgs {
    /// A run directory (holding results.json), or a results.json file.
    pub dir: PathBuf,
}

#[derive(Debug, Args)]
pub struct MergeArgs {
    /// Every worker's run directory (each holding its journal.jsonl), in any order.
    #[arg(required = true, num_args = 1.., value_name = "PART")]
    pub parts: Vec<PathBuf>,
    /// Directory for the merged run [default: crest-results/<timestamp>]
    #[arg(long, value_name = "DIR")]
    pub out: Option<PathBuf>,
    /// Also write the summary as JSON to PATH, or to stdout with '-'.
    #[arg(long, value_name = "PATH")]
    pub summary_json: Option<String>,
    /// No text summary.
    #[arg(short, long)]
    pub quiet: bool,
    /// Replace the run already in --out instead of refusing.
    #[arg(long)]
    pub force: bool,
}

#[derive(Debug, Args)]
pub struct CompareArgs {
    /// The runs, the first being the baseline: run directories or their results.json files.
    #[arg(required = true, num_args = 2.., value_name = "RUN")]
    pub runs: Vec<PathBuf>,
    /// Directory for compare.md, compare.html and compare.json [default: crest-results/compare-<timestamp>]
    #[arg(long, value_name = "DIR")]
    pub out: Option<PathBuf>,
}

/// `crest history`: where the runs are, and the gate's settings.
#[derive(Debug, Args)]
#[command(after_help = EXIT_CODES)]
pub struct HistoryArgs {
    /// Where to look for runs: every run directory (holding results.json) under it; a sweep or
    /// a find is one run [default: crest-results, or the team store of $CREST_STORE when set]
    #[arg(value_name = "DIR", conflicts_with = "store")]
    pub dir: Option<PathBuf>,

    /// Read the runs from this PostgreSQL team store (docs/store.md) instead of a directory
    #[arg(long, value_name = "URL")]
    pub store: Option<String>,

    /// Only the runs of this label
    #[arg(long, value_name = "NAME")]
    pub label: Option<String>,

    /// Write the HTML page here [default: DIR/history.html]
    #[arg(long, value_name = "FILE")]
    pub out: Option<PathBuf>,

    /// What stdout shows: a table per label (text), Markdown, or JSON
    #[arg(long, value_name = "FORMAT", default_value = "text", value_parser = ["text", "markdown", "json"])]
    pub format: String,

    /// The regression gate: judge the newest run of each label against the runs before it, and
    /// exit with 5 when a figure regressed (docs/reports.md gives the rule)
    #[arg(long)]
    pub check: bool,

    /// With --check: at most this many runs before the newest make its baseline (runs that
    /// failed their own thresholds are never a baseline)
    #[arg(long, value_name = "N", default_value_t = 5, value_parser = clap::value_parser!(u64).range(1..=1000))]
    pub baseline: u64,

    /// With --check: only runs carrying this tag (--tag) make the baseline
    #[arg(long, value_name = "KEY=VALUE")]
    pub baseline_tag: Option<String>,

    /// With --check: the smallest change called a regression, in percent of the baseline
    #[arg(long, value_name = "PCT", default_value_t = 10.0)]
    pub min_change: f64,

    /// With --check: also write the verdicts as JUnit XML to PATH, a suite per label and a case
    /// per figure
    #[arg(long, value_name = "PATH", requires = "check")]
    pub junit: Option<PathBuf>,

    /// With --check: append the verdicts as Markdown to PATH, such as $GITHUB_STEP_SUMMARY
    #[arg(long, value_name = "PATH", requires = "check")]
    pub markdown_summary: Option<PathBuf>,
}

#[derive(Debug, Args)]
pub struct ValidateArgs {
    /// The scenario file (YAML).
    pub file: PathBuf,
}

#[derive(Debug, Args)]
#[command(after_help = EXIT_CODES)]
pub struct RunArgs {
    /// The URL to load (http:// or https://), or a scenario file (YAML; see docs/scenario.md).
    pub url: String,

    /// Concurrent users, each with its own connection (closed model). A list (-c 10,20,50)
    /// runs one level after another into one run, a step per level, -n or -d applying to each.
    /// With --rate: the most requests in flight at once [default: 50, or 1000 with --rate].
    /// With a scenario: its users, over the file's constant load (docs/cli.md)
    #[arg(short = 'c', long = "concurrency", value_name = "N[,N...]", value_parser = parse_levels)]
    pub concurrency: Option<Levels>,

    /// Stop after N requests; `10x` for 10 per user (-c 20 -n 10x sends 200, as `ab -c 20 -n
    /// 200` does). With several -c levels, per level. With a scenario: iterations, replacing the
    /// file's stop rule
    #[arg(short = 'n', long = "requests", value_name = "N|Nx", value_parser = parse_count)]
    pub requests: Option<Count>,

    /// Stop after this long, e.g. 30s, 5m, 250ms [default: 10s when -n is not given]. With a
    /// scenario: replaces the file's stop rule, or ends its profile sooner
    #[arg(short = 'd', long = "duration", value_name = "DURATION", value_parser = parse_duration, allow_hyphen_values = true)]
    pub duration: Option<Duration>,

    /// Open model: send R requests per second on a fixed schedule, whatever the latency. With
    /// a scenario: R iterations per second, over the file's constant load
    #[arg(long, value_name = "R", allow_negative_numbers = true)]
    pub rate: Option<f64>,

    /// With --rate: an arrival that finds -c requests in flight is dropped and counted (drop),
    /// or waits for one to end and is timed from its slot, as pgbench -R does (queue)
    /// [default: drop]
    #[arg(long, value_name = "queue|drop", value_parser = parse_on_cap)]
    pub on_cap: Option<crest_model::plan::OnCap>,

    #[command(flatten)]
    pub request: RequestArgs,

    /// Engine threads [default: the number of CPU cores; in the open model (--rate), one per
    /// 50,000 arrivals/s, at most the cores]
    #[arg(long, value_name = "N")]
    pub threads: Option<usize>,

    /// Run one part of a run spread over N generators: users, arrivals and requests are split
    /// so that the N parts add up exactly to the run as given (arrival i goes to worker i mod
    /// N). Run the same command on every generator with its own --worker-index.
    #[arg(long, value_name = "N")]
    pub workers: Option<u32>,

    /// This generator's part, 0 to N-1, with --workers [default: $JOB_COMPLETION_INDEX, which a
    /// Kubernetes Indexed Job sets]
    #[arg(long, value_name = "I", requires = "workers")]
    pub worker_index: Option<u32>,

    /// A threshold checked at the end, e.g. 'p95 < 250ms', 'max(process_open_fds) < 900';
    /// crest exits with 1 when one fails. Repeatable.
    #[arg(long = "threshold", value_name = "EXPR")]
    pub thresholds: Vec<String>,

    /// A condition checked every second that ends the run, e.g. 'error_rate > 5%',
    /// 'load_average > 3'. Repeatable.
    #[arg(long = "stop-when", value_name = "EXPR")]
    pub stop_when: Vec<String>,

    #[command(flatten)]
    pub monitor: MonitorArgs,

    #[command(flatten)]
    pub output: OutputArgs,

    /// Set by `crest collect` and its workers, never a flag: a collector judges stop conditions
    /// and thresholds on the whole run, so its workers' parts may carry them.
    #[arg(skip)]
    pub collected: bool,
}

/// What to watch while the load runs (added to a scenario's `monitor:`).
#[derive(Debug, Args, Default)]
pub struct MonitorArgs {
    /// Watch this process: CPU, memory, open files, threads. Repeatable.
    #[arg(long = "monitor-pid", value_name = "PID")]
    pub pids: Vec<u32>,

    /// Watch the process whose id is in this file (read at every sample). Repeatable.
    #[arg(long = "monitor-pid-file", value_name = "PATH")]
    pub pid_files: Vec<PathBuf>,

    /// Watch every process with this name, counted together. Repeatable.
    #[arg(long = "monitor-process", value_name = "NAME")]
    pub names: Vec<String>,

    /// Watch every process whose command line matches this regular expression. Repeatable.
    #[arg(long = "monitor-pattern", value_name = "REGEX")]
    pub patterns: Vec<String>,

    /// Record metrics from this Prometheus text endpoint. Repeatable.
    #[arg(long = "monitor-prometheus", value_name = "URL")]
    pub prometheus: Vec<String>,

    /// Only these Prometheus metrics (names or regular expressions) [default: all, up to 200
    /// series]. Repeatable.
    #[arg(long = "monitor-metric", value_name = "NAME")]
    pub metrics: Vec<String>,

    /// Read connections and transactions per second from this PostgreSQL server (the password
    /// from PGPASSWORD). Repeatable.
    #[arg(long = "monitor-postgres", value_name = "URL")]
    pub postgres: Vec<String>,

    /// Time between samples [default: 1s]
    #[arg(long = "monitor-interval", value_name = "DURATION", value_parser = parse_duration)]
    pub interval: Option<Duration>,

    /// Do not sample this machine's load average, CPU and memory.
    #[arg(long = "no-monitor-host")]
    pub no_host: bool,
}

/// What each request looks like (quick mode).
#[derive(Debug, Args)]
pub struct RequestArgs {
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
    #[arg(long, value_name = "DURATION", value_parser = parse_duration, allow_hyphen_values = true)]
    pub timeout: Option<Duration>,

    /// Limit on establishing a connection [default: the smaller of 10s and --timeout]
    #[arg(long, value_name = "DURATION", value_parser = parse_duration, allow_hyphen_values = true)]
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

    /// HTTP version: 1.1, 2 (ALPN over TLS, prior knowledge over cleartext), or auto (HTTP/2
    /// when the TLS server picks it) [default: 1.1]
    #[arg(long = "http", value_name = "VERSION", conflicts_with = "http2")]
    pub http_version: Option<crest_model::protocol::HttpVersion>,

    /// Speak HTTP/2: the same as --http 2.
    #[arg(long)]
    pub http2: bool,

    /// HTTP/2: most users sharing one connection, one stream each [default: 100]
    #[arg(long, value_name = "N")]
    pub max_streams: Option<u32>,

    /// Send through this HTTP proxy (http://[user:pass@]host:port): plain HTTP in absolute
    /// form, HTTPS through a CONNECT tunnel [default: HTTP_PROXY, HTTPS_PROXY, less NO_PROXY]
    #[arg(long, value_name = "URL")]
    pub proxy: Option<String>,

    /// A client certificate (PEM) for servers that require mutual TLS; with --key.
    #[arg(long, value_name = "PATH", requires = "key")]
    pub cert: Option<PathBuf>,

    /// The client certificate's private key (PEM).
    #[arg(long, value_name = "PATH", requires = "cert")]
    pub key: Option<PathBuf>,

    /// Connect to these addresses for HOST:PORT instead of resolving it, in turn
    /// (HOST:PORT:ADDR[,ADDR...]). Repeatable.
    #[arg(long = "resolve", value_name = "HOST:PORT:ADDRS")]
    pub resolve: Vec<crest_model::protocol::Resolve>,

    /// Each new connection resolves the host itself, timed as its own phase (dns) beside
    /// connect; a name that does not resolve fails that request as dns_failed [default: resolve
    /// once, before the run]
    #[arg(long)]
    pub dns_per_connection: bool,
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

    /// Exit with code 3 when crest itself limited the run (its CPU, the schedule, drops at the
    /// cap, local ports or files).
    #[arg(long)]
    pub strict: bool,

    /// Replace the run already in --out (its results, journal and reports) instead of refusing.
    #[arg(long)]
    pub force: bool,

    /// Write every request as a row of request-log.csv.gz in the run directory: its intended and
    /// actual start, name, user, iteration, status, outcome, timings and bytes.
    #[arg(long)]
    pub log_requests: bool,

    /// Also write the run to this PostgreSQL team store (docs/store.md), after results.json
    /// [default: $CREST_STORE]. A store that cannot be written makes the exit code 4.
    #[arg(long, value_name = "URL")]
    pub store: Option<String>,

    #[command(flatten)]
    pub web: WebArgs,

    /// Also write the thresholds and the run's checks as JUnit XML to PATH, for CI.
    #[arg(long, value_name = "PATH")]
    pub junit: Option<PathBuf>,

    /// Append a short Markdown summary (figures, thresholds, top findings) to PATH, such as
    /// $GITHUB_STEP_SUMMARY.
    #[arg(long, value_name = "PATH")]
    pub markdown_summary: Option<PathBuf>,

    #[command(flatten)]
    pub provenance: ProvenanceArgs,
}

/// Which test a run belongs to, for `crest history` (docs/reports.md); the git commit, branch
/// and dirty state of the current directory are added by themselves.
#[derive(Debug, Args, Clone, Default)]
pub struct ProvenanceArgs {
    /// The test this run is: runs with the same label are grouped and compared by `crest
    /// history` [default: the scenario's `label:`]
    #[arg(long, value_name = "NAME")]
    pub label: Option<String>,

    /// A key=value note kept with the run (build=123, env=staging); secret-looking keys have
    /// their values redacted. Repeatable.
    #[arg(long = "tag", value_name = "KEY=VALUE")]
    pub tags: Vec<String>,
}

/// Watching and steering the run from a browser (docs/live.md).
#[derive(Debug, Args, Clone, Default)]
pub struct WebArgs {
    /// Serve a live page, a control API and /metrics while the run goes, on ADDR (--web=ADDR)
    /// [default: 127.0.0.1 on a free port]. Off loopback, reading needs the token too.
    #[arg(long, value_name = "ADDR", num_args = 0..=1, require_equals = true, default_missing_value = "127.0.0.1:0")]
    pub web: Option<SocketAddr>,

    /// The token the page and API ask for [default: $CREST_WEB_TOKEN, or a new random one].
    #[arg(long, value_name = "TOKEN", requires = "web")]
    pub web_token: Option<String>,

    /// 'manual': start with no users and wait for the page or API to set them (runs until
    /// stopped unless -d is given). Needs --web, but for a collector, whose page is on --listen.
    #[arg(long, value_name = "MODE", value_parser = ["manual"])]
    pub load: Option<String>,
}

#[derive(Debug, Args)]
#[command(after_help = EXIT_CODES)]
pub struct FindArgs {
    /// The URL to load, or a scenario file (its flows are used; its load profile is not).
    pub url: String,

    /// A service level each probe must meet, e.g. 'p99 < 200ms' or 'error_rate < 1%'.
    /// Repeatable [default: error_rate < 1%]
    #[arg(long = "slo", value_name = "EXPR")]
    pub slo: Vec<String>,

    /// Search over the arrival rate (open model) instead of users.
    #[arg(long)]
    pub open: bool,

    /// Longest the whole search may take.
    #[arg(long, value_parser = parse_duration, default_value = "3m")]
    pub budget: Duration,

    /// Length of each probe; its first seconds are trimmed as warm-up.
    #[arg(long, value_parser = parse_duration, default_value = "5s")]
    pub probe: Duration,

    /// Highest level to try: users, or arrivals per second with --open.
    #[arg(long, value_name = "N", default_value_t = 10_000.0)]
    pub max: f64,

    /// Open model: the most requests in flight.
    #[arg(short = 'c', long = "concurrency", value_name = "N", default_value_t = crest_model::plan::defaults::MAX_IN_FLIGHT)]
    pub concurrency: u64,

    #[command(flatten)]
    pub request: RequestArgs,

    #[command(flatten)]
    pub monitor: MonitorArgs,

    /// Engine threads [default: the number of CPU cores]
    #[arg(long, value_name = "N")]
    pub threads: Option<usize>,

    #[command(flatten)]
    pub output: OutputArgs,
}

#[derive(Debug, Args)]
#[command(after_help = EXIT_CODES)]
pub struct SweepArgs {
    /// The scenario file; it reads each parameter as ${env:NAME}, in requests and in `load:`.
    pub scenario: PathBuf,

    /// One parameter and its values: NAME=V1,V2,... (e.g. threads=1,5,25,50).
    #[arg(
        long,
        value_name = "NAME=VALUES",
        required_unless_present = "points",
        conflicts_with = "points"
    )]
    pub param: Option<String>,

    /// Points that set several parameters each: 'threads=5,loops=5' 'threads=5,loops=10' ...
    #[arg(long, value_name = "NAME=VALUE,...", num_args = 1..)]
    pub points: Vec<String>,

    /// A command run before each point with `sh -c`; {NAME} is replaced by the point's value,
    /// which is also in the environment as NAME (load data, restart the database).
    #[arg(long, value_name = "COMMAND")]
    pub setup: Option<String>,

    /// What to watch at every point, added to the scenario's `monitor:` as `crest run` adds it.
    #[command(flatten)]
    pub monitor: MonitorArgs,

    #[command(flatten)]
    pub output: OutputArgs,
}

#[derive(Debug, Args)]
#[command(after_help = EXIT_CODES)]
pub struct DemoArgs {
    /// Longest the capacity search may take.
    #[arg(long, value_parser = parse_duration, default_value = "60s")]
    pub budget: Duration,

    #[command(flatten)]
    pub output: OutputArgs,
}

#[derive(Debug, Args)]
pub struct TargetArgs {
    /// Where to listen. Only loopback addresses are accepted.
    #[arg(long, default_value = "127.0.0.1:8080")]
    pub listen: SocketAddr,

    /// Requests served at once.
    #[arg(long, default_value_t = 8)]
    pub workers: usize,

    /// Mean time a worker spends on a request.
    #[arg(long, value_parser = parse_duration, default_value = "10ms")]
    pub service_time: Duration,

    /// How service times vary: fixed, uniform (0.5x to 1.5x) or exponential.
    #[arg(long, default_value = "fixed", value_parser = ["fixed", "uniform", "exponential"])]
    pub distribution: String,

    /// What a worker does for its service time: sleep (waiting on something else, capacity
    /// workers / service time) or spin (burn that much CPU time of its own thread, capacity at
    /// most cores / service time, slowed by a CPU quota or fewer cores than workers).
    #[arg(long, default_value = "sleep", value_parser = ["sleep", "spin"])]
    pub work: String,

    /// Requests that may wait for a worker; beyond that the answer is 503.
    #[arg(long, default_value_t = 64)]
    pub queue: usize,

    /// A request not answered within this time gets 500.
    #[arg(long, value_parser = parse_duration, default_value = "5s")]
    pub server_timeout: Duration,

    /// Response body size in bytes.
    #[arg(long, default_value_t = 1024)]
    pub size: usize,

    /// Leak one file descriptor every N requests (for leak-detection demos).
    #[arg(long, value_name = "N")]
    pub leak_fd_every: Option<u64>,

    /// Leak this many bytes of memory per request.
    #[arg(long, value_name = "BYTES", default_value_t = 0)]
    pub leak_bytes: usize,

    /// Slots in the orchestration API's pool (/auth/token, /plans): like a service's database
    /// connections.
    #[arg(long, value_name = "N", default_value_t = 10)]
    pub pool: usize,

    /// How long an API request waits for a pool slot before it gets 503.
    #[arg(long, value_parser = parse_duration, default_value = "5s")]
    pub pool_wait: Duration,

    /// Mean time an API request holds its pool slot (creating a plan: twice that); varies as
    /// --distribution says.
    #[arg(long, value_parser = parse_duration, default_value = "20ms")]
    pub pool_work: Duration,

    /// Plans kept; past that the oldest is forgotten (and answers 404).
    #[arg(long, value_name = "N", default_value_t = 100_000)]
    pub max_plans: usize,

    /// Client connections open at once; one accepted beyond that is reset at once (as Node's
    /// `server.maxConnections`) and counted in /metrics as
    /// crest_target_refused_connections_total [default: no limit]
    #[arg(long, value_name = "N")]
    pub max_connections: Option<usize>,
}

/// The users of `-c`: one level, or several run one after another.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Levels(pub Vec<u64>);

impl Levels {
    /// The first level (the only one, usually).
    pub fn first(&self) -> u64 {
        self.0[0]
    }
}

/// Parses `50` or `10,20,50,100`.
pub fn parse_levels(s: &str) -> Result<Levels, String> {
    let levels = s
        .split(',')
        .map(|part| {
            part.trim()
                .parse::<u64>()
                .map_err(|_| format!("{part:?} is not a whole number of users (write levels as 10,20,50)"))
        })
        .collect::<Result<Vec<u64>, String>>()?;
    if let Some(n) = levels
        .iter()
        .enumerate()
        .find_map(|(i, n)| levels[..i].contains(n).then_some(n))
    {
        return Err(format!("{n} users is given twice: each level is run once"));
    }
    Ok(Levels(levels))
}

/// What `-n` counts: requests, or requests per user.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Count {
    /// `-n 500`.
    Requests(u64),
    /// `-n 10x`: this many for each user of the level.
    PerUser(u64),
}

/// Parses `500` or `10x`.
pub fn parse_count(s: &str) -> Result<Count, String> {
    let (digits, per_user) = match s.strip_suffix(['x', 'X']) {
        Some(d) => (d, true),
        None => (s, false),
    };
    let n = digits
        .parse::<u64>()
        .map_err(|_| "write a number of requests (500) or of requests per user (10x)".to_string())?;
    Ok(if per_user {
        Count::PerUser(n)
    } else {
        Count::Requests(n)
    })
}

/// Parses `queue` or `drop`.
pub fn parse_on_cap(s: &str) -> Result<crest_model::plan::OnCap, String> {
    crest_model::plan::OnCap::parse(s).ok_or_else(|| "write queue or drop".to_string())
}

/// Parses `30s`, `5m`, `250ms`, `1h30m`.
pub fn parse_duration(s: &str) -> Result<Duration, String> {
    if s.trim().starts_with('-') {
        return Err("a duration cannot be negative".into());
    }
    let d = humantime::parse_duration(s.trim()).map_err(|e| format!("{e}; write a duration like 30s, 5m or 250ms"))?;
    match crest_model::plan::duration_problem(d) {
        Some(p) => Err(p.to_string()),
        None => Ok(d),
    }
}
