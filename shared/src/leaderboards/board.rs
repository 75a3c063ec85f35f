//! Reading a board, and the item layout of entries and rank rows.

use serde_json::{Value, json};
use time::OffsetDateTime;

use crate::ports::Ports;
use crate::ports::items::{Item, Key, Query, StoreError, item};
use crate::tables::Table;

/// The partition of a track's board.
pub(crate) fn partition(track_id: &str) -> String {
    format!("BOARD#{track_id}")
}

/// The key of a user's entry on a track.
pub(crate) fn entry_key(track_id: &str, user_id: &str) -> Key {
    Key::new(partition(track_id), format!("ENTRY#{user_id}"))
}

/// The rank sort key: lap time, then submission time, then user (unique).
pub(crate) fn rank_sk(lap_time_ms: i64, submitted_at: OffsetDateTime, user_id: &str) -> String {
    let micros = submitted_at.unix_timestamp_nanos() / 1_000;
    format!("RANK#{lap_time_ms:010}#{micros:016}#{user_id}")
}

/// One ranked entry.
#[derive(Debug, Clone, PartialEq)]
pub struct Row {
    pub user_id: String,
    pub display_name: String,
    pub avatar_url: Option<String>,
    pub lap_time_ms: i64,
    pub vehicle_name: String,
    pub session_id: String,
    /// RFC 3339.
    pub submitted_at: String,
}

impl Row {
    /// The attributes stored on both the entry and its rank row.
    pub fn attributes(&self, rank_key: &str) -> Value {
        json!({
            "userId": self.user_id,
            "displayName": self.display_name,
            "avatarUrl": self.avatar_url,
            "lapTimeMs": self.lap_time_ms,
            "vehicleName": self.vehicle_name,
            "sessionId": self.session_id,
            "submittedAt": self.submitted_at,
            "rankKey": rank_key,
        })
    }

    /// The rank row item of this entry.
    pub fn rank_item(&self, track_id: &str, rank_key: &str) -> Item {
        item(
            &Key::new(partition(track_id), rank_key),
            self.attributes(rank_key),
        )
    }

    /// Reads an entry or a rank row.
    pub fn from_item(item: &Item) -> Option<Self> {
        let text = |k: &str| item.get(k).and_then(Value::as_str).map(str::to_owned);
        Some(Self {
            user_id: text("userId")?,
            display_name: text("displayName").unwrap_or_default(),
            avatar_url: text("avatarUrl"),
            lap_time_ms: item.get("lapTimeMs").and_then(Value::as_i64)?,
            vehicle_name: text("vehicleName").unwrap_or_default(),
            session_id: text("sessionId").unwrap_or_default(),
            submitted_at: text("submittedAt").unwrap_or_default(),
        })
    }
}

/// RFC 3339 with microseconds (what the rank key orders by).
pub(crate) fn submitted_at(now: OffsetDateTime) -> String {
    let micros = now.replace_nanosecond(now.nanosecond() / 1_000 * 1_000);
    crate::ports::clock::rfc3339(micros.unwrap_or(now))
}

/// A whole board in rank order.
#[derive(Debug, Clone, Default)]
pub struct Board {
    pub rows: Vec<Row>,
}

impl Board {
    /// Reads the board of `track_id` (every rank row, page by page).
    pub async fn load(ports: &Ports, track_id: &str) -> Result<Self, StoreError> {
        let mut rows = Vec::new();
        let mut cursor = None;
        loop {
            let page = ports
                .items
                .query(
                    Query::partition(Table::Leaderboards, partition(track_id))
                        .begins_with("RANK#")
                        .limit(1_000)
                        .after(cursor),
                )
                .await?;
            rows.extend(page.items.iter().filter_map(Row::from_item));
            match page.next_cursor {
                Some(next) => cursor = Some(next),
                None => break,
            }
        }
        Ok(Self { rows })
    }

    /// The 1-based rank of `user_id`, if on the board.
    pub fn rank_of(&self, user_id: &str) -> Option<usize> {
        self.rows
            .iter()
            .position(|r| r.user_id == user_id)
            .map(|i| i + 1)
    }
}
