//! Taking values out of responses, and checking responses.

use crest_http::Response;
use regex::Regex;
pub use serde_json_path::JsonPath;
use std::time::Duration;

/// Why an extractor found no value or a check failed: what the report quotes as the example of
/// the failure, so its words name the query and what was found instead.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
pub enum Mismatch {
    /// A JSONPath query ran on a body that is not JSON.
    #[error("the body is not JSON ({0})")]
    NotJson(String),
    /// A query (JSONPath as written, or /regex/) found nothing.
    #[error("{0} matched nothing")]
    NoMatch(String),
    /// A JSONPath check found nothing where it expected a value (quoted).
    #[error("{query} matched nothing; expected {expected}")]
    NoMatchExpected {
        /// The query as written.
        query: String,
        /// The expected value, quoted.
        expected: String,
    },
    /// A JSONPath check found another value; both quoted.
    #[error("{query} is {got}, expected {expected}")]
    NotEqual {
        /// The query as written.
        query: String,
        /// The value found, quoted.
        got: String,
        /// The expected value, quoted.
        expected: String,
    },
    /// A JSONPath check of a secret-named field (`$.token`) found another value: neither is
    /// quoted, since either may be a credential.
    #[error("{query} is not the expected value (neither is shown: the name looks secret)")]
    SecretNotEqual {
        /// The query as written.
        query: String,
    },
    /// The response has no such header.
    #[error("no {0} header")]
    NoHeader(String),
    /// The status is none of those allowed.
    #[error("status {got} is not one of {allowed:?}")]
    Status {
        /// The response's status.
        got: u16,
        /// The statuses the check allows.
        allowed: Vec<u16>,
    },
    /// The body lacks the text (quoted).
    #[error("the body does not contain {0}")]
    BodyLacks(String),
    /// The request took at least its limit.
    #[error("took {took_ms} ms, limit {limit_ms} ms")]
    TooSlow {
        /// What it took.
        took_ms: u128,
        /// The limit.
        limit_ms: u128,
    },
}

/// A pattern in a scenario that does not compile.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
pub enum PatternError {
    /// The JSONPath query is not valid.
    #[error("{text:?} is not a valid JSONPath: {reason}")]
    JsonPath {
        /// The query as written.
        text: String,
        /// The parser's reason.
        reason: String,
    },
    /// The regular expression is not valid.
    #[error("{text:?} is not a valid regular expression: {reason}")]
    Regex {
        /// The expression as written.
        text: String,
        /// The parser's reason.
        reason: String,
    },
}

/// Where a value comes from.
#[derive(Debug)]
pub enum Extractor {
    /// A JSONPath query on the body; the first match. Strings are taken as they are, other
    /// values as JSON text.
    Json {
        /// The compiled query.
        path: JsonPath,
        /// The query as written, for messages.
        text: String,
    },
    /// Every match of a JSONPath query, as the JSON text of an array (for a `foreach`); no
    /// match is an empty array, not a failure.
    JsonAll {
        /// The compiled query.
        path: JsonPath,
    },
    /// The first capture group of a regular expression on the body (the whole match if it has
    /// no groups).
    Regex(Regex),
    /// A response header.
    Header(String),
    /// The status code.
    Status,
}

impl Extractor {
    /// A JSONPath extractor; the error says what is wrong with the path.
    pub fn json(path: &str) -> Result<Self, PatternError> {
        JsonPath::parse(path)
            .map(|p| Extractor::Json {
                path: p,
                text: path.to_string(),
            })
            .map_err(|e| PatternError::JsonPath {
                text: path.to_string(),
                reason: e.to_string(),
            })
    }

    /// Every match of a JSONPath, as a JSON array.
    pub fn json_all(path: &str) -> Result<Self, PatternError> {
        match Extractor::json(path)? {
            Extractor::Json { path, .. } => Ok(Extractor::JsonAll { path }),
            other => Ok(other),
        }
    }

    /// A regex extractor.
    pub fn regex(re: &str) -> Result<Self, PatternError> {
        Regex::new(re).map(Extractor::Regex).map_err(|e| PatternError::Regex {
            text: re.to_string(),
            reason: e.to_string(),
        })
    }

