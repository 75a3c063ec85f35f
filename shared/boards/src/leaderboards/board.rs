//! The item layout of a board: which board (a track's, or one car's on a track), its entries
//! and rank rows, and the driver's index of the boards they are on.

use serde::{Deserialize, Serialize};
use time::OffsetDateTime;

use paddock_driving::sessions::records::SessionSummary;
use paddock_kernel::ids::{EventId, SessionId, TrackId, UserId};
use paddock_kernel::ports::items::{Item, Key, StoreError, decode, item};

/// Sort-key prefix of rank rows.
pub(crate) const RANK_PREFIX: &str = "RANK#";
/// A sort key past every rank row (`~` sorts after the digits of a rank key).
pub const RANK_END: &str = "RANK#~";
/// The attribute of an entry (and its rank row) that holds the rank row's sort key: every
/// change to an entry is conditional on it.
pub(crate) const RANK_KEY: &str = "rankKey";
/// Sort-key prefix of a driver's board index rows (partition `USER#<user id>`): one per
/// board the driver has an entry on, written with the entry, so renames, export and account
/// deletion find the driver's entries without reading every board.
pub const BOARD_INDEX_PREFIX: &str = "BOARD#";
/// Sort-key prefix of a driver's track index rows (partition `USER#<user id>`): one per track
/// board the driver has an entry on, written and removed with the board index row, so that a
/// driver's page reads a page of the driver's tracks without reading the car boards between
/// them in the board index.
pub const TRACK_INDEX_PREFIX: &str = "TRACKBOARD#";
/// What separates the track from the folded vehicle name in a car board's id.
const CAR_SEPARATOR: &str = "#CAR#";
/// What separates the track from the event id in an event's board id.
const EVENT_SEPARATOR: &str = "#EVENT#";

/// What a board of a track ranks. Every kind of board is a variant here; [`boards_for`] says
/// which boards a session's lap goes on.
#[derive(Debug, Clone, PartialEq, Eq, Hash)]
pub enum BoardScope {
    /// One best per driver on the track, whatever the car.
    Track,
    /// Each driver's best in one car, named folded to lower case (names match
    /// case-insensitively).
    Car(String),
    /// The standings of a competition event held on the track: each entrant's best lap
    /// driven in the event's window.
    Event(EventId),
}

/// Which board: a track's, of one scope.
#[derive(Debug, Clone, PartialEq, Eq, Hash)]
pub struct BoardId {
    /// The track.
    pub track: TrackId,
    /// What the board ranks.
    pub scope: BoardScope,
}

/// The boards a lap of `session` goes on, the track's first (its rank is the one a
/// submission answers with).
pub fn boards_for(session: &SessionSummary) -> Vec<BoardId> {
    vec![
        BoardId::track(&session.track_id),
        BoardId::car(&session.track_id, &session.vehicle_name),
    ]
}

impl BoardId {
    /// The board of a track.
    pub fn track(track: &TrackId) -> Self {
        Self {
            track: track.clone(),
            scope: BoardScope::Track,
        }
    }

    /// The board of `vehicle_name` on a track.
    pub fn car(track: &TrackId, vehicle_name: &str) -> Self {
        Self {
            track: track.clone(),
            scope: BoardScope::Car(fold_vehicle(vehicle_name)),
        }
    }

    /// The standings of `event`, held on a track.
    pub fn event(track: &TrackId, event: &EventId) -> Self {
        Self {
            track: track.clone(),
            scope: BoardScope::Event(event.clone()),
        }
    }

    /// The car of a car's board (folded); `None` for the track's board and an event's.
    pub fn vehicle(&self) -> Option<&str> {
        match &self.scope {
            BoardScope::Track | BoardScope::Event(_) => None,
            BoardScope::Car(v) => Some(v),
        }
    }

    /// The partition holding the board's entries, rank rows and counts.
    pub fn partition(&self) -> String {
        format!("{BOARD_INDEX_PREFIX}{}", self.suffix())
    }

    fn suffix(&self) -> String {
        match &self.scope {
            BoardScope::Track => self.track.to_string(),
            BoardScope::Car(v) => format!("{}{CAR_SEPARATOR}{v}", self.track),
            BoardScope::Event(e) => format!("{}{EVENT_SEPARATOR}{e}", self.track),
        }
    }

    /// The key of `user_id`'s entry on this board.
    pub fn entry_key(&self, user_id: &UserId) -> Key {
        Key::new(self.partition(), format!("ENTRY#{user_id}"))
    }

    /// The key of a rank row of this board.
    pub(crate) fn rank_row_key(&self, rank_key: &str) -> Key {
        Key::new(self.partition(), rank_key)
    }

    /// The key of `user_id`'s index row of this board.
    pub(crate) fn index_key(&self, user_id: &UserId) -> Key {
        Key::new(format!("USER#{user_id}"), self.partition())
    }

    /// The key of `user_id`'s track index row of this board; `None` for a car's board.
    pub(crate) fn track_index_key(&self, user_id: &UserId) -> Option<Key> {
        (self.scope == BoardScope::Track).then(|| {
            Key::new(
                format!("USER#{user_id}"),
                format!("{TRACK_INDEX_PREFIX}{}", self.track),
            )
        })
    }

