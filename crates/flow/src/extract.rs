//! Taking values out of responses, and checking responses.

use crest_http::Response;
use regex::Regex;
pub use serde_json_path::JsonPath;
use std::time::Duration;

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
    pub fn json(path: &str) -> Result<Self, String> {
        JsonPath::parse(path)
            .map(|p| Extractor::Json {
                path: p,
                text: path.to_string(),
            })
            .map_err(|e| format!("{path:?} is not a valid JSONPath: {e}"))
    }

    /// A regex extractor.
    pub fn regex(re: &str) -> Result<Self, String> {
        Regex::new(re)
            .map(Extractor::Regex)
            .map_err(|e| format!("{re:?} is not a valid regular expression: {e}"))
    }

    /// The value, or why there is none.
    pub fn extract(&self, r: &Response, json: &mut LazyJson) -> Result<String, String> {
        match self {
            Extractor::Json { path, text } => {
                let v = json.get(r)?;
                match path.query(v).first() {
                    Some(serde_json::Value::String(s)) => Ok(s.clone()),
                    Some(other) => Ok(other.to_string()),
                    None => Err(format!("{text} matched nothing")),
                }
            }
            Extractor::Regex(re) => {
                let body = String::from_utf8_lossy(&r.body);
                let caps = re
                    .captures(&body)
                    .ok_or_else(|| format!("/{}/ matched nothing", re.as_str()))?;
                let m = caps.get(1).or_else(|| caps.get(0)).map(|m| m.as_str().to_string());
                m.ok_or_else(|| format!("/{}/ matched nothing", re.as_str()))
            }
            Extractor::Header(h) => r.header(h).map(str::to_string).ok_or_else(|| format!("no {h} header")),
            Extractor::Status => Ok(r.status.to_string()),
        }
    }
}

/// The body parsed as JSON once, on first use, and shared by every extractor and check.
#[derive(Debug, Default)]
pub struct LazyJson(Option<Result<serde_json::Value, String>>);

impl LazyJson {
    /// The parsed body, or why it is not JSON.
    pub fn get(&mut self, r: &Response) -> Result<&serde_json::Value, String> {
        let parsed = self
            .0
            .get_or_insert_with(|| serde_json::from_slice(&r.body).map_err(|e| format!("the body is not JSON ({e})")));
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
    pub fn check(&self, r: &Response, took: Duration, json: &mut LazyJson) -> Result<(), String> {
        match self {
            Check::Status(ok) => {
                if ok.contains(&r.status) {
                    Ok(())
                } else {
                    Err(format!("status {} is not one of {ok:?}", r.status))
                }
            }
            Check::JsonEquals { path, text, expected } => {
                let v = json.get(r)?;
                let got = match path.query(v).first() {
                    Some(serde_json::Value::String(s)) => s.clone(),
                    Some(other) => other.to_string(),
                    None => return Err(format!("{text} matched nothing; expected {}", quote(expected))),
                };
                if &got == expected {
                    Ok(())
                } else {
                    Err(format!("{text} is {}, expected {}", quote(&got), quote(expected)))
                }
            }
            Check::JsonExists { path, text } => {
                let v = json.get(r)?;
                if path.query(v).is_empty() {
                    Err(format!("{text} matched nothing"))
                } else {
                    Ok(())
                }
            }
            Check::BodyContains(needle) => {
                let found = r.body.windows(needle.len().max(1)).any(|w| w == needle.as_bytes());
                if found || needle.is_empty() {
                    Ok(())
                } else {
                    Err(format!("the body does not contain {}", quote(needle)))
                }
            }
            Check::DurationBelow(limit) => {
                if took < *limit {
                    Ok(())
                } else {
                    Err(format!("took {} ms, limit {} ms", took.as_millis(), limit.as_millis()))
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
        let mut j2 = LazyJson::default();
        assert!(Extractor::json("$.id")
            .unwrap()
            .extract(&resp(200, "<html>"), &mut j2)
            .unwrap_err()
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
            eq.check(&r, Duration::ZERO, &mut j).unwrap_err(),
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
