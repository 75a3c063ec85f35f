//! The `lambda` scenario: cold start and size of every function binary next to a hello-world
//! function built with the same profile in the same run.
//!
//! Each binary is started as Lambda starts it, against the runtime API on loopback
//! (`paddock_tests::lambda_runtime_api`), several times; per start it measures init (from exec
//! to the first `next` request) and the first invocation (from handing out the first event to
//! receiving its response), and prints the medians with their ratio to the hello-world
//! function, and the size of the binary zipped as `bootstrap` (deflate), as it is deployed.
//! A second baseline, the hello-world function with the AWS SDK's configuration and a
//! DynamoDB client built as Paddock builds them, is the floor of any function that uses the
//! item store: the last column is init's ratio to it, the cost of Paddock's own code.
//!
//! The functions get settings that need no AWS service to start, and first events they answer
//! without calling one (a route of no group for the HTTP functions, an empty batch for the
//! consumers, the relay and retention), so the figures are the process's own.

use anyhow::Context;
use paddock_api::routes::Group;
use paddock_tests::binaries;
use paddock_tests::lambda_events::HttpRequest;
use paddock_tests::lambda_runtime_api::{FunctionProcess, RuntimeApi};
use std::io::Write;
use std::path::Path;
use std::time::Duration;

/// The baseline function's package and binary.
const HELLO: &str = "lambda-hello";

/// The second baseline's binary (in the same package): hello-world with the SDK and a
/// DynamoDB client.
const FLOOR: &str = "lambda-hello-dynamodb";

/// How a function's first event looks.
#[derive(Clone, Copy)]
enum FirstEvent {
    /// An API Gateway request of a route no group has.
    Http,
    /// An empty SQS or DynamoDB stream batch.
    EmptyBatch,
}

/// The first event of `function`: a function named after an endpoint group gets a request,
/// every other (the consumers, the relay, retention) an empty batch.
fn first_event(function: &str) -> anyhow::Result<FirstEvent> {
    Ok(if Group::named(function).is_some() {
        FirstEvent::Http
    } else {
        FirstEvent::EmptyBatch
    })
}

/// One start's figures.
struct Start {
    init: Duration,
    first: Option<Duration>,
}

/// Settings a function starts with and no AWS service behind them: every endpoint is a
/// closed loopback port, so a call would fail at once rather than reach anything.
fn settings() -> Vec<(String, String)> {
    let closed = "http://127.0.0.1:9";
    let mut env: Vec<(String, String)> = [
        ("Store__Backend", "aws"),
        ("Blobs__Bucket", "paddock-bench"),
        ("Secrets__Id", "paddock-bench"),
        ("AWS_ACCESS_KEY_ID", "bench"),
        ("AWS_SECRET_ACCESS_KEY", "bench"),
        ("AWS_SESSION_TOKEN", "bench"),
        ("AWS_ENDPOINT_URL_DYNAMODB", closed),
        ("AWS_ENDPOINT_URL_S3", closed),
        ("AWS_ENDPOINT_URL_SQS", closed),
        ("AWS_ENDPOINT_URL_SECRETS_MANAGER", closed),
        ("AWS_ENDPOINT_URL_CLOUDWATCH", closed),
        ("Log__Format", "json"),
        ("RUST_LOG", "warn"),
    ]
    .into_iter()
    .map(|(k, v)| (k.to_owned(), v.to_owned()))
    .collect();
    for queue in paddock_core::queues::QueueName::ALL {
        let section = queue.config_section();
        env.push((
            format!("Queue__{section}__Url"),
            format!("{closed}/123456789012/{queue}"),
        ));
        env.push((
            format!("Queue__{section}__DeadLetterUrl"),
            format!("{closed}/123456789012/{queue}-dlq"),
        ));
    }
    env
}

/// Starts `binary` once; answers its init and first-invocation times.
async fn start_once(binary: &Path, function: &str, event: FirstEvent) -> anyhow::Result<Start> {
    let api = RuntimeApi::start(function).await?;
    let process = FunctionProcess::spawn(binary, function, &api, &settings())?;
    let asked = api
        .first_next(Duration::from_secs(30))
        .await
        .with_context(|| format!("{function}: {}", process.output()))?;
    let init = asked.duration_since(process.started);
    let payload = match event {
        FirstEvent::Http => HttpRequest::new("GET", "/v1/bench-probe")
            .header("accept", "application/json")
            .api_gateway_event(),
        FirstEvent::EmptyBatch => serde_json::json!({"Records": []}),
    };
    let answer = api.invoke(&payload, Duration::from_secs(30)).await?;
    answer
        .json()
        .with_context(|| format!("{function}: {}", process.output()))?;
    Ok(Start {
        init,
        first: Some(answer.latency()),
    })
}

fn median(mut values: Vec<Duration>) -> Option<Duration> {
    values.sort();
    values.get(values.len() / 2).copied()
}

