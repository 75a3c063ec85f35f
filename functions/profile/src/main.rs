//! Lambda function serving the profile endpoint group (profile, export, account deletion).

use paddock::lambda::{Error, serve_group, start};
use paddock::routes;

#[tokio::main]
async fn main() -> Result<(), Error> {
    // Exports read track points from the blob store.
    let wiring = start().await?.blobs().await?.secrets();
    serve_group(routes::profile_routes(), wiring).await
}
