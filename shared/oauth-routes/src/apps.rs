//! `/v1/apps`: a signed-in driver registers, lists, changes and deletes the OAuth apps they
//! run. Only a sign-in manages apps ([`Caller<scope::SignIn>`]): no token, not even an app's,
//! can make or change one.

use axum::extract::{Path, State};
use axum::response::{IntoResponse, Response};
use http::StatusCode;
use serde::{Deserialize, Serialize};
use utoipa::ToSchema;

use paddock_authorization::apps::{self, AppError, AppView, ClientType, NewApp, RegisteredApp};
use paddock_http::envelope;
use paddock_http::http::auth_user::{Caller, scope};
use paddock_http::http::envelope::with_status;
use paddock_http::http::{ApiError, ApiJson, ok};
use paddock_http::state::AppState;

/// `POST /v1/apps` body.
#[derive(Debug, Deserialize, ToSchema)]
#[serde(rename_all = "camelCase")]
pub(crate) struct CreateAppRequest {
    /// The app's name, shown to drivers on the consent page: 1 to 64 characters, no control
    /// or invisible characters.
    #[schema(required = true, value_type = String, min_length = 1, max_length = 64)]
    pub name: Option<String>,
    /// 1 to 10 redirect URIs: `https`, or `http` on `127.0.0.1` or `[::1]` for a native app.
    #[schema(required = true, value_type = Vec<String>, min_items = 1, max_items = 10)]
    pub redirect_uris: Option<Vec<String>>,
    /// `public` (default: PKCE alone) or `confidential` (a secret as well, shown once).
    #[schema(value_type = Option<ClientType>)]
    pub client_type: Option<String>,
}

/// `PATCH /v1/apps/{clientId}` body: what is given changes.
#[derive(Debug, Deserialize, ToSchema)]
#[serde(rename_all = "camelCase")]
pub(crate) struct ChangeAppRequest {
    /// A new name (1 to 64 characters).
    #[schema(value_type = Option<String>, min_length = 1, max_length = 64)]
    pub name: Option<String>,
    /// New redirect URIs (1 to 10), replacing the old ones.
    #[schema(value_type = Option<Vec<String>>, min_items = 1, max_items = 10)]
    pub redirect_uris: Option<Vec<String>>,
}

/// The caller's apps.
#[derive(Debug, Serialize, ToSchema)]
pub(crate) struct AppList {
    /// Oldest first.
    pub items: Vec<AppView>,
}

envelope!(
    /// An app just registered (a confidential app's secret shown this once).
    RegisteredAppEnvelope => RegisteredApp
);
envelope!(
    /// One app.
    AppEnvelope => AppView
);
envelope!(
    /// The caller's apps.
    AppListEnvelope => AppList
);

fn refusal(e: AppError) -> ApiError {
    match e {
        AppError::Invalid { .. } => ApiError::BadRequest(e.to_string()),
        AppError::TooMany => ApiError::Conflict(e.to_string()),
        AppError::NotFound => ApiError::NotFound(e.to_string()),
        AppError::AccountGone => ApiError::Unauthorized(e.to_string()),
        AppError::Store(s) => s.into(),
    }
}

/// Registers an app. A public app proves itself by PKCE alone; a confidential one also by
/// its secret, which is in this answer only.
#[utoipa::path(post, path = "/v1/apps", operation_id = "createApp", tag = "apps", request_body = CreateAppRequest,
    security(("bearer" = [])),
    responses((status = 201, description = "Registered", body = RegisteredAppEnvelope),
              (status = 400, description = "A field breaks a rule (the message names it)"),
              (status = 409, description = "The driver already has 10 apps")))]
pub(crate) async fn create(
    State(state): State<AppState>,
    user: Caller<scope::SignIn>,
    ApiJson(body): ApiJson<CreateAppRequest>,
) -> Result<Response, ApiError> {
    let name = body
        .name
        .ok_or_else(|| ApiError::invalid("name", "is required"))?;
    let uris = body
        .redirect_uris
        .ok_or_else(|| ApiError::invalid("redirectUris", "is required"))?;
    let new = NewApp {
        name: apps::checked_name(&name).map_err(refusal)?,
        redirect_uris: apps::checked_redirect_uris(&uris).map_err(refusal)?,
        client_type: apps::checked_client_type(body.client_type.as_deref()).map_err(refusal)?,
    };
    let registered = apps::register(&state.ports, user.user_id(), new)
        .await
        .map_err(refusal)?;
    Ok(with_status(StatusCode::CREATED, registered))
}

/// The caller's apps, each with how many drivers authorised it.
#[utoipa::path(get, path = "/v1/apps", operation_id = "listApps", tag = "apps", security(("bearer" = [])),
    responses((status = 200, description = "The caller's apps", body = AppListEnvelope)))]
pub(crate) async fn list(
    State(state): State<AppState>,
    user: Caller<scope::SignIn>,
) -> Result<Response, ApiError> {
    let items = apps::list(&state.ports, user.user_id()).await?;
    Ok(ok(AppList { items }))
}

/// One of the caller's apps.
#[utoipa::path(get, path = "/v1/apps/{clientId}", operation_id = "getApp", tag = "apps", security(("bearer" = [])),
    params(("clientId" = String, Path, description = "The app's client id")),
    responses((status = 200, description = "The app", body = AppEnvelope),
              (status = 404, description = "The caller has no app of that id")))]
pub(crate) async fn get(
    State(state): State<AppState>,
    user: Caller<scope::SignIn>,
    Path(client_id): Path<String>,
) -> Result<Response, ApiError> {
    let app = apps::owned(&state.ports, user.user_id(), &client_id)
        .await
        .map_err(refusal)?;
    Ok(ok(app.view()))
}

/// Changes an app's name or redirect URIs. Codes already issued keep the URI they were
/// issued for.
#[utoipa::path(patch, path = "/v1/apps/{clientId}", operation_id = "changeApp", tag = "apps", request_body = ChangeAppRequest,
    security(("bearer" = [])),
    params(("clientId" = String, Path, description = "The app's client id")),
    responses((status = 200, description = "The changed app", body = AppEnvelope),
              (status = 400, description = "A field breaks a rule (the message names it)"),
              (status = 404, description = "The caller has no app of that id")))]
pub(crate) async fn change(
    State(state): State<AppState>,
    user: Caller<scope::SignIn>,
    Path(client_id): Path<String>,
    ApiJson(body): ApiJson<ChangeAppRequest>,
) -> Result<Response, ApiError> {
    let name = body
        .name
        .as_deref()
        .map(apps::checked_name)
        .transpose()
        .map_err(refusal)?;
    let uris = (body.redirect_uris.as_deref())
        .map(apps::checked_redirect_uris)
        .transpose()
        .map_err(refusal)?;
    let app = apps::change(&state.ports, user.user_id(), &client_id, name, uris)
        .await
        .map_err(refusal)?;
    Ok(ok(app))
}

/// Deletes an app: every driver's grant to it ends at once, with its tokens.
#[utoipa::path(delete, path = "/v1/apps/{clientId}", operation_id = "deleteApp", tag = "apps", security(("bearer" = [])),
    params(("clientId" = String, Path, description = "The app's client id")),
    responses((status = 204, description = "Deleted"),
              (status = 404, description = "The caller has no app of that id")))]
pub(crate) async fn delete(
    State(state): State<AppState>,
    user: Caller<scope::SignIn>,
    Path(client_id): Path<String>,
) -> Result<Response, ApiError> {
    apps::delete(&state.ports, user.user_id(), &client_id)
        .await
        .map_err(refusal)?;
    Ok(StatusCode::NO_CONTENT.into_response())
}
