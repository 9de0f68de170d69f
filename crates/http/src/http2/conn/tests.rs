//! Exchanges against scripted servers on loopback: each test writes the server's frames itself.

use super::super::frame::Head;
use super::*;
use crate::http2::translate;
use tokio::io::{AsyncReadExt, AsyncWriteExt};
use tokio::net::{TcpListener, TcpStream};

/// Reads one frame from the client, skipping its preface.
async fn read_frame(s: &mut TcpStream, preface: &mut bool) -> (Head, Vec<u8>) {
    if !*preface {
        let mut p = [0u8; 24];
        s.read_exact(&mut p).await.unwrap();
        assert_eq!(&p[..], frame::PREFACE);
        *preface = true;
    }
    let mut h = [0u8; 9];
    s.read_exact(&mut h).await.unwrap();
    let head = Head::parse(&h).unwrap();
    let mut payload = vec![0; head.len];
    s.read_exact(&mut payload).await.unwrap();
    (head, payload)
}

/// Reads client frames until one of `kind` arrives.
async fn until(s: &mut TcpStream, preface: &mut bool, kind: u8) -> (Head, Vec<u8>) {
    loop {
        let f = read_frame(s, preface).await;
        if f.0.kind == kind {
            return f;
        }
    }
}

fn put(out: &mut Vec<u8>, kind: u8, flags: u8, stream: u32, payload: &[u8]) {
    frame::put_frame(out, kind, flags, stream, payload);
}

/// A response head: `:status: 200` indexed, then `server: x` as a literal.
const HEAD_200: &[u8] = b"\x88\x76\x01x";

/// Runs one exchange of `body` against a server that sends `reply(stream_id)` once it has the
/// request's HEADERS, then lingers.
async fn scripted(
    body: &[u8],
    reply: impl FnOnce(u32) -> Vec<u8> + Send + 'static,
) -> (Result<u16, H2Fail>, Progress, Response) {
    interactive(body, move |mut s| async move {
        let mut preface = false;
        let (h, _) = until(&mut s, &mut preface, frame::HEADERS).await;
        let mut out = Vec::new();
        put(&mut out, frame::SETTINGS, 0, 0, &[]);
        out.extend(reply(h.stream));
        s.write_all(&out).await.unwrap();
        tokio::time::sleep(std::time::Duration::from_millis(300)).await;
    })
    .await
}

async fn interactive<F: std::future::Future<Output = ()> + Send + 'static>(
    body: &[u8],
    server: impl FnOnce(TcpStream) -> F + Send + 'static,
) -> (Result<u16, H2Fail>, Progress, Response) {
    let listener = TcpListener::bind("127.0.0.1:0").await.unwrap();
    let addr = listener.local_addr().unwrap();
    let server = tokio::spawn(async move {
        let (s, _) = listener.accept().await.unwrap();
        server(s).await;
    });
    let conn = Conn::new(Stream::Plain(TcpStream::connect(addr).await.unwrap()));
    let method = if body.is_empty() { "GET" } else { "POST" };
    let request = crate::build_request(method, "/x", "h", &[], body, true).unwrap();
    let req = translate(&request, false, true).ok().unwrap();
    let mut p = Progress::default();
    let mut keep = Response::default();
    let r = tokio::time::timeout(
        std::time::Duration::from_secs(5),
        conn.exchange(&req, &mut p, Some(&mut keep)),
    )
    .await
    .expect("the exchange ends");
    server.abort();
    (r, p, keep)
}

fn local_code(r: &Result<u16, H2Fail>) -> Option<u32> {
    match r {
        Err(H2Fail::Sent(H2Error::Local(m))) => Some(m.code),
        _ => None,
    }
}

