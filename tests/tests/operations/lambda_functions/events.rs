//! The event functions: the relay and the consumers carrying an upload through the queues, the
//! schedules, and the deletion jobs.

use super::*;
use paddock_core::competition_events::{self, time_text};

/// The outbox rows in DynamoDB as the table's stream carries them (DynamoDB JSON).
pub(super) async fn outbox_images(t: &TestPorts) -> Vec<Value> {
    let sdk = paddock_aws::sdk_config().await;
    let dynamo = aws_sdk_dynamodb::Client::new(&sdk);
    let rows = dynamo
        .scan()
        .table_name(Table::Outbox.physical(&t.settings.table_prefix))
        .send()
        .await
        .expect("a scan of the outbox");
    rows.items()
        .iter()
        .map(|row| {
            let image: serde_dynamo::Item = row.clone().into();
            serde_json::to_value(image).expect("an image")
        })
        .collect()
}

/// Receives every message of `queue` (waiting a little for the first).
pub(super) async fn drain(t: &TestPorts, queue: QueueName) -> Vec<String> {
    let queue = t.ports.queues.get(queue);
    let mut bodies = Vec::new();
    loop {
        let batch = queue
            .receive(10, Duration::from_millis(500))
            .await
            .expect("a receive");
        if batch.is_empty() {
            return bodies;
        }
        for message in batch {
            queue.ack(&message.receipt).await.expect("an ack");
            bodies.push(message.body);
        }
    }
}

/// A record of `consumer` that fails on every delivery, so it must be reported for
/// redelivery: an unreadable job (track maps) or statistics item (achievements) of the
/// driver. The feed has none: its one write is keyed by the event's driver, and an event
/// whose driver id is not a well-formed id (the way a feed write once failed, with a key
/// DynamoDB refuses) is now unreadable, so poison; the feed's record of that kind is in the
/// poison records instead.
pub(super) async fn failing_record(
    t: &TestPorts,
    consumer: QueueName,
    upload_event: &Value,
) -> Option<String> {
    let mut event = upload_event.clone();
    match consumer {
        QueueName::TrackMaps => {
            let job = uuid::Uuid::now_v7().to_string();
            t.ports
                .items
                .put(
                    Table::Tracks,
                    item(
                        &Key::new("JOBS", &job),
                        json!({"status": "pending", "attempts": "many"}),
                    ),
                    None,
                )
                .await
                .expect("a broken job");
            event["id"] = json!(uuid::Uuid::now_v7().to_string());
            event["payload"]["jobId"] = json!(job);
        }
        QueueName::Achievements => {
            let driver = uuid::Uuid::new_v4().to_string();
            t.ports
                .items
                .put(
                    Table::Activity,
                    item(
                        &Key::new(format!("ACH#{driver}"), "STATS"),
                        json!({"sessions": "many"}),
                    ),
                    None,
                )
                .await
                .expect("a broken statistics item");
            event["id"] = json!(uuid::Uuid::now_v7().to_string());
            event["userId"] = json!(driver);
        }
        QueueName::Feed => return None,
        QueueName::Accounts => {
            panic!("the accounts consumer does not take uploads; it has a test of its own")
        }
        QueueName::Webhooks => {
            panic!("the webhook deliveries consumer has its scenarios in webhooks.rs")
        }
    }
    Some(event.to_string())
}

