//! Large packs through upload URLs (S3's presigned or the local server's signed ones), bad
//! packs, quotas and the upload limit.

use super::*;

pub(super) async fn start(app: &TestApp, token: &str, bytes: &[u8], declared_sha: &str) -> Value {
    let body =
        json!({"name": "Big", "description": "", "sizeBytes": bytes.len(), "sha256": declared_sha});
    let (status, res) = envelope(
        app.post_json_auth("/v1/sharepacks/uploads", &body, token)
            .await,
    )
    .await;
    assert_eq!(status, 201, "{res}");
    res["data"].clone()
}

/// A PUT of an attacker: its status, or `REFUSED_EARLY` when the server refused it before it
/// read the body (the connection closes under the body being sent).
pub(super) async fn attacker_put(url: &str, bytes: bytes::Bytes) -> u16 {
    match reqwest::Client::new()
        .put(url)
        .header("content-type", "application/zip")
        .body(bytes)
        .send()
        .await
    {
        Ok(res) => res.status().as_u16(),
        Err(e) if e.is_request() => REFUSED_EARLY,
        Err(e) => panic!("{e}"),
    }
}

/// See [`attacker_put`].
pub(super) const REFUSED_EARLY: u16 = 0;

pub(super) async fn put(url: &str, bytes: impl Into<reqwest::Body>) -> u16 {
    reqwest::Client::new()
        .put(url)
        .header("content-type", "application/zip")
        .body(bytes)
        .send()
        .await
        .unwrap()
        .status()
        .as_u16()
}

