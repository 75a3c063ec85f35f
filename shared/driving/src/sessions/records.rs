//! How sessions are stored, and the caller's reads.

use serde::de::{self, IgnoredAny, SeqAccess, Visitor};
use serde::ser::SerializeSeq;
use serde::{Deserialize, Deserializer, Serialize, Serializer};
use serde_json::Value;
use std::fmt;
use time::OffsetDateTime;
use utoipa::ToSchema;

use super::upload::{Lap, SessionUpload};
use paddock_kernel::ids::{JobId, SessionId, TrackId, UserId};
use paddock_kernel::ports::Ports;
use paddock_kernel::ports::clock::rfc3339;
use paddock_kernel::ports::items::{Item, Key, Query, SK, StoreError, decode, item};
use paddock_kernel::tables::Table;

/// Sort-key prefix of sessions in a user's partition.
pub const SESSION_PREFIX: &str = "SESSION#";
/// Sort-key prefix of idempotency records in a user's partition.
pub const CLIENT_PREFIX: &str = "CLIENT#";

/// The partition of a user's sessions.
pub fn partition(user_id: &UserId) -> String {
    format!("USER#{user_id}")
}

/// The key of session `session_id` of `user_id`.
pub fn session_key(user_id: &UserId, session_id: &SessionId) -> Key {
    Key::new(partition(user_id), format!("{SESSION_PREFIX}{session_id}"))
}

/// The key of the idempotency record of (`user_id`, ClientSessionId).
pub fn client_key(user_id: &UserId, client_session_id: &str) -> Key {
    Key::new(
        partition(user_id),
        format!("{CLIENT_PREFIX}{client_session_id}"),
    )
}

/// A session id for `recorded_at`: a UUIDv7 carrying that time, so ids sort by RecordedAt.
pub fn new_session_id(recorded_at: OffsetDateTime) -> SessionId {
    let nanos = recorded_at.unix_timestamp_nanos();
    let secs = u64::try_from(nanos.div_euclid(1_000_000_000)).unwrap_or(0);
    let subsec = u32::try_from(nanos.rem_euclid(1_000_000_000)).unwrap_or(0);
    SessionId::recorded_at(secs, subsec)
}

/// A lap as stored: `[lapIndex, lapTimeMs, flags, combined, coherence, stability,
/// completeness, penalties, pitstops]`, flags = isValid | countsForSessionTiming << 1 |
/// inPitsAtLapEnd << 2, then `[sector ms, ...]` as a tenth entry only when the lap has sector
/// times (rows of laps without them stay as they were). Rows instead of objects keep a
/// 30-lap session near 1 KB, which is what DynamoDB bills writes by.
#[derive(Debug, Clone, PartialEq)]
pub struct LapRow(pub Lap);

/// Entries of a row before the optional sector times.
const LAP_ROW_ENTRIES: usize = 9;

impl Serialize for LapRow {
    fn serialize<S: Serializer>(&self, serializer: S) -> Result<S::Ok, S::Error> {
        let lap = &self.0;
        let flags = u8::from(lap.is_valid)
            | u8::from(lap.counts_for_session_timing) << 1
            | u8::from(lap.in_pits_at_lap_end) << 2;
        let len = LAP_ROW_ENTRIES + usize::from(lap.sector_times_ms.is_some());
        let mut row = serializer.serialize_seq(Some(len))?;
        row.serialize_element(&lap.lap_index)?;
        row.serialize_element(&lap.lap_time_ms)?;
        row.serialize_element(&flags)?;
        row.serialize_element(&lap.quality_combined)?;
        row.serialize_element(&lap.quality_coherence)?;
        row.serialize_element(&lap.quality_stability)?;
        row.serialize_element(&lap.quality_completeness)?;
        row.serialize_element(&lap.num_penalties)?;
        row.serialize_element(&lap.num_pitstops)?;
        if let Some(sectors) = &lap.sector_times_ms {
            row.serialize_element(sectors)?;
        }
        row.end()
    }
}

