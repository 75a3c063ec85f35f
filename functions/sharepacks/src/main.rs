//! Lambda function serving the sharepacks endpoint group.

use paddock::lambda::{Error, serve_group};
use paddock::routes::Group;

#[tokio::main]
async fn main() -> Result<(), Error> {
    serve_group(Group::Sharepacks).await
}
