//! Paddock's OAuth endpoints (the `oauth` endpoint group): `/v1/apps` (a driver's apps),
//! `/v1/authorized-apps` (a driver's grants), the authorization server's metadata, the
//! consent page at `/oauth/authorize`, and `/oauth/token` and `/oauth/revoke`. The rules are
//! the domain's (`paddock-oauth`); these read requests and write answers, the OAuth ones as
//! their RFCs say rather than in the API's envelope.

mod apps;
mod authorize;
mod consent_page;
mod form;
mod grants;
mod metadata;
mod provider_sign_in;
mod token;

use paddock_http::registry::{Routes, operations};

/// The group's routes.
pub fn routes<R: Routes>() -> R {
    R::empty()
        .operations(operations!(apps::list, apps::create))
        .operations(operations!(apps::get, apps::change, apps::delete))
        .operations(operations!(grants::list))
        .operations(operations!(grants::revoke))
        .operations(operations!(metadata::metadata))
        .operations(operations!(authorize::authorize, authorize::answer))
        .operations(operations!(provider_sign_in::provider_sign_in))
        .operations(operations!(provider_sign_in::signed_in_with_provider))
        .operations(operations!(token::token))
        .operations(operations!(token::revoke))
}

/// The metadata's path (RFC 8414).
pub const METADATA_PATH: &str = metadata::PATH;
