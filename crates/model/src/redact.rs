//! Keeping secrets out of everything crest writes.
//!
//! Header values that carry credentials, passwords in URLs and credential-like query parameters
//! are replaced before anything is shown, logged or stored. The rule is by name, so a token
//! passed as `-H "Authorization: Bearer $TOKEN"` never reaches a results file.

/// What a secret is replaced with.
pub const REDACTED: &str = "<redacted>";

/// Parts of names that mark a header, query parameter or environment assignment as secret,
/// matched anywhere in the name, ignoring case (`X-API-Key`, `access_token`, `PGPASSWORD`,
/// `X-Amz-Signature`, `sig`, `X-JWT`, `PHPSESSID`). Listed in docs/measurement.md and docs/scenario.md.
pub const SECRET_WORDS: &[&str] = &[
    "auth",
    "token",
    "secret",
    "pass",
    "pwd",
    "cookie",
    "session",
    "sessid",
    "key",
    "sig",
    "jwt",
    "credential",
    "private",
    "bearer",
];

/// Words that mark a name as secret only as a whole word of it (`code`, `auth_code`,
/// `otpCode`, `connect.sid`): as parts they are too common (`zipcode`, `encode`, `side`).
pub const SECRET_WORDS_WHOLE: &[&str] = &["code", "otp", "pin", "nonce", "salt", "sid"];

/// Names added with `--redact NAME`, for the whole process.
static EXTRA: std::sync::RwLock<Vec<String>> = std::sync::RwLock::new(Vec::new());

/// Treats names containing any of `names` (ignoring case) as secret too, from now on, in
/// everything this process shows or writes (`--redact NAME`).
pub fn also_secret<S: AsRef<str>>(names: &[S]) {
    let mut extra = EXTRA.write().unwrap_or_else(|e| e.into_inner());
    extra.extend(
        names
            .iter()
            .map(|n| n.as_ref().trim().to_ascii_lowercase())
            .filter(|n| !n.is_empty()),
    );
}

/// True when a header or parameter with this name may carry a secret.
pub fn is_secret_name(name: &str) -> bool {
    let lower = name.to_ascii_lowercase();
    if SECRET_WORDS.iter().any(|w| lower.contains(w)) {
        return true;
    }
    if words(name).any(|w| SECRET_WORDS_WHOLE.iter().any(|s| w.eq_ignore_ascii_case(s))) {
        return true;
    }
    let extra = EXTRA.read().unwrap_or_else(|e| e.into_inner());
    extra.iter().any(|w| lower.contains(w.as_str()))
}

/// The words of a name: split at anything not a letter or digit, and where a lower-case
/// letter meets an upper-case one (`otpCode`).
fn words(name: &str) -> impl Iterator<Item = &str> {
    let mut cuts = vec![0];
    // Cuts fall between characters, never inside one: a name may hold any text (a BOM, a
    // non-Latin letter) and every piece is sliced from it.
    for ((_, a), (i, b)) in name.char_indices().zip(name.char_indices().skip(1)) {
        if !a.is_ascii_alphanumeric()
            || !b.is_ascii_alphanumeric()
            || (a.is_ascii_lowercase() && b.is_ascii_uppercase())
        {
            cuts.push(i);
        }
    }
    cuts.push(name.len());
    let cuts: Vec<(usize, usize)> = cuts.windows(2).map(|w| (w[0], w[1])).collect();
    cuts.into_iter()
        .map(move |(a, b)| name[a..b].trim_matches(|c: char| !c.is_ascii_alphanumeric()))
        .filter(|w| !w.is_empty())
}

/// A header value as it may be shown. For `Authorization`, the scheme is kept (`Bearer <redacted>`)
/// because it helps reading a report and reveals nothing.
pub fn header_value(name: &str, value: &str) -> String {
    if !is_secret_name(name) {
        return value.to_string();
    }
    let lower = name.to_ascii_lowercase();
    if lower == "authorization" || lower == "proxy-authorization" {
        if let Some((scheme, _)) = value.split_once(' ') {
            return format!("{scheme} {REDACTED}");
        }
    }
    REDACTED.to_string()
}

/// A URL as it may be shown: the password in `user:password@` and secret-looking query values
/// are replaced.
pub fn url(raw: &str) -> String {
    let (head, fragment) = match raw.split_once('#') {
        Some((h, f)) => (h, Some(f)),
        None => (raw, None),
    };
    let (base, query) = match head.split_once('?') {
        Some((b, q)) => (b, Some(q)),
        None => (head, None),
    };
    let mut out = redact_userinfo(base);
    if let Some(q) = query {
        out.push('?');
        let parts: Vec<String> = q
            .split('&')
            .map(|pair| match pair.split_once('=') {
                Some((k, _)) if is_secret_name(k) => format!("{k}={REDACTED}"),
                _ => pair.to_string(),
            })
            .collect();
        out.push_str(&parts.join("&"));
    }
    if let Some(f) = fragment {
        out.push('#');
        out.push_str(f);
    }
    out
}

