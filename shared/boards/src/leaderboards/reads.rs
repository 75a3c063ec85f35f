//! Reading boards a page at a time: every read costs the page (at most `limit` rank rows)
//! plus the bounded count reads of [`super::rank_counts`], whatever the size of the board.

use serde_json::Value;

use super::board::{BoardId, RANK_END, RANK_PREFIX, Row, StoredRow};
use super::rank_counts::{self, Through};
use paddock_kernel::ids::UserId;
use paddock_kernel::ports::Ports;
use paddock_kernel::ports::items::{Item, Query, SK, StoreError};
use paddock_kernel::tables::Table;

/// A row with its rank.
#[derive(Debug, Clone)]
pub struct Ranked {
    /// 1 is fastest.
    pub rank: u64,
    /// The entry.
    pub row: Row,
    /// The rank row's sort key (its position in the rank order).
    pub rank_key: String,
}

/// Consecutive rows of a board in rank order.
#[derive(Debug, Clone)]
pub struct Slice {
    /// The rows, fastest first.
    pub rows: Vec<Ranked>,
    /// Entries on the board.
    pub total: u64,
    /// The position to read the next page after; `None` on the last page.
    pub next_after: Option<String>,
}

/// A page cursor: the position (rank key) of the previous page's last row.
pub fn encode_cursor(rank_key: &str) -> String {
    paddock_kernel::ports::items::encode_cursor(&format!("after:{rank_key}"))
}

/// The position a cursor made by [`encode_cursor`] names; `None` when it is not one.
///
/// The position becomes the start of a store query, so it must be exactly a rank row's sort
/// key ([`super::board::rank_sk`]): `RANK#`, 10 digits, `#`, 16 digits, `#`, a user id (a
/// UUID as ids are written). Anything else (`RANK#+000000001#…` parses as a number but sorts
/// before the day it names) would make a query DynamoDB refuses and the embedded store
/// answers.
pub fn decode_cursor(cursor: &str) -> Option<String> {
    let decoded = paddock_kernel::ports::items::decode_cursor(cursor).ok()?;
    let key = decoded.strip_prefix("after:")?;
    is_rank_key(key).then(|| key.to_owned())
}

/// Whether `key` has the exact shape of a rank row's sort key.
fn is_rank_key(key: &str) -> bool {
    let Some(rest) = key.strip_prefix(RANK_PREFIX) else {
        return false;
    };
    let mut parts = rest.splitn(3, '#');
    let digits = |part: Option<&str>, n: usize| {
        part.is_some_and(|p| p.len() == n && p.bytes().all(|b| b.is_ascii_digit()))
    };
    digits(parts.next(), 10)
        && digits(parts.next(), 16)
        && parts
            .next()
            .is_some_and(|user| user.parse::<UserId>().is_ok())
}

fn rows_of(items: Vec<Item>) -> Result<Vec<(String, Row)>, StoreError> {
    items
        .into_iter()
        .filter(|i| {
            i.get(SK)
                .and_then(Value::as_str)
                .is_some_and(|sk| sk.starts_with(RANK_PREFIX))
        })
        .map(|i| StoredRow::from_item(i).map(|s| (s.rank_key, s.row)))
        .collect()
}

fn ranked(first_rank: u64, rows: Vec<(String, Row)>) -> Vec<Ranked> {
    rows.into_iter()
        .zip(first_rank..)
        .map(|((rank_key, row), rank)| Ranked {
            rank,
            row,
            rank_key,
        })
        .collect()
}

/// Up to `limit` rank rows after `after` (exclusive), or from the first with `None`.
async fn rows_after(
    ports: &Ports,
    board: &BoardId,
    after: Option<&str>,
    limit: usize,
) -> Result<Vec<(String, Row)>, StoreError> {
    // A query's limit of 0 is no limit to the stores: none wanted is no read.
    if limit == 0 {
        return Ok(Vec::new());
    }
    let query = Query::partition(Table::Leaderboards, board.partition()).limit(limit);
    let query = match after {
        None => query.begins_with(RANK_PREFIX),
        Some(key) => query
            .between(RANK_PREFIX, RANK_END)
            .after(Some(paddock_kernel::ports::items::encode_cursor(key))),
    };
    rows_of(ports.items.query(query).await?.items)
}