/// An upload through the sessions function writes its event to the outbox; the relay,
/// given the outbox table's stream batch, puts it on every subscribing queue; each consumer,
/// given an SQS batch of that event, one that fails every time and one that is poison,
/// applies the good one, dead-letters the poison one and reports only the failing one.
///
/// "Reports only the poison one", read against `lambda.rs`: a poison record (unreadable, or
/// an event without a driver) is moved to the dead-letter queue at once and is *not* in
/// `batchItemFailures`, since redelivering it cannot help; only a record that failed and
/// may succeed later is reported, so that SQS delivers it again (and moves it to the
/// dead-letter queue itself after `maxReceiveCount`). A poison record is reported only when
/// the dead-letter move itself fails.
#[tokio::test(flavor = "multi_thread")]
pub(super) async fn relay_and_consumers_carry_an_upload_through_the_queues() {
    let deployment = deployment().await;
    let env = deployment.env.clone();
    let t = &deployment.t;
    let (auth, sessions, relay) = tokio::join!(
        start("auth", &env),
        start("sessions", &env),
        start("outbox-relay", &env)
    );
    let consumers =
        futures::future::join_all(CONSUMERS.iter().map(|(name, _)| start(name, &env))).await;

    let email = format!("{}@example.com", unique("relay"));
    let registered = auth
        .http(&HttpRequest::new("POST", "/v1/auth/register").json(
            &json!({"email": email, "password": "correct horse battery", "displayName": "Relay"}),
        ))
        .await;
    assert_eq!(registered.status, 201);
    let data = registered.json()["data"].clone();
    let (token, user_id) = (
        data["accessToken"].as_str().expect("a token").to_owned(),
        data["user"]["id"].as_str().expect("an id").to_owned(),
    );
    let laps = [(92_000, true, 0.95), (91_500, true, 0.93)];
    let upload = session_body("relay-upload-1", "2026-11-20T18:30:00Z", &laps, 400);
    let invocation = sessions
        .invoke(
            &HttpRequest::new("POST", "/v1/sessions")
                .bearer(&token)
                .json(&upload)
                .api_gateway_event(),
        )
        .await;
    let created = HttpAnswer::from_api_gateway(&invocation.json().expect("an answer"))
        .expect("an HTTP answer");
    assert_eq!(created.status, 201);
    // The upload's trace (the header Lambda handed the invocation) travels with its event.
    let trace = invocation.trace_id.clone();
    let track_id = created.json()["data"]["trackId"]
        .as_str()
        .expect("a track")
        .to_owned();

    let images = outbox_images(t).await;
    assert_eq!(images.len(), 1, "the upload's one event: {images:?}");
    assert_eq!(
        images[0]["event"]["M"]["trace"]["S"],
        trace.as_str(),
        "{}",
        images[0]
    );
    let table_arn = format!(
        "arn:aws:dynamodb:us-east-1:123456789012:table/{}",
        Table::Outbox.physical(&t.settings.table_prefix)
    );
    let answer = relay.answer(&dynamodb_inserts(&table_arn, &images)).await;
    assert_eq!(answer, json!({"batchItemFailures": []}));
    assert_eq!(
        relay.counted("paddock_outbox_relayed_total", &[]).await,
        1,
        "{}",
        relay.process.output()
    );
    let mut delivered = HashMap::new();
    for (_, queue) in CONSUMERS {
        let bodies = drain(t, *queue).await;
        assert_eq!(bodies.len(), 1, "{queue}: {bodies:?}");
        delivered.insert(*queue, bodies[0].clone());
    }
    let event: Value = serde_json::from_str(&delivered[&QueueName::Feed]).expect("an event");
    assert_eq!(event["kind"], "session.uploaded");
    assert_eq!(event["trace"], trace.as_str());
    assert_eq!(event["userId"], user_id.as_str());

    let runs = consumers
        .iter()
        .zip(CONSUMERS)
        .map(|(consumer, (_, queue))| {
            let good = delivered[queue].clone();
            let event = event.clone();
            let trace = trace.clone();
            async move {
                let failing = failing_record(t, *queue, &event).await;
                let mut orphan = event.clone();
                orphan["id"] = json!(uuid::Uuid::now_v7().to_string());
                orphan["userId"] = Value::Null;
                let poison = if *queue == QueueName::TrackMaps {
                    // Track maps need no driver: only an unreadable body is poison there.
                    "{\"kind\": \"session.uploaded\"".to_owned()
                } else {
                    orphan.to_string()
                };
                // The feed's second poison record: a driver id that is no id (its key would
                // pass DynamoDB's 2,048 bytes).
                let mut overlong = event.clone();
                overlong["id"] = json!(uuid::Uuid::now_v7().to_string());
                overlong["userId"] = json!("d".repeat(3000));
                let overlong = overlong.to_string();
                let mut sent = vec![good.clone(), poison.clone()];
                sent.extend(failing.clone());
                let mut poisons = vec![poison.clone()];
                if failing.is_none() {
                    sent.push(overlong.clone());
                    poisons.push(overlong);
                }
                // Through the queue itself, as Lambda's event source receives them: the records
                // carry real message ids and receipt handles, which settling them needs.
                let sqs = t.ports.queues.get(*queue);
                sqs.send(sent.clone()).await.expect("sent");
                let mut received = Vec::new();
                while received.len() < sent.len() {
                    let batch = sqs
                        .receive(10, Duration::from_secs(2))
                        .await
                        .expect("received");
                    assert!(!batch.is_empty(), "{queue}: the messages arrive");
                    received.extend(batch);
                }
                let id_of = |body: &str| {
                    received
                        .iter()
                        .find(|m| m.body == body)
                        .map(|m| m.id.clone())
                        .expect("the message")
                };
                let records: Vec<(&str, &str, &str)> = received
                    .iter()
                    .map(|m| (m.id.as_str(), m.receipt.as_str(), m.body.as_str()))
                    .collect();
                let batch = sqs_batch(&format!("paddock-{queue}"), &records);
                let answer = consumer.answer(&batch).await;
                let reported: Vec<Value> = failing
                    .iter()
                    .map(|failing| json!({"itemIdentifier": id_of(failing)}))
                    .collect();
                assert_eq!(
                    answer,
                    json!({ "batchItemFailures": reported }),
                    "{queue}: {}",
                    consumer.process.output()
                );
                let dead = t
                    .ports
                    .queues
                    .get(*queue)
                    .dead_letters(10)
                    .await
                    .expect("dead letters");
                let (mut dead, mut poisons) = (dead, poisons);
                dead.sort();
                poisons.sort();
                assert_eq!(dead, poisons, "{queue}");
                // The failing event's log line names its event id and the upload's trace.
                if let Some(failing) = &failing {
                    let failing_id = serde_json::from_str::<Value>(failing).expect("JSON")["id"]
                        .as_str()
                        .expect("an id")
                        .to_owned();
                    let output = consumer.process.output();
                    let line = output
                        .lines()
                        .filter_map(|l| serde_json::from_str::<Value>(l).ok())
                        .find(|l| l["message"] == "event failed; SQS will redeliver")
                        .unwrap_or_else(|| panic!("{queue}: no failure line: {output}"));
                    assert_eq!(
                        line["span"]["event_id"],
                        failing_id.as_str(),
                        "{queue}: {line}"
                    );
                    assert_eq!(line["span"]["trace_id"], trace.as_str(), "{queue}: {line}");
                    assert_eq!(line["span"]["consumer"], queue.name(), "{queue}: {line}");
                }
                // The batch's outcomes, one count each, under the consumer's name: the good
                // record applied, the failing one retried, the poison one dead-lettered (the
                // feed: both poison records, the overlong driver id unreadable).
                let outcomes = match (&failing, *queue) {
                    (None, _) => [
                        ("ok", "session.uploaded"),
                        ("dead_letter", "session.uploaded"),
                        ("dead_letter", "unreadable"),
                    ],
                    (Some(_), QueueName::TrackMaps) => [
                        ("ok", "session.uploaded"),
                        ("retry", "session.uploaded"),
                        ("dead_letter", "unreadable"),
                    ],
                    (Some(_), _) => [
                        ("ok", "session.uploaded"),
                        ("retry", "session.uploaded"),
                        ("dead_letter", "session.uploaded"),
                    ],
                };
                for (outcome, kind) in outcomes {
                    let dims = [
                        ("consumer", queue.name()),
                        ("kind", kind),
                        ("outcome", outcome),
                    ];
                    assert_eq!(
                        consumer
                            .counted("paddock_events_processed_total", &dims)
                            .await,
                        1,
                        "{queue} {outcome} {kind}: {}",
                        consumer.process.output()
                    );
                }
            }
        });
    futures::future::join_all(runs).await;

    // The good event took effect in each consumer.
    let driver: UserId = user_id.parse().expect("a user id");
    let (entries, _) = feed::list(&t.ports, &driver, 10, None)
        .await
        .expect("the feed");
    assert_eq!(entries.len(), 1, "one feed entry for the upload");
    let mine = paddock_core::activity::achievements::for_driver(&t.ports, &driver)
        .await
        .expect("achievements");
    let mine = serde_json::to_value(mine).expect("JSON");
    assert!(
        mine.as_array()
            .expect("a list")
            .iter()
            .any(|a| a["id"] == "first-session" && !a["unlockedAt"].is_null()),
        "{mine}"
    );
    let job_id = event["payload"]["jobId"].as_str().expect("a track job");
    let status = jobs::status(&t.ports, &job_id.parse().expect("a job id"))
        .await
        .expect("a status")
        .expect("the job");
    assert_eq!(status.status, "done", "track {track_id}: {status:?}");
}

