//! Numbers and durations of `load:` written as templates (`threads: ${env:THREADS}`), so that a
//! sweep (whose parameters are read as `${env:NAME}`) or the environment can set the load.
//!
//! They are substituted in the parsed document before it is read into its types, so each value
//! is then checked as if it had been written out: `threads` must be a whole number whether it
//! was typed or substituted. Only the environment may be read here: a load is fixed before the
//! first user starts, and has no user, iteration or response to read from.

use super::vars::NoScope;
use crate::error::Problem;
use crest_flow::template::Template;
use marked_yaml::types::{MarkedScalarNode, Node};

/// A value of `load:` that was substituted: where it stands (the serde path that errors name)
/// and the template as written, so an error about the value can quote what the user wrote.
#[derive(Debug)]
pub(crate) struct Substituted {
    pub path: String,
    pub template: String,
}

/// Substitutes every template under the top-level `load:` key in place.
pub(crate) fn substitute_load(
    root: &mut Node,
    env: &dyn Fn(&str) -> Option<String>,
) -> Result<Vec<Substituted>, Vec<Problem>> {
    let mut done = Vec::new();
    let mut problems = Vec::new();
    let Some(map) = root.as_mapping_mut() else {
        return Ok(done);
    };
    for (key, value) in map.iter_mut() {
        if key.as_str() == "load" {
            walk(value, "load".to_string(), env, &mut done, &mut problems);
        }
    }
    if problems.is_empty() {
        Ok(done)
    } else {
        Err(problems)
    }
}

fn walk(
    node: &mut Node,
    path: String,
    env: &dyn Fn(&str) -> Option<String>,
    done: &mut Vec<Substituted>,
    problems: &mut Vec<Problem>,
) {
    match node {
        Node::Mapping(m) => {
            for (k, v) in m.iter_mut() {
                walk(v, format!("{path}.{}", k.as_str()), env, done, problems);
            }
        }
        Node::Sequence(s) => {
            for (i, v) in s.iter_mut().enumerate() {
                walk(v, format!("{path}[{i}]"), env, done, problems);
            }
        }
        Node::Scalar(s) => {
            if !s.as_str().contains("${") {
                return;
            }
            let at = s.span().start().map(|m| (m.line(), m.column()));
            let text = s.as_str().to_string();
            let template = match Template::parse(&text, env) {
                Ok(t) => t,
                Err(e) => {
                    problems.push(Problem {
                        at,
                        message: format!("{path}: in {text:?}: {}", e.message),
                        hint: None,
                    });
                    return;
                }
            };
            if !template.is_constant() {
                let what = template
                    .vars()
                    .first()
                    .map_or_else(|| "a function".to_string(), |v| format!("`{v}`"));
                problems.push(Problem {
                    at,
                    message: format!("{path}: {text:?} reads {what}, which has no value before the run starts"),
                    hint: Some(
                        "a load may read the environment (`${env:NAME}`) and sweep parameters, nothing else".into(),
                    ),
                });
                return;
            }
            let value = template.render(&NoScope::default());
            let value = value.trim();
            let key = path.rsplit(['.', '[']).next().unwrap_or_default();
            if let Some(kind) = Kind::of(key) {
                if !kind.accepts(value) {
                    // The value is not quoted: it may come from the environment, where secrets live.
                    problems.push(Problem {
                        at,
                        message: format!("{path}: {text} is not {} once substituted", kind.what()),
                        hint: Some(kind.hint().into()),
                    });
                    return;
                }
            }
            // Written as it would have been typed, so YAML's own reading of numbers applies.
            *s = MarkedScalarNode::new(*s.span(), value);
            done.push(Substituted { path, template: text });
        }
    }
}

/// What a key of `load:` holds, so a substituted value is checked before it takes its type.
#[derive(Clone, Copy)]
enum Kind {
    Count,
    Rate,
    Duration,
}

impl Kind {
    fn of(key: &str) -> Option<Kind> {
        Some(match key {
            "users" | "start_users" | "threads" | "loops" | "run_once" | "max_in_flight" | "iterations" | "start"
            | "step" | "max" => Kind::Count,
            "rate" | "start_rate" | "to" | "ramp_to" => Kind::Rate,
            "duration" | "ramp_up" | "over" | "hold" | "every" | "after" | "for" | "then" => Kind::Duration,
            _ => return None,
        })
    }

    fn accepts(self, v: &str) -> bool {
        match self {
            Kind::Count => v.parse::<u64>().is_ok(),
            Kind::Rate => v.parse::<f64>().is_ok_and(|r| r.is_finite() && r >= 0.0),
            Kind::Duration => super::parse_duration_str(v).is_some(),
        }
    }

    fn what(self) -> &'static str {
        match self {
            Kind::Count => "a whole number",
            Kind::Rate => "a number",
            Kind::Duration => "a duration",
        }
    }

    fn hint(self) -> &'static str {
        match self {
            Kind::Count => "e.g. THREADS=25",
            Kind::Rate => "e.g. RATE=250 or 12.5",
            Kind::Duration => "e.g. 250ms, 10s, 5m",
        }
    }
}

/// The template that gave the value at `path`, when one did.
pub(crate) fn template_at<'s>(done: &'s [Substituted], path: &str) -> Option<&'s str> {
    done.iter().find(|d| d.path == path).map(|d| d.template.as_str())
}
