//! The named envelope schemas of the API description (`paddock_http::envelope_schemas`), under
//! the path the endpoint groups name them by.

pub(crate) use paddock_http::envelope_schemas::ErrorEnvelope;
pub(crate) use paddock_http::{envelope, page_envelope};
