//! Entering is driving: the events a submitted lap also counts for, found on the lap's track
//! while the boards are read, and written in the boards' transaction under the condition that
//! each event is still open (and, for a league's, that the driver is still a member).

use serde::{Deserialize, Serialize};
use time::OffsetDateTime;
use time::format_description::well_known::Rfc3339;

use super::*;
use crate::leagues;
use paddock_boards::leaderboards::board::{BoardId, fold_vehicle};
use paddock_boards::leaderboards::extra_boards::ExtraBoard;
use paddock_boards::leaderboards::submit_lap::{CheckedLap, OtherBoards};
use paddock_kernel::ports::Ports;
use paddock_kernel::ports::items::{Condition, Query, TxOp, decode};

/// An event of a track that has not closed, as a submission finds it
/// (`TRACK#<track id>` / `EVENT#<closes ms>#<id>`).
#[derive(Debug, Clone, Serialize, Deserialize)]
#[serde(rename_all = "camelCase")]
pub(crate) struct OpenEvent {
    pub event_id: EventId,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub league_id: Option<LeagueId>,
    /// The car, folded as boards match cars.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub car: Option<String>,
    pub opens_ms: i64,
    pub closes_ms: i64,
    pub min_quality: f64,
}

/// The open events of the lap's track: what [`OtherBoards`] asks of competitions.
#[derive(Debug, Clone, Copy, Default)]
pub struct OpenEvents;

impl OtherBoards for OpenEvents {
    async fn find(
        &self,
        ports: &Ports,
        lap: CheckedLap<'_>,
    ) -> Result<Vec<ExtraBoard>, StoreError> {
        let summary = &lap.session.summary;
        let now_ms = ms_of(ports.clock.now());
        let query = Query::partition(super::changes::TABLE, track_partition(&summary.track_id))
            .between(
                format!("{LISTED_PREFIX}{now_ms:013}"),
                format!("{LISTED_PREFIX}~"),
            )
            .limit(100);
        let found = ports.items.query(query).await?.items;
        let driven_ms = OffsetDateTime::parse(&summary.recorded_at, &Rfc3339)
            .map(ms_of)
            .ok();
        let car = fold_vehicle(&summary.vehicle_name);
        let mut boards = Vec::new();
        for item in found {
            let event: OpenEvent = decode(item, "open event")?;
            let counts = driven_ms.is_some_and(|d| (event.opens_ms..event.closes_ms).contains(&d))
                && now_ms < event.closes_ms
                && event.car.as_ref().is_none_or(|c| *c == car)
                && lap.quality >= event.min_quality;
            if !counts {
                continue;
            }
            boards.push(ExtraBoard {
                board: BoardId::event(&summary.track_id, &event.event_id),
                requires: event
                    .league_id
                    .as_ref()
                    .map(|league| (leagues::TABLE, leagues::member_key(league, lap.user_id))),
                checks: vec![TxOp::Check {
                    table: super::changes::TABLE,
                    key: meta_key(&event.event_id),
                    condition: Condition::eq(CLOSED, false),
                }],
                until_ms: event.closes_ms,
            });
            // The query answers in closing order: the events closing first are kept.
            if boards.len() == MAX_EVENTS_PER_LAP {
                break;
            }
        }
        Ok(boards)
    }
}
