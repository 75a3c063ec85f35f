//! What the main endpoints cost per request in the units AWS bills: DynamoDB read and write
//! units as DynamoDB Local reports them (`ReturnConsumedCapacity`), S3 requests by price
//! class, and the time the handler took here; then what one upload sets off after its answer
//! (the outbox relay and each consumer). The routes are the Lambda functions' own (no local
//! workers run meanwhile), over the AWS adapters against the emulators.
//!
//! Printed with `RUST_TEST_NOCAPTURE=1 ./tests/run.sh --test costs request_costs::`; infra/COSTS.md
//! turns the figures into dollars.

use async_trait::async_trait;
use axum::body::Body;
use axum::extract::ConnectInfo;
use bytes::Bytes;
use http::{Request, StatusCode};
use http_body_util::BodyExt;
use paddock_api::state::AppState;
use paddock_aws::DynamoItemStore;
use paddock_core::ports::blobs::{BlobStream, Taken};
use paddock_core::ports::items::Query;
use paddock_core::ports::{BlobError, BlobStore};
use paddock_core::queues::QueueName;
use paddock_core::tables::Table;
use paddock_tests::{Backend, ports, session_body};
use serde_json::{Value, json};
use std::net::SocketAddr;
use std::path::Path;
use std::sync::Arc;
use std::sync::atomic::{AtomicU64, Ordering};
use std::time::{Duration, Instant};
use tower::ServiceExt;

/// A blob store that counts the S3 requests of each price class it makes.
struct CountingBlobs {
    inner: Arc<dyn BlobStore>,
    /// PUT, COPY, POST and LIST requests.
    puts: AtomicU64,
    /// GET and all other requests.
    gets: AtomicU64,
}

impl CountingBlobs {
    fn put_class(&self) {
        self.puts.fetch_add(1, Ordering::Relaxed);
    }
    fn get_class(&self) {
        self.gets.fetch_add(1, Ordering::Relaxed);
    }
}

#[async_trait]
impl BlobStore for CountingBlobs {
    async fn put(&self, key: &str, bytes: Bytes, content_type: &str) -> Result<(), BlobError> {
        self.put_class();
        self.inner.put(key, bytes, content_type).await
    }
    async fn get(&self, key: &str) -> Result<Option<Bytes>, BlobError> {
        self.get_class();
        self.inner.get(key).await
    }
    async fn delete(&self, key: &str) -> Result<(), BlobError> {
        // DELETE requests are free.
        self.inner.delete(key).await
    }
    async fn list(&self, prefix: &str) -> Result<Vec<String>, BlobError> {
        self.put_class();
        self.inner.list(prefix).await
    }
    async fn presigned_get(
        &self,
        key: &str,
        ttl: Duration,
        download_name: Option<&str>,
    ) -> Result<Option<String>, BlobError> {
        // Signing is local; the client's GET is counted where the model needs it.
        self.inner.presigned_get(key, ttl, download_name).await
    }
    async fn presigned_put(
        &self,
        key: &str,
        ttl: Duration,
        length: u64,
    ) -> Result<Option<String>, BlobError> {
        self.inner.presigned_put(key, ttl, length).await
    }
    async fn put_file(&self, key: &str, path: &Path, content_type: &str) -> Result<(), BlobError> {
        self.put_class();
        self.inner.put_file(key, path, content_type).await
    }
    async fn take_to_file(
        &self,
        key: &str,
        hold: &str,
        path: &Path,
    ) -> Result<Option<Taken>, BlobError> {
        // A copy (PUT class), a GET and a delete (free).
        self.put_class();
        self.get_class();
        self.inner.take_to_file(key, hold, path).await
    }
    async fn publish_taken(&self, taken: &Taken, path: &Path, to: &str) -> Result<bool, BlobError> {
        // A copy (PUT class) and a delete (free).
        self.put_class();
        self.inner.publish_taken(taken, path, to).await
    }
    async fn get_stream(&self, key: &str) -> Result<Option<BlobStream>, BlobError> {
        self.get_class();
        self.inner.get_stream(key).await
    }
}

/// What one request or one event cost.
struct Cost {
    what: String,
    read_units: f64,
    write_units: f64,
    s3_puts: u64,
    s3_gets: u64,
    millis: f64,
}

struct Meter {
    items: Arc<DynamoItemStore>,
    blobs: Arc<CountingBlobs>,
    costs: Vec<Cost>,
}

