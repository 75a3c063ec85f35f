//! What one upload writes: everything together or nothing, the events it emits, and how many
//! DynamoDB write units it costs against the minimum its item layout needs.

use aws_sdk_dynamodb::types::AttributeValue;
use paddock_core::ids::{JobId, UserId};
use paddock_core::outbox;
use paddock_core::ports::Clock;
use paddock_core::ports::items::Query;
use paddock_core::rate_limits::{self, Limit};
use paddock_core::sessions::{self, records, upload};
use paddock_core::tables::Table;
use paddock_tests::{Backend, TestPorts, ports, session_body};
use std::sync::Arc;
use std::time::Duration;

fn thirty_laps() -> Vec<(i64, bool, f64)> {
    (0..30)
        .map(|i| (92_000 + i * 37, i % 7 != 3, 0.8 + (i % 5) as f64 * 0.0371))
        .collect()
}

fn parsed(t: &TestPorts, csid: &str, points: usize) -> upload::SessionUpload {
    // Read as the route reads it: the client's PascalCase names as camelCase.
    let body = session_body(csid, "2026-11-01T10:00:00Z", &thirty_laps(), points);
    paddock_tests::checked_upload(&body, t.clock.now())
}

/// The driver who uploads.
const U1: &str = "5e1f0000-0000-4000-8000-000000000001";

async fn outbox_events(t: &TestPorts) -> Vec<outbox::Event> {
    let mut events = Vec::new();
    for shard in 0..outbox::SHARDS {
        let page = t
            .ports
            .items
            .query(Query::partition(Table::Outbox, format!("OUTBOX#{shard:02}")).limit(100))
            .await
            .unwrap();
        events.extend(page.items.iter().filter_map(outbox::Event::from_item));
    }
    events
}

async fn one_upload_writes_session_record_track_job_and_event_together(backend: Backend) {
    let t = ports(backend).await;
    let user = U1.parse::<UserId>().unwrap();
    let receipt = sessions::create(&t.ports, &user, parsed(&t, "c1", 300))
        .await
        .unwrap();
    assert!(!receipt.duplicate);
    assert_eq!(receipt.lap_count, 30);

    let stored = t
        .ports
        .items
        .get(
            Table::Sessions,
            &records::session_key(&user, &receipt.session_id),
        )
        .await
        .unwrap()
        .unwrap();
    let job_id: JobId = stored["trackJobId"]
        .as_str()
        .expect("a job for the points")
        .parse()
        .expect("a job id");
    let job = paddock_core::tracks::jobs::status(&t.ports, &job_id)
        .await
        .unwrap()
        .unwrap();
    assert_eq!(job.status, "pending");
    let record = t
        .ports
        .items
        .get(Table::Sessions, &records::client_key(&user, "c1"))
        .await
        .unwrap()
        .unwrap();
    assert_eq!(record["sessionId"], receipt.session_id.as_str());
    let track = paddock_core::tracks::get(&t.ports, &receipt.track_id)
        .await
        .unwrap()
        .unwrap();
    assert_eq!(track.session_count, 1);
    let events = outbox_events(&t).await;
    assert_eq!(events.len(), 1);
    assert_eq!(events[0].kind.name(), "session.uploaded");
    assert_eq!(events[0].user_id.as_ref().map(UserId::as_str), Some(U1));
    let paddock_core::events::EventKind::SessionUploaded(uploaded) = &events[0].kind else {
        panic!("a session.uploaded event");
    };
    assert_eq!(uploaded.session_id, receipt.session_id);
    assert_eq!(
        uploaded.job_id.as_ref().map(JobId::as_str),
        Some(job_id.as_str())
    );

    // The repeat writes nothing: no second event, no count, no blob.
    let again = sessions::create(&t.ports, &user, parsed(&t, "c1", 300))
        .await
        .unwrap();
    assert!(again.duplicate);
    assert_eq!(again.session_id, receipt.session_id);
    assert_eq!(outbox_events(&t).await.len(), 1);
    assert_eq!(
        paddock_core::tracks::get(&t.ports, &receipt.track_id)
            .await
            .unwrap()
            .unwrap()
            .session_count,
        1
    );
    assert_eq!(t.ports.blobs.list("tracks/").await.unwrap().len(), 1);

    // The relay delivers the event to each queue that subscribes to it: an upload with
    // track points concerns the track-map, achievement and feed consumers, not accounts.
    assert_eq!(outbox::relay_pending(&t.ports).await.unwrap(), 1);
    for queue in paddock_core::queues::QueueName::ALL {
        let delivered = t
            .ports
            .queues
            .get(queue)
            .receive(10, Duration::from_millis(500))
            .await
            .unwrap();
        let expected = usize::from(queue != paddock_core::queues::QueueName::Accounts);
        assert_eq!(delivered.len(), expected, "{queue}");
        assert!(
            delivered
                .iter()
                .all(|d| d.body.contains("session.uploaded"))
        );
    }
}

mod embedded {
    #[tokio::test(flavor = "multi_thread")]
    async fn one_upload_writes_session_record_track_job_and_event_together() {
        super::one_upload_writes_session_record_track_job_and_event_together(
            super::Backend::Embedded,
        )
        .await;
    }
}

mod dynamodb_local {
    use super::*;

    #[tokio::test(flavor = "multi_thread")]
    async fn one_upload_writes_session_record_track_job_and_event_together() {
        super::one_upload_writes_session_record_track_job_and_event_together(Backend::Aws).await;
    }

