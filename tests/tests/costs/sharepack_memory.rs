//! The memory of a pack check stays bounded whatever the archive declares: a 20 MiB pack
//! whose end record declares 400,000 entries is refused before its directory is parsed, with
//! the server's resident memory growing less than 20 MB. The server runs in this process,
//! and the test runs alone in a process of its own, so the process's memory is the server's;
//! both backends run one after the other.

use bytes::Bytes;
use paddock_tests::own_process::alone;
use paddock_tests::process_memory::status_bytes;
use paddock_tests::{Backend, TestApp, envelope, spawn_configured};
use serde_json::{Value, json};
use sha2::{Digest, Sha256};
use std::io::Write;
use std::sync::Arc;
use std::sync::atomic::{AtomicBool, Ordering};
use std::time::Duration;

const ENTRIES: u32 = 400_000;
const BUDGET: u64 = 20 * 1000 * 1000;

/// An archive of `n` central directory records (six-digit names, all pointing at offset 0)
/// and its zip64 end records, as a hostile tool writes it: about 52 bytes an entry.
fn declared_entries(n: u32) -> Vec<u8> {
    let mut out = Vec::with_capacity(n as usize * 52 + 100);
    for i in 0..n {
        out.extend_from_slice(b"PK\x01\x02");
        for v in [20u16, 20, 0, 0, 0, 0x21] {
            out.extend_from_slice(&v.to_le_bytes());
        }
        out.extend_from_slice(&[0u8; 12]); // crc, sizes
        for v in [6u16, 0, 0, 0, 0] {
            out.extend_from_slice(&v.to_le_bytes());
        }
        out.extend_from_slice(&[0u8; 8]); // external attributes, offset
        write!(out, "{:06}", i % 1_000_000).unwrap();
    }
    let directory_size = out.len() as u64;
    let end64 = out.len() as u64;
    out.extend_from_slice(b"PK\x06\x06");
    out.extend_from_slice(&44u64.to_le_bytes());
    out.extend_from_slice(&[45, 0, 45, 0]);
    out.extend_from_slice(&[0u8; 8]); // disks
    for v in [u64::from(n), u64::from(n), directory_size, 0] {
        out.extend_from_slice(&v.to_le_bytes());
    }
    out.extend_from_slice(b"PK\x06\x07");
    out.extend_from_slice(&0u32.to_le_bytes());
    out.extend_from_slice(&end64.to_le_bytes());
    out.extend_from_slice(&1u32.to_le_bytes());
    out.extend_from_slice(b"PK\x05\x06");
    for v in [0u16, 0, u16::MAX, u16::MAX] {
        out.extend_from_slice(&v.to_le_bytes());
    }
    out.extend_from_slice(&u32::MAX.to_le_bytes());
    out.extend_from_slice(&u32::MAX.to_le_bytes());
    out.extend_from_slice(&0u16.to_le_bytes());
    out
}

fn sha(bytes: &[u8]) -> String {
    paddock_core::hashing::hex(&Sha256::digest(bytes))
}

/// Starts an upload of `bytes` and PUTs them to its URL; answers the pack id.
async fn uploaded(app: &TestApp, token: &str, bytes: Bytes) -> String {
    let body = json!({"name": "Pack", "sizeBytes": bytes.len(), "sha256": sha(&bytes)});
    let (status, ticket) = envelope(
        app.post_json_auth("/v1/sharepacks/uploads", &body, token)
            .await,
    )
    .await;
    assert_eq!(status, 201, "{ticket}");
    let url = ticket["data"]["uploadUrl"].as_str().unwrap();
    let put = reqwest::Client::new()
        .put(url)
        .header("content-type", "application/zip")
        .body(bytes)
        .send()
        .await
        .unwrap();
    assert_eq!(put.status(), 200);
    ticket["data"]["id"].as_str().unwrap().to_owned()
}

