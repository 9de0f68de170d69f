//! Automatic correlation: a value a response handed out (a JSON field, a header, a hidden
//! input) that a later request sends back becomes an extract on that response and `${name}` in
//! the request, so every user of a run sends its own fresh value instead of the recorded one.

use super::html;
use crate::snake;
use crate::Extract;
use indexmap::IndexMap;
use serde_json::Value;
use std::collections::{BTreeMap, HashMap, HashSet};

/// Values shorter than this are too likely to turn up by chance (`1`, `en`, `200`).
const MIN_LEN: usize = 5;
/// Responses this large are not searched whole (a JSON body's leaves are capped instead).
const MAX_LEAVES: usize = 20_000;

/// Response headers that describe the response, never a value handed out to be sent back.
const PLAIN_HEADERS: &[&str] = &[
    "date",
    "server",
    "content-type",
    "content-length",
    "content-encoding",
    "content-language",
    "connection",
    "keep-alive",
    "transfer-encoding",
    "vary",
    "cache-control",
    "expires",
    "last-modified",
    "age",
    "pragma",
    "set-cookie",
    "strict-transport-security",
    "x-content-type-options",
    "x-frame-options",
    "x-xss-protection",
    "referrer-policy",
    "alt-svc",
    "via",
    "accept-ranges",
    "report-to",
    "nel",
    "permissions-policy",
    "server-timing",
    "timing-allow-origin",
];

/// Where a value was found in a response.
#[derive(Debug, Clone)]
struct Candidate {
    value: String,
    /// The request (counted from 0) whose response gave it.
    step: usize,
    extract: Extract,
    /// Where, in words (`$.cart.id`, `header X-Request-Token`, `hidden input csrf`).
    what: String,
    /// The variable's name before it is made unique.
    base: String,
    /// A short id (`"id": 7`) is carried only to a place that is all of it (a path segment, a
    /// field), where it cannot be part of something else.
    whole_only: bool,
    /// A `Location` path, carried to the start of a later path.
    location: bool,
    /// How much the browser had sent (bytes of [`Correlator::sent`], requests fed) when the
    /// response came: what it sent before is its own.
    sent_upto: usize,
    fed_at: usize,
}

#[derive(Debug)]
struct Var {
    name: String,
    base: String,
    value: String,
    /// (request, where in its response) of each response that gives it.
    from: Vec<(usize, String)>,
    /// (request, where in it) of each use.
    to: Vec<(usize, String)>,
}

/// The correlation of one recording, fed its requests in order.
#[derive(Debug, Default)]
pub(super) struct Correlator {
    candidates: Vec<Candidate>,
    /// Each value handed out -> its candidates, oldest first.
    by_value: HashMap<String, Vec<usize>>,
    /// The values found inside longer text, by their first bytes: a request's text is read once
    /// whatever the number of values (a recording's JSON responses give hundreds of thousands).
    prefixes: HashMap<Vec<u8>, Vec<String>>,
    /// `Location` paths handed out.
    locations: Vec<String>,
    /// What the browser had sent so far: a value it sent before any response gave it was not
    /// the server's to hand out (a constant, the user's own input).
    sent: String,
    /// ...and each value it sent whole (a path segment, a header, a field), with the number of
    /// requests fed before it.
    sent_values: HashMap<String, usize>,
    fed: usize,
    /// Per request, its own text and whole values (every hop): a value its response echoes is
    /// not handed out.
    own: Vec<(String, HashSet<String>)>,
    /// Whether a candidate is one to carry, worked out when it is first matched: most never are.
    valid: HashMap<usize, bool>,
    vars: Vec<Var>,
    var_of: HashMap<usize, usize>,
    /// Per request, the extracts its response gets.
    extracts: BTreeMap<usize, IndexMap<String, Extract>>,
    /// Per request, its URL's path: a value two responses gave alike (two fresh counters both
    /// at 99) is taken from the one whose resource the later request is about.
    paths: HashMap<usize, String>,
}

/// A place in a request a template goes to.
pub(super) struct Place<'a> {
    pub step: usize,
    /// In words: `the path`, `header X-Token`, `form field csrf`.
    pub what: &'a str,
}

impl Correlator {
    /// Says which path request `step` went to, before its values are templated and its
    /// response read.
    pub fn path_of(&mut self, step: usize, path: &str) {
        self.paths.insert(step, path.to_string());
    }

