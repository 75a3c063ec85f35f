//! Builds the ports for a backend from the settings.

use anyhow::Context;
use std::sync::Arc;

use paddock_core::config::{Backend, Settings};
use paddock_core::ports::unwired::Unwired;
use paddock_core::ports::{Clock, EventQueue, MetricsSource, Ports, Queues, SystemClock};
use paddock_core::queues::QueueName;

/// Secret names generated on first use by the local backend.
pub const GENERATED_SECRETS: &[&str] = crate::secret_fields::GENERATED_LOCALLY;

/// The ports the settings ask for, on the system clock.
pub async fn ports(settings: &mut Settings) -> anyhow::Result<Ports> {
    let clock: Arc<dyn Clock> = Arc::new(SystemClock);
    match settings.backend {
        Backend::Embedded => embedded_ports(settings, clock),
        Backend::Aws => aws_ports(settings, clock).await,
    }
}

/// SQLite, directory blobs, SQLite queues and local secrets under the data directory.
pub fn embedded_ports(settings: &Settings, clock: Arc<dyn Clock>) -> anyhow::Result<Ports> {
    let dir = &settings.data_dir;
    let db = paddock_embedded::Database::open(dir.join("paddock.db"))
        .with_context(|| format!("opening the database in {}", dir.display()))?;
    Ok(Ports {
        items: Arc::new(
            paddock_embedded::SqliteItemStore::new(&db, clock.clone())
                .context("opening the item store")?,
        ),
        blobs: Arc::new(
            paddock_embedded::DirBlobStore::new(dir.join("blobs"))
                .context("opening the blob directory")?,
        ),
        queues: Queues::try_new(|name| {
            paddock_embedded::SqliteQueue::new(&db, name.name(), settings.visibility)
                .map(|q| Arc::new(q) as Arc<dyn EventQueue>)
                .with_context(|| format!("opening the {name} queue"))
        })?,
        secrets: Arc::new(paddock_embedded::LocalSecrets::new(
            dir.clone(),
            GENERATED_SECRETS,
        )),
        clock,
    })
}

/// DynamoDB, S3, SQS and Secrets Manager; creates the resources first when asked to
/// (`Store__CreateResources`, for emulators), filling in the settings' names and URLs.
pub async fn aws_ports(settings: &mut Settings, clock: Arc<dyn Clock>) -> anyhow::Result<Ports> {
    aws_ports_with(settings, clock, paddock_aws::sdk_config().await).await
}

/// As [`aws_ports`], with the SDK configuration given (its endpoints, say).
pub async fn aws_ports_with(
    settings: &mut Settings,
    clock: Arc<dyn Clock>,
    sdk: aws_config::SdkConfig,
) -> anyhow::Result<Ports> {
    let wiring = AwsWiring::connect_with(settings.clone(), clock, sdk).await?;
    let wiring = wiring
        .blobs()
        .await?
        .queues(&QueueName::ALL)
        .await?
        .secrets()?;
    let (wired_settings, ports) = wiring.finish();
    *settings = wired_settings;
    Ok(ports)
}

/// Builds AWS ports one service at a time.
///
/// A Lambda function calls only the methods for the services it uses; the SDK clients of the
/// others are then never referenced, and the linker leaves them out of its binary; the
/// services other than DynamoDB are features of this crate besides, so a function's
/// `Cargo.toml` states which it uses. Ports that are not wired answer `Unavailable`
/// ([`Unwired`]).
pub struct AwsWiring {
    settings: Settings,
    // The configuration the other services' clients are built from (none in a binary that
    // wires DynamoDB only).
    #[cfg_attr(
        not(any(
            feature = "s3",
            feature = "sqs",
            feature = "secrets",
            feature = "cloudwatch"
        )),
        allow(dead_code)
    )]
    sdk: aws_config::SdkConfig,
    ports: Ports,
}

impl AwsWiring {
    /// The item store on DynamoDB (every function needs it); tables are created first when
    /// `Store__CreateResources` is set.
    pub async fn connect(settings: Settings, clock: Arc<dyn Clock>) -> anyhow::Result<Self> {
        Self::connect_with(settings, clock, paddock_aws::sdk_config().await).await
    }

