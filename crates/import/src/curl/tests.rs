#![allow(clippy::unwrap_used)]

use super::*;
use crate::scenario::Request;

fn one(cmd: &str) -> (Imported, Request) {
    let imported = import(cmd, "the command line").unwrap_or_else(|e| panic!("{cmd}: {e}"));
    let r = requests(&imported).into_iter().next().unwrap();
    (imported, r)
}

fn requests(imported: &Imported) -> Vec<Request> {
    imported.flows[0]
        .steps
        .iter()
        .filter_map(|s| match s {
            Step::Request(r) => Some((**r).clone()),
            Step::Think(_) => None,
        })
        .collect()
}

fn option_of(cmd: &str) -> (String, String) {
    match import(cmd, "x") {
        Err(ImportError::CurlOption { option, message }) => (option, message),
        other => panic!("{cmd}: {other:?}"),
    }
}

#[test]
fn a_get_with_headers_and_the_origin() {
    let (imported, r) = one("curl -H 'Accept: text/html' -A 'crest/1' -e https://ref.example/ 'https://API.example.com:443/a/b?x=1&y=2#frag'");
    assert_eq!(imported.origin, "https://api.example.com");
    assert_eq!(r.method, "GET");
    assert_eq!(r.path.as_deref(), Some("/a/b?x=1&y=2"));
    assert_eq!(r.headers["Accept"], "text/html");
    assert_eq!(r.headers["User-Agent"], "crest/1");
    assert_eq!(r.headers["Referer"], "https://ref.example/");
    assert!(r.body.is_none());
}

#[test]
fn data_is_a_form_only_when_crest_would_send_the_same_bytes() {
    let (_, r) = one("curl https://a.example/login -d 'user=ann&note=a+b%2Fc'");
    assert_eq!(r.method, "POST");
    match r.body {
        Some(Body::Form(f)) => assert_eq!(f["note"], "a b/c"),
        other => panic!("{other:?}"),
    }
    // `/` unencoded: crest's form would write %2F, so the text is kept, with its type.
    let (_, r) = one("curl https://a.example/login -d 'path=/x' -d 'password=p/w'");
    assert_eq!(r.headers["Content-Type"], "application/x-www-form-urlencoded");
    match r.body {
        Some(Body::Text(t)) => assert_eq!(t, "path=/x&password=${env:PASSWORD}"),
        other => panic!("{other:?}"),
    }
}

