//! The cars with a board on a track.
//!
//! One item per car in the track board's partition (`VEH#<folded name>`: the name as first
//! submitted and its number of drivers), counted in the same transaction as the car board's
//! entries. A car is listed once [`LISTED_FROM`] drivers are on its board: a listing row
//! (`CARS#<inverted band>#<folded name>`) sorts it among the track's listed cars by its band
//! of counts (see [`band`]), written in the same transaction as the count and conditional on
//! it. Listing the cars reads a page of listing rows and those cars' counts, whatever number
//! of cars drivers invented: a car only one or two drivers raced has its own board (`?car=`)
//! but is not put in every visitor's car selector.

use serde::{Deserialize, Serialize};
use serde_json::{Value, json};
use utoipa::ToSchema;

use super::board::{BoardId, fold_vehicle};
use paddock_kernel::ids::TrackId;
use paddock_kernel::ports::Ports;
use paddock_kernel::ports::items::{
    Condition, Key, Query, StoreError, TxOp, Update, decode, decode_cursor, encode_cursor, item,
};
use paddock_kernel::tables::Table;

/// Sort-key prefix of the cars of a track.
const VEHICLE_PREFIX: &str = "VEH#";
/// Sort-key prefix of the listed cars of a track.
const LISTED_PREFIX: &str = "CARS#";
/// Drivers on a car's board before the car is listed (the API's car list, the pages' selector).
pub(crate) const LISTED_FROM: u64 = 3;
/// The attribute of a car's item that counts its drivers.
const COUNT: &str = "totalEntries";

/// A car with entries on a track, and how many.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize, ToSchema)]
#[serde(rename_all = "camelCase")]
pub struct VehicleBoard {
    /// The car's name (as first submitted; boards match names case-insensitively).
    pub vehicle_name: String,
    /// Drivers on the car's board.
    pub total_entries: u64,
}

/// A page of a track's listed cars.
#[derive(Debug, Clone, PartialEq)]
pub struct VehiclePage {
    /// Most drivers first (then by name).
    pub items: Vec<VehicleBoard>,
    /// The cursor of the next page, if any.
    pub next_cursor: Option<String>,
}

/// The key of `vehicle_name`'s item on `track`'s board.
pub(crate) fn key(track: &TrackId, vehicle_name: &str) -> Key {
    Key::new(
        BoardId::track(track).partition(),
        format!("{VEHICLE_PREFIX}{}", fold_vehicle(vehicle_name)),
    )
}

/// The listing band of a car with `drivers` drivers: 0 (not listed) under [`LISTED_FROM`],
/// then one band per power of two (3; 4 to 7; 8 to 15; ...). A car's listing row moves only
/// when its count leaves its band, so most changes of a popular car's count leave the row
/// alone and need no condition on the count (concurrent new drivers of one car do not make
/// each other retry).
fn band(drivers: u64) -> u32 {
    if drivers < LISTED_FROM {
        0
    } else {
        drivers.ilog2()
    }
}

/// The counts of `band`: the least and the most.
fn band_bounds(band: u32) -> (u64, u64) {
    match band {
        0 => (0, LISTED_FROM - 1),
        1 => (LISTED_FROM, 3),
        b => (1 << b, (1 << (b + 1)) - 1),
    }
}

/// The key of a car's listing row in `band`: higher bands sort first.
fn listed_key(track: &TrackId, vehicle_name: &str, band: u32) -> Key {
    Key::new(
        BoardId::track(track).partition(),
        format!(
            "{LISTED_PREFIX}{:02}#{}",
            99 - band.min(99),
            fold_vehicle(vehicle_name)
        ),
    )
}

/// The listing row of a car with `drivers` drivers (its name as stored).
pub(crate) fn listed_item(
    track: &TrackId,
    vehicle_name: &str,
    drivers: u64,
) -> paddock_kernel::ports::items::Item {
    item(
        &listed_key(track, vehicle_name, band(drivers)),
        json!({ "vehicleName": vehicle_name.trim() }),
    )
}

/// A car's item as read before a change of its count: its stored name and drivers (zero and
/// the given name when the car has no item yet).
#[derive(Debug, Clone, PartialEq)]
pub struct CarCount {
    /// The name as first submitted.
    pub vehicle_name: String,
    /// Drivers on the car's board.
    pub drivers: u64,
}

/// The count of `vehicle_name` on `track`, as a change of it must start from.
pub async fn read_count(
    ports: &Ports,
    track: &TrackId,
    vehicle_name: &str,
) -> Result<CarCount, StoreError> {
    let stored = ports
        .items
        .get(Table::Leaderboards, &key(track, vehicle_name))
        .await?;
    Ok(count_of(stored, vehicle_name))
}

/// The count of `vehicle_name` as its item `stored` holds it (read by [`key`]).
pub(crate) fn count_of(
    stored: Option<paddock_kernel::ports::items::Item>,
    vehicle_name: &str,
) -> CarCount {
    match stored {
        Some(item) => CarCount {
            vehicle_name: item
                .get("vehicleName")
                .and_then(Value::as_str)
                .unwrap_or(vehicle_name.trim())
                .to_owned(),
            drivers: item.get(COUNT).and_then(Value::as_u64).unwrap_or(0),
        },
        None => CarCount {
            vehicle_name: vehicle_name.trim().to_owned(),
            drivers: 0,
        },
    }
}

