//! A server-side failure is logged once, in the request's own line, with its whole cause
//! chain and the request id; the client is told only what it may know.

use async_trait::async_trait;
use axum::Router;
use axum::body::Body;
use axum::routing::get;
use http::Request;
use http_body_util::BodyExt;
use paddock_core::ports::items::{
    Condition, Item, ItemStore, Key, KeyPage, Page, Query, StoreError, TxOp, Update,
};
use paddock_core::tables::Table;
use paddock_tests::captured_log::CapturedLog;
use std::sync::Arc;
use std::time::Duration;
use tower::ServiceExt;

/// An item store whose disk is gone.
struct BrokenStore;

fn down() -> StoreError {
    StoreError::Unavailable("disk on fire at sector 7".into())
}

#[async_trait]
impl ItemStore for BrokenStore {
    async fn get(&self, _: Table, _: &Key) -> Result<Option<Item>, StoreError> {
        Err(down())
    }
    async fn put(&self, _: Table, _: Item, _: Option<Condition>) -> Result<(), StoreError> {
        Err(down())
    }
    async fn update(
        &self,
        _: Table,
        _: &Key,
        _: Update,
        _: Option<Condition>,
    ) -> Result<Item, StoreError> {
        Err(down())
    }
    async fn delete(
        &self,
        _: Table,
        _: &Key,
        _: Option<Condition>,
    ) -> Result<Option<Item>, StoreError> {
        Err(down())
    }
    async fn query(&self, _: Query) -> Result<Page, StoreError> {
        Err(down())
    }
    async fn transact(&self, _: Vec<TxOp>) -> Result<(), StoreError> {
        Err(down())
    }
    async fn ping(&self) -> Result<(), StoreError> {
        Err(down())
    }
    async fn scan_expired(
        &self,
        _: Table,
        _: Option<String>,
        _: usize,
    ) -> Result<KeyPage, StoreError> {
        Err(down())
    }
    async fn delete_expired(&self, _: Table, _: &Key) -> Result<bool, StoreError> {
        Err(down())
    }
}

/// The error lines of `captured`.
fn error_lines(captured: &CapturedLog) -> Vec<String> {
    captured
        .text()
        .lines()
        .filter(|l| l.contains("ERROR"))
        .map(str::to_owned)
        .collect()
}

fn capture() -> (CapturedLog, tracing::subscriber::DefaultGuard) {
    let captured = CapturedLog::default();
    let writer = captured.clone();
    let subscriber = tracing_subscriber::fmt()
        .with_ansi(false)
        .with_writer(move || writer.clone())
        .finish();
    (captured, tracing::subscriber::set_default(subscriber))
}

async fn body_text(response: axum::response::Response) -> String {
    String::from_utf8(
        response
            .into_body()
            .collect()
            .await
            .unwrap()
            .to_bytes()
            .to_vec(),
    )
    .unwrap()
}

#[tokio::test(flavor = "current_thread")]
async fn a_store_outage_is_logged_once_with_its_cause_and_request_id() {
    let (logs, _guard) = capture();
    let mut t = paddock_tests::ports(paddock_tests::Backend::Embedded).await;
    t.ports.items = Arc::new(BrokenStore);
    let state = paddock_api::state::AppState::new(t.ports.clone(), t.settings.clone());
    let app = paddock_api::routes::app_router(state);
    let request = Request::get("/v1/leaderboards?gameId=acc&trackName=Spa&trackLayout=GP")
        .header("x-request-id", "req-outage-1")
        .body(Body::empty())
        .unwrap();
    let response = app.oneshot(request).await.unwrap();
    assert_eq!(response.status(), 503);
    let id = response.headers()["x-request-id"]
        .to_str()
        .unwrap()
        .to_owned();
    let body = body_text(response).await;
    assert!(
        body.contains("storage is temporarily unavailable"),
        "{body}"
    );
    assert!(
        !body.contains("disk on fire"),
        "the cause is not the client's: {body}"
    );

    let errors = error_lines(&logs);
    assert_eq!(errors.len(), 1, "one line for one failure: {errors:#?}");
    assert!(
        errors[0].contains(&format!("request_id=\"{id}\"")),
        "{}",
        errors[0]
    );
    assert!(
        errors[0].contains("client_request_id=\"req-outage-1\""),
        "{}",
        errors[0]
    );
    assert!(errors[0].contains("status=503"), "{}", errors[0]);
    assert!(
        errors[0].contains("item store unavailable: disk on fire at sector 7"),
        "the whole cause: {}",
        errors[0]
    );
}

#[tokio::test(flavor = "current_thread")]
async fn a_panic_is_logged_once_with_its_message_and_answered_500() {
    let (logs, _guard) = capture();
    let routes = Router::new().route(
        "/boom",
        get(|| async {
            let cylinders: Vec<u8> = Vec::new();
            if cylinders.is_empty() {
                panic!("engine has no cylinders");
            }
            "unreachable"
        }),
    );
    let app = paddock_api::http::with_service_layers(routes, 1024, Duration::from_secs(5));
    let request = Request::get("/boom")
        .header("x-request-id", "req-panic-1")
        .body(Body::empty())
        .unwrap();
    let response = app.oneshot(request).await.unwrap();
    assert_eq!(response.status(), 500);
    let id = response.headers()["x-request-id"]
        .to_str()
        .unwrap()
        .to_owned();
    let body = body_text(response).await;
    assert!(!body.contains("cylinders"), "{body}");

    let errors = error_lines(&logs);
    assert_eq!(errors.len(), 1, "{errors:#?}");
    assert!(errors[0].contains(&id), "{}", errors[0]);
    assert!(errors[0].contains("req-panic-1"), "{}", errors[0]);
    assert!(
        errors[0].contains("handler panicked: engine has no cylinders"),
        "{}",
        errors[0]
    );
}
