//! Plausibility checks of a lap before it is ranked: laps no car could have driven are
//! refused, whatever the client says about them.
//!
//! These catch impossible laps: faster than any car over the track's mapped length, shorter
//! than any track takes, or with sector times that contradict the lap time. They cannot
//! catch a plausible lap that was made up, a tampered client that sends consistent numbers,
//! or a map built from faked track points; the laps, sectors and points all come from the
//! client.

use paddock_driving::sessions::upload::Lap;

/// The fastest believable average speed over a lap, in km/h. Real lap records average well
/// below it (the fastest, qualifying laps on superspeedway ovals, average under 390 km/h), so
/// only laps no car can drive are refused.
pub const MAX_AVERAGE_KMH: f64 = 400.0;

/// No lap on any track is shorter than this, map or no map: 8 s.
///
/// The shortest circuits in sims are quarter-mile ovals (about 400 m), where the quickest
/// cars lap in about 11 s; real road courses and karting tracks take 20 s and more. 8 s
/// leaves a margin below those and still refuses the laps of a second or less that faked
/// submissions use. It also holds when a map exists, so a map built from a few metres of
/// track points (a partial or faked upload) cannot lower the floor to nothing.
pub const ABSOLUTE_FLOOR_MS: i64 = 8_000;

/// Sector times may differ from the lap time by the larger of this many milliseconds…
pub const SECTOR_TOLERANCE_MS: i64 = 50;

/// …and this fraction of the lap time (0.5 %).
///
/// Why a tolerance at all: each sector time is rounded to the millisecond on its own (32
/// sectors can lose 32 ms), and a client may time sectors from its telemetry samples while
/// the lap time is the game's official one, which drifts apart with the lap's length. The
/// check exists to catch a lap time that was edited without its sectors, which moves the sum
/// by far more.
pub const SECTOR_TOLERANCE_FRACTION: f64 = 0.005;

/// Why a lap is implausible. The message names the field, as the API's other messages do.
#[derive(Debug, Clone, PartialEq, thiserror::Error)]
pub enum Implausible {
    /// Faster than [`floor_ms`] allows.
    #[error("{}", too_fast_message(*.lap_time_ms, *.floor_ms, *.map_length_m))]
    TooFast {
        /// Lap time in milliseconds.
        lap_time_ms: i64,
        /// The shortest plausible lap on this track, in milliseconds.
        floor_ms: i64,
        /// The map's length when the map set the floor (else the absolute floor did).
        map_length_m: Option<f64>,
    },
    /// The lap's sector times do not add up to its time.
    #[error(
        "sectorTimesMs: the lap's sector times add up to {sum_ms} ms, not to its \
         {lap_time_ms} ms (at most {tolerance_ms} ms apart)"
    )]
    SectorsMismatch {
        /// Lap time in milliseconds.
        lap_time_ms: i64,
        /// The sum of the sector times, in milliseconds.
        sum_ms: i64,
        /// How far the sum may be from the lap time.
        tolerance_ms: i64,
    },
}

fn too_fast_message(lap_time_ms: i64, floor_ms: i64, map_length_m: Option<f64>) -> String {
    match map_length_m {
        Some(length) => format!(
            "lapTimeMs: {lap_time_ms} ms is not plausible on this track: its map is \
             {length:.0} m long, which takes at least {floor_ms} ms at {MAX_AVERAGE_KMH} km/h"
        ),
        None => format!(
            "lapTimeMs: {lap_time_ms} ms is not plausible: no track takes less than \
             {floor_ms} ms a lap"
        ),
    }
}

impl Implausible {
    /// Every value of [`Implausible::reason`]: the metric's label set is fixed and small.
    pub const REASONS: [&'static str; 2] = paddock_platform::metrics::IMPLAUSIBLE_LAP_REASONS;

    /// The metric label of this refusal.
    pub fn reason(&self) -> &'static str {
        match self {
            Self::TooFast { .. } => Self::REASONS[0],
            Self::SectorsMismatch { .. } => Self::REASONS[1],
        }
    }
}

/// The shortest plausible lap on a track whose map is `map_length_m` long (when known):
/// the time to cover the map at [`MAX_AVERAGE_KMH`], and never below [`ABSOLUTE_FLOOR_MS`].
/// Answers the floor and the map length when the map set it.
fn floor(map_length_m: Option<f64>) -> (i64, Option<f64>) {
    let by_map = map_length_m
        .filter(|length| length.is_finite() && *length > 0.0)
        // metres / (km/h ÷ 3.6) = seconds; × 1000 = ms. Rounded up: a lap of exactly the
        // floor averages at most the speed limit.
        .map(|length| ((length * 3_600.0 / MAX_AVERAGE_KMH).ceil() as i64, length));
    match by_map {
        Some((ms, length)) if ms > ABSOLUTE_FLOOR_MS => (ms, Some(length)),
        _ => (ABSOLUTE_FLOOR_MS, None),
    }
}

