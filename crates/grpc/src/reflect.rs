//! Services described by the server itself, through its reflection service: the files that
//! declare the services a scenario calls, with every file they import.

use crate::call::Conn;
use crate::describe::{DescribeError, Protos};
use bytes::Bytes;
use prost::Message;
use std::collections::{BTreeSet, HashMap};
use std::time::Duration;
use tonic_reflection::pb::v1::server_reflection_request::MessageRequest;
use tonic_reflection::pb::v1::server_reflection_response::MessageResponse;
use tonic_reflection::pb::v1::{ServerReflectionRequest, ServerReflectionResponse};

/// The reflection service's method: v1 first, then v1alpha for servers that have only the
/// older one. Their messages are the same on the wire, so one set of types reads both.
const PATHS: [&str; 2] = [
    "/grpc.reflection.v1.ServerReflection/ServerReflectionInfo",
    "/grpc.reflection.v1alpha.ServerReflection/ServerReflectionInfo",
];

/// The most files a server may hand over for one scenario: a bound on what a server that
/// keeps naming new imports can make crest fetch.
const MAX_FILES: usize = 1_000;

/// Asks the server on `conn` for the files declaring `services`, and the files they import.
pub async fn reflect(
    conn: &mut Conn,
    services: &[String],
    metadata: &[(String, String)],
    deadline: Duration,
) -> Result<Protos, DescribeError> {
    let mut asker = Asker {
        conn,
        metadata,
        deadline,
        path: 0,
    };
    let mut files: HashMap<String, prost_types::FileDescriptorProto> = HashMap::new();
    for service in services {
        for f in asker.ask(MessageRequest::FileContainingSymbol(service.clone())).await? {
            files.insert(f.name().to_string(), f);
        }
    }
    loop {
        let missing: BTreeSet<String> = files
            .values()
            .flat_map(|f| f.dependency.iter())
            .filter(|d| !files.contains_key(*d))
            .cloned()
            .collect();
        if missing.is_empty() {
            break;
        }
        if files.len() + missing.len() > MAX_FILES {
            return Err(DescribeError::new(format!(
                "the server's reflection names more than {MAX_FILES} files"
            )));
        }
        for name in missing {
            let got = asker.ask(MessageRequest::FileByFilename(name.clone())).await?;
            if !got.iter().any(|f| f.name() == name) {
                return Err(DescribeError::new(format!(
                    "the server's reflection does not hand over {name}, which its files import"
                )));
            }
            for f in got {
                files.insert(f.name().to_string(), f);
            }
        }
    }
    Protos::from_files(files.into_values().collect())
}

struct Asker<'a> {
    conn: &'a mut Conn,
    metadata: &'a [(String, String)],
    deadline: Duration,
    /// Index into [`PATHS`] of the version the server answers.
    path: usize,
}

impl Asker<'_> {
    /// One question on a stream of its own; the server's files in its answer.
    async fn ask(&mut self, question: MessageRequest) -> Result<Vec<prost_types::FileDescriptorProto>, DescribeError> {
        let request = Bytes::from(
            ServerReflectionRequest {
                host: String::new(),
                message_request: Some(question.clone()),
            }
            .encode_to_vec(),
        );
        loop {
            let mut answers = Vec::new();
            let mut counts = crate::Counts::default();
            let called = self
                .conn
                .call(
                    PATHS[self.path].parse().expect("a valid path"),
                    vec![request.clone()],
                    self.metadata,
                    self.deadline,
                    &mut counts,
                    &mut |m: &Bytes| {
                        answers.push(m.clone());
                        true
                    },
                )
                .await;
            match called {
                Err(e) if e.outcome == crest_model::Outcome::Grpc(12) && self.path + 1 < PATHS.len() => {
                    self.path += 1;
                    continue;
                }
                Err(e) => {
                    return Err(DescribeError {
                        message: format!("the server's reflection service did not answer: {e}"),
                        hint: Some("give the services' .proto files with `protos:`".into()),
                    })
                }
                Ok(()) => {}
            }
            let Some(answer) = answers.first() else {
                return Err(DescribeError::new("the server's reflection service answered nothing"));
            };
            let answer = ServerReflectionResponse::decode(answer.clone())
                .map_err(|e| DescribeError::new(format!("the server's reflection answer cannot be read: {e}")))?;
            return match answer.message_response {
                Some(MessageResponse::FileDescriptorResponse(r)) => r
                    .file_descriptor_proto
                    .iter()
                    .map(|b| {
                        prost_types::FileDescriptorProto::decode(b.as_slice()).map_err(|e| {
                            DescribeError::new(format!("a file from the server's reflection cannot be read: {e}"))
                        })
                    })
                    .collect(),
                Some(MessageResponse::ErrorResponse(e)) => Err(DescribeError::new(match &question {
                    MessageRequest::FileContainingSymbol(s) => {
                        format!("the server does not describe {s}: {}", e.error_message)
                    }
                    _ => format!("the server's reflection refused: {}", e.error_message),
                })),
                _ => Err(DescribeError::new("the server's reflection answered something else")),
            };
        }
    }
}
