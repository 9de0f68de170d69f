//! Bounded fuzz runs on every test run: mutated scenario files through the loader, and mutated
//! results documents and journals through `crest report`'s reading, analysis and every
//! renderer. None may panic.
//!
//! Each run lasts `CREST_FUZZ_SECS` seconds (5 by default; CI gives 60). The mutations are
//! seeded by `CREST_FUZZ_SEED` (CI fixes it, so a re-run tries the same inputs) or else by the
//! clock; the seed is printed, so a failure can be replayed, and the input that panicked is
//! saved and its path printed.
#![allow(clippy::unwrap_used)]

mod common;

use serde_json::Value;
use std::panic::{catch_unwind, AssertUnwindSafe};
use std::path::Path;
use std::time::{Duration, Instant};

/// xorshift64*: small, fast, and reproducible from its seed.
struct Rng(u64);

impl Rng {
    fn next(&mut self) -> u64 {
        self.0 ^= self.0 >> 12;
        self.0 ^= self.0 << 25;
        self.0 ^= self.0 >> 27;
        self.0.wrapping_mul(0x2545_f491_4f6c_dd1d)
    }
    fn below(&mut self, n: usize) -> usize {
        (self.next() % n.max(1) as u64) as usize
    }
}

fn budget() -> Duration {
    let secs = std::env::var("CREST_FUZZ_SECS")
        .ok()
        .and_then(|s| s.parse().ok())
        .unwrap_or(5);
    Duration::from_secs(secs)
}

fn seed() -> u64 {
    std::env::var("CREST_FUZZ_SEED")
        .ok()
        .and_then(|s| s.parse().ok())
        .unwrap_or_else(|| {
            std::time::SystemTime::now()
                .duration_since(std::time::UNIX_EPOCH)
                .map_or(1, |d| d.as_nanos() as u64)
                | 1
        })
}

/// Runs `f` on inputs made by `make` until the budget is spent; a panic fails the test with
/// the input saved.
fn fuzz(name: &str, mut make: impl FnMut(&mut Rng) -> String, f: impl Fn(&str)) {
    let seed = seed();
    eprintln!("{name}: seed {seed} (replay with CREST_FUZZ_SEED={seed})");
    let mut rng = Rng(seed);
    let end = Instant::now() + budget();
    let mut n = 0u64;
    // Panics are the finding; their default message would flood the output.
    let hook = std::panic::take_hook();
    std::panic::set_hook(Box::new(|_| {}));
    let mut failed = None;
    while Instant::now() < end {
        let input = make(&mut rng);
        n += 1;
        if let Err(e) = catch_unwind(AssertUnwindSafe(|| f(&input))) {
            let path = std::env::temp_dir().join(format!("crest-fuzz-{name}-{seed}-{n}"));
            std::fs::write(&path, &input).unwrap();
            let msg = e
                .downcast_ref::<String>()
                .cloned()
                .or_else(|| e.downcast_ref::<&str>().map(|s| s.to_string()))
                .unwrap_or_default();
            failed = Some(format!(
                "{name}: input {n} panicked ({msg}); saved to {}",
                path.display()
            ));
            break;
        }
    }
    std::panic::set_hook(hook);
    if let Some(f) = failed {
        panic!("{f}");
    }
    eprintln!("{name}: {n} inputs, no panic");
}

const TOKENS: &[&str] = &[
    "{",
    "}",
    "[",
    "]",
    ":",
    "- ",
    "\n",
    "  ",
    "${",
    "${env:X}",
    "${random_string(5)}",
    "${uuid}",
    "0",
    "-1",
    "1e300",
    "99999999999",
    "0s",
    "-5s",
    "1h",
    "loop:",
    "times: 3",
    "steps:",
    "request:",
    "path: /",
    "think:",
    "users:",
    "rate:",
    "stages:",
    "stepping:",
    "spike:",
    "sql:",
    "poll:",
    "until:",
    "extract:",
    "check:",
    "\u{feff}",
    "\"",
    "'",
    "#",
    "&a",
    "*a",
    "!!str",
    "|",
    ">",
    "%",
];