fn redact_userinfo(base: &str) -> String {
    let Some(scheme_end) = base.find("://") else {
        return base.to_string();
    };
    let after = &base[scheme_end + 3..];
    let authority_end = after.find('/').unwrap_or(after.len());
    let authority = &after[..authority_end];
    match authority.rfind('@') {
        Some(at) => {
            let userinfo = &authority[..at];
            let user = userinfo.split(':').next().unwrap_or("");
            let shown = if userinfo.contains(':') {
                format!("{user}:{REDACTED}")
            } else {
                user.to_string()
            };
            format!(
                "{}{}@{}{}",
                &base[..scheme_end + 3],
                shown,
                &authority[at + 1..],
                &after[authority_end..]
            )
        }
        None => base.to_string(),
    }
}

/// Redacts a command line: values of `-H`/`--header` with secret names, the value after a flag
/// whose name is secret (`--web-token TOKEN`), and URLs.
pub fn command_line(args: &[String]) -> Vec<String> {
    let mut out = Vec::with_capacity(args.len());
    let mut next_is_header = false;
    let mut next_is_secret = false;
    for arg in args {
        if std::mem::take(&mut next_is_secret) {
            out.push(REDACTED.to_string());
            continue;
        }
        if next_is_header {
            out.push(header_arg(arg));
            next_is_header = false;
            continue;
        }
        if arg == "-H" || arg == "--header" {
            next_is_header = true;
            out.push(arg.clone());
        } else if arg
            .strip_prefix("--")
            .is_some_and(|f| !f.contains('=') && is_secret_name(f))
        {
            next_is_secret = true;
            out.push(arg.clone());
        } else if let Some(h) = arg.strip_prefix("--header=") {
            out.push(format!("--header={}", header_arg(h)));
        } else if let Some(h) = arg.strip_prefix("-H").filter(|h| h.contains(':')) {
            out.push(format!("-H{}", header_arg(h)));
        } else {
            out.push(text(arg));
        }
    }
    out
}

/// Free text as it may be shown, such as a shell command (`crest sweep --setup`): the value of
/// every `NAME=value` whose name looks secret (`PGPASSWORD=x`, `--api-key=x`), and the password
/// and secret parameters of every URL in it, are replaced. Quotes around a value are kept.
pub fn text(s: &str) -> String {
    let fields = json_fields(s);
    let s = fields.as_str();
    let mut out = String::with_capacity(s.len());
    let mut rest = s;
    while !rest.is_empty() {
        // One word at a time, separated by whitespace and shell punctuation.
        let start = rest.find(|c: char| !is_separator(c)).unwrap_or(rest.len());
        out.push_str(&rest[..start]);
        rest = &rest[start..];
        if rest.is_empty() {
            break;
        }
        let end = word_end(rest);
        let word = &rest[..end];
        // An `=` inside a URL's query (`http://u:pw@h/?api_key=k`) is not an assignment: taken
        // as one, the URL up to it would pass as a name, its password shown.
        let assignment = word.split_once('=').filter(|(name, _)| !name.contains("://"));
        match assignment {
            Some((name, value)) if is_secret_name(name.trim_start_matches('-')) && !value.is_empty() => {
                out.push_str(name);
                out.push('=');
                match value.chars().next() {
                    Some(q @ ('\'' | '"')) if value.len() > 1 && value.ends_with(q) => {
                        out.push(q);
                        out.push_str(REDACTED);
                        out.push(q);
                    }
                    _ => out.push_str(REDACTED),
                }
            }
            _ if word.contains("://") => match word.chars().next() {
                // A quoted URL keeps its quotes: the last one is not part of a query value.
                Some(q @ ('\'' | '"')) if word.len() > 1 && word.ends_with(q) => {
                    out.push(q);
                    out.push_str(&url(&word[1..word.len() - 1]));
                    out.push(q);
                }
                _ => out.push_str(&url(word)),
            },
            _ => out.push_str(word),
        }
        rest = &rest[end..];
    }
    out
}