/// The track-map function on the maintenance schedule hands a job whose lease ran out back
/// to pending and opens and closes the events due (a series' next round made); the retention
/// function, on a TTL removal of the share-pack stream, removes the
/// objects of a pack that expired unfinished.
#[tokio::test(flavor = "multi_thread")]
pub(super) async fn schedules_run_maintenance_and_retention() {
    let deployment = deployment().await;
    let env = deployment.env.clone();
    let t = &deployment.t;
    let (track_maps, retention) = tokio::join!(start("track-maps", &env), start("retention", &env));

    // A job claimed an hour ago: its two-minute lease is long over.
    let an_hour_ago = Arc::new(ManualClock::new(
        OffsetDateTime::now_utc() - time::Duration::hours(1),
    ));
    let earlier = paddock_core::ports::Ports {
        clock: an_hour_ago.clone(),
        ..t.ports.clone()
    };
    let job_id = paddock_core::ids::JobId::new();
    let create: TxOp = jobs::create_op(
        &job_id,
        &"7a2c0000-0000-8000-8000-000000000001".parse().unwrap(),
        &"0190a0b2-0000-7000-8000-000000000001".parse().unwrap(),
        &UserId::new(),
        "points/none.bin",
        an_hour_ago.now(),
    );
    earlier.items.transact(vec![create]).await.expect("a job");
    // A public series made an hour ago whose first round, 40 minutes long, opened and closed
    // since: the tick opens it (making its second round) and closes it.
    let track = paddock_core::tracks::TrackKey::new("acc", "Monza", "");
    let counted = paddock_core::tracks::count_session_op(&track);
    t.ports
        .items
        .transact(vec![counted])
        .await
        .expect("a track");
    let an_hour_ago_ms = (an_hour_ago.now().unix_timestamp() + 60) * 1000;
    let at = |ms: i64| Some(time_text(ms));
    let plan = competition_events::PlanFields {
        name: Some("Monza hour".into()),
        track_id: Some(track.id().to_string()),
        opens_at: at(an_hour_ago_ms),
        closes_at: at(an_hour_ago_ms + 40 * 60_000),
        recurrence: Some(competition_events::RecurrenceFields {
            every_days: Some(json!(1)),
            rounds: Some(json!(2)),
        }),
        ..Default::default()
    };
    let host = competition_events::Host::Public;
    let round_1 = competition_events::create(&earlier, &UserId::new(), host, plan)
        .await
        .expect("an event");
    assert!(
        jobs::claim(&earlier, &job_id)
            .await
            .expect("a claim")
            .is_some()
    );
    let answer = track_maps
        .answer(&scheduled_event("paddock-maintenance"))
        .await;
    assert_eq!(answer, json!({"batchItemFailures": []}));
    let status = jobs::status(&t.ports, &job_id).await.expect("a status");
    assert_eq!(status.map(|s| s.status).as_deref(), Some("pending"));
    let public = competition_events::list(&t.ports, None, &competition_events::Host::Public, 5)
        .await
        .expect("the public events");
    let rounds: Vec<_> = public
        .iter()
        .map(|e| (e.series.as_ref().map(|s| s.round), e.state))
        .collect();
    use competition_events::EventState::{Finished, Upcoming};
    assert_eq!(
        rounds,
        [(Some(2), Upcoming), (Some(1), Finished)],
        "{public:?}"
    );
    assert_eq!(public[1].id, round_1.id);

    // A share pack whose upload was never completed, removed by TTL: the retention function
    // on its stream record removes the pack's objects.
    let id = paddock_core::ids::SharePackId::new();
    let pending = item(
        &Key::new(format!("PACK#{id}"), "META"),
        json!({"state": "pending", "ttl": OffsetDateTime::now_utc().unix_timestamp() - 60}),
    );
    for object in [
        paddock_core::sharepacks::blob_key(&id),
        paddock_core::sharepacks::upload_key(&id),
    ] {
        t.ports
            .blobs
            .put(&object, bytes::Bytes::from_static(b"PK"), "application/zip")
            .await
            .expect("an object");
    }
    let image: serde_dynamo::Item = serde_dynamo::to_item(&pending).expect("an image");
    let table_arn = format!(
        "arn:aws:dynamodb:us-east-1:123456789012:table/{}",
        Table::Sharepacks.physical(&t.settings.table_prefix)
    );
    let event = dynamodb_ttl_removals(
        &table_arn,
        &[serde_json::to_value(image).expect("an image")],
        1,
    );
    let answer = retention.answer(&event).await;
    assert_eq!(answer, json!({"batchItemFailures": []}));
    for object in [
        paddock_core::sharepacks::blob_key(&id),
        paddock_core::sharepacks::upload_key(&id),
    ] {
        assert!(t.ports.blobs.get(&object).await.expect("a read").is_none());
    }
}

