//! Leaderboards: one best lap per (track, user) on the track's board, and one per (track,
//! car, user) on the car's board, ranked by lap time. Every read and write costs a page or one
//! entry, whatever the size of the board.
//!
//! Key layout (table `leaderboards`, partition `BOARD#<track id>` for the track's board and
//! `BOARD#<track id>#CAR#<car name, lower case>` for a car's):
//! - `ENTRY#<user id>`: the user's entry. Every change to it is conditional on the entry as
//!   last read (absent, or its `rankKey`), which keeps one entry per (board, user) and makes
//!   concurrent submissions end at the fastest lap.
//! - `RANK#<lap ms, 10 digits>#<submitted µs, 16 digits>#<user id>`: the same entry under a
//!   sort key that orders the board (equal times: earlier submission first). The entry and its
//!   rank row change in one transaction, with the board's counts.
//! - `COUNT#...`: the counts that give a rank and the board's size without reading the board
//!   (`rank_counts`).
//! - `VEH#<car name, lower case>` (track boards only): the cars with a board on the track and
//!   their drivers; `CARS#<band>#<car name, lower case>`: the cars with three drivers or more,
//!   most-driven first (`vehicles`).
//!
//! Partition `USER#<user id>`, sort key `BOARD#<board>`: the boards a driver has an entry on
//! (see `board::BOARD_INDEX_PREFIX`); sort key `TRACKBOARD#<track id>`: the track boards alone
//! (`board::TRACK_INDEX_PREFIX`); sort key `LAP#<track id>#...`: every lap the driver submitted,
//! for the progress chart on their page ([`lap_history`]). Partition `LAYOUT`, sort keys `COUNTS` and `INDEXES`: how far
//! the backfills of boards written before the counts and those indexes existed have come
//! ([`backfill`]).

pub mod backfill;
pub mod board;
pub mod bulk;
pub mod cache;
pub mod extra_boards;
pub mod lap_history;
pub mod plausibility;
pub mod rank_counts;
pub mod reads;
pub mod removal;
pub mod renames;
pub mod spread;
pub mod submission_reads;
pub mod submit;
pub mod submit_lap;
pub mod vehicles;

pub use backfill::backfill;
pub use cache::BoardCache;

/// A lap time as the desktop client shows it: `M:SS.mmm` (minutes grow past 59).
pub fn format_lap_time(ms: i64) -> String {
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
