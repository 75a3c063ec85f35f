//! Paddock's leaderboards: laps submitted from sessions, the boards they rank on, and the
//! reads of boards, ranks and a driver's history.

// Everything the other crates use is documented; CI turns warnings into errors.
#![warn(missing_docs)]

pub mod leaderboards;
