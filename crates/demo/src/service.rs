//! The HTTP side of the demo target: routes, and what each one costs in worker time.

use crate::plans::Api;
use crate::workers::{Job, Pool, Work};
use bytes::Bytes;
use http_body_util::{BodyExt, Full, StreamBody};
use hyper::body::{Frame, Incoming};
use hyper::{Method, Request, Response, StatusCode};
use hyper_util::rt::TokioIo;
use std::collections::HashMap;
use std::convert::Infallible;
use std::net::SocketAddr;
use std::sync::atomic::{AtomicBool, AtomicU64, Ordering};
use std::sync::{Arc, Mutex};
use std::time::Duration;
use tokio::net::{TcpListener, TcpSocket};
use tokio::sync::oneshot;

/// Pending connections the kernel may queue (capped by net.core.somaxconn).
const LISTEN_BACKLOG: u32 = 8192;
/// Worker time per replay entity, so that the response takes longer as the data grows.
const PER_ENTITY: Duration = Duration::from_micros(20);
/// Entities per streamed chunk.
const CHUNK_ENTITIES: u64 = 500;

/// How service times vary around their mean.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Distribution {
    /// Always the mean.
    Fixed,
    /// Uniform between half and one and a half times the mean.
    Uniform,
    /// Exponential with that mean (an M/M/c service).
    Exponential,
}

impl Distribution {
    /// One draw of a time with this mean.
    pub(crate) fn sample(self, mean: Duration) -> Duration {
        match self {
            Distribution::Fixed => mean,
            Distribution::Uniform => mean.mul_f64(0.5 + fastrand::f64()),
            Distribution::Exponential => mean.mul_f64(-(1.0 - fastrand::f64()).ln()),
        }
    }
}

/// How the demo target behaves.
#[derive(Clone, Debug)]
pub struct Config {
    /// Requests served at once.
    pub workers: usize,
    /// Mean time a worker spends on a request.
    pub service_time: Duration,
    /// How the service time varies.
    pub distribution: Distribution,
    /// What a worker does for its service time: sleep, or burn that much CPU.
    pub work: Work,
    /// Requests that may wait for a worker; beyond that the answer is 503 at once.
    pub queue: usize,
    /// A request not answered within this time gets 500 (a server-side timeout).
    pub timeout: Duration,
    /// Size of each response body on `/`.
    pub body_size: usize,
    /// Leak one file descriptor every this many requests (leak-detection demos).
    pub leak_fd_every: Option<u64>,
    /// Leak this many bytes of memory per request.
    pub leak_bytes_per_request: usize,
    /// Slots in the orchestration API's pool (a service's database connections).
    pub pool: usize,
    /// How long an API request waits for a pool slot before it gets 503.
    pub pool_wait: Duration,
    /// Mean time an API request holds its pool slot (creating a plan holds it twice as long);
    /// it varies as `distribution` says.
    pub pool_work: Duration,
    /// Plans kept; past that the oldest is forgotten.
    pub max_plans: usize,
    /// Client connections open at once; one accepted beyond that is reset at once and counted
    /// (`crest_target_refused_connections_total`), as Node's `server.maxConnections` does.
    pub max_connections: Option<usize>,
}

impl Default for Config {
    fn default() -> Self {
        Config {
            workers: 8,
            service_time: Duration::from_millis(10),
            distribution: Distribution::Fixed,
            work: Work::Sleep,
            queue: 64,
            timeout: Duration::from_secs(5),
            body_size: 1024,
            leak_fd_every: None,
            leak_bytes_per_request: 0,
            pool: 10,
            pool_wait: Duration::from_secs(5),
            pool_work: Duration::from_millis(20),
            max_plans: 100_000,
            max_connections: None,
        }
    }
}

/// The configuration cannot work.
#[derive(Debug, thiserror::Error)]
#[error("{0}")]
pub struct InvalidConfig(pub String);

