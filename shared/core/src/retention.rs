//! Retention: what happens when an item's life ends.
//!
//! Every item with a limited life carries an expiry (`ttl`): feed entries (90 days),
//! exchange codes, sign-in flows, refresh tokens and their families (30 days), rate-limit
//! counters (their window), processed-event markers, finished track jobs (a week), outbox
//! rows, coaching answers, account tombstones, and share packs that are pending (an upload
//! never completed) or being deleted. Reads treat expired items as absent at once; removing
//! them is the store's business, and its cost follows what expired, never what is stored:
//!
//! - **DynamoDB** deletes expired items itself (TTL, enabled on every table). The only thing
//!   that lives outside an expiring item is a share pack's object in S3, so the `sharepacks`
//!   table streams its old images and [`on_ttl_removals`] (the retention function, on that
//!   stream, filtered to TTL's own removals) deletes the objects of each pack TTL removed. It
//!   reads no item: the record carries the old image.
//! - **The embedded store** has no TTL of its own, so [`sweep`] runs on a timer and finds the
//!   expired items through the SQLite index on the expiry column (`items_expiry`), reading
//!   only those.
//!
//! Both are safe to cut short and run again: removing an object that is already gone is a
//! no-op, and a sweep's delete holds only while the item is still expired (an item renewed
//! meanwhile stays), each removal counted by the one sweep that made it.

use std::collections::BTreeMap;

use crate::ports::Ports;
use crate::ports::items::{Item, Key, StoreError};
use crate::tables::Table;

/// Keys read per page.
const PAGE: usize = 500;

/// What one sweep removed, by kind.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct SweepReport {
    /// Items removed, by kind (`feed_entries`, `exchange_codes`, ...).
    pub removed: BTreeMap<&'static str, u64>,
}

impl SweepReport {
    /// Items removed in all.
    pub fn total(&self) -> u64 {
        self.removed.values().sum()
    }

    /// Items of `kind` removed.
    pub fn of(&self, kind: &str) -> u64 {
        self.removed.get(kind).copied().unwrap_or(0)
    }
}

/// The kind of an expired item, by its table and key (a metric label: a small fixed set).
pub fn kind_of(table: Table, key: &Key) -> &'static str {
    let prefix = key.pk.split('#').next().unwrap_or_default();
    match (table, prefix) {
        (Table::Activity, "FEED") => "feed_entries",
        (Table::Activity, "PROCESSED") => "processed_markers",
        (Table::Tokens, "CODE") => "exchange_codes",
        (Table::Tokens, "FLOW") => "sign_in_flows",
        (Table::Tokens, "REFRESH" | "FAMILY" | "USER") => "refresh_tokens",
        (Table::Limits, "KNOWN") => "known_addresses",
        (Table::Limits, _) => "rate_limits",
        (Table::Tracks, _) => "track_jobs",
        (Table::Outbox, _) => "outbox_events",
        (Table::Users, _) => "users_other",
        (Table::Sessions, _) => "sessions_other",
        (Table::Leaderboards, _) => "leaderboards_other",
        (Table::Activity, _) => "activity_other",
        (Table::Sharepacks, "PACK") => "sharepack_uploads",
        (Table::Sharepacks, _) => "sharepacks_other",
        (Table::Tokens, _) => "tokens_other",
        (Table::Coaching, _) => "coaching_answers",
        (Table::Competitions, _) => "competitions_other",
    }
}

/// Removes what lives outside the expired item `key` of `table`: the objects of a share pack
/// that expired pending, checking or deleting (expired, it can never be published): the
/// published object, the upload and the copy held while it was checked. `old` is the item as
/// it was, when known (a stream record's old image): a pack that was ready has no expiry, so
/// an image without one of those states holds nothing to release.
pub async fn release_outside(
    ports: &Ports,
    table: Table,
    key: &Key,
    old: Option<&Item>,
) -> Result<(), StoreError> {
    let (Table::Sharepacks, Some(id)) = (table, key.pk.strip_prefix("PACK#")) else {
        return Ok(());
    };
    // Objects are only ever written under a pack's id: a key that names none has none.
    let Ok(id) = id.parse::<crate::ids::SharePackId>() else {
        return Ok(());
    };
    let state = old.map(|item| item.get("state").and_then(serde_json::Value::as_str));
    if let Some(state) = state
        && !matches!(state, Some("pending" | "checking" | "deleting"))
    {
        return Ok(());
    }
    for object in crate::sharepacks::object_keys(&id) {
        ports.blobs.delete(&object).await.map_err(|e| {
            StoreError::Unavailable(format!("removing an expired pack's object: {e}"))
        })?;
    }
    Ok(())
}

/// An item DynamoDB's TTL removed, as its stream record tells it.
#[derive(Debug, Clone)]
pub struct TtlRemoval {
    /// The table it was in.
    pub table: Table,
    /// Its key.
    pub key: Key,
    /// The item as it was (the record's old image).
    pub old: Item,
}

/// Handles items DynamoDB's TTL removed, in stream order: releases what lived outside each.
/// On a failure, answers the index of the record that failed and what was done before it
/// (the caller reports that record, so the stream resumes from it and nothing before it is
/// handled again).
pub async fn on_ttl_removals(
    ports: &Ports,
    removals: &[TtlRemoval],
) -> Result<SweepReport, (usize, SweepReport, StoreError)> {
    let mut report = SweepReport::default();
    for (index, removal) in removals.iter().enumerate() {
        if let Err(e) =
            release_outside(ports, removal.table, &removal.key, Some(&removal.old)).await
        {
            record(&report);
            return Err((index, report, e));
        }
        *report
            .removed
            .entry(kind_of(removal.table, &removal.key))
            .or_default() += 1;
    }
    record(&report);
    Ok(report)
}

/// Counts removals in the metric.
fn record(report: &SweepReport) {
    for (kind, n) in &report.removed {
        crate::metrics::global()
            .retention_deleted
            .with_label_values(&[kind])
            .inc_by(*n);
    }
}

/// Removes every expired item of every table, found through the store's expiry index (the
/// embedded store; DynamoDB removes its own, see [`on_ttl_removals`]); counts go to the
/// metric and one log line. What it reads follows what expired: each table's expired items,
/// and one empty page per table with none.
pub async fn sweep(ports: &Ports) -> Result<SweepReport, StoreError> {
    let started = std::time::Instant::now();
    let mut report = SweepReport::default();
    for table in Table::ALL {
        let mut cursor = None;
        loop {
            let page = ports.items.scan_expired(table, cursor, PAGE).await?;
            for key in &page.keys {
                release_outside(ports, table, key, None).await?;
                if ports.items.delete_expired(table, key).await? {
                    *report.removed.entry(kind_of(table, key)).or_default() += 1;
                }
            }
            match page.next_cursor {
                Some(next) => cursor = Some(next),
                None => break,
            }
        }
    }
    record(&report);
    tracing::info!(
        removed = report.total(),
        by_kind = ?report.removed,
        elapsed_ms = started.elapsed().as_millis() as u64,
        "retention sweep finished"
    );
    Ok(report)
}