    /// As [`AwsWiring::connect`], with the SDK configuration given.
    pub async fn connect_with(
        settings: Settings,
        clock: Arc<dyn Clock>,
        sdk: aws_config::SdkConfig,
    ) -> anyhow::Result<Self> {
        let limits = paddock_aws::call_limits::DYNAMODB;
        let dynamo = aws_sdk_dynamodb::Client::from_conf(
            aws_sdk_dynamodb::config::Builder::from(&sdk)
                .retry_config(limits.retry_config())
                .timeout_config(limits.timeout_config())
                .build(),
        );
        if settings.create_resources {
            paddock_aws::provision::create_tables(&dynamo, &settings.table_prefix).await?;
        }
        let items = Arc::new(paddock_aws::DynamoItemStore::new(
            dynamo,
            settings.table_prefix.clone(),
            clock.clone(),
        ));
        Ok(Self {
            settings,
            sdk,
            ports: Ports {
                items,
                blobs: Arc::new(Unwired),
                queues: Queues::new(|_| Arc::new(Unwired)),
                secrets: Arc::new(Unwired),
                clock,
            },
        })
    }

    /// Adds the blob store on S3 (`Blobs__Bucket`).
    ///
    /// The client is built at the first blob call ([`paddock_aws::OnFirstUse`]), unless the bucket is
    /// created now.
    pub async fn blobs(self) -> anyhow::Result<Self> {
        #[cfg(feature = "s3")]
        return self.with_s3().await;
        #[cfg(not(feature = "s3"))]
        anyhow::bail!(unlinked("s3", "the blob store"))
    }

    #[cfg(feature = "s3")]
    async fn with_s3(mut self) -> anyhow::Result<Self> {
        let client = if self.settings.create_resources {
            let s3 = s3_client(&self.sdk);
            let bucket = self
                .settings
                .bucket
                .get_or_insert_with(|| "paddock-blobs".into());
            paddock_aws::provision::create_bucket(&s3, bucket).await?;
            paddock_aws::OnFirstUse::built(s3)
        } else {
            let sdk = self.sdk.clone();
            paddock_aws::OnFirstUse::new(move || s3_client(&sdk))
        };
        let bucket = self
            .settings
            .bucket
            .clone()
            .context("Blobs__Bucket is required when Store__Backend=aws")?;
        self.ports.blobs = Arc::new(paddock_aws::S3BlobStore::on_first_use(client, bucket));
        Ok(self)
    }

    /// Adds the SQS queues `names` (`Queue__<name>__Url`, `Queue__<name>__DeadLetterUrl`);
    /// with `Store__CreateResources`, missing ones are created as `paddock-<name>` with a
    /// `-dlq` beside them.
    pub async fn queues(self, names: &[QueueName]) -> anyhow::Result<Self> {
        #[cfg(feature = "sqs")]
        return self.with_sqs(names).await;
        #[cfg(not(feature = "sqs"))]
        anyhow::bail!(unlinked("sqs", &format!("the queues {names:?}")))
    }

    #[cfg(feature = "sqs")]
    async fn with_sqs(mut self, names: &[QueueName]) -> anyhow::Result<Self> {
        let sdk = self.sdk.clone();
        let sqs = Arc::new(paddock_aws::OnFirstUse::new(move || sqs_client(&sdk)));
        for &name in names {
            let urls = self.settings.queue_urls.entry(name).or_default();
            if self.settings.create_resources && urls.url.is_none() {
                let (queue, dlq) =
                    paddock_aws::provision::create_queues(sqs.get(), &format!("paddock-{name}"))
                        .await?;
                urls.url = Some(queue);
                urls.dead_letter_url.get_or_insert(dlq);
            }
            let url = urls.url.clone().with_context(|| {
                format!(
                    "Queue__{}__Url is required when Store__Backend=aws",
                    name.config_section()
                )
            })?;
            let queue = paddock_aws::SqsQueue::on_first_use(
                sqs.clone(),
                url,
                urls.dead_letter_url.clone(),
                self.settings.visibility,
            );
            self.ports.queues.set(name, Arc::new(queue));
        }
        Ok(self)
    }