impl<'de> Deserialize<'de> for LapRow {
    fn deserialize<D: Deserializer<'de>>(deserializer: D) -> Result<Self, D::Error> {
        deserializer.deserialize_seq(LapRowVisitor)
    }
}

struct LapRowVisitor;

impl LapRowVisitor {
    /// Entry `index` of the row, which must be there.
    fn entry<'de, A, T>(&self, row: &mut A, index: usize) -> Result<T, A::Error>
    where
        A: SeqAccess<'de>,
        T: Deserialize<'de>,
    {
        row.next_element()?
            .ok_or_else(|| de::Error::invalid_length(index, self))
    }
}

impl<'de> Visitor<'de> for LapRowVisitor {
    type Value = LapRow;

    fn expecting(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(
            f,
            "a lap row of {LAP_ROW_ENTRIES} entries, then optionally its sector times"
        )
    }

    fn visit_seq<A: SeqAccess<'de>>(self, mut row: A) -> Result<LapRow, A::Error> {
        let lap_index = self.entry(&mut row, 0)?;
        let lap_time_ms = self.entry(&mut row, 1)?;
        let flags: u8 = self.entry(&mut row, 2)?;
        let quality_combined = self.entry(&mut row, 3)?;
        let quality_coherence = self.entry(&mut row, 4)?;
        let quality_stability = self.entry(&mut row, 5)?;
        let quality_completeness = self.entry(&mut row, 6)?;
        let num_penalties = self.entry(&mut row, 7)?;
        let num_pitstops = self.entry(&mut row, 8)?;
        let sector_times_ms = row.next_element()?;
        // Entries after the known ones are skipped, so rows that a later version extends
        // by appending still read here.
        while row.next_element::<IgnoredAny>()?.is_some() {}
        Ok(LapRow(Lap {
            lap_index,
            lap_time_ms,
            is_valid: flags & 1 != 0,
            counts_for_session_timing: flags & 2 != 0,
            in_pits_at_lap_end: flags & 4 != 0,
            quality_combined,
            quality_coherence,
            quality_stability,
            quality_completeness,
            num_penalties,
            num_pitstops,
            sector_times_ms,
        }))
    }
}

/// The session item's attributes (besides its key `USER#<user>` / `SESSION#<session>`).
#[derive(Debug, Clone, Serialize, Deserialize)]
#[serde(rename_all = "camelCase")]
struct SessionRecord {
    track_id: TrackId,
    game_id: String,
    track_name: String,
    #[serde(default)]
    track_layout: String,
    vehicle_name: String,
    /// RFC 3339, the client's RecordedAt.
    recorded_at: String,
    /// RFC 3339, when the server stored it.
    uploaded_at: String,
    best_lap_ms: i64,
    #[serde(default)]
    weather_summary: String,
    #[serde(default)]
    session_phase: String,
    #[serde(default)]
    client_session_id: String,
    #[serde(default)]
    laps: Vec<LapRow>,
    /// The track-map job of the session's track points; absent when it came without any.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    track_job_id: Option<JobId>,
    /// How many track points came with it; absent with `trackJobId`.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    track_point_count: Option<usize>,
}

/// The session item of an upload.
pub fn session_item(
    user_id: &UserId,
    session_id: &SessionId,
    track_id: &TrackId,
    upload: &SessionUpload,
    job_id: Option<&JobId>,
    now: OffsetDateTime,
) -> Item {
    // The job and the point count are stored together or not at all.
    let (track_job_id, track_point_count) = match (job_id, &upload.track_points) {
        (Some(job), Some(points)) => (Some(job.clone()), Some(points.len())),
        _ => (None, None),
    };
    let record = SessionRecord {
        track_id: track_id.clone(),
        game_id: upload.game_id.clone(),
        track_name: upload.track_name.clone(),
        track_layout: upload.track_layout.clone(),
        vehicle_name: upload.vehicle_name.clone(),
        recorded_at: rfc3339(upload.recorded_at),
        uploaded_at: rfc3339(now),
        best_lap_ms: upload.best_lap_ms,
        weather_summary: upload.weather_summary.clone(),
        session_phase: upload.session_phase.clone(),
        client_session_id: upload.client_session_id.clone(),
        laps: upload.laps.iter().cloned().map(LapRow).collect(),
        track_job_id,
        track_point_count,
    };
    item(
        &session_key(user_id, session_id),
        serde_json::to_value(&record).expect("a session record serialises"),
    )
}

