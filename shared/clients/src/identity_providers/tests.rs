use super::*;
use base64::Engine;
use base64::engine::general_purpose::URL_SAFE_NO_PAD;
use serde_json::json;

/// An Ed25519 key made for these tests only, and its public half as a JWK's `x`.
const TEST_ED25519_PEM: &str = "-----BEGIN PRIVATE KEY-----
MC4CAQAwBQYDK2VwBCIEIKVwkW/olVS9O9emRl9C+GaQFvMS8nWqzMiQfaWUW3Be
-----END PRIVATE KEY-----";
const TEST_ED25519_X: &str = "NShRDnOELPaTvlUXCdwoKGRUBnvDfDqOeAOFjKWZaAc";

fn discovery(endpoint: &str) -> Discovery {
    serde_json::from_value(json!({
        "issuer": "https://idp.example",
        "authorization_endpoint": "https://idp.example/authorize",
        "token_endpoint": endpoint,
        "userinfo_endpoint": "https://idp.example/me",
        "jwks_uri": "https://idp.example/jwks",
    }))
    .unwrap()
}

#[test]
fn discovered_endpoints_must_be_https_except_on_loopback() {
    for fine in [
        "https://idp.example/token",
        "http://127.0.0.1:5556/token",
        "http://localhost:5556/token",
        "http://[::1]:5556/token",
    ] {
        assert!(discovery(fine).check_endpoints().is_ok(), "{fine}");
    }
    for refused in [
        "http://idp.example/token",
        "http://127.0.0.1.idp.example/token",
        "ftp://idp.example/token",
        "/token",
    ] {
        let err = discovery(refused)
            .check_endpoints()
            .unwrap_err()
            .to_string();
        assert!(
            err.contains("discovery's token_endpoint"),
            "{refused}: {err}"
        );
    }
    let mut insecure_keys = discovery("https://idp.example/token");
    insecure_keys.jwks_uri = Some("http://idp.example/jwks".into());
    let err = insecure_keys.check_endpoints().unwrap_err().to_string();
    assert!(err.contains("jwks_uri") && err.contains("https"), "{err}");
}

#[test]
fn id_token_algorithms_are_the_listed_asymmetric_ones_or_rs256() {
    let names = |list: &[&str]| list.iter().map(|s| (*s).to_owned()).collect::<Vec<_>>();
    assert_eq!(id_token_algorithms(None).unwrap(), vec![Algorithm::RS256]);
    assert_eq!(
        id_token_algorithms(Some(&[])).unwrap(),
        vec![Algorithm::RS256]
    );
    assert_eq!(
        id_token_algorithms(Some(&names(&["none", "HS256", "RS256", "EdDSA", "XX1"]))).unwrap(),
        vec![Algorithm::RS256, Algorithm::EdDSA]
    );
    let err = id_token_algorithms(Some(&names(&["none", "HS256", "HS512"]))).unwrap_err();
    assert!(err.to_string().contains("no asymmetric algorithm"), "{err}");
}

/// A provider whose discovery is already done: ID tokens of `algorithms`, and `keys`.
fn discovered(algorithms: Vec<Algorithm>, keys: Value) -> Provider {
    let config = ProviderConfig {
        name: "corp".into(),
        kind: ProviderKind::Oidc,
        client_id: "paddock".into(),
        client_secret: Some("client-secret".into()),
        issuer: Some("https://idp.example".into()),
        scopes: vec![],
        trust_email_verified: false,
    };
    let provider = Provider::new(config, http_client());
    provider
        .endpoints
        .set(Endpoints {
            issuer: Some("https://idp.example".into()),
            authorize: "https://idp.example/authorize".into(),
            token: "https://idp.example/token".into(),
            userinfo: None,
            jwks: Some("https://idp.example/jwks".into()),
            id_token_algorithms: algorithms,
        })
        .unwrap();
    *provider.jwks.try_lock().unwrap() = Some(serde_json::from_value(keys).unwrap());
    provider
}

fn id_token(header: jsonwebtoken::Header, key: &jsonwebtoken::EncodingKey) -> String {
    let now = time::OffsetDateTime::now_utc().unix_timestamp();
    let claims = json!({"iss": "https://idp.example", "aud": "paddock", "sub": "driver-1",
        "iat": now, "exp": now + 300, "nonce": "n-1"});
    jsonwebtoken::encode(&header, &claims, key).unwrap()
}

