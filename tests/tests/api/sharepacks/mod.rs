//! Share packs on both backends (embedded; DynamoDB Local and moto S3, following the presigned
//! URLs for real): direct, multipart and upload-URL uploads, sharing by id, byte-identical
//! downloads, owner-only deletes, every kind of bad ZIP, quotas, and the sweep of uploads that
//! were never completed; and the attacks: a pack swapped while `complete` checks it, and ZIPs
//! built to escape an extraction folder on another driver's machine.

use paddock_core::ports::blobs::{BlobError, BlobStream, Taken};
use paddock_core::ports::{Clock, ManualClock};
use paddock_tests::{Backend, TestApp, envelope, spawn_configured};
use serde_json::{Value, json};
use sha2::{Digest, Sha256};
use std::io::Write;
use std::path::Path;
use std::sync::Arc;
use zip::write::SimpleFileOptions;

mod hostile;
mod uploads;
use hostile::*;
use uploads::*;

fn zip_of(entries: &[(&str, Vec<u8>)]) -> Vec<u8> {
    let mut w = zip::ZipWriter::new(std::io::Cursor::new(Vec::new()));
    for (name, data) in entries {
        w.start_file(*name, SimpleFileOptions::default()).unwrap();
        w.write_all(data).unwrap();
    }
    w.finish().unwrap().into_inner()
}

fn stored_zip(name: &str, data: &[u8]) -> Vec<u8> {
    let mut w = zip::ZipWriter::new(std::io::Cursor::new(Vec::new()));
    let options = SimpleFileOptions::default().compression_method(zip::CompressionMethod::Stored);
    w.start_file(name, options).unwrap();
    w.write_all(data).unwrap();
    w.finish().unwrap().into_inner()
}

fn sha(bytes: &[u8]) -> String {
    paddock_core::hashing::hex(&Sha256::digest(bytes))
}

fn a_pack() -> Vec<u8> {
    zip_of(&[
        (
            "setup/spa.json",
            br#"{"wing": 7, "tyres": "soft"}"#.to_vec(),
        ),
        ("laps/reference.json", vec![b'x'; 20_000]),
        ("notes.txt", b"brake at the 100 m board".to_vec()),
    ])
}

async fn upload(app: &TestApp, token: &str, name: &str, bytes: Vec<u8>) -> (u16, Value) {
    let res = app
        .client
        .post(format!(
            "{}/v1/sharepacks?name={name}&description=for%20the%20team",
            app.address
        ))
        .bearer_auth(token)
        .header("content-type", "application/zip")
        .body(bytes)
        .send()
        .await
        .unwrap();
    envelope(res).await
}

/// The ZIP at the download endpoint, following a redirect to presigned storage.
async fn download(
    app: &TestApp,
    token: &str,
    id: &str,
) -> (u16, reqwest::header::HeaderMap, Vec<u8>) {
    let res = app
        .client
        .get(format!("{}/v1/sharepacks/{id}/download", app.address))
        .bearer_auth(token)
        .send()
        .await
        .unwrap();
    let status = res.status().as_u16();
    if status == 302 {
        let location = res.headers()["location"].to_str().unwrap().to_owned();
        let got = reqwest::get(&location).await.unwrap();
        assert_eq!(got.status(), 200);
        let headers = got.headers().clone();
        return (302, headers, got.bytes().await.unwrap().to_vec());
    }
    let headers = res.headers().clone();
    (status, headers, res.bytes().await.unwrap().to_vec())
}

async fn no_pack_objects(app: &TestApp) {
    assert_eq!(
        app.ports.blobs.list("packs/").await.unwrap(),
        Vec::<String>::new()
    );
    assert_eq!(
        app.ports.blobs.list("uploads/").await.unwrap(),
        Vec::<String>::new()
    );
}

