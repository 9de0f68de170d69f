//! Resolves quick-mode flags into a validated [`Plan`]. Every error names the flag at fault.

use crate::cli::{MonitorArgs, RequestArgs, RunArgs};
use anyhow::{bail, Context, Result};
use crest_analysis::expr::Expr;
use crest_analysis::stop::StopCondition;
use crest_model::address;
use crest_model::monitor::{MonitorPlan, PostgresSpec, ProcessSelect, ProcessSpec, PrometheusSpec};
use crest_model::plan::{self, HttpRequest, LoadModel, Plan, SegmentPlan, StopRule, Target, TlsOptions};
use crest_model::protocol::{HttpOptions, HttpVersion};
use std::time::Duration;

/// Default run length when neither -n nor -d is given.
const DEFAULT_DURATION: Duration = Duration::from_secs(10);
/// Request timeout when --timeout is not given.
const DEFAULT_TIMEOUT: Duration = Duration::from_secs(30);
/// Longest crest waits for requests in flight once sending stops.
const MAX_GRACE: Duration = Duration::from_secs(5);

pub fn resolve(args: &RunArgs) -> Result<Plan> {
    let model = match args.rate {
        Some(rate) => {
            if let Some(problem) = plan::rate_problem(rate) {
                bail!("--rate {rate}: {problem}");
            }
            let cap = args.concurrency.unwrap_or(1000);
            check_concurrency(cap)?;
            LoadModel::rate(rate, cap)
        }
        None => {
            let users = args.concurrency.unwrap_or(50);
            check_concurrency(users)?;
            LoadModel::users(users)
        }
    };
    if args.requests == Some(0) {
        bail!("-n 0: the number of requests must be at least 1");
    }
    if args.duration == Some(Duration::ZERO) {
        bail!("-d 0s: the duration must be above 0");
    }
    let stop = StopRule {
        requests: args.requests,
        duration: args.duration.or(if args.requests.is_none() {
            Some(DEFAULT_DURATION)
        } else {
            None
        }),
    };
    let timeout = args.request.timeout.unwrap_or(DEFAULT_TIMEOUT);
    if timeout.is_zero() {
        bail!("--timeout 0s: the timeout must be above 0");
    }
    let (request, name) = request(&args.url, &args.request, timeout)?;
    let threads = match args.threads {
        Some(0) => bail!("--threads 0: at least one thread is needed"),
        Some(n) => n,
        None => std::thread::available_parallelism().map(|n| n.get()).unwrap_or(1),
    };
    let mut monitor = MonitorPlan::default();
    add_monitors(&args.monitor, &mut monitor)?;
    let mut thresholds = Vec::new();
    for t in &args.thresholds {
        let e = Expr::parse(t).map_err(|m| anyhow::anyhow!("--threshold: {m}"))?;
        if e.text.contains("first") {
            bail!("--threshold {t:?}: thresholds compare with fixed values; `x first` is for --stop-when");
        }
        check_monitored(e.monitored(), &monitor, "--threshold", t)?;
        thresholds.push(e.text);
    }
    let mut stop_when = Vec::new();
    for c in &args.stop_when {
        let s = StopCondition::parse(c).map_err(|m| anyhow::anyhow!("--stop-when: {m}"))?;
        check_monitored(s.monitored(), &monitor, "--stop-when", c)?;
        stop_when.push(s.text());
    }
    Ok(Plan {
        load: model,
        stop,
        names: vec![name],
        part_of: Vec::new(),
        segments: vec![SegmentPlan::whole_run()],
        threads,
        grace: timeout.min(MAX_GRACE),
        target: Target::Http(request),
        stop_when,
        thresholds,
        monitor,
    })
}

fn check_monitored(
    m: Option<&crest_analysis::expr::Monitored>,
    plan: &MonitorPlan,
    flag: &str,
    text: &str,
) -> Result<()> {
    if let Some(m) = m {
        crest_monitor::check_metric(plan, &m.metric).map_err(|e| anyhow::anyhow!("{flag} {text:?}: {e}"))?;
    }
    Ok(())
}

