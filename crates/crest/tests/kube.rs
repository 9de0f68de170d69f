//! `crest kube render`: the manifests of a distributed run, read back as the Kubernetes types
//! they claim to be, held to the contract `crest collect` and `crest worker` rely on, checked
//! by the Kubernetes schemas (`kubernetes-validate --strict`), and kept as a golden file
//! (`CREST_UPDATE_GOLDEN=1` rewrites it).
#![allow(clippy::unwrap_used)]

mod common;

use common::crest;
use k8s_openapi::api::batch::v1::Job;
use k8s_openapi::api::core::v1::{ConfigMap, ConfigMapVolumeSource, Container, Pod, PodSpec, Secret, Service};
use k8s_openapi::apimachinery::pkg::util::intstr::IntOrString;
use serde_json::Value;
use std::collections::BTreeMap;
use std::path::Path;

/// A value the scenario reads from the environment: it must reach the pods by their Secret,
/// and never be written.
const API_KEY: &str = "s3cr3t-api-key-5f1c";
const TOKEN: &str = "golden-token-0d4e";

const SCENARIO: &str = "\
target: ${env:CREST_KUBE_TARGET:-http://api.load.svc:8080}
defaults:
  headers: {Authorization: \"Bearer ${env:CREST_KUBE_API_KEY}\"}
data:
  accounts: {file: data/accounts.csv, mode: unique}
steps:
  - request:
      path: /accounts/${accounts.name}
      check: {status: 200}
  - request: {method: POST, path: /blobs, body_file: blob.bin}
load:
  users: 8
  duration: 30s
thresholds: [p99 < 500ms]
";

/// The scenario and its feeder in a directory of their own.
fn scenario() -> (tempfile::TempDir, std::path::PathBuf) {
    let dir = tempfile::tempdir().unwrap();
    std::fs::create_dir(dir.path().join("data")).unwrap();
    let rows: String = (0..8).map(|i| format!("user{i}\n")).collect();
    std::fs::write(dir.path().join("data/accounts.csv"), format!("name\n{rows}")).unwrap();
    // Not UTF-8: the ConfigMap holds it as binaryData.
    std::fs::write(dir.path().join("blob.bin"), [0xff, 0xfe, 0x00, 0x80]).unwrap();
    let path = dir.path().join("busy.yaml");
    std::fs::write(&path, SCENARIO).unwrap();
    (dir, path)
}

struct Rendered {
    code: i32,
    yaml: String,
    stderr: String,
}

fn render(args: &[&str]) -> Rendered {
    let out = crest()
        .args(["kube", "render"])
        .args(args)
        .env("CREST_KUBE_API_KEY", API_KEY)
        .env_remove("CREST_TOKEN")
        .output()
        .unwrap();
    Rendered {
        code: out.status.code().unwrap_or(-1),
        yaml: String::from_utf8(out.stdout).unwrap(),
        stderr: String::from_utf8_lossy(&out.stderr).into_owned(),
    }
}

/// The fixed run of the golden file: the scenario over 4 workers, one extra Secret.
fn render_fixed(path: &Path) -> Rendered {
    let r = render(&[
        path.to_str().unwrap(),
        "--workers",
        "4",
        "--token",
        TOKEN,
        "--namespace",
        "load",
        "--secret",
        "api-keys",
        "--image",
        "registry.example/crest:test",
        "--worker-cpu",
        "2",
    ]);
    assert_eq!(r.code, 0, "{}", r.stderr);
    r
}

/// The stream's documents, each as the Kubernetes type its kind names.
#[derive(Default)]
struct Objects {
    config_maps: Vec<ConfigMap>,
    secrets: Vec<Secret>,
    services: Vec<Service>,
    pods: Vec<Pod>,
    jobs: Vec<Job>,
}

fn parse(yaml: &str) -> Objects {
    let docs: Vec<Value> = serde_saphyr::from_multiple(yaml).unwrap();
    let mut o = Objects::default();
    for d in docs {
        let kind = d["kind"].as_str().unwrap().to_string();
        match kind.as_str() {
            "ConfigMap" => o.config_maps.push(serde_json::from_value(d).unwrap()),
            "Secret" => o.secrets.push(serde_json::from_value(d).unwrap()),
            "Service" => o.services.push(serde_json::from_value(d).unwrap()),
            "Pod" => o.pods.push(serde_json::from_value(d).unwrap()),
            "Job" => o.jobs.push(serde_json::from_value(d).unwrap()),
            other => panic!("unexpected kind {other}"),
        }
    }
    o
}

fn named<'a, T>(items: &'a [T], name: &str, meta: impl Fn(&T) -> Option<&String>) -> &'a T {
    items
        .iter()
        .find(|i| meta(i).map(String::as_str) == Some(name))
        .unwrap_or_else(|| panic!("no object named {name}"))
}

