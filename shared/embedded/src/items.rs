//! SQLite item store with the same semantics as the DynamoDB adapter.
//!
//! One writer connection serialises writes (`BEGIN IMMEDIATE`), so a condition and the write
//! it guards are atomic; several reader connections serve reads beside it under WAL.

use async_trait::async_trait;
use rusqlite::{Connection, OptionalExtension, Transaction, TransactionBehavior, params};
use serde_json::Value;
use std::sync::Arc;
use std::sync::atomic::{AtomicUsize, Ordering};

use super::database::{Database, SharedConnection};
use super::read_cache::{Lookup, ReadCache};
use paddock_core::ports::Clock;
use paddock_core::ports::items::{
    Condition, Item, ItemStore, Key, KeyPage, Page, Query, SkRange, StoreError, TTL, TxOp, Update,
    check_snapshot, check_transaction, checked_key, decode_cursor, encode_cursor,
    encode_within_limit, is_expired,
};
use paddock_core::tables::Table;

const READERS: usize = 4;

/// The embedded item store.
pub struct SqliteItemStore {
    /// Keeps the data directory locked while the store lives.
    _lock: Arc<std::fs::File>,
    writer: SharedConnection,
    readers: Vec<SharedConnection>,
    next_reader: AtomicUsize,
    clock: Arc<dyn Clock>,
    cache: Arc<ReadCache>,
}

impl SqliteItemStore {
    /// An item store on `db`, judging expiry by `clock`.
    pub fn new(db: &Database, clock: Arc<dyn Clock>) -> rusqlite::Result<Self> {
        let readers = (0..READERS)
            .map(|_| db.shared())
            .collect::<Result<_, _>>()?;
        Ok(Self {
            _lock: db.lock(),
            writer: db.shared()?,
            readers,
            next_reader: AtomicUsize::new(0),
            clock,
            cache: Arc::default(),
        })
    }

    fn reader(&self) -> SharedConnection {
        let i = self.next_reader.fetch_add(1, Ordering::Relaxed) % self.readers.len();
        self.readers[i].clone()
    }

    /// Runs `f` on `conn` on the blocking pool.
    async fn with<T, F>(conn: SharedConnection, f: F) -> Result<T, StoreError>
    where
        T: Send + 'static,
        F: FnOnce(&mut Connection) -> Result<T, StoreError> + Send + 'static,
    {
        tokio::task::spawn_blocking(move || {
            let mut guard = conn
                .lock()
                .map_err(|_| StoreError::Unavailable("connection poisoned".into()))?;
            f(&mut guard)
        })
        .await
        .map_err(|e| StoreError::Unavailable(format!("store task failed: {e}")))?
    }

    /// The live items under `keys` read in one read transaction on a reader connection (a
    /// snapshot under WAL), inline as a point read is.
    fn read_together(&self, keys: &[(Table, Key)]) -> Result<Vec<Option<Item>>, StoreError> {
        let now = self.clock.unix();
        let conn = self.reader();
        let mut guard = conn
            .lock()
            .map_err(|_| StoreError::Unavailable("connection poisoned".into()))?;
        let tx = guard.transaction().map_err(db_err)?;
        let found = keys
            .iter()
            .map(|(table, key)| live(&tx, *table, key, now))
            .collect::<Result<Vec<_>, _>>()?;
        tx.finish().map_err(db_err)?;
        items_read(found.iter().flatten().count());
        Ok(found)
    }