    /// The board an index row's sort key names (the inverse of [`Self::index_key`]).
    pub fn from_index_sk(sk: &str) -> Option<Self> {
        let rest = sk.strip_prefix(BOARD_INDEX_PREFIX)?;
        // A track id holds no `#`: what follows it says the scope.
        let (track, tail) = rest.split_at(rest.find('#').unwrap_or(rest.len()));
        let scope = if tail.is_empty() {
            BoardScope::Track
        } else if let Some(vehicle) = tail.strip_prefix(CAR_SEPARATOR) {
            BoardScope::Car(vehicle.to_owned())
        } else {
            BoardScope::Event(tail.strip_prefix(EVENT_SEPARATOR)?.parse().ok()?)
        };
        Some(Self {
            track: track.parse().ok()?,
            scope,
        })
    }
}

/// A vehicle name as boards match it: case-insensitive.
pub fn fold_vehicle(name: &str) -> String {
    name.trim().to_lowercase()
}

/// The rank sort key: lap time, then submission time, then user (unique).
pub(crate) fn rank_sk(lap_time_ms: i64, submitted_at: OffsetDateTime, user_id: &UserId) -> String {
    let micros = submitted_at.unix_timestamp_nanos() / 1_000;
    format!("{RANK_PREFIX}{lap_time_ms:010}#{micros:016}#{user_id}")
}

/// Where a rank row sits in the rank order: its lap time and submission time.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Position {
    /// Lap time in milliseconds.
    pub ms: i64,
    /// Submission time, microseconds since the epoch.
    pub micros: i64,
}

/// Microseconds in a day.
const DAY_MICROS: i64 = 86_400_000_000;

impl Position {
    /// The position of a rank row's sort key; `None` if it is not one.
    pub fn of(rank_key: &str) -> Option<Self> {
        let rest = rank_key.strip_prefix(RANK_PREFIX)?;
        let mut parts = rest.splitn(3, '#');
        let ms = parts.next().filter(|p| p.len() == 10)?.parse().ok()?;
        let micros = parts.next().filter(|p| p.len() == 16)?.parse().ok()?;
        parts.next().filter(|user| !user.is_empty())?;
        Some(Self { ms, micros })
    }

    /// The submission day (days since the epoch).
    pub(crate) fn day(self) -> i64 {
        self.micros.div_euclid(DAY_MICROS)
    }

    /// The first sort key of the rows with this lap time submitted on this day.
    pub fn day_start_key(self) -> String {
        format!(
            "{RANK_PREFIX}{:010}#{:016}",
            self.ms,
            self.day() * DAY_MICROS
        )
    }
}

/// One ranked entry.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase")]
pub struct Row {
    /// The driver.
    pub user_id: UserId,
    /// The driver's name when the row was last written.
    #[serde(default)]
    pub display_name: String,
    /// Stored as null when the driver has no picture.
    pub avatar_url: Option<String>,
    /// The lap time.
    pub lap_time_ms: i64,
    /// The car of the lap.
    #[serde(default)]
    pub vehicle_name: String,
    /// The session of the lap.
    pub session_id: SessionId,
    /// RFC 3339.
    #[serde(default)]
    pub submitted_at: String,
}

/// An entry or a rank row as stored (besides its key): the row and the rank row's sort key.
/// The entry and its rank row carry the same attributes.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase")]
pub struct StoredRow {
    /// The row as a board shows it.
    #[serde(flatten)]
    pub row: Row,
    /// The sort key of the entry's rank row (see [`RANK_KEY`]).
    pub rank_key: String,
    /// The version of the driver's profile whose name and avatar the row shows.
    #[serde(default)]
    pub profile_version: i64,
    /// Whether the board's counts include this entry ([`super::rank_counts`]). Entries
    /// written before the counts existed lack it until the backfill counts them.
    #[serde(default)]
    pub counted: bool,
}

impl StoredRow {
    /// The item of this row under `key` (the entry's key, or the rank row's).
    pub(crate) fn to_item(&self, key: &Key) -> Item {
        item(
            key,
            serde_json::to_value(self).expect("a leaderboard row serialises"),
        )
    }

    /// The rank row item of this entry on `board`.
    pub(crate) fn rank_item(&self, board: &BoardId) -> Item {
        self.to_item(&board.rank_row_key(&self.rank_key))
    }

    /// Reads an entry or a rank row.
    pub fn from_item(item: Item) -> Result<Self, StoreError> {
        decode(item, "leaderboard row")
    }

    /// Where the row sits in the rank order.
    pub fn position(&self) -> Result<Position, StoreError> {
        Position::of(&self.rank_key)
            .ok_or_else(|| StoreError::Invalid(format!("not a rank key: {}", self.rank_key)))
    }
}

