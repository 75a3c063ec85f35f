//! Counts that make a rank computable without reading the board.
//!
//! Every counted entry of a board is tallied in four small items of the board's partition, in
//! the same transaction that writes, replaces or removes the entry:
//!
//! | item (sort key)        | one attribute per                 | holds at most |
//! |------------------------|-----------------------------------|---------------|
//! | `COUNT#R`              | 1,000 s of lap time (`b<n>`)      | 87 + `total`  |
//! | `COUNT#M#<ms/10^6>`    | second of lap time in that block  | 1,000         |
//! | `COUNT#S#<ms/1000>`    | millisecond in that second        | 1,000         |
//! | `COUNT#T#<ms>`         | submission day of that lap time   | days with one |
//!
//! The entries ahead of a row at lap time `ms`, submitted at `t`, are: the sum of the root's
//! attributes below its block, the block's below its second and the second's below its
//! millisecond (entries with a faster lap), plus the `COUNT#T` attributes of the days before
//! `t`'s day (equal times submitted on an earlier day), plus the rank rows of the same lap time
//! and day submitted before `t`, read by one query.
//!
//! So a rank costs four item reads and one query whose rows share the lap time to the
//! millisecond and the day of submission (the bound: rows of one board, one millisecond and
//! one day, which real boards keep to a handful), whatever the size of the board. A new best
//! needs no query at all: it is the latest submission, behind every equal time.

use serde_json::Value;

use super::board::{BoardId, Position, RANK_PREFIX};
use crate::ports::Ports;
use crate::ports::items::{Item, Key, Query, SK, StoreError, TxOp, Update, check_advances};
use crate::tables::Table;

/// The attribute of the root item holding the number of counted entries.
pub(crate) const TOTAL: &str = "total";
/// Sort-key prefix of the count items.
pub(crate) const COUNT_PREFIX: &str = "COUNT#";

fn root_sk() -> String {
    format!("{COUNT_PREFIX}R")
}
fn block_sk(ms: i64) -> String {
    format!("{COUNT_PREFIX}M#{:03}", ms / 1_000_000)
}
fn second_sk(ms: i64) -> String {
    format!("{COUNT_PREFIX}S#{:06}", ms / 1_000)
}
fn ties_sk(ms: i64) -> String {
    format!("{COUNT_PREFIX}T#{ms:010}")
}

