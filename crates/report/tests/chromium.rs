//! report.html opened in headless Chromium (Debian's package): it renders its charts, logs no
//! errors, and a screenshot is kept in the target directory as an artifact. In CI the test
//! must run (.ci/run installs Chromium); elsewhere it is skipped when Chromium is missing.
#![allow(clippy::unwrap_used)]

use crest_model::Outcome;
use crest_testkit::results::{small_fixture, stepping_fixture, ResultsBuilder, Second};
use std::path::Path;
use std::process::Command;

/// Writes a run's report files into `dir`, as the binary does.
fn write_run(dir: &std::path::Path, r: &crest_model::Results) {
    let a = crest_analysis::analyze(r).unwrap();
    for f in crest_report::run_files(r, &a).unwrap() {
        std::fs::write(dir.join(f.name), f.bytes).unwrap();
    }
}

fn chromium() -> Option<&'static str> {
    ["/usr/bin/chromium", "/usr/bin/chromium-browser"]
        .into_iter()
        .find(|p| Path::new(p).exists())
}

fn headless(profile: &Path) -> Command {
    let mut c = Command::new(chromium().unwrap());
    c.args([
        "--headless",
        "--no-sandbox",
        "--disable-gpu",
        "--disable-quic",
        "--no-first-run",
        "--disable-background-networking",
        "--disable-component-update",
        "--disable-sync",
        "--enable-logging=stderr",
        "--v=0",
    ])
    .arg(format!("--user-data-dir={}", profile.display()));
    c
}

/// Skips (outside CI) when Chromium is missing.
fn have_chromium() -> bool {
    if chromium().is_none() {
        assert!(
            std::env::var_os("CI").is_none(),
            "Chromium is missing in CI: .ci/run must install it"
        );
        eprintln!("skipped: no Chromium here (apt-get install chromium)");
        return false;
    }
    true
}

/// The page as Chromium renders it, and what it logged.
fn rendered(dir: &Path) -> (String, String) {
    let page = format!("file://{}", dir.join("report.html").display());
    let dom = headless(&dir.join("profile-dom"))
        .args(["--dump-dom", &page])
        .output()
        .unwrap();
    assert!(dom.status.success(), "{}", String::from_utf8_lossy(&dom.stderr));
    (
        String::from_utf8_lossy(&dom.stdout).into_owned(),
        String::from_utf8_lossy(&dom.stderr).into_owned(),
    )
}

/// A screenshot of `page` kept in the target directory as `name`, an artifact to look at.
fn screenshot(profile: &Path, page: &str, name: &str) -> Vec<u8> {
    let artifacts = Path::new(env!("CARGO_TARGET_TMPDIR")).join("artifacts");
    std::fs::create_dir_all(&artifacts).unwrap();
    let png = artifacts.join(name);
    let _ = std::fs::remove_file(&png);
    let shot = headless(profile)
        .args([
            "--window-size=1100,2600",
            &format!("--screenshot={}", png.display()),
            page,
        ])
        .output()
        .unwrap();
    assert!(shot.status.success(), "{}", String::from_utf8_lossy(&shot.stderr));
    eprintln!("screenshot: {}", png.display());
    std::fs::read(&png).unwrap()
}

/// The marks of the scatter's series `class` as (legend, count, marks in its path).
fn marks(html: &str, class: &str) -> Vec<(String, usize, usize)> {
    let re = regex::Regex::new(&format!(
        r#"<path d="([^"]*)" class="{class}" data-name="([^"]*)" data-count="(\d+)""#
    ))
    .unwrap();
    re.captures_iter(html)
        .map(|c| (c[2].to_string(), c[3].parse().unwrap(), c[1].matches('M').count()))
        .collect()
}

#[test]
fn a_small_runs_report_plots_each_request_with_failures_marked() {
    if !have_chromium() {
        return;
    }
    let dir = tempfile::tempdir().unwrap();
    write_run(dir.path(), &small_fixture());
    let (html, log) = rendered(dir.path());
    assert!(html.contains(r#"id="each-request""#), "the scatter is drawn");
    assert!(html.contains("Each request: latency against its start"));
    // 236 successes as dots, the 4 503s as crosses of their own colour, with a legend each.
    assert_eq!(marks(&html, "marks"), vec![("success (236)".to_string(), 236, 236)]);
    assert_eq!(marks(&html, "marks failed"), vec![("HTTP 503 (4)".to_string(), 4, 4)]);
    assert!(!html.contains("each-request-absent"));
    assert!(!log.contains("Uncaught"), "{log}");

    let page = format!("file://{}", dir.path().join("report.html").display());
    let png = screenshot(&dir.path().join("profile-shot"), &page, "each-request.png");
    assert!(png.starts_with(b"\x89PNG"));

    // Past the cap no request is kept one by one, and the report says why instead.
    let big = ResultsBuilder::new(Outcome::Status(503), true)
        .points()
        .segment(10, 11, |_| Second::ok(1000, 5.0))
        .build();
    assert!(big.points.is_empty());
    let dir = tempfile::tempdir().unwrap();
    write_run(dir.path(), &big);
    let (html, _) = rendered(dir.path());
    assert!(!html.contains(r#"id="each-request""#));
    assert!(marks(&html, "marks").is_empty());
    assert!(
        html.contains("each-request-absent") && html.contains("at most 10,000 requests; this one made 11,000"),
        "{html}"
    );
}

#[test]
fn report_html_renders_its_charts_in_chromium_without_errors() {
    if !have_chromium() {
        return;
    }
    let dir = tempfile::tempdir().unwrap();
    write_run(dir.path(), &stepping_fixture());
    let page = format!("file://{}", dir.path().join("report.html").display());

    let (html, log) = rendered(dir.path());
    assert_eq!(html.matches("<svg").count(), 5, "five charts in the rendered page");
    assert!(html.matches("<polyline").count() >= 7, "every series drawn");
    assert!(html.contains("Key findings") && html.contains("Breaking point: 160 users"));
    let console_errors: Vec<&str> = log
        .lines()
        .filter(|l| l.contains("CONSOLE") || l.contains("Uncaught"))
        .collect();
    assert!(console_errors.is_empty(), "the page logged errors: {console_errors:#?}");

    let bytes = screenshot(&dir.path().join("profile-shot"), &page, "report.png");
    assert!(
        bytes.starts_with(b"\x89PNG") && bytes.len() > 50_000,
        "a real screenshot ({} bytes)",
        bytes.len()
    );
}
