//! `/v1/feed` and `/v1/achievements`: the caller's feed and achievements.

use crate::routes::registry::{Routes, operations};
use axum::extract::State;
use axum::response::Response;
use http::StatusCode;
use serde::{Deserialize, Serialize};
use utoipa::ToSchema;

use super::envelopes::{envelope, page_envelope};
use crate::http::auth_user::{Caller, Deferred, scope};
use crate::http::envelope::with_status;
use crate::http::idempotency_key::{IdempotencyKey, IdempotencyKeyHeader};
use crate::http::{ApiError, ApiJson, ApiQuery, ok};
use crate::routes::paging::{PageParams, Paged};
use crate::state::AppState;
use paddock_core::activity::achievements::{self, CatalogEntry, DriverAchievement};
use paddock_core::activity::feed;

/// The feed and achievements routes.
pub(crate) fn routes<R: Routes>() -> R {
    R::empty()
        .operations(operations!(list_feed, post_feed))
        .operations(operations!(mine))
        .operations(operations!(catalog))
}

/// The caller's feed, newest first; entries older than 90 days are not returned.
#[utoipa::path(get, path = "/v1/feed", operation_id = "listFeed", tag = "activity", security(("bearer" = ["activity:read"])), params(PageParams),
    responses((status = 200, description = "One page", body = FeedListEnvelope),
              (status = 400, description = "Bad limit, or a cursor that is not a nextCursor of the caller's feed"),
              (status = 401, description = "No valid token")))]
pub(crate) async fn list_feed(
    State(state): State<AppState>,
    caller: Caller<scope::ActivityRead, Deferred>,
    ApiQuery(page): ApiQuery<PageParams>,
) -> Result<Response, ApiError> {
    let limit = match page.limit() {
        Ok(limit) => limit,
        Err(refused) => return Err(caller.refusal(&state, refused).await),
    };
    let cursor = page.cursor();
    let user_id = caller.user_id().clone();
    let (_, (items, next_cursor)) = caller
        .confirmed_with(
            &state,
            feed::list(&state.ports, &user_id, limit, cursor.as_deref()),
        )
        .await?;
    Ok(ok(Paged { items, next_cursor }))
}

/// `POST /v1/feed` body.
#[derive(Debug, Deserialize, ToSchema)]
#[serde(rename_all = "camelCase")]
pub(crate) struct FeedPostRequest {
    /// At most 100 characters, not blank; trimmed; no control, invisible or text-direction
    /// characters.
    #[schema(required = true, value_type = String, min_length = 1, max_length = 100,
        pattern = "^[^\\u0000-\\u001f\\u007f-\\u009f\\u00ad\\u034f\\u061c\\u115f\\u1160\\u17b4\\u17b5\\u180e\\u200b-\\u200f\\u202a-\\u202e\\u2060-\\u2064\\u2066-\\u206f\\u3164\\ufeff\\uffa0\\ufff9-\\ufffb]*[^\\s\\u0000-\\u001f\\u007f-\\u009f\\u00ad\\u034f\\u061c\\u115f\\u1160\\u17b4\\u17b5\\u180e\\u200b-\\u200f\\u202a-\\u202e\\u2060-\\u2064\\u2066-\\u206f\\u3164\\ufeff\\uffa0\\ufff9-\\ufffb][^\\u0000-\\u001f\\u007f-\\u009f\\u00ad\\u034f\\u061c\\u115f\\u1160\\u17b4\\u17b5\\u180e\\u200b-\\u200f\\u202a-\\u202e\\u2060-\\u2064\\u2066-\\u206f\\u3164\\ufeff\\uffa0\\ufff9-\\ufffb]*$")]
    pub title: Option<String>,
    /// Optional; at most 280 characters, the same characters refused; trimmed.
    #[schema(value_type = Option<String>, max_length = 280,
        pattern = "^[^\\u0000-\\u001f\\u007f-\\u009f\\u00ad\\u034f\\u061c\\u115f\\u1160\\u17b4\\u17b5\\u180e\\u200b-\\u200f\\u202a-\\u202e\\u2060-\\u2064\\u2066-\\u206f\\u3164\\ufeff\\uffa0\\ufff9-\\ufffb]*$")]
    pub subtitle: Option<String>,
}

