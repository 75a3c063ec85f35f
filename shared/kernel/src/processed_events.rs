//! Processed-event markers: how a consumer acts on an event once although queues deliver at
//! least once.
//!
//! Key layout (table `activity`): `PROCESSED#<consumer>#<event id>` / `MARKER`, one partition
//! per event so markers spread over the table; they expire after [`KEPT_SECS`].

use crate::events::Event;
use crate::ports::items::{Condition, Key, TTL, TxOp, item};
use crate::queues::QueueName;
use crate::tables::Table;

/// How long a marker is kept: longer than any queue keeps a message (SQS: 14 days at most)
/// and than the outbox keeps an unrelayed event.
pub const KEPT_SECS: i64 = 30 * 24 * 3600;

/// The key of `event`'s marker for `consumer`.
pub fn marker_key(consumer: QueueName, event: &Event) -> Key {
    Key::new(format!("PROCESSED#{consumer}#{}", event.id), "MARKER")
}

/// The transaction operation that marks `event` as handled by `consumer`; put it in the same
/// transaction as the consumer's writes so a redelivered event changes nothing.
pub fn marker_op(consumer: QueueName, event: &Event) -> TxOp {
    TxOp::Put {
        table: Table::Activity,
        item: item(
            &marker_key(consumer, event),
            serde_json::json!({ TTL: event.occurred_at.unix_timestamp() + KEPT_SECS }),
        ),
        condition: Some(Condition::NotExists),
    }
}
