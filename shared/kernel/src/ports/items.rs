//! Item store port with DynamoDB semantics.
//!
//! Items are JSON objects holding their own key (`pk`, `sk`) and an optional expiry (`ttl`,
//! Unix seconds). An item whose `ttl` is at or before "now" is absent for every read and
//! every condition, exactly as DynamoDB's TTL is used here (its deletion is lazy, so reads
//! filter, and conditions treat such items as missing).

use async_trait::async_trait;
use base64::Engine;
use base64::engine::general_purpose::URL_SAFE_NO_PAD;
use serde::de::DeserializeOwned;
use serde_json::{Map, Value};

use crate::tables::Table;

/// An item: a JSON object with string attributes `pk` and `sk`.
pub type Item = Map<String, Value>;

/// Name of the partition key attribute.
pub const PK: &str = "pk";
/// Name of the sort key attribute.
pub const SK: &str = "sk";
/// Name of the expiry attribute (Unix seconds), DynamoDB's TTL attribute.
pub const TTL: &str = "ttl";
/// Largest item accepted, as in DynamoDB (400 KB), measured as its JSON text.
pub const MAX_ITEM_BYTES: usize = 400 * 1024;
/// Largest number of operations in one transaction, as in DynamoDB.
pub const MAX_TX_OPS: usize = 100;
/// Largest number of items one snapshot read ([`ItemStore::transact_get`]) takes: the limit
/// of DynamoDB's `TransactGetItems` that every DynamoDB (and DynamoDB Local) honours.
pub const MAX_SNAPSHOT_ITEMS: usize = 25;

/// The primary key of an item.
#[derive(Debug, Clone, PartialEq, Eq, Hash, PartialOrd, Ord)]
pub struct Key {
    /// Partition key.
    pub pk: String,
    /// Sort key.
    pub sk: String,
}

impl Key {
    /// A key from its two parts.
    pub fn new(pk: impl Into<String>, sk: impl Into<String>) -> Self {
        Self {
            pk: pk.into(),
            sk: sk.into(),
        }
    }

    /// The key of `item`, if it has string `pk` and `sk` attributes.
    pub fn of(item: &Item) -> Option<Self> {
        Some(Self::new(item.get(PK)?.as_str()?, item.get(SK)?.as_str()?))
    }
}

/// Builds an item from a key and a JSON object of other attributes.
pub fn item(key: &Key, attributes: Value) -> Item {
    let mut item = match attributes {
        Value::Object(map) => map,
        _ => Map::new(),
    };
    item.insert(PK.into(), Value::String(key.pk.clone()));
    item.insert(SK.into(), Value::String(key.sk.clone()));
    item
}

/// Reads a stored record (a `Deserialize` struct of the item's attributes) from its item.
///
/// An item that does not read as its record was written by no version of this code, so it
/// is reported as the store failing (`corrupt <what>: <attribute>: ...`, naming the attribute
/// that did not read, such as a malformed id) rather than as a missing item.
pub fn decode<T: DeserializeOwned>(item: Item, what: &str) -> Result<T, StoreError> {
    serde_path_to_error::deserialize(Value::Object(item)).map_err(|e| {
        let path = e.path().to_string();
        StoreError::Unavailable(format!("corrupt {what}: {path}: {}", e.into_inner()))
    })
}

/// True when `item` is expired at Unix time `now`.
pub fn is_expired(item: &Item, now: i64) -> bool {
    item.get(TTL)
        .and_then(Value::as_i64)
        .is_some_and(|ttl| ttl <= now)
}

/// A condition on the current state of one item, evaluated atomically with the write.
///
/// Semantics follow DynamoDB condition expressions, with expired items counted as absent:
/// on an absent item every attribute is missing.
#[derive(Debug, Clone, PartialEq)]
pub enum Condition {
    /// The item exists (and is not expired).
    Exists,
    /// The item does not exist (or is expired).
    NotExists,
    /// Attribute equals the value.
    Eq(String, Value),
    /// Attribute is present and differs from the value.
    Ne(String, Value),
    /// Attribute is less than the value (numbers or strings).
    Lt(String, Value),
    /// Attribute is greater than the value (numbers or strings).
    Gt(String, Value),
    /// The attribute is missing (true on an absent item).
    AttrNotExists(String),
    /// Every condition holds.
    And(Vec<Condition>),
    /// At least one condition holds.
    Or(Vec<Condition>),
}

impl Condition {
    /// Shorthand for `Eq`.
    pub fn eq(attr: &str, value: impl Into<Value>) -> Self {
        Self::Eq(attr.into(), value.into())
    }

