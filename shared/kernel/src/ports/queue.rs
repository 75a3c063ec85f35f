//! Event queue port: at-least-once delivery with visibility timeouts and a dead-letter place.

use async_trait::async_trait;
use std::sync::Arc;
use std::time::Duration;

use crate::queues::QueueName;

/// Why a queue operation failed.
#[derive(Debug, thiserror::Error)]
pub enum QueueError {
    /// The backend could not be reached or failed.
    #[error("queue unavailable: {0}")]
    Unavailable(String),
    /// The message is larger than the queue accepts.
    #[error("message too large: {0} bytes (limit 262144)")]
    TooLarge(usize),
}

/// Largest message body accepted (SQS's limit, enforced by both adapters).
pub const MAX_MESSAGE_BYTES: usize = 256 * 1024;

/// The longest delay a message can be sent with (SQS's `DelaySeconds` limit).
pub const MAX_SEND_DELAY: Duration = Duration::from_secs(900);

/// One delivery of a message. The same message may be delivered more than once.
#[derive(Debug, Clone)]
pub struct ReceivedMessage {
    /// Stable id of the message across deliveries.
    pub id: String,
    /// The body as sent.
    pub body: String,
    /// Handle for `ack`/`retry_later` of this delivery.
    pub receipt: String,
    /// How many times the message has been delivered, this delivery included.
    pub receive_count: u32,
}

/// A queue of opaque text messages.
#[async_trait]
pub trait EventQueue: Send + Sync {
    /// Enqueues the bodies (in batches as the backend needs). All or an error.
    async fn send(&self, bodies: Vec<String>) -> Result<(), QueueError>;
    /// Enqueues one body that becomes visible after `delay` (at most [`MAX_SEND_DELAY`]; a
    /// longer wait is the consumer's to finish, by hiding the message when it comes early).
    /// Without a backend delay, the message is visible at once.
    async fn send_delayed(&self, body: String, delay: Duration) -> Result<(), QueueError> {
        let _ = delay;
        self.send(vec![body]).await
    }
    /// Up to `max` visible messages, waiting at most `wait` for the first. Each is hidden
    /// for the visibility timeout and redelivered unless acknowledged.
    async fn receive(&self, max: usize, wait: Duration)
    -> Result<Vec<ReceivedMessage>, QueueError>;
    /// Removes a delivered message for good.
    async fn ack(&self, receipt: &str) -> Result<(), QueueError>;
    /// Removes several delivered messages for good (one round trip where the backend can).
    async fn ack_all(&self, receipts: &[String]) -> Result<(), QueueError> {
        for receipt in receipts {
            self.ack(receipt).await?;
        }
        Ok(())
    }
    /// Makes a delivered message visible again after `delay` (a failed attempt).
    async fn retry_later(&self, receipt: &str, delay: Duration) -> Result<(), QueueError>;
    /// Moves a delivered message to the dead-letter place with a reason, and removes it here.
    async fn dead_letter(&self, message: &ReceivedMessage, reason: &str) -> Result<(), QueueError>;
    /// Bodies currently in the dead-letter place (operators' view; also used by tests).
    async fn dead_letters(&self, max: usize) -> Result<Vec<String>, QueueError>;
    /// Messages waiting or in flight (not dead letters), when the backend can tell.
    async fn depth(&self) -> Result<Option<u64>, QueueError> {
        Ok(None)
    }
}

/// One queue per consumer (see [`QueueName`]).
#[derive(Clone)]
pub struct Queues {
    track_maps: Arc<dyn EventQueue>,
    achievements: Arc<dyn EventQueue>,
    feed: Arc<dyn EventQueue>,
    accounts: Arc<dyn EventQueue>,
    webhooks: Arc<dyn EventQueue>,
}

impl Queues {
    /// Every queue, each made by `make`.
    pub fn new(mut make: impl FnMut(QueueName) -> Arc<dyn EventQueue>) -> Self {
        Self {
            track_maps: make(QueueName::TrackMaps),
            achievements: make(QueueName::Achievements),
            feed: make(QueueName::Feed),
            accounts: make(QueueName::Accounts),
            webhooks: make(QueueName::Webhooks),
        }
    }

    /// Every queue, each made by `make`, or its first error.
    pub fn try_new<E>(
        mut make: impl FnMut(QueueName) -> Result<Arc<dyn EventQueue>, E>,
    ) -> Result<Self, E> {
        Ok(Self {
            track_maps: make(QueueName::TrackMaps)?,
            achievements: make(QueueName::Achievements)?,
            feed: make(QueueName::Feed)?,
            accounts: make(QueueName::Accounts)?,
            webhooks: make(QueueName::Webhooks)?,
        })
    }

    /// The queue `name`.
    pub fn get(&self, name: QueueName) -> &Arc<dyn EventQueue> {
        match name {
            QueueName::TrackMaps => &self.track_maps,
            QueueName::Achievements => &self.achievements,
            QueueName::Feed => &self.feed,
            QueueName::Accounts => &self.accounts,
            QueueName::Webhooks => &self.webhooks,
        }
    }

    /// Replaces the queue `name`.
    pub fn set(&mut self, name: QueueName, queue: Arc<dyn EventQueue>) {
        match name {
            QueueName::TrackMaps => self.track_maps = queue,
            QueueName::Achievements => self.achievements = queue,
            QueueName::Feed => self.feed = queue,
            QueueName::Accounts => self.accounts = queue,
            QueueName::Webhooks => self.webhooks = queue,
        }
    }
}
