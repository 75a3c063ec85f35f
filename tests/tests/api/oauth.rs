//! The OAuth authorization server through the API: an app registered, a driver's consent in
//! the browser's forms, codes and refresh tokens exchanged once, tokens bound to their
//! resource and scopes, and every way a grant ends taking effect on the next call; bad input
//! refused with the RFCs' codes. On both backends and through the functions.

use paddock_tests::TestApp;
use paddock_tests::oauth_flow::{
    Browser, Pkce, RegisteredApp, authorize_query, driver_with_password, exchange_code,
    refresh_grant, register_app, text, token_request,
};
use reqwest::Method;
use serde_json::{Value, json};

const NATIVE: &str = "http://127.0.0.1/callback";
const PASSWORD: &str = "correct horse battery";

/// A driver's consent to `client` for `scope`: answers the token endpoint's answer.
async fn consented(app: &TestApp, client: &RegisteredApp, email: &str, scope: &str) -> Value {
    let pkce = Pkce::new();
    let browser = Browser::new(app);
    let approved = browser
        .consent(&authorize_query(client, &pkce, scope, &[]), email, PASSWORD)
        .await;
    let (status, tokens) = exchange_code(app, client, &approved, &pkce).await;
    assert_eq!(status, 200, "{tokens}");
    tokens
}

