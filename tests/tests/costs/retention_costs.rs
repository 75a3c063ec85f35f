//! What retention reads in AWS, on DynamoDB Local and moto_server: live items spread over the
//! tables and 1,000 expired ones (a few of them unfinished share packs with objects in S3),
//! written in bulk. DynamoDB's TTL removes the expired items (DynamoDB Local has no TTL, so
//! the test removes them as TTL does, each only while still expired, and builds the stream
//! records TTL emits); the retention function then handles those records. Its reads are
//! measured with `ReturnConsumedCapacity`, and must stay within 3 times the expired items'
//! size in read units, whatever the number of live items: the run is repeated with 10 times
//! the live items.
//!
//! `PADDOCK_RETENTION_LIVE` sets the live items of the first run (default 3,000) and
//! `PADDOCK_RETENTION_RATIO` how many times as many the second run has (default 10: 5,000
//! items of about 330 bytes a table, past a scan's 1 MB page, so a scan would show; 10,000
//! and 100,000 took 102 s of the test command). Larger
//! runs by hand, e.g. 2,000,000 live items in about twenty minutes:
//! `PADDOCK_RETENTION_LIVE=200000 RUST_TEST_NOCAPTURE=1 ./tests/run.sh --test costs retention_costs::`.
//! Print the figures with `RUST_TEST_NOCAPTURE=1`.

use aws_sdk_dynamodb::types::{PutRequest, WriteRequest};
use bytes::Bytes;
use paddock_aws::DynamoItemStore;
use paddock_core::ports::Clock;
use paddock_core::ports::items::{Item, Key, TTL, item};
use paddock_core::retention::TtlRemoval;
use paddock_core::tables::Table;
use paddock_tests::{Backend, TestPorts, ports};
use serde_json::json;
use std::sync::Arc;
use std::time::Instant;

const EXPIRED: usize = 1_000;
const PACKS: usize = 10;

/// Writes `items` to `table` with BatchWriteItem, 25 a call, retrying what was not processed.
async fn bulk_write(
    client: &aws_sdk_dynamodb::Client,
    t: &TestPorts,
    table: Table,
    items: &[Item],
) {
    let name = table.physical(&t.settings.table_prefix);
    for chunk in items.chunks(25) {
        let mut requests: Vec<WriteRequest> = chunk
            .iter()
            .map(|i| {
                WriteRequest::builder()
                    .put_request(
                        PutRequest::builder()
                            .set_item(Some(serde_dynamo::to_item(i).unwrap()))
                            .build()
                            .unwrap(),
                    )
                    .build()
            })
            .collect();
        while !requests.is_empty() {
            let out = client
                .batch_write_item()
                .request_items(&name, requests)
                .send()
                .await
                .expect("a batch write");
            requests = out
                .unprocessed_items
                .and_then(|mut u| u.remove(&name))
                .unwrap_or_default();
        }
    }
}

/// The tables live items go to, with a key shape of each.
const LIVE: [(Table, &str); 6] = [
    (Table::Sessions, "SESSION"),
    (Table::Leaderboards, "BOARD"),
    (Table::Activity, "FEED"),
    (Table::Tracks, "TRACK"),
    (Table::Users, "USER"),
    (Table::Tokens, "FAMILY"),
];

