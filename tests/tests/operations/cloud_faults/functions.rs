//! Through the Lambda functions behind the local API: the scenario under faults, a function or
//! a consumer ended after its write, lost S3 and SQS answers, each call's attempt timeout and
//! a batch's partial failures.

use super::*;

/// The scenario through the Lambda functions (each route's binary behind the local API, the
/// consumers fed by the local API's stream and queues), without faults and with every fault
/// kind at once: the same end state, no 500.
#[tokio::test(flavor = "multi_thread")]
pub(super) async fn faults_through_the_functions_lose_and_duplicate_nothing() {
    require_emulators();
    paddock_tests::tls_provider();
    let size = Size {
        drivers: 1,
        sessions: 2,
        posts: 1,
    };
    let (none, baseline) = run_on(
        Via::Functions,
        "functions, no faults",
        size,
        Vec::new(),
        None,
    )
    .await;
    none.print();
    let all = fault_kinds(false)
        .into_iter()
        .find(|(name, _)| *name == "all of them at once")
        .map(|(_, rules)| rules)
        .unwrap_or_default();
    let (faulty, _) = run_on(
        Via::Functions,
        "functions, all at once",
        size,
        all,
        Some(&baseline),
    )
    .await;
    faulty.print();
    for r in [&none, &faulty] {
        assert_eq!(
            r.seen.internal, 0,
            "{}: no 500: {:?}",
            r.name, r.seen.internal_answers
        );
        assert!(
            r.seen.unexpected.is_empty(),
            "{}: {:?}",
            r.name,
            r.seen.unexpected
        );
        assert!(r.differences.is_empty(), "{}: {:?}", r.name, r.differences);
    }
    assert!(faulty.proxy.faults_total() > 0, "faults were handed out");
}

/// The process ids of the function instances running `binary` for `app` alone: children of
/// the test process (every test of this file runs in it, each with function sets of its
/// own) started with `app`'s table prefix.
pub(super) fn children_running(app: &TestApp, binary: &str) -> Vec<u32> {
    let me = std::process::id();
    // The kernel keeps 15 bytes of a process's name.
    let name: String = binary.chars().take(15).collect();
    let prefix = format!("Store__TablePrefix={}", app.settings.table_prefix);
    let Ok(entries) = std::fs::read_dir("/proc") else {
        return Vec::new();
    };
    entries
        .filter_map(|e| e.ok()?.file_name().to_str()?.parse::<u32>().ok())
        .filter(|pid| {
            let stat = std::fs::read_to_string(format!("/proc/{pid}/stat")).unwrap_or_default();
            // `pid (comm) state ppid ...`
            let Some((comm, rest)) = stat.split_once(" (").and_then(|(_, r)| r.rsplit_once(") "))
            else {
                return false;
            };
            let ppid = rest.split(' ').nth(1).and_then(|p| p.parse::<u32>().ok());
            if comm != name || ppid != Some(me) {
                return false;
            }
            // Another test's instance of the same function is not this test's to end.
            let environ = std::fs::read(format!("/proc/{pid}/environ")).unwrap_or_default();
            environ
                .split(|b| *b == 0)
                .any(|var| var == prefix.as_bytes())
        })
        .collect()
}

