//! JUnit XML, the test report every CI system reads: a run's verdicts as one `<testsuite>` whose
//! cases a CI job gates on and shows beside its unit tests.
//!
//! [`Suite`] and [`Case`] are a generic builder (a suite of cases that passed, failed, erred or
//! were skipped, each failure with a message and detail), so that any verdict crest reaches can
//! become a suite; [`run_suite`] builds the one of a run: a case per threshold and a case per
//! answer check (see docs/reports.md).

use crate::fmt::words;
use crest_analysis::findings::Finding;
use crest_analysis::Analysis;
use crest_model::results::Results;
use quick_xml::events::{BytesDecl, BytesEnd, BytesStart, BytesText, Event};
use quick_xml::Writer;
use std::io;

/// A `<testsuite>`: named cases, with when they ran, how long it took and properties.
#[derive(Clone, Debug, Default, PartialEq)]
pub struct Suite {
    /// The suite's name: the run's label, scenario or target.
    pub name: String,
    /// When it started, RFC 3339.
    pub timestamp: Option<String>,
    /// Seconds it took.
    pub time_s: f64,
    /// `name = value` pairs: crest's version, the run's provenance.
    pub properties: Vec<(String, String)>,
    /// The cases, in order.
    pub cases: Vec<Case>,
}

/// A `<testcase>`.
#[derive(Clone, Debug, PartialEq)]
pub struct Case {
    /// What it checks: `p95 < 100ms`, `the run measured successes`.
    pub name: String,
    /// Its group, as CI systems show it: `thresholds`, `checks`.
    pub classname: String,
    /// Seconds it took.
    pub time_s: f64,
    /// How it ended.
    pub verdict: Verdict,
    /// Figures worth reading whatever the verdict, as `<system-out>`.
    pub output: Option<String>,
}

/// How a case ended.
#[derive(Clone, Debug, PartialEq)]
pub enum Verdict {
    /// It held.
    Pass,
    /// It did not hold: `message` states the figures, `detail` may say more.
    Fail {
        /// One line with the figures.
        message: String,
        /// More, when there is more.
        detail: Option<String>,
    },
    /// It could not be judged (something broke, not the thing checked).
    Error {
        /// One line.
        message: String,
        /// More, when there is more.
        detail: Option<String>,
    },
    /// It was not checked, and why.
    Skip {
        /// Why.
        message: String,
    },
}

impl Case {
    /// A case of `classname` with this verdict, which took no time of its own.
    pub fn new(classname: impl Into<String>, name: impl Into<String>, verdict: Verdict) -> Self {
        Case {
            name: name.into(),
            classname: classname.into(),
            time_s: 0.0,
            verdict,
            output: None,
        }
    }

    /// The case, passed.
    pub fn pass(classname: impl Into<String>, name: impl Into<String>) -> Self {
        Case::new(classname, name, Verdict::Pass)
    }

    /// The case, failed with `message`.
    pub fn fail(classname: impl Into<String>, name: impl Into<String>, message: impl Into<String>) -> Self {
        let verdict = Verdict::Fail {
            message: message.into(),
            detail: None,
        };
        Case::new(classname, name, verdict)
    }

    /// The case, skipped because of `message`.
    pub fn skip(classname: impl Into<String>, name: impl Into<String>, message: impl Into<String>) -> Self {
        Case::new(
            classname,
            name,
            Verdict::Skip {
                message: message.into(),
            },
        )
    }

    /// The case with `output` as its `<system-out>`.
    pub fn with_output(mut self, output: impl Into<String>) -> Self {
        self.output = Some(output.into());
        self
    }
}

impl Suite {
    /// An empty suite named `name`.
    pub fn new(name: impl Into<String>) -> Self {
        Suite {
            name: name.into(),
            ..Suite::default()
        }
    }

    /// Cases that did not hold.
    pub fn failures(&self) -> usize {
        self.count(|v| matches!(v, Verdict::Fail { .. }))
    }

    /// Cases that could not be judged.
    pub fn errors(&self) -> usize {
        self.count(|v| matches!(v, Verdict::Error { .. }))
    }