/// The accounts function gets an SQS batch with a deleted account's `account.deleted` event
/// and a poison one (no driver): it runs the deletion job to its end, dead-letters the poison
/// record and reports no failure.
#[tokio::test(flavor = "multi_thread")]
pub(super) async fn the_accounts_function_runs_deletion_jobs() {
    let deployment = deployment().await;
    let env = deployment.env.clone();
    let t = &deployment.t;
    let accounts = start("accounts", &env).await;

    let user = UserId::new();
    let profile = paddock_core::identity::users::User {
        id: user.clone(),
        ..paddock_core::identity::users::User::new(None, "Ada".into(), None, t.clock.now())
    };
    t.ports
        .items
        .transact(vec![profile.create_op()])
        .await
        .expect("a profile");
    let post = feed::FeedPost::parse(Some("Last lap".into()), None).expect("a post");
    feed::post(&t.ports, &user, post, None)
        .await
        .expect("a post");
    paddock_core::driver_data::deletion::start(&t.ports, &user)
        .await
        .expect("deleted");
    paddock_core::outbox::relay_pending(&t.ports)
        .await
        .expect("relayed");
    let bodies = drain(t, QueueName::Accounts).await;
    assert_eq!(bodies.len(), 1, "{bodies:?}");
    let good = bodies[0].clone();
    let mut orphan: Value = serde_json::from_str(&good).expect("an event");
    orphan["id"] = json!(uuid::Uuid::now_v7().to_string());
    orphan["userId"] = Value::Null;
    let poison = orphan.to_string();

    let sqs = t.ports.queues.get(QueueName::Accounts);
    sqs.send(vec![good.clone(), poison.clone()])
        .await
        .expect("sent");
    let mut received = Vec::new();
    while received.len() < 2 {
        let batch = sqs
            .receive(10, Duration::from_secs(2))
            .await
            .expect("received");
        assert!(!batch.is_empty(), "both messages arrive");
        received.extend(batch);
    }
    let records: Vec<(&str, &str, &str)> = received
        .iter()
        .map(|m| (m.id.as_str(), m.receipt.as_str(), m.body.as_str()))
        .collect();
    let answer = accounts
        .answer(&sqs_batch("paddock-accounts", &records))
        .await;
    assert_eq!(
        answer,
        json!({"batchItemFailures": []}),
        "{}",
        accounts.process.output()
    );
    assert_eq!(
        sqs.dead_letters(10).await.expect("dead letters"),
        vec![poison]
    );
    let left = paddock_core::identity::users::get_stored(&t.ports, &user)
        .await
        .expect("a read");
    assert!(left.is_none(), "the job ran to its end");
    let (entries, _) = feed::list(&t.ports, &user, 10, None)
        .await
        .expect("the feed");
    assert!(entries.is_empty(), "{entries:?}");
}
