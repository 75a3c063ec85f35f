//! Counts that make a rank computable without reading the board.
//!
//! Every counted entry of a board is tallied in six small items of the board's partition, in
//! the same transaction that writes, replaces or removes the entry:
//!
//! | item (sort key)          | one attribute per                          | holds at most   |
//! |--------------------------|--------------------------------------------|-----------------|
//! | `COUNT#R`                | 100 s of lap time (`b<n>`), and `total`    | 1 per 100 s     |
//! | `COUNT#H#<ms/10^5>`      | second of lap time in those 100 s          | 100             |
//! | `COUNT#S#<ms/1000>`      | 10 ms of lap time in that second           | 100             |
//! | `COUNT#C#<ms/10>`        | millisecond in those 10 ms                 | 10              |
//! | `COUNT#T#<ms>`           | 32-day period of submission (`p<n>`)       | 12 a year       |
//! | `COUNT#D#<ms>#<period>`  | day of submission in that period (`d<n>`)  | 32              |
//!
//! The entries ahead of a row at lap time `ms`, submitted at `t`, are: the sums of the root's,
//! the hundred seconds', the second's and the ten milliseconds' attributes below the row's
//! (entries with a faster lap), plus the `COUNT#T` attributes of the periods before `t`'s
//! and the `COUNT#D` attributes of the days before `t`'s in its period (equal times submitted
//! on an earlier day), plus the rank rows of the same lap time and day submitted before `t`,
//! read by one query.
//!
//! So a rank costs six item reads and one query whose rows share the lap time to the
//! millisecond and the day of submission (the bound: rows of one board, one millisecond and
//! one day, which real boards keep to a handful), whatever the size of the board. A new best
//! needs four reads and no query: it is the latest submission, behind every equal time. The
//! count items of a rank are read as one snapshot (`ItemStore::transact_get`): a submission
//! moves a row's counts between items in one transaction, and reads of the items one by one
//! could add up counts from before it and after it. The query is made beside that read (one
//! round trip for both). No
//! count item grows past about a hundred attributes however many drivers a board has (the
//! root: one per 100 s of the slowest lap; `COUNT#T`: one per period with an equal time), so
//! reading and changing one costs the same on a board of a thousand drivers and of a million
//! (an item's size is what DynamoDB charges a write by, and what the embedded store decodes).

use serde_json::Value;

use super::board::{BoardId, Position, RANK_PREFIX};
use paddock_kernel::ports::Ports;
use paddock_kernel::ports::items::{
    Item, Key, Query, SK, StoreError, TxOp, Update, check_advances,
};
use paddock_kernel::tables::Table;

/// The attribute of the root item holding the number of counted entries.
pub(crate) const TOTAL: &str = "total";
/// Sort-key prefix of the count items.
pub(crate) const COUNT_PREFIX: &str = "COUNT#";
/// Days in one period of the tie counts.
const PERIOD_DAYS: i64 = 32;

pub(crate) fn root_sk() -> String {
    format!("{COUNT_PREFIX}R")
}
pub(crate) fn hundred_seconds_sk(ms: i64) -> String {
    format!("{COUNT_PREFIX}H#{:05}", ms / 100_000)
}
fn second_sk(ms: i64) -> String {
    format!("{COUNT_PREFIX}S#{:07}", ms / 1_000)
}
fn ten_ms_sk(ms: i64) -> String {
    format!("{COUNT_PREFIX}C#{:09}", ms / 10)
}
fn ties_sk(ms: i64) -> String {
    format!("{COUNT_PREFIX}T#{ms:010}")
}
fn period(day: i64) -> i64 {
    day.div_euclid(PERIOD_DAYS)
}
fn period_sk(ms: i64, day: i64) -> String {
    format!("{COUNT_PREFIX}D#{ms:010}#{}", period(day))
}

/// The six (item, attribute) pairs that tally a row at `p`.
fn cells(p: Position) -> [(String, String); 6] {
    let (ms, day) = (p.ms, p.day());
    [
        (root_sk(), format!("b{}", ms / 100_000)),
        (hundred_seconds_sk(ms), format!("b{}", (ms / 1_000) % 100)),
        (second_sk(ms), format!("b{}", (ms / 10) % 100)),
        (ten_ms_sk(ms), format!("b{}", ms % 10)),
        (ties_sk(ms), format!("p{}", period(day))),
        (period_sk(ms, day), format!("d{day}")),
    ]
}

/// A change of one board's counted entries.
#[derive(Debug, Clone, Copy, Default)]
pub(crate) struct Change {
    /// A counted entry leaves this position.
    pub removed: Option<Position>,
    /// A counted entry arrives at this position.
    pub added: Option<Position>,
}