fn env_secrets(c: &Container) -> Vec<String> {
    c.env_from
        .iter()
        .flatten()
        .map(|e| {
            e.secret_ref
                .as_ref()
                .expect("only Secrets reach the pods' environment")
                .name
                .clone()
        })
        .collect()
}

fn requests(c: &Container) -> BTreeMap<String, String> {
    let r = c.resources.as_ref().unwrap().requests.as_ref().unwrap();
    r.iter().map(|(k, v)| (k.clone(), v.0.clone())).collect()
}

/// The collector's volume of the ConfigMap.
fn scenario_volume(o: &Objects) -> &ConfigMapVolumeSource {
    let spec = o.pods[0].spec.as_ref().unwrap();
    spec.volumes
        .iter()
        .flatten()
        .find_map(|v| v.config_map.as_ref())
        .unwrap()
}

/// The collector's /scenario as the pod sees it: the ConfigMap written out as its volume's
/// items say.
fn mount(o: &Objects) -> tempfile::TempDir {
    let map = &o.config_maps[0];
    let (text, binary) = (
        map.data.clone().unwrap_or_default(),
        map.binary_data.clone().unwrap_or_default(),
    );
    let volume = scenario_volume(o);
    let pod_dir = tempfile::tempdir().unwrap();
    for item in volume.items.iter().flatten() {
        let to = pod_dir.path().join(&item.path);
        std::fs::create_dir_all(to.parent().unwrap()).unwrap();
        match (text.get(&item.key), binary.get(&item.key)) {
            (Some(t), None) => std::fs::write(to, t).unwrap(),
            (None, Some(b)) => std::fs::write(to, &b.0).unwrap(),
            _ => panic!("{} is not in the ConfigMap once", item.key),
        }
    }
    pod_dir
}

#[test]
fn the_manifests_match_their_golden_file() {
    let (_dir, path) = scenario();
    let r = render_fixed(&path);
    let golden = Path::new(env!("CARGO_MANIFEST_DIR")).join("tests/golden/kube-render.yaml");
    if std::env::var_os("CREST_UPDATE_GOLDEN").is_some() {
        std::fs::create_dir_all(golden.parent().unwrap()).unwrap();
        std::fs::write(&golden, &r.yaml).unwrap();
    }
    let expected = std::fs::read_to_string(&golden).unwrap();
    assert!(
        r.yaml == expected,
        "the manifests differ from tests/golden/kube-render.yaml; run CREST_UPDATE_GOLDEN=1 cargo test -p crest --test kube to accept:\n{}",
        r.yaml
    );
}

