//! Headless Chromium over WebDriver (chromedriver, started by `tests/run.sh` on loopback).

use fantoccini::{Client, ClientBuilder};
use serde_json::json;

/// An environment variable the browser tests need; they run from `./tests/run.sh`.
pub fn env(name: &str) -> String {
    std::env::var(name)
        .unwrap_or_else(|_| panic!("{name} is not set: the browser tests run from ./tests/run.sh"))
}

/// A new headless Chromium session with a profile of its own and no background traffic.
pub async fn open_browser() -> Client {
    let profile = tempfile::tempdir().expect("a profile dir").keep();
    let caps = json!({
        "goog:chromeOptions": {
            "binary": "/usr/bin/chromium",
            "args": ["--headless", "--no-sandbox", "--disable-gpu", "--disable-background-networking",
                     "--disable-component-update", "--disable-sync", "--no-first-run", "--disable-dev-shm-usage",
                     "--disable-quic", format!("--user-data-dir={}", profile.display())]
        }
    });
    let caps = caps
        .as_object()
        .expect("an object")
        .clone()
        .into_iter()
        .collect();
    ClientBuilder::new(hyper_util::client::legacy::connect::HttpConnector::new())
        .capabilities(caps)
        .connect(&env("PADDOCK_TEST_WEBDRIVER"))
        .await
        .expect("a WebDriver session")
}