    /// Adds a request the browser sent (kept or not) to what it had sent.
    pub fn sent(&mut self, text: &str, values: &[String]) {
        self.sent.push_str(text);
        self.sent.push('\n');
        for v in values {
            self.sent_values.entry(v.clone()).or_insert(self.fed);
        }
        self.fed += 1;
    }

    /// The values of the response to request `step`, whose own request (every hop of it) is
    /// `request`: its text and the values it sent whole.
    pub fn response(
        &mut self,
        step: usize,
        request: (&str, &[String]),
        headers: &[(String, String)],
        mime: &str,
        body: Option<&str>,
        location_visible: bool,
    ) {
        let mut found: Vec<Candidate> = Vec::new();
        if let Some(body) = body {
            let mime = mime.to_ascii_lowercase();
            let trimmed = body.trim_start();
            let mut parsed = false;
            if mime.contains("json") || trimmed.starts_with('{') || trimmed.starts_with('[') {
                if let Ok(v) = serde_json::from_str::<Value>(body) {
                    parsed = true;
                    let mut leaves = Vec::new();
                    json_leaves(&v, "$".to_string(), &mut Vec::new(), &mut leaves);
                    for (path, keys, value) in leaves {
                        let id = keys.last().is_some_and(|k| is_id_key(k));
                        let resource = self.paths.get(&step).map(String::as_str);
                        found.push(Candidate {
                            value,
                            step,
                            extract: Extract::Json(path.clone()),
                            what: path,
                            base: json_name(&keys, resource),
                            whole_only: id,
                            location: false,
                            sent_upto: 0,
                            fed_at: 0,
                        });
                    }
                }
            }
            if !parsed {
                let mut fields = if mime.contains("html") || trimmed.starts_with('<') {
                    html::fields(body)
                } else {
                    Vec::new()
                };
                fields.extend(html::embedded_json(body));
                for f in fields {
                    found.push(Candidate {
                        value: f.value,
                        step,
                        extract: Extract::Regex(f.regex),
                        what: f.what,
                        base: snake(&f.name),
                        whole_only: false,
                        location: false,
                        sent_upto: 0,
                        fed_at: 0,
                    });
                }
            }
        }
        for (name, value) in headers {
            let lower = name.to_ascii_lowercase();
            if PLAIN_HEADERS.contains(&lower.as_str())
                || lower.starts_with("access-control-")
                || lower.starts_with("content-security-policy")
                || lower.starts_with("cross-origin-")
                || (lower == "location" && !location_visible)
            {
                continue;
            }
            found.push(Candidate {
                value: value.clone(),
                step,
                extract: Extract::Header(name.clone()),
                what: format!("header {name}"),
                base: snake(name),
                whole_only: false,
                location: lower == "location" && value.starts_with('/'),
                sent_upto: 0,
                fed_at: 0,
            });
        }
        let (request_text, request_values) = request;
        if self.own.len() <= step {
            self.own.resize_with(step + 1, Default::default);
        }
        self.own[step] = (request_text.to_string(), request_values.iter().cloned().collect());
        for mut c in found {
            // A short value is compared whole, a long one wherever it is.
            if worth_carrying(&c.value) {
                c.whole_only = false;
            } else if !(c.whole_only && is_short_id(&c.value)) {
                continue;
            }
            let list = self.by_value.entry(c.value.clone()).or_default();
            // The first place in a response that gives a value is the one extracted.
            if list.last().is_some_and(|&prev| self.candidates[prev].step == step) {
                continue;
            }
            if list.is_empty() {
                if c.location {
                    self.locations.push(c.value.clone());
                } else if !c.whole_only {
                    let key = c.value.as_bytes()[..MIN_LEN].to_vec();
                    self.prefixes.entry(key).or_default().push(c.value.clone());
                }
            }
            list.push(self.candidates.len());
            c.sent_upto = self.sent.len();
            c.fed_at = self.fed;
            self.candidates.push(c);
        }
    }

