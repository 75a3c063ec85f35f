//! The local server's log writer: request threads append their lines to one shared buffer,
//! and a writer thread takes the whole buffer a few milliseconds after its first line and
//! writes it in one call.
//!
//! Why not `tracing-appender`'s non-blocking writer: it copies every line into an allocation
//! of its own, sends it through a channel, and wakes the writer thread for nearly every line
//! when requests come one at a time; its writer then makes one write call per line, a share of
//! a cheap request's time that shows (docs/perf.md). Here a line costs a
//! copy into the buffer under a lock; the writer thread is woken at most once per batch (when
//! a line lands in an empty buffer, or the batch reaches [`BATCH_BYTES`]) and writes the batch
//! with one call.
//!
//! No line is dropped: when the writer falls [`MAX_PENDING_BYTES`] behind, the request threads
//! wait for it. Dropping the [`QueuedWriterGuard`] writes out what is pending and stops the
//! thread.

use std::io::Write;
use std::sync::{Arc, Condvar, Mutex, MutexGuard, PoisonError};
use std::thread::JoinHandle;
use std::time::Duration;

use tracing_subscriber::fmt::MakeWriter;

/// How long the writer waits after a batch's first line for more lines to join it.
const LINGER: Duration = Duration::from_millis(5);
/// A batch this large is written at once, without waiting out [`LINGER`].
const BATCH_BYTES: usize = 64 * 1024;
/// Pending bytes beyond which a logging thread waits for the writer.
const MAX_PENDING_BYTES: usize = 8 * 1024 * 1024;

/// What the writer thread is doing, so that a logging thread wakes it only when it waits.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
enum Writer {
    /// Waiting for a first line.
    Idle,
    /// Waiting [`LINGER`] for more lines, or for the batch to fill.
    Lingering,
    /// Writing, or woken and about to take the batch.
    Busy,
}

struct Pending {
    lines: Vec<u8>,
    writer: Writer,
    /// Logging threads waiting for room.
    waiting: usize,
    closed: bool,
}

struct Shared {
    pending: Mutex<Pending>,
    /// The writer thread waits on this for lines (or for the batch to fill).
    lines: Condvar,
    /// Logging threads wait on this for room.
    room: Condvar,
}

impl Shared {
    fn lock(&self) -> MutexGuard<'_, Pending> {
        // A panic while holding the lock leaves the buffer whole (appends and swaps only).
        self.pending.lock().unwrap_or_else(PoisonError::into_inner)
    }

    fn append(&self, line: &[u8]) {
        let mut pending = self.lock();
        while pending.lines.len() >= MAX_PENDING_BYTES && !pending.closed {
            pending.waiting += 1;
            pending = self
                .room
                .wait(pending)
                .unwrap_or_else(PoisonError::into_inner);
            pending.waiting -= 1;
        }
        if pending.closed {
            // The writer has stopped (its guard is gone as the process ends): nothing would
            // write this line, so it is not kept either.
            return;
        }
        pending.lines.extend_from_slice(line);
        let wake = match pending.writer {
            Writer::Idle => true,
            Writer::Lingering => pending.lines.len() >= BATCH_BYTES,
            Writer::Busy => false,
        };
        if wake {
            pending.writer = Writer::Busy;
            drop(pending);
            self.lines.notify_one();
        }
    }

    /// The writer thread: takes each batch and writes it to `out` until closed and empty.
    fn run(&self, mut out: impl Write) {
        let mut batch = Vec::new();
        loop {
            let mut pending = self.lock();
            while pending.lines.is_empty() && !pending.closed {
                pending.writer = Writer::Idle;
                pending = self
                    .lines
                    .wait(pending)
                    .unwrap_or_else(PoisonError::into_inner);
            }
            if !pending.closed && pending.lines.len() < BATCH_BYTES {
                pending.writer = Writer::Lingering;
                pending = self
                    .lines
                    .wait_timeout(pending, LINGER)
                    .unwrap_or_else(PoisonError::into_inner)
                    .0;
            }
            pending.writer = Writer::Busy;
            std::mem::swap(&mut batch, &mut pending.lines);
            let done = pending.closed && batch.is_empty();
            if pending.waiting > 0 {
                self.room.notify_all();
            }
            drop(pending);
            if done {
                let _ = out.flush();
                return;
            }
            // A failed write (a closed pipe) loses that batch; the server goes on serving.
            let _ = out.write_all(&batch).and_then(|()| out.flush());
            batch.clear();
        }
    }

    fn close(&self) {
        self.lock().closed = true;
        self.lines.notify_one();
        self.room.notify_all();
    }
}

/// Appends lines to the writer thread's buffer; the `MakeWriter` of the local server's log.
#[derive(Clone)]
pub struct QueuedWriter {
    shared: Arc<Shared>,
}

impl std::fmt::Debug for QueuedWriter {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str("QueuedWriter")
    }
}

/// Keeps the writer thread running; dropping it writes out what is pending and waits for that.
#[must_use = "the log writer stops when its guard is dropped"]
pub struct QueuedWriterGuard {
    shared: Arc<Shared>,
    thread: Option<JoinHandle<()>>,
}

impl std::fmt::Debug for QueuedWriterGuard {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str("QueuedWriterGuard")
    }
}