/// Two ZIPs of the same length: a benign pack large enough that checking it takes a while,
/// and one whose entry climbs out of the extraction folder.
fn benign_and_evil() -> (Vec<u8>, bytes::Bytes) {
    let mut seed = 7u32;
    let laps: Vec<u8> = (0..6 * 1024 * 1024)
        .map(|_| {
            seed = seed.wrapping_mul(1_103_515_245).wrapping_add(12_345);
            ((seed >> 16) & 0x3f) as u8
        })
        .collect();
    let benign = zip_of(&[
        ("laps/reference.json", laps),
        ("notes.txt", b"brake at the 100 m board".to_vec()),
    ]);
    let evil = |pad: usize| {
        raw_zip(&[
            Raw::file("../../../evil.txt", b"pwned"),
            Raw::file("pad.bin", &vec![0u8; pad]),
        ])
    };
    let evil = evil(benign.len() - evil(0).len());
    assert_eq!(evil.len(), benign.len());
    (benign, bytes::Bytes::from(evil))
}

async fn complete_request(app: &TestApp, token: &str, id: &str) -> (u16, Value) {
    envelope(
        app.post_json_auth(&format!("/v1/sharepacks/{id}/complete"), &json!({}), token)
            .await,
    )
    .await
}

/// What `complete` answered, checked against what another driver then downloads: published,
/// the download is exactly the checked bytes; refused, nothing is published.
async fn published_as_checked(
    app: &TestApp,
    reader: &str,
    id: &str,
    answer: &(u16, Value),
    benign: &[u8],
) -> bool {
    let (status, body) = answer;
    match status {
        200 => {
            assert_eq!(body["data"]["sha256"], sha(benign), "{body}");
            let (_, meta) =
                envelope(app.get_auth(&format!("/v1/sharepacks/{id}"), reader).await).await;
            let (_, _, got) = download(app, reader, id).await;
            assert_eq!(sha(&got), meta["data"]["sha256"].as_str().unwrap());
            assert!(got == benign, "the download is what was checked");
            true
        }
        422 => {
            assert!(body["error"].as_str().unwrap().contains("sha256"), "{body}");
            assert_eq!(
                app.get_auth(&format!("/v1/sharepacks/{id}"), reader)
                    .await
                    .status(),
                404
            );
            false
        }
        other => panic!("complete answered {other}: {body}"),
    }
}

/// The swap during `complete`: a PUT of a different ZIP of the same length racing `complete`,
/// at several moments, and one sent once `complete` has closed the upload. The download is
/// always what was checked, or the pack is refused; locally the URL refuses every PUT once
/// `complete` started (S3's presigned URL takes it, and it is never read).
async fn a_pack_swapped_during_complete_is_never_published(app: TestApp) {
    let local = matches!(
        app.settings.backend,
        paddock_core::config::Backend::Embedded
    );
    let (owner, _) = app.driver("Racer").await;
    let (mate, _) = app.driver("Mate").await;
    let (benign, evil) = benign_and_evil();
    let mut outcomes = Vec::new();
    // The PUT starts `delay` ms after complete (before it, when negative).
    for delay in [-60i64, -20, -5, 0, 1, 3, 10, 30, 100, 300] {
        let ticket = start(&app, &owner, &benign, &sha(&benign)).await;
        let id = ticket["id"].as_str().unwrap().to_owned();
        let url = ticket["uploadUrl"].as_str().unwrap().to_owned();
        assert_eq!(put(&url, benign.clone()).await, 200);
        let after =
            |ms: i64| tokio::time::sleep(std::time::Duration::from_millis(ms.max(0) as u64));
        let racer = async {
            after(delay).await;
            attacker_put(&url, evil.clone()).await
        };
        let completing = async {
            after(-delay).await;
            complete_request(&app, &owner, &id).await
        };
        let (answer, raced) = tokio::join!(completing, racer);
        let published = published_as_checked(&app, &mate, &id, &answer, &benign).await;
        // S3's stand-in (moto_server) now and then answers a PUT racing a read of the same key
        // with 500; either way the property under test is the published bytes, checked above.
        assert!(
            raced == 200
                || (local && matches!(raced, 409 | REFUSED_EARLY))
                || (!local && raced == 500),
            "the racing PUT answered {raced}"
        );
        outcomes.push((delay, published, raced));
    }
    println!("delay ms, published, racing PUT: {outcomes:?}");

    // A PUT once complete has closed the upload (and again after it answered).
    let ticket = start(&app, &owner, &benign, &sha(&benign)).await;
    let id = ticket["id"].as_str().unwrap().to_owned();
    let url = ticket["uploadUrl"].as_str().unwrap().to_owned();
    assert_eq!(put(&url, benign.clone()).await, 200);
    let completing = {
        let client = app.client.clone();
        let address = format!("{}/v1/sharepacks/{id}/complete", app.address);
        let owner = owner.clone();
        tokio::spawn(async move {
            let res = client
                .post(address)
                .bearer_auth(owner)
                .json(&json!({}))
                .send()
                .await
                .unwrap();
            envelope(res).await
        })
    };
    let started = std::time::Instant::now();
    loop {
        let state = paddock_core::sharepacks::packs::upload_state(&app.ports, &id.parse().unwrap())
            .await
            .unwrap();
        if state != paddock_core::sharepacks::packs::Upload::Open {
            break;
        }
        assert!(started.elapsed().as_secs() < 30, "complete never started");
        tokio::time::sleep(std::time::Duration::from_millis(1)).await;
    }
    let late = attacker_put(&url, evil.clone()).await;
    let answer = completing.await.unwrap();
    let published = published_as_checked(&app, &mate, &id, &answer, &benign).await;
    let after = attacker_put(&url, evil.clone()).await;
    if local {
        assert!(
            matches!(late, 409 | REFUSED_EARLY),
            "the URL takes nothing once complete started: {late}"
        );
        assert!(matches!(after, 409 | REFUSED_EARLY), "{after}");
        assert!(published, "nothing disturbed the check");
    } else {
        assert_eq!(
            (late, after),
            (200, 200),
            "S3 takes the PUT; it is never read"
        );
    }
    if published {
        let (_, _, got) = download(&app, &mate, &id).await;
        assert!(got == benign, "still what was checked after the late PUTs");
    }
}

