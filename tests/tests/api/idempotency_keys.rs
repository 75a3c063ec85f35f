//! `Idempotency-Key` on the creating requests that take one (`POST /v1/feed`, `POST
//! /v1/sharepacks`): the same request sent again under its key makes one post or pack and is
//! answered with it, concurrently too; another request under the key is refused; a malformed
//! key is refused; another driver's key is another driver's; the minute's limit counts a keyed
//! request once. A refused request sent again is refused from its key without the work being
//! done again, and each send counts, so a client looping on it meets 429. On both adapter sets
//! and through the functions.

use paddock_tests::{Backend, TestApp, envelope, on_both_backends};
use serde_json::{Value, json};
use std::io::Write;

async fn post(app: &TestApp, token: &str, key: Option<&str>, body: &Value) -> (u16, Value) {
    let mut request = app
        .client
        .post(format!("{}/v1/feed", app.address))
        .bearer_auth(token)
        .json(body);
    if let Some(key) = key {
        request = request.header("idempotency-key", key);
    }
    envelope(request.send().await.expect("sent")).await
}

async fn pack(app: &TestApp, token: &str, key: &str, name: &str, bytes: Vec<u8>) -> (u16, Value) {
    let response = app
        .client
        .post(format!("{}/v1/sharepacks?name={name}", app.address))
        .bearer_auth(token)
        .header("content-type", "application/zip")
        .header("idempotency-key", key)
        .body(bytes)
        .send()
        .await
        .expect("sent");
    envelope(response).await
}

fn a_zip(text: &str) -> Vec<u8> {
    let mut w = zip::ZipWriter::new(std::io::Cursor::new(Vec::new()));
    w.start_file("notes.txt", zip::write::SimpleFileOptions::default())
        .unwrap();
    w.write_all(text.as_bytes()).unwrap();
    w.finish().unwrap().into_inner()
}

async fn posts_of(app: &TestApp, token: &str) -> Vec<Value> {
    let (status, body) = envelope(app.get_auth("/v1/feed?limit=100", token).await).await;
    assert_eq!(status, 200, "{body}");
    body["data"]["items"]
        .as_array()
        .unwrap()
        .iter()
        .filter(|e| e["kind"] == "post")
        .cloned()
        .collect()
}

async fn packs_of(app: &TestApp, token: &str) -> Vec<Value> {
    let (status, body) = envelope(app.get_auth("/v1/sharepacks?limit=100", token).await).await;
    assert_eq!(status, 200, "{body}");
    body["data"]["items"].as_array().unwrap().clone()
}

async fn a_keyed_post_sent_again_is_posted_once(app: TestApp) {
    let (token, _) = app.driver("Keyed").await;
    let body = json!({"title": "Quali tomorrow", "subtitle": "wish me luck"});
    let (status, first) = post(&app, &token, Some("post-1"), &body).await;
    assert_eq!(status, 201, "{first}");
    let (status, again) = post(&app, &token, Some("post-1"), &body).await;
    assert_eq!(status, 201, "{again}");
    assert_eq!(
        again["data"], first["data"],
        "the first post, answered again"
    );
    let posts = posts_of(&app, &token).await;
    assert_eq!(posts.len(), 1, "{posts:?}");

    // Eight at once under a new key: one post, every answer the same.
    let body = json!({"title": "Race day"});
    let answers = futures::future::join_all((0..8).map(|_| {
        post(
            &app,
            &token,
            Some("0b9e6f3c-6a3e-4c1e-9c49-0f3f4b7a1d2e"),
            &body,
        )
    }))
    .await;
    let ids: std::collections::BTreeSet<String> = answers
        .iter()
        .map(|(status, b)| {
            assert_eq!(*status, 201, "{b}");
            b["data"]["id"].as_str().unwrap().to_owned()
        })
        .collect();
    assert_eq!(ids.len(), 1, "{answers:?}");
    assert_eq!(posts_of(&app, &token).await.len(), 2);

    // Without a key, each request is a post of its own.
    for _ in 0..2 {
        let (status, b) = post(&app, &token, None, &json!({"title": "Again"})).await;
        assert_eq!(status, 201, "{b}");
    }
    assert_eq!(posts_of(&app, &token).await.len(), 4);

    // Another driver's key of the same name is theirs.
    let (other, _) = app.driver("Other").await;
    let (status, theirs) = post(&app, &other, Some("post-1"), &json!({"title": "Mine"})).await;
    assert_eq!(status, 201, "{theirs}");
    assert_ne!(theirs["data"]["id"], first["data"]["id"]);
    assert_eq!(posts_of(&app, &other).await.len(), 1);
}

