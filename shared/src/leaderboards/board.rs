//! Reading a board, and the item layout of entries and rank rows.

use serde::{Deserialize, Serialize};
use time::OffsetDateTime;

use crate::ids::{SessionId, TrackId, UserId};
use crate::ports::Ports;
use crate::ports::items::{Item, Key, Query, StoreError, check_advances, decode, item};
use crate::tables::Table;

/// Sort-key prefix of rank rows.
const RANK_PREFIX: &str = "RANK#";
/// The attribute of an entry (and its rank row) that holds the rank row's sort key: every
/// change to an entry is conditional on it.
pub(crate) const RANK_KEY: &str = "rankKey";

/// The partition of a track's board.
pub(crate) fn partition(track_id: &TrackId) -> String {
    format!("BOARD#{track_id}")
}

/// Sort-key prefix of a driver's board index rows (partition `USER#<user id>`): one per
/// board the driver has an entry on, written with the entry, so renames, export and account
/// deletion find the driver's entries without reading every board.
pub(crate) const BOARD_INDEX_PREFIX: &str = "BOARD#";

/// The key of `user_id`'s index row of `track_id`'s board.
pub(crate) fn board_index_key(user_id: &UserId, track_id: &TrackId) -> Key {
    Key::new(
        format!("USER#{user_id}"),
        format!("{BOARD_INDEX_PREFIX}{track_id}"),
    )
}

/// The key of a user's entry on a track.
pub(crate) fn entry_key(track_id: &TrackId, user_id: &UserId) -> Key {
    Key::new(partition(track_id), format!("ENTRY#{user_id}"))
}

/// The rank sort key: lap time, then submission time, then user (unique).
pub(crate) fn rank_sk(lap_time_ms: i64, submitted_at: OffsetDateTime, user_id: &UserId) -> String {
    let micros = submitted_at.unix_timestamp_nanos() / 1_000;
    format!("{RANK_PREFIX}{lap_time_ms:010}#{micros:016}#{user_id}")
}

/// One ranked entry.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase")]
pub struct Row {
    pub user_id: UserId,
    #[serde(default)]
    pub display_name: String,
    /// Stored as null when the driver has no picture.
    pub avatar_url: Option<String>,
    pub lap_time_ms: i64,
    #[serde(default)]
    pub vehicle_name: String,
    pub session_id: SessionId,
    /// RFC 3339.
    #[serde(default)]
    pub submitted_at: String,
}

/// An entry or a rank row as stored (besides its key): the row and the rank row's sort key.
/// The entry and its rank row carry the same attributes.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase")]
pub(crate) struct StoredRow {
    #[serde(flatten)]
    pub row: Row,
    /// The sort key of the entry's rank row (see [`RANK_KEY`]).
    pub rank_key: String,
    /// The version of the driver's profile whose name and avatar the row shows.
    #[serde(default)]
    pub profile_version: i64,
}

impl StoredRow {
    /// The item of this row under `key` (the entry's key, or the rank row's).
    pub(crate) fn to_item(&self, key: &Key) -> Item {
        item(
            key,
            serde_json::to_value(self).expect("a leaderboard row serialises"),
        )
    }

    /// The rank row item of this entry on `track_id`'s board.
    pub(crate) fn rank_item(&self, track_id: &TrackId) -> Item {
        self.to_item(&Key::new(partition(track_id), self.rank_key.as_str()))
    }

    /// Reads an entry or a rank row.
    pub(crate) fn from_item(item: Item) -> Result<Self, StoreError> {
        decode(item, "leaderboard row")
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
    pub async fn load(ports: &Ports, track_id: &TrackId) -> Result<Self, StoreError> {
        let mut rows = Vec::new();
        let mut cursor = None;
        loop {
            let page = ports
                .items
                .query(
                    Query::partition(Table::Leaderboards, partition(track_id))
                        .begins_with(RANK_PREFIX)
                        .limit(1_000)
                        .after(cursor.clone()),
                )
                .await?;
            for item in page.items {
                rows.push(StoredRow::from_item(item)?.row);
            }
            match page.next_cursor {
                Some(next) => {
                    check_advances(cursor.as_deref(), &next)?;
                    cursor = Some(next);
                }
                None => break,
            }
        }
        Ok(Self { rows })
    }

    /// The rank `user_id` gets with a new best of `lap_time_ms`: behind every other driver
    /// as fast or faster (an equal time submitted earlier ranks first).
    pub fn rank_with(&self, user_id: &UserId, lap_time_ms: i64) -> usize {
        1 + self
            .rows
            .iter()
            .filter(|r| &r.user_id != user_id && r.lap_time_ms <= lap_time_ms)
            .count()
    }

    /// The board after `row` replaced its driver's entry.
    #[must_use]
    pub fn with_row(mut self, row: Row) -> Self {
        self.rows.retain(|r| r.user_id != row.user_id);
        let at = self.rank_with(&row.user_id, row.lap_time_ms) - 1;
        self.rows.insert(at, row);
        self
    }

    /// The 1-based rank of `user_id`, if on the board.
    pub fn rank_of(&self, user_id: &UserId) -> Option<usize> {
        self.rows
            .iter()
            .position(|r| &r.user_id == user_id)
            .map(|i| i + 1)
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::{Value, json};

    fn stored(avatar_url: Option<&str>) -> StoredRow {
        StoredRow {
            row: Row {
                user_id: UserId::from("u1"),
                display_name: "Driver".into(),
                avatar_url: avatar_url.map(str::to_owned),
                lap_time_ms: 91_500,
                vehicle_name: "Ferrari 296 GT3".into(),
                session_id: SessionId::from("s1"),
                submitted_at: "2023-11-14T22:13:20.000001Z".into(),
            },
            rank_key: "RANK#0000091500#1700000000000001#u1".into(),
            profile_version: 2,
        }
    }

    #[test]
    fn rows_keep_their_attributes_and_read_back() {
        let row = stored(None);
        let track = TrackId::from("t1");
        let written = row.rank_item(&track);
        assert_eq!(
            Value::Object(written.clone()),
            json!({
                "pk": "BOARD#t1", "sk": "RANK#0000091500#1700000000000001#u1",
                "userId": "u1", "displayName": "Driver", "avatarUrl": null,
                "lapTimeMs": 91_500, "vehicleName": "Ferrari 296 GT3", "sessionId": "s1",
                "submittedAt": "2023-11-14T22:13:20.000001Z",
                "rankKey": "RANK#0000091500#1700000000000001#u1", "profileVersion": 2,
            })
        );
        assert_eq!(written.get(RANK_KEY), Some(&json!(row.rank_key)));
        assert_eq!(StoredRow::from_item(written).unwrap(), row);

        let entry = stored(Some("https://example.com/a.png"));
        let key = entry_key(&track, &entry.row.user_id);
        assert_eq!(key.sk, "ENTRY#u1");
        assert_eq!(StoredRow::from_item(entry.to_item(&key)).unwrap(), entry);
    }
}
