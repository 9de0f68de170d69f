//! Turns flags into a plan: quick mode's URL and flags into a [`Draft`], the flags that may add to
//! any draft (a scenario's, `crest find`'s) onto it, and every draft into a [`Plan`] through the
//! one resolver, [`Draft::resolve`]. Every error names the flag at fault.

use crate::cli::{Count, MonitorArgs, RequestArgs, RunArgs};
use anyhow::{bail, Context, Result};
use crest_http::HttpWorkload;
use crest_model::address;
use crest_model::expr::{StopCondition, Threshold};
use crest_model::monitor::{MonitorPlan, PostgresSpec, ProcessSelect, ProcessSpec, PrometheusSpec};
use crest_model::plan::{
    self, ConnectionDraft, Draft, Given, HttpRequest, LoadDraft, LoadShape, Origin, Plan, SegmentPlan, Shard, StopRule,
    Target, TlsOptions, UsersProfile,
};
use crest_model::protocol::{HttpVersion, Network};
use crest_model::step::StepKind;
use crest_monitor::spec;
use std::time::Duration;

/// Quick mode: one URL and its flags; with several `-c` levels, the plan of the first (see
/// [`levels`]).
pub fn resolve(args: &RunArgs) -> Result<Plan> {
    finish(draft_of_run(args)?)
}

/// Quick mode's draft with every flag added, not yet resolved: the base of its levels.
pub fn draft_of_run(args: &RunArgs) -> Result<Draft> {
    let mut draft = draft(args)?;
    add_flags(&mut draft, &Flags::of_run(args))?;
    Ok(draft)
}

/// Quick mode's draft from the URL and its own flags, before the flags any plan may take.
pub fn draft(args: &RunArgs) -> Result<Draft> {
    let levels = levels(args)?;
    let load = match args.rate {
        Some(rate) => {
            if let Some(problem) = plan::rate_problem(rate) {
                bail!("--rate {}: {problem}", crest_model::number::short(rate));
            }
            LoadDraft::rate(rate, args.concurrency.as_ref().map(|c| c.first()))
        }
        None => LoadDraft::Closed {
            users: levels.first().map(|n| UsersProfile::constant(*n)),
            iterations: per_user(args),
        },
    };
    if args.duration == Some(Duration::ZERO) {
        bail!("-d 0s: the duration must be above 0");
    }
    let mut draft = url_draft(&args.url, &args.request)?;
    draft.stop = stop_at(args)?;
    draft.load = load;
    draft.on_cap = args.on_cap.map(given("--on-cap"));
    Ok(draft)
}

/// The users of each level `-c` gives (none without `-c`: the resolver's default then), checked.
pub fn levels(args: &RunArgs) -> Result<Vec<u64>> {
    let levels = args.concurrency.as_ref().map_or_else(Vec::new, |c| c.0.clone());
    if levels.len() > 1 && args.rate.is_some() {
        bail!(
            "-c {}: levels are numbers of users; with --rate, -c is the most requests in flight",
            join(&levels)
        );
    }
    for n in &levels {
        check_concurrency(*n)?;
    }
    Ok(levels)
}

fn join(levels: &[u64]) -> String {
    levels.iter().map(u64::to_string).collect::<Vec<_>>().join(",")
}

/// `-n 10x`: the requests each user sends (at each level), which the engine counts per user, so
/// that users whose requests fail at once cannot take the others' share.
pub fn per_user(args: &RunArgs) -> Option<u64> {
    match args.requests {
        Some(Count::PerUser(n)) => Some(n),
        _ => None,
    }
}

/// When a quick-mode run (or one level of it) stops: after `-n` requests in all, or after `-d`;
/// neither given, the resolver's default length. `-n 10x` is no stop rule but each user's own
/// count (see [`per_user`]): the run ends when every user has sent its share, or at `-d`.
fn stop_at(args: &RunArgs) -> Result<StopRule> {
    let requests = match args.requests {
        None => None,
        Some(Count::Requests(0) | Count::PerUser(0)) => {
            bail!("-n 0: the number of requests must be at least 1")
        }
        Some(Count::Requests(n)) => Some(n),
        Some(Count::PerUser(_)) if args.rate.is_some() => {
            bail!("-n ...x counts requests per user; with --rate, give a number of requests")
        }
        Some(Count::PerUser(_)) => None,
    };
    Ok(StopRule {
        requests,
        duration: args.duration,
    })
}

/// The flags that add to any plan: a scenario's, `crest find`'s, quick mode's.
pub struct Flags<'a> {
    pub threads: Option<usize>,
    /// `--workers` and `--worker-index`.
    pub workers: Option<(u32, Option<u32>)>,
    pub thresholds: &'a [String],
    pub stop_when: &'a [String],
    pub monitor: &'a MonitorArgs,
    pub log_requests: bool,
    /// See [`crest_model::plan::Draft::collected`].
    pub collected: bool,
    /// `--load manual`: the live page sets the users.
    pub manual: bool,
    /// `-d` was given: a run steered by hand still ends then.
    pub duration: bool,
    /// `--label` and `--tag`.
    pub provenance: &'a crate::cli::ProvenanceArgs,
}

impl<'a> Flags<'a> {
    pub fn of_run(a: &'a RunArgs) -> Self {
        Flags {
            threads: a.threads,
            workers: a.workers.map(|n| (n, a.worker_index)),
            thresholds: &a.thresholds,
            stop_when: &a.stop_when,
            monitor: &a.monitor,
            log_requests: a.output.log_requests,
            collected: a.collected,
            manual: a.output.web.load.as_deref() == Some("manual"),
            duration: a.duration.is_some(),
            provenance: &a.output.provenance,
        }
    }
}

