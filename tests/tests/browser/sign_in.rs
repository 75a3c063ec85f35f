//! The desktop sign-in flow end to end: a real OpenID Connect provider (npm `oidc-provider`)
//! and headless Chromium driven over WebDriver, both started by `tests/run.sh` on loopback.
//! The test plays the desktop client: PKCE verifier and challenge, a loopback listener on a
//! random port, the code exchange and `/v1/auth/validate`.

use fantoccini::Locator;
use paddock_clients::identity_providers::{ProviderConfig, ProviderKind};
use paddock_core::config::Settings;
use paddock_core::hashing::{random_token, s256};
use paddock_tests::browser::{
    ConsentInBrowser, env, fill_and_submit, loopback_listener, open_browser, query_param,
};
use paddock_tests::{TestApp, envelope, spawn_with};
use serde_json::json;
use std::net::SocketAddr;
use std::sync::Arc;
use std::time::Duration;

/// The server, configured with the test provider under the name `oidc`, on the port the
/// provider has registered as its redirect target.
async fn app_with_provider(registered_port: bool) -> TestApp {
    let dir = tempfile::tempdir().unwrap();
    let port: u16 = if registered_port {
        env("PADDOCK_TEST_APP_PORT").parse().unwrap()
    } else {
        0
    };
    let mut settings = Settings::embedded(dir.path(), SocketAddr::from(([127, 0, 0, 1], port)));
    settings.auth.providers = vec![ProviderConfig {
        name: "oidc".into(),
        kind: ProviderKind::Oidc,
        client_id: env("PADDOCK_TEST_OIDC_CLIENT_ID"),
        client_secret: Some(env("PADDOCK_TEST_OIDC_CLIENT_SECRET").into()),
        issuer: Some(env("PADDOCK_TEST_OIDC_ISSUER")),
        scopes: vec!["openid".into(), "email".into(), "profile".into()],
        // The test provider verifies nothing, but it stands in for one that does.
        trust_email_verified: true,
    }];
    let ports = paddock_runtime::wiring::embedded_ports(
        &settings,
        Arc::new(paddock_core::ports::SystemClock),
    )
    .unwrap();
    spawn_with(settings, ports, dir).await
}

/// Signs in as `login` at the provider's login form (its development interaction; consent is
/// pre-granted).
async fn at_the_provider(browser: &fantoccini::Client, login: &str) {
    fill_and_submit(browser, &[("login", login), ("password", "any password")]).await;
}

/// Plays the desktop client and the user once: starts the flow for a fresh PKCE pair and a
/// fresh loopback listener, signs in at the provider's form in the browser, and returns the
/// query the listener received, the verifier, and the browser's final URL.
async fn sign_in_in_browser(app: &TestApp, login: &str) -> (String, String, String) {
    let verifier = random_token(48);
    let (redirect, listener) = loopback_listener().await;
    let start = format!(
        "{}/v1/auth/login/oidc?redirect_uri={redirect}&code_challenge={}",
        app.address,
        s256(&verifier)
    );
    let browser = open_browser().await;
    browser.goto(&start).await.unwrap();
    at_the_provider(&browser, login).await;
    let target = tokio::time::timeout(Duration::from_secs(20), listener)
        .await
        .expect("the browser reached the desktop listener")
        .unwrap();
    let final_url = browser.current_url().await.unwrap().to_string();
    browser.close().await.unwrap();
    assert!(final_url.starts_with(&redirect), "{final_url}");
    (target, verifier, final_url)
}

