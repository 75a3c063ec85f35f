//! What requests and background work cost: store round trips, capacity units, bytes and
//! memory, asserted not to grow with the data (the figures print with `--nocapture`).
//!
//! A module per area: `./tests/run.sh --test costs
//! <module>::` runs one.

mod data_control_costs;
mod event_standings_costs;
mod public_page_costs;
mod request_costs;
mod retention_costs;
mod sharepack_memory;
mod store_round_trips;
mod upload_writes;