    /// Cases not checked.
    pub fn skipped(&self) -> usize {
        self.count(|v| matches!(v, Verdict::Skip { .. }))
    }

    fn count(&self, f: impl Fn(&Verdict) -> bool) -> usize {
        self.cases.iter().filter(|c| f(&c.verdict)).count()
    }

    /// The suite as a JUnit XML document: `<testsuites>` holding it, as every reader accepts.
    pub fn xml(&self) -> io::Result<Vec<u8>> {
        suites_xml(std::slice::from_ref(self))
    }
}

/// Several suites as one JUnit XML document.
pub fn suites_xml(suites: &[Suite]) -> io::Result<Vec<u8>> {
    let mut w = Writer::new_with_indent(Vec::new(), b' ', 2);
    w.write_event(Event::Decl(BytesDecl::new("1.0", Some("UTF-8"), None)))?;
    let sum = |f: fn(&Suite) -> usize| suites.iter().map(f).sum::<usize>().to_string();
    let total_s: f64 = suites.iter().map(|s| s.time_s).sum();
    let root = BytesStart::new("testsuites").with_attributes([
        ("tests", sum(|s| s.cases.len()).as_str()),
        ("failures", sum(Suite::failures).as_str()),
        ("errors", sum(Suite::errors).as_str()),
        ("skipped", sum(Suite::skipped).as_str()),
        ("time", seconds(total_s).as_str()),
    ]);
    w.write_event(Event::Start(root))?;
    for s in suites {
        suite(&mut w, s)?;
    }
    w.write_event(Event::End(BytesEnd::new("testsuites")))?;
    let mut xml = w.into_inner();
    xml.push(b'\n');
    Ok(xml)
}

fn suite(w: &mut Writer<Vec<u8>>, s: &Suite) -> io::Result<()> {
    let mut start = BytesStart::new("testsuite");
    start.push_attribute(("name", text(&s.name).as_str()));
    start.push_attribute(("tests", s.cases.len().to_string().as_str()));
    start.push_attribute(("failures", s.failures().to_string().as_str()));
    start.push_attribute(("errors", s.errors().to_string().as_str()));
    start.push_attribute(("skipped", s.skipped().to_string().as_str()));
    start.push_attribute(("time", seconds(s.time_s).as_str()));
    if let Some(t) = &s.timestamp {
        start.push_attribute(("timestamp", text(t).as_str()));
    }
    w.write_event(Event::Start(start))?;
    if !s.properties.is_empty() {
        w.write_event(Event::Start(BytesStart::new("properties")))?;
        for (name, value) in &s.properties {
            let p = BytesStart::new("property")
                .with_attributes([("name", text(name).as_str()), ("value", text(value).as_str())]);
            w.write_event(Event::Empty(p))?;
        }
        w.write_event(Event::End(BytesEnd::new("properties")))?;
    }
    for c in &s.cases {
        case(w, c)?;
    }
    w.write_event(Event::End(BytesEnd::new("testsuite")))?;
    Ok(())
}

fn case(w: &mut Writer<Vec<u8>>, c: &Case) -> io::Result<()> {
    let start = BytesStart::new("testcase").with_attributes([
        ("name", text(&c.name).as_str()),
        ("classname", text(&c.classname).as_str()),
        ("time", seconds(c.time_s).as_str()),
    ]);
    if c.verdict == Verdict::Pass && c.output.is_none() {
        return w.write_event(Event::Empty(start));
    }
    w.write_event(Event::Start(start))?;
    match &c.verdict {
        Verdict::Pass => {}
        Verdict::Fail { message, detail } => element(w, "failure", message, detail.as_deref())?,
        Verdict::Error { message, detail } => element(w, "error", message, detail.as_deref())?,
        Verdict::Skip { message } => element(w, "skipped", message, None)?,
    }
    if let Some(out) = &c.output {
        w.write_event(Event::Start(BytesStart::new("system-out")))?;
        w.write_event(Event::Text(BytesText::new(&text(out))))?;
        w.write_event(Event::End(BytesEnd::new("system-out")))?;
    }
    w.write_event(Event::End(BytesEnd::new("testcase")))
}

