//! The live page in a real browser (Debian's chromium over chromedriver, WebDriver): its figures
//! update, its controls steer the run as the test server counts it, and it logs no error.
//! Skipped, saying so, where chromedriver is not installed (CI installs it: .ci/run).
#![allow(clippy::unwrap_used)]

mod common;

use common::{live, run_for, step_names, target_metric, target_process, wait_for, Live, TargetProcess};
use fantoccini::{ClientBuilder, Locator};
use serde_json::Value;
use std::time::Duration;

/// chromedriver's legacy log endpoint: the browser console's entries since the last call.
#[derive(Debug)]
struct BrowserLog;

impl fantoccini::wd::WebDriverCompatibleCommand for BrowserLog {
    fn endpoint(&self, base: &url::Url, session: Option<&str>) -> Result<url::Url, url::ParseError> {
        base.join(&format!("session/{}/se/log", session.unwrap_or_default()))
    }

    fn method_and_body(&self, _: &url::Url) -> (http::Method, Option<String>) {
        (http::Method::POST, Some(r#"{"type": "browser"}"#.into()))
    }
}

/// Requests the target counted while the run measured `secs` seconds.
fn counted_over(t: &TargetProcess, l: &Live, secs: f64) -> u64 {
    let before = target_metric(&t.url, "crest_target_requests_total");
    run_for(l, secs);
    target_metric(&t.url, "crest_target_requests_total") - before
}

fn free_port() -> u16 {
    std::net::TcpListener::bind("127.0.0.1:0")
        .unwrap()
        .local_addr()
        .unwrap()
        .port()
}

#[test]
fn the_page_shows_the_run_and_steers_it() {
    let Some(driver) = ["chromedriver", "/usr/bin/chromedriver"]
        .into_iter()
        .find(|p| std::process::Command::new(p).arg("--version").output().is_ok())
    else {
        eprintln!("SKIPPED: no chromedriver (apt-get install chromium-driver)");
        return;
    };
    // Enough workers that 20 users queue for none: the rate follows the users.
    let t = target_process(&["--workers", "64", "--service-time", "40ms"]);
    let l = live(&t.url, "--web", "browser-token", &["--load", "manual"]);
    let port = free_port();
    let mut chromedriver = std::process::Command::new(driver)
        .arg(format!("--port={port}"))
        .stdout(std::process::Stdio::null())
        .stderr(std::process::Stdio::null())
        .spawn()
        .unwrap();
    let rt = common::rt();
    let result = rt.block_on(async {
        let mut caps = serde_json::Map::new();
        caps.insert(
            "goog:chromeOptions".into(),
            serde_json::json!({"args": ["--headless=new", "--no-sandbox", "--disable-gpu", "--disable-dev-shm-usage", "--window-size=1700,1300"]}),
        );
        caps.insert("goog:loggingPrefs".into(), serde_json::json!({"browser": "ALL"}));
        let mut connected = None;
        for _ in 0..50 {
            match ClientBuilder::new(hyper_util::client::legacy::connect::HttpConnector::new())
                .capabilities(caps.clone())
                .connect(&format!("http://127.0.0.1:{port}"))
                .await
            {
                Ok(c) => {
                    connected = Some(c);
                    break;
                }
                Err(_) => tokio::time::sleep(Duration::from_millis(200)).await,
            }
        }
        let c = connected.expect("chromedriver did not answer");
        c.goto(&format!("http://{}/?token={}", l.addr, l.token)).await.unwrap();
        let text = |id: &'static str| {
            let c = c.clone();
            // By script, in one step: an element the page redraws between a find and a read
            // would be stale.
            async move {
                let v = c
                    .execute("return document.getElementById(arguments[0]).innerText", vec![id.into()])
                    .await
                    .unwrap();
                v.as_str().unwrap_or_default().to_string()
            }
        };
        let set = |id: &'static str, v: &'static str| {
            let c = c.clone();
            async move {
                let e = c.find(Locator::Id(id)).await.unwrap();
                e.clear().await.unwrap();
                e.send_keys(v).await.unwrap();
            }
        };
        let click = |id: &'static str| {
            let c = c.clone();
            async move { c.find(Locator::Id(id)).await.unwrap().click().await.unwrap() }
        };

        // 5 users, set on the page.
        set("users-input", "5").await;
        set("spawn-input", "100").await;
        click("set-users").await;
        tokio::task::block_in_place(|| wait_for(&l, "5 users", |s| s["users"] == 5));
        tokio::task::block_in_place(|| run_for(&l, 1.0));
        let at5 = tokio::task::block_in_place(|| counted_over(&t, &l, 3.0));
        let elapsed = text("elapsed").await;
        tokio::task::block_in_place(|| run_for(&l, 1.0));
        tokio::time::sleep(Duration::from_millis(1500)).await;
        assert_ne!(text("elapsed").await, elapsed, "the figures update");
        assert_eq!(text("step").await, "5 users");
        assert!(text("rps").await.parse::<f64>().unwrap() > 0.0);

        // 20 users: the target counts about four times the rate.
        set("users-input", "20").await;
        click("set-users").await;
        tokio::task::block_in_place(|| wait_for(&l, "20 users", |s| s["users"] == 20));
        tokio::task::block_in_place(|| run_for(&l, 1.0));
        let at20 = tokio::task::block_in_place(|| counted_over(&t, &l, 3.0));
        assert!(at20 > at5 * 2, "20 users against 5: {at20} against {at5} requests in 3 s");

        // Pause: the target's count stands still; resume: it moves again.
        click("pause").await;
        tokio::task::block_in_place(|| wait_for(&l, "the pause", |s| s["paused"] == true));
        tokio::task::block_in_place(|| run_for(&l, 1.0));
        assert_eq!(tokio::task::block_in_place(|| counted_over(&t, &l, 2.0)), 0, "paused");
        tokio::time::sleep(Duration::from_millis(1500)).await;
        assert_eq!(text("status").await, "paused");
        click("resume").await;
        tokio::task::block_in_place(|| wait_for(&l, "the resume", |s| s["paused"] == false));
        assert!(tokio::task::block_in_place(|| counted_over(&t, &l, 2.0)) > 0, "resumed");
        tokio::time::sleep(Duration::from_millis(1500)).await;
        let rows = c.find_all(Locator::Css("#steps tbody tr")).await.unwrap().len();
        assert_eq!(rows, 5, "manual, 5 users, 20 users, paused, 20 users");
        // The verdict so far, in the reports' words: judged (valid, or crest's own limit on
        // a busy machine), and every request succeeded.
        assert_ne!(text("validity").await, "not judged yet");
        // Read in one script: the page rebuilds the list as the verdict is judged again, and an
        // element found before a rebuild is stale by the time its text is asked for.
        let said: Vec<String> = serde_json::from_value(
            c.execute(
                "return Array.from(document.querySelectorAll('#findings li')).map(e => e.innerText)",
                vec![],
            )
            .await
            .unwrap(),
        )
        .unwrap();
        assert!(
            said.iter().any(|f| f.contains("requests succeeded")),
            "the findings so far: {said:?}"
        );

        let shot = c.screenshot().await.unwrap();
        let path = std::path::Path::new(env!("CARGO_TARGET_TMPDIR")).join("../live-screenshot.png");
        std::fs::write(&path, shot).unwrap();

        // Stop on the page: the results are kept and the page shows the report.
        click("stop").await;
        c.wait()
            .at_most(Duration::from_secs(30))
            .for_element(Locator::Css("#ended:not([hidden])"))
            .await
            .unwrap();
        let shot = c.screenshot().await.unwrap();
        std::fs::write(path.with_file_name("live-screenshot-ended.png"), shot).unwrap();
        let logs = c.issue_cmd(BrowserLog).await.unwrap();
        let errors: Vec<&Value> = logs
            .as_array()
            .unwrap()
            .iter()
            .filter(|e| e["level"] == "SEVERE")
            .collect();
        c.close().await.unwrap();
        errors.into_iter().cloned().collect::<Vec<Value>>()
    });
    let _ = chromedriver.kill();
    let _ = chromedriver.wait();
    assert!(result.is_empty(), "the page logged errors: {result:#?}");
    let mut l = l;
    assert!(l.child.wait().unwrap().code().is_some());
    common::check_counts(&l.dir.path().join("results.json"));
    let results: Value =
        serde_json::from_str(&std::fs::read_to_string(l.dir.path().join("results.json")).unwrap()).unwrap();
    let steps = step_names(&results);
    assert_eq!(steps, ["manual", "5 users", "20 users", "paused", "20 users"]);
}