/// A writer whose lines a thread named `log-writer` writes to `out` in batches.
pub fn queued(
    out: impl Write + Send + 'static,
) -> std::io::Result<(QueuedWriter, QueuedWriterGuard)> {
    let shared = Arc::new(Shared {
        pending: Mutex::new(Pending {
            lines: Vec::with_capacity(BATCH_BYTES),
            writer: Writer::Busy,
            waiting: 0,
            closed: false,
        }),
        lines: Condvar::new(),
        room: Condvar::new(),
    });
    let thread = std::thread::Builder::new()
        .name("log-writer".into())
        .spawn({
            let shared = shared.clone();
            move || shared.run(out)
        })?;
    Ok((
        QueuedWriter {
            shared: shared.clone(),
        },
        QueuedWriterGuard {
            shared,
            thread: Some(thread),
        },
    ))
}

impl Drop for QueuedWriterGuard {
    fn drop(&mut self) {
        self.shared.close();
        if let Some(thread) = self.thread.take() {
            let _ = thread.join();
        }
    }
}

impl Write for QueuedWriter {
    fn write(&mut self, buf: &[u8]) -> std::io::Result<usize> {
        self.shared.append(buf);
        Ok(buf.len())
    }

    fn flush(&mut self) -> std::io::Result<()> {
        Ok(())
    }
}

impl<'a> MakeWriter<'a> for QueuedWriter {
    type Writer = QueuedWriter;

    fn make_writer(&'a self) -> Self::Writer {
        self.clone()
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    /// A `Write` whose bytes and write calls the test reads back.
    #[derive(Clone, Default)]
    struct Recorder(Arc<Mutex<(Vec<u8>, usize)>>);

    impl Write for Recorder {
        fn write(&mut self, buf: &[u8]) -> std::io::Result<usize> {
            let mut r = self.0.lock().unwrap();
            r.0.extend_from_slice(buf);
            r.1 += 1;
            Ok(buf.len())
        }
        fn flush(&mut self) -> std::io::Result<()> {
            Ok(())
        }
    }

    #[test]
    fn every_line_of_every_thread_is_written_whole_and_in_batches() {
        let out = Recorder::default();
        let (writer, guard) = queued(out.clone()).unwrap();
        let threads: Vec<_> = (0..4)
            .map(|t| {
                let mut w = writer.clone();
                std::thread::spawn(move || {
                    for i in 0..20_000 {
                        w.write_all(format!("thread {t} line {i}\n").as_bytes())
                            .unwrap();
                    }
                })
            })
            .collect();
        for t in threads {
            t.join().unwrap();
        }
        drop(guard);
        let (bytes, writes) = out.0.lock().unwrap().clone();
        let text = String::from_utf8(bytes).unwrap();
        let lines: Vec<&str> = text.lines().collect();
        assert_eq!(lines.len(), 80_000, "no line lost or split");
        for t in 0..4 {
            let own: Vec<&str> = lines
                .iter()
                .copied()
                .filter(|l| l.starts_with(&format!("thread {t} ")))
                .collect();
            let expected: Vec<String> = (0..20_000)
                .map(|i| format!("thread {t} line {i}"))
                .collect();
            assert_eq!(own, expected, "each thread's lines in its order");
        }
        assert!(
            writes < 80_000 / 10,
            "lines are written in batches ({writes} writes)"
        );
    }

    #[test]
    fn a_lone_line_is_written_soon_without_a_flush() {
        let out = Recorder::default();
        let (mut writer, _guard) = queued(out.clone()).unwrap();
        writer.write_all(b"one line\n").unwrap();
        let deadline = std::time::Instant::now() + Duration::from_secs(5);
        while out.0.lock().unwrap().0.is_empty() {
            assert!(
                std::time::Instant::now() < deadline,
                "the line was never written"
            );
            std::thread::sleep(Duration::from_millis(1));
        }
        assert_eq!(out.0.lock().unwrap().0, b"one line\n");
    }

    #[test]
    fn lines_after_the_writer_stopped_are_not_kept() {
        let out = Recorder::default();
        let (mut writer, guard) = queued(out.clone()).unwrap();
        writer.write_all(b"before\n").unwrap();
        drop(guard);
        writer.write_all(b"after\n").unwrap();
        assert!(writer.shared.lock().lines.is_empty(), "nothing piles up");
        assert_eq!(out.0.lock().unwrap().0, b"before\n");
    }

    #[test]
    fn a_slow_output_holds_the_loggers_back_instead_of_losing_lines() {
        #[derive(Clone, Default)]
        struct Slow(Arc<Mutex<usize>>);
        impl Write for Slow {
            fn write(&mut self, buf: &[u8]) -> std::io::Result<usize> {
                std::thread::sleep(Duration::from_millis(20));
                *self.0.lock().unwrap() += buf.len();
                Ok(buf.len())
            }
            fn flush(&mut self) -> std::io::Result<()> {
                Ok(())
            }
        }
        let out = Slow::default();
        let (mut writer, guard) = queued(out.clone()).unwrap();
        let line = vec![b'x'; 1024 * 1024];
        for _ in 0..32 {
            writer.write_all(&line).unwrap();
            assert!(
                writer.shared.lock().lines.len() <= MAX_PENDING_BYTES + line.len(),
                "pending bytes stay bounded"
            );
        }
        drop(guard);
        assert_eq!(*out.0.lock().unwrap(), 32 * 1024 * 1024);
    }
}
