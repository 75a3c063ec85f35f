//! Taking over an account ends everything the other party made: whoever registered a
//! driver's email with a password of their own, then made a personal access token, a webhook
//! subscription and a sign-in code, keeps none of them once the verified owner of the email
//! signs in through a provider that vouches for it. On both backends and through the
//! functions (the provider's part, which needs a browser, is `browser_sign_in.rs`; here the
//! provider's verdict is given to the domain directly).

use paddock_core::credentials::provider_sign_in;
use paddock_core::identity::exchange_codes;
use paddock_core::identity::personal_tokens::Scope;
use paddock_core::identity::provider_accounts::ProviderIdentity;
use paddock_core::ids::UserId;
use paddock_core::webhooks::subscriptions;
use paddock_tests::webhook_receiver::Receiver;
use paddock_tests::{TestApp, envelope, unique};
use serde_json::{Value, json};

async fn send(
    app: &TestApp,
    method: reqwest::Method,
    path: &str,
    token: &str,
    body: Value,
) -> (u16, Value) {
    let (status, body, _) = app.send_auth(method, path, token, Some(body)).await;
    (status, body)
}

async fn a_takeover_ends_every_credential_the_other_party_made(app: TestApp) {
    let email = format!("{}@example.com", unique("owner"));
    let intruder = app.register(&email, "the intruder's own password").await;
    let jwt = intruder["accessToken"].as_str().unwrap().to_owned();
    let user = intruder["user"]["id"]
        .as_str()
        .unwrap()
        .parse::<UserId>()
        .unwrap();

    // Everything the intruder can make: a token with every scope, a subscription to their
    // own receiver, a sign-in code not yet exchanged.
    let scopes: Vec<&str> = Scope::ALL.iter().map(|s| s.name()).collect();
    let (status, made) = send(
        &app,
        reqwest::Method::POST,
        "/v1/tokens",
        &jwt,
        json!({"name": "everything", "scopes": scopes}),
    )
    .await;
    assert_eq!(status, 201, "{made}");
    let personal_token = made["data"]["token"].as_str().unwrap().to_owned();
    let receiver = Receiver::start().await;
    let (status, hook) = send(
        &app,
        reqwest::Method::POST,
        "/v1/webhooks",
        &jwt,
        json!({"url": receiver.url, "eventTypes": ["session.uploaded", "leaderboard.best"]}),
    )
    .await;
    assert_eq!(status, 201, "{hook}");
    let verifier = "a-verifier-of-the-intruders-own-making-long-enough-for-pkce";
    let code = exchange_codes::issue(&app.ports, &user, &paddock_core::hashing::s256(verifier))
        .await
        .unwrap();
    let (status, _) = envelope(app.get_auth("/v1/sessions", &personal_token).await).await;
    assert_eq!(status, 200, "the token reads the account before");

    // The owner signs in through a provider that vouches for the email.
    let owner = ProviderIdentity {
        subject: unique("owner-subject"),
        email: Some(email.clone()),
        email_verified: true,
        name: None,
        picture: None,
    };
    let taken = provider_sign_in(&app.ports, "oidc", &owner).await.unwrap();
    assert_eq!(taken, user, "the account of that email, taken over");

    // Nothing the intruder made works any more.
    let (status, refused) = envelope(app.get_auth("/v1/sessions", &personal_token).await).await;
    assert_eq!(
        status, 401,
        "the intruder's personal access token: {refused}"
    );
    let (status, _) = envelope(app.get_auth("/v1/auth/validate", &jwt).await).await;
    assert_eq!(status, 401, "the intruder's sign-in");
    assert!(
        subscriptions::list(&app.ports, &user)
            .await
            .unwrap()
            .is_empty(),
        "the intruder's webhook subscription"
    );
    let exchanged = exchange_codes::redeem(&app.ports, &code, verifier).await;
    assert!(
        exchanged.is_err(),
        "the intruder's sign-in code: {exchanged:?}"
    );

    // A later sign-in of the owner finds the same account and ends nothing of theirs.
    assert_eq!(
        provider_sign_in(&app.ports, "oidc", &owner).await.unwrap(),
        user
    );
}

paddock_tests::on_both_backends!(plain: [a_takeover_ends_every_credential_the_other_party_made]);
