//! The OAuth consent page in headless Chromium: a driver signs in on the page and allows an
//! app; both the sign-in form and the consent pass axe-core with no serious or critical
//! violation and fit a phone's width; the browser lands on the app's loopback listener with a
//! code, the app's `state` and the issuer, and the code is exchanged with its PKCE verifier.

use fantoccini::Locator;
use paddock_tests::browser::{ConsentInBrowser, fill_and_submit, query_param};
use paddock_tests::oauth_flow::driver_with_password;
use std::time::Duration;

use super::board_pages::{accessible, photograph};

#[tokio::test(flavor = "multi_thread")]
async fn a_driver_allows_an_app_in_a_browser() {
    let app = paddock_tests::spawn_app().await;
    let (owner, _) = app.driver("Owner").await;
    let (_, _, email) = driver_with_password(&app, "Dee").await;
    // A native app listens on a port of its own choosing (RFC 8252 §7.3).
    let consent = ConsentInBrowser::open(&app, &owner, "profile:read boards:read").await;
    let browser = &consent.browser;
    accessible(browser, "the consent page's sign-in").await;
    photograph(browser, "consent-sign-in").await;
    let sign_in = [
        ("email", email.as_str()),
        ("password", "correct horse battery"),
    ];
    fill_and_submit(browser, &sign_in).await;
    let allow = match browser
        .wait()
        .at_most(Duration::from_secs(15))
        .for_element(Locator::Css("button[value=approve]"))
        .await
    {
        Ok(allow) => allow,
        Err(e) => panic!(
            "no consent after signing in ({e}): at {} {}",
            browser.current_url().await.unwrap(),
            browser.source().await.unwrap()
        ),
    };
    let page = browser.source().await.unwrap();
    assert!(
        page.contains("League Bot") && page.contains("Owner"),
        "{page}"
    );
    assert!(page.contains("See your profile"), "{page}");
    accessible(browser, "the consent page").await;
    photograph(browser, "consent").await;
    allow.click().await.unwrap();
    let (target, status, tokens) = consent.exchange(&app).await;
    assert_eq!(query_param(&target, "state").as_deref(), Some("state-1"));
    assert_eq!(query_param(&target, "iss"), Some(app.address.clone()));
    assert_eq!(status, 200, "{tokens}");
}
