//! Every run writes its reports; `crest report` recreates them from results.json alone;
//! `crest compare` puts two runs side by side.
#![allow(clippy::unwrap_used)]

mod common;

use common::{crest, rt, run_async};
use crest_testkit::{Reply, Server};
use std::time::Duration;

#[test]
fn reports_are_written_re_rendered_and_compared() {
    let _serial = common::serial();
    rt().block_on(async {
        let server = Server::start(|_, _| Reply::delayed(Duration::from_millis(5))).await;
        let a = run_async(&server.url("/"), &["-c", "4", "-d", "2s"]).await;
        let b = run_async(&server.url("/"), &["-c", "8", "-d", "2s"]).await;
        assert_eq!((a.code, b.code), (0, 0), "{}", a.stderr);
        for f in crest_report::RUN_FILES {
            assert!(a.dir.path().join(f).exists(), "{f} missing");
        }
        let md = std::fs::read_to_string(a.dir.path().join("report.md")).unwrap();
        assert!(
            md.contains("## Key findings") && md.contains("All ") && md.contains("GET http://127.0.0.1:"),
            "{md}"
        );

        // Only results.json is needed to write every report again, identically.
        for f in crest_report::RUN_FILES {
            std::fs::remove_file(a.dir.path().join(f)).unwrap();
        }
        let out = crest().arg("report").arg(a.dir.path()).output().unwrap();
        assert_eq!(out.status.code(), Some(0), "{}", String::from_utf8_lossy(&out.stderr));
        assert_eq!(std::fs::read_to_string(a.dir.path().join("report.md")).unwrap(), md);
        assert!(String::from_utf8_lossy(&out.stdout).contains("Latency ms"));

        let cmp = tempfile::tempdir().unwrap();
        let out = crest()
            .arg("compare")
            .arg(a.dir.path())
            .arg(b.dir.path())
            .arg("--out")
            .arg(cmp.path())
            .output()
            .unwrap();
        assert_eq!(out.status.code(), Some(0), "{}", String::from_utf8_lossy(&out.stderr));
        let table = String::from_utf8_lossy(&out.stdout);
        assert!(
            table.contains("| throughput, failures included |") && table.contains("| successes' p50 latency |"),
            "{table}"
        );
        let json: serde_json::Value =
            serde_json::from_str(&std::fs::read_to_string(cmp.path().join("compare.json")).unwrap()).unwrap();
        let tput = json["rows"]
            .as_array()
            .unwrap()
            .iter()
            .find(|r| r["metric"] == "throughput, failures included")
            .unwrap();
        // Twice the users against a 5 ms server: about twice the throughput.
        assert!(tput["change_pct"][1].as_f64().unwrap() > 50.0, "{tput}");
        assert!(cmp.path().join("compare.html").exists() && cmp.path().join("compare.md").exists());
    });
}

#[test]
fn report_and_compare_name_a_bad_path() {
    let _serial = common::serial();
    let out = crest().args(["report", "/no/such/run"]).output().unwrap();
    assert_eq!(out.status.code(), Some(2));
    assert!(String::from_utf8_lossy(&out.stderr).contains("/no/such/run"));
    let f = tempfile::NamedTempFile::new().unwrap();
    std::fs::write(f.path(), "{\"not\": \"results\"}").unwrap();
    let out = crest().arg("compare").arg(f.path()).arg(f.path()).output().unwrap();
    assert_eq!(out.status.code(), Some(2));
    assert!(String::from_utf8_lossy(&out.stderr).contains("not a crest results document"));
}

/// A results document edited by hand or cut short is refused by the field that is wrong, said
/// once, and never panics a renderer: a time past any run's length (once a panic in the
/// interval log), a histogram that is not base64.
#[test]
fn report_names_the_field_of_a_broken_results_document() {
    let _serial = common::serial();
    let good = serde_json::to_value(crest_testkit::results::stepping_fixture()).unwrap();
    type Edit = fn(&mut serde_json::Value);
    let cases: [(&str, Edit); 2] = [
        ("intervals[3].t_s is 1.8446744073709552e19", |v| {
            v["intervals"][3]["t_s"] = serde_json::json!(u64::MAX)
        }),
        ("histogram is not valid base64", |v| {
            v["intervals"][2]["latency"] = serde_json::json!("HISTF!!!!")
        }),
    ];
    for (said, edit) in cases {
        let dir = tempfile::tempdir().unwrap();
        let mut v = good.clone();
        edit(&mut v);
        std::fs::write(dir.path().join("results.json"), v.to_string()).unwrap();
        let out = crest().arg("report").arg(dir.path()).output().unwrap();
        let err = String::from_utf8_lossy(&out.stderr);
        assert_eq!(out.status.code(), Some(2), "{err}");
        assert!(
            err.contains(said) && err.contains(&dir.path().display().to_string()),
            "{err}"
        );
        assert_eq!(err.matches(said).count(), 1, "said once: {err}");
    }
}

/// Text a server sends (here quoted by a failed check's message) never becomes markup in
/// report.md, nor a formula or markup in failures.csv.
#[test]
fn server_text_is_inert_in_every_report() {
    let _serial = common::serial();
    rt().block_on(async {
        let server =
            Server::start(|_, _| Reply::json(200, r#"{"state": "<script>alert(1)</script>`=cmd"}"#)).await;
        let (_d, file) = common::scenario_file(&format!(
            "target: http://{}\nsteps:\n  - request: {{path: /, check: {{json: {{\"$.state\": ready}}}}}}\nload: {{threads: 2, loops: 3}}\n",
            server.addr
        ));
        let r = tokio::task::spawn_blocking(move || common::run_scenario(&file, &[], &["--quiet"]))
            .await
            .unwrap();
        let example = r.summary()["errors"][0]["example"].as_str().unwrap().to_string();
        assert!(example.contains("<script>"), "the example quotes the server: {example}");
        for f in ["report.md", "failures.csv", "report.html"] {
            let text = std::fs::read_to_string(r.dir.path().join(f)).unwrap();
            assert!(!text.contains("<script>alert"), "{f} carries the server's markup:\n{text}");
        }
        let md = std::fs::read_to_string(r.dir.path().join("report.md")).unwrap();
        assert!(md.contains("&lt;script&gt;alert(1)"), "{md}");
    });
}
