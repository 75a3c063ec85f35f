//! `/v1/webhooks`: a driver's webhook subscriptions (see docs/webhooks.md). Open to a
//! personal access token with the `webhooks` scope.

use crate::routes::registry::{Routes, operations};
use axum::extract::State;
use axum::response::{IntoResponse, Response};
use http::request::Parts;
use http::{HeaderValue, StatusCode, header};
use serde::{Deserialize, Serialize};
use serde_json::Value;
use utoipa::ToSchema;

use super::envelopes::envelope;
use crate::http::auth_user::{Caller, scope};
use crate::http::envelope::with_status;
use crate::http::{ApiError, ApiJson, MalformedId, PathId, ok};
use crate::state::AppState;
use paddock_core::ids::SubscriptionId;
use paddock_core::rate_limits::LimitError;
use paddock_core::webhooks::address::Policy;
use paddock_core::webhooks::delivery::{self, Attempt};
use paddock_core::webhooks::subscriptions::{
    self, Changes, CreatedSubscription, NewSubscription, Receivers, RotatedSecret, Subscription,
    SubscriptionError,
};
use paddock_core::webhooks::verification::ReceiverChecks;

/// The webhook routes.
pub(crate) fn routes<R: Routes>() -> R {
    R::empty()
        .operations(operations!(list, create))
        .operations(operations!(read, change, delete))
        .operations(operations!(send_test))
        .operations(operations!(rotate_secret))
        .operations(operations!(deliveries))
}

/// The answer of a refused request.
fn refusal(e: SubscriptionError) -> ApiError {
    match e {
        SubscriptionError::Url(_)
        | SubscriptionError::NoEventTypes
        | SubscriptionError::UnknownEventType(_)
        | SubscriptionError::BadDescription
        | SubscriptionError::BadGrace => ApiError::BadRequest(e.to_string()),
        SubscriptionError::TooMany => ApiError::Conflict(e.to_string()),
        SubscriptionError::NotFound => ApiError::NotFound(e.to_string()),
        SubscriptionError::Unconfirmed(_) => ApiError::Unprocessable(e.to_string()),
        SubscriptionError::TooManyChecks(limited) => LimitError::Limited(limited).into(),
        SubscriptionError::Store(s) => s.into(),
    }
}

/// A malformed subscription id names none of the caller's: answered as an unknown one.
pub(crate) struct NoSuchSubscription;

impl<S> MalformedId<S> for NoSuchSubscription {
    fn answer(_: &Parts, _: &S) -> Response {
        refusal(SubscriptionError::NotFound).into_response()
    }
}

/// Secrets are shown once: never kept by a cache.
fn no_store(mut response: Response) -> Response {
    response
        .headers_mut()
        .insert(header::CACHE_CONTROL, HeaderValue::from_static("no-store"));
    response
}

fn policy(state: &AppState) -> Policy {
    paddock_core::webhooks::address_policy(&state.settings)
}

/// How often a driver may have the service call receivers.
fn checks(state: &AppState) -> ReceiverChecks {
    ReceiverChecks {
        per_hour: state.settings.webhook_checks_per_hour,
    }
}

/// `POST /v1/webhooks` body.
#[derive(Debug, Deserialize, ToSchema)]
#[serde(rename_all = "camelCase")]
pub(crate) struct CreateWebhookRequest {
    /// An `https` URL without credentials, at most 2048 bytes, whose host resolves only to
    /// public addresses.
    #[schema(required = true, value_type = String, format = "uri", max_length = 2048)]
    pub url: Option<String>,
    /// One or more of `session.uploaded`, `leaderboard.best`, `achievement.unlocked`,
    /// `board.passed`, `event.finished`, `event.started`.
    #[schema(required = true, value_type = Vec<WebhookEventType>, min_items = 1)]
    pub event_types: Option<Vec<String>>,
    /// The driver's own note: at most 100 characters, no control or invisible characters.
    #[schema(value_type = Option<String>, max_length = 100)]
    pub description: Option<String>,
}

/// An event type a subscription can ask for.
#[derive(Debug, ToSchema)]
#[allow(dead_code)]
pub(crate) enum WebhookEventType {
    /// A session was uploaded.
    #[schema(rename = "session.uploaded")]
    SessionUploaded,
    /// A new personal best on a track's board, with its rank.
    #[schema(rename = "leaderboard.best")]
    LeaderboardBest,
    /// An achievement was unlocked.
    #[schema(rename = "achievement.unlocked")]
    AchievementUnlocked,
    /// Another driver's new best moved the driver down a track's board.
    #[schema(rename = "board.passed")]
    BoardPassed,
    /// A competition event the driver entered closed: their final position.
    #[schema(rename = "event.finished")]
    EventFinished,
    /// A competition event of a league the driver belongs to opened.
    #[schema(rename = "event.started")]
    EventStarted,
}