/// RFC 3339 with microseconds (what the rank key orders by).
pub(crate) fn submitted_at(now: OffsetDateTime) -> String {
    let micros = now.replace_nanosecond(now.nanosecond() / 1_000 * 1_000);
    paddock_kernel::ports::clock::rfc3339(micros.unwrap_or(now))
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::{Value, json};

    const U1: &str = "5e1f0000-0000-4000-8000-000000000001";
    const S1: &str = "0190a0b2-0000-7000-8000-000000000001";
    const T1: &str = "7a2c0000-0000-8000-8000-000000000001";

    fn stored(avatar_url: Option<&str>) -> StoredRow {
        StoredRow {
            row: Row {
                user_id: U1.parse().unwrap(),
                display_name: "Driver".into(),
                avatar_url: avatar_url.map(str::to_owned),
                lap_time_ms: 91_500,
                vehicle_name: "Ferrari 296 GT3".into(),
                session_id: S1.parse().unwrap(),
                submitted_at: "2023-11-14T22:13:20.000001Z".into(),
            },
            rank_key: format!("RANK#0000091500#1700000000000001#{U1}"),
            profile_version: 2,
            counted: true,
        }
    }

    #[test]
    fn rows_keep_their_attributes_and_read_back() {
        let row = stored(None);
        let board = BoardId::track(&T1.parse().unwrap());
        let written = row.rank_item(&board);
        assert_eq!(
            Value::Object(written.clone()),
            json!({
                "pk": format!("BOARD#{T1}"), "sk": format!("RANK#0000091500#1700000000000001#{U1}"),
                "userId": U1, "displayName": "Driver", "avatarUrl": null,
                "lapTimeMs": 91_500, "vehicleName": "Ferrari 296 GT3", "sessionId": S1,
                "submittedAt": "2023-11-14T22:13:20.000001Z",
                "rankKey": format!("RANK#0000091500#1700000000000001#{U1}"), "profileVersion": 2,
                "counted": true,
            })
        );
        assert_eq!(written.get(RANK_KEY), Some(&json!(row.rank_key)));
        assert_eq!(StoredRow::from_item(written).unwrap(), row);

        let entry = stored(Some("https://example.com/a.png"));
        let key = board.entry_key(&entry.row.user_id);
        assert_eq!(key.sk, format!("ENTRY#{U1}"));
        assert_eq!(StoredRow::from_item(entry.to_item(&key)).unwrap(), entry);
    }

    #[test]
    fn rows_written_before_the_counts_read_as_uncounted() {
        let mut item =
            stored(None).to_item(&Key::new(format!("BOARD#{T1}"), format!("ENTRY#{U1}")));
        item.remove("counted");
        assert!(!StoredRow::from_item(item).unwrap().counted);
    }

    #[test]
    fn car_boards_have_their_own_partition_and_index_row() {
        let track: TrackId = "5f0c7d4e-0000-4000-8000-000000000001".parse().unwrap();
        let car = BoardId::car(&track, "  Ferrari 296 GT3 ");
        assert_eq!(
            car.partition(),
            "BOARD#5f0c7d4e-0000-4000-8000-000000000001#CAR#ferrari 296 gt3"
        );
        let user: UserId = U1.parse().unwrap();
        let index = car.index_key(&user);
        assert_eq!(index.pk, format!("USER#{U1}"));
        assert_eq!(BoardId::from_index_sk(&index.sk), Some(car));
        let board = BoardId::track(&track);
        assert_eq!(
            BoardId::from_index_sk(&board.index_key(&user).sk),
            Some(board)
        );
        let event: EventId = "7c9e6679-7425-40de-944b-e07fc1f90ae7".parse().unwrap();
        let standings = BoardId::event(&track, &event);
        assert_eq!(
            standings.partition(),
            "BOARD#5f0c7d4e-0000-4000-8000-000000000001#EVENT#7c9e6679-7425-40de-944b-e07fc1f90ae7"
        );
        assert_eq!(standings.vehicle(), None);
        assert_eq!(
            BoardId::from_index_sk(&standings.index_key(&user).sk),
            Some(standings)
        );
        let unknown = format!("{BOARD_INDEX_PREFIX}{track}#LEAGUE#x");
        assert_eq!(BoardId::from_index_sk(&unknown), None);
        assert_eq!(BoardId::from_index_sk("SESSION#x"), None);
        let malformed = format!("{BOARD_INDEX_PREFIX}t1");
        assert_eq!(BoardId::from_index_sk(&malformed), None);
    }

    #[test]
    fn positions_come_from_rank_keys() {
        let p = Position::of("RANK#0000091500#1700000000000001#u1").unwrap();
        assert_eq!(p.ms, 91_500);
        assert_eq!(p.micros, 1_700_000_000_000_001);
        assert_eq!(p.day(), 19_675);
        assert_eq!(p.day_start_key(), "RANK#0000091500#1699920000000000");
        assert!(p.day_start_key().as_str() < "RANK#0000091500#1700000000000001#u1");
        for bad in [
            "RANK#91500#1700000000000001#u1",
            "RANK#0000091500#1700000000000001#",
            "ENTRY#u1",
            "RANK#00000915x0#1700000000000001#u1",
        ] {
            assert_eq!(Position::of(bad), None, "{bad}");
        }
    }
}
