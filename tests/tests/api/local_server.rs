//! The local server as an attacker on the machine or the network would try it: a client that
//! trickles its request headers to hold a connection open, and other accounts of the machine
//! reading the data directory.

use paddock_core::ports::{Clock, SystemClock};
use paddock_tests::{envelope, session_body, spawn_with, test_settings};
use std::sync::Arc;
use std::time::{Duration, Instant};
use tokio::io::{AsyncReadExt, AsyncWriteExt};

#[tokio::test(flavor = "multi_thread")]
async fn a_connection_trickling_its_headers_is_closed_at_the_deadline() {
    let dir = tempfile::tempdir().unwrap();
    let mut settings = test_settings(&dir);
    settings.header_read_timeout = Duration::from_secs(1);
    let clock: Arc<dyn Clock> = Arc::new(SystemClock);
    let ports = paddock_runtime::wiring::embedded_ports(&settings, clock).unwrap();
    let app = spawn_with(settings, ports, dir).await;
    let address = app.address.trim_start_matches("http://").to_owned();

    let stream = tokio::net::TcpStream::connect(&address).await.unwrap();
    let (mut reader, mut writer) = stream.into_split();
    let started = Instant::now();
    // A header byte every 100 ms, never the blank line that ends them: 30 s of bytes if the
    // server let it.
    let trickle = tokio::spawn(async move {
        let request = b"GET /health/live HTTP/1.1\r\nHost: x\r\n";
        writer.write_all(request).await?;
        for _ in 0..300 {
            tokio::time::sleep(Duration::from_millis(100)).await;
            writer.write_all(b"X").await?;
        }
        Ok::<_, std::io::Error>(())
    });
    let mut seen = Vec::new();
    let closed = tokio::time::timeout(Duration::from_secs(10), async {
        let mut buffer = [0u8; 1024];
        loop {
            match reader.read(&mut buffer).await {
                Ok(0) | Err(_) => return,
                Ok(n) => seen.extend_from_slice(&buffer[..n]),
            }
        }
    })
    .await;
    let elapsed = started.elapsed();
    assert!(closed.is_ok(), "still open after 10 s");
    assert!(
        elapsed >= Duration::from_millis(900) && elapsed < Duration::from_secs(3),
        "closed after {elapsed:?}, the deadline is 1 s"
    );
    // Nothing was served to it (at most a 408 saying why).
    let answer = String::from_utf8_lossy(&seen);
    assert!(
        answer.is_empty() || answer.starts_with("HTTP/1.1 408"),
        "{answer}"
    );
    // The trickler's writes fail once the server has closed (or it gave up first).
    let _ = tokio::time::timeout(Duration::from_secs(5), trickle).await;

    // A client that sends its request at once is served as before, on a kept-alive
    // connection too.
    let (status, body) = envelope(app.get("/health/live").await).await;
    assert_eq!(status, 200, "{body}");
    let (status, _) = envelope(app.get("/health/live").await).await;
    assert_eq!(status, 200);
}

#[cfg(unix)]
fn mode(path: &std::path::Path) -> u32 {
    use std::os::unix::fs::PermissionsExt;
    std::fs::metadata(path)
        .unwrap_or_else(|e| panic!("{}: {e}", path.display()))
        .permissions()
        .mode()
        & 0o777
}

