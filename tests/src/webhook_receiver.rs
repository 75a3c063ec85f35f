//! A webhook receiver on loopback for the tests: records every delivery, answers 503 while
//! failing, answers late when given a delay, and can stop listening (its port then refuses
//! connections). It answers the service's `webhook.verification` request at once, whatever
//! it is set to, with the challenge it was sent, and counts those apart from deliveries.

use std::collections::BTreeMap;
use std::net::SocketAddr;
use std::sync::{Arc, Mutex};
use std::time::{Duration, Instant};

use axum::Router;
use axum::body::Bytes;
use axum::extract::State;
use axum::http::{HeaderMap, HeaderValue, StatusCode, header};
use axum::response::{IntoResponse, Response};
use axum::routing::post;
use serde_json::{Value, json};

/// The type of the request that asks a receiver to prove it wants deliveries.
pub const VERIFICATION_TYPE: &str = "webhook.verification";

/// One delivery the receiver got.
#[derive(Debug, Clone)]
pub struct Received {
    /// Its headers, by lower-case name.
    pub headers: BTreeMap<String, String>,
    /// Its body.
    pub body: String,
    /// Whether it was answered 2xx.
    pub taken: bool,
    /// When it arrived.
    pub at: Instant,
}

impl Received {
    /// The body's `type`.
    pub fn event_type(&self) -> String {
        serde_json::from_str::<Value>(&self.body).unwrap()["type"]
            .as_str()
            .unwrap()
            .to_owned()
    }
}

#[derive(Default)]
struct ReceiverState {
    received: Vec<Received>,
    verifications: usize,
    failing: bool,
    delay: Duration,
}

/// A webhook receiver on loopback.
#[derive(Clone)]
pub struct Receiver {
    /// Its URL (plain http on loopback: the tests' servers allow it).
    pub url: String,
    state: Arc<Mutex<ReceiverState>>,
    server: Arc<tokio::task::JoinHandle<()>>,
}

async fn receive(
    State(state): State<Arc<Mutex<ReceiverState>>>,
    headers: HeaderMap,
    body: Bytes,
) -> Response {
    let parsed: Value = serde_json::from_slice(&body).unwrap_or(Value::Null);
    let mut answer = if parsed["type"] == VERIFICATION_TYPE {
        state.lock().unwrap().verifications += 1;
        let challenge = parsed["data"]["challenge"].clone();
        (
            StatusCode::OK,
            axum::Json(json!({ "challenge": challenge })),
        )
            .into_response()
    } else {
        let (taken, delay) = {
            let mut s = state.lock().unwrap();
            let taken = !s.failing;
            s.received.push(Received {
                headers: headers
                    .iter()
                    .map(|(k, v)| (k.as_str().to_owned(), v.to_str().unwrap_or("").to_owned()))
                    .collect(),
                body: String::from_utf8_lossy(&body).into_owned(),
                taken,
                at: Instant::now(),
            });
            (taken, s.delay)
        };
        tokio::time::sleep(delay).await;
        if taken {
            StatusCode::NO_CONTENT.into_response()
        } else {
            StatusCode::SERVICE_UNAVAILABLE.into_response()
        }
    };
    // No kept-alive connection outlives `stop`.
    answer
        .headers_mut()
        .insert(header::CONNECTION, HeaderValue::from_static("close"));
    answer
}

impl Receiver {
    /// A receiver on a free loopback port, taking every delivery at once.
    pub async fn start() -> Self {
        let state = Arc::new(Mutex::new(ReceiverState::default()));
        let listener = tokio::net::TcpListener::bind("127.0.0.1:0").await.unwrap();
        let address: SocketAddr = listener.local_addr().unwrap();
        let app = Router::new()
            .route("/hook", post(receive))
            .with_state(state.clone());
        let server = tokio::spawn(async move {
            let _ = axum::serve(listener, app).await;
        });
        Self {
            url: format!("http://{address}/hook"),
            state,
            server: Arc::new(server),
        }
    }

    /// Answers 503 to deliveries while `failing`.
    pub fn set_failing(&self, failing: bool) {
        self.state.lock().unwrap().failing = failing;
    }

    /// Answers deliveries `delay` after they arrive.
    pub fn set_delay(&self, delay: Duration) {
        self.state.lock().unwrap().delay = delay;
    }

    /// Stops listening: connections to its port are refused from now on.
    pub fn stop(&self) {
        self.server.abort();
    }

    /// Every delivery so far (verification requests aside).
    pub fn all(&self) -> Vec<Received> {
        self.state.lock().unwrap().received.clone()
    }

    /// How many verification requests it answered.
    pub fn verifications(&self) -> usize {
        self.state.lock().unwrap().verifications
    }

    /// The taken deliveries, one per `webhook-id` (the receiver's de-duplication).
    pub fn taken_by_id(&self) -> BTreeMap<String, Received> {
        let mut by_id = BTreeMap::new();
        for r in self.all().into_iter().filter(|r| r.taken) {
            by_id.entry(r.headers["webhook-id"].clone()).or_insert(r);
        }
        by_id
    }

    /// Waits until `done` holds of what was received (at most `within`).
    pub async fn wait_for(&self, within: Duration, what: &str, done: impl Fn(&[Received]) -> bool) {
        let until = Instant::now() + within;
        while Instant::now() < until {
            if done(&self.all()) {
                return;
            }
            tokio::time::sleep(Duration::from_millis(50)).await;
        }
        panic!("the receiver did not get {what}: {:#?}", self.all());
    }
}