#[test]
fn the_manifests_keep_the_contract_of_collector_and_workers() {
    let (_dir, path) = scenario();
    let r = render_fixed(&path);
    assert!(!r.yaml.contains(API_KEY), "a secret value was written");
    assert_eq!(r.yaml.matches(TOKEN).count(), 1, "the token is in its Secret alone");
    let o = parse(&r.yaml);
    assert_eq!(
        (
            o.config_maps.len(),
            o.secrets.len(),
            o.services.len(),
            o.pods.len(),
            o.jobs.len()
        ),
        (1, 1, 2, 1, 1)
    );
    for meta in o
        .services
        .iter()
        .map(|s| &s.metadata)
        .chain(o.pods.iter().map(|p| &p.metadata))
        .chain(o.jobs.iter().map(|j| &j.metadata))
        .chain(o.secrets.iter().map(|s| &s.metadata))
        .chain(o.config_maps.iter().map(|c| &c.metadata))
    {
        assert_eq!(meta.namespace.as_deref(), Some("load"));
    }

    // The token, as the variable both sides read.
    let token = &o.secrets[0];
    assert_eq!(token.metadata.name.as_deref(), Some("crest-token"));
    assert_eq!(token.string_data.as_ref().unwrap()["CREST_TOKEN"], TOKEN);

    // The collector: its command line, its one port behind the Service the workers dial.
    let collector = &o.pods[0];
    assert_eq!(collector.metadata.name.as_deref(), Some("crest-collector"));
    let spec = collector.spec.as_ref().unwrap();
    assert_eq!(spec.restart_policy.as_deref(), Some("Never"));
    let collect = named(&spec.containers, "collector", |c| Some(&c.name));
    let args = collect.args.as_ref().unwrap();
    assert_eq!(&args[..2], ["collect", "/scenario/busy.yaml"]);
    let tail: Vec<&str> = args[args.len() - 6..].iter().map(String::as_str).collect();
    assert_eq!(
        tail,
        ["--workers", "4", "--listen", "0.0.0.0:7700", "--out", "/results"]
    );
    assert_eq!(env_secrets(collect), ["crest-token", "api-keys"]);
    let port = &collect.ports.as_ref().unwrap()[0];
    assert_eq!((port.container_port, port.name.as_deref()), (7700, Some("collect")));
    let service = named(&o.services, "crest-collector", |s| s.metadata.name.as_ref());
    let sspec = service.spec.as_ref().unwrap();
    assert_eq!(sspec.ports.as_ref().unwrap()[0].port, 7700);
    assert_eq!(
        sspec.ports.as_ref().unwrap()[0].target_port,
        Some(IntOrString::String("collect".into()))
    );
    assert_eq!(
        sspec.selector, collector.metadata.labels,
        "the Service selects the collector"
    );

    // /results is a volume, and another container keeps the pod up to copy it from.
    let volumes = spec.volumes.as_ref().unwrap();
    let results = collect
        .volume_mounts
        .iter()
        .flatten()
        .find(|m| m.mount_path == "/results")
        .unwrap();
    assert!(volumes.iter().any(|v| v.name == results.name && v.empty_dir.is_some()));
    let holder = named(&spec.containers, "results", |c| Some(&c.name));
    assert!(holder.volume_mounts.iter().flatten().any(|m| m.name == results.name));

    // The workers: one Indexed Job, all at once, one per node.
    let job = &o.jobs[0];
    let jspec = job.spec.as_ref().unwrap();
    assert_eq!(jspec.completion_mode.as_deref(), Some("Indexed"));
    assert_eq!((jspec.completions, jspec.parallelism), (Some(4), Some(4)));
    // A lost worker is its index's failure alone: nothing ends the others.
    assert_eq!((jspec.backoff_limit_per_index, jspec.backoff_limit), (Some(0), None));
    assert_eq!(jspec.max_failed_indexes, None);
    let template_labels = jspec.template.metadata.as_ref().unwrap().labels.clone();
    let pod: &PodSpec = jspec.template.spec.as_ref().unwrap();
    let terms = pod
        .affinity
        .as_ref()
        .unwrap()
        .pod_anti_affinity
        .as_ref()
        .unwrap()
        .required_during_scheduling_ignored_during_execution
        .as_ref()
        .unwrap();
    assert_eq!(terms.len(), 1);
    assert_eq!(terms[0].topology_key, "kubernetes.io/hostname");
    let selector = terms[0].label_selector.as_ref().unwrap().match_labels.as_ref().unwrap();
    let labels = template_labels.as_ref().unwrap();
    assert!(
        selector.iter().all(|(k, v)| labels.get(k) == Some(v)),
        "the anti-affinity selects the workers themselves"
    );
    let worker = &pod.containers[0];
    assert_eq!(
        worker.args.as_ref().unwrap(),
        &["worker", "--collector", "crest-collector:7700"]
    );
    assert_eq!(env_secrets(worker), ["crest-token", "api-keys"]);
    assert!(
        worker.env.iter().flatten().all(|e| e.value.is_none()),
        "no value is inlined"
    );
    assert_eq!(
        requests(worker),
        [("cpu".into(), "2".into()), ("memory".into(), "1Gi".into())].into()
    );
    assert_eq!(
        requests(collect),
        [("cpu".into(), "1".into()), ("memory".into(), "1Gi".into())].into()
    );
    assert_eq!(worker.image.as_deref(), Some("registry.example/crest:test"));
    let headless = named(&o.services, "crest-worker", |s| s.metadata.name.as_ref());
    let hspec = headless.spec.as_ref().unwrap();
    assert_eq!(hspec.cluster_ip.as_deref(), Some("None"));
    assert_eq!(hspec.selector, template_labels);
    assert_eq!(pod.subdomain.as_deref(), Some("crest-worker"));
}

