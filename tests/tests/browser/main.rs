//! Pages in a real browser (Chromium through chromedriver): the sign-in, the OAuth consent
//! page, the board pages and the events' pages.
//!
//! A module per area: `./tests/run.sh --test browser
//! <module>::` runs one.

mod board_pages;
mod consent;
mod event_pages;
mod sign_in;
