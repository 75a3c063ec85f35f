//! Lambda function serving the league endpoint group.

use paddock_api::routes::Group;
use paddock_runtime::lambda;
use std::process::ExitCode;

fn main() -> ExitCode {
    lambda::run(lambda::serve(Group::Leagues))
}
