//! The in-process leaderboard cache: rendered pages (body bytes and ETag) for a few seconds,
//! bounded in bytes, and loaded once however many requests miss the same page at the same
//! time. An expired page is loaded again at its next read, and expired pages are dropped at
//! most a lifetime after they expire (at a later miss).
//!
//! `quick_cache` rather than `moka`: a hit is a read lock on one shard and two reference-count
//! increments; `moka`'s read also records the access for its eviction policy, several times
//! the CPU of a cached board read (docs/perf.md).
//!
//! Process memory holds caches only: a page is re-read once its lifetime is over, and a
//! submission in this process drops its track's pages at once. Other processes (other
//! Lambda instances) see a new best lap within the lifetime.

use bytes::Bytes;
use sha2::{Digest, Sha256};
use std::future::Future;
use std::sync::atomic::{AtomicU64, Ordering};
use std::sync::{Arc, LazyLock, Mutex, OnceLock};
use std::time::{Duration, Instant};

use quick_cache::sync::{EntryAction, EntryResult};

use super::board::BoardId;
use paddock_kernel::ids::{EventId, TrackId, UserId};
use paddock_kernel::ports::items::StoreError;
use paddock_platform::metrics::{self, LabelledCounter};

/// Which page of which board.
#[derive(Debug, Clone, PartialEq, Eq, Hash)]
pub struct PageKey {
    /// The board.
    pub board: BoardId,
    /// The position the page starts after (`None`: the first page).
    pub after: Option<String>,
    /// Entries on this page at most.
    pub limit: usize,
}

/// A page rendered as the response body.
#[derive(Debug, Clone)]
pub struct RenderedPage {
    /// The whole enveloped JSON body.
    pub body: Bytes,
    /// Strong ETag of the body, quoted (`"<hex>"`).
    pub etag: String,
}

impl RenderedPage {
    /// `body` with its ETag (a digest of it).
    pub fn with_etag(body: Vec<u8>) -> Self {
        let digest = Sha256::digest(&body);
        let hex = paddock_kernel::hashing::hex(&digest[..16]);
        let etag = format!("\"{hex}\"");
        Self {
            body: Bytes::from(body),
            etag,
        }
    }
}

/// Why a page could not be loaded.
#[derive(Debug, Clone, thiserror::Error)]
pub enum PageError {
    /// No such track.
    #[error("track not found")]
    TrackNotFound,
    /// The item store failed.
    #[error(transparent)]
    Store(#[from] StoreError),
}

/// A cached page and when it stops being served.
#[derive(Clone)]
struct Cached {
    page: RenderedPage,
    expires: Instant,
}

/// Which page of which driver (the public driver page).
#[derive(Debug, Clone, PartialEq, Eq, Hash)]
pub struct DriverPageKey {
    /// The driver.
    pub user_id: UserId,
    /// The cursor the page starts after (`None`: the first page).
    pub after: Option<String>,
}

/// Which link preview (the PNG a shared link shows).
#[derive(Debug, Clone, PartialEq, Eq, Hash)]
pub enum PreviewKey {
    /// The preview of a board (the track's, or a car's).
    Board(BoardId),
    /// The preview of a driver's page.
    Driver(UserId),
    /// The preview of a public event's page: drawn again after the cache lifetime only (the
    /// event's track is not in its key).
    Event(EventId),
}

impl PreviewKey {
    /// Whether a change on the boards of `track_id` changes this preview.
    fn shows_track(&self, track_id: &TrackId) -> bool {
        matches!(self, Self::Board(board) if board.track == *track_id)
    }

