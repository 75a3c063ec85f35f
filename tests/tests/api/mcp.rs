//! The MCP server through the API: found from a 401 by its protected resource metadata, its
//! tools answering exactly what the REST API answers for the same question, the same scopes
//! and refusals as the REST API with tokens bound to their resource, and malformed JSON-RPC
//! answered with the protocol's codes, never a 500. On both backends and through the
//! functions.

use super::events::{event_of, league_with};
use paddock_tests::TestApp;
use paddock_tests::oauth_flow::{
    Browser, Pkce, authorize_query, driver_with_password, exchange_code, register_app,
};
use reqwest::Method;
use reqwest::header::HeaderMap;
use serde_json::{Value, json};

const VERSION: &str = "2025-11-25";

/// An answer of the MCP endpoint: status, headers, JSON body (`Null` if none).
struct Answer {
    status: u16,
    headers: HeaderMap,
    body: Value,
}

impl Answer {
    fn header(&self, name: &str) -> &str {
        self.headers
            .get(name)
            .and_then(|v| v.to_str().ok())
            .unwrap_or_default()
    }

    fn error_code(&self) -> i64 {
        self.body["error"]["code"]
            .as_i64()
            .unwrap_or_else(|| panic!("a JSON-RPC error: {} {}", self.status, self.body))
    }
}

/// POSTs `body` (JSON text) to `/mcp` with `token`, as a Streamable HTTP client does, plus
/// `extra` headers.
async fn post(app: &TestApp, token: Option<&str>, body: &str, extra: &[(&str, &str)]) -> Answer {
    let mut request = app
        .client
        .post(format!("{}/mcp", app.address))
        .header("content-type", "application/json")
        .header("accept", "application/json, text/event-stream")
        .body(body.to_owned());
    if let Some(token) = token {
        request = request.bearer_auth(token);
    }
    for (name, value) in extra {
        request = request.header(*name, *value);
    }
    let response = request.send().await.expect("a request");
    let status = response.status().as_u16();
    let headers = response.headers().clone();
    let bytes = response.bytes().await.expect("a body");
    Answer {
        status,
        headers,
        body: serde_json::from_slice(&bytes).unwrap_or(Value::Null),
    }
}

/// A JSON-RPC request of `method` with `params`, after the session's `initialize`.
async fn rpc(app: &TestApp, token: &str, method: &str, params: Value) -> Answer {
    let body = json!({"jsonrpc": "2.0", "id": 7, "method": method, "params": params});
    post(
        app,
        Some(token),
        &body.to_string(),
        &[("mcp-protocol-version", VERSION)],
    )
    .await
}

/// The tool's structured answer (a call that succeeded).
async fn tool(app: &TestApp, token: &str, name: &str, arguments: Value) -> Value {
    let answer = rpc(
        app,
        token,
        "tools/call",
        json!({"name": name, "arguments": arguments}),
    )
    .await;
    assert_eq!(answer.status, 200, "{name}: {}", answer.body);
    let result = &answer.body["result"];
    assert_eq!(result["isError"], false, "{name}: {result}");
    result["structuredContent"].clone()
}

async fn initialized(app: &TestApp, token: &str) -> Value {
    let params = json!({"protocolVersion": VERSION, "capabilities": {},
        "clientInfo": {"name": "tests", "version": "1"}});
    let body = json!({"jsonrpc": "2.0", "id": 1, "method": "initialize", "params": params});
    let answer = post(app, Some(token), &body.to_string(), &[]).await;
    assert_eq!(answer.status, 200, "{}", answer.body);
    answer.body["result"].clone()
}

