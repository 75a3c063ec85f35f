//! The baseline of the `lambda` bench scenario: a hello-world Lambda function on the same
//! runtime library (`lambda_http` over `lambda_runtime`), built with the same profile in the
//! same run as Paddock's functions, so their cold start and size are read as ratios to it.

use lambda_http::{Body, Error, Request, Response, service_fn};

async fn hello(_: Request) -> Result<Response<Body>, Error> {
    Ok(Response::builder()
        .header("content-type", "application/json")
        .body(Body::from(r#"{"hello":"world"}"#))?)
}

#[tokio::main]
async fn main() -> Result<(), Error> {
    lambda_http::run(service_fn(hello)).await
}