    /// Adds the secret source: Secrets Manager when `Secrets__Id` names a secret (its client
    /// built at the first read, [`paddock_aws::OnFirstUse`]), else
    /// secrets generated and kept in the data directory (emulator runs).
    pub fn secrets(mut self) -> anyhow::Result<Self> {
        self.ports.secrets = match &self.settings.secret_id {
            #[cfg(not(feature = "secrets"))]
            Some(_) => anyhow::bail!(unlinked("secrets", "Secrets Manager")),
            #[cfg(feature = "secrets")]
            Some(id) => {
                let sdk = self.sdk.clone();
                let client = paddock_aws::OnFirstUse::new(move || {
                    let limits = paddock_aws::call_limits::SECRETS;
                    aws_sdk_secretsmanager::Client::from_conf(
                        aws_sdk_secretsmanager::config::Builder::from(&sdk)
                            .retry_config(limits.retry_config())
                            .timeout_config(limits.timeout_config())
                            .build(),
                    )
                });
                Arc::new(
                    paddock_aws::SecretsManagerSecrets::on_first_use(client, id)
                        .with_refresh(self.settings.secrets_refresh),
                )
            }
            None => Arc::new(paddock_embedded::LocalSecrets::new(
                self.settings.data_dir.clone(),
                GENERATED_SECRETS,
            )),
        };
        Ok(self)
    }

    /// The metrics source on CloudWatch, over the namespace of the functions' metric lines
    /// (`Metrics__Namespace`); its client is built at the first read.
    pub fn metrics_source(&self) -> anyhow::Result<Arc<dyn MetricsSource>> {
        #[cfg(feature = "cloudwatch")]
        return Ok(Arc::new(paddock_aws::CloudWatchMetrics::new(
            &self.sdk,
            self.settings.metrics_namespace.clone(),
        )));
        #[cfg(not(feature = "cloudwatch"))]
        anyhow::bail!(unlinked("cloudwatch", "the metrics source"))
    }

    /// The settings (with names filled in by provisioning).
    pub fn settings(&self) -> &Settings {
        &self.settings
    }

    /// The settings (with names filled in by provisioning) and the wired ports.
    pub fn finish(self) -> (Settings, Ports) {
        (self.settings, self.ports)
    }
}

/// Why a service cannot be wired: this binary was built without its feature.
#[cfg(not(all(
    feature = "s3",
    feature = "sqs",
    feature = "secrets",
    feature = "cloudwatch"
)))]
fn unlinked(feature: &str, what: &str) -> String {
    format!(
        "{what} cannot be wired: this binary is built without the `{feature}` feature of \
         paddock-runtime"
    )
}

/// An SQS client, built at the first call of a queue ([`paddock_aws::OnFirstUse`]): a
/// consumer's invocation calls SQS only to put a record back or aside, and the relay's only
/// when it has events to send.
#[cfg(feature = "sqs")]
fn sqs_client(sdk: &aws_config::SdkConfig) -> aws_sdk_sqs::Client {
    let limits = paddock_aws::call_limits::SQS;
    aws_sdk_sqs::Client::from_conf(
        aws_sdk_sqs::config::Builder::from(sdk)
            .retry_config(limits.retry_config())
            .timeout_config(limits.timeout_config())
            .build(),
    )
}

/// An S3 client; path-style addressing when an endpoint override points at an emulator.
#[cfg(feature = "s3")]
pub fn s3_client(sdk: &aws_config::SdkConfig) -> aws_sdk_s3::Client {
    let path_style = std::env::var_os("AWS_ENDPOINT_URL_S3").is_some()
        || std::env::var_os("AWS_ENDPOINT_URL").is_some();
    let limits = paddock_aws::call_limits::S3;
    let config = aws_sdk_s3::config::Builder::from(sdk)
        .force_path_style(path_style)
        .retry_config(limits.retry_config())
        .timeout_config(limits.timeout_config())
        .build();
    aws_sdk_s3::Client::from_conf(config)
}

/// The processor of `queue`'s consumer: the webhooks consumer with its HTTP client under the
/// configured address rules ([`webhook_deliveries`]), every other one as
/// `workers::processor` makes it.
pub fn processor(
    queue: QueueName,
    settings: &paddock_core::config::Settings,
) -> paddock_core::workers::Processor {
    match queue {
        QueueName::Webhooks => webhook_deliveries(settings),
        _ => paddock_core::workers::processor(queue),
    }
}

/// The webhooks consumer, delivering over HTTPS under the configured address rules.
pub fn webhook_deliveries(
    settings: &paddock_core::config::Settings,
) -> paddock_core::workers::Processor {
    let policy = paddock_core::webhooks::address_policy(settings);
    paddock_core::workers::webhook_processor(std::sync::Arc::new(
        paddock_clients::webhooks::HttpsWebhookClient::new(policy),
    ))
}