/// The achievements consumer is ended (SIGKILL, as Lambda ends a timed-out or out-of-memory
/// instance) after its first write and before its answer; the event comes back after the
/// visibility timeout and its redelivery finishes the work once: the session counted once,
/// the first-session achievement unlocked once.
#[tokio::test(flavor = "multi_thread")]
pub(super) async fn a_consumer_ended_after_its_first_write_finishes_once_on_redelivery() {
    require_emulators();
    paddock_tests::tls_provider();
    let proxy = FaultProxy::in_front_of_emulators(SEED)
        .await
        .expect("the fault proxy");
    let url = proxy.url();
    let app = paddock_tests::spawn_functions_with(&[
        ("AWS_ENDPOINT_URL_DYNAMODB", &url),
        ("AWS_ENDPOINT_URL_S3", &url),
        ("AWS_ENDPOINT_URL_SQS", &url),
    ])
    .await;
    let client = Client::new(&app);
    let driver = sign_in(&client, "Ended").await.expect("signed in");
    proxy.set_rules(vec![Rule::nth(
        Calls::WritesContaining("ACH#".into()),
        1,
        Fault::Stall,
    )]);
    let started = Instant::now();
    upload(&client, &driver, "ended-1", 101_000)
        .await
        .expect("uploaded");
    // Wait for the consumer's first write to be applied and held.
    while proxy.counts().faults.get("stall").copied().unwrap_or(0) == 0 {
        assert!(
            started.elapsed() < Duration::from_secs(60),
            "the consumer never wrote"
        );
        tokio::time::sleep(Duration::from_millis(100)).await;
    }
    proxy.set_rules(Vec::new());
    let instances = children_running(&app, "paddock-achievements");
    assert_eq!(
        instances.len(),
        1,
        "one achievements instance: {instances:?}"
    );
    let killed = std::process::Command::new("kill")
        .args(["-KILL", &instances[0].to_string()])
        .status()
        .expect("kill");
    assert!(killed.success());
    let ended = started.elapsed();
    // Redelivered once the invocation has timed out and the message is visible again.
    let counted = |mine: &Value| -> (Option<i64>, bool) {
        let items = mine["data"]["items"]
            .as_array()
            .cloned()
            .unwrap_or_default();
        let sessions = items
            .iter()
            .find(|a| a["id"] == "sessions-100")
            .and_then(|a| a["progress"]["current"].as_i64());
        let first = items
            .iter()
            .any(|a| a["id"] == "first-session" && a["unlockedAt"].is_string());
        (sessions, first)
    };
    // The event comes back to a new instance once the ended invocation has timed out (the
    // function's 30 s) and the message is visible again.
    let victim = instances[0];
    while !children_running(&app, "paddock-achievements")
        .iter()
        .any(|pid| *pid != victim)
    {
        assert!(
            started.elapsed() < Duration::from_secs(120),
            "the event was not delivered again"
        );
        tokio::time::sleep(Duration::from_millis(200)).await;
    }
    let redelivered = started.elapsed();
    let mut last = (None, false);
    while started.elapsed() < Duration::from_secs(150) {
        let (_, mine) = client.get("read", "/v1/achievements", &driver.token).await;
        last = counted(&mine);
        if last.1 {
            break;
        }
        tokio::time::sleep(Duration::from_millis(500)).await;
    }
    let recovered = started.elapsed();
    // Nothing more comes later.
    tokio::time::sleep(Duration::from_secs(4)).await;
    let (_, mine) = client.get("read", "/v1/achievements", &driver.token).await;
    let settled = counted(&mine);
    let (_, feed) = client
        .get("read", "/v1/feed?limit=100", &driver.token)
        .await;
    let unlocked_entries = feed["data"]["items"].as_array().map_or(0, |f| {
        f.iter().filter(|e| e["kind"] == "achievement").count()
    });
    println!(
        "consumer ended {ended:.1?} after the upload, its event delivered again to a new \
         instance {redelivered:.1?} after it, state read {recovered:.1?} after it; sessions \
         counted {:?}, first session unlocked {}, achievement feed entries {unlocked_entries}",
        settled.0, settled.1
    );
    assert_eq!(last, settled, "nothing changed after the redelivery");
    assert_eq!(settled, (Some(1), true), "counted once and unlocked");
}

/// Waits until the proxy has held a write (the `Stall` fault), then ends `app`'s instances of
/// `binary` as Lambda ends one that timed out or ran out of memory; answers a process id.
pub(super) async fn end_instance_after_its_write(
    app: &TestApp,
    proxy: &FaultProxy,
    binary: &str,
) -> u32 {
    let started = Instant::now();
    while proxy.counts().faults.get("stall").copied().unwrap_or(0) == 0 {
        assert!(
            started.elapsed() < Duration::from_secs(60),
            "{binary} never wrote"
        );
        tokio::time::sleep(Duration::from_millis(100)).await;
    }
    proxy.set_rules(Vec::new());
    // Every instance of the function (one holds the write; the local API may have started
    // another meanwhile), as a deployment replaces them all.
    let instances = children_running(app, binary);
    assert!(!instances.is_empty(), "a {binary} instance runs");
    for pid in &instances {
        let killed = std::process::Command::new("kill")
            .args(["-KILL", &pid.to_string()])
            .status()
            .expect("kill");
        assert!(killed.success());
    }
    instances[0]
}