#[tokio::test]
async fn a_padded_response_with_trailers_is_read_and_kept() {
    let (r, p, keep) = scripted(b"", |id| {
        let mut out = Vec::new();
        // HEADERS with padding and priority fields.
        let mut h = vec![2, 0, 0, 0, 0, 7];
        h.extend_from_slice(HEAD_200);
        h.extend_from_slice(&[0, 0]);
        put(
            &mut out,
            frame::HEADERS,
            frame::END_HEADERS | frame::PADDED | frame::PRIORITY_FLAG,
            id,
            &h,
        );
        put(&mut out, frame::DATA, frame::PADDED, id, b"\x03hel\0\0\0");
        put(&mut out, frame::PRIORITY, 0, id, &[0, 0, 0, 0, 1]);
        put(&mut out, frame::PING, 0, 0, b"12345678");
        put(&mut out, frame::DATA, 0, id, b"lo");
        put(&mut out, 0xfa, 0, id, b"an unknown frame type is ignored");
        // Trailers.
        put(
            &mut out,
            frame::HEADERS,
            frame::END_HEADERS | frame::END_STREAM,
            id,
            b"\x00\x01t\x01v",
        );
        out
    })
    .await;
    assert!(matches!(r, Ok(200)));
    assert_eq!(keep.status, 200);
    assert_eq!(keep.headers, [("server".to_string(), "x".to_string())]);
    assert_eq!(keep.body, b"hello");
    assert_eq!(p.status, Some(200));
    assert!(p.first_byte.is_some());
    // 17 for the status line, "server: x\r\n", and the body; no padding, no trailers.
    assert_eq!(p.read, 17 + 6 + 1 + 4 + 5);
}

#[tokio::test]
async fn a_body_larger_than_the_read_buffer_arrives_whole_and_is_counted() {
    let (r, p, keep) = scripted(b"", |id| {
        let mut out = Vec::new();
        put(&mut out, frame::HEADERS, frame::END_HEADERS, id, HEAD_200);
        for k in 0..13u8 {
            let last = if k == 12 { frame::END_STREAM } else { 0 };
            put(&mut out, frame::DATA, last, id, &[b'a' + k; 16_384]);
        }
        out
    })
    .await;
    assert!(matches!(r, Ok(200)));
    assert_eq!(keep.body.len(), 13 * 16_384);
    assert!(keep.body[16_384..32_768].iter().all(|&b| b == b'b'));
    assert_eq!(p.read, 17 + 11 + 13 * 16_384);
}

/// The machinery for many streams on one connection (taking turns at reading, handing the
/// socket on) is not what crest runs at many streams (the h2 crate is, bench/README.md),
/// but it must hold: 20 users at once, 5 requests each, on one connection.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn many_streams_on_one_connection_take_turns_at_reading() {
    use crest_testkit::h2::{H2Reply, H2Server};
    let server = H2Server::start(|r, i| {
        if r.path == "/slow" || i % 7 == 0 {
            H2Reply::delayed(std::time::Duration::from_millis(3))
        } else {
            H2Reply::ok()
        }
    })
    .await;
    let tcp = TcpStream::connect(server.addr).await.unwrap();
    let conn = Conn::new(Stream::Plain(tcp));
    let mut tasks = Vec::new();
    for u in 0..20 {
        let conn = conn.clone();
        tasks.push(tokio::spawn(async move {
            let path = if u % 3 == 0 { "/slow" } else { "/" };
            let request = crate::build_request("GET", path, "h", &[], b"", true).unwrap();
            let req = translate(&request, false, true).ok().unwrap();
            let mut statuses = Vec::new();
            for _ in 0..5 {
                let mut p = Progress::default();
                let mut keep = Response::default();
                let r = conn.exchange(&req, &mut p, Some(&mut keep)).await;
                statuses.push((r.ok(), keep.status, p.read > 17));
            }
            statuses
        }));
    }
    for t in tasks {
        let got = tokio::time::timeout(std::time::Duration::from_secs(10), t).await;
        for (r, status, read) in got.expect("no user is left waiting").unwrap() {
            assert_eq!((r, status, read), (Some(200), 200, true));
        }
    }
    assert_eq!(server.received().len(), 100);
    assert_eq!(server.connections(), 1);
    let st = conn.lock();
    assert!(
        st.streams.is_empty() && st.reader.is_none(),
        "every stream gave its place back"
    );
}

