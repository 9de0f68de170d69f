//! HTTP client features through the binary: cookies per virtual user and compressed bodies
//! read by checks (issue 15).
#![allow(clippy::unwrap_used)]

mod common;

use common::{rt, run_scenario, scenario_file};
use crest_testkit::{Received, Reply, Server};

#[test]
fn issue_15_each_user_keeps_its_login_cookie_and_checks_read_gzip_bodies() {
    let _serial = common::serial();
    rt().block_on(async {
        let server = Server::start(|req: &Received, i| {
            let cookie = req
                .headers
                .iter()
                .find(|(n, _)| n.eq_ignore_ascii_case("cookie"))
                .map(|(_, v)| v.clone());
            match (req.path.as_str(), cookie) {
                ("/login", _) => Reply::Full {
                    status: 204,
                    headers: vec![("Set-Cookie".into(), format!("sid=user-{i}; Path=/; HttpOnly"))],
                    body: Vec::new(),
                },
                (_, Some(_)) => Reply::encoded("gzip", br#"{"ok": true, "items": [1, 2]}"#),
                _ => Reply::json(401, "{}"),
            }
        })
        .await;
        let (_dir, file) = scenario_file(&format!(
            r#"
target: http://{}
on_start:
  - request: {{method: POST, path: /login}}
steps:
  - request:
      path: /data
      check: {{json: {{"$.ok": true}}}}
  - think: 10ms
load: {{users: 3, duration: 1s}}
"#,
            server.addr
        ));
        let r = tokio::task::spawn_blocking(move || run_scenario(&file, &[], &[]))
            .await
            .unwrap();
        assert_eq!(r.code, 0, "{}", r.stderr);
        assert_eq!(r.error_count("check_failed"), 0, "{}", r.stdout);
        assert_eq!(r.error_count("http_401"), 0, "{}", r.stdout);
        let got = server.received();
        for login in got.iter().filter(|q| q.path == "/login") {
            let sid = format!("sid=user-{}", login.index);
            let data: Vec<&Received> = got
                .iter()
                .filter(|q| q.connection == login.connection && q.path == "/data")
                .collect();
            assert!(data.len() > 5);
            assert!(data.iter().all(|q| q
                .headers
                .iter()
                .any(|(n, v)| n.eq_ignore_ascii_case("cookie") && *v == sid)));
        }
    });
}