    /// Whether a change of driver `user_id` changes this preview.
    fn shows_driver(&self, user_id: &UserId) -> bool {
        matches!(self, Self::Driver(user) if user == user_id)
    }
}

/// The bytes a key adds to its page's weight besides the body.
trait KeyBytes {
    fn key_bytes(&self) -> usize;
}

impl KeyBytes for PageKey {
    fn key_bytes(&self) -> usize {
        self.after.as_ref().map_or(0, String::len)
    }
}

impl KeyBytes for PreviewKey {
    fn key_bytes(&self) -> usize {
        match self {
            Self::Board(board) => board.track.as_str().len() + 64,
            Self::Driver(user) => user.as_str().len(),
            Self::Event(event) => event.as_str().len(),
        }
    }
}

impl KeyBytes for DriverPageKey {
    fn key_bytes(&self) -> usize {
        self.user_id.as_str().len() + self.after.as_ref().map_or(0, String::len)
    }
}

/// A page's weight: its body, its key's position and the entry's own bytes.
#[derive(Clone)]
struct PageWeight;

impl<K: KeyBytes> quick_cache::Weighter<K, Cached> for PageWeight {
    fn weight(&self, key: &K, cached: &Cached) -> u64 {
        (cached.page.body.len() + key.key_bytes() + 160) as u64
    }
}

type Pages<K> = quick_cache::sync::Cache<K, Cached, PageWeight>;

/// A page cache of about `max_bytes` of pages.
fn pages_of<K: KeyBytes + Eq + std::hash::Hash + Clone>(max_bytes: u64) -> Pages<K> {
    let estimated = usize::try_from(max_bytes / 4096)
        .unwrap_or(usize::MAX)
        .max(16);
    let options = quick_cache::OptionsBuilder::new()
        .estimated_items_capacity(estimated)
        .weight_capacity(max_bytes)
        .build()
        .expect("capacities are set");
    Pages::with_options(options, PageWeight, Default::default(), Default::default())
}

/// Rendered pages by board and position, the public driver pages, and the pages' link
/// previews.
pub struct BoardCache {
    lifetime: Duration,
    /// About the bytes of board pages kept (driver pages and previews get a quarter each).
    max_bytes: u64,
    // Each table is made when it first keeps a page: making one sizes its entries for its
    // bytes and counts the cores for its shards, which every HTTP function's start paid,
    // though most of them never show a board.
    pages: OnceLock<Pages<PageKey>>,
    drivers: OnceLock<Pages<DriverPageKey>>,
    /// PNGs of tens of kilobytes, each hundreds of milliseconds of CPU to draw.
    previews: OnceLock<Pages<PreviewKey>>,
    /// When expired pages were last dropped (milliseconds since `started`).
    purged_ms: AtomicU64,
    started: Instant,
}

impl BoardCache {
    /// A cache keeping pages for `lifetime` (zero: every read goes to the store), holding
    /// about `max_bytes` of page bodies at most.
    pub fn new(lifetime: Duration, max_bytes: u64) -> Self {
        Self {
            lifetime,
            max_bytes,
            pages: OnceLock::new(),
            drivers: OnceLock::new(),
            previews: OnceLock::new(),
            purged_ms: AtomicU64::new(0),
            started: Instant::now(),
        }
    }

