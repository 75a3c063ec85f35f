//! The scenario on the local server under each kind of fault on the wire, and the upload limit
//! when answers are lost.

use super::*;

/// Runs the scenario on a fresh server and fresh tables, with `rules` set once the resources
/// exist; compares the end state with `baseline` when given.
pub(super) async fn run(
    name: &'static str,
    size: Size,
    rules: Vec<Rule>,
    baseline: Option<&BTreeMap<String, Value>>,
) -> (Run, BTreeMap<String, Value>) {
    run_on(Via::LocalServer, name, size, rules, baseline).await
}

/// What answers the scenario's requests.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(super) enum Via {
    /// The local server on the AWS adapters.
    LocalServer,
    /// The Lambda functions behind the local API, each a process of its own.
    Functions,
}

pub(super) async fn run_on(
    via: Via,
    name: &'static str,
    size: Size,
    rules: Vec<Rule>,
    baseline: Option<&BTreeMap<String, Value>>,
) -> (Run, BTreeMap<String, Value>) {
    let proxy = FaultProxy::in_front_of_emulators(SEED)
        .await
        .expect("the fault proxy");
    let app = match via {
        Via::LocalServer => {
            let sdk = proxy.sdk_config_through(&paddock_aws::sdk_config().await);
            let mut t = paddock_tests::aws_ports_through(sdk).await;
            // As in the template (180 s, past a function's timeout), a message stays hidden
            // longer than a hung call: with the tests' 2 s, a call hanging 4 s has its event
            // delivered again beside it, and each such delivery counts toward the dead-letter
            // queue. A failed event still comes back after its retry delay, not this.
            t.settings.visibility = Duration::from_secs(30);
            paddock_tests::spawn_with(t.settings, t.ports, t.dir).await
        }
        Via::Functions => {
            // The functions' DynamoDB, S3 and SQS calls go through the proxy; the local API's
            // own deliveries (stream, queues) go to the emulators.
            let url = proxy.url();
            paddock_tests::spawn_functions_with(&[
                ("AWS_ENDPOINT_URL_DYNAMODB", &url),
                ("AWS_ENDPOINT_URL_S3", &url),
                ("AWS_ENDPOINT_URL_SQS", &url),
            ])
            .await
        }
    };
    proxy.set_rules(rules);
    let client = Client::new(&app);
    let (drivers, track) = scenario(&client, size).await;
    // Read by a client of its own, so that the figures are the scenario's; the faults go on
    // while the background work settles.
    let reader = Client::new(&app);
    let mut state = settled(&reader, &app, &drivers, &track).await;
    state.extend(exports(&reader, &drivers).await);
    proxy.set_rules(Vec::new());
    let reads = reader.seen.into_inner().unwrap();
    assert!(
        reads.unexpected.is_empty(),
        "{name}: {:?}",
        reads.unexpected
    );
    assert_eq!(
        reads.internal, 0,
        "{name}: reads answered 500: {:?}",
        reads.internal_answers
    );
    let counts = proxy.counts();
    let differences = match baseline {
        Some(base) => base
            .keys()
            .chain(state.keys())
            .collect::<std::collections::BTreeSet<_>>()
            .into_iter()
            .filter(|k| base.get(*k) != state.get(*k))
            .map(|k| {
                format!(
                    "{k}: without faults {}, here {}",
                    base.get(k).unwrap_or(&Value::Null),
                    state.get(k).unwrap_or(&Value::Null)
                )
            })
            .collect(),
        None => Vec::new(),
    };
    let seen = client.seen.into_inner().unwrap();
    (
        Run {
            name,
            seen,
            proxy: counts,
            differences,
        },
        state,
    )
}

