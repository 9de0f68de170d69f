//! What an import refuses, naming the entry, the option or the place in the spec at fault.

/// Why an input could not be imported. Each message names what it is about (the curl option,
/// the HAR entry by number and URL, the spec's JSON pointer), so the user knows what to fix.
#[derive(Debug, thiserror::Error)]
pub enum ImportError {
    /// The input is not of the kind expected at all (not JSON, not a HAR, not an OpenAPI spec).
    #[error("{source_name}: {message}")]
    NotThisKind { source_name: String, message: String },
    /// A curl option crest does not support or whose value is wrong.
    #[error("curl option {option}: {message}")]
    CurlOption { option: String, message: String },
    /// An entry of a HAR recording, counted from 1.
    #[error("{source_name}: entry {entry} ({url}): {message}")]
    HarEntry {
        source_name: String,
        entry: usize,
        url: String,
        message: String,
    },
    /// A place in an OpenAPI spec, as a JSON pointer (`#/paths/~1plans/post`).
    #[error("{source_name}: {pointer}: {message}")]
    Spec {
        source_name: String,
        pointer: String,
        message: String,
    },
    /// Anything else, said as it is.
    #[error("{0}")]
    Other(String),
}
