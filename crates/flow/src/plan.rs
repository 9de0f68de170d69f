//! A validated flow plan: what each virtual user does, ready to run.

use crate::extract::{Check, Extractor};
use crate::feeder::Feeder;
use crate::template::Template;
use crest_http::Endpoint;
use crest_model::NameId;
use std::sync::atomic::AtomicU64;
use std::sync::{Arc, OnceLock};
use std::time::Duration;

/// Everything a scenario's users do.
#[derive(Debug)]
pub struct FlowPlan {
    /// Flows; each iteration runs one, chosen by weight.
    pub flows: Vec<Flow>,
    /// Steps each user runs once, before its first iteration (log in, keep the token).
    pub on_start: Vec<Step>,
    /// Steps each user runs once, when it stops (closed model).
    pub on_stop: Vec<Step>,
    /// Servers the steps send to; [`RequestStep::endpoint`] indexes this.
    pub endpoints: Vec<Endpoint>,
    /// Variables set for each user when it starts, in order.
    pub variables: Vec<(String, Template)>,
    /// Data files.
    pub feeders: Vec<Feeder>,
    /// Headers sent with every request, before the step's own.
    pub headers: Vec<(String, Template)>,
    /// Request timeout unless a step sets its own.
    pub timeout: Duration,
    /// Connect timeout.
    pub connect_timeout: Duration,
    /// Reuse connections.
    pub keepalive: bool,
    /// The run's shared counter for `${seq}`.
    pub seq: AtomicU64,
    /// The database SQL steps run on; each user opens its own connection.
    pub database: Option<crest_pg::PgTarget>,
}

/// One flow.
#[derive(Debug)]
pub struct Flow {
    /// Its name, for reports.
    pub name: String,
    /// Relative frequency.
    pub weight: u32,
    /// What it does.
    pub steps: Vec<Step>,
    /// What a user does when one of its steps fails.
    pub on_failure: OnFailure,
}

/// What a user does when a step of its flow fails.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub enum OnFailure {
    /// End the iteration there (later steps usually need the failed step's values), but first
    /// wait the think time of the steps skipped, so that a failing user never sends faster than
    /// a succeeding one: a service answering errors must not be hammered because it does.
    #[default]
    NextIteration,
    /// Go on with the next step, as if the failed one had succeeded.
    Continue,
    /// The user stops for good: the closed model does not replace it, and it runs `on_stop`.
    StopUser,
}