/// The writes that change `read`'s count of drivers on `track` by `by` (one driver more or
/// less): the car's item, conditional on its count being in a range where the change keeps
/// the car in its band (any count of that range gives the same listing), or, when the change
/// leaves the band, on the count read, with the listing row moved, made or dropped.
pub(crate) fn count_ops(track: &TrackId, read: &CarCount, by: i64) -> Vec<TxOp> {
    let name = read.vehicle_name.as_str();
    let after = read.drivers.saturating_add_signed(by);
    let mut update = Update::default().and_add(COUNT, by);
    if by > 0 {
        update = update.and_set_if_absent("vehicleName", json!(name));
    }
    let (from, to) = (band(read.drivers), band(after));
    let at_least = |n: u64| match n {
        0 => None,
        n => Some(Condition::Gt(COUNT.into(), json!(n - 1))),
    };
    let at_most = |n: u64| {
        Condition::Or(vec![
            Condition::AttrNotExists(COUNT.into()),
            Condition::Lt(COUNT.into(), json!(n + 1)),
        ])
    };
    let unchanged = if from == to {
        // Counts in [low, high] stay in the band after the change.
        let (lo, hi) = band_bounds(from);
        let (low, high) = if by > 0 {
            (lo, hi.saturating_sub(by.unsigned_abs()))
        } else {
            (lo + by.unsigned_abs(), hi)
        };
        Condition::And(at_least(low).into_iter().chain([at_most(high)]).collect())
    } else if read.drivers == 0 {
        at_most(0)
    } else {
        Condition::eq(COUNT, read.drivers)
    };
    let mut ops = vec![TxOp::Update {
        table: Table::Leaderboards,
        key: key(track, name),
        update,
        condition: Some(unchanged),
    }];
    if from != to && from > 0 {
        ops.push(TxOp::Delete {
            table: Table::Leaderboards,
            key: listed_key(track, name, from),
            condition: None,
        });
    }
    if from != to && to > 0 {
        ops.push(TxOp::Put {
            table: Table::Leaderboards,
            item: listed_item(track, name, after),
            condition: None,
        });
    }
    ops
}

/// A page of `track`'s listed cars (`limit` at most), after `cursor`.
pub async fn list(
    ports: &Ports,
    track: &TrackId,
    limit: usize,
    cursor: Option<&str>,
) -> Result<VehiclePage, StoreError> {
    let after = match cursor {
        Some(c) => {
            let sk = decode_cursor(c)?;
            if !sk.starts_with(LISTED_PREFIX) {
                return Err(StoreError::InvalidCursor);
            }
            Some(encode_cursor(&sk))
        }
        None => None,
    };
    let page = ports
        .items
        .query(
            Query::partition(Table::Leaderboards, BoardId::track(track).partition())
                .begins_with(LISTED_PREFIX)
                .limit(limit)
                .after(after),
        )
        .await?;
    let names: Vec<String> = page
        .items
        .iter()
        .filter_map(|item| item.get("vehicleName")?.as_str().map(str::to_owned))
        .collect();
    // The exact counts, from the cars' own items (a listing row knows only its band), read
    // in one call.
    let keys = names
        .iter()
        .map(|name| (Table::Leaderboards, key(track, name)))
        .collect();
    let found = match names.is_empty() {
        true => Vec::new(),
        false => ports.items.get_many(keys).await?,
    };
    let counts: Vec<CarCount> = found
        .into_iter()
        .zip(&names)
        .map(|(stored, name)| count_of(stored, name))
        .collect();
    let mut items: Vec<VehicleBoard> = counts
        .into_iter()
        .filter(|c| c.drivers >= LISTED_FROM)
        .map(|c| VehicleBoard {
            vehicle_name: c.vehicle_name,
            total_entries: c.drivers,
        })
        .collect();
    items.sort_by(|a, b| {
        b.total_entries
            .cmp(&a.total_entries)
            .then_with(|| fold_vehicle(&a.vehicle_name).cmp(&fold_vehicle(&b.vehicle_name)))
    });
    Ok(VehiclePage {
        next_cursor: page.next_cursor.filter(|_| names.len() == limit),
        items,
    })
}

/// The cars of `track` that have drivers but no listing row although they should (boards
/// counted before cars were listed): their listing rows, conditional on their counts, as
/// transactions of one car each.
pub(crate) async fn unlisted(ports: &Ports, track: &TrackId) -> Result<Vec<Vec<TxOp>>, StoreError> {
    let mut out = Vec::new();
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
        for stored in page.items {
            let v: VehicleBoard = decode(stored, "vehicle board")?;
            if v.total_entries >= LISTED_FROM {
                let (lo, hi) = band_bounds(band(v.total_entries));
                out.push(vec![
                    TxOp::Check {
                        table: Table::Leaderboards,
                        key: key(track, &v.vehicle_name),
                        condition: Condition::And(vec![
                            Condition::Gt(COUNT.into(), json!(lo - 1)),
                            Condition::Lt(COUNT.into(), json!(hi + 1)),
                        ]),
                    },
                    TxOp::Put {
                        table: Table::Leaderboards,
                        item: listed_item(track, &v.vehicle_name, v.total_entries),
                        condition: None,
                    },
                ]);
            }
        }
        match page.next_cursor {
            Some(next) => {
                paddock_kernel::ports::items::check_advances(cursor.as_deref(), &next)?;
                cursor = Some(next);
            }
            None => return Ok(out),
        }
    }
}
