//! The closed set of ways a request can end.
//!
//! Outcomes are an enum, never strings, so that failures are grouped by what happened rather than
//! by how an error happened to be worded (oha groups by `to_string()`, which splits one cause
//! into many rows whenever a message carries a port number or an address).

use std::fmt;
use std::str::FromStr;

/// How one request ended.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash, PartialOrd, Ord)]
pub enum Outcome {
    /// A response that counts as success (HTTP 1xx-3xx).
    Success,
    /// A complete response whose status counts as a failure (HTTP 4xx and 5xx).
    Status(u16),
    /// The target refused the connection (nothing listening, or a full backlog).
    ConnectRefused,
    /// The connection was not established within the timeout.
    ConnectTimeout,
    /// The host name did not resolve, when each connection resolves it
    /// (`--dns-per-connection`): no address, or the resolver failed.
    DnsFailed,
    /// The peer reset the connection (TCP RST) before the response was complete.
    Reset,
    /// The peer closed the connection (end of stream, without a reset) before the response
    /// was complete: the request was sent and never answered, as when a server's worker
    /// crashes. crest does not send it again: the server may have acted on it.
    Closed,
    /// The request did not complete within the request timeout.
    Timeout,
    /// The TLS handshake failed (bad certificate, protocol mismatch).
    Tls,
    /// The response could not be parsed, or its body broke off in a way that is not a reset.
    Protocol,
    /// crest itself ran out of a local resource: file descriptors or ephemeral ports.
    LocalExhaustion,
    /// crest refused a response that went past one of crest's own limits (a response head or
    /// HTTP/2 header block over 256 KiB, more than 100 HTTP/1.1 headers): a limit of the
    /// client's, not a server breaking the protocol, so it is an outcome of its own.
    CrestLimit,
    /// The response arrived but a scenario check on it failed.
    CheckFailed,
    /// Any other I/O failure.
    Other,
    /// Redirects went on past the limit (a loop, usually).
    TooManyRedirects,
    /// HTTP/2: the server sent GOAWAY and this request's stream was not (or not fully)
    /// processed before the connection went away.
    H2GoAway,
    /// HTTP/2: the server reset this request's stream (RST_STREAM) with this error code
    /// (7 REFUSED_STREAM: not processed; 8 CANCEL; 11 ENHANCE_YOUR_CALM; ...).
    H2Reset(u32),
    /// HTTP/2: a flow-control window was violated (FLOW_CONTROL_ERROR).
    H2FlowControl,
    /// HTTP/2: the peer broke the protocol (PROTOCOL_ERROR, a bad frame or header block).
    H2Protocol,
    /// SQL: the transaction could not be serialized (SQLSTATE 40001).
    SqlSerialization,
    /// SQL: a deadlock was detected (40P01).
    SqlDeadlock,
    /// SQL: the server has too many connections (53300).
    SqlTooManyConnections,
    /// SQL: the statement timed out or was cancelled (57014).
    SqlStatementTimeout,
    /// SQL: the connection was lost (class 08, or closed).
    SqlConnectionLost,
    /// SQL: any other database error.
    SqlError,
    /// A `receive` of a message stream (WebSocket, server-sent events) waited
    /// past its timeout for the message it was told to wait for.
    ReceiveTimeout,
    /// WebSocket: the server closed the connection with this close code (1000 normal,
    /// 1001 going away, 1011 internal error, ...) while a step still wanted it.
    WsClosed(u16),
    /// gRPC: the call ended with this status code (14 UNAVAILABLE, 4 DEADLINE_EXCEEDED, ...);
    /// never 0 (OK), which is [`Outcome::Success`].
    Grpc(u8),
}

/// gRPC's status codes by number, as its specification names them.
pub const GRPC_CODES: [&str; 17] = [
    "OK",
    "CANCELLED",
    "UNKNOWN",
    "INVALID_ARGUMENT",
    "DEADLINE_EXCEEDED",
    "NOT_FOUND",
    "ALREADY_EXISTS",
    "PERMISSION_DENIED",
    "RESOURCE_EXHAUSTED",
    "FAILED_PRECONDITION",
    "ABORTED",
    "OUT_OF_RANGE",
    "UNIMPLEMENTED",
    "INTERNAL",
    "UNAVAILABLE",
    "DATA_LOSS",
    "UNAUTHENTICATED",
];

