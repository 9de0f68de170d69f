//! Request bodies: JSON, forms and multipart, rendered for the user.

use crate::plan::{JsonTemplate, Part, PartContent};
use crate::template::{Scope, Template};

/// Sets the body's media type unless the request set its own.
pub(super) fn set_content_type(headers: &mut Vec<(String, String)>, value: String) {
    if !headers.iter().any(|(h, _)| h.eq_ignore_ascii_case("content-type")) {
        headers.push(("Content-Type".into(), value));
    }
}

/// A multipart/form-data body (RFC 7578) and its boundary, which is random and checked not to
/// occur in any part.
pub(super) fn multipart(parts: &[Part], scope: &dyn Scope) -> (Vec<u8>, String) {
    let values: Vec<Option<String>> = parts
        .iter()
        .map(|p| match &p.content {
            PartContent::Value(t) => Some(t.render(scope)),
            PartContent::File { .. } => None,
        })
        .collect();
    let boundary = loop {
        // Drawn after the values are rendered, which may use the same generator.
        let b = format!("crest-{:016x}", scope.rng().borrow_mut().u64(..));
        let inside = |bytes: &[u8]| bytes.windows(b.len()).any(|w| w == b.as_bytes());
        let clash = parts.iter().zip(&values).any(|(p, v)| match (&p.content, v) {
            (_, Some(v)) => inside(v.as_bytes()),
            (PartContent::File { bytes, .. }, None) => inside(bytes),
            _ => false,
        });
        if !clash {
            break b;
        }
    };
    // Quotes and line breaks in names would end the header they sit in.
    let quoted = |s: &str| s.replace('"', "%22").replace('\r', "%0D").replace('\n', "%0A");
    let mut out = Vec::new();
    for (p, v) in parts.iter().zip(values) {
        out.extend_from_slice(
            format!(
                "--{boundary}\r\nContent-Disposition: form-data; name=\"{}\"",
                quoted(&p.name)
            )
            .as_bytes(),
        );
        match (&p.content, v) {
            (
                PartContent::File {
                    filename,
                    content_type,
                    bytes,
                },
                _,
            ) => {
                out.extend_from_slice(
                    format!(
                        "; filename=\"{}\"\r\nContent-Type: {content_type}\r\n\r\n",
                        quoted(filename)
                    )
                    .as_bytes(),
                );
                out.extend_from_slice(bytes);
            }
            (_, v) => {
                out.extend_from_slice(b"\r\n\r\n");
                out.extend_from_slice(v.unwrap_or_default().as_bytes());
            }
        }
        out.extend_from_slice(b"\r\n");
    }
    out.extend_from_slice(format!("--{boundary}--\r\n").as_bytes());
    (out, boundary)
}

pub(super) fn render_json(j: &JsonTemplate, scope: &dyn Scope) -> serde_json::Value {
    match j {
        JsonTemplate::Value(v) => v.clone(),
        JsonTemplate::String(t) => serde_json::Value::String(t.render(scope)),
        JsonTemplate::Array(items) => serde_json::Value::Array(items.iter().map(|i| render_json(i, scope)).collect()),
        JsonTemplate::Object(fields) => {
            serde_json::Value::Object(fields.iter().map(|(k, v)| (k.clone(), render_json(v, scope))).collect())
        }
    }
}

/// Templates of a JSON value: strings are parsed as templates by `parse`, whose error is passed on.
pub fn json_template<E>(
    v: &serde_json::Value,
    parse: &mut dyn FnMut(&str) -> Result<Template, E>,
) -> Result<JsonTemplate, E> {
    Ok(match v {
        serde_json::Value::String(s) => {
            let t = parse(s)?;
            if t.is_constant() && !t.has_secret() {
                // The rendered text, not the source: `${env:X:-default}` and `$${` are
                // constant too, and must be sent as what they stand for.
                JsonTemplate::Value(serde_json::Value::String(t.to_string()))
            } else {
                JsonTemplate::String(t)
            }
        }
        serde_json::Value::Array(items) => JsonTemplate::Array(
            items
                .iter()
                .map(|i| json_template(i, parse))
                .collect::<Result<_, _>>()?,
        ),
        serde_json::Value::Object(fields) => JsonTemplate::Object(
            fields
                .iter()
                .map(|(k, v)| Ok((k.clone(), json_template(v, parse)?)))
                .collect::<Result<_, E>>()?,
        ),
        other => JsonTemplate::Value(other.clone()),
    })
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn constant_json_strings_are_sent_rendered() {
        let unset = |_: &str| None;
        let mut parse = |s: &str| Template::parse(s, &unset).map_err(|e| e.message);
        let v = serde_json::json!({"password": "${env:UNSET_PASSWORD:-demo}", "raw": "$${x}", "n": 3});
        let JsonTemplate::Object(fields) = json_template(&v, &mut parse).unwrap() else {
            panic!("an object stays an object")
        };
        let shown: Vec<String> = fields
            .iter()
            .map(|(k, t)| match t {
                JsonTemplate::Value(v) => format!("{k}={v}"),
                other => format!("{k}: not constant: {other:?}"),
            })
            .collect();
        assert_eq!(shown, ["n=3", "password=\"demo\"", "raw=\"${x}\""]);
    }
}