pub(super) async fn large_packs_go_through_upload_urls(app: TestApp, clock: Arc<ManualClock>) {
    let (owner, _) = app.driver("Uploader").await;
    let bytes = zip_of(&[(
        "big.bin",
        (0..300_000u32).flat_map(u32::to_le_bytes).collect(),
    )]);
    let ticket = start(&app, &owner, &bytes, &sha(&bytes)).await;
    let id = ticket["id"].as_str().unwrap().to_owned();
    let url = ticket["uploadUrl"].as_str().unwrap().to_owned();
    assert_eq!(
        app.get_auth(&format!("/v1/sharepacks/{id}"), &owner)
            .await
            .status(),
        404,
        "invisible until complete"
    );
    assert_eq!(put(&url, bytes.clone()).await, 200);
    let (status, done) = envelope(
        app.post_json_auth(&format!("/v1/sharepacks/{id}/complete"), &json!({}), &owner)
            .await,
    )
    .await;
    assert_eq!(status, 200, "{done}");
    assert_eq!(done["data"]["sha256"], sha(&bytes));
    let (_, _, got) = download(&app, &owner, &id).await;
    assert_eq!(sha(&got), sha(&bytes));

    // A wrong digest: refused with the reason, and nothing stays.
    let other = a_pack();
    let ticket = start(&app, &owner, &other, &"0".repeat(64)).await;
    let bad_id = ticket["id"].as_str().unwrap().to_owned();
    assert_eq!(
        put(ticket["uploadUrl"].as_str().unwrap(), other.clone()).await,
        200
    );
    let (status, res) = envelope(
        app.post_json_auth(
            &format!("/v1/sharepacks/{bad_id}/complete"),
            &json!({}),
            &owner,
        )
        .await,
    )
    .await;
    assert_eq!(status, 422, "{res}");
    assert!(res["error"].as_str().unwrap().contains("sha256"), "{res}");
    let keys = app.ports.blobs.list("packs/").await.unwrap();
    assert_eq!(
        keys,
        vec![format!("packs/{id}.zip")],
        "the refused object is gone"
    );
    assert!(
        app.ports.blobs.list("uploads/").await.unwrap().is_empty(),
        "the refused object is gone"
    );
    // ... and so is its item: the store knows the pack no more.
    assert!(
        paddock_core::sharepacks::packs::pending(&app.ports, &bad_id.parse().unwrap())
            .await
            .unwrap()
            .is_none()
    );
    assert!(
        paddock_core::sharepacks::packs::get(&app.ports, &bad_id.parse().unwrap())
            .await
            .unwrap()
            .is_none()
    );

    // Not a ZIP at all, through the URL: 422 naming why.
    let junk = b"definitely not a zip file".to_vec();
    let ticket = start(&app, &owner, &junk, &sha(&junk)).await;
    assert_eq!(put(ticket["uploadUrl"].as_str().unwrap(), junk).await, 200);
    let junk_id = ticket["id"].as_str().unwrap();
    let (status, res) = envelope(
        app.post_json_auth(
            &format!("/v1/sharepacks/{junk_id}/complete"),
            &json!({}),
            &owner,
        )
        .await,
    )
    .await;
    assert_eq!(status, 422, "{res}");
    assert_eq!(res["error"], "not a ZIP archive");

    // Never completed: after its URL expired, the sweep removes the pending pack and object.
    let ticket = start(&app, &owner, &bytes, &sha(&bytes)).await;
    let orphan = ticket["id"].as_str().unwrap().to_owned();
    let orphan_url = ticket["uploadUrl"].as_str().unwrap().to_owned();
    assert_eq!(put(&orphan_url, bytes.clone()).await, 200);
    assert_eq!(
        app.ports.blobs.list("uploads/").await.unwrap().len(),
        1,
        "waiting for complete"
    );
    clock.advance(time::Duration::hours(2));
    let report = paddock_core::retention::sweep(&app.ports).await.unwrap();
    assert_eq!(report.of("sharepack_uploads"), 1, "{report:?}");
    assert_eq!(
        app.ports.blobs.list("packs/").await.unwrap(),
        vec![format!("packs/{id}.zip")]
    );
    assert!(
        app.ports.blobs.list("uploads/").await.unwrap().is_empty(),
        "{orphan} swept"
    );
    assert!(
        paddock_core::sharepacks::packs::pending(&app.ports, &orphan.parse().unwrap())
            .await
            .unwrap()
            .is_none()
    );

    // A delete cut short after its transaction (object and item left behind): the pack is
    // already invisible, and the sweep finishes the job.
    let item = paddock_core::ports::items::Key::new(format!("PACK#{id}"), "META");
    let update = paddock_core::ports::items::Update::set("state", "deleting")
        .and_set(paddock_core::ports::items::TTL, clock.unix() + 60);
    app.ports
        .items
        .update(paddock_core::tables::Table::Sharepacks, &item, update, None)
        .await
        .unwrap();
    assert!(
        paddock_core::sharepacks::packs::get(&app.ports, &id.parse().unwrap())
            .await
            .unwrap()
            .is_none(),
        "hidden at once"
    );
    clock.advance(time::Duration::minutes(2));
    let report = paddock_core::retention::sweep(&app.ports).await.unwrap();
    assert_eq!(report.of("sharepack_uploads"), 1, "{report:?}");
    assert!(app.ports.blobs.list("packs/").await.unwrap().is_empty());
}

pub(super) async fn local_upload_urls_are_signed(app: TestApp, clock: Arc<ManualClock>) {
    let (owner, _) = app.driver("Signer").await;
    let bytes = a_pack();
    let ticket = start(&app, &owner, &bytes, &sha(&bytes)).await;
    let url = ticket["uploadUrl"].as_str().unwrap().to_owned();
    let tampered = url.replace("signature=", "signature=00");
    assert_eq!(put(&tampered, bytes.clone()).await, 403);
    let longer = url.replace(
        &format!("length={}", bytes.len()),
        &format!("length={}", bytes.len() + 1),
    );
    assert_eq!(put(&longer, bytes.clone()).await, 403);
    let mut short = bytes.clone();
    short.pop();
    assert_eq!(put(&url, short).await, 400, "not the declared length");
    clock.advance(time::Duration::minutes(16));
    assert_eq!(put(&url, bytes).await, 403, "expired");
}

