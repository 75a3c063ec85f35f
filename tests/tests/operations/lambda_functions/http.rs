//! The HTTP functions against the local server, the board pages and the sign-in callback on the
//! domain API Gateway received, and a driver's way through several functions.

use super::*;

/// Each HTTP function answers API Gateway's events for its routes as the local server
/// answers the same requests over the same tables, bucket, queues and secret: a GET with a
/// query string, cookies and a caller's request id, a JSON body as text and base64-encoded,
/// a binary body, no token, and a route of another group.
#[tokio::test(flavor = "multi_thread")]
pub(super) async fn http_functions_answer_as_the_local_server() {
    let mut deployment = deployment().await;
    // The local server on the domain the functions' events name, so that answers naming the
    // public address (the MCP endpoint's metadata and challenges) are the same.
    deployment.t.settings.auth.public_url = Some("https://api.example.com".into());
    let env = deployment.env.clone();
    let app = deployment.local_server().await;
    let (token, _) = app.driver("LambdaProbe").await;
    let functions =
        futures::future::join_all(HTTP_FUNCTIONS.iter().map(|(name, _, _)| start(name, &env)))
            .await;
    let probes = functions.iter().enumerate().map(|(n, function)| {
        let (_, get_route, post_route) = HTTP_FUNCTIONS[n];
        let foreign_route = HTTP_FUNCTIONS[(n + 1) % HTTP_FUNCTIONS.len()].1;
        let (app, token) = (&app, &token);
        async move {
            let separator = if get_route.contains('?') { '&' } else { '?' };
            let get = HttpRequest::new("GET", &format!("{get_route}{separator}q=a%20b&q=c"))
                .bearer(token)
                .header("accept", "application/json")
                .header("x-request-id", "lambda-probe-1")
                .cookie("theme=dark")
                .cookie("paddock_pref=1");
            assert_same(function, app, &get, &get).await;
            let anonymous = HttpRequest::new("GET", get_route);
            assert_same(function, app, &anonymous, &anonymous).await;

            let probe = json!({"probe": true, "name": "Spa-Francorchamps"});
            let text = HttpRequest::new("POST", post_route)
                .bearer(token)
                .json(&probe);
            let as_text = assert_same(function, app, &text, &text).await;
            let encoded = HttpRequest::new("POST", post_route).bearer(token).body(
                "application/json",
                EventBody::Base64(probe.to_string().into_bytes()),
            );
            let as_base64 = assert_same(function, app, &encoded, &encoded).await;
            assert_eq!(
                (as_text.status, as_text.body),
                (as_base64.status, as_base64.body),
                "{}: a base64-encoded body reads as the same bytes",
                function.name
            );
            let binary = HttpRequest::new("POST", post_route).bearer(token).body(
                "application/octet-stream",
                EventBody::Base64(binary_bytes()),
            );
            assert_same(function, app, &binary, &binary).await;

            // Another group's route is not this function's: the envelope's 404, as the local
            // server answers a route no group has.
            let foreign = HttpRequest::new("GET", foreign_route).bearer(token);
            let unknown = HttpRequest::new("GET", "/v1/no-such-route").bearer(token);
            let answer = assert_same(function, app, &foreign, &unknown).await;
            assert_eq!(answer.status, 404, "{}", function.name);
        }
    });
    futures::future::join_all(probes).await;
}

/// The leaderboards function serves the public board pages as the local server does: the
/// tracks page, a board with a car and its error pages, a driver's page, and a 304.
#[tokio::test(flavor = "multi_thread")]
pub(super) async fn the_leaderboards_function_serves_the_board_pages() {
    let deployment = deployment().await;
    let env = deployment.env.clone();
    let app = deployment.local_server().await;
    let function = start("leaderboards", &env).await;
    let (_, user) = app.driver("PageProbe").await;
    let unknown = uuid::Uuid::new_v4();
    for path in [
        "/boards".to_owned(),
        "/boards?q=spa".to_owned(),
        format!("/boards/{unknown}?car=BMW%20M4"),
        "/boards/not-a-track".to_owned(),
        format!("/drivers/{user}"),
        format!("/drivers/{unknown}"),
        "/boards?cursor=nonsense".to_owned(),
    ] {
        let request = HttpRequest::new("GET", &path);
        let answer = assert_same(&function, &app, &request, &request).await;
        let etag = answer
            .headers
            .iter()
            .find(|(name, _)| name == "etag")
            .map(|(_, value)| value.clone());
        if let Some(etag) = etag.filter(|_| answer.status == 200) {
            let again = HttpRequest::new("GET", &path).header("if-none-match", &etag);
            assert_eq!(
                assert_same(&function, &app, &again, &again).await.status,
                304,
                "{path}"
            );
        }
    }
}

