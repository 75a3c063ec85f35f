//! The second baseline of the `lambda` bench scenario: the hello-world function that first
//! does what every Paddock function does before its first event and could not do without, in
//! Paddock's way: the AWS SDK's configuration (`paddock_aws::sdk_config`: the credential and
//! region chains, the HTTPS client) and a DynamoDB client. A function's figures over this one
//! are the cost of Paddock's own code; this one's over the first baseline, the SDK's.

use lambda_http::{Body, Error, Request, Response, service_fn};

#[tokio::main]
async fn main() -> Result<(), Error> {
    let sdk = paddock_aws::sdk_config().await;
    let dynamodb =
        aws_sdk_dynamodb::Client::from_conf(aws_sdk_dynamodb::config::Builder::from(&sdk).build());
    lambda_http::run(service_fn(move |_: Request| {
        // Held, as a function holds its store, and not called: the answer is the baseline's.
        let _store = &dynamodb;
        async {
            let answer = Response::builder()
                .header("content-type", "application/json")
                .body(Body::from(r#"{"hello":"world"}"#))?;
            Ok::<_, Error>(answer)
        }
    }))
    .await
}
