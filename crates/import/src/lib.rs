//! Scenarios from what users already have: a curl command, a browser's HAR recording, an
//! OpenAPI spec.
//!
//! An importer reads its input into an [`Imported`] scenario (plain data) and [`write`] turns
//! that into the YAML file and the dotenv file of the secrets taken out of it, so each importer
//! knows its input format only, and every import is written (commented, ordered, quoted) the
//! same way. Values a server hands out are carried from the response that gave them to the
//! requests that send them back ([`Correlation`]), so an import runs as it is.

pub mod curl;
mod error;
pub mod har;
pub mod openapi;
mod scenario;
mod secrets;
pub mod write;

pub use error::ImportError;
pub use scenario::{Body, Correlation, Defaults, Extract, Flow, Imported, Part, Request, Step};
pub use secrets::{Secret, Secrets};

/// A recorded value written into a template as itself: `${` would start a template, so it is
/// written `$${`.
pub fn literal(value: &str) -> String {
    value.replace("${", "$${")
}

/// A variable name from a key, header or parameter name: snake case (`cartId`,
/// `X-Request-Token`, `bearerAuth` -> `cart_id`, `x_request_token`, `bearer_auth`), never
/// starting with a digit.
pub(crate) fn snake(s: &str) -> String {
    let mut out = String::new();
    let mut prev_lower = false;
    for c in s.chars() {
        if c.is_ascii_alphanumeric() {
            if c.is_ascii_uppercase() && prev_lower && !out.ends_with('_') {
                out.push('_');
            }
            prev_lower = c.is_ascii_lowercase() || c.is_ascii_digit();
            out.push(c.to_ascii_lowercase());
        } else {
            prev_lower = false;
            if !out.is_empty() && !out.ends_with('_') {
                out.push('_');
            }
        }
    }
    let out = out.trim_matches('_').to_string();
    match out.chars().next() {
        None => "value".to_string(),
        Some(c) if c.is_ascii_digit() => format!("v_{out}"),
        Some(_) => out,
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_recorded_dollar_brace_is_kept_literal() {
        assert_eq!(literal("a${b}c$d"), "a$${b}c$d");
    }
}
