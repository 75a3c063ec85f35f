//! Paddock's HTTP face: the endpoint groups and their OpenAPI document, and the request and
//! answer types; the HTTP layer under them (`paddock-http`) under its old paths.
//!
//! Handlers parse a request, call one function of `paddock-core` and map its error to the
//! envelope; nothing here knows which adapters stand behind the ports.

// Everything the binaries and tests use is documented; CI turns warnings into errors.
#![warn(missing_docs)]

pub use paddock_http::{envelope, http, metrics_access, metrics_readout, state};
pub mod routes;
