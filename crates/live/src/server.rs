//! The listener: the page, its JSON API and `/metrics`, on axum.
//!
//! Safety as Jupyter does it: a token is always in force. Bound to loopback, reading (the page,
//! `GET /api/state`, `/metrics`) needs no token; bound anywhere else it does, as
//! `Authorization: Bearer TOKEN` (which Prometheus sends) or `?token=` on the URL printed at the
//! start. Control calls are POSTs and always need the token in the `Authorization` header: a
//! cookie is never read, and another site's page cannot set that header without a CORS
//! preflight, which this server never grants. A GET never changes anything.

use crate::hub::Hub;
use axum::body::Bytes;
use axum::extract::{Query, State};
use axum::http::{header, HeaderMap, StatusCode};
use axum::response::{IntoResponse, Response};
use axum::routing::{get, post};
use axum::{Json, Router};
use serde::Deserialize;
use std::net::SocketAddr;
use std::sync::Arc;

/// The listener could not start.
#[derive(Debug, thiserror::Error)]
pub enum WebError {
    /// The address could not be bound.
    #[error("cannot listen on {addr}: {source}")]
    Bind {
        /// The address asked for.
        addr: SocketAddr,
        /// Why.
        source: std::io::Error,
    },
    /// The server's thread or runtime could not start.
    #[error("cannot start the web server: {0}")]
    Start(#[from] std::io::Error),
}

/// A running listener.
#[derive(Debug)]
pub struct Server {
    /// Where it listens.
    pub addr: SocketAddr,
    /// The token in force.
    pub token: String,
}

impl Server {
    /// The URL to open, with the token.
    pub fn url(&self) -> String {
        format!("http://{}/?token={}", self.addr, self.token)
    }
}

/// A token of 128 random bits, in hex.
pub fn new_token() -> std::io::Result<String> {
    use std::io::Read;
    let mut b = [0u8; 16];
    std::fs::File::open("/dev/urandom")?.read_exact(&mut b)?;
    Ok(b.iter().map(|x| format!("{x:02x}")).collect())
}

#[derive(Clone)]
struct App {
    hub: Arc<Hub>,
    token: Arc<str>,
    loopback: bool,
}

/// Starts listening on `addr` with `token`, serving what `hub` keeps, on a thread of its own.
pub fn serve(addr: SocketAddr, token: String, hub: Arc<Hub>) -> Result<Server, WebError> {
    serve_with(addr, token, hub, Router::new())
}

/// [`serve`], with `more` routes on the same listener (a collector's, for its workers); they
/// check the token themselves.
pub fn serve_with(addr: SocketAddr, token: String, hub: Arc<Hub>, more: Router) -> Result<Server, WebError> {
    let std_listener = std::net::TcpListener::bind(addr).map_err(|source| WebError::Bind { addr, source })?;
    std_listener.set_nonblocking(true)?;
    let bound = std_listener.local_addr()?;
    let app = App {
        hub,
        token: token.as_str().into(),
        loopback: bound.ip().is_loopback(),
    };
    let router = Router::new()
        .route("/", get(index))
        .route("/assets/{file}", get(asset))
        // Browsers ask for it on their own; an answer keeps their console free of a 404.
        .route("/favicon.ico", get(|| async { StatusCode::NO_CONTENT }))
        .route("/api/state", get(state))
        .route("/metrics", get(metrics))
        .route("/api/load", post(load))
        .route("/api/pause", post(pause))
        .route("/api/resume", post(resume))
        .route("/api/stop", post(stop))
        .with_state(app)
        .merge(more);
    let rt = tokio::runtime::Builder::new_current_thread().enable_all().build()?;
    std::thread::Builder::new().name("crest-web".into()).spawn(move || {
        rt.block_on(async move {
            match tokio::net::TcpListener::from_std(std_listener) {
                Ok(l) => {
                    if let Err(e) = axum::serve(l, router).await {
                        eprintln!("web: the server stopped: {e}");
                    }
                }
                Err(e) => eprintln!("web: cannot listen: {e}"),
            }
        })
    })?;
    Ok(Server { addr: bound, token })
}

/// Compares without stopping at the first difference, so timing tells nothing of the token.
fn same(a: &str, b: &str) -> bool {
    a.len() == b.len() && a.bytes().zip(b.bytes()).fold(0u8, |acc, (x, y)| acc | (x ^ y)) == 0
}

fn refuse(status: StatusCode, why: &str) -> Response {
    let mut r = (status, Json(serde_json::json!({ "error": why }))).into_response();
    if status == StatusCode::UNAUTHORIZED {
        r.headers_mut()
            .insert(header::WWW_AUTHENTICATE, header::HeaderValue::from_static("Bearer"));
    }
    r
}

/// Why a request is refused: its status and the reason given.
type Refusal = (StatusCode, &'static str);

#[derive(Deserialize, Default)]
struct Read {
    token: Option<String>,
    #[serde(default)]
    from: usize,
    epoch: Option<u64>,
}

/// The token in a request's `Authorization: Bearer` header.
fn bearer(headers: &HeaderMap) -> Option<&str> {
    headers
        .get(header::AUTHORIZATION)
        .and_then(|v| v.to_str().ok())
        .and_then(|v| v.strip_prefix("Bearer "))
        .map(str::trim)
}

/// True when a request carries `token` in its `Authorization: Bearer` header, for routes
/// added with [`serve_with`].
pub fn bears(headers: &HeaderMap, token: &str) -> bool {
    bearer(headers).is_some_and(|t| same(t, token))
}

impl App {
    fn bearer<'a>(&self, headers: &'a HeaderMap) -> Option<&'a str> {
        bearer(headers)
    }

