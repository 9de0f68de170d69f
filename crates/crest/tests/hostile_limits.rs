//! Issue 35: servers that go past crest's own limits are refused in crest's name, and a server
//! flooding SETTINGS loses its connection. Each server is written here on raw sockets, on
//! loopback, so that it can break the protocol in ways no real server library allows.
#![allow(clippy::unwrap_used)]

mod common;

use common::{rt, run_async, Run};
use std::sync::{Arc, Mutex};
use tokio::io::{AsyncReadExt, AsyncWriteExt};
use tokio::net::{TcpListener, TcpStream};

/// Serves each connection with `answer` once the request's head has arrived.
async fn http1(answer: Vec<u8>) -> String {
    let listener = TcpListener::bind("127.0.0.1:0").await.unwrap();
    let url = format!("http://{}/", listener.local_addr().unwrap());
    let answer = Arc::new(answer);
    tokio::spawn(async move {
        while let Ok((mut s, _)) = listener.accept().await {
            let answer = answer.clone();
            tokio::spawn(async move {
                let mut got = Vec::new();
                let mut buf = [0u8; 4096];
                while !got.windows(4).any(|w| w == b"\r\n\r\n") {
                    match s.read(&mut buf).await {
                        Ok(0) | Err(_) => return,
                        Ok(n) => got.extend_from_slice(&buf[..n]),
                    }
                }
                let _ = s.write_all(&answer).await;
            });
        }
    });
    url
}

#[test]
fn http1_heads_past_crests_limits_are_refused_in_crests_name() {
    rt().block_on(async {
        let mut many = b"HTTP/1.1 200 OK\r\n".to_vec();
        for _ in 0..100_000 {
            many.extend_from_slice(b"X-A: b\r\n");
        }
        many.extend_from_slice(b"Content-Length: 0\r\n\r\n");
        let mut large = b"HTTP/1.1 200 OK\r\nX-Big: ".to_vec();
        large.extend(std::iter::repeat_n(b'a', 300 * 1024));
        large.extend_from_slice(b"\r\nContent-Length: 0\r\n\r\n");
        for (answer, what) in [
            (many, "more than 100 response headers, crest's limit"),
            (large, "response head over crest's 256 KiB limit"),
        ] {
            let url = http1(answer).await;
            let r = run_async(&url, &["-c", "1", "-n", "3x", "--timeout", "10s"]).await;
            let (count, example) = r.error_class("crest_limit");
            assert_eq!(count, 3, "{}", r.summary()["errors"]);
            assert_eq!(example, format!("crest refused the response: {what}"));
            assert_eq!(r.error_count("protocol"), 0, "not called the server's error");
        }
    });
}

const SETTINGS: u8 = 0x4;
const HEADERS: u8 = 0x1;
const CONTINUATION: u8 = 0x9;
const END_HEADERS: u8 = 0x4;

fn frame(kind: u8, flags: u8, stream: u32, payload: &[u8]) -> Vec<u8> {
    let mut f = (payload.len() as u32).to_be_bytes()[1..].to_vec();
    f.extend([kind, flags]);
    f.extend(stream.to_be_bytes());
    f.extend_from_slice(payload);
    f
}

/// What an HTTP/2 server saw on one connection.
#[derive(Debug, Default, Clone, Copy)]
struct Seen {
    /// SETTINGS acknowledgements from crest.
    acks: u64,
    /// crest closed the connection (the server read its end).
    closed: bool,
}

/// An HTTP/2 server (cleartext, prior knowledge) that answers the first request of each
/// connection with `reply(stream)`'s frames, written by `send`; it records what it saw per
/// connection.
struct H2 {
    url: String,
    seen: Arc<Mutex<Vec<Seen>>>,
}

#[derive(Clone, Copy)]
enum Hostile {
    /// A response whose one header block is 300 KiB, over HEADERS and CONTINUATION frames.
    HugeHeaderBlock,
    /// SETTINGS frames without end, as fast as crest reads them (at most a million).
    SettingsFlood,
}

async fn h2_server(how: Hostile) -> H2 {
    let listener = TcpListener::bind("127.0.0.1:0").await.unwrap();
    let url = format!("http://{}/", listener.local_addr().unwrap());
    let seen = Arc::new(Mutex::new(Vec::new()));
    let all = seen.clone();
    tokio::spawn(async move {
        while let Ok((s, _)) = listener.accept().await {
            let all = all.clone();
            tokio::spawn(async move {
                let seen = h2_connection(s, how).await;
                all.lock().unwrap().push(seen);
            });
        }
    });
    H2 { url, seen }
}

