//! `/v1/authorized-apps`: the apps a driver let act for them, and taking that back. Only a
//! sign-in may list or revoke them: an app cannot see or end other apps' grants.

use axum::extract::{Path, State};
use axum::response::{IntoResponse, Response};
use http::StatusCode;
use serde::Serialize;
use utoipa::ToSchema;

use paddock_authorization::grants::{self, GrantView};
use paddock_http::envelope;
use paddock_http::http::auth_user::{Caller, scope};
use paddock_http::http::{ApiError, ok};
use paddock_http::state::AppState;

/// The apps the caller authorised.
#[derive(Debug, Serialize, ToSchema)]
pub(crate) struct GrantList {
    /// By app name.
    pub items: Vec<GrantView>,
}

envelope!(
    /// The apps the caller authorised.
    GrantListEnvelope => GrantList
);

/// The apps the caller authorised: what each may do, since when, and its last use.
#[utoipa::path(get, path = "/v1/authorized-apps", operation_id = "listAuthorizedApps", tag = "apps", security(("bearer" = [])),
    responses((status = 200, description = "The caller's grants", body = GrantListEnvelope)))]
pub(crate) async fn list(
    State(state): State<AppState>,
    user: Caller<scope::SignIn>,
) -> Result<Response, ApiError> {
    let items = grants::list(&state.ports, user.user_id()).await?;
    Ok(ok(GrantList { items }))
}

/// Revokes the caller's grant to an app: its access and refresh tokens stop at once.
#[utoipa::path(delete, path = "/v1/authorized-apps/{clientId}", operation_id = "revokeAuthorizedApp", tag = "apps", security(("bearer" = [])),
    params(("clientId" = String, Path, description = "The app's client id")),
    responses((status = 204, description = "Revoked"),
              (status = 404, description = "The caller has not authorised that app")))]
pub(crate) async fn revoke(
    State(state): State<AppState>,
    user: Caller<scope::SignIn>,
    Path(client_id): Path<String>,
) -> Result<Response, ApiError> {
    if !grants::revoke(&state.ports, user.user_id(), &client_id).await? {
        return Err(ApiError::NotFound("no grant to that app".into()));
    }
    Ok(StatusCode::NO_CONTENT.into_response())
}
