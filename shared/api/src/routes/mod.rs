//! Endpoint groups. Each group is one Lambda function in AWS; locally all are merged.
//!
//! [`Group`] lists the groups; each gives its routes (registered with their OpenAPI
//! operations) and what its handlers need, and a function serves one of them.

pub(crate) mod activity;
pub mod ai;
pub mod auth;
mod bearer_form;
pub(crate) mod envelopes;
pub(crate) mod events;
pub(crate) mod health;
pub mod leaderboard_answers;
pub mod leaderboards;
pub(crate) mod leagues;
mod mcp_reads;
pub(crate) mod openapi;
pub mod paging;
pub(crate) mod profile;
mod progress;
pub use paddock_http::registry;
pub mod sessions;
mod sharepack_bodies;
pub mod sharepacks;
pub(crate) mod tracks;
mod webhook_descriptions;
pub(crate) mod webhooks;

use axum::Router;
use axum::routing::get;

use crate::http::with_service_layers;
use crate::state::AppState;
use registry::Routes;

/// An endpoint group: one Lambda function in AWS (`functions/<name>`); the local server serves
/// them all. Its routes are registered with their OpenAPI operations, so the document is the
/// routers' own.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
pub enum Group {
    /// Liveness, readiness, metrics and the OpenAPI document.
    Health,
    /// Registration, sign-in (email and providers), tokens and personal access tokens.
    Auth,
    /// Session uploads and reads.
    Sessions,
    /// Boards, standings, submissions and the public pages (boards, drivers, events).
    Leaderboards,
    /// Feed, achievements and tracks.
    Activity,
    /// The AI coach.
    Ai,
    /// Share packs.
    Sharepacks,
    /// Profile reads and changes, the data export and account deletion.
    Profile,
    /// Webhook subscriptions.
    Webhooks,
    /// Leagues and their members.
    Leagues,
    /// OAuth: drivers' apps and grants, the consent page, the token and revocation endpoints.
    Oauth,
    /// The MCP server: `/mcp` and its protected resource metadata.
    Mcp,
}

/// What a group's handlers use beyond the item store, the outbox and the clock: a function
/// wires these and nothing else.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default)]
pub struct Needs {
    /// The blob store (S3 in AWS).
    pub blobs: bool,
    /// The application secret (signing keys, provider and model keys, the metrics token).
    pub secrets: bool,
    /// The identity providers a driver signs in with.
    pub identity_providers: bool,
    /// The language model behind the coach.
    pub coach: bool,
    /// The metrics store (CloudWatch in AWS), which `GET /metrics` reads.
    pub metrics: bool,
    /// The HTTPS client of webhook receivers (a subscription's receiver confirms it).
    pub webhook_receivers: bool,
    /// The HTTPS fetcher of OAuth clients' metadata documents (a client known by its URL).
    pub client_documents: bool,
}

impl Group {
    /// Every group, in the order the local server merges them.
    pub const ALL: [Group; 12] = [
        Group::Health,
        Group::Auth,
        Group::Sessions,
        Group::Leaderboards,
        Group::Activity,
        Group::Ai,
        Group::Sharepacks,
        Group::Profile,
        Group::Webhooks,
        Group::Leagues,
        Group::Oauth,
        Group::Mcp,
    ];

