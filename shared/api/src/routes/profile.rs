//! `/v1/profile`: the driver's profile, the export of all their data and account deletion.

use crate::routes::registry::{Routes, operations};
use axum::body::Body;
use axum::extract::State;
use axum::response::{IntoResponse, Response};
use http::{HeaderValue, StatusCode, header};
use serde::{Deserialize, Deserializer, Serialize};
use serde_json::Value;
use utoipa::ToSchema;

use super::envelopes::envelope;
use crate::http::auth_user::{Caller, Deferred, scope};
use crate::http::envelope::with_status;
use crate::http::{ApiError, ApiJson, ok};
use crate::state::AppState;
use paddock_core::config::Backend;
use paddock_core::driver_data::deletion::{self, DeletionError};
use paddock_core::driver_data::export::ExportError;
use paddock_core::driver_data::{Driver, export};
use paddock_core::identity::profiles::{self, ProfileChange, ProfileError};
use paddock_core::identity::users::{self, User};
use paddock_core::rate_limits::{self, Limit};

/// The profile routes.
pub(crate) fn routes<R: Routes>() -> R {
    R::empty()
        .operations(operations!(read, change))
        .operations(operations!(read_me, change_me, delete_me))
        .operations(operations!(export_me))
}

/// The profile as `/v1/profile` shows it (the spec's UserProfileDto).
#[derive(Debug, Serialize, ToSchema)]
#[serde(rename_all = "camelCase")]
pub(crate) struct Profile {
    /// The driver's id.
    pub id: String,
    /// Shown on leaderboards and the feed.
    pub display_name: String,
    /// Profile image URL (https); null when none.
    pub avatar_url: Option<String>,
    /// The account's email; null for accounts that signed in only through a provider.
    pub email: Option<String>,
}

impl From<User> for Profile {
    fn from(user: User) -> Self {
        Self {
            id: user.id.to_string(),
            display_name: user.display_name,
            avatar_url: user.avatar_url,
            email: user.email,
        }
    }
}

/// `PATCH /v1/profile` and `/v1/profile/me` body: either field or both.
#[derive(Debug, Default, Deserialize, ToSchema)]
#[serde(rename_all = "camelCase")]
pub(crate) struct ProfileUpdate {
    /// 1 to 64 characters as sent and after trimming, as at registration; no control, invisible
    /// or text-direction characters.
    #[serde(default, deserialize_with = "given")]
    #[schema(value_type = Option<String>, min_length = 1, max_length = 64,
        pattern = "^[^\\u0000-\\u001f\\u007f-\\u009f\\u00ad\\u034f\\u061c\\u115f\\u1160\\u17b4\\u17b5\\u180e\\u200b-\\u200f\\u202a-\\u202e\\u2060-\\u2064\\u2066-\\u206f\\u3164\\ufeff\\uffa0\\ufff9-\\ufffb]*[^\\s\\u0000-\\u001f\\u007f-\\u009f\\u00ad\\u034f\\u061c\\u115f\\u1160\\u17b4\\u17b5\\u180e\\u200b-\\u200f\\u202a-\\u202e\\u2060-\\u2064\\u2066-\\u206f\\u3164\\ufeff\\uffa0\\ufff9-\\ufffb][^\\u0000-\\u001f\\u007f-\\u009f\\u00ad\\u034f\\u061c\\u115f\\u1160\\u17b4\\u17b5\\u180e\\u200b-\\u200f\\u202a-\\u202e\\u2060-\\u2064\\u2066-\\u206f\\u3164\\ufeff\\uffa0\\ufff9-\\ufffb]*$")]
    pub display_name: Option<Value>,
    /// An https URL of at most 2,048 characters; null removes the avatar.
    #[serde(default, deserialize_with = "given")]
    #[schema(value_type = Option<String>, max_length = 2048, pattern = "^https://[A-Za-z0-9.-]+(/[A-Za-z0-9._~/-]*)?$")]
    pub avatar_url: Option<Value>,
}