fn event_types(raw: Vec<String>) -> Result<Vec<String>, ApiError> {
    subscriptions::parse_event_types(&raw).map_err(refusal)
}

fn description(raw: Option<String>) -> Result<String, ApiError> {
    subscriptions::parse_description(raw.as_deref().unwrap_or_default()).map_err(refusal)
}

/// Makes a webhook subscription once its receiver answered the signed `webhook.verification`
/// request with its `data.challenge`; its signing secret is in this answer only.
#[utoipa::path(post, path = "/v1/webhooks", operation_id = "createWebhook", tag = "webhooks",
    security(("bearer" = ["webhooks"])),
    request_body(content = CreateWebhookRequest, description = "camelCase or PascalCase names", example = json!({
        "url": "https://example.com/paddock-hook", "eventTypes": ["leaderboard.best", "board.passed"],
        "description": "league bot"})),
    responses((status = 201, description = "The subscription, with its secret shown this once",
               body = CreatedWebhookEnvelope),
              (status = 400, description = "A URL that is not https, holds credentials or resolves to a non-public address (the error names the rule), an unknown event type or a bad description"),
              (status = 401, description = "No valid token"),
              (status = 403, description = "A personal access token without the `webhooks` scope"),
              (status = 409, description = "The driver already holds 10 subscriptions"),
              (status = 422, description = "The receiver did not confirm the signed `webhook.verification` request (it must answer 2xx with the request's `data.challenge` in its body)"),
              (status = 429, description = "More than `Limits__WebhookChecksPerHour` receiver verifications and tests in an hour (Retry-After)")))]
pub(crate) async fn create(
    State(state): State<AppState>,
    user: Caller<scope::Webhooks>,
    ApiJson(body): ApiJson<CreateWebhookRequest>,
) -> Result<Response, ApiError> {
    let url = body
        .url
        .ok_or_else(|| ApiError::invalid("url", "is required"))?;
    let types = body
        .event_types
        .ok_or_else(|| ApiError::invalid("eventTypes", "is required"))?;
    let new = NewSubscription {
        url,
        event_types: event_types(types)?,
        description: description(body.description)?,
    };
    let client = state.webhook_client();
    let receivers = Receivers {
        client: &*client,
        checks: checks(&state),
    };
    let created =
        subscriptions::create(&state.ports, user.user_id(), new, policy(&state), receivers)
            .await
            .map_err(refusal)?;
    Ok(no_store(with_status(StatusCode::CREATED, created)))
}

/// The caller's subscriptions.
#[derive(Debug, Serialize, ToSchema)]
pub(crate) struct WebhookList {
    /// Oldest first (at most 10).
    pub items: Vec<Subscription>,
}

/// The caller's webhook subscriptions (never their secrets).
#[utoipa::path(get, path = "/v1/webhooks", operation_id = "listWebhooks", tag = "webhooks",
    security(("bearer" = ["webhooks"])),
    responses((status = 200, description = "Every subscription, oldest first", body = WebhookListEnvelope),
              (status = 401, description = "No valid token"),
              (status = 403, description = "A personal access token without the `webhooks` scope")))]
pub(crate) async fn list(
    State(state): State<AppState>,
    user: Caller<scope::Webhooks>,
) -> Result<Response, ApiError> {
    let items = subscriptions::list(&state.ports, user.user_id())
        .await
        .map_err(refusal)?;
    Ok(ok(WebhookList { items }))
}

/// One of the caller's webhook subscriptions.
#[utoipa::path(get, path = "/v1/webhooks/{id}", operation_id = "getWebhook", tag = "webhooks",
    security(("bearer" = ["webhooks"])),
    params(("id" = String, Path, description = "The subscription's id")),
    responses((status = 200, description = "The subscription", body = WebhookEnvelope),
              (status = 401, description = "No valid token"),
              (status = 403, description = "A personal access token without the `webhooks` scope"),
              (status = 404, description = "The caller has no subscription of that id")))]
pub(crate) async fn read(
    State(state): State<AppState>,
    user: Caller<scope::Webhooks>,
    PathId { id, .. }: PathId<SubscriptionId, NoSuchSubscription>,
) -> Result<Response, ApiError> {
    let subscription = subscriptions::get(&state.ports, user.user_id(), &id)
        .await
        .map_err(refusal)?;
    Ok(ok(subscription))
}

