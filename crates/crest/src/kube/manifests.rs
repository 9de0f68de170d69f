//! The Kubernetes objects of a distributed run, as typed `k8s-openapi` values: what
//! [`Spec`] asks for, built without text, so that every field is one the API knows. Writing
//! them as YAML is [`super::yaml`]'s.
//!
//! The objects rely on the contract of `crest collect` and `crest worker`: the collector
//! listens on [`PORT`] for the workers, the live page and /metrics, and writes its run to
//! [`RESULTS`]; each worker finds it as `crest-collector:7700`, reads the token from
//! `CREST_TOKEN` and its index from `JOB_COMPLETION_INDEX` (which an Indexed Job sets).

use k8s_openapi::api::batch::v1::{Job, JobSpec};
use k8s_openapi::api::core::v1::{
    Affinity, ConfigMap, ConfigMapVolumeSource, Container, ContainerPort, EmptyDirVolumeSource, EnvFromSource,
    KeyToPath, Pod, PodAffinityTerm, PodAntiAffinity, PodSecurityContext, PodSpec, PodTemplateSpec, Probe,
    ResourceRequirements, Secret, SecretEnvSource, SecurityContext, Service, ServicePort, ServiceSpec, TCPSocketAction,
    Volume, VolumeMount,
};
use k8s_openapi::apimachinery::pkg::api::resource::Quantity;
use k8s_openapi::apimachinery::pkg::apis::meta::v1::{LabelSelector, ObjectMeta};
use k8s_openapi::apimachinery::pkg::util::intstr::IntOrString;
use k8s_openapi::ByteString;
use std::collections::BTreeMap;

/// The collector's one port: workers, live page, control API and /metrics.
pub const PORT: u16 = 7700;
/// Where the collector writes its run directory, in its pod.
pub const RESULTS: &str = "/results";
/// Where the scenario and its files are, in the collector's pod.
pub const SCENARIO_DIR: &str = "/scenario";
/// The collector's Pod and Service: the name workers connect to.
pub const COLLECTOR: &str = "crest-collector";
/// The workers' Job and headless Service.
pub const WORKER: &str = "crest-worker";
/// The ConfigMap with the scenario.
pub const SCENARIO: &str = "crest-scenario";
/// The Secret with the token, as `CREST_TOKEN`.
pub const TOKEN_SECRET: &str = "crest-token";
/// The variable both sides read the token from.
pub const TOKEN_VAR: &str = "CREST_TOKEN";

/// The user the image runs as (the Containerfile's), so that the pods can insist on non-root.
const USER: i64 = 10001;
const COMPONENT: &str = "app.kubernetes.io/component";

/// What the manifests are made from, every part already checked.
#[derive(Debug)]
pub struct Spec {
    pub image: String,
    pub namespace: Option<String>,
    pub workers: u32,
    pub token: String,
    /// Secrets whose keys reach both sides as environment variables.
    pub secrets: Vec<String>,
    /// The scenario and its data files, by path under [`SCENARIO_DIR`]; none for a URL.
    pub files: Vec<File>,
    /// `crest collect`'s arguments after `collect`: the target and the load flags.
    pub collect: Vec<String>,
    pub worker_requests: Requests,
    pub collector_requests: Requests,
}

/// A file for the collector's pod.
#[derive(Debug)]
pub struct File {
    /// Relative to [`SCENARIO_DIR`].
    pub path: String,
    pub content: Vec<u8>,
}

/// CPU and memory a container asks for.
#[derive(Debug)]
pub struct Requests {
    pub cpu: String,
    pub memory: String,
}

/// One object of the stream, in the order `kubectl apply` creates them: what the pods refer to
/// before the pods.
// A handful of objects, made once: boxing them would buy nothing.
#[allow(clippy::large_enum_variant)]
#[derive(Debug, serde::Serialize)]
#[serde(untagged)]
pub enum Object {
    ConfigMap(ConfigMap),
    Secret(Secret),
    Service(Service),
    Pod(Pod),
    Job(Job),
}

/// Every object of the run.
pub fn build(spec: &Spec) -> Vec<Object> {
    let mut objects = Vec::new();
    if !spec.files.is_empty() {
        objects.push(Object::ConfigMap(scenario(spec)));
    }
    objects.push(Object::Secret(token(spec)));
    objects.push(Object::Service(collector_service(spec)));
    objects.push(Object::Service(worker_service(spec)));
    objects.push(Object::Pod(collector(spec)));
    objects.push(Object::Job(workers(spec)));
    objects
}