#[tokio::test(flavor = "multi_thread")]
async fn desktop_sign_in_through_a_real_provider_in_a_real_browser() {
    let app = app_with_provider(true).await;
    let (target, verifier, _) = sign_in_in_browser(&app, "lewis@paddock.example").await;
    assert!(
        !target.contains("eyJ"),
        "no token in a redirect URL: {target}"
    );
    let code = query_param(&target, "code").expect("a code on the redirect");

    let (status, body) = app.exchange(&code, &verifier).await;
    assert_eq!(status, 200, "{body}");
    let user = body["data"]["user"].clone();
    assert_eq!(user["email"], "lewis@paddock.example");
    assert_eq!(user["displayName"], "Driver lewis@paddock.example");
    assert_eq!(
        user["avatarUrl"],
        serde_json::Value::Null,
        "the provider's http:// picture is not an https URL: dropped"
    );
    let access = body["data"]["accessToken"].as_str().unwrap();
    let (status, body) = envelope(app.get_auth("/v1/auth/validate", access).await).await;
    assert_eq!(status, 200);
    assert_eq!(body["data"]["userId"], user["id"]);

    // The code was consumed: a replay answers 400.
    let (status, _) = app.exchange(&code, &verifier).await;
    assert_eq!(status, 400);

    // A wrong verifier is refused.
    let (target, _, _) = sign_in_in_browser(&app, "lewis@paddock.example").await;
    let body =
        json!({"code": query_param(&target, "code").unwrap(), "codeVerifier": random_token(48)});
    assert_eq!(
        envelope(app.post_json("/v1/auth/exchange", &body).await)
            .await
            .0,
        400
    );

    // Signing in again with the same provider identity finds the same account.
    let (target, verifier, _) = sign_in_in_browser(&app, "lewis@paddock.example").await;
    let body = json!({"code": query_param(&target, "code").unwrap(), "codeVerifier": verifier});
    let (status, body) = envelope(app.post_json("/v1/auth/exchange", &body).await).await;
    assert_eq!(status, 200, "{body}");
    assert_eq!(
        body["data"]["user"]["id"], user["id"],
        "same provider identity, same account"
    );

    // The provider's port is registered for this app only, so the pre-hijacking attack runs
    // against the same server.
    a_pre_hijacked_account_goes_to_the_verified_owner(&app).await;
    a_provider_account_is_exported_and_deleted_with_its_link(&app).await;
    a_driver_signs_in_with_the_provider_on_the_consent_page(&app).await;
}

/// An app's consent page offers the provider beside the password form: the driver signs in
/// at the provider, comes back to the consent, allows, and the app's listener gets a code for
/// the provider's account.
async fn a_driver_signs_in_with_the_provider_on_the_consent_page(app: &TestApp) {
    let (owner, _) = app.driver("Owner").await;
    let consent = ConsentInBrowser::open(app, &owner, "profile:read").await;
    let browser = &consent.browser;
    browser
        .find(Locator::Css("a.provider"))
        .await
        .expect("the provider beside the password form")
        .click()
        .await
        .unwrap();
    at_the_provider(browser, "nico@paddock.example").await;
    let allow = browser
        .wait()
        .at_most(Duration::from_secs(20))
        .for_element(Locator::Css("button[value=approve]"))
        .await
        .expect("the consent after signing in at the provider");
    let page = browser.source().await.unwrap();
    assert!(page.contains("Driver nico@paddock.example"), "{page}");
    allow.click().await.unwrap();
    let (_, status, tokens) = consent.exchange(app).await;
    assert_eq!(status, 200, "{tokens}");
    let token = tokens["access_token"].as_str().unwrap();
    let (status, me) = envelope(app.get_auth("/v1/profile/me", token).await).await;
    assert_eq!(status, 200, "{me}");
    assert_eq!(me["data"]["email"], "nico@paddock.example");
}