/// The variable a Kubernetes Indexed Job sets to each pod's completion index.
const JOB_INDEX: &str = "JOB_COMPLETION_INDEX";

/// This worker's index: `--worker-index`, or else the Indexed Job's variable.
fn worker_index(flag: Option<u32>) -> Result<u32> {
    if let Some(i) = flag {
        return Ok(i);
    }
    match std::env::var(JOB_INDEX) {
        Ok(v) => v
            .trim()
            .parse()
            .map_err(|_| anyhow::anyhow!("{JOB_INDEX}={v:?}: give a worker index of 0 or more")),
        Err(_) => bail!("--workers: give this generator's --worker-index (0 to N-1), or set {JOB_INDEX}"),
    }
}

/// Adds what flags ask for to `draft`: more thresholds, stop conditions and monitors, the
/// engine threads, and a load steered by hand.
pub fn add_flags(draft: &mut Draft, flags: &Flags<'_>) -> Result<()> {
    if let Some(value) = flags.threads {
        draft.threads = Some(given("--threads")(value));
    }
    if let Some((count, index)) = flags.workers {
        draft.shard = Some(Given {
            value: Shard {
                index: worker_index(index)?,
                count,
            },
            origin: Origin::Flag("--workers"),
        });
    }
    draft.collected = flags.collected;
    if flags.manual {
        draft.load = LoadDraft::Manual;
        // The file's duration belonged to the load it replaces.
        if !flags.duration {
            draft.stop.duration = None;
        }
    }
    // The flag adds the log to a scenario that does not ask for it; it never takes it away.
    draft.log_requests |= flags.log_requests;
    crate::provenance::add(&mut draft.provenance, flags.provenance)?;
    add_monitor_flags(draft, flags.monitor)?;
    for t in flags.thresholds {
        draft.thresholds.push(Given {
            value: Threshold::parse(t).map_err(|m| anyhow::anyhow!("--threshold: {m}"))?,
            origin: Origin::Flag("--threshold"),
        });
    }
    for c in flags.stop_when {
        draft.stop_when.push(Given {
            value: StopCondition::parse(c).map_err(|m| anyhow::anyhow!("--stop-when: {m}"))?,
            origin: Origin::Flag("--stop-when"),
        });
    }
    Ok(())
}

/// Adds what the --monitor-* flags ask to `draft` (a scenario's `monitor:`, or quick mode's):
/// more to watch, and the interval and `--no-monitor-host` over the file's.
pub fn add_monitor_flags(draft: &mut Draft, monitor: &MonitorArgs) -> Result<()> {
    if let Some(i) = monitor.interval {
        draft.monitor_interval = Some(given("--monitor-interval")(i));
    }
    add_monitors(monitor, &mut draft.monitor)
}

/// The plan of a draft, through the one resolver.
pub fn finish(draft: Draft) -> Result<Plan> {
    Ok(draft.resolve()?)
}

/// The workload of a plan that repeats one HTTP request (quick mode, `crest find` on a URL).
pub fn http_workload(plan: &Plan) -> Result<HttpWorkload> {
    let Target::Http(http) = plan.target() else {
        bail!("internal: a plan without a URL")
    };
    HttpWorkload::new(http, plan.connection(), 0)
        .with_context(|| format!("URL {}", crest_model::redact::url(&http.url)))
}

/// Adds what the --monitor-* flags ask to watch to `plan` (a scenario's, or quick mode's).
fn add_monitors(args: &MonitorArgs, plan: &mut MonitorPlan) -> Result<()> {
    if args.no_host {
        plan.host = false;
    }
    let processes = args
        .pids
        .iter()
        .map(|p| (p.to_string(), ProcessSelect::Pid(*p)))
        .chain(
            args.pid_files
                .iter()
                .map(|f| (f.display().to_string(), ProcessSelect::PidFile(f.clone()))),
        )
        .chain(args.names.iter().map(|n| (n.clone(), ProcessSelect::Name(n.clone()))))
        .chain(
            args.patterns
                .iter()
                .map(|p| (p.clone(), ProcessSelect::Pattern(p.clone()))),
        );
    for (label, select) in processes {
        let flag = match select {
            ProcessSelect::Pattern(_) => "--monitor-pattern",
            _ => "--monitor-*:",
        };
        spec::add_process(plan, ProcessSpec { label, select }).map_err(|e| anyhow::anyhow!("{flag} {e}"))?;
    }
    for m in &args.metrics {
        spec::metric_pattern(m).map_err(|e| anyhow::anyhow!("--monitor-metric {e}"))?;
    }
    if !args.metrics.is_empty() && args.prometheus.is_empty() {
        bail!("--monitor-metric: give the endpoint with --monitor-prometheus URL");
    }
    for url in &args.prometheus {
        let endpoint = PrometheusSpec {
            url: url.clone(),
            metrics: args.metrics.clone(),
        };
        spec::add_prometheus(plan, endpoint).map_err(|e| anyhow::anyhow!("--monitor-prometheus: {e}"))?;
    }
    for url in &args.postgres {
        let server = PostgresSpec {
            url: url.clone(),
            password: std::env::var("PGPASSWORD").ok(),
        };
        spec::add_postgres(plan, server)
            .map_err(|e| anyhow::anyhow!("--monitor-postgres {}: {e}", crest_model::redact::url(url)))?;
    }
    // Catches bad URLs and patterns now, before any load is sent.
    crest_monitor::Sampler::new(plan).map_err(|e| anyhow::anyhow!("--monitor-*: {e}"))?;
    Ok(())
}

