//! An item store that counts what passes through it: the calls made, the items read (a point
//! read that finds its item, each item a query answers), and the sequential steps the calls
//! took (calls whose spans overlap, made at once, count as one step), so a test can show what
//! a request costs in the units DynamoDB bills reads by and in round trips, on either backend.

use async_trait::async_trait;
use paddock_core::ports::items::{
    Condition, Item, ItemStore, Key, KeyPage, Page, Query, StoreError, TxOp, Update,
};
use paddock_core::tables::Table;
use std::sync::atomic::{AtomicU64, Ordering};
use std::sync::{Arc, Mutex};
use std::time::{Duration, Instant};

/// The wrapped store and its counters.
pub struct CountingItems {
    inner: Arc<dyn ItemStore>,
    calls: AtomicU64,
    items_read: AtomicU64,
    spans: Arc<Mutex<Vec<Span>>>,
    latency: Duration,
}

/// When one call ran, and what it was.
#[derive(Debug, Clone, Copy)]
pub struct Span {
    /// The call, as DynamoDB names its operation.
    pub operation: &'static str,
    /// When the call began.
    pub start: Instant,
    /// When it answered (or failed).
    pub end: Instant,
}

/// What was counted between two readings.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default)]
pub struct Counted {
    /// Store calls of any kind.
    pub calls: u64,
    /// Items read by point reads and queries.
    pub items_read: u64,
    /// Sequential steps: groups of calls whose spans overlap, one after another.
    pub steps: u64,
}

/// The number of sequential steps among `spans`: the longest chain of calls each of which
/// began after the one before it had answered (the round trips a request waited on one after
/// another). Calls made at once overlap, and count once.
pub fn steps(spans: &[Span]) -> u64 {
    grouped(spans).len() as u64
}

/// The operations of `spans` by sequential step: each call in the step after the latest
/// step of the calls that had answered before it began.
pub fn grouped(spans: &[Span]) -> Vec<Vec<&'static str>> {
    let mut sorted = spans.to_vec();
    sorted.sort_by_key(|s| (s.start, s.end));
    let mut levels: Vec<usize> = Vec::with_capacity(sorted.len());
    for (i, span) in sorted.iter().enumerate() {
        let level = sorted[..i]
            .iter()
            .zip(&levels)
            .filter(|(before, _)| before.end <= span.start)
            .map(|(_, level)| level + 1)
            .max()
            .unwrap_or(0);
        levels.push(level);
    }
    let mut steps: Vec<Vec<&'static str>> = Vec::new();
    for (span, level) in sorted.iter().zip(levels) {
        if steps.len() <= level {
            steps.resize_with(level + 1, Vec::new);
        }
        steps[level].push(span.operation);
    }
    steps
}

/// Records one call's span when dropped (an answer or an error alike).
struct Timed {
    operation: &'static str,
    start: Instant,
    spans: Arc<Mutex<Vec<Span>>>,
}

impl Drop for Timed {
    fn drop(&mut self) {
        let span = Span {
            operation: self.operation,
            start: self.start,
            end: Instant::now(),
        };
        if let Ok(mut spans) = self.spans.lock() {
            spans.push(span);
        }
    }
}

impl CountingItems {
    /// Counts the calls made to `inner`.
    pub fn new(inner: Arc<dyn ItemStore>) -> Arc<Self> {
        Self::with_latency(inner, Duration::ZERO)
    }

    /// Counts the calls made to `inner`, each held `latency` before it is passed on, as a
    /// network round trip would hold it. Without it, a call may answer within the first poll
    /// of its future (the embedded store's point reads do; so may a round trip to an emulator
    /// on loopback that is quicker than the client's own work), before a call made beside it
    /// has begun, and calls made at once would look like calls made one after another.
    pub fn with_latency(inner: Arc<dyn ItemStore>, latency: Duration) -> Arc<Self> {
        Arc::new(Self {
            inner,
            calls: AtomicU64::new(0),
            items_read: AtomicU64::new(0),
            spans: Arc::default(),
            latency,
        })
    }

    /// The counts so far.
    pub fn counted(&self) -> Counted {
        let spans = self.spans.lock().expect("spans").clone();
        Counted {
            calls: self.calls.load(Ordering::SeqCst),
            items_read: self.items_read.load(Ordering::SeqCst),
            steps: steps(&spans),
        }
    }

    /// What `during` cost.
    pub async fn cost_of<T>(&self, during: impl Future<Output = T>) -> (T, Counted) {
        let (out, counted, _) = self.spans_of(during).await;
        (out, counted)
    }

