//! The timer of the header-read deadline: one entry per connection, checked by one sweeper.
//!
//! hyper starts a sleep each time it waits for a request's headers and drops it once they
//! are in, so on a kept-alive connection every request arms and removes a timer. With tokio's
//! timer that is a boxed timer entry registered in, and removed from, the runtime's timer
//! wheel under its lock, more CPU per request than the request's log line (docs/perf.md).
//! The deadline is many seconds and needs no precision, so here a
//! connection's sleeps all share one entry: arming it stores a deadline, dropping a sleep
//! clears it, and a sweeper task wakes the connections whose deadline has passed, every
//! [`SWEEP_EVERY`]. A connection is closed at most that much after its deadline.

use futures::task::AtomicWaker;
use std::future::Future;
use std::pin::Pin;
use std::sync::atomic::{AtomicU64, Ordering};
use std::sync::{Arc, Mutex, PoisonError};
use std::task::{Context, Poll};
use std::time::{Duration, Instant};

/// How often the sweeper looks for connections past their deadline.
pub(crate) const SWEEP_EVERY: Duration = Duration::from_millis(100);

/// A deadline no connection has: the entry is not armed.
const UNARMED: u64 = u64::MAX;

/// The connections' entries, and the clock their deadlines are counted on.
pub(crate) struct HeaderDeadlines {
    started: Instant,
    entries: Mutex<Vec<Arc<Entry>>>,
}

/// One connection's deadline (milliseconds since `started`, or [`UNARMED`]) and the waker of
/// its task.
struct Entry {
    deadline_ms: AtomicU64,
    waker: AtomicWaker,
}

impl HeaderDeadlines {
    /// An empty set of connections.
    pub(crate) fn new() -> Arc<Self> {
        Arc::new(Self {
            started: Instant::now(),
            entries: Mutex::new(Vec::new()),
        })
    }

    /// The timer for one new connection's hyper connection builder.
    pub(crate) fn connection(self: &Arc<Self>) -> ConnectionTimer {
        let entry = Arc::new(Entry {
            deadline_ms: AtomicU64::new(UNARMED),
            waker: AtomicWaker::new(),
        });
        self.entries
            .lock()
            .unwrap_or_else(PoisonError::into_inner)
            .push(entry.clone());
        ConnectionTimer {
            deadlines: self.clone(),
            entry,
        }
    }

    fn millis(&self, at: Instant) -> u64 {
        u64::try_from(at.saturating_duration_since(self.started).as_millis()).unwrap_or(UNARMED - 1)
    }

    /// Wakes the connections whose deadline has passed, and forgets closed connections.
    pub(crate) fn sweep(&self) {
        let now = self.millis(Instant::now());
        let mut entries = self.entries.lock().unwrap_or_else(PoisonError::into_inner);
        // Only this list holds the entry of a connection whose timer (and builder) is gone.
        entries.retain(|entry| Arc::strong_count(entry) > 1);
        for entry in entries.iter() {
            if entry.deadline_ms.load(Ordering::Acquire) <= now {
                entry.waker.wake();
            }
        }
    }

    /// Sweeps every [`SWEEP_EVERY`] until dropped (run it as a task beside the connections).
    pub(crate) async fn run_sweeper(self: Arc<Self>) {
        let mut every = tokio::time::interval(SWEEP_EVERY);
        every.set_missed_tick_behavior(tokio::time::MissedTickBehavior::Delay);
        loop {
            every.tick().await;
            self.sweep();
        }
    }
}

/// A connection's timer: every sleep hyper asks of it is the connection's one entry.
#[derive(Clone)]
pub(crate) struct ConnectionTimer {
    deadlines: Arc<HeaderDeadlines>,
    entry: Arc<Entry>,
}

impl hyper::rt::Timer for ConnectionTimer {
    fn sleep(&self, duration: Duration) -> Pin<Box<dyn hyper::rt::Sleep>> {
        self.sleep_until(Instant::now() + duration)
    }

