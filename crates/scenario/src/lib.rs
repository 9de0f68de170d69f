//! Scenario files: the seeds' tests written as YAML.
//!
//! [`load`] reads a file into a validated [`Scenario`]: the [`Plan`] the engine runs and the
//! [`FlowPlan`] its users follow. [`draft`] stops one step earlier, at the plan's [`Draft`] (what
//! the file gives, for a caller whose flags add to it before it is resolved) and a
//! [`FlowDraft`] (the flows, finished once the plan is resolved). Every problem is reported with the file, line and column and,
//! where it helps, a hint ("did you mean ..."); nothing is sent before the whole file is valid.
//! The format is documented in docs/scenario.md, and [`json_schema`] gives the JSON Schema
//! published in schema/scenario.schema.json.
#![warn(missing_docs)]

mod compile;
mod error;
pub mod raw;

pub use error::{Problem, ScenarioError};

use crest_flow::FlowPlan;
use crest_http::Endpoint;
use crest_model::plan::{Draft, Origin, Plan, PlanError, ScenarioSource, Target};
use marked_yaml::{Error as YamlError, LoadError, LoaderOptions};
use sha2::{Digest, Sha256};
use std::path::Path;

/// A validated scenario.
#[derive(Debug)]
pub struct Scenario {
    /// What the engine runs.
    pub plan: Plan,
    /// What each user does.
    pub flow: FlowPlan,
    /// What is valid but probably not meant (a loop that sends nothing), located in the file.
    pub warnings: Vec<Problem>,
}

/// A scenario's plan before it is resolved, and what its users do.
#[derive(Debug)]
pub struct Drafted {
    /// The plan as the file describes it.
    pub draft: Draft,
    /// What each user does, once the plan is resolved.
    pub flow: FlowDraft,
    /// See [`Scenario::warnings`].
    pub warnings: Vec<Problem>,
    /// The files it read (data, bodies, certificates), as it names them: what a collector hands
    /// its workers beside the text.
    pub files: Vec<String>,
}

/// What a scenario's users do, but for how they connect: the servers they send to are made
/// with the resolved plan's [`Connection`](crest_model::plan::Connection), so that the one
/// resolver's rules and defaults apply to a scenario's requests as to quick mode's.
#[derive(Debug)]
pub struct FlowDraft {
    /// The file, for locating problems.
    file: String,
    flow: FlowPlan,
    /// The servers steps send to.
    endpoints: Vec<compile::Server>,
    /// gRPC steps described by their servers' reflection once the endpoints are made.
    described: Vec<compile::grpc::Described>,
}

impl FlowDraft {
    /// The flows, sent as `plan` says. Resolves each server's host, once, here, and asks the
    /// servers of gRPC steps that no `.proto` describes for their services.
    pub fn finish(self, plan: &Plan) -> Result<FlowPlan, ScenarioError> {
        let c = plan.connection();
        let mut flow = self.flow;
        let mut problems = Vec::new();
        // gRPC is HTTP/2 whatever requests speak, with nothing of HTTP's own on top.
        let grpc = crest_model::protocol::HttpOptions {
            version: crest_model::protocol::HttpVersion::Http2,
            max_redirects: 0,
            compression: false,
            cookies: false,
            ..c.http
        };
        for s in self.endpoints {
            let http = if s.grpc { &grpc } else { &c.http };
            match Endpoint::parse_on(&s.base, &c.tls, http, &c.network) {
                Ok((e, _)) => flow.endpoints.push(e),
                Err(e) => problems.push(Problem {
                    at: s.at,
                    message: format!("{}: {e}", s.base),
                    hint: None,
                }),
            }
        }
        if problems.is_empty() {
            problems = compile::grpc::reflect(&flow.endpoints, self.described, c.connect_timeout);
        }
        if !problems.is_empty() {
            return Err(ScenarioError {
                file: self.file,
                problems,
            });
        }
        flow.timeout = c.timeout;
        flow.connect_timeout = c.connect_timeout;
        flow.keepalive = c.keepalive;
        Ok(flow)
    }
}

/// Reads and validates a scenario file. `${env:NAME}` reads the process environment.
pub fn load(path: &Path) -> Result<Scenario, ScenarioError> {
    let file = path.display().to_string();
    draft(path)?.resolve(&file)
}

