//! Paddock's HTTP layer, under the endpoint groups: the answer envelope, `ApiError` and the one
//! place domain errors become it, the body reader and extractors (the one credential extractor
//! over the domain's door among them), middleware, the local server's connection loop, the
//! state every handler shares, and the metrics page's readout and access.
//!
//! Nothing here names a route: `paddock-api` holds the endpoint groups and their OpenAPI
//! document, and re-exports these modules under its own paths.

// Everything the API and the runtime use is documented; CI turns warnings into errors.
#![warn(missing_docs)]

pub mod bearer;
pub mod client_addr;
pub mod cookies;
pub mod envelope;
pub mod envelope_schemas;
pub mod http;
pub mod metrics_access;
pub mod metrics_readout;
pub mod provider_flows;
pub mod registry;
pub mod schemas;
pub mod state;
