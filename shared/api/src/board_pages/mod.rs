//! Public leaderboard pages on the web: server-rendered HTML a driver can share as a link.
//!
//! - `/boards`: the tracks with boards, searchable by name;
//! - `/boards/{trackId}`: a board, a page at a time, with a car selector (`?car=`) and the
//!   API's cursor (`?cursor=`) for the next page;
//! - `/drivers/{userId}`: a driver's best on every board.
//!
//! The pages read the boards as `GET /v1/leaderboards` does ([`reads`]) and render them with
//! no script ([`render`]), with avatars from the allowed hosts only ([`avatars`]); the routes
//! are in `routes::board_pages`.

pub(crate) mod avatars;
pub(crate) mod charts;
pub(crate) mod preview;
pub(crate) mod reads;
pub(crate) mod render;
