//! Retention on both adapter sets. The sweep (the embedded store's; it works on the AWS
//! adapters too) removes each kind of expired item, leaves live ones, counts each removal once
//! when two sweeps run at once; the local server runs it on its timer (embedded). What expiry
//! releases is checked as each backend runs it: the embedded sweep, and in AWS DynamoDB's TTL
//! (played here by a conditional delete of what is still expired, which is what TTL does)
//! followed by the retention function on the TTL removals of the share-pack stream.

use async_trait::async_trait;
use bytes::Bytes;
use paddock_core::ids::SharePackId;
use paddock_core::ports::blobs::BlobStream;
use paddock_core::ports::blobs::Taken;
use paddock_core::ports::items::{
    Condition, Item, ItemStore, Key, KeyPage, Page, Query, StoreError, TTL, TxOp, Update, item,
};
use paddock_core::ports::{BlobError, BlobStore, Clock};
use paddock_core::retention::{self, SweepReport, TtlRemoval};
use paddock_core::sharepacks::object_keys;
use paddock_core::tables::Table;
use paddock_tests::lambda_events::dynamodb_ttl_removals;
use paddock_tests::{Backend, TestPorts, ports, spawn_configured};
use serde_json::{Value, json};
use std::path::Path;
use std::sync::Arc;
use std::sync::atomic::{AtomicU64, Ordering};
use std::time::Duration;

/// One expired and one live item of each kind: (table, partition key, sort key, kind).
const KINDS: [(Table, &str, &str, &str); 9] = [
    (
        Table::Activity,
        "FEED#u1",
        "2026-01-01T00:00:00.000Z#e",
        "feed_entries",
    ),
    (
        Table::Activity,
        "PROCESSED#feed#e",
        "MARKER",
        "processed_markers",
    ),
    (Table::Tokens, "CODE#c", "CODE", "exchange_codes"),
    (Table::Tokens, "FLOW#f", "FLOW", "sign_in_flows"),
    (Table::Tokens, "FAMILY#f", "STATE", "refresh_tokens"),
    (Table::Limits, "RL#login#a", "1", "rate_limits"),
    (Table::Tracks, "JOBS", "j", "track_jobs"),
    (Table::Outbox, "OUTBOX#03", "e", "outbox_events"),
    (Table::Users, "USER#u1", "PROFILE", "users_other"),
];

async fn the_sweep_removes_each_expired_kind_once(backend: Backend) {
    let t = ports(backend).await;
    let now = t.clock.unix();
    for (i, (table, pk, sk, _)) in KINDS.iter().enumerate() {
        let expired = item(
            &Key::new(*pk, format!("{sk}-old")),
            json!({TTL: now - 1 - i as i64}),
        );
        t.ports.items.put(*table, expired, None).await.unwrap();
        let live = item(
            &Key::new(*pk, format!("{sk}-live")),
            json!({TTL: now + 3600}),
        );
        t.ports.items.put(*table, live, None).await.unwrap();
    }
    // An item without an expiry is never touched (the user's profile, here).
    let profile = item(
        &Key::new("USER#u1", "PROFILE"),
        json!({"displayName": "Kept"}),
    );
    t.ports
        .items
        .put(Table::Users, profile, None)
        .await
        .unwrap();

    // Two sweeps at once remove each item once between them.
    let (a, b) = tokio::join!(retention::sweep(&t.ports), retention::sweep(&t.ports));
    let (a, b) = (a.unwrap(), b.unwrap());
    let mut both = SweepReport::default();
    for report in [&a, &b] {
        for (kind, n) in &report.removed {
            *both.removed.entry(kind).or_default() += n;
        }
    }
    for (table, pk, sk, kind) in KINDS {
        assert_eq!(both.of(kind), 1, "{kind}: {both:?}");
        let old = Key::new(pk, format!("{sk}-old"));
        let live = Key::new(pk, format!("{sk}-live"));
        assert!(t.ports.items.get(table, &old).await.unwrap().is_none());
        assert!(
            t.ports.items.get(table, &live).await.unwrap().is_some(),
            "{kind} live item kept"
        );
    }
    assert_eq!(both.total(), KINDS.len() as u64);
    let kept = t
        .ports
        .items
        .get(Table::Users, &Key::new("USER#u1", "PROFILE"))
        .await
        .unwrap();
    assert!(kept.is_some());

    // Idempotent: a sweep with nothing expired removes nothing.
    assert_eq!(retention::sweep(&t.ports).await.unwrap().total(), 0);
    // Once the live items expire, they go too.
    t.clock.advance(time::Duration::hours(2));
    assert_eq!(
        retention::sweep(&t.ports).await.unwrap().total(),
        KINDS.len() as u64
    );
}