fn examples() -> Vec<String> {
    let dir = Path::new(env!("CARGO_MANIFEST_DIR")).join("../../examples");
    let mut out: Vec<String> = std::fs::read_dir(&dir)
        .unwrap()
        .filter_map(|e| e.ok().map(|e| e.path()))
        .filter(|p| p.extension().is_some_and(|e| e == "yaml"))
        .map(|p| std::fs::read_to_string(p).unwrap())
        .collect();
    out.sort();
    out
}

/// Cuts, repeats, swaps and inserts pieces of a real scenario.
fn mutate_text(rng: &mut Rng, base: &str) -> String {
    let mut s: Vec<char> = base.chars().collect();
    for _ in 0..1 + rng.below(6) {
        let at = rng.below(s.len() + 1);
        match rng.below(5) {
            0 if !s.is_empty() => {
                let len = rng.below(40).min(s.len() - at.min(s.len()));
                s.drain(at.min(s.len())..at.min(s.len()) + len);
            }
            1 => {
                let tok: Vec<char> = TOKENS[rng.below(TOKENS.len())].chars().collect();
                s.splice(at..at, tok);
            }
            2 if !s.is_empty() => {
                let from = rng.below(s.len());
                let len = rng.below(80).min(s.len() - from);
                let piece: Vec<char> = s[from..from + len].to_vec();
                s.splice(at..at, piece);
            }
            3 if at < s.len() => s[at] = char::from(b" :-{}[]\n0a"[rng.below(10)]),
            _ => {
                let digits: Vec<char> = rng.next().to_string().chars().collect();
                s.splice(at..at, digits);
            }
        }
    }
    s.into_iter().collect()
}

#[test]
fn mutated_scenarios_never_panic_the_loader() {
    let bases = examples();
    let env = |n: &str| (n == "X").then(|| "1".to_string());
    fuzz(
        "scenario",
        |rng| {
            let base = &bases[rng.below(bases.len())];
            mutate_text(rng, base)
        },
        |text| {
            let _ = crest_scenario::load_str("fuzz.yaml", text, Path::new("."), &env);
        },
    );
}

/// A value that a results document's numbers and strings should survive.
fn hostile(rng: &mut Rng) -> Value {
    match rng.below(12) {
        0 => Value::from(0),
        1 => Value::from(-1),
        2 => Value::from(u64::MAX),
        3 => serde_json::json!(1e308),
        4 => serde_json::json!(-1e308),
        5 => serde_json::json!(0.5),
        6 => Value::from(""),
        7 => Value::Null,
        8 => serde_json::json!([]),
        9 => serde_json::json!({}),
        10 => Value::from(4_294_967_296u64),
        _ => Value::from("HISTFAAAACB4nJNpmSzMwMDAwgABzFCaEUzOmNZg"),
    }
}

/// Changes one node of the document: a number or string to a hostile value, a key removed, an
/// array element dropped or repeated, a histogram's text cut.
fn mutate_json(rng: &mut Rng, v: &mut Value, depth: usize) {
    let descend = depth < 12 && rng.below(4) != 0;
    match v {
        Value::Object(m) if !m.is_empty() => {
            let keys: Vec<String> = m.keys().cloned().collect();
            let k = &keys[rng.below(keys.len())];
            if descend {
                mutate_json(rng, m.get_mut(k).unwrap(), depth + 1);
            } else if rng.below(2) == 0 {
                m.remove(k);
            } else {
                m.insert(k.clone(), hostile(rng));
            }
        }
        Value::Array(a) if !a.is_empty() => {
            let i = rng.below(a.len());
            if descend {
                mutate_json(rng, &mut a[i], depth + 1);
            } else {
                match rng.below(3) {
                    0 => {
                        a.remove(i);
                    }
                    1 => {
                        let x = a[i].clone();
                        a.insert(i, x);
                    }
                    _ => a[i] = hostile(rng),
                }
            }
        }
        Value::String(s) if s.len() > 4 && rng.below(2) == 0 => {
            let mut cut = rng.below(s.len());
            while !s.is_char_boundary(cut) {
                cut -= 1;
            }
            s.truncate(cut);
        }
        other => *other = hostile(rng),
    }
}

