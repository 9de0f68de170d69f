//! Seed 001's orchestration API (Fletcher): bearer tokens, plans and their states, with every
//! request's work done on a fixed pool, as Fletcher's queries ran on its 10 or 30 PostgreSQL
//! connections. The pool is what two runs compare: a request waits for a free slot (a bounded
//! wait, then 503), holds it for the work, and gives it back, so the API's capacity is about
//! pool size / work per request, and a bigger pool shows as more throughput and shorter waits.
//!
//! - `POST /auth/token` with `{"username": ..., "password": "demo"}` answers a bearer token; the
//!   other routes answer 401 without a valid `Authorization: Bearer <token>`.
//! - `POST /plans` with `{"name": ...}` creates a plan in state `draft` and answers its id and
//!   the transitions the user may take next; `GET /plans/{id}` reads it.
//! - `PUT /plans/{id}/state` with `{"state": ...}` moves it on: draft -> approved -> running ->
//!   completed (or failed), and cancelled from any state before the end. 404 for an unknown id,
//!   409 for a transition its state does not allow.
//!
//! Tokens are signed, not stored, and at most `max_plans` plans are kept: past that the oldest
//! is forgotten (counted), and asking for it answers 404, so memory stays bounded however long
//! a stress run lasts.

use crate::service::{json, Body, Config, Distribution};
use http_body_util::BodyExt;
use hyper::body::Incoming;
use hyper::{Method, Request, Response, StatusCode};
use serde_json::{json, Value};
use std::collections::BTreeMap;
use std::fmt::Write as _;
use std::hash::BuildHasher;
use std::sync::atomic::{AtomicU64, Ordering};
use std::sync::{Arc, Mutex};
use std::time::{Duration, Instant};
use tokio::sync::Semaphore;

/// The password every demo user has.
pub const PASSWORD: &str = "demo";
/// Request bodies are small JSON documents; larger ones are refused before they are read.
const MAX_BODY: usize = 64 * 1024;
/// Longest plan name kept.
const MAX_NAME: usize = 200;

/// The routes, as crest names requests by default (method and path with `{var}`), so the
/// target's counters line up with crest's per-request figures.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
enum Endpoint {
    Token,
    CreatePlan,
    GetPlan,
    SetState,
    /// Any other method or path under `/auth` and `/plans`.
    Other,
}

const ENDPOINTS: [Endpoint; 5] = [
    Endpoint::Token,
    Endpoint::CreatePlan,
    Endpoint::GetPlan,
    Endpoint::SetState,
    Endpoint::Other,
];

impl Endpoint {
    fn label(self) -> &'static str {
        match self {
            Endpoint::Token => "POST /auth/token",
            Endpoint::CreatePlan => "POST /plans",
            Endpoint::GetPlan => "GET /plans/{id}",
            Endpoint::SetState => "PUT /plans/{id}/state",
            Endpoint::Other => "other",
        }
    }

    /// The endpoint and the plan id in its path (unparsable ids stay `None`: 404).
    fn of(method: &Method, path: &str) -> (Endpoint, Option<u64>) {
        let plan = path.strip_prefix("/plans/");
        let (id, sub) = match plan.map(|p| p.split_once('/').unwrap_or((p, ""))) {
            Some((id, sub)) => (id.parse().ok(), Some(sub)),
            None => (None, None),
        };
        let e = match (method, path, sub) {
            (&Method::POST, "/auth/token", _) => Endpoint::Token,
            (&Method::POST, "/plans", _) => Endpoint::CreatePlan,
            (&Method::GET, _, Some("")) => Endpoint::GetPlan,
            (&Method::PUT, _, Some("state")) => Endpoint::SetState,
            _ => Endpoint::Other,
        };
        (e, id)
    }
}

/// Why a request was answered 4xx: one counter each.
const REASONS: [(StatusCode, &str); 4] = [
    (StatusCode::BAD_REQUEST, "bad_request"),
    (StatusCode::UNAUTHORIZED, "unauthorized"),
    (StatusCode::NOT_FOUND, "not_found"),
    (StatusCode::CONFLICT, "conflict"),
];

#[derive(Default)]
struct Counters {
    requests: AtomicU64,
    served: AtomicU64,
    rejected: [AtomicU64; REASONS.len()],
    timeouts: AtomicU64,
    pool_waits: AtomicU64,
}

/// A plan's life.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
enum PlanState {
    Draft,
    Approved,
    Running,
    Completed,
    Failed,
    Cancelled,
}

const STATES: [PlanState; 6] = [
    PlanState::Draft,
    PlanState::Approved,
    PlanState::Running,
    PlanState::Completed,
    PlanState::Failed,
    PlanState::Cancelled,
];

