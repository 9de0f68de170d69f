//! `crest import curl`: a curl command line (or a file of them, as a browser's "copy all as
//! cURL" gives) as a scenario, one request step per command.

use crate::{ImportError, Imported};

/// The scenario of the curl commands in `text`; `source_name` names the input in errors and in
/// the scenario's comment.
pub fn import(text: &str, source_name: &str) -> Result<Imported, ImportError> {
    let _ = (text, source_name);
    Err(ImportError::Other("curl import: not built yet".into()))
}