    /// Whether candidate `ci` is a value the server handed out: not an echo of its own request,
    /// and not sent by the browser before, unless an earlier response handed it out too (then
    /// this one gives it again).
    fn is_valid(&mut self, ci: usize) -> bool {
        if let Some(&v) = self.valid.get(&ci) {
            return v;
        }
        let c = &self.candidates[ci];
        let (own_text, own_values) = &self.own[c.step];
        let (echoed, sent_before) = if c.whole_only {
            (
                own_values.contains(&c.value),
                self.sent_values.get(&c.value).is_some_and(|&at| at < c.fed_at),
            )
        } else {
            (own_text.contains(&c.value), self.sent[..c.sent_upto].contains(&c.value))
        };
        let valid = if echoed {
            false
        } else if !sent_before {
            true
        } else {
            let step = c.step;
            let earlier: Vec<usize> = self.by_value[&c.value]
                .iter()
                .copied()
                .filter(|&o| self.candidates[o].step < step)
                .collect();
            earlier.into_iter().any(|o| self.is_valid(o))
        };
        self.valid.insert(ci, valid);
        valid
    }

    /// The response before request `step` that handed `value` out: the most recent of those
    /// made on the resource request `step` is about (`POST /plans` for `GET /plans/99`), else
    /// the most recent of all.
    fn giver(&mut self, value: &str, step: usize) -> Option<usize> {
        let mut list: Vec<usize> = self.by_value.get(value)?.clone();
        let mut valid = Vec::new();
        // Newest first; validity needs `self` mutably, so no iterator adapter holds it.
        while let Some(ci) = list.pop() {
            if self.candidates[ci].step < step && self.is_valid(ci) {
                valid.push(ci);
            }
        }
        let about = |ci: &usize| {
            let (Some(giver), Some(taker)) = (self.paths.get(&self.candidates[*ci].step), self.paths.get(&step)) else {
                return false;
            };
            let giver = giver.trim_end_matches('/');
            !giver.is_empty() && taker.strip_prefix(giver).is_some_and(|rest| rest.starts_with('/'))
        };
        valid.iter().copied().find(about).or(valid.first().copied())
    }

    /// `text` (a recorded value sent at `place`) as a template with the values handed out so far
    /// as variables, or `None` when it carries none; the literal parts go through
    /// [`crate::literal`].
    pub fn template(&mut self, text: &str, place: &Place<'_>) -> Option<String> {
        // Every whole-word occurrence of every value handed out so far: the text whole, and
        // each place where a value's first bytes are.
        let mut hits: Vec<(usize, usize, usize)> = Vec::new();
        if let Some(ci) = self.giver(text, place.step) {
            if !self.candidates[ci].location {
                hits.push((0, text.len(), ci));
            }
        }
        let bytes = text.as_bytes();
        for at in 0..bytes.len().saturating_sub(MIN_LEN - 1) {
            if !text.is_char_boundary(at) {
                continue;
            }
            let Some(values) = self.prefixes.get(&bytes[at..at + MIN_LEN]).cloned() else {
                continue;
            };
            for value in values {
                if !text[at..].starts_with(value.as_str()) {
                    continue;
                }
                let end = at + value.len();
                let before = text[..at].chars().next_back();
                let after = text[end..].chars().next();
                if before.is_some_and(|c| c.is_ascii_alphanumeric()) || after.is_some_and(|c| c.is_ascii_alphanumeric())
                {
                    continue;
                }
                if let Some(ci) = self.giver(&value, place.step) {
                    hits.push((at, end, ci));
                }
            }
        }
        if hits.is_empty() {
            return None;
        }
        // The longest value wins (a whole segment beats a part of it), then the earliest place.
        hits.sort_by(|a, b| (b.1 - b.0).cmp(&(a.1 - a.0)).then(a.0.cmp(&b.0)).then(b.2.cmp(&a.2)));
        let mut chosen: Vec<(usize, usize, usize)> = Vec::new();
        for h in hits {
            if chosen.iter().all(|c| h.1 <= c.0 || h.0 >= c.1) {
                chosen.push(h);
            }
        }
        chosen.sort_by_key(|c| c.0);
        let mut out = String::new();
        let mut at = 0;
        for (start, end, ci) in chosen {
            out.push_str(&crate::literal(&text[at..start]));
            let name = self.use_candidate(ci, place);
            out.push_str(&format!("${{{name}}}"));
            at = end;
        }
        out.push_str(&crate::literal(&text[at..]));
        Some(out)
    }

    /// A path whose start is a path a response handed out (a `Location: /orders/8812`): that
    /// start as its variable, and the rest of the path; `None` when none is.
    pub fn path_prefix(&mut self, path: &str, place: &Place<'_>) -> Option<(String, usize)> {
        let mut starts: Vec<String> = self
            .locations
            .iter()
            .filter(|v| {
                v.len() > 1
                    && (path == v.as_str() || path.strip_prefix(v.as_str()).is_some_and(|rest| rest.starts_with('/')))
            })
            .cloned()
            .collect();
        starts.sort_by_key(|v| std::cmp::Reverse(v.len()));
        let best = starts
            .iter()
            .find_map(|v| self.giver(v, place.step).map(|ci| (v.len(), ci)))?;
        let name = self.use_candidate(best.1, place);
        Some((format!("${{{name}}}"), best.0))
    }

