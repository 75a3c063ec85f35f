//! Canonical tracks: one per (game, track name, layout), found or created without a race.
//!
//! Key layout (table `tracks`): every track is an item of the partition `TRACKS` with the track
//! id as sort key, so `GET /v1/tracks` is one paged query. The id is derived from the
//! normalised key, so concurrent first uploads of a track agree on it and the create is an
//! idempotent update (`ADD sessionCount 1`), never a read-then-write.

pub(crate) mod centreline;
pub mod jobs;
pub mod maps;

use serde::Serialize;
use serde_json::{Value, json};
use sha2::{Digest, Sha256};
use time::OffsetDateTime;
use utoipa::ToSchema;

use crate::ports::items::{Condition, Item, Key, Query, StoreError, TxOp, Update};
use crate::ports::{Page, Ports};
use crate::tables::Table;

const PARTITION: &str = "TRACKS";

/// What identifies a canonical track, as the client spelled it.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct TrackKey {
    pub game_id: String,
    pub name: String,
    pub layout: String,
}

impl TrackKey {
    /// A key from the upload's (or query's) fields.
    pub fn new(game_id: &str, name: &str, layout: &str) -> Self {
        Self {
            game_id: game_id.trim().to_owned(),
            name: name.trim().to_owned(),
            layout: layout.trim().to_owned(),
        }
    }

    /// The track id: a UUID (version 8) from the SHA-256 of the normalised key. Case and
    /// runs of whitespace do not matter: "Spa  Francorchamps" and "spa francorchamps" are one
    /// track.
    pub fn id(&self) -> String {
        let normal = |s: &str| {
            s.split_whitespace()
                .collect::<Vec<_>>()
                .join(" ")
                .to_lowercase()
        };
        let mut hash = Sha256::new();
        for part in [&self.game_id, &self.name, &self.layout] {
            hash.update(normal(part).as_bytes());
            hash.update([0x1f]);
        }
        let digest = hash.finalize();
        let mut bytes = [0u8; 16];
        bytes.copy_from_slice(&digest[..16]);
        uuid::Uuid::new_v8(bytes).to_string()
    }
}

/// A canonical track (`GET /v1/tracks`).
#[derive(Debug, Clone, Serialize, ToSchema)]
#[serde(rename_all = "camelCase")]
pub struct Track {
    pub id: String,
    pub game_id: String,
    pub name: String,
    pub layout: String,
    /// Sessions uploaded on this track, by every driver.
    pub session_count: i64,
    /// RFC 3339 time of the most recent session (its RecordedAt).
    pub last_session_at: Option<String>,
    /// Whether a centreline map has been built from track points.
    pub has_map: bool,
}

impl Track {
    /// An unraced track (no item yet).
    pub fn empty(key: &TrackKey) -> Self {
        Self {
            id: key.id(),
            game_id: key.game_id.clone(),
            name: key.name.clone(),
            layout: key.layout.clone(),
            session_count: 0,
            last_session_at: None,
            has_map: false,
        }
    }

    fn from_item(item: &Item) -> Option<Self> {
        let text = |k: &str| item.get(k).and_then(Value::as_str).map(str::to_owned);
        Some(Self {
            id: text("sk")?,
            game_id: text("gameId")?,
            name: text("name")?,
            layout: text("layout").unwrap_or_default(),
            session_count: item
                .get("sessionCount")
                .and_then(Value::as_i64)
                .unwrap_or(0),
            last_session_at: text("lastSessionAt"),
            has_map: item.get("mapVersion").and_then(Value::as_i64).unwrap_or(0) > 0,
        })
    }
}

/// The item key of track `id`.
pub fn key(id: &str) -> Key {
    Key::new(PARTITION, id)
}

/// The transaction operation that creates the track if needed and counts one more session.
pub fn count_session_op(track: &TrackKey) -> TxOp {
    TxOp::Update {
        table: Table::Tracks,
        key: key(&track.id()),
        update: Update::set("gameId", track.game_id.as_str())
            .and_set("name", track.name.as_str())
            .and_set("layout", track.layout.as_str())
            .and_add("sessionCount", 1),
        condition: None,
    }
}

/// Moves the track's `lastSessionAt` forward to `recorded_at` (never back).
///
/// Runs after the upload's transaction: a DynamoDB update cannot take a maximum, and a
/// condition inside the transaction would fail the whole upload when an older session arrives
/// late. A lost race or a crash in between leaves the field older, never wrong data.
pub async fn note_session_time(
    ports: &Ports,
    track_id: &str,
    recorded_at: OffsetDateTime,
) -> Result<(), StoreError> {
    let at = crate::ports::clock::rfc3339(recorded_at);
    let newer = Condition::Or(vec![
        Condition::AttrNotExists("lastSessionAt".into()),
        Condition::Lt("lastSessionAt".into(), json!(at)),
    ]);
    match ports
        .items
        .update(
            Table::Tracks,
            &key(track_id),
            Update::set("lastSessionAt", at.as_str()),
            Some(Condition::And(vec![Condition::Exists, newer])),
        )
        .await
    {
        Ok(_) | Err(StoreError::ConditionFailed { .. }) => Ok(()),
        Err(e) => Err(e),
    }
}

/// Track `id`, if any session was uploaded on it.
pub async fn get(ports: &Ports, id: &str) -> Result<Option<Track>, StoreError> {
    Ok(ports
        .items
        .get(Table::Tracks, &key(id))
        .await?
        .as_ref()
        .and_then(Track::from_item))
}

/// One page of tracks with uploaded sessions.
pub async fn list(
    ports: &Ports,
    limit: usize,
    cursor: Option<String>,
) -> Result<(Vec<Track>, Option<String>), StoreError> {
    let Page { items, next_cursor } = ports
        .items
        .query(
            Query::partition(Table::Tracks, PARTITION)
                .limit(limit)
                .after(cursor),
        )
        .await?;
    Ok((
        items.iter().filter_map(Track::from_item).collect(),
        next_cursor,
    ))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn track_ids_ignore_case_and_spacing_but_not_layout() {
        let a = TrackKey::new("acc", "Spa  Francorchamps", "GP").id();
        let b = TrackKey::new(" ACC", "spa francorchamps ", "gp").id();
        let c = TrackKey::new("acc", "Spa Francorchamps", "").id();
        assert_eq!(a, b);
        assert_ne!(a, c);
        assert!(uuid::Uuid::parse_str(&a).is_ok());
    }
}
