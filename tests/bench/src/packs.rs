//! Share packs: direct upload and download throughput of a 4 MB pack against bare axum moving
//! the same bytes, and the peak resident memory while four clients push 100 MB packs through
//! upload URLs at once.

use anyhow::Context;
use axum::Router;
use axum::body::Bytes;
use axum::routing::{get, post};
use sha2::{Digest, Sha256};
use std::io::Write;
use std::net::SocketAddr;
use std::path::Path;
use std::time::{Duration, Instant};

/// `len` bytes that do not compress (a simple generator; the same every run).
fn noise(len: usize, seed: u32) -> Vec<u8> {
    let mut state = seed;
    (0..len)
        .map(|_| {
            state = state.wrapping_mul(1_664_525).wrapping_add(1_013_904_223);
            (state >> 24) as u8
        })
        .collect()
}

/// A ZIP of `entries` stored (uncompressed) entries of `entry_len` bytes, written to `path`.
fn write_zip(path: &Path, entries: usize, entry_len: usize) -> anyhow::Result<()> {
    let file = std::fs::File::create(path)?;
    let mut zip = zip::ZipWriter::new(std::io::BufWriter::new(file));
    let options =
        zip::write::SimpleFileOptions::default().compression_method(zip::CompressionMethod::Stored);
    for i in 0..entries {
        zip.start_file(format!("laps/{i}.bin"), options)?;
        zip.write_all(&noise(entry_len, i as u32))?;
    }
    zip.finish()?.flush()?;
    Ok(())
}

fn hex(bytes: &[u8]) -> String {
    paddock_core::hashing::hex(bytes)
}

/// MB/s moving `bytes` `connections` at a time for `seconds` with `send`.
async fn throughput<F, Fut>(
    connections: usize,
    seconds: Duration,
    bytes: usize,
    send: F,
) -> anyhow::Result<(f64, usize)>
where
    F: Fn() -> Fut + Clone + Send + 'static,
    Fut: std::future::Future<Output = anyhow::Result<bool>> + Send,
{
    let started = Instant::now();
    let deadline = started + seconds;
    let tasks: Vec<_> = (0..connections)
        .map(|_| {
            let send = send.clone();
            tokio::spawn(async move {
                let (mut done, mut errors) = (0usize, 0usize);
                while Instant::now() < deadline {
                    if send().await? {
                        done += 1;
                    } else {
                        errors += 1;
                    }
                }
                anyhow::Ok((done, errors))
            })
        })
        .collect();
    let (mut done, mut errors) = (0, 0);
    for t in tasks {
        let (d, e) = t.await??;
        done += d;
        errors += e;
    }
    let mb = (done * bytes) as f64 / (1024.0 * 1024.0);
    Ok((mb / started.elapsed().as_secs_f64(), errors))
}

async fn spawn_bare(download: &'static [u8]) -> anyhow::Result<SocketAddr> {
    let router = Router::new()
        .route(
            "/upload",
            post(|body: Bytes| async move { body.len().to_string() }),
        )
        .route("/download", get(move || async move { download }))
        .layer(axum::extract::DefaultBodyLimit::max(8 * 1024 * 1024));
    let listener = tokio::net::TcpListener::bind("127.0.0.1:0").await?;
    let addr = listener.local_addr()?;
    tokio::spawn(async move { axum::serve(listener, router).await });
    Ok(addr)
}

/// Direct upload and download of a 4 MB pack, each against bare axum with the same bytes.
pub(crate) async fn direct(
    paddock: SocketAddr,
    access: &str,
    seconds: Duration,
) -> anyhow::Result<()> {
    let dir = tempfile::tempdir()?;
    let path = dir.path().join("pack.zip");
    write_zip(&path, 4, 1024 * 1024 - 200)?;
    let pack: &'static [u8] = Box::leak(std::fs::read(&path)?.into_boxed_slice());
    let bare = spawn_bare(pack).await?;
    let http = reqwest::Client::new();
    let connections = 2;

    let (base_up, _) = throughput(connections, seconds, pack.len(), {
        let http = http.clone();
        move || {
            let http = http.clone();
            async move {
                let res = http
                    .post(format!("http://{bare}/upload"))
                    .body(pack)
                    .send()
                    .await?;
                Ok(res.status().is_success())
            }
        }
    })
    .await?;
    let token = access.to_owned();
    let (up, up_errors) = throughput(connections, seconds, pack.len(), {
        let http = http.clone();
        move || {
            let (http, token) = (http.clone(), token.clone());
            async move {
                let res = http
                    .post(format!("http://{paddock}/v1/sharepacks?name=bench"))
                    .bearer_auth(&token)
                    .header("content-type", "application/zip")
                    .body(pack)
                    .send()
                    .await?;
                Ok(res.status().as_u16() == 201)
            }
        }
    })
    .await?;
    println!(
        "{:<34} {:>10.1} MB/s ({} bytes, {connections} connections)",
        "baseline: bare axum takes the body",
        base_up,
        pack.len()
    );
    println!(
        "{:<34} {:>10.1} MB/s   errors {up_errors}   ratio {:.2}x",
        "paddock:  POST /v1/sharepacks",
        up,
        up / base_up
    );

    // One stored pack, downloaded over and over.
    let created: serde_json::Value = http
        .post(format!("http://{paddock}/v1/sharepacks?name=bench"))
        .bearer_auth(access)
        .header("content-type", "application/zip")
        .body(pack)
        .send()
        .await?
        .json()
        .await?;
    let id = created["data"]["id"]
        .as_str()
        .context("no pack id")?
        .to_owned();
    let (base_down, _) = throughput(connections, seconds, pack.len(), {
        let http = http.clone();
        move || {
            let http = http.clone();
            async move {
                Ok(http
                    .get(format!("http://{bare}/download"))
                    .send()
                    .await?
                    .bytes()
                    .await?
                    .len()
                    == pack.len())
            }
        }
    })
    .await?;
    let token = access.to_owned();
    let (down, down_errors) = throughput(connections, seconds, pack.len(), {
        let http = http.clone();
        move || {
            let (http, token, id) = (http.clone(), token.clone(), id.clone());
            async move {
                let res = http
                    .get(format!("http://{paddock}/v1/sharepacks/{id}/download"))
                    .bearer_auth(&token)
                    .send()
                    .await?;
                Ok(res.bytes().await?.len() == pack.len())
            }
        }
    })
    .await?;
    println!(
        "{:<34} {:>10.1} MB/s",
        "baseline: bare axum sends the bytes", base_down
    );
    println!(
        "{:<34} {:>10.1} MB/s   errors {down_errors}   ratio {:.2}x",
        "paddock:  GET .../download",
        down,
        down / base_down
    );
    Ok(())
}

