//! Paddock's competitions: leagues of drivers, and events (a window on one track) whose
//! standings are boards, entered by submitting laps.

// Everything the other crates use is documented; CI turns warnings into errors.
#![warn(missing_docs)]

pub mod events;
pub mod leagues;
