//! Headless Chromium over WebDriver (chromedriver, started by `tests/run.sh` on loopback).

use fantoccini::{Client, ClientBuilder, Locator};
use serde_json::json;
use std::time::Duration;
use tokio::io::{AsyncReadExt, AsyncWriteExt};
use tokio::net::TcpListener;

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

/// Clicks the element `locator` finds and waits until the browser shows the page the click
/// led to, fully loaded.
///
/// WebDriver's click can return before a form's submission or a link's navigation has
/// replaced the page; reading the address or the cells at once could then read the old page.
/// The click must lead to another address: that is how the new page is known.
pub async fn click_through(client: &Client, locator: Locator<'_>) {
    let before = client
        .current_url()
        .await
        .expect("the address before the click");
    client
        .find(locator)
        .await
        .expect("the element to click")
        .click()
        .await
        .expect("the click");
    for _ in 0..100 {
        let now = client
            .current_url()
            .await
            .expect("the address after the click");
        if now != before {
            let state = client
                .execute("return document.readyState;", vec![])
                .await
                .expect("the page's ready state");
            if state == "complete" {
                return;
            }
        }
        tokio::time::sleep(Duration::from_millis(100)).await;
    }
    panic!("the click on a page at {before} led to no other page within 10 s");
}

/// Fills a page's form, each input found by its `name` (the first waited for up to 15 s, as
/// the page may still be loading), and submits it.
pub async fn fill_and_submit(client: &Client, fields: &[(&str, &str)]) {
    for (n, (name, value)) in fields.iter().enumerate() {
        let locator = format!("input[name={name}]");
        let field = if n == 0 {
            let wait = client.wait().at_most(Duration::from_secs(15));
            wait.for_element(Locator::Css(&locator)).await
        } else {
            client.find(Locator::Css(&locator)).await
        };
        let field = field.unwrap_or_else(|e| panic!("the form's {name} ({e})"));
        field.send_keys(value).await.expect("typing in the form");
    }
    client
        .find(Locator::Css("button[type=submit]"))
        .await
        .expect("the form's submit button")
        .click()
        .await
        .expect("the submission");
}

/// A native app's loopback listener (the desktop client's, an OAuth app's): answers one
/// request to `/callback` and reports its path and query.
pub async fn loopback_listener() -> (String, tokio::task::JoinHandle<String>) {
    let listener = TcpListener::bind("127.0.0.1:0").await.unwrap();
    let redirect = format!(
        "http://127.0.0.1:{}/callback",
        listener.local_addr().unwrap().port()
    );
    let task = tokio::spawn(async move {
        loop {
            let (mut sock, _) = listener.accept().await.unwrap();
            let mut buf = vec![0u8; 8192];
            let n = sock.read(&mut buf).await.unwrap();
            let head = String::from_utf8_lossy(&buf[..n]).to_string();
            let target = head
                .split_whitespace()
                .nth(1)
                .unwrap_or_default()
                .to_owned();
            let page = "<html><body>Signed in. You can close this window.</body></html>";
            let answer = format!(
                "HTTP/1.1 200 OK\r\ncontent-type: text/html\r\ncontent-length: {}\r\nconnection: close\r\n\r\n{page}",
                page.len()
            );
            let _ = sock.write_all(answer.as_bytes()).await;
            if target.starts_with("/callback") {
                return target;
            }
        }
    });
    (redirect, task)
}

/// The query parameter `name` of a request target (`/callback?...`).
pub fn query_param(target: &str, name: &str) -> Option<String> {
    let url = reqwest::Url::parse(&format!("http://x{target}")).ok()?;
    url.query_pairs()
        .find(|(k, _)| k == name)
        .map(|(_, v)| v.into_owned())
}

/// An OAuth app that listens on loopback for its code, as a native app does (RFC 8252 §7.3),
/// and its consent page opened in a browser.
pub struct ConsentInBrowser {
    /// The app, its redirect URI the listener's.
    pub client: crate::oauth_flow::RegisteredApp,
    /// The PKCE pair of the request.
    pub pkce: crate::oauth_flow::Pkce,
    /// The browser on the consent page.
    pub browser: Client,
    redirect: String,
    listener: tokio::task::JoinHandle<String>,
}

impl ConsentInBrowser {
    /// Registers an app of `owner`'s and opens its authorization request for `scope`.
    pub async fn open(app: &crate::TestApp, owner: &str, scope: &str) -> Self {
        use crate::oauth_flow::{Pkce, authorize_query, register_app};
        let mut client = register_app(app, owner, "http://127.0.0.1/callback", false).await;
        let (redirect, listener) = loopback_listener().await;
        client.redirect_uri = redirect.clone();
        let pkce = Pkce::new();
        let query = authorize_query(&client, &pkce, scope, &[]);
        let browser = open_browser().await;
        browser
            .goto(&format!("{}/oauth/authorize?{query}", app.address))
            .await
            .unwrap();
        Self {
            client,
            pkce,
            browser,
            redirect,
            listener,
        }
    }

    /// Once the driver has allowed: the path and query the app's listener received (the
    /// browser closed), and the app's exchange of the code for tokens (status and answer).
    pub async fn exchange(self, app: &crate::TestApp) -> (String, u16, serde_json::Value) {
        let target = tokio::time::timeout(Duration::from_secs(20), self.listener)
            .await
            .expect("the browser reached the app's listener")
            .unwrap();
        self.browser.close().await.unwrap();
        let approved = crate::oauth_flow::Answer {
            status: 303,
            location: Some(format!("{}{}", self.redirect, &target["/callback".len()..])),
            headers: Default::default(),
            body: String::new(),
        };
        let (status, tokens) =
            crate::oauth_flow::exchange_code(app, &self.client, &approved, &self.pkce).await;
        (target, status, tokens)
    }
}
