//! AWS adapters: DynamoDB items, S3 blobs, SQS queue, Secrets Manager secrets.
//!
//! Endpoints come from the standard SDK configuration, so `AWS_ENDPOINT_URL_DYNAMODB`,
//! `AWS_ENDPOINT_URL_S3`, `AWS_ENDPOINT_URL_SQS` and `AWS_ENDPOINT_URL_SECRETS_MANAGER`
//! point them at local emulators.

pub mod blobs;
pub mod items;
pub mod provision;
pub mod queue;
pub mod secrets;

pub use blobs::S3BlobStore;
pub use items::DynamoItemStore;
pub use queue::SqsQueue;
pub use secrets::SecretsManagerSecrets;

use aws_config::{BehaviorVersion, SdkConfig};
use aws_smithy_http_client::tls::{Provider, rustls_provider::CryptoMode};

/// Loads the SDK configuration with the one TLS stack the service uses (rustls on ring).
pub async fn sdk_config() -> SdkConfig {
    let http = aws_smithy_http_client::Builder::new()
        .tls_provider(Provider::Rustls(CryptoMode::Ring))
        .build_https();
    aws_config::defaults(BehaviorVersion::latest())
        .http_client(http)
        .load()
        .await
}

/// Renders an SDK error with its whole source chain (the SDK's Display alone is terse).
pub(crate) fn describe(err: &(dyn std::error::Error + 'static)) -> String {
    let mut text = err.to_string();
    let mut source = err.source();
    while let Some(s) = source {
        text.push_str(": ");
        text.push_str(&s.to_string());
        source = s.source();
    }
    text
}
