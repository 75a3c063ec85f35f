//! The service black-box: scenarios over HTTP on a real port, on both backends and, where a
//! file says so, through the Lambda functions behind the local API.
//!
//! A module per area: `./tests/run.sh --test api
//! <module>::` runs one.

mod access_tokens;
mod account_takeover;
mod activity;
mod ai_coach;
mod auth;
mod auth_hardening;
mod board_pages;
mod coaching_budget;
mod endpoint_groups;
mod error_logging;
mod event_members;
mod event_pages;
mod events;
mod http_core;
mod idempotency_keys;
mod leaderboard_ranks;
mod leaderboards;
mod leagues;
mod local_server;
mod log_lines;
mod mcp;
mod metrics_scrapes;
mod oauth;
mod oauth_client_documents;
mod preview_renders;
mod profile;
mod rate_limits;
mod retention;
mod security_headers;
mod sessions;
mod sharepacks;
mod webhook_receivers;
mod webhooks;