/// A driver who signs in only through the provider: the export lists the provider identity
/// (never a token), the registry covers the link and its index, deletion removes them, and
/// the same identity signing in again gets a new account.
async fn a_provider_account_is_exported_and_deleted_with_its_link(app: &TestApp) {
    use paddock_core::driver_data::{Driver, DriverData};
    let (target, verifier, _) = sign_in_in_browser(app, "nora@paddock.example").await;
    let (status, body) = app
        .exchange(&query_param(&target, "code").unwrap(), &verifier)
        .await;
    assert_eq!(status, 200, "{body}");
    let user = body["data"]["user"].clone();
    let id = user["id"].as_str().unwrap().to_owned();
    let access = body["data"]["accessToken"].as_str().unwrap().to_owned();

    let export: serde_json::Value = app
        .client
        .get(format!("{}/v1/profile/me/export", app.address))
        .bearer_auth(&access)
        .send()
        .await
        .unwrap()
        .json()
        .await
        .unwrap();
    let links = export["providerLinks"].as_array().unwrap();
    assert_eq!(links.len(), 1, "{export}");
    assert_eq!(links[0]["provider"], "oidc");
    assert!(links[0]["subject"].is_string());

    let profile =
        paddock_core::identity::users::get_stored(&app.ports, &id.as_str().parse().unwrap())
            .await
            .unwrap()
            .unwrap();
    let driver = Driver::of(&profile.user);
    let mine = |items: Vec<(
        paddock_core::tables::Table,
        paddock_core::ports::items::Item,
    )>| {
        items
            .into_iter()
            .filter(|(_, i)| {
                serde_json::Value::Object(i.clone())
                    .to_string()
                    .contains(&id)
            })
            .collect::<Vec<_>>()
    };
    let stored = mine(paddock_tests::every_item(&app.settings).await);
    let kinds: Vec<_> = stored
        .iter()
        .map(|(t, i)| {
            DriverData::covering(&driver, *t, i).unwrap_or_else(|| {
                panic!(
                    "not covered: {t:?} {}",
                    serde_json::Value::Object(i.clone())
                )
            })
        })
        .collect();
    assert!(kinds.contains(&DriverData::ProviderLinks), "{kinds:?}");

    let res = app
        .client
        .delete(format!("{}/v1/profile/me", app.address))
        .bearer_auth(&access)
        .send()
        .await
        .unwrap();
    assert_eq!(envelope(res).await.0, 202);
    for _ in 0..300 {
        if mine(paddock_tests::every_item(&app.settings).await).is_empty() {
            break;
        }
        tokio::time::sleep(Duration::from_millis(100)).await;
    }
    assert_eq!(mine(paddock_tests::every_item(&app.settings).await), vec![]);

    let (target, verifier, _) = sign_in_in_browser(app, "nora@paddock.example").await;
    let (status, body) = app
        .exchange(&query_param(&target, "code").unwrap(), &verifier)
        .await;
    assert_eq!(status, 200, "{body}");
    assert_ne!(body["data"]["user"]["id"], user["id"], "a new account");
}

/// Account pre-hijacking: an attacker registers the victim's email with a password of their
/// own, then the victim signs in through the provider, which vouches for that email. The
/// account is the victim's from then on: the attacker's password, refresh token and access
/// token all fail, and the victim sets a password of their own.
async fn a_pre_hijacked_account_goes_to_the_verified_owner(app: &TestApp) {
    let victim = "victim@paddock.example";
    let attacker = app.register(victim, "attacker's own password").await;
    let attacker_access = attacker["accessToken"].as_str().unwrap().to_owned();
    let attacker_refresh = attacker["refreshToken"].as_str().unwrap().to_owned();
    let (status, _) = envelope(app.get_auth("/v1/auth/validate", &attacker_access).await).await;
    assert_eq!(status, 200);

    let (target, verifier, _) = sign_in_in_browser(app, victim).await;
    let code = query_param(&target, "code").expect("a code on the redirect");
    let (status, body) = app.exchange(&code, &verifier).await;
    assert_eq!(status, 200, "{body}");
    assert_eq!(
        body["data"]["user"]["id"], attacker["user"]["id"],
        "the account of that email, taken over"
    );
    let victim_access = body["data"]["accessToken"].as_str().unwrap().to_owned();

    let login = async |password: &str| {
        app.post_json(
            "/v1/auth/login/email",
            &json!({"email": victim, "password": password}),
        )
        .await
    };
    assert_eq!(
        envelope(login("attacker's own password").await).await.0,
        401,
        "the attacker's password was removed"
    );
    let (status, _) = envelope(
        app.post_json(
            "/v1/auth/refresh",
            &json!({"refreshToken": attacker_refresh}),
        )
        .await,
    )
    .await;
    assert_eq!(status, 401, "the attacker's refresh token was revoked");
    let (status, _) = envelope(app.get_auth("/v1/auth/validate", &attacker_access).await).await;
    assert_eq!(status, 401, "the attacker's access token was revoked");

    // The rightful owner is signed in and sets a password of their own (no current one).
    let (status, _) = envelope(app.get_auth("/v1/auth/validate", &victim_access).await).await;
    assert_eq!(status, 200);
    let res = app
        .post_json_auth(
            "/v1/auth/password",
            &json!({"newPassword": "the victim's own password"}),
            &victim_access,
        )
        .await;
    let (status, body) = envelope(res).await;
    assert_eq!(status, 200, "{body}");
    assert_eq!(
        envelope(login("the victim's own password").await).await.0,
        200
    );

    // Signing in through the provider again finds the same account and changes nothing.
    let (target, verifier, _) = sign_in_in_browser(app, victim).await;
    let (status, body) = app
        .exchange(&query_param(&target, "code").unwrap(), &verifier)
        .await;
    assert_eq!(status, 200);
    assert_eq!(body["data"]["user"]["id"], attacker["user"]["id"]);
    assert_eq!(
        envelope(login("the victim's own password").await).await.0,
        200,
        "a later provider sign-in keeps the owner's password"
    );
}

