//! Paddock's configuration: the documented keys, read from the environment into typed
//! settings the runtime hands to the domain.

// Everything the other crates use is documented; CI turns warnings into errors.
#![warn(missing_docs)]

pub mod config;
