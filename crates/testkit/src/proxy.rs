//! An HTTP proxy on 127.0.0.1:0: CONNECT tunnels (for HTTPS, and HTTP/2) and forwarded
//! absolute-form requests (for plain HTTP), counting both and recording what it was asked, so a
//! test can check that requests went through it and how.

use std::net::SocketAddr;
use std::sync::atomic::{AtomicU64, Ordering};
use std::sync::{Arc, Mutex};
use tokio::io::{AsyncReadExt, AsyncWriteExt};
use tokio::net::{TcpListener, TcpStream};

/// What the proxy was asked on one connection.
#[derive(Clone, Debug)]
pub struct Asked {
    /// The first request line, e.g. `CONNECT 127.0.0.1:80 HTTP/1.1` or
    /// `GET http://127.0.0.1:80/a HTTP/1.1`.
    pub line: String,
    /// The `Proxy-Authorization` header, when sent.
    pub auth: Option<String>,
}

#[derive(Debug, Default)]
struct Seen {
    tunnels: AtomicU64,
    forwarded: AtomicU64,
    asked: Mutex<Vec<Asked>>,
}

/// A running proxy; stops when dropped.
#[derive(Debug)]
pub struct Proxy {
    pub addr: SocketAddr,
    seen: Arc<Seen>,
    task: tokio::task::JoinHandle<()>,
}

impl Drop for Proxy {
    fn drop(&mut self) {
        self.task.abort();
    }
}

impl Proxy {
    /// Starts a proxy; with `auth`, it answers 407 unless `Proxy-Authorization` is `auth`.
    pub async fn start(auth: Option<&str>) -> Proxy {
        let listener = TcpListener::bind("127.0.0.1:0").await.expect("bind");
        let addr = listener.local_addr().expect("addr");
        let seen = Arc::new(Seen::default());
        let auth = auth.map(str::to_string);
        let s = seen.clone();
        let task = tokio::spawn(async move {
            loop {
                let Ok((client, _)) = listener.accept().await else {
                    continue;
                };
                tokio::spawn(relay(client, s.clone(), auth.clone()));
            }
        });
        Proxy { addr, seen, task }
    }

    /// `http://127.0.0.1:PORT`, with `userinfo@` when given.
    pub fn url(&self, userinfo: Option<&str>) -> String {
        match userinfo {
            Some(u) => format!("http://{u}@{}", self.addr),
            None => format!("http://{}", self.addr),
        }
    }

    /// CONNECT tunnels opened.
    pub fn tunnels(&self) -> u64 {
        self.seen.tunnels.load(Ordering::SeqCst)
    }

    /// Connections that forwarded absolute-form requests.
    pub fn forwarded(&self) -> u64 {
        self.seen.forwarded.load(Ordering::SeqCst)
    }

    /// What each connection asked for first.
    pub fn asked(&self) -> Vec<Asked> {
        self.seen.asked.lock().expect("lock").clone()
    }
}

async fn relay(mut client: TcpStream, seen: Arc<Seen>, auth: Option<String>) {
    let mut buf = Vec::new();
    let head_end = loop {
        if let Some(i) = buf.windows(4).position(|w| w == b"\r\n\r\n") {
            break i + 4;
        }
        let mut chunk = [0u8; 4096];
        match client.read(&mut chunk).await {
            Ok(0) | Err(_) => return,
            Ok(n) => buf.extend_from_slice(&chunk[..n]),
        }
    };
    let head = String::from_utf8_lossy(&buf[..head_end]).into_owned();
    let mut lines = head.split("\r\n");
    let line = lines.next().unwrap_or_default().to_string();
    let given = lines
        .filter_map(|l| l.split_once(':'))
        .find(|(n, _)| n.trim().eq_ignore_ascii_case("proxy-authorization"))
        .map(|(_, v)| v.trim().to_string());
    seen.asked.lock().expect("lock").push(Asked {
        line: line.clone(),
        auth: given.clone(),
    });
    if auth.is_some() && given != auth {
        let _ = client
            .write_all(b"HTTP/1.1 407 Proxy Authentication Required\r\ncontent-length: 0\r\n\r\n")
            .await;
        return;
    }
    let mut parts = line.split(' ');
    let (method, target) = (parts.next().unwrap_or_default(), parts.next().unwrap_or_default());
    if method == "CONNECT" {
        let Ok(mut origin) = TcpStream::connect(target).await else {
            let _ = client
                .write_all(b"HTTP/1.1 502 Bad Gateway\r\ncontent-length: 0\r\n\r\n")
                .await;
            return;
        };
        seen.tunnels.fetch_add(1, Ordering::SeqCst);
        if client
            .write_all(b"HTTP/1.1 200 Connection established\r\n\r\n")
            .await
            .is_err()
        {
            return;
        }
        let _ = tokio::io::copy_bidirectional(&mut client, &mut origin).await;
        return;
    }
    // Absolute form: this connection is pinned to the first request's origin, and its later
    // requests pass through unchanged (the origin reads their absolute targets).
    let Some(rest) = target.strip_prefix("http://") else {
        let _ = client
            .write_all(b"HTTP/1.1 400 Bad Request\r\ncontent-length: 0\r\n\r\n")
            .await;
        return;
    };
    let (host, path) = rest.split_at(rest.find('/').unwrap_or(rest.len()));
    let Ok(mut origin) = TcpStream::connect(host).await else {
        let _ = client
            .write_all(b"HTTP/1.1 502 Bad Gateway\r\ncontent-length: 0\r\n\r\n")
            .await;
        return;
    };
    seen.forwarded.fetch_add(1, Ordering::SeqCst);
    let path = if path.is_empty() { "/" } else { path };
    let mut out = line.replacen(target, path, 1).into_bytes();
    for l in head.split("\r\n").skip(1).filter(|l| !l.is_empty()) {
        if !l.to_ascii_lowercase().starts_with("proxy-authorization:") {
            out.extend_from_slice(b"\r\n");
            out.extend_from_slice(l.as_bytes());
        }
    }
    out.extend_from_slice(b"\r\n\r\n");
    out.extend_from_slice(&buf[head_end..]);
    if origin.write_all(&out).await.is_err() {
        return;
    }
    let _ = tokio::io::copy_bidirectional(&mut client, &mut origin).await;
}