    /// The value, or why there is none.
    pub fn extract(&self, r: &Response, json: &mut LazyJson) -> Result<String, Mismatch> {
        match self {
            Extractor::JsonAll { path } => {
                let v = json.get(r)?;
                let all: Vec<&serde_json::Value> = path.query(v).all();
                Ok(serde_json::to_string(&all).unwrap_or_default())
            }
            Extractor::Json { path, text } => {
                let v = json.get(r)?;
                match path.query(v).first() {
                    Some(serde_json::Value::String(s)) => Ok(s.clone()),
                    Some(other) => Ok(other.to_string()),
                    None => Err(Mismatch::NoMatch(text.clone())),
                }
            }
            Extractor::Regex(re) => {
                let body = String::from_utf8_lossy(&r.body);
                let nothing = || Mismatch::NoMatch(format!("/{}/", re.as_str()));
                let caps = re.captures(&body).ok_or_else(nothing)?;
                let m = caps.get(1).or_else(|| caps.get(0)).map(|m| m.as_str().to_string());
                m.ok_or_else(nothing)
            }
            Extractor::Header(h) => r
                .header(h)
                .map(str::to_string)
                .ok_or_else(|| Mismatch::NoHeader(h.clone())),
            Extractor::Status => Ok(r.status.to_string()),
        }
    }
}

/// The body parsed as JSON once, on first use, and shared by every extractor and check.
#[derive(Debug, Default)]
pub struct LazyJson(Option<Result<serde_json::Value, Mismatch>>);

impl LazyJson {
    /// The parsed body, or why it is not JSON.
    pub fn get(&mut self, r: &Response) -> Result<&serde_json::Value, Mismatch> {
        let parsed = self
            .0
            .get_or_insert_with(|| serde_json::from_slice(&r.body).map_err(|e| Mismatch::NotJson(e.to_string())));
        parsed.as_ref().map_err(Clone::clone)
    }
}

/// A condition on a response.
#[derive(Debug)]
pub enum Check {
    /// The status is one of these.
    Status(Vec<u16>),
    /// A JSONPath query's first match equals this text (strings compare as they are, other
    /// values as JSON text).
    JsonEquals {
        /// The compiled query.
        path: JsonPath,
        /// The query as written, for messages.
        text: String,
        /// The value it must have.
        expected: String,
    },
    /// A JSONPath query matches something.
    JsonExists {
        /// The compiled query.
        path: JsonPath,
        /// The query as written, for messages.
        text: String,
    },
    /// The body contains this text.
    BodyContains(String),
    /// The request took less than this.
    DurationBelow(Duration),
}

/// Longest value quoted in a check message.
const QUOTE: usize = 64;

fn quote(s: &str) -> String {
    if s.len() <= QUOTE {
        format!("{s:?}")
    } else {
        let mut cut = QUOTE;
        while !s.is_char_boundary(cut) {
            cut -= 1;
        }
        format!("{:?}…", &s[..cut])
    }
}