    /// Runs `f` inside one write transaction on `keys`; commits only when it succeeds. The
    /// read cache forgets the keys once the transaction is over, inside the blocking task, so
    /// no caller sees the write's answer before the cache does.
    async fn write<T, F>(&self, keys: Vec<(Table, Key)>, f: F) -> Result<T, StoreError>
    where
        T: Send + 'static,
        F: FnOnce(&Transaction<'_>, i64) -> Result<T, StoreError> + Send + 'static,
    {
        let now = self.clock.unix();
        let cache = self.cache.clone();
        Self::with(self.writer.clone(), move |conn| {
            let outcome = (|| {
                let tx = conn
                    .transaction_with_behavior(TransactionBehavior::Immediate)
                    .map_err(db_err)?;
                let out = f(&tx, now)?;
                tx.commit().map_err(db_err)?;
                Ok(out)
            })();
            cache.forget(keys.iter().map(|(table, key)| (*table, key)));
            outcome
        })
        .await
    }
}

/// Counts items read from the database (Prometheus only).
fn items_read(n: usize) {
    // Resolved once: the label lookup would otherwise run on every read.
    static ITEMS_READ: std::sync::LazyLock<paddock_core::metrics::LabelledCounter> =
        std::sync::LazyLock::new(|| {
            paddock_core::metrics::global()
                .store_items_read
                .with_label_values(&["embedded"])
        });
    ITEMS_READ.inc_by(n as u64);
}

fn db_err(e: rusqlite::Error) -> StoreError {
    StoreError::Unavailable(e.to_string())
}

/// The live item under `key`, read inside `conn`'s current transaction.
fn live(conn: &Connection, table: Table, key: &Key, now: i64) -> Result<Option<Item>, StoreError> {
    let body: Option<String> = conn
        .prepare_cached("SELECT body FROM items WHERE tbl = ?1 AND pk = ?2 AND sk = ?3")
        .and_then(|mut s| {
            s.query_row(params![table.name(), key.pk, key.sk], |r| r.get(0))
                .optional()
        })
        .map_err(db_err)?;
    let item = body.map(|b| parse(&b)).transpose()?;
    Ok(item.filter(|i| !is_expired(i, now)))
}

/// The stored item under `key`, expired or not (updates apply to what is stored, as in DynamoDB).
fn stored(conn: &Connection, table: Table, key: &Key) -> Result<Option<Item>, StoreError> {
    live(conn, table, key, i64::MIN)
}

fn parse(body: &str) -> Result<Item, StoreError> {
    serde_json::from_str(body).map_err(|e| StoreError::Unavailable(format!("corrupt item: {e}")))
}

fn write_item(conn: &Connection, table: Table, key: &Key, item: &Item) -> Result<(), StoreError> {
    let ttl = item.get(TTL).and_then(Value::as_i64);
    let body = encode_within_limit(item)?;
    conn.prepare_cached(
        "INSERT OR REPLACE INTO items (tbl, pk, sk, ttl, body) VALUES (?1, ?2, ?3, ?4, ?5)",
    )
    .and_then(|mut s| s.execute(params![table.name(), key.pk, key.sk, ttl, body]))
    .map_err(db_err)?;
    Ok(())
}

fn remove_item(conn: &Connection, table: Table, key: &Key) -> Result<(), StoreError> {
    conn.prepare_cached("DELETE FROM items WHERE tbl = ?1 AND pk = ?2 AND sk = ?3")
        .and_then(|mut s| s.execute(params![table.name(), key.pk, key.sk]))
        .map_err(db_err)?;
    Ok(())
}

fn check(
    condition: Option<&Condition>,
    current: Option<&Item>,
    index: usize,
) -> Result<(), StoreError> {
    match condition {
        Some(c) if !c.holds(current) => Err(StoreError::ConditionFailed { index }),
        _ => Ok(()),
    }
}

/// Applies one operation after checking its condition. The item is read (and decoded) once:
/// conditions see it only while it has not expired, updates apply to what is stored.
fn apply(conn: &Connection, op: &TxOp, index: usize, now: i64) -> Result<(), StoreError> {
    let (table, key) = op.target()?;
    let stored = stored(conn, table, &key)?;
    let current = stored.as_ref().filter(|i| !is_expired(i, now));
    check(op.condition(), current, index)?;
    match op {
        TxOp::Put { item, .. } => write_item(conn, table, &key, item),
        TxOp::Update { update, .. } => write_item(conn, table, &key, &update.apply(&key, stored)),
        TxOp::Delete { .. } => remove_item(conn, table, &key),
        TxOp::Check { .. } => Ok(()),
    }
}

/// The statement of a query page and its two sort-key bounds. The cursor narrows the key range
/// itself, so SQLite seeks to it in the primary key's index: page k of a partition costs what
/// page 1 costs (a filter beside the range would walk every earlier row again).
fn range_sql(query: &Query, after: Option<String>) -> (String, String, String) {
    let (mut lo, mut hi) = match &query.range {
        SkRange::All => (String::new(), String::from(char::MAX)),
        SkRange::BeginsWith(p) => (p.clone(), format!("{p}{}", char::MAX)),
        SkRange::Between(a, b) => (a.clone(), b.clone()),
    };
    let (mut lo_cmp, mut hi_cmp) = (">=", "<=");
    if let Some(after) = after {
        if query.descending {
            if after <= hi {
                hi = after;
                hi_cmp = "<";
            }
        } else if after >= lo {
            lo = after;
            lo_cmp = ">";
        }
    }
    let order = if query.descending { "DESC" } else { "ASC" };
    let sql = format!(
        "SELECT sk, body FROM items WHERE tbl = ?1 AND pk = ?2 AND sk {lo_cmp} ?3 AND sk {hi_cmp} ?4 \
         AND (ttl IS NULL OR ttl > ?5) ORDER BY sk {order} LIMIT ?6"
    );
    (sql, lo, hi)
}

#[async_trait]
impl ItemStore for SqliteItemStore {
    async fn get(&self, table: Table, key: &Key) -> Result<Option<Item>, StoreError> {
        Ok(self.get_shared(table, key).await?.map(Arc::unwrap_or_clone))
    }

