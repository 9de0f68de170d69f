//! An [`Imported`] scenario as its files: the scenario's YAML, with comments saying what it was
//! made from, which values it carries between requests and which it reads from the environment,
//! and the dotenv file of those secrets. The same scenario always gives the same text.

use crate::scenario::{Body, Extract, Flow, Imported, Part, Request, Step};
use crate::ImportError;
use indexmap::IndexMap;
use serde::Serialize;

/// The text of an import's files.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Files {
    /// The scenario, YAML.
    pub scenario: String,
    /// The secrets taken out of it, dotenv; `None` when there are none.
    pub env: Option<String>,
}

/// The files of `imported`; `scenario_file` and `env_file` are the names they will have, said in
/// the scenario's comment on how to run it (`env_file` is `None` when no dotenv file will be
/// written: the scenario is printed).
pub fn files(imported: &Imported, scenario_file: &str, env_file: Option<&str>) -> Result<Files, ImportError> {
    let doc = Doc::of(imported);
    let yaml = serde_saphyr::to_string(&doc).map_err(|e| ImportError::Other(format!("writing the scenario: {e}")))?;
    let mut text = header(imported, scenario_file, env_file);
    text.push_str(&yaml);
    if !text.ends_with('\n') {
        text.push('\n');
    }
    let env = (!imported.secrets.is_empty()).then(|| imported.secrets.dotenv());
    Ok(Files { scenario: text, env })
}

fn header(imported: &Imported, scenario_file: &str, env_file: Option<&str>) -> String {
    let mut out = String::from("# Made by `crest import` from:\n");
    for line in &imported.made_from {
        out.push_str(&format!("#   {}\n", one_line(line)));
    }
    let env = match env_file {
        Some(f) if !imported.secrets.is_empty() => format!(" --env-file {f}"),
        _ => String::new(),
    };
    out.push_str(&format!(
        "# One user sends each request once; set the load at run time, e.g.\n#   crest run {scenario_file}{env} -c 10 -d 1m\n# and the target with CREST_TARGET (default: {}).\n",
        imported.origin
    ));
    if !imported.correlated.is_empty() {
        out.push_str("#\n# Values carried from a response to the requests that send them back:\n");
        for c in &imported.correlated {
            out.push_str(&format!("#   ${{{}}}: from {}", c.variable, one_line(&c.from)));
            if !c.to.is_empty() {
                out.push_str(&format!("; sent in {}", one_line(&c.to.join(", "))));
            }
            out.push('\n');
        }
    }
    if !imported.secrets.is_empty() {
        let kept = match env_file {
            Some(f) => format!("the values found are in {f}, never in this file"),
            None => "set them, or import with --out to have the values found written to a .env file".to_string(),
        };
        out.push_str(&format!("#\n# Read from the environment ({kept}):\n"));
        for s in imported.secrets.iter() {
            out.push_str(&format!("#   ${{env:{}}}: {}\n", s.name, one_line(&s.from)));
        }
    }
    if !imported.notes.is_empty() {
        out.push_str("#\n");
        for n in &imported.notes {
            out.push_str(&format!("# {}\n", one_line(n)));
        }
    }
    out
}

fn one_line(s: &str) -> String {
    s.replace(['\n', '\r'], " ")
}

/// The scenario's keys, in the order a reader looks for them.
#[derive(Serialize)]
struct Doc<'a> {
    target: String,
    #[serde(skip_serializing_if = "Option::is_none")]
    defaults: Option<DocDefaults<'a>>,
    #[serde(skip_serializing_if = "Option::is_none")]
    steps: Option<Vec<DocStep<'a>>>,
    #[serde(skip_serializing_if = "Option::is_none")]
    flows: Option<Vec<DocFlow<'a>>>,
    load: DocLoad,
}

#[derive(Serialize)]
struct DocDefaults<'a> {
    #[serde(skip_serializing_if = "IndexMap::is_empty")]
    headers: &'a IndexMap<String, String>,
    #[serde(skip_serializing_if = "std::ops::Not::not")]
    insecure: bool,
    #[serde(skip_serializing_if = "Option::is_none")]
    redirects: Option<u32>,
    #[serde(skip_serializing_if = "std::ops::Not::not")]
    compression: bool,
    #[serde(skip_serializing_if = "Option::is_none")]
    cookies: Option<bool>,
    #[serde(skip_serializing_if = "Option::is_none")]
    http: Option<&'a str>,
}

