//! `crest kube render`: the Kubernetes manifests of a run spread over pods. The run is checked
//! here as `crest run` would check it, split over the workers, so that what can't work is
//! refused before anything is applied; [`manifests`] builds the objects and [`yaml`] writes
//! them.

pub mod manifests;

use crate::cli::{KubeRenderArgs, RunArgs};
use crate::plan;
use anyhow::{bail, Context, Result};
use clap::parser::ValueSource;
use clap::{ArgMatches, Args, CommandFactory};
use crest_model::plan::{Draft, Given, Origin, Shard};
use manifests::{File, Requests, Spec};
use std::path::{Component, Path};

/// The most a ConfigMap holds is 1 MiB, its keys and names included.
const MAX_FILES: usize = 900 * 1024;

/// Writes the manifests of `a` to stdout. `args` is the command line, for the load flags the
/// collector is given as they were written.
pub fn render(a: &KubeRenderArgs, args: &[String]) -> Result<u8> {
    let spec = spec(a, args)?;
    print!("{}", yaml(&manifests::build(&spec))?);
    Ok(0)
}

/// The objects as one YAML stream, the form `kubectl apply -f -` reads.
pub fn yaml(objects: &[manifests::Object]) -> Result<String> {
    serde_saphyr::to_string_multiple(objects).context("writing the manifests as YAML")
}

fn spec(a: &KubeRenderArgs, args: &[String]) -> Result<Spec> {
    let run = &a.run;
    let workers = match run.workers {
        Some(0) | None => bail!("--workers: give the number of worker pods (at least 1)"),
        Some(n) => n,
    };
    for (given, flag, why) in [
        (
            run.worker_index.is_some(),
            "--worker-index",
            "each worker pod gets its own from the Job",
        ),
        (
            run.output.out.is_some(),
            "--out",
            "the collector writes its run to /results in its pod",
        ),
        (
            run.output.web.web.is_some(),
            "--web",
            "the collector serves the live page on its port, 7700",
        ),
    ] {
        if given {
            bail!("{flag}: {why}; leave it out");
        }
    }
    // The collector runs one level; levels are `crest run`'s, one after another.
    if plan::levels(run)?.len() > 1 {
        bail!("-c: levels run one after another, and the collector runs one: give one level here");
    }
    let (target, files) = if run.url.contains("://") {
        check_url_run(run, workers)?;
        (run.url.clone(), Vec::new())
    } else {
        let (name, files) = check_scenario_run(run, workers)?;
        (format!("{}/{name}", manifests::SCENARIO_DIR), files)
    };
    let mut collect = vec![target];
    collect.extend(load_flags(args)?);
    let worker_cpu = quantity("--worker-cpu", &a.worker_cpu)?;
    // Every worker runs as many engine threads (see `crest collect`): as many as a worker's
    // CPU, unless given, rather than the collector's pod's count.
    if run.threads.is_none() {
        collect.push(format!("--threads={}", cores(&worker_cpu)));
    }
    // The manifests are text anyone with the file can read: a value crest keeps secret must
    // reach the pods through a Secret instead.
    let shown = crest_model::redact::command_line(&collect);
    if let Some(at) = collect.iter().zip(&shown).position(|(a, b)| a != b) {
        let name = match at {
            0 => "the URL",
            _ => collect[at].split('=').next().unwrap_or_default(),
        };
        bail!(
            "{name}: its value is secret and would be written into the manifests; read it in a \
             scenario as ${{env:NAME}} and give the Secret that holds it with --secret"
        );
    }
    Ok(Spec {
        image: match &a.image {
            Some(i) if i.trim().is_empty() || i.chars().any(char::is_whitespace) => {
                bail!("--image {i:?}: give an image reference such as registry.example/crest:0.1.0")
            }
            Some(i) => i.clone(),
            None => format!("crest:{}", env!("CARGO_PKG_VERSION")),
        },
        namespace: match &a.namespace {
            Some(ns) => Some(dns_name("--namespace", ns, 63)?),
            None => None,
        },
        workers,
        token: token(a.token.as_deref())?,
        secrets: a
            .secrets
            .iter()
            .map(|s| dns_name("--secret", s, 253))
            .collect::<Result<_>>()?,
        files,
        collect,
        worker_requests: Requests {
            cpu: worker_cpu,
            memory: quantity("--worker-memory", &a.worker_memory)?,
        },
        collector_requests: Requests {
            cpu: quantity("--collector-cpu", &a.collector_cpu)?,
            memory: quantity("--collector-memory", &a.collector_memory)?,
        },
    })
}

