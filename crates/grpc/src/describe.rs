//! Services as descriptors: compiled from `.proto` files, or handed over by reflection, and the
//! methods a scenario names in them, with their messages read from and written as JSON.

use bytes::Bytes;
use http::uri::PathAndQuery;
use prost::Message as _;
use prost_reflect::{
    DescriptorPool, DeserializeOptions, DynamicMessage, FieldDescriptor, Kind, MessageDescriptor, MethodDescriptor,
    SerializeOptions,
};
use serde_json::Value;
use std::fmt;
use std::path::PathBuf;

/// Why services could not be described, or a method or message does not fit them; the message
/// says where (a `.proto` file's line and column) and what.
#[derive(Debug)]
pub struct DescribeError {
    /// What is wrong.
    pub message: String,
    /// What would be right, when something close exists.
    pub hint: Option<String>,
}

impl fmt::Display for DescribeError {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(&self.message)
    }
}

impl std::error::Error for DescribeError {}

impl DescribeError {
    pub(crate) fn new(message: impl Into<String>) -> Self {
        DescribeError {
            message: message.into(),
            hint: None,
        }
    }
}

/// The services a scenario's calls may name.
#[derive(Clone, Debug)]
pub struct Protos(DescriptorPool);

impl Protos {
    /// Compiles `.proto` files, resolving imports against `includes` (and protobuf's
    /// well-known types, which need no file). An error names the file, line and column.
    pub fn compile(files: &[PathBuf], includes: &[PathBuf]) -> Result<Protos, DescribeError> {
        let mut compiler = protox::Compiler::new(includes).map_err(|e| proto_error(&e))?;
        compiler.include_imports(true);
        compiler.open_files(files).map_err(|e| proto_error(&e))?;
        Ok(Protos(compiler.descriptor_pool()))
    }

    /// Services described by file descriptors (as reflection hands them over, in any order).
    pub fn from_files(files: Vec<prost_types::FileDescriptorProto>) -> Result<Protos, DescribeError> {
        let mut pool = DescriptorPool::new();
        pool.add_file_descriptor_protos(files)
            .map_err(|e| DescribeError::new(format!("the server's descriptors do not fit together: {e}")))?;
        Ok(Protos(pool))
    }

    /// The service and method of `package.Service/Method` (or `/package.Service/Method`, or
    /// `package.Service.Method`).
    pub fn split_method(name: &str) -> Option<(&str, &str)> {
        split_method(name)
    }

    /// Whether a service of this full name is described.
    pub fn has_service(&self, name: &str) -> bool {
        self.0.get_service_by_name(name).is_some()
    }

    /// The method `package.Service/Method` (a leading `/`, or a `.` before the method, are
    /// accepted too, as other tools write them).
    pub fn method(&self, name: &str) -> Result<Method, DescribeError> {
        let (service, method) = split_method(name).ok_or_else(|| DescribeError {
            message: format!("{name:?} is not a method name"),
            hint: Some("write it as package.Service/Method".into()),
        })?;
        let Some(s) = self.0.get_service_by_name(service) else {
            let known: Vec<String> = self.0.services().map(|s| s.full_name().to_string()).collect();
            return Err(DescribeError {
                message: format!("no service {service:?} is described"),
                hint: Some(if known.is_empty() {
                    "the descriptors hold no service".into()
                } else {
                    format!("services: {}", known.join(", "))
                }),
            });
        };
        let Some(m) = s.methods().find(|m| m.name() == method) else {
            let known: Vec<String> = s.methods().map(|m| m.name().to_string()).collect();
            return Err(DescribeError {
                message: format!("service {service} has no method {method:?}"),
                hint: Some(format!("its methods: {}", known.join(", "))),
            });
        };
        let path = format!("/{}/{}", s.full_name(), m.name());
        let path = PathAndQuery::try_from(path.as_str())
            .map_err(|_| DescribeError::new(format!("{path:?} cannot be a request path")))?;
        Ok(Method { desc: m, path })
    }
}

fn split_method(name: &str) -> Option<(&str, &str)> {
    let name = name.trim().trim_start_matches('/');
    let (service, method) = name.rsplit_once('/').or_else(|| name.rsplit_once('.'))?;
    (!service.is_empty() && !method.is_empty() && !method.contains('.')).then_some((service, method))
}

/// protox's error with the place it names, as `file:line:column: message`.
fn proto_error(e: &protox::Error) -> DescribeError {
    use miette::Diagnostic;
    let place = e.labels().and_then(|mut labels| labels.next()).and_then(|label| {
        let source = e.source_code()?;
        let span = source.read_span(label.inner(), 0, 0).ok()?;
        Some(format!(
            "{}:{}:{}",
            span.name().unwrap_or(e.file().unwrap_or("")),
            span.line() + 1,
            span.column() + 1
        ))
    });
    let message = match (place, e.file()) {
        (Some(place), _) => format!("{place}: {e}"),
        (None, Some(file)) if !e.to_string().contains(file) => format!("{file}: {e}"),
        _ => e.to_string(),
    };
    DescribeError::new(message)
}

