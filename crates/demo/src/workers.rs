//! A fixed pool of workers on OS threads, with a bounded queue.
//!
//! Workers sleep for the service time on their own threads: std's sleep is accurate to well
//! under a millisecond, where tokio's timer rounds up to the next millisecond, which at 10 ms of
//! service time would already cost 5% of the capacity the tests check.

use std::sync::atomic::{AtomicBool, AtomicU64, Ordering};
use std::sync::{mpsc, Arc, Mutex};
use std::time::{Duration, Instant};
use tokio::sync::oneshot;

/// One unit of work: hold a worker for `busy`, then answer.
pub struct Job {
    pub busy: Duration,
    /// Set when the requester gave up (server timeout): the worker skips it if not started.
    pub abandoned: Arc<AtomicBool>,
    pub done: oneshot::Sender<Instant>,
}

/// The pool.
pub struct Pool {
    tx: mpsc::SyncSender<Job>,
    pub queued: Arc<AtomicU64>,
    pub busy: Arc<AtomicU64>,
    pub completed: Arc<AtomicU64>,
    /// Nanoseconds workers actually held jobs. On a loaded machine a sleep overruns its service
    /// time, so the capacity the pool really had is `workers * completed / busy`, not
    /// `workers / service_time`; tests that check a found capacity read it back.
    pub busy_ns: Arc<AtomicU64>,
    pub workers: usize,
}

impl Pool {
    /// `workers` threads and room for `queue` waiting jobs.
    pub fn new(workers: usize, queue: usize) -> std::io::Result<Pool> {
        let (tx, rx) = mpsc::sync_channel::<Job>(queue);
        let rx = Arc::new(Mutex::new(rx));
        let queued = Arc::new(AtomicU64::new(0));
        let busy = Arc::new(AtomicU64::new(0));
        let completed = Arc::new(AtomicU64::new(0));
        let busy_ns = Arc::new(AtomicU64::new(0));
        for i in 0..workers {
            let (rx, queued, busy, completed, busy_ns) = (
                rx.clone(),
                queued.clone(),
                busy.clone(),
                completed.clone(),
                busy_ns.clone(),
            );
            std::thread::Builder::new()
                .name(format!("target-worker-{i}"))
                .spawn(move || loop {
                    let job = {
                        let Ok(guard) = rx.lock() else { return };
                        match guard.recv() {
                            Ok(j) => j,
                            Err(_) => return,
                        }
                    };
                    queued.fetch_sub(1, Ordering::Relaxed);
                    if job.abandoned.load(Ordering::Relaxed) {
                        continue;
                    }
                    busy.fetch_add(1, Ordering::Relaxed);
                    let held = Instant::now();
                    std::thread::sleep(job.busy);
                    busy_ns.fetch_add(held.elapsed().as_nanos() as u64, Ordering::Relaxed);
                    busy.fetch_sub(1, Ordering::Relaxed);
                    completed.fetch_add(1, Ordering::Relaxed);
                    let _ = job.done.send(Instant::now());
                })?;
        }
        Ok(Pool {
            tx,
            queued,
            busy,
            completed,
            busy_ns,
            workers,
        })
    }

    /// Queues a job; `false` when the queue is full.
    pub fn submit(&self, job: Job) -> bool {
        self.queued.fetch_add(1, Ordering::Relaxed);
        match self.tx.try_send(job) {
            Ok(()) => true,
            Err(_) => {
                self.queued.fetch_sub(1, Ordering::Relaxed);
                false
            }
        }
    }
}