/// The fault kinds and their rates; the soak's rates are higher.
pub(super) fn fault_kinds(soak: bool) -> Vec<(&'static str, Vec<Rule>)> {
    let k = if soak { 2.0 } else { 1.0 };
    let mut kinds = vec![
        (
            if soak {
                "throttled 10%"
            } else {
                "throttled 5%"
            },
            vec![Rule::rate(Calls::All, 0.05 * k, Fault::Throttle)],
        ),
        (
            if soak {
                "internal errors 4%"
            } else {
                "internal errors 2%"
            },
            vec![Rule::rate(Calls::All, 0.02 * k, Fault::InternalError)],
        ),
        (
            if soak {
                "write answers lost 10%"
            } else {
                "write answers lost 1%"
            },
            vec![Rule::rate(
                Calls::Writes,
                if soak { 0.10 } else { 0.01 },
                Fault::LoseAnswer,
            )],
        ),
        (
            if soak {
                "connections reset 2%"
            } else {
                "connections reset 1%"
            },
            vec![Rule::rate(Calls::All, 0.01 * k, Fault::Reset)],
        ),
        (
            "writes lost past retries",
            // Four answers in a row lost: the SDK gives up, the request answers 503 although
            // its write happened, and the client sends it again.
            [25, 90, 160, 230, 300]
                .into_iter()
                .map(|from| Rule::run(Calls::Writes, from, 4, Fault::LoseAnswer))
                .collect(),
        ),
        (
            "calls hang past retries",
            vec![
                Rule::run(Calls::Writes, 40, 4, Fault::Delay(Duration::from_secs(4))),
                Rule::run(Calls::All, 400, 4, Fault::Delay(Duration::from_secs(4))),
            ],
        ),
        (
            "all of them at once",
            vec![
                Rule::rate(Calls::Writes, 0.01 * k, Fault::LoseAnswer),
                Rule::rate(Calls::All, 0.05 * k, Fault::Throttle),
                Rule::rate(Calls::All, 0.02 * k, Fault::InternalError),
                Rule::rate(Calls::All, 0.01 * k, Fault::Reset),
            ],
        ),
    ];
    if soak {
        kinds.push((
            "two calls hang 4 s",
            vec![
                Rule::nth(Calls::Writes, 20, Fault::Delay(Duration::from_secs(4))),
                Rule::nth(Calls::All, 150, Fault::Delay(Duration::from_secs(4))),
            ],
        ));
    }
    kinds
}

#[tokio::test(flavor = "multi_thread")]
pub(super) async fn faults_on_the_wire_lose_and_duplicate_nothing() {
    require_emulators();
    paddock_tests::tls_provider();
    let soak = std::env::var_os("PADDOCK_FAULT_SOAK").is_some();
    let size = if soak { SOAK } else { SHORT };
    let (none, baseline) = run("no faults", size, Vec::new(), None).await;
    none.print();
    let mut runs = vec![none];
    // `PADDOCK_FAULT_ONLY` names the one fault kind to run (after the run without faults).
    let only = std::env::var("PADDOCK_FAULT_ONLY").ok();
    // The kinds run side by side, each on its own proxy, server and tables: a run mostly
    // waits (retry delays, hung calls, the background work settling), so one after another
    // they took 9 times a run's time.
    let kinds = fault_kinds(soak)
        .into_iter()
        .filter(|(name, _)| only.as_deref().is_none_or(|o| o == *name))
        .map(|(name, rules)| run(name, size, rules, Some(&baseline)));
    for (r, _) in futures::future::join_all(kinds).await {
        r.print();
        runs.push(r);
    }
    for r in &runs {
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
    // Faults were handed out where they were asked for.
    for r in &runs[1..] {
        assert!(
            r.proxy.faults_total() > 0,
            "{}: no fault handed out",
            r.name
        );
    }
}

/// The upload limit counts an upload once however its writes are answered: a third of the
/// limit log's write answers are lost (the SDK sends the write again and finds the log
/// changed), and the client sends five uploads twice. Exactly 30 are admitted.
#[tokio::test(flavor = "multi_thread")]
pub(super) async fn the_upload_limit_counts_each_upload_once_when_answers_are_lost() {
    require_emulators();
    paddock_tests::tls_provider();
    let proxy = FaultProxy::in_front_of_emulators(SEED)
        .await
        .expect("the fault proxy");
    let sdk = proxy.sdk_config_through(&paddock_aws::sdk_config().await);
    let (app, _clock) = spawn_aws_through(sdk).await;
    proxy.set_rules(vec![Rule::rate(
        Calls::WritesContaining("RL#upload#".into()),
        0.3,
        Fault::LoseAnswer,
    )]);
    let client = Client::new(&app);
    let driver = sign_in(&client, "Uploader").await.expect("signed in");
    for n in 0..UPLOADS_PER_MINUTE {
        let id = upload(&client, &driver, &format!("u-{n}"), 100_000 + n as i64).await;
        assert!(
            id.is_some(),
            "upload {n}: {:?}",
            client.seen.lock().unwrap().unexpected
        );
        if n % 6 == 0 {
            let again = upload(&client, &driver, &format!("u-{n}"), 100_000 + n as i64).await;
            assert_eq!(again, id, "the same session");
        }
    }
    let over = session_body("u-over", "2026-11-01T10:00:00Z", &[(99_000, true, 0.9)], 0);
    let (status, body) = client
        .post("upload", "/v1/sessions", Some(&driver.token), &over)
        .await;
    assert_eq!(status, 429, "{body}");
    let lost = proxy
        .counts()
        .faults
        .get("lose_answer")
        .copied()
        .unwrap_or(0);
    println!("limit log writes whose answer was lost: {lost}");
    assert!(lost >= 5, "answers were lost ({lost})");
    assert_eq!(client.seen.lock().unwrap().internal, 0);
}
