//! Entering is driving: the events a submitted lap also counts for, picked from those the
//! driver's laps may count for (read with the submission's first reads, [`super::live`]), and
//! written in the boards' transaction under the condition that each event is still open (and,
//! for a league's, that the driver is still a member).

use time::OffsetDateTime;
use time::format_description::well_known::Rfc3339;

use super::live::{self, LiveEvent};
use super::*;
use crate::leagues;
use paddock_boards::leaderboards::board::{BoardId, fold_vehicle};
use paddock_boards::leaderboards::extra_boards::ExtraBoard;
use paddock_boards::leaderboards::submit_lap::{CheckedLap, OtherBoards};
use paddock_kernel::ports::Ports;
use paddock_kernel::ports::items::{Condition, TxOp};

/// The events not yet closed of the driver's leagues and the public ones: what
/// [`OtherBoards`] asks of competitions.
#[derive(Debug, Clone, Copy, Default)]
pub struct OpenEvents;

/// The events not yet closed a driver's laps may count for, as a submission read them.
#[derive(Debug)]
pub struct DriversEvents(Vec<LiveEvent>);

impl OtherBoards for OpenEvents {
    type Known = DriversEvents;

    async fn known(&self, ports: &Ports, user_id: &UserId) -> Result<DriversEvents, StoreError> {
        Ok(DriversEvents(live::for_driver(ports, user_id).await?))
    }

    fn find(&self, known: &DriversEvents, lap: CheckedLap<'_>, now_ms: i64) -> Vec<ExtraBoard> {
        let summary = &lap.session.summary;
        let driven_ms = OffsetDateTime::parse(&summary.recorded_at, &Rfc3339)
            .map(ms_of)
            .ok();
        let car = fold_vehicle(&summary.vehicle_name);
        let mut counted: Vec<&LiveEvent> = known
            .0
            .iter()
            .filter(|event| {
                event.track_id == summary.track_id
                    && driven_ms.is_some_and(|d| (event.opens_ms..event.closes_ms).contains(&d))
                    && now_ms < event.closes_ms
                    && event.car.as_ref().is_none_or(|c| *c == car)
                    && lap.quality >= event.min_quality
            })
            .collect();
        // The events closing first are kept.
        counted.sort_by(|a, b| (a.closes_ms, &a.event_id).cmp(&(b.closes_ms, &b.event_id)));
        counted.dedup_by(|a, b| a.event_id == b.event_id);
        counted
            .into_iter()
            .take(MAX_EVENTS_PER_LAP)
            .map(|event| ExtraBoard {
                board: BoardId::event(&summary.track_id, &event.event_id),
                // The driver's row of the league held the event: they were a member when it
                // was read, and still are when the lap is written.
                requires: event
                    .league_id
                    .as_ref()
                    .map(|league| (leagues::TABLE, leagues::member_key(league, lap.user_id))),
                checks: vec![TxOp::Check {
                    table: super::TABLE,
                    key: meta_key(&event.event_id),
                    condition: Condition::eq(CLOSED, false),
                }],
                until_ms: event.closes_ms,
            })
            .collect()
    }
}