/// `<failure message="...">detail</failure>` and its kin.
fn element(w: &mut Writer<Vec<u8>>, tag: &str, message: &str, detail: Option<&str>) -> io::Result<()> {
    let start = BytesStart::new(tag).with_attributes([("message", text(message).as_str())]);
    match detail {
        None => w.write_event(Event::Empty(start)),
        Some(d) => {
            w.write_event(Event::Start(start))?;
            w.write_event(Event::Text(BytesText::new(&text(d))))?;
            w.write_event(Event::End(BytesEnd::new(tag)))
        }
    }
}

/// `s` as XML 1.0 may hold it: the writer escapes markup (`<`, `&`, quotes), but control
/// characters other than tab and line breaks cannot appear in an XML 1.0 document at all, not
/// even as character references, so each becomes U+FFFD.
fn text(s: &str) -> String {
    s.chars()
        .map(|c| {
            if (c < ' ' && !matches!(c, '\t' | '\n' | '\r')) || matches!(c, '\u{fffe}' | '\u{ffff}') {
                '\u{fffd}'
            } else {
                c
            }
        })
        .collect()
}

/// Seconds as JUnit's `time` attributes have them: a plain decimal, never negative.
fn seconds(s: f64) -> String {
    format!("{:.3}", if s.is_finite() { s.max(0.0) } else { 0.0 })
}

/// The classname of a run's threshold cases.
pub const THRESHOLDS: &str = "thresholds";
/// The classname of a run's answer checks.
pub const CHECKS: &str = "checks";

/// The suite of a run: a case per threshold, then the answer checks, which say what the exit
/// code says: that the run measured successes, that crest itself did not limit it (a failure
/// only with `strict`, as the exit code is), and for a capacity search, that some level met its
/// service level.
pub fn run_suite(r: &Results, a: &Analysis, strict: bool) -> Suite {
    let s = &a.summary;
    let mut suite = Suite::new(words::run_name(r));
    suite.timestamp = Some(r.started_at.clone());
    suite.time_s = s.duration_s;
    suite.properties = properties(r);
    for t in &s.thresholds {
        suite.cases.push(if t.pass {
            Case::pass(THRESHOLDS, &t.threshold).with_output(words::threshold_outcome(t))
        } else {
            Case::fail(THRESHOLDS, &t.threshold, words::threshold_outcome(t))
        });
    }
    let succeeded = "the run measured successes";
    suite.cases.push(if s.successes > 0 {
        Case::pass(CHECKS, succeeded).with_output(words::outcome_counts(s))
    } else {
        let why = a
            .findings
            .iter()
            .find(|f| matches!(f, Finding::NothingSucceeded { .. }))
            .map_or_else(|| words::outcome_counts(s), words::finding);
        Case::fail(CHECKS, succeeded, why)
    });
    let unlimited = "crest itself did not limit the run";
    let limits: Vec<String> = s.client_bound.iter().map(words::client_limit).collect();
    suite.cases.push(match (limits.is_empty(), strict) {
        (true, _) => Case::pass(CHECKS, unlimited),
        // Without --strict the exit code passes such a run, and so does its report; the reasons
        // are still there to read.
        (false, false) => Case::pass(CHECKS, unlimited).with_output(limits.join("\n")),
        (false, true) => Case::new(
            CHECKS,
            unlimited,
            Verdict::Fail {
                message: limits.join("; "),
                detail: None,
            },
        ),
    });
    if let Some(c) = &s.capacity {
        let found = "the capacity search found a level that met the service level";
        let ended = words::search_ended(c.stopped_because.as_ref().map(|e| e.as_ref()), c.unit);
        suite.cases.push(if c.max_per_s > 0.0 {
            Case::pass(CHECKS, found).with_output(words::search_found(c))
        } else {
            Case::fail(CHECKS, found, format!("no probe met the service level; {ended}"))
        });
    }
    suite
}

