//! Deliveries: signed and once through a failing receiver (with its latency figures), a rotated
//! secret beside the old, nothing for a deleted subscription or account, a passed driver told
//! once per window.

use super::*;

/// The percentile `p` (0-100) of sorted `values`.
pub(super) fn percentile(sorted: &[Duration], p: usize) -> Duration {
    sorted[(sorted.len() * p / 100).min(sorted.len() - 1)]
}

/// Reads subscription `id` until `done` holds of it (at most `within`); answers it.
pub(super) async fn subscription_when(
    app: &TestApp,
    token: &str,
    id: &str,
    within: Duration,
    what: &str,
    done: impl Fn(&Value) -> bool,
) -> Value {
    let until = Instant::now() + within;
    loop {
        let (status, one) = app
            .call(Method::GET, &format!("/v1/webhooks/{id}"), token, None)
            .await;
        assert_eq!(status, 200, "{one}");
        if done(&one) {
            return one;
        }
        assert!(Instant::now() < until, "not {what}: {one}");
        tokio::time::sleep(Duration::from_millis(50)).await;
    }
}

pub(super) async fn events_arrive_signed_and_once_through_a_failing_receiver(app: TestApp) {
    let (token, lea) = app.driver("Lea").await;
    let receiver = Receiver::start().await;
    let (id, secret) = subscribe(
        &app,
        &token,
        &receiver.url,
        &[
            "session.uploaded",
            "leaderboard.best",
            "achievement.unlocked",
        ],
    )
    .await;
    let id_of_subscription = id.clone();

    // The receiver is down: the first attempts fail (the host is then backed off, so the
    // events behind them wait for its next window rather than each trying), and are tried
    // again.
    receiver.set_failing(true);
    let session = upload(&app, &token, "lea-1", 95_000).await;
    submit(&app, &token, &session, 95_000).await;
    receiver
        .wait_for(Duration::from_secs(30), "a failed attempt", |all| {
            !all.is_empty()
        })
        .await;
    receiver.set_failing(false);
    // Back up: each event arrives (again) and is taken, every one that failed included (the
    // upload may unlock more than one achievement).
    receiver
        .wait_for(Duration::from_secs(60), "every event taken", |all| {
            let taken: BTreeSet<String> = all.iter().filter(|r| r.taken).map(event_type).collect();
            let taken_ids: BTreeSet<&String> = all
                .iter()
                .filter(|r| r.taken)
                .map(|r| &r.headers["webhook-id"])
                .collect();
            taken.len() >= 3
                && all
                    .iter()
                    .all(|r| taken_ids.contains(&r.headers["webhook-id"]))
        })
        .await;
    // Nothing more comes for them: a later upload is the only new id.
    // One snapshot for what follows: an event of the upload still on its way (a second
    // achievement) may arrive meanwhile, and must be in both or neither.
    let all = receiver.all();
    let mut taken = std::collections::BTreeMap::new();
    for r in all.iter().filter(|r| r.taken) {
        taken
            .entry(r.headers["webhook-id"].clone())
            .or_insert_with(|| r.clone());
    }
    let types: Vec<String> = taken.values().map(event_type).collect();
    let mut sorted = types.clone();
    sorted.sort();
    assert_eq!(
        sorted.iter().filter(|t| *t == "session.uploaded").count(),
        1,
        "{types:?}"
    );
    assert_eq!(
        sorted.iter().filter(|t| *t == "leaderboard.best").count(),
        1,
        "{types:?}"
    );
    assert!(
        sorted.iter().any(|t| t == "achievement.unlocked"),
        "{types:?}"
    );
    // Every attempt of one event carries the same webhook-id and the same body, names the
    // subscription, and says whose event it is.
    for r in &all {
        let id = &r.headers["webhook-id"];
        assert_eq!(taken[id].body, r.body, "attempts of {id} differ");
        assert_eq!(
            r.headers["webhook-subscription-id"],
            id_of_subscription.as_str()
        );
        let body: Value = serde_json::from_str(&r.body).unwrap();
        assert_eq!(body["data"]["userId"], lea.as_str(), "{body}");
    }
    assert!(all.iter().any(|r| !r.taken));

    // The reference library verifies every attempt under the secret, none under another.
    let other = "whsec_MfKQ9r8GKYqrTwjUPD8ILPZIo2LaLaSw";
    for verdict in verify(&[&secret, other], &all) {
        assert_eq!(verdict, vec![0]);
    }
    let best: Value = serde_json::from_str(
        &taken
            .values()
            .find(|r| event_type(r) == "leaderboard.best")
            .unwrap()
            .body,
    )
    .unwrap();
    assert_eq!(best["data"]["lapTimeMs"], 95_000);
    assert_eq!(best["data"]["rank"], 1);
    assert_eq!(best["data"]["trackName"], "Spa-Francorchamps");
    assert!(best["data"].get("improved").is_none());

    // The history shows the failures and the successes, newest first.
    let (status, history) = app
        .call(
            Method::GET,
            &format!("/v1/webhooks/{id}/deliveries"),
            &token,
            None,
        )
        .await;
    assert_eq!(status, 200);
    let attempts = history["data"]["items"].as_array().unwrap();
    assert!(
        attempts
            .iter()
            .any(|a| a["succeeded"] == false && a["status"] == 503),
        "{history}"
    );
    assert!(
        attempts
            .iter()
            .any(|a| a["succeeded"] == true && a["status"] == 204),
        "{history}"
    );
    // Healthy again once the last attempt that failed is followed by a success (an event held
    // behind the host's back-off window may still be on its way).
    subscription_when(
        &app,
        &token,
        &id,
        Duration::from_secs(60),
        "healthy again",
        |one| one["data"]["failingSince"].is_null(),
    )
    .await;

    // Latency from the event's commit (the API's answer) to the receiver's answer, by test
    // deliveries one after another.
    // Fifteen: with the subscription's verification, within the hour's receiver checks.
    let mut latencies = Vec::new();
    for _ in 0..15 {
        let before = receiver.all().len();
        let (status, queued) = app
            .call(
                Method::POST,
                &format!("/v1/webhooks/{id}/test"),
                &token,
                None,
            )
            .await;
        assert_eq!(status, 202, "{queued}");
        let committed = Instant::now();
        let webhook_id = queued["data"]["webhookId"].as_str().unwrap().to_owned();
        receiver
            .wait_for(Duration::from_secs(20), "a test delivery", |all| {
                all.len() > before && all.iter().any(|r| r.headers["webhook-id"] == webhook_id)
            })
            .await;
        let arrived = receiver
            .all()
            .into_iter()
            .find(|r| r.headers["webhook-id"] == webhook_id)
            .unwrap();
        latencies.push(arrived.at.saturating_duration_since(committed));
        assert_eq!(event_type(&arrived), "webhook.test");
    }
    latencies.sort();
    println!(
        "webhook delivery latency over {} test events: p50 {} ms, p95 {} ms",
        latencies.len(),
        percentile(&latencies, 50).as_millis(),
        percentile(&latencies, 95).as_millis()
    );
}