#[derive(Serialize)]
struct DocFlow<'a> {
    name: &'a str,
    steps: Vec<DocStep<'a>>,
}

#[derive(Serialize)]
#[serde(rename_all = "snake_case")]
enum DocStep<'a> {
    Request(Box<DocRequest<'a>>),
    Think(String),
}

#[derive(Serialize)]
struct DocRequest<'a> {
    #[serde(skip_serializing_if = "Option::is_none")]
    name: Option<&'a str>,
    method: &'a str,
    #[serde(skip_serializing_if = "Option::is_none")]
    path: Option<&'a str>,
    #[serde(skip_serializing_if = "Option::is_none")]
    url: Option<&'a str>,
    #[serde(skip_serializing_if = "IndexMap::is_empty")]
    headers: &'a IndexMap<String, String>,
    #[serde(skip_serializing_if = "Option::is_none")]
    json: Option<&'a serde_json::Value>,
    #[serde(skip_serializing_if = "Option::is_none")]
    body: Option<&'a str>,
    #[serde(skip_serializing_if = "Option::is_none")]
    form: Option<&'a IndexMap<String, String>>,
    #[serde(skip_serializing_if = "Option::is_none")]
    body_file: Option<&'a str>,
    #[serde(skip_serializing_if = "Option::is_none")]
    multipart: Option<Vec<DocPart<'a>>>,
    #[serde(skip_serializing_if = "IndexMap::is_empty")]
    extract: IndexMap<&'a str, DocExtract<'a>>,
    #[serde(skip_serializing_if = "Option::is_none")]
    check: Option<DocCheck<'a>>,
}

#[derive(Serialize)]
struct DocPart<'a> {
    name: &'a str,
    #[serde(skip_serializing_if = "Option::is_none")]
    value: Option<&'a str>,
    #[serde(skip_serializing_if = "Option::is_none")]
    file: Option<&'a str>,
    #[serde(skip_serializing_if = "Option::is_none")]
    content_type: Option<&'a str>,
}

#[derive(Serialize)]
#[serde(rename_all = "snake_case")]
enum DocExtract<'a> {
    Json(&'a str),
    Header(&'a str),
    Regex(&'a str),
}

#[derive(Serialize)]
struct DocCheck<'a> {
    status: &'a [u16],
}

/// An import runs what was recorded once, by one user: the user sets the load at run time
/// (`crest run FILE -c 10 -d 1m`). A constant load, not threads x loops (a profile), so that
/// the run's flags may replace it.
#[derive(Serialize)]
struct DocLoad {
    users: u64,
    iterations: u64,
}

impl<'a> Doc<'a> {
    fn of(imported: &'a Imported) -> Doc<'a> {
        let d = &imported.defaults;
        let defaults = (!d.headers.is_empty()
            || d.insecure
            || d.redirects.is_some()
            || d.compression
            || d.cookies.is_some()
            || d.http.is_some())
        .then_some(DocDefaults {
            headers: &d.headers,
            insecure: d.insecure,
            redirects: d.redirects,
            compression: d.compression,
            cookies: d.cookies,
            http: d.http.as_deref(),
        });
        let (steps, flows) = match imported.flows.as_slice() {
            [one] => (Some(steps(one)), None),
            many => (
                None,
                Some(
                    many.iter()
                        .map(|f| DocFlow {
                            name: &f.name,
                            steps: steps(f),
                        })
                        .collect(),
                ),
            ),
        };
        Doc {
            target: format!("${{env:CREST_TARGET:-{}}}", imported.origin),
            defaults,
            steps,
            flows,
            load: DocLoad {
                users: 1,
                iterations: 1,
            },
        }
    }
}

fn steps(flow: &Flow) -> Vec<DocStep<'_>> {
    flow.steps
        .iter()
        .map(|s| match s {
            Step::Request(r) => DocStep::Request(Box::new(request(r))),
            Step::Think(ms) => DocStep::Think(format!("{ms}ms")),
        })
        .collect()
}

fn request(r: &Request) -> DocRequest<'_> {
    let mut doc = DocRequest {
        name: r.name.as_deref(),
        method: &r.method,
        path: r.path.as_deref(),
        url: r.url.as_deref(),
        headers: &r.headers,
        json: None,
        body: None,
        form: None,
        body_file: None,
        multipart: None,
        extract: r
            .extract
            .iter()
            .map(|(k, e)| {
                let e = match e {
                    Extract::Json(p) => DocExtract::Json(p),
                    Extract::Header(h) => DocExtract::Header(h),
                    Extract::Regex(x) => DocExtract::Regex(x),
                };
                (k.as_str(), e)
            })
            .collect(),
        check: (!r.status.is_empty()).then_some(DocCheck { status: &r.status }),
    };
    match &r.body {
        None => {}
        Some(Body::Json(v)) => doc.json = Some(v),
        Some(Body::Text(t)) => doc.body = Some(t),
        Some(Body::Form(f)) => doc.form = Some(f),
        Some(Body::File(f)) => doc.body_file = Some(f),
        Some(Body::Multipart(parts)) => doc.multipart = Some(parts.iter().map(part).collect()),
    }
    doc
}