/// Read units of the retention work and its duration, after writing `live` live items.
async fn one_run(live: usize) -> (f64, f64, f64) {
    let t = ports(Backend::Aws).await;
    let client = aws_sdk_dynamodb::Client::new(&paddock_aws::sdk_config().await);
    let now = t.clock.unix();
    let padding = "x".repeat(300);
    for (n, (table, kind)) in LIVE.iter().enumerate() {
        let share = live / LIVE.len() + usize::from(n < live % LIVE.len());
        let items: Vec<Item> = (0..share)
            .map(|i| {
                item(
                    &Key::new(format!("{kind}#{}", i / 50), format!("{i:08}")),
                    // Half of them expire later; none has expired.
                    if i % 2 == 0 {
                        json!({"data": padding, TTL: now + 86_400})
                    } else {
                        json!({"data": padding})
                    },
                )
            })
            .collect();
        bulk_write(&client, &t, *table, &items).await;
    }
    // The expired ones: feed entries, codes, and a few unfinished packs with their objects.
    let mut expired: Vec<(Table, Item)> = Vec::new();
    for i in 0..EXPIRED {
        let (table, it) = if i < PACKS {
            let id: paddock_core::ids::SharePackId =
                format!("00000000-0000-7000-8000-{i:012}").parse().unwrap();
            for object in [
                paddock_core::sharepacks::blob_key(&id),
                paddock_core::sharepacks::upload_key(&id),
            ] {
                t.ports
                    .blobs
                    .put(&object, Bytes::from_static(b"PK zip"), "application/zip")
                    .await
                    .unwrap();
            }
            (
                Table::Sharepacks,
                item(
                    &Key::new(format!("PACK#{id}"), "META"),
                    json!({"state": "pending", "ownerId": "u", TTL: now - 60}),
                ),
            )
        } else if i % 2 == 0 {
            (
                Table::Activity,
                item(
                    &Key::new(format!("FEED#old{}", i / 20), format!("{i:08}")),
                    json!({"title": "old", TTL: now - 60}),
                ),
            )
        } else {
            (
                Table::Tokens,
                item(
                    &Key::new(format!("CODE#{i}"), "CODE"),
                    json!({TTL: now - 60}),
                ),
            )
        };
        expired.push((table, it));
    }
    for table in [Table::Sharepacks, Table::Activity, Table::Tokens] {
        let of_table: Vec<Item> = expired
            .iter()
            .filter(|(t, _)| *t == table)
            .map(|(_, i)| i.clone())
            .collect();
        bulk_write(&client, &t, table, &of_table).await;
    }
    // The expired items' size in read units (4 KB each, started).
    let expired_units: f64 = expired
        .iter()
        .map(|(_, i)| (serde_json::to_vec(i).unwrap().len().div_ceil(4096)) as f64)
        .sum();

    // TTL removes what expired (not the retention work's reads: TTL deletes are free).
    let mut removals = Vec::new();
    for (table, old) in &expired {
        let key = Key::of(old).unwrap();
        assert!(t.ports.items.delete_expired(*table, &key).await.unwrap());
        if *table == Table::Sharepacks {
            removals.push(TtlRemoval {
                table: *table,
                key,
                old: old.clone(),
            });
        }
    }

    // The retention work: the function on the stream records, over a measuring store.
    let measured = Arc::new(DynamoItemStore::new(
        client.clone(),
        t.settings.table_prefix.clone(),
        t.clock.clone(),
    ));
    let mut function_ports = t.ports.clone();
    function_ports.items = measured.clone();
    let started = Instant::now();
    let images: Vec<serde_json::Value> = removals
        .iter()
        .map(|r| {
            let image: serde_dynamo::Item = serde_dynamo::to_item(&r.old).unwrap();
            serde_json::to_value(image).unwrap()
        })
        .collect();
    let arn = format!(
        "arn:aws:dynamodb:us-east-1:123456789012:table/{}",
        Table::Sharepacks.physical(&t.settings.table_prefix)
    );
    let event = paddock_tests::lambda_events::dynamodb_ttl_removals(&arn, &images, 1);
    let answer = paddock_runtime::lambda::handle_ttl_removals(
        serde_json::from_value(event).unwrap(),
        &function_ports,
        &t.settings.table_prefix,
    )
    .await;
    let millis = started.elapsed().as_secs_f64() * 1000.0;
    assert!(answer.batch_item_failures.is_empty());
    let read_units = measured.consumed().read_units;

    // Every expired item and object is gone; every live item is still there.
    for (table, old) in &expired {
        let key = Key::of(old).unwrap();
        assert!(t.ports.items.get(*table, &key).await.unwrap().is_none());
    }
    for i in 0..PACKS {
        let id: paddock_core::ids::SharePackId =
            format!("00000000-0000-7000-8000-{i:012}").parse().unwrap();
        for object in [
            paddock_core::sharepacks::blob_key(&id),
            paddock_core::sharepacks::upload_key(&id),
        ] {
            assert!(
                t.ports.blobs.get(&object).await.unwrap().is_none(),
                "{object}"
            );
        }
    }
    let mut counted = 0;
    for (table, _) in LIVE {
        let mut start = None;
        loop {
            let out = client
                .scan()
                .table_name(table.physical(&t.settings.table_prefix))
                .select(aws_sdk_dynamodb::types::Select::Count)
                .set_exclusive_start_key(start)
                .send()
                .await
                .unwrap();
            counted += out.count as usize;
            match out.last_evaluated_key {
                Some(k) => start = Some(k),
                None => break,
            }
        }
    }
    assert_eq!(counted, live, "no live item touched");
    assert!(
        read_units <= 3.0 * expired_units,
        "retention read {read_units} units for {expired_units} units expired"
    );
    (read_units, expired_units, millis)
}

#[tokio::test(flavor = "multi_thread")]
async fn retention_reads_what_expired_not_what_is_stored() {
    let live: usize = std::env::var("PADDOCK_RETENTION_LIVE")
        .ok()
        .and_then(|v| v.parse().ok())
        .unwrap_or(3_000);
    let ratio: usize = std::env::var("PADDOCK_RETENTION_RATIO")
        .ok()
        .and_then(|v| v.parse().ok())
        .unwrap_or(10);
    let mut rows = Vec::new();
    for live in [live, live * ratio] {
        let write_started = Instant::now();
        let (read_units, expired_units, millis) = one_run(live).await;
        println!(
            "retention with {live} live and {EXPIRED} expired items ({PACKS} unfinished packs): \
             {read_units} read units (expired items' size: {expired_units} units), {millis:.1} ms \
             (set-up and checks {:.1} s)",
            write_started.elapsed().as_secs_f64()
        );
        rows.push(read_units);
    }
    assert_eq!(
        rows[0], rows[1],
        "the same reads with 10 times the live items"
    );
}