async fn an_app_acts_for_a_driver_until_the_grant_is_revoked(app: TestApp) {
    let (owner, _) = app.driver("Owner").await;
    let (_, driver_id, email) = driver_with_password(&app, "Dee").await;
    // A native app on a loopback port of its own choosing.
    let mut client = register_app(&app, &owner, NATIVE, false).await;
    client.redirect_uri = "http://127.0.0.1:53122/callback".into();
    let pkce = Pkce::new();
    let browser = Browser::new(&app);
    let query = authorize_query(&client, &pkce, "profile:read boards:read", &[]);
    let page = browser.authorize(&query).await;
    assert_eq!(page.status, 200);
    assert!(page.body.contains("League Bot"), "{}", page.body);
    let policy = page.headers["content-security-policy"].to_str().unwrap();
    assert!(policy.contains("frame-ancestors 'none'"), "{policy}");
    assert!(
        policy.contains("form-action 'self' http://127.0.0.1:53122"),
        "{policy}"
    );
    assert_eq!(page.headers["x-frame-options"], "DENY");
    let wrong = browser.sign_in(&page, &email, "wrong password").await;
    assert_eq!(wrong.status, 401, "{}", wrong.body);
    assert!(wrong.body.contains("Wrong email or password"));
    let consent = browser.sign_in(&page, &email, PASSWORD).await;
    assert_eq!(consent.status, 200, "{}", consent.body);
    assert!(
        consent.body.contains("See your profile"),
        "{}",
        consent.body
    );
    let cookie = consent.headers["set-cookie"].to_str().unwrap();
    assert!(
        cookie.contains("HttpOnly")
            && cookie.contains("SameSite=Lax")
            && cookie.contains("Path=/oauth"),
        "{cookie}"
    );
    let approved = browser.post(&consent, &[("action", "approve")]).await;
    assert_eq!(approved.status, 303);
    let params = approved.location_params();
    assert!(
        approved
            .location
            .as_deref()
            .unwrap()
            .starts_with("http://127.0.0.1:53122/callback?")
    );
    assert_eq!(params["state"], "state-1");
    assert_eq!(params["iss"], app.address, "RFC 9207");

    let (status, tokens) = exchange_code(&app, &client, &approved, &pkce).await;
    assert_eq!(status, 200, "{tokens}");
    assert_eq!(
        (text(&tokens, "token_type"), &tokens["expires_in"]),
        ("Bearer", &json!(600))
    );
    assert_eq!(text(&tokens, "scope"), "boards:read profile:read");
    let access = text(&tokens, "access_token").to_owned();
    assert!(access.starts_with("pda_"));
    let me = app.get_auth("/v1/profile/me", &access).await;
    assert_eq!(me.status(), 200);
    assert!(
        me.headers().contains_key("ratelimit-remaining"),
        "per grant and per app"
    );
    let me: Value = me.json().await.unwrap();
    assert_eq!(me["data"]["id"], driver_id.as_str());
    // Scopes hold as for personal access tokens; the account's own routes refuse apps.
    let (status, refused) = app.call(Method::GET, "/v1/sessions", &access, None).await;
    assert_eq!(status, 403, "{refused}");
    assert!(
        text(&refused, "error").contains("`sessions:read`"),
        "{refused}"
    );
    let (status, _) = app.call(Method::GET, "/v1/tokens", &access, None).await;
    assert_eq!(status, 403);
    let (status, _) = app
        .call(Method::GET, "/v1/authorized-apps", &access, None)
        .await;
    assert_eq!(status, 403);

    // The same scopes again skip the page; the owner sees one driver.
    let again = browser
        .authorize(&authorize_query(&client, &Pkce::new(), "profile:read", &[]))
        .await;
    assert_eq!(again.status, 302, "{}", again.body);
    assert!(again.location_params().contains_key("code"));
    let (_, apps) = app.call(Method::GET, "/v1/apps", &owner, None).await;
    assert_eq!(apps["data"]["items"][0]["authorizedDrivers"], 1, "{apps}");

    // A refresh rotates; the driver sees the app and revokes it, which ends both tokens.
    let refresh = text(&tokens, "refresh_token").to_owned();
    let (status, refreshed) =
        refresh_grant(&app, refresh.as_str(), client.client_id.as_str()).await;
    assert_eq!(status, 200, "{refreshed}");
    let (driver_token, _) = sign_in(&app, &email).await;
    let (_, granted) = app
        .call(Method::GET, "/v1/authorized-apps", &driver_token, None)
        .await;
    let grant = &granted["data"]["items"][0];
    assert_eq!(
        (&grant["clientId"], &grant["appName"]),
        (&json!(client.client_id), &json!("League Bot")),
        "{granted}"
    );
    assert_eq!(grant["scopes"], json!(["boards:read", "profile:read"]));
    let path = format!("/v1/authorized-apps/{}", client.client_id);
    let (status, _) = app.delete_auth(&path, &driver_token).await;
    assert_eq!(status, 204);
    let new_access = text(&refreshed, "access_token");
    let (status, refused) = app
        .call(Method::GET, "/v1/profile/me", new_access, None)
        .await;
    assert_eq!(status, 401, "{refused}");
    let next = text(&refreshed, "refresh_token");
    let (status, refused) = refresh_grant(&app, next, client.client_id.as_str()).await;
    assert_eq!((status, text(&refused, "error")), (400, "invalid_grant"));
    let (_, apps) = app.call(Method::GET, "/v1/apps", &owner, None).await;
    assert_eq!(apps["data"]["items"][0]["authorizedDrivers"], 0, "{apps}");
}

/// Signs the driver of `email` in; answers their access token and refresh token.
async fn sign_in(app: &TestApp, email: &str) -> (String, String) {
    let body = json!({"email": email, "password": PASSWORD});
    let signed: Value = app
        .post_json("/v1/auth/login/email", &body)
        .await
        .json()
        .await
        .unwrap();
    (
        text(&signed["data"], "accessToken").to_owned(),
        text(&signed["data"], "refreshToken").to_owned(),
    )
}

