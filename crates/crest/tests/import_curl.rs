//! `crest import curl` end to end: each form of curl command is imported by the real binary,
//! the scenario run against a loopback server that records what it received, and the request
//! compared with what curl itself sends for that command (method, path and query, headers, body
//! bytes; multipart by its parts, whose boundary is random). The scenario never holds a secret,
//! and its .env file is private.
#![allow(clippy::unwrap_used)]

mod common;

use crest_testkit::{Received, Reply, Server};
use std::os::unix::fs::PermissionsExt;
use std::path::{Path, PathBuf};
use std::process::Command;

const PROXIES: [&str; 6] = [
    "http_proxy",
    "https_proxy",
    "HTTP_PROXY",
    "HTTPS_PROXY",
    "ALL_PROXY",
    "all_proxy",
];

fn crest() -> Command {
    let mut c = common::crest();
    // A proxy from the environment would take the loopback requests elsewhere.
    for p in PROXIES {
        c.env_remove(p);
    }
    c
}

/// What one import made: its directory, scenario and env file.
struct Imported {
    _dir: tempfile::TempDir,
    work: PathBuf,
    yaml: PathBuf,
    env: PathBuf,
}

impl Imported {
    fn scenario(&self) -> String {
        std::fs::read_to_string(&self.yaml).unwrap()
    }
}

/// A fresh directory with `files` in `work/`, where `crest import curl ARGS --out out/s.yaml`
/// runs: the scenario lives elsewhere than the files the command names, as it often does.
/// The import checks its scenario as `crest run` would, resolving the target's host, so it is
/// pointed at `target` (loopback) too: the recorded hosts are not looked up.
fn import(args: &[&str], files: &[(&str, &[u8])], target: &str) -> Imported {
    let dir = tempfile::Builder::new().prefix("curlh-").tempdir().unwrap();
    let work = dir.path().join("work");
    let out = dir.path().join("out");
    std::fs::create_dir_all(&work).unwrap();
    std::fs::create_dir_all(&out).unwrap();
    for (name, bytes) in files {
        std::fs::write(work.join(name), bytes).unwrap();
    }
    let yaml = out.join("s.yaml");
    let o = crest()
        .args(["import", "curl"])
        .args(args)
        .arg("--out")
        .arg(&yaml)
        .current_dir(&work)
        .env("CREST_TARGET", target)
        .output()
        .unwrap();
    assert!(
        o.status.success(),
        "import {args:?} failed: {}",
        String::from_utf8_lossy(&o.stderr)
    );
    Imported {
        work,
        env: out.join("s.env"),
        yaml,
        _dir: dir,
    }
}

/// Runs the scenario against `server` and returns what it received from this run.
fn run(imported: &Imported, server: &Server) -> Vec<Received> {
    let before = server.received().len();
    let out = tempfile::Builder::new().prefix("curlh-run-").tempdir().unwrap();
    let mut cmd = crest();
    cmd.arg("run").arg(&imported.yaml);
    if imported.env.exists() {
        cmd.arg("--env-file").arg(&imported.env);
    }
    let o = cmd
        .arg("--out")
        .arg(out.path())
        .args(["--summary-json", "-"])
        .env("CREST_TARGET", server.url(""))
        .output()
        .unwrap();
    let summary: serde_json::Value = serde_json::from_slice(&o.stdout).unwrap_or_else(|e| {
        panic!(
            "no summary ({e}):\n{}\n{}",
            String::from_utf8_lossy(&o.stdout),
            String::from_utf8_lossy(&o.stderr)
        )
    });
    assert_eq!(
        o.status.code(),
        Some(0),
        "{}\n{}\n{}",
        imported.scenario(),
        summary,
        String::from_utf8_lossy(&o.stderr)
    );
    assert_eq!(summary["failures"], 0, "{summary}");
    server.received()[before..].to_vec()
}

fn header<'a>(r: &'a Received, name: &str) -> Vec<&'a str> {
    r.headers
        .iter()
        .filter(|(n, _)| n.eq_ignore_ascii_case(name))
        .map(|(_, v)| v.as_str())
        .collect()
}

fn one_header<'a>(r: &'a Received, name: &str) -> &'a str {
    match header(r, name).as_slice() {
        [one] => one,
        other => panic!("{name}: {other:?} in {:?}", r.headers),
    }
}