async fn the_local_server_sweeps_on_its_timer(backend: Backend) {
    let (app, clock) = spawn_configured(backend, |s| {
        s.retention_first_run = Duration::from_millis(300);
        s.retention_interval = Duration::from_secs(60);
    })
    .await;
    let key = Key::new("CODE#timer", "CODE");
    let code = item(&key, json!({TTL: clock.unix() - 10}));
    app.ports
        .items
        .put(Table::Tokens, code, None)
        .await
        .unwrap();
    let mut swept = false;
    for _ in 0..100 {
        if app
            .ports
            .items
            .scan_expired(Table::Tokens, None, 10)
            .await
            .unwrap()
            .keys
            .is_empty()
        {
            swept = true;
            break;
        }
        tokio::time::sleep(Duration::from_millis(100)).await;
    }
    assert!(swept, "the first sweep ran");
    let metrics = app.scrape_metrics().await.text().await.unwrap();
    assert!(
        metrics.contains("paddock_retention_deleted_total{kind=\"exchange_codes\"}"),
        "{metrics}"
    );
}

paddock_tests::on_both_backends!(
    plain: [],
    ports: [
        the_sweep_removes_each_expired_kind_once,
        an_expired_unfinished_pack_takes_its_objects,
        a_renewed_item_survives_a_sweep_that_raced_it,
        a_retention_run_cut_short_finishes_the_work_once,
    ],
);

#[tokio::test]
async fn the_local_server_sweeps_on_its_timer_embedded() {
    the_local_server_sweeps_on_its_timer(Backend::Embedded).await;
}

/// The pack id a test names `name`: the same one each time it is asked.
fn pack_id(name: &str) -> SharePackId {
    let folded = name.bytes().fold(0u128, |acc, b| {
        acc.wrapping_mul(257).wrapping_add(u128::from(b))
    });
    SharePackId::from(uuid::Uuid::from_u128(folded))
}

/// A pack item in `state` expiring at `expires`, with both of its objects in the blob store.
async fn pack_with_objects(t: &TestPorts, name: &str, state: &str, expires: Option<i64>) -> Item {
    let id = &pack_id(name);
    let mut attributes = json!({"state": state, "ownerId": "u1", "id": id, "name": "p"});
    if let Some(expires) = expires {
        attributes[TTL] = expires.into();
    }
    let pack = item(&Key::new(format!("PACK#{id}"), "META"), attributes);
    t.ports
        .items
        .put(Table::Sharepacks, pack.clone(), None)
        .await
        .unwrap();
    for object in object_keys(id) {
        t.ports
            .blobs
            .put(&object, Bytes::from_static(b"PK zip"), "application/zip")
            .await
            .unwrap();
    }
    pack
}

async fn objects_of(t: &TestPorts, name: &str) -> usize {
    let id = &pack_id(name);
    let mut n = 0;
    for object in object_keys(id) {
        n += usize::from(t.ports.blobs.get(&object).await.unwrap().is_some());
    }
    n
}

/// One retention run as `backend` runs it, over the items the test wrote that may have
/// expired (`written`): the embedded sweep; or in AWS, TTL's removal of each one still expired
/// and the retention function on their stream records. Answers the removals it counted, or
/// the error that cut it short.
async fn retention_run(
    backend: Backend,
    t: &TestPorts,
    written: &[(Table, Item)],
) -> Result<u64, String> {
    match backend {
        Backend::Embedded => retention::sweep(&t.ports)
            .await
            .map(|r| r.total())
            .map_err(|e| e.to_string()),
        Backend::Aws => {
            let mut removals = Vec::new();
            for (table, old) in written {
                let key = Key::of(old).unwrap();
                if t.ports.items.delete_expired(*table, &key).await.unwrap() {
                    removals.push(TtlRemoval {
                        table: *table,
                        key,
                        old: old.clone(),
                    });
                }
            }
            hand_to_the_function(t, &removals).await
        }
    }
}

/// Hands TTL removals to the retention function's handler as a stream batch; on a failure,
/// hands the batch again from the record it reported, as Lambda does.
async fn hand_to_the_function(t: &TestPorts, removals: &[TtlRemoval]) -> Result<u64, String> {
    let images: Vec<Value> = removals
        .iter()
        .map(|r| {
            let image: serde_dynamo::Item = serde_dynamo::to_item(&r.old).unwrap();
            serde_json::to_value(image).unwrap()
        })
        .collect();
    let arn = format!(
        "arn:aws:dynamodb:us-east-1:123456789012:table/{}",
        Table::Sharepacks.physical(&t.settings.table_prefix)
    );
    let event = dynamodb_ttl_removals(&arn, &images, 1);
    let event = serde_json::from_value(event).unwrap();
    let answer =
        paddock_runtime::lambda::handle_ttl_removals(event, &t.ports, &t.settings.table_prefix)
            .await;
    match answer.batch_item_failures.first() {
        None => Ok(removals.len() as u64),
        Some(failure) => {
            let from: usize = failure.item_identifier.as_deref().unwrap().parse().unwrap();
            Err(format!("cut short at record {from}"))
        }
    }
}