/// A field that was sent, even as `null` (absent stays `None` through `default`).
fn given<'de, D: Deserializer<'de>>(d: D) -> Result<Option<Value>, D::Error> {
    Value::deserialize(d).map(Some)
}

/// The caller's profile.
#[utoipa::path(get, path = "/v1/profile", operation_id = "getProfile", tag = "profile", security(("bearer" = ["profile:read"])),
    responses((status = 200, description = "The profile", body = ProfileEnvelope),
              (status = 401, description = "No valid token, or the account is deleted")))]
pub(crate) async fn read(
    State(state): State<AppState>,
    caller: Caller<scope::ProfileRead, Deferred>,
) -> Result<Response, ApiError> {
    Ok(ok(Profile::from(current(&state, caller).await?)))
}

/// The caller's profile with its creation time.
#[utoipa::path(get, path = "/v1/profile/me", operation_id = "getMyProfile", tag = "profile", security(("bearer" = ["profile:read"])),
    responses((status = 200, description = "The profile with createdAt", body = UserEnvelope),
              (status = 401, description = "No valid token, or the account is deleted")))]
pub(crate) async fn read_me(
    State(state): State<AppState>,
    caller: Caller<scope::ProfileRead, Deferred>,
) -> Result<Response, ApiError> {
    Ok(ok(current(&state, caller).await?))
}

/// Changes the caller's display name and/or avatar.
#[utoipa::path(patch, path = "/v1/profile", operation_id = "updateProfile", tag = "profile", security(("bearer" = [])),
    request_body(content = ProfileUpdate, description = "camelCase or PascalCase names; `avatarUrl: null` removes the avatar"),
    responses((status = 200, description = "The changed profile", body = ProfileEnvelope),
              (status = 400, description = "Every problem, by field"),
              (status = 401, description = "No valid token, or the account is deleted"),
              (status = 409, description = "Changed concurrently; retry")))]
pub(crate) async fn change(
    State(state): State<AppState>,
    user: Caller<scope::SignIn>,
    ApiJson(body): ApiJson<ProfileUpdate>,
) -> Result<Response, ApiError> {
    Ok(ok(Profile::from(apply(&state, &user, body).await?)))
}

/// Changes the caller's display name and/or avatar; answers the profile with `createdAt`.
#[utoipa::path(patch, path = "/v1/profile/me", operation_id = "updateMyProfile", tag = "profile", security(("bearer" = [])),
    request_body(content = ProfileUpdate, description = "camelCase or PascalCase names; `avatarUrl: null` removes the avatar"),
    responses((status = 200, description = "The changed profile", body = UserEnvelope),
              (status = 400, description = "Every problem, by field"),
              (status = 401, description = "No valid token, or the account is deleted"),
              (status = 409, description = "Changed concurrently; retry")))]
pub(crate) async fn change_me(
    State(state): State<AppState>,
    user: Caller<scope::SignIn>,
    ApiJson(body): ApiJson<ProfileUpdate>,
) -> Result<Response, ApiError> {
    Ok(ok(apply(&state, &user, body).await?))
}

/// The caller's profile, read beside the check of the caller's sign-in.
async fn current(
    state: &AppState,
    caller: Caller<scope::ProfileRead, Deferred>,
) -> Result<User, ApiError> {
    let user_id = caller.user_id().clone();
    let (_, profile) = caller
        .confirmed_with(state, profiles::get(&state.ports, &user_id))
        .await?;
    profile.ok_or_else(|| ApiError::Unauthorized("account no longer exists".into()))
}

async fn apply(
    state: &AppState,
    user: &Caller<scope::SignIn>,
    body: ProfileUpdate,
) -> Result<User, ApiError> {
    let change = ProfileChange::parse(body.display_name, body.avatar_url)?;
    profiles::update(&state.ports, user.user_id(), &change)
        .await
        .map_err(|e| match e {
            ProfileError::Gone => ApiError::Unauthorized(e.to_string()),
            ProfileError::Contended => ApiError::Conflict(e.to_string()),
            ProfileError::Store(s) => s.into(),
        })
}