/// The repeated request of quick mode (and of `crest find` on a URL), how it is sent as the
/// flags give it, and its statistics name.
fn request(url: &str, args: &RequestArgs) -> Result<(HttpRequest, ConnectionDraft, String)> {
    if args.timeout == Some(Duration::ZERO) {
        bail!("--timeout 0s: the timeout must be above 0");
    }
    if args.connect_timeout == Some(Duration::ZERO) {
        bail!("--connect-timeout 0s: the connect timeout must be above 0");
    }
    let body = match (&args.body, &args.body_file) {
        (Some(b), _) => b.clone().into_bytes(),
        (None, Some(path)) => {
            read_file(path).with_context(|| format!("--body-file {}: cannot read the file", path.display()))?
        }
        (None, None) => Vec::new(),
    };
    let method = plan::method(args.method.as_deref(), !body.is_empty());
    let mut headers = Vec::with_capacity(args.headers.len());
    for h in &args.headers {
        let Some((name, value)) = h.split_once(':') else {
            // The text is not echoed: without a name, there is no telling whether it is a secret.
            bail!("-H: a header is written as 'Name: value', and one of them has no ':'");
        };
        let name = name.trim();
        if !crest_http::is_token(name) {
            bail!("-H: {name:?} is not a valid header name");
        }
        crest_http::check_header(name, value.trim()).map_err(|e| anyhow::anyhow!("-H: {e}"))?;
        headers.push((name.to_string(), value.trim().to_string()));
    }
    let ca_pem = match &args.cacert {
        Some(path) => {
            Some(read_file(path).with_context(|| format!("--cacert {}: cannot read the file", path.display()))?)
        }
        None => None,
    };
    let client_pem = match (&args.cert, &args.key) {
        (Some(cert), Some(key)) => Some((
            read_file(cert).with_context(|| format!("--cert {}: cannot read the file", cert.display()))?,
            read_file(key).with_context(|| format!("--key {}: cannot read the file", key.display()))?,
        )),
        _ => None,
    };
    let mut network = Network::from_env(&|k| std::env::var(k).ok());
    if let Some(p) = &args.proxy {
        network.set_proxy(p);
    }
    network.resolve = args.resolve.clone();
    network.dns_per_connection = args.dns_per_connection;
    let connection = ConnectionDraft {
        timeout: args.timeout.map(given("--timeout")),
        connect_timeout: args.connect_timeout.map(given("--connect-timeout")),
        version: if args.http2 {
            Some(HttpVersion::Http2)
        } else {
            args.http_version
        },
        max_streams: args.max_streams.map(given("--max-streams")),
        keepalive: args.no_keepalive.then_some(false),
        tls: TlsOptions {
            insecure: args.insecure,
            ca_pem,
            client_pem,
        },
        network,
        ..ConnectionDraft::default()
    };
    let parsed = address::parse(url, address::HTTP)?;
    let path = address::path_and_query(&parsed);
    let name = format!("{method} {}", path.split('?').next().unwrap_or("/"));
    let request = HttpRequest {
        method,
        url: url.to_string(),
        headers,
        body,
    };
    Ok((request, connection, name))
}

/// A draft that repeats one HTTP request: one user until stopped, for quick mode and for
/// `crest find` to vary the load of.
pub fn url_draft(url: &str, args: &RequestArgs) -> Result<Draft> {
    let (request, connection, name) = request(url, args)?;
    Ok(Draft {
        load: LoadDraft::users(1),
        stop: StopRule::default(),
        names: vec![name],
        part_of: Vec::new(),
        segments: vec![SegmentPlan::whole_run()],
        target: Target::Http(request),
        connection,
        threads: None,
        shard: None,
        collected: false,
        thresholds: Vec::new(),
        stop_when: Vec::new(),
        monitor: MonitorPlan::default(),
        monitor_interval: None,
        log_requests: false,
        on_cap: None,
        shape: None,
        provenance: Default::default(),
    })
}

/// Quick-mode flags that describe the request, given with a scenario file, which describes its
/// own requests. The load flags (`-c`, `-n`, `-d`, `--rate`, `--on-cap`) are not among them:
/// the load is the user's to set at run time (see [`load_over`]).
pub fn quick_flags_given(a: &RunArgs) -> Vec<&'static str> {
    let checks: [(&'static str, bool); 17] = [
        ("-m", a.request.method.is_some()),
        ("-H", !a.request.headers.is_empty()),
        ("--body", a.request.body.is_some()),
        ("--body-file", a.request.body_file.is_some()),
        ("--timeout", a.request.timeout.is_some()),
        ("--connect-timeout", a.request.connect_timeout.is_some()),
        ("--no-keepalive", a.request.no_keepalive),
        ("--insecure", a.request.insecure),
        ("--cacert", a.request.cacert.is_some()),
        ("--http", a.request.http_version.is_some()),
        ("--http2", a.request.http2),
        ("--max-streams", a.request.max_streams.is_some()),
        ("--proxy", a.request.proxy.is_some()),
        ("--cert", a.request.cert.is_some()),
        ("--key", a.request.key.is_some()),
        ("--resolve", !a.request.resolve.is_empty()),
        ("--dns-per-connection", a.request.dns_per_connection),
    ];
    checks
        .iter()
        .filter(|(_, given)| *given)
        .map(|(flag, _)| *flag)
        .collect()
}

/// The scenario file a run names, refused when it does not exist or when flags of a URL's
/// request are given with it.
pub fn scenario_path(a: &RunArgs) -> Result<&std::path::Path> {
    let path = std::path::Path::new(&a.url);
    if !path.exists() {
        // Neither a URL nor a file: saying which flags need a URL would hide that.
        bail!(
            "{:?} is not a URL (http://host/path) nor a scenario file that exists",
            a.url
        );
    }
    refuse_request_flags(a)?;
    Ok(path)
}

