//! The demo target's routes, spoken to over a plain socket.
#![allow(clippy::unwrap_used)]

use crest_demo::{spawn, Config};
use std::io::{Read, Write};
use std::net::{SocketAddr, TcpStream};
use std::time::Duration;

fn call(addr: SocketAddr, method: &str, path: &str, body: &str) -> (u16, String) {
    let mut s = TcpStream::connect(addr).unwrap();
    s.set_read_timeout(Some(Duration::from_secs(10))).unwrap();
    write!(
        s,
        "{method} {path} HTTP/1.1\r\nHost: t\r\nConnection: close\r\nContent-Type: application/json\r\nContent-Length: {}\r\n\r\n{body}",
        body.len()
    )
    .unwrap();
    let mut out = Vec::new();
    s.read_to_end(&mut out).unwrap();
    let text = String::from_utf8_lossy(&out).into_owned();
    let status = text[9..12].parse().unwrap();
    let body = text
        .split_once("\r\n\r\n")
        .map(|(_, b)| b.to_string())
        .unwrap_or_default();
    (status, body)
}

fn json(body: &str) -> serde_json::Value {
    // Chunked bodies: keep the JSON between the first '{' and the last '}'.
    let (a, b) = (body.find('{').unwrap(), body.rfind('}').unwrap());
    serde_json::from_str(&body[a..=b]).unwrap()
}

#[test]
fn task_queue_runs_tasks_asynchronously() {
    let addr = spawn("127.0.0.1:0".parse().unwrap(), Config::default()).unwrap();
    let (code, body) = call(addr, "POST", "/tasks/submissions", r#"{"type": "factorial", "n": 20}"#);
    assert_eq!(code, 201);
    let id = json(&body)["id"].as_u64().unwrap();
    std::thread::sleep(Duration::from_millis(100));
    let (_, body) = call(addr, "GET", &format!("/tasks/submissions/{id}"), "");
    assert_eq!(json(&body)["status"], "SUCCEEDED");
    let (code, body) = call(addr, "GET", &format!("/tasks/{id}"), "");
    assert_eq!(code, 200);
    assert_eq!(json(&body)["result"]["digits"], 19, "20! has 19 digits");
    assert_eq!(call(addr, "GET", "/tasks/999999", "").0, 404);
}

#[test]
fn replay_state_grows_with_the_entity_count() {
    let addr = spawn("127.0.0.1:0".parse().unwrap(), Config::default()).unwrap();
    let (code, small) = call(addr, "GET", "/replay/state?entities=10", "");
    assert_eq!(code, 200);
    let (_, big) = call(addr, "GET", "/replay/state?entities=5000", "");
    assert!(big.len() > 400 * small.len(), "{} vs {}", big.len(), small.len());
    assert!(big.contains("\"count\":5000"));
}

#[test]
fn validate_answers_on_the_diagram_type() {
    let addr = spawn("127.0.0.1:0".parse().unwrap(), Config::default()).unwrap();
    let (code, body) = call(addr, "POST", "/api/v1/validate", r#"{"diagram": "graph TD; A-->B"}"#);
    assert_eq!((code, json(&body)["valid"].as_bool()), (200, Some(true)));
    let (_, body) = call(addr, "POST", "/api/v1/validate", r#"{"diagram": "nonsense"}"#);
    assert_eq!(json(&body)["valid"], false);
    assert_eq!(call(addr, "POST", "/api/v1/validate", "not json").0, 400);
}

#[test]
fn a_full_queue_answers_503_and_metrics_count_it() {
    let config = Config {
        workers: 1,
        queue: 1,
        service_time: Duration::from_secs(1),
        leak_fd_every: Some(1),
        ..Default::default()
    };
    let addr = spawn("127.0.0.1:0".parse().unwrap(), config).unwrap();
    // The first request takes the only worker; only then do three more arrive: one fits the
    // queue, two are refused.
    let first = std::thread::spawn(move || call(addr, "GET", "/", "").0);
    let deadline = std::time::Instant::now() + Duration::from_secs(5);
    while !call(addr, "GET", "/metrics", "")
        .1
        .contains("crest_target_busy_workers 1")
    {
        assert!(
            std::time::Instant::now() < deadline,
            "the first request never reached a worker"
        );
        std::thread::sleep(Duration::from_millis(5));
    }
    let rest: Vec<_> = (0..3)
        .map(|_| std::thread::spawn(move || call(addr, "GET", "/", "").0))
        .collect();
    let mut codes: Vec<u16> = rest.into_iter().map(|h| h.join().unwrap()).collect();
    codes.push(first.join().unwrap());
    codes.sort();
    assert_eq!(codes, vec![200, 200, 503, 503], "one busy, one queued, two refused");
    let (_, metrics) = call(addr, "GET", "/metrics", "");
    assert!(metrics.contains("crest_target_rejected_total 2"), "{metrics}");
    assert!(
        metrics.contains("crest_target_leaked_fds 4"),
        "one per request: {metrics}"
    );
    assert!(Config {
        workers: 0,
        ..Default::default()
    }
    .check()
    .is_err());
}