/// A blob store that looks at where `complete` stages a pack before handing over to the real
/// one: every staging path seen, with its directory's mode and whether the file existed.
struct StagingWitness {
    inner: Arc<dyn paddock_core::ports::BlobStore>,
    seen: std::sync::Mutex<Vec<(std::path::PathBuf, u32, bool)>>,
}

#[async_trait::async_trait]
impl paddock_core::ports::BlobStore for StagingWitness {
    async fn put(&self, key: &str, bytes: bytes::Bytes, ct: &str) -> Result<(), BlobError> {
        self.inner.put(key, bytes, ct).await
    }
    async fn get(&self, key: &str) -> Result<Option<bytes::Bytes>, BlobError> {
        self.inner.get(key).await
    }
    async fn delete(&self, key: &str) -> Result<(), BlobError> {
        self.inner.delete(key).await
    }
    async fn list(&self, prefix: &str) -> Result<Vec<String>, BlobError> {
        self.inner.list(prefix).await
    }
    async fn presigned_get(
        &self,
        key: &str,
        ttl: std::time::Duration,
        name: Option<&str>,
    ) -> Result<Option<String>, BlobError> {
        self.inner.presigned_get(key, ttl, name).await
    }
    async fn presigned_put(
        &self,
        key: &str,
        ttl: std::time::Duration,
        length: u64,
    ) -> Result<Option<String>, BlobError> {
        self.inner.presigned_put(key, ttl, length).await
    }
    async fn put_file(&self, key: &str, path: &Path, ct: &str) -> Result<(), BlobError> {
        self.inner.put_file(key, path, ct).await
    }
    async fn take_to_file(
        &self,
        key: &str,
        hold: &str,
        path: &Path,
    ) -> Result<Option<Taken>, BlobError> {
        use std::os::unix::fs::PermissionsExt;
        let dir = path.parent().unwrap();
        let mode = std::fs::metadata(dir).unwrap().permissions().mode() & 0o777;
        self.seen
            .lock()
            .unwrap()
            .push((path.to_owned(), mode, path.exists()));
        self.inner.take_to_file(key, hold, path).await
    }
    async fn publish_taken(&self, taken: &Taken, path: &Path, to: &str) -> Result<bool, BlobError> {
        self.inner.publish_taken(taken, path, to).await
    }
    async fn get_stream(&self, key: &str) -> Result<Option<BlobStream>, BlobError> {
        self.inner.get_stream(key).await
    }
}

