//! Conformance of the ports: every adapter (embedded, and AWS against DynamoDB Local and
//! moto_server) passes the same suites.
//!
//! A module per area: `./tests/run.sh --test store
//! <module>::` runs one.

mod blob_store;
mod data_dir_lock;
mod item_reads_together;
mod item_store;
mod leagues;
mod outbox_and_workers;
mod queue_and_secrets;
