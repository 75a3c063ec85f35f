//! The retention sweep: removes what is past its life.
//!
//! Every item with a limited life carries an expiry (`ttl`): feed entries (90 days),
//! exchange codes, sign-in flows, refresh tokens and their families (30 days), rate-limit
//! counters (their window), processed-event markers, finished track jobs (a week), outbox
//! rows. Reads already treat expired items as absent, and DynamoDB's TTL deletes them, but
//! lazily (up to days later); this sweep removes the rest. It runs on a timer locally and on
//! an EventBridge schedule in AWS.
//!
//! Safe to run twice at once: each delete holds only while the item is still expired, so an
//! item renewed meanwhile stays, and each removal is counted by the one sweep that made it.

use std::collections::BTreeMap;

use crate::ports::Ports;
use crate::ports::items::{Key, StoreError};
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
    }
}

/// Removes every expired item of every table; counts go to the metric and one log line.
pub async fn sweep(ports: &Ports) -> Result<SweepReport, StoreError> {
    let started = std::time::Instant::now();
    let mut report = SweepReport::default();
    for table in Table::ALL {
        let mut cursor = None;
        loop {
            let page = ports.items.scan_expired(table, cursor, PAGE).await?;
            for key in &page.keys {
                // A pack that expired pending (never completed, or its publisher crashed)
                // takes its object with it; expired, it can never be published.
                if let (Table::Sharepacks, Some(id)) = (table, key.pk.strip_prefix("PACK#")) {
                    for object in crate::sharepacks::object_keys(id) {
                        ports.blobs.delete(&object).await.map_err(|e| {
                            StoreError::Unavailable(format!("removing an unfinished pack: {e}"))
                        })?;
                    }
                }
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
    for (kind, n) in &report.removed {
        crate::metrics::global()
            .retention_deleted
            .with_label_values(&[kind])
            .inc_by(*n);
    }
    tracing::info!(
        removed = report.total(),
        by_kind = ?report.removed,
        elapsed_ms = started.elapsed().as_millis() as u64,
        "retention sweep finished"
    );
    Ok(report)
}
