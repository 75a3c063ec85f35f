//! Clock port: every expiry and timestamp decision asks it, so tests can move time.

use std::sync::Mutex;
use time::{Duration, OffsetDateTime};

/// A time as the API and stored records show it: RFC 3339 in UTC.
pub fn rfc3339(t: OffsetDateTime) -> String {
    t.to_offset(time::UtcOffset::UTC)
        .format(&time::format_description::well_known::Rfc3339)
        .unwrap_or_default()
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