async fn tools_answer_what_the_rest_api_answers(app: TestApp) {
    let (token, _) = app.driver("Mia").await;
    let track_id = app.submitted_lap(&token, 101_250, "Ferrari 296 GT3").await;
    let (rival, _) = app.driver("Rex").await;
    app.submitted_lap(&rival, 100_900, "Ferrari 296 GT3").await;
    let init = initialized(&app, &token).await;
    assert_eq!(init["protocolVersion"], VERSION);
    assert!(init["capabilities"]["tools"].is_object(), "{init}");

    let listed = rpc(&app, &token, "tools/list", json!({})).await;
    let tools = listed.body["result"]["tools"].as_array().expect("tools");
    let names: Vec<&str> = tools.iter().filter_map(|t| t["name"].as_str()).collect();
    assert_eq!(names, mcp_server::tool_names().collect::<Vec<_>>());
    for listed in tools {
        assert_eq!(listed["annotations"]["readOnlyHint"], true, "{listed}");
        assert_eq!(listed["inputSchema"]["type"], "object", "{listed}");
        assert_eq!(listed["outputSchema"]["type"], "object", "{listed}");
    }

    let sessions = tool(&app, &token, "list_my_sessions", json!({})).await;
    let session_id = sessions["data"]["items"][0]["id"]
        .as_str()
        .unwrap_or_else(|| panic!("a session in {sessions}"))
        .to_owned();
    let board = format!("trackId={track_id}&vehicleName=Ferrari%20296%20GT3");
    let league = league_with(&app, &token, &[&rival]).await;
    let now = time::OffsetDateTime::now_utc();
    let event = event_of(
        &app,
        &token,
        &league,
        &track_id,
        now + time::Duration::minutes(1),
        now + time::Duration::days(1),
    )
    .await;
    let event_id = event["id"].as_str().expect("an event id").to_owned();
    let cases = [
        ("get_my_profile", json!({}), "/v1/profile/me".to_owned()),
        (
            "list_my_sessions",
            json!({"limit": 5}),
            "/v1/sessions?limit=5".to_owned(),
        ),
        (
            "get_my_session",
            json!({"id": session_id}),
            format!("/v1/sessions/{session_id}"),
        ),
        ("list_tracks", json!({}), "/v1/tracks".to_owned()),
        (
            "get_board",
            json!({"trackId": track_id}),
            format!("/v1/leaderboards?trackId={track_id}"),
        ),
        (
            "get_board",
            json!({"trackId": track_id, "vehicleName": "Ferrari 296 GT3", "around": "me"}),
            format!("/v1/leaderboards?{board}&around=me"),
        ),
        (
            "get_my_standing",
            json!({"trackId": track_id}),
            format!("/v1/leaderboards/me?trackId={track_id}"),
        ),
        (
            "list_board_cars",
            json!({"trackId": track_id}),
            format!("/v1/leaderboards/vehicles?trackId={track_id}"),
        ),
        (
            "get_my_progress",
            json!({"trackId": track_id}),
            format!("/v1/leaderboards/me/progress?trackId={track_id}"),
        ),
        ("list_my_feed", json!({}), "/v1/feed".to_owned()),
        (
            "list_my_achievements",
            json!({}),
            "/v1/achievements".to_owned(),
        ),
        ("list_events", json!({}), "/v1/events".to_owned()),
        (
            "get_event_standings",
            json!({"id": event_id}),
            format!("/v1/events/{event_id}/standings"),
        ),
    ];
    for (name, arguments, path) in cases {
        // The feed and the achievements are written by background consumers: an answer may
        // grow between the two reads, so a pair that differs is read again.
        for attempt in 0..20 {
            let through_tool = tool(&app, &token, name, arguments.clone()).await;
            let (status, through_rest) = app.call(Method::GET, &path, &token, None).await;
            assert_eq!(status, 200, "{path}: {through_rest}");
            if through_tool == through_rest {
                break;
            }
            assert!(
                attempt < 19,
                "{name} against GET {path}: {through_tool} / {through_rest}"
            );
            tokio::time::sleep(std::time::Duration::from_millis(500)).await;
        }
    }

    // The driver's progress: her one submitted lap.
    let progress = tool(
        &app,
        &token,
        "get_my_progress",
        json!({"trackId": track_id}),
    )
    .await;
    assert_eq!(progress["data"]["bestLapMs"], 101_250, "{progress}");
    assert_eq!(
        progress["data"]["points"][0]["vehicleName"],
        "Ferrari 296 GT3"
    );

    // A question the route answers 404 is the tool's error, in the route's words.
    let missing = rpc(
        &app,
        &token,
        "tools/call",
        json!({"name": "get_my_session", "arguments": {"id": "01a22641-0e62-70cd-a2d3-edb1acd2fbeb"}}),
    )
    .await;
    assert_eq!(missing.status, 200);
    assert_eq!(missing.body["result"]["isError"], true, "{}", missing.body);
}