async fn h2_connection(s: TcpStream, how: Hostile) -> Seen {
    let (mut r, mut w) = s.into_split();
    let mut preface = [0u8; 24];
    if r.read_exact(&mut preface).await.is_err() {
        return Seen::default();
    }
    let seen = Arc::new(Mutex::new(Seen::default()));
    let (first_request, requested) = tokio::sync::oneshot::channel::<u32>();
    let reader = {
        let seen = seen.clone();
        tokio::spawn(async move {
            let mut first_request = Some(first_request);
            let mut head = [0u8; 9];
            loop {
                if r.read_exact(&mut head).await.is_err() {
                    break;
                }
                let len = u32::from_be_bytes([0, head[0], head[1], head[2]]) as usize;
                let stream = u32::from_be_bytes([head[5], head[6], head[7], head[8]]) & 0x7fff_ffff;
                let mut payload = vec![0; len];
                if r.read_exact(&mut payload).await.is_err() {
                    break;
                }
                match head[3] {
                    SETTINGS if head[4] & 1 == 1 => seen.lock().unwrap().acks += 1,
                    HEADERS => {
                        if let Some(tx) = first_request.take() {
                            let _ = tx.send(stream);
                        }
                    }
                    _ => {}
                }
            }
            seen.lock().unwrap().closed = true;
        })
    };
    if w.write_all(&frame(SETTINGS, 0, 0, &[])).await.is_err() {
        return Seen::default();
    }
    if let Ok(stream) = requested.await {
        match how {
            Hostile::HugeHeaderBlock => {
                // :status 200 (indexed), then one literal field whose value is 300 KiB: valid
                // HPACK, only too large for crest.
                let mut block = vec![0x88, 0x00, 5];
                block.extend_from_slice(b"x-big");
                let n = 300 * 1024;
                // The length as an HPACK integer with a 7-bit prefix (RFC 7541 section 5.1).
                block.push(0x7f);
                let mut rest = n - 127;
                while rest >= 128 {
                    block.push((rest % 128) as u8 | 0x80);
                    rest /= 128;
                }
                block.push(rest as u8);
                block.extend(std::iter::repeat_n(b'a', n));
                let chunks: Vec<&[u8]> = block.chunks(16_384).collect();
                let mut wire = Vec::new();
                for (i, c) in chunks.iter().enumerate() {
                    let kind = if i == 0 { HEADERS } else { CONTINUATION };
                    let flags = if i + 1 == chunks.len() { END_HEADERS } else { 0 };
                    wire.extend(frame(kind, flags, stream, c));
                }
                let _ = w.write_all(&wire).await;
            }
            Hostile::SettingsFlood => {
                let batch: Vec<u8> = (0..1000).flat_map(|_| frame(SETTINGS, 0, 0, &[])).collect();
                for _ in 0..1000 {
                    if w.write_all(&batch).await.is_err() {
                        break;
                    }
                }
            }
        }
    }
    // Wait for crest to close its end, or for the run to end.
    let _ = tokio::time::timeout(std::time::Duration::from_secs(30), reader).await;
    let s = *seen.lock().unwrap();
    s
}

/// Three requests of one user over HTTP/2 to `server`, with `streams` per connection.
async fn three_requests(server: &H2, streams: &str) -> Run {
    let args = [
        "--http2",
        "--max-streams",
        streams,
        "-c",
        "1",
        "-n",
        "3x",
        "--timeout",
        "10s",
    ];
    run_async(&server.url, &args).await
}

#[test]
fn an_http2_header_block_past_crests_limit_is_refused_in_crests_name() {
    rt().block_on(async {
        // One stream per connection is crest's own framing; more is the h2 crate's.
        for streams in ["1", "100"] {
            let server = h2_server(Hostile::HugeHeaderBlock).await;
            let r = three_requests(&server, streams).await;
            let (count, example) = r.error_class("crest_limit");
            assert_eq!(count, 3, "--max-streams {streams}: {}", r.summary()["errors"]);
            assert_eq!(
                example, "crest refused the response: a response header block over crest's 256 KiB limit",
                "--max-streams {streams}"
            );
            assert_eq!(r.error_count("h2_protocol"), 0, "not called the server's error");
        }
    });
}

#[test]
fn a_server_flooding_settings_loses_its_connection_as_a_protocol_error() {
    rt().block_on(async {
        for streams in ["1", "100"] {
            let server = h2_server(Hostile::SettingsFlood).await;
            let r = three_requests(&server, streams).await;
            let (count, example) = r.error_class("h2_protocol");
            assert_eq!(count, 3, "--max-streams {streams}: {}", r.summary()["errors"]);
            assert!(
                example.contains("more than 100 SETTINGS frames in a second, crest's cap per connection"),
                "{example}"
            );
            // Give the server's side a moment to see every connection's end.
            let deadline = std::time::Instant::now() + std::time::Duration::from_secs(10);
            while server.seen.lock().unwrap().len() < 3 && std::time::Instant::now() < deadline {
                tokio::time::sleep(std::time::Duration::from_millis(20)).await;
            }
            let seen = server.seen.lock().unwrap().clone();
            assert_eq!(seen.len(), 3, "one connection per request: {seen:?}");
            for s in &seen {
                // crest acknowledged at most its cap (the server's first SETTINGS included) and
                // closed the connection.
                assert!(s.acks <= 100, "--max-streams {streams}: {seen:?}");
                assert!(s.closed, "{seen:?}");
            }
        }
    });
}