/// The scenario holds none of `secrets`, the .env file holds each, and only its owner reads it.
fn secrets_kept_apart(imported: &Imported, secrets: &[&str]) {
    let yaml = imported.scenario();
    let env = std::fs::read_to_string(&imported.env).unwrap();
    for s in secrets {
        assert!(!yaml.contains(s), "{s:?} is in the scenario:\n{yaml}");
        assert!(env.contains(s), "{s:?} is not in the .env file:\n{env}");
    }
    let mode = std::fs::metadata(&imported.env).unwrap().permissions().mode() & 0o777;
    assert_eq!(mode, 0o600, "the .env file is mode {mode:o}");
}

/// A multipart body's parts, sent as `multipart/form-data`: each head and content.
fn parts(r: &Received) -> Vec<(String, Vec<u8>)> {
    let ct = one_header(r, "content-type");
    assert!(ct.starts_with("multipart/form-data; boundary="), "{ct}");
    r.multipart_parts()
}

#[test]
fn curl_commands_run_as_curl_sends_them() {
    let rt = common::rt();
    // A HEAD's answer has no body: the test server would otherwise send one after it.
    let server = rt.block_on(Server::start(|r, _| match r.method.as_str() {
        "HEAD" => Reply::Full {
            status: 200,
            headers: Vec::new(),
            body: Vec::new(),
        },
        _ => Reply::ok(),
    }));
    let t = server.url("");

    // --json: POST, its JSON (as a value: crest writes JSON without the spaces), the JSON
    // Accept and Content-Type curl adds, and a bearer token hidden.
    let i = import(
        &[
            r#"curl 'https://api.example.com/orders?src=cli' -H 'Authorization: Bearer tok-SECRET-1' --json '{"qty": 2, "note": "a b", "ok": true, "price": 9.5}'"#,
        ],
        &[],
        &t,
    );
    let got = run(&i, &server);
    assert_eq!(got.len(), 1);
    let r = &got[0];
    assert_eq!((r.method.as_str(), r.path.as_str()), ("POST", "/orders?src=cli"));
    assert_eq!(one_header(r, "authorization"), "Bearer tok-SECRET-1");
    assert_eq!(one_header(r, "content-type"), "application/json");
    assert_eq!(one_header(r, "accept"), "application/json");
    let body: serde_json::Value = serde_json::from_slice(&r.body).unwrap();
    assert_eq!(
        body,
        serde_json::json!({"qty": 2, "note": "a b", "ok": true, "price": 9.5})
    );
    secrets_kept_apart(&i, &["tok-SECRET-1"]);

    // -d pairs: a form, byte for byte; the password hidden.
    let i = import(
        &["curl -sS https://api.example.com/login -d user=ann -d 'password=hunter2' -d 'next=%2Fhome'"],
        &[],
        &t,
    );
    assert!(i.scenario().contains("form:"), "{}", i.scenario());
    let r = &run(&i, &server)[0];
    assert_eq!((r.method.as_str(), r.path.as_str()), ("POST", "/login"));
    assert_eq!(one_header(r, "content-type"), "application/x-www-form-urlencoded");
    assert_eq!(r.body, b"user=ann&password=hunter2&next=%2Fhome");
    secrets_kept_apart(&i, &["hunter2"]);

    // -d text that crest's form would encode otherwise is sent as it is.
    let i = import(
        &["curl https://api.example.com/legacy -d 'path=/a/b c&token=t/o'"],
        &[],
        &t,
    );
    let r = &run(&i, &server)[0];
    assert_eq!(r.body, b"path=/a/b c&token=t/o");
    assert_eq!(one_header(r, "content-type"), "application/x-www-form-urlencoded");
    secrets_kept_apart(&i, &["t/o"]);

    // -F: a value part and file parts, named and typed as curl does (by extension, or ;type=).
    let png: Vec<u8> = (0..=255u8).chain(*b"\r\n--x\r\n").collect();
    let i = import(
        &["curl -F 'title=My cat' -F 'photo=@cat.png' -F 'notes=@notes.md;type=text/markdown' https://api.example.com/upload"],
        &[("cat.png", &png), ("notes.md", b"# hi\n")], &t);
    let r = &run(&i, &server)[0];
    assert_eq!((r.method.as_str(), r.path.as_str()), ("POST", "/upload"));
    let p = parts(r);
    assert_eq!(p.len(), 3);
    assert_eq!(p[0].0, "Content-Disposition: form-data; name=\"title\"");
    assert_eq!(p[0].1, b"My cat");
    assert_eq!(
        p[1].0,
        "Content-Disposition: form-data; name=\"photo\"; filename=\"cat.png\"\r\nContent-Type: image/png"
    );
    assert_eq!(p[1].1, png);
    assert_eq!(
        p[2].0,
        "Content-Disposition: form-data; name=\"notes\"; filename=\"notes.md\"\r\nContent-Type: text/markdown"
    );
    assert_eq!(p[2].1, b"# hi\n");

    // --data-binary @file: the file's bytes as they are, named from where the import ran.
    let blob: Vec<u8> = (0..=255u8).rev().chain(*b"\n\r\n").collect();
    let i = import(
        &["curl -X PUT --data-binary @blob.bin https://api.example.com/raw/7"],
        &[("blob.bin", &blob)],
        &t,
    );
    let r = &run(&i, &server)[0];
    assert_eq!((r.method.as_str(), r.path.as_str()), ("PUT", "/raw/7"));
    assert_eq!(r.body, blob);
    assert_eq!(one_header(r, "content-type"), "application/x-www-form-urlencoded");
    let _ = &i.work;

    // -u, -b and -H: Basic authorization, one Cookie header, the headers given; -A and -e.
    let i = import(
        &["curl -u 'ann:pa ss:w0rd' -b 'theme=dark; session_id=s3ss10n' -H 'X-Trace: abc' -H 'Accept: text/html' -A 'agent/1.0' -e https://ref.example/ https://api.example.com/me"],
        &[], &t);
    let r = &run(&i, &server)[0];
    assert_eq!((r.method.as_str(), r.path.as_str()), ("GET", "/me"));
    // base64("ann:pa ss:w0rd")
    assert_eq!(one_header(r, "authorization"), "Basic YW5uOnBhIHNzOncwcmQ=");
    assert_eq!(one_header(r, "cookie"), "theme=dark; session_id=s3ss10n");
    assert_eq!(one_header(r, "x-trace"), "abc");
    assert_eq!(one_header(r, "accept"), "text/html");
    assert_eq!(one_header(r, "user-agent"), "agent/1.0");
    assert_eq!(one_header(r, "referer"), "https://ref.example/");
    assert!(r.body.is_empty());
    secrets_kept_apart(&i, &["s3ss10n", "YW5uOnBhIHNzOncwcmQ="]);
    assert!(!i.scenario().contains("pa ss:w0rd"));

    // -G: the data, encoded as curl encodes it, in the query; a GET without a body.
    let i = import(
        &["curl -G https://api.example.com/search?lang=en --data-urlencode 'q=red shoes&more' -d page=2 -d api_key=K3Y"],
        &[], &t);
    let r = &run(&i, &server)[0];
    assert_eq!(r.method, "GET");
    assert_eq!(r.path, "/search?lang=en&q=red+shoes%26more&page=2&api_key=K3Y");
    assert!(r.body.is_empty());
    secrets_kept_apart(&i, &["K3Y"]);

    // -I: a HEAD.
    let i = import(&["curl -I https://api.example.com/health"], &[], &t);
    let r = &run(&i, &server)[0];
    assert_eq!((r.method.as_str(), r.path.as_str()), ("HEAD", "/health"));

    // A "copy all as cURL (bash)" file from stdin: each command one request, in order; Chrome's
    // $'...' body decoded.
    let text = "curl 'https://api.example.com/a' -H 'accept: */*' --compressed ;\n\
                curl 'https://api.example.com/b' \\\n  -H 'content-type: text/plain;charset=UTF-8' \\\n  --data-raw $'line 1\\nit\\'s \\u00e9' ;\n\
                curl 'https://api.example.com/c' -X DELETE\n";
    let file = tempfile::Builder::new().prefix("curlh-all-").tempdir().unwrap();
    let all = file.path().join("all.sh");
    std::fs::write(&all, text).unwrap();
    let i = import(&["--file", all.to_str().unwrap()], &[], &t);
    let got = run(&i, &server);
    let seen: Vec<(&str, &str)> = got.iter().map(|r| (r.method.as_str(), r.path.as_str())).collect();
    assert_eq!(seen, vec![("GET", "/a"), ("POST", "/b"), ("DELETE", "/c")]);
    assert_eq!(got[1].body, "line 1\nit's é".as_bytes());
    assert_eq!(one_header(&got[1], "content-type"), "text/plain;charset=UTF-8");
    assert!(header(&got[0], "accept-encoding").iter().any(|v| v.contains("gzip")));
}

