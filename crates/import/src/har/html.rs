//! The values an HTML page hands the browser to send back: hidden form inputs and `<meta>`
//! tokens (`<meta name="csrf-token" content="...">`), each with the regular expression that
//! finds it again in a fresh copy of the page.

use regex::Regex;
use std::sync::LazyLock;

/// A value found in a page.
#[derive(Debug, Clone, PartialEq, Eq)]
pub(super) struct Field {
    /// The input's (or meta tag's) name.
    pub name: String,
    pub value: String,
    /// What it is, in words (`hidden input csrf`).
    pub what: String,
    /// A regular expression whose first group is the value in the page.
    pub regex: String,
}

static TAG: LazyLock<Option<Regex>> = LazyLock::new(|| Regex::new(r"(?is)<(input|meta)\b[^>]*>").ok());
static ATTR: LazyLock<Option<Regex>> =
    LazyLock::new(|| Regex::new(r#"(?s)([A-Za-z_:][-A-Za-z0-9_:.]*)\s*=\s*("([^"]*)"|'([^']*)'|([^\s"'=<>`]+))"#).ok());

/// The hidden inputs and meta tokens of `page`, the first of each name only: a fresh page's
/// regular expression finds the first.
pub(super) fn fields(page: &str) -> Vec<Field> {
    let (Some(tag), Some(attr)) = (TAG.as_ref(), ATTR.as_ref()) else {
        return Vec::new();
    };
    let mut out: Vec<Field> = Vec::new();
    for t in tag.captures_iter(page) {
        let (Some(whole), Some(kind)) = (t.get(0), t.get(1)) else {
            continue;
        };
        let meta = kind.as_str().eq_ignore_ascii_case("meta");
        // (name, raw attribute text as written) in the order written.
        let mut attrs: Vec<(String, String, String)> = Vec::new();
        for a in attr.captures_iter(whole.as_str()) {
            let (Some(n), Some(raw)) = (a.get(1), a.get(2)) else {
                continue;
            };
            let value = a
                .get(3)
                .or_else(|| a.get(4))
                .or_else(|| a.get(5))
                .map_or("", |m| m.as_str());
            attrs.push((
                n.as_str().to_ascii_lowercase(),
                raw.as_str().to_string(),
                value.to_string(),
            ));
        }
        let get = |n: &str| attrs.iter().position(|(a, _, _)| a == n);
        let (value_attr, what) = if meta {
            ("content", "meta")
        } else {
            ("value", "hidden input")
        };
        if !meta {
            let hidden = get("type").is_some_and(|i| attrs[i].2.eq_ignore_ascii_case("hidden"));
            if !hidden {
                continue;
            }
        }
        let (Some(ni), Some(vi)) = (get("name"), get(value_attr)) else {
            continue;
        };
        let (name, value) = (attrs[ni].2.clone(), attrs[vi].2.clone());
        // An entity (`&amp;`) is decoded by the browser but not by a regular expression: the
        // value sent back would differ from the one found, so such values are not carried.
        if name.is_empty() || value.is_empty() || value.contains('&') || out.iter().any(|f| f.name == name) {
            continue;
        }
        let regex = pattern(kind.as_str(), &attrs[ni].1, value_attr, &attrs[vi].1, ni < vi);
        // The pattern must find this very value in this very page, or it is not used.
        let found = Regex::new(&regex)
            .ok()
            .and_then(|re| re.captures(page).and_then(|c| c.get(1).map(|m| m.as_str().to_string())));
        if found.as_deref() != Some(value.as_str()) {
            continue;
        }
        out.push(Field {
            what: format!("{what} {name}"),
            name,
            value,
            regex,
        });
    }
    out
}

static EMBEDDED: LazyLock<Option<Regex>> =
    LazyLock::new(|| Regex::new(r#""([A-Za-z_$][-A-Za-z0-9_$.]*)"\s*:\s*"([^"\\<>]*)""#).ok());

/// String fields of JSON written into a text body (a page's `window.__STATE__ = {...}`, a
/// script's config), the first of each key only, each with the expression that finds it.
pub(super) fn embedded_json(body: &str) -> Vec<Field> {
    let Some(re) = EMBEDDED.as_ref() else {
        return Vec::new();
    };
    let mut out: Vec<Field> = Vec::new();
    for c in re.captures_iter(body) {
        let (Some(key), Some(value)) = (c.get(1), c.get(2)) else {
            continue;
        };
        let (key, value) = (key.as_str(), value.as_str());
        if value.is_empty() || out.iter().any(|f| f.name == key) {
            continue;
        }
        let regex = format!(r#""{}"\s*:\s*"([^"\\<>]*)""#, regex::escape(key));
        let found = Regex::new(&regex)
            .ok()
            .and_then(|re| re.captures(body).and_then(|c| c.get(1).map(|m| m.as_str().to_string())));
        if found.as_deref() != Some(value) {
            continue;
        }
        out.push(Field {
            name: key.to_string(),
            value: value.to_string(),
            what: format!("\"{key}\" in the body"),
            regex,
        });
    }
    out
}

/// The expression for a tag whose `name` attribute is written `name_raw` (quotes included) and
/// whose value attribute is written `value_raw`; crest's regex extract takes the first group, so
/// the attributes are matched in the order the page wrote them.
fn pattern(tag: &str, name_raw: &str, value_attr: &str, value_raw: &str, name_first: bool) -> String {
    let name = format!(r"\bname\s*=\s*{}", regex::escape(name_raw));
    let value = match value_raw.chars().next() {
        Some('"') => format!(r#"\b{value_attr}\s*=\s*"([^"]*)""#),
        Some('\'') => format!(r"\b{value_attr}\s*=\s*'([^']*)'"),
        _ => format!(r#"\b{value_attr}\s*=\s*([^\s"'=<>`]+)"#),
    };
    let tag = tag.to_ascii_lowercase();
    if name_first {
        format!(r"(?i)<{tag}\b[^>]*?{name}[^>]*?{value}")
    } else {
        format!(r"(?i)<{tag}\b[^>]*?{value}[^>]*?{name}")
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn hidden_inputs_are_found_in_either_attribute_order() {
        let page = r#"<form><input type="text" name="user" value="ann">
            <INPUT type=hidden value='v4lue-one-1' name="csrf_token">
            <input name="nonce.x" type="hidden" value="a+b/c=9"></form>
            <meta name="csrf-token" content="m3ta-tok3n">"#;
        let f = fields(page);
        let names: Vec<&str> = f.iter().map(|f| f.name.as_str()).collect();
        assert_eq!(names, ["csrf_token", "nonce.x", "csrf-token"]);
        assert_eq!(f[0].value, "v4lue-one-1");
        assert_eq!(f[1].value, "a+b/c=9");
        assert_eq!(f[1].what, "hidden input nonce.x");
        // The name's metacharacters are escaped: `.` matches a dot only.
        assert!(f[1].regex.contains(r#""nonce\.x""#), "{}", f[1].regex);
        assert_eq!(f[2].what, "meta csrf-token");
        // Each expression finds its value in a fresh page with another value.
        for field in &f {
            let fresh = page.replace(&field.value, "FRESH-1");
            let re = Regex::new(&field.regex).unwrap();
            assert_eq!(&re.captures(&fresh).unwrap()[1], "FRESH-1", "{}", field.regex);
        }
    }

    #[test]
    fn json_in_a_page_is_found() {
        let page = r#"<script>window.__STATE__ = {"user":{"csrfToken":"q1w2e3r4t5","name":"a"}, "csrfToken": "other"};</script>"#;
        let f = embedded_json(page);
        assert_eq!(f[0].name, "csrfToken");
        assert_eq!(f[0].value, "q1w2e3r4t5");
        let fresh = page.replace("q1w2e3r4t5", "zzz999");
        assert_eq!(&Regex::new(&f[0].regex).unwrap().captures(&fresh).unwrap()[1], "zzz999");
    }

    #[test]
    fn entities_and_visible_inputs_are_not_carried() {
        assert!(fields(r#"<input type="hidden" name="a" value="x&amp;y">"#).is_empty());
        assert!(fields(r#"<input type="text" name="a" value="xyzzy1">"#).is_empty());
    }
}
