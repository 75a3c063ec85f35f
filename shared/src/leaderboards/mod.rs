//! Leaderboards: one best lap per (track, user), ranked by lap time.
//!
//! Key layout (table `leaderboards`, partition `BOARD#<track id>`):
//! - `ENTRY#<user id>`: the user's entry. Every change to it is conditional on the entry as
//!   last read (absent, or its `rankKey`), which keeps one entry per (track, user) and makes
//!   concurrent submissions end at the fastest lap.
//! - `RANK#<lap ms, 10 digits>#<submitted µs, 16 digits>#<user id>`: the same entry under a
//!   sort key that orders the board (equal times: earlier submission first). The entry and its
//!   rank row change in one transaction.
//!
//! Partition `USER#<user id>`, sort key `BOARD#<track id>`: the boards a driver has an entry
//! on (see [`board::BOARD_INDEX_PREFIX`]).

pub(crate) mod board;
pub(crate) mod cache;
pub(crate) mod plausibility;
pub(crate) mod renames;
pub(crate) mod submit;

pub(crate) use board::Board;
pub(crate) use cache::BoardCache;

/// A lap time as the desktop client shows it: `M:SS.mmm` (minutes grow past 59).
pub(crate) fn format_lap_time(ms: i64) -> String {
    let ms = ms.max(0);
    format!("{}:{:02}.{:03}", ms / 60_000, (ms / 1000) % 60, ms % 1000)
}

#[cfg(test)]
mod tests {
    use super::format_lap_time;

    #[test]
    fn lap_times_are_minutes_seconds_and_millis() {
        assert_eq!(format_lap_time(83_456), "1:23.456");
        assert_eq!(format_lap_time(59_999), "0:59.999");
        assert_eq!(format_lap_time(600_005), "10:00.005");
        assert_eq!(format_lap_time(0), "0:00.000");
    }
}