    /// What `during` cost, with the span of each of its calls in the order they began.
    pub async fn spans_of<T>(&self, during: impl Future<Output = T>) -> (T, Counted, Vec<Span>) {
        let (calls, items_read) = (
            self.calls.load(Ordering::SeqCst),
            self.items_read.load(Ordering::SeqCst),
        );
        let began = Instant::now();
        let out = during.await;
        let mut spans: Vec<Span> = self
            .spans
            .lock()
            .expect("spans")
            .iter()
            .filter(|s| s.start >= began)
            .copied()
            .collect();
        spans.sort_by_key(|s| s.start);
        let counted = Counted {
            calls: self.calls.load(Ordering::SeqCst) - calls,
            items_read: self.items_read.load(Ordering::SeqCst) - items_read,
            steps: steps(&spans),
        };
        (out, counted, spans)
    }

    async fn call(&self, operation: &'static str) -> Timed {
        self.calls.fetch_add(1, Ordering::SeqCst);
        let timed = Timed {
            operation,
            start: Instant::now(),
            spans: self.spans.clone(),
        };
        if !self.latency.is_zero() {
            tokio::time::sleep(self.latency).await;
        }
        timed
    }

    fn read(&self, n: usize) {
        self.items_read.fetch_add(n as u64, Ordering::SeqCst);
    }
}

#[async_trait]
impl ItemStore for CountingItems {
    async fn get(&self, table: Table, key: &Key) -> Result<Option<Item>, StoreError> {
        let _timed = self.call("GetItem").await;
        let item = self.inner.get(table, key).await?;
        self.read(usize::from(item.is_some()));
        Ok(item)
    }

    async fn get_shared(&self, table: Table, key: &Key) -> Result<Option<Arc<Item>>, StoreError> {
        let _timed = self.call("GetItem").await;
        let item = self.inner.get_shared(table, key).await?;
        self.read(usize::from(item.is_some()));
        Ok(item)
    }

    async fn get_many(&self, keys: Vec<(Table, Key)>) -> Result<Vec<Option<Item>>, StoreError> {
        let _timed = self.call("BatchGetItem").await;
        let items = self.inner.get_many(keys).await?;
        self.read(items.iter().flatten().count());
        Ok(items)
    }

    async fn transact_get(&self, keys: Vec<(Table, Key)>) -> Result<Vec<Option<Item>>, StoreError> {
        let _timed = self.call("TransactGetItems").await;
        let items = self.inner.transact_get(keys).await?;
        self.read(items.iter().flatten().count());
        Ok(items)
    }

    async fn put(
        &self,
        table: Table,
        item: Item,
        condition: Option<Condition>,
    ) -> Result<(), StoreError> {
        let _timed = self.call("PutItem").await;
        self.inner.put(table, item, condition).await
    }

    async fn update(
        &self,
        table: Table,
        key: &Key,
        update: Update,
        condition: Option<Condition>,
    ) -> Result<Item, StoreError> {
        let _timed = self.call("UpdateItem").await;
        self.inner.update(table, key, update, condition).await
    }

    async fn delete(
        &self,
        table: Table,
        key: &Key,
        condition: Option<Condition>,
    ) -> Result<Option<Item>, StoreError> {
        let _timed = self.call("DeleteItem").await;
        self.inner.delete(table, key, condition).await
    }

    async fn query(&self, query: Query) -> Result<Page, StoreError> {
        let _timed = self.call("Query").await;
        let page = self.inner.query(query).await?;
        self.read(page.items.len());
        Ok(page)
    }

    async fn transact(&self, ops: Vec<TxOp>) -> Result<(), StoreError> {
        let _timed = self.call("TransactWriteItems").await;
        self.inner.transact(ops).await
    }

    async fn put_many(&self, table: Table, items: Vec<Item>) -> Result<(), StoreError> {
        let _timed = self.call("BatchWriteItem").await;
        self.inner.put_many(table, items).await
    }

    async fn ping(&self) -> Result<(), StoreError> {
        self.inner.ping().await
    }

    async fn scan_expired(
        &self,
        table: Table,
        cursor: Option<String>,
        limit: usize,
    ) -> Result<KeyPage, StoreError> {
        let _timed = self.call("Scan").await;
        self.inner.scan_expired(table, cursor, limit).await
    }

    async fn delete_expired(&self, table: Table, key: &Key) -> Result<bool, StoreError> {
        let _timed = self.call("DeleteItem").await;
        self.inner.delete_expired(table, key).await
    }
}
