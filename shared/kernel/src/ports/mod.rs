//! Ports: the narrow interfaces the domain is written against.
//!
//! Each port has an embedded adapter (`paddock-embedded`) for the local single-process mode
//! and an AWS adapter (`paddock-aws`). Both pass the same conformance suite (`tests/`).

pub mod blobs;
pub mod clock;
pub mod items;
pub mod metrics_source;
pub mod queue;
pub mod secrets;
pub mod unwired;

use std::sync::Arc;

pub use blobs::{BlobError, BlobStore};
pub use clock::{Clock, ManualClock, SystemClock};
pub use items::{Condition, Item, ItemStore, Key, Page, Query, SkRange, StoreError, TxOp, Update};
pub use metrics_source::{MetricsSource, MetricsSourceError};
pub use queue::{EventQueue, QueueError, Queues, ReceivedMessage};
pub use secrets::{SecretError, SecretSource};

/// Every port the domain needs, bundled for handlers and workers.
///
/// Cloning is cheap (reference counted). Process memory holds only caches: every piece of
/// cross-request state lives behind one of these ports.
#[derive(Clone)]
pub struct Ports {
    /// Item store (DynamoDB or SQLite).
    pub items: Arc<dyn ItemStore>,
    /// Blob store (S3 or a directory).
    pub blobs: Arc<dyn BlobStore>,
    /// The event queues, one per consumer (SQS or SQLite).
    pub queues: Queues,
    /// Secret source.
    pub secrets: Arc<dyn SecretSource>,
    /// Clock (manual in tests).
    pub clock: Arc<dyn Clock>,
}
