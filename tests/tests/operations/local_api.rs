//! The local API (`paddock-api-local`, `tests/src/local_api`) as a client sees it: every route
//! of `template.yaml`'s HTTP API is answered by its function, unrouted requests by the
//! `$default` route's function, and a queue message its consumer keeps failing reaches the
//! dead-letter queue after the redrive policy's `maxReceiveCount`.
//!
//! The black-box scenarios run through it as well: `on_both_backends!` runs each `plain`
//! scenario in a module `functions`.

use paddock_core::queues::QueueName;
use paddock_tests::local_api::routes::RouteTable;
use paddock_tests::local_api::template::Template;
use paddock_tests::{require_emulators, spawn_functions};
use serde_json::Value;
use std::time::{Duration, Instant};

/// A request path that route `path` matches: each variable filled in.
fn concrete(path: &str) -> String {
    path.split('/')
        .map(|segment| match segment.strip_prefix('{') {
            Some(v) if v.ends_with("+}") => "probe/deeper".to_owned(),
            Some(_) => "probe".to_owned(),
            None => segment.to_owned(),
        })
        .collect::<Vec<_>>()
        .join("/")
}

/// Every route of the template gets an answer of the service (its envelope, its request id)
/// from the function the route names; a route whose function is missing or does not answer
/// gets API Gateway's own `{"message": ...}` and fails here.
#[tokio::test(flavor = "multi_thread")]
async fn every_template_route_is_answered_by_its_function() {
    require_emulators();
    let template = Template::read(&paddock_tests::binaries::workspace_root().join("template.yaml"))
        .expect("the template");
    let mut table = RouteTable::default();
    let mut routes = Vec::new();
    for function in &template.functions {
        for (method, path) in &function.routes {
            table.add(method, path, &function.binary).unwrap();
            routes.push((method.clone(), path.clone(), function.binary.clone()));
        }
    }
    assert!(routes.len() > 20, "the template's routes: {routes:?}");
    let app = spawn_functions().await;
    for (method, path, function) in &routes {
        let (method, request_path) = if path == "$default" {
            ("POST".to_owned(), "/no/such/route".to_owned())
        } else if method == "ANY" {
            ("GET".to_owned(), concrete(path))
        } else {
            (method.clone(), concrete(path))
        };
        let selected = table.select(&method, &request_path).expect("a route");
        assert_eq!(&selected.function, function, "{method} {request_path}");
        let response = app
            .client
            .request(
                method.parse().unwrap(),
                format!("{}{request_path}", app.address),
            )
            .send()
            .await
            .expect("an answer");
        let status = response.status();
        assert!(
            response.headers().contains_key("apigw-requestid"),
            "{method} {request_path}: not through the gateway"
        );
        assert!(
            response.headers().contains_key("x-request-id"),
            "{method} {request_path} ({function}) was not answered by the function: {status} {}",
            response.text().await.unwrap_or_default()
        );
        let body = response.bytes().await.unwrap();
        if let Ok(json) = serde_json::from_slice::<Value>(&body) {
            assert!(
                json.get("message").is_none() || json.get("success").is_some(),
                "{method} {request_path}: API Gateway's own answer {json}"
            );
        }
    }
    // Unrouted paths reach the `$default` route's function: the service's 404 envelope.
    let (status, body) = paddock_tests::envelope(app.get("/v1/nowhere").await).await;
    assert_eq!(status, 404, "{body}");
}

