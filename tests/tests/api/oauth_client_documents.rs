//! Clients known by their metadata document's URL (draft-ietf-oauth-client-id-metadata-document):
//! no registration, the document read from a web server on loopback (allowed there only by the
//! webhooks' local-test setting), the driver's consent, the code exchange, a call and a refresh;
//! and every bad document shown to the driver, never followed to its redirect URI. On both
//! backends and through the functions.

use std::time::Duration;

use paddock_tests::document_server::{DocumentServer, Served};
use paddock_tests::oauth_flow::{
    Answer, Browser, Pkce, RegisteredApp, authorize_query, driver_with_password, exchange_code,
    refresh_grant, text, token_request,
};
use paddock_tests::{Backend, TestApp};
use reqwest::Method;
use serde_json::{Value, json};

const PASSWORD: &str = "correct horse battery";
const NATIVE: &str = "http://127.0.0.1/callback";

/// A document for the client at `client_id`.
fn document(client_id: &str) -> Value {
    json!({
        "client_id": client_id,
        "client_name": "Pit Wall AI",
        "client_uri": "https://pitwall.example.com",
        "redirect_uris": [NATIVE],
        "grant_types": ["authorization_code", "refresh_token"],
        "response_types": ["code"],
        "token_endpoint_auth_method": "none",
    })
}

/// A path of its own on the server (the service keeps documents a while).
fn path(name: &str) -> String {
    format!("/clients/{}/{name}.json", paddock_tests::unique("c"))
}

/// The client of the document at `client_id`, sending the driver back to a loopback port.
fn client(client_id: &str) -> RegisteredApp {
    RegisteredApp {
        client_id: client_id.to_owned(),
        secret: None,
        redirect_uri: "http://127.0.0.1:53124/callback".into(),
    }
}

async fn a_client_known_by_its_document_acts_for_a_driver(app: TestApp) {
    let server = DocumentServer::start().await;
    let at = path("pit-wall");
    let client_id = server.url(&at);
    server.serve(&at, Served::json(&document(&client_id)));
    let (driver, _, email) = driver_with_password(&app, "Dee").await;
    let client = client(&client_id);

    let pkce = Pkce::new();
    let browser = Browser::new(&app);
    let query = authorize_query(&client, &pkce, "profile:read boards:read", &[]);
    let page = browser.authorize(&query).await;
    assert_eq!(page.status, 200, "{}", page.body);
    let consent = browser.sign_in(&page, &email, PASSWORD).await;
    assert_eq!(consent.status, 200, "{}", consent.body);
    for shown in ["Pit Wall AI", "127.0.0.1", "not registered on Paddock"] {
        assert!(consent.body.contains(shown), "{shown}: {}", consent.body);
    }
    let approved = browser.post(&consent, &[("action", "approve")]).await;
    assert_eq!(approved.status, 303, "{}", approved.body);
    assert!(
        (approved.location.as_deref().unwrap()).starts_with("http://127.0.0.1:53124/callback?")
    );

    // The code is the URL's: a secret is refused (the client is public), PKCE alone passes.
    let code = approved.location_params()["code"].clone();
    let form = [
        ("grant_type", "authorization_code"),
        ("code", code.as_str()),
        ("redirect_uri", client.redirect_uri.as_str()),
        ("code_verifier", pkce.verifier.as_str()),
        ("client_id", client_id.as_str()),
        ("client_secret", "a secret"),
    ];
    let (status, refused) = token_request(&app, "/oauth/token", &form, None).await;
    assert_eq!((status, text(&refused, "error")), (401, "invalid_client"));
    let approved = browser
        .authorize(&authorize_query(&client, &pkce, "profile:read", &[]))
        .await;
    assert_eq!(approved.status, 302, "approved before: {}", approved.body);
    let (status, tokens) = exchange_code(&app, &client, &approved, &pkce).await;
    assert_eq!(status, 200, "{tokens}");
    let (status, me) = app
        .call(
            Method::GET,
            "/v1/profile/me",
            text(&tokens, "access_token"),
            None,
        )
        .await;
    assert_eq!(status, 200, "{me}");
    let (status, refreshed) =
        refresh_grant(&app, text(&tokens, "refresh_token"), client_id.as_str()).await;
    assert_eq!(status, 200, "{refreshed}");
    // The document was read once: the second request found it kept.
    assert_eq!(server.hits(&at), 1);

    // The driver sees the client among their authorised apps (and registered none), and
    // revokes it: its tokens stop.
    let (_, granted) = app
        .call(Method::GET, "/v1/authorized-apps", &driver, None)
        .await;
    let grant = &granted["data"]["items"][0];
    assert_eq!(
        (&grant["clientId"], &grant["appName"]),
        (&json!(client_id), &json!("Pit Wall AI")),
        "{granted}"
    );
    let (_, apps) = app.call(Method::GET, "/v1/apps", &driver, None).await;
    assert_eq!(apps["data"]["items"], json!([]), "{apps}");
    let encoded: String = form_urlencoded::byte_serialize(client_id.as_bytes()).collect();
    let (status, _) = app
        .delete_auth(&format!("/v1/authorized-apps/{encoded}"), &driver)
        .await;
    assert_eq!(status, 204);
    let (status, _) = app
        .call(
            Method::GET,
            "/v1/profile/me",
            text(&refreshed, "access_token"),
            None,
        )
        .await;
    assert_eq!(status, 401);
    let (status, refused) =
        refresh_grant(&app, text(&refreshed, "refresh_token"), client_id.as_str()).await;
    assert_eq!((status, text(&refused, "error")), (400, "invalid_grant"));

    let metadata: Value = app
        .get("/.well-known/oauth-authorization-server")
        .await
        .json()
        .await
        .unwrap();
    assert_eq!(metadata["client_id_metadata_document_supported"], true);
}

