//! Paddock's clients of other services over HTTPS: the identity providers a driver signs in
//! with (OpenID Connect and OAuth2), the language models behind the coach, the drivers'
//! own webhook receivers, and OAuth clients' metadata documents.
//!
//! They are adapters like `paddock-embedded` and `paddock-aws`: `paddock-core` states what it
//! needs from them as types and traits, and never links an HTTP client.

// Everything the other crates use is documented; CI turns warnings into errors.
#![warn(missing_docs)]

mod checked_http;
pub mod client_documents;
pub mod identity_providers;
pub mod language_models;
pub mod webhooks;
