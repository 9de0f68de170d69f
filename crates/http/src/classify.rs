//! Mapping errors to outcomes.
//!
//! Causes are read from the error's structure (its `io::ErrorKind`, OS error number, or the
//! rustls error inside it), never from its message.

use crate::h1::H1Error;
use crate::http2::H2Error;
use crest_model::Outcome;
use std::io;

/// Classifies an I/O error from connecting, TLS, reading or writing.
pub fn io_error(e: &io::Error) -> Outcome {
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
        // The h2 crate reports a connection that reached its end with streams open as a broken
        // pipe of its own making (no OS error): a close, not a reset.
        io::ErrorKind::BrokenPipe if e.raw_os_error().is_none() => Outcome::Closed,
        io::ErrorKind::ConnectionReset | io::ErrorKind::ConnectionAborted | io::ErrorKind::BrokenPipe => Outcome::Reset,
        // A TLS stream that ended without close_notify.
        io::ErrorKind::UnexpectedEof => Outcome::Closed,
        io::ErrorKind::TimedOut => Outcome::Timeout,
        io::ErrorKind::InvalidData => Outcome::Protocol,
        _ => Outcome::Other,
    }
}

/// Classifies a failed exchange.
pub(crate) fn h1_error(e: &H1Error) -> Outcome {
    match e {
        H1Error::Io(io) => io_error(io),
        H1Error::Closed => Outcome::Closed,
        H1Error::Parse(_) => Outcome::Protocol,
        H1Error::Limit(_) => Outcome::CrestLimit,
    }
}

/// Classifies an HTTP/2 failure: its error code first (flow control and protocol errors are
/// their own classes whoever noticed them), then what carried it (GOAWAY or RST_STREAM).
pub(crate) fn h2_error(e: &H2Error) -> Outcome {
    if let Some(o) = e.code().and_then(h2_code) {
        return o;
    }
    match e {
        H2Error::Io(io) => io_error(io),
        H2Error::Closed | H2Error::Unframed => Outcome::Closed,
        H2Error::GoAway(_) => Outcome::H2GoAway,
        H2Error::Reset(c) => Outcome::H2Reset(*c),
        // crest found the server breaking HTTP/2 (e.g. a SETTINGS flood, ENHANCE_YOUR_CALM).
        H2Error::Local(_) | H2Error::LocalReset(_) => Outcome::H2Protocol,
        H2Error::Limit(_) => Outcome::CrestLimit,
        H2Error::Exhausted => Outcome::Protocol,
        H2Error::Mux(e) => h2_crate_error(e),
    }
}

/// The outcome an HTTP/2 error code is whoever noticed it: flow-control and protocol errors.
fn h2_code(code: u32) -> Option<Outcome> {
    const FLOW_CONTROL_ERROR: u32 = 0x3;
    const PROTOCOL_ERRORS: [u32; 3] = [0x1, 0x6, 0x9]; // PROTOCOL, FRAME_SIZE, COMPRESSION
    match code {
        FLOW_CONTROL_ERROR => Some(Outcome::H2FlowControl),
        c if PROTOCOL_ERRORS.contains(&c) => Some(Outcome::H2Protocol),
        _ => None,
    }
}

/// Classifies an error of the `h2` crate, on a connection crest multiplexes or under another
/// protocol's call (gRPC), as [`h2_error`] does crest's own.
pub fn h2_crate_error(e: &h2::Error) -> Outcome {
    if let Some(o) = e.reason().map(u32::from).and_then(h2_code) {
        return o;
    }
    match e.get_io() {
        Some(io) => io_error(io),
        None if e.is_go_away() => Outcome::H2GoAway,
        None if e.is_reset() => Outcome::H2Reset(e.reason().map_or(0, u32::from)),
        None => Outcome::Protocol,
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn h2_errors_map_by_code_first() {
        let m = |code| crate::http2::H2Error::Local(crate::http2::Malformed { code, what: "x" });
        assert_eq!(h2_error(&m(3)), Outcome::H2FlowControl);
        assert_eq!(h2_error(&m(1)), Outcome::H2Protocol);
        assert_eq!(h2_error(&m(9)), Outcome::H2Protocol);
        assert_eq!(h2_error(&H2Error::GoAway(2)), Outcome::H2GoAway);
        assert_eq!(h2_error(&H2Error::GoAway(1)), Outcome::H2Protocol);
        assert_eq!(h2_error(&H2Error::Reset(11)), Outcome::H2Reset(11));
        assert_eq!(h2_error(&H2Error::Reset(3)), Outcome::H2FlowControl);
        assert_eq!(h2_error(&H2Error::Closed), Outcome::Closed);
        assert_eq!(
            h2_error(&m(0xb)),
            Outcome::H2Protocol,
            "a SETTINGS flood is the server's"
        );
        assert_eq!(h2_error(&H2Error::Limit("x")), Outcome::CrestLimit, "crest's limit");
        assert_eq!(h1_error(&H1Error::Limit("x")), Outcome::CrestLimit);
    }

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
        assert_eq!(io_error(&io::Error::from_raw_os_error(libc::EPIPE)), Outcome::Reset);
        assert_eq!(
            io_error(&io::Error::new(io::ErrorKind::BrokenPipe, "connection closed")),
            Outcome::Closed
        );
        assert_eq!(
            io_error(&io::Error::from(io::ErrorKind::UnexpectedEof)),
            Outcome::Closed
        );
        assert_eq!(
            io_error(&io::Error::new(io::ErrorKind::InvalidData, rustls::Error::DecryptError)),
            Outcome::Tls
        );
    }
}