/// A method of a described service: how its messages are written and read.
#[derive(Clone, Debug)]
pub struct Method {
    desc: MethodDescriptor,
    path: PathAndQuery,
}

impl Method {
    /// `/package.Service/Method`, the path calls are sent to.
    pub fn path(&self) -> &PathAndQuery {
        &self.path
    }

    /// Whether the client sends a stream of messages.
    pub fn client_streaming(&self) -> bool {
        self.desc.is_client_streaming()
    }

    /// Whether the server answers with a stream of messages.
    pub fn server_streaming(&self) -> bool {
        self.desc.is_server_streaming()
    }

    /// The request message's full name.
    pub fn input_name(&self) -> String {
        self.desc.input().full_name().to_string()
    }

    /// A request written as JSON (protobuf's JSON mapping: field names as in the `.proto` or
    /// in lowerCamelCase, 64-bit integers and enums as strings or numbers), as wire bytes. A
    /// field the message does not have is refused, not dropped: it is a mistake in the scenario.
    pub fn encode(&self, json: &Value) -> Result<Bytes, String> {
        let message = from_json(self.desc.input(), json)?;
        Ok(message.encode_to_vec().into())
    }

    /// A response's wire bytes as JSON, every field present (defaults included, so a check on
    /// a zero value finds it), enums by name.
    pub fn decode(&self, bytes: &[u8]) -> Result<Vec<u8>, String> {
        let message = DynamicMessage::decode(self.desc.output(), bytes)
            .map_err(|e| format!("the response is not a {}: {e}", self.desc.output().full_name()))?;
        let mut out = Vec::new();
        message
            .serialize_with_options(
                &mut serde_json::Serializer::new(&mut out),
                &SerializeOptions::new().skip_default_fields(false),
            )
            .map_err(|e| format!("the response cannot be written as JSON: {e}"))?;
        Ok(out)
    }

    /// Checks a request written as JSON whose strings may be templates, rendered for each call:
    /// every field must exist, and every value that is not templated must fit its field. A
    /// templated value is checked when it is rendered.
    pub fn check(&self, json: &Value, templated: &dyn Fn(&str) -> bool) -> Result<(), String> {
        check_message(&self.desc.input(), json, templated, "")
    }
}

fn from_json(desc: MessageDescriptor, json: &Value) -> Result<DynamicMessage, String> {
    let name = desc.full_name().to_string();
    DynamicMessage::deserialize_with_options(desc, json, &DeserializeOptions::new().deny_unknown_fields(true))
        .map_err(|e| format!("the JSON does not fit {name}: {e}"))
}

fn check_message(
    desc: &MessageDescriptor,
    json: &Value,
    templated: &dyn Fn(&str) -> bool,
    at: &str,
) -> Result<(), String> {
    let Value::Object(fields) = json else {
        // Not an object: a well-known type with a JSON form of its own (a Timestamp's string),
        // or a mistake; protobuf's mapping decides which.
        return if holds_template(json, templated) {
            Ok(())
        } else {
            from_json(desc.clone(), json).map(|_| ())
        };
    };
    for (key, value) in fields {
        let place = if at.is_empty() {
            key.clone()
        } else {
            format!("{at}.{key}")
        };
        let Some(field) = desc.get_field_by_json_name(key).or_else(|| desc.get_field_by_name(key)) else {
            let names: Vec<String> = desc.fields().map(|f| f.name().to_string()).collect();
            return Err(format!(
                "{} has no field {place:?} (its fields: {})",
                desc.full_name(),
                names.join(", ")
            ));
        };
        check_field(desc, &field, key, value, templated, &place)?;
    }
    Ok(())
}

fn check_field(
    parent: &MessageDescriptor,
    field: &FieldDescriptor,
    key: &str,
    value: &Value,
    templated: &dyn Fn(&str) -> bool,
    at: &str,
) -> Result<(), String> {
    if !holds_template(value, templated) {
        // Fully written out: the message with this one field says whether it fits.
        let mut one = serde_json::Map::new();
        one.insert(key.to_string(), value.clone());
        return from_json(parent.clone(), &Value::Object(one))
            .map(|_| ())
            .map_err(|e| format!("{at}: {e}"));
    }
    let element = |v: &Value, at: &str| match field.kind() {
        Kind::Message(m) => check_message(&m, v, templated, at),
        _ => Ok(()),
    };
    match value {
        Value::Array(items) if field.is_list() => {
            for (i, v) in items.iter().enumerate() {
                element(v, &format!("{at}[{i}]"))?;
            }
            Ok(())
        }
        Value::Object(entries) if field.is_map() => {
            let Kind::Message(entry) = field.kind() else {
                return Ok(());
            };
            let value_field = entry.map_entry_value_field();
            for (k, v) in entries {
                if let Kind::Message(m) = value_field.kind() {
                    check_message(&m, v, templated, &format!("{at}.{k}"))?;
                }
            }
            Ok(())
        }
        _ => element(value, at),
    }
}

