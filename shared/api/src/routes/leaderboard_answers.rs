//! The answer types of a board read: a page of ranked entries as the API shows it, and the
//! page rendered once in its envelope for the board cache.

use paddock_core::ids::{SessionId, UserId};
use paddock_core::leaderboards::cache::RenderedPage;
use paddock_core::leaderboards::format_lap_time;
use paddock_core::leaderboards::reads::{Ranked, Slice, encode_cursor};
use paddock_core::tracks::Track;
use serde::Serialize;
use utoipa::ToSchema;

use crate::envelope::Envelope;

/// One ranked entry as the API shows it.
#[derive(Debug, Clone, Serialize, ToSchema)]
#[serde(rename_all = "camelCase")]
pub struct LeaderboardEntry {
    /// 1 is fastest.
    pub rank: u64,
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

impl From<Ranked> for LeaderboardEntry {
    fn from(r: Ranked) -> Self {
        Self {
            rank: r.rank,
            lap_time: format_lap_time(r.row.lap_time_ms),
            user_id: r.row.user_id,
            display_name: r.row.display_name,
            avatar_url: r.row.avatar_url,
            lap_time_ms: r.row.lap_time_ms,
            vehicle_name: r.row.vehicle_name,
            session_id: r.row.session_id,
            submitted_at: r.row.submitted_at,
        }
    }
}

/// A page of a leaderboard.
#[derive(Debug, Clone, Serialize, ToSchema)]
#[serde(rename_all = "camelCase")]
pub struct LeaderboardPage {
    /// The track of the board.
    pub track: Track,
    /// The ranked entries of this page.
    pub entries: Vec<LeaderboardEntry>,
    /// Pass as `cursor` for the next page; null on the last page.
    pub next_cursor: Option<String>,
    /// Entries on the board (the car's board with `vehicleName`).
    pub total_entries: u64,
}

impl LeaderboardPage {
    /// The API's page of `slice`.
    pub fn of(track: Track, slice: Slice) -> Self {
        Self {
            track,
            next_cursor: slice.next_after.as_deref().map(encode_cursor),
            entries: slice.rows.into_iter().map(Into::into).collect(),
            total_entries: slice.total,
        }
    }
}

/// `page` rendered in the envelope, with its ETag.
pub fn rendered(page: &LeaderboardPage) -> RenderedPage {
    RenderedPage::with_etag(serde_json::to_vec(&Envelope::ok(page)).unwrap_or_default())
}
