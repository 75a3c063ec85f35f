//! Lambda function serving the profile endpoint group (profile, export, account deletion).

use paddock_api::routes::Group;
use paddock_runtime::lambda;
use std::process::ExitCode;

fn main() -> ExitCode {
    lambda::run(lambda::serve(Group::Profile))
}
