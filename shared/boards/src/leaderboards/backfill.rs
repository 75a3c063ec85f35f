//! Counting the boards written before the counts existed.
//!
//! Boards of an older deployment hold entries and rank rows but no counts (and no car boards).
//! The backfill walks every track's board one page of entries at a time and, for each entry
//! not yet counted, in one transaction: marks the entry and its rank row counted, adds it to
//! the board's counts, and puts it on its car's board (unless the driver has a faster lap in
//! that car there already). Each step is conditional on the entry being the uncounted one it
//! read, so a run that races a submission, a second run, or a run repeated after a cut changes
//! nothing twice. Progress (the track being counted and the last page of its entries) is kept
//! in one item, `LAYOUT` / `COUNTS`, so a run cut short resumes where it stopped; once done,
//! a run reads that one item.
//!
//! A second pass does the same for the indexes that came later: each track-board entry gets
//! its driver's track index row (`board::TRACK_INDEX_PREFIX`, conditional on the entry still
//! being there, so a deleted driver's row is not made again), and each car with enough drivers
//! its listing row (`vehicles`, conditional on the count it was made from). Its progress is
//! the item `LAYOUT` / `INDEXES`.
//!
//! In AWS it runs on the maintenance schedule of the track-maps function (within a time
//! budget per tick); the local server runs it at start.

use serde::{Deserialize, Serialize};
use std::time::{Duration, Instant};

use super::board::{BoardId, RANK_KEY, StoredRow};
use super::rank_counts::Change;
use super::submit::{adds_a_driver, replace_ops};
use super::vehicles;
use paddock_kernel::ports::Ports;
use paddock_kernel::ports::items::{Condition, Key, Query, StoreError, TxOp, Update, decode, item};
use paddock_kernel::retry::{is_conflict, retry_on_conflict};
use paddock_kernel::tables::Table;

/// Entries read per page.
const PAGE: usize = 100;

/// The key of the progress item.
fn progress_key() -> Key {
    Key::new("LAYOUT", "COUNTS")
}

/// The key of the index pass's progress item.
fn index_progress_key() -> Key {
    Key::new("LAYOUT", "INDEXES")
}

/// How far the backfill has come.
#[derive(Debug, Clone, Default, PartialEq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase")]
struct Progress {
    /// Every board is counted.
    done: bool,
    /// The tracks-list cursor naming the track being counted (`None`: the first track).
    tracks_cursor: Option<String>,
    /// The cursor of the last page of that track's entries counted.
    entries_cursor: Option<String>,
}

/// What one run did.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq)]
pub struct BackfillReport {
    /// Entries counted by this run.
    pub counted: u64,
    /// Boards finished by this run.
    pub boards: u64,
    /// Every board is counted now.
    pub done: bool,
}

/// Counts the entries of boards written before the counts existed, for about `budget` (at
/// least one page of entries, each page finished); call again until [`BackfillReport::done`].
pub async fn backfill(ports: &Ports, budget: Duration) -> Result<BackfillReport, StoreError> {
    let started = Instant::now();
    let mut report = BackfillReport::default();
    let mut pass = Pass::load(ports, progress_key()).await?;
    while let Some(page) = pass.page(ports).await? {
        let board = BoardId::track(&page.track.id);
        for entry in &page.entries {
            if !entry.counted && count_entry(ports, &board, entry.clone()).await? {
                report.counted += 1;
            }
        }
        if pass.advance(ports, page).await? {
            report.boards += 1;
        }
        if started.elapsed() >= budget {
            break;
        }
    }
    if pass.progress.done {
        report.done = index(ports, started, budget).await?;
    }
    if report.counted > 0 || report.boards > 0 {
        tracing::info!(
            counted = report.counted,
            boards = report.boards,
            done = report.done,
            "leaderboard counts backfilled"
        );
    }
    Ok(report)
}

/// A walk over every track's board entries, a page at a time, whose progress is kept in one
/// item so that a run cut short resumes where it stopped.
struct Pass {
    key: Key,
    progress: Progress,
}

/// One page of a track's entries, and where the walk goes after it.
struct PassPage {
    track: paddock_driving::tracks::Track,
    entries: Vec<StoredRow>,
    next_entries: Option<String>,
    next_track: Option<String>,
}

impl Pass {
    /// Whether the page being walked is the first of its track.
    fn at_track_start(&self) -> bool {
        self.progress.entries_cursor.is_none()
    }

    /// The pass whose progress is the item `key`.
    async fn load(ports: &Ports, key: Key) -> Result<Self, StoreError> {
        let progress = match ports.items.get(Table::Leaderboards, &key).await? {
            Some(i) => decode(i, "backfill progress")?,
            None => Progress::default(),
        };
        Ok(Self { key, progress })
    }

    /// The next page of entries; `None` once every track is walked (then saved as done).
    async fn page(&mut self, ports: &Ports) -> Result<Option<PassPage>, StoreError> {
        if self.progress.done {
            return Ok(None);
        }
        let (tracks, next_track) =
            paddock_driving::tracks::list(ports, 1, self.progress.tracks_cursor.clone()).await?;
        let Some(track) = tracks.into_iter().next() else {
            self.progress.done = true;
            self.save(ports).await?;
            return Ok(None);
        };
        let page = ports
            .items
            .query(
                Query::partition(Table::Leaderboards, BoardId::track(&track.id).partition())
                    .begins_with("ENTRY#")
                    .limit(PAGE)
                    .after(self.progress.entries_cursor.clone()),
            )
            .await?;
        let entries = page
            .items
            .into_iter()
            .map(StoredRow::from_item)
            .collect::<Result<_, _>>()?;
        Ok(Some(PassPage {
            track,
            entries,
            next_entries: page.next_cursor,
            next_track,
        }))
    }