impl PlanState {
    fn name(self) -> &'static str {
        match self {
            PlanState::Draft => "draft",
            PlanState::Approved => "approved",
            PlanState::Running => "running",
            PlanState::Completed => "completed",
            PlanState::Failed => "failed",
            PlanState::Cancelled => "cancelled",
        }
    }

    /// The states this one may move to.
    fn next(self) -> &'static [PlanState] {
        match self {
            PlanState::Draft => &[PlanState::Approved, PlanState::Cancelled],
            PlanState::Approved => &[PlanState::Running, PlanState::Cancelled],
            PlanState::Running => &[PlanState::Completed, PlanState::Failed, PlanState::Cancelled],
            PlanState::Completed | PlanState::Failed | PlanState::Cancelled => &[],
        }
    }
}

struct Plan {
    name: String,
    state: PlanState,
}

/// A response's status and JSON body; `Err` ends the request early with it.
type Answer = (StatusCode, Value);

fn error(status: StatusCode, message: impl Into<String>) -> Answer {
    (status, json!({"error": message.into()}))
}

/// Counts up while it lives (a gauge of requests in some stage), also when the client goes
/// away and the request's future is dropped.
struct Gauge<'a>(&'a AtomicU64);

impl<'a> Gauge<'a> {
    fn up(g: &'a AtomicU64) -> Gauge<'a> {
        g.fetch_add(1, Ordering::Relaxed);
        Gauge(g)
    }
}

impl Drop for Gauge<'_> {
    fn drop(&mut self) {
        self.0.fetch_sub(1, Ordering::Relaxed);
    }
}

/// The API's state: its pool, its plans, its counters.
pub(crate) struct Api {
    pool: Arc<Semaphore>,
    size: usize,
    wait: Duration,
    work: Duration,
    distribution: Distribution,
    max_plans: usize,
    /// Signs tokens: random per process, so tokens of an earlier target are refused.
    key: std::hash::RandomState,
    next_token: AtomicU64,
    next_plan: AtomicU64,
    plans: Mutex<BTreeMap<u64, Plan>>,
    evicted: AtomicU64,
    waiting: AtomicU64,
    wait_micros: AtomicU64,
    counters: [Counters; ENDPOINTS.len()],
}

impl Api {
    pub(crate) fn new(config: &Config) -> Api {
        Api {
            pool: Arc::new(Semaphore::new(config.pool)),
            size: config.pool,
            wait: config.pool_wait,
            work: config.pool_work,
            distribution: config.distribution,
            max_plans: config.max_plans,
            key: std::hash::RandomState::new(),
            next_token: AtomicU64::new(0),
            next_plan: AtomicU64::new(0),
            plans: Mutex::new(BTreeMap::new()),
            evicted: AtomicU64::new(0),
            waiting: AtomicU64::new(0),
            wait_micros: AtomicU64::new(0),
            counters: Default::default(),
        }
    }

    /// Whether the API serves this path (everything under `/auth/` and `/plans`).
    pub(crate) fn owns(path: &str) -> bool {
        path.starts_with("/auth/") || path == "/plans" || path.starts_with("/plans/")
    }

    /// Answers one request, counting its outcome by endpoint.
    pub(crate) async fn handle(&self, req: Request<Incoming>) -> Response<Body> {
        let (endpoint, id) = Endpoint::of(req.method(), req.uri().path());
        let c = &self.counters[endpoint as usize];
        c.requests.fetch_add(1, Ordering::Relaxed);
        let (status, body) = match self.answer(endpoint, id, req).await {
            Ok(a) | Err(a) => a,
        };
        if status.is_success() {
            c.served.fetch_add(1, Ordering::Relaxed);
        } else if status == StatusCode::SERVICE_UNAVAILABLE {
            c.timeouts.fetch_add(1, Ordering::Relaxed);
        } else if let Some(i) = REASONS.iter().position(|(s, _)| *s == status) {
            c.rejected[i].fetch_add(1, Ordering::Relaxed);
        }
        json(status, body)
    }