    /// The group's name: its function's directory under `functions/` and its binary
    /// (`paddock-<name>`).
    pub fn name(self) -> &'static str {
        match self {
            Group::Health => "health",
            Group::Auth => "auth",
            Group::Sessions => "sessions",
            Group::Leaderboards => "leaderboards",
            Group::Activity => "activity",
            Group::Ai => "ai",
            Group::Sharepacks => "sharepacks",
            Group::Profile => "profile",
            Group::Webhooks => "webhooks",
            Group::Leagues => "leagues",
            Group::Oauth => "oauth",
            Group::Mcp => "mcp",
        }
    }

    /// The group named `name`, if any.
    pub fn named(name: &str) -> Option<Group> {
        Group::ALL.into_iter().find(|g| g.name() == name)
    }

    /// What the group's handlers use beyond the item store.
    #[inline(always)]
    pub fn needs(self) -> Needs {
        let secrets = Needs {
            secrets: true,
            ..Needs::default()
        };
        let blobs_and_secrets = Needs {
            blobs: true,
            ..secrets
        };
        match self {
            // Readiness checks the item store only; `GET /metrics` reads the metrics store,
            // for a scrape with the metrics token of the app secret.
            Group::Health => Needs {
                metrics: true,
                ..secrets
            },
            // Password hashing: the consent page signs drivers in.
            Group::Auth => Needs {
                identity_providers: true,
                ..secrets
            },
            // And the documents of clients known by their URL.
            Group::Oauth => Needs {
                identity_providers: true,
                client_documents: true,
                ..secrets
            },
            // Blobs: session points, track maps, packs, exports.
            Group::Sessions
            | Group::Leaderboards
            | Group::Activity
            | Group::Sharepacks
            | Group::Profile => blobs_and_secrets,
            Group::Ai => Needs {
                coach: true,
                ..secrets
            },
            // Secrets: the signing key of sign-in tokens.
            Group::Leagues | Group::Mcp => secrets,
            Group::Webhooks => Needs {
                webhook_receivers: true,
                ..secrets
            },
        }
    }

    /// The group's routes: served on an axum `Router`, described on an `OpenApiRouter`
    /// ([`registry`]). Inlined, so that a caller naming one group links that group's
    /// handlers only.
    #[inline(always)]
    pub fn routes<R: Routes>(self) -> R {
        match self {
            Group::Health => health::routes::<R>().undocumented(openapi::OPENAPI_PATH, || {
                get(openapi::deployed_openapi_json)
            }),
            Group::Auth => auth::routes(),
            Group::Sessions => sessions::routes(),
            Group::Leaderboards => {
                leaderboards::routes::<R>().operations(registry::operations!(progress::my_progress))
            }
            Group::Activity => tracks::routes::<R>().merge(activity::routes()),
            Group::Ai => ai::routes(),
            Group::Sharepacks => sharepacks::routes(),
            Group::Profile => profile::routes(),
            Group::Webhooks => webhooks::routes(),
            Group::Leagues => events::routes(leagues::routes()),
            Group::Oauth => oauth_routes::routes(),
            Group::Mcp => mcp_server::routes(mcp_reads::READS),
        }
    }

    /// The group's part of the API description: its operations and the schemas they name
    /// (built on each call, from the same registration as [`Group::routes`]).
    pub fn description(self) -> utoipa::openapi::OpenApi {
        self.routes::<utoipa_axum::router::OpenApiRouter<AppState>>()
            .into_openapi()
    }

    /// The routes served but not described as operations: the document itself, and older
    /// spellings of a documented path. Each as `(method, path)`.
    pub fn undocumented_routes(self) -> &'static [(&'static str, &'static str)] {
        match self {
            Group::Health => &[("GET", openapi::OPENAPI_PATH)],
            Group::Auth => &[("GET", auth::LEGACY_PROVIDER_LOGIN)],
            Group::Mcp => &[("POST", mcp_server::PATH)],
            _ => &[],
        }
    }

    /// The group's router with the service layers, over `state` (a Lambda function).
    pub fn router(self, state: AppState) -> Router {
        group_router(self.routes(), state)
    }
}

/// One group's routes with the service layers, ready to serve.
pub fn group_router(routes: Router<AppState>, state: AppState) -> Router {
    let (limit, timeout) = (
        state.settings.max_body_bytes,
        state.settings.request_timeout,
    );
    let routes = routes.layer(axum::middleware::from_fn(
        bearer_form::refuse_malformed_bearer,
    ));
    with_service_layers(routes.with_state(state), limit, timeout)
}

/// Every group merged (the local server).
pub fn app_router(state: AppState) -> Router {
    // The local server describes itself: its `GET /metrics` takes no token.
    let local = health::routes::<Router<AppState>>()
        .route(openapi::OPENAPI_PATH, get(openapi::openapi_json));
    let routes = (Group::ALL.into_iter())
        .filter(|group| *group != Group::Health)
        .fold(local, |all, group| {
            all.merge(group.routes::<Router<AppState>>())
        });
    group_router(routes, state)
}