    /// Records `page` as walked and saves the progress; answers whether its track is done
    /// (then its cached pages are dropped in this process).
    async fn advance(&mut self, ports: &Ports, page: PassPage) -> Result<bool, StoreError> {
        let progress = &mut self.progress;
        let track_done = if let Some(next) = page.next_entries {
            paddock_kernel::ports::items::check_advances(
                progress.entries_cursor.as_deref(),
                &next,
            )?;
            progress.entries_cursor = Some(next);
            false
        } else {
            super::cache::invalidate_in_process(&page.track.id);
            progress.entries_cursor = None;
            match page.next_track {
                Some(next) => progress.tracks_cursor = Some(next),
                None => progress.done = true,
            }
            true
        };
        self.save(ports).await?;
        Ok(track_done)
    }

    async fn save(&self, ports: &Ports) -> Result<(), StoreError> {
        let value = serde_json::to_value(&self.progress).expect("progress serialises");
        ports
            .items
            .put(Table::Leaderboards, item(&self.key, value), None)
            .await
    }
}

/// The index pass: every track's entries and cars, a page at a time, until `budget` is spent
/// (at least one page); answers whether every track is done.
async fn index(ports: &Ports, started: Instant, budget: Duration) -> Result<bool, StoreError> {
    let mut pass = Pass::load(ports, index_progress_key()).await?;
    while let Some(page) = pass.page(ports).await? {
        let board = BoardId::track(&page.track.id);
        if pass.at_track_start() {
            for ops in vehicles::unlisted(ports, &page.track.id).await? {
                // A count changed meanwhile moved the listing itself.
                match ports.items.transact(ops).await {
                    Ok(()) | Err(StoreError::ConditionFailed { .. } | StoreError::Conflict) => {}
                    Err(e) => return Err(e),
                }
            }
        }
        for entry in &page.entries {
            let user_id = &entry.row.user_id;
            let Some(key) = board.track_index_key(user_id) else {
                continue;
            };
            let listed = serde_json::json!({ "trackId": board.track, "vehicle": null });
            let ops = vec![
                TxOp::Check {
                    table: Table::Leaderboards,
                    key: board.entry_key(user_id),
                    condition: Condition::Exists,
                },
                TxOp::Put {
                    table: Table::Leaderboards,
                    item: item(&key, listed),
                    condition: None,
                },
            ];
            // An entry removed meanwhile (its driver deleted) keeps no index row.
            match ports.items.transact(ops).await {
                Ok(()) | Err(StoreError::ConditionFailed { .. } | StoreError::Conflict) => {}
                Err(e) => return Err(e),
            }
        }
        pass.advance(ports, page).await?;
        if started.elapsed() >= budget {
            break;
        }
    }
    Ok(pass.progress.done)
}

/// Rounds of counting one entry before it is left to the next run.
const ROUNDS: u32 = 5;

/// Counts one entry of an older board; answers whether this call counted it (false when a
/// submission or another run changed it first).
async fn count_entry(ports: &Ports, board: &BoardId, entry: StoredRow) -> Result<bool, StoreError> {
    let key = &board.entry_key(&entry.row.user_id);
    let mut given = Some(entry);
    retry_on_conflict(ROUNDS, is_conflict, || {
        let given = given.take();
        async move {
            let entry = match given {
                Some(entry) => entry,
                // Counted meanwhile (by a submission replacing it, or another run), or gone.
                None => match ports.items.get(Table::Leaderboards, key).await? {
                    Some(i) => StoredRow::from_item(i)?,
                    None => return Ok(false),
                },
            };
            if entry.counted {
                return Ok(false);
            }
            try_count(ports, board, entry).await?;
            Ok(true)
        }
    })
    .await
}

async fn try_count(ports: &Ports, board: &BoardId, entry: StoredRow) -> Result<(), StoreError> {
    let user_id = entry.row.user_id.clone();
    let uncounted = Condition::And(vec![
        Condition::eq(RANK_KEY, entry.rank_key.as_str()),
        Condition::Or(vec![
            Condition::AttrNotExists("counted".into()),
            Condition::eq("counted", false),
        ]),
    ]);
    let counted = Update::set("counted", true);
    let mut ops = vec![
        TxOp::Update {
            table: Table::Leaderboards,
            key: board.entry_key(&user_id),
            update: counted.clone(),
            condition: Some(uncounted.clone()),
        },
        TxOp::Update {
            table: Table::Leaderboards,
            key: board.rank_row_key(&entry.rank_key),
            update: counted,
            condition: Some(Condition::Exists),
        },
    ];
    ops.extend(
        Change {
            removed: None,
            added: Some(entry.position()?),
        }
        .ops(board),
    );
    let car = BoardId::car(&board.track, &entry.row.vehicle_name);
    let in_car = match ports
        .items
        .get(Table::Leaderboards, &car.entry_key(&user_id))
        .await?
    {
        Some(i) => Some(StoredRow::from_item(i)?),
        None => None,
    };
    let on_car_board = StoredRow {
        counted: true,
        ..entry
    };
    let faster_in_car = in_car
        .as_ref()
        .is_none_or(|c| on_car_board.rank_key < c.rank_key);
    if faster_in_car {
        ops.extend(replace_ops(&car, in_car.as_ref(), &on_car_board)?);
        if adds_a_driver(in_car.as_ref()) {
            let count =
                vehicles::read_count(ports, &board.track, &on_car_board.row.vehicle_name).await?;
            ops.extend(vehicles::count_ops(&board.track, &count, 1));
        }
    }
    ports.items.transact(ops).await
}