async fn codes_and_refresh_tokens_are_single_use_and_bound(app: TestApp) {
    let (owner, _) = app.driver("Owner").await;
    let (_, _, email) = driver_with_password(&app, "Dee").await;
    let client = register_app(&app, &owner, "https://bot.example.com/cb", false).await;
    let other = register_app(&app, &owner, "https://other.example.com/cb", false).await;
    let pkce = Pkce::new();
    let browser = Browser::new(&app);
    let approved = browser
        .consent(
            &authorize_query(&client, &pkce, "profile:read", &[]),
            &email,
            PASSWORD,
        )
        .await;
    let code = approved.location_params()["code"].clone();
    let exchange = |client_id: &str, redirect: &str, verifier: &str| {
        let form = [
            ("grant_type".to_owned(), "authorization_code".to_owned()),
            ("code".to_owned(), code.clone()),
            ("redirect_uri".to_owned(), redirect.to_owned()),
            ("code_verifier".to_owned(), verifier.to_owned()),
            ("client_id".to_owned(), client_id.to_owned()),
        ];
        let app = &app;
        async move {
            let form: Vec<(&str, &str)> =
                form.iter().map(|(k, v)| (k.as_str(), v.as_str())).collect();
            token_request(app, "/oauth/token", &form, None).await
        }
    };
    // Another client's exchange is refused and uses the code up; the real client's then
    // finds it used, which revokes what was issued for it.
    let (status, refused) = exchange(&other.client_id, &client.redirect_uri, &pkce.verifier).await;
    assert_eq!(
        (status, text(&refused, "error")),
        (400, "invalid_grant"),
        "{refused}"
    );
    let (status, refused) = exchange(&client.client_id, &client.redirect_uri, &pkce.verifier).await;
    assert_eq!(
        (status, text(&refused, "error")),
        (400, "invalid_grant"),
        "{refused}"
    );
    assert!(
        text(&refused, "error_description").contains("already used"),
        "{refused}"
    );
    // A redirect URI a byte off, or a wrong verifier: refused.
    let pkce = Pkce::new();
    let approved = browser
        .consent(
            &authorize_query(&client, &pkce, "profile:read", &[]),
            &email,
            PASSWORD,
        )
        .await;
    let mut off_by_a_byte = client.clone();
    off_by_a_byte.redirect_uri.push('/');
    let (status, refused) = exchange_code(&app, &off_by_a_byte, &approved, &pkce).await;
    assert_eq!(
        (status, text(&refused, "error")),
        (400, "invalid_grant"),
        "{refused}"
    );
    let approved = browser
        .authorize(&authorize_query(&client, &pkce, "profile:read", &[]))
        .await;
    let wrong = Pkce {
        verifier: format!("{}x", pkce.verifier),
        ..pkce.clone()
    };
    let (status, refused) = exchange_code(&app, &client, &approved, &wrong).await;
    assert_eq!(
        (status, text(&refused, "error")),
        (400, "invalid_grant"),
        "{refused}"
    );
    assert!(
        text(&refused, "error_description").contains("code_verifier"),
        "{refused}"
    );

    // A fresh code: exchanged once; a second exchange revokes what the first got.
    let pkce = Pkce::new();
    let approved = browser
        .authorize(&authorize_query(&client, &pkce, "profile:read", &[]))
        .await;
    assert_eq!(approved.status, 302, "approved before: {}", approved.body);
    let (status, tokens) = exchange_code(&app, &client, &approved, &pkce).await;
    assert_eq!(status, 200, "{tokens}");
    let (status, refused) = exchange_code(&app, &client, &approved, &pkce).await;
    assert_eq!((status, text(&refused, "error")), (400, "invalid_grant"));
    let (status, _) = app
        .call(
            Method::GET,
            "/v1/profile/me",
            text(&tokens, "access_token"),
            None,
        )
        .await;
    assert_eq!(
        status, 401,
        "a replayed code revokes the tokens issued for it"
    );

    // A refresh token used twice revokes the grant.
    let tokens = consented(&app, &client, &email, "profile:read").await;
    let refresh = text(&tokens, "refresh_token");
    let (status, rotated) = refresh_grant(&app, refresh, client.client_id.as_str()).await;
    assert_eq!(status, 200, "{rotated}");
    let (status, refused) = refresh_grant(&app, refresh, client.client_id.as_str()).await;
    assert_eq!((status, text(&refused, "error")), (400, "invalid_grant"));
    let (status, _) = app
        .call(
            Method::GET,
            "/v1/profile/me",
            text(&rotated, "access_token"),
            None,
        )
        .await;
    assert_eq!(status, 401);
    // Another client's refresh token is refused and revokes nothing of the owner's.
    let tokens = consented(&app, &client, &email, "profile:read").await;
    let (status, refused) = refresh_grant(
        &app,
        text(&tokens, "refresh_token"),
        other.client_id.as_str(),
    )
    .await;
    assert_eq!((status, text(&refused, "error")), (400, "invalid_grant"));
    let (status, _) = app
        .call(
            Method::GET,
            "/v1/profile/me",
            text(&tokens, "access_token"),
            None,
        )
        .await;
    assert_eq!(status, 200);
    // A sign-in's refresh token is not an app's, and the other way round.
    let (_, signed_refresh) = sign_in(&app, &email).await;
    let (status, _) = refresh_grant(&app, signed_refresh.as_str(), client.client_id.as_str()).await;
    assert_eq!(status, 400);
    let body = json!({"refreshToken": text(&tokens, "refresh_token")});
    let refused = app.post_json("/v1/auth/refresh", &body).await;
    assert_eq!(refused.status(), 401);
}