pub(super) async fn a_rotated_secret_signs_beside_the_old_during_its_grace(app: TestApp) {
    let (token, _) = app.driver("Mio").await;
    let receiver = Receiver::start().await;
    let (id, old) = subscribe(&app, &token, &receiver.url, &["session.uploaded"]).await;
    let (status, rotated) = app
        .call(
            Method::POST,
            &format!("/v1/webhooks/{id}/rotate-secret"),
            &token,
            Some(json!({"graceHours": 2})),
        )
        .await;
    assert_eq!(status, 200, "{rotated}");
    let new = rotated["data"]["secret"].as_str().unwrap().to_owned();
    assert_ne!(new, old);
    assert!(rotated["data"]["previousSecretExpiresAt"].is_string());
    upload(&app, &token, "mio-1", 99_000).await;
    receiver
        .wait_for(Duration::from_secs(20), "the upload", |all| !all.is_empty())
        .await;
    let first = receiver.all();
    assert_eq!(first[0].headers["webhook-signature"].split(' ').count(), 2);
    assert_eq!(verify(&[&new, &old], &first[..1]), vec![vec![0, 1]]);

    // Rotated again without a grace period: the new secret alone signs.
    let (status, rotated) = app
        .call(
            Method::POST,
            &format!("/v1/webhooks/{id}/rotate-secret"),
            &token,
            Some(json!({"graceHours": 0})),
        )
        .await;
    assert_eq!(status, 200, "{rotated}");
    let newest = rotated["data"]["secret"].as_str().unwrap().to_owned();
    assert_eq!(rotated["data"]["previousSecretExpiresAt"], Value::Null);
    upload(&app, &token, "mio-2", 98_000).await;
    receiver
        .wait_for(Duration::from_secs(20), "the second upload", |all| {
            all.len() >= 2
        })
        .await;
    let second = receiver.all()[1].clone();
    assert_eq!(second.headers["webhook-signature"].split(' ').count(), 1);
    assert_eq!(verify(&[&newest, &new, &old], &[second]), vec![vec![0]]);
}