/// `PATCH /v1/webhooks/{id}` body: the fields to change.
#[derive(Debug, Deserialize, ToSchema)]
#[serde(rename_all = "camelCase")]
pub(crate) struct ChangeWebhookRequest {
    /// A new URL, checked as at creation.
    #[schema(value_type = Option<String>, format = "uri", max_length = 2048)]
    pub url: Option<String>,
    /// New event types (one or more).
    #[schema(value_type = Option<Vec<WebhookEventType>>, min_items = 1)]
    pub event_types: Option<Vec<String>>,
    /// A new description.
    #[schema(value_type = Option<String>, max_length = 100)]
    pub description: Option<String>,
    /// False pauses deliveries; true resumes them (and clears a disabled subscription's
    /// failure state).
    pub enabled: Option<bool>,
}

/// Changes one of the caller's webhook subscriptions.
#[utoipa::path(patch, path = "/v1/webhooks/{id}", operation_id = "changeWebhook", tag = "webhooks",
    security(("bearer" = ["webhooks"])),
    params(("id" = String, Path, description = "The subscription's id")),
    request_body(content = ChangeWebhookRequest, description = "camelCase or PascalCase names", example = json!({"enabled": true})),
    responses((status = 200, description = "The subscription as changed", body = WebhookEnvelope),
              (status = 400, description = "A field breaks its rule (as at creation)"),
              (status = 401, description = "No valid token"),
              (status = 403, description = "A personal access token without the `webhooks` scope"),
              (status = 404, description = "The caller has no subscription of that id (or it changed meanwhile: read it again)"),
              (status = 422, description = "A new URL, or a resumed subscription, whose receiver did not confirm the signed `webhook.verification` request"),
              (status = 429, description = "More than `Limits__WebhookChecksPerHour` receiver verifications and tests in an hour (Retry-After)")))]
pub(crate) async fn change(
    State(state): State<AppState>,
    user: Caller<scope::Webhooks>,
    PathId { id, .. }: PathId<SubscriptionId, NoSuchSubscription>,
    ApiJson(body): ApiJson<ChangeWebhookRequest>,
) -> Result<Response, ApiError> {
    let changes = Changes {
        url: body.url,
        event_types: body.event_types.map(event_types).transpose()?,
        description: body.description.map(|d| description(Some(d))).transpose()?,
        enabled: body.enabled,
    };
    let client = state.webhook_client();
    let receivers = Receivers {
        client: &*client,
        checks: checks(&state),
    };
    let subscription = subscriptions::update(
        &state.ports,
        user.user_id(),
        &id,
        changes,
        policy(&state),
        receivers,
    )
    .await
    .map_err(refusal)?;
    Ok(ok(subscription))
}

/// Deletes one of the caller's webhook subscriptions: nothing is sent to it afterwards.
#[utoipa::path(delete, path = "/v1/webhooks/{id}", operation_id = "deleteWebhook", tag = "webhooks",
    security(("bearer" = ["webhooks"])),
    params(("id" = String, Path, description = "The subscription's id")),
    responses((status = 204, description = "Deleted"),
              (status = 401, description = "No valid token"),
              (status = 403, description = "A personal access token without the `webhooks` scope"),
              (status = 404, description = "The caller has no subscription of that id")))]
pub(crate) async fn delete(
    State(state): State<AppState>,
    user: Caller<scope::Webhooks>,
    PathId { id, .. }: PathId<SubscriptionId, NoSuchSubscription>,
) -> Result<Response, ApiError> {
    subscriptions::delete(&state.ports, user.user_id(), &id)
        .await
        .map_err(refusal)?;
    Ok(StatusCode::NO_CONTENT.into_response())
}

/// A test delivery on its way.
#[derive(Debug, Serialize, ToSchema)]
#[serde(rename_all = "camelCase")]
pub(crate) struct TestQueued {
    /// The `webhook-id` the test arrives with.
    pub webhook_id: String,
}

/// Sends a `webhook.test` event to one subscription, as every event is sent (also to a
/// disabled one); its outcome shows in the delivery history.
#[utoipa::path(post, path = "/v1/webhooks/{id}/test", operation_id = "testWebhook", tag = "webhooks",
    security(("bearer" = ["webhooks"])),
    params(("id" = String, Path, description = "The subscription's id")),
    responses((status = 202, description = "Queued for delivery", body = TestQueuedEnvelope),
              (status = 401, description = "No valid token"),
              (status = 403, description = "A personal access token without the `webhooks` scope"),
              (status = 404, description = "The caller has no subscription of that id"),
              (status = 429, description = "More than `Limits__WebhookChecksPerHour` receiver verifications and tests in an hour (Retry-After)")))]
