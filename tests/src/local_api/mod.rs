//! The function set at the real API paths: one address serving every route of the template's
//! HTTP API through its function, with the template's event sources running (see
//! [`sources`]) and the functions' metric lines delivered to CloudWatch (see
//! [`metric_lines`]), each function under its own IAM policy (see [`iam`]). Used by `paddock-api-local` (the one-command local API) and by the black-box
//! tests' function mode ([`crate::spawn_functions`]).

pub mod functions;
pub mod gateway;
pub mod iam;
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
    /// Each function's IAM policy; `None` gives every function every right.
    pub iam: Option<Iam>,
}

/// The functions' policies and what to do with a call outside them.
#[derive(Clone)]
pub struct Iam {
    /// What `tests/template/function_policies.py` made of the template.
    pub policies: iam::policy::PolicyFile,
    /// Whether a call outside its function's policy is refused (otherwise only reported).
    pub enforce: bool,
    /// Where the calls and their grants are kept.
    pub seen: iam::Seen,
}

impl std::fmt::Debug for Iam {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("Iam")
            .field("functions", &self.policies.functions.keys())
            .field("enforce", &self.enforce)
            .finish_non_exhaustive()
    }
}

impl Iam {
    /// The policies in the file `PADDOCK_FUNCTION_POLICIES` names (the test command and
    /// `infra/api-local.sh` write it), enforced unless `PADDOCK_IAM_ENFORCE=0`; the calls are
    /// appended to the file `PADDOCK_IAM_SEEN` names, if any.
    pub fn from_env() -> anyhow::Result<Self> {
        let path = std::env::var_os("PADDOCK_FUNCTION_POLICIES").ok_or_else(|| {
            anyhow!(
                "PADDOCK_FUNCTION_POLICIES is not set: it names the functions' policies, \
                 written by tests/template/function_policies.py --out FILE (the test command \
                 and infra/api-local.sh do this)"
            )
        })?;
        Ok(Self {
            policies: iam::policy::PolicyFile::read(std::path::Path::new(&path))?,
            enforce: std::env::var("PADDOCK_IAM_ENFORCE").map_or(true, |v| v != "0"),
            seen: iam::Seen::new(std::env::var_os("PADDOCK_IAM_SEEN").map(PathBuf::from)),
        })
    }
}

/// Each AWS service a function calls: its signing name and the variable naming its endpoint.
const SERVICES: &[(&str, &str)] = &[
    ("dynamodb", "AWS_ENDPOINT_URL_DYNAMODB"),
    ("s3", "AWS_ENDPOINT_URL_S3"),
    ("sqs", "AWS_ENDPOINT_URL_SQS"),
    ("secretsmanager", "AWS_ENDPOINT_URL_SECRETS_MANAGER"),
    ("monitoring", "AWS_ENDPOINT_URL_CLOUDWATCH"),
];

/// The value of `key` in `env`, the last one set winning (as for a process's environment).
fn env_value<'a>(env: &'a [(String, String)], key: &str) -> Option<&'a str> {
    env.iter()
        .rev()
        .find(|(k, _)| k == key)
        .map(|(_, v)| v.as_str())
}

/// Starts `binary`'s proxy under its policy; answers the variables that send its AWS calls
/// there.
async fn policy_proxy(
    iam: &Iam,
    names: &iam::policy::Names,
    binary: &str,
    env: &[(String, String)],
) -> anyhow::Result<Vec<(String, String)>> {
    let entry = iam.policies.functions.get(binary).ok_or_else(|| {
        anyhow!(
            "the functions' policies have none for {binary}: write them again from the template"
        )
    })?;
    let policy = iam::policy::FunctionPolicy::bind(entry, names)?;
    let upstreams = SERVICES
        .iter()
        .filter_map(|(service, key)| {
            let url = env_value(env, key).or_else(|| env_value(env, "AWS_ENDPOINT_URL"))?;
            Some(((*service).to_owned(), url.to_owned()))
        })
        .collect();
    let address = iam::proxy::FunctionProxy {
        binary: binary.to_owned(),
        policy,
        names: names.clone(),
        account: iam.policies.account.clone(),
        upstreams,
        enforce: iam.enforce,
        seen: iam.seen.clone(),
    }
    .start()
    .await?;
    Ok(SERVICES
        .iter()
        .map(|(_, key)| ((*key).to_owned(), format!("http://{address}")))
        .collect())
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
        let names = match &config.iam {
            Some(iam) => {
                let local = iam::policy::LocalNames {
                    table_prefix: config.table_prefix.clone(),
                    bucket: env_value(&config.env, "Blobs__Bucket")
                        .unwrap_or_default()
                        .to_owned(),
                    secret_id: env_value(&config.env, "Secrets__Id")
                        .unwrap_or_default()
                        .to_owned(),
                    queues: config.queues.clone(),
                };
                Some(iam::policy::Names::bind(&iam.policies, &local)?)
            }
            None => None,
        };
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
            if let (Some(iam), Some(names)) = (&config.iam, &names) {
                let endpoints = policy_proxy(iam, names, &spec.binary, &env).await?;
                env.extend(endpoints);
            }
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