impl Config {
    /// Checks the configuration; the error names the setting.
    pub fn check(&self) -> Result<(), InvalidConfig> {
        if self.workers == 0 || self.workers > 10_000 {
            return Err(InvalidConfig(format!("workers {}: give 1 to 10,000", self.workers)));
        }
        if self.pool == 0 || self.pool > 10_000 {
            return Err(InvalidConfig(format!("pool {}: give 1 to 10,000", self.pool)));
        }
        if self.max_plans == 0 {
            return Err(InvalidConfig("max-plans: give at least 1".into()));
        }
        if self.max_connections == Some(0) {
            return Err(InvalidConfig("max-connections: give at least 1".into()));
        }
        if self.timeout.is_zero() {
            return Err(InvalidConfig("timeout: give a timeout above 0".into()));
        }
        Ok(())
    }
}

#[derive(Clone, Debug)]
struct Task {
    kind: String,
    n: u64,
    status: &'static str,
}

struct State {
    config: Config,
    pool: Pool,
    body: Bytes,
    requests: AtomicU64,
    served: AtomicU64,
    rejected: AtomicU64,
    timed_out: AtomicU64,
    /// Connections reset at accept because `max_connections` were open.
    refused_connections: AtomicU64,
    /// Client connections open now.
    connections: AtomicU64,
    next_task: AtomicU64,
    /// Results of succeeded tasks handed out: a client's completed task flows.
    task_results: AtomicU64,
    tasks: Mutex<HashMap<u64, Task>>,
    leaked_fds: Mutex<Vec<std::fs::File>>,
    leaked_mem: Mutex<Vec<Vec<u8>>>,
    api: Api,
}

pub(crate) type Body = http_body_util::combinators::BoxBody<Bytes, Infallible>;

fn full(status: StatusCode, content_type: &'static str, body: impl Into<Bytes>) -> Response<Body> {
    let mut r = Response::new(Full::new(body.into()).boxed());
    *r.status_mut() = status;
    r.headers_mut().insert(
        hyper::header::CONTENT_TYPE,
        hyper::header::HeaderValue::from_static(content_type),
    );
    r
}

pub(crate) fn json(status: StatusCode, v: serde_json::Value) -> Response<Body> {
    full(status, "application/json", v.to_string())
}

impl State {
    fn service_time(&self) -> Duration {
        self.config.distribution.sample(self.config.service_time)
    }

    /// Holds a worker for `busy`, within the server timeout. `Err` is the response to send.
    async fn work(&self, busy: Duration) -> Result<(), Response<Body>> {
        let (done, wait) = oneshot::channel();
        let abandoned = Arc::new(AtomicBool::new(false));
        if !self.pool.submit(Job {
            busy,
            abandoned: abandoned.clone(),
            done,
        }) {
            self.rejected.fetch_add(1, Ordering::Relaxed);
            return Err(full(StatusCode::SERVICE_UNAVAILABLE, "text/plain", "queue full\n"));
        }
        match tokio::time::timeout(self.config.timeout, wait).await {
            Ok(Ok(_)) => {
                self.served.fetch_add(1, Ordering::Relaxed);
                Ok(())
            }
            _ => {
                abandoned.store(true, Ordering::Relaxed);
                self.timed_out.fetch_add(1, Ordering::Relaxed);
                Err(full(
                    StatusCode::INTERNAL_SERVER_ERROR,
                    "text/plain",
                    "server timeout\n",
                ))
            }
        }
    }

    fn leak(&self) {
        let n = self.requests.fetch_add(1, Ordering::Relaxed) + 1;
        if let Some(every) = self.config.leak_fd_every.filter(|e| *e > 0) {
            if n.is_multiple_of(every) {
                if let (Ok(f), Ok(mut v)) = (std::fs::File::open("/dev/null"), self.leaked_fds.lock()) {
                    v.push(f);
                }
            }
        }
        if self.config.leak_bytes_per_request > 0 {
            if let Ok(mut v) = self.leaked_mem.lock() {
                v.push(vec![1u8; self.config.leak_bytes_per_request]);
            }
        }
    }