impl OnFailure {
    /// The choices as a scenario names them, in order.
    pub const NAMES: [&'static str; 3] = ["next_iteration", "continue", "stop_user"];

    /// The choice a scenario names.
    pub fn parse(name: &str) -> Option<OnFailure> {
        match name {
            "next_iteration" => Some(OnFailure::NextIteration),
            "continue" => Some(OnFailure::Continue),
            "stop_user" => Some(OnFailure::StopUser),
            _ => None,
        }
    }
}

/// One step.
#[derive(Debug)]
pub enum Step {
    /// Send a request.
    Request(RequestStep),
    /// Repeat a request until extracted values say it is done.
    Poll(PollStep),
    /// Wait, uniformly between `min` and `max`.
    Think {
        /// Shortest wait.
        min: Duration,
        /// Longest wait.
        max: Duration,
    },
    /// Run SQL: one statement, or several as one timed transaction.
    Sql(SqlStep),
    /// A WebSocket exchange on the user's own connection (see [`WsStep`]).
    Ws(Box<WsStep>),
    /// Set variables from templates (e.g. random keys used by several statements).
    Set(Vec<(String, Template)>),
    /// Run steps several times.
    Loop {
        /// How many times.
        times: u64,
        /// What to repeat.
        steps: Vec<Step>,
    },
    /// Run one list of steps or the other, by a condition on the user's values.
    If {
        /// The condition.
        condition: crate::condition::Condition,
        /// When it holds.
        then: Vec<Step>,
        /// When it does not.
        otherwise: Vec<Step>,
    },
    /// Run steps once for each element of a JSON array (a value extracted from a response).
    Foreach {
        /// Renders to the array's JSON text. Anything that is not an array (nothing extracted,
        /// `null`, an object) runs the steps no times.
        items: Template,
        /// The variable each element is put in: strings as they are, other values as JSON.
        var: String,
        /// At most this many elements are visited; the rest are left, as a user would stop
        /// reading a list somewhere.
        max: u64,
        /// What to do with each.
        steps: Vec<Step>,
    },
    /// Leave the innermost `loop` or `foreach`; outside one, end the iteration.
    Break,
    /// Go on with the next round of the innermost `loop` or `foreach`; outside one, end the
    /// iteration.
    Next,
    /// Read server-sent events, subscribing first when the user has no stream open.
    Sse(Box<SseStep>),
    /// A gRPC call on the user's connection to its server (see [`GrpcStep`]).
    Grpc(Box<GrpcStep>),
}

impl Step {
    /// Whether this step, or one inside it, sends a request or a statement.
    pub fn sends(&self) -> bool {
        match self {
            Step::Request(_) | Step::Poll(_) | Step::Sql(_) | Step::Sse(_) | Step::Ws(_) | Step::Grpc(_) => true,
            Step::Loop { steps, .. } | Step::Foreach { steps, .. } => steps.iter().any(Step::sends),
            Step::If { then, otherwise, .. } => then.iter().chain(otherwise).any(Step::sends),
            Step::Think { .. } | Step::Set(_) | Step::Break | Step::Next => false,
        }
    }
}

/// A request with what to take from its response and what to check.
#[derive(Debug)]
pub struct RequestStep {
    /// The name statistics are grouped under.
    pub name: NameId,
    /// Index into [`FlowPlan::endpoints`].
    pub endpoint: usize,
    /// The method.
    pub method: String,
    /// Path and query, without the scheme and host.
    pub path: Template,
    /// More query parameters, URL-encoded when rendered.
    pub query: Vec<(String, Template)>,
    /// The step's headers.
    pub headers: Vec<(String, Template)>,
    /// The body.
    pub body: Body,
    /// Values to keep, by variable name.
    pub extract: Vec<(String, Extractor)>,
    /// Conditions on the response; a failed one is a `check_failed` outcome (on a 4xx/5xx
    /// response, the `http_NNN` outcome with the check as its reason).
    pub checks: Vec<Check>,
    /// This step's timeout, when it has its own.
    pub timeout: Option<Duration>,
}

impl RequestStep {
    /// True when a check decides which statuses are fine (otherwise 4xx and 5xx fail).
    pub fn checks_status(&self) -> bool {
        self.checks.iter().any(|c| matches!(c, Check::Status(_)))
    }
}

/// A request body.
#[derive(Debug)]
pub enum Body {
    /// None.
    None,
    /// JSON, with templates in its strings; sent with `Content-Type: application/json`.
    Json(JsonTemplate),
    /// Text with templates.
    Text(Template),
    /// Bytes from a file.
    Bytes(Vec<u8>),
    /// `application/x-www-form-urlencoded` fields, values templated.
    Form(Vec<(String, Template)>),
    /// `multipart/form-data` parts.
    Multipart(Vec<Part>),
}

/// One part of a multipart body.
#[derive(Debug)]
pub struct Part {
    /// The field name.
    pub name: String,
    /// What it holds.
    pub content: PartContent,
}

/// A multipart field's value, or a file read when the scenario was loaded.
#[derive(Debug)]
pub enum PartContent {
    /// A templated value.
    Value(Template),
    /// A file: its name as sent, its media type and its bytes.
    File {
        /// The file name sent in `Content-Disposition`.
        filename: String,
        /// Its `Content-Type`.
        content_type: String,
        /// Its bytes.
        bytes: Vec<u8>,
    },
}

/// A JSON value whose strings may be templates.
#[derive(Debug)]
pub enum JsonTemplate {
    /// A value with no templates.
    Value(serde_json::Value),
    /// A templated string.
    String(Template),
    /// An array.
    Array(Vec<JsonTemplate>),
    /// An object, in order.
    Object(Vec<(String, JsonTemplate)>),
}

/// A request repeated until it reports the work it started is done (a submitted task's status,
/// asked every second until it is SUCCEEDED or FAILED).
#[derive(Debug)]
pub struct PollStep {
    /// The request, with its extraction; its checks apply to the final response only.
    pub request: RequestStep,
    /// Done when every variable has one of its values.
    pub until: Vec<(String, Vec<String>)>,
    /// Wait between the end of one poll and the start of the next.
    pub every: Duration,
    /// Give up (a `check_failed` outcome) when done would come later than this.
    pub max_wait: Duration,
}

/// SQL statements run on the user's database connection.
#[derive(Debug)]
pub struct SqlStep {
    /// The name the step (the transaction, or the one statement) is recorded under.
    pub name: NameId,
    /// The statements, in order.
    pub statements: Vec<SqlStatement>,
    /// Run them between BEGIN and COMMIT, timed as one unit; each statement is also recorded.
    pub transaction: bool,
    /// Variables from the first row of the last statement, by column.
    pub extract: Vec<(String, String)>,
    /// Conditions on the last statement's result.
    pub checks: Vec<SqlCheck>,
}

/// One statement with templated parameters (`$1`, `$2`, ...).
#[derive(Debug)]
pub struct SqlStatement {
    /// The name this statement is recorded under inside a transaction.
    pub name: NameId,
    /// The SQL text, prepared once per connection.
    pub query: String,
    /// Parameter values.
    pub params: Vec<Template>,
}

/// A condition on a statement's result.
#[derive(Debug)]
pub enum SqlCheck {
    /// Exactly this many rows returned or affected.
    Rows(u64),
    /// At least this many.
    RowsMin(u64),
    /// The first row's column has this value (as text).
    Value(String, String),
}

/// Server-sent events read from the user's stream: subscribe (a GET with
/// `Accept: text/event-stream`) when it has none open, then read until enough events match.
#[derive(Debug)]
pub struct SseStep {
    /// The name the step is recorded under.
    pub name: NameId,
    /// The name each reconnect (after the stream ended or broke) is recorded under.
    pub reconnect_name: NameId,
    /// Index into [`FlowPlan::endpoints`].
    pub endpoint: usize,
    /// Path and query of the subscription.
    pub path: Template,
    /// The step's headers, after the flow's.
    pub headers: Vec<(String, Template)>,
    /// Only events of this type count towards `count` (any type when `None`).
    pub event: Option<String>,
    /// Only events whose data this matches count.
    pub matches: Option<regex::Regex>,
    /// The step is done when this many events counted.
    pub count: u64,
    /// Longest wait for them, from the step's start: past it, `receive_timeout`.
    pub timeout: Duration,
    /// Values taken from the event that completed the step (its data is the body; its `event`
    /// and `id` are headers).
    pub extract: Vec<(String, Extractor)>,
    /// Conditions on that event.
    pub checks: Vec<Check>,
    /// Longest time allowed between two events (and from the step's start to its first).
    pub max_gap: Option<Duration>,
    /// How many times the step subscribes again, with `Last-Event-ID`, when the stream ends.
    pub reconnects: u32,
    /// A stream the server ended (reconnects used up) completes the step rather than failing
    /// it as `closed`.
    pub end_ok: bool,
    /// Close the stream after the step, rather than keeping it for the user's next one.
    pub close: bool,
}

/// A WebSocket step on the user's connection, which it keeps across steps and iterations. It
/// opens the connection when the user has none, sends its message if it has one, reads until
/// its condition when it has one, then closes when told to: `send` with `until` is a
/// request/reply exchange, timed from the send to the matching reply.
#[derive(Debug)]
pub struct WsStep {
    /// The name the step is recorded under.
    pub name: NameId,
    /// Index into [`FlowPlan::endpoints`]: where a new connection goes.
    pub endpoint: usize,
    /// Path and query of the upgrade request, used when the user has no connection yet.
    pub path: Template,
    /// Headers of the upgrade request, after the scenario's.
    pub headers: Vec<(String, Template)>,
    /// A message to send.
    pub send: Option<Template>,
    /// Send it as a binary message rather than text.
    pub binary: bool,
    /// Read messages until this many have matched (text, or binary read as UTF-8).
    pub until: Option<ReadUntil>,
    /// Longest wait for the connection and `until`, from the step's start.
    pub timeout: Duration,
    /// Values from the message that met `until`, which is read as a response body.
    pub extract: Vec<(String, Extractor)>,
    /// Conditions on that message.
    pub checks: Vec<Check>,
    /// Close the connection with this code after the rest of the step.
    pub close: Option<u16>,
}

/// When a step's reading of messages (WebSocket, a gRPC stream) is done.
#[derive(Debug)]
pub struct ReadUntil {
    /// Only messages matching this count (a gRPC message as its JSON); any message when `None`.
    pub matches: Option<regex::Regex>,
    /// How many matching messages end the reading.
    pub count: u64,
}

/// A gRPC call (unary, or streaming either way) on the user's HTTP/2 connection to the step's
/// server, which the user keeps across steps and iterations as a client keeps its channel.
#[derive(Debug)]
pub struct GrpcStep {
    /// The name the call is recorded under.
    pub name: NameId,
    /// Index into [`FlowPlan::endpoints`]: the server.
    pub endpoint: usize,
    /// The method, set once its service is described: from `.proto` files when the scenario
    /// is read, from the server's reflection when the plan is resolved (before the run).
    pub method: Arc<OnceLock<GrpcMethod>>,
    /// The request messages as JSON: one, or several for a client-streaming method.
    pub messages: Vec<JsonTemplate>,
    /// Metadata sent with the call, after the scenario's headers.
    pub metadata: Vec<(String, Template)>,
    /// The call's deadline, sent as `grpc-timeout` and kept by crest: past it,
    /// `grpc_deadline_exceeded`.
    pub timeout: Duration,
    /// Stop reading a server stream once this many messages matched (the rest is cancelled);
    /// without it, the call reads to the server's status.
    pub until: Option<ReadUntil>,
    /// Values from the last message read (or the one that met `until`), read as JSON.
    pub extract: Vec<(String, Extractor)>,
    /// Conditions on that message.
    pub checks: Vec<Check>,
}

/// A gRPC step's method, and its request messages already encoded when no template is in them.
#[derive(Debug)]
pub struct GrpcMethod {
    /// The method, from its service's descriptors.
    pub method: crest_grpc::Method,
    /// The wire bytes of the step's messages, when they are the same for every call.
    pub fixed: Option<Vec<bytes::Bytes>>,
}
