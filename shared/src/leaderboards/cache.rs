//! The in-process leaderboard cache: whole boards for a few seconds, and each requested page
//! rendered once per board snapshot (body bytes and ETag), so a cached page is a map lookup.
//!
//! Process memory holds caches only: a board is re-read once its lifetime is over, and a
//! submission in this process replaces its track's board at once. Other processes (other
//! Lambda instances) see a new best lap within the lifetime.

use bytes::Bytes;
use http::HeaderValue;
use serde::Serialize;
use sha2::{Digest, Sha256};
use std::collections::HashMap;
use std::sync::{Arc, Mutex};
use std::time::{Duration, Instant};
use utoipa::ToSchema;

use super::board::{Board, Row};
use super::format_lap_time;
use crate::envelope::Envelope;
use crate::ids::{SessionId, TrackId, UserId};
use crate::tracks::Track;

/// Boards kept at most; beyond it the cache starts over (bounded memory).
const MAX_BOARDS: usize = 1_000;
/// Rendered pages kept per board at most.
const MAX_PAGES: usize = 256;

/// One ranked entry as the API shows it.
#[derive(Debug, Clone, Serialize, ToSchema)]
#[serde(rename_all = "camelCase")]
pub(crate) struct LeaderboardEntry {
    /// 1 is fastest.
    pub rank: usize,
    /// The driver's id.
    #[schema(value_type = String)]
    pub user_id: UserId,
    /// Shown on leaderboards and the feed.
    pub display_name: String,
    /// Profile image URL (https), if any.
    pub avatar_url: Option<String>,
    /// Lap time in milliseconds.
    pub lap_time_ms: i64,
    /// `M:SS.mmm`.
    pub lap_time: String,
    /// The car the lap was set in.
    pub vehicle_name: String,
    /// The session the lap belongs to.
    #[schema(value_type = String)]
    pub session_id: SessionId,
    /// RFC 3339.
    pub submitted_at: String,
}

/// A page of a leaderboard.
#[derive(Debug, Clone, Serialize, ToSchema)]
#[serde(rename_all = "camelCase")]
pub(crate) struct LeaderboardPage {
    /// The track of the board.
    pub track: Track,
    /// The ranked entries of this page.
    pub entries: Vec<LeaderboardEntry>,
    /// Pass as `cursor` for the next page; null on the last page.
    pub next_cursor: Option<String>,
    /// Entries on the board (with the vehicle filter applied).
    pub total_entries: usize,
}

/// Which page of a board.
#[derive(Debug, Clone, PartialEq, Eq, Hash)]
pub struct PageKey {
    /// Lower-cased vehicle filter.
    pub vehicle: Option<String>,
    /// Entries skipped before this page.
    pub offset: usize,
    /// Entries on this page at most.
    pub limit: usize,
}

/// A page rendered as the response body.
#[derive(Debug, Clone)]
pub struct RenderedPage {
    /// The whole enveloped JSON body.
    pub body: Bytes,
    /// Strong ETag of the body, ready to send.
    pub etag: HeaderValue,
}

struct Snapshot {
    loaded: Instant,
    track: Track,
    board: Board,
    pages: Mutex<HashMap<PageKey, RenderedPage>>,
}

/// Boards by track id.
pub struct BoardCache {
    lifetime: Duration,
    cache_control: HeaderValue,
    boards: Mutex<HashMap<TrackId, Arc<Snapshot>>>,
}

impl BoardCache {
    /// A cache keeping boards for `lifetime` (zero: every read goes to the store).
    pub fn new(lifetime: Duration) -> Self {
        let cache_control =
            HeaderValue::from_str(&format!("public, max-age={}", lifetime.as_secs()))
                .unwrap_or(HeaderValue::from_static("no-cache"));
        Self {
            lifetime,
            cache_control,
            boards: Mutex::new(HashMap::new()),
        }
    }

    /// The cache lifetime.
    pub fn lifetime(&self) -> Duration {
        self.lifetime
    }

    /// The `Cache-Control` value of leaderboard answers (max-age = the lifetime).
    pub fn cache_control(&self) -> HeaderValue {
        self.cache_control.clone()
    }

