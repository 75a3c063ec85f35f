//! Transactional outbox: events are written in the same transaction as the change that causes
//! them, then relayed at least once to every queue that subscribes to their kind.
//!
//! Key layout (table `outbox`): `pk = OUTBOX#<shard>` (16 shards spread the write load),
//! `sk = <event id>` (UUIDv7, so time-ordered), attribute `event` holds the event.

use serde_json::json;

pub use crate::events::Event;
use crate::ports::Ports;
use crate::ports::items::{Condition, Item, Key, MAX_TX_OPS, Query, TTL, TxOp, item};
use crate::queues::QueueName;
use crate::tables::Table;
use paddock_platform::metrics;

/// Number of outbox partitions.
pub const SHARDS: u32 = 16;
/// Outbox items expire after this long even if never relayed (an operator alarm case).
const RETENTION_SECS: i64 = 14 * 24 * 3600;

impl Event {
    fn key(&self) -> Key {
        let shard = (self.id.as_u128() % u128::from(SHARDS)) as u32;
        Key::new(shard_pk(shard), self.id.to_string())
    }

    /// The transaction operation that records the event in the outbox.
    pub fn outbox_op(&self) -> TxOp {
        let expires = self.occurred_at.unix_timestamp() + RETENTION_SECS;
        TxOp::Put {
            table: Table::Outbox,
            item: item(&self.key(), json!({ "event": self, TTL: expires })),
            condition: Some(Condition::NotExists),
        }
    }

    /// The event recorded in an outbox item.
    pub fn from_item(item: &Item) -> Option<Self> {
        serde_json::from_value(item.get("event")?.clone()).ok()
    }
}

fn shard_pk(shard: u32) -> String {
    format!("OUTBOX#{shard:02}")
}

/// Relays every pending outbox event to the queue, then removes it; returns how many.
///
/// At least once: an event is deleted only after the queue accepted it, so a crash between
/// the two sends it again, and processors deduplicate by event id.
pub async fn relay_pending(ports: &Ports) -> anyhow::Result<usize> {
    let mut relayed = 0;
    for shard in 0..SHARDS {
        loop {
            let page = ports
                .items
                .query(Query::partition(Table::Outbox, shard_pk(shard)).limit(50))
                .await?;
            if page.items.is_empty() {
                break;
            }
            relayed += relay_items(ports, &page.items).await?;
            if page.next_cursor.is_none() {
                break;
            }
        }
    }
    Ok(relayed)
}

/// Sends the events of `items` (outbox items) to the queues that subscribe to them, then
/// deletes the items.
///
/// If one queue refuses, the items stay and are sent again to every queue; consumers act on
/// an event id once, so the queues that had it already change nothing.
pub async fn relay_items(ports: &Ports, items: &[Item]) -> anyhow::Result<usize> {
    let mut bodies: [Vec<String>; QueueName::ALL.len()] = Default::default();
    for item in items {
        match Event::from_item(item) {
            Some(event) => {
                let body = serde_json::to_string(&event)?;
                for (queue, bodies) in QueueName::ALL.iter().zip(bodies.iter_mut()) {
                    if queue.subscribes_to(&event.kind) {
                        bodies.push(body.clone());
                    }
                }
            }
            None => {
                tracing::error!(key = ?Key::of(item), "outbox item without a readable event; dropped");
            }
        }
    }
    for (queue, bodies) in QueueName::ALL.into_iter().zip(bodies) {
        if !bodies.is_empty() {
            ports.queues.get(queue).send(bodies).await?;
        }
    }
    // Relayed rows go in transactions of up to 100 deletes (one write for a page, not one
    // per event).
    let deletes: Vec<TxOp> = items
        .iter()
        .filter_map(Key::of)
        .map(|key| TxOp::Delete {
            table: Table::Outbox,
            key,
            condition: None,
        })
        .collect();
    for chunk in deletes.chunks(MAX_TX_OPS) {
        match chunk {
            // A lone row (the stream relay's case) is a plain delete: half the write cost of
            // a transaction in DynamoDB.
            [TxOp::Delete { key, .. }] => {
                ports.items.delete(Table::Outbox, key, None).await?;
            }
            _ => ports.items.transact(chunk.to_vec()).await?,
        }
    }
    metrics::global().outbox_relayed.inc_by(items.len() as u64);
    Ok(items.len())
}