/// Adds what the --monitor-* flags ask to watch to `plan` (a scenario's, or quick mode's).
pub fn add_monitors(args: &MonitorArgs, plan: &mut MonitorPlan) -> Result<()> {
    if let Some(i) = args.interval {
        if i < Duration::from_millis(100) {
            bail!(
                "--monitor-interval {}: sample at most every 100ms",
                humantime::format_duration(i)
            );
        }
        plan.interval = i;
    }
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
        if let ProcessSelect::Pattern(p) = &select {
            regex::Regex::new(p)
                .map_err(|e| anyhow::anyhow!("--monitor-pattern {p:?}: not a valid regular expression: {e}"))?;
        }
        if plan.processes.iter().any(|x| x.label == label) {
            bail!("--monitor-*: {label:?} is watched twice");
        }
        plan.processes.push(ProcessSpec { label, select });
    }
    for m in &args.metrics {
        regex::Regex::new(&format!("^(?:{m})$"))
            .map_err(|e| anyhow::anyhow!("--monitor-metric {m:?}: not a valid regular expression: {e}"))?;
    }
    if !args.metrics.is_empty() && args.prometheus.is_empty() {
        bail!("--monitor-metric: give the endpoint with --monitor-prometheus URL");
    }
    for url in &args.prometheus {
        address::parse(url, address::HTTP).map_err(|e| anyhow::anyhow!("--monitor-prometheus: {e}"))?;
        plan.prometheus.push(PrometheusSpec {
            url: url.clone(),
            metrics: args.metrics.clone(),
        });
    }
    for url in &args.postgres {
        let password = std::env::var("PGPASSWORD").ok();
        crest_pg::PgTarget::parse(url, password.as_deref(), None)
            .map_err(|e| anyhow::anyhow!("--monitor-postgres {}: {e}", crest_model::redact::url(url)))?;
        plan.postgres.push(PostgresSpec {
            url: url.clone(),
            password,
        });
    }
    // Catches bad URLs and patterns now, before any load is sent.
    crest_monitor::Sampler::new(plan).map_err(|e| anyhow::anyhow!("--monitor-*: {e}"))?;
    Ok(())
}

/// The repeated request of quick mode (and of `crest find` on a URL), with its statistics name.
pub fn request(url: &str, args: &RequestArgs, timeout: Duration) -> Result<(HttpRequest, String)> {
    let body = match (&args.body, &args.body_file) {
        (Some(b), _) => b.clone().into_bytes(),
        (None, Some(path)) => {
            std::fs::read(path).with_context(|| format!("--body-file {}: cannot read the file", path.display()))?
        }
        (None, None) => Vec::new(),
    };
    let method = match &args.method {
        Some(m) => m.to_ascii_uppercase(),
        None if !body.is_empty() => "POST".into(),
        None => "GET".into(),
    };
    let mut headers = Vec::with_capacity(args.headers.len());
    for h in &args.headers {
        let Some((name, value)) = h.split_once(':') else {
            // The text is not echoed: without a name, there is no telling whether it is a secret.
            bail!("-H: a header is written as 'Name: value', and one of them has no ':'");
        };
        let name = name.trim();
        if name.is_empty() || !name.bytes().all(|b| b.is_ascii_graphic()) {
            bail!("-H: {name:?} is not a valid header name");
        }
        crest_http::check_header(name, value.trim()).map_err(|e| anyhow::anyhow!("-H: {e}"))?;
        headers.push((name.to_string(), value.trim().to_string()));
    }
    let ca_pem = match &args.cacert {
        Some(path) => {
            Some(std::fs::read(path).with_context(|| format!("--cacert {}: cannot read the file", path.display()))?)
        }
        None => None,
    };
    if args.connect_timeout == Some(Duration::ZERO) {
        bail!("--connect-timeout 0s: the connect timeout must be above 0");
    }
    let mut http = HttpOptions {
        version: match (args.http2, args.http_version) {
            (true, _) => HttpVersion::Http2,
            (false, v) => v.unwrap_or_default(),
        },
        ..HttpOptions::default()
    };
    if let Some(n) = args.max_streams {
        if n == 0 {
            bail!("--max-streams 0: at least one stream per connection is needed");
        }
        if http.version == HttpVersion::Http1 {
            bail!("--max-streams applies to HTTP/2: add --http2 or --http auto");
        }
        http.max_streams = n;
    }
    let parsed = address::parse(url, address::HTTP)?;
    let path = address::path_and_query(&parsed);
    let name = format!("{method} {}", path.split('?').next().unwrap_or("/"));
    let url = url.to_string();
    Ok((
        HttpRequest {
            method,
            url,
            headers,
            body,
            timeout,
            connect_timeout: args.connect_timeout.unwrap_or(Duration::from_secs(10)).min(timeout),
            keepalive: !args.no_keepalive,
            tls: TlsOptions {
                insecure: args.insecure,
                ca_pem,
            },
            http,
        },
        name,
    ))
}

