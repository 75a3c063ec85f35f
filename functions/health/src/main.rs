//! Lambda function serving health, readiness, metrics and the OpenAPI document.

use paddock_api::routes::Group;
use paddock_runtime::lambda;
use std::process::ExitCode;

fn main() -> ExitCode {
    lambda::run(lambda::serve(Group::Health))
}