/// The export document (`format` 1): see docs/api-guide.md, "Profile and data control", for every key.
#[derive(Debug, Serialize, ToSchema)]
#[serde(rename_all = "camelCase")]
pub(crate) struct ExportDocument {
    /// The layout's version: 1.
    pub format: u32,
    /// When the export was made (RFC 3339).
    pub exported_at: String,
    /// The driver's id.
    pub user_id: String,
    /// The profile with its version.
    #[schema(value_type = Object)]
    pub profile: Value,
    /// True at the very end of a document that was written whole.
    pub complete: bool,
}

/// Everything the service holds about the caller, as a JSON file (not enveloped), streamed.
#[utoipa::path(get, path = "/v1/profile/me/export", operation_id = "exportMyData", tag = "profile", security(("bearer" = [])),
    responses((status = 200, description = "The export, `Content-Disposition: attachment; filename=\"paddock-export-<date>.json\"`; \
                besides the keys shown, one array per kind of data (sessions, feed, leaderboardEntries, ...)",
               content_type = "application/json", body = ExportDocument),
              (status = 302, description = "AWS: the same document at a 5-minute presigned S3 URL"),
              (status = 401, description = "No valid token, or the account is deleted"),
              (status = 429, description = "More than `Limits__ExportsPerHour` exports in an hour (Retry-After)")))]
pub(crate) async fn export_me(
    State(state): State<AppState>,
    user: Caller<scope::SignIn>,
) -> Result<Response, ApiError> {
    // An export reads everything the driver has: bounded per hour, before any of it is read.
    rate_limits::hit(
        &state.ports,
        "export",
        user.user_id().as_str(),
        3600,
        &[Limit::new("n", state.settings.exports_per_hour)],
    )
    .await?;
    let profile = users::get_stored(&state.ports, user.user_id())
        .await?
        .filter(|p| p.deleted_at.is_none())
        .ok_or_else(|| ApiError::Unauthorized("account no longer exists".into()))?;
    let driver = Driver::of(&profile.user);
    let date = state.ports.clock.now().date();
    let file_name = format!("paddock-export-{date}.json");
    if state.settings.backend == Backend::Aws {
        return export_through_blob_store(&state, &driver, &profile, &file_name).await;
    }
    // The document is written into a bounded pipe as the response is sent: memory holds a
    // page of items, whatever the driver's history.
    let (mut writer, reader) = tokio::io::duplex(64 * 1024);
    let ports = state.ports.clone();
    tokio::spawn(async move {
        let started = std::time::Instant::now();
        let written = export::write(&ports, &driver, &profile, &mut writer).await;
        exported(&driver, written, started);
    });
    let disposition = format!("attachment; filename=\"{file_name}\"");
    let headers = [
        (
            header::CONTENT_TYPE,
            HeaderValue::from_static("application/json"),
        ),
        (
            header::CONTENT_DISPOSITION,
            HeaderValue::from_str(&disposition).expect("an ASCII header value"),
        ),
        (header::CACHE_CONTROL, HeaderValue::from_static("no-store")),
    ];
    let body = Body::from_stream(tokio_util::io::ReaderStream::new(reader));
    Ok((StatusCode::OK, headers, body).into_response())
}

/// Counts and logs an export's end.
fn exported(
    driver: &Driver,
    written: Result<export::Counts, ExportError>,
    started: std::time::Instant,
) {
    match written {
        Ok(counts) => {
            paddock_core::metrics::global()
                .exports
                .with_label_values(&["complete"])
                .inc();
            let items: u64 = counts.iter().map(|(_, n)| n).sum();
            tracing::info!(user_id = %driver.id, items, elapsed_ms = started.elapsed().as_millis() as u64, "data export written");
        }
        Err(e) => {
            paddock_core::metrics::global()
                .exports
                .with_label_values(&["failed"])
                .inc();
            tracing::error!(user_id = %driver.id, error = format!("{e:#}"), "data export failed");
        }
    }
}