    /// May this request read? On loopback anyone may; elsewhere only with the token.
    fn may_read(&self, headers: &HeaderMap, query: Option<&str>) -> Result<(), Refusal> {
        if self.loopback {
            return Ok(());
        }
        match self.bearer(headers).or(query) {
            None => Err((
                StatusCode::UNAUTHORIZED,
                "a token is needed: Authorization: Bearer TOKEN",
            )),
            Some(t) if same(t, &self.token) => Ok(()),
            Some(_) => Err((StatusCode::FORBIDDEN, "the token is not this run's")),
        }
    }

    /// May this request steer? Only with the token, in the Authorization header.
    fn may_control(&self, headers: &HeaderMap) -> Result<(), Refusal> {
        match self.bearer(headers) {
            None => Err((
                StatusCode::UNAUTHORIZED,
                "a token is needed: Authorization: Bearer TOKEN",
            )),
            Some(t) if same(t, &self.token) => Ok(()),
            Some(_) => Err((StatusCode::FORBIDDEN, "the token is not this run's")),
        }
    }
}

const INDEX: &str = include_str!("../assets/index.html");
const APP_JS: &str = include_str!("../assets/app.js");
const STYLE: &str = include_str!("../assets/style.css");
const UPLOT_JS: &str = include_str!("../assets/vendor/uplot/uPlot.iife.min.js");
const UPLOT_CSS: &str = include_str!("../assets/vendor/uplot/uPlot.min.css");

async fn index(State(app): State<App>, headers: HeaderMap, Query(q): Query<Read>) -> Response {
    if let Err(r) = app.may_read(&headers, q.token.as_deref()) {
        return refuse(r.0, r.1);
    }
    (
        [
            (header::CONTENT_TYPE, "text/html; charset=utf-8"),
            (header::CACHE_CONTROL, "no-store"),
            // The page runs its own script only; the final report is shown in a sandboxed frame.
            (
                header::CONTENT_SECURITY_POLICY,
                "default-src 'self'; style-src 'self' 'unsafe-inline'; frame-src 'self' data: blob:; frame-ancestors 'none'",
            ),
        ],
        INDEX,
    )
        .into_response()
}

async fn asset(
    State(app): State<App>,
    headers: HeaderMap,
    Query(q): Query<Read>,
    axum::extract::Path(file): axum::extract::Path<String>,
) -> Response {
    if let Err(r) = app.may_read(&headers, q.token.as_deref()) {
        return refuse(r.0, r.1);
    }
    let (kind, body) = match file.as_str() {
        "app.js" => ("text/javascript", APP_JS),
        "style.css" => ("text/css", STYLE),
        "uPlot.iife.min.js" => ("text/javascript", UPLOT_JS),
        "uPlot.min.css" => ("text/css", UPLOT_CSS),
        _ => return StatusCode::NOT_FOUND.into_response(),
    };
    ([(header::CONTENT_TYPE, kind)], body).into_response()
}

async fn state(State(app): State<App>, headers: HeaderMap, Query(q): Query<Read>) -> Response {
    if let Err(r) = app.may_read(&headers, q.token.as_deref()) {
        return refuse(r.0, r.1);
    }
    let verdict = crate::verdict::so_far(&app.hub).await;
    let mut state = app.hub.state(q.from, q.epoch);
    state.verdict = verdict;
    Json(state).into_response()
}

