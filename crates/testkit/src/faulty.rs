//! An HTTP/1.1 server that fails on purpose at one phase of an exchange and counts what it did,
//! so that tests can hold crest's counts against the server's own: every request it read, every
//! one it answered, and every one it dropped or reset, as a crashing worker, a proxy cutting a
//! connection or a killed process would.

use crate::{find, AsRawSocket};
use std::net::SocketAddr;
use std::sync::atomic::{AtomicU64, Ordering};
use std::sync::Arc;
use std::time::Duration;
use tokio::io::{AsyncReadExt, AsyncWriteExt};
use tokio::net::{TcpListener, TcpStream};
use tokio::sync::watch;

/// How the server fails. `nth` counts a connection's requests from 1.
#[derive(Clone, Copy, Debug)]
pub enum Fault {
    /// Reads the whole `nth` request of each connection, then closes the connection (FIN)
    /// without answering.
    Drop { nth: u64 },
    /// Reads the head of the `nth` request of each connection, then aborts the connection
    /// (RST) without reading the body.
    CloseBeforeBody { nth: u64 },
    /// Reads the `nth` request of each connection, sends the head and half of the body, then
    /// aborts the connection (RST).
    ResetMidResponse { nth: u64 },
    /// Answers the `nth` request of each connection in full, then closes the connection (FIN)
    /// without having said so in the answer, as a server's idle timeout would: the next request
    /// must find the connection closed before sending anything.
    CloseAfterAnswer { nth: u64 },
    /// Answers the first `answer` requests it reads, then holds every later one unanswered;
    /// when `hold` are held, the process "dies": it stops listening and closes every
    /// connection (FIN), so later connections are refused.
    Die { answer: u64, hold: u64 },
}

/// What the server counted.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub struct Counts {
    /// Requests whose head it read.
    pub read: u64,
    /// Requests it answered in full.
    pub answered: u64,
    /// Requests it read and then closed the connection on without a byte of answer (FIN).
    pub dropped: u64,
    /// Requests on which it aborted the connection (RST), before or during the answer.
    pub reset: u64,
}

#[derive(Default, Debug)]
struct Counters {
    read: AtomicU64,
    answered: AtomicU64,
    dropped: AtomicU64,
    reset: AtomicU64,
    held: AtomicU64,
}

/// A running faulty server; it stops when dropped.
#[derive(Debug)]
pub struct Faulty {
    pub addr: SocketAddr,
    counts: Arc<Counters>,
    task: tokio::task::JoinHandle<()>,
    died: watch::Receiver<bool>,
}

impl Drop for Faulty {
    fn drop(&mut self) {
        self.task.abort();
    }
}

/// Each answer's body.
const BODY: &[u8] = b"ok";

impl Faulty {
    /// Listens on 127.0.0.1:0. Every answer waits `delay` first.
    pub async fn start(fault: Fault, delay: Duration) -> Faulty {
        let listener = TcpListener::bind("127.0.0.1:0").await.expect("bind");
        let addr = listener.local_addr().expect("addr");
        let counts = Arc::new(Counters::default());
        let (die, mut dying) = watch::channel(false);
        let (gone, died) = watch::channel(false);
        let (die, gone) = (Arc::new(die), Arc::new(gone));
        let c = counts.clone();
        let task = tokio::spawn(async move {
            loop {
                tokio::select! {
                    accepted = listener.accept() => {
                        let Ok((s, _)) = accepted else { continue };
                        let _ = s.set_nodelay(true);
                        tokio::spawn(serve(s, fault, delay, c.clone(), (die.clone(), gone.subscribe())));
                    }
                    _ = dying.wait_for(|d| *d) => {
                        // The listener goes first, so that no client reconnecting after its
                        // connection closed lands in a backlog that is about to vanish:
                        // every later connection is refused.
                        drop(listener);
                        gone.send_replace(true);
                        return;
                    }
                }
            }
        });
        Faulty {
            addr,
            counts,
            task,
            died,
        }
    }