/// In AWS: API Gateway buffers a function's answer (6 MB at most), so the document is written
/// to a temporary file (memory holds a page), stored under `exports/<user id>/`, and handed
/// out as a 5-minute presigned URL (302), like a share-pack download. The bucket's lifecycle
/// rule removes exports after a day; account deletion removes them at once.
async fn export_through_blob_store(
    state: &AppState,
    driver: &Driver,
    profile: &users::StoredProfile,
    file_name: &str,
) -> Result<Response, ApiError> {
    let started = std::time::Instant::now();
    // Created exclusively (never a file or link already there) with mode 0600 at an
    // unguessable name, and removed when dropped.
    let staged = tempfile::Builder::new()
        .prefix("paddock-export-")
        .suffix(".json")
        .tempfile()
        .map_err(|e| ApiError::Internal(anyhow::Error::new(e).context("staging the export")))?;
    let result = async {
        let mut file = tokio::fs::File::from_std(staged.reopen().map_err(ExportError::from)?);
        let counts = export::write(&state.ports, driver, profile, &mut file).await?;
        let key = format!(
            "{}{}.json",
            paddock_core::driver_data::exports_of(&driver.id),
            uuid::Uuid::now_v7()
        );
        state
            .ports
            .blobs
            .put_file(&key, staged.path(), "application/json")
            .await?;
        Ok::<_, ExportError>((counts, key))
    }
    .await;
    drop(staged);
    let (counts, key) = match result {
        Ok(done) => done,
        Err(e) => {
            let message = e.to_string();
            exported(driver, Err(e), started);
            return Err(ApiError::Internal(
                anyhow::anyhow!(message).context("writing the export"),
            ));
        }
    };
    exported(driver, Ok(counts), started);
    let url = state
        .ports
        .blobs
        .presigned_get(&key, std::time::Duration::from_secs(300), Some(file_name))
        .await?
        .ok_or_else(|| {
            ApiError::Internal(anyhow::anyhow!("the blob store has no presigned URLs"))
        })?;
    let location = HeaderValue::from_str(&url).map_err(|e| ApiError::Internal(e.into()))?;
    Ok((
        StatusCode::FOUND,
        [
            (header::LOCATION, location),
            (header::CACHE_CONTROL, HeaderValue::from_static("no-store")),
        ],
    )
        .into_response())
}

/// Deletes the caller's account at once (sign-ins revoked, email freed, provider links
/// removed) and queues the deletion of the rest of their data.
#[utoipa::path(delete, path = "/v1/profile/me", operation_id = "deleteMyAccount", tag = "profile", security(("bearer" = [])),
    responses((status = 202, description = "The account is deleted; the job removing the rest of the data is queued",
               body = DeletionTicketEnvelope),
              (status = 401, description = "No valid token, or the account is already deleted (the request that deleted \
               it, sent again with the sign-in it revoked, is answered its ticket)"),
              (status = 409, description = "The account changed concurrently; retry")))]
pub(crate) async fn delete_me(
    State(state): State<AppState>,
    user: Caller<scope::SignIn, Deferred>,
) -> Result<Response, ApiError> {
    let ticket = deletion::start_for(&state.ports, user.into_unconfirmed())
        .await
        .map_err(|e| match e {
            DeletionError::Gone => ApiError::Unauthorized(e.to_string()),
            DeletionError::Contended => ApiError::Conflict(e.to_string()),
            DeletionError::Caller(refused) => refused.into(),
            DeletionError::Store(s) => s.into(),
        })?;
    Ok(with_status(StatusCode::ACCEPTED, ticket))
}

envelope!(
    /// A driver's public profile.
    ProfileEnvelope => Profile
);

envelope!(
    /// The caller's own profile.
    UserEnvelope => paddock_core::identity::users::User
);

envelope!(
    /// An account deletion under way.
    DeletionTicketEnvelope => paddock_core::driver_data::deletion::DeletionTicket
);