/// Reads and checks a scenario file, up to its plan's [`Draft`].
pub fn draft(path: &Path) -> Result<Drafted, ScenarioError> {
    let file = path.display().to_string();
    let text =
        crest_model::input::read_text_file(path, crest_model::input::MAX_SCENARIO).map_err(|e| ScenarioError {
            file: file.clone(),
            problems: vec![Problem {
                at: None,
                message: format!("cannot read the file: {e}"),
                hint: None,
            }],
        })?;
    let dir = path.parent().unwrap_or(Path::new("."));
    draft_str(&file, &text, dir, &|name| std::env::var(name).ok())
}

/// Validates scenario text. `file` names it in errors; relative paths in it resolve against
/// `dir`; `env` supplies `${env:NAME}` values.
pub fn load_str(
    file: &str,
    text: &str,
    dir: &Path,
    env: &dyn Fn(&str) -> Option<String>,
) -> Result<Scenario, ScenarioError> {
    draft_str(file, text, dir, env)?.resolve(file)
}

impl Drafted {
    /// The validated scenario, its problems located in `file`.
    pub fn resolve(self, file: &str) -> Result<Scenario, ScenarioError> {
        let plan = self.draft.resolve().map_err(|e| located(file, e))?;
        Ok(Scenario {
            flow: self.flow.finish(&plan)?,
            plan,
            warnings: self.warnings,
        })
    }
}

/// A plan's problems as a scenario file's: those from the file keep their line and column.
fn located(file: &str, e: PlanError) -> ScenarioError {
    ScenarioError {
        file: file.to_string(),
        problems: e
            .0
            .iter()
            .map(|p| Problem {
                at: match &p.origin {
                    Origin::File { at, .. } => *at,
                    Origin::Flag(_) => None,
                },
                message: p.message(),
                hint: None,
            })
            .collect(),
    }
}

/// [`load_str`], up to the plan's [`Draft`].
pub fn draft_str(
    file: &str,
    text: &str,
    dir: &Path,
    env: &dyn Fn(&str) -> Option<String>,
) -> Result<Drafted, ScenarioError> {
    let fail = |problems: Vec<Problem>| ScenarioError {
        file: file.to_string(),
        problems,
    };
    // Text from elsewhere than a file (a sweep's, a test's) is held to a file's limit too.
    if text.len() as u64 > crest_model::input::MAX_SCENARIO {
        return Err(fail(vec![Problem {
            at: None,
            message: crest_model::input::ReadError::TooLarge(crest_model::input::MAX_SCENARIO).to_string(),
            hint: None,
        }]));
    }
    // Editors on Windows start files with a byte-order mark; it is not part of the first key.
    let text = text.strip_prefix('\u{feff}').unwrap_or(text);
    // YAML ends a document at a NUL without a word, and what follows would be read as missing.
    if let Some(i) = text.find('\0') {
        let line = text[..i].matches('\n').count() + 1;
        let col = text[text[..i].rfind('\n').map_or(0, |n| n + 1)..i].chars().count() + 1;
        return Err(fail(vec![Problem {
            at: Some((line, col)),
            message: "a NUL byte: a scenario is text, and this file is not".to_string(),
            hint: None,
        }]));
    }
    check_depth(text).map_err(|p| fail(vec![p]))?;
    let options = LoaderOptions::default().error_on_duplicate_keys(true);
    let mut node = marked_yaml::parse_yaml_with_options(0, text, options).map_err(|e| fail(vec![load_error(&e)]))?;
    let substituted = compile::params::substitute_load(&mut node, env).map_err(fail)?;
    let raw: raw::Scenario = marked_yaml::from_node(&node).map_err(|e| {
        let mut p = node_error(&e, &node);
        if let Some(t) = e
            .path()
            .and_then(|path| compile::params::template_at(&substituted, path))
        {
            p.message = format!("{} (the value of {t})", p.message);
        }
        fail(vec![p])
    })?;
    let mut cx = compile::Cx::new(file, &node, dir, env);
    let compiled = cx.scenario(&raw);
    let mut problems = cx.problems;
    if let Some(c) = compiled
        .as_ref()
        .filter(|c| c.names.len() > crest_model::input::MAX_NAMES)
    {
        // Its results could not be read back: refused before anything is sent.
        problems.push(Problem {
            at: None,
            message: format!(
                "{} request names; a run has at most {}",
                c.names.len(),
                crest_model::input::MAX_NAMES
            ),
            hint: Some("name requests by what they do (`name: get item`), not by their values".into()),
        });
    }
    problems.sort_by_key(|p| p.at.unwrap_or((usize::MAX, 0)));
    match compiled {
        Some(c) if problems.is_empty() => {
            let sha256 = Sha256::digest(text.as_bytes())
                .iter()
                .map(|b| format!("{b:02x}"))
                .collect();
            let flows = c.flow.flows.iter().map(|f| (f.name.clone(), f.weight)).collect();
            let draft = Draft {
                load: c.load,
                stop: c.stop,
                names: c.names,
                part_of: c.part_of,
                segments: c.segments,
                target: Target::Scenario(ScenarioSource {
                    path: file.to_string(),
                    sha256,
                    flows,
                    grpc: c.grpc_names,
                }),
                connection: c.connection,
                threads: None,
                shard: None,
                collected: false,
                thresholds: c.thresholds,
                stop_when: c.stop_when,
                monitor: c.monitor,
                monitor_interval: c.monitor_interval,
                log_requests: c.log_requests,
                on_cap: c.on_cap,
                shape: c.shape,
                provenance: crest_model::results::Provenance {
                    label: c.label,
                    ..Default::default()
                },
            };
            Ok(Drafted {
                draft,
                flow: FlowDraft {
                    file: file.to_string(),
                    flow: c.flow,
                    endpoints: c.endpoints,
                    described: c.described,
                },
                warnings: cx.warnings,
                files: cx.files,
            })
        }
        _ => Err(fail(if problems.is_empty() {
            vec![Problem {
                at: None,
                message: "the scenario is not valid".into(),
                hint: None,
            }]
        } else {
            problems
        })),
    }
}