/// The ConfigMap, mounted as its volume says, is the scenario and its feeder at their places:
/// written out so, the scenario is valid where the collector reads it.
#[test]
fn the_collector_gets_the_scenario_and_its_files() {
    let (_dir, path) = scenario();
    let o = parse(&render_fixed(&path).yaml);
    let spec = o.pods[0].spec.as_ref().unwrap();
    let volume = scenario_volume(&o);
    assert_eq!(volume.name, "crest-scenario");
    let at = spec.containers[0]
        .volume_mounts
        .iter()
        .flatten()
        .find(|m| m.name == "scenario")
        .unwrap();
    assert_eq!(at.mount_path, "/scenario");
    let pod_dir = mount(&o);
    assert_eq!(
        std::fs::read(pod_dir.path().join("blob.bin")).unwrap(),
        [0xff, 0xfe, 0x00, 0x80]
    );
    assert_eq!(
        std::fs::read_to_string(pod_dir.path().join("busy.yaml")).unwrap(),
        SCENARIO
    );
    let out = crest()
        .arg("validate")
        .arg(pod_dir.path().join("busy.yaml"))
        .env("CREST_KUBE_API_KEY", "any")
        // The in-cluster name does not resolve here; validating resolves the target.
        .env("CREST_KUBE_TARGET", "http://127.0.0.1:8080")
        .output()
        .unwrap();
    assert!(out.status.success(), "{}", String::from_utf8_lossy(&out.stderr));
}

#[test]
fn what_cant_run_is_refused_naming_the_flag() {
    let (dir, path) = scenario();
    let p = path.to_str().unwrap();
    let cases: [(&[&str], &str); 9] = [
        (&[p], "--workers"),
        (&[p, "--workers", "0"], "--workers"),
        (&[p, "--workers", "9"], "8 users can't be split over 9 workers"),
        (&[p, "--workers", "2", "--worker-index", "1"], "--worker-index"),
        (&[p, "--workers", "2", "--namespace", "Load_Test"], "--namespace"),
        (&[p, "--workers", "2", "--worker-memory", "lots"], "--worker-memory"),
        (
            &["http://api/", "--workers", "2", "-H", "Authorization: Bearer abc"],
            "--header: its value is secret",
        ),
        (&["http://api/", "--workers", "2", "--body-file", p], "--body-file"),
        (
            &["http://u:pa55w0rd@api/", "--workers", "2"],
            "the URL: its value is secret",
        ),
    ];
    for (args, expected) in cases {
        let r = render(args);
        assert_eq!(r.code, 2, "{args:?}");
        assert!(r.stderr.contains(expected), "{args:?}: {}", r.stderr);
        assert!(r.yaml.is_empty(), "{args:?}: wrote {}", r.yaml);
        assert!(!r.stderr.contains("pa55w0rd"), "{}", r.stderr);
    }
    // A file read from outside the scenario's directory would not be in the pod.
    let outside = dir.path().join("data/outside.yaml");
    std::fs::write(
        &outside,
        SCENARIO
            .replace("data/accounts.csv", "../data/accounts.csv")
            .replace("blob.bin", "../blob.bin"),
    )
    .unwrap();
    let r = render(&[outside.to_str().unwrap(), "--workers", "2"]);
    assert_eq!(r.code, 2);
    assert!(r.stderr.contains("outside its own directory"), "{}", r.stderr);
}

