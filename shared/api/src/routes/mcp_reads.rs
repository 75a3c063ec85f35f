//! The REST read routes the MCP server's tools answer through (`paddock-mcp-server`): served
//! in the MCP function as they are in their own groups, so a tool's answer is the route's.

use axum::Router;
use utoipa_axum::router::OpenApiRouter;

use crate::routes::registry::{Routes, operations};
use crate::routes::{activity, events, leaderboards, profile, sessions, tracks};
use crate::state::AppState;

/// The routes, and their description, for the MCP server.
pub(crate) const READS: mcp_server::Reads = mcp_server::Reads {
    routes: served,
    description: described,
};

fn served() -> Router<AppState> {
    routes()
}

fn described() -> utoipa::openapi::OpenApi {
    routes::<OpenApiRouter<AppState>>().into_openapi()
}

/// Every read a tool answers with.
fn routes<R: Routes>() -> R {
    R::empty()
        .operations(operations!(profile::read_me))
        .operations(operations!(sessions::list))
        .operations(operations!(sessions::detail))
        .operations(operations!(tracks::list))
        .operations(operations!(leaderboards::leaderboard))
        .operations(operations!(leaderboards::my_standing))
        .operations(operations!(leaderboards::vehicles))
        .operations(operations!(activity::list_feed))
        .operations(operations!(activity::mine))
        .operations(operations!(events::list_public_events))
        .operations(operations!(events::standings))
}