    async fn answer(&self, endpoint: Endpoint, id: Option<u64>, req: Request<Incoming>) -> Result<Answer, Answer> {
        if matches!(endpoint, Endpoint::CreatePlan | Endpoint::GetPlan | Endpoint::SetState) {
            self.authorize(&req)?;
        }
        let c = &self.counters[endpoint as usize];
        match endpoint {
            Endpoint::Token => {
                let body = read(req).await?;
                let user = body["username"].as_str().filter(|u| !u.is_empty());
                let Some(user) = user else {
                    return Err(error(StatusCode::BAD_REQUEST, "give a `username`"));
                };
                if body["password"].as_str() != Some(PASSWORD) {
                    return Err(error(StatusCode::UNAUTHORIZED, "wrong username or password"));
                }
                // The user's row.
                self.work(c, 1).await?;
                let n = self.next_token.fetch_add(1, Ordering::Relaxed);
                Ok((
                    StatusCode::OK,
                    json!({"access_token": self.token(n), "token_type": "Bearer", "username": user}),
                ))
            }
            Endpoint::CreatePlan => {
                let body = read(req).await?;
                let name = body["name"].as_str().unwrap_or("plan");
                if name.chars().count() > MAX_NAME {
                    return Err(error(
                        StatusCode::BAD_REQUEST,
                        format!("`name`: at most {MAX_NAME} characters"),
                    ));
                }
                // The plan's row and its first steps: twice the work of a read.
                self.work(c, 2).await?;
                let id = self.next_plan.fetch_add(1, Ordering::Relaxed) + 1;
                let plan = Plan {
                    name: name.to_string(),
                    state: PlanState::Draft,
                };
                let answer = (StatusCode::CREATED, describe(id, &plan));
                let mut plans = self.plans.lock().unwrap_or_else(|e| e.into_inner());
                while plans.len() >= self.max_plans {
                    plans.pop_first();
                    self.evicted.fetch_add(1, Ordering::Relaxed);
                }
                plans.insert(id, plan);
                Ok(answer)
            }
            Endpoint::GetPlan => {
                let id = id.ok_or_else(|| error(StatusCode::NOT_FOUND, "no such plan"))?;
                self.work(c, 1).await?;
                let plans = self.plans.lock().unwrap_or_else(|e| e.into_inner());
                let plan = plans
                    .get(&id)
                    .ok_or_else(|| error(StatusCode::NOT_FOUND, "no such plan"))?;
                Ok((StatusCode::OK, describe(id, plan)))
            }
            Endpoint::SetState => {
                let id = id.ok_or_else(|| error(StatusCode::NOT_FOUND, "no such plan"))?;
                let body = read(req).await?;
                let wanted = body["state"].as_str().unwrap_or("");
                let Some(to) = STATES.iter().copied().find(|s| s.name() == wanted) else {
                    let names: Vec<_> = STATES.iter().map(|s| s.name()).collect();
                    return Err(error(
                        StatusCode::BAD_REQUEST,
                        format!("`state` {wanted:?}: give one of {}", names.join(", ")),
                    ));
                };
                // Read the plan and update it, as one transaction.
                self.work(c, 1).await?;
                let mut plans = self.plans.lock().unwrap_or_else(|e| e.into_inner());
                let plan = plans
                    .get_mut(&id)
                    .ok_or_else(|| error(StatusCode::NOT_FOUND, "no such plan"))?;
                if !plan.state.next().contains(&to) {
                    let mut refused = describe(id, plan);
                    refused["error"] = format!("a {} plan cannot become {}", plan.state.name(), to.name()).into();
                    return Err((StatusCode::CONFLICT, refused));
                }
                plan.state = to;
                Ok((StatusCode::OK, describe(id, plan)))
            }
            Endpoint::Other => Err(error(StatusCode::NOT_FOUND, "no such route")),
        }
    }

    fn token(&self, n: u64) -> String {
        format!("{n}.{:016x}", self.key.hash_one(n))
    }

    fn authorize(&self, req: &Request<Incoming>) -> Result<(), Answer> {
        let header = req
            .headers()
            .get(hyper::header::AUTHORIZATION)
            .and_then(|v| v.to_str().ok())
            .unwrap_or("");
        let token = header
            .split_once(' ')
            .filter(|(scheme, _)| scheme.eq_ignore_ascii_case("bearer"))
            .map(|(_, t)| t.trim());
        let valid = token
            .and_then(|t| t.split_once('.'))
            .and_then(|(n, _)| n.parse::<u64>().ok())
            .is_some_and(|n| token == Some(self.token(n).as_str()));
        if valid {
            Ok(())
        } else {
            Err(error(
                StatusCode::UNAUTHORIZED,
                "send `Authorization: Bearer <token>` with a token from POST /auth/token",
            ))
        }
    }

    /// Holds a pool slot for `units` of work, after waiting at most `wait` for one.
    async fn work(&self, c: &Counters, units: u32) -> Result<(), Answer> {
        let permit = match self.pool.clone().try_acquire_owned() {
            Ok(p) => p,
            Err(_) => {
                c.pool_waits.fetch_add(1, Ordering::Relaxed);
                let _waiting = Gauge::up(&self.waiting);
                let started = Instant::now();
                let got = tokio::time::timeout(self.wait, self.pool.clone().acquire_owned()).await;
                self.wait_micros
                    .fetch_add(started.elapsed().as_micros() as u64, Ordering::Relaxed);
                match got {
                    Ok(Ok(p)) => p,
                    _ => {
                        return Err(error(
                            StatusCode::SERVICE_UNAVAILABLE,
                            format!("no free connection in the pool of {} within {:?}", self.size, self.wait),
                        ))
                    }
                }
            }
        };
        tokio::time::sleep(self.distribution.sample(self.work) * units).await;
        drop(permit);
        Ok(())
    }