/// A gRPC status code's name (`UNAVAILABLE`), or its number when gRPC names none.
pub fn grpc_code_name(code: u8) -> String {
    match GRPC_CODES.get(code as usize) {
        Some(name) => (*name).to_string(),
        None => code.to_string(),
    }
}

impl Outcome {
    /// True for outcomes that count as a successful request.
    pub fn is_success(self) -> bool {
        matches!(self, Outcome::Success)
    }

    /// A stable, machine-readable key: `success`, `http_503`, `connect_refused`, ...
    pub fn key(self) -> String {
        match self {
            Outcome::Status(code) => format!("http_{code}"),
            Outcome::H2Reset(code) => format!("h2_rst_{code}"),
            Outcome::WsClosed(code) => format!("ws_closed_{code}"),
            Outcome::Grpc(code) => format!("grpc_{}", grpc_code_name(code).to_ascii_lowercase()),
            other => other.class().to_string(),
        }
    }

    /// The error class: like [`Outcome::key`] but all HTTP statuses share `http_status`.
    pub fn class(self) -> &'static str {
        match self {
            Outcome::Success => "success",
            Outcome::Status(_) => "http_status",
            Outcome::ConnectRefused => "connect_refused",
            Outcome::ConnectTimeout => "connect_timeout",
            Outcome::DnsFailed => "dns_failed",
            Outcome::Reset => "reset",
            Outcome::Closed => "closed",
            Outcome::Timeout => "timeout",
            Outcome::Tls => "tls",
            Outcome::Protocol => "protocol",
            Outcome::LocalExhaustion => "local_exhaustion",
            Outcome::CrestLimit => "crest_limit",
            Outcome::CheckFailed => "check_failed",
            Outcome::Other => "other",
            Outcome::TooManyRedirects => "too_many_redirects",
            Outcome::H2GoAway => "h2_goaway",
            Outcome::H2Reset(_) => "h2_rst_stream",
            Outcome::H2FlowControl => "h2_flow_control",
            Outcome::H2Protocol => "h2_protocol",
            Outcome::SqlSerialization => "sql_serialization",
            Outcome::SqlDeadlock => "sql_deadlock",
            Outcome::SqlTooManyConnections => "sql_too_many_connections",
            Outcome::SqlStatementTimeout => "sql_statement_timeout",
            Outcome::SqlConnectionLost => "sql_connection_lost",
            Outcome::SqlError => "sql_error",
            Outcome::ReceiveTimeout => "receive_timeout",
            Outcome::WsClosed(_) => "ws_closed",
            Outcome::Grpc(_) => "grpc_status",
        }
    }

    /// A short human description, used in summaries.
    pub fn describe(self) -> String {
        match self {
            Outcome::Success => "success".into(),
            Outcome::Status(code) => format!("HTTP {code}"),
            Outcome::ConnectRefused => "connection refused".into(),
            Outcome::ConnectTimeout => "connect timeout".into(),
            Outcome::DnsFailed => "host name did not resolve".into(),
            Outcome::Reset => "connection reset".into(),
            Outcome::Closed => "closed before the response".into(),
            Outcome::Timeout => "request timeout".into(),
            Outcome::Tls => "TLS error".into(),
            Outcome::Protocol => "body or protocol error".into(),
            Outcome::LocalExhaustion => "local resource exhaustion".into(),
            Outcome::CrestLimit => "response over a limit of crest's".into(),
            Outcome::CheckFailed => "check failed".into(),
            Outcome::Other => "other I/O error".into(),
            Outcome::TooManyRedirects => "too many redirects".into(),
            Outcome::H2GoAway => "HTTP/2 GOAWAY".into(),
            Outcome::H2Reset(code) => format!("HTTP/2 RST_STREAM {}", h2_reason(code)),
            Outcome::H2FlowControl => "HTTP/2 flow-control error".into(),
            Outcome::H2Protocol => "HTTP/2 protocol error".into(),
            Outcome::SqlSerialization => "serialization failure".into(),
            Outcome::SqlDeadlock => "deadlock".into(),
            Outcome::SqlTooManyConnections => "too many connections".into(),
            Outcome::SqlStatementTimeout => "statement timeout".into(),
            Outcome::SqlConnectionLost => "connection lost".into(),
            Outcome::SqlError => "database error".into(),
            Outcome::ReceiveTimeout => "no awaited message before the receive timeout".into(),
            Outcome::WsClosed(code) => format!("WebSocket closed by the server ({code})"),
            Outcome::Grpc(code) => format!("gRPC {}", grpc_code_name(code)),
        }
    }
}