fn holds_template(v: &Value, templated: &dyn Fn(&str) -> bool) -> bool {
    match v {
        Value::String(s) => templated(s),
        Value::Array(a) => a.iter().any(|v| holds_template(v, templated)),
        Value::Object(o) => o.iter().any(|(k, v)| templated(k) || holds_template(v, templated)),
        _ => false,
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn protos(text: &str) -> Result<Protos, DescribeError> {
        let dir = tempfile::tempdir().unwrap();
        std::fs::write(dir.path().join("t.proto"), text).unwrap();
        Protos::compile(&[dir.path().join("t.proto")], &[dir.path().to_path_buf()])
    }

    const ECHO: &str = r#"syntax = "proto3";
package t;
import "google/protobuf/timestamp.proto";
enum Mood { CALM = 0; LOUD = 1; }
message Inner { int32 n = 1; }
message Req { string text = 1; int64 big = 2; Mood mood = 3; repeated Inner items = 4; map<string, Inner> named = 5; google.protobuf.Timestamp at = 6; }
message Res { string text = 1; int32 count = 2; }
service Echo { rpc Say(Req) returns (Res); rpc Many(Req) returns (stream Res); }
"#;

    #[test]
    fn methods_are_found_by_any_usual_spelling() {
        let p = protos(ECHO).unwrap();
        for name in ["t.Echo/Say", "/t.Echo/Say", "t.Echo.Say"] {
            assert_eq!(p.method(name).unwrap().path().as_str(), "/t.Echo/Say");
        }
        assert!(p.method("t.Echo/Many").unwrap().server_streaming());
        let e = p.method("t.Echo/Shout").unwrap_err();
        assert_eq!(e.message, "service t.Echo has no method \"Shout\"");
        assert_eq!(e.hint.as_deref(), Some("its methods: Say, Many"));
        let e = p.method("t.Echoes/Say").unwrap_err();
        assert_eq!(e.hint.as_deref(), Some("services: t.Echo"));
    }

    #[test]
    fn a_proto_that_does_not_compile_is_located() {
        let e = protos("syntax = \"proto3\";\nmessage A {\n  strin x = 1;\n}\n").unwrap_err();
        assert!(e.message.contains("t.proto:3:3"), "{}", e.message);
    }

    #[test]
    fn json_round_trips_and_unknown_fields_are_refused() {
        let m = protos(ECHO).unwrap().method("t.Echo/Say").unwrap();
        let wire = m
            .encode(&serde_json::json!({"text": "hi", "big": "9007199254740993", "mood": "LOUD"}))
            .unwrap();
        assert!(!wire.is_empty());
        let res = protos(ECHO).unwrap().method("t.Echo/Say").unwrap();
        // A Res with text "hi": field 1, length 2.
        let json: Value = serde_json::from_slice(&res.decode(&[10, 2, b'h', b'i']).unwrap()).unwrap();
        assert_eq!(json, serde_json::json!({"text": "hi", "count": 0}));
        let e = m.encode(&serde_json::json!({"txt": "hi"})).unwrap_err();
        assert!(e.contains("txt"), "{e}");
    }

    #[test]
    fn templated_json_is_checked_where_it_is_written_out() {
        let m = protos(ECHO).unwrap().method("t.Echo/Say").unwrap();
        let t = |s: &str| s.contains("${");
        m.check(
            &serde_json::json!({"text": "${name}", "big": "${n}", "items": [{"n": "${i}"}, {"n": 3}],
                "named": {"a": {"n": "${i}"}}, "at": "2026-01-01T00:00:00Z"}),
            &t,
        )
        .unwrap();
        let e = m
            .check(&serde_json::json!({"items": [{"n": "${i}", "x": 1}]}), &t)
            .unwrap_err();
        assert!(e.contains("items[0].x"), "{e}");
        let e = m
            .check(&serde_json::json!({"text": "${a}", "mood": "SILENT"}), &t)
            .unwrap_err();
        assert!(e.starts_with("mood: "), "{e}");
        let e = m.check(&serde_json::json!({"items": [{"n": "many"}]}), &t).unwrap_err();
        assert!(e.starts_with("items: "), "{e}");
    }
}