#[test]
fn json_bodies_keep_their_types_and_hide_secret_fields() {
    let (imported, r) = one(
        r#"curl https://a.example/x --json '{"n": 2, "ok": true, "name": "${x}", "api_key": "k-123", "token_count": 3}'"#,
    );
    assert_eq!(r.headers["Accept"], "application/json");
    assert!(
        !r.headers.contains_key("Content-Type"),
        "crest sets it for json: bodies"
    );
    match r.body {
        Some(Body::Json(v)) => {
            assert_eq!(v["n"], 2);
            assert_eq!(v["ok"], true);
            assert_eq!(v["name"], "$${x}");
            assert_eq!(v["api_key"], "${env:API_KEY}");
            assert_eq!(v["token_count"], 3);
        }
        other => panic!("{other:?}"),
    }
    assert!(!imported.made_from[0].contains("k-123"), "{:?}", imported.made_from);
    // A JSON content type on -d makes a JSON body too; text that is not JSON stays text.
    let (_, r) = one(r#"curl https://a.example/x -H 'Content-Type: application/json' -d '{"a":[1,2]}'"#);
    assert!(matches!(r.body, Some(Body::Json(_))));
    let (_, r) = one(r#"curl https://a.example/x -H 'Content-Type: application/json' -d '{"a":'"#);
    assert!(matches!(r.body, Some(Body::Text(_))));
}

#[test]
fn basic_auth_is_always_hidden() {
    let (imported, r) = one("curl -u ann:hunter2 https://a.example/me");
    assert_eq!(r.headers["Authorization"], "${env:AUTHORIZATION}");
    let s = imported.secrets.iter().next().unwrap();
    assert_eq!(s.value, "Basic YW5uOmh1bnRlcjI=");
    assert!(
        imported.made_from[0].contains("-u '<redacted>'"),
        "{:?}",
        imported.made_from
    );
    assert!(!imported.made_from[0].contains("hunter2"));
    let (option, _) = option_of("curl -u ann https://a.example/me");
    assert_eq!(option, "-u");
}

#[test]
fn cookies_become_one_header_with_secret_values_hidden() {
    let (imported, r) = one("curl https://a.example/ -b 'theme=dark; session_id=s3cr3t; PHPSESSID=p1; connect.sid=s%3Ax' -H 'Cookie: lang=en'");
    assert_eq!(
        r.headers["Cookie"],
        "lang=en; theme=dark; session_id=${env:SESSION_ID}; PHPSESSID=${env:PHPSESSID}; connect.sid=${env:CONNECT_SID}"
    );
    assert!(!imported.made_from[0].contains("s3cr3t"));
    assert!(!imported.made_from[0].contains("p1"));
    let (option, message) = option_of("curl -b cookies.txt https://a.example/");
    assert_eq!(option, "-b");
    assert!(message.contains("cookie file"), "{message}");
}

#[test]
fn get_moves_the_data_into_the_query_and_secret_parameters_are_hidden() {
    let (imported, r) =
        one("curl -G https://a.example/s?q=1 -d 'page=2' --data-urlencode 'term=a b' -d access_token=t0k");
    assert_eq!(r.method, "GET");
    assert_eq!(
        r.path.as_deref(),
        Some("/s?q=1&page=2&term=a+b&access_token=${env:ACCESS_TOKEN}")
    );
    assert!(r.body.is_none());
    assert_eq!(imported.secrets.iter().next().unwrap().value, "t0k");
}

#[test]
fn multipart_parts_files_and_types() {
    let (_, r) = one("curl https://a.example/up -F 'title=My cat' -F 'photo=@cat.png' -F 'doc=@\"a;b.bin\";type=application/x-thing' -F 'password=pw'");
    let Some(Body::Multipart(parts)) = r.body else { panic!() };
    assert_eq!(parts[0].value.as_deref(), Some("My cat"));
    assert_eq!(parts[1].file.as_deref(), Some("cat.png"));
    assert_eq!(parts[1].content_type.as_deref(), Some("image/png"));
    assert_eq!(parts[2].file.as_deref(), Some("a;b.bin"));
    assert_eq!(parts[2].content_type.as_deref(), Some("application/x-thing"));
    assert_eq!(parts[3].value.as_deref(), Some("${env:PASSWORD}"));
    assert_eq!(r.method, "POST");
}

#[test]
fn data_binary_file_and_head_and_flags() {
    let (imported, r) =
        one("curl -sSLk --compressed --max-redirs 3 --http2 -X PUT --data-binary @payload.bin https://a.example/put");
    assert_eq!(r.method, "PUT");
    assert!(matches!(r.body, Some(Body::File(ref f)) if f == "payload.bin"));
    assert_eq!(r.headers["Content-Type"], "application/x-www-form-urlencoded");
    let d = &imported.defaults;
    assert!(d.insecure && d.compression);
    assert_eq!(d.redirects, Some(3));
    assert_eq!(d.http.as_deref(), Some("auto"));
    let (imported, r) = one("curl -I -L https://a.example/");
    assert_eq!(r.method, "HEAD");
    assert_eq!(imported.defaults.redirects, Some(DEFAULT_REDIRECTS));
}

#[test]
fn requests_to_other_origins_use_absolute_urls() {
    let imported = import(
        "curl https://a.example/1\ncurl http://b.example:8080/2?x=y\ncurl https://a.example:443/3",
        "f",
    )
    .unwrap();
    let rs = requests(&imported);
    assert_eq!(rs[0].path.as_deref(), Some("/1"));
    assert_eq!(rs[1].url.as_deref(), Some("http://b.example:8080/2?x=y"));
    assert_eq!(rs[2].path.as_deref(), Some("/3"));
}

#[test]
fn a_copy_all_as_curl_file_of_three_commands() {
    let text = r#"curl 'https://shop.example/api/cart' \
  -H 'accept: application/json' \
  -H 'authorization: Bearer eyJabc' \
  --compressed ;
curl 'https://shop.example/api/cart/items' \
  -H 'content-type: application/json' \
  -H 'authorization: Bearer eyJabc' \
  --data-raw $'{"sku":"A-1","note":"it\'s\\n a gift\u00e9"}' \
  --compressed ;
curl 'https://cdn.example/img.png' -H 'referer: https://shop.example/'
"#;
    let imported = import(text, "all.sh").unwrap();
    let rs = requests(&imported);
    assert_eq!(rs.len(), 3);
    assert_eq!(imported.made_from.len(), 3);
    assert_eq!(rs[0].method, "GET");
    assert_eq!(rs[0].headers["authorization"], "${env:AUTHORIZATION}");
    assert_eq!(rs[1].method, "POST");
    match &rs[1].body {
        // `\\n` in bash's quote is `\n` in the JSON: a line break in the value.
        Some(Body::Json(v)) => assert_eq!(v["note"], "it's\n a gifté"),
        other => panic!("{other:?}"),
    }
    assert_eq!(rs[1].headers["authorization"], "${env:AUTHORIZATION}");
    assert_eq!(rs[2].url.as_deref(), Some("https://cdn.example/img.png"));
    assert_eq!(imported.secrets.iter().count(), 1);
    assert!(imported.made_from.iter().all(|m| !m.contains("eyJabc")));
    assert!(imported.defaults.compression);
    assert!(imported
        .notes
        .iter()
        .any(|n| n.starts_with("--compressed is given to some commands only")));
}

#[test]
fn unsupported_options_name_themselves() {
    for (cmd, want) in [
        ("curl --proxy-ntlm https://a.example/", "--proxy-ntlm"),
        ("curl -T file.txt https://a.example/", "-T"),
        ("curl --unix-socket /run/s.sock http://a/", "--unix-socket"),
        ("curl --digest -u a:b https://a.example/", "--digest"),
        ("curl https://a.example/ -F 'a=<x.txt'", "-F"),
        ("curl https://a.example/ -F a=1 -d b=2", "-F"),
        ("curl ftp://a.example/", "URL"),
    ] {
        assert_eq!(option_of(cmd).0, want, "{cmd}");
    }
    let (_, message) = option_of("curl https://a.example/\ncurl --ntlm https://a.example/");
    assert!(message.contains("line 2"), "{message}");
}

#[test]
fn not_curl_is_said_clearly() {
    for text in ["wget https://a.example/", "", "# only a comment\n", "{\"log\": {}}"] {
        match import(text, "input.txt") {
            Err(e @ ImportError::NotThisKind { .. }) => assert!(e.to_string().starts_with("input.txt: "), "{e}"),
            other => panic!("{text:?}: {other:?}"),
        }
    }
    match import("curl -s", "x") {
        Err(e) => assert!(e.to_string().contains("no URL"), "{e}"),
        Ok(_) => panic!(),
    }
}

#[test]
fn the_same_input_gives_the_same_scenario() {
    let cmd = "curl -u a:b https://a.example/x -H 'X-Api-Key: k' -d 'a=1'";
    let a = crate::write::files(&import(cmd, "c").unwrap(), "s.yaml", Some("s.env")).unwrap();
    let b = crate::write::files(&import(cmd, "c").unwrap(), "s.yaml", Some("s.env")).unwrap();
    assert_eq!(a, b);
    assert!(!a.scenario.contains("YTpi") && !a.scenario.contains("a:b") && !a.scenario.contains(": k"));
}

#[test]
fn form_params_split_only_at_known_parameters() {
    assert_eq!(form_params("a;b"), ("a;b".to_string(), vec![]));
    assert_eq!(
        form_params("f.txt;type=text/plain;filename=x.txt"),
        (
            "f.txt".to_string(),
            vec![
                ("type".into(), "text/plain".into()),
                ("filename".into(), "x.txt".into())
            ]
        )
    );
    assert_eq!(
        form_params("\"a\\\"b;c\";type=x"),
        ("a\"b;c".to_string(), vec![("type".into(), "x".into())])
    );
}

#[test]
fn a_short_secret_is_redacted_where_it_is_a_value_only() {
    assert_eq!(
        redact("https://a.example/v1?pin=1", "1"),
        "https://a.example/v1?pin=<redacted>"
    );
    assert_eq!(redact("-u ann:pw", "pw"), "-u ann:<redacted>");
    assert_eq!(redact("xs3cr3tx", "s3cr3t"), "x<redacted>x");
    let (imported, _) = one("curl https://a.example/v1 -d 'pin=1'");
    assert_eq!(imported.made_from[0], "curl https://a.example/v1 -d 'pin=<redacted>'");
}

#[test]
fn a_shell_variable_is_noted() {
    let (imported, r) = one("curl -H \"X-Id: $ID\" https://a.example/");
    assert_eq!(r.headers["X-Id"], "$ID");
    assert!(
        imported
            .notes
            .iter()
            .any(|n| n.contains("$ID is a shell variable") && n.contains("${env:ID}")),
        "{:?}",
        imported.notes
    );
}

#[test]
fn credentials_in_the_url_are_sent_decoded_as_curl_sends_them() {
    use base64::Engine as _;
    let (imported, r) = one("curl http://bob:pw%40x@a.example/ui");
    assert_eq!(r.headers["Authorization"], "${env:AUTHORIZATION}");
    let sent = &imported.secrets.iter().next().unwrap().value;
    let expected = format!("Basic {}", base64::engine::general_purpose::STANDARD.encode("bob:pw@x"));
    assert_eq!(sent, &expected);
}

#[test]
fn curls_own_accept_is_sent_unless_a_header_says_otherwise() {
    let (_, r) = one("curl https://a.example/");
    assert_eq!(r.headers["Accept"], "*/*");
    let (_, r) = one("curl https://a.example/ -H 'Accept: text/html'");
    assert_eq!(r.headers["Accept"], "text/html");
    let (_, r) = one("curl https://a.example/ -H 'Accept:'");
    assert!(!r.headers.contains_key("Accept"), "{:?}", r.headers);
}

/// A method that is not one is the command's mistake, said with its option: it came out as a
/// scenario crest could not validate, "please report it".
#[test]
fn a_method_that_is_not_one_is_refused_with_its_option() {
    let e = import("curl -X 'GE T' http://x/", "c").unwrap_err().to_string();
    assert!(e.contains("-X") && e.contains("\"GE T\" is not an HTTP method"), "{e}");
    assert_eq!(one("curl -X PURGE http://x/").1.method, "PURGE");
}