/// Checks a URL run as `crest run` would, split over `workers`.
fn check_url_run(run: &RunArgs, workers: u32) -> Result<()> {
    let r = &run.request;
    let local = [
        ("--body-file", r.body_file.is_some()),
        ("--cacert", r.cacert.is_some()),
        ("--cert", r.cert.is_some()),
        ("--monitor-pid-file", !run.monitor.pid_files.is_empty()),
    ];
    if let Some((flag, _)) = local.iter().find(|(_, given)| *given) {
        bail!(
            "{flag}: a file on this machine is not in the pods; a scenario's files are (its \
             ConfigMap holds them)"
        );
    }
    let mut draft = plan::draft(run)?;
    plan::add_flags(&mut draft, &whole_run_flags(run))?;
    check_split(draft, workers)
}

/// Checks a scenario run as `crest run` would, split over `workers`. Returns the scenario's
/// file name and the files for the collector's pod: the scenario and the data files it reads,
/// at the same places relative to it.
fn check_scenario_run(run: &RunArgs, workers: u32) -> Result<(String, Vec<File>)> {
    let path = plan::scenario_path(run)?;
    // Variables the scenario reads (`${env:NAME}`) are read here as the pods will read them
    // from their Secrets: set them to check the scenario; their values are never written.
    let scenario = crest_scenario::draft(path)?;
    crate::validate::warn(&run.url, &scenario.warnings);
    let mut draft = scenario.draft;
    // The load flags reach the collector with the others (see `load_flags`), which sets them
    // over the file's as `crest run` does.
    plan::load_over(&mut draft, run)?;
    plan::add_flags(&mut draft, &whole_run_flags(run))?;
    check_split(draft, workers)?;
    let name = path
        .file_name()
        .and_then(|n| n.to_str())
        .context("the scenario's file name is not UTF-8")?
        .to_string();
    let dir = path.parent().unwrap_or(Path::new("."));
    let mut files = vec![File {
        path: name.clone(),
        content: std::fs::read(path).with_context(|| format!("reading {}", path.display()))?,
    }];
    for f in scenario.files {
        let relative = Path::new(&f);
        if !relative.components().all(|c| matches!(c, Component::Normal(_))) {
            bail!(
                "{}: the scenario reads {f:?}, outside its own directory; the collector's pod has \
                 only that directory: move the file beside the scenario",
                run.url
            );
        }
        let content = std::fs::read(dir.join(relative)).with_context(|| format!("reading {f}"))?;
        files.push(File { path: f, content });
    }
    let size: usize = files.iter().map(|f| f.content.len() + f.path.len()).sum();
    if size > MAX_FILES {
        bail!(
            "{}: the scenario and its files are {} KiB, and a ConfigMap holds at most {} KiB",
            run.url,
            size / 1024,
            MAX_FILES / 1024
        );
    }
    for (i, f) in files.iter().enumerate() {
        if let Some(g) = files[..i]
            .iter()
            .find(|g| manifests::key(&g.path) == manifests::key(&f.path))
        {
            bail!(
                "{:?} and {:?}: rename one, their ConfigMap keys are the same",
                g.path,
                f.path
            );
        }
    }
    Ok((name, files))
}

/// The flags that add to the plan, but not its split: the collector splits it.
fn whole_run_flags(run: &RunArgs) -> plan::Flags<'_> {
    plan::Flags {
        workers: None,
        ..plan::Flags::of_run(run)
    }
}

/// Refuses a plan that can't work whole or can't be split over `workers` by the resolver's
/// own rules. Stop conditions and thresholds are the collector's, judged on the merged run, so
/// only the whole plan is held to them.
fn check_split(draft: Draft, workers: u32) -> Result<()> {
    let mut part = draft.clone();
    part.shard = Some(Given {
        value: Shard {
            index: 0,
            count: workers,
        },
        origin: Origin::Flag("--workers"),
    });
    part.stop_when.clear();
    part.thresholds.clear();
    plan::finish(draft)?;
    plan::finish(part)?;
    Ok(())
}

/// The load flags given on the command line, each as `--flag=value` (clap's own reading of
/// them, so a value is never taken for a flag), for `crest collect`: all of `crest run`'s
/// flags but the target and `--workers`, which the collector gets apart.
fn load_flags(args: &[String]) -> Result<Vec<String>> {
    let top = crate::cli::Cli::command().try_get_matches_from(args)?;
    let render = top
        .subcommand_matches("kube")
        .and_then(|k| k.subcommand_matches("render"))
        .context("internal: not `crest kube render`")?;
    let run = RunArgs::augment_args(clap::Command::new("run"));
    let mut out = given(&top, "redact", "redact", true);
    for arg in run.get_arguments() {
        let id = arg.get_id().as_str();
        if arg.is_positional() || id == "workers" {
            continue;
        }
        let Some(long) = arg.get_long() else { continue };
        out.extend(given(render, id, long, arg.get_action().takes_values()));
    }
    Ok(out)
}