async fn tokens_are_bound_to_their_resource(app: TestApp) {
    let (owner, _) = app.driver("Owner").await;
    let (_, _, email) = driver_with_password(&app, "Dee").await;
    let client = register_app(&app, &owner, "https://bot.example.com/cb", false).await;
    let pkce = Pkce::new();
    let browser = Browser::new(&app);
    let mcp = format!("{}/mcp", app.address);
    let query = authorize_query(&client, &pkce, "profile:read", &[("resource", &mcp)]);
    let approved = browser.consent(&query, &email, PASSWORD).await;
    let (status, tokens) = exchange_code(&app, &client, &approved, &pkce).await;
    assert_eq!(status, 200, "{tokens}");
    let (status, refused) = app
        .call(
            Method::GET,
            "/v1/profile/me",
            text(&tokens, "access_token"),
            None,
        )
        .await;
    assert_eq!(status, 401, "an MCP token at the REST API: {refused}");
    // A refresh may ask for the REST API instead.
    let rest = format!("{}/v1", app.address);
    let form = [
        ("grant_type", "refresh_token"),
        ("refresh_token", text(&tokens, "refresh_token")),
        ("client_id", client.client_id.as_str()),
        ("resource", rest.as_str()),
    ];
    let (status, rest_tokens) = token_request(&app, "/oauth/token", &form, None).await;
    assert_eq!(status, 200, "{rest_tokens}");
    let (status, _) = app
        .call(
            Method::GET,
            "/v1/profile/me",
            text(&rest_tokens, "access_token"),
            None,
        )
        .await;
    assert_eq!(status, 200);
    // A resource this server does not serve goes back to the app as invalid_target.
    let query = authorize_query(
        &client,
        &Pkce::new(),
        "profile:read",
        &[("resource", "https://elsewhere.example/v1")],
    );
    let refused = browser.authorize(&query).await;
    assert_eq!(refused.status, 302);
    assert_eq!(refused.location_params()["error"], "invalid_target");
}

