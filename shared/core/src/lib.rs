//! Paddock's domain, whole: the crates it is made of under the paths the adapters, the API and
//! the runtime use, and the work that spans them: the consumers of each queue ([`workers`]), the
//! maintenance tick ([`maintenance`]) and what happens when an item's life ends
//! ([`retention`]).
//!
//! The domain's crates follow its own graph, each depending only on those below it:
//! `paddock-platform` (metrics, trace context) and `paddock-kernel` (ids, events, queues,
//! tables, ports, shared mechanisms) at the bottom; `paddock-config`; `paddock-identity`;
//! `paddock-driving` (sessions and tracks); `paddock-boards` (leaderboards); `paddock-social`
//! (activity, coaching, webhooks), `paddock-packs` (share packs) and `paddock-competitions`
//! (leagues); `paddock-driver-data`
//! (the registry of a driver's data, and credentials) on top.
//!
//! Nothing here speaks HTTP, AWS, Lambda or SQLite: the adapters (`paddock-embedded`,
//! `paddock-aws`) implement the ports, `paddock-api` turns requests into calls of these
//! functions, and `paddock-runtime` wires them into processes.

// Everything the other crates use is documented; CI turns warnings into errors.
#![warn(missing_docs)]

/// The characters no text another person reads may hold (the `paddock-hidden-characters`
/// crate, here under its old path).
pub use ::hidden_characters;
/// The clients known by their metadata document's URL (from `paddock-authorization`): the
/// adapters fetch the documents, the HTTP state keeps them.
pub use paddock_authorization::client_documents;
pub use paddock_boards::leaderboards;
pub use paddock_competitions::events as competition_events;
pub use paddock_competitions::leagues;
pub use paddock_config::config;
pub use paddock_driver_data::{credentials, driver_data};
pub use paddock_driving::{sessions, tracks};
pub use paddock_identity::identity;
pub use paddock_kernel::{
    events, hashing, ids, outbox, ports, problems, processed_events, queues, rate_limits,
    request_keys, retry, tables,
};
pub use paddock_packs::sharepacks;
pub use paddock_platform::{metrics, metrics_cloudwatch, trace_context};
pub use paddock_social::{activity, coaching, webhooks};

pub mod maintenance;
pub mod retention;
pub mod workers;