async fn a_key_sent_with_another_request_is_refused(app: TestApp) {
    let (token, _) = app.driver("Reuser").await;
    let (status, b) = post(&app, &token, Some("k1"), &json!({"title": "First"})).await;
    assert_eq!(status, 201, "{b}");
    for other in [
        json!({"title": "Second"}),
        json!({"title": "First", "subtitle": "and more"}),
    ] {
        let (status, b) = post(&app, &token, Some("k1"), &other).await;
        assert_eq!(status, 422, "{b}");
        let error = b["error"].as_str().unwrap();
        assert!(
            error.starts_with("Idempotency-Key: was sent with a different request"),
            "{error}"
        );
    }
    // A post and a pack may share a key: each kind of request has keys of its own.
    let (status, b) = pack(&app, &token, "k1", "setups", a_zip("wing 7")).await;
    assert_eq!(status, 201, "{b}");
    assert_eq!(posts_of(&app, &token).await.len(), 1);

    for bad in ["", "has space", "sla/sh", &"k".repeat(101)] {
        let (status, b) = post(&app, &token, Some(bad), &json!({"title": "Bad"})).await;
        assert_eq!(status, 400, "{bad:?}: {b}");
        let error = b["error"].as_str().unwrap();
        assert!(
            error.starts_with("Idempotency-Key: must be 1 to 100"),
            "{error}"
        );
    }
    let twice = app
        .client
        .post(format!("{}/v1/feed", app.address))
        .bearer_auth(&token)
        .header("idempotency-key", "a")
        .header("idempotency-key", "b")
        .json(&json!({"title": "Twice"}))
        .send()
        .await
        .unwrap();
    let (status, b) = envelope(twice).await;
    assert_eq!(status, 400, "{b}");
    assert_eq!(posts_of(&app, &token).await.len(), 1);
}

async fn a_keyed_request_counts_once_against_the_minute(app: TestApp) {
    let (token, _) = app.driver("Counted").await;
    let body = json!({"title": "Same one"});
    // Twelve sends of one post, past the 10 a minute: all one request.
    for _ in 0..12 {
        let (status, b) = post(&app, &token, Some("same"), &body).await;
        assert_eq!(status, 201, "{b}");
    }
    for n in 0..9 {
        let (status, b) = post(&app, &token, Some(&format!("p{n}")), &body).await;
        assert_eq!(status, 201, "post {n}: {b}");
    }
    let (status, b) = post(&app, &token, Some("p-over"), &body).await;
    assert_eq!(status, 429, "the eleventh post: {b}");
    assert_eq!(posts_of(&app, &token).await.len(), 10);
}

async fn a_keyed_pack_sent_again_is_stored_once(app: TestApp) {
    let (token, _) = app.driver("Packer").await;
    let bytes = a_zip("brake at the 100 m board");
    let (status, first) = pack(&app, &token, "pack-1", "setups", bytes.clone()).await;
    assert_eq!(status, 201, "{first}");
    let (status, again) = pack(&app, &token, "pack-1", "setups", bytes.clone()).await;
    assert_eq!(status, 201, "{again}");
    assert_eq!(again["data"], first["data"]);
    // Other bytes or another name under the key: refused.
    let (status, b) = pack(&app, &token, "pack-1", "setups", a_zip("other")).await;
    assert_eq!(status, 422, "{b}");
    let (status, b) = pack(&app, &token, "pack-1", "renamed", bytes.clone()).await;
    assert_eq!(status, 422, "{b}");
    assert_eq!(packs_of(&app, &token).await.len(), 1);

    // Six at once: one pack; an answer is that pack, or a 409 while it is being checked.
    let other = a_zip("six at once");
    let answers = futures::future::join_all(
        (0..6).map(|_| pack(&app, &token, "pack-2", "six", other.clone())),
    )
    .await;
    let mut ids = std::collections::BTreeSet::new();
    for (status, b) in &answers {
        match status {
            201 => {
                ids.insert(b["data"]["id"].as_str().unwrap().to_owned());
            }
            409 => {}
            _ => panic!("{status}: {b}"),
        }
    }
    assert_eq!(ids.len(), 1, "{answers:?}");
    let (status, b) = pack(&app, &token, "pack-2", "six", other).await;
    assert_eq!(status, 201, "{b}");
    assert!(ids.contains(b["data"]["id"].as_str().unwrap()));
    assert_eq!(packs_of(&app, &token).await.len(), 2);
}

/// A ZIP whose one entry climbs out of the extraction folder.
fn an_evil_zip() -> Vec<u8> {
    let mut w = zip::ZipWriter::new(std::io::Cursor::new(Vec::new()));
    w.start_file("../evil.txt", zip::write::SimpleFileOptions::default())
        .unwrap();
    w.write_all(b"pwned").unwrap();
    w.finish().unwrap().into_inner()
}