fn meta(spec: &Spec, name: &str, component: &str) -> ObjectMeta {
    ObjectMeta {
        name: Some(name.into()),
        namespace: spec.namespace.clone(),
        labels: Some(labels(component)),
        ..Default::default()
    }
}

fn labels(component: &str) -> BTreeMap<String, String> {
    BTreeMap::from([
        ("app.kubernetes.io/name".into(), "crest".into()),
        (COMPONENT.into(), component.into()),
    ])
}

/// A ConfigMap key for a path: keys are flat, so the path is kept in the volume's items.
pub fn key(path: &str) -> String {
    path.chars()
        .map(|c| {
            if c.is_ascii_alphanumeric() || "-._".contains(c) {
                c
            } else {
                '_'
            }
        })
        .collect()
}

fn scenario(spec: &Spec) -> ConfigMap {
    let mut data = BTreeMap::new();
    let mut binary = BTreeMap::new();
    for f in &spec.files {
        match std::str::from_utf8(&f.content) {
            Ok(text) => {
                data.insert(key(&f.path), text.to_string());
            }
            Err(_) => {
                binary.insert(key(&f.path), ByteString(f.content.clone()));
            }
        }
    }
    ConfigMap {
        metadata: meta(spec, SCENARIO, "collector"),
        data: Some(data).filter(|d| !d.is_empty()),
        binary_data: Some(binary).filter(|b| !b.is_empty()),
        ..Default::default()
    }
}

fn token(spec: &Spec) -> Secret {
    Secret {
        metadata: meta(spec, TOKEN_SECRET, "collector"),
        type_: Some("Opaque".into()),
        string_data: Some(BTreeMap::from([(TOKEN_VAR.into(), spec.token.clone())])),
        ..Default::default()
    }
}

fn collector_service(spec: &Spec) -> Service {
    Service {
        metadata: meta(spec, COLLECTOR, "collector"),
        spec: Some(ServiceSpec {
            selector: Some(labels("collector")),
            ports: Some(vec![ServicePort {
                name: Some("collect".into()),
                port: PORT.into(),
                target_port: Some(IntOrString::String("collect".into())),
                ..Default::default()
            }]),
            ..Default::default()
        }),
        ..Default::default()
    }
}

/// Headless: gives each worker pod a name (`crest-worker-0.crest-worker`) and no virtual IP.
fn worker_service(spec: &Spec) -> Service {
    Service {
        metadata: meta(spec, WORKER, "worker"),
        spec: Some(ServiceSpec {
            cluster_ip: Some("None".into()),
            selector: Some(labels("worker")),
            ..Default::default()
        }),
        ..Default::default()
    }
}

/// Both sides get the token and every Secret the user names as environment, by reference: the
/// values stay in the cluster.
fn env_from(spec: &Spec) -> Vec<EnvFromSource> {
    std::iter::once(TOKEN_SECRET)
        .chain(spec.secrets.iter().map(String::as_str))
        .map(|name| EnvFromSource {
            secret_ref: Some(SecretEnvSource {
                name: name.into(),
                ..Default::default()
            }),
            ..Default::default()
        })
        .collect()
}

/// Only requests: a CPU limit would throttle a generator into sending late, and crest measures
/// and reports its own CPU and lag instead.
fn resources(r: &Requests) -> ResourceRequirements {
    ResourceRequirements {
        requests: Some(BTreeMap::from([
            ("cpu".into(), Quantity(r.cpu.clone())),
            ("memory".into(), Quantity(r.memory.clone())),
        ])),
        ..Default::default()
    }
}

fn container(spec: &Spec, name: &str, args: Vec<String>, requests: &Requests) -> Container {
    Container {
        name: name.into(),
        image: Some(spec.image.clone()),
        args: Some(args),
        env_from: Some(env_from(spec)),
        resources: Some(resources(requests)),
        security_context: Some(SecurityContext {
            allow_privilege_escalation: Some(false),
            ..Default::default()
        }),
        ..Default::default()
    }
}

fn pod_security() -> PodSecurityContext {
    PodSecurityContext {
        run_as_non_root: Some(true),
        run_as_user: Some(USER),
        run_as_group: Some(USER),
        fs_group: Some(USER),
        ..Default::default()
    }
}