    fn metrics(&self) -> String {
        let tasks = self
            .tasks
            .lock()
            .map(|t| t.values().map(|t| t.status).collect::<Vec<_>>())
            .unwrap_or_default();
        let count = |s: &str| tasks.iter().filter(|x| **x == s).count();
        let fds = self.leaked_fds.lock().map(|v| v.len()).unwrap_or(0);
        let mem: usize = self
            .leaked_mem
            .lock()
            .map(|v| v.iter().map(Vec::len).sum())
            .unwrap_or(0);
        let mut out = format!(
            "# HELP crest_target_requests_total Requests received.\n# TYPE crest_target_requests_total counter\ncrest_target_requests_total {}\n\
             # HELP crest_target_served_total Requests whose work finished within the server timeout.\n# TYPE crest_target_served_total counter\ncrest_target_served_total {}\n\
             # HELP crest_target_rejected_total Requests refused with 503 because the queue was full.\n# TYPE crest_target_rejected_total counter\ncrest_target_rejected_total {}\n\
             # HELP crest_target_timeouts_total Requests answered 500 after the server timeout.\n# TYPE crest_target_timeouts_total counter\ncrest_target_timeouts_total {}\n\
             # HELP crest_target_refused_connections_total Connections reset at accept because --max-connections were open.\n# TYPE crest_target_refused_connections_total counter\ncrest_target_refused_connections_total {}\n\
             # HELP crest_target_connections Client connections open now.\n# TYPE crest_target_connections gauge\ncrest_target_connections {}\n\
             # HELP crest_target_completed_total Jobs the workers finished.\n# TYPE crest_target_completed_total counter\ncrest_target_completed_total {}\n\
             # HELP crest_target_worker_busy_seconds_total Time workers held jobs, overruns of the service time included.\n# TYPE crest_target_worker_busy_seconds_total counter\ncrest_target_worker_busy_seconds_total {:.6}\n\
             # HELP crest_target_queue_depth Requests waiting for a worker.\n# TYPE crest_target_queue_depth gauge\ncrest_target_queue_depth {}\n\
             # HELP crest_target_busy_workers Workers busy now.\n# TYPE crest_target_busy_workers gauge\ncrest_target_busy_workers {}\n\
             # HELP crest_target_workers Workers.\n# TYPE crest_target_workers gauge\ncrest_target_workers {}\n\
             # HELP crest_target_tasks Tasks by status.\n# TYPE crest_target_tasks gauge\ncrest_target_tasks{{status=\"QUEUED\"}} {}\ncrest_target_tasks{{status=\"RUNNING\"}} {}\ncrest_target_tasks{{status=\"SUCCEEDED\"}} {}\n\
             # HELP crest_target_tasks_submitted_total Tasks accepted.\n# TYPE crest_target_tasks_submitted_total counter\ncrest_target_tasks_submitted_total {}\n\
             # HELP crest_target_task_results_total Results of succeeded tasks handed out.\n# TYPE crest_target_task_results_total counter\ncrest_target_task_results_total {}\n\
             # HELP crest_target_leaked_fds File descriptors leaked on purpose.\n# TYPE crest_target_leaked_fds gauge\ncrest_target_leaked_fds {fds}\n\
             # HELP crest_target_leaked_bytes Memory leaked on purpose.\n# TYPE crest_target_leaked_bytes gauge\ncrest_target_leaked_bytes {mem}\n",
            self.requests.load(Ordering::Relaxed),
            self.served.load(Ordering::Relaxed),
            self.rejected.load(Ordering::Relaxed),
            self.timed_out.load(Ordering::Relaxed),
            self.refused_connections.load(Ordering::Relaxed),
            self.connections.load(Ordering::Relaxed),
            self.pool.completed.load(Ordering::Relaxed),
            self.pool.busy_ns.load(Ordering::Relaxed) as f64 / 1e9,
            self.pool.queued.load(Ordering::Relaxed),
            self.pool.busy.load(Ordering::Relaxed),
            self.pool.workers,
            count("QUEUED"),
            count("RUNNING"),
            count("SUCCEEDED"),
            self.next_task.load(Ordering::Relaxed),
            self.task_results.load(Ordering::Relaxed),
        );
        self.api.metrics(&mut out);
        out
    }
}

