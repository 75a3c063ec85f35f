//! Pages in a real browser (Chromium through chromedriver): the sign-in and the board pages.
//!
//! A module per area: `./tests/run.sh --test browser
//! <module>::` runs one.

mod board_pages;
mod sign_in;