/// Splits answers into the refusals before the first 429 and what follows.
fn refused_then_limited(answers: &[(u16, Value)], refused: u16) -> usize {
    let before = answers.iter().take_while(|(s, _)| *s == refused).count();
    assert!(
        answers[before..].iter().all(|(s, _)| *s == 429),
        "only 429s after the refusals: {answers:?}"
    );
    let first = &answers[0].1["error"];
    assert!(
        answers[..before].iter().all(|(_, b)| &b["error"] == first),
        "every refusal the first one: {answers:?}"
    );
    before
}

/// One refused pack sent 25 times under one key: refused from the key, each send counted, so
/// the eleventh in a minute meets 429 (the limit is 10); the key still names that request.
async fn a_refused_pack_sent_again_meets_the_limit(app: TestApp) {
    let (token, _) = app.driver("Looper").await;
    let evil = an_evil_zip();
    let mut answers = Vec::new();
    for _ in 0..25 {
        answers.push(pack(&app, &token, "bad-1", "setups", evil.clone()).await);
    }
    assert_eq!(refused_then_limited(&answers, 422), 10);
    let error = answers[0].1["error"].as_str().unwrap();
    assert!(
        error.contains("entry \"../evil.txt\"") && error.contains("parent folder"),
        "{error}"
    );
    assert!(
        answers[10].1["error"]
            .as_str()
            .unwrap()
            .starts_with("too many requests")
    );
    // Another request under the key is still told so, limit or not.
    let (status, b) = pack(&app, &token, "bad-1", "setups", a_zip("fine")).await;
    assert_eq!(status, 422, "{b}");
    assert!(
        b["error"]
            .as_str()
            .unwrap()
            .starts_with("Idempotency-Key: was sent with a different request"),
        "{b}"
    );
    assert!(packs_of(&app, &token).await.is_empty());
}

/// The same for a refused post: its refusal is kept with the key and answered again, each
/// send counted against the 10 posts a minute; the key cannot then name another post.
async fn a_refused_post_sent_again_meets_the_limit(app: TestApp) {
    let (token, _) = app.driver("Blank").await;
    let blank = json!({"title": "   ", "subtitle": "no title"});
    let mut answers = Vec::new();
    for _ in 0..12 {
        answers.push(post(&app, &token, Some("blank-1"), &blank).await);
    }
    assert_eq!(refused_then_limited(&answers, 400), 10);
    assert_eq!(
        answers[0].1["error"], "title: must not be empty",
        "{answers:?}"
    );
    let (status, b) = post(&app, &token, Some("blank-1"), &json!({"title": "Fixed"})).await;
    assert_eq!(status, 422, "{b}");
    assert!(posts_of(&app, &token).await.is_empty());
}

/// A repeat of a refused pack is answered from the key, not checked again: under looser limits
/// the same bytes would pass, and the repeat is still refused as the first was.
async fn a_refused_pack_is_not_checked_again(backend: Backend) {
    use paddock_core::problems::Problems;
    use paddock_core::request_keys::RequestKey;
    use paddock_core::sharepacks::packs::{self, Labels, PackError};
    let t = paddock_tests::ports(backend).await;
    let user = paddock_core::ids::UserId::new();
    let loose = t.settings.sharepacks.clone();
    let mut strict = loose.clone();
    strict.max_entries = 2;
    let labels = || Labels::parse(&mut Problems::default(), Some("three".into()), None).unwrap();
    let mut w = zip::ZipWriter::new(std::io::Cursor::new(Vec::new()));
    for name in ["a.txt", "b.txt", "c.txt"] {
        w.start_file(name, zip::write::SimpleFileOptions::default())
            .unwrap();
        w.write_all(b"x").unwrap();
    }
    let three = bytes::Bytes::from(w.finish().unwrap().into_inner());
    let key = RequestKey::parse("three-1").unwrap();
    let first = packs::create_direct(
        &t.ports,
        &strict,
        &user,
        labels(),
        three.clone(),
        Some(&key),
    )
    .await
    .unwrap_err();
    assert!(matches!(first, PackError::Zip(_)), "{first}");
    let again = packs::create_direct(&t.ports, &loose, &user, labels(), three.clone(), Some(&key))
        .await
        .unwrap_err();
    assert!(matches!(again, PackError::Refused(_)), "{again}");
    assert_eq!(again.to_string(), first.to_string());
    // Checked, the same bytes pass those limits.
    let pack = packs::create_direct(&t.ports, &loose, &user, labels(), three, None)
        .await
        .unwrap();
    assert_eq!(pack.entry_count, 3);
}

on_both_backends!(plain: [
    a_keyed_post_sent_again_is_posted_once,
    a_key_sent_with_another_request_is_refused,
    a_keyed_request_counts_once_against_the_minute,
    a_keyed_pack_sent_again_is_stored_once,
    a_refused_pack_sent_again_meets_the_limit,
    a_refused_post_sent_again_meets_the_limit,
], ports: [
    a_refused_pack_is_not_checked_again,
]);