/// A small ZIP, as the desktop app builds share packs.
pub(super) fn share_pack() -> Vec<u8> {
    let mut zip = zip::ZipWriter::new(std::io::Cursor::new(Vec::new()));
    let options = zip::write::SimpleFileOptions::default()
        .compression_method(zip::CompressionMethod::Deflated);
    zip.start_file("setup.json", options).expect("an entry");
    std::io::Write::write_all(&mut zip, br#"{"tyrePressures":[26.1,26.0,25.8,25.9]}"#)
        .expect("written");
    zip.start_file("notes/lap.bin", options).expect("an entry");
    std::io::Write::write_all(&mut zip, &binary_bytes()).expect("written");
    zip.finish().expect("a ZIP").into_inner()
}

/// Without `Auth__PublicUrl` (the template's default: the auth function cannot be given the
/// HTTP API's own URL, which refers to it), a provider is given the callback on the domain API
/// Gateway received the request on (`requestContext.domainName`), whatever `Host` and
/// forwarding headers the client sent; with it, the configured URL.
#[tokio::test(flavor = "multi_thread")]
pub(super) async fn the_auth_function_gives_providers_the_callback_on_the_domain_api_gateway_received()
 {
    let deployment = deployment().await;
    let providers = r#"{"discord":{"clientId":"paddock-lambda-test"}}"#;
    let unset = deployment.env_with(&[
        ("Auth__ProvidersJson", Some(providers)),
        ("Auth__PublicUrl", None),
    ]);
    let set = deployment.env_with(&[
        ("Auth__ProvidersJson", Some(providers)),
        ("Auth__PublicUrl", Some("https://paddock.example/")),
    ]);
    let (derived, configured) = tokio::join!(start("auth", &unset), start("auth", &set));
    let api_domain = "k3x9q2w1ab.execute-api.us-east-1.amazonaws.com";
    // The provider's redirect_uri and the flow cookie of a sign-in start answered by `auth`.
    let start_at = async |auth: &Running| {
        let start = HttpRequest::new(
            "GET",
            "/v1/auth/login/discord?redirect_uri=http%3A%2F%2F127.0.0.1%3A5173%2Fcallback\
             &code_challenge=E9Melhoa2OwvFrEMTJguCHaoeK1t8URWbuGzSMW-cM4",
        )
        .header("host", "evil.example")
        .header("x-forwarded-host", "evil.example")
        .header("forwarded", "host=evil.example;proto=https");
        let mut event = start.api_gateway_event();
        event["requestContext"]["domainName"] = json!(api_domain);
        event["requestContext"]["domainPrefix"] = json!("k3x9q2w1ab");
        let response = auth.answer(&event).await;
        let answer =
            HttpAnswer::from_api_gateway(&response).unwrap_or_else(|e| panic!("{e:#}: {response}"));
        assert_eq!(
            answer.status,
            303,
            "{}",
            String::from_utf8_lossy(&answer.body)
        );
        let location = answer.header("location").expect("a redirect").to_owned();
        let query = location.split_once('?').expect("a query").1;
        let (_, redirect) = form_urlencoded::parse(query.as_bytes())
            .find(|(k, _)| k == "redirect_uri")
            .unwrap_or_else(|| panic!("no redirect_uri in {location}"));
        let redirect = redirect.into_owned();
        let cookie = answer.header("set-cookie").unwrap_or_default().to_owned();
        (redirect, cookie)
    };
    let (redirect, cookie) = start_at(&derived).await;
    assert_eq!(
        redirect,
        format!("https://{api_domain}/v1/auth/callback/discord")
    );
    assert!(cookie.contains("; Secure"), "{cookie}");
    let (redirect, _) = start_at(&configured).await;
    assert_eq!(redirect, "https://paddock.example/v1/auth/callback/discord");
}

/// The auth function registers and signs in against DynamoDB Local (its tokens work on the
/// local server and the other way round, and the sign-in cookie reaches it); the sessions
/// function stores an upload the local server then finds; the share-pack function takes a
/// binary ZIP and hands it back byte for byte through S3.
#[tokio::test(flavor = "multi_thread")]
pub(super) async fn functions_register_sign_in_upload_and_store_packs() {
    let deployment = deployment().await;
    let env = deployment.env.clone();
    let app = deployment.local_server().await;
    let (auth, sessions, sharepacks) = tokio::join!(
        start("auth", &env),
        start("sessions", &env),
        start("sharepacks", &env)
    );

    let email = format!("{}@example.com", unique("lambda"));
    let credentials = json!({"email": email, "password": "correct horse battery", "displayName": "Lambda Driver"});
    let registered = auth
        .http(&HttpRequest::new("POST", "/v1/auth/register").json(&credentials))
        .await;
    assert_eq!(
        registered.status,
        201,
        "{}",
        String::from_utf8_lossy(&registered.body)
    );
    assert_eq!(registered.header("cache-control"), Some("no-store"));
    let login = HttpRequest::new("POST", "/v1/auth/login/email")
        .json(&json!({"email": email, "password": "correct horse battery"}));
    let signed_in = auth.http(&login).await;
    assert_eq!(signed_in.status, 200);
    let locally = local(&app, &login).await;
    assert_eq!(locally.status, 200);
    assert_eq!(
        signed_in.json()["data"]["user"],
        locally.json()["data"]["user"]
    );
    assert_eq!(
        signed_in.json()["data"]["user"],
        registered.json()["data"]["user"]
    );
    let token = signed_in.json()["data"]["accessToken"]
        .as_str()
        .expect("a token")
        .to_owned();
    let local_token = locally.json()["data"]["accessToken"]
        .as_str()
        .expect("a token")
        .to_owned();
    for (issued_by, token) in [("auth", &token), ("local", &local_token)] {
        let validate = HttpRequest::new("GET", "/v1/auth/validate").bearer(token);
        let (by_lambda, by_local) = (auth.http(&validate).await, local(&app, &validate).await);
        assert_eq!(by_lambda.status, 200, "a token of {issued_by}");
        assert_eq!(by_lambda.json(), by_local.json(), "a token of {issued_by}");
    }
    let wrong = HttpRequest::new("POST", "/v1/auth/login/email")
        .json(&json!({"email": email, "password": "wrong horse battery"}));
    assert_same(&auth, &app, &wrong, &wrong).await;
    // Each sign-in is one count in the function's metric lines, by method and result.
    let sign_ins = "paddock_sign_ins_total";
    for result in ["ok", "failed"] {
        let dims = [("method", "email"), ("result", result)];
        assert_eq!(
            auth.counted(sign_ins, &dims).await,
            1,
            "{result}: {}",
            auth.process.output()
        );
    }
    // The sign-in cookie arrives in API Gateway's `cookies`: with it the state is looked up
    // (and unknown), without it the callback refuses before.
    let callback = HttpRequest::new("GET", "/v1/auth/callback/oidc?state=s1&code=c1");
    let with_cookie = callback.clone().cookie("paddock_signin=s1");
    let answer = assert_same(&auth, &app, &with_cookie, &with_cookie).await;
    assert!(
        String::from_utf8_lossy(&answer.body).contains("unknown or expired"),
        "{answer:?}"
    );
    let answer = assert_same(&auth, &app, &callback, &callback).await;
    assert!(
        String::from_utf8_lossy(&answer.body).contains("cookie missing"),
        "{answer:?}"
    );

    // An upload with track points (to S3) through the function; the local server sees the
    // same session, and a repeat there is the duplicate.
    let upload = session_body(
        "lambda-upload-1",
        "2026-11-20T18:30:00Z",
        &[(92_000, true, 0.95), (91_500, true, 0.93)],
        200,
    );
    let create = HttpRequest::new("POST", "/v1/sessions")
        .bearer(&token)
        .json(&upload);
    let created = sessions.http(&create).await;
    assert_eq!(
        created.status,
        201,
        "{}",
        String::from_utf8_lossy(&created.body)
    );
    let uploads = "paddock_sessions_uploaded_total";
    assert_eq!(
        sessions.counted(uploads, &[("result", "created")]).await,
        1,
        "{}",
        sessions.process.output()
    );
    let repeat = local(&app, &create).await;
    assert_eq!(repeat.status, 200);
    assert_eq!(repeat.json()["data"]["duplicate"], true);
    let session_id = created.json()["data"]["sessionId"]
        .as_str()
        .expect("an id")
        .to_owned();
    assert_eq!(repeat.json()["data"]["sessionId"], session_id.as_str());
    let detail = HttpRequest::new("GET", &format!("/v1/sessions/{session_id}")).bearer(&token);
    let answer = assert_same(&sessions, &app, &detail, &detail).await;
    assert_eq!(
        answer.json()["data"]["laps"].as_array().map(Vec::len),
        Some(2)
    );

    // A binary body: the ZIP arrives intact, and S3 hands the same bytes back.
    let pack = share_pack();
    let store = HttpRequest::new("POST", "/v1/sharepacks?name=Spa%20setup&description=wet")
        .bearer(&token)
        .body("application/zip", EventBody::Base64(pack.clone()));
    let stored = sharepacks.http(&store).await;
    assert_eq!(
        stored.status,
        201,
        "{}",
        String::from_utf8_lossy(&stored.body)
    );
    let id = stored.json()["data"]["id"]
        .as_str()
        .expect("an id")
        .to_owned();
    assert_eq!(stored.json()["data"]["sizeBytes"], pack.len());
    let metadata = HttpRequest::new("GET", &format!("/v1/sharepacks/{id}")).bearer(&token);
    assert_same(&sharepacks, &app, &metadata, &metadata).await;
    let download = sharepacks
        .http(&HttpRequest::new("GET", &format!("/v1/sharepacks/{id}/download")).bearer(&token))
        .await;
    assert_eq!(download.status, 302);
    let location = download.header("location").expect("a presigned URL");
    let bytes = reqwest::get(location)
        .await
        .expect("S3 answers")
        .bytes()
        .await
        .expect("the object");
    assert_eq!(bytes.as_ref(), pack.as_slice());
}
