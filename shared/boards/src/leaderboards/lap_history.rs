//! A driver's submitted laps on a track, one row per submission, for the progress chart on
//! the driver's public page.
//!
//! Only laps the driver submitted to a board are kept here: a session's other laps stay as
//! private as the session. The row is written in the submission's transaction, so a lap is
//! recorded exactly when it reached the board (a retried submission writes the same key).
//!
//! Key layout (table `leaderboards`, partition `USER#<user id>`): sort key
//! `LAP#<track id>#<session time, Unix seconds, 11 digits>#<session id>#<lap ms, 10 digits>`.
//! Ordered by the session's time, so the latest sessions of a track are one query from the
//! end; a session with more than one lap submitted keeps each, and the chart takes its
//! fastest.

use serde::{Deserialize, Serialize};
use time::OffsetDateTime;

use paddock_kernel::ids::{SessionId, TrackId, UserId};
use paddock_kernel::ports::Ports;
use paddock_kernel::ports::clock::rfc3339;
use paddock_kernel::ports::items::{Key, Query, StoreError, TxOp, decode, item};
use paddock_kernel::tables::Table;

/// The sort key prefix of every lap history row.
pub const LAP_HISTORY_PREFIX: &str = "LAP#";

/// Rows read for one track's chart: the latest sessions, whatever the history's length.
pub const CHART_ROWS: usize = 24;

/// One submitted lap of a session.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase")]
pub struct LapPoint {
    /// The session the lap belongs to.
    pub session_id: SessionId,
    /// The session's time (RFC 3339, UTC): when it was driven, never after its submission.
    pub session_at: String,
    /// The lap time, milliseconds.
    pub lap_time_ms: i64,
    /// The car.
    pub vehicle_name: String,
}

/// The partition of `user`'s rows.
fn partition(user: &UserId) -> String {
    format!("USER#{user}")
}

/// The sort key prefix of `user`'s rows on `track`.
fn track_prefix(track: &TrackId) -> String {
    format!("{LAP_HISTORY_PREFIX}{track}#")
}

/// The write that records a submitted lap, for the submission's transaction. The session's
/// time is the client's, taken no later than `now`, so a clock set ahead cannot move a point
/// past the present.
pub(crate) fn record_op(
    user: &UserId,
    track: &TrackId,
    session_id: &SessionId,
    recorded_at: &str,
    vehicle_name: &str,
    lap_time_ms: i64,
    now: OffsetDateTime,
) -> TxOp {
    let at = OffsetDateTime::parse(recorded_at, &time::format_description::well_known::Rfc3339)
        .map_or(now, |t| t.min(now));
    let sk = format!(
        "{}{:011}#{session_id}#{:010}",
        track_prefix(track),
        at.unix_timestamp().max(0),
        lap_time_ms.max(0)
    );
    let point = LapPoint {
        session_id: session_id.clone(),
        session_at: rfc3339(at),
        lap_time_ms,
        vehicle_name: vehicle_name.to_owned(),
    };
    TxOp::Put {
        table: Table::Leaderboards,
        item: item(
            &Key::new(partition(user), sk),
            serde_json::to_value(point).unwrap_or_default(),
        ),
        condition: None,
    }
}

/// The fastest submitted lap of each of `user`'s latest sessions on `track` (at most
/// [`CHART_ROWS`] rows read), oldest first.
pub async fn latest(
    ports: &Ports,
    user: &UserId,
    track: &TrackId,
) -> Result<Vec<LapPoint>, StoreError> {
    let query = Query::partition(Table::Leaderboards, partition(user))
        .begins_with(track_prefix(track))
        .descending()
        .limit(CHART_ROWS);
    let page = ports.items.query(query).await?;
    let rows = page
        .items
        .into_iter()
        .rev()
        .map(|row| decode(row, "lap history row"))
        .collect::<Result<Vec<LapPoint>, _>>()?;
    Ok(fastest_per_session(rows))
}

/// `rows` (in key order) with each session's rows folded into its fastest.
fn fastest_per_session(rows: Vec<LapPoint>) -> Vec<LapPoint> {
    let mut points: Vec<LapPoint> = Vec::new();
    for point in rows {
        match points.last_mut() {
            Some(last) if last.session_id == point.session_id => {
                if point.lap_time_ms < last.lap_time_ms {
                    *last = point;
                }
            }
            _ => points.push(point),
        }
    }
    points
}

#[cfg(test)]
mod tests {
    use super::*;
    use paddock_kernel::ports::items::{Item, SK};
    use time::macros::datetime;

    fn put(op: TxOp) -> Item {
        match op {
            TxOp::Put { item, .. } => item,
            _ => panic!("a put"),
        }
    }

    /// Session (or user, or track) number `n`'s id.
    fn id<T: From<uuid::Uuid>>(n: u128) -> T {
        T::from(uuid::Uuid::from_u128(n))
    }

    #[test]
    fn rows_sort_by_the_sessions_time_and_never_after_now() {
        let (user, track): (UserId, TrackId) = (id(0xa), id(0xb));
        let now = datetime!(2026-03-01 12:00 UTC);
        let early = put(record_op(
            &user,
            &track,
            &id(1),
            "2026-02-01T10:00:00+01:00",
            "Car",
            91_000,
            now,
        ));
        let ahead = put(record_op(
            &user,
            &track,
            &id(2),
            "2030-01-01T00:00:00Z",
            "Car",
            90_000,
            now,
        ));
        let sk = |i: &Item| i[SK].as_str().unwrap_or_default().to_owned();
        assert!(sk(&early) < sk(&ahead));
        assert_eq!(
            sk(&early),
            format!(
                "LAP#{track}#{:011}#{}#0000091000",
                1_769_936_400,
                id::<SessionId>(1)
            )
        );
        assert_eq!(ahead["sessionAt"], "2026-03-01T12:00:00Z");
    }

    #[test]
    fn a_session_counts_once_with_its_fastest_lap() {
        let point = |session: u128, ms: i64| LapPoint {
            session_id: id(session),
            session_at: "2026-02-01T10:00:00Z".into(),
            lap_time_ms: ms,
            vehicle_name: "Car".into(),
        };
        let rows = vec![
            point(1, 92_000),
            point(2, 91_500),
            point(2, 91_000),
            point(2, 91_200),
            point(3, 91_800),
        ];
        let laps: Vec<_> = fastest_per_session(rows)
            .iter()
            .map(|p| (p.session_id.clone(), p.lap_time_ms))
            .collect();
        let want = [(1, 92_000), (2, 91_000), (3, 91_800)];
        assert_eq!(laps, want.map(|(s, ms)| (id::<SessionId>(s), ms)));
    }
}
