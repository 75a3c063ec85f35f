//! Paddock's public pages over HTTP, served by the leaderboards function: the board and driver
//! pages ([`boards`]) and the public events' pages ([`events`]), each with its link preview
//! (`og:image`). Every page is server-rendered HTML with no script, answered with the pages'
//! headers ([`page`]); what a page shows and how it is drawn is `paddock-board-pages`.

// Everything the API uses is documented; CI turns warnings into errors.
#![warn(missing_docs)]

mod boards;
mod events;
mod page;

use paddock_http::registry::Routes;

/// The pages' routes, registered with their operations (tag `pages`).
pub fn routes<R: Routes>() -> R {
    boards::routes::<R>().merge(events::routes())
}