    /// Evaluates the condition against the live item (`None` when absent or expired).
    pub fn holds(&self, item: Option<&Item>) -> bool {
        let attr = |name: &str| item.and_then(|i| i.get(name));
        match self {
            Self::Exists => item.is_some(),
            Self::NotExists => item.is_none(),
            Self::Eq(a, v) => attr(a) == Some(v),
            Self::Ne(a, v) => attr(a).is_some_and(|x| x != v),
            Self::Lt(a, v) => {
                attr(a).is_some_and(|x| compare(x, v) == Some(std::cmp::Ordering::Less))
            }
            Self::Gt(a, v) => {
                attr(a).is_some_and(|x| compare(x, v) == Some(std::cmp::Ordering::Greater))
            }
            Self::AttrNotExists(a) => attr(a).is_none(),
            Self::And(all) => all.iter().all(|c| c.holds(item)),
            Self::Or(any) => any.iter().any(|c| c.holds(item)),
        }
    }
}

/// Orders two JSON values of the same scalar kind, as DynamoDB compares N and S.
fn compare(a: &Value, b: &Value) -> Option<std::cmp::Ordering> {
    match (a, b) {
        (Value::Number(x), Value::Number(y)) => x.as_f64()?.partial_cmp(&y.as_f64()?),
        (Value::String(x), Value::String(y)) => Some(x.cmp(y)),
        _ => None,
    }
}

/// Changes to apply to one item; creates it when absent (like DynamoDB's UpdateItem).
#[derive(Debug, Clone, Default, PartialEq)]
pub struct Update {
    /// Attributes to set.
    pub set: Vec<(String, Value)>,
    /// Attributes to set only where the item has none yet (DynamoDB's `if_not_exists`).
    pub set_if_absent: Vec<(String, Value)>,
    /// Numeric attributes to increment (a missing attribute counts as 0).
    pub add: Vec<(String, i64)>,
    /// Attributes to remove.
    pub remove: Vec<String>,
}

impl Update {
    /// An update that sets one attribute.
    pub fn set(attr: &str, value: impl Into<Value>) -> Self {
        Self::default().and_set(attr, value)
    }

    /// Adds an attribute to set.
    pub fn and_set(mut self, attr: &str, value: impl Into<Value>) -> Self {
        self.set.push((attr.into(), value.into()));
        self
    }

    /// Adds an attribute to set unless the item has it already.
    pub fn and_set_if_absent(mut self, attr: &str, value: impl Into<Value>) -> Self {
        self.set_if_absent.push((attr.into(), value.into()));
        self
    }

    /// Adds an increment.
    pub fn and_add(mut self, attr: &str, by: i64) -> Self {
        self.add.push((attr.into(), by));
        self
    }

    /// Adds an attribute to remove.
    pub fn and_remove(mut self, attr: &str) -> Self {
        self.remove.push(attr.into());
        self
    }

    /// Applies the update to `base` (the live item, or a fresh one with `key`).
    pub fn apply(&self, key: &Key, base: Option<Item>) -> Item {
        let mut item = base.unwrap_or_else(|| item(key, Value::Null));
        for (a, v) in &self.set {
            item.insert(a.clone(), v.clone());
        }
        for (a, v) in &self.set_if_absent {
            item.entry(a.clone()).or_insert_with(|| v.clone());
        }
        for (a, by) in &self.add {
            let current = item.get(a).and_then(Value::as_i64).unwrap_or(0);
            item.insert(a.clone(), Value::from(current + by));
        }
        for a in &self.remove {
            item.remove(a);
        }
        item
    }

    /// Checks that the update does not touch the key attributes.
    pub fn check(&self) -> Result<(), StoreError> {
        let touches_key = self
            .set
            .iter()
            .chain(&self.set_if_absent)
            .map(|(a, _)| a)
            .chain(self.add.iter().map(|(a, _)| a))
            .chain(self.remove.iter())
            .any(|a| a == PK || a == SK);
        if touches_key {
            return Err(StoreError::Invalid(
                "an update cannot change pk or sk".into(),
            ));
        }
        Ok(())
    }
}

/// Which sort keys a query covers.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum SkRange {
    /// Every item of the partition.
    All,
    /// Sort keys starting with the prefix.
    BeginsWith(String),
    /// Sort keys between the bounds, both inclusive.
    Between(String, String),
}