/// A plan that repeats one HTTP request, for `crest find` to vary the load of.
pub fn url_plan(request: HttpRequest, name: String, threads: Option<usize>, timeout: Duration) -> Plan {
    Plan {
        load: LoadModel::users(1),
        stop: StopRule::default(),
        names: vec![name],
        part_of: Vec::new(),
        segments: vec![SegmentPlan::whole_run()],
        threads: threads
            .unwrap_or_else(|| std::thread::available_parallelism().map(|n| n.get()).unwrap_or(1))
            .max(1),
        grace: timeout.min(MAX_GRACE),
        target: Target::Http(request),
        stop_when: Vec::new(),
        thresholds: Vec::new(),
        monitor: MonitorPlan::default(),
    }
}

/// Quick-mode flags given with a scenario file, which sets these itself.
pub fn quick_flags_given(a: &RunArgs) -> Vec<&'static str> {
    let checks: [(&'static str, bool); 18] = [
        ("--threshold", !a.thresholds.is_empty()),
        ("--stop-when", !a.stop_when.is_empty()),
        ("-c", a.concurrency.is_some()),
        ("-n", a.requests.is_some()),
        ("-d", a.duration.is_some()),
        ("--rate", a.rate.is_some()),
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
    ];
    checks
        .iter()
        .filter(|(_, given)| *given)
        .map(|(flag, _)| *flag)
        .collect()
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

#[cfg(test)]
mod tests {
    use super::*;
    use clap::Parser;

    fn args(extra: &[&str]) -> Result<Plan> {
        let mut v = vec!["crest", "run"];
        v.extend_from_slice(extra);
        let cli = crate::cli::Cli::try_parse_from(v).map_err(|e| anyhow::anyhow!("{e}"))?;
        match cli.command {
            crate::cli::Command::Run(a) => resolve(&a),
            _ => bail!("not run"),
        }
    }

    #[test]
    fn defaults_are_a_ten_second_closed_run_of_50_users() {
        let p = args(&["http://127.0.0.1:1/x?y=1"]).unwrap();
        assert_eq!(p.load, LoadModel::users(50));
        assert_eq!(p.stop.duration, Some(Duration::from_secs(10)));
        assert_eq!(p.names, vec!["GET /x".to_string()]);
    }

    #[test]
    fn a_body_makes_a_post_and_rate_makes_an_open_model() {
        let p = args(&["http://h/", "--body", "{}", "--rate", "100", "-n", "5"]).unwrap();
        assert_eq!(p.load, LoadModel::rate(100.0, 1000));
        assert_eq!(
            p.stop,
            StopRule {
                requests: Some(5),
                duration: None
            }
        );
        let Target::Http(h) = p.target else {
            panic!("quick mode makes an HTTP target")
        };
        assert_eq!(h.method, "POST");
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
        ] {
            let err = format!("{:#}", args(&flags).unwrap_err());
            assert!(err.contains(needle), "{flags:?}: {err}");
        }
    }
}