/// Staging files (finding: `/tmp/pack-<id>.zip`): a link planted at the old predictable path,
/// pointing at a file of the victim's, is never followed; `complete` stages in a fresh
/// directory only the server may enter (0700), at a name that holds no pack id, creating its
/// file exclusively, and leaves nothing behind.
async fn staging_is_private_and_unpredictable(backend: Backend) {
    let t = paddock_tests::ports(backend).await;
    let witness = Arc::new(StagingWitness {
        inner: t.ports.blobs.clone(),
        seen: std::sync::Mutex::new(Vec::new()),
    });
    let mut ports = t.ports.clone();
    ports.blobs = witness.clone();
    let app = paddock_tests::spawn_with(t.settings, ports, t.dir).await;
    let (owner, _) = app.driver("Stager").await;
    let bytes = a_pack();
    let ticket = start(&app, &owner, &bytes, &sha(&bytes)).await;
    let id = ticket["id"].as_str().unwrap().to_owned();
    assert_eq!(
        put(ticket["uploadUrl"].as_str().unwrap(), bytes.clone()).await,
        200
    );
    let victim_dir = tempfile::tempdir().unwrap();
    let victim = victim_dir.path().join("victim.txt");
    std::fs::write(&victim, b"the victim's own file").unwrap();
    let planted = std::env::temp_dir().join(format!("pack-{id}.zip"));
    std::os::unix::fs::symlink(&victim, &planted).unwrap();
    let (status, done) = complete_request(&app, &owner, &id).await;
    std::fs::remove_file(&planted).unwrap();
    assert_eq!(status, 200, "{done}");
    assert_eq!(std::fs::read(&victim).unwrap(), b"the victim's own file");
    let seen = witness.seen.lock().unwrap().clone();
    assert_eq!(seen.len(), 1, "{seen:?}");
    let (path, mode, existed) = &seen[0];
    assert_eq!(*mode, 0o700, "{path:?}");
    assert!(!existed, "{path:?}");
    assert!(!path.to_string_lossy().contains(&id), "{path:?}");
    assert!(
        !path.parent().unwrap().exists(),
        "the staging directory is removed"
    );
    let (_, _, got) = download(&app, &owner, &id).await;
    assert!(got == bytes);
}

async fn packs_are_shared_by_id_and_deleted_by_their_owner(app: TestApp) {
    let (owner, _) = app.driver("Packer").await;
    let (mate, _) = app.driver("Mate").await;
    let bytes = a_pack();
    let (status, created) = upload(&app, &owner, "Spa%20setups", bytes.clone()).await;
    assert_eq!(status, 201, "{created}");
    let pack = created["data"].clone();
    assert_eq!(pack["name"], "Spa setups");
    assert_eq!(pack["sizeBytes"], bytes.len());
    assert_eq!(pack["sha256"], sha(&bytes));
    assert_eq!(pack["entryCount"], 3);
    let id = pack["id"].as_str().unwrap().to_owned();

    let (_, mine) = envelope(app.get_auth("/v1/sharepacks", &owner).await).await;
    assert_eq!(mine["data"]["items"][0]["id"], id.as_str());
    let (_, theirs) = envelope(app.get_auth("/v1/sharepacks", &mate).await).await;
    assert_eq!(
        theirs["data"]["items"],
        json!([]),
        "a list is the caller's own"
    );

    let (status, meta) = envelope(app.get_auth(&format!("/v1/sharepacks/{id}"), &mate).await).await;
    assert_eq!(status, 200, "{meta}");
    assert_eq!(meta["data"]["ownerDisplayName"], "Packer");
    let (status, headers, got) = download(&app, &mate, &id).await;
    assert!(status == 200 || status == 302);
    assert_eq!(sha(&got), sha(&bytes), "byte-identical");
    if status == 200 {
        assert_eq!(headers["content-type"], "application/zip");
        assert_eq!(
            headers["content-disposition"],
            "attachment; filename=\"Spa setups.zip\""
        );
        assert_eq!(headers["etag"], format!("\"{}\"", sha(&bytes)).as_str());
        assert_eq!(headers["content-length"], bytes.len().to_string().as_str());
    }

    let delete = |token: &str| {
        app.client
            .delete(format!("{}/v1/sharepacks/{id}", app.address))
            .bearer_auth(token)
            .send()
    };
    assert_eq!(
        delete(&mate).await.unwrap().status(),
        404,
        "only the owner deletes"
    );
    assert_eq!(
        app.get_auth(&format!("/v1/sharepacks/{id}"), &mate)
            .await
            .status(),
        200
    );
    // Two deletes at once: one wins, the other finds nothing.
    let (a, b) = tokio::join!(delete(&owner), delete(&owner));
    let mut statuses = [a.unwrap().status().as_u16(), b.unwrap().status().as_u16()];
    statuses.sort_unstable();
    assert_eq!(statuses, [200, 404]);
    assert_eq!(
        app.get_auth(&format!("/v1/sharepacks/{id}"), &owner)
            .await
            .status(),
        404
    );
    assert_eq!(
        app.get_auth("/v1/sharepacks/not-a-pack", &owner)
            .await
            .status(),
        404
    );
    no_pack_objects(&app).await;

    // A multipart form works the same.
    let form = reqwest::multipart::Form::new()
        .text("name", "Monza")
        .text("description", "low wing")
        .part(
            "file",
            reqwest::multipart::Part::bytes(a_pack()).file_name("monza.zip"),
        );
    let res = app
        .client
        .post(format!("{}/v1/sharepacks", app.address))
        .bearer_auth(&owner)
        .multipart(form)
        .send()
        .await
        .unwrap();
    let (status, created) = envelope(res).await;
    assert_eq!(status, 201, "{created}");
    assert_eq!(created["data"]["name"], "Monza");
}