    async fn get_shared(&self, table: Table, key: &Key) -> Result<Option<Arc<Item>>, StoreError> {
        // A primary-key lookup takes microseconds: run it here rather than pay a hop to the
        // blocking pool (which costs more than the read). Writes and queries still hop.
        let now = self.clock.unix();
        let generation = match self.cache.lookup(table, key, now) {
            Lookup::Hit(found) => return Ok(found),
            Lookup::Miss(generation) => generation,
        };
        let conn = self.reader();
        let guard = conn
            .lock()
            .map_err(|_| StoreError::Unavailable("connection poisoned".into()))?;
        let found = live(&guard, table, key, now)?.map(Arc::new);
        drop(guard);
        items_read(usize::from(found.is_some()));
        self.cache.fill(table, key, found.clone(), generation);
        Ok(found)
    }

    async fn get_many(&self, keys: Vec<(Table, Key)>) -> Result<Vec<Option<Item>>, StoreError> {
        // Cached items are answered from memory; the rest in one read transaction.
        let now = self.clock.unix();
        let mut found = Vec::with_capacity(keys.len());
        let mut missed = Vec::new();
        for (i, (table, key)) in keys.iter().enumerate() {
            match self.cache.lookup(*table, key, now) {
                Lookup::Hit(item) => found.push(item.map(Arc::unwrap_or_clone)),
                Lookup::Miss(generation) => {
                    found.push(None);
                    missed.push((i, generation));
                }
            }
        }
        if missed.is_empty() {
            return Ok(found);
        }
        let asked: Vec<(Table, Key)> = missed.iter().map(|&(i, _)| keys[i].clone()).collect();
        let read = self.read_together(&asked)?;
        for ((i, generation), item) in missed.into_iter().zip(read) {
            let (table, key) = &keys[i];
            self.cache
                .fill(*table, key, item.clone().map(Arc::new), generation);
            found[i] = item;
        }
        Ok(found)
    }

    async fn transact_get(&self, keys: Vec<(Table, Key)>) -> Result<Vec<Option<Item>>, StoreError> {
        check_snapshot(&keys)?;
        // From the file, not the cache: one read transaction is one snapshot.
        self.read_together(&keys)
    }

    async fn put(
        &self,
        table: Table,
        item: Item,
        condition: Option<Condition>,
    ) -> Result<(), StoreError> {
        let key = checked_key(&item)?;
        // The size is checked where the item is encoded for the write.
        self.write(vec![(table, key.clone())], move |tx, now| {
            let current = live(tx, table, &key, now)?;
            check(condition.as_ref(), current.as_ref(), 0)?;
            write_item(tx, table, &key, &item)
        })
        .await
    }

