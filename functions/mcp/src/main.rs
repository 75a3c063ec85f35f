//! Lambda function serving the MCP endpoint group: `/mcp` and its protected resource metadata.

use paddock_api::routes::Group;
use paddock_runtime::lambda;
use std::process::ExitCode;

fn main() -> ExitCode {
    lambda::run(lambda::serve(Group::Mcp))
}
