//! Transactional outbox, relay and worker runner, on both adapter sets; and the Lambda
//! handlers' event shapes.

use paddock_core::events::{EventKind, TrackProcessRequested};
use paddock_core::ids::UserId;
use paddock_core::outbox::{self, Event};
use paddock_core::ports::Clock;
use paddock_core::ports::items::{Condition, Key, Query, TxOp, item};
use paddock_core::queues::QueueName;
use paddock_core::tables::Table;
use paddock_core::workers::{ProcessError, Processor, RetryPolicy};
use paddock_tests::{Backend, TestPorts, ports};
use serde_json::json;
use std::collections::HashMap;
use std::sync::{Arc, Mutex};
use std::time::Duration;
use tokio::sync::watch;

/// The track of the events made by [`labelled`].
const T1: &str = "7a2c0000-0000-8000-8000-000000000001";
/// The driver of the sessions written by [`session_tx`].
const U1: &str = "5e1f0000-0000-4000-8000-000000000001";

/// A typed event told apart by `label` (at most 16 bytes, carried as the bytes of its job id).
fn labelled(label: &str, user_id: Option<UserId>, t: &TestPorts) -> Event {
    let mut bytes = [0u8; 16];
    bytes[..label.len()].copy_from_slice(label.as_bytes());
    Event::new(
        EventKind::TrackProcessRequested(TrackProcessRequested {
            job_id: uuid::Uuid::from_bytes(bytes).into(),
            track_id: T1.parse().unwrap(),
        }),
        user_id,
        t.clock.now(),
    )
}

/// The label of an event made by [`labelled`].
fn label(event: &Event) -> String {
    match &event.kind {
        EventKind::TrackProcessRequested(r) => {
            let bytes = r.job_id.as_uuid().into_bytes();
            let end = bytes.iter().position(|b| *b == 0).unwrap_or(bytes.len());
            String::from_utf8_lossy(&bytes[..end]).into_owned()
        }
        other => other.name().to_owned(),
    }
}

fn session_tx(t: &TestPorts, n: u32) -> (Vec<TxOp>, Event) {
    let event = labelled(&format!("session {n}"), U1.parse().ok(), t);
    let ops = vec![
        TxOp::Put {
            table: Table::Sessions,
            item: item(
                &Key::new(format!("USER#{U1}"), format!("SESSION#{n}")),
                json!({"n": n}),
            ),
            condition: Some(Condition::NotExists),
        },
        event.outbox_op(),
    ];
    (ops, event)
}

async fn outbox_outbox_pending_events(t: &TestPorts) -> usize {
    let mut n = 0;
    for shard in 0..outbox::SHARDS {
        n += t
            .ports
            .items
            .query(Query::partition(
                Table::Outbox,
                format!("OUTBOX#{shard:02}"),
            ))
            .await
            .unwrap()
            .items
            .len();
    }
    n
}

async fn events_travel_with_their_change_and_are_relayed_once(t: TestPorts) {
    let mut sent = Vec::new();
    for n in 0..12 {
        let (ops, event) = session_tx(&t, n);
        t.ports.items.transact(ops).await.unwrap();
        sent.push(event);
    }
    // A change that fails its condition leaves no event behind.
    let (ops, _) = session_tx(&t, 3);
    assert!(
        t.ports
            .items
            .transact(ops)
            .await
            .unwrap_err()
            .is_condition_failed_at(0)
    );
    assert_eq!(outbox_outbox_pending_events(&t).await, 12);

    assert_eq!(outbox::relay_pending(&t.ports).await.unwrap(), 12);
    assert_eq!(outbox_outbox_pending_events(&t).await, 0);
    assert_eq!(
        outbox::relay_pending(&t.ports).await.unwrap(),
        0,
        "nothing is relayed twice"
    );

    // Track-process events concern the track-map consumer only.
    let queue = t.ports.queues.get(QueueName::TrackMaps);
    let mut received = Vec::new();
    while received.len() < 12 {
        let batch = queue.receive(10, Duration::from_secs(2)).await.unwrap();
        assert!(!batch.is_empty(), "events missing from the queue");
        for m in batch {
            queue.ack(&m.receipt).await.unwrap();
            received.push(serde_json::from_str::<Event>(&m.body).unwrap());
        }
    }
    received.sort_by_key(|e| e.id);
    sent.sort_by_key(|e| e.id);
    assert_eq!(received, sent);
    for other in [QueueName::Achievements, QueueName::Feed] {
        let queue = t.ports.queues.get(other);
        assert!(
            queue
                .receive(10, Duration::from_millis(200))
                .await
                .unwrap()
                .is_empty()
        );
    }
}