/// A refused request: an HTML page naming `reason`, and nothing sent to any redirect URI.
fn shown_not_followed(answer: &Answer, reason: &str, case: &str) {
    assert_eq!(answer.status, 400, "{case}: {}", answer.body);
    assert_eq!(answer.location, None, "{case}");
    assert!(
        answer.headers["content-type"]
            .to_str()
            .unwrap()
            .starts_with("text/html"),
        "{case}"
    );
    assert!(answer.body.contains(reason), "{case}: {}", answer.body);
}

async fn bad_client_documents_are_shown_never_followed(app: TestApp) {
    let server = DocumentServer::start().await;
    let mut cases: Vec<(&str, String, &str)> = Vec::new();
    let mut serve = |case: &'static str, change: &dyn Fn(&str, &mut Served), reason| {
        let at = path(case);
        let url = server.url(&at);
        let mut served = Served::json(&document(&url));
        change(&url, &mut served);
        server.serve(&at, served);
        cases.push((case, url, reason));
    };
    serve(
        "oversized",
        &|url, s| {
            let mut padded = document(url);
            padded["padding"] = "x".repeat(6 * 1024).into();
            s.body = serde_json::to_vec(&padded).unwrap();
        },
        "is larger than 5120 bytes",
    );
    serve(
        "slow",
        &|_, s| s.delay = Duration::from_secs(4),
        "did not answer within 3 seconds",
    );
    serve(
        "other-redirects",
        &|url, s| {
            let mut other = document(url);
            other["redirect_uris"] = json!(["https://elsewhere.example.com/callback"]);
            *s = Served::json(&other);
        },
        "redirect_uri: is not one of the redirect URIs of the client",
    );
    serve(
        "mismatch",
        &|url, s| {
            let other = document(&format!("{url}/other"));
            *s = Served::json(&other);
        },
        "client_id must be the document",
    );
    serve(
        "secret-post",
        &|url, s| {
            let mut other = document(url);
            other["token_endpoint_auth_method"] = "client_secret_post".into();
            *s = Served::json(&other);
        },
        "token_endpoint_auth_method must be `none`",
    );
    serve(
        "with-secret",
        &|url, s| {
            let mut other = document(url);
            other["client_secret"] = "s3cret".into();
            *s = Served::json(&other);
        },
        "client_secret must not be given",
    );
    serve(
        "not-json",
        &|_, s| s.body = b"<html>hello</html>".to_vec(),
        "must be JSON",
    );
    serve(
        "redirected",
        &|_, s| {
            s.status = 302;
            s.location = Some("https://elsewhere.example.com/client.json".into());
        },
        "answered HTTP 302",
    );
    // Nothing listens on port 1; nothing is served at an unset path; addresses that are not
    // loopback are refused before any connection, whatever the local-test setting.
    let unset = server.url(&path("unset"));
    cases.extend([
        (
            "unreachable",
            "http://127.0.0.1:1/clients/bot.json".to_owned(),
            "could not be reached",
        ),
        ("not found", unset, "answered HTTP 404"),
        (
            "private",
            "https://10.0.0.8/clients/bot.json".to_owned(),
            "must not resolve to a private address (10.0.0.8)",
        ),
        (
            "link-local",
            "https://[fe80::1]/clients/bot.json".to_owned(),
            "must not resolve to a link-local address",
        ),
        (
            "metadata",
            "https://169.254.169.254/latest/meta-data/client".to_owned(),
            "must not resolve to a cloud metadata address",
        ),
        (
            "no path",
            "https://pitwall.example.com/".to_owned(),
            "must have a path",
        ),
    ]);
    // Each from an address of its own: fetches of documents are counted per address.
    for (n, (case, client_id, reason)) in (20u8..).zip(&cases) {
        let browser = Browser::from_address(&app, std::net::Ipv4Addr::new(127, 0, 0, n));
        let query = authorize_query(&client(client_id), &Pkce::new(), "profile:read", &[]);
        let started = std::time::Instant::now();
        let answer = browser.authorize(&query).await;
        shown_not_followed(&answer, reason, case);
        assert!(started.elapsed() < Duration::from_secs(6), "{case}");
    }
    // The token endpoint knows no code of theirs.
    let verifier = "v".repeat(43);
    let form = [
        ("grant_type", "authorization_code"),
        ("code", "not-a-code"),
        ("redirect_uri", NATIVE),
        ("code_verifier", verifier.as_str()),
        ("client_id", cases[0].1.as_str()),
    ];
    let (status, refused) = token_request(&app, "/oauth/token", &form, None).await;
    assert_eq!((status, text(&refused, "error")), (400, "invalid_grant"));
}

