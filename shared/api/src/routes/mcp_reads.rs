//! The REST read routes the MCP server's tools answer through (`paddock-mcp-server`): served
//! in the MCP function as they are in their own groups, so a tool's answer is the route's.

use axum::Router;
use utoipa_axum::router::OpenApiRouter;

use crate::routes::registry::{Routes, operations};
use crate::routes::{activity, events, leaderboards, profile, progress, sessions, tracks};
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
        .operations(operations!(progress::my_progress))
        .operations(operations!(leaderboards::vehicles))
        .operations(operations!(activity::list_feed))
        .operations(operations!(activity::mine))
        .operations(operations!(events::list_public_events))
        .operations(operations!(events::standings))
}

#[cfg(test)]
mod tests {
    use super::READS;
    use std::collections::BTreeSet;

    #[test]
    fn the_scopes_named_are_the_tools_scopes() {
        let needed: BTreeSet<&str> = mcp_server::tool_scopes(READS)
            .into_iter()
            .flat_map(|(_, scopes)| scopes)
            .collect();
        let named: BTreeSet<&str> = mcp_server::scopes_named().into_iter().collect();
        assert_eq!(needed, named);
    }

    /// docs/mcp.md's table of tools is the catalogue's: each tool, with its scopes.
    #[test]
    fn the_docs_list_every_tool_with_its_scopes() {
        let doc =
            std::fs::read_to_string(concat!(env!("CARGO_MANIFEST_DIR"), "/../../docs/mcp.md"))
                .expect("docs/mcp.md");
        let rows: Vec<Vec<&str>> = doc
            .lines()
            .filter(|line| line.starts_with("| `"))
            .map(|line| line.split(" | ").collect())
            .collect();
        let tools = mcp_server::tool_scopes(READS);
        assert_eq!(rows.len(), tools.len(), "one row per tool");
        for (name, scopes) in tools {
            let row = rows
                .iter()
                .find(|row| row[0] == format!("| `{name}`"))
                .unwrap_or_else(|| panic!("docs/mcp.md has no row for {name}"));
            let listed = row.last().expect("a scope column");
            for scope in scopes {
                assert!(
                    listed.contains(&format!("`{scope}`")),
                    "{name}: {scope} in {listed}"
                );
            }
        }
    }
}