impl Meter {
    /// Runs `work` and records what it consumed under `what`.
    async fn measure<T>(&mut self, what: &str, work: impl std::future::Future<Output = T>) -> T {
        let before = self.items.consumed();
        let (puts, gets) = (
            self.blobs.puts.load(Ordering::Relaxed),
            self.blobs.gets.load(Ordering::Relaxed),
        );
        let started = Instant::now();
        let out = work.await;
        let millis = started.elapsed().as_secs_f64() * 1000.0;
        let after = self.items.consumed();
        self.costs.push(Cost {
            what: what.to_owned(),
            read_units: after.read_units - before.read_units,
            write_units: after.write_units - before.write_units,
            s3_puts: self.blobs.puts.load(Ordering::Relaxed) - puts,
            s3_gets: self.blobs.gets.load(Ordering::Relaxed) - gets,
            millis,
        });
        out
    }
}

/// Sends one request through the routes, as API Gateway would hand it to a function.
async fn call(
    router: &axum::Router,
    method: &str,
    path: &str,
    token: Option<&str>,
    content_type: Option<&str>,
    body: Vec<u8>,
) -> (StatusCode, Value) {
    let mut request = Request::builder().method(method).uri(path);
    if let Some(token) = token {
        request = request.header("authorization", format!("Bearer {token}"));
    }
    if let Some(content_type) = content_type {
        request = request.header("content-type", content_type);
    }
    let mut request = request.body(Body::from(body)).unwrap();
    request
        .extensions_mut()
        .insert(ConnectInfo(SocketAddr::from(([192, 0, 2, 7], 50_000))));
    let response = router.clone().oneshot(request).await.unwrap();
    let status = response.status();
    let bytes = response.into_body().collect().await.unwrap().to_bytes();
    let body = serde_json::from_slice(&bytes).unwrap_or(Value::Null);
    (status, body)
}

async fn json_call(
    router: &axum::Router,
    method: &str,
    path: &str,
    token: Option<&str>,
    body: Option<Value>,
) -> (StatusCode, Value) {
    match body {
        Some(body) => {
            let bytes = serde_json::to_vec(&body).unwrap();
            call(router, method, path, token, Some("application/json"), bytes).await
        }
        None => call(router, method, path, token, None, Vec::new()).await,
    }
}

fn thirty_laps() -> Vec<(i64, bool, f64)> {
    (0..30)
        .map(|i| (92_000 + i * 37, i % 7 != 3, 0.8 + (i % 5) as f64 * 0.0371))
        .collect()
}

fn small_pack() -> Vec<u8> {
    use std::io::Write;
    let mut zip = zip::ZipWriter::new(std::io::Cursor::new(Vec::new()));
    zip.start_file(
        "setup.json",
        zip::write::SimpleFileOptions::default()
            .compression_method(zip::CompressionMethod::Deflated),
    )
    .unwrap();
    zip.write_all(
        json!({"car": "Porsche 992 GT3 R", "tyres": "dry", "pressures": [26.4, 26.5, 26.1, 26.2]})
            .to_string()
            .as_bytes(),
    )
    .unwrap();
    zip.finish().unwrap().into_inner()
}

/// The events an upload left in the outbox, oldest first.
async fn pending_events(ports: &paddock_core::ports::Ports) -> Vec<paddock_core::ports::Item> {
    let mut items = Vec::new();
    for shard in 0..paddock_core::outbox::SHARDS {
        let page = ports
            .items
            .query(Query::partition(Table::Outbox, format!("OUTBOX#{shard:02}")).limit(100))
            .await
            .unwrap();
        items.extend(page.items);
    }
    items.sort_by(|a, b| a["sk"].as_str().cmp(&b["sk"].as_str()));
    items
}

/// Relays each pending event as the stream relay does (one record at a time) and hands it
/// to each subscribing consumer, measuring each step; repeats for the events the consumers
/// emit (achievement unlocks).
async fn run_pipeline(meter: &mut Meter, ports: &paddock_core::ports::Ports, label: &str) {
    loop {
        let items = pending_events(ports).await;
        if items.is_empty() {
            break;
        }
        for item in items {
            let event = paddock_core::outbox::Event::from_item(&item).expect("an event");
            let kind = event.kind.name();
            let relayed = meter
                .measure(&format!("{label}: relay {kind}"), async {
                    paddock_core::outbox::relay_items(ports, std::slice::from_ref(&item)).await
                })
                .await;
            assert_eq!(relayed.unwrap(), 1);
            let body = serde_json::to_string(&event).unwrap();
            for queue in QueueName::ALL {
                if !queue.subscribes_to(&event.kind) {
                    continue;
                }
                // Take the message off the queue, as the event source mapping would.
                let received = ports
                    .queues
                    .get(queue)
                    .receive(10, Duration::from_millis(500))
                    .await
                    .unwrap();
                let processor = paddock_core::workers::processor(queue);
                meter
                    .measure(&format!("{label}: {queue} consumer, {kind}"), async {
                        paddock_core::workers::handle_body(&body, ports, &processor)
                            .await
                            .unwrap();
                    })
                    .await;
                let receipts: Vec<String> = received.into_iter().map(|m| m.receipt).collect();
                ports.queues.get(queue).ack_all(&receipts).await.unwrap();
            }
        }
    }
}

