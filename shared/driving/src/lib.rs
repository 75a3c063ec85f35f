//! What a driver drove and where: the sessions a driver syncs, and the tracks (their maps
//! learned from sessions) those sessions ran on.

// Everything the other crates use is documented; CI turns warnings into errors.
#![warn(missing_docs)]

pub mod sessions;
pub mod tracks;
