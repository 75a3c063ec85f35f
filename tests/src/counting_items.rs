//! An item store that counts what passes through it: the calls made and the items read (a
//! point read that finds its item, each item a query answers), so a test can show what a
//! request costs in the units DynamoDB bills reads by, on either backend.

use async_trait::async_trait;
use paddock_core::ports::items::{
    Condition, Item, ItemStore, Key, KeyPage, Page, Query, StoreError, TxOp, Update,
};
use paddock_core::tables::Table;
use std::sync::Arc;
use std::sync::atomic::{AtomicU64, Ordering};

/// The wrapped store and its counters.
pub struct CountingItems {
    inner: Arc<dyn ItemStore>,
    calls: AtomicU64,
    items_read: AtomicU64,
}

/// What was counted between two readings.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default)]
pub struct Counted {
    /// Store calls of any kind.
    pub calls: u64,
    /// Items read by point reads and queries.
    pub items_read: u64,
}

impl CountingItems {
    /// Counts the calls made to `inner`.
    pub fn new(inner: Arc<dyn ItemStore>) -> Arc<Self> {
        Arc::new(Self {
            inner,
            calls: AtomicU64::new(0),
            items_read: AtomicU64::new(0),
        })
    }

    /// The counts so far.
    pub fn counted(&self) -> Counted {
        Counted {
            calls: self.calls.load(Ordering::SeqCst),
            items_read: self.items_read.load(Ordering::SeqCst),
        }
    }

    /// What `during` cost.
    pub async fn cost_of<T>(&self, during: impl Future<Output = T>) -> (T, Counted) {
        let before = self.counted();
        let out = during.await;
        let after = self.counted();
        (
            out,
            Counted {
                calls: after.calls - before.calls,
                items_read: after.items_read - before.items_read,
            },
        )
    }

    fn call(&self) {
        self.calls.fetch_add(1, Ordering::SeqCst);
    }

    fn read(&self, n: usize) {
        self.items_read.fetch_add(n as u64, Ordering::SeqCst);
    }
}

#[async_trait]
impl ItemStore for CountingItems {
    async fn get(&self, table: Table, key: &Key) -> Result<Option<Item>, StoreError> {
        self.call();
        let item = self.inner.get(table, key).await?;
        self.read(usize::from(item.is_some()));
        Ok(item)
    }

    async fn get_shared(&self, table: Table, key: &Key) -> Result<Option<Arc<Item>>, StoreError> {
        self.call();
        let item = self.inner.get_shared(table, key).await?;
        self.read(usize::from(item.is_some()));
        Ok(item)
    }

    async fn put(
        &self,
        table: Table,
        item: Item,
        condition: Option<Condition>,
    ) -> Result<(), StoreError> {
        self.call();
        self.inner.put(table, item, condition).await
    }

    async fn update(
        &self,
        table: Table,
        key: &Key,
        update: Update,
        condition: Option<Condition>,
    ) -> Result<Item, StoreError> {
        self.call();
        self.inner.update(table, key, update, condition).await
    }

    async fn delete(
        &self,
        table: Table,
        key: &Key,
        condition: Option<Condition>,
    ) -> Result<Option<Item>, StoreError> {
        self.call();
        self.inner.delete(table, key, condition).await
    }

    async fn query(&self, query: Query) -> Result<Page, StoreError> {
        self.call();
        let page = self.inner.query(query).await?;
        self.read(page.items.len());
        Ok(page)
    }

    async fn transact(&self, ops: Vec<TxOp>) -> Result<(), StoreError> {
        self.call();
        self.inner.transact(ops).await
    }

    async fn put_many(&self, table: Table, items: Vec<Item>) -> Result<(), StoreError> {
        self.call();
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
        self.call();
        self.inner.scan_expired(table, cursor, limit).await
    }

    async fn delete_expired(&self, table: Table, key: &Key) -> Result<bool, StoreError> {
        self.call();
        self.inner.delete_expired(table, key).await
    }
}