/// The idempotency record of (user, ClientSessionId): what the first upload of it stored,
/// so a repeat answers the same receipt without writing anything.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase")]
pub struct UploadRecord {
    /// The session.
    pub session_id: SessionId,
    /// The canonical track.
    pub track_id: TrackId,
    /// Laps in the session.
    pub lap_count: usize,
}

impl UploadRecord {
    /// The record as the item of (`user_id`, `client_session_id`).
    pub fn to_item(&self, user_id: &UserId, client_session_id: &str) -> Item {
        item(
            &client_key(user_id, client_session_id),
            serde_json::to_value(self).expect("an upload record serialises"),
        )
    }

    /// Reads the record from its item.
    pub fn from_item(item: Item) -> Result<Self, StoreError> {
        decode(item, "upload record")
    }
}

/// A session in the caller's list.
#[derive(Debug, Clone, Serialize, ToSchema)]
#[serde(rename_all = "camelCase")]
pub struct SessionSummary {
    /// The id.
    #[schema(value_type = String)]
    pub id: SessionId,
    /// The canonical track.
    #[schema(value_type = String)]
    pub track_id: TrackId,
    /// The game, e.g. `acc`.
    pub game_id: String,
    /// The track as the game names it.
    pub track_name: String,
    /// The layout; empty for tracks without layouts.
    pub track_layout: String,
    /// The car the lap was set in.
    pub vehicle_name: String,
    /// The client's time of the session (RFC 3339), not the upload time.
    pub recorded_at: String,
    /// When the server received it (RFC 3339).
    pub uploaded_at: String,
    /// Best lap time, milliseconds.
    pub best_lap_ms: i64,
    /// Laps in the session.
    pub lap_count: usize,
    /// Weather context for coaching.
    pub weather_summary: String,
    /// Practice, qualifying, race, ...
    pub session_phase: String,
    /// The idempotency key of the upload.
    pub client_session_id: String,
    /// Whether track points came with it (they feed the track map).
    pub has_track_points: bool,
}

/// A session with its laps.
#[derive(Debug, Clone, Serialize, ToSchema)]
#[serde(rename_all = "camelCase")]
pub struct SessionDetail {
    /// The session without its laps.
    #[serde(flatten)]
    pub summary: SessionSummary,
    /// The laps, in the order uploaded.
    pub laps: Vec<Lap>,
}

/// A stored session, read back.
#[derive(Debug, Clone)]
pub struct StoredSession {
    /// The session without its laps.
    pub summary: SessionSummary,
    /// The laps, in the order uploaded.
    pub laps: Vec<Lap>,
}

impl StoredSession {
    /// Reads a session item; its id is the rest of its sort key.
    pub fn from_item(item: Item) -> Result<Self, StoreError> {
        let id = item
            .get(SK)
            .and_then(Value::as_str)
            .and_then(|sk| sk.strip_prefix(SESSION_PREFIX))
            .and_then(|id| id.parse::<SessionId>().ok())
            .ok_or_else(|| {
                StoreError::Unavailable("corrupt session: no session id in its sort key".into())
            })?;
        let record: SessionRecord = decode(item, "session")?;
        let laps: Vec<Lap> = record.laps.into_iter().map(|row| row.0).collect();
        Ok(Self {
            summary: SessionSummary {
                id,
                track_id: record.track_id,
                game_id: record.game_id,
                track_name: record.track_name,
                track_layout: record.track_layout,
                vehicle_name: record.vehicle_name,
                recorded_at: record.recorded_at,
                uploaded_at: record.uploaded_at,
                best_lap_ms: record.best_lap_ms,
                lap_count: laps.len(),
                weather_summary: record.weather_summary,
                session_phase: record.session_phase,
                client_session_id: record.client_session_id,
                has_track_points: record.track_job_id.is_some(),
            },
            laps,
        })
    }