/// The four (item, attribute) pairs that tally a row at `p`.
fn cells(p: Position) -> [(String, String); 4] {
    [
        (root_sk(), format!("b{}", p.ms / 1_000_000)),
        (block_sk(p.ms), format!("b{}", (p.ms / 1_000) % 1_000)),
        (second_sk(p.ms), format!("b{}", p.ms % 1_000)),
        (ties_sk(p.ms), format!("d{}", p.day())),
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

/// The count items on the path of one lap time.
#[derive(Debug, Default)]
pub(crate) struct Tally {
    root: Option<Item>,
    block: Option<Item>,
    second: Option<Item>,
    ties: Option<Item>,
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

impl Tally {
    /// Reads the count items on the path of lap time `ms` of `board` (four reads at once).
    pub(crate) async fn read(ports: &Ports, board: &BoardId, ms: i64) -> Result<Self, StoreError> {
        let pk = board.partition();
        let get = |sk: String| {
            let key = Key::new(pk.clone(), sk);
            async move { ports.items.get(Table::Leaderboards, &key).await }
        };
        let (root, block, second, ties) = futures::try_join!(
            get(root_sk()),
            get(block_sk(ms)),
            get(second_sk(ms)),
            get(ties_sk(ms))
        )?;
        Ok(Self {
            root,
            block,
            second,
            ties,
            ms,
        })
    }

    /// Counted entries on the board.
    pub(crate) fn total(&self) -> u64 {
        attr(self.root.as_ref(), TOTAL)
    }

    /// Counted entries with a faster lap than the tally's lap time.
    pub(crate) fn faster(&self) -> u64 {
        let ms = self.ms;
        sum_below(self.root.as_ref(), 'b', ms / 1_000_000)
            + sum_below(self.block.as_ref(), 'b', (ms / 1_000) % 1_000)
            + sum_below(self.second.as_ref(), 'b', ms % 1_000)
    }

    /// Counted entries with exactly the tally's lap time.
    pub(crate) fn equal(&self) -> u64 {
        attr(self.second.as_ref(), &format!("b{}", self.ms % 1_000))
    }

    /// Counted entries with the tally's lap time submitted on a day before `day`.
    pub(crate) fn equal_before_day(&self, day: i64) -> u64 {
        sum_below(self.ties.as_ref(), 'd', day)
    }
}

/// The board's number of counted entries (one read).
pub(crate) async fn total(ports: &Ports, board: &BoardId) -> Result<u64, StoreError> {
    let root = ports
        .items
        .get(Table::Leaderboards, &Key::new(board.partition(), root_sk()))
        .await?;
    Ok(attr(root.as_ref(), TOTAL))
}

/// Which rows of the rank order to count.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) enum Through {
    /// The rows before the key.
    Before,
    /// The rows before the key, and the key's own row.
    Including,
}

/// The counted rows of `board` ahead of rank key `rank_key` (and the row itself with
/// [`Through::Including`]), with the board's total: four reads and one bounded query.
pub(crate) async fn rows_ahead(
    ports: &Ports,
    board: &BoardId,
    rank_key: &str,
    through: Through,
) -> Result<(u64, u64), StoreError> {
    let p = Position::of(rank_key)
        .ok_or_else(|| StoreError::Invalid(format!("not a rank key: {rank_key}")))?;
    let tally = Tally::read(ports, board, p.ms).await?;
    let mut ahead = tally.faster() + tally.equal_before_day(p.day());
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
    Ok((ahead, tally.total()))
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

#[cfg(test)]
mod tests {
    use super::*;
    use crate::ids::TrackId;

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
        let board = BoardId::track(&TrackId::from("t"));
        let ops = Change {
            removed: None,
            added: Some(at(91_234, 86_400_000_000 * 3 + 5)),
        }
        .ops(&board);
        assert_eq!(
            adds(&ops),
            vec![
                (
                    "COUNT#R".into(),
                    vec![("b0".into(), 1), ("total".into(), 1)]
                ),
                ("COUNT#M#000".into(), vec![("b91".into(), 1)]),
                ("COUNT#S#000091".into(), vec![("b234".into(), 1)]),
                ("COUNT#T#0000091234".into(), vec![("d3".into(), 1)]),
            ]
        );
    }

    #[test]
    fn a_replacement_moves_the_count_and_touches_each_item_once() {
        let board = BoardId::track(&TrackId::from("t"));
        let ops = Change {
            removed: Some(at(91_234, 0)),
            added: Some(at(91_200, 0)),
        }
        .ops(&board);
        assert_eq!(
            adds(&ops),
            vec![
                (
                    "COUNT#S#000091".into(),
                    vec![("b234".into(), -1), ("b200".into(), 1)]
                ),
                ("COUNT#T#0000091234".into(), vec![("d0".into(), -1)]),
                ("COUNT#T#0000091200".into(), vec![("d0".into(), 1)]),
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
        let tally = Tally {
            root: item(&[("b0", 10), ("b1", 4), ("b2", 7), ("total", 21)]),
            block: item(&[("b90", 3), ("b91", 2), ("b92", 5)]),
            second: item(&[("b100", 1), ("b233", 1), ("b234", 3)]),
            ties: item(&[("d1", 1), ("d2", 1), ("d5", 1)]),
            ms: 1_091_234,
        };
        assert_eq!(tally.total(), 21);
        assert_eq!(tally.faster(), 10 + 3 + 2);
        assert_eq!(tally.equal(), 3);
        assert_eq!(tally.equal_before_day(5), 2);
    }
}
