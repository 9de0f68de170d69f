//! The open model's iterations in flight on one thread, polled by its sender rather than run as
//! tasks of their own, so that sending never waits behind receiving (see [`super::open::open`]).

use futures_util::stream::{FuturesUnordered, StreamExt};
use std::cell::Cell;
use std::future::Future;
use std::pin::Pin;
use std::rc::Rc;
use std::task::{Context, Poll};
use std::time::Instant;

/// The open model's iterations in flight on one thread, each polled by the thread's sender (see
/// [`open`](super::open::open)).
pub(super) type InFlight = FuturesUnordered<Deferring<Pin<Box<dyn Future<Output = ()>>>>>;

/// The slot of the next arrival this thread has not sent yet, once it has come: while it is
/// set and past, iterations in flight stand aside (see [`Deferring`]). `None` once sending has
/// stopped.
pub(super) type NextSlot = Rc<Cell<Option<Instant>>>;

/// Polls the iterations in flight until `until` completes. `until` is polled first, and again
/// after the ready iterations, so a slot that came while they ran is met in the same turn.
pub(super) async fn serving<T>(in_flight: &mut InFlight, until: impl Future<Output = T>) -> T {
    let mut until = std::pin::pin!(until);
    std::future::poll_fn(|cx| {
        if let Poll::Ready(v) = until.as_mut().poll(cx) {
            return Poll::Ready(v);
        }
        while let Poll::Ready(Some(())) = in_flight.poll_next_unpin(cx) {}
        until.as_mut().poll(cx)
    })
    .await
}

/// Reads the answers already in, and, while `wanting` still holds, once more after one turn of
/// the runtime (which polls the sockets): what frees a place or a user without waiting for one.
pub(super) async fn read_answers_in(in_flight: &mut InFlight, next: &NextSlot, wanting: impl Fn() -> bool) {
    // The iterations read must not stand aside for the arrival that is waiting on them.
    next.set(None);
    serve_ready(in_flight).await;
    if wanting() {
        tokio::task::yield_now().await;
        serve_ready(in_flight).await;
    }
}

/// Runs every iteration in flight that is ready, once.
pub(super) async fn serve_ready(in_flight: &mut InFlight) {
    std::future::poll_fn(|cx| {
        while let Poll::Ready(Some(())) = in_flight.poll_next_unpin(cx) {}
        Poll::Ready(())
    })
    .await
}

/// An open-model iteration in flight that stands aside while an arrival is due: polled then,
/// it asks to be polled again and returns at once, so the sender runs before it.
pub(super) struct Deferring<F> {
    pub(super) inner: F,
    pub(super) next: NextSlot,
}

impl<F: Future + Unpin> Future for Deferring<F> {
    type Output = F::Output;

    fn poll(mut self: Pin<&mut Self>, cx: &mut Context<'_>) -> Poll<F::Output> {
        if self.next.get().is_some_and(|due| Instant::now() >= due) {
            cx.waker().wake_by_ref();
            return Poll::Pending;
        }
        Pin::new(&mut self.inner).poll(cx)
    }
}
#[cfg(test)]
mod tests {
    use super::*;
    use std::cell::RefCell;
    use std::time::Duration;

    /// A batch of iterations whose responses are all in, as after the thread lost its core for
    /// a moment. The next arrival's slot comes while the fourth is being read. Each entry of
    /// the log is an iteration's number, or `None` for the send.
    fn ready_batch(next: &NextSlot, log: &Rc<RefCell<Vec<Option<u32>>>>) -> InFlight {
        let in_flight = InFlight::new();
        for i in 0..50 {
            let (slot, log) = (Rc::clone(next), Rc::clone(log));
            let read: Pin<Box<dyn Future<Output = ()>>> = Box::pin(async move {
                log.borrow_mut().push(Some(i));
                if i == 3 {
                    // Long past, so the test does not depend on how fast this machine is.
                    slot.set(Instant::now().checked_sub(Duration::from_secs(1)));
                }
            });
            in_flight.push(Deferring {
                inner: read,
                next: Rc::clone(next),
            });
        }
        in_flight
    }

    #[test]
    fn an_arrival_whose_slot_comes_waits_behind_at_most_the_response_being_read() {
        let rt = tokio::runtime::Builder::new_current_thread().build().unwrap();
        rt.block_on(async {
            let next: NextSlot = Rc::new(Cell::new(None));
            let log = Rc::new(RefCell::new(Vec::new()));
            let mut in_flight = ready_batch(&next, &log);
            // The sender: ready once the slot has come, as the pacer is.
            let send = std::future::poll_fn(|_| match next.get() {
                Some(due) if Instant::now() >= due => {
                    log.borrow_mut().push(None);
                    Poll::Ready(())
                }
                _ => Poll::Pending,
            });
            serving(&mut in_flight, send).await;
            assert_eq!(*log.borrow(), [Some(0), Some(1), Some(2), Some(3), None]);
            // Once sent, the rest of the batch runs.
            next.set(None);
            while in_flight.next().await.is_some() {}
            let log = log.borrow();
            assert_eq!(log.len(), 51);
            assert!(log[5..].iter().all(Option::is_some));
        });
    }
}
