//! The collector's listener for its workers: `GET /workers/join`, upgraded to one connection
//! per worker, over which the worker is checked, given its plan and start, and sends its
//! journal entries as events for the run.

use crate::wire::{self, Down, PlanText, Up};
use axum::extract::{Request, State};
use axum::http::{header, HeaderMap, StatusCode};
use axum::response::{IntoResponse, Response};
use axum::Json;
use crest_model::journal::Entry;
use std::collections::BTreeSet;
use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::{Arc, Mutex};
use std::time::Instant;
use tokio::io::{AsyncBufReadExt, AsyncWriteExt, BufReader};
use tokio::sync::mpsc::{unbounded_channel, UnboundedReceiver, UnboundedSender};

/// What the listener's handlers share.
pub(super) struct Shared {
    pub(super) token: String,
    pub(super) count: u32,
    pub(super) plan: PlanText,
    pub(super) digest: String,
    pub(super) epoch: Instant,
    /// Worker indexes taken.
    pub(super) taken: Mutex<BTreeSet<u32>>,
    pub(super) started: AtomicBool,
    pub(super) events: UnboundedSender<Event>,
}

impl Shared {
    pub(super) fn now_us(&self) -> u64 {
        self.epoch.elapsed().as_micros() as u64
    }

    /// The index a joining worker asked for, or the first free one.
    pub(super) fn claim(&self, asked: Option<u32>) -> Result<u32, String> {
        let mut taken = self.taken.lock().unwrap_or_else(std::sync::PoisonError::into_inner);
        if self.started.load(Ordering::SeqCst) {
            return Err("the run has started: a worker joins before it starts".into());
        }
        let index = match asked {
            Some(i) if i >= self.count => {
                return Err(format!(
                    "worker index {i}: this run has {} workers, 0 to {}",
                    self.count,
                    self.count - 1
                ))
            }
            Some(i) if taken.contains(&i) => return Err(format!("worker index {i} is taken by another worker")),
            Some(i) => i,
            None => (0..self.count)
                .find(|i| !taken.contains(i))
                .ok_or_else(|| format!("all {} workers have joined", self.count))?,
        };
        taken.insert(index);
        Ok(index)
    }

    pub(super) fn release(&self, index: u32) {
        self.taken
            .lock()
            .unwrap_or_else(std::sync::PoisonError::into_inner)
            .remove(&index);
    }
}

/// What a worker's connection tells the run.
pub(super) enum Event {
    Ready {
        index: u32,
        rtt_us: u64,
        tx: UnboundedSender<Down>,
    },
    Failed {
        index: u32,
        message: String,
    },
    Entry {
        index: u32,
        entry: Box<Entry>,
    },
    Gone {
        index: u32,
    },
    /// The run was steered from the collector's page.
    Steer(crest_engine::Changed),
}

/// `GET /workers/join`, upgraded: one worker's connection.
pub(super) async fn join(State(shared): State<Arc<Shared>>, headers: HeaderMap, req: Request) -> Response {
    if !crest_live::bears(&headers, &shared.token) {
        let mut r = (
            StatusCode::UNAUTHORIZED,
            Json(serde_json::json!({ "error": "the token is not this collector's: give its token as --token or CREST_TOKEN" })),
        )
            .into_response();
        r.headers_mut()
            .insert(header::WWW_AUTHENTICATE, header::HeaderValue::from_static("Bearer"));
        return r;
    }
    let upgrade = headers
        .get(header::UPGRADE)
        .and_then(|v| v.to_str().ok())
        .is_some_and(|v| v.eq_ignore_ascii_case(wire::PROTOCOL));
    if !upgrade {
        return (
            StatusCode::BAD_REQUEST,
            Json(serde_json::json!({ "error": "workers join with `crest worker`" })),
        )
            .into_response();
    }
    let on = hyper::upgrade::on(req);
    tokio::spawn(async move {
        match on.await {
            Ok(up) => serve_worker(shared, hyper_util::rt::TokioIo::new(up)).await,
            Err(e) => eprintln!("collector: a worker's connection failed: {e}"),
        }
    });
    Response::builder()
        .status(StatusCode::SWITCHING_PROTOCOLS)
        .header(header::CONNECTION, "upgrade")
        .header(header::UPGRADE, wire::PROTOCOL)
        .body(axum::body::Body::empty())
        .unwrap_or_default()
}

/// One worker's side of the run: hello, clock, plan, then its entries until its stream ends.
pub(super) async fn serve_worker<T>(shared: Arc<Shared>, io: T)
where
    T: tokio::io::AsyncRead + tokio::io::AsyncWrite + Unpin + Send + 'static,
{
    let (read, mut write) = tokio::io::split(io);
    let (tx, mut down): (UnboundedSender<Down>, UnboundedReceiver<Down>) = unbounded_channel();
    tokio::spawn(async move {
        while let Some(m) = down.recv().await {
            let last = matches!(m, Down::Refused { .. });
            if write.write_all(&wire::line(&m)).await.is_err() || last {
                break;
            }
        }
        let _ = write.shutdown().await;
    });
    let mut lines = BufReader::new(read).lines();
    let refuse = |reason: String| {
        let _ = tx.send(Down::Refused { reason });
    };
    let hello = match lines.next_line().await {
        Ok(Some(l)) => serde_json::from_str::<Up>(&l),
        _ => return,
    };
    let asked = match hello {
        Ok(Up::Hello { crest_version, index }) if crest_version == env!("CARGO_PKG_VERSION") => index,
        Ok(Up::Hello { crest_version, .. }) => {
            let reason = format!(
                "this collector is crest {}, the worker crest {crest_version}: run the same version",
                env!("CARGO_PKG_VERSION")
            );
            eprintln!("collector: a worker was refused: {reason}");
            return refuse(reason);
        }
        _ => return refuse("not a worker's hello (another crest version?)".into()),
    };
    let index = match shared.claim(asked) {
        Ok(i) => i,
        Err(reason) => {
            eprintln!("collector: a worker was refused: {reason}");
            return refuse(reason);
        }
    };
    let _ = tx.send(Down::Welcome {
        index,
        count: shared.count,
        plan: shared.plan.clone(),
    });
    let mut ready = false;
    while let Ok(Some(l)) = lines.next_line().await {
        match serde_json::from_str::<Up>(&l) {
            Ok(Up::Ping { t_us }) => {
                let _ = tx.send(Down::Pong {
                    t_us,
                    at_us: shared.now_us(),
                });
            }
            Ok(Up::Ready { digest, rtt_us, .. }) => {
                if digest != shared.digest {
                    let reason = format!(
                        "worker {index} resolved another plan than this collector's (its digest {}, this one's {}): the same crest, scenario and flags are needed",
                        &digest[..digest.len().min(12)],
                        &shared.digest[..12]
                    );
                    eprintln!("collector: {reason}");
                    shared.release(index);
                    return refuse(reason);
                }
                ready = true;
                let _ = shared.events.send(Event::Ready {
                    index,
                    rtt_us,
                    tx: tx.clone(),
                });
            }
            Ok(Up::Entry { entry }) if ready => {
                let _ = shared.events.send(Event::Entry { index, entry });
            }
            Ok(Up::Failed { message }) => {
                shared.release(index);
                let _ = shared.events.send(Event::Failed { index, message });
                return;
            }
            Ok(other) => eprintln!("collector: worker {index} sent {other:?} out of turn"),
            Err(e) => {
                eprintln!("collector: worker {index} sent a line that can't be read: {e}");
                break;
            }
        }
    }
    if ready {
        let _ = shared.events.send(Event::Gone { index });
    } else {
        shared.release(index);
    }
}