async fn route(state: Arc<State>, req: Request<Incoming>) -> Response<Body> {
    let path = req.uri().path().to_string();
    let query = req.uri().query().unwrap_or("").to_string();
    match (req.method().clone(), path.as_str()) {
        (_, "/health") => full(StatusCode::OK, "text/plain", "ok\n"),
        (_, "/metrics") => full(StatusCode::OK, "text/plain; version=0.0.4", state.metrics()),
        (_, p) if Api::owns(p) => {
            state.leak();
            state.api.handle(req).await
        }
        (Method::POST, "/tasks/submissions") => submit_task(state, req).await,
        (Method::GET, p) if p.starts_with("/tasks/submissions/") => {
            task(&state, &p["/tasks/submissions/".len()..], false)
        }
        (Method::GET, p) if p.starts_with("/tasks/") => task(&state, &p["/tasks/".len()..], true),
        (Method::GET, "/replay/state") => replay(state, &query).await,
        (Method::POST, "/api/v1/validate") => validate(state, req).await,
        _ => {
            state.leak();
            let busy = state.service_time();
            match state.work(busy).await {
                Ok(()) => full(StatusCode::OK, "application/octet-stream", state.body.clone()),
                Err(r) => r,
            }
        }
    }
}

/// The largest JSON body the target reads: its APIs take a few fields. A larger one is read no
/// further (a 400 MB POST took 399 MB of the target's memory) and answered as not JSON.
const MAX_JSON_BODY: usize = 64 * 1024;

async fn read_json(req: Request<Incoming>) -> Option<serde_json::Value> {
    let body = http_body_util::Limited::new(req.into_body(), MAX_JSON_BODY)
        .collect()
        .await
        .ok()?
        .to_bytes();
    serde_json::from_slice(&body).ok()
}

async fn submit_task(state: Arc<State>, req: Request<Incoming>) -> Response<Body> {
    state.leak();
    let Some(v) = read_json(req).await else {
        return json(
            StatusCode::BAD_REQUEST,
            serde_json::json!({"error": "the body must be JSON"}),
        );
    };
    let kind = v["type"].as_str().unwrap_or("factorial").to_string();
    let n = v["n"]
        .as_u64()
        .or_else(|| v["n"].as_str().and_then(|s| s.parse().ok()))
        .unwrap_or(10)
        .min(10_000);
    if state.pool.queued.load(Ordering::Relaxed) as usize >= state.config.queue {
        state.rejected.fetch_add(1, Ordering::Relaxed);
        return json(
            StatusCode::SERVICE_UNAVAILABLE,
            serde_json::json!({"error": "queue full"}),
        );
    }
    let id = state.next_task.fetch_add(1, Ordering::Relaxed) + 1;
    if let Ok(mut t) = state.tasks.lock() {
        t.insert(
            id,
            Task {
                kind: kind.clone(),
                n,
                status: "QUEUED",
            },
        );
    }
    // A fetch task waits on a (simulated) remote server: three service times.
    let busy = if kind == "http-fetch" {
        state.service_time() * 3
    } else {
        state.service_time()
    };
    let st = state.clone();
    tokio::spawn(async move {
        if let Ok(mut t) = st.tasks.lock() {
            if let Some(task) = t.get_mut(&id) {
                task.status = "RUNNING";
            }
        }
        let ok = st.work(busy).await.is_ok();
        if let Ok(mut t) = st.tasks.lock() {
            if let Some(task) = t.get_mut(&id) {
                task.status = if ok { "SUCCEEDED" } else { "FAILED" };
            }
        }
    });
    json(
        StatusCode::CREATED,
        serde_json::json!({"id": id, "type": kind, "status": "QUEUED"}),
    )
}