async fn the_endpoint_is_found_and_refuses_as_the_rest_api_does(app: TestApp) {
    let ping = r#"{"jsonrpc":"2.0","id":3,"method":"ping"}"#;
    // No token: 401, with the metadata's address and the scopes the tools need.
    let anonymous = post(&app, None, ping, &[]).await;
    assert_eq!(anonymous.status, 401);
    let challenge = anonymous.header("www-authenticate");
    let metadata_url = format!("{}/.well-known/oauth-protected-resource/mcp", app.address);
    assert!(
        challenge.contains(&format!(r#"resource_metadata="{metadata_url}""#)),
        "{challenge}"
    );
    assert!(challenge.contains("sessions:read"), "{challenge}");
    let metadata: Value = app
        .client
        .get(&metadata_url)
        .send()
        .await
        .unwrap()
        .json()
        .await
        .unwrap();
    assert_eq!(metadata["resource"], format!("{}/mcp", app.address));
    assert_eq!(metadata["authorization_servers"], json!([app.address]));

    let (token, _) = app.driver("Ola").await;
    let (status, made) = app
        .call(
            Method::POST,
            "/v1/tokens",
            &token,
            Some(json!({"name": "hooks", "scopes": ["webhooks"]})),
        )
        .await;
    assert_eq!(status, 201, "{made}");
    let hooks_only = made["data"]["token"].as_str().unwrap().to_owned();
    // A personal access token without the tool's scope: 403 naming it.
    let refused = rpc(
        &app,
        &hooks_only,
        "tools/call",
        json!({"name": "list_my_sessions", "arguments": {}}),
    )
    .await;
    assert_eq!(refused.status, 403, "{}", refused.body);
    let challenge = refused.header("www-authenticate");
    assert!(
        challenge.contains(r#"error="insufficient_scope""#)
            && challenge.contains(r#"scope="sessions:read""#),
        "{challenge}"
    );
    assert_eq!(refused.body["error"]["data"]["scope"], "sessions:read");
    // ... a public route's tool too: an assistant reads what the driver let it.
    let refused = rpc(
        &app,
        &hooks_only,
        "tools/call",
        json!({"name": "list_board_cars", "arguments": {"trackId": "x"}}),
    )
    .await;
    assert_eq!(refused.status, 403, "{}", refused.body);
    // A token with the scope: the driver's own setup.
    let (_, made) = app
        .call(
            Method::POST,
            "/v1/tokens",
            &token,
            Some(json!({"name": "assistant", "scopes": ["profile:read"]})),
        )
        .await;
    let profile_only = made["data"]["token"].as_str().unwrap().to_owned();
    let profile = tool(&app, &profile_only, "get_my_profile", json!({})).await;
    assert_eq!(profile["data"]["displayName"], "Ola");
    // A malformed token: 401, invalid_token.
    let malformed = post(&app, Some("pdk_nope"), ping, &[]).await;
    assert_eq!(malformed.status, 401);
    assert!(
        malformed
            .header("www-authenticate")
            .contains(r#"error="invalid_token""#)
    );

    // An app's tokens are bound to their resource: one for the REST API is refused here, one
    // for the MCP endpoint is taken here and refused at the REST API.
    let (_, _, email) = driver_with_password(&app, "Pia").await;
    let client = register_app(&app, &token, "https://assistant.example.com/cb", false).await;
    let mut tokens = Vec::new();
    for resource in ["/v1", "/mcp"] {
        let pkce = Pkce::new();
        let resource = format!("{}{resource}", app.address);
        let query = authorize_query(&client, &pkce, "profile:read", &[("resource", &resource)]);
        let approved = Browser::new(&app)
            .consent(&query, &email, "correct horse battery")
            .await;
        let (status, issued) = exchange_code(&app, &client, &approved, &pkce).await;
        assert_eq!(status, 200, "{issued}");
        tokens.push(issued["access_token"].as_str().unwrap().to_owned());
    }
    let rest_token = post(&app, Some(&tokens[0]), ping, &[]).await;
    assert_eq!(rest_token.status, 401, "{}", rest_token.body);
    let profile = tool(&app, &tokens[1], "get_my_profile", json!({})).await;
    assert_eq!(profile["data"]["displayName"], "Pia");
    let (status, _) = app
        .call(Method::GET, "/v1/profile/me", &tokens[1], None)
        .await;
    assert_eq!(status, 401);

    // A page of another site may not drive the endpoint; a version not served is named.
    let foreign = post(
        &app,
        Some(&token),
        ping,
        &[("origin", "https://evil.example")],
    )
    .await;
    assert_eq!(foreign.status, 403, "{}", foreign.body);
    let own = post(&app, Some(&token), ping, &[("origin", &app.address)]).await;
    assert_eq!(own.status, 200, "{}", own.body);
    let old = post(
        &app,
        Some(&token),
        ping,
        &[("mcp-protocol-version", "2024-11-05")],
    )
    .await;
    assert_eq!(old.status, 400);
    assert_eq!(
        old.body["error"]["data"]["supported"],
        json!(mcp_server::PROTOCOL_VERSIONS)
    );
}

async fn malformed_json_rpc_is_answered_with_the_protocols_codes(app: TestApp) {
    let (token, _) = app.driver("Uma").await;
    let send = |body: String| {
        let app = &app;
        let token = token.clone();
        async move {
            post(
                app,
                Some(&token),
                &body,
                &[("mcp-protocol-version", VERSION)],
            )
            .await
        }
    };
    let cases: [(String, u16, i64); 9] = [
        ("{not json".into(), 400, -32700),
        (r#"[{"jsonrpc":"2.0","id":1,"method":"ping"}]"#.into(), 400, -32600),
        (r#"{"id":1,"method":"ping"}"#.into(), 400, -32600),
        (r#"{"jsonrpc":"2.0","id":1,"method":"sessions/drop"}"#.into(), 200, -32601),
        (
            r#"{"jsonrpc":"2.0","id":1,"method":"tools/call","params":{"name":"drop_tables"}}"#.into(),
            200,
            -32602,
        ),
        (
            r#"{"jsonrpc":"2.0","id":1,"method":"tools/call","params":{"name":"get_board","arguments":{"limit":"ten"}}}"#.into(),
            200,
            -32602,
        ),
        (
            r#"{"jsonrpc":"2.0","id":1,"method":"tools/call","params":{"name":"get_board","arguments":{"trackId":"x","limit":500}}}"#.into(),
            200,
            -32602,
        ),
        (
            r#"{"jsonrpc":"2.0","id":1,"method":"tools/call","params":{"name":"get_my_session","arguments":{}}}"#.into(),
            200,
            -32602,
        ),
        (
            format!(
                r#"{{"jsonrpc":"2.0","id":1,"method":"ping","params":{{"pad":"{}"}}}}"#,
                "x".repeat(100_000)
            ),
            413,
            -32600,
        ),
    ];
    for (body, status, code) in cases {
        let answer = send(body.clone()).await;
        let shown = &body[..body.len().min(120)];
        assert_eq!(answer.status, status, "{shown}: {}", answer.body);
        assert_eq!(answer.error_code(), code, "{shown}: {}", answer.body);
    }
    // A client that does not accept JSON and event streams, as the transport requires: 406,
    // still a JSON-RPC error.
    let refused = app
        .client
        .post(format!("{}/mcp", app.address))
        .bearer_auth(&token)
        .header("content-type", "application/json")
        .body(r#"{"jsonrpc":"2.0","id":1,"method":"ping"}"#)
        .send()
        .await
        .unwrap();
    assert_eq!(refused.status(), 406);
    let body: Value = refused.json().await.expect("a JSON-RPC error");
    assert_eq!(body["error"]["code"], -32600, "{body}");

    // The route's own rule, named: a limit out of range.
    let answer = send(
        r#"{"jsonrpc":"2.0","id":1,"method":"tools/call","params":{"name":"list_my_sessions","arguments":{"limit":500}}}"#.into(),
    )
    .await;
    let message = answer.body["error"]["message"].as_str().unwrap_or_default();
    assert!(message.contains("limit"), "{}", answer.body);
}

paddock_tests::on_both_backends!(
    plain: [
        tools_answer_what_the_rest_api_answers,
        the_endpoint_is_found_and_refuses_as_the_rest_api_does,
        malformed_json_rpc_is_answered_with_the_protocols_codes,
    ],
);