/// Text with the value of every secret-named JSON field (`"password": "x"`, `"client_secret":
/// {...}`) replaced by `"<redacted>"`, the rest kept as written. It reads the text as JSON
/// tokens without parsing it whole, so a body that is not valid JSON, or JSON inside other
/// text (`--body={...}`, `curl -d '{...}'`), is redacted too.
pub fn json_fields(s: &str) -> String {
    let bytes = s.as_bytes();
    let mut out = String::with_capacity(s.len());
    let mut copied = 0;
    let mut i = 0;
    while i < bytes.len() {
        if bytes[i] != b'"' {
            i += 1;
            continue;
        }
        let key_end = string_end(bytes, i);
        if key_end >= bytes.len() {
            // A string cut short: no value follows it.
            break;
        }
        let mut j = skip_space(bytes, key_end);
        if bytes.get(j) != Some(&b':') || !is_secret_name(&s[i + 1..key_end - 1]) {
            i = key_end;
            continue;
        }
        j = skip_space(bytes, j + 1);
        let value_end = json_value_end(bytes, j);
        if value_end > j {
            out.push_str(&s[copied..j]);
            out.push('"');
            out.push_str(REDACTED);
            out.push('"');
            copied = value_end;
        }
        i = value_end.max(j);
    }
    out.push_str(&s[copied..]);
    out
}

/// Just past the string that starts with the quote at `start` (or the end of the text).
fn string_end(b: &[u8], start: usize) -> usize {
    let mut i = start + 1;
    while i < b.len() {
        match b[i] {
            b'\\' => i += 2,
            b'"' => return i + 1,
            _ => i += 1,
        }
    }
    b.len()
}

fn skip_space(b: &[u8], mut i: usize) -> usize {
    while i < b.len() && b[i].is_ascii_whitespace() {
        i += 1;
    }
    i
}

/// Just past the JSON value starting at `start`: a string, a whole object or array (strings
/// inside skipped), or a scalar up to the next `,` `}` `]` or space.
fn json_value_end(b: &[u8], start: usize) -> usize {
    match b.get(start) {
        Some(b'"') => string_end(b, start),
        Some(b'{' | b'[') => {
            let mut depth = 0usize;
            let mut i = start;
            while i < b.len() {
                match b[i] {
                    b'"' => {
                        i = string_end(b, i);
                        continue;
                    }
                    b'{' | b'[' => depth += 1,
                    b'}' | b']' => {
                        depth -= 1;
                        if depth == 0 {
                            return i + 1;
                        }
                    }
                    _ => {}
                }
                i += 1;
            }
            b.len()
        }
        _ => {
            let mut i = start;
            while i < b.len() && !matches!(b[i], b',' | b'}' | b']') && !b[i].is_ascii_whitespace() {
                i += 1;
            }
            i
        }
    }
}

fn is_separator(c: char) -> bool {
    c.is_whitespace() || matches!(c, ';' | '&' | '|' | '(' | ')' | '`')
}

/// Where the word at the start of `s` ends; quoted parts (`A='x y'`) belong to it.
fn word_end(s: &str) -> usize {
    let mut quote = None;
    for (i, c) in s.char_indices() {
        match quote {
            Some(q) if c == q => quote = None,
            Some(_) => {}
            None if c == '\'' || c == '"' => quote = Some(c),
            None if is_separator(c) => return i,
            None => {}
        }
    }
    s.len()
}