pub(super) async fn bad_packs_are_refused_and_nothing_is_stored(app: TestApp) {
    let (token, _) = app.driver("Mallory").await;
    let good = a_pack();
    let mut truncated = good.clone();
    truncated.truncate(good.len() / 2);
    let mut bad_crc = stored_zip("data.bin", &[7u8; 5000]);
    // Flip a byte inside the stored data (after the 30-byte header and the name).
    bad_crc[30 + "data.bin".len() + 100] ^= 0xff;
    let mut encrypted = stored_zip("secret.txt", b"hidden");
    // Mark the entry encrypted in its local header and its central directory entry.
    encrypted[6] |= 1;
    let central = encrypted
        .windows(4)
        .position(|w| w == [0x50, 0x4b, 0x01, 0x02])
        .unwrap();
    encrypted[central + 8] |= 1;
    let ratio_bomb = zip_of(&[("zeros.bin", vec![0u8; 30 * 1024 * 1024])]);
    // Nine entries that each compress about 20:1 (under the ratio cap) but inflate to 18 MiB
    // together: the total cap (16 MiB in this test) stops them.
    let mut seed = 7u32;
    let mut sparse = || -> Vec<u8> {
        (0..2 * 1024 * 1024)
            .map(|i| {
                if i % 64 == 0 {
                    seed = seed.wrapping_mul(1_103_515_245).wrapping_add(12_345);
                    (seed >> 16) as u8
                } else {
                    0
                }
            })
            .collect()
    };
    let layers: Vec<(String, Vec<u8>)> = (0..9)
        .map(|i| (format!("layer/{i}.bin"), sparse()))
        .collect();
    let many_bomb = zip_of(
        &layers
            .iter()
            .map(|(n, d)| (n.as_str(), d.clone()))
            .collect::<Vec<_>>(),
    );
    let too_many = zip_of(
        &(0..12)
            .map(|i| {
                (
                    Box::leak(format!("f{i}").into_boxed_str()) as &str,
                    vec![1u8],
                )
            })
            .collect::<Vec<_>>(),
    );
    let cases: Vec<(&str, Vec<u8>, u16, &str)> = vec![
        ("not a zip", b"hello".to_vec(), 422, "not a ZIP archive"),
        ("truncated", truncated, 422, "not a ZIP archive"),
        ("bad crc", bad_crc, 422, "damaged"),
        (
            "parent path",
            zip_of(&[("../evil", b"x".to_vec())]),
            422,
            "\"../evil\"",
        ),
        (
            "absolute path",
            zip_of(&[("/etc/passwd", b"x".to_vec())]),
            422,
            "\"/etc/passwd\"",
        ),
        ("encrypted", encrypted, 422, "encrypted"),
        ("ratio bomb", ratio_bomb, 422, "compression ratio"),
        ("many-entry bomb", many_bomb, 422, "inflates to more than"),
        (
            "too many entries",
            too_many,
            422,
            "declares 12 entries; at most 10",
        ),
        (
            "over the direct size",
            vec![0u8; 2 * 1024 * 1024 + 1],
            413,
            "POST /v1/sharepacks/uploads",
        ),
    ];
    for (what, bytes, status, message) in cases {
        let (got, res) = upload(&app, &token, "x", bytes).await;
        assert_eq!(got, status, "{what}: {res}");
        assert!(
            res["error"].as_str().unwrap().contains(message),
            "{what}: {res}"
        );
    }
    no_pack_objects(&app).await;
    let (_, mine) = envelope(app.get_auth("/v1/sharepacks", &token).await).await;
    assert_eq!(mine["data"]["items"], json!([]));
    let res = app
        .client
        .post(format!("{}/v1/sharepacks?name=x", app.address))
        .bearer_auth(&token)
        .header("content-type", "text/plain")
        .body("zip?")
        .send()
        .await
        .unwrap();
    assert_eq!(res.status(), 415);
    let (status, res) = upload(&app, &token, "", a_pack()).await;
    assert_eq!(status, 400, "{res}");
    assert!(res["error"].as_str().unwrap().starts_with("name"), "{res}");
}