    async fn put_many(&self, table: Table, items: Vec<Item>) -> Result<(), StoreError> {
        let mut keys = Vec::with_capacity(items.len());
        for item in &items {
            keys.push((table, checked_key(item)?));
        }
        let written: Vec<Key> = keys.iter().map(|(_, k)| k.clone()).collect();
        self.write(keys, move |tx, _| {
            for (key, item) in written.iter().zip(&items) {
                write_item(tx, table, key, item)?;
            }
            Ok(())
        })
        .await
    }

    async fn update(
        &self,
        table: Table,
        key: &Key,
        update: Update,
        condition: Option<Condition>,
    ) -> Result<Item, StoreError> {
        update.check()?;
        let key = key.clone();
        self.write(vec![(table, key.clone())], move |tx, now| {
            let stored = stored(tx, table, &key)?;
            let current = stored.as_ref().filter(|i| !is_expired(i, now));
            check(condition.as_ref(), current, 0)?;
            let item = update.apply(&key, stored);
            write_item(tx, table, &key, &item)?;
            Ok(item)
        })
        .await
    }

    async fn delete(
        &self,
        table: Table,
        key: &Key,
        condition: Option<Condition>,
    ) -> Result<Option<Item>, StoreError> {
        let key = key.clone();
        self.write(vec![(table, key.clone())], move |tx, now| {
            let current = live(tx, table, &key, now)?;
            check(condition.as_ref(), current.as_ref(), 0)?;
            remove_item(tx, table, &key)?;
            Ok(current)
        })
        .await
    }

    async fn query(&self, query: Query) -> Result<Page, StoreError> {
        let after = query.cursor_sk()?;
        let now = self.clock.unix();
        Self::with(self.reader(), move |conn| {
            let (sql, lo, hi) = range_sql(&query, after);
            let fetch = i64::try_from(query.limit.saturating_add(1)).unwrap_or(i64::MAX);
            let mut stmt = conn.prepare_cached(&sql).map_err(db_err)?;
            let rows = stmt
                .query_map(
                    params![query.table.name(), query.pk, lo, hi, now, fetch],
                    |r| Ok((r.get::<_, String>(0)?, r.get::<_, String>(1)?)),
                )
                .map_err(db_err)?;
            let mut items = Vec::new();
            let mut last_sk = Vec::new();
            for row in rows {
                let (sk, body) = row.map_err(db_err)?;
                items.push(parse(&body)?);
                last_sk.push(sk);
            }
            items_read(items.len());
            // The cursor is the stored key column of the last row (not an attribute of its
            // body), so it always lies strictly beyond the previous one.
            let next_cursor = if items.len() > query.limit {
                items.truncate(query.limit);
                last_sk.get(query.limit - 1).map(|sk| encode_cursor(sk))
            } else {
                None
            };
            Ok(Page { items, next_cursor })
        })
        .await
    }

    async fn transact(&self, ops: Vec<TxOp>) -> Result<(), StoreError> {
        check_transaction(&ops)?;
        let keys = ops
            .iter()
            .map(TxOp::target)
            .collect::<Result<Vec<_>, _>>()?;
        self.write(keys, move |tx, now| {
            for (index, op) in ops.iter().enumerate() {
                apply(tx, op, index, now)?;
            }
            Ok(())
        })
        .await
    }