    /// `http://127.0.0.1:PORT/`.
    pub fn url(&self) -> String {
        format!("http://{}/", self.addr)
    }

    /// What it counted so far.
    pub fn counts(&self) -> Counts {
        let c = &self.counts;
        Counts {
            read: c.read.load(Ordering::SeqCst),
            answered: c.answered.load(Ordering::SeqCst),
            dropped: c.dropped.load(Ordering::SeqCst),
            reset: c.reset.load(Ordering::SeqCst),
        }
    }

    /// Whether a [`Fault::Die`] server has died.
    pub fn dead(&self) -> bool {
        *self.died.borrow()
    }
}

/// Serves one connection. `die` asks the server to die; `dead` says it has stopped listening,
/// when its connections close.
async fn serve(
    mut s: TcpStream,
    fault: Fault,
    delay: Duration,
    c: Arc<Counters>,
    (die, mut dead): (Arc<watch::Sender<bool>>, watch::Receiver<bool>),
) {
    let mut buf = Vec::with_capacity(8192);
    let mut nth = 0u64;
    loop {
        let head_end = loop {
            if let Some(pos) = find(&buf, b"\r\n\r\n") {
                break pos + 4;
            }
            let mut chunk = [0u8; 8192];
            tokio::select! {
                r = s.read(&mut chunk) => match r {
                    Ok(0) | Err(_) => return,
                    Ok(n) => buf.extend_from_slice(&chunk[..n]),
                },
                _ = dead.wait_for(|d| *d) => return,
            }
        };
        nth += 1;
        let index = c.read.fetch_add(1, Ordering::SeqCst) + 1;
        let mut headers = [httparse::EMPTY_HEADER; 64];
        let mut req = httparse::Request::new(&mut headers);
        if req.parse(&buf[..head_end]).is_err() {
            return;
        }
        let len: usize = req
            .headers
            .iter()
            .find(|h| h.name.eq_ignore_ascii_case("content-length"))
            .and_then(|h| std::str::from_utf8(h.value).ok()?.trim().parse().ok())
            .unwrap_or(0);
        if matches!(fault, Fault::CloseBeforeBody { nth: n } if n == nth) {
            c.reset.fetch_add(1, Ordering::SeqCst);
            s.reset();
            return;
        }
        while buf.len() < head_end + len {
            let mut chunk = [0u8; 8192];
            match s.read(&mut chunk).await {
                Ok(0) | Err(_) => return,
                Ok(n) => buf.extend_from_slice(&chunk[..n]),
            }
        }
        buf.drain(..head_end + len);
        match fault {
            Fault::Drop { nth: n } if n == nth => {
                c.dropped.fetch_add(1, Ordering::SeqCst);
                return;
            }
            Fault::ResetMidResponse { nth: n } if n == nth => {
                let head = format!("HTTP/1.1 200 OK\r\ncontent-length: {}\r\n\r\n", 2 * BODY.len());
                let _ = s.write_all(head.as_bytes()).await;
                let _ = s.write_all(BODY).await;
                let _ = s.flush().await;
                // Let the half answer reach the client before the reset overtakes it.
                tokio::time::sleep(Duration::from_millis(20)).await;
                c.reset.fetch_add(1, Ordering::SeqCst);
                s.reset();
                return;
            }
            Fault::Die { answer, hold } if index > answer => {
                if c.held.fetch_add(1, Ordering::SeqCst) + 1 == hold {
                    die.send_replace(true);
                }
                let _ = dead.wait_for(|d| *d).await;
                c.dropped.fetch_add(1, Ordering::SeqCst);
                return;
            }
            _ => {}
        }
        crate::precise_sleep(delay).await;
        let head = format!("HTTP/1.1 200 OK\r\ncontent-length: {}\r\n\r\n", BODY.len());
        if s.write_all(head.as_bytes()).await.is_err() || s.write_all(BODY).await.is_err() {
            return;
        }
        c.answered.fetch_add(1, Ordering::SeqCst);
        if matches!(fault, Fault::CloseAfterAnswer { nth: n } if n == nth) {
            return;
        }
    }
}
