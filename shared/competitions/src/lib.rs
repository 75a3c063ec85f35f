//! Paddock's competitions: leagues of drivers, the ground events, standings and season tables
//! of a league are built on.

// Everything the other crates use is documented; CI turns warnings into errors.
#![warn(missing_docs)]

pub mod leagues;