pub(crate) async fn send_test(
    State(state): State<AppState>,
    user: Caller<scope::Webhooks>,
    PathId { id, .. }: PathId<SubscriptionId, NoSuchSubscription>,
) -> Result<Response, ApiError> {
    let webhook_id = subscriptions::send_test(&state.ports, user.user_id(), &id, checks(&state))
        .await
        .map_err(refusal)?;
    Ok(with_status(StatusCode::ACCEPTED, TestQueued { webhook_id }))
}

/// `POST /v1/webhooks/{id}/rotate-secret` body.
#[derive(Debug, Default, Deserialize, ToSchema)]
#[serde(rename_all = "camelCase")]
pub(crate) struct RotateSecretRequest {
    /// Hours the current secret keeps signing beside the new one: 0 to 72 (default 24).
    #[schema(value_type = Option<i64>, minimum = 0, maximum = 72)]
    pub grace_hours: Option<Value>,
}

/// Gives a subscription a new secret, shown in this answer only; deliveries carry a
/// signature by each secret until the grace period ends.
#[utoipa::path(post, path = "/v1/webhooks/{id}/rotate-secret", operation_id = "rotateWebhookSecret", tag = "webhooks",
    security(("bearer" = ["webhooks"])),
    params(("id" = String, Path, description = "The subscription's id")),
    request_body(content = RotateSecretRequest, description = "camelCase or PascalCase names", example = json!({"graceHours": 24})),
    responses((status = 200, description = "The new secret, shown this once", body = RotatedSecretEnvelope),
              (status = 400, description = "graceHours is not a whole number from 0 to 72"),
              (status = 401, description = "No valid token"),
              (status = 403, description = "A personal access token without the `webhooks` scope"),
              (status = 404, description = "The caller has no subscription of that id")))]
pub(crate) async fn rotate_secret(
    State(state): State<AppState>,
    user: Caller<scope::Webhooks>,
    PathId { id, .. }: PathId<SubscriptionId, NoSuchSubscription>,
    ApiJson(body): ApiJson<RotateSecretRequest>,
) -> Result<Response, ApiError> {
    let grace = subscriptions::parse_grace_hours(body.grace_hours.as_ref()).map_err(refusal)?;
    let rotated = subscriptions::rotate_secret(&state.ports, user.user_id(), &id, grace)
        .await
        .map_err(refusal)?;
    Ok(no_store(ok(rotated)))
}

/// A subscription's last delivery attempts.
#[derive(Debug, Serialize, ToSchema)]
pub(crate) struct AttemptList {
    /// Newest first: the last 20 of the last 7 days.
    pub items: Vec<Attempt>,
}

/// The last delivery attempts of one of the caller's subscriptions.
#[utoipa::path(get, path = "/v1/webhooks/{id}/deliveries", operation_id = "listWebhookDeliveries", tag = "webhooks",
    security(("bearer" = ["webhooks"])),
    params(("id" = String, Path, description = "The subscription's id")),
    responses((status = 200, description = "The last attempts, newest first", body = AttemptListEnvelope),
              (status = 401, description = "No valid token"),
              (status = 403, description = "A personal access token without the `webhooks` scope"),
              (status = 404, description = "The caller has no subscription of that id")))]
pub(crate) async fn deliveries(
    State(state): State<AppState>,
    user: Caller<scope::Webhooks>,
    PathId { id, .. }: PathId<SubscriptionId, NoSuchSubscription>,
) -> Result<Response, ApiError> {
    let items = delivery::history(&state.ports, user.user_id(), &id)
        .await
        .map_err(refusal)?;
    Ok(ok(AttemptList { items }))
}

envelope!(
    /// A subscription just made, with its secret.
    CreatedWebhookEnvelope => CreatedSubscription
);

envelope!(
    /// The caller's subscriptions.
    WebhookListEnvelope => WebhookList
);

envelope!(
    /// One subscription.
    WebhookEnvelope => Subscription
);

envelope!(
    /// A test delivery queued.
    TestQueuedEnvelope => TestQueued
);

envelope!(
    /// A rotated secret.
    RotatedSecretEnvelope => RotatedSecret
);

envelope!(
    /// A subscription's last attempts.
    AttemptListEnvelope => AttemptList
);