    /// The API's counters, in Prometheus text format.
    pub(crate) fn metrics(&self, out: &mut String) {
        let each = |out: &mut String, name: &str, help: &str, value: &dyn Fn(&Counters) -> u64| {
            let _ = writeln!(out, "# HELP {name} {help}\n# TYPE {name} counter");
            for e in ENDPOINTS {
                let v = value(&self.counters[e as usize]);
                let _ = writeln!(out, "{name}{{endpoint=\"{}\"}} {v}", e.label());
            }
        };
        let load = |a: &AtomicU64| a.load(Ordering::Relaxed);
        each(
            out,
            "crest_target_api_requests_total",
            "Orchestration API requests received, by endpoint.",
            &|c| load(&c.requests),
        );
        each(
            out,
            "crest_target_api_served_total",
            "Orchestration API requests answered 2xx.",
            &|c| load(&c.served),
        );
        let name = "crest_target_api_rejected_total";
        let _ = writeln!(
            out,
            "# HELP {name} Orchestration API requests answered 4xx, by reason.\n# TYPE {name} counter"
        );
        for e in ENDPOINTS {
            for (i, (_, reason)) in REASONS.iter().enumerate() {
                let v = load(&self.counters[e as usize].rejected[i]);
                let _ = writeln!(out, "{name}{{endpoint=\"{}\",reason=\"{reason}\"}} {v}", e.label());
            }
        }
        each(
            out,
            "crest_target_api_timeouts_total",
            "Orchestration API requests answered 503: no pool slot within the pool wait.",
            &|c| load(&c.timeouts),
        );
        each(
            out,
            "crest_target_api_pool_waits_total",
            "Orchestration API requests that found the pool busy and waited.",
            &|c| load(&c.pool_waits),
        );
        let mut by_state = [0u64; STATES.len()];
        for plan in self.plans.lock().unwrap_or_else(|e| e.into_inner()).values() {
            by_state[plan.state as usize] += 1;
        }
        let in_use = self.size - self.pool.available_permits().min(self.size);
        let _ = write!(
            out,
            "# HELP crest_target_api_pool_wait_seconds_total Time requests spent waiting for a pool slot.\n\
             # TYPE crest_target_api_pool_wait_seconds_total counter\ncrest_target_api_pool_wait_seconds_total {:.6}\n\
             # HELP crest_target_api_pool_size Pool slots (a service's database connections).\n\
             # TYPE crest_target_api_pool_size gauge\ncrest_target_api_pool_size {}\n\
             # HELP crest_target_api_pool_in_use Pool slots held now.\n\
             # TYPE crest_target_api_pool_in_use gauge\ncrest_target_api_pool_in_use {in_use}\n\
             # HELP crest_target_api_pool_waiting Requests waiting for a pool slot now.\n\
             # TYPE crest_target_api_pool_waiting gauge\ncrest_target_api_pool_waiting {}\n\
             # HELP crest_target_api_plans_evicted_total Oldest plans forgotten to stay within the plan limit.\n\
             # TYPE crest_target_api_plans_evicted_total counter\ncrest_target_api_plans_evicted_total {}\n",
            self.wait_micros.load(Ordering::Relaxed) as f64 / 1e6,
            self.size,
            self.waiting.load(Ordering::Relaxed),
            self.evicted.load(Ordering::Relaxed),
        );
        let _ = writeln!(
            out,
            "# HELP crest_target_api_plans Plans kept, by state.\n# TYPE crest_target_api_plans gauge"
        );
        for (state, n) in STATES.iter().zip(by_state) {
            let _ = writeln!(out, "crest_target_api_plans{{state=\"{}\"}} {n}", state.name());
        }
    }
}

/// A plan as the API shows it, with what the user may do next.
fn describe(id: u64, plan: &Plan) -> Value {
    let next: Vec<Value> = plan
        .state
        .next()
        .iter()
        .map(|s| json!({"state": s.name(), "method": "PUT", "path": format!("/plans/{id}/state")}))
        .collect();
    json!({"id": id, "name": plan.name, "state": plan.state.name(), "next": next})
}

/// The request's JSON body (an empty body is `{}`).
async fn read(req: Request<Incoming>) -> Result<Value, Answer> {
    let body = http_body_util::Limited::new(req.into_body(), MAX_BODY)
        .collect()
        .await
        .map_err(|_| {
            error(
                StatusCode::BAD_REQUEST,
                format!("the body must be JSON of at most {MAX_BODY} bytes"),
            )
        })?
        .to_bytes();
    if body.iter().all(u8::is_ascii_whitespace) {
        return Ok(json!({}));
    }
    serde_json::from_slice(&body).map_err(|e| error(StatusCode::BAD_REQUEST, format!("the body must be JSON: {e}")))
}
