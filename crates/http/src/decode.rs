//! Content-Encoding: decoding gzip, deflate and brotli bodies so checks read what the service
//! meant, while the bytes on the wire stay what was counted.

use crate::exchange::{Response, MAX_KEPT_BODY};
use std::io::Read;

/// What `Accept-Encoding` offers when compression is asked for.
pub const ACCEPT_ENCODING: &str = "gzip, deflate, br";

/// A body did not decode as its Content-Encoding said.
#[derive(Debug, thiserror::Error)]
#[error("the {coding} body could not be decoded: {source}")]
pub(crate) struct DecodeError {
    /// The coding that failed, as the header named it.
    coding: String,
    source: std::io::Error,
}

/// Decodes `resp.body` in place per its `Content-Encoding` (codings applied in order, so undone
/// in reverse). Returns the decoded length when the body was encoded, or an error naming the
/// coding that failed; a body with no or an unknown coding is left as it is.
pub(crate) fn decode(resp: &mut Response) -> Result<Option<u64>, DecodeError> {
    let Some(codings) = resp.header("content-encoding").map(str::to_ascii_lowercase) else {
        return Ok(None);
    };
    for coding in codings.rsplit(',').map(str::trim) {
        let body = std::mem::take(&mut resp.body);
        let mut out = Vec::with_capacity(body.len() * 4);
        let limit = MAX_KEPT_BODY as u64 + 1;
        let read = match coding {
            "gzip" | "x-gzip" => flate2::read::MultiGzDecoder::new(body.as_slice())
                .take(limit)
                .read_to_end(&mut out),
            // "deflate" is zlib-wrapped by the RFC, but some servers send raw deflate.
            "deflate" => {
                let zlib = flate2::read::ZlibDecoder::new(body.as_slice())
                    .take(limit)
                    .read_to_end(&mut out);
                if zlib.is_err() {
                    out.clear();
                    flate2::read::DeflateDecoder::new(body.as_slice())
                        .take(limit)
                        .read_to_end(&mut out)
                } else {
                    zlib
                }
            }
            "br" => brotli_decompressor::Decompressor::new(body.as_slice(), 8192)
                .take(limit)
                .read_to_end(&mut out),
            "identity" | "" => {
                resp.body = body;
                continue;
            }
            _ => {
                resp.body = body;
                return Ok(None);
            }
        };
        if let Err(e) = read {
            resp.body = body;
            return Err(DecodeError {
                coding: coding.to_string(),
                source: e,
            });
        }
        if out.len() > MAX_KEPT_BODY {
            out.truncate(MAX_KEPT_BODY);
            resp.truncated = true;
        }
        resp.body = out;
    }
    Ok(Some(resp.body.len() as u64))
}

#[cfg(test)]
mod tests {
    use super::*;
    use std::io::Write;

    #[test]
    fn gzip_deflate_and_unknown_codings() {
        let mut gz = flate2::write::GzEncoder::new(Vec::new(), flate2::Compression::fast());
        gz.write_all(b"{\"a\":1}").unwrap();
        let mut r = Response {
            headers: vec![("Content-Encoding".into(), "gzip".into())],
            body: gz.finish().unwrap(),
            ..Response::default()
        };
        assert_eq!(decode(&mut r).unwrap(), Some(7));
        assert_eq!(r.body, b"{\"a\":1}");
        let mut raw = flate2::write::DeflateEncoder::new(Vec::new(), flate2::Compression::fast());
        raw.write_all(b"xyz").unwrap();
        let mut r = Response {
            headers: vec![("content-encoding".into(), "deflate".into())],
            body: raw.finish().unwrap(),
            ..Response::default()
        };
        decode(&mut r).unwrap();
        assert_eq!(r.body, b"xyz", "raw deflate is accepted too");
        let mut r = Response {
            headers: vec![("content-encoding".into(), "gzip".into())],
            body: b"not gzip".to_vec(),
            ..Response::default()
        };
        assert!(decode(&mut r).unwrap_err().to_string().contains("gzip"));
    }
}