/// What `crest report` does with a document, without the files.
fn report(text: &str) {
    if let Ok(r) = crest_model::results::parse(text) {
        render(&r);
    }
}

/// Every report `crest report` writes of a document it accepted.
fn render(r: &crest_model::Results) {
    let Ok(a) = crest_analysis::analyze(r) else { return };
    let _ = crest_report::markdown::report(r, &a);
    let _ = crest_report::html::report(r, &a);
    let mut buf = Vec::new();
    let _ = crest_report::csv_out::intervals(r, &a, &mut buf);
    let _ = crest_report::csv_out::requests(r, &a, &mut buf);
    let _ = crest_report::csv_out::failures(&a, &mut buf);
    let _ = crest_report::hlog::write(r, &mut buf);
    let _ = crest_report::terminal::render(r, &a);
}

#[test]
fn mutated_results_never_panic_the_reports() {
    let fixtures: Vec<Value> = [
        crest_testkit::results::stepping_fixture(),
        crest_testkit::results::ResultsBuilder::new(crest_model::Outcome::Timeout, false)
            .segment(3, 4, |_| crest_testkit::results::Second {
                ok: 5,
                latency_ms: 3.0,
                failed: 2,
                failure_ms: 1500.0,
            })
            .build(),
    ]
    .iter()
    .map(|r| serde_json::to_value(r).unwrap())
    .collect();
    fuzz(
        "results",
        |rng| {
            let mut v = fixtures[rng.below(fixtures.len())].clone();
            for _ in 0..1 + rng.below(4) {
                mutate_json(rng, &mut v, 0);
            }
            v.to_string()
        },
        report,
    );
}

/// Journals are what `crest report` reads after a crash, so they may end anywhere and may have
/// been edited: a run in two parts (a journal each, joined as `crest report` joins them) with
/// lines mutated, dropped, repeated or cut.
#[test]
fn mutated_journals_never_panic_the_reports() {
    let _serial = common::serial();
    let t = common::target_process(&["--service-time", "1ms"]);
    let r = common::run(&t.url, &["-c", "1,3", "-d", "1s", "--quiet"]);
    assert_eq!(r.code, 0, "{}", r.stderr);
    let parts: Vec<String> = ["journal-001.jsonl", "journal-002.jsonl"]
        .iter()
        .map(|f| std::fs::read_to_string(r.dir.path().join(f)).unwrap())
        .collect();
    const PART: &str = "\n=== next part ===\n";
    fuzz(
        "journals",
        |rng| {
            let mut parts = parts.clone();
            for _ in 0..1 + rng.below(3) {
                let k = rng.below(parts.len());
                let mut lines: Vec<String> = parts[k].lines().map(str::to_string).collect();
                let i = rng.below(lines.len());
                match rng.below(8) {
                    0 => {
                        lines.remove(i);
                    }
                    1 => {
                        let l = lines[i].clone();
                        lines.insert(i, l);
                    }
                    2 => {
                        let cut = rng.below(lines[i].len());
                        lines[i].truncate(cut);
                    }
                    _ => {
                        if let Ok(mut v) = serde_json::from_str::<Value>(&lines[i]) {
                            mutate_json(rng, &mut v, 0);
                            lines[i] = v.to_string();
                        }
                    }
                }
                parts[k] = lines.join("\n");
            }
            parts.join(PART)
        },
        |input| {
            let mut results = Vec::new();
            for (k, part) in input.split(PART).enumerate() {
                let Ok(j) = crest_model::journal::read(part.as_bytes()) else {
                    return;
                };
                let Ok(r) = j.results() else { return };
                let label = crest_model::results::Segment {
                    setup: None,
                    kind: crest_model::step::StepKind::Named(format!("part {k}")),
                    start_s: 0.0,
                    end_s: 0.0,
                    users: None,
                    rate: None,
                };
                results.push((j.start.part.clone().unwrap_or(label), r));
            }
            let mut it = results.into_iter();
            let Some(first) = it.next() else { return };
            // As `crest report` rebuilds a run from its journals.
            let Ok(joined) = crest_model::results::concat(first, it) else {
                return;
            };
            if joined.check().is_ok() {
                render(&joined);
            }
        },
    );
}

