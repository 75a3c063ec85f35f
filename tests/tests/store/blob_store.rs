//! Conformance suite of the blob store port, run against a directory and moto's S3.

use bytes::Bytes;
use paddock_tests::{Backend, TestPorts, ports};
use std::time::Duration;

async fn put_get_replace_delete(t: TestPorts) {
    let b = &t.ports.blobs;
    assert!(b.get("packs/u1/p1.zip").await.unwrap().is_none());
    let bytes: Vec<u8> = (0..=255u8).cycle().take(300_000).collect();
    b.put(
        "packs/u1/p1.zip",
        Bytes::from(bytes.clone()),
        "application/zip",
    )
    .await
    .unwrap();
    assert_eq!(
        b.get("packs/u1/p1.zip").await.unwrap().unwrap().as_ref(),
        bytes.as_slice(),
        "byte-identical"
    );
    b.put(
        "packs/u1/p1.zip",
        Bytes::from_static(b"second"),
        "application/zip",
    )
    .await
    .unwrap();
    assert_eq!(
        b.get("packs/u1/p1.zip").await.unwrap().unwrap().as_ref(),
        b"second"
    );
    b.put("packs/u1/empty", Bytes::new(), "application/octet-stream")
        .await
        .unwrap();
    assert_eq!(b.get("packs/u1/empty").await.unwrap().unwrap().len(), 0);
    b.delete("packs/u1/p1.zip").await.unwrap();
    assert!(b.get("packs/u1/p1.zip").await.unwrap().is_none());
    b.delete("packs/u1/p1.zip")
        .await
        .expect("deleting a missing blob succeeds");
}

async fn list_by_prefix(t: TestPorts) {
    let b = &t.ports.blobs;
    for key in [
        "points/u1/s2.json",
        "points/u1/s1.json",
        "points/u10/s1.json",
        "maps/t1.json",
    ] {
        b.put(key, Bytes::from_static(b"{}"), "application/json")
            .await
            .unwrap();
    }
    assert_eq!(
        b.list("points/u1/").await.unwrap(),
        vec!["points/u1/s1.json", "points/u1/s2.json"]
    );
    assert_eq!(b.list("points/").await.unwrap().len(), 3);
    assert!(b.list("nothing/").await.unwrap().is_empty());
}

async fn bad_keys_are_refused(t: TestPorts) {
    let b = &t.ports.blobs;
    for key in [
        "",
        "../etc/passwd",
        "a//b",
        "a/./b",
        "/abs",
        "spaces are bad",
        "a/..",
        &"k".repeat(600),
    ] {
        assert!(
            b.put(key, Bytes::from_static(b"x"), "text/plain")
                .await
                .is_err(),
            "{key:?} accepted"
        );
        assert!(b.get(key).await.is_err(), "{key:?} readable");
    }
}

async fn presigned_urls_where_the_backend_has_them(t: TestPorts, expect_url: bool) {
    let b = &t.ports.blobs;
    b.put(
        "packs/u1/p.zip",
        Bytes::from_static(b"PK"),
        "application/zip",
    )
    .await
    .unwrap();
    let url = b
        .presigned_get("packs/u1/p.zip", Duration::from_secs(300), Some("p.zip"))
        .await
        .unwrap();
    assert_eq!(url.is_some(), expect_url);
    if let Some(url) = url {
        assert!(
            url.contains("X-Amz-Signature") && url.contains("X-Amz-Expires=300"),
            "{url}"
        );
        let fetched = paddock_clients::identity_providers::http_client()
            .get(&url)
            .send()
            .await
            .unwrap();
        assert_eq!(fetched.status(), 200);
        assert_eq!(fetched.bytes().await.unwrap().as_ref(), b"PK");
    }
}