async fn a_confidential_app_proves_itself_with_its_secret(app: TestApp) {
    let (owner, _) = app.driver("Owner").await;
    let (_, _, email) = driver_with_password(&app, "Dee").await;
    let client = register_app(&app, &owner, "https://bot.example.com/cb", true).await;
    let secret = client.secret.clone().expect("shown once");
    let (_, shown) = app
        .call(
            Method::GET,
            &format!("/v1/apps/{}", client.client_id),
            &owner,
            None,
        )
        .await;
    assert!(!shown.to_string().contains(&secret), "{shown}");
    let pkce = Pkce::new();
    let approved = Browser::new(&app)
        .consent(
            &authorize_query(&client, &pkce, "boards:read", &[]),
            &email,
            PASSWORD,
        )
        .await;
    let code = approved.location_params()["code"].clone();
    let form = [
        ("grant_type", "authorization_code"),
        ("code", code.as_str()),
        ("redirect_uri", "https://bot.example.com/cb"),
        ("code_verifier", pkce.verifier.as_str()),
        ("client_id", client.client_id.as_str()),
    ];
    let (status, refused) = token_request(&app, "/oauth/token", &form, None).await;
    assert_eq!(
        (status, text(&refused, "error")),
        (401, "invalid_client"),
        "{refused}"
    );
    let (status, refused) = token_request(
        &app,
        "/oauth/token",
        &form,
        Some((&client.client_id, "pdcs_wrong")),
    )
    .await;
    assert_eq!(
        (status, text(&refused, "error")),
        (401, "invalid_client"),
        "{refused}"
    );
    // The code was not spent on a client that did not prove itself.
    let (status, tokens) = exchange_code(&app, &client, &approved, &pkce).await;
    assert_eq!(status, 200, "{tokens}");
    // Revoking its refresh token (RFC 7009) ends the access token too.
    let revoke = [("token", text(&tokens, "refresh_token"))];
    let (status, _) = token_request(
        &app,
        "/oauth/revoke",
        &revoke,
        Some((&client.client_id, &secret)),
    )
    .await;
    assert_eq!(status, 200);
    let (status, _) = app
        .call(
            Method::GET,
            "/v1/leaderboards/me",
            text(&tokens, "access_token"),
            None,
        )
        .await;
    assert_eq!(status, 401);
    // An unknown token is answered the same.
    let revoke = [("token", "not-a-token")];
    let (status, _) = token_request(
        &app,
        "/oauth/revoke",
        &revoke,
        Some((&client.client_id, &secret)),
    )
    .await;
    assert_eq!(status, 200);
}

async fn bad_authorization_requests_are_refused_where_they_should_be(app: TestApp) {
    let (owner, _) = app.driver("Owner").await;
    let client = register_app(&app, &owner, "https://bot.example.com/cb", false).await;
    let browser = Browser::new(&app);
    let pkce = Pkce::new();
    // The app or its redirect URI unknown: shown to the driver, never sent to the URI.
    let mut off_by_a_byte = client.clone();
    off_by_a_byte.redirect_uri = "https://bot.example.com/cb/".into();
    for query in [
        authorize_query(&off_by_a_byte, &pkce, "profile:read", &[]),
        authorize_query(&client, &pkce, "profile:read", &[])
            .replace("client_id=pdc_", "client_id=pdc_x"),
    ] {
        let page = browser.authorize(&query).await;
        assert_eq!(
            (page.status, page.location.as_deref()),
            (400, None),
            "{query}: {}",
            page.body
        );
    }
    // Known app and URI: the error goes back to the app with state and iss.
    let no_pkce = authorize_query(&client, &pkce, "profile:read", &[])
        .replace("&code_challenge_method=S256", "");
    let plain = authorize_query(&client, &pkce, "profile:read", &[])
        .replace("code_challenge_method=S256", "code_challenge_method=plain");
    let no_state =
        authorize_query(&client, &pkce, "profile:read", &[]).replace("state=state-1&", "");
    let implicit = authorize_query(&client, &pkce, "profile:read", &[])
        .replace("response_type=code", "response_type=token");
    let twice = format!(
        "{}&scope=boards%3Aread",
        authorize_query(&client, &pkce, "profile:read", &[])
    );
    for (query, error) in [
        (no_pkce, "invalid_request"),
        (plain, "invalid_request"),
        (no_state, "invalid_request"),
        (implicit, "unsupported_response_type"),
        (twice, "invalid_request"),
        (
            authorize_query(&client, &pkce, "profile:read everything", &[]),
            "invalid_scope",
        ),
    ] {
        let answer = browser.authorize(&query).await;
        assert_eq!(answer.status, 302, "{query}");
        let params = answer.location_params();
        assert_eq!(params["error"], error, "{query}: {params:?}");
        assert_eq!(params["iss"], app.address);
    }
    // A form not posted from the page (no token, another origin) is refused.
    let page = browser
        .authorize(&authorize_query(&client, &pkce, "profile:read", &[]))
        .await;
    let forged = Browser::new(&app).post(&page, &[("action", "deny")]).await;
    assert_eq!(forged.status, 403, "no form cookie");
    // Denying sends access_denied back.
    let denied = browser.post(&page, &[("action", "deny")]).await;
    assert_eq!(denied.status, 303);
    assert_eq!(denied.location_params()["error"], "access_denied");
    // The token endpoint's bad input.
    for (form, error) in [
        (
            vec![
                ("grant_type", "password"),
                ("client_id", client.client_id.as_str()),
            ],
            "unsupported_grant_type",
        ),
        (
            vec![
                ("grant_type", "authorization_code"),
                ("client_id", client.client_id.as_str()),
            ],
            "invalid_request",
        ),
        (
            vec![
                ("grant_type", "refresh_token"),
                ("refresh_token", "x"),
                ("client_id", "pdc_unknown"),
            ],
            "invalid_client",
        ),
    ] {
        let (_, refused) = token_request(&app, "/oauth/token", &form, None).await;
        assert_eq!(text(&refused, "error"), error, "{form:?}: {refused}");
    }
}

