//! Builds the ports for a backend from the settings.

use anyhow::Context;
use std::sync::Arc;

use crate::aws;
use crate::config::{Backend, Settings};
use crate::embedded;
use crate::ports::{Clock, Ports, SystemClock};

/// Secret names generated on first use by the local backend.
pub const GENERATED_SECRETS: &[&str] = &["jwtSigningKey"];

/// The ports the settings ask for, on the system clock.
pub async fn ports(settings: &mut Settings) -> anyhow::Result<Ports> {
    let clock: Arc<dyn Clock> = Arc::new(SystemClock);
    match settings.backend {
        Backend::Embedded => embedded_ports(settings, clock),
        Backend::Aws => aws_ports(settings, clock).await,
    }
}

/// SQLite, directory blobs, SQLite queue and local secrets under the data directory.
pub fn embedded_ports(settings: &Settings, clock: Arc<dyn Clock>) -> anyhow::Result<Ports> {
    let dir = &settings.data_dir;
    let db = embedded::Database::open(dir.join("paddock.db"))
        .with_context(|| format!("opening the database in {}", dir.display()))?;
    Ok(Ports {
        items: Arc::new(
            embedded::SqliteItemStore::new(&db, clock.clone()).context("opening the item store")?,
        ),
        blobs: Arc::new(
            embedded::DirBlobStore::new(dir.join("blobs")).context("opening the blob directory")?,
        ),
        queue: Arc::new(
            embedded::SqliteQueue::new(&db, settings.visibility).context("opening the queue")?,
        ),
        secrets: Arc::new(embedded::LocalSecrets::new(dir.clone(), GENERATED_SECRETS)),
        clock,
    })
}

/// DynamoDB, S3, SQS and Secrets Manager; creates the resources first when asked to
/// (`Store__CreateResources`, for emulators), filling in the settings' names and URLs.
pub async fn aws_ports(settings: &mut Settings, clock: Arc<dyn Clock>) -> anyhow::Result<Ports> {
    let sdk = aws::sdk_config().await;
    let dynamo = aws_sdk_dynamodb::Client::new(&sdk);
    let s3 = s3_client(&sdk);
    let sqs = aws_sdk_sqs::Client::new(&sdk);
    if settings.create_resources {
        aws::provision::create_tables(&dynamo, &settings.table_prefix).await?;
        let bucket = settings
            .bucket
            .get_or_insert_with(|| "paddock-blobs".into())
            .clone();
        aws::provision::create_bucket(&s3, &bucket).await?;
        if settings.events_queue_url.is_none() {
            let (queue, dlq) = aws::provision::create_queues(&sqs, "paddock-events").await?;
            settings.events_queue_url = Some(queue);
            settings.dead_letter_queue_url.get_or_insert(dlq);
        }
    }
    let bucket = settings
        .bucket
        .clone()
        .context("Blobs__Bucket is required when Store__Backend=aws")?;
    let queue_url = settings
        .events_queue_url
        .clone()
        .context("Queue__EventsUrl is required when Store__Backend=aws")?;
    let secrets: Arc<dyn crate::ports::SecretSource> = match &settings.secret_id {
        Some(id) => Arc::new(aws::SecretsManagerSecrets::new(
            aws_sdk_secretsmanager::Client::new(&sdk),
            id,
        )),
        None => Arc::new(embedded::LocalSecrets::new(
            settings.data_dir.clone(),
            GENERATED_SECRETS,
        )),
    };
    Ok(Ports {
        items: Arc::new(aws::DynamoItemStore::new(
            dynamo,
            settings.table_prefix.clone(),
            clock.clone(),
        )),
        blobs: Arc::new(aws::S3BlobStore::new(s3, bucket)),
        queue: Arc::new(aws::SqsQueue::new(
            sqs,
            queue_url,
            settings.dead_letter_queue_url.clone(),
            settings.visibility,
        )),
        secrets,
        clock,
    })
}

/// An S3 client; path-style addressing when an endpoint override points at an emulator.
pub fn s3_client(sdk: &aws_config::SdkConfig) -> aws_sdk_s3::Client {
    let path_style = std::env::var_os("AWS_ENDPOINT_URL_S3").is_some()
        || std::env::var_os("AWS_ENDPOINT_URL").is_some();
    let config = aws_sdk_s3::config::Builder::from(sdk)
        .force_path_style(path_style)
        .build();
    aws_sdk_s3::Client::from_conf(config)
}
