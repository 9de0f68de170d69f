//! report.html opened in headless Chromium (Debian's package): it renders its charts, logs no
//! errors, and a screenshot is kept in the target directory as an artifact. In CI the test
//! must run (.ci/run installs Chromium); elsewhere it is skipped when Chromium is missing.
#![allow(clippy::unwrap_used)]

use crest_testkit::results::stepping_fixture;
use std::path::Path;
use std::process::Command;

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

#[test]
fn report_html_renders_its_charts_in_chromium_without_errors() {
    if chromium().is_none() {
        assert!(
            std::env::var_os("CI").is_none(),
            "Chromium is missing in CI: .ci/run must install it"
        );
        eprintln!("skipped: no Chromium here (apt-get install chromium)");
        return;
    }
    let dir = tempfile::tempdir().unwrap();
    crest_report::write_run(dir.path(), &stepping_fixture()).unwrap();
    let page = format!("file://{}", dir.path().join("report.html").display());

    let dom = headless(&dir.path().join("profile-dom"))
        .args(["--dump-dom", &page])
        .output()
        .unwrap();
    assert!(dom.status.success(), "{}", String::from_utf8_lossy(&dom.stderr));
    let html = String::from_utf8_lossy(&dom.stdout);
    assert_eq!(html.matches("<svg").count(), 5, "five charts in the rendered page");
    assert!(html.matches("<polyline").count() >= 7, "every series drawn");
    assert!(html.contains("Key findings") && html.contains("Breaking point: 160 users"));
    let log = String::from_utf8_lossy(&dom.stderr);
    let console_errors: Vec<&str> = log
        .lines()
        .filter(|l| l.contains("CONSOLE") || l.contains("Uncaught"))
        .collect();
    assert!(console_errors.is_empty(), "the page logged errors: {console_errors:#?}");

    let artifacts = Path::new(env!("CARGO_TARGET_TMPDIR")).join("artifacts");
    std::fs::create_dir_all(&artifacts).unwrap();
    let png = artifacts.join("report.png");
    let _ = std::fs::remove_file(&png);
    let shot = headless(&dir.path().join("profile-shot"))
        .args([
            "--window-size=1100,2600",
            &format!("--screenshot={}", png.display()),
            &page,
        ])
        .output()
        .unwrap();
    assert!(shot.status.success(), "{}", String::from_utf8_lossy(&shot.stderr));
    let bytes = std::fs::read(&png).unwrap();
    assert!(
        bytes.starts_with(b"\x89PNG") && bytes.len() > 50_000,
        "a real screenshot ({} bytes)",
        bytes.len()
    );
    eprintln!("screenshot: {}", png.display());
}
