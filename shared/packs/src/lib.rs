//! Paddock's share packs: what a driver shares by link, uploaded, checked and served.

// Everything the other crates use is documented; CI turns warnings into errors.
#![warn(missing_docs)]

pub mod sharepacks;
