//! How sessions are stored, and the caller's reads.

use serde::Serialize;
use serde_json::{Value, json};
use time::OffsetDateTime;
use utoipa::ToSchema;

use super::upload::{Lap, SessionUpload};
use crate::ports::Ports;
use crate::ports::clock::rfc3339;
use crate::ports::items::{Item, Key, Query, StoreError, item};
use crate::tables::Table;

/// The partition of a user's sessions.
pub fn partition(user_id: &str) -> String {
    format!("USER#{user_id}")
}

/// The key of session `session_id` of `user_id`.
pub fn session_key(user_id: &str, session_id: &str) -> Key {
    Key::new(partition(user_id), format!("SESSION#{session_id}"))
}

/// The key of the idempotency record of (`user_id`, ClientSessionId).
pub fn client_key(user_id: &str, client_session_id: &str) -> Key {
    Key::new(partition(user_id), format!("CLIENT#{client_session_id}"))
}

/// A session id for `recorded_at`: a UUIDv7 carrying that time, so ids sort by RecordedAt.
pub fn new_session_id(recorded_at: OffsetDateTime) -> String {
    let nanos = recorded_at.unix_timestamp_nanos();
    let secs = u64::try_from(nanos.div_euclid(1_000_000_000)).unwrap_or(0);
    let subsec = u32::try_from(nanos.rem_euclid(1_000_000_000)).unwrap_or(0);
    uuid::Uuid::new_v7(uuid::Timestamp::from_unix(uuid::NoContext, secs, subsec)).to_string()
}

/// A lap as stored: `[lapIndex, lapTimeMs, flags, combined, coherence, stability,
/// completeness, penalties, pitstops]`, flags = isValid | countsForSessionTiming << 1 |
/// inPitsAtLapEnd << 2, then `[sector ms, ...]` as a tenth entry only when the lap has sector
/// times (rows of laps without them stay as they were). Rows instead of objects keep a
/// 30-lap session near 1 KB, which is what DynamoDB bills writes by.
fn lap_row(lap: &Lap) -> Value {
    let flags = u8::from(lap.is_valid)
        | u8::from(lap.counts_for_session_timing) << 1
        | u8::from(lap.in_pits_at_lap_end) << 2;
    let mut row = json!([
        lap.lap_index,
        lap.lap_time_ms,
        flags,
        lap.quality_combined,
        lap.quality_coherence,
        lap.quality_stability,
        lap.quality_completeness,
        lap.num_penalties,
        lap.num_pitstops
    ]);
    if let (Some(sectors), Value::Array(entries)) = (&lap.sector_times_ms, &mut row) {
        entries.push(json!(sectors));
    }
    row
}

fn lap_from_row(row: &Value) -> Option<Lap> {
    let r = row.as_array()?;
    let int = |i: usize| r.get(i).and_then(Value::as_i64);
    let num = |i: usize| r.get(i).and_then(Value::as_f64);
    let flags = int(2)?;
    Some(Lap {
        lap_index: u32::try_from(int(0)?).ok()?,
        lap_time_ms: int(1)?,
        is_valid: flags & 1 != 0,
        counts_for_session_timing: flags & 2 != 0,
        in_pits_at_lap_end: flags & 4 != 0,
        quality_combined: num(3)?,
        quality_coherence: num(4)?,
        quality_stability: num(5)?,
        quality_completeness: num(6)?,
        num_penalties: u32::try_from(int(7)?).ok()?,
        num_pitstops: u32::try_from(int(8)?).ok()?,
        sector_times_ms: match r.get(9) {
            None => None,
            Some(sectors) => Some(
                sectors
                    .as_array()?
                    .iter()
                    .map(Value::as_i64)
                    .collect::<Option<Vec<_>>>()?,
            ),
        },
    })
}

/// The session item of an upload.
pub fn session_item(
    user_id: &str,
    session_id: &str,
    track_id: &str,
    upload: &SessionUpload,
    job_id: Option<&str>,
    now: OffsetDateTime,
) -> Item {
    let mut attributes = json!({
        "trackId": track_id,
        "gameId": upload.game_id,
        "trackName": upload.track_name,
        "trackLayout": upload.track_layout,
        "vehicleName": upload.vehicle_name,
        "recordedAt": rfc3339(upload.recorded_at),
        "uploadedAt": rfc3339(now),
        "bestLapMs": upload.best_lap_ms,
        "weatherSummary": upload.weather_summary,
        "sessionPhase": upload.session_phase,
        "clientSessionId": upload.client_session_id,
        "laps": upload.laps.iter().map(lap_row).collect::<Vec<_>>(),
    });
    if let (Some(job), Some(points)) = (job_id, &upload.track_points) {
        attributes["trackJobId"] = json!(job);
        attributes["trackPointCount"] = json!(points.len());
    }
    item(&session_key(user_id, session_id), attributes)
}