#[test]
fn an_option_crest_cannot_send_exits_2_naming_it() {
    for (cmd, option) in [
        ("curl --proxy-ntlm https://api.example.com/", "--proxy-ntlm"),
        ("curl -sT file.txt https://api.example.com/", "-T"),
        ("curl --unix-socket /run/x.sock http://localhost/", "--unix-socket"),
        ("curl -X 'GE T' http://localhost/", "-X"),
    ] {
        let dir = tempfile::Builder::new().prefix("curlh-bad-").tempdir().unwrap();
        let out = dir.path().join("s.yaml");
        let o = crest()
            .args(["import", "curl", cmd, "--out"])
            .arg(&out)
            .output()
            .unwrap();
        let stderr = String::from_utf8_lossy(&o.stderr);
        assert_eq!(o.status.code(), Some(2), "{cmd}: {stderr}");
        assert!(stderr.contains(&format!("curl option {option}:")), "{cmd}: {stderr}");
        assert!(!Path::new(&out).exists(), "{cmd}: wrote a scenario");
    }
    // A body file that is not here is the command's mistake, not a scenario crest cannot
    // validate ("please report it" was said).
    let dir = tempfile::Builder::new().prefix("curlh-bad-").tempdir().unwrap();
    let o = crest()
        .current_dir(dir.path())
        .args([
            "import",
            "curl",
            "curl --data-binary @gone.bin https://api.example.com/up",
            "--out",
            "s.yaml",
        ])
        .output()
        .unwrap();
    let stderr = String::from_utf8_lossy(&o.stderr);
    assert_eq!(o.status.code(), Some(2), "{stderr}");
    assert!(
        stderr.contains("gone.bin: no such file here; POST") && !stderr.contains("report"),
        "{stderr}"
    );
    assert!(!dir.path().join("s.yaml").exists());
    let o = crest()
        .args(["import", "curl", "wget https://api.example.com/"])
        .output()
        .unwrap();
    assert_eq!(o.status.code(), Some(2));
    assert!(String::from_utf8_lossy(&o.stderr).contains("is not a curl command"));
}