/// HAR recordings are whatever a browser, a proxy or a hand edit made of them: the golden
/// recordings, their JSON mutated (hostile values anywhere) or their text cut and spliced, go
/// through `crest import har` and its writer.
#[test]
fn mutated_har_recordings_never_panic_the_import() {
    let dir = Path::new(env!("CARGO_MANIFEST_DIR")).join("../import/tests/golden/har");
    let mut bases: Vec<String> = std::fs::read_dir(&dir)
        .unwrap()
        .filter_map(|e| e.ok().map(|e| e.path()))
        .filter(|p| p.extension().is_some_and(|e| e == "har"))
        .map(|p| std::fs::read_to_string(p).unwrap())
        .collect();
    bases.sort();
    let values: Vec<Value> = bases.iter().map(|b| serde_json::from_str(b).unwrap()).collect();
    fuzz(
        "har",
        |rng| {
            if rng.below(2) == 0 {
                let mut v = values[rng.below(values.len())].clone();
                for _ in 0..1 + rng.below(6) {
                    mutate_json(rng, &mut v, 0);
                }
                v.to_string()
            } else {
                let base = &bases[rng.below(bases.len())];
                mutate_text(rng, base)
            }
        },
        |text| {
            for keep_static in [false, true] {
                let options = crest_import::har::HarOptions {
                    keep_static,
                    max_think_ms: Some(5000),
                };
                if let Ok(imported) = crest_import::har::import(text, "fuzz.har", &options) {
                    let _ = crest_import::write::files(&imported, "fuzz.yaml", Some("fuzz.env"));
                }
            }
        },
    );
}

/// Pieces of specs that lead importers astray: `$ref`s to nowhere, to themselves and outside,
/// schemas that contain themselves, odd types.
const SPEC_TOKENS: &[&str] = &[
    "$ref: '#/components/schemas/Step'",
    "$ref: '#'",
    "$ref: '#/nowhere'",
    "$ref: 'other.yaml#/x'",
    "{\"$ref\": \"#/components/schemas/Step\"}",
    "allOf: [{$ref: '#/components/schemas/Plan'}]",
    "oneOf: []",
    "type: [null]",
    "{id}",
    "links: {L: {operationId: getPlan, parameters: {id: $response.body#/}}}",
    "operationRef: '#/paths'",
    "swagger: '2.0'",
];

#[test]
fn mutated_openapi_specs_never_panic_the_importer() {
    let dir = Path::new(env!("CARGO_MANIFEST_DIR")).join("../../examples/openapi");
    let yaml = std::fs::read_to_string(dir.join("target.yaml")).unwrap();
    let tree: Value = serde_saphyr::from_str(&yaml).unwrap();
    let json = serde_json::to_string_pretty(&tree).unwrap();
    let bases = [yaml, json];
    fuzz(
        "openapi",
        |rng| {
            let base = &bases[rng.below(bases.len())];
            let mut text = mutate_text(rng, base);
            for _ in 0..rng.below(3) {
                let tok = SPEC_TOKENS[rng.below(SPEC_TOKENS.len())];
                let mut at = rng.below(text.len() + 1);
                while !text.is_char_boundary(at) {
                    at -= 1;
                }
                text.insert_str(at, tok);
            }
            if rng.below(4) == 0 {
                if let Ok(mut v) = serde_json::from_str::<Value>(&text) {
                    mutate_json(rng, &mut v, 0);
                    text = v.to_string();
                }
            }
            text
        },
        |input| {
            let options = crest_import::openapi::OpenApiOptions::default();
            if let Ok(imported) = crest_import::openapi::import(input, "fuzz.yaml", &options) {
                let _ = crest_import::write::files(&imported, "s.yaml", Some("s.env"));
            }
        },
    );
}
