//! SQLite-backed queue: durable across restarts, with SQS-like visibility timeouts.

use async_trait::async_trait;
use rusqlite::{Connection, TransactionBehavior, params};
use std::sync::Arc;
use std::sync::atomic::{AtomicI64, Ordering};
use std::time::Duration;
use tokio::sync::Notify;

use super::database::{Database, SharedConnection};
use paddock_core::ports::queue::{
    EventQueue, MAX_MESSAGE_BYTES, MAX_SEND_DELAY, QueueError, ReceivedMessage,
};

/// One named embedded event queue (its messages and dead letters share one SQLite table with
/// the other queues, told apart by name).
pub struct SqliteQueue {
    /// Keeps the data directory locked while the store lives.
    _lock: Arc<std::fs::File>,
    name: &'static str,
    conn: SharedConnection,
    visibility: Duration,
    arrived: Arc<Notify>,
    seq: AtomicI64,
}

impl SqliteQueue {
    /// The queue `name` on `db`; a received message stays hidden for `visibility` unless
    /// acknowledged.
    ///
    /// Visibility is real elapsed time (the wall clock), not the domain's clock, as in SQS.
    pub fn new(db: &Database, name: &'static str, visibility: Duration) -> rusqlite::Result<Self> {
        let conn = db.connect()?;
        let seq: i64 = conn.query_row(
            "SELECT coalesce(max(seq), 0) FROM queue_messages WHERE queue = ?1",
            params![name],
            |r| r.get(0),
        )?;
        Ok(Self {
            _lock: db.lock(),
            name,
            conn: Arc::new(std::sync::Mutex::new(conn)),
            visibility,
            arrived: Arc::new(Notify::new()),
            seq: AtomicI64::new(seq),
        })
    }

    fn now_ms() -> i64 {
        (time::OffsetDateTime::now_utc().unix_timestamp_nanos() / 1_000_000) as i64
    }

    async fn run<T, F>(&self, f: F) -> Result<T, QueueError>
    where
        T: Send + 'static,
        F: FnOnce(&mut Connection) -> rusqlite::Result<T> + Send + 'static,
    {
        let conn = self.conn.clone();
        tokio::task::spawn_blocking(move || {
            let mut guard = conn
                .lock()
                .map_err(|_| QueueError::Unavailable("connection poisoned".into()))?;
            f(&mut guard).map_err(|e| QueueError::Unavailable(e.to_string()))
        })
        .await
        .map_err(|e| QueueError::Unavailable(format!("queue task failed: {e}")))?
    }

    /// Claims up to `max` visible messages. Every transaction here takes the write lock at
    /// its start (`IMMEDIATE`): a read that later writes could not wait for another writer
    /// and would fail at once with "database is locked".
    async fn receive_now(&self, max: usize) -> Result<Vec<ReceivedMessage>, QueueError> {
        let now = Self::now_ms();
        let hidden_until = now + self.visibility.as_millis() as i64;
        let max = max.clamp(1, 10) as i64;
        let name = self.name;
        self.run(move |conn| {
            let tx = conn.transaction_with_behavior(TransactionBehavior::Immediate)?;
            let mut out = Vec::new();
            {
                let mut pick = tx.prepare_cached(
                    "SELECT id, body, receive_count FROM queue_messages \
                     WHERE queue = ?3 AND dead = 0 AND visible_at_ms <= ?1 ORDER BY seq LIMIT ?2",
                )?;
                let rows = pick
                    .query_map(params![now, max, name], |r| Ok((r.get::<_, String>(0)?, r.get::<_, String>(1)?, r.get::<_, u32>(2)?)))?
                    .collect::<Result<Vec<_>, _>>()?;
                let mut mark = tx.prepare_cached(
                    "UPDATE queue_messages SET visible_at_ms = ?2, receive_count = ?3, receipt = ?4 WHERE id = ?1",
                )?;
                for (id, body, count) in rows {
                    let receive_count = count + 1;
                    let receipt = format!("{id}:{}", uuid::Uuid::new_v4().simple());
                    mark.execute(params![id, hidden_until, receive_count, receipt])?;
                    out.push(ReceivedMessage { id, body, receipt, receive_count });
                }
            }
            tx.commit()?;
            Ok(out)
        })
        .await
    }
}

