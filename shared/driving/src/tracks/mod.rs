//! Canonical tracks: one per (game, track name, layout), found or created without a race.
//!
//! Key layout (table `tracks`): every track is an item of the partition `TRACKS` with the track
//! id as sort key, so `GET /v1/tracks` is one paged query. The id is derived from the
//! normalised key, so concurrent first uploads of a track agree on it and the create is an
//! idempotent update (`ADD sessionCount 1`), never a read-then-write.

pub mod centreline;
pub mod jobs;
pub mod maps;

use serde::{Deserialize, Serialize};
use serde_json::{Value, json};
use sha2::{Digest, Sha256};
use time::OffsetDateTime;
use utoipa::ToSchema;

use paddock_kernel::ids::TrackId;
use paddock_kernel::ports::items::{
    Condition, Item, Key, Query, SK, StoreError, TxOp, Update, decode,
};
use paddock_kernel::ports::{Page, Ports};
use paddock_kernel::tables::Table;

const PARTITION: &str = "TRACKS";

// The track item's attribute names, as [`TrackRecord`] spells them (a test checks that they
// agree). The item is only ever written by updates, which name attributes one by one.
const GAME_ID: &str = "gameId";
const NAME: &str = "name";
const LAYOUT: &str = "layout";
const SESSION_COUNT: &str = "sessionCount";
const LAST_SESSION_AT: &str = "lastSessionAt";
const MAP_VERSION: &str = "mapVersion";
const MAP_BLOB: &str = "mapBlob";

/// The track item's attributes (besides its key `TRACKS` / `<track id>`).
///
/// There is no put of a whole track: the first upload creates the item with an update
/// (`ADD sessionCount 1`), so concurrent first uploads need no read, and the map worker moves
/// `mapVersion` and `mapBlob` with a conditional update. This record is how the item reads.
#[derive(Debug, Clone, Default, PartialEq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase")]
struct TrackRecord {
    game_id: String,
    name: String,
    #[serde(default)]
    layout: String,
    /// Sessions uploaded on the track.
    #[serde(default)]
    session_count: i64,
    /// RFC 3339 RecordedAt of the most recent session.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    last_session_at: Option<String>,
    /// How many maps were built (0: none yet).
    #[serde(default)]
    map_version: i64,
    /// The blob of the current map.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    map_blob: Option<String>,
}

impl TrackRecord {
    /// Reads the record of a track item.
    fn from_item(item: Item) -> Result<Self, StoreError> {
        decode(item, "track")
    }
}

/// What identifies a canonical track, as the client spelled it.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct TrackKey {
    /// The game, e.g. `acc`.
    pub game_id: String,
    /// The track as the game names it.
    pub name: String,
    /// The layout; empty for tracks without layouts.
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
    pub fn id(&self) -> TrackId {
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
        TrackId::from(uuid::Uuid::new_v8(bytes))
    }
}

/// A canonical track (`GET /v1/tracks`).
#[derive(Debug, Clone, Serialize, ToSchema)]
#[serde(rename_all = "camelCase")]
pub struct Track {
    /// The id.
    #[schema(value_type = String)]
    pub id: TrackId,
    /// The game, e.g. `acc`.
    pub game_id: String,
    /// The track as the game names it.
    pub name: String,
    /// The layout; empty for tracks without layouts.
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

    /// Reads a track item; its id is its sort key.
    fn from_item(item: Item) -> Result<Self, StoreError> {
        let id = item
            .get(SK)
            .and_then(Value::as_str)
            .and_then(|id| id.parse::<TrackId>().ok())
            .ok_or_else(|| {
                StoreError::Unavailable("corrupt track: no track id as its sort key".into())
            })?;
        let record = TrackRecord::from_item(item)?;
        Ok(Self {
            id,
            game_id: record.game_id,
            name: record.name,
            layout: record.layout,
            session_count: record.session_count,
            last_session_at: record.last_session_at,
            has_map: record.map_version > 0,
        })
    }
}

/// The item key of track `id`.
pub fn key(id: &TrackId) -> Key {
    Key::new(PARTITION, id.as_str())
}

/// The transaction operation that creates the track if needed and counts one more session.
pub fn count_session_op(track: &TrackKey) -> TxOp {
    TxOp::Update {
        table: Table::Tracks,
        key: key(&track.id()),
        update: Update::set(GAME_ID, track.game_id.as_str())
            .and_set(NAME, track.name.as_str())
            .and_set(LAYOUT, track.layout.as_str())
            .and_add(SESSION_COUNT, 1),
        condition: None,
    }
}

/// [`count_session_op`] for a session recorded at `recorded_at`, given the track's item as
/// read before (`read`): when the session is newer than the read `lastSessionAt` (or the
/// track has none), the update moves it forward, conditional on it being still what was read.
/// A DynamoDB update cannot take a maximum: a concurrent upload that moved it meanwhile fails
/// the condition, and the upload reads the track again and retries. An older session leaves
/// it alone, with no condition.
pub fn count_session_at_op(
    track: &TrackKey,
    recorded_at: OffsetDateTime,
    read: Option<&Item>,
) -> TxOp {
    let at = paddock_kernel::ports::clock::rfc3339(recorded_at);
    let last = read
        .and_then(|item| item.get(LAST_SESSION_AT))
        .and_then(Value::as_str);
    let mut op = count_session_op(track);
    if last.is_none_or(|last| last < at.as_str())
        && let TxOp::Update {
            update, condition, ..
        } = &mut op
    {
        update.set.push((LAST_SESSION_AT.into(), json!(at)));
        *condition = Some(match last {
            Some(last) => Condition::eq(LAST_SESSION_AT, last),
            None => Condition::AttrNotExists(LAST_SESSION_AT.into()),
        });
    }
    op
}

/// Track `id`, if any session was uploaded on it.
pub async fn get(ports: &Ports, id: &TrackId) -> Result<Option<Track>, StoreError> {
    ports
        .items
        .get(Table::Tracks, &key(id))
        .await?
        .map(Track::from_item)
        .transpose()
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
    let tracks = items
        .into_iter()
        .map(Track::from_item)
        .collect::<Result<_, _>>()?;
    Ok((tracks, next_cursor))
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
        assert_eq!(a.as_uuid().get_version_num(), 8);
    }

    #[test]
    fn update_attribute_names_are_the_records_fields() {
        let every_field = TrackRecord {
            last_session_at: Some("2024-01-01T00:00:00Z".into()),
            map_blob: Some("tracks/t/map-1-j.json".into()),
            ..TrackRecord::default()
        };
        let Value::Object(fields) = serde_json::to_value(&every_field).unwrap() else {
            panic!("a record is an object");
        };
        let mut fields: Vec<&str> = fields.keys().map(String::as_str).collect();
        let mut names = vec![
            GAME_ID,
            NAME,
            LAYOUT,
            SESSION_COUNT,
            LAST_SESSION_AT,
            MAP_VERSION,
            MAP_BLOB,
        ];
        fields.sort_unstable();
        names.sort_unstable();
        assert_eq!(fields, names);
    }

    #[test]
    fn track_items_read_with_their_id_and_defaults() {
        let written = count_session_op(&TrackKey::new("acc", "Monza", ""));
        let TxOp::Update { key, update, .. } = written else {
            panic!("the count is an update");
        };
        let track = Track::from_item(update.apply(&key, None)).unwrap();
        assert_eq!(track.id.as_str(), key.sk);
        assert_eq!((track.name.as_str(), track.session_count), ("Monza", 1));
        assert_eq!((track.last_session_at, track.has_map), (None, false));
    }
}