    /// The session with its laps, as the API shows it.
    pub fn detail(self) -> SessionDetail {
        SessionDetail {
            summary: self.summary,
            laps: self.laps,
        }
    }
}

/// Session `session_id` of `user_id` (another user's session is simply not found).
pub async fn get(
    ports: &Ports,
    user_id: &UserId,
    session_id: &SessionId,
) -> Result<Option<StoredSession>, StoreError> {
    let found = ports
        .items
        .get(Table::Sessions, &session_key(user_id, session_id))
        .await?;
    found.map(StoredSession::from_item).transpose()
}

/// One page of `user_id`'s sessions, newest RecordedAt first.
pub async fn list(
    ports: &Ports,
    user_id: &UserId,
    limit: usize,
    cursor: Option<String>,
) -> Result<(Vec<SessionSummary>, Option<String>), StoreError> {
    let page = ports
        .items
        .query(
            Query::partition(Table::Sessions, partition(user_id))
                .begins_with(SESSION_PREFIX)
                .descending()
                .limit(limit)
                .after(cursor),
        )
        .await?;
    let sessions = page
        .items
        .into_iter()
        .map(|item| StoredSession::from_item(item).map(|s| s.summary))
        .collect::<Result<_, _>>()?;
    Ok((sessions, page.next_cursor))
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    fn lap(sectors: Option<Vec<i64>>) -> Lap {
        Lap {
            lap_index: 3,
            lap_time_ms: 91_500,
            is_valid: true,
            counts_for_session_timing: false,
            quality_combined: 0.95,
            quality_coherence: 0.9,
            quality_stability: 0.85,
            quality_completeness: 1.0,
            num_penalties: 1,
            num_pitstops: 2,
            in_pits_at_lap_end: true,
            sector_times_ms: sectors,
        }
    }

    fn row(lap: &Lap) -> Value {
        serde_json::to_value(LapRow(lap.clone())).unwrap()
    }

    fn from_row(row: Value) -> Option<Lap> {
        serde_json::from_value::<LapRow>(row).ok().map(|r| r.0)
    }

    #[test]
    fn laps_without_sectors_are_stored_as_before_and_sectors_round_trip() {
        let plain = lap(None);
        let stored = row(&plain);
        assert_eq!(stored, json!([3, 91_500, 5, 0.95, 0.9, 0.85, 1.0, 1, 2]));
        assert_eq!(from_row(stored), Some(plain));

        let timed = lap(Some(vec![30_000, 31_000, 30_500]));
        let stored = row(&timed);
        assert_eq!(stored[9], json!([30_000, 31_000, 30_500]));
        assert_eq!(from_row(stored), Some(timed));
    }

    #[test]
    fn short_or_mistyped_lap_rows_do_not_read_and_appended_entries_are_skipped() {
        assert_eq!(
            from_row(json!([3, 91_500, 5, 0.95, 0.9, 0.85, 1.0, 1])),
            None
        );
        assert_eq!(
            from_row(json!([3, "91500", 5, 0.95, 0.9, 0.85, 1.0, 1, 2])),
            None
        );
        assert_eq!(from_row(json!({"lapIndex": 3})), None);
        let extended = json!([3, 91_500, 5, 0.95, 0.9, 0.85, 1.0, 1, 2, [1, 2], "later"]);
        assert_eq!(
            from_row(extended).and_then(|l| l.sector_times_ms),
            Some(vec![1, 2])
        );
    }

    fn upload(track_points: bool) -> SessionUpload {
        let recorded_at = OffsetDateTime::from_unix_timestamp(1_700_000_000).unwrap();
        SessionUpload {
            game_id: "acc".into(),
            track_name: "Monza".into(),
            track_layout: String::new(),
            vehicle_name: "Ferrari 296 GT3".into(),
            recorded_at,
            laps: vec![lap(None)],
            best_lap_ms: 91_500,
            weather_summary: "Dry".into(),
            session_phase: "Race".into(),
            client_session_id: "c-1".into(),
            track_points: track_points.then(|| {
                vec![crate::tracks::centreline::TrackPoint {
                    x: 0.0,
                    y: 0.0,
                    distance: 0.0,
                }]
            }),
        }
    }

    const U1: &str = "5e1f0000-0000-4000-8000-000000000001";
    const S1: &str = "0190a0b2-0000-7000-8000-000000000001";
    const T1: &str = "7a2c0000-0000-8000-8000-000000000001";
    const J1: &str = "0190a0b2-0000-7000-8000-0000000000a1";

    /// The item as every earlier version wrote it: a typed record must not change it.
    #[test]
    fn session_items_keep_their_attributes_and_read_back() {
        let now = OffsetDateTime::from_unix_timestamp(1_700_000_100).unwrap();
        let (user, session, track, job): (UserId, SessionId, TrackId, JobId) = (
            U1.parse().unwrap(),
            S1.parse().unwrap(),
            T1.parse().unwrap(),
            J1.parse().unwrap(),
        );
        let written = session_item(&user, &session, &track, &upload(true), Some(&job), now);
        let expected = json!({
            "pk": format!("USER#{U1}"),
            "sk": format!("SESSION#{S1}"),
            "trackId": T1,
            "gameId": "acc",
            "trackName": "Monza",
            "trackLayout": "",
            "vehicleName": "Ferrari 296 GT3",
            "recordedAt": "2023-11-14T22:13:20Z",
            "uploadedAt": "2023-11-14T22:15:00Z",
            "bestLapMs": 91_500,
            "weatherSummary": "Dry",
            "sessionPhase": "Race",
            "clientSessionId": "c-1",
            "laps": [[3, 91_500, 5, 0.95, 0.9, 0.85, 1.0, 1, 2]],
            "trackJobId": J1,
            "trackPointCount": 1,
        });
        assert_eq!(Value::Object(written.clone()), expected);
        let read = StoredSession::from_item(written).unwrap();
        assert_eq!(read.summary.id, session);
        assert_eq!(read.summary.track_id, track);
        assert_eq!(read.summary.lap_count, 1);
        assert!(read.summary.has_track_points);
        assert_eq!(read.laps, vec![lap(None)]);

        let plain = session_item(&user, &session, &track, &upload(false), Some(&job), now);
        assert!(!plain.contains_key("trackJobId"));
        assert!(!plain.contains_key("trackPointCount"));
        assert!(
            !StoredSession::from_item(plain)
                .unwrap()
                .summary
                .has_track_points
        );
    }

    #[test]
    fn a_session_item_that_does_not_read_is_reported_as_corrupt() {
        let item = paddock_kernel::ports::items::item(
            &session_key(&U1.parse().unwrap(), &S1.parse().unwrap()),
            json!({"trackId": T1}),
        );
        let error = StoredSession::from_item(item).unwrap_err();
        assert!(
            matches!(&error, StoreError::Unavailable(m) if m.starts_with("corrupt session: ")),
            "{error}"
        );
    }

    #[test]
    fn upload_records_keep_their_attributes() {
        let record = UploadRecord {
            session_id: S1.parse().unwrap(),
            track_id: T1.parse().unwrap(),
            lap_count: 30,
        };
        let written = record.to_item(&U1.parse().unwrap(), "c-1");
        assert_eq!(
            Value::Object(written.clone()),
            json!({"pk": format!("USER#{U1}"), "sk": "CLIENT#c-1", "sessionId": S1, "trackId": T1, "lapCount": 30})
        );
        assert_eq!(UploadRecord::from_item(written).unwrap(), record);
    }
}
