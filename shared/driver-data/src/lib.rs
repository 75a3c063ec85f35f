//! A driver's data: the registry of every kind of item a driver owns, the export and the
//! deletion that follow it, and the credentials among those kinds.

// Everything the other crates use is documented; CI turns warnings into errors.
#![warn(missing_docs)]

pub mod credentials;
pub mod driver_data;