impl Check {
    /// Ok, or a message saying what was found instead.
    pub fn check(&self, r: &Response, took: Duration, json: &mut LazyJson) -> Result<(), Mismatch> {
        match self {
            Check::Status(ok) => {
                if ok.contains(&r.status) {
                    Ok(())
                } else {
                    Err(Mismatch::Status {
                        got: r.status,
                        allowed: ok.clone(),
                    })
                }
            }
            Check::JsonEquals { path, text, expected } => {
                let v = json.get(r)?;
                let got = match path.query(v).first() {
                    Some(serde_json::Value::String(s)) => s.clone(),
                    Some(other) => other.to_string(),
                    None => {
                        return Err(Mismatch::NoMatchExpected {
                            query: text.clone(),
                            expected: if crest_model::redact::is_secret_name(text) {
                                crest_model::redact::REDACTED.to_string()
                            } else {
                                quote(expected)
                            },
                        })
                    }
                };
                if &got == expected {
                    Ok(())
                } else if crest_model::redact::is_secret_name(text) {
                    Err(Mismatch::SecretNotEqual { query: text.clone() })
                } else {
                    Err(Mismatch::NotEqual {
                        query: text.clone(),
                        got: quote(&got),
                        expected: quote(expected),
                    })
                }
            }
            Check::JsonExists { path, text } => {
                let v = json.get(r)?;
                if path.query(v).is_empty() {
                    Err(Mismatch::NoMatch(text.clone()))
                } else {
                    Ok(())
                }
            }
            Check::BodyContains(needle) => {
                let found = r.body.windows(needle.len().max(1)).any(|w| w == needle.as_bytes());
                if found || needle.is_empty() {
                    Ok(())
                } else {
                    Err(Mismatch::BodyLacks(quote(needle)))
                }
            }
            Check::DurationBelow(limit) => {
                if took < *limit {
                    Ok(())
                } else {
                    Err(Mismatch::TooSlow {
                        took_ms: took.as_millis(),
                        limit_ms: limit.as_millis(),
                    })
                }
            }
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn resp(status: u16, body: &str) -> Response {
        Response {
            status,
            headers: vec![("Location".into(), "/tasks/7".into())],
            body: body.as_bytes().to_vec(),
            truncated: false,
        }
    }

    #[test]
    fn extractors_find_values_or_say_why_not() {
        let r = resp(201, r#"{"id": 42, "task": {"status": "QUEUED"}, "tags": ["a"]}"#);
        let mut j = LazyJson::default();
        assert_eq!(Extractor::json("$.id").unwrap().extract(&r, &mut j).unwrap(), "42");
        assert_eq!(
            Extractor::json("$.task.status").unwrap().extract(&r, &mut j).unwrap(),
            "QUEUED"
        );
        assert_eq!(
            Extractor::json("$.tags").unwrap().extract(&r, &mut j).unwrap(),
            r#"["a"]"#
        );
        assert!(Extractor::json("$.nope")
            .unwrap()
            .extract(&r, &mut j)
            .unwrap_err()
            .to_string()
            .contains("matched nothing"));
        assert!(Extractor::json("$[").is_err());
        assert_eq!(
            Extractor::regex(r#""id": (\d+)"#).unwrap().extract(&r, &mut j).unwrap(),
            "42"
        );
        assert_eq!(
            Extractor::Header("location".into()).extract(&r, &mut j).unwrap(),
            "/tasks/7"
        );
        assert_eq!(Extractor::Status.extract(&r, &mut j).unwrap(), "201");
        assert_eq!(
            Extractor::json_all("$..status").unwrap().extract(&r, &mut j).unwrap(),
            r#"["QUEUED"]"#
        );
        assert_eq!(
            Extractor::json_all("$.nope").unwrap().extract(&r, &mut j).unwrap(),
            "[]"
        );
        let mut j2 = LazyJson::default();
        assert!(Extractor::json("$.id")
            .unwrap()
            .extract(&resp(200, "<html>"), &mut j2)
            .unwrap_err()
            .to_string()
            .contains("not JSON"));
    }

    #[test]
    fn checks_pass_or_explain() {
        let r = resp(200, r#"{"status": "FAILED"}"#);
        let mut j = LazyJson::default();
        let path = JsonPath::parse("$.status").unwrap();
        let eq = Check::JsonEquals {
            path,
            text: "$.status".into(),
            expected: "SUCCEEDED".into(),
        };
        assert_eq!(
            eq.check(&r, Duration::ZERO, &mut j).unwrap_err().to_string(),
            r#"$.status is "FAILED", expected "SUCCEEDED""#
        );
        assert!(Check::Status(vec![200, 201]).check(&r, Duration::ZERO, &mut j).is_ok());
        assert!(Check::Status(vec![201]).check(&r, Duration::ZERO, &mut j).is_err());
        assert!(Check::BodyContains("FAIL".into())
            .check(&r, Duration::ZERO, &mut j)
            .is_ok());
        assert!(Check::DurationBelow(Duration::from_millis(5))
            .check(&r, Duration::from_millis(9), &mut j)
            .is_err());
    }
}