/// `/oauth/authorize` is public, and each document not kept is a request this server sends
/// where the `client_id` points: an address may have `Auth__ProviderStartsPerAddress` (10)
/// of them fetched in a window; the next is 429 with `Retry-After`, and fetches nothing.
async fn document_fetches_are_limited_per_address(app: TestApp) {
    let server = DocumentServer::start().await;
    let browser = Browser::from_address(&app, std::net::Ipv4Addr::new(127, 0, 0, 99));
    for n in 0..11 {
        let at = path(&format!("limited-{n}"));
        let query = authorize_query(&client(&server.url(&at)), &Pkce::new(), "profile:read", &[]);
        let answer = browser.authorize(&query).await;
        if n < 10 {
            shown_not_followed(&answer, "answered HTTP 404", "within the limit");
        } else {
            assert_eq!(answer.status, 429, "{}", answer.body);
            assert!(answer.headers.contains_key("retry-after"));
            assert_eq!(server.hits(&at), 0, "nothing fetched past the limit");
        }
    }
}

/// Without the webhooks' local-test setting, loopback is refused like any other non-public
/// address: by the name's resolution as by the address in the URL.
async fn loopback_documents_need_the_local_test_setting(backend: Backend) {
    let (app, _) = paddock_tests::spawn_configured(backend, |s| {
        s.webhooks_allow_loopback_http = false;
    })
    .await;
    refuses_loopback(&app).await;
}

async fn refuses_loopback(app: &TestApp) {
    let server = DocumentServer::start().await;
    let at = path("loopback");
    let url = server.url(&at);
    server.serve(&at, Served::json(&document(&url)));
    let https = url.replace("http://", "https://");
    let browser = Browser::new(app);
    for (client_id, reason) in [
        (url.as_str(), "must use https"),
        (
            https.as_str(),
            "must not resolve to a loopback address (127.0.0.1)",
        ),
        (
            "https://localhost/clients/bot.json",
            "must not resolve to a loopback address",
        ),
    ] {
        let query = authorize_query(&client(client_id), &Pkce::new(), "profile:read", &[]);
        shown_not_followed(&browser.authorize(&query).await, reason, client_id);
    }
    assert_eq!(server.hits(&at), 0, "never connected to");
}

#[tokio::test(flavor = "multi_thread")]
async fn functions_refuse_loopback_documents_without_the_local_test_setting() {
    let app =
        paddock_tests::spawn_functions_with(&[("Webhooks__AllowLoopbackHttp", "false")]).await;
    refuses_loopback(&app).await;
}

paddock_tests::on_both_backends!(
    plain: [
        a_client_known_by_its_document_acts_for_a_driver,
        bad_client_documents_are_shown_never_followed,
        document_fetches_are_limited_per_address,
    ],
    ports: [loopback_documents_need_the_local_test_setting],
);