/// An HTTP function ended after its write and before its answer (the client gets the
/// gateway's error) is sent the request again under the same `Idempotency-Key`: one post and
/// one pack, each answered as the first request made it.
#[tokio::test(flavor = "multi_thread")]
pub(super) async fn a_request_whose_function_ended_after_its_write_is_applied_once_when_sent_again()
{
    require_emulators();
    paddock_tests::tls_provider();
    let proxy = FaultProxy::in_front_of_emulators(SEED)
        .await
        .expect("the fault proxy");
    let url = proxy.url();
    let app = paddock_tests::spawn_functions_with(&[
        ("AWS_ENDPOINT_URL_DYNAMODB", &url),
        ("AWS_ENDPOINT_URL_S3", &url),
        ("AWS_ENDPOINT_URL_SQS", &url),
    ])
    .await;
    let client = Client::new(&app);
    let driver = sign_in(&client, "Ended").await.expect("signed in");

    // The post's entry is written and held; the activity function is ended.
    proxy.set_rules(vec![Rule::nth(
        Calls::WritesContaining("FEED#".into()),
        1,
        Fault::Stall,
    )]);
    let body = json!({"title": "Written, never answered"});
    let started = Instant::now();
    let (post, ended) = tokio::join!(
        client.post_keyed("feed post", "/v1/feed", &driver.token, "ended-post", &body),
        end_instance_after_its_write(&app, &proxy, "paddock-activity"),
    );
    println!(
        "feed post: instance {ended} ended after its write; answered {} after {:.1?}",
        post.0,
        started.elapsed()
    );
    assert_eq!(post.0, 201, "{}", post.1);
    let (status, again) = client
        .post_keyed("feed post", "/v1/feed", &driver.token, "ended-post", &body)
        .await;
    assert_eq!(status, 201, "{again}");
    assert_eq!(again["data"], post.1["data"]);
    let (_, feed) = client
        .get("read", "/v1/feed?limit=100", &driver.token)
        .await;
    let posts = feed["data"]["items"]
        .as_array()
        .map_or(0, |f| f.iter().filter(|e| e["kind"] == "post").count());
    assert_eq!(posts, 1, "{feed}");

    // The pack is published (its listing row written) and held; the function is ended.
    proxy.reset_counts();
    proxy.set_rules(vec![Rule::nth(
        Calls::WritesContaining("OWNER#".into()),
        1,
        Fault::Stall,
    )]);
    let started = Instant::now();
    let (pack, ended) = tokio::join!(
        client.pack_keyed(&driver.token, "ended-pack", "ended", a_pack(7)),
        end_instance_after_its_write(&app, &proxy, "paddock-sharepacks"),
    );
    println!(
        "share pack: instance {ended} ended after its publication; answered {} after {:.1?}",
        pack.0,
        started.elapsed()
    );
    assert_eq!(pack.0, 201, "{}", pack.1);
    let (_, mine) = client
        .get("read", "/v1/sharepacks?limit=100", &driver.token)
        .await;
    let held = mine["data"]["items"]
        .as_array()
        .cloned()
        .unwrap_or_default();
    assert_eq!(held.len(), 1, "{mine}");
    assert_eq!(held[0]["id"], pack.1["data"]["id"]);
    let seen = client.seen.lock().unwrap();
    println!(
        "requests {}, 2xx {}, retried to success {}, gateway 500s (the ended instances) {}",
        seen.requests, seen.ok, seen.retried_ok, seen.internal
    );
    assert!(seen.unexpected.is_empty(), "{:?}", seen.unexpected);
}