async fn complete(app: &TestApp, token: &str, id: &str) -> (u16, Value) {
    envelope(
        app.post_json_auth(&format!("/v1/sharepacks/{id}/complete"), &json!({}), token)
            .await,
    )
    .await
}

/// The peak resident memory of this process while `work` runs, above its resident memory
/// just before: the kernel's high-water mark reset first where allowed, backed by sampling.
async fn growth_during<T>(work: impl std::future::Future<Output = T>) -> (T, u64, u64) {
    tokio::time::sleep(Duration::from_millis(300)).await;
    let before = status_bytes("VmRSS:").expect("/proc/self/status");
    let reset = std::fs::write("/proc/self/clear_refs", "5").is_ok();
    let sampling = Arc::new(AtomicBool::new(true));
    let sampler = {
        let sampling = sampling.clone();
        tokio::spawn(async move {
            let mut peak = 0;
            while sampling.load(Ordering::Relaxed) {
                peak = peak.max(status_bytes("VmRSS:").unwrap_or(0));
                tokio::time::sleep(Duration::from_millis(1)).await;
            }
            peak
        })
    };
    let out = work.await;
    sampling.store(false, Ordering::Relaxed);
    let sampled = sampler.await.unwrap();
    let peak = if reset {
        status_bytes("VmHWM:").unwrap_or(sampled).max(sampled)
    } else {
        sampled
    };
    (out, before, peak.saturating_sub(before))
}

async fn a_pack_declaring_400000_entries_is_refused_in_bounded_memory(backend: Backend) {
    let (app, _) = spawn_configured(backend, |s| {
        s.sharepacks.uploads_per_minute = 100;
    })
    .await;
    let (token, _) = app.driver("Hoarder").await;
    // A warm-up through the same path, so the first-use allocations of the server (threads,
    // connections, caches) are not counted against the check.
    let small = declared_entries(3_000);
    let id = uploaded(&app, &token, Bytes::from(small)).await;
    assert_eq!(complete(&app, &token, &id).await.0, 422);

    let pack = Bytes::from(declared_entries(ENTRIES));
    assert!(pack.len() > 19 * 1024 * 1024, "{} bytes", pack.len());
    let id = uploaded(&app, &token, pack.clone()).await;
    let ((status, res), before, growth) = growth_during(complete(&app, &token, &id)).await;
    assert_eq!(status, 422, "{res}");
    assert_eq!(
        res["error"],
        format!("the archive declares {ENTRIES} entries; at most 2000")
    );
    let mb = |b: u64| b as f64 / 1e6;
    println!(
        "{backend:?}: a {:.1} MB pack declaring {ENTRIES} entries refused; resident memory {:.1} MB before, grew {:.2} MB at most (budget {:.0} MB)",
        mb(pack.len() as u64),
        mb(before),
        mb(growth),
        mb(BUDGET)
    );
    assert!(growth < BUDGET, "resident memory grew {growth} bytes");
    if backend == Backend::Aws {
        // For scale, in the same run: what parsing that directory takes (what the check did
        // before it read the count from the end record).
        let (parsed, _, parse_growth) = growth_during(tokio::task::spawn_blocking(move || {
            zip::ZipArchive::new(std::io::Cursor::new(pack)).map(|a| a.len())
        }))
        .await;
        println!(
            "for scale: parsing its directory ({:?}) grew resident memory {:.1} MB",
            parsed.unwrap().map_err(|e| e.to_string()),
            mb(parse_growth)
        );
    }
}

#[tokio::test(flavor = "multi_thread")]
async fn a_pack_declaring_400000_entries_is_refused_with_bounded_memory_on_both_backends() {
    if !alone(
        "sharepack_memory::a_pack_declaring_400000_entries_is_refused_with_bounded_memory_on_both_backends",
    ) {
        return;
    }
    a_pack_declaring_400000_entries_is_refused_in_bounded_memory(Backend::Embedded).await;
    a_pack_declaring_400000_entries_is_refused_in_bounded_memory(Backend::Aws).await;
}
