//! A web server on loopback that serves OAuth clients' metadata documents as a test sets
//! them: a body, a status, a `Cache-Control`, and a delay before the answer.

use bytes::Bytes;
use http::{Response, StatusCode};
use http_body_util::Full;
use std::collections::HashMap;
use std::convert::Infallible;
use std::sync::{Arc, Mutex};
use std::time::Duration;

/// What one path answers.
#[derive(Debug, Clone)]
pub struct Served {
    /// The status.
    pub status: u16,
    /// The body.
    pub body: Vec<u8>,
    /// `Cache-Control`, if any.
    pub cache_control: Option<String>,
    /// `Location`, if any.
    pub location: Option<String>,
    /// How long to wait before answering.
    pub delay: Duration,
}

impl Served {
    /// A JSON document answered at once with 200.
    pub fn json(document: &serde_json::Value) -> Self {
        Self {
            status: 200,
            body: serde_json::to_vec(document).expect("JSON"),
            cache_control: None,
            location: None,
            delay: Duration::ZERO,
        }
    }
}

/// The server: its base URL, and what each path answers (404 when not set).
pub struct DocumentServer {
    /// `http://127.0.0.1:<port>`.
    pub base: String,
    paths: Arc<Mutex<HashMap<String, Served>>>,
    hits: Arc<Mutex<HashMap<String, usize>>>,
}

impl DocumentServer {
    /// Starts it on a free loopback port, until the test's runtime ends.
    pub async fn start() -> Self {
        let listener = tokio::net::TcpListener::bind("127.0.0.1:0")
            .await
            .expect("a port");
        let base = format!("http://{}", listener.local_addr().expect("an address"));
        let paths: Arc<Mutex<HashMap<String, Served>>> = Arc::default();
        let hits: Arc<Mutex<HashMap<String, usize>>> = Arc::default();
        let (served, counted) = (paths.clone(), hits.clone());
        crate::loopback_http::serve(listener, move |request| {
            let path = request.uri().path().to_owned();
            let answer = served.lock().unwrap().get(&path).cloned();
            *counted.lock().unwrap().entry(path).or_default() += 1;
            async move {
                let Some(answer) = answer else {
                    let mut response = Response::new(Full::new(Bytes::from_static(b"no")));
                    *response.status_mut() = StatusCode::NOT_FOUND;
                    return Ok::<_, Infallible>(response);
                };
                tokio::time::sleep(answer.delay).await;
                let mut response = Response::builder()
                    .status(answer.status)
                    .header("content-type", "application/json");
                if let Some(cache_control) = &answer.cache_control {
                    response = response.header("cache-control", cache_control);
                }
                if let Some(location) = &answer.location {
                    response = response.header("location", location);
                }
                Ok(response
                    .body(Full::new(Bytes::from(answer.body)))
                    .expect("a response"))
            }
        });
        Self { base, paths, hits }
    }

    /// The URL of `path`.
    pub fn url(&self, path: &str) -> String {
        format!("{}{path}", self.base)
    }

    /// Answers `path` with `served` from now on.
    pub fn serve(&self, path: &str, served: Served) {
        self.paths.lock().unwrap().insert(path.to_owned(), served);
    }

    /// How many requests `path` got.
    pub fn hits(&self, path: &str) -> usize {
        self.hits.lock().unwrap().get(path).copied().unwrap_or(0)
    }
}