/// Up to `limit` rank rows before `before` (exclusive), fastest first.
async fn rows_before(
    ports: &Ports,
    board: &BoardId,
    before: &str,
    limit: usize,
) -> Result<Vec<(String, Row)>, StoreError> {
    if limit == 0 {
        return Ok(Vec::new());
    }
    let page = ports
        .items
        .query(
            Query::partition(Table::Leaderboards, board.partition())
                .between(RANK_PREFIX, before)
                .descending()
                .limit(limit + 1),
        )
        .await?;
    let mut rows: Vec<_> = rows_of(page.items)?
        .into_iter()
        .filter(|(key, _)| key != before)
        .take(limit)
        .collect();
    rows.reverse();
    Ok(rows)
}

fn slice(rows: Vec<Ranked>, total: u64, limit: usize) -> Slice {
    let next_after = rows
        .last()
        .filter(|last| rows.len() == limit && last.rank < total)
        .map(|last| last.rank_key.clone());
    Slice {
        rows,
        total,
        next_after,
    }
}

/// The page of `board` after position `after` (the first page with `None`): the rank of its
/// first row and its rows, read at once.
pub async fn page(
    ports: &Ports,
    board: &BoardId,
    after: Option<&str>,
    limit: usize,
) -> Result<Slice, StoreError> {
    let ((ahead, total), rows) = futures::try_join!(
        async {
            match after {
                None => Ok((0, rank_counts::total(ports, board).await?)),
                Some(key) => rank_counts::rows_ahead(ports, board, key, Through::Including).await,
            }
        },
        rows_after(ports, board, after, limit)
    )?;
    Ok(slice(ranked(ahead + 1, rows), total, limit))
}

/// `user_id`'s stored entry on `board`, if any.
async fn stored_entry(
    ports: &Ports,
    board: &BoardId,
    user_id: &UserId,
) -> Result<Option<StoredRow>, StoreError> {
    ports
        .items
        .get(Table::Leaderboards, &board.entry_key(user_id))
        .await?
        .map(StoredRow::from_item)
        .transpose()
}

/// `stored` with its rank, and the board's total.
async fn ranked_entry(
    ports: &Ports,
    board: &BoardId,
    stored: StoredRow,
) -> Result<(Ranked, u64), StoreError> {
    let (ahead, total) =
        rank_counts::rows_ahead(ports, board, &stored.rank_key, Through::Before).await?;
    Ok((
        Ranked {
            rank: ahead + 1,
            row: stored.row,
            rank_key: stored.rank_key,
        },
        total,
    ))
}

/// `user_id`'s entry on `board` with its rank, and the board's total; `None` without one.
pub async fn entry(
    ports: &Ports,
    board: &BoardId,
    user_id: &UserId,
) -> Result<Option<(Ranked, u64)>, StoreError> {
    match stored_entry(ports, board, user_id).await? {
        Some(stored) => Ok(Some(ranked_entry(ports, board, stored).await?)),
        None => Ok(None),
    }
}

