//! The deployed shape and its operation: the crate and module graph, the function binaries
//! as Lambda runs them, the local API under each function's policy, faults on the wire, and
//! the operator's tools.
//!
//! A module per area: `./tests/run.sh --test operations
//! <module>::` runs one.

mod cloud_faults;
mod crate_layers;
mod deployed_secret;
mod lambda_functions;
mod library_sizes;
mod local_api;
mod module_cycles;
mod operator_tools;
mod test_layout;