fn header_arg(h: &str) -> String {
    match h.split_once(':') {
        Some((name, value)) => format!("{name}: {}", header_value(name, value.trim())),
        None => h.to_string(),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn secret_json_fields_are_redacted_wherever_a_body_is_shown() {
        let body = r#"{"user":"ann","password":"PW1","client_secret" : "CS1","pin":1234,"credentials":{"a":["x","}"]},"note":"a \"password\": here"}"#;
        let shown = json_fields(body);
        for secret in ["PW1", "CS1", "1234", "\"x\""] {
            assert!(!shown.contains(secret), "{secret} in {shown}");
        }
        assert_eq!(
            shown,
            r#"{"user":"ann","password":"<redacted>","client_secret" : "<redacted>","pin":"<redacted>","credentials":"<redacted>","note":"a \"password\": here"}"#
        );
        // In a command line, as the argument of --body or inside another word; not JSON at all,
        // and cut short, are redacted as far as they go.
        let args: Vec<String> = [
            "crest",
            "run",
            "--body",
            r#"{"password":"PW2"}"#,
            r#"--body={"token": "T3"}"#,
            r#"{"api_key":"K4"#,
        ]
        .iter()
        .map(|s| s.to_string())
        .collect();
        let shown = command_line(&args).join(" ");
        for secret in ["PW2", "T3", "K4"] {
            assert!(!shown.contains(secret), "{secret} in {shown}");
        }
        assert_eq!(
            json_fields("plain \"text\" with no fields"),
            "plain \"text\" with no fields"
        );
        assert_eq!(json_fields("{\"é"), "{\"é");
    }

    #[test]
    fn secret_headers_are_redacted() {
        assert_eq!(header_value("Authorization", "Bearer abc.def"), "Bearer <redacted>");
        assert_eq!(header_value("Cookie", "sid=1"), REDACTED);
        assert_eq!(header_value("X-API-Key", "k"), REDACTED);
        assert_eq!(header_value("Accept", "text/html"), "text/html");
    }

    #[test]
    fn urls_lose_passwords_and_secret_params() {
        assert_eq!(
            url("https://bob:hunter2@example.test/a?x=1&api_key=zzz#f"),
            "https://bob:<redacted>@example.test/a?x=1&api_key=<redacted>#f"
        );
        assert_eq!(url("http://127.0.0.1:8080/"), "http://127.0.0.1:8080/");
    }

    #[test]
    fn secret_names_are_broad() {
        for name in [
            "sig",
            "X-Amz-Signature",
            "jwt",
            "X-JWT",
            "pass",
            "PGPASSWORD",
            "code",
            "auth_code",
            "otpCode",
            "api_key",
            "X-Session-Id",
            "client_secret",
            "Private-Token",
        ] {
            assert!(is_secret_name(name), "{name}");
        }
        for name in ["Accept", "zipcode", "page", "limit", "X-Request-Id", "user", "entities"] {
            assert!(!is_secret_name(name), "{name}");
        }
    }

    #[test]
    fn names_with_any_text_in_them_are_split_into_words() {
        // A BOM or a non-Latin letter sits inside a name a recording or a hand edit made.
        assert!(!is_secret_name("se\u{feff}c-ch-ua"));
        assert!(is_secret_name("\u{feff}otp"));
        assert!(is_secret_name("пароль-otp"));
        assert!(is_secret_name("ß.sid"));
        assert!(!is_secret_name("ééé"));
    }

    #[test]
    fn the_value_after_a_secret_flag_is_redacted_in_both_spellings() {
        let args: Vec<String> = [
            "crest",
            "run",
            "--web",
            "--web-token",
            "t0ps3cret",
            "--web-token=t2",
            "http://h/",
        ]
        .map(String::from)
        .to_vec();
        let shown = command_line(&args).join(" ");
        assert!(!shown.contains("t0ps3cret") && !shown.contains("t2"), "{shown}");
        assert!(
            shown.contains("--web "),
            "a flag without a value keeps the next argument: {shown}"
        );
    }

    #[test]
    fn a_url_with_a_secret_query_parameter_loses_its_password_too() {
        let shown = command_line(&["crest".into(), "run".into(), "http://u:pw1@h:1/?api_key=k2&x=1".into()]);
        assert_eq!(shown[2], "http://u:<redacted>@h:1/?api_key=<redacted>&x=1");
        assert_eq!(
            text("curl 'http://u:pw1@h/?token=k2' DATABASE_URL=postgres://v:pw3@h/db"),
            "curl 'http://u:<redacted>@h/?token=<redacted>' DATABASE_URL=postgres://v:<redacted>@h/db"
        );
    }

    #[test]
    fn shell_commands_lose_secret_assignments_and_url_passwords() {
        let cmd = "PGPASSWORD=SWEEPPASS1 psql 'postgres://u:pw1@h/db' -c \"x\"; export API_TOKEN='a b'; ENTITIES={n} ./load --api-key=k1";
        let shown = text(cmd);
        for secret in ["SWEEPPASS1", "pw1", "a b", "k1"] {
            assert!(!shown.contains(secret), "{secret} in {shown}");
        }
        assert!(shown.contains("ENTITIES={n} ./load"), "{shown}");
        assert!(shown.starts_with("PGPASSWORD=<redacted> psql"), "{shown}");
    }

    #[test]
    fn command_lines_are_redacted() {
        let args: Vec<String> = [
            "crest",
            "run",
            "-H",
            "Authorization: Bearer s3cret",
            "-HX-Token:t0k",
            "http://u:p@h/",
        ]
        .iter()
        .map(|s| s.to_string())
        .collect();
        let joined = command_line(&args).join(" ");
        assert!(!joined.contains("s3cret"), "{joined}");
        assert!(!joined.contains("t0k"), "{joined}");
        assert!(!joined.contains(":p@"), "{joined}");
    }
}