/// The metrics through the health function are the functions' metric lines as CloudWatch
/// holds them: the local API delivers each function's embedded-metric lines to moto's
/// CloudWatch, and `GET /metrics` reads them back, so after one sign-in (by the auth
/// function) and one upload (by the sessions function) it counts both, in Prometheus text.
/// Only a scrape with the metrics token of the app secret is answered.
#[tokio::test(flavor = "multi_thread")]
async fn metrics_through_the_health_function_count_what_the_other_functions_did() {
    require_emulators();
    let app = paddock_tests::spawn_functions_with(&[("Metrics__CacheSeconds", "1")]).await;
    for refused in [
        app.get("/metrics").await,
        app.get_auth("/metrics", "not-the-metrics-token").await,
    ] {
        assert_eq!(
            refused.headers()["www-authenticate"],
            "Bearer realm=\"metrics\""
        );
        let (status, body) = paddock_tests::envelope(refused).await;
        assert_eq!(status, 401, "{body}");
    }
    let before = app.scrape_metrics().await;
    assert_eq!(before.status(), 200);
    assert_eq!(
        before.headers()["content-type"],
        "text/plain; version=0.0.4; charset=utf-8"
    );
    let before = before.text().await.unwrap();
    assert!(
        before.contains(
            "# TYPE paddock_outbox_relayed_total counter\npaddock_outbox_relayed_total 0\n"
        ),
        "{before}"
    );
    assert!(!before.contains("paddock_sign_ins_total{"), "{before}");

    let email = format!("{}@example.com", paddock_tests::unique("metrics"));
    let registered = app.register(&email, "correct horse battery").await;
    let login = serde_json::json!({"email": email, "password": "correct horse battery"});
    let (status, body) =
        paddock_tests::envelope(app.post_json("/v1/auth/login/email", &login).await).await;
    assert_eq!(status, 200, "{body}");
    let token = registered["accessToken"].as_str().expect("a token");
    let session = paddock_tests::session_body(
        "metrics-upload-1",
        "2026-11-20T18:30:00Z",
        &[(92_000, true, 0.95)],
        0,
    );
    let (status, body) =
        paddock_tests::envelope(app.post_json_auth("/v1/sessions", &session, token).await).await;
    assert_eq!(status, 201, "{body}");

    let wanted = [
        "# HELP paddock_sign_ins_total Sign-ins, by method (email or provider) and result (ok, failed, limited or error).\n# TYPE paddock_sign_ins_total counter\n",
        "paddock_sign_ins_total{method=\"email\",result=\"ok\"} 1\n",
        "# TYPE paddock_sessions_uploaded_total counter\n",
        "paddock_sessions_uploaded_total{result=\"created\"} 1\n",
    ];
    let deadline = Instant::now() + Duration::from_secs(30);
    let text = loop {
        let response = app.scrape_metrics().await;
        assert_eq!(response.status(), 200);
        let text = response.text().await.unwrap();
        if wanted.iter().all(|w| text.contains(w)) {
            break text;
        }
        assert!(
            Instant::now() < deadline,
            "the counts did not arrive: {text}"
        );
        tokio::time::sleep(Duration::from_millis(250)).await;
    };
    // The whole text, for the docs' sample.
    eprintln!("GET /metrics through the local API:\n{text}");
}

/// A message its consumer reports failed on every delivery comes back after the visibility
/// timeout and, after `maxReceiveCount` receives (5 in the template), is in the dead-letter
/// queue and no longer in the queue.
#[tokio::test(flavor = "multi_thread")]
async fn a_message_that_keeps_failing_is_redriven_to_the_dead_letter_queue() {
    require_emulators();
    let app = spawn_functions().await;
    let urls = &app.settings.queue_urls[&QueueName::Feed];
    let (url, dlq) = (
        urls.url.clone().unwrap(),
        urls.dead_letter_url.clone().unwrap(),
    );
    let sqs = aws_sdk_sqs::Client::new(&paddock_aws::sdk_config().await);
    let sample: Value = serde_json::from_str(
        &std::fs::read_to_string(
            paddock_tests::binaries::workspace_root()
                .join("infra/events/sqs-session-uploaded.json"),
        )
        .unwrap(),
    )
    .unwrap();
    let mut event: Value =
        serde_json::from_str(sample["Records"][0]["body"].as_str().unwrap()).unwrap();
    event["id"] = uuid::Uuid::now_v7().to_string().into();
    // The entry's partition key would pass DynamoDB's 2,048 bytes: every write fails, and
    // the feed consumer reports the record for another delivery.
    event["userId"] = "d".repeat(3000).into();
    sqs.send_message()
        .queue_url(&url)
        .message_body(event.to_string())
        .send()
        .await
        .unwrap();
    let deadline = Instant::now() + Duration::from_secs(90);
    loop {
        let parked = sqs
            .receive_message()
            .queue_url(&dlq)
            .wait_time_seconds(1)
            .send()
            .await
            .unwrap();
        if let Some(m) = parked.messages().first() {
            let parked: Value = serde_json::from_str(m.body().unwrap()).unwrap();
            assert_eq!(parked["id"], event["id"]);
            break;
        }
        assert!(
            Instant::now() < deadline,
            "the failing message did not reach the dead-letter queue"
        );
    }
    let left = sqs
        .get_queue_attributes()
        .queue_url(&url)
        .attribute_names(aws_sdk_sqs::types::QueueAttributeName::ApproximateNumberOfMessages)
        .attribute_names(
            aws_sdk_sqs::types::QueueAttributeName::ApproximateNumberOfMessagesNotVisible,
        )
        .send()
        .await
        .unwrap();
    let count = |name| {
        left.attributes()
            .and_then(|a| a.get(&name))
            .map_or("0".to_owned(), Clone::clone)
    };
    assert_eq!(
        count(aws_sdk_sqs::types::QueueAttributeName::ApproximateNumberOfMessages),
        "0"
    );
}

