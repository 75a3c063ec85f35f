//! Paddock's identity: accounts, the sign-in flows, access, refresh and personal tokens,
//! passwords and profiles.

// Everything the other crates use is documented; CI turns warnings into errors.
#![warn(missing_docs)]

pub mod identity;