pub(super) async fn quotas_hold(app: TestApp) {
    let (token, _) = app.driver("Hoarder").await;
    for i in 0..2 {
        let (status, res) = upload(&app, &token, &format!("p{i}"), a_pack()).await;
        assert_eq!(status, 201, "{res}");
    }
    let (status, res) = upload(&app, &token, "p2", a_pack()).await;
    assert_eq!(status, 429, "{res}");
    assert!(
        res["error"].as_str().unwrap().contains("2 share packs"),
        "{res}"
    );
    // Uploads a minute are counted whatever their fate: the limit is 4.
    for _ in 0..1 {
        let _ = upload(&app, &token, "x", b"nope".to_vec()).await;
    }
    let (status, _) = upload(&app, &token, "x", b"nope".to_vec()).await;
    assert_eq!(status, 429, "the fifth upload in a minute");
    assert_eq!(app.ports.blobs.list("packs/").await.unwrap().len(), 2);
}

/// The minute's upload limit counts attempts, not successes: a pack refused by the check, a
/// body too large, a bad name, and a pack through an upload URL whose completion is refused
/// each take a place (the limit is 4 here).
pub(super) async fn refused_uploads_count_against_the_minute(app: TestApp) {
    let (token, _) = app.driver("Looper").await;
    let (status, res) = upload(&app, &token, "x", b"not a zip".to_vec()).await;
    assert_eq!(status, 422, "{res}");
    let (status, res) = upload(&app, &token, "x", vec![0u8; 512 * 1024 + 1]).await;
    assert_eq!(status, 413, "{res}");
    let (status, res) = upload(&app, &token, "", a_pack()).await;
    assert_eq!(status, 400, "{res}");
    let (status, res) = upload(&app, &token, "x", vec![0u8; 512 * 1024 + 1]).await;
    assert_eq!(status, 413, "{res}");
    // Four refused attempts: a good pack now waits for the minute to pass.
    let (status, res) = upload(&app, &token, "good", a_pack()).await;
    assert_eq!(status, 429, "the fifth attempt in a minute: {res}");
    assert!(
        res["error"]
            .as_str()
            .unwrap()
            .starts_with("too many requests"),
        "{res}"
    );
    no_pack_objects(&app).await;

    // Through upload URLs: each refused completion was an attempt.
    let (other, _) = app.driver("BigLooper").await;
    let bad = stored_zip("../evil.txt", b"x");
    for n in 0..4 {
        let ticket = start(&app, &other, &bad, &sha(&bad)).await;
        assert_eq!(
            put(ticket["uploadUrl"].as_str().unwrap(), bad.clone()).await,
            200
        );
        let id = ticket["id"].as_str().unwrap();
        let (status, res) = complete_request(&app, &other, id).await;
        assert_eq!(status, 422, "completion {n}: {res}");
        // Refused, the pack is gone: completing it again checks nothing.
        let (status, res) = complete_request(&app, &other, id).await;
        assert_eq!(status, 404, "completion {n} again: {res}");
    }
    let body = json!({"name": "Big", "sizeBytes": bad.len(), "sha256": sha(&bad)});
    let (status, res) = envelope(
        app.post_json_auth("/v1/sharepacks/uploads", &body, &other)
            .await,
    )
    .await;
    assert_eq!(status, 429, "the fifth upload started in a minute: {res}");
    let (status, res) = upload(&app, &other, "good", a_pack()).await;
    assert_eq!(status, 429, "a direct upload shares the limit: {res}");
    no_pack_objects(&app).await;
}
