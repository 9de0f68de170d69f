//! A fixed pool of workers on OS threads, with a bounded queue.
//!
//! Workers sleep for the service time on their own threads: std's sleep is accurate to well
//! under a millisecond, where tokio's timer rounds up to the next millisecond, which at 10 ms of
//! service time would already cost 5% of the capacity the tests check. Or they spin: burn CPU
//! until their own thread has used the service time, so that with fewer cores than workers, or
//! under a CPU quota, the target slows down as a CPU-bound service does.

use std::sync::atomic::{AtomicBool, AtomicU64, Ordering};
use std::sync::{mpsc, Arc, Mutex};
use std::time::{Duration, Instant};
use tokio::sync::oneshot;

/// What a worker does for its service time.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub enum Work {
    /// Sleeps: the service waits on something else (a database, a remote call); its capacity
    /// is workers / service time whatever the cores.
    #[default]
    Sleep,
    /// Burns CPU until the worker's thread has used the service time in CPU time: its capacity
    /// is at most cores / service time, and its wall time grows when it cannot get a core.
    Spin,
}

impl Work {
    /// Holds the calling thread for `busy`, as this kind of work does.
    fn hold(self, busy: Duration) {
        match self {
            Work::Sleep => std::thread::sleep(busy),
            Work::Spin => spin(busy),
        }
    }
}

/// CPU time the calling thread has used.
fn thread_cpu_time() -> Duration {
    let t = rustix::time::clock_gettime(rustix::time::ClockId::ThreadCPUTime);
    Duration::new(t.tv_sec as u64, t.tv_nsec as u32)
}

/// Burns CPU until this thread has used `cpu` more of it. Time the thread spends waiting for a
/// core (other threads on it, a CPU quota's throttling) does not count.
fn spin(cpu: Duration) {
    let end = thread_cpu_time() + cpu;
    let mut x = 0x9e37_79b9_7f4a_7c15_u64;
    while thread_cpu_time() < end {
        // Some arithmetic between clock reads, so that the reads are not most of the work.
        for _ in 0..2_000 {
            x = std::hint::black_box(x.rotate_left(5) ^ x.wrapping_mul(31));
        }
    }
}

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
    /// `workers` threads doing `work`, and room for `queue` waiting jobs.
    pub fn new(workers: usize, queue: usize, work: Work) -> std::io::Result<Pool> {
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
                    work.hold(job.busy);
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