    async fn scan_expired(
        &self,
        table: Table,
        cursor: Option<String>,
        limit: usize,
    ) -> Result<KeyPage, StoreError> {
        // The cursor is the last (ttl, pk, sk) of the previous page, in the index's order.
        let after: Option<(i64, String, String)> = cursor
            .as_deref()
            .map(|c| {
                decode_cursor(c).and_then(|raw| {
                    serde_json::from_str(&raw).map_err(|_| StoreError::InvalidCursor)
                })
            })
            .transpose()?;
        let now = self.clock.unix();
        let limit = limit.clamp(1, 1000);
        Self::with(self.reader(), move |conn| {
            let (ttl, pk, sk) = after.unwrap_or((i64::MIN, String::new(), String::new()));
            let mut stmt = conn
                .prepare_cached(
                    "SELECT ttl, pk, sk FROM items WHERE tbl = ?1 AND ttl IS NOT NULL AND ttl <= ?2 \
                     AND (ttl, pk, sk) > (?3, ?4, ?5) ORDER BY ttl, pk, sk LIMIT ?6",
                )
                .map_err(db_err)?;
            let rows = stmt
                .query_map(
                    params![table.name(), now, ttl, pk, sk, limit as i64],
                    |r| Ok((r.get::<_, i64>(0)?, r.get::<_, String>(1)?, r.get::<_, String>(2)?)),
                )
                .map_err(db_err)?
                .collect::<Result<Vec<_>, _>>()
                .map_err(db_err)?;
            let next_cursor = (rows.len() == limit)
                .then(|| rows.last())
                .flatten()
                .map(|last| encode_cursor(&serde_json::json!(last).to_string()));
            let keys = rows.into_iter().map(|(_, pk, sk)| Key::new(pk, sk)).collect();
            Ok(KeyPage { keys, next_cursor })
        })
        .await
    }

    async fn delete_expired(&self, table: Table, key: &Key) -> Result<bool, StoreError> {
        let key = key.clone();
        self.write(vec![(table, key.clone())], move |tx, now| {
            tx.prepare_cached(
                "DELETE FROM items WHERE tbl = ?1 AND pk = ?2 AND sk = ?3 AND ttl IS NOT NULL AND ttl <= ?4",
            )
            .and_then(|mut s| s.execute(params![table.name(), key.pk, key.sk, now]))
            .map(|removed| removed > 0)
            .map_err(db_err)
        })
        .await
    }

    async fn ping(&self) -> Result<(), StoreError> {
        Self::with(self.reader(), |conn| {
            conn.query_row("SELECT count(*) FROM sqlite_master", [], |r| {
                r.get::<_, i64>(0)
            })
            .map(|_| ())
            .map_err(db_err)
        })
        .await
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    /// The virtual-machine steps SQLite takes to answer one page of `query` over a partition
    /// of `rows` items.
    fn steps(conn: &Connection, query: &Query) -> i32 {
        let after = query.cursor_sk().unwrap();
        let (sql, lo, hi) = range_sql(query, after);
        let mut stmt = conn.prepare(&sql).unwrap();
        let n = stmt
            .query_map(params![query.table.name(), query.pk, lo, hi, 0, 21], |_| {
                Ok(())
            })
            .unwrap()
            .count();
        assert_eq!(n, 21);
        stmt.get_status(rusqlite::StatementStatus::VmStep)
    }

    #[test]
    fn a_deep_page_costs_what_the_first_costs() {
        let conn = Connection::open_in_memory().unwrap();
        conn.execute_batch(
            "CREATE TABLE items (tbl TEXT NOT NULL, pk TEXT NOT NULL, sk TEXT NOT NULL, \
             ttl INTEGER, body TEXT NOT NULL, PRIMARY KEY (tbl, pk, sk)) WITHOUT ROWID;",
        )
        .unwrap();
        let table = Table::Leaderboards;
        for i in 0..20_000 {
            let key = Key::new("P", format!("R#{i:06}"));
            write_item(
                &conn,
                table,
                &key,
                &paddock_core::ports::items::item(&key, Value::Null),
            )
            .unwrap();
        }
        let base = Query::partition(table, "P").begins_with("R#").limit(20);
        let first = steps(&conn, &base);
        let deep = steps(&conn, &base.clone().after(Some(encode_cursor("R#019000"))));
        let back = steps(
            &conn,
            &base
                .clone()
                .descending()
                .after(Some(encode_cursor("R#001000"))),
        );
        assert!(
            deep <= first * 2,
            "first page {first} steps, deep page {deep}"
        );
        assert!(
            back <= first * 2,
            "first page {first} steps, deep page back {back}"
        );
    }
}