async fn an_expired_unfinished_pack_takes_its_objects(backend: Backend) {
    let t = ports(backend).await;
    let now = t.clock.unix();
    let pending = pack_with_objects(&t, "pending1", "pending", Some(now + 600)).await;
    let deleting = pack_with_objects(&t, "deleting1", "deleting", Some(now + 600)).await;
    // Cut short while its upload was being checked: the held copy exists too.
    let checking = pack_with_objects(&t, "checking1", "checking", Some(now + 600)).await;
    let ready = pack_with_objects(&t, "ready1", "ready", None).await;
    let written = [
        (Table::Sharepacks, pending),
        (Table::Sharepacks, deleting),
        (Table::Sharepacks, checking),
        (Table::Sharepacks, ready),
    ];
    let every_object = object_keys(&pack_id("any")).len();
    // Not yet expired: nothing goes.
    assert_eq!(retention_run(backend, &t, &written).await, Ok(0));
    assert_eq!(objects_of(&t, "pending1").await, every_object);
    t.clock.advance(time::Duration::minutes(11));
    assert_eq!(retention_run(backend, &t, &written).await, Ok(3));
    assert_eq!(objects_of(&t, "pending1").await, 0);
    assert_eq!(objects_of(&t, "deleting1").await, 0);
    assert_eq!(objects_of(&t, "checking1").await, 0);
    assert_eq!(
        objects_of(&t, "ready1").await,
        every_object,
        "a published pack is kept"
    );
    let ready_key = Key::new(format!("PACK#{}", pack_id("ready1")), "META");
    assert!(
        t.ports
            .items
            .get(Table::Sharepacks, &ready_key)
            .await
            .unwrap()
            .is_some()
    );
}

/// An item store whose `scan_expired` renews `renew` (pushes its expiry an hour on) once it
/// has answered, as a request would between the sweep's read and its delete.
struct RacingStore {
    inner: Arc<dyn ItemStore>,
    renew: (Table, Key),
    expires: i64,
}

#[async_trait]
impl ItemStore for RacingStore {
    async fn get(&self, table: Table, key: &Key) -> Result<Option<Item>, StoreError> {
        self.inner.get(table, key).await
    }
    async fn put(&self, table: Table, item: Item, c: Option<Condition>) -> Result<(), StoreError> {
        self.inner.put(table, item, c).await
    }
    async fn update(
        &self,
        table: Table,
        key: &Key,
        update: Update,
        c: Option<Condition>,
    ) -> Result<Item, StoreError> {
        self.inner.update(table, key, update, c).await
    }
    async fn delete(
        &self,
        table: Table,
        key: &Key,
        c: Option<Condition>,
    ) -> Result<Option<Item>, StoreError> {
        self.inner.delete(table, key, c).await
    }
    async fn query(&self, query: Query) -> Result<Page, StoreError> {
        self.inner.query(query).await
    }
    async fn transact(&self, ops: Vec<TxOp>) -> Result<(), StoreError> {
        self.inner.transact(ops).await
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
        let page = self.inner.scan_expired(table, cursor, limit).await?;
        if table == self.renew.0 {
            self.inner
                .update(table, &self.renew.1, Update::set(TTL, self.expires), None)
                .await?;
        }
        Ok(page)
    }
    async fn delete_expired(&self, table: Table, key: &Key) -> Result<bool, StoreError> {
        self.inner.delete_expired(table, key).await
    }
}

async fn a_renewed_item_survives_a_sweep_that_raced_it(backend: Backend) {
    let mut t = ports(backend).await;
    let now = t.clock.unix();
    let key = Key::new("FAMILY#raced", "STATE");
    let family = item(&key, json!({TTL: now - 5}));
    t.ports
        .items
        .put(Table::Tokens, family.clone(), None)
        .await
        .unwrap();
    let written = [(Table::Tokens, family)];
    match backend {
        Backend::Embedded => {
            // The sweep reads the expired key; a refresh renews the family before the delete.
            t.ports.items = Arc::new(RacingStore {
                inner: t.ports.items.clone(),
                renew: (Table::Tokens, key.clone()),
                expires: now + 3600,
            });
        }
        Backend::Aws => {
            // Renewed before TTL reached it: TTL deletes only what is still expired.
            t.ports
                .items
                .update(Table::Tokens, &key, Update::set(TTL, now + 3600), None)
                .await
                .unwrap();
        }
    }
    assert_eq!(retention_run(backend, &t, &written).await, Ok(0));
    assert!(
        t.ports
            .items
            .get(Table::Tokens, &key)
            .await
            .unwrap()
            .is_some()
    );
}