fn task(state: &State, id: &str, result: bool) -> Response<Body> {
    let Some(task) = id
        .parse::<u64>()
        .ok()
        .and_then(|id| state.tasks.lock().ok().and_then(|t| t.get(&id).cloned()))
    else {
        return json(StatusCode::NOT_FOUND, serde_json::json!({"error": "no such task"}));
    };
    let mut v = serde_json::json!({"id": id.parse::<u64>().unwrap_or(0), "type": task.kind, "status": task.status});
    if result {
        if task.status != "SUCCEEDED" && task.status != "FAILED" {
            return json(
                StatusCode::CONFLICT,
                serde_json::json!({"error": "not finished", "status": task.status}),
            );
        }
        // The number of decimal digits of n!, by Kamenetsky's formula.
        let n = task.n as f64;
        let digits = if task.n < 2 {
            1.0
        } else {
            (n * (n / std::f64::consts::E).log10() + (2.0 * std::f64::consts::PI * n).log10() / 2.0).floor() + 1.0
        };
        if task.status == "SUCCEEDED" {
            state.task_results.fetch_add(1, Ordering::Relaxed);
        }
        v["result"] = if task.kind == "factorial" {
            serde_json::json!({"n": task.n, "digits": digits as u64})
        } else {
            serde_json::json!({"bytes": 1024})
        };
    }
    json(StatusCode::OK, v)
}

async fn replay(state: Arc<State>, query: &str) -> Response<Body> {
    state.leak();
    let entities: u64 = query
        .split('&')
        .find_map(|kv| kv.strip_prefix("entities="))
        .and_then(|v| v.parse().ok())
        .unwrap_or(1000)
        .min(5_000_000);
    // Building the state takes longer as it grows (in the API, not the query, as such services often are).
    if let Err(r) = state.work(state.service_time() + PER_ENTITY * entities as u32).await {
        return r;
    }
    let chunks = entities.div_ceil(CHUNK_ENTITIES).max(1);
    let stream = replay_stream(chunks, entities);
    let mut r = Response::new(StreamBody::new(stream).boxed());
    r.headers_mut().insert(
        hyper::header::CONTENT_TYPE,
        hyper::header::HeaderValue::from_static("application/json"),
    );
    r
}

/// The replay document as chunks of entities, produced as they are sent.
fn replay_stream(chunks: u64, entities: u64) -> ReplayStream {
    ReplayStream {
        next: 0,
        chunks,
        entities,
    }
}

struct ReplayStream {
    next: u64,
    chunks: u64,
    entities: u64,
}

impl futures_core::Stream for ReplayStream {
    type Item = Result<Frame<Bytes>, Infallible>;
    fn poll_next(
        mut self: std::pin::Pin<&mut Self>,
        _: &mut std::task::Context<'_>,
    ) -> std::task::Poll<Option<Self::Item>> {
        if self.next > self.chunks {
            return std::task::Poll::Ready(None);
        }
        let i = self.next;
        self.next += 1;
        let mut s = String::new();
        if i == 0 {
            s.push_str("{\"entities\":[");
        }
        if i < self.chunks {
            let from = i * CHUNK_ENTITIES;
            let to = ((i + 1) * CHUNK_ENTITIES).min(self.entities);
            for e in from..to {
                if e > 0 {
                    s.push(',');
                }
                s.push_str(&format!(
                    "{{\"entity_id\":\"e-{e:08}\",\"version\":{},\"state\":{{\"value\":\"{:064x}\",\"updated\":\"2026-01-01T00:00:00Z\"}}}}",
                    e % 97,
                    e.wrapping_mul(0x9e37_79b9_7f4a_7c15)
                ));
            }
        } else {
            s.push_str(&format!("],\"count\":{}}}", self.entities));
        }
        std::task::Poll::Ready(Some(Ok(Frame::data(Bytes::from(s)))))
    }
}