    /// `table`, made now if this is its first page, holding about `max_bytes`; none when pages
    /// are not kept (a zero lifetime).
    fn kept<'a, K: KeyBytes + Eq + std::hash::Hash + Clone>(
        &self,
        table: &'a OnceLock<Pages<K>>,
        max_bytes: u64,
    ) -> Option<&'a Pages<K>> {
        (!self.lifetime.is_zero()).then(|| table.get_or_init(|| pages_of(max_bytes)))
    }

    /// The cache lifetime.
    pub fn lifetime(&self) -> Duration {
        self.lifetime
    }

    /// The page `key`, from the cache or from `load` (called with the key on a miss only, and
    /// run once for all the requests that miss the same page meanwhile).
    pub async fn page<L, F>(&self, key: PageKey, load: L) -> Result<RenderedPage, PageError>
    where
        L: FnOnce(PageKey) -> F,
        F: Future<Output = Result<RenderedPage, PageError>>,
    {
        // A typical page is a few kilobytes: the entry table is sized for that.
        self.cached(self.kept(&self.pages, self.max_bytes), key, load)
            .await
    }

    /// The driver page `key`, as [`Self::page`] does for boards (its lifetime is the same; a
    /// submission does not drop it).
    pub async fn driver_page<L, F, E>(&self, key: DriverPageKey, load: L) -> Result<RenderedPage, E>
    where
        L: FnOnce(DriverPageKey) -> F,
        F: Future<Output = Result<RenderedPage, E>>,
    {
        // A quarter of the bytes of board pages: fewer links, shared less.
        self.cached(self.kept(&self.drivers, self.max_bytes / 4), key, load)
            .await
    }

    /// The link preview `key`, as [`Self::page`] does for boards: a board's is dropped with
    /// the track's pages ([`Self::invalidate`]), a driver's with the driver's pages
    /// ([`Self::forget_driver`]).
    pub async fn preview<L, F, E>(&self, key: PreviewKey, load: L) -> Result<RenderedPage, E>
    where
        L: FnOnce(PreviewKey) -> F,
        F: Future<Output = Result<RenderedPage, E>>,
    {
        // A quarter too: far fewer of them are asked for (a link's first showing), each far
        // costlier to draw than to keep.
        self.cached(self.kept(&self.previews, self.max_bytes / 4), key, load)
            .await
    }

    async fn cached<K, L, F, E>(
        &self,
        pages: Option<&Pages<K>>,
        key: K,
        load: L,
    ) -> Result<RenderedPage, E>
    where
        K: KeyBytes + Eq + std::hash::Hash + Clone,
        L: FnOnce(K) -> F,
        F: Future<Output = Result<RenderedPage, E>>,
    {
        // Resolved once: a label lookup on every page read would cost more than the count.
        static HIT: LazyLock<LabelledCounter> = LazyLock::new(|| {
            metrics::global()
                .leaderboard_cache
                .with_label_values(&["hit"])
        });
        static MISS: LazyLock<LabelledCounter> = LazyLock::new(|| {
            metrics::global()
                .leaderboard_cache
                .with_label_values(&["miss"])
        });
        let Some(pages) = pages else {
            MISS.inc();
            return load(key).await;
        };
        let now = Instant::now();
        if let Some(cached) = pages.get(&key).filter(|c| c.expires > now) {
            HIT.inc();
            return Ok(cached.page);
        }
        // Missing or expired: one request loads it (an expired page is swapped for the
        // loader's placeholder at once), the others meanwhile wait for its page.
        let fresh = |_: &K, cached: &mut Cached| {
            if cached.expires > Instant::now() {
                EntryAction::Retain(cached.page.clone())
            } else {
                EntryAction::ReplaceWithGuard
            }
        };
        let guard = match pages.entry_async(&key, fresh).await {
            EntryResult::Retained(page) => {
                HIT.inc();
                return Ok(page);
            }
            EntryResult::Vacant(guard) | EntryResult::Replaced(guard, _) => Some(guard),
            // Not produced here (no timeout is set, the action never removes): load uncached.
            EntryResult::Removed(..) | EntryResult::Timeout => None,
        };
        MISS.inc();
        self.purge_expired(now);
        // A failed load drops the guard: the next waiter loads in its turn.
        let page = load(key).await?;
        if let Some(guard) = guard {
            let _ = guard.insert(Cached {
                page: page.clone(),
                expires: Instant::now() + self.lifetime,
            });
        }
        Ok(page)
    }

    /// Drops the expired pages, at most once a lifetime (on a miss, so an idle cache costs
    /// nothing).
    fn purge_expired(&self, now: Instant) {
        let now_ms =
            u64::try_from(now.duration_since(self.started).as_millis()).unwrap_or(u64::MAX);
        let last = self.purged_ms.load(Ordering::Relaxed);
        let lifetime_ms = u64::try_from(self.lifetime.as_millis()).unwrap_or(u64::MAX);
        if now_ms.saturating_sub(last) < lifetime_ms
            || self
                .purged_ms
                .compare_exchange(last, now_ms, Ordering::Relaxed, Ordering::Relaxed)
                .is_err()
        {
            return;
        }
        if let Some(pages) = self.pages.get() {
            pages.retain(|_, cached| cached.expires > now);
        }
        if let Some(drivers) = self.drivers.get() {
            drivers.retain(|_, cached| cached.expires > now);
        }
        if let Some(previews) = self.previews.get() {
            previews.retain(|_, cached| cached.expires > now);
        }
    }

    /// Forgets the pages and previews of every board of `track_id` (a submission changed
    /// them).
    pub fn invalidate(&self, track_id: &TrackId) {
        if let Some(pages) = self.pages.get() {
            pages.retain(|k, _| k.board.track != *track_id);
        }
        if let Some(previews) = self.previews.get() {
            previews.retain(|k, _| !k.shows_track(track_id));
        }
    }

    /// Forgets the pages and preview of driver `user_id` (renamed, deleted, or a new best).
    pub fn forget_driver(&self, user_id: &UserId) {
        if let Some(drivers) = self.drivers.get() {
            drivers.retain(|k, _| k.user_id != *user_id);
        }
        if let Some(previews) = self.previews.get() {
            previews.retain(|k, _| !k.shows_driver(user_id));
        }
    }

    /// Makes `cache` one that [`invalidate_in_process`] reaches.
    pub fn register(cache: &Arc<Self>) {
        if let Ok(mut live) = LIVE_CACHES.lock() {
            live.retain(|c| c.strong_count() > 0);
            live.push(Arc::downgrade(cache));
        }
    }
}

