//! Clock port: every expiry and timestamp decision asks it, so tests can move time.

use std::sync::Mutex;
use time::{Duration, OffsetDateTime};

/// A time as the API and stored records show it: RFC 3339 in UTC (`2026-11-26T03:51:40Z`, a
/// fraction of a second only when there is one); empty for a year outside 0..=9999.
pub fn rfc3339(t: OffsetDateTime) -> String {
    t.to_offset(time::UtcOffset::UTC)
        .format(&time::format_description::well_known::Rfc3339)
        .unwrap_or_default()
}

/// A time as milliseconds since the Unix epoch (the unit of windows and rank keys), saturating
/// past `i64`.
pub fn unix_ms(t: OffsetDateTime) -> i64 {
    i64::try_from(t.unix_timestamp_nanos() / 1_000_000).unwrap_or(i64::MAX)
}

/// The source of "now" for the domain.
pub trait Clock: Send + Sync {
    /// The current UTC time.
    fn now(&self) -> OffsetDateTime;

    /// The current time as Unix seconds (the unit of the item store's expiry attribute).
    fn unix(&self) -> i64 {
        self.now().unix_timestamp()
    }
}

/// The wall clock.
#[derive(Debug, Default, Clone, Copy)]
pub struct SystemClock;

impl Clock for SystemClock {
    fn now(&self) -> OffsetDateTime {
        OffsetDateTime::now_utc()
    }

    /// Whole seconds from the kernel's coarse clock: the time of its last tick (a few
    /// milliseconds old at most), read without the hardware counter. Every authenticated
    /// request judges its token's expiry and its family's record by this clock, in seconds,
    /// where a few milliseconds do not matter and the precise clock's read did.
    #[cfg(any(target_os = "linux", target_os = "android"))]
    fn unix(&self) -> i64 {
        rustix::time::clock_gettime(rustix::time::ClockId::RealtimeCoarse).tv_sec
    }
}

/// Whole seconds of the system's monotonic clock, read coarsely (the time of its last tick):
/// for the ages of what the process itself keeps, which are real time whatever the clock port
/// says (tests move that one), and read on every request.
pub fn monotonic_seconds() -> i64 {
    #[cfg(any(target_os = "linux", target_os = "android"))]
    {
        rustix::time::clock_gettime(rustix::time::ClockId::MonotonicCoarse).tv_sec
    }
    #[cfg(not(any(target_os = "linux", target_os = "android")))]
    {
        static START: std::sync::OnceLock<std::time::Instant> = std::sync::OnceLock::new();
        let start = START.get_or_init(std::time::Instant::now);
        i64::try_from(start.elapsed().as_secs()).unwrap_or(i64::MAX)
    }
}

/// A clock that only moves when told to; for tests of expiry.
#[derive(Debug)]
pub struct ManualClock(Mutex<OffsetDateTime>);

impl ManualClock {
    /// A clock standing at `start`.
    pub fn new(start: OffsetDateTime) -> Self {
        Self(Mutex::new(start))
    }

    /// Moves the clock forward by `by`.
    pub fn advance(&self, by: Duration) {
        let mut now = self.0.lock().expect("clock lock");
        *now += by;
    }
}

impl Clock for ManualClock {
    fn now(&self) -> OffsetDateTime {
        *self.0.lock().expect("clock lock")
    }
}

#[cfg(test)]
mod system_clock_tests {
    use super::*;

    #[test]
    fn the_coarse_seconds_are_the_precise_clock_s_to_within_its_tick() {
        for _ in 0..1000 {
            let before = OffsetDateTime::now_utc().unix_timestamp();
            let coarse = SystemClock.unix();
            let after = OffsetDateTime::now_utc().unix_timestamp();
            // The coarse clock lags by at most one tick: it may still show the second
            // before `before` for those few milliseconds, never a later one than `after`.
            assert!(
                (before - 1..=after).contains(&coarse),
                "{before} {coarse} {after}"
            );
        }
    }

    #[test]
    fn the_monotonic_seconds_move_with_real_time() {
        let start = monotonic_seconds();
        std::thread::sleep(std::time::Duration::from_millis(1100));
        assert!(monotonic_seconds() > start);
    }
}

#[cfg(test)]
mod rfc3339_tests {
    use super::*;

    #[test]
    fn whole_seconds_are_written_as_the_general_formatter_writes_them() {
        let general = |t: OffsetDateTime| {
            t.format(&time::format_description::well_known::Rfc3339)
                .unwrap()
        };
        // A spread of instants from 1970 to 2200, leap days and year ends among them.
        let mut unix = 0_i64;
        while unix < 7_258_118_400 {
            let t = OffsetDateTime::from_unix_timestamp(unix).unwrap();
            assert_eq!(rfc3339(t), general(t));
            unix += 86_399 * 7 + 3_607;
        }
        for unix in [951_782_400, 1_709_251_199, 1_735_689_599, 4_107_542_400] {
            let t = OffsetDateTime::from_unix_timestamp(unix).unwrap();
            assert_eq!(rfc3339(t), general(t));
        }
        // With a fraction, and in another offset: as the general formatter, in UTC.
        let t = OffsetDateTime::from_unix_timestamp_nanos(1_709_251_199_123_456_789).unwrap();
        assert_eq!(rfc3339(t), general(t));
        let east = t.to_offset(time::UtcOffset::from_hms(5, 30, 0).unwrap());
        assert_eq!(rfc3339(east), general(t));
        assert_eq!(rfc3339(OffsetDateTime::UNIX_EPOCH), "1970-01-01T00:00:00Z");
    }
}