/// Refuses the flags of a URL's request given with a scenario, which writes its own requests.
pub fn refuse_request_flags(a: &RunArgs) -> Result<()> {
    let given = quick_flags_given(a);
    if !given.is_empty() {
        bail!(
            "{}: these flags describe a URL's request; a scenario writes its own (see docs/scenario.md)",
            given.join(", ")
        );
    }
    Ok(())
}

/// Sets a scenario's load from the run's load flags, over the file's: flags over the file, as
/// k6's are over its script. On a constant load (`users` or `rate`) `-c`, `--rate`, `-n` and
/// `-d` mean what they mean in quick mode, and the file fills only what they leave out: `-c`
/// alone makes it closed, `--rate` open, and `-d` or `-n` replace its whole stop rule. A
/// profile keeps its shape: `-d` may end it sooner, and `-c`, `--rate` and `-n` are refused
/// with where the profile is written. `--on-cap` is set on either. With several `-c` levels,
/// the load is the first's (see [`crate::levels`]).
pub fn load_over(draft: &mut Draft, a: &RunArgs) -> Result<()> {
    let levels = levels(a)?;
    if a.duration == Some(Duration::ZERO) {
        bail!("-d 0s: the duration must be above 0");
    }
    if matches!(a.requests, Some(Count::Requests(0) | Count::PerUser(0))) {
        bail!("-n 0: the number of requests must be at least 1");
    }
    match draft.shape.as_ref().map(|s| s.value) {
        Some(LoadShape::Staged(key) | LoadShape::Loops(key)) => profile_over(draft, a, key)?,
        _ => constant_over(draft, a, levels.first().copied())?,
    }
    if let Some(on_cap) = a.on_cap {
        draft.on_cap = Some(given("--on-cap")(on_cap));
    }
    Ok(())
}

/// [`load_over`] on a constant load; `users` is `-c`'s first level.
fn constant_over(draft: &mut Draft, a: &RunArgs, users: Option<u64>) -> Result<()> {
    let file_cap = match &draft.load {
        LoadDraft::Open { max_in_flight, .. } => Some(*max_in_flight),
        _ => None,
    };
    let load = match (a.rate, users) {
        (Some(rate), _) => {
            if let Some(problem) = plan::rate_problem(rate) {
                bail!("--rate {}: {problem}", crest_model::number::short(rate));
            }
            Some(LoadDraft::rate(rate, users.or(file_cap.flatten())))
        }
        (None, None) if file_cap.is_some() => {
            if let Some(n) = per_user(a) {
                bail!(
                    "-n {n}x: {}: the load is a rate (open model), whose iterations belong to no \
                     user; give -n N for N in all, or -c for users",
                    place(draft)
                );
            }
            None
        }
        (None, _) if users.is_some() || per_user(a).is_some() => {
            let file_users = match &draft.load {
                LoadDraft::Closed { users: Some(u), .. } => Some(u.start),
                _ => None,
            };
            Some(LoadDraft::Closed {
                users: users.or(file_users).map(UsersProfile::constant),
                iterations: per_user(a),
            })
        }
        (None, _) => None,
    };
    if let Some(load) = load {
        let closed = matches!(load, LoadDraft::Closed { .. });
        let step = match &load {
            LoadDraft::Closed { users, .. } => StepKind::at(users.as_ref().map(|u| u.start), None),
            LoadDraft::Open { rate, .. } => StepKind::at(None, Some(rate.start)),
            LoadDraft::Manual => StepKind::Manual,
        };
        *draft = draft.at(load, step);
        // The file's on_cap was about the rate the flags replaced with users.
        if closed
            && matches!(
                draft.on_cap,
                Some(Given {
                    origin: Origin::File { .. },
                    ..
                })
            )
        {
            draft.on_cap = None;
        }
    }
    if a.duration.is_some() || a.requests.is_some() {
        draft.stop = stop_at(a)?;
    } else if let (Some(n), Some(wanted), None, None) = (draft.stop.requests, users, draft.stop.duration, a.rate) {
        // The file's count in all would leave users that never start an iteration (an
        // import's single pass under -c 10): what was asked cannot be what was meant.
        if n < wanted {
            bail!(
                "-c {wanted}: {}: the scenario stops after {} in all, so {} of the {wanted} users would never start one; give -d or -n too (e.g. -c {wanted} -d 1m)",
                place(draft),
                crest_report::fmt::words::count(n, "iteration"),
                wanted - n
            );
        }
    }
    Ok(())
}

/// [`load_over`] on a profile given by `key`.
fn profile_over(draft: &mut Draft, a: &RunArgs, key: &str) -> Result<()> {
    let at = place(draft);
    for (flag, given, sets) in [
        ("-c", a.concurrency.is_some(), "the users"),
        ("--rate", a.rate.is_some(), "the arrival rate"),
        ("-n", a.requests.is_some(), "the iterations"),
    ] {
        if given {
            bail!(
                "{flag}: {at}: the load is a `{key}` profile; {flag} sets {sets} of a constant \
                 load only (edit the profile, or use crest find)"
            );
        }
    }
    let Some(d) = a.duration else { return Ok(()) };
    // A profile's stages are its length: a stop after `-d` ends it sooner, and a longer run
    // would hold its last level for a time the file never asked for.
    if let (Some(LoadShape::Staged(_)), Some(length)) = (draft.shape.as_ref().map(|s| s.value), draft.stop.duration) {
        if d > length {
            bail!(
                "-d {}: {at}: the `{key}` profile lasts {}; -d can end it sooner, not lengthen it",
                humantime::format_duration(d),
                humantime::format_duration(length)
            );
        }
    }
    draft.stop.duration = Some(d);
    Ok(())
}