async fn metrics(State(app): State<App>, headers: HeaderMap, Query(q): Query<Read>) -> Response {
    if let Err(r) = app.may_read(&headers, q.token.as_deref()) {
        return refuse(r.0, r.1);
    }
    (
        [(header::CONTENT_TYPE, "text/plain; version=0.0.4; charset=utf-8")],
        crate::metrics::render(&app.hub),
    )
        .into_response()
}

#[derive(Deserialize)]
#[serde(deny_unknown_fields)]
struct Load {
    users: Option<u64>,
    spawn_rate: Option<f64>,
    rate: Option<f64>,
}

fn bad(why: impl std::fmt::Display) -> Response {
    refuse(StatusCode::BAD_REQUEST, &why.to_string())
}

fn not_running() -> Response {
    refuse(StatusCode::CONFLICT, "no run is sending now")
}

/// What a control call changed.
fn done(control: &crest_engine::Control) -> Response {
    Json(serde_json::json!({
        "step": control.steps().pop().map(|s| crest_report::fmt::words::step_kind(&s.kind)),
        "paused": control.paused(),
        "users_asked": control.users_asked(),
        "rate": control.rate_asked(),
    }))
    .into_response()
}

fn control_error(e: crest_engine::ControlError) -> Response {
    match e {
        crest_engine::ControlError::NotRunning => not_running(),
        invalid => bad(invalid),
    }
}

async fn load(State(app): State<App>, headers: HeaderMap, body: Bytes) -> Response {
    if let Err(r) = app.may_control(&headers) {
        return refuse(r.0, r.1);
    }
    let load: Load = match serde_json::from_slice(&body) {
        Ok(l) => l,
        Err(e) => {
            return bad(format!(
                "the body must be {{\"users\": N, \"spawn_rate\": R}} or {{\"rate\": R}}: {e}"
            ))
        }
    };
    let Some(control) = app.hub.control() else {
        return not_running();
    };
    let model = app.hub.model().unwrap_or_default();
    let changed = match (load.users, load.rate) {
        (Some(users), None) if model == "closed" => {
            // Without a spawn rate, the users come within a second.
            let spawn_rate = load.spawn_rate.unwrap_or(users.max(1) as f64);
            control.set_users(users, spawn_rate, control.users_now())
        }
        (None, Some(rate)) if model == "open" => control.set_rate(rate),
        (Some(_), None) => {
            return refuse(
                StatusCode::CONFLICT,
                "this run paces arrivals (open model): set \"rate\"",
            )
        }
        (None, Some(_)) => {
            return refuse(
                StatusCode::CONFLICT,
                "this run has virtual users (closed model): set \"users\"",
            )
        }
        _ => return bad("give either \"users\" (with \"spawn_rate\") or \"rate\""),
    };
    match changed {
        Ok(()) => done(&control),
        Err(e) => control_error(e),
    }
}

/// Pauses or resumes, with the token.
fn toggle(
    app: &App,
    headers: &HeaderMap,
    change: fn(&crest_engine::Control) -> Result<bool, crest_engine::ControlError>,
) -> Response {
    if let Err(r) = app.may_control(headers) {
        return refuse(r.0, r.1);
    }
    let Some(control) = app.hub.control() else {
        return not_running();
    };
    match change(&control) {
        Ok(_) => done(&control),
        Err(e) => control_error(e),
    }
}

async fn pause(State(app): State<App>, headers: HeaderMap) -> Response {
    toggle(&app, &headers, crest_engine::Control::pause)
}

async fn resume(State(app): State<App>, headers: HeaderMap) -> Response {
    toggle(&app, &headers, crest_engine::Control::resume)
}

async fn stop(State(app): State<App>, headers: HeaderMap) -> Response {
    if let Err(r) = app.may_control(&headers) {
        return refuse(r.0, r.1);
    }
    let Some(stop) = app.hub.stop() else {
        return not_running();
    };
    if let Some(c) = app.hub.control() {
        c.stopping();
    }
    stop.cancel();
    Json(serde_json::json!({ "stopping": true })).into_response()
}

#[cfg(test)]
mod tests {
    #[test]
    fn tokens_compare_whole() {
        assert!(super::same("abc", "abc"));
        assert!(!super::same("abc", "abd"));
        assert!(!super::same("abc", "ab"));
        let t = super::new_token().unwrap();
        assert_eq!(t.len(), 32);
        assert_ne!(t, super::new_token().unwrap());
    }
}