/// Every file the embedded backend writes is its user's only: 0600 files, 0700 directories,
/// whatever the process's umask would allow.
#[cfg(unix)]
#[tokio::test(flavor = "multi_thread")]
async fn the_data_directory_is_private_to_the_servers_user() {
    let parent = tempfile::tempdir().unwrap();
    let mut settings = test_settings(&parent);
    settings.data_dir = parent.path().join("data").join("paddock");
    let data = settings.data_dir.clone();
    let clock: Arc<dyn Clock> = Arc::new(SystemClock);
    let ports = paddock_runtime::wiring::embedded_ports(&settings, clock).unwrap();
    let app = spawn_with(settings, ports, parent).await;
    // Data in every place: items (and the WAL), a blob of track points in nested
    // directories, the generated signing key.
    let (token, _) = app.driver("Umask").await;
    let body = session_body(
        "u-1",
        "2026-11-01T10:00:00Z",
        &[(100_000, true, 0.9), (99_000, true, 0.9)],
        400,
    );
    let (status, res) = envelope(app.post_json_auth("/v1/sessions", &body, &token).await).await;
    assert_eq!(status, 201, "{res}");

    let mut checked = Vec::new();
    let mut stack = vec![data.clone()];
    while let Some(dir) = stack.pop() {
        assert_eq!(mode(&dir), 0o700, "directory {}", dir.display());
        checked.push(dir.clone());
        for entry in std::fs::read_dir(&dir).unwrap() {
            let path = entry.unwrap().path();
            if path.is_dir() {
                stack.push(path);
            } else {
                assert_eq!(mode(&path), 0o600, "file {}", path.display());
                checked.push(path);
            }
        }
    }
    assert_eq!(mode(data.parent().unwrap()), 0o700, "created parents too");
    let names: Vec<String> = checked
        .iter()
        .map(|p| p.strip_prefix(&data).unwrap().display().to_string())
        .collect();
    for expected in [
        "paddock.db",
        "paddock.db-wal",
        "paddock.lock",
        "secrets.json",
        "blobs",
    ] {
        assert!(
            names.iter().any(|n| n == expected),
            "{expected} in {names:?}"
        );
    }
    assert!(
        names
            .iter()
            .any(|n| n.starts_with("blobs/tracks/") && n.contains("/points/")),
        "a track-points blob in {names:?}"
    );
}

/// A data directory written by an earlier version (files 0644, directories 0755) is closed
/// when the server opens it.
#[cfg(unix)]
#[tokio::test(flavor = "multi_thread")]
async fn an_earlier_readable_data_directory_is_narrowed_at_start() {
    use std::os::unix::fs::PermissionsExt;
    let parent = tempfile::tempdir().unwrap();
    let mut settings = test_settings(&parent);
    settings.data_dir = parent.path().join("data");
    let data = settings.data_dir.clone();
    let open = |path: &std::path::Path, mode: u32| {
        std::fs::set_permissions(path, std::fs::Permissions::from_mode(mode)).unwrap();
    };
    std::fs::create_dir_all(data.join("blobs/tracks/t/points")).unwrap();
    for dir in [
        "blobs",
        "blobs/tracks",
        "blobs/tracks/t",
        "blobs/tracks/t/points",
    ] {
        open(&data.join(dir), 0o755);
    }
    let old_blob = data.join("blobs/tracks/t/points/old.bin");
    std::fs::write(&old_blob, b"points").unwrap();
    open(&old_blob, 0o644);
    let key = r#"{"jwtSigningKey": "an earlier key of thirty-two bytes or more, kept"}"#;
    std::fs::write(data.join("secrets.json"), key).unwrap();
    std::fs::write(data.join("paddock.db"), b"").unwrap();
    for file in ["secrets.json", "paddock.db"] {
        open(&data.join(file), 0o644);
    }
    let clock: Arc<dyn Clock> = Arc::new(SystemClock);
    let ports = paddock_runtime::wiring::embedded_ports(&settings, clock).unwrap();
    let app = spawn_with(settings, ports, parent).await;
    let (status, _) = envelope(app.get("/health/ready").await).await;
    assert_eq!(status, 200);
    assert_eq!(mode(&data.join("paddock.db")), 0o600);
    assert_eq!(mode(&data.join("paddock.lock")), 0o600);
    assert_eq!(mode(&data.join("secrets.json")), 0o600);
    // The blob root is closed, which closes everything beneath it.
    assert_eq!(mode(&data.join("blobs")), 0o700);
    // The earlier key is still the one in use: the file was narrowed, not replaced.
    assert_eq!(
        std::fs::read_to_string(data.join("secrets.json")).unwrap(),
        key
    );
}
