//! Loading a board in bulk (imports, and the bench's boards of a million drivers): entries
//! are written with batched writes a chunk at a time, and the counts, tallied in memory, are
//! written at the end. Only for a board that has no entries yet: it does not read what is
//! there. [`BulkBoard::older_layout`] writes a board as deployments before the counts did
//! (what the backfill upgrades), for the bench's measure of that upgrade.

use std::collections::HashMap;

use serde_json::{Value, json};

use super::board::{BoardId, Row, StoredRow, fold_vehicle, rank_sk, submitted_at};
use super::rank_counts::Change;
use paddock_kernel::ids::{SessionId, TrackId, UserId};
use paddock_kernel::ports::Ports;
use paddock_kernel::ports::items::{Item, Key, StoreError, TxOp, item};
use paddock_kernel::tables::Table;

/// One driver's best lap on the track, set in `vehicle_name`.
#[derive(Debug, Clone)]
pub struct BulkEntry {
    /// The driver.
    pub user_id: UserId,
    /// Shown on the board.
    pub display_name: String,
    /// The lap time.
    pub lap_time_ms: i64,
    /// The car.
    pub vehicle_name: String,
    /// The session of the lap.
    pub session_id: SessionId,
    /// When the lap was submitted.
    pub submitted_at: time::OffsetDateTime,
}

/// Writes one track's board (and its cars' boards) from scratch.
pub struct BulkBoard {
    track: TrackId,
    counts: HashMap<Key, HashMap<String, i64>>,
    vehicles: HashMap<String, (String, i64)>,
    /// Entries, rank rows and index rows only, as before the counts.
    older: bool,
    /// The boards written instead of the track's and its cars' (with their counts).
    only: Option<Vec<BoardId>>,
}

impl BulkBoard {
    /// A loader of `track`'s board, which must have no entries yet.
    pub fn new(track: &TrackId) -> Self {
        Self {
            track: track.clone(),
            counts: HashMap::new(),
            vehicles: HashMap::new(),
            older: false,
            only: None,
        }
    }

    /// A loader of `boards` of `track` alone (an event's standings, say), which must have no
    /// entries yet: the entries, rank rows, index rows and counts a submission writes there,
    /// nothing on the track's or the cars' boards.
    pub fn only(track: &TrackId, boards: Vec<BoardId>) -> Self {
        Self {
            only: Some(boards),
            ..Self::new(track)
        }
    }

    /// A loader of `track`'s board in the layout before the counts: the track board's
    /// entries and rank rows without the `counted` flag, and the drivers' board index rows;
    /// no counts, no car boards, no track index rows (the backfill adds them).
    pub fn older_layout(track: &TrackId) -> Self {
        Self {
            older: true,
            ..Self::new(track)
        }
    }

    /// Writes a chunk of entries (one per driver over all chunks) on the track's board and
    /// their cars' boards.
    pub async fn add(&mut self, ports: &Ports, entries: &[BulkEntry]) -> Result<(), StoreError> {
        let mut items: Vec<Item> = Vec::with_capacity(entries.len() * 6);
        for e in entries {
            let stored = StoredRow {
                row: Row {
                    user_id: e.user_id.clone(),
                    display_name: e.display_name.clone(),
                    avatar_url: None,
                    lap_time_ms: e.lap_time_ms,
                    vehicle_name: e.vehicle_name.clone(),
                    session_id: e.session_id.clone(),
                    submitted_at: submitted_at(e.submitted_at),
                },
                rank_key: rank_sk(e.lap_time_ms, e.submitted_at, &e.user_id),
                profile_version: 0,
                counted: !self.older,
            };
            if self.older {
                let board = BoardId::track(&self.track);
                for mut row in [
                    stored.to_item(&board.entry_key(&e.user_id)),
                    stored.rank_item(&board),
                ] {
                    row.remove("counted");
                    items.push(row);
                }
                let listed = json!({ "trackId": board.track, "vehicle": null });
                items.push(item(&board.index_key(&e.user_id), listed));
                continue;
            }
            let boards = match &self.only {
                Some(boards) => boards.clone(),
                None => vec![
                    BoardId::track(&self.track),
                    BoardId::car(&self.track, &e.vehicle_name),
                ],
            };
            for board in boards {
                items.push(stored.to_item(&board.entry_key(&e.user_id)));
                items.push(stored.rank_item(&board));
                let listed = json!({ "trackId": board.track, "vehicle": board.vehicle() });
                items.push(item(&board.index_key(&e.user_id), listed.clone()));
                if let Some(key) = board.track_index_key(&e.user_id) {
                    items.push(item(&key, listed));
                }
                let change = Change {
                    removed: None,
                    added: Some(stored.position()?),
                };
                for op in change.ops(&board) {
                    if let TxOp::Update { key, update, .. } = op {
                        let tally = self.counts.entry(key).or_default();
                        for (attr, by) in update.add {
                            *tally.entry(attr).or_default() += by;
                        }
                    }
                }
            }
            if self.only.is_some() {
                continue;
            }
            let car = self
                .vehicles
                .entry(fold_vehicle(&e.vehicle_name))
                .or_insert_with(|| (e.vehicle_name.trim().to_owned(), 0));
            car.1 += 1;
        }
        ports.items.put_many(Table::Leaderboards, items).await
    }

    /// Writes the counts of everything added.
    pub async fn finish(self, ports: &Ports) -> Result<(), StoreError> {
        if self.older {
            return Ok(());
        }
        let mut items: Vec<Item> = self
            .counts
            .into_iter()
            .map(|(key, attrs)| {
                let attrs: serde_json::Map<String, Value> =
                    attrs.into_iter().map(|(a, n)| (a, json!(n))).collect();
                item(&key, Value::Object(attrs))
            })
            .collect();
        for (name, count) in self.vehicles.into_values() {
            items.push(item(
                &super::vehicles::key(&self.track, &name),
                json!({ "vehicleName": name, "totalEntries": count }),
            ));
            let drivers = u64::try_from(count).unwrap_or(0);
            if drivers >= super::vehicles::LISTED_FROM {
                items.push(super::vehicles::listed_item(&self.track, &name, drivers));
            }
        }
        ports.items.put_many(Table::Leaderboards, items).await
    }
}