/// A session in the caller's list.
#[derive(Debug, Clone, Serialize, ToSchema)]
#[serde(rename_all = "camelCase")]
pub struct SessionSummary {
    pub id: String,
    pub track_id: String,
    pub game_id: String,
    pub track_name: String,
    pub track_layout: String,
    pub vehicle_name: String,
    /// The client's time of the session (RFC 3339), not the upload time.
    pub recorded_at: String,
    /// When the server received it (RFC 3339).
    pub uploaded_at: String,
    pub best_lap_ms: i64,
    pub lap_count: usize,
    pub weather_summary: String,
    pub session_phase: String,
    pub client_session_id: String,
    /// Whether track points came with it (they feed the track map).
    pub has_track_points: bool,
}

/// A session with its laps.
#[derive(Debug, Clone, Serialize, ToSchema)]
#[serde(rename_all = "camelCase")]
pub struct SessionDetail {
    #[serde(flatten)]
    pub summary: SessionSummary,
    pub laps: Vec<Lap>,
}

/// A stored session, read back.
#[derive(Debug, Clone)]
pub struct StoredSession {
    pub summary: SessionSummary,
    pub laps: Vec<Lap>,
}

impl StoredSession {
    fn from_item(item: &Item) -> Option<Self> {
        let text = |k: &str| item.get(k).and_then(Value::as_str).map(str::to_owned);
        let laps: Vec<Lap> = item
            .get("laps")
            .and_then(Value::as_array)
            .map(|rows| rows.iter().filter_map(lap_from_row).collect())
            .unwrap_or_default();
        let id = text("sk")?.strip_prefix("SESSION#")?.to_owned();
        Some(Self {
            summary: SessionSummary {
                id,
                track_id: text("trackId")?,
                game_id: text("gameId")?,
                track_name: text("trackName")?,
                track_layout: text("trackLayout").unwrap_or_default(),
                vehicle_name: text("vehicleName")?,
                recorded_at: text("recordedAt")?,
                uploaded_at: text("uploadedAt")?,
                best_lap_ms: item.get("bestLapMs").and_then(Value::as_i64)?,
                lap_count: laps.len(),
                weather_summary: text("weatherSummary").unwrap_or_default(),
                session_phase: text("sessionPhase").unwrap_or_default(),
                client_session_id: text("clientSessionId").unwrap_or_default(),
                has_track_points: item.contains_key("trackJobId"),
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
    user_id: &str,
    session_id: &str,
) -> Result<Option<StoredSession>, StoreError> {
    let found = ports
        .items
        .get(Table::Sessions, &session_key(user_id, session_id))
        .await?;
    Ok(found.as_ref().and_then(StoredSession::from_item))
}

/// One page of `user_id`'s sessions, newest RecordedAt first.
pub async fn list(
    ports: &Ports,
    user_id: &str,
    limit: usize,
    cursor: Option<String>,
) -> Result<(Vec<SessionSummary>, Option<String>), StoreError> {
    let page = ports
        .items
        .query(
            Query::partition(Table::Sessions, partition(user_id))
                .begins_with("SESSION#")
                .descending()
                .limit(limit)
                .after(cursor),
        )
        .await?;
    let sessions = page
        .items
        .iter()
        .filter_map(StoredSession::from_item)
        .map(|s| s.summary)
        .collect();
    Ok((sessions, page.next_cursor))
}

#[cfg(test)]
mod tests {
    use super::*;

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

    #[test]
    fn laps_without_sectors_are_stored_as_before_and_sectors_round_trip() {
        let plain = lap(None);
        let row = lap_row(&plain);
        assert_eq!(row, json!([3, 91_500, 5, 0.95, 0.9, 0.85, 1.0, 1, 2]));
        assert_eq!(lap_from_row(&row), Some(plain));

        let timed = lap(Some(vec![30_000, 31_000, 30_500]));
        let row = lap_row(&timed);
        assert_eq!(row[9], json!([30_000, 31_000, 30_500]));
        assert_eq!(lap_from_row(&row), Some(timed));
    }
}