    fn use_candidate(&mut self, ci: usize, place: &Place<'_>) -> String {
        let vi = match self.var_of.get(&ci) {
            Some(&vi) => vi,
            None => {
                let c = self.candidates[ci].clone();
                // The same value given again under the same name is the same variable, updated
                // by the later response.
                let vi = match self.vars.iter().position(|v| v.base == c.base && v.value == c.value) {
                    Some(vi) => vi,
                    None => {
                        let name = self.unique(&c.base);
                        self.vars.push(Var {
                            name,
                            base: c.base.clone(),
                            value: c.value.clone(),
                            from: Vec::new(),
                            to: Vec::new(),
                        });
                        self.vars.len() - 1
                    }
                };
                let name = self.vars[vi].name.clone();
                self.vars[vi].from.push((c.step, c.what.clone()));
                self.extracts.entry(c.step).or_default().insert(name, c.extract.clone());
                self.var_of.insert(ci, vi);
                vi
            }
        };
        let var = &mut self.vars[vi];
        let to = (place.step, place.what.to_string());
        if !var.to.contains(&to) {
            var.to.push(to);
        }
        var.name.clone()
    }

    fn unique(&self, base: &str) -> String {
        let base = if base == "env" || crest_model::template::FUNCTIONS.contains(&base) {
            format!("{base}_value")
        } else {
            base.to_string()
        };
        let mut n = 1;
        loop {
            let name = if n == 1 { base.clone() } else { format!("{base}_{n}") };
            if !self.vars.iter().any(|v| v.name == name) {
                return name;
            }
            n += 1;
        }
    }

    /// The extracts request `step`'s response gets.
    pub fn extracts(&self, step: usize) -> IndexMap<String, Extract> {
        self.extracts.get(&step).cloned().unwrap_or_default()
    }

    /// Each variable: its name, where it comes from and where it goes, the requests as
    /// `describe` says them.
    pub fn correlations(&self, describe: impl Fn(usize) -> String) -> Vec<crate::Correlation> {
        self.vars
            .iter()
            .map(|v| {
                let from = v
                    .from
                    .iter()
                    .map(|(step, what)| format!("{what} of {}", describe(*step)))
                    .collect::<Vec<_>>()
                    .join(", updated by ");
                crate::Correlation {
                    variable: v.name.clone(),
                    from,
                    to: v
                        .to
                        .iter()
                        .map(|(step, what)| format!("{what} of {}", describe(*step)))
                        .collect(),
                }
            })
            .collect()
    }
}

/// Whether a value is specific enough to be told apart from a constant when found again.
fn worth_carrying(v: &str) -> bool {
    if v.chars().count() < MIN_LEN || v.len() > 8192 || v.chars().any(char::is_whitespace) {
        return false;
    }
    if matches!(v.to_ascii_lowercase().as_str(), "true" | "false" | "null" | "undefined") {
        return false;
    }
    // A short word (`active`, `pending`, `USD`) is a state or a label, and a request sending the
    // same word chose it itself; handed-out values have digits or are long.
    let word = v.chars().all(|c| c.is_ascii_alphabetic() || c == '-' || c == '_');
    if word && v.len() < 16 {
        return false;
    }
    // A decimal fraction is a price or an amount, not an id.
    let number = v.chars().all(|c| c.is_ascii_digit() || c == '.' || c == '-');
    !(number && v.contains('.'))
}

/// `id`, `cartId`, `cart_id`, `ID`: a key whose number is an id even when it is small.
fn is_id_key(k: &str) -> bool {
    let s = snake(k);
    s == "id" || s.ends_with("_id")
}

/// A short id worth carrying whole: digits or letters, no sign, not a word.
fn is_short_id(v: &str) -> bool {
    !v.is_empty()
        && v.len() < 64
        && v.chars().all(|c| c.is_ascii_alphanumeric())
        && v.chars().any(|c| c.is_ascii_digit())
}

