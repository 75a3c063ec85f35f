//! `paddock-api-local`: the function set at the real API paths on one local address.
//!
//! Every route of `template.yaml`'s HTTP API goes to its function's binary (run as Lambda runs
//! it) as an API Gateway HTTP API event; the outbox stream, the queues and the schedules
//! deliver their events as the template's event source mappings do, and the functions' metric
//! lines go to CloudWatch as CloudWatch Logs delivers them. It runs against the AWS
//! adapters' endpoints of its environment (the emulators: `infra/api-local.sh` starts them and
//! this), creating the tables, bucket, queues and the secret when missing.
//!
//! Settings, besides the service's own (`Store__TablePrefix`, `Blobs__Bucket`, `Secrets__Id`,
//! `Auth__...` and the rest go to every function):
//! - `PADDOCK_API_ADDRESS` (`127.0.0.1:9000`): where it listens;
//! - `PADDOCK_API_SCHEDULE_SECONDS`: every schedule at this interval instead of its rate;
//! - `PADDOCK_API_VISIBILITY_SECONDS`: queue visibility instead of the template's 180 s;
//! - `PADDOCK_API_PROFILE` (`dev`): the cargo profile the functions are built with;
//! - `PADDOCK_FUNCTION_POLICIES`: the functions' IAM policies (`infra/api-local.sh` writes
//!   them from the template), each function's calls refused outside its own;
//!   `PADDOCK_IAM_ENFORCE=0` only logs such calls.

use anyhow::Context;
use paddock_core::config::{Backend, Settings};
use paddock_core::ports::SystemClock;
use paddock_tests::binaries;
use paddock_tests::local_api::{Config, LocalApi, template::Template};
use std::collections::HashMap;
use std::sync::Arc;
use std::time::{Duration, Instant};

fn seconds(key: &str) -> anyhow::Result<Option<Duration>> {
    match std::env::var(key) {
        Ok(v) => {
            let n: u64 = v
                .parse()
                .with_context(|| format!("{key} must be a whole number of seconds, not {v:?}"))?;
            Ok(Some(Duration::from_secs(n.max(1))))
        }
        Err(_) => Ok(None),
    }
}

#[tokio::main]
async fn main() -> anyhow::Result<()> {
    let started = Instant::now();
    paddock_tests::tls_provider();
    tracing_subscriber::fmt()
        .with_env_filter(
            tracing_subscriber::EnvFilter::try_from_env("PADDOCK_API_LOG")
                .unwrap_or_else(|_| "info".into()),
        )
        .with_writer(std::io::stderr)
        .init();
    let address = std::env::var("PADDOCK_API_ADDRESS").unwrap_or_else(|_| "127.0.0.1:9000".into());
    let schedule_every = seconds("PADDOCK_API_SCHEDULE_SECONDS")?;
    let visibility = seconds("PADDOCK_API_VISIBILITY_SECONDS")?;
    let profile = std::env::var("PADDOCK_API_PROFILE").unwrap_or_else(|_| "dev".into());
    let template_path = binaries::workspace_root().join("template.yaml");
    let template = Template::read(&template_path)?;

    let packages: Vec<&str> = template
        .functions
        .iter()
        .map(|f| f.binary.as_str())
        .collect();
    eprintln!("== building {}", packages.join(" "));
    let built = binaries::build(&profile, &packages)?;

    // The tables, bucket and queues, created when missing, as the stack has them.
    let mut settings = Settings::from_env().map_err(|e| anyhow::anyhow!("{e}"))?;
    settings.backend = Backend::Aws;
    settings.create_resources = true;
    paddock_runtime::wiring::aws_ports(&mut settings, Arc::new(SystemClock))
        .await
        .context("creating the tables, bucket and queues (are the emulators up?)")?;
    let sdk = paddock_aws::sdk_config().await;
    let secret_id = settings
        .secret_id
        .clone()
        .unwrap_or_else(|| "paddock-app".into());
    let secrets = aws_sdk_secretsmanager::Client::new(&sdk);
    if secrets
        .describe_secret()
        .secret_id(&secret_id)
        .send()
        .await
        .is_err()
    {
        use base64::Engine;
        let bytes = [
            *uuid::Uuid::new_v4().as_bytes(),
            *uuid::Uuid::new_v4().as_bytes(),
        ];
        let key = base64::engine::general_purpose::URL_SAFE_NO_PAD.encode(bytes.concat());
        // Unlike the stack's, this secret gets a metrics token, so `/metrics` answers here.
        let metrics_token = uuid::Uuid::new_v4().simple().to_string();
        paddock_aws::provision::put_secret(
            &secrets,
            &secret_id,
            &serde_json::json!({
                "jwtSigningKey": key,
                "anthropicApiKey": "",
                "openaiApiKey": "",
                "metricsToken": metrics_token,
            }),
        )
        .await?;
        eprintln!(
            "== created the secret {secret_id}; GET /metrics takes \
             `authorization: Bearer {metrics_token}`"
        );
    }

    let listener = tokio::net::TcpListener::bind(&address)
        .await
        .with_context(|| format!("listening on {address}"))?;
    let base_url = format!("http://{}", listener.local_addr()?);
    // What every function gets: the service's settings of this environment (`Section__Key`),
    // the AWS endpoints and credentials, and the resources made above.
    let mut env: Vec<(String, String)> = std::env::vars()
        .filter(|(k, _)| k.contains("__") || k.starts_with("AWS_") || k == "RUST_LOG")
        .collect();
    let mut set = |key: &str, value: String| {
        env.retain(|(k, _)| k != key);
        env.push((key.to_owned(), value));
    };
    set("Store__Backend", "aws".into());
    set("Store__CreateResources", "false".into());
    set("Store__TablePrefix", settings.table_prefix.clone());
    set("Blobs__Bucket", settings.bucket.clone().unwrap_or_default());
    set("Secrets__Id", secret_id);
    if std::env::var("Auth__PublicUrl").is_err() {
        set("Auth__PublicUrl", base_url.clone());
    }
    let mut queues = HashMap::new();
    for (name, urls) in &settings.queue_urls {
        let section = name.config_section();
        let url = urls.url.clone().unwrap_or_default();
        let dlq = urls.dead_letter_url.clone().unwrap_or_default();
        set(&format!("Queue__{section}__Url"), url.clone());
        set(&format!("Queue__{section}__DeadLetterUrl"), dlq.clone());
        queues.insert(section.to_owned(), (url, dlq));
    }
    let config = Config {
        template: template_path,
        binaries: built,
        env,
        table_prefix: settings.table_prefix.clone(),
        queues,
        poll: Duration::from_millis(250),
        schedule_every,
        visibility,
        echo_logs: true,
        iam: Some(paddock_tests::local_api::Iam::from_env()?),
    };
    let api = LocalApi::start(config, listener, &sdk).await?;
    eprintln!(
        "== {} routes of template.yaml on {base_url} (ready after {:.1} s); Ctrl-C stops",
        api.routes.len(),
        started.elapsed().as_secs_f64()
    );
    println!("{base_url}");
    tokio::signal::ctrl_c().await?;
    api.stop();
    Ok(())
}
