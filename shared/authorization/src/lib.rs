//! Paddock's OAuth 2.1 authorization server, for apps that act for many drivers: apps
//! registered by drivers ([`apps`]), the consent a driver gives one ([`grants`]), the
//! authorization request and its code ([`authorization`], [`codes`]), and the token
//! endpoint's exchanges and revocation ([`tokens`]); clients that need no registration, known
//! by their metadata document's URL ([`client_documents`]). An app's access tokens are checked by the
//! identity crate's door, beside sign-ins and personal access tokens.

pub mod apps;
pub mod authorization;
pub mod client_documents;
pub mod codes;
pub mod consent_sessions;
pub mod errors;
pub mod grants;
mod keys;
pub mod redirect_uris;
pub mod tokens;
