//! Lambda entry points: each function binary runs [`run`] around [`start`] and one of the
//! `serve_*` functions.

use aws_lambda_events::dynamodb::Event as DynamoEvent;
use aws_lambda_events::eventbridge::EventBridgeEvent;
use aws_lambda_events::sqs::{BatchItemFailure, SqsBatchResponse, SqsEvent};
use aws_lambda_events::streams::{DynamoDbBatchItemFailure, DynamoDbEventResponse};
use lambda_runtime::{LambdaEvent, service_fn};
use serde::Deserialize;

use std::future::Future;
use std::process::ExitCode;
use std::sync::Arc;
use std::sync::atomic::{AtomicBool, Ordering};
use std::time::Duration;

use crate::telemetry;
pub use crate::wiring::AwsWiring;
use axum::Router;
use futures::stream::StreamExt;
use paddock_api::routes::{Group, group_router};
use paddock_api::state::AppState;
use paddock_core::config::{LogFormat, Settings};
use paddock_core::events::ProcessError;
use paddock_core::metrics_cloudwatch::{self, Invocation};
use paddock_core::outbox;
use paddock_core::ports::items::Item;
use paddock_core::ports::queue::ReceivedMessage;
use paddock_core::ports::{Ports, SystemClock};
use paddock_core::queues::QueueName;
use paddock_core::trace_context::EventHeader;
use paddock_core::workers::{self, Processor};
use tracing::Instrument;

/// The error type Lambda entry points return.
pub type Error = lambda_runtime::Error;

/// Set once the function hands over to the runtime loop; an error before that is an init
/// error.
static SERVING: AtomicBool = AtomicBool::new(false);

/// Runs a function binary: `function` starts it ([`start`], the services it uses) and then
/// serves its events. The runtime library reports only failures of invocations, so an error
/// before the function first asks for an event (a missing or bad setting, an unreachable
/// service) is posted here to the runtime API's `/runtime/init/error`, where Lambda records
/// it as the function's init failure, before the process exits with status 1.
pub fn run(function: impl Future<Output = Result<(), Error>>) -> ExitCode {
    let runtime = match tokio::runtime::Builder::new_multi_thread()
        .enable_all()
        .build()
    {
        Ok(runtime) => runtime,
        Err(e) => {
            eprintln!("paddock: could not start the async runtime: {e}");
            return ExitCode::FAILURE;
        }
    };
    let outcome = runtime.block_on(async {
        let outcome = function.await;
        if let Err(e) = &outcome
            && !SERVING.load(Ordering::SeqCst)
        {
            report_init_error(&error_chain(e.as_ref())).await;
        }
        outcome
    });
    match outcome {
        Ok(()) => ExitCode::SUCCESS,
        Err(e) => {
            eprintln!("paddock: {}", error_chain(e.as_ref()));
            ExitCode::FAILURE
        }
    }
}