/// Peak resident memory while four clients each push a 100 MB pack through an upload URL
/// and complete it, against the process's size when idle. The clients stream from disk, so
/// the figure is the server's.
pub(crate) async fn large_uploads_memory(paddock: SocketAddr, access: &str) -> anyhow::Result<()> {
    const CLIENTS: usize = 4;
    let dir = tempfile::tempdir()?;
    let path = dir.path().join("big.zip");
    // Just under the 100 MiB a pack may be.
    write_zip(&path, 99, 1024 * 1024)?;
    let size = std::fs::metadata(&path)?.len();
    let sha256 = {
        let mut hasher = Sha256::new();
        std::io::copy(&mut std::fs::File::open(&path)?, &mut hasher)?;
        hex(&hasher.finalize())
    };
    tokio::time::sleep(Duration::from_millis(300)).await;
    let idle = crate::status_bytes("VmRSS:").context("no /proc/self/status")?;
    let reset = std::fs::write("/proc/self/clear_refs", "5").is_ok();
    let sampling = std::sync::Arc::new(std::sync::atomic::AtomicBool::new(true));
    let sampler = {
        let sampling = sampling.clone();
        tokio::spawn(async move {
            let mut peak = 0;
            while sampling.load(std::sync::atomic::Ordering::Relaxed) {
                peak = peak.max(crate::status_bytes("VmRSS:").unwrap_or(0));
                tokio::time::sleep(Duration::from_millis(2)).await;
            }
            peak
        })
    };
    let started = Instant::now();
    let http = reqwest::Client::new();
    let tasks: Vec<_> = (0..CLIENTS)
        .map(|_| {
            let (http, token, path, sha256) = (
                http.clone(),
                access.to_owned(),
                path.clone(),
                sha256.clone(),
            );
            tokio::spawn(async move {
                let ticket: serde_json::Value = http
                    .post(format!("http://{paddock}/v1/sharepacks/uploads"))
                    .bearer_auth(&token)
                    .json(&serde_json::json!({"name": "big", "sizeBytes": size, "sha256": sha256}))
                    .send()
                    .await?
                    .json()
                    .await?;
                let url = ticket["data"]["uploadUrl"]
                    .as_str()
                    .with_context(|| format!("no upload URL: {ticket}"))?;
                let id = ticket["data"]["id"].as_str().context("no id")?;
                let file = tokio::fs::File::open(&path).await?;
                let body = reqwest::Body::wrap_stream(tokio_util::io::ReaderStream::new(file));
                let put = http
                    .put(url)
                    .header("content-length", size)
                    .body(body)
                    .send()
                    .await?;
                anyhow::ensure!(put.status().is_success(), "PUT: {}", put.status());
                let done = http
                    .post(format!("http://{paddock}/v1/sharepacks/{id}/complete"))
                    .bearer_auth(&token)
                    .send()
                    .await?;
                anyhow::ensure!(
                    done.status().is_success(),
                    "complete: {}",
                    done.text().await?
                );
                anyhow::Ok(())
            })
        })
        .collect();
    for t in tasks {
        t.await??;
    }
    let elapsed = started.elapsed();
    sampling.store(false, std::sync::atomic::Ordering::Relaxed);
    let sampled = sampler.await?;
    let peak = if reset {
        crate::status_bytes("VmHWM:")
            .unwrap_or(sampled)
            .max(sampled)
    } else {
        sampled
    };
    let mb = |b: u64| b as f64 / (1024.0 * 1024.0);
    println!(
        "{:<34} idle {:>6.1} MB   peak {:>6.1} MB   above idle {:>6.1} MB (target under 64)   {:.1} MB/s in all",
        "paddock:  4 x 99 MiB through URLs",
        mb(idle),
        mb(peak),
        mb(peak.saturating_sub(idle)),
        mb(size * CLIENTS as u64) / elapsed.as_secs_f64()
    );
    Ok(())
}