/// Where a scenario's load is written, as `file:line:column`.
fn place(draft: &Draft) -> String {
    match draft.shape.as_ref().map(|s| &s.origin) {
        Some(Origin::File {
            file, at: Some((l, c)), ..
        }) => format!("{file}:{l}:{c}"),
        Some(Origin::File { file, at: None, .. }) => file.clone(),
        _ => "the scenario".to_string(),
    }
}

/// Marks a value as given by `flag`.
fn given<T>(flag: &'static str) -> impl Fn(T) -> Given<T> {
    move |value| Given {
        value,
        origin: Origin::Flag(flag),
    }
}

fn check_concurrency(n: u64) -> Result<()> {
    if n == 0 {
        bail!("-c 0: at least one concurrent user is needed");
    }
    if let Some(problem) = plan::users_problem(n) {
        bail!("-c {n}: {problem}");
    }
    Ok(())
}

/// A file named by a flag (`--body-file`, `--cacert`), read up to the limit of such files.
fn read_file(path: &std::path::Path) -> Result<Vec<u8>, crest_model::input::ReadError> {
    crest_model::input::read_file(path, crest_model::input::MAX_DATA_FILE)
}

#[cfg(test)]
mod tests {
    use super::*;
    use clap::Parser;
    use crest_model::plan::{defaults, LoadModel};
    use crest_model::step::StepKind;

    fn args(extra: &[&str]) -> Result<Plan> {
        run_args(extra, resolve)
    }

    /// `crest run EXTRA...`'s arguments, handed to `f`.
    fn run_args<T>(extra: &[&str], f: impl Fn(&RunArgs) -> Result<T>) -> Result<T> {
        let mut v = vec!["crest", "run"];
        v.extend_from_slice(extra);
        let cli = crate::cli::Cli::try_parse_from(v).map_err(|e| anyhow::anyhow!("{e}"))?;
        match cli.command {
            crate::cli::Command::Run(a) => f(&a),
            _ => bail!("not run"),
        }
    }

    #[test]
    fn defaults_are_a_ten_second_closed_run_of_50_users() {
        let p = args(&["http://127.0.0.1:1/x?y=1"]).unwrap();
        assert_eq!(*p.load(), LoadModel::users(50));
        assert_eq!(p.stop().duration, Some(Duration::from_secs(10)));
        assert_eq!(p.names(), vec!["GET /x".to_string()]);
    }

    #[test]
    fn a_body_makes_a_post_and_rate_makes_an_open_model() {
        let p = args(&["http://h/", "--body", "{}", "--rate", "100", "-n", "5"]).unwrap();
        assert_eq!(*p.load(), LoadModel::rate(100.0, 1000));
        assert_eq!(
            p.stop(),
            StopRule {
                requests: Some(5),
                duration: None
            }
        );
        let Target::Http(h) = p.target() else {
            panic!("quick mode makes an HTTP target")
        };
        assert_eq!(h.method, "POST");
    }

    /// The open model takes one engine thread per 50,000 arrivals/s, at most the cores: a
    /// thread polls between its arrivals, and one the rate does not need takes a core from a
    /// target on the same machine. The closed model and a thread count given keep theirs.
    #[test]
    fn the_open_model_takes_the_threads_its_rate_needs() {
        let cores = defaults::threads();
        let threads = |extra: &[&str]| args(&[&["http://h/"], extra].concat()).unwrap().threads();
        assert_eq!(threads(&["--rate", "1000"]), 1);
        assert_eq!(threads(&["--rate", "50000"]), 1);
        assert_eq!(threads(&["--rate", "50001"]), 2.min(cores));
        assert_eq!(threads(&["--rate", "1e6"]), 20.min(cores));
        assert_eq!(threads(&["--rate", "1000", "--threads", "3"]), 3);
        assert_eq!(threads(&["-c", "10"]), cores);
    }

    #[test]
    fn levels_start_at_the_first_and_count_per_user() {
        let p = args(&["http://h/", "-c", "10,20,50", "-n", "10x"]).unwrap();
        assert_eq!(
            *p.load(),
            LoadModel::Closed {
                users: plan::UsersProfile::constant(10),
                iterations: Some(10)
            },
            "each user's own ten"
        );
        assert_eq!((p.stop().requests, p.stop().duration), (None, None));
        let p = args(&["http://h/", "-c", "10,20", "-n", "500"]).unwrap();
        assert_eq!(p.stop().requests, Some(500), "a plain -n is per level");
    }

    #[test]
    fn bad_flags_are_named() {
        for (flags, needle) in [
            (vec!["http://h/", "-c", "0"], "-c 0"),
            (vec!["http://h/", "--rate", "0"], "--rate"),
            (vec!["http://h/", "-n", "0"], "-n 0"),
            (vec!["http://h/", "-H", "NoColon"], "-H"),
            (vec!["ftp://h/"], "URL"),
            (vec!["http://h/", "--body-file", "/nonexistent/crest"], "--body-file"),
            (vec!["http://h/", "-d", "soon"], "--duration"),
            (vec!["http://h/", "-c", "10,x"], "--concurrency"),
            (vec!["http://h/", "-c", "10,20,10"], "--concurrency"),
            (vec!["http://h/", "-c", "5,0"], "-c 0"),
            (vec!["http://h/", "-c", "5,20", "--rate", "10"], "-c 5,20"),
            (vec!["http://h/", "-n", "10x", "--rate", "10"], "-n"),
            (vec!["http://h/", "-n", "0x"], "-n 0"),
            (vec!["http://h/", "-n", "ten"], "--requests"),
            (
                vec!["http://h/", "--on-cap", "queue"],
                "--on-cap applies to the open model only",
            ),
            (vec!["http://h/", "--rate", "10", "--on-cap", "wait"], "--on-cap"),
        ] {
            let err = format!("{:#}", args(&flags).unwrap_err());
            assert!(err.contains(needle), "{flags:?}: {err}");
        }
    }