async fn validate(state: Arc<State>, req: Request<Incoming>) -> Response<Body> {
    state.leak();
    let Some(v) = read_json(req).await else {
        return json(
            StatusCode::BAD_REQUEST,
            serde_json::json!({"valid": false, "error": "the body must be JSON"}),
        );
    };
    let Some(diagram) = v["diagram"].as_str().map(str::to_string) else {
        return json(
            StatusCode::BAD_REQUEST,
            serde_json::json!({"valid": false, "error": "no `diagram` string"}),
        );
    };
    if let Err(r) = state.work(state.service_time()).await {
        return r;
    }
    let kind = diagram
        .split_whitespace()
        .next()
        .unwrap_or("")
        .trim_end_matches(';')
        .to_string();
    let known = [
        "graph",
        "flowchart",
        "sequenceDiagram",
        "classDiagram",
        "stateDiagram",
        "erDiagram",
        "gantt",
        "pie",
    ];
    if known.contains(&kind.as_str()) {
        json(StatusCode::OK, serde_json::json!({"valid": true, "diagram_type": kind}))
    } else {
        json(
            StatusCode::OK,
            serde_json::json!({"valid": false, "error": format!("unknown diagram type {kind:?}")}),
        )
    }
}

/// One client connection counted open in `State::connections` until dropped.
struct OpenConnection(Arc<State>);

impl Drop for OpenConnection {
    fn drop(&mut self) {
        self.0.connections.fetch_sub(1, Ordering::Relaxed);
    }
}

/// Serves the target on `listener` until the task is dropped.
pub async fn serve(listener: TcpListener, config: Config) -> std::io::Result<()> {
    let pool = Pool::new(config.workers, config.queue, config.work)?;
    let state = Arc::new(State {
        api: Api::new(&config),
        body: Bytes::from(vec![b'x'; config.body_size]),
        config,
        pool,
        requests: AtomicU64::new(0),
        served: AtomicU64::new(0),
        rejected: AtomicU64::new(0),
        timed_out: AtomicU64::new(0),
        refused_connections: AtomicU64::new(0),
        connections: AtomicU64::new(0),
        next_task: AtomicU64::new(0),
        task_results: AtomicU64::new(0),
        tasks: Mutex::new(HashMap::new()),
        leaked_fds: Mutex::new(Vec::new()),
        leaked_mem: Mutex::new(Vec::new()),
    });
    let max_connections = state.config.max_connections.map(|n| n as u64);
    loop {
        let (stream, _) = listener.accept().await?;
        // Only this loop adds connections, so the count can only have fallen since it was read.
        if max_connections.is_some_and(|max| state.connections.load(Ordering::Relaxed) >= max) {
            // Refused as Node refuses past `server.maxConnections`: accepted, then reset.
            state.refused_connections.fetch_add(1, Ordering::Relaxed);
            let _ = stream.set_zero_linger();
            drop(stream);
            continue;
        }
        state.connections.fetch_add(1, Ordering::Relaxed);
        let open = OpenConnection(Arc::clone(&state));
        let _ = stream.set_nodelay(true);
        let state = Arc::clone(&state);
        tokio::spawn(async move {
            let _open = open;
            let service = hyper::service::service_fn(move |req| {
                let state = Arc::clone(&state);
                async move { Ok::<_, Infallible>(route(state, req).await) }
            });
            let _ = hyper::server::conn::http1::Builder::new()
                .serve_connection(TokioIo::new(stream), service)
                .await;
        });
    }
}

/// Starts the target on its own thread and runtime, so that it never competes with the load
/// generator's event loops. Returns the address it listens on.
pub fn spawn(addr: SocketAddr, config: Config) -> std::io::Result<SocketAddr> {
    config
        .check()
        .map_err(|e| std::io::Error::new(std::io::ErrorKind::InvalidInput, e))?;
    let rt = tokio::runtime::Builder::new_multi_thread()
        .worker_threads(1)
        .enable_all()
        .build()?;
    let listener = rt.block_on(async {
        let socket = if addr.is_ipv4() {
            TcpSocket::new_v4()?
        } else {
            TcpSocket::new_v6()?
        };
        socket.set_reuseaddr(true)?;
        socket.bind(addr)?;
        // A deep backlog, so that thousands of users connecting at once are queued by the
        // kernel rather than dropped and retried a second later.
        socket.listen(LISTEN_BACKLOG)
    })?;
    let local = listener.local_addr()?;
    std::thread::Builder::new().name("crest-target".into()).spawn(move || {
        rt.block_on(async move {
            let _ = serve(listener, config).await;
        })
    })?;
    Ok(local)
}