#[test]
fn commands_from_stdin_run_in_order() {
    use std::io::Write;
    let rt = common::rt();
    let server = rt.block_on(Server::start(|_, _| Reply::ok()));
    let dir = tempfile::Builder::new().prefix("curlh-stdin-").tempdir().unwrap();
    let yaml = dir.path().join("s.yaml");
    let mut child = crest()
        .args(["import", "curl", "-", "--out"])
        .arg(&yaml)
        .env("CREST_TARGET", server.url(""))
        .stdin(std::process::Stdio::piped())
        .stderr(std::process::Stdio::piped())
        .spawn()
        .unwrap();
    child
        .stdin
        .take()
        .unwrap()
        .write_all(b"curl https://api.example.com/first -X PATCH --data-raw $'{\\'a\\':1}' && \\\ncurl https://api.example.com/second?x=1\n")
        .unwrap();
    let o = child.wait_with_output().unwrap();
    assert!(o.status.success(), "{}", String::from_utf8_lossy(&o.stderr));
    let i = Imported {
        work: dir.path().to_path_buf(),
        env: dir.path().join("s.env"),
        yaml,
        _dir: dir,
    };
    assert!(!i.env.exists(), "no secrets, no .env file");
    let got = run(&i, &server);
    let seen: Vec<(&str, &str, &[u8])> = got
        .iter()
        .map(|r| (r.method.as_str(), r.path.as_str(), r.body.as_slice()))
        .collect();
    assert_eq!(
        seen,
        vec![("PATCH", "/first", &b"{'a':1}"[..]), ("GET", "/second?x=1", &b""[..])]
    );
}
