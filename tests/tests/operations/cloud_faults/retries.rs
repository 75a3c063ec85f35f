//! Each kind of request with one of its writes lost past the SDK's retries: applied once.

use super::*;

/// DynamoDB's writes, for faults aimed at a request's own writes.
pub(super) fn dynamodb_writes() -> Calls {
    Calls::Operations(
        [
            "PutItem",
            "UpdateItem",
            "DeleteItem",
            "BatchWriteItem",
            "TransactWriteItems",
        ]
        .map(str::to_owned)
        .to_vec(),
    )
}

/// The request kinds whose every write is lost past the SDK's retries in turn.
#[derive(Debug, Clone, Copy)]
pub(super) enum Kind {
    Register,
    Refresh,
    Upload,
    Submit,
    FeedPost,
    ProfileChange,
    SharePack,
    DeleteAccount,
}

/// For each request kind and each of its DynamoDB writes in turn, the answer of that write is
/// lost (the write was applied and the SDK sends it again), then the answers of that write
/// and of the SDK's three retries (the request answers 503 or 504 and the client sends it
/// again): the end state must be that of one request each time.
#[tokio::test(flavor = "multi_thread")]
pub(super) async fn a_request_whose_write_outlasts_the_retries_is_applied_once() {
    require_emulators();
    paddock_tests::tls_provider();
    let proxy = FaultProxy::in_front_of_emulators(SEED)
        .await
        .expect("the fault proxy");
    let sdk = proxy.sdk_config_through(&paddock_aws::sdk_config().await);
    let (app, _clock) = spawn_aws_through(sdk).await;
    let client = Client::new(&app);
    let mut findings = Vec::new();
    let mut figures = Vec::new();
    // One answer lost (the SDK's retry meets the applied write), then four in a row (the SDK
    // gives up and the client sends the request again).
    for lost_in_a_row in [1, 4] {
        for kind in [
            Kind::Upload,
            Kind::Submit,
            Kind::FeedPost,
            Kind::Refresh,
            Kind::Register,
            Kind::ProfileChange,
            Kind::SharePack,
            Kind::DeleteAccount,
        ] {
            let driver = sign_in(&client, "Writer").await.expect("signed in");
            let mut posts = 0;
            let mut lost_runs = 0;
            for k in 1..=12u64 {
                // What the request needs, made without faults.
                let csid = format!("{kind:?}-{k}");
                let session = match kind {
                    Kind::Submit => upload(&client, &driver, &csid, 100_000 - k as i64).await,
                    _ => None,
                };
                let refresh = match kind {
                    Kind::Refresh => {
                        let email = &driver.email;
                        let body = json!({"email": email, "password": "correct horse battery"});
                        let (_, res) = client
                            .post("login", "/v1/auth/login/email", None, &body)
                            .await;
                        res["data"]["refreshToken"].as_str().map(str::to_owned)
                    }
                    _ => None,
                };
                let before = client.seen.lock().unwrap().retryable;
                proxy.reset_counts();
                proxy.set_rules(vec![Rule::run(
                    dynamodb_writes(),
                    k,
                    lost_in_a_row,
                    Fault::LoseAnswer,
                )]);
                let (status, body) = match kind {
                    Kind::Register => {
                        let body = json!({"email": format!("{}@example.com", unique("reg")),
                            "password": "correct horse battery", "displayName": "Again"});
                        client
                            .post("register", "/v1/auth/register", None, &body)
                            .await
                    }
                    Kind::Refresh => {
                        let body = json!({"refreshToken": refresh});
                        client
                            .post("refresh", "/v1/auth/refresh", None, &body)
                            .await
                    }
                    Kind::Upload => {
                        let body =
                            session_body(&csid, "2026-11-01T10:00:00Z", &[(99_000, true, 0.9)], 0);
                        client
                            .post("upload", "/v1/sessions", Some(&driver.token), &body)
                            .await
                    }
                    Kind::Submit => {
                        let body = json!({"SessionId": session, "LapTimeMs": 100_000 - k as i64,
                            "QualityScore": 0.95});
                        client
                            .post(
                                "submit",
                                "/v1/leaderboards/submit",
                                Some(&driver.token),
                                &body,
                            )
                            .await
                    }
                    Kind::ProfileChange => {
                        let body = json!({"displayName": format!("Renamed {k}")});
                        client
                            .send(
                                "profile",
                                reqwest::Method::PATCH,
                                "/v1/profile",
                                Some(&driver.token),
                                Some(&body),
                            )
                            .await
                    }
                    Kind::SharePack => {
                        posts += 1;
                        client
                            .send_bytes(
                                "share pack",
                                reqwest::Method::POST,
                                &format!("/v1/sharepacks?name=pack-{k}"),
                                Some(&driver.token),
                                Some(("application/zip", a_pack(k))),
                                None,
                            )
                            .await
                    }
                    Kind::DeleteAccount => {
                        // A driver of its own each time: the deletion ends the account.
                        proxy.set_rules(Vec::new());
                        let gone = sign_in(&client, "Leaving").await.expect("signed in");
                        proxy.reset_counts();
                        proxy.set_rules(vec![Rule::run(
                            dynamodb_writes(),
                            k,
                            lost_in_a_row,
                            Fault::LoseAnswer,
                        )]);
                        let answer = client
                            .send(
                                "delete",
                                reqwest::Method::DELETE,
                                "/v1/profile/me",
                                Some(&gone.token),
                                None,
                            )
                            .await;
                        let (after, _) = client.get("read", "/v1/profile", &gone.token).await;
                        if after != 401 {
                            findings.push(format!(
                                "DeleteAccount, write {k}: the account still answers {after}"
                            ));
                        }
                        answer
                    }
                    Kind::FeedPost => {
                        posts += 1;
                        let body = json!({"title": format!("post {k}")});
                        client
                            .post("feed post", "/v1/feed", Some(&driver.token), &body)
                            .await
                    }
                };
                proxy.set_rules(Vec::new());
                let lost = proxy.counts().faults_total();
                let answered_503 = client.seen.lock().unwrap().retryable - before;
                if lost > 0 {
                    lost_runs += 1;
                }
                let what = format!("{kind:?}, write {k}, {lost_in_a_row} answers lost");
                if !(200..300).contains(&status) {
                    findings.push(format!("{what}: final answer {status} {body}"));
                }
                // The end state of one request.
                match kind {
                    Kind::Register | Kind::Upload | Kind::DeleteAccount => {}
                    Kind::ProfileChange => {
                        let (_, me) = client.get("read", "/v1/profile", &driver.token).await;
                        let name = me["data"]["displayName"]
                            .as_str()
                            .unwrap_or_default()
                            .to_owned();
                        if name != format!("Renamed {k}") {
                            findings.push(format!("{what}: the name is {name:?}"));
                        }
                    }
                    Kind::SharePack => {
                        let (_, mine) = client.get("read", "/v1/sharepacks", &driver.token).await;
                        let n = mine["data"]["items"].as_array().map_or(0, Vec::len);
                        if n != posts {
                            findings.push(format!("{what}: {n} packs after {posts} sent"));
                            posts = n;
                        }
                    }
                    Kind::Refresh => {
                        let again = json!({"refreshToken": body["data"]["refreshToken"]});
                        let (s, b) = client
                            .post("refresh", "/v1/auth/refresh", None, &again)
                            .await;
                        if s != 200 {
                            findings.push(format!("{what}: the rotated token is refused: {s} {b}"));
                        }
                    }
                    Kind::Submit => {
                        let (_, mine) = client
                            .get("board", "/v1/sessions?limit=1", &driver.token)
                            .await;
                        let track = mine["data"]["items"][0]["trackId"]
                            .as_str()
                            .unwrap_or_default()
                            .to_owned();
                        let (_, board) = client
                            .get(
                                "board",
                                &format!("/v1/leaderboards?trackId={track}"),
                                &driver.token,
                            )
                            .await;
                        let total = board["data"]["totalEntries"].as_u64();
                        let (_, me) = client
                            .get(
                                "board",
                                &format!("/v1/leaderboards/me?trackId={track}"),
                                &driver.token,
                            )
                            .await;
                        let best = me["data"]["entry"]["lapTimeMs"].as_i64();
                        // One driver on the board per pass.
                        let drivers = if lost_in_a_row == 1 { 1 } else { 2 };
                        if total != Some(drivers) || best != Some(100_000 - k as i64) {
                            findings.push(format!("{what}: board total {total:?}, best {best:?}"));
                        }
                    }
                    Kind::FeedPost => {
                        let (_, feed) = client
                            .get("read", "/v1/feed?limit=100", &driver.token)
                            .await;
                        let mine = feed["data"]["items"]
                            .as_array()
                            .map_or(0, |f| f.iter().filter(|e| e["kind"] == "post").count());
                        if mine != posts {
                            findings.push(format!("{what}: {mine} posts after {posts} sent"));
                            posts = mine;
                        }
                    }
                }
                figures.push(format!(
                    "{what}: faults {lost}, answered 503/504 {answered_503}, final {status}"
                ));
                if lost == 0 {
                    break;
                }
            }
            if matches!(kind, Kind::Upload) {
                let (_, sessions) = client
                    .get("read", "/v1/sessions?limit=100", &driver.token)
                    .await;
                let n = sessions["data"]["items"].as_array().map_or(0, Vec::len);
                if n != lost_runs + 1 && n != lost_runs {
                    findings.push(format!(
                        "Upload: {n} sessions after {} uploads",
                        lost_runs + 1
                    ));
                }
            }
        }
    }
    for f in &figures {
        println!("{f}");
    }
    for f in &findings {
        println!("FINDING {f}");
    }
    assert_eq!(client.seen.lock().unwrap().internal, 0, "no 500");
    assert!(findings.is_empty(), "{findings:#?}");
}