/// S3's and SQS's answers lost once (the SDK sends the call again) and past the SDK's retries
/// (the request answers 503 and is sent again; the relay's batch fails and is delivered
/// again): one pack object, and each upload's event applied once by every consumer.
#[tokio::test(flavor = "multi_thread")]
pub(super) async fn s3_and_sqs_answers_lost_change_nothing_twice() {
    require_emulators();
    paddock_tests::tls_provider();
    let proxy = FaultProxy::in_front_of_emulators(SEED)
        .await
        .expect("the fault proxy");
    let sdk = proxy.sdk_config_through(&paddock_aws::sdk_config().await);
    let (app, _clock) = spawn_aws_through(sdk).await;
    let client = Client::new(&app);
    let driver = sign_in(&client, "Lost").await.expect("signed in");
    let mut figures = Vec::new();
    for (n, lost) in [1u64, 4].into_iter().enumerate() {
        proxy.reset_counts();
        proxy.set_rules(vec![Rule::run(
            Calls::Operations(vec!["S3 PUT".into()]),
            1,
            lost,
            Fault::LoseAnswer,
        )]);
        let name = format!("lost-{lost}");
        let (status, body) = client
            .pack_keyed(&driver.token, &name, &name, a_pack(100 + lost))
            .await;
        proxy.set_rules(Vec::new());
        assert_eq!(status, 201, "{body}");
        let faults = proxy.counts().faults_total();
        assert_eq!(faults, lost, "the pack's S3 answers were lost");
        figures.push(format!(
            "S3 PUT answers lost {lost} in a row: faults {faults}, pack answered {status}"
        ));
        let (_, mine) = client
            .get("read", "/v1/sharepacks?limit=100", &driver.token)
            .await;
        assert_eq!(
            mine["data"]["items"].as_array().map_or(0, Vec::len),
            n + 1,
            "{mine}"
        );

        proxy.reset_counts();
        proxy.set_rules(vec![Rule::run(
            Calls::Operations(vec!["SendMessage".into(), "SendMessageBatch".into()]),
            1,
            lost,
            Fault::LoseAnswer,
        )]);
        upload(
            &client,
            &driver,
            &format!("sqs-{lost}"),
            100_000 + lost as i64,
        )
        .await
        .expect("uploaded");
        // Every consumer has had the event (the session's feed entry is the last to appear
        // of a consumer's work) and nothing comes twice.
        let started = Instant::now();
        let feed_entries = loop {
            let (_, feed) = client
                .get("read", "/v1/feed?limit=100", &driver.token)
                .await;
            let sessions = feed["data"]["items"]
                .as_array()
                .map_or(0, |f| f.iter().filter(|e| e["kind"] == "session").count());
            if sessions > n || started.elapsed() > Duration::from_secs(60) {
                break sessions;
            }
            tokio::time::sleep(Duration::from_millis(300)).await;
        };
        tokio::time::sleep(Duration::from_secs(3)).await;
        proxy.set_rules(Vec::new());
        let faults = proxy.counts().faults_total();
        assert_eq!(faults, lost, "the event's SQS answers were lost");
        figures.push(format!(
            "SendMessage answers lost {lost} in a row: faults {faults}, feed entries {feed_entries}"
        ));
        let (_, feed) = client
            .get("read", "/v1/feed?limit=100", &driver.token)
            .await;
        let sessions = feed["data"]["items"]
            .as_array()
            .map_or(0, |f| f.iter().filter(|e| e["kind"] == "session").count());
        assert_eq!(sessions, n + 1, "one entry per upload: {feed}");
        assert_eq!(feed_entries, sessions);
        let (_, mine) = client.get("read", "/v1/achievements", &driver.token).await;
        let counted = mine["data"]["items"]
            .as_array()
            .and_then(|a| a.iter().find(|a| a["id"] == "sessions-100"))
            .and_then(|a| a["progress"]["current"].as_i64());
        assert_eq!(counted, Some(n as i64 + 1), "sessions counted once each");
    }
    let objects = app.ports.blobs.list("packs/").await.expect("listed");
    for f in &figures {
        println!("{f}");
    }
    assert_eq!(objects.len(), 2, "one object per pack: {objects:?}");
    assert_eq!(client.seen.lock().unwrap().internal, 0, "no 500");
}