/// A URL run: no ConfigMap, the load flags handed to the collector as given.
#[test]
fn a_url_run_hands_its_flags_to_the_collector() {
    let r = render(&[
        "http://api.load.svc:8080/items",
        "--rate",
        "2000",
        "-d",
        "1m",
        "-H",
        "Accept: application/json",
        "--workers",
        "4",
        "--stop-when",
        "error_rate > 5%",
        "--worker-cpu",
        "1500m",
    ]);
    assert_eq!(r.code, 0, "{}", r.stderr);
    let o = parse(&r.yaml);
    assert!(o.config_maps.is_empty());
    // Every worker runs as many engine threads, as many as its CPU (1.5 cores: 2).
    let args = o.pods[0].spec.as_ref().unwrap().containers[0].args.clone().unwrap();
    assert_eq!(
        args,
        [
            "collect",
            "http://api.load.svc:8080/items",
            "--duration=1m",
            "--rate=2000",
            "--header=Accept: application/json",
            "--stop-when=error_rate > 5%",
            "--threads=2",
            "--workers",
            "4",
            "--listen",
            "0.0.0.0:7700",
            "--out",
            "/results"
        ]
    );
    // A random token, for this run alone.
    let token = &o.secrets[0].string_data.as_ref().unwrap()["CREST_TOKEN"];
    assert_eq!(token.len(), 32);
    assert_ne!(
        token,
        &parse(&render(&["http://api/", "--workers", "2"]).yaml).secrets[0]
            .string_data
            .as_ref()
            .unwrap()["CREST_TOKEN"]
    );
}

/// The Kubernetes schemas, offline: PyPI's kubernetes-validate, strict (no unknown field). In
/// CI it must be there (.ci/run installs it); elsewhere the test is skipped without it.
#[test]
fn the_manifests_validate_against_the_kubernetes_schemas() {
    let (_dir, path) = scenario();
    let rendered = tempfile::tempdir().unwrap();
    let scenario_run = rendered.path().join("scenario.yaml");
    std::fs::write(&scenario_run, render_fixed(&path).yaml).unwrap();
    let url_run = rendered.path().join("url.yaml");
    std::fs::write(
        &url_run,
        render(&["http://api/", "--rate", "100", "--workers", "3"]).yaml,
    )
    .unwrap();
    // Its script, or its module where pip put the script off the PATH.
    let validator = [
        ("kubernetes-validate", &[][..]),
        ("python3", &["-m", "kubernetes_validate"][..]),
    ]
    .into_iter()
    .find(|(program, args)| {
        std::process::Command::new(program)
            .args(*args)
            .arg("--version")
            .output()
            .is_ok_and(|o| o.status.success())
    });
    let Some((program, args)) = validator else {
        assert!(
            std::env::var_os("CI").is_none() && std::env::var_os("CREST_CI").is_none(),
            "kubernetes-validate is missing in CI: .ci/run must install it"
        );
        eprintln!("skipped: no kubernetes-validate (pip install kubernetes-validate)");
        return;
    };
    let out = std::process::Command::new(program)
        .args(args)
        .arg("--strict")
        .arg(&scenario_run)
        .arg(&url_run)
        .output()
        .unwrap();
    let report = String::from_utf8_lossy(&out.stdout).into_owned() + &String::from_utf8_lossy(&out.stderr);
    assert!(out.status.success(), "{report}");
    // Every object was checked (the scenario's run has a ConfigMap more).
    assert_eq!(report.matches(" passed for resource ").count(), 11, "{report}");
}

/// A container's environment as its pod gets it: each Secret it names, key for key.
fn pod_env(c: &Container, secrets: &BTreeMap<String, BTreeMap<String, String>>) -> Vec<(String, String)> {
    env_secrets(c)
        .iter()
        .flat_map(|name| secrets[name].clone())
        .chain(
            c.env
                .iter()
                .flatten()
                .map(|e| (e.name.clone(), e.value.clone().unwrap())),
        )
        .collect()
}