/// A blob store whose deletes fail after `allowed` of them, as a function stopped by its
/// timeout or a store that went away.
struct FailingDeletes {
    inner: Arc<dyn BlobStore>,
    allowed: AtomicU64,
}

#[async_trait]
impl BlobStore for FailingDeletes {
    async fn put(&self, key: &str, bytes: Bytes, content_type: &str) -> Result<(), BlobError> {
        self.inner.put(key, bytes, content_type).await
    }
    async fn get(&self, key: &str) -> Result<Option<Bytes>, BlobError> {
        self.inner.get(key).await
    }
    async fn delete(&self, key: &str) -> Result<(), BlobError> {
        let left = self.allowed.load(Ordering::SeqCst);
        if left == 0 {
            return Err(BlobError::Unavailable("cut short".into()));
        }
        self.allowed.store(left - 1, Ordering::SeqCst);
        self.inner.delete(key).await
    }
    async fn list(&self, prefix: &str) -> Result<Vec<String>, BlobError> {
        self.inner.list(prefix).await
    }
    async fn presigned_get(
        &self,
        key: &str,
        ttl: Duration,
        download_name: Option<&str>,
    ) -> Result<Option<String>, BlobError> {
        self.inner.presigned_get(key, ttl, download_name).await
    }
    async fn presigned_put(
        &self,
        key: &str,
        ttl: Duration,
        length: u64,
    ) -> Result<Option<String>, BlobError> {
        self.inner.presigned_put(key, ttl, length).await
    }
    async fn put_file(&self, key: &str, path: &Path, content_type: &str) -> Result<(), BlobError> {
        self.inner.put_file(key, path, content_type).await
    }
    async fn take_to_file(
        &self,
        key: &str,
        hold: &str,
        path: &Path,
    ) -> Result<Option<Taken>, BlobError> {
        self.inner.take_to_file(key, hold, path).await
    }
    async fn publish_taken(&self, taken: &Taken, path: &Path, to: &str) -> Result<bool, BlobError> {
        self.inner.publish_taken(taken, path, to).await
    }
    async fn get_stream(&self, key: &str) -> Result<Option<BlobStream>, BlobError> {
        self.inner.get_stream(key).await
    }
}

async fn a_retention_run_cut_short_finishes_the_work_once(backend: Backend) {
    let mut t = ports(backend).await;
    let now = t.clock.unix();
    let mut written = Vec::new();
    for n in 0..6 {
        let pack = pack_with_objects(&t, &format!("cut{n}"), "pending", Some(now - 10)).await;
        written.push((Table::Sharepacks, pack));
    }
    let full = t.ports.blobs.clone();
    // Three packs' objects go, then the run stops.
    let per_pack = object_keys(&pack_id("any")).len() as u64;
    t.ports.blobs = Arc::new(FailingDeletes {
        inner: full.clone(),
        allowed: AtomicU64::new(3 * per_pack),
    });
    let (first, second) = match backend {
        Backend::Embedded => {
            let first = retention::sweep(&t.ports).await;
            assert!(first.is_err(), "the first sweep is cut short");
            t.ports.blobs = full;
            (3, retention::sweep(&t.ports).await.unwrap().total())
        }
        Backend::Aws => {
            // TTL removed all six; the function fails on the fourth record and the stream
            // hands the batch again from there.
            let mut removals = Vec::new();
            for (table, old) in &written {
                let key = Key::of(old).unwrap();
                assert!(t.ports.items.delete_expired(*table, &key).await.unwrap());
                removals.push(TtlRemoval {
                    table: *table,
                    key,
                    old: old.clone(),
                });
            }
            let cut = hand_to_the_function(&t, &removals).await;
            assert_eq!(cut, Err("cut short at record 4".into()));
            t.ports.blobs = full;
            let rest = hand_to_the_function(&t, &removals[3..]).await.unwrap();
            (3, rest)
        }
    };
    assert_eq!(first + second, 6, "each pack handled once in all");
    assert_eq!(second, 3);
    for n in 0..6 {
        assert_eq!(objects_of(&t, &format!("cut{n}")).await, 0, "cut{n}");
        let key = Key::new(format!("PACK#{}", pack_id(&format!("cut{n}"))), "META");
        assert!(
            t.ports
                .items
                .get(Table::Sharepacks, &key)
                .await
                .unwrap()
                .is_none()
        );
    }
    // Nothing left: another run removes nothing.
    assert_eq!(retention_run(backend, &t, &written).await, Ok(0));
}