impl Change {
    /// The updates of the count items, one per item (a transaction may touch an item once).
    pub(crate) fn ops(&self, board: &BoardId) -> Vec<TxOp> {
        let mut updates: Vec<(String, Update)> = Vec::new();
        let mut add = |sk: String, attr: String, by: i64| {
            if let Some((_, u)) = updates.iter_mut().find(|(s, _)| *s == sk) {
                match u.add.iter_mut().find(|(a, _)| *a == attr) {
                    Some((_, n)) => *n += by,
                    None => u.add.push((attr, by)),
                }
            } else {
                updates.push((sk, Update::default().and_add(&attr, by)));
            }
        };
        for (p, by) in [(self.removed, -1), (self.added, 1)] {
            if let Some(p) = p {
                for (sk, attr) in cells(p) {
                    add(sk, attr, by);
                }
            }
        }
        let total = i64::from(self.added.is_some()) - i64::from(self.removed.is_some());
        if total != 0 {
            add(root_sk(), TOTAL.to_owned(), total);
        }
        let pk = board.partition();
        updates
            .into_iter()
            .filter_map(|(sk, mut update)| {
                update.add.retain(|(_, by)| *by != 0);
                (!update.add.is_empty()).then(|| TxOp::Update {
                    table: Table::Leaderboards,
                    key: Key::new(pk.clone(), sk),
                    update,
                    condition: None,
                })
            })
            .collect()
    }
}

/// The count items on the path of one lap time (and, for ranking an existing row, of its
/// submission day).
#[derive(Debug, Default)]
pub struct Tally {
    root: Option<Item>,
    hundred_seconds: Option<Item>,
    second: Option<Item>,
    ten_ms: Option<Item>,
    ties: Option<Item>,
    period: Option<Item>,
    ms: i64,
}

fn sum_below(item: Option<&Item>, prefix: char, below: i64) -> u64 {
    item.map_or(0, |item| {
        item.iter()
            .filter_map(|(name, v)| {
                let n: i64 = name.strip_prefix(prefix)?.parse().ok()?;
                (n < below).then(|| v.as_i64().unwrap_or(0).max(0).unsigned_abs())
            })
            .sum()
    })
}

fn attr(item: Option<&Item>, name: &str) -> u64 {
    item.and_then(|i| i.get(name))
        .and_then(Value::as_i64)
        .map_or(0, |n| n.max(0).unsigned_abs())
}

/// Reads count items of `board` as one snapshot, so the sums of a rank add up to one state of
/// the board even while submissions change it (they change the counts in one transaction).
async fn count_items<const N: usize>(
    ports: &Ports,
    board: &BoardId,
    sks: [String; N],
) -> Result<[Option<Item>; N], StoreError> {
    let pk = board.partition();
    let keys = sks
        .into_iter()
        .map(|sk| (Table::Leaderboards, Key::new(pk.clone(), sk)))
        .collect();
    let items = ports.items.transact_get(keys).await?;
    items
        .try_into()
        .map_err(|_| StoreError::Unavailable("a snapshot read answered too few items".into()))
}

/// Reads one count item of `board`.
async fn count_item(
    ports: &Ports,
    board: &BoardId,
    sk: String,
) -> Result<Option<Item>, StoreError> {
    ports
        .items
        .get(Table::Leaderboards, &Key::new(board.partition(), sk))
        .await
}

impl Tally {
    /// Reads the count items that give the entries faster than and equal to lap time `ms` of
    /// `board` (four items, one snapshot): enough to rank a new best.
    pub async fn read(ports: &Ports, board: &BoardId, ms: i64) -> Result<Self, StoreError> {
        let [root, hundred_seconds, second, ten_ms] = count_items(
            ports,
            board,
            [
                root_sk(),
                hundred_seconds_sk(ms),
                second_sk(ms),
                ten_ms_sk(ms),
            ],
        )
        .await?;
        Ok(Self {
            root,
            hundred_seconds,
            second,
            ten_ms,
            ties: None,
            period: None,
            ms,
        })
    }

    /// Reads the count items of position `p` of `board`, the tie counts of its lap time
    /// included (six items, one snapshot).
    pub async fn read_at(ports: &Ports, board: &BoardId, p: Position) -> Result<Self, StoreError> {
        let [root, hundred_seconds, second, ten_ms, ties, period] = count_items(
            ports,
            board,
            [
                root_sk(),
                hundred_seconds_sk(p.ms),
                second_sk(p.ms),
                ten_ms_sk(p.ms),
                ties_sk(p.ms),
                period_sk(p.ms, p.day()),
            ],
        )
        .await?;
        Ok(Self {
            root,
            hundred_seconds,
            second,
            ten_ms,
            ties,
            period,
            ms: p.ms,
        })
    }