#[async_trait]
impl EventQueue for SqliteQueue {
    async fn send(&self, bodies: Vec<String>) -> Result<(), QueueError> {
        if let Some(big) = bodies.iter().find(|b| b.len() > MAX_MESSAGE_BYTES) {
            return Err(QueueError::TooLarge(big.len()));
        }
        let now = Self::now_ms();
        let first = self.seq.fetch_add(bodies.len() as i64, Ordering::SeqCst) + 1;
        let name = self.name;
        self.run(move |conn| {
            let tx = conn.transaction_with_behavior(TransactionBehavior::Immediate)?;
            {
                let mut insert = tx.prepare_cached(
                    "INSERT INTO queue_messages (id, body, visible_at_ms, seq, queue) VALUES (?1, ?2, ?3, ?4, ?5)",
                )?;
                for (i, body) in bodies.into_iter().enumerate() {
                    insert.execute(params![uuid::Uuid::now_v7().to_string(), body, now, first + i as i64, name])?;
                }
            }
            tx.commit()
        })
        .await?;
        self.arrived.notify_waiters();
        Ok(())
    }

    async fn send_delayed(&self, body: String, delay: Duration) -> Result<(), QueueError> {
        if body.len() > MAX_MESSAGE_BYTES {
            return Err(QueueError::TooLarge(body.len()));
        }
        let visible_at = Self::now_ms() + delay.min(MAX_SEND_DELAY).as_millis() as i64;
        let seq = self.seq.fetch_add(1, Ordering::SeqCst) + 1;
        let name = self.name;
        self.run(move |conn| {
            conn.execute(
                "INSERT INTO queue_messages (id, body, visible_at_ms, seq, queue) VALUES (?1, ?2, ?3, ?4, ?5)",
                params![uuid::Uuid::now_v7().to_string(), body, visible_at, seq, name],
            )
        })
        .await?;
        Ok(())
    }

    async fn receive(
        &self,
        max: usize,
        wait: Duration,
    ) -> Result<Vec<ReceivedMessage>, QueueError> {
        let deadline = tokio::time::Instant::now() + wait;
        loop {
            let notified = self.arrived.notified();
            let got = self.receive_now(max).await?;
            if !got.is_empty() || tokio::time::Instant::now() >= deadline {
                return Ok(got);
            }
            // Wake on a send, or poll again soon for messages whose visibility ran out.
            let nap = deadline.min(tokio::time::Instant::now() + Duration::from_millis(200));
            let _ = tokio::time::timeout_at(nap, notified).await;
        }
    }

    async fn ack(&self, receipt: &str) -> Result<(), QueueError> {
        let receipt = receipt.to_owned();
        self.run(move |conn| {
            conn.execute(
                "DELETE FROM queue_messages WHERE receipt = ?1 AND dead = 0",
                params![receipt],
            )
        })
        .await
        .map(|_| ())
    }

    async fn ack_all(&self, receipts: &[String]) -> Result<(), QueueError> {
        let receipts = receipts.to_vec();
        self.run(move |conn| {
            let tx = conn.transaction_with_behavior(TransactionBehavior::Immediate)?;
            {
                let mut delete = tx
                    .prepare_cached("DELETE FROM queue_messages WHERE receipt = ?1 AND dead = 0")?;
                for receipt in &receipts {
                    delete.execute(params![receipt])?;
                }
            }
            tx.commit()
        })
        .await
    }

    async fn retry_later(&self, receipt: &str, delay: Duration) -> Result<(), QueueError> {
        let receipt = receipt.to_owned();
        let visible_at = Self::now_ms() + delay.as_millis() as i64;
        self.run(move |conn| {
            conn.execute(
                "UPDATE queue_messages SET visible_at_ms = ?2 WHERE receipt = ?1 AND dead = 0",
                params![receipt, visible_at],
            )
        })
        .await
        .map(|_| ())
    }

    async fn dead_letter(&self, message: &ReceivedMessage, reason: &str) -> Result<(), QueueError> {
        let (receipt, reason) = (message.receipt.clone(), reason.to_owned());
        self.run(move |conn| {
            conn.execute(
                "UPDATE queue_messages SET dead = 1, dead_reason = ?2 WHERE receipt = ?1",
                params![receipt, reason],
            )
        })
        .await
        .map(|_| ())
    }

    async fn dead_letters(&self, max: usize) -> Result<Vec<String>, QueueError> {
        let max = max as i64;
        let name = self.name;
        self.run(move |conn| {
            let mut stmt = conn.prepare_cached(
                "SELECT body FROM queue_messages WHERE queue = ?2 AND dead = 1 ORDER BY seq LIMIT ?1",
            )?;
            let rows = stmt.query_map(params![max, name], |r| r.get::<_, String>(0))?;
            rows.collect()
        })
        .await
    }

    async fn depth(&self) -> Result<Option<u64>, QueueError> {
        let name = self.name;
        self.run(move |conn| {
            conn.query_row(
                "SELECT count(*) FROM queue_messages WHERE queue = ?1 AND dead = 0",
                params![name],
                |r| r.get::<_, i64>(0),
            )
        })
        .await
        .map(|n| Some(n.unsigned_abs()))
    }
}
