//! Endpoint groups. Each group is one Lambda function in AWS; locally all are merged.

pub mod auth;
pub mod health;
pub mod openapi;

use axum::Router;

use crate::http::with_service_layers;
use crate::state::AppState;

/// An endpoint group (one Lambda function each).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Group {
    Auth,
    Sessions,
    Leaderboards,
    Ai,
    Activity,
    Profile,
    Sharepacks,
    Health,
}

impl Group {
    /// Every group.
    pub const ALL: [Group; 8] = [
        Group::Auth,
        Group::Sessions,
        Group::Leaderboards,
        Group::Ai,
        Group::Activity,
        Group::Profile,
        Group::Sharepacks,
        Group::Health,
    ];

    /// The group's routes, without the service layers.
    pub fn routes(self) -> Router<AppState> {
        match self {
            Group::Health => health::routes(),
            Group::Auth => auth::routes(),
            // Groups whose endpoints are not built yet answer with the envelope's 404.
            Group::Sessions
            | Group::Leaderboards
            | Group::Ai
            | Group::Activity
            | Group::Profile
            | Group::Sharepacks => Router::new(),
        }
    }
}

/// One group's router with the service layers, ready to serve (a Lambda function).
pub fn group_router(group: Group, state: AppState) -> Router {
    let routes = group
        .routes()
        .merge(health::routes())
        .with_state(state.clone());
    with_service_layers(
        routes,
        state.settings.max_body_bytes,
        state.settings.request_timeout,
    )
}

/// Every group merged (the local server).
pub fn app_router(state: AppState) -> Router {
    let routes = Group::ALL
        .into_iter()
        .fold(Router::new(), |r, g| r.merge(g.routes()))
        .with_state(state.clone());
    with_service_layers(
        routes,
        state.settings.max_body_bytes,
        state.settings.request_timeout,
    )
}