/// A query of one partition, in sort-key order.
#[derive(Debug, Clone)]
pub struct Query {
    /// The logical table.
    pub table: Table,
    /// Partition key.
    pub pk: String,
    /// Which sort keys the query covers.
    pub range: SkRange,
    /// Page size (at least 1).
    pub limit: usize,
    /// Opaque cursor from a previous page.
    pub cursor: Option<String>,
    /// Descending sort-key order when true.
    pub descending: bool,
}

impl Query {
    /// A query of the whole partition `pk`, ascending, 100 items a page.
    pub fn partition(table: Table, pk: impl Into<String>) -> Self {
        Self {
            table,
            pk: pk.into(),
            range: SkRange::All,
            limit: 100,
            cursor: None,
            descending: false,
        }
    }

    /// Restricts the query to sort keys with `prefix`.
    pub fn begins_with(mut self, prefix: impl Into<String>) -> Self {
        self.range = SkRange::BeginsWith(prefix.into());
        self
    }

    /// Restricts the query to sort keys in `[from, to]`.
    pub fn between(mut self, from: impl Into<String>, to: impl Into<String>) -> Self {
        self.range = SkRange::Between(from.into(), to.into());
        self
    }

    /// Sets the page size.
    pub fn limit(mut self, limit: usize) -> Self {
        self.limit = limit.max(1);
        self
    }

    /// Continues after a previous page.
    pub fn after(mut self, cursor: Option<String>) -> Self {
        self.cursor = cursor;
        self
    }

    /// Newest (largest sort key) first.
    pub fn descending(mut self) -> Self {
        self.descending = true;
        self
    }

    /// The sort key a cursor points after, or an error for a cursor this query did not make.
    pub fn cursor_sk(&self) -> Result<Option<String>, StoreError> {
        self.cursor.as_deref().map(decode_cursor).transpose()
    }
}

/// Encodes the last sort key of a page as an opaque cursor.
pub fn encode_cursor(sk: &str) -> String {
    URL_SAFE_NO_PAD.encode(sk.as_bytes())
}

/// Reads a cursor made by [`encode_cursor`].
pub fn decode_cursor(cursor: &str) -> Result<String, StoreError> {
    URL_SAFE_NO_PAD
        .decode(cursor)
        .ok()
        .and_then(|b| String::from_utf8(b).ok())
        .ok_or(StoreError::InvalidCursor)
}

/// Checks that a paging loop moves on: the next cursor must differ from the one just used.
/// A cursor that stays put (a store answering the same page again) is an error rather than
/// a loop that runs until the request's deadline.
pub fn check_advances(previous: Option<&str>, next: &str) -> Result<(), StoreError> {
    if previous == Some(next) {
        return Err(StoreError::Unavailable(
            "a query's cursor did not advance".into(),
        ));
    }
    Ok(())
}

/// One page of query results.
#[derive(Debug, Clone, Default)]
pub struct Page {
    /// The entries of this page.
    pub items: Vec<Item>,
    /// Cursor of the next page; `None` on the last page.
    pub next_cursor: Option<String>,
}

/// One operation of a transaction.
#[derive(Debug, Clone)]
pub enum TxOp {
    /// Writes a whole item.
    Put {
        /// The logical table.
        table: Table,
        /// The whole item to write (with `pk` and `sk`).
        item: Item,
        /// Applied only if this holds for the current item.
        condition: Option<Condition>,
    },
    /// Changes some attributes of an item.
    Update {
        /// The logical table.
        table: Table,
        /// The configuration key at fault.
        key: Key,
        /// The change to apply.
        update: Update,
        /// Applied only if this holds for the current item.
        condition: Option<Condition>,
    },
    /// Removes an item.
    Delete {
        /// The logical table.
        table: Table,
        /// The configuration key at fault.
        key: Key,
        /// Applied only if this holds for the current item.
        condition: Option<Condition>,
    },
    /// Only checks a condition on an item.
    Check {
        /// The logical table.
        table: Table,
        /// The configuration key at fault.
        key: Key,
        /// Applied only if this holds for the current item.
        condition: Condition,
    },
}

impl TxOp {
    /// The table and key the operation touches.
    pub fn target(&self) -> Result<(Table, Key), StoreError> {
        match self {
            Self::Put { table, item, .. } => Ok((*table, checked_key(item)?)),
            Self::Update { table, key, .. }
            | Self::Delete { table, key, .. }
            | Self::Check { table, key, .. } => Ok((*table, key.clone())),
        }
    }

    /// The operation's condition, if any.
    pub fn condition(&self) -> Option<&Condition> {
        match self {
            Self::Put { condition, .. }
            | Self::Update { condition, .. }
            | Self::Delete { condition, .. } => condition.as_ref(),
            Self::Check { condition, .. } => Some(condition),
        }
    }
}

