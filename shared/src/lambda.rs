//! Lambda entry points: each function binary calls one of these.

use aws_lambda_events::dynamodb::Event as DynamoEvent;
use aws_lambda_events::eventbridge::EventBridgeEvent;
use aws_lambda_events::sqs::{BatchItemFailure, SqsBatchResponse, SqsEvent};
use aws_lambda_events::streams::{DynamoDbBatchItemFailure, DynamoDbEventResponse};
use lambda_runtime::{LambdaEvent, service_fn};
use serde::Deserialize;

use axum::Router;
use std::sync::Arc;

use crate::config::{LogFormat, Settings};
use crate::events::ProcessError;
use crate::ports::items::Item;
use crate::ports::queue::ReceivedMessage;
use crate::ports::{Ports, SystemClock};
use crate::queues::QueueName;
use crate::routes::group_router;
use crate::state::AppState;
pub use crate::wiring::AwsWiring;
use crate::workers::{self, Processor};
use crate::{outbox, telemetry};

/// The error type Lambda entry points return.
pub type Error = lambda_runtime::Error;

/// Reads the settings, starts JSON logging and connects the item store; the function then
/// adds the other AWS services it uses (see [`AwsWiring`]).
pub async fn start() -> Result<AwsWiring, Error> {
    let mut settings = Settings::from_env()?;
    if std::env::var_os("Log__Format").is_none() {
        settings.log_format = LogFormat::Json;
    }
    telemetry::init(settings.log_format);
    Ok(AwsWiring::connect(settings, Arc::new(SystemClock)).await?)
}

/// Serves one endpoint group's routes behind API Gateway.
pub async fn serve_group(routes: Router<AppState>, wiring: AwsWiring) -> Result<(), Error> {
    let (settings, ports) = wiring.finish();
    serve_state(routes, AppState::new(ports, settings)).await
}

/// Serves routes over a prepared state (the auth group adds its identity providers).
pub async fn serve_state(routes: Router<AppState>, state: AppState) -> Result<(), Error> {
    lambda_http::run(group_router(routes, state)).await
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

/// The SQS-triggered consumer of `queue` (the track-map consumer is also invoked by the
/// maintenance schedule).
pub async fn serve_consumer(wiring: AwsWiring, queue: QueueName) -> Result<(), Error> {
    let (_, ports) = wiring.finish();
    let processor = workers::processor(queue);
    lambda_runtime::run(service_fn(move |event: LambdaEvent<WorkerInvocation>| {
        let (ports, processor) = (ports.clone(), processor.clone());
        async move {
            Ok::<_, Error>(handle_worker_event(queue, event.payload, &ports, &processor).await)
        }
    }))
    .await
}

/// The scheduled retention sweep.
pub async fn serve_retention(wiring: AwsWiring) -> Result<(), Error> {
    let (_, ports) = wiring.finish();
    lambda_runtime::run(service_fn(move |_: LambdaEvent<EventBridgeEvent>| {
        let ports = ports.clone();
        async move { handle_retention(&ports).await }
    }))
    .await
}

/// Runs one retention sweep; answers the counts by kind (they are logged too).
pub async fn handle_retention(
    ports: &Ports,
) -> Result<std::collections::BTreeMap<&'static str, u64>, Error> {
    Ok(crate::retention::sweep(ports).await?.removed)
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
            // Hand track jobs with an expired lease back to the workers.
            let stuck =
                crate::tracks::jobs::reset_stuck(ports, crate::tracks::jobs::Stuck::LeaseExpired);
            if let Err(e) = stuck.await {
                tracing::error!(error = %e, "maintenance: could not reset stuck track jobs");
            }
            return response;
        }
    };
    for record in records {
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
        let kind = workers::kind_of(&message.body);
        let outcome = match workers::handle_body(&message.body, ports, processor).await {
            Ok(_) => "ok",
            Err(ProcessError::Poison(reason)) => {
                // Straight to the dead-letter queue; redelivering a poison event is pointless.
                if ports
                    .queues
                    .get(consumer)
                    .dead_letter(&message, &reason)
                    .await
                    .is_err()
                {
                    response.batch_item_failures.push(failure(message.id));
                }
                "dead_letter"
            }
            Err(e) => {
                tracing::warn!(%consumer, message_id = %message.id, error = %e, "event failed; SQS will redeliver");
                response.batch_item_failures.push(failure(message.id));
                "retry"
            }
        };
        crate::metrics::global()
            .events
            .with_label_values(&[consumer.name(), kind, outcome])
            .inc();
    }
    response
}

/// The DynamoDB-stream-triggered outbox relay.
pub async fn serve_outbox_relay(wiring: AwsWiring) -> Result<(), Error> {
    let (_, ports) = wiring.finish();
    lambda_runtime::run(service_fn(move |event: LambdaEvent<DynamoEvent>| {
        let ports = ports.clone();
        async move { Ok::<_, Error>(handle_stream_event(event.payload, &ports).await) }
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
        if let Err(e) = outbox::relay_items(ports, std::slice::from_ref(&item)).await {
            tracing::error!(sequence, error = format!("{e:#}"), "outbox relay failed");
            let mut failure = DynamoDbBatchItemFailure::default();
            failure.item_identifier = Some(sequence);
            response.batch_item_failures.push(failure);
            return response;
        }
    }
    response
}