pub(super) async fn nothing_arrives_for_a_deleted_subscription_or_account(app: TestApp) {
    let (token, user) = app.driver("Noa").await;
    let receiver = Receiver::start().await;
    let (kept, _) = subscribe(&app, &token, &receiver.url, &["session.uploaded"]).await;
    let (gone, _) = subscribe(&app, &token, &receiver.url, &["session.uploaded"]).await;
    let status = delete(&app, &format!("/v1/webhooks/{gone}"), &token).await;
    assert_eq!(status, 204);
    upload(&app, &token, "noa-1", 97_000).await;
    receiver
        .wait_for(Duration::from_secs(20), "the upload", |all| !all.is_empty())
        .await;
    // The deleted one's delivery would come at the same time: give it a moment anyway.
    tokio::time::sleep(Duration::from_secs(1)).await;
    assert_eq!(receiver.all().len(), 1, "{:#?}", receiver.all());
    let (status, history) = app
        .call(
            Method::GET,
            &format!("/v1/webhooks/{kept}/deliveries"),
            &token,
            None,
        )
        .await;
    assert_eq!(status, 200);
    assert_eq!(history["data"]["items"].as_array().unwrap().len(), 1);

    // The account's deletion removes every webhook item; nothing arrives after it.
    let (status, deleted) = app
        .call(Method::DELETE, "/v1/profile/me", &token, None)
        .await;
    assert_eq!(status, 202, "{deleted}");
    let prefix = format!("HOOK#{user}");
    let mut left = usize::MAX;
    for _ in 0..100 {
        left = paddock_tests::every_item(&app.settings)
            .await
            .into_iter()
            .filter(|(_, item)| item.get("pk").and_then(Value::as_str) == Some(prefix.as_str()))
            .count();
        if left == 0 {
            break;
        }
        tokio::time::sleep(Duration::from_millis(200)).await;
    }
    assert_eq!(left, 0, "webhook items of a deleted account remain");
    assert_eq!(receiver.all().len(), 1);
}

pub(super) async fn a_passed_driver_hears_of_it_once_per_window(app: TestApp) {
    let receiver = Receiver::start().await;
    let (ana, _) = app.driver("Ana").await;
    let (bo, _) = app.driver("Bo").await;
    let (cy, cy_id) = app.driver("Cy").await;
    let (_, secret) = subscribe(&app, &ana, &receiver.url, &["board.passed"]).await;
    // Ana is first, Bo second; Cy then beats both: Ana and Bo are passed, and only Ana
    // subscribed.
    let s = upload(&app, &ana, "ana-1", 90_000).await;
    submit(&app, &ana, &s, 90_000).await;
    let s = upload(&app, &bo, "bo-1", 91_000).await;
    submit(&app, &bo, &s, 91_000).await;
    let s = upload(&app, &cy, "cy-1", 89_000).await;
    submit(&app, &cy, &s, 89_000).await;
    // Passed on the track's board and on the car's (all drove the same car).
    receiver
        .wait_for(Duration::from_secs(20), "board.passed twice", |all| {
            all.len() >= 2
        })
        .await;
    let both = receiver.all();
    assert_eq!(verify(&[&secret], &both), vec![vec![0], vec![0]]);
    let bodies: Vec<Value> = both
        .iter()
        .map(|r| serde_json::from_str(&r.body).unwrap())
        .collect();
    let on = |car: bool| {
        bodies
            .iter()
            .find(|b| b["data"]["vehicleName"].is_null() != car)
            .unwrap_or_else(|| panic!("car board {car}: {bodies:?}"))
    };
    for (body, vehicle) in [
        (on(false), Value::Null),
        (on(true), json!("porsche 992 gt3 r")),
    ] {
        assert_eq!(body["type"], "board.passed");
        let data = &body["data"];
        assert_eq!(data["previousRank"], 1, "{data}");
        assert_eq!(data["newRank"], 2, "{data}");
        assert_eq!(data["lapTimeMs"], 90_000);
        assert_eq!(data["passedBy"]["userId"], cy_id);
        assert_eq!(data["passedBy"]["displayName"], "Cy");
        assert_eq!(data["passedBy"]["lapTimeMs"], 89_000);
        assert_eq!(data["trackName"], "Spa-Francorchamps");
        assert_eq!(data["vehicleName"], vehicle, "{data}");
    }

    // Within the window, Cy improving again (passing nobody new) and Bo passing Ana say
    // nothing more to Ana.
    let s = upload(&app, &bo, "bo-2", 88_000).await;
    submit(&app, &bo, &s, 88_000).await;
    let s = upload(&app, &ana, "ana-2", 89_500).await;
    submit(&app, &ana, &s, 89_500).await;
    let s = upload(&app, &cy, "cy-2", 87_000).await;
    submit(&app, &cy, &s, 87_000).await;
    tokio::time::sleep(Duration::from_secs(2)).await;
    let all = receiver.all();
    assert_eq!(all.len(), 2, "{all:#?}");
}

/// The `pk` and `sk` of the first stored item whose keys `matches` accepts.
pub(super) async fn keys_of(
    app: &TestApp,
    matches: impl Fn(&str, &str) -> bool,
) -> Option<(String, String)> {
    paddock_tests::every_item(&app.settings)
        .await
        .into_iter()
        .filter_map(|(_, item)| {
            let pk = item.get("pk")?.as_str()?.to_owned();
            let sk = item.get("sk")?.as_str()?.to_owned();
            matches(&pk, &sk).then_some((pk, sk))
        })
        .next()
}