fn limits(s: &mut paddock_core::config::Settings) {
    s.sharepacks.max_direct_bytes = 512 * 1024;
    s.sharepacks.max_entries = 10;
    s.sharepacks.max_uncompressed_bytes = 16 * 1024 * 1024;
    s.sharepacks.max_per_user = 2;
    s.sharepacks.uploads_per_minute = 4;
}

/// Limits that the attack tests do not test.
fn open_limits(s: &mut paddock_core::config::Settings) {
    s.sharepacks.uploads_per_minute = 1000;
    s.sharepacks.max_per_user = 1000;
}

macro_rules! configured {
    ($backend:ident, $module:ident) => {
        mod $module {
            use super::*;
            #[tokio::test(flavor = "multi_thread")]
            async fn packs_are_shared_by_id_and_deleted_by_their_owner() {
                let (app, _) = spawn_configured(Backend::$backend, |s| {
                    s.sharepacks.max_direct_bytes = 512 * 1024
                })
                .await;
                super::packs_are_shared_by_id_and_deleted_by_their_owner(app).await;
            }
            #[tokio::test(flavor = "multi_thread")]
            async fn large_packs_go_through_upload_urls() {
                let (app, clock) = spawn_configured(Backend::$backend, |_| {}).await;
                super::large_packs_go_through_upload_urls(app, clock).await;
            }
            #[tokio::test(flavor = "multi_thread")]
            async fn bad_packs_are_refused_and_nothing_is_stored() {
                let (app, _) = spawn_configured(Backend::$backend, |s| {
                    limits(s);
                    s.sharepacks.max_direct_bytes = 2 * 1024 * 1024;
                    s.sharepacks.uploads_per_minute = 100;
                    s.sharepacks.max_per_user = 100;
                })
                .await;
                super::bad_packs_are_refused_and_nothing_is_stored(app).await;
            }
            #[tokio::test(flavor = "multi_thread")]
            async fn hostile_packs_are_refused_naming_the_entry() {
                let (app, _) = spawn_configured(Backend::$backend, open_limits).await;
                super::hostile_packs_are_refused_naming_the_entry(app).await;
            }
            #[tokio::test(flavor = "multi_thread")]
            async fn a_pack_swapped_during_complete_is_never_published() {
                let (app, _) = spawn_configured(Backend::$backend, open_limits).await;
                super::a_pack_swapped_during_complete_is_never_published(app).await;
            }
            #[tokio::test(flavor = "multi_thread")]
            async fn staging_is_private_and_unpredictable() {
                super::staging_is_private_and_unpredictable(Backend::$backend).await;
            }
            #[tokio::test(flavor = "multi_thread")]
            async fn quotas_hold() {
                let (app, _) = spawn_configured(Backend::$backend, limits).await;
                super::quotas_hold(app).await;
            }
            #[tokio::test(flavor = "multi_thread")]
            async fn refused_uploads_count_against_the_minute() {
                let (app, _) = spawn_configured(Backend::$backend, limits).await;
                super::refused_uploads_count_against_the_minute(app).await;
            }
        }
    };
}