/// The board caches of this process. A consumer that changes boards behind the HTTP
/// handlers' back (a renamed or deleted driver) has no handle on their state, so it reaches
/// their caches through this list. In AWS the consumer runs in its own function, whose process
/// holds no caches: the leaderboard function's instances show the change once their cache
/// lifetime (`Leaderboards__CacheSeconds`) has passed.
static LIVE_CACHES: Mutex<Vec<std::sync::Weak<BoardCache>>> = Mutex::new(Vec::new());

/// The live caches of this process.
fn live_caches() -> Vec<Arc<BoardCache>> {
    LIVE_CACHES
        .lock()
        .map(|l| l.iter().filter_map(std::sync::Weak::upgrade).collect())
        .unwrap_or_default()
}

/// Forgets the boards of `track_id` in every cache of this process.
pub fn invalidate_in_process(track_id: &TrackId) {
    for cache in live_caches() {
        cache.invalidate(track_id);
    }
}

/// Forgets the pages of driver `user_id` in every cache of this process.
pub fn forget_driver_in_process(user_id: &UserId) {
    for cache in live_caches() {
        cache.forget_driver(user_id);
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use std::sync::atomic::{AtomicUsize, Ordering};

    fn page(n: usize, bytes: usize) -> RenderedPage {
        RenderedPage {
            body: Bytes::from(vec![b'x'; bytes]),
            etag: format!("\"{n}\""),
        }
    }

    /// Track or driver number `n`'s id.
    fn id<T: From<uuid::Uuid>>(n: u128) -> T {
        T::from(uuid::Uuid::from_u128(n))
    }

    fn key(board: u128, after: Option<&str>) -> PageKey {
        PageKey {
            board: BoardId::track(&id(board)),
            after: after.map(str::to_owned),
            limit: 20,
        }
    }

    /// Sixteen concurrent reads of board `t`'s first page, each with a loader that takes 30 ms
    /// and answers page `n`: every read gets page `n`; answers how many loads ran.
    async fn read_by_16_at_once(cache: &Arc<BoardCache>, n: usize) -> usize {
        let loads = Arc::new(AtomicUsize::new(0));
        let requests = (0..16).map(|_| {
            let (cache, loads) = (cache.clone(), loads.clone());
            tokio::spawn(async move {
                cache
                    .page(key(1, None), |_| async {
                        loads.fetch_add(1, Ordering::SeqCst);
                        tokio::time::sleep(Duration::from_millis(30)).await;
                        Ok(page(n, 10))
                    })
                    .await
            })
        });
        let etag = format!("\"{n}\"");
        for answer in futures::future::join_all(requests).await {
            assert_eq!(answer.unwrap().unwrap().etag, etag.as_str());
        }
        loads.load(Ordering::SeqCst)
    }

    #[tokio::test]
    async fn previews_are_kept_and_dropped_with_their_track_or_driver() {
        let cache = BoardCache::new(Duration::from_secs(60), 1 << 20);
        let load = |n: usize| move |_| async move { Ok::<_, PageError>(page(n, 1_000)) };
        let board = |t: u128| PreviewKey::Board(BoardId::track(&id(t)));
        let driver = |u: u128| PreviewKey::Driver(id(u));
        cache.preview(board(1), load(1)).await.unwrap();
        cache.preview(board(2), load(2)).await.unwrap();
        cache.preview(driver(3), load(3)).await.unwrap();
        let hit = |key, n| {
            let cache = &cache;
            async move { cache.preview(key, load(n)).await.unwrap().etag }
        };
        assert_eq!(hit(board(1), 9).await, "\"1\"");
        cache.invalidate(&id(1));
        assert_eq!(hit(board(1), 4).await, "\"4\"");
        assert_eq!(hit(board(2), 9).await, "\"2\"");
        assert_eq!(hit(driver(3), 9).await, "\"3\"");
        cache.forget_driver(&id(3));
        assert_eq!(hit(driver(3), 5).await, "\"5\"");
        assert_eq!(hit(board(2), 9).await, "\"2\"");
    }

    #[tokio::test(flavor = "multi_thread", worker_threads = 4)]
    async fn concurrent_misses_of_one_page_share_one_load() {
        let cache = Arc::new(BoardCache::new(Duration::from_secs(5), 1 << 20));
        assert_eq!(read_by_16_at_once(&cache, 1).await, 1);
    }

    #[tokio::test]
    async fn pages_expire_are_dropped_by_track_and_stay_within_the_byte_budget() {
        let cache = BoardCache::new(Duration::from_millis(200), 64 * 1024);
        let load = |n: usize| move |_| async move { Ok::<_, PageError>(page(n, 1_000)) };
        cache.page(key(1, None), load(1)).await.unwrap();
        // Cached: a different loader is not called.
        let hit = cache.page(key(1, None), load(2)).await.unwrap();
        assert_eq!(hit.etag, "\"1\"");
        // A submission on the track drops its pages.
        cache.invalidate(&id(1));
        let fresh = cache.page(key(1, None), load(3)).await.unwrap();
        assert_eq!(fresh.etag, "\"3\"");
        // Past the lifetime the page is loaded again.
        tokio::time::sleep(Duration::from_millis(250)).await;
        let again = cache.page(key(1, None), load(4)).await.unwrap();
        assert_eq!(again.etag, "\"4\"");
        // Many pages of 1 KB: the cache keeps about its budget, not all of them.
        let pages = cache.pages.get().unwrap();
        for n in 0..500 {
            let after = format!("RANK#{n:010}");
            cache.page(key(2, Some(&after)), load(n)).await.unwrap();
        }
        assert!(pages.weight() <= 64 * 1024, "{}", pages.weight());
        assert!(pages.len() < 100, "{}", pages.len());
        // A failed load is answered as its error and not cached.
        let failed = cache
            .page(key(3, None), |_| async { Err(PageError::TrackNotFound) })
            .await;
        assert!(matches!(failed, Err(PageError::TrackNotFound)));
        let later = cache.page(key(3, None), load(9)).await.unwrap();
        assert_eq!(later.etag, "\"9\"");
    }

    #[tokio::test(flavor = "multi_thread", worker_threads = 4)]
    async fn an_expired_page_is_loaded_once_for_its_concurrent_readers_and_expired_pages_are_dropped()
     {
        let cache = Arc::new(BoardCache::new(Duration::from_millis(100), 1 << 20));
        for n in 0..10 {
            let after = format!("RANK#{n:010}");
            cache
                .page(key(4, Some(&after)), |_| async { Ok(page(0, 100)) })
                .await
                .unwrap();
        }
        cache
            .page(key(1, None), |_| async { Ok(page(1, 10)) })
            .await
            .unwrap();
        tokio::time::sleep(Duration::from_millis(150)).await;
        assert_eq!(read_by_16_at_once(&cache, 2).await, 1);
        // That miss dropped the ten expired pages nobody read again.
        assert_eq!(cache.pages.get().unwrap().len(), 1);
    }
}