    /// DynamoDB's size of an attribute value (names count where they appear).
    fn value_size(v: &AttributeValue) -> usize {
        match v {
            AttributeValue::S(s) => s.len(),
            // About one byte per two significant digits, plus one.
            AttributeValue::N(n) => {
                let digits = n.trim_start_matches('-').replace('.', "");
                let significant = digits
                    .trim_start_matches('0')
                    .trim_end_matches('0')
                    .len()
                    .max(1);
                significant.div_ceil(2) + 1
            }
            AttributeValue::Bool(_) | AttributeValue::Null(_) => 1,
            AttributeValue::L(items) => 3 + items.iter().map(|i| 1 + value_size(i)).sum::<usize>(),
            AttributeValue::M(map) => {
                3 + map
                    .iter()
                    .map(|(k, v)| 1 + k.len() + value_size(v))
                    .sum::<usize>()
            }
            _ => 0,
        }
    }

    fn item_size(item: &std::collections::HashMap<String, AttributeValue>) -> usize {
        item.iter().map(|(k, v)| k.len() + value_size(v)).sum()
    }

    /// Write units AWS publishes for a transactional write of an item: 2 per started KB.
    fn transactional_units(size: usize) -> usize {
        2 * size.div_ceil(1024)
    }

    #[tokio::test(flavor = "multi_thread")]
    async fn write_units_of_a_30_lap_upload_with_5000_points() {
        let mut t = ports(Backend::Aws).await;
        let client = aws_sdk_dynamodb::Client::new(&paddock_aws::sdk_config().await);
        let prefix = t.settings.table_prefix.clone();
        let store = Arc::new(paddock_aws::DynamoItemStore::new(
            client.clone(),
            prefix.clone(),
            t.clock.clone(),
        ));
        t.ports.items = store.clone();

        let upload = parsed(&t, "wcu-1", 5_000);
        let before = store.consumed().write_units;
        // What `POST /v1/sessions` writes: the rate-limit counter, then the upload.
        rate_limits::hit(&t.ports, "upload", U1, 60, &[Limit::new("n", 30)])
            .await
            .unwrap();
        let receipt = sessions::create(&t.ports, &U1.parse::<UserId>().unwrap(), upload)
            .await
            .unwrap();
        let consumed = store.consumed().write_units - before;

        // The minimum: the five items the layout needs, written in one transaction.
        let get = |table: Table, pk: String, sk: String| {
            let client = client.clone();
            let name = table.physical(&prefix);
            async move {
                client
                    .get_item()
                    .table_name(name)
                    .key("pk", AttributeValue::S(pk))
                    .key("sk", AttributeValue::S(sk))
                    .send()
                    .await
                    .unwrap()
                    .item
                    .expect("item written")
            }
        };
        let session = get(
            Table::Sessions,
            format!("USER#{U1}"),
            format!("SESSION#{}", receipt.session_id),
        )
        .await;
        let job_id = match session.get("trackJobId") {
            Some(AttributeValue::S(s)) => s.clone(),
            _ => panic!("no job"),
        };
        let record = get(Table::Sessions, format!("USER#{U1}"), "CLIENT#wcu-1".into()).await;
        let track = get(Table::Tracks, "TRACKS".into(), receipt.track_id.to_string()).await;
        let job = get(Table::Tracks, "JOBS".into(), job_id).await;
        let event_id = outbox_events(&t).await[0].id;
        let shard = (event_id.as_u128() % u128::from(outbox::SHARDS)) as u32;
        let event = get(
            Table::Outbox,
            format!("OUTBOX#{shard:02}"),
            event_id.to_string(),
        )
        .await;
        let items = [
            ("session with 30 laps", Table::Sessions, session),
            ("idempotency record", Table::Sessions, record),
            ("track", Table::Tracks, track),
            ("processing job", Table::Tracks, job),
            ("outbox event", Table::Outbox, event),
        ];
        let sizes: Vec<(&str, usize)> = items.iter().map(|(n, _, i)| (*n, item_size(i))).collect();
        let aws_price: usize = sizes.iter().map(|(_, s)| transactional_units(*s)).sum();

        // The minimum as DynamoDB Local bills it: the same five items in one transaction
        // (under other keys), nothing else.
        let copies = items
            .into_iter()
            .map(|(_, table, mut item)| {
                if let Some(AttributeValue::S(pk)) = item.get("pk").cloned() {
                    item.insert("pk".into(), AttributeValue::S(format!("COPY{pk}")));
                }
                aws_sdk_dynamodb::types::TransactWriteItem::builder()
                    .put(
                        aws_sdk_dynamodb::types::Put::builder()
                            .table_name(table.physical(&prefix))
                            .set_item(Some(item))
                            .build()
                            .unwrap(),
                    )
                    .build()
            })
            .collect();
        let out = client
            .transact_write_items()
            .set_transact_items(Some(copies))
            .return_consumed_capacity(aws_sdk_dynamodb::types::ReturnConsumedCapacity::Total)
            .send()
            .await
            .unwrap();
        let minimum: f64 = out
            .consumed_capacity()
            .iter()
            .filter_map(aws_sdk_dynamodb::types::ConsumedCapacity::capacity_units)
            .sum();
        let ratio = consumed / minimum;
        println!(
            "upload of 30 laps and 5,000 track points: {consumed} write units consumed on DynamoDB Local; \
             the five items alone in one transaction: {minimum}; ratio {ratio:.2} \
             (item sizes {sizes:?}; at AWS's published 2 units per started KB in a transaction they would cost {aws_price})"
        );
        assert!(
            ratio <= 1.25,
            "write units {consumed} vs minimum {minimum}: ratio {ratio:.2}"
        );
    }
}