/// The size of `binary` zipped as `bootstrap` with deflate, as a Lambda deployment package.
fn zipped_size(binary: &Path) -> anyhow::Result<u64> {
    let bytes = std::fs::read(binary).with_context(|| format!("reading {}", binary.display()))?;
    let mut zip = zip::ZipWriter::new(std::io::Cursor::new(Vec::new()));
    let options = zip::write::SimpleFileOptions::default()
        .compression_method(zip::CompressionMethod::Deflated)
        .unix_permissions(0o755);
    zip.start_file("bootstrap", options)?;
    zip.write_all(&bytes)?;
    Ok(zip.finish()?.into_inner().len() as u64)
}

fn millis(d: Duration) -> f64 {
    d.as_secs_f64() * 1e3
}

/// Measures the functions of `functions/` named in `only` (every one but the local server
/// when it is empty) built with cargo profile `profile`, `starts` starts each.
pub(crate) async fn cold_starts(
    profile: &str,
    only: &[String],
    starts: usize,
) -> anyhow::Result<()> {
    let mut functions: Vec<String> =
        std::fs::read_dir(binaries::workspace_root().join("functions"))?
            .map(|entry| Ok(entry?.file_name().to_string_lossy().into_owned()))
            .collect::<anyhow::Result<Vec<_>>>()?;
    functions.retain(|f| f != "local" && (only.is_empty() || only.contains(f)));
    if let Some(unknown) = only.iter().find(|f| !functions.contains(f)) {
        anyhow::bail!("--lambda-functions: no function {unknown} in functions/");
    }
    functions.sort();
    let packages: Vec<String> = functions
        .iter()
        .map(|f| format!("paddock-{f}"))
        .chain([HELLO.to_owned()])
        .collect();
    let package_names: Vec<&str> = packages.iter().map(String::as_str).collect();
    println!(
        "lambda: building {} binaries with profile {profile}",
        packages.len()
    );
    let built = binaries::build(profile, &package_names)?;

    let mut subjects = Vec::new();
    let baselines = [HELLO, FLOOR].map(|b| (b.to_owned(), b.to_owned()));
    for (name, binary_name) in baselines.into_iter().chain(
        functions
            .iter()
            .map(|f| (f.clone(), format!("paddock-{f}"))),
    ) {
        let binary = built
            .get(&binary_name)
            .with_context(|| format!("{binary_name} was not built"))?
            .clone();
        let event = if name == HELLO || name == FLOOR {
            FirstEvent::Http
        } else {
            first_event(&name)?
        };
        // One start to warm the page cache before any measured one.
        start_once(&binary, &name, event).await?;
        subjects.push((name, binary, event));
    }
    // Round by round, each function started once per round (the baseline among them), so a
    // machine that slows down or speeds up during the run moves every function's figures
    // alike instead of those measured last.
    let mut measured: Vec<Vec<Start>> = subjects.iter().map(|_| Vec::new()).collect();
    for _ in 0..starts.max(1) {
        for ((name, binary, event), starts) in subjects.iter().zip(&mut measured) {
            starts.push(start_once(binary, name, *event).await?);
        }
    }
    let mut rows = Vec::new();
    for ((name, binary, _), starts) in subjects.iter().zip(&measured) {
        let init = median(starts.iter().map(|s| s.init).collect()).expect("a start");
        let first = median(starts.iter().filter_map(|s| s.first).collect());
        rows.push((name.clone(), init, first, zipped_size(binary)?));
    }

    let (_, hello_init, hello_first, hello_size) = rows[0].clone();
    let floor_init = rows[1].1;
    let hello_first = hello_first.expect("the baseline answers");
    println!(
        "{:<34} {:>10} {:>7} {:>12} {:>7} {:>10} {:>7} {:>11}",
        "function (median of starts)",
        "init ms",
        "ratio",
        "1st resp ms",
        "ratio",
        "zip KiB",
        "ratio",
        "init/floor"
    );
    for (name, init, first, size) in &rows {
        let label = if name == HELLO || name == FLOOR {
            format!("baseline: {name}")
        } else {
            format!("paddock:  {name}")
        };
        let (first_ms, first_ratio) = first.map_or_else(
            || ("—".to_owned(), "—".to_owned()),
            |f| {
                (
                    format!("{:.2}", millis(f)),
                    format!("{:.2}x", f.as_secs_f64() / hello_first.as_secs_f64()),
                )
            },
        );
        println!(
            "{label:<34} {:>10.2} {:>6.2}x {first_ms:>12} {first_ratio:>7} {:>10.0} {:>6.2}x {:>10.2}x",
            millis(*init),
            init.as_secs_f64() / hello_init.as_secs_f64(),
            *size as f64 / 1024.0,
            *size as f64 / hello_size as f64,
            init.as_secs_f64() / floor_init.as_secs_f64(),
        );
    }
    Ok(())
}
