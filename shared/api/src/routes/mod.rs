//! Endpoint groups. Each group is one Lambda function in AWS; locally all are merged.
//!
//! Every group module exposes `routes()`. A function binary passes its own group's routes to
//! [`group_router`], so it links only that group's handlers.

pub(crate) mod activity;
pub mod ai;
pub mod auth;
pub(crate) mod board_pages;
pub(crate) mod envelopes;
pub(crate) mod health;
pub mod leaderboard_answers;
pub mod leaderboards;
pub(crate) mod openapi;
pub(crate) mod profile;
pub mod sessions;
pub mod sharepacks;
pub(crate) mod tracks;

use axum::Router;

use crate::http::with_service_layers;
use crate::state::AppState;

/// The profile group: profile reads and changes, the data export and account deletion.
pub fn profile_routes() -> Router<AppState> {
    profile::routes()
}

/// The health group: liveness, readiness, metrics and the OpenAPI document (one function).
pub fn health_routes() -> Router<AppState> {
    health::routes().merge(openapi::routes())
}

/// The activity group: feed, achievements and tracks (one function).
pub fn activity_routes() -> Router<AppState> {
    tracks::routes().merge(activity::routes())
}

/// One group's routes with the service layers, ready to serve (a Lambda function).
pub fn group_router(routes: Router<AppState>, state: AppState) -> Router {
    let (limit, timeout) = (
        state.settings.max_body_bytes,
        state.settings.request_timeout,
    );
    with_service_layers(routes.with_state(state), limit, timeout)
}

/// Every group merged (the local server).
pub fn app_router(state: AppState) -> Router {
    let routes = Router::new()
        .merge(health_routes())
        .merge(auth::routes())
        .merge(sessions::routes())
        .merge(leaderboards::routes())
        .merge(activity_routes())
        .merge(ai::routes())
        .merge(sharepacks::routes())
        .merge(profile_routes());
    group_router(routes, state)
}