/// A bare Pod that is never restarted: a second collector would start another run. Its
/// `results` container keeps the pod up after the run so that `kubectl cp` can copy the run
/// directory (a finished pod can't be copied from).
fn collector(spec: &Spec) -> Pod {
    let mut args = vec!["collect".to_string()];
    args.extend(spec.collect.iter().cloned());
    args.extend([
        "--workers".into(),
        spec.workers.to_string(),
        "--listen".into(),
        format!("0.0.0.0:{PORT}"),
        "--out".into(),
        RESULTS.into(),
    ]);
    let results = VolumeMount {
        name: "results".into(),
        mount_path: RESULTS.into(),
        ..Default::default()
    };
    let mut collect = container(spec, "collector", args, &spec.collector_requests);
    collect.ports = Some(vec![ContainerPort {
        name: Some("collect".into()),
        container_port: PORT.into(),
        ..Default::default()
    }]);
    // Ready once it listens, so that the Service sends workers to it only then.
    collect.readiness_probe = Some(Probe {
        tcp_socket: Some(TCPSocketAction {
            port: IntOrString::String("collect".into()),
            ..Default::default()
        }),
        period_seconds: Some(2),
        ..Default::default()
    });
    let mut mounts = vec![results.clone()];
    let mut volumes = vec![Volume {
        name: "results".into(),
        empty_dir: Some(EmptyDirVolumeSource::default()),
        ..Default::default()
    }];
    if !spec.files.is_empty() {
        mounts.push(VolumeMount {
            name: "scenario".into(),
            mount_path: SCENARIO_DIR.into(),
            read_only: Some(true),
            ..Default::default()
        });
        volumes.push(Volume {
            name: "scenario".into(),
            config_map: Some(ConfigMapVolumeSource {
                name: SCENARIO.into(),
                items: Some(
                    spec.files
                        .iter()
                        .map(|f| KeyToPath {
                            key: key(&f.path),
                            path: f.path.clone(),
                            ..Default::default()
                        })
                        .collect(),
                ),
                ..Default::default()
            }),
            ..Default::default()
        });
    }
    collect.volume_mounts = Some(mounts);
    let holder = Container {
        name: "results".into(),
        image: Some(spec.image.clone()),
        command: Some(vec!["sleep".into(), "infinity".into()]),
        volume_mounts: Some(vec![results]),
        resources: Some(resources(&Requests {
            cpu: "10m".into(),
            memory: "16Mi".into(),
        })),
        security_context: Some(SecurityContext {
            allow_privilege_escalation: Some(false),
            ..Default::default()
        }),
        ..Default::default()
    };
    Pod {
        metadata: meta(spec, COLLECTOR, "collector"),
        spec: Some(PodSpec {
            restart_policy: Some("Never".into()),
            security_context: Some(pod_security()),
            containers: vec![collect, holder],
            volumes: Some(volumes),
            ..Default::default()
        }),
        ..Default::default()
    }
}

/// One Indexed Job: pod `i` gets `JOB_COMPLETION_INDEX=i`, the worker index. All run at once
/// (parallelism = completions), one per node (required anti-affinity), so that no two
/// generators share a machine's CPU. A failed worker is not retried, and its failure is its
/// index's alone (`backoffLimitPerIndex`: a Job's `backoffLimit` would end every other worker
/// with it): the collector reports it lost and keeps the run.
fn workers(spec: &Spec) -> Job {
    let n = i32::try_from(spec.workers).unwrap_or(i32::MAX);
    let anti = PodAntiAffinity {
        required_during_scheduling_ignored_during_execution: Some(vec![PodAffinityTerm {
            label_selector: Some(LabelSelector {
                match_labels: Some(labels("worker")),
                ..Default::default()
            }),
            topology_key: "kubernetes.io/hostname".into(),
            ..Default::default()
        }]),
        ..Default::default()
    };
    let args = vec![
        "worker".to_string(),
        "--collector".into(),
        format!("{COLLECTOR}:{PORT}"),
    ];
    Job {
        metadata: meta(spec, WORKER, "worker"),
        spec: Some(JobSpec {
            completion_mode: Some("Indexed".into()),
            completions: Some(n),
            parallelism: Some(n),
            backoff_limit_per_index: Some(0),
            template: PodTemplateSpec {
                metadata: Some(ObjectMeta {
                    labels: Some(labels("worker")),
                    ..Default::default()
                }),
                spec: Some(PodSpec {
                    restart_policy: Some("Never".into()),
                    subdomain: Some(WORKER.into()),
                    affinity: Some(Affinity {
                        pod_anti_affinity: Some(anti),
                        ..Default::default()
                    }),
                    security_context: Some(pod_security()),
                    containers: vec![container(spec, "worker", args, &spec.worker_requests)],
                    ..Default::default()
                }),
            },
            ..Default::default()
        }),
        ..Default::default()
    }
}