    /// A page of a cached, still fresh board; `None` on a miss.
    pub fn page(&self, track_id: &TrackId, key: &PageKey) -> Option<RenderedPage> {
        let snapshot = {
            let boards = self.boards.lock().ok()?;
            boards.get(track_id).cloned()?
        };
        if snapshot.loaded.elapsed() >= self.lifetime {
            return None;
        }
        let mut pages = snapshot.pages.lock().ok()?;
        if let Some(page) = pages.get(key) {
            return Some(page.clone());
        }
        let page = render(&snapshot.track, &snapshot.board, key);
        if pages.len() < MAX_PAGES {
            pages.insert(key.clone(), page.clone());
        }
        Some(page)
    }

    /// Stores a freshly read board and answers the page asked for.
    pub fn store(&self, track: Track, board: Board, key: &PageKey) -> RenderedPage {
        let page = render(&track, &board, key);
        if self.lifetime.is_zero() {
            return page;
        }
        let snapshot = Snapshot {
            loaded: Instant::now(),
            track: track.clone(),
            board,
            pages: Mutex::new(HashMap::from([(key.clone(), page.clone())])),
        };
        if let Ok(mut boards) = self.boards.lock() {
            if boards.len() >= MAX_BOARDS {
                boards.retain(|_, s| s.loaded.elapsed() < self.lifetime);
                if boards.len() >= MAX_BOARDS {
                    boards.clear();
                }
            }
            boards.insert(track.id.clone(), Arc::new(snapshot));
        }
        page
    }

    /// Forgets the board of `track_id` (a submission changed it).
    pub fn invalidate(&self, track_id: &TrackId) {
        if let Ok(mut boards) = self.boards.lock() {
            boards.remove(track_id);
        }
    }

    /// Makes `cache` one that [`invalidate_in_process`] reaches.
    pub(crate) fn register(cache: &Arc<Self>) {
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

/// Forgets the board of `track_id` in every cache of this process.
pub(crate) fn invalidate_in_process(track_id: &TrackId) {
    let live: Vec<Arc<BoardCache>> = LIVE_CACHES
        .lock()
        .map(|l| l.iter().filter_map(std::sync::Weak::upgrade).collect())
        .unwrap_or_default();
    for cache in live {
        cache.invalidate(track_id);
    }
}

/// Encodes the offset of the next page (opaque to clients).
pub(crate) fn encode_cursor(offset: usize) -> String {
    crate::ports::items::encode_cursor(&format!("rank:{offset}"))
}

/// Reads a cursor made by [`encode_cursor`].
pub(crate) fn decode_cursor(cursor: &str) -> Option<usize> {
    crate::ports::items::decode_cursor(cursor)
        .ok()?
        .strip_prefix("rank:")?
        .parse()
        .ok()
}

fn render(track: &Track, board: &Board, key: &PageKey) -> RenderedPage {
    let matches = |r: &&Row| {
        key.vehicle
            .as_deref()
            .is_none_or(|v| r.vehicle_name.to_lowercase() == v)
    };
    let total = board.rows.iter().filter(matches).count();
    let entries: Vec<LeaderboardEntry> = board
        .rows
        .iter()
        .filter(matches)
        .enumerate()
        .skip(key.offset)
        .take(key.limit)
        .map(|(i, r)| LeaderboardEntry {
            rank: i + 1,
            user_id: r.user_id.clone(),
            display_name: r.display_name.clone(),
            avatar_url: r.avatar_url.clone(),
            lap_time_ms: r.lap_time_ms,
            lap_time: format_lap_time(r.lap_time_ms),
            vehicle_name: r.vehicle_name.clone(),
            session_id: r.session_id.clone(),
            submitted_at: r.submitted_at.clone(),
        })
        .collect();
    let end = key.offset + entries.len();
    let page = LeaderboardPage {
        track: track.clone(),
        next_cursor: (end < total).then(|| encode_cursor(end)),
        entries,
        total_entries: total,
    };
    let body = serde_json::to_vec(&Envelope::ok(page)).unwrap_or_default();
    let digest = Sha256::digest(&body);
    let hex = crate::identity::hex(&digest[..16]);
    let etag =
        HeaderValue::from_str(&format!("\"{hex}\"")).unwrap_or(HeaderValue::from_static("\"\""));
    RenderedPage {
        body: Bytes::from(body),
        etag,
    }
}