/// Checks an item's key and size before it is written.
pub fn checked_key(item: &Item) -> Result<Key, StoreError> {
    let key =
        Key::of(item).ok_or_else(|| StoreError::Invalid("item needs string pk and sk".into()))?;
    if key.pk.is_empty() || key.sk.is_empty() {
        return Err(StoreError::Invalid("pk and sk must not be empty".into()));
    }
    Ok(key)
}

/// Checks the encoded size of an item against [`MAX_ITEM_BYTES`].
pub fn check_size(item: &Item) -> Result<(), StoreError> {
    encode_within_limit(item).map(drop)
}

/// The item's JSON text, when it is within [`MAX_ITEM_BYTES`] (a store that keeps the text
/// encodes each item once, for the check and the write).
pub fn encode_within_limit(item: &Item) -> Result<String, StoreError> {
    let text = serde_json::to_string(item).map_err(|e| StoreError::Invalid(e.to_string()))?;
    if text.len() > MAX_ITEM_BYTES {
        return Err(StoreError::TooLarge(text.len()));
    }
    Ok(text)
}

/// Checks a transaction's shape: 1 to 100 operations on distinct items.
pub fn check_transaction(ops: &[TxOp]) -> Result<(), StoreError> {
    if ops.is_empty() || ops.len() > MAX_TX_OPS {
        return Err(StoreError::Invalid(format!(
            "a transaction has 1 to {MAX_TX_OPS} operations"
        )));
    }
    let mut seen = std::collections::HashSet::new();
    for op in ops {
        if !seen.insert(op.target()?) {
            return Err(StoreError::Invalid(
                "a transaction touches each item at most once".into(),
            ));
        }
        match op {
            TxOp::Put { item, .. } => check_size(item)?,
            TxOp::Update { update, .. } => update.check()?,
            _ => {}
        }
    }
    Ok(())
}

/// Checks a snapshot read's shape: 1 to [`MAX_SNAPSHOT_ITEMS`] distinct items.
pub fn check_snapshot(keys: &[(Table, Key)]) -> Result<(), StoreError> {
    if keys.is_empty() || keys.len() > MAX_SNAPSHOT_ITEMS {
        return Err(StoreError::Invalid(format!(
            "a snapshot read takes 1 to {MAX_SNAPSHOT_ITEMS} items"
        )));
    }
    let distinct: std::collections::HashSet<_> = keys.iter().collect();
    if distinct.len() != keys.len() {
        return Err(StoreError::Invalid(
            "a snapshot read names each item once".into(),
        ));
    }
    Ok(())
}

/// Why an item store operation failed.
#[derive(Debug, Clone, thiserror::Error)]
pub enum StoreError {
    /// The condition of operation `index` (0 for single-item calls) did not hold; nothing was written.
    #[error("condition of operation {index} failed")]
    ConditionFailed {
        /// The index of the operation whose condition failed (0 for single-item calls).
        index: usize,
    },
    /// A concurrent transaction touched the same items; nothing was written, retrying may succeed.
    #[error("transaction conflict")]
    Conflict,
    /// The item exceeds the size limit.
    #[error("item too large: {0} bytes")]
    TooLarge(usize),
    /// The request itself is invalid (a bug in the caller).
    #[error("invalid store request: {0}")]
    Invalid(String),
    /// The cursor was not made by this query.
    #[error("invalid cursor")]
    InvalidCursor,
    /// The backend could not be reached or failed.
    #[error("item store unavailable: {0}")]
    Unavailable(String),
}

impl StoreError {
    /// True when the condition of operation `index` failed.
    pub fn is_condition_failed_at(&self, index: usize) -> bool {
        matches!(self, Self::ConditionFailed { index: i } if *i == index)
    }
}

