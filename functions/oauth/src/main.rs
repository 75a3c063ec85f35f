//! Lambda function serving the OAuth endpoint group: apps, grants, the consent page, the
//! token and revocation endpoints.

use paddock_api::routes::Group;
use paddock_runtime::lambda;
use std::process::ExitCode;

fn main() -> ExitCode {
    lambda::run(lambda::serve(Group::Oauth))
}
