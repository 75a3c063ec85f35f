//! The cars with a board on a track: one item per car in the track board's partition
//! (`VEH#<folded name>`: the name as first submitted and its number of entries), counted in
//! the same transaction as the car board's entries, so listing them reads one item per car.

use serde::{Deserialize, Serialize};
use serde_json::json;
use utoipa::ToSchema;

use super::board::{BoardId, fold_vehicle};
use crate::ids::TrackId;
use crate::ports::Ports;
use crate::ports::items::{Key, Query, StoreError, TxOp, Update, check_advances, decode};
use crate::tables::Table;

/// Sort-key prefix of the cars of a track.
const VEHICLE_PREFIX: &str = "VEH#";

/// A car with entries on a track, and how many.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize, ToSchema)]
#[serde(rename_all = "camelCase")]
pub(crate) struct VehicleBoard {
    /// The car's name (as first submitted; boards match names case-insensitively).
    pub vehicle_name: String,
    /// Drivers on the car's board.
    pub total_entries: u64,
}

/// The key of `vehicle_name`'s item on `track`'s board.
pub(crate) fn key(track: &TrackId, vehicle_name: &str) -> Key {
    Key::new(
        BoardId::track(track).partition(),
        format!("{VEHICLE_PREFIX}{}", fold_vehicle(vehicle_name)),
    )
}

/// The change of `vehicle_name`'s entry count on `track` by `by`.
pub(crate) fn count_op(track: &TrackId, vehicle_name: &str, by: i64) -> TxOp {
    let mut update = Update::default().and_add("totalEntries", by);
    if by > 0 {
        update = update.and_set_if_absent("vehicleName", json!(vehicle_name.trim()));
    }
    TxOp::Update {
        table: Table::Leaderboards,
        key: key(track, vehicle_name),
        update,
        condition: None,
    }
}

/// The cars with entries on `track`, most entries first.
pub(crate) async fn list(ports: &Ports, track: &TrackId) -> Result<Vec<VehicleBoard>, StoreError> {
    let mut out: Vec<VehicleBoard> = Vec::new();
    let mut cursor = None;
    loop {
        let page = ports
            .items
            .query(
                Query::partition(Table::Leaderboards, BoardId::track(track).partition())
                    .begins_with(VEHICLE_PREFIX)
                    .limit(500)
                    .after(cursor.clone()),
            )
            .await?;
        for item in page.items {
            let v: VehicleBoard = decode(item, "vehicle board")?;
            if v.total_entries > 0 {
                out.push(v);
            }
        }
        match page.next_cursor {
            Some(next) => {
                check_advances(cursor.as_deref(), &next)?;
                cursor = Some(next);
            }
            None => break,
        }
    }
    out.sort_by(|a, b| {
        b.total_entries
            .cmp(&a.total_entries)
            .then_with(|| a.vehicle_name.cmp(&b.vehicle_name))
    });
    Ok(out)
}