#[tokio::test(flavor = "multi_thread")]
async fn units_per_request_of_the_main_endpoints() {
    let mut t = ports(Backend::Aws).await;
    let client = aws_sdk_dynamodb::Client::new(&paddock_aws::sdk_config().await);
    let items = Arc::new(DynamoItemStore::new(
        client,
        t.settings.table_prefix.clone(),
        t.clock.clone(),
    ));
    let blobs = Arc::new(CountingBlobs {
        inner: t.ports.blobs.clone(),
        puts: AtomicU64::new(0),
        gets: AtomicU64::new(0),
    });
    t.ports.items = items.clone();
    t.ports.blobs = blobs.clone();
    let ports = t.ports.clone();
    // As the functions wire it: the auth function starts password hashing, the ai function
    // its model (no key here: coaching is not measured, its cost is the model's).
    let state = AppState::new(t.ports.clone(), t.settings.clone()).with_identity_providers();
    let router = paddock_api::routes::app_router(state);
    let mut meter = Meter {
        items,
        blobs,
        costs: Vec::new(),
    };
    let r = &router;

    // Sign-in.
    let register = json!({"email": "costs@example.com", "password": "correct horse battery", "displayName": "Cost Driver"});
    let (status, body) = meter
        .measure(
            "POST /v1/auth/register",
            json_call(r, "POST", "/v1/auth/register", None, Some(register)),
        )
        .await;
    assert_eq!(status, 201, "{body}");
    let login = json!({"email": "costs@example.com", "password": "correct horse battery"});
    let (status, body) = meter
        .measure(
            "POST /v1/auth/login/email",
            json_call(r, "POST", "/v1/auth/login/email", None, Some(login)),
        )
        .await;
    assert_eq!(status, 200, "{body}");
    let refresh = body["data"]["refreshToken"].as_str().unwrap().to_owned();
    let (status, body) = meter
        .measure(
            "POST /v1/auth/refresh",
            json_call(
                r,
                "POST",
                "/v1/auth/refresh",
                None,
                Some(json!({"refreshToken": refresh})),
            ),
        )
        .await;
    assert_eq!(status, 200, "{body}");
    let token = body["data"]["accessToken"].as_str().unwrap().to_owned();
    let token = Some(token.as_str());
    let (status, _) = meter
        .measure(
            "GET /v1/auth/validate (token seen before)",
            json_call(r, "GET", "/v1/auth/validate", token, None),
        )
        .await;
    assert_eq!(status, 200);

    // Sessions: the first upload of a driver, then a typical one.
    let mut session_id = String::new();
    let mut track_id = String::new();
    for (n, label) in [(1, "first"), (2, "typical")] {
        let upload = session_body(
            &format!("costs-{n}"),
            &format!("2026-11-0{n}T10:00:00Z"),
            &thirty_laps(),
            5_000,
        );
        let (status, body) = meter
            .measure(
                &format!("POST /v1/sessions ({label}; 30 laps, 5,000 points)"),
                json_call(r, "POST", "/v1/sessions", token, Some(upload)),
            )
            .await;
        assert_eq!(status, 201, "{body}");
        session_id = body["data"]["sessionId"].as_str().unwrap().to_owned();
        track_id = body["data"]["trackId"].as_str().unwrap().to_owned();
        run_pipeline(&mut meter, &ports, &format!("after the {label} upload")).await;
    }
    let repeat = session_body("costs-2", "2026-11-02T10:00:00Z", &thirty_laps(), 5_000);
    let (status, _) = meter
        .measure(
            "POST /v1/sessions (a repeat, answered as duplicate)",
            json_call(r, "POST", "/v1/sessions", token, Some(repeat)),
        )
        .await;
    assert_eq!(status, 200);
    let (status, _) = meter
        .measure(
            "GET /v1/sessions (2 sessions)",
            json_call(r, "GET", "/v1/sessions", token, None),
        )
        .await;
    assert_eq!(status, 200);
    let (status, _) = meter
        .measure(
            "GET /v1/sessions/{id} (30 laps)",
            json_call(r, "GET", &format!("/v1/sessions/{session_id}"), token, None),
        )
        .await;
    assert_eq!(status, 200);

    // Leaderboards.
    let submit = json!({"sessionId": session_id, "lapTimeMs": 92_000, "qualityScore": 0.8});
    let (status, body) = meter
        .measure(
            "POST /v1/leaderboards/submit (first, a personal best)",
            json_call(r, "POST", "/v1/leaderboards/submit", token, Some(submit)),
        )
        .await;
    assert_eq!(status, 200, "{body}");
    run_pipeline(&mut meter, &ports, "after the first submission").await;
    let submit = json!({"sessionId": session_id, "lapTimeMs": 92_185, "qualityScore": 0.8});
    let (status, body) = meter
        .measure(
            "POST /v1/leaderboards/submit (typical: no improvement)",
            json_call(r, "POST", "/v1/leaderboards/submit", token, Some(submit)),
        )
        .await;
    assert_eq!(status, 200, "{body}");
    run_pipeline(&mut meter, &ports, "after the typical submission").await;
    // Another instance of the function: its page cache is empty.
    let other = paddock_api::routes::app_router(AppState::new(t.ports.clone(), t.settings.clone()));
    let board = format!("/v1/leaderboards?trackId={track_id}");
    let (status, _) = meter
        .measure(
            "GET /v1/leaderboards (not cached in the instance)",
            json_call(&other, "GET", &board, None, None),
        )
        .await;
    assert_eq!(status, 200);
    let (status, _) = meter
        .measure(
            "GET /v1/leaderboards (cached in the instance)",
            json_call(&other, "GET", &board, None, None),
        )
        .await;
    assert_eq!(status, 200);

    // Activity.
    for path in [
        "/v1/feed",
        "/v1/achievements",
        "/v1/tracks",
        &format!("/v1/tracks/{track_id}/map"),
    ] {
        let (status, body) = meter
            .measure(
                &format!("GET {}", path.replace(&track_id, "{id}")),
                json_call(r, "GET", path, token, None),
            )
            .await;
        assert_eq!(status, 200, "{path}: {body}");
    }
    let post = json!({"title": "New setup for Spa", "subtitle": "Lower rear wing"});
    let (status, _) = meter
        .measure(
            "POST /v1/feed",
            json_call(r, "POST", "/v1/feed", token, Some(post)),
        )
        .await;
    assert_eq!(status, 201);

    // Share packs (direct upload of a small pack; a download is a redirect to S3).
    let (status, body) = meter
        .measure(
            "POST /v1/sharepacks (direct, small pack)",
            call(
                r,
                "POST",
                "/v1/sharepacks?name=Spa%20setups",
                token,
                Some("application/zip"),
                small_pack(),
            ),
        )
        .await;
    assert_eq!(status, 201, "{body}");
    let pack = body["data"]["id"].as_str().unwrap().to_owned();
    let (status, _) = meter
        .measure(
            "GET /v1/sharepacks/{id}/download",
            call(
                r,
                "GET",
                &format!("/v1/sharepacks/{pack}/download"),
                token,
                None,
                Vec::new(),
            ),
        )
        .await;
    assert!(status.is_success() || status.is_redirection(), "{status}");

    let (status, _) = meter
        .measure(
            "GET /health/ready",
            json_call(r, "GET", "/health/ready", None, None),
        )
        .await;
    assert_eq!(status, 200);

    // Objects the driver now stores.
    let mut stored = Vec::new();
    for prefix in ["tracks/", "packs/"] {
        for key in ports.blobs.list(prefix).await.unwrap() {
            let size = ports.blobs.get(&key).await.unwrap().map_or(0, |b| b.len());
            stored.push(format!("{key}: {size} bytes"));
        }
    }

    println!(
        "\n{:<72} {:>7} {:>7} {:>6} {:>6} {:>9}",
        "request or event", "RRU", "WRU", "S3 put", "S3 get", "ms here"
    );
    for c in &meter.costs {
        println!(
            "{:<72} {:>7.1} {:>7.1} {:>6} {:>6} {:>9.1}",
            c.what, c.read_units, c.write_units, c.s3_puts, c.s3_gets, c.millis
        );
    }
    println!("\nobjects stored: {}", stored.join("; "));
    assert!(meter.costs.iter().all(|c| c.read_units >= 0.0));
}