/// Deepest nesting of YAML lists and mappings a scenario may have: 32 nested loops need about
/// 100 levels. Building the node tree recurses once per level, so deeper input is refused
/// before it is built, from the parser's events, which come without recursion.
pub const MAX_YAML_DEPTH: usize = 128;

fn check_depth(text: &str) -> Result<(), Problem> {
    use yaml_rust2::parser::{Event, Parser};
    let mut parser = Parser::new_from_str(text);
    let mut depth = 0usize;
    loop {
        // Syntax errors are left to the loader, which describes them.
        let Ok((event, mark)) = parser.next_token() else {
            return Ok(());
        };
        match event {
            Event::SequenceStart(..) | Event::MappingStart(..) => {
                depth += 1;
                if depth > MAX_YAML_DEPTH {
                    return Err(Problem {
                        at: Some((mark.line(), mark.col() + 1)),
                        message: format!("lists and mappings nest deeper than {MAX_YAML_DEPTH} levels"),
                        hint: Some("loops nest at most 32 deep; see docs/scenario.md".into()),
                    });
                }
            }
            Event::SequenceEnd | Event::MappingEnd => depth = depth.saturating_sub(1),
            Event::StreamEnd => return Ok(()),
            _ => {}
        }
    }
}

/// The JSON Schema of scenario files, from the same types the loader reads.
pub fn json_schema() -> serde_json::Value {
    serde_json::to_value(schemars::schema_for!(raw::Scenario)).unwrap_or(serde_json::Value::Null)
}

fn at(m: &marked_yaml::Marker) -> Option<(usize, usize)> {
    Some((m.line(), m.column()))
}

fn load_error(e: &LoadError) -> Problem {
    let (mark, message) = match e {
        LoadError::TopLevelMustBeMapping(m) => (
            m,
            "the file must be a mapping of keys such as `load:` and `steps:`".to_string(),
        ),
        LoadError::TopLevelMustBeSequence(m) => (m, "expected a list".to_string()),
        LoadError::UnexpectedAnchor(m) => (m, "YAML anchors and aliases are not supported".to_string()),
        LoadError::MappingKeyMustBeScalar(m) => (m, "keys must be plain words".to_string()),
        LoadError::UnexpectedTag(m) => (m, "YAML tags are not supported".to_string()),
        LoadError::ScanError(m, s) => (m, format!("not valid YAML: {s}")),
        LoadError::DuplicateKey(d) => {
            return Problem {
                at: d.key.span().start().and_then(at),
                message: format!("`{}` is given twice", d.key.as_str()),
                hint: None,
            }
        }
    };
    Problem {
        at: at(mark),
        message,
        hint: None,
    }
}