/// Each kind of DynamoDB call has its own attempt timeout: a read held 2.5 s is given up at
/// its 2 s and sent again, while a single write held as long (3 s) and a transaction held
/// 3.5 s (4 s) are waited for. Counted in calls the proxy received, not timed.
#[tokio::test(flavor = "multi_thread")]
pub(super) async fn each_kind_of_call_waits_its_own_attempt_timeout() {
    require_emulators();
    paddock_tests::tls_provider();
    let proxy = FaultProxy::in_front_of_emulators(SEED)
        .await
        .expect("the fault proxy");
    let sdk = proxy.sdk_config_through(&paddock_aws::sdk_config().await);
    let (app, _clock) = spawn_aws_through(sdk).await;
    let client = Client::new(&app);
    let driver = sign_in(&client, "Timed").await.expect("signed in");
    let calls_of = |operation: &str| {
        proxy
            .counts()
            .operations
            .get(operation)
            .copied()
            .unwrap_or(0)
    };
    let mut n = 0;
    // A keyed feed post claims its key (`PutItem`) and writes its entry in a transaction.
    let mut post = async |held: Option<(&str, Duration)>| {
        n += 1;
        proxy.reset_counts();
        if let Some((operation, delay)) = held {
            let calls = Calls::Operations(vec![operation.to_owned()]);
            proxy.set_rules(vec![Rule::nth(calls, 1, Fault::Delay(delay))]);
        }
        let body = json!({"title": format!("post {n}")});
        let key = format!("timed-{n}");
        let (status, answer) = client
            .post_keyed("feed post", "/v1/feed", &driver.token, &key, &body)
            .await;
        proxy.set_rules(Vec::new());
        assert_eq!(status, 201, "{answer}");
        (calls_of("PutItem"), calls_of("TransactWriteItems"))
    };
    let (puts, transactions) = post(None).await;
    let held_put = post(Some(("PutItem", Duration::from_millis(2_500)))).await;
    let held_transaction = post(Some(("TransactWriteItems", Duration::from_millis(3_500)))).await;

    let read = async |held: Option<Duration>| {
        proxy.reset_counts();
        if let Some(delay) = held {
            let calls = Calls::Operations(vec!["GetItem".to_owned()]);
            proxy.set_rules(vec![Rule::nth(calls, 1, Fault::Delay(delay))]);
        }
        let (status, answer) = client.get("read", "/v1/profile", &driver.token).await;
        proxy.set_rules(Vec::new());
        assert_eq!(status, 200, "{answer}");
        calls_of("GetItem")
    };
    let gets = read(None).await;
    let held_get = read(Some(Duration::from_millis(2_500))).await;
    println!(
        "calls without a hold: PutItem {puts}, TransactWriteItems {transactions}, GetItem {gets}; \
         PutItem held 2.5 s: {held_put:?}; TransactWriteItems held 3.5 s: {held_transaction:?}; \
         GetItem held 2.5 s: {held_get}"
    );
    assert_eq!(held_put, (puts, transactions), "the write was waited for");
    assert_eq!(
        held_transaction,
        (puts, transactions),
        "the transaction was waited for"
    );
    assert!(
        held_get > gets,
        "the read was sent again ({held_get} > {gets})"
    );
}

/// One SQS batch of `events` as Lambda hands it to a consumer, each record named by its id.
pub(super) fn sqs_batch(
    events: &[(&str, &paddock_core::events::Event)],
) -> paddock_runtime::lambda::WorkerInvocation {
    let records: Vec<Value> = events
        .iter()
        .map(|(id, e)| {
            json!({"messageId": id, "receiptHandle": format!("r-{id}"),
                "body": serde_json::to_string(e).expect("an event serialises"),
                "attributes": {"ApproximateReceiveCount": "1"}})
        })
        .collect();
    serde_json::from_value(json!({"Records": records})).expect("an SQS batch")
}

