//! Lambda function serving the ai endpoint group.

use paddock::lambda::{Error, serve_group, start};
use paddock::routes;

#[tokio::main]
async fn main() -> Result<(), Error> {
    let wiring = start().await?.secrets();
    serve_group(routes::unbuilt_routes(), wiring).await
}
