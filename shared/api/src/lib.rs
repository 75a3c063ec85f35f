//! Paddock's HTTP face: the endpoint groups and their OpenAPI document, the request and answer
//! types, the extractors and middleware, and the public board pages' HTML.
//!
//! Handlers parse a request, call one function of `paddock-core` and map its error to the
//! envelope; nothing here knows which adapters stand behind the ports.

// Everything the binaries and tests use is documented; CI turns warnings into errors.
#![warn(missing_docs)]

pub mod envelope;
pub mod http;
pub mod metrics_access;
pub mod metrics_readout;
pub mod routes;
pub mod state;
