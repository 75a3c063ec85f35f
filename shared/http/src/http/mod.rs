//! HTTP core shared by every endpoint group: envelope, errors, extractors, middleware.

pub mod auth_user;
pub mod conditional;
mod domain_errors;
pub mod envelope;
pub mod error;
pub mod error_cause;
pub mod extract;
pub mod idempotency_key;
pub(crate) mod middleware;
pub(crate) mod observe;
pub mod path_id;
pub mod public_url;
pub(crate) mod rate_limit_headers;
pub mod security_headers;
pub mod serve;

pub use envelope::{Envelope, json_bytes, ok};
pub use error::ApiError;
pub use extract::{ApiJson, ApiQuery};
pub use middleware::with_service_layers;
pub use path_id::{MalformedId, PathId};