    /// Counted entries on the board.
    pub fn total(&self) -> u64 {
        attr(self.root.as_ref(), TOTAL)
    }

    /// Counted entries with a faster lap than the tally's lap time.
    pub fn faster(&self) -> u64 {
        let ms = self.ms;
        sum_below(self.root.as_ref(), 'b', ms / 100_000)
            + sum_below(self.hundred_seconds.as_ref(), 'b', (ms / 1_000) % 100)
            + sum_below(self.second.as_ref(), 'b', (ms / 10) % 100)
            + sum_below(self.ten_ms.as_ref(), 'b', ms % 10)
    }

    /// Counted entries with exactly the tally's lap time.
    pub fn equal(&self) -> u64 {
        attr(self.ten_ms.as_ref(), &format!("b{}", self.ms % 10))
    }

    /// Counted entries with the tally's lap time submitted on a day before `day` (read by
    /// [`Tally::read_at`] for a position on that day).
    pub fn equal_before_day(&self, day: i64) -> u64 {
        sum_below(self.ties.as_ref(), 'p', period(day)) + sum_below(self.period.as_ref(), 'd', day)
    }
}

/// The board's number of counted entries (one read).
pub async fn total(ports: &Ports, board: &BoardId) -> Result<u64, StoreError> {
    let root = count_item(ports, board, root_sk()).await?;
    Ok(attr(root.as_ref(), TOTAL))
}

/// Which rows of the rank order to count.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Through {
    /// The rows before the key.
    Before,
    /// The rows before the key, and the key's own row.
    Including,
}

/// The counted rows of `board` ahead of rank key `rank_key` (and the row itself with
/// [`Through::Including`]), with the board's total: six reads and one bounded query.
pub async fn rows_ahead(
    ports: &Ports,
    board: &BoardId,
    rank_key: &str,
    through: Through,
) -> Result<(u64, u64), StoreError> {
    let p = Position::of(rank_key)
        .ok_or_else(|| StoreError::Invalid(format!("not a rank key: {rank_key}")))?;
    // The counts and the rows of the same lap time and day do not depend on each other: one
    // step for both.
    let (tally, same_day) = futures::try_join!(
        Tally::read_at(ports, board, p),
        same_day_ahead(ports, board, p, rank_key, through)
    )?;
    let ahead = tally.faster() + tally.equal_before_day(p.day()) + same_day;
    Ok((ahead, tally.total()))
}

/// The counted rank rows of `board` with the lap time and day of position `p` before
/// `rank_key` (and `rank_key`'s own row with [`Through::Including`]).
async fn same_day_ahead(
    ports: &Ports,
    board: &BoardId,
    p: Position,
    rank_key: &str,
    through: Through,
) -> Result<u64, StoreError> {
    let mut ahead = 0;
    let mut cursor = None;
    loop {
        let page = ports
            .items
            .query(
                Query::partition(Table::Leaderboards, board.partition())
                    .between(p.day_start_key(), rank_key)
                    .limit(100)
                    .after(cursor.clone()),
            )
            .await?;
        ahead += page
            .items
            .iter()
            .filter_map(|i| i.get(SK).and_then(Value::as_str))
            .filter(|sk| sk.starts_with(RANK_PREFIX))
            .filter(|sk| *sk != rank_key || through == Through::Including)
            .filter(|sk| counted(&page.items, sk))
            .count() as u64;
        match page.next_cursor {
            Some(next) => {
                check_advances(cursor.as_deref(), &next)?;
                cursor = Some(next);
            }
            None => break,
        }
    }
    Ok(ahead)
}

/// Whether the row with sort key `sk` among `items` is counted (rows written before the counts
/// existed are not, until the backfill counts them).
fn counted(items: &[Item], sk: &str) -> bool {
    items
        .iter()
        .find(|i| i.get(SK).and_then(Value::as_str) == Some(sk))
        .and_then(|i| i.get("counted"))
        .and_then(Value::as_bool)
        .unwrap_or(false)
}

/// The rank `current` holds on `board` (1 is fastest).
pub(crate) async fn rank_of(
    ports: &Ports,
    board: &BoardId,
    current: &super::board::StoredRow,
) -> Result<u64, StoreError> {
    let (ahead, _) = rows_ahead(ports, board, &current.rank_key, Through::Before).await?;
    Ok(ahead + 1)
}

#[cfg(test)]
mod tests {
    use super::*;
    use paddock_kernel::ids::TrackId;

    fn at(ms: i64, micros: i64) -> Position {
        Position { ms, micros }
    }

    fn adds(ops: &[TxOp]) -> Vec<(String, Vec<(String, i64)>)> {
        ops.iter()
            .map(|op| match op {
                TxOp::Update { key, update, .. } => (key.sk.clone(), update.add.clone()),
                other => panic!("{other:?}"),
            })
            .collect()
    }