/// An item store with DynamoDB semantics.
#[async_trait]
pub trait ItemStore: Send + Sync {
    /// The live item under `key`.
    async fn get(&self, table: Table, key: &Key) -> Result<Option<Item>, StoreError>;
    /// The live item under `key`, to look at: a store that keeps items in memory (the
    /// embedded one) hands out its own copy instead of a clone of every attribute, which the
    /// token family's check on every authenticated request would otherwise pay.
    async fn get_shared(
        &self,
        table: Table,
        key: &Key,
    ) -> Result<Option<std::sync::Arc<Item>>, StoreError> {
        Ok(self.get(table, key).await?.map(std::sync::Arc::new))
    }
    /// The live items under `keys`, in the order asked (`None` where absent), read at once
    /// (DynamoDB's BatchGetItem, 100 keys a call, its unprocessed keys asked again; one
    /// SQLite read transaction). Each item is read consistently, but the items are not one
    /// snapshot: a write between two of them may show in one and not the other (see
    /// [`ItemStore::transact_get`]). Asking a key twice answers it twice.
    async fn get_many(&self, keys: Vec<(Table, Key)>) -> Result<Vec<Option<Item>>, StoreError> {
        futures::future::try_join_all(keys.iter().map(|(table, key)| self.get(*table, key))).await
    }
    /// The live items under `keys` (at most [`MAX_SNAPSHOT_ITEMS`], distinct), in the order
    /// asked, as one snapshot: no write is seen by some of them and not by others (DynamoDB's
    /// TransactGetItems; one SQLite read transaction). For counts that must add up, as a
    /// rank's do. The default reads them one by one: a store must override it to keep the
    /// snapshot.
    async fn transact_get(&self, keys: Vec<(Table, Key)>) -> Result<Vec<Option<Item>>, StoreError> {
        check_snapshot(&keys)?;
        futures::future::try_join_all(keys.iter().map(|(table, key)| self.get(*table, key))).await
    }
    /// Writes `item` whole if `condition` holds.
    async fn put(
        &self,
        table: Table,
        item: Item,
        condition: Option<Condition>,
    ) -> Result<(), StoreError>;
    /// Applies `update` if `condition` holds; returns the item as written.
    async fn update(
        &self,
        table: Table,
        key: &Key,
        update: Update,
        condition: Option<Condition>,
    ) -> Result<Item, StoreError>;
    /// Deletes the item if `condition` holds; returns the live item it removed, if any.
    async fn delete(
        &self,
        table: Table,
        key: &Key,
        condition: Option<Condition>,
    ) -> Result<Option<Item>, StoreError>;
    /// One page of a partition in sort-key order, live items only.
    async fn query(&self, query: Query) -> Result<Page, StoreError>;
    /// Applies every operation or none; a failed condition names its operation's index.
    async fn transact(&self, ops: Vec<TxOp>) -> Result<(), StoreError>;
    /// Writes many whole items unconditionally, in as few calls as the backend allows (bulk
    /// loads and imports: DynamoDB's BatchWriteItem, one SQLite transaction). Not atomic as a
    /// whole: on an error some items may be written.
    async fn put_many(&self, table: Table, items: Vec<Item>) -> Result<(), StoreError> {
        for item in items {
            self.put(table, item, None).await?;
        }
        Ok(())
    }
    /// Checks that the backend answers (readiness).
    async fn ping(&self) -> Result<(), StoreError>;
    /// One page of the keys of `table`'s expired items (`ttl` at or before now), in no
    /// particular order; a page may be empty and still have a next one. For the embedded
    /// retention sweep (SQLite has no expiry of its own; it reads an index on the expiry). The
    /// DynamoDB adapter answers it with a Scan, which reads the whole table: no schedule in
    /// AWS calls it (DynamoDB's TTL removes expired items there); tests and tools may.
    async fn scan_expired(
        &self,
        table: Table,
        cursor: Option<String>,
        limit: usize,
    ) -> Result<KeyPage, StoreError>;
    /// Deletes the item only if it is expired; true when this call removed it (so two
    /// sweeps at once count each item once, and an item renewed meanwhile stays).
    async fn delete_expired(&self, table: Table, key: &Key) -> Result<bool, StoreError>;
}

/// One page of keys.
#[derive(Debug, Clone, Default)]
pub struct KeyPage {
    /// The keys of this page.
    pub keys: Vec<Key>,
    /// Cursor of the next page; `None` on the last page.
    pub next_cursor: Option<String>,
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::ids::UserId;

    #[test]
    fn a_record_with_a_malformed_id_is_refused_naming_the_attribute() {
        #[derive(Debug, serde::Deserialize)]
        #[serde(rename_all = "camelCase")]
        #[allow(dead_code)]
        struct Record {
            owner_id: UserId,
        }
        let item = |id: &str| match serde_json::json!({"pk": "P", "sk": "S", "ownerId": id}) {
            Value::Object(item) => item,
            _ => unreachable!(),
        };
        let Err(StoreError::Unavailable(refused)) = decode::<Record>(item("u1"), "pack") else {
            panic!("a malformed id is refused");
        };
        assert!(
            refused.starts_with("corrupt pack: ownerId: invalid value"),
            "{refused}"
        );
        let id = UserId::new();
        let read: Record = decode(item(id.as_str()), "pack").unwrap();
        assert_eq!(read.owner_id, id);
    }
}