    /// The scenario's plan, through the same resolver as quick mode's.
    fn scenario(text: &str) -> Result<Plan, String> {
        crest_scenario::load_str("scenario.yaml", text, std::path::Path::new("."), &|k| {
            std::env::var(k).ok()
        })
        .map(|s| s.plan)
        .map_err(|e| e.to_string())
    }

    /// What the resolver decides, side by side: load, end, grace and how requests are sent.
    fn decided(p: &Plan) -> impl PartialEq + std::fmt::Debug {
        let c = p.connection();
        (
            p.load().clone(),
            p.stop(),
            p.grace(),
            (c.timeout, c.connect_timeout, c.keepalive, c.http, c.tls.insecure),
            (*c.network).clone(),
        )
    }

    const HEAD: &str = "target: http://127.0.0.1:9\nsteps:\n  - request: {path: /x}\n";

    #[test]
    fn the_same_settings_resolve_to_the_same_plan_through_both_front_ends() {
        for (flags, file) in [
            (vec![], "load: {users: 50, duration: 10s}\ndefaults: {cookies: false}\n"),
            (
                vec![
                    "-c",
                    "7",
                    "-d",
                    "3s",
                    "--timeout",
                    "2s",
                    "--connect-timeout",
                    "1s",
                    "--no-keepalive",
                    "--insecure",
                ],
                "load: {users: 7, duration: 3s}\n\
                 defaults: {timeout: 2s, connect_timeout: 1s, keepalive: false, insecure: true, cookies: false}\n",
            ),
            (
                vec!["--rate", "5", "-d", "2s", "--http2", "--max-streams", "4"],
                "load: {rate: 5, duration: 2s}\ndefaults: {http: 2, max_streams: 4, cookies: false}\n",
            ),
            (
                vec!["--rate", "5", "-c", "30", "-d", "2s", "--http", "auto"],
                "load: {rate: 5, duration: 2s, max_in_flight: 30}\ndefaults: {http: auto, cookies: false}\n",
            ),
        ] {
            let mut all = vec!["http://127.0.0.1:9/x"];
            all.extend_from_slice(&flags);
            let quick = args(&all).unwrap();
            let file = scenario(&format!("{HEAD}{file}")).unwrap();
            assert_eq!(decided(&quick), decided(&file), "{flags:?}");
            assert_eq!(file.names(), quick.names(), "{flags:?}: one method rule names both");
        }
    }

    /// The connect timeout is never above the request's: quick mode capped it, the scenario
    /// compiler did not.
    #[test]
    fn the_connect_timeout_is_capped_at_the_timeout_on_both_paths() {
        let quick = args(&["http://127.0.0.1:9/x", "--timeout", "2s"]).unwrap();
        let file = scenario(&format!(
            "{HEAD}load: {{users: 1, duration: 1s}}\ndefaults: {{timeout: 2s}}\n"
        ))
        .unwrap();
        let given = scenario(&format!(
            "{HEAD}load: {{users: 1, duration: 1s}}\ndefaults: {{timeout: 2s, connect_timeout: 5s}}\n"
        ))
        .unwrap();
        for p in [&quick, &file, &given] {
            assert_eq!(p.connection().connect_timeout, Duration::from_secs(2));
            assert_eq!(p.grace(), Duration::from_secs(2));
        }
        let p = args(&["http://127.0.0.1:9/x"]).unwrap();
        let f = scenario(&format!("{HEAD}load: {{users: 1, duration: 1s}}\n")).unwrap();
        for p in [&p, &f] {
            assert_eq!(
                (p.connection().timeout, p.connection().connect_timeout, p.grace()),
                (defaults::TIMEOUT, defaults::CONNECT_TIMEOUT, defaults::MAX_GRACE)
            );
        }
        assert!(
            !p.connection().http.cookies && f.connection().http.cookies,
            "a scenario's users keep cookies"
        );
    }

    #[test]
    fn the_monitor_interval_follows_one_rule_on_both_paths() {
        let err = format!("{:#}", args(&["http://h/", "--monitor-interval", "50ms"]).unwrap_err());
        assert!(
            err.contains("--monitor-interval 50ms: sample at most every 100ms"),
            "{err}"
        );
        let file = format!("{HEAD}load: {{users: 1, duration: 1s}}\nmonitor: {{interval: 50ms}}\n");
        let err = scenario(&file).unwrap_err();
        assert!(
            err.contains("scenario.yaml:5:21: monitor: interval: 50ms: sample at most every 100ms"),
            "{err}"
        );
        let quick = args(&["http://h/"]).unwrap();
        let f = scenario(&format!("{HEAD}load: {{users: 1, duration: 1s}}\n")).unwrap();
        assert_eq!(
            (quick.monitor().interval, f.monitor().interval),
            (defaults::MONITOR_INTERVAL, defaults::MONITOR_INTERVAL)
        );
        // The flag replaces the file's interval, and is held to the same bound.
        let file = file.replace("50ms", "500ms");
        let with = |interval: &str| {
            let mut d = crest_scenario::draft_str("scenario.yaml", &file, std::path::Path::new("."), &|_| None)
                .unwrap()
                .draft;
            let monitor = MonitorArgs {
                interval: Some(crate::cli::parse_duration(interval).unwrap()),
                ..MonitorArgs::default()
            };
            let flags = Flags {
                threads: None,
                workers: None,
                thresholds: &[],
                stop_when: &[],
                monitor: &monitor,
                log_requests: false,
                collected: false,
                manual: false,
                duration: false,
                provenance: &Default::default(),
            };
            add_flags(&mut d, &flags)?;
            finish(d)
        };
        assert_eq!(with("250ms").unwrap().monitor().interval, Duration::from_millis(250));
        let err = format!("{:#}", with("10ms").unwrap_err());
        assert!(
            err.contains("--monitor-interval 10ms: sample at most every 100ms"),
            "{err}"
        );
    }