/// The functions' policies with the sessions function's `PutItem` on its own table taken away,
/// enforced or only reported, and kept apart from the test command's record of calls (which
/// must hold no refusal).
fn policies_without_sessions_puts(enforce: bool) -> paddock_tests::local_api::Iam {
    let mut iam = paddock_tests::local_api::Iam::from_env().expect("the functions' policies");
    iam.enforce = enforce;
    iam.seen = paddock_tests::local_api::iam::Seen::new(None);
    let sessions = iam
        .policies
        .functions
        .get_mut("paddock-sessions")
        .expect("the sessions function's policy");
    for statement in &mut sessions.statements {
        if statement
            .resources
            .iter()
            .any(|r| r == "${SessionsTable.Arn}")
        {
            statement.actions.retain(|a| a != "dynamodb:PutItem");
        }
    }
    iam
}

/// Each function runs under its own policy from the transformed template: with one grant taken
/// away, the call that needed it gets DynamoDB's own `AccessDenied`, the request fails without
/// writing anything, and the refusal names the function, the action and the table; the other
/// functions go on as before.
#[tokio::test(flavor = "multi_thread")]
async fn a_call_outside_the_function_s_policy_is_refused_as_iam_refuses_it() {
    require_emulators();
    let iam = policies_without_sessions_puts(true);
    let app = paddock_tests::spawn_functions_under(iam, &[]).await;
    let (token, _) = app.driver("refused").await;
    let upload = paddock_tests::session_body(
        &uuid::Uuid::new_v4().to_string(),
        "2026-11-01T10:00:00Z",
        &[(90_000, true, 0.9)],
        0,
    );
    let res = app.post_json_auth("/v1/sessions", &upload, &token).await;
    let status = res.status().as_u16();
    let body: Value = res.json().await.expect("an envelope");
    assert!(status >= 500, "{status} {body}");
    assert_eq!(body["success"], false, "{body}");
    let refusals = app.iam.as_ref().expect("policies enforced").refusals();
    assert!(
        refusals.iter().any(|r| r.function == "SessionsFunction"
            && r.action == "dynamodb:PutItem"
            && r.resource == "${SessionsTable.Arn}"),
        "{refusals:?}"
    );
    let sessions_stored = paddock_tests::every_item(&app.settings)
        .await
        .into_iter()
        .filter(|(table, _)| *table == paddock_core::tables::Table::Sessions)
        .count();
    assert_eq!(
        sessions_stored, 0,
        "nothing of the refused upload is stored"
    );
    // The board, another function with its grants intact, answers.
    let res = app
        .client
        .get(format!(
            "{}/v1/leaderboards?trackId={}",
            app.address,
            uuid::Uuid::new_v4()
        ))
        .send()
        .await
        .unwrap();
    assert!(
        res.status().is_success() || res.status() == 404,
        "{}",
        res.status()
    );
}

/// The same with enforcement off (`PADDOCK_IAM_ENFORCE=0`): the call goes through and is only
/// reported, so an operator can list a new function's calls before writing its policy.
#[tokio::test(flavor = "multi_thread")]
async fn with_enforcement_off_a_call_outside_the_policy_is_reported_and_made() {
    require_emulators();
    let iam = policies_without_sessions_puts(false);
    let app = paddock_tests::spawn_functions_under(iam, &[]).await;
    let (token, _) = app.driver("reported").await;
    let upload = paddock_tests::session_body(
        &uuid::Uuid::new_v4().to_string(),
        "2026-11-01T10:00:00Z",
        &[(90_000, true, 0.9)],
        0,
    );
    let res = app.post_json_auth("/v1/sessions", &upload, &token).await;
    assert!(res.status().is_success(), "{}", res.status());
    let refusals = app.iam.as_ref().unwrap().refusals();
    assert!(
        refusals
            .iter()
            .any(|r| r.action == "dynamodb:PutItem" && r.resource == "${SessionsTable.Arn}"),
        "{refusals:?}"
    );
}