/// Every leaf of `v` that could be an id: strings, and numbers as crest's JSON extract gives
/// them (their JSON text).
fn json_leaves(v: &Value, path: String, keys: &mut Vec<String>, out: &mut Vec<(String, Vec<String>, String)>) {
    if out.len() >= MAX_LEAVES {
        return;
    }
    match v {
        Value::String(s) => out.push((path, keys.clone(), s.clone())),
        Value::Number(n) => out.push((path, keys.clone(), n.to_string())),
        Value::Array(items) => {
            for (i, item) in items.iter().enumerate() {
                json_leaves(item, format!("{path}[{i}]"), keys, out);
            }
        }
        Value::Object(map) => {
            for (k, item) in map {
                keys.push(k.clone());
                json_leaves(item, format!("{path}{}", json_key(k)), keys, out);
                keys.pop();
            }
        }
        Value::Bool(_) | Value::Null => {}
    }
}

/// A key in a JSONPath (RFC 9535): `.name` when it is an identifier, `['a-b']` otherwise.
pub(super) fn json_key(k: &str) -> String {
    let mut chars = k.chars();
    let ident = chars.next().is_some_and(|c| c.is_ascii_alphabetic() || c == '_')
        && chars.all(|c| c.is_ascii_alphanumeric() || c == '_');
    if ident {
        format!(".{k}")
    } else {
        let mut out = String::from("['");
        for c in k.chars() {
            match c {
                '\\' => out.push_str("\\\\"),
                '\'' => out.push_str("\\'"),
                c if (c as u32) < 0x20 => out.push_str(&format!("\\u{:04x}", c as u32)),
                c => out.push(c),
            }
        }
        out.push_str("']");
        out
    }
}

/// Keys too generic to name a value alone: `id` under `cart` is `cart_id`.
const GENERIC: &[&str] = &[
    "id", "uuid", "guid", "key", "value", "token", "code", "ref", "name", "number", "no", "hash", "href", "url",
];

/// A JSON value's variable name from its keys, and for a generic key at the top of the body
/// from the resource the request made (`$.id` of `POST /plans` is `plan_id`).
fn json_name(keys: &[String], resource: Option<&str>) -> String {
    let last = keys.last().map_or("value", String::as_str);
    let generic = GENERIC.contains(&snake(last).as_str());
    let name = match keys.len().checked_sub(2).map(|i| &keys[i]) {
        Some(parent) if generic => format!("{}_{}", snake(parent), snake(last)),
        None if generic => match resource.and_then(resource_name) {
            Some(r) if r != snake(last) => format!("{r}_{}", snake(last)),
            _ => snake(last),
        },
        _ => snake(last),
    };
    if name.is_empty() {
        "value".to_string()
    } else {
        name
    }
}

