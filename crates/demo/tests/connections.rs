//! `max_connections` (issue 34): connections past the cap are reset at accept and counted, as
//! Node's `server.maxConnections` refuses them.
#![allow(clippy::unwrap_used)]

mod support;

use crest_demo::{spawn, Config};
use std::io::ErrorKind;
use std::net::TcpStream;
use std::time::Duration;
use support::{exchange, metric};

/// With `max_connections` 5, ten connections opened at once: five are served, five reset at
/// accept, and the target counts the five it refused.
#[test]
fn connections_past_the_cap_are_reset_and_counted() {
    let config = Config {
        workers: 10,
        // Long enough that the first five are still open when the last five are accepted.
        service_time: Duration::from_millis(500),
        max_connections: Some(5),
        ..Default::default()
    };
    let addr = spawn("127.0.0.1:0".parse().unwrap(), config).unwrap();
    let sockets: Vec<TcpStream> = (0..10).map(|_| TcpStream::connect(addr).unwrap()).collect();
    let results: Vec<std::io::Result<u16>> = sockets
        .into_iter()
        .map(|s| std::thread::spawn(move || exchange(s, "/")))
        .collect::<Vec<_>>()
        .into_iter()
        .map(|h| h.join().unwrap())
        .collect();
    let served = results.iter().filter(|r| matches!(r, Ok(200))).count();
    let reset = results
        .iter()
        .filter(|r| matches!(r, Err(e) if matches!(e.kind(), ErrorKind::ConnectionReset | ErrorKind::BrokenPipe)))
        .count();
    assert_eq!((served, reset), (5, 5), "{results:?}");
    // The served connections are closed by now; give the target a moment to count them closed,
    // or the connection that reads /metrics would be one too many.
    std::thread::sleep(Duration::from_millis(200));
    assert_eq!(metric(addr, "crest_target_refused_connections_total"), 5.0);
    assert_eq!(metric(addr, "crest_target_served_total"), 5.0);
    assert!(Config {
        max_connections: Some(0),
        ..Default::default()
    }
    .check()
    .is_err());
}