/// `--long=value` for each value of `id` given on the command line, or `--long` for a switch.
fn given(m: &ArgMatches, id: &str, long: &str, takes_values: bool) -> Vec<String> {
    if m.value_source(id) != Some(ValueSource::CommandLine) {
        return Vec::new();
    }
    if !takes_values {
        return vec![format!("--{long}")];
    }
    m.get_raw(id)
        .into_iter()
        .flatten()
        .map(|v| format!("--{long}={}", v.to_string_lossy()))
        .collect()
}

/// The token: `--token`, `$CREST_TOKEN`, or a new random one.
fn token(flag: Option<&str>) -> Result<String> {
    let token = match flag {
        Some(t) => t.to_string(),
        None => match std::env::var(manifests::TOKEN_VAR) {
            Ok(t) => t,
            Err(_) => crest_live::new_token().context("reading random bytes for the token")?,
        },
    };
    if token.trim().is_empty() {
        bail!("--token: the token must not be empty");
    }
    Ok(token)
}

/// A Kubernetes object name (RFC 1123: lower-case letters, digits, '-', and '.' in longer
/// names), at most `max` long.
fn dns_name(flag: &str, name: &str, max: usize) -> Result<String> {
    let dots = max > 63;
    let ok = !name.is_empty()
        && name.len() <= max
        && name
            .chars()
            .all(|c| c.is_ascii_lowercase() || c.is_ascii_digit() || c == '-' || (dots && c == '.'))
        && name.starts_with(|c: char| c.is_ascii_alphanumeric())
        && name.ends_with(|c: char| c.is_ascii_alphanumeric());
    if !ok {
        bail!(
            "{flag} {name:?}: a Kubernetes name is lower-case letters, digits and '-'{}, at most {max} \
             long, starting and ending with a letter or digit",
            if dots { " or '.'" } else { "" }
        );
    }
    Ok(name.to_string())
}

/// A Kubernetes quantity above 0: a number and a unit (`500m`, `2`, `1.5`, `512Mi`, `2G`).
/// Whole cores of a CPU quantity checked by [`quantity`] (`1500m` is 2), at least 1.
fn cores(q: &str) -> usize {
    let (number, milli) = match q.strip_suffix('m') {
        Some(n) => (n, true),
        None => (q, false),
    };
    let v: f64 = number.parse().unwrap_or(1.0);
    let v = if milli { v / 1000.0 } else { v };
    (v.ceil() as usize).max(1)
}

fn quantity(flag: &str, q: &str) -> Result<String> {
    const UNITS: [&str; 14] = [
        "", "m", "k", "M", "G", "T", "P", "E", "Ki", "Mi", "Gi", "Ti", "Pi", "Ei",
    ];
    let digits = q.find(|c: char| !c.is_ascii_digit() && c != '.').unwrap_or(q.len());
    let (number, unit) = q.split_at(digits);
    let value: Option<f64> = (number.bytes().filter(|b| *b == b'.').count() <= 1)
        .then(|| number.parse().ok())
        .flatten();
    match value {
        Some(v) if v > 0.0 && UNITS.contains(&unit) => Ok(q.to_string()),
        _ => bail!("{flag} {q:?}: give a quantity above 0, such as 500m or 2 (CPU), 512Mi or 2Gi (memory)"),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn quantities_are_a_number_and_a_unit() {
        for ok in ["1", "500m", "1.5", "512Mi", "2Gi", "2G"] {
            assert_eq!(quantity("--x", ok).unwrap(), ok);
        }
        for bad in ["", "0", "0m", "m", "1.2.3", "1gb", "-1", "1 Gi", "Gi"] {
            let e = quantity("--x", bad).unwrap_err().to_string();
            assert!(e.starts_with("--x "), "{bad:?}: {e}");
        }
    }

    #[test]
    fn names_follow_rfc_1123() {
        assert!(dns_name("--namespace", "load-test-1", 63).is_ok());
        assert!(dns_name("--secret", "api.keys", 253).is_ok());
        for bad in ["", "Load", "-x", "x-", "a.b", "a_b", &"a".repeat(64)] {
            let e = dns_name("--namespace", bad, 63).unwrap_err().to_string();
            assert!(e.starts_with("--namespace "), "{bad:?}: {e}");
        }
    }
}