/// The resource a path names, singular: its last segment that is a word, not an id
/// (`/api/plans` and `/plans/` are `plan`, `/tasks/submissions` is `submission`).
fn resource_name(path: &str) -> Option<String> {
    let seg = path
        .split('/')
        .rev()
        .find(|s| !s.is_empty() && s.chars().all(|c| c.is_ascii_alphabetic() || c == '-' || c == '_'))?;
    let one = match seg.strip_suffix("ies") {
        Some(stem) => format!("{stem}y"),
        None => seg
            .strip_suffix('s')
            .filter(|s| !s.ends_with('s'))
            .unwrap_or(seg)
            .to_string(),
    };
    let name = snake(&one);
    (!name.is_empty()).then_some(name)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn names_say_where_a_value_came_from() {
        assert_eq!(json_name(&["cart".into(), "id".into()], None), "cart_id");
        assert_eq!(json_name(&["items".into(), "id".into()], None), "items_id");
        assert_eq!(json_name(&["accessToken".into()], None), "access_token");
        assert_eq!(json_name(&["session".into(), "csrfToken".into()], None), "csrf_token");
        // A generic key at the top: named after the resource the request made.
        assert_eq!(json_name(&["id".into()], Some("/api/plans")), "plan_id");
        assert_eq!(json_name(&["id".into()], Some("/tasks/submissions/")), "submission_id");
        assert_eq!(json_name(&["id".into()], Some("/categories")), "category_id");
        assert_eq!(json_name(&["token".into()], Some("/auth/token")), "token");
        assert_eq!(json_name(&["id".into()], Some("/")), "id");
        assert_eq!(snake("X-Request-Token"), "x_request_token");
        assert_eq!(snake("2fa"), "v_2fa");
        assert_eq!(json_key("a-b"), "['a-b']");
        assert_eq!(json_key("it's"), r"['it\'s']");
        assert_eq!(json_key("id"), ".id");
    }

    #[test]
    fn common_values_are_not_carried() {
        for v in [
            "true",
            "false",
            "null",
            "1234",
            "en",
            "active",
            "pending",
            "12.50",
            "a b c d e",
        ] {
            assert!(!worth_carrying(v), "{v}");
        }
        for v in [
            "c0ffee-42",
            "12345",
            "3f2a9c1e-8d7b-4c1a-9e2f-0a1b2c3d4e5f",
            "abcdefghijklmnopq",
        ] {
            assert!(worth_carrying(v), "{v}");
        }
    }

    fn place(step: usize) -> Place<'static> {
        Place { step, what: "the path" }
    }

    #[test]
    fn the_longest_match_wins_and_literals_stay_literal() {
        let mut c = Correlator::default();
        c.response(
            0,
            ("GET /", &[]),
            &[],
            "application/json",
            Some(r#"{"a":{"id":"abc12"},"b":{"id":"abc12-xyz99"}}"#),
            true,
        );
        assert_eq!(c.template("abc12-xyz99", &place(1)).unwrap(), "${b_id}");
        assert_eq!(c.template("x=abc12;${y}", &place(1)).unwrap(), "x=${a_id};$${y}");
        // A part of a longer word is no match.
        assert_eq!(c.template("zabc12", &place(1)), None);
        // Not before the response that gave it.
        assert_eq!(c.template("abc12", &place(0)), None);
    }

    /// Two fresh counters hand out the same id: each later request takes it from the response
    /// on its own resource, not from whichever came last.
    #[test]
    fn a_value_two_responses_gave_alike_is_taken_from_the_requests_resource() {
        let mut c = Correlator::default();
        for (step, path) in [(0, "/plans"), (1, "/tasks/submissions")] {
            c.path_of(step, path);
            c.response(step, ("POST", &[]), &[], "application/json", Some(r#"{"id":99}"#), true);
        }
        c.path_of(2, "/plans/99");
        assert_eq!(c.template("99", &place(2)).unwrap(), "${plan_id}");
        c.path_of(3, "/tasks/submissions/99");
        assert_eq!(c.template("99", &place(3)).unwrap(), "${submission_id}");
        // A request on neither takes the latest.
        c.path_of(4, "/report/99");
        assert_eq!(c.template("99", &place(4)).unwrap(), "${submission_id}");
    }

    #[test]
    fn echoes_and_values_sent_first_are_not_carried() {
        let mut c = Correlator::default();
        c.sent("GET /?app=build-20240101", &["build-20240101".into()]);
        c.response(
            0,
            ("POST /login user=ann-77", &[]),
            &[],
            "application/json",
            Some(r#"{"user":"ann-77","app":"build-20240101","sid":"s-99887"}"#),
            true,
        );
        assert_eq!(c.template("ann-77", &place(1)), None);
        assert_eq!(c.template("build-20240101", &place(1)), None);
        assert_eq!(c.template("s-99887", &place(1)).unwrap(), "${sid}");
    }

    #[test]
    fn a_short_id_is_carried_whole_only() {
        let mut c = Correlator::default();
        c.sent("POST /auth/token HTTP/1.1", &["ann".into()]);
        c.response(
            0,
            ("POST /plans", &["nightly".into()]),
            &[],
            "application/json",
            Some(r#"{"id":7,"count":7,"name":"nightly"}"#),
            true,
        );
        assert_eq!(c.template("7", &place(1)).unwrap(), "${id}");
        assert_eq!(c.template("v7", &place(1)), None);
        assert_eq!(c.template("a-7", &place(1)), None);
    }

    #[test]
    fn a_value_given_again_is_taken_from_the_latest_response() {
        let mut c = Correlator::default();
        c.response(
            0,
            ("GET /a", &[]),
            &[],
            "application/json",
            Some(r#"{"csrf":"t0k-1234"}"#),
            true,
        );
        c.response(
            1,
            ("GET /b", &[]),
            &[],
            "application/json",
            Some(r#"{"csrf":"t0k-1234"}"#),
            true,
        );
        assert_eq!(c.template("t0k-1234", &place(2)).unwrap(), "${csrf}");
        assert_eq!(c.extracts(0).len(), 0);
        assert_eq!(c.extracts(1).get("csrf"), Some(&Extract::Json("$.csrf".into())));
    }
}