/// A processor that fails `failures[label]` times with a retryable error, and fails for good
/// on `poison`; counts calls by label.
fn flaky(
    failures: HashMap<&'static str, u32>,
    calls: Arc<Mutex<HashMap<String, u32>>>,
) -> Processor {
    Arc::new(move |event: Event, _ports| {
        let calls = calls.clone();
        let label = label(&event);
        let allowed = failures.get(label.as_str()).copied().unwrap_or(0);
        Box::pin(async move {
            let n = {
                let mut c = calls.lock().unwrap();
                let n = c.entry(label.clone()).or_default();
                *n += 1;
                *n
            };
            match label.as_str() {
                "poison" => Err(ProcessError::Poison("refers to nothing".into())),
                _ if n <= allowed => Err(ProcessError::Retry(anyhow::anyhow!(
                    "transient failure {n}"
                ))),
                _ => Ok(()),
            }
        })
    })
}

async fn worker_retries_then_dead_letters(t: TestPorts) {
    let calls = Arc::new(Mutex::new(HashMap::new()));
    let processor = flaky(
        HashMap::from([("flaky", 2), ("hopeless", 1000)]),
        calls.clone(),
    );
    let queue = t.ports.queues.get(QueueName::TrackMaps).clone();
    for kind in ["ok", "flaky", "hopeless", "poison"] {
        let event = labelled(kind, None, &t);
        queue
            .send(vec![serde_json::to_string(&event).unwrap()])
            .await
            .unwrap();
    }
    queue.send(vec!["not an event".into()]).await.unwrap();
    let (stop_tx, stop_rx) = watch::channel(false);
    let policy = RetryPolicy {
        max_receives: 3,
        base_delay: Duration::from_millis(10),
    };
    let runner = tokio::spawn(paddock_runtime::local_runner::run_consumer(
        QueueName::TrackMaps,
        t.ports.clone(),
        processor,
        policy,
        stop_rx,
    ));

    let mut dead = Vec::new();
    for _ in 0..60 {
        dead = queue.dead_letters(10).await.unwrap();
        if dead.len() == 3 && calls.lock().unwrap().get("flaky") == Some(&3) {
            break;
        }
        tokio::time::sleep(Duration::from_millis(250)).await;
    }
    stop_tx.send(true).unwrap();
    runner.await.unwrap();

    let calls = calls.lock().unwrap().clone();
    assert_eq!(calls.get("ok"), Some(&1));
    assert_eq!(calls.get("flaky"), Some(&3), "two failures, then success");
    assert_eq!(calls.get("hopeless"), Some(&3), "max_receives deliveries");
    assert_eq!(calls.get("poison"), Some(&1), "poison is not retried");
    let mut kinds: Vec<String> = dead
        .iter()
        .map(|b| serde_json::from_str::<Event>(b).map_or_else(|_| b.clone(), |e| label(&e)))
        .collect();
    kinds.sort();
    assert_eq!(kinds, vec!["hopeless", "not an event", "poison"]);
}

mod embedded {
    use super::*;
    #[tokio::test(flavor = "multi_thread")]
    async fn events_travel_with_their_change_and_are_relayed_once() {
        super::events_travel_with_their_change_and_are_relayed_once(ports(Backend::Embedded).await)
            .await;
    }
    #[tokio::test(flavor = "multi_thread")]
    async fn worker_retries_then_dead_letters() {
        super::worker_retries_then_dead_letters(ports(Backend::Embedded).await).await;
    }
}

mod aws_emulators {
    use super::*;
    #[tokio::test(flavor = "multi_thread")]
    async fn events_travel_with_their_change_and_are_relayed_once() {
        super::events_travel_with_their_change_and_are_relayed_once(ports(Backend::Aws).await)
            .await;
    }
    #[tokio::test(flavor = "multi_thread")]
    async fn worker_retries_then_dead_letters() {
        super::worker_retries_then_dead_letters(ports(Backend::Aws).await).await;
    }
}

