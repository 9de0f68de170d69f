//! Mapping errors to outcomes.
//!
//! Causes are read from the error's structure (its `io::ErrorKind`, OS error number, or the
//! rustls error inside it), never from its message.

use crest_model::Outcome;
use std::error::Error as StdError;
use std::io;

/// Finds the first `io::Error` in an error's chain of sources.
fn find_io<'a>(e: &'a (dyn StdError + 'static)) -> Option<&'a io::Error> {
    let mut cur: Option<&(dyn StdError + 'static)> = Some(e);
    while let Some(err) = cur {
        if let Some(io) = err.downcast_ref::<io::Error>() {
            return Some(io);
        }
        cur = err.source();
    }
    None
}

/// Classifies an I/O error from connecting, TLS, reading or writing.
pub(crate) fn io_error(e: &io::Error) -> Outcome {
    if let Some(code) = e.raw_os_error() {
        if [libc::EMFILE, libc::ENFILE, libc::EADDRNOTAVAIL, libc::ENOBUFS, libc::ENOMEM].contains(&code) {
            return Outcome::LocalExhaustion;
        }
    }
    if e.get_ref().is_some_and(|inner| inner.downcast_ref::<rustls::Error>().is_some()) {
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

/// Classifies an error hyper returned while sending a request or reading its response.
pub(crate) fn hyper_error(e: &hyper::Error) -> Outcome {
    if let Some(io) = find_io(e) {
        return io_error(io);
    }
    if e.is_incomplete_message() || e.is_canceled() || e.is_closed() {
        // The peer closed the connection before the response was complete.
        return Outcome::Reset;
    }
    if e.is_timeout() {
        return Outcome::Timeout;
    }
    Outcome::Protocol
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn os_errors_map_to_outcomes() {
        assert_eq!(io_error(&io::Error::from_raw_os_error(libc::EMFILE)), Outcome::LocalExhaustion);
        assert_eq!(io_error(&io::Error::from_raw_os_error(libc::EADDRNOTAVAIL)), Outcome::LocalExhaustion);
        assert_eq!(io_error(&io::Error::from_raw_os_error(libc::ECONNREFUSED)), Outcome::ConnectRefused);
        assert_eq!(io_error(&io::Error::from_raw_os_error(libc::ECONNRESET)), Outcome::Reset);
        assert_eq!(
            io_error(&io::Error::new(io::ErrorKind::InvalidData, rustls::Error::DecryptError)),
            Outcome::Tls
        );
    }
}