#[tokio::test]
async fn a_header_block_continues_across_continuation_frames() {
    let (r, _, keep) = scripted(b"", |id| {
        let mut out = Vec::new();
        put(&mut out, frame::HEADERS, 0, id, &HEAD_200[..2]);
        put(&mut out, frame::CONTINUATION, 0, id, &HEAD_200[2..3]);
        put(&mut out, frame::CONTINUATION, frame::END_HEADERS, id, &HEAD_200[3..]);
        put(&mut out, frame::DATA, frame::END_STREAM, id, b"ok");
        out
    })
    .await;
    assert!(matches!(r, Ok(200)));
    assert_eq!(keep.header("server"), Some("x"));
    assert_eq!(keep.body, b"ok");
}

#[tokio::test]
async fn hostile_frames_are_protocol_errors_not_panics() {
    type Script = fn(u32) -> Vec<u8>;
    let cases: [(Script, u32); 9] = [
        // A frame longer than SETTINGS_MAX_FRAME_SIZE.
        (
            |id| {
                let mut out = Vec::new();
                frame::put_head(&mut out, 16_385, frame::DATA, 0, id);
                out.extend(vec![0; 16_385]);
                out
            },
            frame::FRAME_SIZE_ERROR,
        ),
        // A huge length: refused from its header, without waiting for 16 MiB.
        (
            |id| {
                let mut out = Vec::new();
                frame::put_head(&mut out, 0xff_ffff, frame::HEADERS, 0, id);
                out
            },
            frame::FRAME_SIZE_ERROR,
        ),
        // Padding longer than the frame.
        (
            |id| {
                let mut out = Vec::new();
                put(
                    &mut out,
                    frame::HEADERS,
                    frame::END_HEADERS | frame::PADDED,
                    id,
                    b"\x09\x88",
                );
                out
            },
            frame::PROTOCOL_ERROR,
        ),
        // An index past the HPACK tables.
        (
            |id| {
                let mut out = Vec::new();
                put(&mut out, frame::HEADERS, frame::END_HEADERS, id, b"\xff\x00");
                out
            },
            frame::COMPRESSION_ERROR,
        ),
        // Push, which crest disabled.
        (
            |id| {
                let mut out = Vec::new();
                put(
                    &mut out,
                    frame::PUSH_PROMISE,
                    frame::END_HEADERS,
                    id,
                    &[0, 0, 0, 2, 0x88],
                );
                out
            },
            frame::PROTOCOL_ERROR,
        ),
        // A frame interleaved in a header block.
        (
            |id| {
                let mut out = Vec::new();
                put(&mut out, frame::HEADERS, 0, id, b"\x88");
                put(&mut out, frame::PING, 0, 0, b"12345678");
                out
            },
            frame::PROTOCOL_ERROR,
        ),
        // A connection window pushed past 2^31-1.
        (
            |_| {
                let mut out = Vec::new();
                put(&mut out, frame::WINDOW_UPDATE, 0, 0, &0x7fff_ffffu32.to_be_bytes());
                out
            },
            frame::FLOW_CONTROL_ERROR,
        ),
        // A PING of the wrong size.
        (
            |_| {
                let mut out = Vec::new();
                put(&mut out, frame::PING, 0, 0, b"1234");
                out
            },
            frame::FRAME_SIZE_ERROR,
        ),
        // Frames on a stream crest never opened.
        (
            |_| {
                let mut out = Vec::new();
                put(&mut out, frame::DATA, 0, 9, b"x");
                out
            },
            frame::PROTOCOL_ERROR,
        ),
    ];
    for (i, (script, code)) in cases.into_iter().enumerate() {
        let (r, _, _) = scripted(b"", script).await;
        assert_eq!(local_code(&r), Some(code), "case {i}");
        let outcome = crate::classify::h2_error(match &r {
            Err(H2Fail::Sent(e)) => e,
            _ => unreachable!(),
        });
        let want = if code == frame::FLOW_CONTROL_ERROR {
            crest_model::Outcome::H2FlowControl
        } else {
            crest_model::Outcome::H2Protocol
        };
        assert_eq!(outcome, want, "case {i}");
    }
}

