//! AWS adapters: DynamoDB items, S3 blobs, SQS queue, Secrets Manager secrets, CloudWatch
//! metrics.
//!
//! Endpoints come from the standard SDK configuration, so `AWS_ENDPOINT_URL_DYNAMODB`,
//! `AWS_ENDPOINT_URL_S3`, `AWS_ENDPOINT_URL_SQS`, `AWS_ENDPOINT_URL_SECRETS_MANAGER` and
//! `AWS_ENDPOINT_URL_CLOUDWATCH` point them at local emulators. S3, SQS, Secrets Manager and
//! CloudWatch are features (`s3`, `sqs`, `secretsmanager`, `cloudwatch`), so a function links
//! only the services it uses.

#[cfg(feature = "s3")]
pub mod blobs;
pub mod call_limits;
pub mod items;
#[cfg(feature = "cloudwatch")]
pub mod metrics_source;
pub mod on_first_use;
pub mod provision;
#[cfg(feature = "sqs")]
pub mod queue;
#[cfg(feature = "secretsmanager")]
pub mod secrets;

#[cfg(feature = "s3")]
pub use blobs::S3BlobStore;
pub use items::DynamoItemStore;
#[cfg(feature = "cloudwatch")]
pub use metrics_source::CloudWatchMetrics;
pub use on_first_use::OnFirstUse;
#[cfg(feature = "sqs")]
pub use queue::SqsQueue;
#[cfg(feature = "secretsmanager")]
pub use secrets::SecretsManagerSecrets;

use aws_config::{BehaviorVersion, SdkConfig};
use aws_sdk_dynamodb::config::ConfigBag;
use aws_smithy_http_client::tls::{Provider, rustls_provider::CryptoMode};
use aws_smithy_runtime_api::box_error::BoxError;
use aws_smithy_runtime_api::client::connector_metadata::ConnectorMetadata;
use aws_smithy_runtime_api::client::http::{
    HttpClient, HttpConnectorSettings, SharedHttpClient, SharedHttpConnector,
};
use aws_smithy_runtime_api::client::runtime_components::{
    RuntimeComponents, RuntimeComponentsBuilder,
};

/// Loads the SDK configuration with the one TLS stack the service uses (rustls on ring).
///
/// Where the environment holds the credentials and the region (Lambda sets
/// `AWS_ACCESS_KEY_ID`, `AWS_SECRET_ACCESS_KEY`, `AWS_SESSION_TOKEN` and `AWS_REGION` in
/// every function), they are read from it directly. The SDK's default chains would pick the
/// same values first, but they build every other source before asking any: an STS client for
/// web identity tokens and an instance-metadata client, about 0.6 ms of a function's init.
/// Without them, the default chains decide as before.
pub async fn sdk_config() -> SdkConfig {
    let http = aws_smithy_http_client::Builder::new()
        .tls_provider(Provider::Rustls(CryptoMode::Ring))
        .build_https();
    let mut loader = aws_config::defaults(BehaviorVersion::latest())
        .http_client(SharedHttpClient::new(RootsOnFirstRequest(http)));
    let set = |name: &str| std::env::var_os(name).is_some_and(|v| !v.is_empty());
    if set("AWS_ACCESS_KEY_ID") && set("AWS_SECRET_ACCESS_KEY") {
        loader = loader.credentials_provider(
            aws_config::environment::EnvironmentVariableCredentialsProvider::new(),
        );
    }
    if set("AWS_REGION") || set("AWS_DEFAULT_REGION") {
        loader = loader.region(aws_config::environment::EnvironmentVariableRegionProvider::new());
    }
    loader.load().await
}

/// The SDK's HTTPS client, but reading the system's root certificates when the first request
/// needs a connection rather than when a client is built.
///
/// The SDK's client reads every file under `/etc/ssl/certs` while an SDK client is being
/// configured, that is during a Lambda function's init, before it has been asked for an
/// event; a function whose invocation never calls AWS (a liveness probe, a refused token)
/// never needs them (docs/perf.md).
#[derive(Debug)]
struct RootsOnFirstRequest(SharedHttpClient);

impl HttpClient for RootsOnFirstRequest {
    fn http_connector(
        &self,
        settings: &HttpConnectorSettings,
        components: &RuntimeComponents,
    ) -> SharedHttpConnector {
        self.0.http_connector(settings, components)
    }

    /// Skips the inner client's check, whose only work is building its connector early.
    fn validate_base_client_config(
        &self,
        _: &RuntimeComponentsBuilder,
        _: &ConfigBag,
    ) -> Result<(), BoxError> {
        Ok(())
    }

    fn validate_final_config(
        &self,
        components: &RuntimeComponents,
        config: &ConfigBag,
    ) -> Result<(), BoxError> {
        self.0.validate_final_config(components, config)
    }

    fn connector_metadata(&self) -> Option<ConnectorMetadata> {
        self.0.connector_metadata()
    }
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