/// The name RFC 9113 gives an HTTP/2 error code, or the number when it has none.
fn h2_reason(code: u32) -> String {
    const NAMES: [&str; 14] = [
        "NO_ERROR",
        "PROTOCOL_ERROR",
        "INTERNAL_ERROR",
        "FLOW_CONTROL_ERROR",
        "SETTINGS_TIMEOUT",
        "STREAM_CLOSED",
        "FRAME_SIZE_ERROR",
        "REFUSED_STREAM",
        "CANCEL",
        "COMPRESSION_ERROR",
        "CONNECT_ERROR",
        "ENHANCE_YOUR_CALM",
        "INADEQUATE_SECURITY",
        "HTTP_1_1_REQUIRED",
    ];
    match NAMES.get(code as usize) {
        Some(name) => (*name).to_string(),
        None => format!("0x{code:x}"),
    }
}

impl fmt::Display for Outcome {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(&self.key())
    }
}

/// The text was not an outcome key.
#[derive(Debug, thiserror::Error)]
#[error("unknown outcome {0:?}")]
pub struct UnknownOutcome(String);

impl FromStr for Outcome {
    type Err = UnknownOutcome;

    fn from_str(s: &str) -> Result<Self, Self::Err> {
        if let Some(code) = s.strip_prefix("http_") {
            return code
                .parse()
                .map(Outcome::Status)
                .map_err(|_| UnknownOutcome(s.to_string()));
        }
        if let Some(code) = s.strip_prefix("h2_rst_") {
            return code
                .parse()
                .map(Outcome::H2Reset)
                .map_err(|_| UnknownOutcome(s.to_string()));
        }
        if let Some(code) = s.strip_prefix("ws_closed_") {
            return code
                .parse()
                .map(Outcome::WsClosed)
                .map_err(|_| UnknownOutcome(s.to_string()));
        }
        if let Some(name) = s.strip_prefix("grpc_") {
            let code = match GRPC_CODES.iter().position(|c| c.eq_ignore_ascii_case(name)) {
                Some(i) if i > 0 => i as u8,
                _ => name
                    .parse()
                    .ok()
                    .filter(|&c| c > 0)
                    .ok_or_else(|| UnknownOutcome(s.to_string()))?,
            };
            return Ok(Outcome::Grpc(code));
        }
        Ok(match s {
            "success" => Outcome::Success,
            "connect_refused" => Outcome::ConnectRefused,
            "connect_timeout" => Outcome::ConnectTimeout,
            "dns_failed" => Outcome::DnsFailed,
            "reset" => Outcome::Reset,
            "closed" => Outcome::Closed,
            "timeout" => Outcome::Timeout,
            "tls" => Outcome::Tls,
            "protocol" => Outcome::Protocol,
            "local_exhaustion" => Outcome::LocalExhaustion,
            "crest_limit" => Outcome::CrestLimit,
            "check_failed" => Outcome::CheckFailed,
            "other" => Outcome::Other,
            "too_many_redirects" => Outcome::TooManyRedirects,
            "h2_goaway" => Outcome::H2GoAway,
            "h2_flow_control" => Outcome::H2FlowControl,
            "h2_protocol" => Outcome::H2Protocol,
            "sql_serialization" => Outcome::SqlSerialization,
            "sql_deadlock" => Outcome::SqlDeadlock,
            "sql_too_many_connections" => Outcome::SqlTooManyConnections,
            "sql_statement_timeout" => Outcome::SqlStatementTimeout,
            "sql_connection_lost" => Outcome::SqlConnectionLost,
            "sql_error" => Outcome::SqlError,
            "receive_timeout" => Outcome::ReceiveTimeout,
            _ => return Err(UnknownOutcome(s.to_string())),
        })
    }
}