#[tokio::test(flavor = "multi_thread")]
async fn forged_state_and_foreign_redirects_are_refused() {
    // Only the start and the callback's checks are exercised: any port will do.
    let app = app_with_provider(false).await;
    let challenge = s256(&random_token(48));
    // A foreign redirect_uri never reaches the provider.
    let res = app.get(&format!("/v1/auth/login/oidc?redirect_uri=https://evil.example/callback&code_challenge={challenge}")).await;
    assert_eq!(envelope(res).await.0, 400);
    // A real start sets the flow cookie and redirects to the provider with state, nonce and PKCE.
    let res = app.get(&format!("/v1/auth/login/oidc?redirect_uri=http://127.0.0.1:1/callback&code_challenge={challenge}")).await;
    assert_eq!(res.status(), 303);
    let cookie = res.headers()["set-cookie"].to_str().unwrap().to_owned();
    assert!(
        cookie.contains("HttpOnly") && cookie.contains("SameSite=Lax"),
        "{cookie}"
    );
    let location = res.headers()["location"].to_str().unwrap().to_owned();
    assert!(
        location.starts_with(&env("PADDOCK_TEST_OIDC_ISSUER")),
        "{location}"
    );
    let provider_url = reqwest::Url::parse(&location).unwrap();
    let param = |n: &str| {
        provider_url
            .query_pairs()
            .find(|(k, _)| k == n)
            .map(|(_, v)| v.into_owned())
    };
    let state = param("state").unwrap();
    assert!(param("nonce").is_some());
    assert_eq!(param("code_challenge_method").as_deref(), Some("S256"));
    assert_ne!(
        param("code_challenge").as_deref(),
        Some(challenge.as_str()),
        "the provider gets the server's own challenge"
    );

    let flow_cookie = cookie.split(';').next().unwrap().to_owned();
    let callback = |query: String, cookie: Option<String>| {
        let mut req = app
            .client
            .get(format!("{}/v1/auth/callback/oidc?{query}", app.address));
        if let Some(c) = cookie {
            req = req.header("cookie", c);
        }
        req.send()
    };
    // A forged state (with the real cookie) is refused.
    let res = callback(
        format!("state={}&code=x", random_token(32)),
        Some(flow_cookie.clone()),
    )
    .await
    .unwrap();
    assert_eq!(envelope(res).await.0, 400);
    // The real state without the cookie (another browser) is refused.
    let res = callback(format!("state={state}&code=x"), None)
        .await
        .unwrap();
    assert_eq!(envelope(res).await.0, 400);
    // The real state at another provider's callback (mix-up) is refused.
    let res = app
        .client
        .get(format!(
            "{}/v1/auth/callback/other?state={state}&code=x",
            app.address
        ))
        .header("cookie", &flow_cookie)
        .send()
        .await
        .unwrap();
    assert_eq!(envelope(res).await.0, 400);
}
