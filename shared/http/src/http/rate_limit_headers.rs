//! The `RateLimit-Limit`, `RateLimit-Remaining` and `RateLimit-Reset` headers of answers to
//! requests made with a personal access token or an app's token.
//!
//! A request whose bearer token has the personal-token prefix gets a [`RateLimitSlot`] in its
//! extensions; the token's check leaves the usage of its limit there, and this middleware
//! copies it onto the answer (a 429 too). Every other request passes with one header look-up.
//! (Rate-limit crates such as `tower_governor` count in memory per process; our limits are
//! counted in the item store, across instances.)

use axum::extract::Request;
use axum::middleware::Next;
use axum::response::Response;
use http::{HeaderName, HeaderValue};

use super::auth_user::RateLimitSlot;
use crate::bearer::bearer;
use paddock_core::identity::{app_tokens, personal_tokens};

/// Gives a counted token's request a rate-limit slot, and its answer the slot's headers.
pub(crate) async fn rate_limit_headers(mut req: Request, next: Next) -> Response {
    // A token whose requests are counted (by its prefix only).
    let counted = |t: &str| personal_tokens::is_personal_token(t) || app_tokens::is_app_token(t);
    if !bearer(req.headers()).is_some_and(counted) {
        return next.run(req).await;
    }
    let slot = RateLimitSlot::default();
    req.extensions_mut().insert(slot.clone());
    let mut response = next.run(req).await;
    if let Some(usage) = slot.0.get() {
        for (name, value) in [
            ("ratelimit-limit", u64::from(usage.limit)),
            ("ratelimit-remaining", u64::from(usage.remaining)),
            ("ratelimit-reset", usage.reset_secs),
        ] {
            let headers = response.headers_mut();
            headers.insert(HeaderName::from_static(name), HeaderValue::from(value));
        }
    }
    response
}