/// A consumer's batch of three events on the AWS adapters, one driver's writes failing past
/// the SDK's retries and some of the other writes' answers lost: the consumer reports that one
/// record alone in `batchItemFailures`; the whole batch delivered again (as SQS does when an
/// invocation fails) finishes it, and each event is applied once.
#[tokio::test(flavor = "multi_thread")]
pub(super) async fn a_consumer_reports_only_the_record_that_failed_and_finishes_it_once() {
    use paddock_core::activity::achievements;
    use paddock_core::events::{Event, EventKind, SessionUploaded};
    use paddock_core::ids::UserId;
    use paddock_core::ports::Clock;
    use paddock_core::queues::QueueName;

    require_emulators();
    let proxy = FaultProxy::in_front_of_emulators(SEED)
        .await
        .expect("the fault proxy");
    let t = paddock_tests::aws_ports_through(
        proxy.sdk_config_through(&paddock_aws::sdk_config().await),
    )
    .await;
    // Three drivers: one fine, one failing, one fine again.
    let users = [UserId::new(), UserId::new(), UserId::new()];
    let events: Vec<Event> = users
        .iter()
        .map(|user| {
            Event::new(
                EventKind::SessionUploaded(SessionUploaded {
                    session_id: "0190a0b2-0000-7000-8000-000000000001".parse().unwrap(),
                    track_id: "7a2c0000-0000-8000-8000-000000000001".parse().unwrap(),
                    game_id: "acc".into(),
                    track_name: "Monza".into(),
                    track_layout: String::new(),
                    vehicle_name: "Ferrari 296 GT3".into(),
                    recorded_at: "2026-11-01T10:00:00Z".into(),
                    session_phase: "Race".into(),
                    best_lap_ms: 107_250,
                    lap_count: 12,
                    job_id: None,
                    valid_lap_count: 12,
                    driving_ms: 1_300_000,
                    valid_lap_spread_ms: Some(400),
                }),
                Some(user.clone()),
                t.clock.now(),
            )
        })
        .collect();
    let batch = sqs_batch(&[("m1", &events[0]), ("m2", &events[1]), ("m3", &events[2])]);
    let processor = paddock_core::workers::processor(QueueName::Achievements);
    // The records are handled at once, in an order that varies (with the machine's load), so
    // each fault is aimed at one driver's writes: the first driver's first write loses its
    // answer, and the third driver's first two in a row (still within the SDK's retries).
    proxy.set_rules(vec![
        Rule::rate(
            Calls::WritesContaining(format!("ACH#{}", users[1])),
            1.0,
            Fault::InternalError,
        ),
        Rule::nth(
            Calls::WritesContaining(format!("ACH#{}", users[0])),
            1,
            Fault::LoseAnswer,
        ),
        Rule::run(
            Calls::WritesContaining(format!("ACH#{}", users[2])),
            1,
            2,
            Fault::LoseAnswer,
        ),
    ]);
    let first = paddock_runtime::lambda::handle_worker_event(
        QueueName::Achievements,
        batch.clone(),
        &t.ports,
        &processor,
    )
    .await;
    proxy.set_rules(Vec::new());
    let faults = proxy.counts().faults;
    assert_eq!(
        serde_json::to_value(&first).expect("JSON"),
        json!({"batchItemFailures": [{"itemIdentifier": "m2"}]}),
        "faults {faults:?}"
    );
    let again = paddock_runtime::lambda::handle_worker_event(
        QueueName::Achievements,
        batch,
        &t.ports,
        &processor,
    )
    .await;
    assert_eq!(
        serde_json::to_value(&again).expect("JSON"),
        json!({"batchItemFailures": []})
    );
    for user in &users {
        let mine = achievements::for_driver(&t.ports, user)
            .await
            .expect("achievements");
        let mine = serde_json::to_value(mine).expect("JSON");
        let sessions = mine
            .as_array()
            .and_then(|a| a.iter().find(|a| a["id"] == "sessions-100"))
            .map(|a| a["progress"]["current"].clone());
        assert_eq!(sessions, Some(json!(1)), "{user}: counted once");
    }
    println!("first delivery's faults: {faults:?}");
    assert!(
        faults.get("lose_answer").copied().unwrap_or(0) > 0,
        "{faults:?}"
    );
}
