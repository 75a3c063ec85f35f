//! Lambda function serving the sessions endpoint group.

use paddock::lambda::{Error, serve_group, start};
use paddock::routes;

#[tokio::main]
async fn main() -> Result<(), Error> {
    let wiring = start().await?.blobs().await?.secrets();
    serve_group(routes::sessions::routes(), wiring).await
}