impl serde::Serialize for Outcome {
    fn serialize<S: serde::Serializer>(&self, s: S) -> Result<S::Ok, S::Error> {
        s.serialize_str(&self.key())
    }
}

impl<'de> serde::Deserialize<'de> for Outcome {
    fn deserialize<D: serde::Deserializer<'de>>(d: D) -> Result<Self, D::Error> {
        let s = String::deserialize(d)?;
        s.parse().map_err(serde::de::Error::custom)
    }
}

impl schemars::JsonSchema for Outcome {
    fn schema_name() -> String {
        "Outcome".into()
    }

    fn json_schema(_: &mut schemars::gen::SchemaGenerator) -> schemars::schema::Schema {
        let mut schema = schemars::schema::SchemaObject {
            instance_type: Some(schemars::schema::InstanceType::String.into()),
            ..Default::default()
        };
        schema.string().pattern = Some(
            "^(success|http_[0-9]{3}|connect_refused|connect_timeout|dns_failed|reset|closed|timeout|tls|protocol|local_exhaustion|crest_limit|check_failed|other|too_many_redirects|h2_goaway|h2_rst_[0-9]+|h2_flow_control|h2_protocol|sql_serialization|sql_deadlock|sql_too_many_connections|sql_statement_timeout|sql_connection_lost|sql_error|receive_timeout|ws_closed_[0-9]+|grpc_[a-z0-9_]+)$"
                .into(),
        );
        schema.into()
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn keys_round_trip() {
        let all = [
            Outcome::Success,
            Outcome::Status(503),
            Outcome::ConnectRefused,
            Outcome::ConnectTimeout,
            Outcome::DnsFailed,
            Outcome::Reset,
            Outcome::Closed,
            Outcome::Timeout,
            Outcome::Tls,
            Outcome::Protocol,
            Outcome::LocalExhaustion,
            Outcome::CrestLimit,
            Outcome::CheckFailed,
            Outcome::Other,
            Outcome::TooManyRedirects,
            Outcome::H2GoAway,
            Outcome::H2Reset(7),
            Outcome::H2FlowControl,
            Outcome::H2Protocol,
            Outcome::SqlSerialization,
            Outcome::SqlDeadlock,
            Outcome::SqlTooManyConnections,
            Outcome::SqlStatementTimeout,
            Outcome::SqlConnectionLost,
            Outcome::SqlError,
            Outcome::ReceiveTimeout,
            Outcome::WsClosed(1011),
            Outcome::Grpc(14),
            Outcome::Grpc(4),
            Outcome::Grpc(99),
        ];
        for o in all {
            assert_eq!(o.key().parse::<Outcome>().unwrap(), o);
        }
        assert!("http_x".parse::<Outcome>().is_err());
        assert!("nonsense".parse::<Outcome>().is_err());
        assert!(
            "grpc_ok".parse::<Outcome>().is_err(),
            "OK is success, not an outcome of its own"
        );
        assert_eq!(Outcome::Grpc(14).key(), "grpc_unavailable");
        assert_eq!(Outcome::Grpc(4).describe(), "gRPC DEADLINE_EXCEEDED");
        assert_eq!(Outcome::H2Reset(7).describe(), "HTTP/2 RST_STREAM REFUSED_STREAM");
        assert_eq!(Outcome::H2Reset(99).describe(), "HTTP/2 RST_STREAM 0x63");
    }
}