async fn apps_are_their_owners_and_refuse_bad_input(app: TestApp) {
    let (owner, _) = app.driver("Owner").await;
    let (stranger, _) = app.driver("Stranger").await;
    for (body, rule) in [
        (json!({"redirectUris": [NATIVE]}), "name: is required"),
        (
            json!({"name": " ", "redirectUris": [NATIVE]}),
            "name: must not be empty",
        ),
        (json!({"name": "Bot"}), "redirectUris: is required"),
        (
            json!({"name": "Bot", "redirectUris": []}),
            "redirectUris: must hold 1 to 10",
        ),
        (
            json!({"name": "Bot", "redirectUris": ["http://bot.example.com/cb"]}),
            "redirectUris[0]: must be https",
        ),
        (
            json!({"name": "Bot", "redirectUris": ["https://bot.example.com/cb#x"]}),
            "redirectUris[0]: must not have a fragment",
        ),
        (
            json!({"name": "Bot", "redirectUris": ["http://localhost:8080/cb"]}),
            "redirectUris[0]: must be https",
        ),
        (
            json!({"name": "Bot", "redirectUris": [NATIVE], "clientType": "secret"}),
            "clientType: must be",
        ),
    ] {
        let (status, refused) = app
            .call(Method::POST, "/v1/apps", &owner, Some(body.clone()))
            .await;
        assert_eq!(status, 400, "{body}: {refused}");
        assert!(
            text(&refused, "error").starts_with(rule),
            "{body}: {refused}"
        );
    }
    let client = register_app(&app, &owner, NATIVE, false).await;
    let path = format!("/v1/apps/{}", client.client_id);
    for (method, body) in [
        (Method::GET, None),
        (Method::PATCH, Some(json!({"name": "Mine now"}))),
        (Method::DELETE, None),
    ] {
        let (status, _) = app.call(method.clone(), &path, &stranger, body).await;
        assert_eq!(status, 404, "{method} by another driver");
    }
    let (status, changed) = app
        .call(
            Method::PATCH,
            &path,
            &owner,
            Some(json!({"name": "League Bot 2"})),
        )
        .await;
    assert_eq!(
        (status, &changed["data"]["name"]),
        (200, &json!("League Bot 2")),
        "{changed}"
    );
    // Deleting the app ends every driver's grant to it.
    let (_, _, email) = driver_with_password(&app, "Dee").await;
    let tokens = consented(&app, &client, &email, "profile:read").await;
    let (status, _) = app.delete_auth(&path, &owner).await;
    assert_eq!(status, 204);
    let (status, _) = app
        .call(
            Method::GET,
            "/v1/profile/me",
            text(&tokens, "access_token"),
            None,
        )
        .await;
    assert_eq!(status, 401);
}