#[tokio::test]
async fn a_server_answering_in_http_1_is_named() {
    let (r, _, _) = interactive(b"", |mut s| async move {
        let mut preface = [0u8; 24];
        s.read_exact(&mut preface).await.unwrap();
        s.write_all(b"HTTP/1.1 400 Bad Request\r\nContent-Length: 0\r\nConnection: close\r\n\r\n")
            .await
            .unwrap();
        tokio::time::sleep(std::time::Duration::from_millis(300)).await;
    })
    .await;
    let Err(H2Fail::Sent(e)) = r else {
        panic!("failed as sent")
    };
    assert_eq!(local_code(&Err(H2Fail::Sent(e.clone()))), Some(frame::PROTOCOL_ERROR));
    assert!(e.to_string().contains("does not speak HTTP/2"), "{e}");
}

#[tokio::test]
async fn a_truncated_frame_then_close_fails_the_stream() {
    let (r, _, _) = interactive(b"", |mut s| async move {
        let mut preface = false;
        let (h, _) = until(&mut s, &mut preface, frame::HEADERS).await;
        let mut out = Vec::new();
        put(&mut out, frame::HEADERS, frame::END_HEADERS, h.stream, HEAD_200);
        frame::put_head(&mut out, 100, frame::DATA, 0, h.stream);
        out.extend_from_slice(b"only part");
        s.write_all(&out).await.unwrap();
    })
    .await;
    assert!(matches!(r, Err(H2Fail::Sent(H2Error::Closed))));
}

#[tokio::test]
async fn a_connection_the_server_closed_while_idle_fails_the_next_request_unsent() {
    let listener = TcpListener::bind("127.0.0.1:0").await.unwrap();
    let addr = listener.local_addr().unwrap();
    let server = tokio::spawn(async move {
        let (mut s, _) = listener.accept().await.unwrap();
        let mut preface = false;
        let (h, _) = until(&mut s, &mut preface, frame::HEADERS).await;
        let mut out = Vec::new();
        put(&mut out, frame::SETTINGS, 0, 0, &[]);
        put(
            &mut out,
            frame::HEADERS,
            frame::END_HEADERS | frame::END_STREAM,
            h.stream,
            HEAD_200,
        );
        s.write_all(&out).await.unwrap();
        // The idle timeout: closed without GOAWAY.
        tokio::time::sleep(std::time::Duration::from_millis(50)).await;
    });
    let conn = Conn::new(Stream::Plain(TcpStream::connect(addr).await.unwrap()));
    let request = crate::build_request("GET", "/", "h", &[], b"", true).unwrap();
    let req = translate(&request, false, true).ok().unwrap();
    let mut p = Progress::default();
    assert!(matches!(conn.exchange(&req, &mut p, None).await, Ok(200)));
    server.await.unwrap();
    tokio::time::sleep(std::time::Duration::from_millis(50)).await;
    let mut p = Progress::default();
    let r = conn.exchange(&req, &mut p, None).await;
    // Closed, or reset when the server dropped the socket with our acknowledgements unread.
    match r {
        Err(H2Fail::NotSent(H2Error::Closed | H2Error::Io(_))) => {}
        Err(H2Fail::NotSent(e) | H2Fail::Sent(e)) => panic!("{e}"),
        Ok(_) => panic!("answered"),
    }
    assert_eq!(p.written, 0);
}

