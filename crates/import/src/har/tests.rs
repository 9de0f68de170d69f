use super::*;
use crate::Extract;
use base64::Engine as _;
use serde_json::json;

/// An entry as a browser writes it, started `at` ms into the session and lasting 20 ms.
struct E {
    method: &'static str,
    url: String,
    at: u64,
    headers: Vec<(&'static str, String)>,
    post: Option<(&'static str, String)>,
    status: u16,
    response_headers: Vec<(&'static str, String)>,
    mime: &'static str,
    body: String,
    kind: Option<&'static str>,
}

fn e(method: &'static str, path: &str, at: u64) -> E {
    E {
        method,
        url: format!("https://shop.example{path}"),
        at,
        headers: vec![("User-Agent", "Mozilla/5.0".into())],
        post: None,
        status: 200,
        response_headers: Vec::new(),
        mime: "application/json",
        body: String::new(),
        kind: None,
    }
}

impl E {
    fn header(mut self, n: &'static str, v: &str) -> E {
        self.headers.push((n, v.into()));
        self
    }
    fn post(mut self, mime: &'static str, text: &str) -> E {
        self.post = Some((mime, text.into()));
        self
    }
    fn answer(mut self, status: u16, mime: &'static str, body: &str) -> E {
        self.status = status;
        self.mime = mime;
        self.body = body.into();
        self
    }
    fn response_header(mut self, n: &'static str, v: &str) -> E {
        self.response_headers.push((n, v.into()));
        self
    }
    fn kind(mut self, k: &'static str) -> E {
        self.kind = Some(k);
        self
    }
    fn json(&self) -> Value {
        let hs = |h: &[(&str, String)]| {
            h.iter()
                .map(|(n, v)| json!({"name": n, "value": v}))
                .collect::<Vec<_>>()
        };
        let start = chrono::DateTime::from_timestamp_millis(1_700_000_000_000 + self.at as i64).unwrap();
        let mut v = json!({
            "startedDateTime": start.to_rfc3339_opts(chrono::SecondsFormat::Millis, true),
            "time": 20,
            "request": {"method": self.method, "url": self.url, "httpVersion": "HTTP/1.1", "headers": hs(&self.headers), "queryString": [], "cookies": [], "headersSize": -1, "bodySize": 0},
            "response": {"status": self.status, "statusText": "", "httpVersion": "HTTP/1.1", "headers": hs(&self.response_headers), "cookies": [],
                "content": {"size": self.body.len(), "mimeType": self.mime, "text": self.body}, "redirectURL": "", "headersSize": -1, "bodySize": -1},
            "cache": {}, "timings": {"send": 0, "wait": 20, "receive": 0}
        });
        if let Some((mime, text)) = &self.post {
            v["request"]["postData"] = json!({"mimeType": mime, "text": text});
        }
        if let Some(k) = self.kind {
            v["_resourceType"] = json!(k);
        }
        v
    }
}

fn har(entries: &[E]) -> String {
    json!({"log": {"version": "1.2", "creator": {"name": "Firefox", "version": "120.0"},
        "entries": entries.iter().map(E::json).collect::<Vec<_>>()}})
    .to_string()
}

fn import_all(entries: &[E]) -> Imported {
    import(&har(entries), "s.har", &HarOptions::default()).unwrap()
}

fn requests(i: &Imported) -> Vec<&Request> {
    i.flows[0]
        .steps
        .iter()
        .filter_map(|s| match s {
            Step::Request(r) => Some(&**r),
            Step::Think(_) => None,
        })
        .collect()
}

const CART: &str = "3f2a9c1e-8d7b-4c1a-9e2f-0a1b2c3d4e5f";

#[test]
fn a_json_id_is_carried_into_a_later_path() {
    let i = import_all(&[
        e("POST", "/carts", 0)
            .post("application/json", r#"{"items":[]}"#)
            .answer(
                201,
                "application/json",
                &format!(r#"{{"cart":{{"id":"{CART}","total":0}}}}"#),
            ),
        e("GET", &format!("/carts/{CART}?view=full"), 1000),
    ]);
    let r = requests(&i);
    assert_eq!(r[0].extract.get("cart_id"), Some(&Extract::Json("$.cart.id".into())));
    assert_eq!(r[1].path.as_deref(), Some("/carts/${cart_id}?view=full"));
    assert_eq!(r[0].status, [201]);
    assert_eq!(i.correlated[0].variable, "cart_id");
    assert_eq!(i.correlated[0].from, "$.cart.id of POST /carts (step 1)");
    assert_eq!(i.correlated[0].to, ["the path of GET /carts/{cart_id} (step 2)"]);
    assert_eq!(
        i.made_from,
        ["HAR 1.2 recording s.har (by Firefox 120.0): 2 of 2 entries"]
    );
    // The recorded gap, less the first request's 20 ms.
    assert!(
        matches!(i.flows[0].steps[1], Step::Think(980)),
        "{:?}",
        i.flows[0].steps
    );
}

#[test]
fn a_hidden_csrf_input_is_carried_into_a_form_field() {
    let page = r#"<form method="post"><input type="hidden" name="csrf_token" value="Zx9-TOKEN-8812"><input name="user"></form>"#;
    let i = import_all(&[
        e("GET", "/login", 0)
            .answer(200, "text/html; charset=utf-8", page)
            .kind("document"),
        e("POST", "/login", 3000)
            .header("Content-Type", "application/x-www-form-urlencoded")
            .post(
                "application/x-www-form-urlencoded",
                "user=ann&password=hunter22&csrf_token=Zx9-TOKEN-8812",
            ),
    ]);
    let r = requests(&i);
    let Some(Extract::Regex(re)) = r[0].extract.get("csrf_token") else {
        panic!("{:?}", r[0].extract)
    };
    let fresh = page.replace("Zx9-TOKEN-8812", "other-1");
    assert_eq!(&regex::Regex::new(re).unwrap().captures(&fresh).unwrap()[1], "other-1");
    let Some(Body::Form(form)) = &r[1].body else { panic!() };
    assert_eq!(form["csrf_token"], "${csrf_token}");
    assert_eq!(form["user"], "ann");
    // A secret not carried from a response is read from the environment.
    assert_eq!(form["password"], "${env:PASSWORD}");
    assert_eq!(i.secrets.iter().next().unwrap().value, "hunter22");
    // The form's content type is crest's to set.
    assert!(!r[1].headers.contains_key("Content-Type"));
    assert_eq!(i.flows[0].steps.len(), 3);
    assert!(matches!(i.flows[0].steps[1], Step::Think(2980)));
}

#[test]
fn a_response_header_token_is_carried_into_a_request_header() {
    let i = import_all(&[
        e("POST", "/carts", 0).response_header("X-Request-Token", "rt-5f6e7d8c9b"),
        e("PUT", "/carts/1/items", 500)
            .header("X-Request-Token", "rt-5f6e7d8c9b")
            .header("Authorization", "Bearer rt-5f6e7d8c9b"),
    ]);
    let r = requests(&i);
    assert_eq!(
        r[0].extract.get("x_request_token"),
        Some(&Extract::Header("X-Request-Token".into()))
    );
    assert_eq!(r[1].headers["X-Request-Token"], "${x_request_token}");
    // Carried, so not a secret of the file.
    assert_eq!(r[1].headers["Authorization"], "Bearer ${x_request_token}");
    assert!(i.secrets.is_empty());
    assert_eq!(
        i.correlated[0].to,
        [
            "header X-Request-Token of PUT /carts/1/items (step 2)",
            "header Authorization of PUT /carts/1/items (step 2)"
        ]
    );
}

#[test]
fn a_location_path_is_carried_into_later_paths() {
    let i = import_all(&[
        e("POST", "/orders", 0)
            .post("application/json", "{}")
            .answer(201, "application/json", "{}")
            .response_header("Location", "/orders/ord-77123"),
        e("GET", "/orders/ord-77123/receipt", 400),
    ]);
    let r = requests(&i);
    assert_eq!(r[0].extract.get("location"), Some(&Extract::Header("Location".into())));
    assert_eq!(r[1].path.as_deref(), Some("${location}/receipt"));
}

#[test]
fn short_common_and_echoed_values_are_left_alone() {
    let i = import_all(&[
        e("GET", "/app?build=b-2024-11", 0).answer(200, "application/json", r#"{"lang":"en"}"#),
        e("POST", "/search", 100)
            .post("application/json", r#"{"q":"lamps-42"}"#)
            .answer(
                200,
                "application/json",
                r#"{"q":"lamps-42","page":2,"ok":true,"state":"active","build":"b-2024-11","price":"12.50"}"#,
            ),
        e(
            "GET",
            "/search/2?q=lamps-42&ok=true&state=active&build=b-2024-11&price=12.50&lang=en",
            200,
        ),
    ]);
    let r = requests(&i);
    assert!(i.correlated.is_empty(), "{:?}", i.correlated);
    assert_eq!(
        r[2].path.as_deref(),
        Some("/search/2?q=lamps-42&ok=true&state=active&build=b-2024-11&price=12.50&lang=en")
    );
}

#[test]
fn a_short_numeric_id_is_carried_into_a_whole_segment() {
    let i = import_all(&[
        e("POST", "/plans", 0)
            .post("application/json", r#"{"name":"nightly"}"#)
            .answer(201, "application/json", r#"{"id":7,"name":"nightly","state":"draft"}"#),
        e("PUT", "/plans/7/state", 100).post("application/json", r#"{"state":"approved"}"#),
    ]);
    let r = requests(&i);
    assert_eq!(r[1].path.as_deref(), Some("/plans/${plan_id}/state"));
    assert_eq!(r[0].extract.get("plan_id"), Some(&Extract::Json("$.id".into())));
    let Some(Body::Json(body)) = &r[1].body else { panic!() };
    assert_eq!(body, &json!({"state": "approved"}));
}

#[test]
fn the_most_recent_response_gives_a_value_and_recorded_dollars_stay_literal() {
    let i = import_all(&[
        e("GET", "/a", 0).answer(200, "application/json", r#"{"nonce":"n0nce-1234"}"#),
        e("GET", "/b", 100).answer(200, "application/json", r#"{"x":{"nonce":"n0nce-1234"}}"#),
        e("POST", "/c", 200).post("text/plain", "nonce=n0nce-1234 ${literal}"),
    ]);
    let r = requests(&i);
    assert!(r[0].extract.is_empty());
    assert_eq!(r[1].extract.get("nonce"), Some(&Extract::Json("$.x.nonce".into())));
    let Some(Body::Text(t)) = &r[2].body else { panic!() };
    assert_eq!(t, "nonce=${nonce} $${literal}");
}

#[test]
fn static_assets_other_hosts_and_followed_redirects_are_left_out() {
    let mut redirect = e("POST", "/login", 100)
        .answer(302, "text/html", "")
        .response_header("Location", "/home");
    redirect
        .response_headers
        .push(("Set-Cookie", "sid=abc123xyz; Path=/; HttpOnly".into()));
    let entries = [
        e("GET", "/", 0)
            .answer(200, "text/html", "<html></html>")
            .kind("document"),
        redirect,
        e("GET", "/home", 150).answer(200, "text/html", "<p>hi</p>"),
        e("GET", "/static/app.js", 160).answer(200, "application/javascript", ""),
        e("GET", "/logo.png", 170).answer(200, "image/png", ""),
        e("GET", "/font", 175).kind("font"),
        E {
            url: "https://www.google-analytics.com/collect?v=1".into(),
            ..e("GET", "", 180)
        },
        e("OPTIONS", "/api/x", 190).header("Access-Control-Request-Method", "PUT"),
        e("GET", "/api/me", 200).header("Cookie", "sid=abc123xyz"),
        e("GET", "/api/prefs", 300).header("Cookie", "sid=abc123xyz; theme=dark"),
    ];
    let i = import_all(&entries);
    let r = requests(&i);
    let paths: Vec<&str> = r.iter().map(|r| r.path.as_deref().unwrap()).collect();
    assert_eq!(paths, ["/", "/login", "/api/me", "/api/prefs"]);
    assert_eq!(i.defaults.redirects, Some(REDIRECTS));
    // The redirect's check is the followed hop's status: crest follows it.
    assert_eq!(r[1].status, [200]);
    // The jar sends the cookie a response set; one never set stays a header, from the environment.
    assert!(!r[2].headers.contains_key("Cookie"));
    assert_eq!(r[3].headers["Cookie"], "${env:COOKIE}");
    assert_eq!(i.secrets.iter().next().unwrap().value, "theme=dark");
    assert_eq!(
        i.made_from[0],
        "HAR 1.2 recording s.har (by Firefox 120.0): 4 of 10 entries"
    );
    let note = &i.notes[0];
    assert!(note.starts_with("Left out 6 of 10 entries: 3 static assets"), "{note}");
    assert!(
        note.contains("1 to other hosts than https://shop.example (www.google-analytics.com;"),
        "{note}"
    );
    assert!(note.contains("1 redirect the browser followed"), "{note}");
    assert!(note.contains("1 CORS preflight"), "{note}");
    // The same User-Agent on every request is said once.
    assert_eq!(i.defaults.headers["User-Agent"], "Mozilla/5.0");
    assert!(r.iter().all(|r| !r.headers.contains_key("User-Agent")));

    let all = import(
        &har(&entries),
        "s.har",
        &HarOptions {
            keep_static: true,
            max_think_ms: None,
        },
    )
    .unwrap();
    let r = requests(&all);
    assert_eq!(r.len(), 8);
    assert_eq!(
        r[5].url.as_deref(),
        Some("https://www.google-analytics.com/collect?v=1")
    );
    assert!(all.flows[0].steps.iter().all(|s| matches!(s, Step::Request(_))));
}

#[test]
fn browser_noise_headers_are_dropped_and_failures_are_not_checked() {
    let i = import_all(&[e("GET", "/x", 0)
        .header(":authority", "shop.example")
        .header("Accept", "application/json")
        .header("Accept-Encoding", "gzip, br")
        .header("sec-ch-ua", "\"Chromium\"")
        .header("Sec-Fetch-Mode", "cors")
        .header("Content-Length", "0")
        .header("X-App-Version", "3.1")
        .answer(404, "application/json", "{}")]);
    let r = requests(&i);
    let names: Vec<&str> = r[0].headers.keys().map(String::as_str).collect();
    assert_eq!(names, ["User-Agent", "Accept", "X-App-Version"]);
    assert!(i.defaults.compression);
    assert!(r[0].status.is_empty());
    assert!(i.notes.iter().any(|n| n.contains("entry 1 (404)")), "{:?}", i.notes);
}

#[test]
fn think_times_are_capped_or_dropped() {
    let entries = [e("GET", "/a", 0), e("GET", "/b", 60_000), e("GET", "/c", 60_050)];
    let i = import_all(&entries);
    let thinks: Vec<u64> = i.flows[0]
        .steps
        .iter()
        .filter_map(|s| match s {
            Step::Think(ms) => Some(*ms),
            Step::Request(_) => None,
        })
        .collect();
    assert_eq!(thinks, [5000]);
    let none = import(
        &har(&entries),
        "s.har",
        &HarOptions {
            keep_static: false,
            max_think_ms: None,
        },
    )
    .unwrap();
    assert_eq!(none.flows[0].steps.len(), 3);
}

#[test]
fn entries_are_taken_in_the_order_they_started() {
    let i = import_all(&[e("GET", "/second", 500), e("GET", "/first", 0)]);
    let paths: Vec<&str> = requests(&i).iter().map(|r| r.path.as_deref().unwrap()).collect();
    assert_eq!(paths, ["/first", "/second"]);
}

#[test]
fn bad_input_is_refused_naming_what_is_wrong() {
    let err = |text: &str| import(text, "rec.har", &HarOptions::default()).unwrap_err().to_string();
    assert!(
        err("not json").starts_with("rec.har: not a HAR recording: not JSON"),
        "{}",
        err("not json")
    );
    assert_eq!(
        err(r#"{"log":{"version":"1.2"}}"#),
        "rec.har: not a HAR recording: it has no log.entries list"
    );
    assert_eq!(
        err(r#"{"a":1}"#),
        "rec.har: not a HAR recording: it has no \"log\" object"
    );
    assert_eq!(
        err(r#"{"log":{"version":"1.1","entries":[]}}"#),
        "rec.har: HAR 1.1 is not supported: crest reads HAR 1.2"
    );
    let mut no_url = e("GET", "/a", 0).json();
    no_url["request"]["url"] = json!("");
    let two = json!({"log": {"version": "1.2", "entries": [e("GET", "/a", 0).json(), no_url]}}).to_string();
    assert_eq!(err(&two), "rec.har: entry 2 (no URL): its request has no URL");
    let mut bad = e("GET", "/a", 0).json();
    bad["request"]["url"] = json!("http://[::1");
    let one = json!({"log": {"version": "1.2", "entries": [bad]}}).to_string();
    assert!(
        err(&one).starts_with("rec.har: entry 1 (http://[::1): its URL does not parse"),
        "{}",
        err(&one)
    );
    assert!(err(r#"{"log":{"version":"1.2","entries":[]}}"#).contains("no HTTP requests"));
    // An entry edited by hand: each was read as something else (a POST replayed as GET, every
    // header dropped, think times changed), without a word.
    let broken = |edit: &dyn Fn(&mut serde_json::Value)| {
        let mut x = e("POST", "/plans", 0).json();
        edit(&mut x);
        err(&json!({"log": {"version": "1.2", "entries": [x]}}).to_string())
    };
    let said = broken(&|x| {
        x["request"].as_object_mut().unwrap().remove("method");
    });
    assert!(said.ends_with("its request has no method"), "{said}");
    let said = broken(&|x| x["request"]["method"] = json!(5));
    assert!(said.ends_with("its method 5 is not text"), "{said}");
    let said = broken(&|x| x["request"]["headers"] = json!({"Authorization": "Bearer x"}));
    assert!(
        said.contains("its request's headers are not a list") && said.contains("found an object"),
        "{said}"
    );
    let said = broken(&|x| x["request"]["headers"] = json!([{"name": "A"}]));
    assert!(said.contains("its request header 1 is not"), "{said}");
    let said = broken(&|x| x["startedDateTime"] = json!("yesterday"));
    assert!(
        said.contains("its startedDateTime \"yesterday\" is not a date and time"),
        "{said}"
    );
    // No log.version: read as 1.2, and said to be.
    let unversioned = json!({"log": {"entries": [e("GET", "/a", 0).json()]}}).to_string();
    let imported = import(&unversioned, "rec.har", &HarOptions::default()).unwrap();
    assert!(
        imported.made_from[0].contains("it gives no log.version: read as HAR 1.2"),
        "{:?}",
        imported.made_from
    );
}

#[test]
fn a_base64_response_is_read_for_values_to_carry() {
    let mut first = e("POST", "/session", 0).json();
    first["response"]["content"] = json!({"mimeType": "application/json", "encoding": "base64",
        "text": base64::engine::general_purpose::STANDARD.encode(r#"{"session":{"id":"s-88812345"}}"#)});
    let text =
        json!({"log": {"version": "1.2", "entries": [first, e("GET", "/s/s-88812345", 100).json()]}}).to_string();
    let i = import(&text, "s.har", &HarOptions::default()).unwrap();
    assert_eq!(requests(&i)[1].path.as_deref(), Some("/s/${session_id}"));
}

#[test]
fn the_same_recording_gives_the_same_scenario() {
    let entries = [
        e("POST", "/carts", 0).answer(201, "application/json", &format!(r#"{{"cart":{{"id":"{CART}"}}}}"#)),
        e("GET", &format!("/carts/{CART}"), 100),
    ];
    let a = crate::write::files(&import_all(&entries), "a.yaml", Some("a.env")).unwrap();
    let b = crate::write::files(&import_all(&entries), "a.yaml", Some("a.env")).unwrap();
    assert_eq!(a, b);
}

#[test]
fn json_written_into_a_page_is_carried() {
    let page = r#"<html><script>window.__APP__ = {"session":{"apiNonce":"nz-55aa77cc"}};</script></html>"#;
    let i = import_all(&[
        e("GET", "/", 0).answer(200, "text/html", page).kind("document"),
        e("POST", "/api/items", 100)
            .header("X-Nonce", "nz-55aa77cc")
            .post("application/json", "{}"),
    ]);
    let r = requests(&i);
    assert_eq!(r[1].headers["X-Nonce"], "${api_nonce}");
    assert_eq!(i.correlated[0].from, "\"apiNonce\" in the body of GET / (step 1)");
}

#[test]
fn a_status_written_as_text_is_the_same_status() {
    let text = har(&[
        e("POST", "/plans", 0).answer(201, "application/json", r#"{"id":"p-12345"}"#),
        e("GET", "/plans/p-12345", 100).answer(200, "application/json", "{}"),
    ])
    .replace(r#""status":201"#, r#""status":"201""#);
    assert!(text.contains(r#""status":"201""#), "{text}");
    let i = import(&text, "s.har", &HarOptions::default()).unwrap();
    let r = requests(&i);
    assert_eq!(r.len(), 2, "{:?}", i.notes);
    assert_eq!(r[0].status, vec![201]);
    assert_eq!(r[1].path.as_deref(), Some("/plans/${plan_id}"));
}