fn node_error(e: &marked_yaml::FromNodeError, root: &marked_yaml::Node) -> Problem {
    let path = e
        .path()
        .filter(|p| !p.is_empty() && *p != ".")
        .map(|p| format!("{p}: "));
    let prefix = path.unwrap_or_default();
    // The error's own mark is its container's; the path leads to the exact key or value.
    let loc = e
        .path()
        .and_then(|p| locate(root, p))
        .or_else(|| e.start_mark().as_ref().and_then(at));
    match &**e {
        YamlError::UnknownFieldError(field, expected, _) => Problem {
            at: loc,
            message: format!("{prefix}unknown key `{field}`"),
            hint: error::did_you_mean(field, expected.iter().copied())
                .or_else(|| Some(format!("the keys here are {}", expected.join(", ")))),
        },
        YamlError::IntegerParseFailure(why, _) => {
            use std::num::IntErrorKind;
            let text = found(root, e.path());
            let negative = text.trim_matches('`').parse::<i128>().is_ok_and(|n| n < 0);
            let want = match why.kind() {
                IntErrorKind::PosOverflow => "a smaller whole number",
                IntErrorKind::NegOverflow => "a larger whole number",
                // A field that counts takes no sign.
                _ if negative => "a whole number of 0 or more",
                _ => "a whole number",
            };
            Problem {
                at: loc,
                message: format!("{prefix}expected {want}, found {text}"),
                hint: None,
            }
        }
        YamlError::FloatParseFailure(..) => Problem {
            at: loc,
            message: format!("{prefix}expected a number, found {}", found(root, e.path())),
            hint: None,
        },
        YamlError::NotBoolean(_) => Problem {
            at: loc,
            message: format!("{prefix}expected true or false, found {}", found(root, e.path())),
            hint: None,
        },
        other => {
            let text = other.to_string();
            let hint = text
                .contains("did not match any variant")
                .then(|| "see docs/scenario.md for the forms this key takes".to_string());
            Problem {
                at: loc,
                message: format!("{prefix}{text}"),
                hint,
            }
        }
    }
}

/// The scalar at a serde path as written, quoted for a message: `2.5`; `a value` when it is
/// not a scalar or cannot be found.
fn found(root: &marked_yaml::Node, path: Option<&str>) -> String {
    path.and_then(|p| walk(root, p))
        .and_then(|(n, _)| n.as_scalar().map(|s| s.as_str().to_string()))
        .map(|s| format!("`{}`", s.chars().take(40).collect::<String>()))
        .unwrap_or_else(|| "a value".to_string())
}

/// Finds where the value (or, for a key that has none, the key) at a serde path such as
/// `steps[0].request.methd` was written.
fn locate(root: &marked_yaml::Node, path: &str) -> Option<(usize, usize)> {
    walk(root, path).and_then(|(_, mark)| mark.as_ref().and_then(at))
}

/// The node at a serde path, and where it (or its key) was written.
fn walk<'a>(root: &'a marked_yaml::Node, path: &str) -> Option<(&'a marked_yaml::Node, Option<marked_yaml::Marker>)> {
    let mut node = root;
    let mut segments: Vec<&str> = Vec::new();
    for part in path.split('.') {
        let mut rest = part;
        while let Some(i) = rest.find('[') {
            if i > 0 {
                segments.push(&rest[..i]);
            }
            let end = rest[i..].find(']')? + i;
            segments.push(&rest[i..=end]);
            rest = &rest[end + 1..];
        }
        if !rest.is_empty() {
            segments.push(rest);
        }
    }
    let mut mark = None;
    for seg in segments {
        if let Some(idx) = seg.strip_prefix('[').and_then(|s| s.strip_suffix(']')) {
            node = node.as_sequence()?.get_node(idx.parse().ok()?)?;
            mark = node.span().start().copied();
        } else {
            let map = node.as_mapping()?;
            let (key, value) = map.iter().find(|(k, _)| k.as_str() == seg)?;
            mark = key.span().start().copied();
            node = value;
        }
    }
    Some((node, mark))
}