/// The maintenance tick runs on the track-maps function's schedule under that function's own
/// policy: a board of the older layout is counted again (the backfill reads and writes the
/// leaderboards table, which the function's policy once did not grant, so every tick failed in
/// AWS), and no call of any function is refused.
#[tokio::test(flavor = "multi_thread")]
async fn the_maintenance_schedule_counts_older_boards_under_the_track_maps_policy() {
    require_emulators();
    let app = paddock_tests::spawn_functions_scheduled(Duration::from_secs(1)).await;
    for (i, lap) in [101_000, 99_500, 100_250].into_iter().enumerate() {
        let (token, _) = app.driver(&format!("Tick{i}")).await;
        let upload = paddock_tests::session_body(
            &uuid::Uuid::new_v4().to_string(),
            "2026-11-01T10:00:00Z",
            &[(lap, true, 0.95)],
            0,
        );
        let res = app.post_json_auth("/v1/sessions", &upload, &token).await;
        let (status, body) = paddock_tests::envelope(res).await;
        assert!(status < 300, "{status} {body}");
        let submit = serde_json::json!({
            "sessionId": body["data"]["sessionId"], "lapTimeMs": lap, "qualityScore": 0.95,
        });
        let res = app
            .post_json_auth("/v1/leaderboards/submit", &submit, &token)
            .await;
        let (status, body) = paddock_tests::envelope(res).await;
        assert_eq!(status, 200, "{body}");
    }
    let counted = || async {
        paddock_tests::every_item(&app.settings)
            .await
            .into_iter()
            .filter(|(table, item)| {
                *table == paddock_core::tables::Table::Leaderboards && item.contains_key("counted")
            })
            .count()
    };
    assert!(counted().await >= 3, "each entry is counted when submitted");
    // The backfill's two passes each finish by marking their progress item done.
    let finished = || async {
        paddock_tests::every_item(&app.settings)
            .await
            .into_iter()
            .filter(|(table, item)| {
                *table == paddock_core::tables::Table::Leaderboards
                    && item.get("pk") == Some(&serde_json::json!("LAYOUT"))
                    && item.get("done") == Some(&serde_json::json!(true))
            })
            .count()
    };
    // The backfill of the new store finishes first: a pass still under way when the boards
    // are downgraded would mark itself done over entries it read counted (a race of the
    // test's downgrade, which no deployment makes).
    let deadline = Instant::now() + Duration::from_secs(90);
    while finished().await < 2 {
        assert!(
            Instant::now() < deadline,
            "the first backfill did not finish"
        );
        tokio::time::sleep(Duration::from_millis(500)).await;
    }
    // The schedule fires every second, so a tick may count entries again as soon as the
    // progress items (the downgrade's last writes) are gone: what is asserted is that the
    // downgrade took the flags away, then that the ticks finish the backfill.
    let changed = paddock_tests::downgrade_boards(&app).await;
    assert!(changed >= 3, "the downgrade changed {changed} items");
    let deadline = Instant::now() + Duration::from_secs(90);
    while finished().await < 2 {
        assert!(
            Instant::now() < deadline,
            "the scheduled ticks did not finish the backfill: {:?}",
            app.iam.as_ref().unwrap().refusals()
        );
        tokio::time::sleep(Duration::from_millis(500)).await;
    }
    assert!(
        counted().await >= 3,
        "the board's entries are counted again"
    );
    assert_eq!(app.iam.as_ref().unwrap().refusals(), vec![]);
}

/// A message no consumer can read goes straight to its queue's dead-letter queue, sent there
/// by the consumer itself (not after `maxReceiveCount` receives): each consumer's policy grants
/// that one send, and no call is refused.
#[tokio::test(flavor = "multi_thread")]
async fn an_unreadable_message_is_dead_lettered_by_its_consumer_under_its_policy() {
    require_emulators();
    let app = spawn_functions().await;
    let sqs = aws_sdk_sqs::Client::new(&paddock_aws::sdk_config().await);
    let mut waiting = Vec::new();
    for queue in QueueName::ALL {
        let urls = &app.settings.queue_urls[&queue];
        let body = format!("not an event for {queue}");
        sqs.send_message()
            .queue_url(urls.url.clone().unwrap())
            .message_body(&body)
            .send()
            .await
            .unwrap();
        waiting.push((queue, urls.dead_letter_url.clone().unwrap(), body));
    }
    let deadline = Instant::now() + Duration::from_secs(60);
    while let Some((queue, dlq, body)) = waiting.pop() {
        let parked = sqs
            .receive_message()
            .queue_url(&dlq)
            .wait_time_seconds(1)
            .send()
            .await
            .unwrap();
        if parked
            .messages()
            .iter()
            .any(|m| m.body() == Some(body.as_str()))
        {
            continue;
        }
        assert!(
            Instant::now() < deadline,
            "the {queue} consumer did not dead-letter an unreadable message: {:?}",
            app.iam.as_ref().unwrap().refusals()
        );
        waiting.push((queue, dlq, body));
    }
    assert_eq!(app.iam.as_ref().unwrap().refusals(), vec![]);
}
