//! The scenario an import makes: plain data that [`crate::write`] turns into the file.

use crate::secrets::Secrets;
use indexmap::IndexMap;

/// A scenario made by an importer, before it is written.
#[derive(Debug, Default, Clone)]
pub struct Imported {
    /// What it was made from, one line each (`curl -X POST https://api.example.com/orders`, `HAR
    /// 1.2 recording session.har: 14 of 52 entries`): the file's first comment, so a reader
    /// knows where it came from and the same input gives the same file (no dates).
    pub made_from: Vec<String>,
    /// The recorded origin, `scheme://host[:port]`: the default of `${env:CREST_TARGET}`, so
    /// the same file runs against a test copy of the service by setting one variable.
    pub origin: String,
    /// Settings for every request.
    pub defaults: Defaults,
    /// One flow per recorded session (HAR, curl) or spec (OpenAPI); written as `steps:` when
    /// there is one.
    pub flows: Vec<Flow>,
    /// Values taken out of the scenario into the environment: they are written to the dotenv
    /// file beside it, never into it.
    pub secrets: Secrets,
    /// Values carried from a response to the later requests that send them back.
    pub correlated: Vec<Correlation>,
    /// Anything else the user should know about the import (what was left out and why), written
    /// as comments and printed.
    pub notes: Vec<String>,
}

/// The scenario's `defaults:`; what no import sets is left to crest's own defaults.
#[derive(Debug, Default, Clone)]
pub struct Defaults {
    /// Headers every request sends (templates).
    pub headers: IndexMap<String, String>,
    /// Accept any TLS certificate (`curl -k`).
    pub insecure: bool,
    /// Redirects each request follows (`curl -L`).
    pub redirects: Option<u32>,
    /// Ask for compressed bodies (`curl --compressed`).
    pub compression: bool,
    /// Whether each user keeps its cookies; `None` leaves crest's default (kept).
    pub cookies: Option<bool>,
    /// The HTTP version (`"2"`, `auto`); `None` leaves crest's default (HTTP/1.1).
    pub http: Option<String>,
}

/// A named flow of steps.
#[derive(Debug, Clone)]
pub struct Flow {
    pub name: String,
    pub steps: Vec<Step>,
}

/// One step of a flow.
#[derive(Debug, Clone)]
pub enum Step {
    Request(Box<Request>),
    /// A pause, in milliseconds (a recorded gap between requests).
    Think(u64),
}

/// One request, its values already templates (recorded text through [`crate::literal`], carried
/// values as `${name}`, secrets as `${env:NAME}`).
#[derive(Debug, Clone, Default)]
pub struct Request {
    /// The name its statistics are grouped under; `None` lets crest name it (`GET /plans/{id}`).
    pub name: Option<String>,
    /// The method, upper case.
    pub method: String,
    /// The path and query relative to the target when the request goes to the recorded origin...
    pub path: Option<String>,
    /// ...or an absolute URL when it goes elsewhere (its scheme and host written as they are).
    pub url: Option<String>,
    /// Headers as name -> template, in the order recorded.
    pub headers: IndexMap<String, String>,
    pub body: Option<Body>,
    /// Variables this response gives, by name.
    pub extract: IndexMap<String, Extract>,
    /// The statuses that count as success (empty: crest's rule, any below 400).
    pub status: Vec<u16>,
}

/// A request body.
#[derive(Debug, Clone)]
pub enum Body {
    /// JSON, its strings templates.
    Json(serde_json::Value),
    /// Text, a template.
    Text(String),
    /// `application/x-www-form-urlencoded` fields.
    Form(IndexMap<String, String>),
    /// A file sent as it is, relative to the scenario.
    File(String),
    /// `multipart/form-data` parts.
    Multipart(Vec<Part>),
}

/// A part of a multipart body: a value, or a file.
#[derive(Debug, Clone, Default)]
pub struct Part {
    pub name: String,
    pub value: Option<String>,
    pub file: Option<String>,
    pub content_type: Option<String>,
}

/// Where an extracted value is read from in a response.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Extract {
    /// A JSONPath on the body (`$.id`).
    Json(String),
    /// A response header.
    Header(String),
    /// A regular expression on the body; its first group.
    Regex(String),
}

/// A value carried from the response that gave it to the requests that send it back.
#[derive(Debug, Clone)]
pub struct Correlation {
    /// The variable's name (`cart_id`, `csrf`).
    pub variable: String,
    /// Where it came from, in words (`$.id of POST /carts (step 2)`).
    pub from: String,
    /// Where it is sent, in words (`the path of GET /carts/{cart_id} (step 3)`).
    pub to: Vec<String>,
}