/// crest's version, what the run measured and its provenance (label, commit, branch, tags),
/// as `crest.*` properties; a tag `k` is `tag.k`.
fn properties(r: &Results) -> Vec<(String, String)> {
    let mut p = vec![
        ("crest.version".to_string(), r.crest_version.clone()),
        ("crest.target".to_string(), words::run_target(r)),
    ];
    if let Some(v) = &r.config.provenance {
        let mut add = |k: &str, v: Option<String>| p.extend(v.map(|v| (format!("crest.{k}"), v)));
        add("label", v.label.clone());
        add("commit", v.commit.clone());
        add("branch", v.branch.clone());
        add("dirty", v.dirty.map(|d| d.to_string()));
        p.extend(v.tags.iter().map(|(k, v)| (format!("tag.{k}"), v.clone())));
    }
    p
}

/// A run's JUnit XML.
pub fn run(r: &Results, a: &Analysis, strict: bool) -> io::Result<Vec<u8>> {
    run_suite(r, a, strict).xml()
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn names_and_messages_are_escaped_and_control_characters_replaced() {
        let mut s = Suite::new("a <b> & \"c\" 'd'\u{1}");
        s.properties.push(("tag.x".into(), "1 < 2 & \u{7}".into()));
        s.cases.push(Case::fail(
            "t",
            "p95 < 10ms & \"quoted\"",
            "p95 < 10ms: measured 12 ms\u{0}",
        ));
        s.cases.push(Case::pass("t", "ok").with_output("<out> & \u{1b}[31m"));
        s.cases.push(Case::skip("t", "later", "not yet"));
        let xml = String::from_utf8(s.xml().expect("xml")).expect("utf-8");
        assert!(
            xml.contains(r#"name="a &lt;b&gt; &amp; &quot;c&quot; &apos;d&apos;�""#),
            "{xml}"
        );
        assert!(xml.contains(r#"value="1 &lt; 2 &amp; �""#), "{xml}");
        assert!(
            xml.contains(r#"<testcase name="p95 &lt; 10ms &amp; &quot;quoted&quot;""#),
            "{xml}"
        );
        assert!(
            xml.contains(r#"<failure message="p95 &lt; 10ms: measured 12 ms�"/>"#),
            "{xml}"
        );
        assert!(
            xml.contains("<system-out>&lt;out&gt; &amp; �[31m</system-out>"),
            "{xml}"
        );
        assert!(
            xml.contains(r#"<testsuite name="a &lt;b&gt; &amp; &quot;c&quot; &apos;d&apos;�" tests="3" failures="1" errors="0" skipped="1""#),
            "{xml}"
        );
        assert!(!xml.chars().any(|c| c.is_control() && c != '\n'), "{xml}");
    }

    #[test]
    fn a_run_has_a_case_per_threshold_and_its_checks_with_the_measured_figures() {
        let mut r = crest_testkit::results::small_fixture();
        r.config.thresholds = ["p95 < 10s", "error_rate < 1%"]
            .iter()
            .map(|t| crest_model::expr::Threshold::parse(t).expect("threshold"))
            .collect();
        r.config.provenance = Some(crest_model::results::Provenance {
            label: Some("checkout".into()),
            commit: Some("abc123".into()),
            tags: [("env".to_string(), "staging".to_string())].into(),
            ..Default::default()
        });
        let a = crest_analysis::analyze(&r).expect("analysis");
        let s = run_suite(&r, &a, false);
        assert_eq!(s.name, "checkout");
        let names: Vec<&str> = s.cases.iter().map(|c| c.name.as_str()).collect();
        assert_eq!(
            names,
            [
                "p95 < 10s",
                "error_rate < 1%",
                "the run measured successes",
                "crest itself did not limit the run"
            ]
        );
        assert_eq!((s.failures(), s.errors(), s.skipped()), (1, 0, 0));
        // 4 of 240 requests failed.
        assert_eq!(
            s.cases[1].verdict,
            Verdict::Fail {
                message: "error_rate < 1%: measured 1.67%".into(),
                detail: None
            }
        );
        assert!(s.properties.contains(&("crest.commit".into(), "abc123".into())));
        assert!(s.properties.contains(&("tag.env".into(), "staging".into())));
        assert!(s.properties.contains(&("crest.label".into(), "checkout".into())));
    }

    #[test]
    fn times_are_plain_decimals() {
        assert_eq!(seconds(1.23456), "1.235");
        assert_eq!(seconds(-1.0), "0.000");
        assert_eq!(seconds(f64::NAN), "0.000");
    }
}