/// Adds the caller's own post to their feed.
#[utoipa::path(post, path = "/v1/feed", operation_id = "postFeedEntry", tag = "activity", security(("bearer" = [])),
    request_body(content = FeedPostRequest, description = "camelCase or PascalCase names", example = json!({
        "title": "New best lap at Monza", "subtitle": "1:47.345 in the Ferrari 296 GT3"})),
    params(IdempotencyKeyHeader),
    responses((status = 201, description = "Posted (or, for a repeated `Idempotency-Key`, what the first request posted)", body = FeedEntryEnvelope),
              (status = 400, description = "Every problem, by field (under an `Idempotency-Key`, a repeat of a refused post gets the first answer again)"),
              (status = 401, description = "No valid token"),
              (status = 422, description = "The `Idempotency-Key` was sent with another request"),
              (status = 429, description = "More than `Limits__FeedPostsPerMinute` posts in a minute (Retry-After); under an `Idempotency-Key` a refused post and each repeat of it count too")))]
pub(crate) async fn post_feed(
    State(state): State<AppState>,
    user: Caller<scope::SignIn>,
    IdempotencyKey(key): IdempotencyKey,
    ApiJson(body): ApiJson<FeedPostRequest>,
) -> Result<Response, ApiError> {
    let entry = feed::post_request(
        &state.ports,
        user.user_id(),
        body.title,
        body.subtitle,
        key.as_ref(),
        state.settings.feed_posts_per_minute,
    )
    .await?;
    Ok(with_status(StatusCode::CREATED, entry))
}

/// The caller's achievements.
#[derive(Debug, Serialize, ToSchema)]
#[serde(rename_all = "camelCase")]
pub(crate) struct AchievementList {
    /// Unlocked ones first (newest first), then locked ones with their progress.
    pub items: Vec<DriverAchievement>,
    /// How many the caller has unlocked.
    pub unlocked: usize,
    /// How many there are.
    pub total: usize,
}

/// The caller's achievements: unlocked ones with `unlockedAt`, locked ones with progress.
#[utoipa::path(get, path = "/v1/achievements", operation_id = "listMyAchievements", tag = "activity", security(("bearer" = ["activity:read"])),
    responses((status = 200, description = "Every achievement, as the caller stands",
               body = AchievementListEnvelope),
              (status = 401, description = "No valid token")))]
pub(crate) async fn mine(
    State(state): State<AppState>,
    caller: Caller<scope::ActivityRead, Deferred>,
) -> Result<Response, ApiError> {
    let user_id = caller.user_id().clone();
    let (_, items) = caller
        .confirmed_with(&state, achievements::for_driver(&state.ports, &user_id))
        .await?;
    let unlocked = items.iter().filter(|a| a.unlocked_at.is_some()).count();
    let total = items.len();
    Ok(ok(AchievementList {
        items,
        unlocked,
        total,
    }))
}

/// The achievement catalogue.
#[derive(Debug, Serialize, ToSchema)]
#[serde(rename_all = "camelCase")]
pub(crate) struct Catalog {
    /// Every achievement, in catalogue order.
    pub items: Vec<CatalogEntry>,
}

/// Every achievement; a hidden one shows its title only once the caller has unlocked it.
#[utoipa::path(get, path = "/v1/achievements/catalog", operation_id = "getAchievementCatalog", tag = "activity", security(("bearer" = ["activity:read"])),
    responses((status = 200, description = "The catalogue", body = CatalogEnvelope),
              (status = 401, description = "No valid token")))]
pub(crate) async fn catalog(
    State(state): State<AppState>,
    user: Caller<scope::ActivityRead>,
) -> Result<Response, ApiError> {
    let items = achievements::catalog_for(&state.ports, user.user_id()).await?;
    Ok(ok(Catalog { items }))
}

page_envelope!(
    /// One page of the caller's feed.
    FeedListEnvelope => FeedList of paddock_core::activity::feed::FeedEntry
);

envelope!(
    /// A feed entry posted.
    FeedEntryEnvelope => paddock_core::activity::feed::FeedEntry
);

envelope!(
    /// The caller's achievements.
    AchievementListEnvelope => AchievementList
);

envelope!(
    /// The achievement catalog.
    CatalogEnvelope => Catalog
);