#[tokio::test]
async fn an_id_token_is_checked_only_with_an_algorithm_of_the_provider() {
    let ed_key = jsonwebtoken::EncodingKey::from_ed_pem(TEST_ED25519_PEM.as_bytes()).unwrap();
    let mut ed_header = jsonwebtoken::Header::new(Algorithm::EdDSA);
    ed_header.kid = Some("ed".into());
    let signed = id_token(ed_header, &ed_key);
    let keys = json!({"keys": [
        {"kty": "OKP", "crv": "Ed25519", "x": TEST_ED25519_X, "kid": "ed", "use": "sig"},
        // A symmetric key anyone may read from the JWKS.
        {"kty": "oct", "k": "cHVibGljLWtleQ", "kid": "oct"},
    ]});

    // Listed: accepted.
    let provider = discovered(vec![Algorithm::RS256, Algorithm::EdDSA], keys.clone());
    let identity = provider.check_id_token(&signed, "n-1").await.unwrap();
    assert_eq!(identity.subject, "driver-1");
    // Not listed (RS256 only, the default): refused, though the signature is good.
    let provider = discovered(vec![Algorithm::RS256], keys.clone());
    let err = provider.check_id_token(&signed, "n-1").await.unwrap_err();
    assert!(err.to_string().contains("signed with EdDSA"), "{err}");

    // HS256 with the JWKS's own symmetric key: refused before any key is used.
    let provider = discovered(vec![Algorithm::RS256, Algorithm::EdDSA], keys.clone());
    let mut hs_header = jsonwebtoken::Header::new(Algorithm::HS256);
    hs_header.kid = Some("oct".into());
    let forged = id_token(
        hs_header,
        &jsonwebtoken::EncodingKey::from_secret(b"public-key"),
    );
    let err = provider.check_id_token(&forged, "n-1").await.unwrap_err();
    assert!(err.to_string().contains("signed with HS256"), "{err}");
    // `none`: not even a header this service reads.
    let unsigned = format!(
        "{}.{}.",
        URL_SAFE_NO_PAD.encode(br#"{"alg":"none","typ":"JWT"}"#),
        signed.split('.').nth(1).unwrap()
    );
    assert!(provider.check_id_token(&unsigned, "n-1").await.is_err());
}

fn claims(value: Value) -> BTreeMap<String, Value> {
    serde_json::from_value(value).unwrap()
}

#[test]
fn microsoft_emails_count_as_verified_only_with_xms_edov() {
    let tenant_asserted =
        claims(json!({"sub": "s", "email": "ceo@victim.example", "email_verified": true}));
    let id = identity_from_claims(&tenant_asserted, ProviderKind::Microsoft).unwrap();
    assert!(!id.email_verified, "Entra's email_verified is not proof");
    let edov = claims(json!({"sub": "s", "email": "a@b.example", "xms_edov": true}));
    assert!(
        identity_from_claims(&edov, ProviderKind::Microsoft)
            .unwrap()
            .email_verified
    );
    let google = claims(json!({"sub": "s", "email": "a@b.example", "email_verified": "true"}));
    assert!(
        identity_from_claims(&google, ProviderKind::Google)
            .unwrap()
            .email_verified
    );
}

#[test]
fn an_untrusted_provider_never_vouches_for_an_email() {
    let config = ProviderConfig {
        name: "corp".into(),
        kind: ProviderKind::Oidc,
        client_id: "c".into(),
        client_secret: Some("s3cr3t-client-value".into()),
        issuer: Some("https://idp.example".into()),
        scopes: vec![],
        trust_email_verified: ProviderKind::Oidc.trusts_email_verified_by_default(),
    };
    let provider = Provider::new(config, http_client());
    let id = identity_from_claims(
        &claims(json!({"sub": "s", "email": "a@b.example", "email_verified": true})),
        ProviderKind::Oidc,
    )
    .unwrap();
    assert!(!provider.trusted(id).email_verified);
    assert!(
        !format!("{:?}", provider.config()).contains("s3cr3t-client-value"),
        "a client secret is never printed"
    );
    assert!(ProviderKind::Google.trusts_email_verified_by_default());
    assert!(ProviderKind::Discord.trusts_email_verified_by_default());
}