    #[test]
    fn a_new_entry_adds_one_on_each_level_and_to_the_total() {
        let board = BoardId::track(&TrackId::from(uuid::Uuid::from_u128(1)));
        // Day 35 of the epoch: period 1.
        let ops = Change {
            removed: None,
            added: Some(at(91_234, 86_400_000_000 * 35 + 5)),
        }
        .ops(&board);
        assert_eq!(
            adds(&ops),
            vec![
                (
                    "COUNT#R".into(),
                    vec![("b0".into(), 1), ("total".into(), 1)]
                ),
                ("COUNT#H#00000".into(), vec![("b91".into(), 1)]),
                ("COUNT#S#0000091".into(), vec![("b23".into(), 1)]),
                ("COUNT#C#000009123".into(), vec![("b4".into(), 1)]),
                ("COUNT#T#0000091234".into(), vec![("p1".into(), 1)]),
                ("COUNT#D#0000091234#1".into(), vec![("d35".into(), 1)]),
            ]
        );
    }

    #[test]
    fn a_replacement_moves_the_count_and_touches_each_item_once() {
        let board = BoardId::track(&TrackId::from(uuid::Uuid::from_u128(1)));
        let ops = Change {
            removed: Some(at(91_234, 0)),
            added: Some(at(91_200, 0)),
        }
        .ops(&board);
        assert_eq!(
            adds(&ops),
            vec![
                (
                    "COUNT#S#0000091".into(),
                    vec![("b23".into(), -1), ("b20".into(), 1)]
                ),
                ("COUNT#C#000009123".into(), vec![("b4".into(), -1)]),
                ("COUNT#T#0000091234".into(), vec![("p0".into(), -1)]),
                ("COUNT#D#0000091234#0".into(), vec![("d0".into(), -1)]),
                ("COUNT#C#000009120".into(), vec![("b0".into(), 1)]),
                ("COUNT#T#0000091200".into(), vec![("p0".into(), 1)]),
                ("COUNT#D#0000091200#0".into(), vec![("d0".into(), 1)]),
            ]
        );
    }

    #[test]
    fn tallies_sum_the_levels_below_the_lap_time() {
        let item = |pairs: &[(&str, i64)]| -> Option<Item> {
            Some(
                pairs
                    .iter()
                    .map(|(k, v)| ((*k).to_owned(), Value::from(*v)))
                    .collect(),
            )
        };
        // Lap time 1,091,234 ms: 100 s block 10, second 91 in it, 10 ms step 23, ms 4.
        let tally = Tally {
            root: item(&[("b0", 10), ("b9", 4), ("b10", 7), ("b11", 1), ("total", 22)]),
            hundred_seconds: item(&[("b90", 3), ("b91", 2), ("b92", 2)]),
            second: item(&[("b5", 1), ("b23", 1), ("b40", 1)]),
            ten_ms: item(&[("b1", 1), ("b4", 3)]),
            ties: item(&[("p0", 1), ("p1", 1), ("p2", 1)]),
            period: item(&[("d64", 2), ("d65", 1), ("d70", 1)]),
            ms: 1_091_234,
        };
        assert_eq!(tally.total(), 22);
        // 10 + 4 below block 10; 3 below second 91; 1 below step 23; 1 below ms 4.
        assert_eq!(tally.faster(), 14 + 3 + 1 + 1);
        assert_eq!(tally.equal(), 3);
        // Day 70 is in period 2: periods 0 and 1, then days 64 and 65 of period 2.
        assert_eq!(tally.equal_before_day(70), 2 + 3);
    }

    #[test]
    fn every_count_item_stays_small_however_full_the_board() {
        // Positions at every lap time from 60 s to 200 s, over a year of days: no item gets
        // more than a hundred attributes.
        let board = BoardId::track(&TrackId::from(uuid::Uuid::from_u128(1)));
        let mut attrs: std::collections::HashMap<String, std::collections::HashSet<String>> =
            std::collections::HashMap::new();
        for i in 0..150_000_i64 {
            let ms = 60_000 + (i * 7_919) % 140_000;
            let micros = ((i * 104_729) % 365) * 86_400_000_000;
            let op = Change {
                removed: None,
                added: Some(at(ms, micros)),
            };
            for op in op.ops(&board) {
                if let TxOp::Update { key, update, .. } = op {
                    let names = attrs.entry(key.sk).or_default();
                    names.extend(update.add.into_iter().map(|(a, _)| a));
                }
            }
        }
        let widest = attrs.values().map(std::collections::HashSet::len).max();
        assert_eq!(widest, Some(100));
    }
}
