//! The function set at the real API paths: one address serving every route of the template's
//! HTTP API through its function, with the template's event sources running (see
//! [`sources`]) and the functions' metric lines delivered to CloudWatch (see
//! [`metric_lines`]). Used by `paddock-api-local` (the one-command local API) and by the black-box
//! tests' function mode ([`crate::spawn_functions`]).

pub mod functions;
pub mod gateway;
pub mod metric_lines;
pub mod routes;
pub mod sources;
pub mod template;

use anyhow::{Context, anyhow};
use functions::{FunctionConfig, Functions};
use gateway::Gateway;
use routes::RouteTable;
use std::collections::HashMap;
use std::net::SocketAddr;
use std::path::PathBuf;
use std::sync::Arc;
use std::time::Duration;
use template::Template;

/// What the local API runs.
#[derive(Debug, Clone)]
pub struct Config {
    /// The template the routes and event sources are read from.
    pub template: PathBuf,
    /// Each function's executable, by binary name.
    pub binaries: HashMap<String, PathBuf>,
    /// Variables every function gets besides Lambda's own.
    pub env: Vec<(String, String)>,
    /// The physical table name prefix (`Store__TablePrefix`).
    pub table_prefix: String,
    /// Each queue's URL and its dead-letter queue's URL, by settings section (`Feed`).
    pub queues: HashMap<String, (String, String)>,
    /// How often stream tables are read.
    pub poll: Duration,
    /// Every schedule at this interval instead of its rate.
    pub schedule_every: Option<Duration>,
    /// Queue visibility instead of the template's (a failed message comes back sooner).
    pub visibility: Option<Duration>,
    /// Whether function logs go to standard error.
    pub echo_logs: bool,
}

/// The local API, serving until its tasks are stopped.
pub struct LocalApi {
    /// Where it answers.
    pub address: SocketAddr,
    /// The HTTP API's routes and their functions.
    pub routes: Vec<(String, String)>,
    tasks: Vec<tokio::task::JoinHandle<()>>,
}

impl LocalApi {
    /// Reads the template and starts serving on `listener` with the event sources running
    /// (functions start at their first invocation).
    pub async fn start(
        config: Config,
        listener: tokio::net::TcpListener,
        sdk: &aws_config::SdkConfig,
    ) -> anyhow::Result<Self> {
        let template = Template::read(&config.template)?;
        let (metric_tap, delivery) = metric_lines::deliver(aws_sdk_cloudwatch::Client::new(sdk));
        let mut configs = Vec::new();
        let mut table = RouteTable::default();
        for spec in &template.functions {
            let binary = config
                .binaries
                .get(&spec.binary)
                .with_context(|| format!("no binary {} was built", spec.binary))?;
            let mut env = config.env.clone();
            env.push((
                "AWS_LAMBDA_FUNCTION_MEMORY_SIZE".into(),
                spec.memory_mb.to_string(),
            ));
            configs.push(FunctionConfig {
                name: spec.binary.clone(),
                binary: binary.clone(),
                env,
                timeout: spec.timeout,
                echo_logs: config.echo_logs,
                tap: Some(metric_tap.clone()),
            });
            for (method, path) in &spec.routes {
                table.add(method, path, &spec.binary)?;
            }
        }
        let functions = Functions::new(configs);
        let function = |name: &str| functions.get(name).expect("every function is configured");
        let mut tasks = vec![delivery];
        let dynamodb = aws_sdk_dynamodb::Client::new(sdk);
        let sqs = aws_sdk_sqs::Client::new(sdk);
        for spec in &template.functions {
            for stream in &spec.streams {
                if stream.filtered {
                    // The only filtered stream is the share packs' TTL removals, and
                    // DynamoDB Local does not expire items: nothing would reach it.
                    tracing::info!(
                        function = spec.binary,
                        table = stream.table,
                        "a filtered stream (TTL removals) is not run locally"
                    );
                    continue;
                }
                let poller = sources::TableStream {
                    table: format!("{}{}", config.table_prefix, stream.table),
                    function: function(&spec.binary),
                    batch_size: stream.batch_size,
                    max_retries: stream.max_retries,
                    poll: config.poll,
                };
                tasks.push(tokio::spawn(poller.run(dynamodb.clone())));
            }
            if let Some(queue) = &spec.queue {
                let (url, dlq) = config
                    .queues
                    .get(&queue.section)
                    .cloned()
                    .ok_or_else(|| anyhow!("no URL for the queue {}", queue.section))?;
                if !sources::queue_exists(&sqs, &url).await {
                    return Err(anyhow!(
                        "the queue {url} of {} does not answer",
                        spec.binary
                    ));
                }
                let poller = sources::QueuePoller {
                    url,
                    dead_letter_url: dlq,
                    function: function(&spec.binary),
                    batch_size: queue.batch_size,
                    batching_window: queue.batching_window,
                    visibility: config.visibility.unwrap_or(queue.visibility),
                    max_receive_count: queue.max_receive_count,
                };
                tasks.push(tokio::spawn(poller.run(sqs.clone())));
            }
            for (n, rate) in spec.schedules.iter().enumerate() {
                tasks.push(tokio::spawn(sources::run_schedule(
                    function(&spec.binary),
                    format!("{}-schedule-{n}", spec.logical_id),
                    config.schedule_every.unwrap_or(*rate),
                )));
            }
        }
        let routes = table.routes();
        let gateway = Arc::new(Gateway {
            routes: table,
            functions,
        });
        let address = listener.local_addr()?;
        let app = axum::Router::new()
            .fallback(gateway::handle)
            .with_state(gateway);
        tasks.push(tokio::spawn(async move {
            let _ = axum::serve(
                listener,
                app.into_make_service_with_connect_info::<SocketAddr>(),
            )
            .await;
        }));
        Ok(Self {
            address,
            routes,
            tasks,
        })
    }

    /// Stops serving and the event sources; the function processes end with them.
    pub fn stop(self) {
        for task in self.tasks {
            task.abort();
        }
    }
}