/// What is taken for checking is what is published, whatever is written to the key after it
/// was taken; the staging file is created exclusively.
async fn what_is_taken_is_what_is_published(t: TestPorts, staging: tempfile::TempDir) {
    let b = &t.ports.blobs;
    let file = staging.path().join("taken.zip");
    assert_eq!(
        b.take_to_file("uploads/p1.zip", "uploads/p1.held.zip", &file)
            .await
            .unwrap(),
        None,
        "nothing to take"
    );
    let checked: Vec<u8> = (0..=255u8).cycle().take(200_000).collect();
    b.put(
        "uploads/p1.zip",
        Bytes::from(checked.clone()),
        "application/zip",
    )
    .await
    .unwrap();
    let taken = b
        .take_to_file("uploads/p1.zip", "uploads/p1.held.zip", &file)
        .await
        .unwrap()
        .expect("taken");
    assert_eq!(taken.length, checked.len() as u64);
    assert_eq!(
        std::fs::read(&file).unwrap(),
        checked,
        "the file holds the object"
    );
    assert!(
        b.get("uploads/p1.zip").await.unwrap().is_none(),
        "the key no longer holds it"
    );
    // A different object of the same length written to the key after the take.
    let swapped = vec![b'!'; checked.len()];
    b.put("uploads/p1.zip", Bytes::from(swapped), "application/zip")
        .await
        .unwrap();
    assert!(
        b.publish_taken(&taken, &file, "packs/p1.zip")
            .await
            .unwrap()
    );
    assert_eq!(
        b.get("packs/p1.zip").await.unwrap().unwrap().as_ref(),
        checked.as_slice(),
        "exactly what was taken"
    );
    assert!(
        b.get("uploads/p1.held.zip").await.unwrap().is_none(),
        "nothing held"
    );
    // The staging file is never replaced: a take onto an existing file fails.
    std::fs::write(&file, b"planted").unwrap();
    assert!(
        b.take_to_file("uploads/p1.zip", "uploads/p1.held.zip", &file)
            .await
            .is_err(),
        "an existing staging file is not overwritten"
    );
    assert_eq!(std::fs::read(&file).unwrap(), b"planted");
}

mod embedded {
    use super::*;
    #[tokio::test]
    async fn put_get_replace_delete() {
        super::put_get_replace_delete(ports(Backend::Embedded).await).await;
    }
    #[tokio::test]
    async fn list_by_prefix() {
        super::list_by_prefix(ports(Backend::Embedded).await).await;
    }
    #[tokio::test]
    async fn bad_keys_are_refused() {
        super::bad_keys_are_refused(ports(Backend::Embedded).await).await;
    }
    #[tokio::test]
    async fn what_is_taken_is_what_is_published() {
        let staging = tempfile::tempdir().unwrap();
        super::what_is_taken_is_what_is_published(ports(Backend::Embedded).await, staging).await;
    }
    /// Staging on another file system than the data directory (a tmpfs `/tmp` is common):
    /// the file cannot be moved, so it is copied from one open version, then moved back by a
    /// copy written beside its target.
    #[tokio::test]
    async fn what_is_taken_is_what_is_published_across_file_systems() {
        use std::os::unix::fs::MetadataExt;
        let t = ports(Backend::Embedded).await;
        let staging = tempfile::tempdir_in("/dev/shm").expect("a tmpfs at /dev/shm");
        let device = |p: &std::path::Path| std::fs::metadata(p).unwrap().dev();
        assert_ne!(
            device(staging.path()),
            device(t.dir.path()),
            "the staging directory must be on another file system for this test"
        );
        super::what_is_taken_is_what_is_published(t, staging).await;
    }
    #[tokio::test]
    async fn no_presigned_urls() {
        super::presigned_urls_where_the_backend_has_them(ports(Backend::Embedded).await, false)
            .await;
    }
}

mod s3_moto {
    use super::*;
    #[tokio::test]
    async fn put_get_replace_delete() {
        super::put_get_replace_delete(ports(Backend::Aws).await).await;
    }
    #[tokio::test]
    async fn list_by_prefix() {
        super::list_by_prefix(ports(Backend::Aws).await).await;
    }
    #[tokio::test]
    async fn bad_keys_are_refused() {
        super::bad_keys_are_refused(ports(Backend::Aws).await).await;
    }
    #[tokio::test]
    async fn what_is_taken_is_what_is_published() {
        let staging = tempfile::tempdir().unwrap();
        super::what_is_taken_is_what_is_published(ports(Backend::Aws).await, staging).await;
    }
    #[tokio::test]
    async fn presigned_urls_download() {
        super::presigned_urls_where_the_backend_has_them(ports(Backend::Aws).await, true).await;
    }
}
