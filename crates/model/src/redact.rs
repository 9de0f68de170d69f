//! Keeping secrets out of everything crest writes.
//!
//! Header values that carry credentials, passwords in URLs and credential-like query parameters
//! are replaced before anything is shown, logged or stored. The rule is by name, so a token
//! passed as `-H "Authorization: Bearer $TOKEN"` never reaches a results file.

/// What a secret is replaced with.
pub const REDACTED: &str = "<redacted>";

const SECRET_WORDS: &[&str] = &[
    "auth",
    "token",
    "secret",
    "password",
    "passwd",
    "pwd",
    "cookie",
    "session",
    "key",
    "signature",
    "credential",
];

/// True when a header or parameter with this name may carry a secret.
pub fn is_secret_name(name: &str) -> bool {
    let lower = name.to_ascii_lowercase();
    SECRET_WORDS.iter().any(|w| lower.contains(w))
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

/// Redacts a command line: values of `-H`/`--header` with secret names, and URLs.
pub fn command_line(args: &[String]) -> Vec<String> {
    let mut out = Vec::with_capacity(args.len());
    let mut next_is_header = false;
    for arg in args {
        if next_is_header {
            out.push(header_arg(arg));
            next_is_header = false;
            continue;
        }
        if arg == "-H" || arg == "--header" {
            next_is_header = true;
            out.push(arg.clone());
        } else if let Some(h) = arg.strip_prefix("--header=") {
            out.push(format!("--header={}", header_arg(h)));
        } else if let Some(h) = arg.strip_prefix("-H").filter(|h| h.contains(':')) {
            out.push(format!("-H{}", header_arg(h)));
        } else if arg.contains("://") {
            out.push(url(arg));
        } else {
            out.push(arg.clone());
        }
    }
    out
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