configured!(Embedded, embedded);
configured!(Aws, dynamodb_local);

#[tokio::test(flavor = "multi_thread")]
async fn local_upload_urls_are_signed_and_expire() {
    let (app, clock) = spawn_configured(Backend::Embedded, |_| {}).await;
    local_upload_urls_are_signed(app, clock).await;
}

/// The same scenarios through the share-pack function behind the local API, with the same
/// limits given as its settings.
mod functions {
    use paddock_tests::spawn_functions_with;

    const LIMITS: &[(&str, &str)] = &[
        ("Sharepacks__MaxDirectBytes", "524288"),
        ("Sharepacks__MaxEntries", "10"),
        ("Sharepacks__MaxUncompressedBytes", "16777216"),
        ("Sharepacks__MaxPerUser", "2"),
        ("Sharepacks__UploadsPerMinute", "4"),
    ];
    const OPEN_LIMITS: &[(&str, &str)] = &[
        ("Sharepacks__UploadsPerMinute", "1000"),
        ("Sharepacks__MaxPerUser", "1000"),
    ];

    #[tokio::test(flavor = "multi_thread")]
    async fn packs_are_shared_by_id_and_deleted_by_their_owner() {
        let app = spawn_functions_with(&[("Sharepacks__MaxDirectBytes", "524288")]).await;
        super::packs_are_shared_by_id_and_deleted_by_their_owner(app).await;
    }

    #[tokio::test(flavor = "multi_thread")]
    async fn hostile_packs_are_refused_naming_the_entry() {
        super::hostile_packs_are_refused_naming_the_entry(spawn_functions_with(OPEN_LIMITS).await)
            .await;
    }

    /// A pack above the direct limit goes up as the deployed stack takes it: `uploadUrl` is
    /// an S3 presigned PUT for the pack's object under `uploads/` (signed by the share-pack
    /// function, with that function's rights), not a URL of the API, although the secret has
    /// no `uploadUrlKey` (the stack's does not); the PUT and `complete` publish the pack.
    #[tokio::test(flavor = "multi_thread")]
    async fn a_large_pack_goes_up_through_an_s3_presigned_put() {
        let app = spawn_functions_with(&[("Sharepacks__MaxDirectBytes", "524288")]).await;
        let (owner, _) = app.driver("Uploader").await;
        let (reader, _) = app.driver("Reader").await;
        let bytes = super::zip_of(&[(
            "big.bin",
            (0..300_000u32).flat_map(u32::to_le_bytes).collect(),
        )]);
        let ticket = super::start(&app, &owner, &bytes, &super::sha(&bytes)).await;
        let url = ticket["uploadUrl"].as_str().unwrap();
        let bucket = app.settings.bucket.as_deref().unwrap();
        assert!(!url.starts_with(&app.address), "{url}");
        assert!(
            url.contains(&format!("/{bucket}/uploads/")) && url.contains("X-Amz-Signature="),
            "{url}"
        );
        assert_eq!(super::put(url, bytes.clone()).await, 200);
        let id = ticket["id"].as_str().unwrap();
        let answer = super::complete_request(&app, &owner, id).await;
        assert_eq!(answer.0, 200, "{}", answer.1);
        assert!(super::published_as_checked(&app, &reader, id, &answer, &bytes).await);
    }

    #[tokio::test(flavor = "multi_thread")]
    async fn quotas_hold() {
        super::quotas_hold(spawn_functions_with(LIMITS).await).await;
    }

    #[tokio::test(flavor = "multi_thread")]
    async fn refused_uploads_count_against_the_minute() {
        super::refused_uploads_count_against_the_minute(spawn_functions_with(LIMITS).await).await;
    }
}
