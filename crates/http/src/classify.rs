//! Mapping errors to outcomes.
//!
//! Causes are read from the error's structure (its `io::ErrorKind`, OS error number, or the
//! rustls error inside it), never from its message.

use crate::h1::H1Error;
use crest_model::Outcome;
use std::io;

/// Classifies an I/O error from connecting, TLS, reading or writing.
pub(crate) fn io_error(e: &io::Error) -> Outcome {
    if let Some(code) = e.raw_os_error() {
        if [
            libc::EMFILE,
            libc::ENFILE,
            libc::EADDRNOTAVAIL,
            libc::ENOBUFS,
            libc::ENOMEM,
        ]
        .contains(&code)
        {
            return Outcome::LocalExhaustion;
        }
    }
    if e.get_ref()
        .is_some_and(|inner| inner.downcast_ref::<rustls::Error>().is_some())
    {
        return Outcome::Tls;
    }
    match e.kind() {
        io::ErrorKind::ConnectionRefused => Outcome::ConnectRefused,
        io::ErrorKind::ConnectionReset
        | io::ErrorKind::ConnectionAborted
        | io::ErrorKind::BrokenPipe
        | io::ErrorKind::UnexpectedEof => Outcome::Reset,
        io::ErrorKind::TimedOut => Outcome::Timeout,
        io::ErrorKind::InvalidData => Outcome::Protocol,
        _ => Outcome::Other,
    }
}

/// Classifies a failed exchange.
pub(crate) fn h1_error(e: &H1Error) -> Outcome {
    match e {
        H1Error::Io(io) => io_error(io),
        H1Error::Closed => Outcome::Reset,
        H1Error::Parse(_) => Outcome::Protocol,
    }
}

/// Classifies an HTTP/2 failure: its error code first (flow control and protocol errors are
/// their own classes whoever noticed them), then what carried it (GOAWAY or RST_STREAM).
pub(crate) fn h2_error(e: &h2::Error) -> Outcome {
    if let Some(io) = e.get_io() {
        return io_error(io);
    }
    let reason = e.reason();
    match reason {
        Some(h2::Reason::FLOW_CONTROL_ERROR) => return Outcome::H2FlowControl,
        Some(h2::Reason::PROTOCOL_ERROR | h2::Reason::COMPRESSION_ERROR | h2::Reason::FRAME_SIZE_ERROR) => {
            return Outcome::H2Protocol
        }
        _ => {}
    }
    if e.is_go_away() {
        Outcome::H2GoAway
    } else if e.is_reset() {
        Outcome::H2Reset(reason.map_or(0, u32::from))
    } else {
        Outcome::Protocol
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn os_errors_map_to_outcomes() {
        assert_eq!(
            io_error(&io::Error::from_raw_os_error(libc::EMFILE)),
            Outcome::LocalExhaustion
        );
        assert_eq!(
            io_error(&io::Error::from_raw_os_error(libc::EADDRNOTAVAIL)),
            Outcome::LocalExhaustion
        );
        assert_eq!(
            io_error(&io::Error::from_raw_os_error(libc::ECONNREFUSED)),
            Outcome::ConnectRefused
        );
        assert_eq!(
            io_error(&io::Error::from_raw_os_error(libc::ECONNRESET)),
            Outcome::Reset
        );
        assert_eq!(
            io_error(&io::Error::new(io::ErrorKind::InvalidData, rustls::Error::DecryptError)),
            Outcome::Tls
        );
    }
}
