//! Values that look secret are taken out of an imported scenario: it reads them from the
//! environment (`${env:NAME}`), and the import writes them to a dotenv file of their own (mode
//! 0600) beside it, so a scenario can be shared or committed without the credentials it was
//! recorded with.

use crest_model::redact::is_secret_name;

/// One value taken out of the scenario.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Secret {
    /// The environment variable that holds it.
    pub name: String,
    /// The recorded value: written to the dotenv file only.
    pub value: String,
    /// Where it was found, in words (`header Authorization of GET /plans (step 3)`).
    pub from: String,
}

/// The secrets of one import, in the order they were found.
#[derive(Debug, Default, Clone)]
pub struct Secrets {
    taken: Vec<Secret>,
}

impl Secrets {
    /// `value` as it is (through [`crate::literal`]), or `${env:NAME}` when `name` (a header,
    /// query parameter, form or JSON field, cookie) looks secret by the rule `--redact` uses.
    pub fn keep_or_hide(&mut self, name: &str, value: &str, from: &str) -> String {
        if is_secret_name(name) && !value.is_empty() {
            self.hide(name, value, from)
        } else {
            crate::literal(value)
        }
    }

    /// `${env:NAME}` for a value that must not be written into the scenario, NAME made from
    /// `hint` (`Authorization` -> `AUTHORIZATION`). The same value found again under the same
    /// hint is the same variable; another value under it gets `_2`, `_3`.
    pub fn hide(&mut self, hint: &str, value: &str, from: &str) -> String {
        let base = env_name(hint);
        let mut n = 1;
        loop {
            let name = if n == 1 { base.clone() } else { format!("{base}_{n}") };
            match self.taken.iter().find(|s| s.name == name) {
                Some(s) if s.value == value => return format!("${{env:{name}}}"),
                Some(_) => n += 1,
                None => {
                    self.taken.push(Secret {
                        name: name.clone(),
                        value: value.to_string(),
                        from: from.to_string(),
                    });
                    return format!("${{env:{name}}}");
                }
            }
        }
    }

    pub fn is_empty(&self) -> bool {
        self.taken.is_empty()
    }

    pub fn iter(&self) -> impl Iterator<Item = &Secret> {
        self.taken.iter()
    }

    /// The dotenv file's text: `NAME='value'`, each after a comment saying where it came from.
    /// Single quotes keep a value literal in dotenv readers (no `$` expansion, no escapes);
    /// a value with a single quote in it is double-quoted with `\`, `"` and `$` escaped.
    pub fn dotenv(&self) -> String {
        let mut out = String::from("# Secrets taken out of the scenario beside this file; keep it private.\n");
        for s in &self.taken {
            out.push_str(&format!("# {}\n{}={}\n", one_line(&s.from), s.name, quoted(&s.value)));
        }
        out
    }
}

/// An environment variable's name from a header or field name: upper case, every run of other
/// characters one `_`, never starting with a digit.
fn env_name(hint: &str) -> String {
    let mut name = String::new();
    for c in hint.chars() {
        if c.is_ascii_alphanumeric() {
            name.push(c.to_ascii_uppercase());
        } else if !name.ends_with('_') {
            name.push('_');
        }
    }
    let name = name.trim_matches('_').to_string();
    match name.chars().next() {
        None => "SECRET".to_string(),
        Some(c) if c.is_ascii_digit() => format!("_{name}"),
        Some(_) => name,
    }
}

fn quoted(value: &str) -> String {
    if !value.contains('\'') && !value.contains('\n') {
        return format!("'{value}'");
    }
    let mut out = String::from("\"");
    for c in value.chars() {
        match c {
            '\\' => out.push_str("\\\\"),
            '"' => out.push_str("\\\""),
            '$' => out.push_str("\\$"),
            '\n' => out.push_str("\\n"),
            c => out.push(c),
        }
    }
    out.push('"');
    out
}

fn one_line(s: &str) -> String {
    s.replace(['\n', '\r'], " ")
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn secret_names_are_hidden_and_others_kept() {
        let mut s = Secrets::default();
        assert_eq!(s.keep_or_hide("Accept", "text/html", "x"), "text/html");
        assert_eq!(
            s.keep_or_hide("Authorization", "Bearer abc", "x"),
            "${env:AUTHORIZATION}"
        );
        assert_eq!(
            s.keep_or_hide("Authorization", "Bearer abc", "y"),
            "${env:AUTHORIZATION}"
        );
        assert_eq!(
            s.keep_or_hide("Authorization", "Bearer def", "z"),
            "${env:AUTHORIZATION_2}"
        );
        assert_eq!(s.keep_or_hide("x-api-key", "k", "z"), "${env:X_API_KEY}");
        assert_eq!(s.iter().count(), 3);
    }

    #[test]
    fn env_names_are_valid() {
        assert_eq!(env_name("csrf-token"), "CSRF_TOKEN");
        assert_eq!(env_name("2fa code"), "_2FA_CODE");
        assert_eq!(env_name("--"), "SECRET");
    }

    #[test]
    fn dotenv_values_are_quoted_literally() {
        assert_eq!(quoted("a$b c"), "'a$b c'");
        assert_eq!(quoted("it's $x"), "\"it's \\$x\"");
    }
}