fn part(p: &Part) -> DocPart<'_> {
    DocPart {
        name: &p.name,
        value: p.value.as_deref(),
        file: p.file.as_deref(),
        content_type: p.content_type.as_deref(),
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::scenario::Correlation;

    fn sample() -> Imported {
        let mut imported = Imported {
            made_from: vec!["curl https://api.example.com/orders".into()],
            origin: "https://api.example.com".into(),
            ..Imported::default()
        };
        let auth = imported
            .secrets
            .keep_or_hide("Authorization", "Bearer s3cret", "header Authorization of step 1");
        let mut post = Request {
            method: "POST".into(),
            path: Some("/orders".into()),
            body: Some(Body::Json(serde_json::json!({"qty": 2, "note": "1"}))),
            status: vec![201],
            ..Request::default()
        };
        post.headers.insert("Authorization".into(), auth);
        post.extract.insert("order_id".into(), Extract::Json("$.id".into()));
        let get = Request {
            method: "GET".into(),
            path: Some("/orders/${order_id}".into()),
            ..Request::default()
        };
        imported.flows.push(Flow {
            name: "main".into(),
            steps: vec![
                Step::Request(Box::new(post)),
                Step::Think(1500),
                Step::Request(Box::new(get)),
            ],
        });
        imported.correlated.push(Correlation {
            variable: "order_id".into(),
            from: "$.id of POST /orders (step 1)".into(),
            to: vec!["the path of GET /orders/{order_id} (step 2)".into()],
        });
        imported
    }

    #[test]
    fn a_scenario_is_written_with_its_secrets_apart() {
        let files = files(&sample(), "orders.yaml", Some("orders.env")).unwrap();
        let text = &files.scenario;
        assert!(text.starts_with("# Made by `crest import` from:\n#   curl https://api.example.com/orders\n"));
        assert!(
            text.contains("target: ${env:CREST_TARGET:-https://api.example.com}"),
            "{text}"
        );
        assert!(
            text.contains("crest run orders.yaml --env-file orders.env -c 10"),
            "{text}"
        );
        assert!(
            text.contains("${order_id}: from $.id of POST /orders (step 1)"),
            "{text}"
        );
        assert!(!text.contains("s3cret"), "{text}");
        assert!(text.contains("think: 1500ms"), "{text}");
        // A string that looks like a number stays a string.
        assert!(text.contains("note: '1'") || text.contains("note: \"1\""), "{text}");
        let env = files.env.unwrap();
        assert!(env.contains("AUTHORIZATION='Bearer s3cret'"), "{env}");
    }

    // Deterministic: the same scenario gives the same bytes.
    #[test]
    fn the_same_import_gives_the_same_text() {
        assert_eq!(
            files(&sample(), "a.yaml", Some("a.env")).unwrap(),
            files(&sample(), "a.yaml", Some("a.env")).unwrap()
        );
    }
}