#[tokio::test]
async fn sqs_lambda_handler_reports_only_failed_records() {
    let t = ports(Backend::Embedded).await;
    let calls = Arc::new(Mutex::new(HashMap::new()));
    let processor = flaky(HashMap::from([("flaky", 1)]), calls);
    let body = |kind: &str| serde_json::to_string(&labelled(kind, None, &t)).unwrap();
    let event = json!({"Records": [
        {"messageId": "m1", "receiptHandle": "r1", "body": body("ok"), "attributes": {"ApproximateReceiveCount": "1"}},
        {"messageId": "m2", "receiptHandle": "r2", "body": body("flaky"), "attributes": {"ApproximateReceiveCount": "1"}},
    ]});
    let event = serde_json::from_value(event).expect("an SQS batch");
    let answer = paddock_runtime::lambda::handle_worker_event(
        QueueName::TrackMaps,
        event,
        &t.ports,
        &processor,
    )
    .await;
    assert_eq!(
        serde_json::to_value(answer).unwrap(),
        json!({"batchItemFailures": [{"itemIdentifier": "m2"}]})
    );
    let schedule = json!({
        "version": "0", "id": "e1", "detail-type": "Scheduled Event", "source": "aws.events",
        "account": "123456789012", "time": "2026-11-22T10:00:00Z", "region": "us-east-1",
        "resources": ["arn:aws:events:us-east-1:123456789012:rule/maintenance"], "detail": {}
    });
    let schedule = serde_json::from_value(schedule).expect("a schedule event");
    let tick = paddock_runtime::lambda::handle_worker_event(
        QueueName::TrackMaps,
        schedule,
        &t.ports,
        &processor,
    )
    .await;
    assert_eq!(
        serde_json::to_value(tick).unwrap(),
        json!({"batchItemFailures": []})
    );
}

#[tokio::test]
async fn stream_lambda_handler_relays_inserts() {
    let t = ports(Backend::Embedded).await;
    let event = Event::new(
        EventKind::LeaderboardSubmitted(paddock_core::events::LeaderboardSubmitted {
            track_id: T1.parse().unwrap(),
            session_id: "0190a0b2-0000-7000-8000-000000000001".parse().unwrap(),
            lap_time_ms: 90_000,
            previous_best_ms: None,
            improved: true,
            rank: Some(1),
            game_id: "acc".into(),
            track_name: "Monza".into(),
            track_layout: String::new(),
            vehicle_name: "Ferrari 296 GT3".into(),
            passing: None,
            car_passing: None,
            event_passing: Vec::new(),
        }),
        Some(UserId::new()),
        t.clock.now(),
    );
    let event_json = serde_json::to_value(&event).unwrap();
    let image = serde_dynamo::to_item::<_, serde_dynamo::Item>(
        json!({"pk": "OUTBOX#01", "sk": event.id.to_string(), "event": event_json}),
    )
    .unwrap();
    let stream = json!({"Records": [
        {"eventID": "1", "eventName": "REMOVE", "awsRegion": "us-east-1",
         "dynamodb": {"SequenceNumber": "1", "SizeBytes": 40, "StreamViewType": "NEW_IMAGE", "Keys": {}}},
        {"eventID": "2", "eventName": "INSERT", "awsRegion": "us-east-1",
         "dynamodb": {"SequenceNumber": "2", "SizeBytes": 300, "StreamViewType": "NEW_IMAGE", "Keys": {}, "NewImage": serde_json::to_value(&image).unwrap()}},
    ]});
    let stream = serde_json::from_value(stream).expect("a DynamoDB stream batch");
    let answer = paddock_runtime::lambda::handle_stream_event(stream, &t.ports).await;
    assert_eq!(
        serde_json::to_value(answer).unwrap(),
        json!({"batchItemFailures": []})
    );
    // A submission concerns the achievements and feed consumers.
    for queue in [QueueName::Achievements, QueueName::Feed] {
        let got = t
            .ports
            .queues
            .get(queue)
            .receive(10, Duration::from_secs(1))
            .await
            .unwrap();
        assert_eq!(got.len(), 1, "{queue}");
        assert_eq!(serde_json::from_str::<Event>(&got[0].body).unwrap(), event);
    }
    let track_maps = t.ports.queues.get(QueueName::TrackMaps);
    assert!(
        track_maps
            .receive(10, Duration::from_millis(200))
            .await
            .unwrap()
            .is_empty()
    );
}
