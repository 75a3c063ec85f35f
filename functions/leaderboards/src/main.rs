//! Lambda function serving the leaderboards endpoint group.

use paddock::lambda::{Error, serve_group, start};
use paddock::routes;

#[tokio::main]
async fn main() -> Result<(), Error> {
    let wiring = start().await?.secrets();
    serve_group(routes::leaderboards::routes(), wiring).await
}
