//! What the target's tests share: one exchange over a plain socket, and its counters.
#![allow(clippy::unwrap_used, dead_code)]

use std::io::{ErrorKind, Read, Write};
use std::net::{SocketAddr, TcpStream};
use std::time::Duration;

/// Sends one request on `s` and reads the answer to its end: the status, or the I/O error.
pub fn exchange(mut s: TcpStream, path: &str) -> std::io::Result<u16> {
    s.set_read_timeout(Some(Duration::from_secs(10)))?;
    write!(s, "GET {path} HTTP/1.1\r\nHost: t\r\nConnection: close\r\n\r\n")?;
    let mut out = Vec::new();
    s.read_to_end(&mut out)?;
    let text = String::from_utf8_lossy(&out);
    text.get(9..12)
        .and_then(|c| c.parse().ok())
        .ok_or_else(|| std::io::Error::new(ErrorKind::InvalidData, format!("no status in {text:?}")))
}

/// A counter's value in the target's /metrics.
pub fn metric(addr: SocketAddr, name: &str) -> f64 {
    let mut s = TcpStream::connect(addr).unwrap();
    s.set_read_timeout(Some(Duration::from_secs(10))).unwrap();
    write!(s, "GET /metrics HTTP/1.1\r\nHost: t\r\nConnection: close\r\n\r\n").unwrap();
    let mut text = String::new();
    s.read_to_string(&mut text).unwrap();
    text.lines()
        .find_map(|l| l.strip_prefix(name)?.strip_prefix(' ')?.parse().ok())
        .unwrap_or_else(|| panic!("no {name} in {text}"))
}