/// The shortest plausible lap in milliseconds on a track whose map is `map_length_m` long.
#[cfg(test)]
fn floor_ms(map_length_m: Option<f64>) -> i64 {
    floor(map_length_m).0
}

/// How far a lap's sector times may add up from its time.
pub fn sector_tolerance_ms(lap_time_ms: i64) -> i64 {
    let share = (lap_time_ms as f64 * SECTOR_TOLERANCE_FRACTION).ceil() as i64;
    share.max(SECTOR_TOLERANCE_MS)
}

/// Checks a stored lap before it is ranked: its time against the track's floor (from the
/// length of the track's map, `map_length_m`, when there is one), then its sector times,
/// when it has them, against its time.
pub fn check(lap: &Lap, map_length_m: Option<f64>) -> Result<(), Implausible> {
    let (floor_ms, set_by_map) = floor(map_length_m);
    if lap.lap_time_ms < floor_ms {
        return Err(Implausible::TooFast {
            lap_time_ms: lap.lap_time_ms,
            floor_ms,
            map_length_m: set_by_map,
        });
    }
    if let Some(sectors) = &lap.sector_times_ms {
        let sum_ms: i64 = sectors.iter().sum();
        let tolerance_ms = sector_tolerance_ms(lap.lap_time_ms);
        if (sum_ms - lap.lap_time_ms).abs() > tolerance_ms {
            return Err(Implausible::SectorsMismatch {
                lap_time_ms: lap.lap_time_ms,
                sum_ms,
                tolerance_ms,
            });
        }
    }
    Ok(())
}

#[cfg(test)]
mod tests {
    use super::*;

    fn lap(ms: i64, sectors: Option<Vec<i64>>) -> Lap {
        Lap {
            lap_index: 0,
            lap_time_ms: ms,
            is_valid: true,
            counts_for_session_timing: true,
            quality_combined: 0.9,
            quality_coherence: 0.9,
            quality_stability: 0.9,
            quality_completeness: 1.0,
            num_penalties: 0,
            num_pitstops: 0,
            in_pits_at_lap_end: false,
            sector_times_ms: sectors,
        }
    }

    #[test]
    fn the_map_sets_the_floor_at_the_speed_limit_above_the_absolute_one() {
        // 400 km/h is 9 ms a metre.
        assert_eq!(floor_ms(Some(7_004.0)), 63_036);
        assert_eq!(floor_ms(Some(1_000.0)), 9_000);
        assert_eq!(
            floor_ms(Some(500.0)),
            ABSOLUTE_FLOOR_MS,
            "4.5 s is below 8 s"
        );
        assert_eq!(floor_ms(None), ABSOLUTE_FLOOR_MS);
        assert_eq!(floor_ms(Some(f64::NAN)), ABSOLUTE_FLOOR_MS);
        assert_eq!(check(&lap(63_036, None), Some(7_004.0)), Ok(()));
        let err = check(&lap(63_035, None), Some(7_004.0)).unwrap_err();
        assert_eq!(err.reason(), "too_fast");
        let msg = err.to_string();
        assert!(
            msg.starts_with("lapTimeMs:") && msg.contains("7004 m"),
            "{msg}"
        );
    }

    #[test]
    fn a_lap_under_the_absolute_floor_is_refused_without_a_map() {
        let err = check(&lap(1, None), None).unwrap_err();
        assert_eq!(
            err,
            Implausible::TooFast {
                lap_time_ms: 1,
                floor_ms: ABSOLUTE_FLOOR_MS,
                map_length_m: None
            }
        );
        assert!(err.to_string().contains("8000 ms"), "{err}");
        assert_eq!(check(&lap(ABSOLUTE_FLOOR_MS, None), None), Ok(()));
    }

    #[test]
    fn sectors_add_up_within_the_larger_of_50_ms_and_half_a_percent() {
        assert_eq!(sector_tolerance_ms(9_000), 50);
        assert_eq!(sector_tolerance_ms(90_000), 450);
        assert_eq!(sector_tolerance_ms(90_001), 451, "rounded up");
        let ok = lap(90_000, Some(vec![30_000, 30_000, 30_450]));
        assert_eq!(check(&ok, None), Ok(()));
        let off = lap(90_000, Some(vec![30_000, 30_000, 29_549]));
        let err = check(&off, None).unwrap_err();
        assert_eq!(err.reason(), "sectors_mismatch");
        assert!(err.to_string().starts_with("sectorTimesMs:"), "{err}");
        // Under 10 s a lap, 50 ms is the larger.
        assert_eq!(check(&lap(9_000, Some(vec![4_500, 4_550])), None), Ok(()));
        assert!(check(&lap(9_000, Some(vec![4_500, 4_551])), None).is_err());
    }

    #[test]
    fn speed_is_checked_before_sectors() {
        let err = check(&lap(1_000, Some(vec![5])), None).unwrap_err();
        assert_eq!(err.reason(), "too_fast");
    }
}