    fn sleep_until(&self, deadline: Instant) -> Pin<Box<dyn hyper::rt::Sleep>> {
        self.entry
            .deadline_ms
            .store(self.deadlines.millis(deadline), Ordering::Release);
        Box::pin(HeaderSleep {
            deadline,
            entry: self.entry.clone(),
        })
    }

    fn reset(&self, sleep: &mut Pin<Box<dyn hyper::rt::Sleep>>, new_deadline: Instant) {
        // In place: a connection has one sleep at a time, and a dropped one unarms the entry.
        match sleep.as_mut().downcast_mut_pin::<HeaderSleep>() {
            Some(mine) => {
                mine.get_mut().deadline = new_deadline;
                self.entry
                    .deadline_ms
                    .store(self.deadlines.millis(new_deadline), Ordering::Release);
            }
            None => *sleep = self.sleep_until(new_deadline),
        }
    }
}

/// One wait for a request's headers (hyper keeps one at a time per connection).
struct HeaderSleep {
    deadline: Instant,
    entry: Arc<Entry>,
}

impl Future for HeaderSleep {
    type Output = ();

    fn poll(self: Pin<&mut Self>, cx: &mut Context<'_>) -> Poll<()> {
        if Instant::now() >= self.deadline {
            return Poll::Ready(());
        }
        self.entry.waker.register(cx.waker());
        Poll::Pending
    }
}

impl hyper::rt::Sleep for HeaderSleep {}

impl Drop for HeaderSleep {
    fn drop(&mut self) {
        // The headers are in (or the connection is gone): nothing to wake for.
        self.entry.deadline_ms.store(UNARMED, Ordering::Release);
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use futures::task::{ArcWake, waker};
    use hyper::rt::Timer;
    use std::sync::atomic::AtomicUsize;

    struct Wakes(AtomicUsize);

    impl ArcWake for Wakes {
        fn wake_by_ref(arc_self: &Arc<Self>) {
            arc_self.0.fetch_add(1, Ordering::SeqCst);
        }
    }

    #[test]
    fn a_connection_past_its_deadline_is_woken_and_one_whose_headers_came_is_not() {
        let deadlines = HeaderDeadlines::new();
        let wakes = Arc::new(Wakes(AtomicUsize::new(0)));
        let task = waker(wakes.clone());
        let mut cx = Context::from_waker(&task);

        let timer = deadlines.connection();
        let mut sleep = timer.sleep(Duration::from_millis(30));
        assert!(sleep.as_mut().poll(&mut cx).is_pending());
        deadlines.sweep();
        assert_eq!(
            wakes.0.load(Ordering::SeqCst),
            0,
            "woken before the deadline"
        );
        std::thread::sleep(Duration::from_millis(40));
        deadlines.sweep();
        assert_eq!(wakes.0.load(Ordering::SeqCst), 1);
        assert!(sleep.as_mut().poll(&mut cx).is_ready());

        // Reset to later: pending again, and not woken before the new deadline.
        timer.reset(&mut sleep, Instant::now() + Duration::from_secs(60));
        assert!(sleep.as_mut().poll(&mut cx).is_pending());
        deadlines.sweep();
        assert_eq!(wakes.0.load(Ordering::SeqCst), 1);

        // The headers came (hyper drops the sleep): the deadline passing wakes nobody.
        drop(sleep);
        let mut next = timer.sleep(Duration::from_millis(5));
        assert!(next.as_mut().poll(&mut cx).is_pending());
        drop(next);
        std::thread::sleep(Duration::from_millis(10));
        deadlines.sweep();
        assert_eq!(wakes.0.load(Ordering::SeqCst), 1);
    }

    #[test]
    fn a_closed_connection_is_forgotten_at_the_next_sweep() {
        let deadlines = HeaderDeadlines::new();
        let (a, b) = (deadlines.connection(), deadlines.connection());
        assert_eq!(deadlines.entries.lock().unwrap().len(), 2);
        drop(a);
        deadlines.sweep();
        assert_eq!(deadlines.entries.lock().unwrap().len(), 1);
        drop(b);
        deadlines.sweep();
        assert!(deadlines.entries.lock().unwrap().is_empty());
    }
}
