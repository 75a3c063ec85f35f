//! Public leaderboard pages on the web: server-rendered HTML a driver can share as a link.
//!
//! - `/boards`: the tracks with boards, searchable by name;
//! - `/boards/{trackId}`: a board, a page at a time, with a car selector (`?car=`) and the
//!   API's cursor (`?cursor=`) for the next page;
//! - `/drivers/{userId}`: a driver's best on every board;
//! - `/events` and `/events/{eventId}`: the public events, and one with its standings.
//!
//! The pages read the boards as `GET /v1/leaderboards` does ([`reads`]) and the events as
//! `GET /v1/events` does ([`event_reads`]), and render them with no script ([`render`]), with
//! avatars from the allowed hosts only ([`avatars`]); the routes are in `paddock-pages`.

// Everything the API uses is documented; CI turns warnings into errors.
#![warn(missing_docs)]

pub mod avatars;
pub mod charts;
pub mod event_reads;
pub mod preview;
pub mod reads;
pub mod render;