/// The pods' own commands run here as processes, with nothing but the environment the
/// manifests give them (the Secrets' keys, and JOB_COMPLETION_INDEX for the Job's pods), the
/// collector's Service and volumes mapped to loopback and directories: the run they make
/// reaches a server that counts what it got, as much as the collector says it sent.
#[test]
fn the_pods_commands_run_as_local_processes() {
    if !crest().args(["collect", "--help"]).output().unwrap().status.success() {
        eprintln!("skipped: this crest has no `crest collect` yet");
        return;
    }
    let target = common::target_process(&["--workers", "64", "--service-time", "1ms"]);
    let (_dir, path) = scenario();
    std::fs::write(
        &path,
        SCENARIO
            .replace("duration: 30s", "duration: 2s")
            // The collector hands its workers text files only (for now).
            .replace("  - request: {method: POST, path: /blobs, body_file: blob.bin}\n", "")
            .replace("thresholds: [p99 < 500ms]\n", ""),
    )
    .unwrap();
    // The Secret the user made: the scenario's target and key, as the pods will read them.
    let api_keys = BTreeMap::from([
        (
            "CREST_KUBE_TARGET".to_string(),
            target.url.trim_end_matches('/').to_string(),
        ),
        ("CREST_KUBE_API_KEY".to_string(), API_KEY.to_string()),
    ]);
    let out = crest()
        .args(["kube", "render"])
        .arg(&path)
        .args(["--workers", "2", "--secret", "api-keys"])
        .env_remove("CREST_TOKEN")
        .envs(&api_keys)
        .output()
        .unwrap();
    assert!(out.status.success(), "{}", String::from_utf8_lossy(&out.stderr));
    let o = parse(&String::from_utf8(out.stdout).unwrap());
    let secrets = BTreeMap::from([
        ("crest-token".to_string(), o.secrets[0].string_data.clone().unwrap()),
        ("api-keys".to_string(), api_keys),
    ]);
    let scenario_dir = mount(&o);
    let results = tempfile::tempdir().unwrap();
    let port = std::net::TcpListener::bind("127.0.0.1:0")
        .unwrap()
        .local_addr()
        .unwrap()
        .port();
    // The Service crest-collector:7700 is this port; the volumes are these directories.
    let local = |arg: &String| {
        arg.replace("0.0.0.0:7700", &format!("127.0.0.1:{port}"))
            .replace("crest-collector:7700", &format!("127.0.0.1:{port}"))
            .replace("/scenario/", &format!("{}/", scenario_dir.path().display()))
            .replace("/results", &results.path().join("run").display().to_string())
    };
    let spawn = |c: &Container, extra: &[(String, String)]| {
        crest()
            .args(c.args.iter().flatten().map(local))
            // A worker keeps its part in ./crest-results: in the test's directory, not the crate's.
            .current_dir(results.path())
            .env_clear()
            .envs(pod_env(c, &secrets))
            .envs(extra.iter().cloned())
            .stdout(std::process::Stdio::null())
            .stderr(std::process::Stdio::piped())
            .spawn()
            .unwrap()
    };
    let collector = spawn(&o.pods[0].spec.as_ref().unwrap().containers[0], &[]);
    let job = o.jobs[0].spec.as_ref().unwrap();
    let worker = &job.template.spec.as_ref().unwrap().containers[0];
    let before = common::target_metric(&target.url, "crest_target_requests_total");
    let workers: Vec<_> = (0..job.completions.unwrap())
        .map(|i| spawn(worker, &[("JOB_COMPLETION_INDEX".into(), i.to_string())]))
        .collect();
    let c = collector.wait_with_output().unwrap();
    let stderr = String::from_utf8_lossy(&c.stderr);
    for w in workers {
        let w = w.wait_with_output().unwrap();
        assert!(
            w.status.success(),
            "a worker failed: {}\nthe collector: {stderr}",
            String::from_utf8_lossy(&w.stderr)
        );
    }
    assert_eq!(c.status.code(), Some(0), "{stderr}");
    let served = common::target_metric(&target.url, "crest_target_requests_total") - before;
    let doc = results.path().join("run/results.json");
    common::check_counts(&doc);
    let r: crest_model::results::Results = serde_json::from_str(&std::fs::read_to_string(&doc).unwrap()).unwrap();
    let sent = crest_analysis::analyze(&r).unwrap().summary.requests;
    assert!(sent > 0);
    assert_eq!(sent, served, "the collector's count is the server's");
    let text = serde_json::to_value(&r).unwrap();
    let mut indexes: Vec<u64> = text["workers"]
        .as_array()
        .unwrap()
        .iter()
        .map(|w| w["index"].as_u64().unwrap())
        .collect();
    indexes.sort_unstable();
    assert_eq!(indexes, [0, 1], "each pod's JOB_COMPLETION_INDEX is its worker index");
    assert!(
        !std::fs::read_to_string(&doc).unwrap().contains(API_KEY),
        "the Secret's value is not written"
    );
}