#[tokio::test]
async fn rst_stream_and_goaway_carry_their_codes() {
    let (r, p, _) = scripted(b"", |id| {
        let mut out = Vec::new();
        put(&mut out, frame::HEADERS, frame::END_HEADERS, id, HEAD_200);
        put(&mut out, frame::RST_STREAM, 0, id, &11u32.to_be_bytes());
        out
    })
    .await;
    assert!(matches!(r, Err(H2Fail::Sent(H2Error::Reset(11)))));
    assert_eq!(p.status, Some(200), "the head arrived before the reset");
    // A GOAWAY below the stream: the server did not process it, so it may be sent again.
    let (r, _, _) = scripted(b"", |_| {
        let mut out = Vec::new();
        put(&mut out, frame::GOAWAY, 0, 0, &[0, 0, 0, 0, 0, 0, 0, 0]);
        out
    })
    .await;
    assert!(matches!(r, Err(H2Fail::NotSent(H2Error::GoAway(0)))));
    // A GOAWAY that covers the stream, then the socket closes: the GOAWAY is the cause.
    let (r, _, _) = interactive(b"", |mut s| async move {
        let mut preface = false;
        let (h, _) = until(&mut s, &mut preface, frame::HEADERS).await;
        let mut out = Vec::new();
        let mut payload = h.stream.to_be_bytes().to_vec();
        payload.extend_from_slice(&2u32.to_be_bytes());
        put(&mut out, frame::GOAWAY, 0, 0, &payload);
        s.write_all(&out).await.unwrap();
    })
    .await;
    match r {
        Err(H2Fail::Sent(e @ H2Error::GoAway(2))) => {
            assert_eq!(e.to_string(), "the server sent GOAWAY with INTERNAL_ERROR (2)")
        }
        _ => panic!("not GOAWAY"),
    }
}

#[tokio::test]
async fn settings_and_pings_are_acknowledged_and_a_large_body_waits_for_window_updates() {
    let body = vec![b'b'; 100_000];
    let (r, _, keep) = interactive(&body, |mut s| async move {
        let mut preface = false;
        let mut out = Vec::new();
        put(&mut out, frame::SETTINGS, 0, 0, &[0, 5, 0, 0, 0x40, 0]);
        put(&mut out, frame::PING, 0, 0, b"pingpong");
        s.write_all(&out).await.unwrap();
        let mut got = 0;
        let mut acked = (false, false);
        let mut id = 0;
        let mut opened = false;
        loop {
            let (h, payload) = read_frame(&mut s, &mut preface).await;
            match h.kind {
                frame::SETTINGS if h.flags & frame::ACK != 0 => acked.0 = true,
                frame::PING if h.flags & frame::ACK != 0 => {
                    assert_eq!(payload, b"pingpong");
                    acked.1 = true;
                }
                frame::HEADERS => id = h.stream,
                frame::DATA => {
                    got += payload.len();
                    assert!(got <= 65_535 || opened, "the client kept to the default window");
                    if got == 65_535 {
                        // Open both windows; the rest of the body may come now.
                        let mut out = Vec::new();
                        put(&mut out, frame::WINDOW_UPDATE, 0, 0, &100_000u32.to_be_bytes());
                        put(&mut out, frame::WINDOW_UPDATE, 0, id, &100_000u32.to_be_bytes());
                        s.write_all(&out).await.unwrap();
                        opened = true;
                    }
                    if h.flags & frame::END_STREAM != 0 {
                        break;
                    }
                }
                _ => {}
            }
        }
        assert!(acked.0 && acked.1, "SETTINGS and PING acknowledged");
        let mut out = Vec::new();
        put(&mut out, frame::HEADERS, frame::END_HEADERS, id, HEAD_200);
        put(&mut out, frame::DATA, frame::END_STREAM, id, got.to_string().as_bytes());
        s.write_all(&out).await.unwrap();
        tokio::time::sleep(std::time::Duration::from_millis(300)).await;
    })
    .await;
    assert!(matches!(r, Ok(200)));
    assert_eq!(keep.body, b"100000", "the server got the whole body");
}