    #[test]
    fn streams_per_connection_follow_one_rule_on_both_paths() {
        for (flags, file, quick_says, file_says) in [
            (
                vec!["--http2", "--max-streams", "0"],
                "defaults: {http: 2, max_streams: 0}\n",
                "--max-streams 0: at least one stream per connection is needed",
                "scenario.yaml:5:34: max_streams: at least one stream per connection is needed",
            ),
            (
                vec!["--max-streams", "3"],
                "defaults: {max_streams: 3}\n",
                "--max-streams applies to HTTP/2: add --http2 or --http auto",
                "scenario.yaml:5:25: max_streams applies to HTTP/2: add `http: 2` or `http: auto`",
            ),
        ] {
            let mut all = vec!["http://127.0.0.1:9/x"];
            all.extend_from_slice(&flags);
            let err = format!("{:#}", args(&all).unwrap_err());
            assert!(err.contains(quick_says), "{flags:?}: {err}");
            let err = scenario(&format!("{HEAD}load: {{users: 1, duration: 1s}}\n{file}")).unwrap_err();
            assert!(err.contains(file_says), "{file}: {err}");
        }
    }

    /// A level or probe is the draft at that load, resolved on its own: a search in the open
    /// model over a closed draft takes the threads its rate needs, as a run at that rate would,
    /// not the closed draft's.
    #[test]
    fn a_level_of_a_draft_is_resolved_for_its_own_load() {
        let base = run_args(&["http://127.0.0.1:1/"], draft).unwrap();
        let rate = 40_000.0;
        let probe = base
            .at(LoadDraft::rate(rate, Some(500)), StepKind::at(None, Some(rate)))
            .resolve()
            .unwrap();
        assert_eq!(probe.threads(), defaults::open_threads(rate));
        assert_eq!(probe.segments().len(), 1);
        assert_eq!(
            (probe.segments()[0].users, probe.segments()[0].rate),
            (None, Some(rate))
        );
        let level = base
            .at(LoadDraft::users(7), StepKind::at(Some(7), None))
            .resolve()
            .unwrap();
        assert_eq!(level.threads(), defaults::threads());
        assert_eq!(level.segments()[0].users, Some(7));
    }

    /// `--load manual` is part of the draft: no users until the page sets them, one step, and
    /// no end but `-d` when given.
    #[test]
    fn a_manual_load_waits_for_the_page_and_ends_only_at_a_given_duration() {
        let manual = |extra: &[&str]| {
            let mut argv = vec!["http://127.0.0.1:1/", "--web", "--load", "manual"];
            argv.extend(extra);
            args(&argv).unwrap()
        };
        let p = manual(&[]);
        let LoadModel::Closed {
            users,
            iterations: None,
        } = p.load()
        else {
            panic!("{:?}", p.load())
        };
        assert_eq!((users.start, users.stages.len()), (0, 0));
        assert_eq!(p.segments()[0].kind, StepKind::Manual);
        assert_eq!(p.stop().duration, None);
        assert_eq!(manual(&["-d", "30s"]).stop().duration, Some(Duration::from_secs(30)));
    }
    /// `crest run scenario.yaml FLAGS...` on a file whose `load:` is `load`: the plan, the run's
    /// load flags set over the file's.
    fn over(load: &str, flags: &[&str]) -> Result<Plan> {
        let text = format!("{HEAD}load: {load}\n");
        let d = crest_scenario::draft_str("scenario.yaml", &text, std::path::Path::new("."), &|_| None)
            .map_err(|e| anyhow::anyhow!("{e}"))?
            .draft;
        run_args(&[&["scenario.yaml"], flags].concat(), |a| {
            refuse_request_flags(a)?;
            let mut d = d.clone();
            load_over(&mut d, a)?;
            finish(d)
        })
    }

    fn closed(users: u64, iterations: Option<u64>) -> LoadModel {
        LoadModel::Closed {
            users: plan::UsersProfile::constant(users),
            iterations,
        }
    }

    fn stop(requests: Option<u64>, secs: Option<u64>) -> StopRule {
        StopRule {
            requests,
            duration: secs.map(Duration::from_secs),
        }
    }