async fn a_password_change_ends_every_grant(app: TestApp) {
    let (owner, _) = app.driver("Owner").await;
    let (_, _, email) = driver_with_password(&app, "Dee").await;
    let client = register_app(&app, &owner, NATIVE, false).await;
    let tokens = consented(&app, &client, &email, "profile:read").await;
    let (driver_token, _) = sign_in(&app, &email).await;
    let body = json!({"currentPassword": PASSWORD, "newPassword": "another horse battery"});
    let (status, changed) = app
        .call(Method::POST, "/v1/auth/password", &driver_token, Some(body))
        .await;
    assert_eq!(status, 200, "{changed}");
    let (status, _) = app
        .call(
            Method::GET,
            "/v1/profile/me",
            text(&tokens, "access_token"),
            None,
        )
        .await;
    assert_eq!(status, 401);
    let (status, _) = refresh_grant(
        &app,
        text(&tokens, "refresh_token"),
        client.client_id.as_str(),
    )
    .await;
    assert_eq!(status, 400);
    let (_, granted) = app
        .call(Method::GET, "/v1/authorized-apps", &driver_token, None)
        .await;
    assert_eq!(granted["data"]["items"], json!([]), "{granted}");
}

/// The way back from a provider sign-in on the consent page takes only a code this browser
/// started: without its cookie the driver is shown the request again, not signed in; a
/// provider that is not configured is 404. (The whole way through a real provider is the
/// browser test's, `sign_in.rs`.)
async fn a_provider_sign_in_on_the_consent_page_is_this_browsers_own(app: TestApp) {
    let (owner, _) = app.driver("Owner").await;
    let client = register_app(&app, &owner, "https://bot.example.com/cb", false).await;
    let query = authorize_query(&client, &Pkce::new(), "profile:read", &[]);
    let browser = Browser::new(&app);
    let unknown = browser
        .authorize_path(&format!("/oauth/provider/nowhere?{query}"))
        .await;
    assert_eq!(unknown.status, 404, "{}", unknown.body);
    let request: String = form_urlencoded::byte_serialize(query.as_bytes()).collect();
    let no_cookie = browser
        .authorize_path(&format!("/oauth/signed-in?request={request}&code=forged"))
        .await;
    assert_eq!(no_cookie.status, 303);
    let location = no_cookie.location.clone().unwrap_or_default();
    assert!(location.starts_with("/oauth/authorize?"), "{location}");
    let page = browser
        .authorize(&location["/oauth/authorize?".len()..])
        .await;
    assert!(
        page.body.contains("Sign in to Paddock"),
        "not signed in: {}",
        page.body
    );
    let missing = browser.authorize_path("/oauth/signed-in?code=x").await;
    assert_eq!(missing.status, 400);
}

async fn the_metadata_names_the_endpoints(app: TestApp) {
    let metadata: Value = app
        .get("/.well-known/oauth-authorization-server")
        .await
        .json()
        .await
        .unwrap();
    assert_eq!(metadata["issuer"], app.address);
    assert_eq!(
        text(&metadata, "token_endpoint"),
        format!("{}/oauth/token", app.address)
    );
    assert_eq!(
        metadata["code_challenge_methods_supported"],
        json!(["S256"])
    );
    assert_eq!(
        metadata["grant_types_supported"],
        json!(["authorization_code", "refresh_token"])
    );
    assert_eq!(
        metadata["authorization_response_iss_parameter_supported"],
        true
    );
}

paddock_tests::on_both_backends!(
    plain: [
        an_app_acts_for_a_driver_until_the_grant_is_revoked,
        codes_and_refresh_tokens_are_single_use_and_bound,
        tokens_are_bound_to_their_resource,
        a_confidential_app_proves_itself_with_its_secret,
        bad_authorization_requests_are_refused_where_they_should_be,
        apps_are_their_owners_and_refuse_bad_input,
        a_password_change_ends_every_grant,
        the_metadata_names_the_endpoints,
        a_provider_sign_in_on_the_consent_page_is_this_browsers_own,
    ],
);
