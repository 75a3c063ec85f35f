//! Lambda entry points: each function binary calls one of these.

use lambda_runtime::{LambdaEvent, service_fn};
use serde_json::{Value, json};

use axum::Router;
use std::sync::Arc;

use crate::config::{LogFormat, Settings};
use crate::ports::items::Item;
use crate::ports::queue::ReceivedMessage;
use crate::ports::{Ports, SystemClock};
use crate::routes::group_router;
use crate::state::AppState;
pub use crate::wiring::AwsWiring;
use crate::workers::{self, ProcessError, Processor};
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

/// The SQS-triggered event worker (also invoked by the maintenance schedule).
pub async fn serve_event_worker(wiring: AwsWiring, processor: Processor) -> Result<(), Error> {
    let (_, ports) = wiring.finish();
    lambda_runtime::run(service_fn(move |event: LambdaEvent<Value>| {
        let (ports, processor) = (ports.clone(), processor.clone());
        async move { Ok::<_, Error>(handle_worker_event(&event.payload, &ports, &processor).await) }
    }))
    .await
}

/// Handles an SQS batch; answers the records to redeliver (`batchItemFailures`).
pub async fn handle_worker_event(event: &Value, ports: &Ports, processor: &Processor) -> Value {
    let Some(records) = event.get("Records").and_then(Value::as_array) else {
        // The maintenance schedule: hand track jobs with an expired lease back to the workers.
        let stuck =
            crate::tracks::jobs::reset_stuck(ports, crate::tracks::jobs::Stuck::LeaseExpired);
        if let Err(e) = stuck.await {
            tracing::error!(error = %e, "maintenance: could not reset stuck track jobs");
        }
        return json!({ "batchItemFailures": [] });
    };
    let mut failures = Vec::new();
    for record in records {
        let text = |k: &str| {
            record
                .get(k)
                .and_then(Value::as_str)
                .unwrap_or_default()
                .to_owned()
        };
        let message = ReceivedMessage {
            id: text("messageId"),
            body: text("body"),
            receipt: text("receiptHandle"),
            receive_count: record
                .pointer("/attributes/ApproximateReceiveCount")
                .and_then(Value::as_str)
                .and_then(|c| c.parse().ok())
                .unwrap_or(1),
        };
        match workers::handle_body(&message.body, ports, processor).await {
            Ok(_) => {}
            Err(ProcessError::Poison(reason)) => {
                // Straight to the dead-letter queue; redelivering a poison event is pointless.
                if ports.queue.dead_letter(&message, &reason).await.is_err() {
                    failures.push(json!({ "itemIdentifier": message.id }));
                }
            }
            Err(e) => {
                tracing::warn!(message_id = %message.id, error = %e, "event failed; SQS will redeliver");
                failures.push(json!({ "itemIdentifier": message.id }));
            }
        }
    }
    json!({ "batchItemFailures": failures })
}

/// The DynamoDB-stream-triggered outbox relay.
pub async fn serve_outbox_relay(wiring: AwsWiring) -> Result<(), Error> {
    let (_, ports) = wiring.finish();
    lambda_runtime::run(service_fn(move |event: LambdaEvent<Value>| {
        let ports = ports.clone();
        async move { Ok::<_, Error>(handle_stream_event(&event.payload, &ports).await) }
    }))
    .await
}

/// Relays the INSERTs of an outbox stream batch in order; on a failure, reports that record
/// so Lambda retries from it (stream order is kept).
pub async fn handle_stream_event(event: &Value, ports: &Ports) -> Value {
    let records = event
        .get("Records")
        .and_then(Value::as_array)
        .cloned()
        .unwrap_or_default();
    for record in &records {
        if record.get("eventName").and_then(Value::as_str) != Some("INSERT") {
            continue;
        }
        let sequence = record
            .pointer("/dynamodb/SequenceNumber")
            .and_then(Value::as_str)
            .unwrap_or_default();
        let item = record
            .pointer("/dynamodb/NewImage")
            .cloned()
            .and_then(|image| serde_json::from_value::<serde_dynamo::Item>(image).ok())
            .and_then(|image| serde_dynamo::from_item::<_, Item>(image).ok());
        let Some(item) = item else {
            tracing::error!(
                sequence,
                "outbox stream record without a readable image; skipped"
            );
            continue;
        };
        if let Err(e) = outbox::relay_items(ports, std::slice::from_ref(&item)).await {
            tracing::error!(sequence, error = format!("{e:#}"), "outbox relay failed");
            return json!({ "batchItemFailures": [{ "itemIdentifier": sequence }] });
        }
    }
    json!({ "batchItemFailures": [] })
}