    #[test]
    fn the_load_flags_replace_a_constant_load_field_by_field() {
        let file = "{users: 1, iterations: 1}";
        let p = over(file, &[]).unwrap();
        assert_eq!((p.load().clone(), p.stop()), (closed(1, None), stop(Some(1), None)));
        // -c alone keeps the file's stop rule...
        let p = over("{users: 1, iterations: 40}", &["-c", "10"]).unwrap();
        assert_eq!((p.load().clone(), p.stop()), (closed(10, None), stop(Some(40), None)));
        assert_eq!(
            p.segments()[0].kind,
            StepKind::at(Some(10), None),
            "the step is the flag's"
        );
        // ...but not one that leaves users without an iteration to start: an import's single
        // pass under -c 10 is refused, saying what to give.
        let err = format!("{:#}", over(file, &["-c", "10"]).unwrap_err());
        assert!(
            err.contains("-c 10: scenario.yaml:")
                && err.contains("9 of the 10 users would never start one; give -d or -n too"),
            "{err}"
        );
        // -d or -n replace the whole stop rule: duration and iterations both.
        let p = over(file, &["-c", "10", "-d", "1m"]).unwrap();
        assert_eq!((p.load().clone(), p.stop()), (closed(10, None), stop(None, Some(60))));
        let p = over("{users: 4, duration: 1m, iterations: 9}", &["-n", "100"]).unwrap();
        assert_eq!((p.load().clone(), p.stop()), (closed(4, None), stop(Some(100), None)));
        let p = over(file, &["-n", "7x", "-c", "3"]).unwrap();
        assert_eq!((p.load().clone(), p.stop()), (closed(3, Some(7)), stop(None, None)));
        let p = over("{users: 5, duration: 1m}", &["-n", "2x"]).unwrap();
        assert_eq!((p.load().clone(), p.stop()), (closed(5, Some(2)), stop(None, None)));
        // --rate makes it open; -c is then the most in flight, as in quick mode.
        let p = over(file, &["--rate", "20", "-d", "1s"]).unwrap();
        assert_eq!(
            (p.load().clone(), p.stop()),
            (LoadModel::rate(20.0, 1000), stop(None, Some(1)))
        );
        assert_eq!(p.segments()[0].rate, Some(20.0));
        let p = over(file, &["--rate", "20", "-c", "30", "--on-cap", "queue", "-d", "1s"]).unwrap();
        let LoadModel::Open {
            max_in_flight: 30,
            on_cap: plan::OnCap::Queue,
            ..
        } = p.load()
        else {
            panic!("{:?}", p.load())
        };
        // A rate file keeps its cap and on_cap under --rate, and becomes closed under -c alone.
        let rate = "{rate: 5, duration: 1m, max_in_flight: 40, on_cap: queue}";
        let p = over(rate, &["--rate", "50"]).unwrap();
        let LoadModel::Open {
            rate: r,
            max_in_flight: 40,
            on_cap: plan::OnCap::Queue,
        } = p.load()
        else {
            panic!("{:?}", p.load())
        };
        assert_eq!((r.start, p.stop()), (50.0, stop(None, Some(60))));
        let p = over(rate, &["-c", "8"]).unwrap();
        assert_eq!((p.load().clone(), p.stop()), (closed(8, None), stop(None, Some(60))));
        let p = over(rate, &["-n", "500"]).unwrap();
        assert_eq!(p.stop(), stop(Some(500), None));
        // The flags are held to quick mode's rules, and named.
        for (load, flags, needle) in [
            (file, vec!["-c", "0"], "-c 0"),
            (file, vec!["--rate", "0"], "--rate"),
            (file, vec!["-n", "0"], "-n 0"),
            (file, vec!["-d", "0s"], "-d 0s"),
            (file, vec!["--rate", "5", "-n", "3x"], "-n ...x"),
            (
                file,
                vec!["--on-cap", "queue"],
                "--on-cap applies to the open model only",
            ),
            (rate, vec!["-n", "3x"], "-n 3x: scenario.yaml:4:"),
        ] {
            let err = format!("{:#}", over(load, &flags).unwrap_err());
            assert!(err.contains(needle), "{flags:?}: {err}");
        }
    }

    #[test]
    fn a_profile_refuses_the_flags_of_a_constant_load_and_says_where_it_is() {
        let stepping = "\n  stepping: {start: 1, step: 1, every: 10s, max: 3}";
        for (flag, value) in [("-c", "5"), ("--rate", "5"), ("-n", "10")] {
            let err = format!("{:#}", over(stepping, &[flag, value]).unwrap_err());
            assert!(
                err.starts_with(&format!(
                    "{flag}: scenario.yaml:5:13: the load is a `stepping` profile; {flag} sets"
                )),
                "{err}"
            );
            assert!(err.contains("use crest find"), "{err}");
        }
        let err = format!("{:#}", over("{threads: 2, loops: 3}", &["-c", "5"]).unwrap_err());
        assert!(err.contains("the load is a `threads` profile"), "{err}");
        let stages = "\n  stages:\n    - {ramp_to: 5, over: 10s}\n    - {hold: 20s}";
        let err = format!("{:#}", over(stages, &["-n", "5x"]).unwrap_err());
        assert!(
            err.starts_with("-n: scenario.yaml:6:7: the load is a `stages` profile"),
            "{err}"
        );
        // -d ends a profile sooner, never later.
        assert_eq!(over(stepping, &["-d", "15s"]).unwrap().stop(), stop(None, Some(15)));
        let err = format!("{:#}", over(stepping, &["-d", "1m"]).unwrap_err());
        assert!(
            err.contains("-d 1m: scenario.yaml:5:13: the `stepping` profile lasts 30s; -d can end it sooner"),
            "{err}"
        );
        let p = over("{threads: 2, loops: 3}", &["-d", "5s"]).unwrap();
        assert_eq!((p.load().clone(), p.stop()), (closed(2, Some(3)), stop(None, Some(5))));
        let p = over("{rate_stages: [{ramp_to: 10, over: 5s}]}", &["--on-cap", "queue"]).unwrap();
        assert!(matches!(
            p.load(),
            LoadModel::Open {
                on_cap: plan::OnCap::Queue,
                ..
            }
        ));
    }

    #[test]
    fn the_flags_of_a_request_are_still_refused_with_a_scenario() {
        for flag in [
            &["-H", "x: y"][..],
            &["-m", "POST"],
            &["--body", "{}"],
            &["--timeout", "1s"],
            &["--http", "2"],
        ] {
            let err = format!("{:#}", over("{users: 1, iterations: 1}", flag).unwrap_err());
            assert!(
                err.starts_with(&format!("{}: these flags describe a URL's request", flag[0])),
                "{err}"
            );
        }
    }
}