/// The page of `limit` rows centred on `user_id`'s entry; `None` without one. Once the entry
/// is read, its rank and the rows on either side are read at once: the rows after it are read
/// for a whole page less one and cut to what the rows before it leave room for.
pub async fn around(
    ports: &Ports,
    board: &BoardId,
    user_id: &UserId,
    limit: usize,
) -> Result<Option<Slice>, StoreError> {
    let Some(stored) = stored_entry(ports, board, user_id).await? else {
        return Ok(None);
    };
    let wanted_before = (limit - 1) / 2;
    let rank_key = stored.rank_key.clone();
    let ((me, total), before, mut after) = futures::try_join!(
        ranked_entry(ports, board, stored),
        rows_before(ports, board, &rank_key, wanted_before),
        rows_after(ports, board, Some(&rank_key), limit - 1)
    )?;
    after.truncate(limit - 1 - before.len());
    let first_rank = me.rank - before.len() as u64;
    let rows: Vec<(String, Row)> = before
        .into_iter()
        .chain(std::iter::once((me.rank_key, me.row)))
        .chain(after)
        .collect();
    Ok(Some(slice(ranked(first_rank, rows), total, limit)))
}

/// A driver's place on a board.
#[derive(Debug, Clone)]
pub struct Standing {
    /// The driver's entry and rank.
    pub entry: Ranked,
    /// Entries on the board.
    pub total: u64,
    /// The lap time of the driver just ahead; `None` for the first.
    pub ahead_ms: Option<i64>,
    /// The board's fastest lap time.
    pub first_ms: i64,
}

/// `user_id`'s place on `board`; `None` without an entry. Once the entry is read, its rank,
/// the row ahead of it and the fastest row are read at once.
pub async fn standing(
    ports: &Ports,
    board: &BoardId,
    user_id: &UserId,
) -> Result<Option<Standing>, StoreError> {
    let Some(stored) = stored_entry(ports, board, user_id).await? else {
        return Ok(None);
    };
    let rank_key = stored.rank_key.clone();
    let ((entry, total), ahead, fastest) = futures::try_join!(
        ranked_entry(ports, board, stored),
        rows_before(ports, board, &rank_key, 1),
        fastest(ports, board)
    )?;
    let first = match fastest {
        Some(row) => row.lap_time_ms,
        None => entry.row.lap_time_ms,
    };
    Ok(Some(Standing {
        ahead_ms: ahead.first().map(|(_, r)| r.lap_time_ms),
        first_ms: first,
        total,
        entry,
    }))
}

/// The fastest row of `board`, if any.
pub async fn fastest(ports: &Ports, board: &BoardId) -> Result<Option<Row>, StoreError> {
    Ok(rows_after(ports, board, None, 1)
        .await?
        .into_iter()
        .next()
        .map(|(_, r)| r))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn cursors_name_positions_and_refuse_anything_else() {
        let user = "0b6f9c1e-4a8d-4e57-9a51-3c0f6a2b7d10"
            .parse::<UserId>()
            .unwrap();
        let at = time::OffsetDateTime::from_unix_timestamp(1_700_000_000).unwrap();
        let key = super::super::board::rank_sk(91_500, at, &user);
        assert_eq!(
            decode_cursor(&encode_cursor(&key)).as_deref(),
            Some(key.as_str())
        );
        for bad in [
            "",
            "abc",
            &paddock_kernel::ports::items::encode_cursor("rank:20"),
        ] {
            assert_eq!(decode_cursor(bad), None, "{bad}");
        }
        let uuid = user.as_str();
        for forged in [
            "ENTRY#u1".to_owned(),
            "RANK#0000091500#1700000000000001#u1".to_owned(),
            format!("RANK#+000091500#1700000000000001#{uuid}"),
            format!("RANK#-000091500#1700000000000001#{uuid}"),
            format!("RANK#0000091500#+700000000000001#{uuid}"),
            format!("RANK#000091500#1700000000000001#{uuid}"),
            format!("RANK#0000091500#1700000000000001#{}", uuid.to_uppercase()),
            format!("RANK#0000091500#1700000000000001#{uuid}#x"),
            format!("RANK#0000091500#1700000000000001#{uuid}\u{FFFF}"),
            format!("RANK#0000091500#1700000000000001#{}", uuid.replace('-', "")),
        ] {
            let cursor = encode_cursor(&forged);
            assert_eq!(decode_cursor(&cursor), None, "{forged}");
        }
    }
}