/// An error with its sources, outermost first (`context: cause: root cause`).
fn error_chain(error: &(dyn std::error::Error + 'static)) -> String {
    let mut text = error.to_string();
    let mut source = error.source();
    while let Some(cause) = source {
        text.push_str(": ");
        text.push_str(&cause.to_string());
        source = cause.source();
    }
    text
}

/// Posts an init error to the runtime API (`AWS_LAMBDA_RUNTIME_API`); when there is none, or
/// it does not answer, the error is only printed (by [`run`]).
async fn report_init_error(message: &str) {
    let Ok(api) = std::env::var("AWS_LAMBDA_RUNTIME_API") else {
        return;
    };
    let Ok(endpoint) = api.parse::<http::Uri>() else {
        eprintln!("paddock: AWS_LAMBDA_RUNTIME_API is not an address: {api}");
        return;
    };
    let body = serde_json::json!({"errorMessage": message, "errorType": "Runtime.InitError"});
    let request = lambda_runtime_api_client::build_request()
        .method(http::Method::POST)
        .uri("/2018-06-01/runtime/init/error")
        .header("lambda-runtime-function-error-type", "Runtime.InitError")
        .header(http::header::CONTENT_TYPE, "application/json")
        .body(lambda_runtime_api_client::body::Body::from(
            body.to_string(),
        ));
    let request = match request {
        Ok(request) => request,
        Err(e) => {
            eprintln!("paddock: could not build the init error report: {e}");
            return;
        }
    };
    let client = lambda_runtime_api_client::PooledClient::builder()
        .with_endpoint(endpoint)
        .build();
    match tokio::time::timeout(Duration::from_secs(5), client.call(request)).await {
        Ok(Ok(response)) if response.status().is_success() => {}
        Ok(Ok(response)) => eprintln!(
            "paddock: the runtime API refused the init error report: {}",
            response.status()
        ),
        Ok(Err(e)) => eprintln!("paddock: could not report the init error: {e}"),
        Err(_) => eprintln!("paddock: the runtime API did not take the init error report"),
    }
}

/// Marks the hand-over to the runtime loop (see [`run`]).
fn serving() {
    SERVING.store(true, Ordering::SeqCst);
}

/// Reads the settings, starts JSON logging and connects the item store; the function then
/// adds the other AWS services it uses (see [`AwsWiring`]).
pub async fn start() -> Result<AwsWiring, Error> {
    let mut settings = Settings::from_env()?;
    if std::env::var_os("Log__Format").is_none() {
        settings.log_format = LogFormat::Json;
    }
    telemetry::init_blocking(settings.log_format);
    metrics_cloudwatch::install(&settings.metrics_namespace)?;
    Ok(AwsWiring::connect(settings, Arc::new(SystemClock)).await?)
}

/// Serves one endpoint group behind API Gateway, wired with what the group needs (see
/// [`Group::needs`]) and nothing else. The group's routes are taken before the first await,
/// with the group a constant of the function's `main`, so its binary links the handlers of
/// its own group only.
#[inline(always)]
pub fn serve(group: Group) -> impl Future<Output = Result<(), Error>> {
    let (needs, routes) = (group.needs(), group.routes::<Router<AppState>>());
    // The state's clients are named here too, as pointers: the async body below is one
    // function for every group, so each `with_*` called there would be linked into every
    // function (the health function linked the AI coach's, the webhooks' and the password
    // hashing threads).
    let mut equipment: Vec<fn(AppState) -> AppState> = Vec::new();
    if needs.identity_providers {
        equipment.push(AppState::with_identity_providers);
    }
    if needs.coach {
        equipment.push(AppState::with_coach);
    }
    if needs.webhook_receivers {
        equipment.push(AppState::with_webhook_client);
    }
    if needs.client_documents {
        equipment.push(AppState::with_client_documents);
    }
    async move {
        let mut wiring = start().await?;
        if needs.blobs {
            wiring = wiring.blobs().await?;
        }
        if needs.secrets {
            wiring = wiring.secrets()?;
        }
        let metrics = if needs.metrics {
            Some(wiring.metrics_source()?)
        } else {
            None
        };
        let (settings, ports) = wiring.finish();
        let mut state = AppState::new(ports, settings);
        for equip in equipment {
            state = equip(state);
        }
        if let Some(source) = metrics {
            state = state.with_metrics_source(source);
        }
        let router = group_router(routes, state).layer(axum::middleware::from_fn(flush_metrics));
        serving();
        lambda_http::run(router).await
    }
}

/// Writes the metric lines of one HTTP invocation once it is answered.
async fn flush_metrics(
    request: axum::extract::Request,
    next: axum::middleware::Next,
) -> axum::response::Response {
    let context = request
        .extensions()
        .get::<lambda_runtime::Context>()
        .cloned();
    let response = next.run(request).await;
    flush_for(context.as_ref());
    response
}

/// Writes the metric lines of the invocation of `context`.
fn flush_for(context: Option<&lambda_runtime::Context>) {
    metrics_cloudwatch::flush(&Invocation {
        request_id: context.map(|c| c.request_id.as_str()),
        trace_id: context.and_then(|c| c.xray_trace_id.as_deref()),
    });
}

/// What invokes a consumer: an SQS batch, or (track maps) the maintenance schedule.
#[derive(Debug, Clone, Deserialize)]
#[serde(untagged)]
pub enum WorkerInvocation {
    /// A batch of queued events.
    Batch(SqsEvent),
    /// The maintenance schedule.
    Schedule(EventBridgeEvent),
}

/// The SQS-triggered consumer of `queue`, its events handled by `processor` (the track-map
/// consumer is also invoked by the maintenance schedule). The function's binary names the
/// processor (`workers::achievements()`, ...), so it links no other consumer's code.
pub async fn serve_consumer(
    wiring: AwsWiring,
    queue: QueueName,
    processor: Processor,
) -> Result<(), Error> {
    let (_, ports) = wiring.finish();
    serving();
    lambda_runtime::run(service_fn(move |event: LambdaEvent<WorkerInvocation>| {
        let (ports, processor) = (ports.clone(), processor.clone());
        async move {
            let answer = handle_worker_event(queue, event.payload, &ports, &processor).await;
            flush_for(Some(&event.context));
            Ok::<_, Error>(answer)
        }
    }))
    .await
}

/// The retention function, on the `sharepacks` table's stream: releases what lived outside
/// each item DynamoDB's TTL removed (the event source mapping passes only TTL's removals; the
/// handler checks again, so a record of any other removal is skipped).
pub async fn serve_retention(wiring: AwsWiring) -> Result<(), Error> {
    let (settings, ports) = wiring.finish();
    let prefix = settings.table_prefix.clone();
    serving();
    lambda_runtime::run(service_fn(move |event: LambdaEvent<DynamoEvent>| {
        let (ports, prefix) = (ports.clone(), prefix.clone());
        async move {
            let answer = handle_ttl_removals(event.payload, &ports, &prefix).await;
            flush_for(Some(&event.context));
            Ok::<_, Error>(answer)
        }
    }))
    .await
}

/// The principal DynamoDB's TTL deletes as, in a stream record's `userIdentity`.
const TTL_PRINCIPAL: &str = "dynamodb.amazonaws.com";

/// The TTL removal a stream record tells of: a `REMOVE` by the service principal of
/// DynamoDB (a removal by the application carries no user identity), from a table of this
/// deployment (tables named `prefix` + logical name), with its old image.
fn ttl_removal(
    record: &aws_lambda_events::dynamodb::EventRecord,
    prefix: &str,
) -> Option<paddock_core::retention::TtlRemoval> {
    let by_ttl = record
        .user_identity
        .as_ref()
        .is_some_and(|who| who.type_ == "Service" && who.principal_id == TTL_PRINCIPAL);
    if record.event_name != "REMOVE" || !by_ttl {
        return None;
    }
    // `arn:aws:dynamodb:<region>:<account>:table/<physical name>/stream/<label>`.
    let physical = record
        .event_source_arn
        .as_deref()?
        .split("table/")
        .nth(1)?
        .split('/')
        .next()?;
    let table = paddock_core::tables::Table::ALL
        .into_iter()
        .find(|t| t.physical(prefix) == physical)?;
    let old: Item = serde_dynamo::from_item(record.change.old_image.clone()).ok()?;
    let key = paddock_core::ports::items::Key::of(&old)?;
    Some(paddock_core::retention::TtlRemoval { table, key, old })
}

/// Handles a stream batch of TTL removals in order; on a failure, reports that record, so
/// Lambda resumes the shard from it (what came before is not handled again).
pub async fn handle_ttl_removals(
    event: DynamoEvent,
    ports: &Ports,
    prefix: &str,
) -> DynamoDbEventResponse {
    let mut response = DynamoDbEventResponse::default();
    let mut removals = Vec::new();
    let mut sequences = Vec::new();
    for record in &event.records {
        if let Some(removal) = ttl_removal(record, prefix) {
            removals.push(removal);
            sequences.push(record.change.sequence_number.clone().unwrap_or_default());
        } else {
            tracing::debug!(
                event = %record.event_name,
                "stream record that is not a TTL removal; skipped"
            );
        }
    }
    match paddock_core::retention::on_ttl_removals(ports, &removals).await {
        Ok(report) => tracing::info!(
            removed = report.total(),
            by_kind = ?report.removed,
            "TTL removals handled"
        ),
        Err((index, report, e)) => {
            tracing::error!(
                error = %e,
                handled = report.total(),
                "TTL removal failed; the stream resumes from it"
            );
            let mut failure = DynamoDbBatchItemFailure::default();
            failure.item_identifier = sequences.get(index).cloned();
            response.batch_item_failures.push(failure);
        }
    }
    response
}

fn failure(id: String) -> BatchItemFailure {
    let mut failure = BatchItemFailure::default();
    failure.item_identifier = id;
    failure
}

/// Handles an SQS batch of `consumer`'s queue (answering the records to redeliver,
/// `batchItemFailures`) or a maintenance tick (answering an empty list).
pub async fn handle_worker_event(
    consumer: QueueName,
    event: WorkerInvocation,
    ports: &Ports,
    processor: &Processor,
) -> SqsBatchResponse {
    let mut response = SqsBatchResponse::default();
    let records = match event {
        WorkerInvocation::Batch(batch) => batch.records,
        WorkerInvocation::Schedule(_) if consumer != QueueName::TrackMaps => return response,
        WorkerInvocation::Schedule(_) => {
            // Failures are logged by the tick and resume at the next one.
            paddock_core::maintenance::tick(ports).await;
            return response;
        }
    };
    // The records of a batch are handled at once, as the local consumer does (one slow
    // record must not hold the others past their time).
    let failed: Vec<String> = futures::stream::iter(records)
        .map(|record| async move {
            let message = ReceivedMessage {
                id: record.message_id.unwrap_or_default(),
                body: record.body.unwrap_or_default(),
                receipt: record.receipt_handle.unwrap_or_default(),
                receive_count: record
                    .attributes
                    .get("ApproximateReceiveCount")
                    .and_then(|c| c.parse().ok())
                    .unwrap_or(1),
            };
            // Every line of this record names its event and the trace of the request behind it.
            let span = EventHeader::of(&message.body).span(consumer.name(), &message.id);
            let failed = handle_record(consumer, &message, ports, processor)
                .instrument(span)
                .await;
            failed.then_some(message.id)
        })
        .buffer_unordered(workers::concurrency(consumer))
        .filter_map(std::future::ready)
        .collect()
        .await;
    response
        .batch_item_failures
        .extend(failed.into_iter().map(failure));
    response
}

/// Handles one record of a consumer's batch; answers whether SQS must deliver it again.
async fn handle_record(
    consumer: QueueName,
    message: &ReceivedMessage,
    ports: &Ports,
    processor: &Processor,
) -> bool {
    let kind = workers::kind_of(&message.body);
    let (outcome, failed) = match workers::handle_body(&message.body, ports, processor).await {
        Ok(_) => ("ok", false),
        // Come before its time: hidden until then, and left on the queue.
        Err(ProcessError::NotYet(delay)) => {
            if let Err(e) = ports
                .queues
                .get(consumer)
                .retry_later(&message.receipt, delay)
                .await
            {
                tracing::warn!(error = %e, "could not hide an early message");
            }
            return true;
        }
        Err(ProcessError::Exhausted(reason)) => {
            tracing::warn!(error = %reason, "event tried as often as it may; dead-lettered");
            let moved = ports
                .queues
                .get(consumer)
                .dead_letter(message, &reason)
                .await;
            ("dead_letter", moved.is_err())
        }
        Err(ProcessError::Poison(reason)) => {
            tracing::error!(error = %reason, "poison event; dead-lettered");
            // Straight to the dead-letter queue; redelivering a poison event is pointless.
            let moved = ports
                .queues
                .get(consumer)
                .dead_letter(message, &reason)
                .await;
            ("dead_letter", moved.is_err())
        }
        Err(e) => {
            tracing::warn!(error = %e, "event failed; SQS will redeliver");
            // Webhooks back off over about a day: the message stays hidden until its next
            // attempt (others reappear after the queue's visibility timeout).
            if consumer == QueueName::Webhooks {
                let delay = workers::retry_delay(
                    consumer,
                    workers::RetryPolicy::default(),
                    message.receive_count,
                );
                if let Err(e) = ports
                    .queues
                    .get(consumer)
                    .retry_later(&message.receipt, delay)
                    .await
                {
                    tracing::warn!(error = %e, "could not delay the next attempt");
                }
            }
            ("retry", true)
        }
    };
    if outcome == "ok" {
        tracing::info!(kind, "event handled");
    }
    paddock_core::metrics::global()
        .events
        .with_label_values(&[consumer.name(), kind, outcome])
        .inc();
    failed
}

/// The DynamoDB-stream-triggered outbox relay.
pub async fn serve_outbox_relay(wiring: AwsWiring) -> Result<(), Error> {
    let (_, ports) = wiring.finish();
    serving();
    lambda_runtime::run(service_fn(move |event: LambdaEvent<DynamoEvent>| {
        let ports = ports.clone();
        async move {
            let answer = handle_stream_event(event.payload, &ports).await;
            flush_for(Some(&event.context));
            Ok::<_, Error>(answer)
        }
    }))
    .await
}

/// Relays the INSERTs of an outbox stream batch in order; on a failure, reports that record
/// so Lambda retries from it (stream order is kept).
pub async fn handle_stream_event(event: DynamoEvent, ports: &Ports) -> DynamoDbEventResponse {
    let mut response = DynamoDbEventResponse::default();
    for record in event.records {
        if record.event_name != "INSERT" {
            continue;
        }
        let sequence = record.change.sequence_number.clone().unwrap_or_default();
        let item = match serde_dynamo::from_item::<_, Item>(record.change.new_image) {
            Ok(item) => item,
            Err(e) => {
                tracing::error!(sequence, error = %e, "outbox stream record without a readable image; skipped");
                continue;
            }
        };
        let header =
            paddock_core::outbox::Event::from_item(&item).map_or_else(EventHeader::default, |e| {
                EventHeader {
                    id: Some(e.id),
                    trace: e.trace,
                }
            });
        let relayed = async {
            let relayed = outbox::relay_items(ports, std::slice::from_ref(&item)).await;
            match &relayed {
                Ok(_) => tracing::info!("event relayed"),
                Err(e) => {
                    tracing::error!(sequence, error = format!("{e:#}"), "outbox relay failed");
                }
            }
            relayed
        }
        .instrument(header.span("outbox", &sequence))
        .await;
        if relayed.is_err() {
            let mut failure = DynamoDbBatchItemFailure::default();
            failure.item_identifier = Some(sequence);
            response.batch_item_failures.push(failure);
            return response;
        }
    }
    response
}
