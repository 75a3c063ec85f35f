//! The maintenance tick: the work nobody's request does. Track-map jobs whose lease ran out
//! (their worker vanished) go back to pending, competition events due are opened and closed,
//! and boards of an older layout are counted, a time budget per tick. The track-maps function
//! runs a tick on its schedule; the local server runs ticks from its start.

use std::time::Duration;

use crate::competition_events::{self, EventTick};
use crate::leaderboards::backfill::{BackfillReport, backfill};
use crate::ports::Ports;
use crate::ports::items::StoreError;
use crate::tracks::jobs::{Stuck, reset_stuck};

/// How long one tick may spend counting boards of an older layout.
pub const BACKFILL_BUDGET: Duration = Duration::from_secs(60);

/// What one tick did; each failure is logged by the tick and resumes at the next.
#[derive(Debug)]
pub struct MaintenanceReport {
    /// The track jobs returned to pending.
    pub jobs_reset: Result<usize, StoreError>,
    /// The events opened and closed.
    pub events: Result<EventTick, StoreError>,
    /// The backfill's step.
    pub backfill: Result<BackfillReport, StoreError>,
}

/// Runs one tick: returns track jobs with an expired lease to pending, opens and closes the
/// events due, then counts boards of an older layout for up to [`BACKFILL_BUDGET`] (once
/// every board is counted, one read).
pub async fn tick(ports: &Ports) -> MaintenanceReport {
    let jobs_reset = reset_stuck(ports, Stuck::LeaseExpired).await;
    if let Err(e) = &jobs_reset {
        tracing::error!(error = %e, "maintenance: could not reset stuck track jobs");
    }
    let events = competition_events::tick(ports).await;
    if let Err(e) = &events {
        tracing::error!(error = %e, "maintenance: could not open or close events; resumes next tick");
    }
    let backfill = backfill(ports, BACKFILL_BUDGET).await;
    if let Err(e) = &backfill {
        tracing::error!(error = %e, "maintenance: leaderboard backfill failed; resumes next tick");
    }
    MaintenanceReport {
        jobs_reset,
        events,
        backfill,
    }
}
