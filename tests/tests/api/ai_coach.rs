//! The AI coach against a fake language-model API on loopback: request shapes for both
//! adapters, every failure mapping, no upstream call without a key, limits shared by two app
//! instances over one store (both backends), stored answers, chat validation, and the Lambda
//! function's answers through `lambda_http`.

use paddock_core::config::{AiProvider, Settings};
use paddock_core::ports::Clock;
use paddock_core::ports::items::Key;
use paddock_core::tables::Table;
use paddock_tests::fake_llm::{ANSWER, FakeLlm, Mode};
use paddock_tests::{Backend, TestApp, envelope, ports, spawn_with};
use serde_json::{Value, json};
use std::time::Duration;

fn configure(settings: &mut Settings, fake: &FakeLlm, provider: AiProvider) {
    settings.ai.provider = provider;
    settings.ai.model = "test-model".into();
    settings.ai.base_url = match provider {
        AiProvider::Anthropic => fake.url.clone(),
        AiProvider::OpenAi => format!("{}/v1", fake.url),
    };
    settings.ai.base_url_configured = true;
    settings.ai.timeout = Duration::from_secs(1);
}

/// Writes the local secret `name` into the data directory the app will read.
fn secret(dir: &std::path::Path, name: &str, value: &str) {
    std::fs::write(dir.join("secrets.json"), json!({ name: value }).to_string()).unwrap();
}

/// A server on `backend` coached by `fake` through `provider`, with the Anthropic key set
/// unless `key` is None.
async fn coached(
    backend: Backend,
    fake: &FakeLlm,
    provider: AiProvider,
    key: Option<&str>,
) -> TestApp {
    let mut t = ports(backend).await;
    configure(&mut t.settings, fake, provider);
    if let Some(key) = key {
        let name = match provider {
            AiProvider::Anthropic => "anthropicApiKey",
            AiProvider::OpenAi => "openaiApiKey",
        };
        secret(t.dir.path(), name, key);
    }
    spawn_with(t.settings, t.ports, t.dir).await
}

fn insight_body() -> Value {
    json!({
        "GameId": "acc", "TrackName": "Spa-Francorchamps", "TrackLayout": "GP",
        "VehicleName": "Porsche 992 GT3 R", "RefLapMs": 138_456, "CurLapMs": 139_102,
        "Insights": [{"corner": "T1", "finding": "braking 12 m early"}],
        "SegmentDeltas": [{"segment": "T1", "deltaMs": 310}, {"segment": "Eau Rouge", "deltaMs": -40}],
        "RawTelemetry": "never forwarded",
    })
}

async fn ask(
    app: &TestApp,
    token: &str,
    path: &str,
    body: &Value,
) -> (u16, Value, reqwest::header::HeaderMap) {
    let res = app.post_json_auth(path, body, token).await;
    let headers = res.headers().clone();
    let (status, body) = envelope(res).await;
    (status, body, headers)
}

/// The tokens a call reserves, by the rule of docs/api-guide.md (AI coach), from the body the model was sent: the
/// prompt's bytes, 64, 8 a message (the system prompt counting as one), and the 1024 it may
/// generate.
fn reserved_for(sent: &Value) -> u64 {
    let messages = sent["messages"].as_array().unwrap();
    let bytes: usize = sent["system"].as_str().unwrap().len()
        + messages
            .iter()
            .map(|m| m["content"].as_str().unwrap().len())
            .sum::<usize>();
    bytes as u64 + 64 + 8 * (messages.len() as u64 + 1) + 1024
}

/// What an insights call about `insight_body()` reserves, measured on a server of its own.
async fn insights_reservation() -> u64 {
    let fake = FakeLlm::start().await;
    let app = coached(
        Backend::Embedded,
        &fake,
        AiProvider::Anthropic,
        Some("test-key"),
    )
    .await;
    let (token, _) = app.driver("Probe").await;
    let (status, res, _) = ask(&app, &token, "/v1/ai/insights", &insight_body()).await;
    assert_eq!(status, 200, "{res}");
    reserved_for(&fake.received()[0].body)
}

/// Today's token counter of `subject` (a user id, or `*` for the whole service).
async fn tokens_counted(t: &paddock_tests::TestPorts, subject: &str) -> u64 {
    let now = t.clock.unix();
    let key = Key::new(
        format!("RL#ai-tokens#{subject}"),
        (now - now.rem_euclid(86_400)).to_string(),
    );
    t.ports
        .items
        .get(Table::Limits, &key)
        .await
        .unwrap()
        .and_then(|item| item.get("tokens").and_then(Value::as_u64))
        .unwrap_or(0)
}

#[tokio::test(flavor = "multi_thread")]
async fn insights_reach_anthropic_in_its_shape_and_are_stored_for_a_day() {
    let fake = FakeLlm::start().await;
    let app = coached(
        Backend::Embedded,
        &fake,
        AiProvider::Anthropic,
        Some("test-key"),
    )
    .await;
    let (token, _) = app.driver("Coached").await;
    let (status, body, _) = ask(&app, &token, "/v1/ai/insights", &insight_body()).await;
    assert_eq!(status, 200, "{body}");
    assert_eq!(
        body["data"],
        json!({"text": ANSWER, "model": "test-model", "inputTokens": 120, "outputTokens": 80,
               "stopReason": "end_turn", "cached": false})
    );
    let received = fake.received();
    assert_eq!(received.len(), 1);
    let sent = &received[0].body;
    let first = sent["messages"][0]["content"].as_str().unwrap();
    assert!(
        first.contains("acc | Spa-Francorchamps | GP | Porsche 992 GT3 R"),
        "{first}"
    );
    assert!(first.contains("delta +0.646 s"), "{first}");
    assert!(
        first.contains(r#"{"corner":"T1","finding":"braking 12 m early"}"#),
        "{first}"
    );
    assert!(
        first.contains(r#"{"deltaMs":-40,"segment":"Eau Rouge"}"#),
        "{first}"
    );
    assert!(
        !sent.to_string().contains("never forwarded"),
        "unknown fields stay out"
    );

    // The same request, spelled in camelCase with other spacing: answered from the store.
    let mut same = json!({
        "gameId": " acc ", "trackName": "Spa-Francorchamps", "trackLayout": "GP",
        "vehicleName": "Porsche 992 GT3 R", "refLapMs": 138_456, "curLapMs": 139_102,
        "insights": [{"finding": "braking 12 m early", "corner": "T1"}],
        "segmentDeltas": [{"segment": "T1", "deltaMs": 310}, {"segment": "Eau Rouge", "deltaMs": -40}],
    });
    let (status, body, _) = ask(&app, &token, "/v1/ai/insights", &same).await;
    assert_eq!(status, 200, "{body}");
    assert_eq!(body["data"]["cached"], true);
    assert_eq!(body["data"]["text"], ANSWER);
    assert_eq!(
        fake.received().len(),
        1,
        "no upstream call for a stored answer"
    );
    // A changed lap is a new question.
    same["curLapMs"] = json!(139_000);
    let (_, body, _) = ask(&app, &token, "/v1/ai/insights", &same).await;
    assert_eq!(body["data"]["cached"], false);
    assert_eq!(fake.received().len(), 2);
    // Another driver never gets the first driver's stored answer.
    let (other, _) = app.driver("Other").await;
    let (_, body, _) = ask(&app, &other, "/v1/ai/insights", &insight_body()).await;
    assert_eq!(body["data"]["cached"], false);
    assert_eq!(fake.received().len(), 3);
    let metrics = app.scrape_metrics().await.text().await.unwrap();
    assert!(
        metrics.contains("paddock_ai_cache_total{result=\"hit\"}"),
        "{metrics}"
    );
    assert!(
        metrics.contains("paddock_ai_tokens_total{direction=\"output\"}"),
        "{metrics}"
    );
}

#[tokio::test(flavor = "multi_thread")]
async fn chat_sends_the_whole_history_in_order_and_validates_it() {
    let fake = FakeLlm::start().await;
    let app = coached(
        Backend::Embedded,
        &fake,
        AiProvider::Anthropic,
        Some("test-key"),
    )
    .await;
    let (token, _) = app.driver("Chatty").await;
    // 40 messages, the most allowed: alternating, then the driver twice at the end.
    let role = |i: usize| {
        if i.is_multiple_of(2) || i == 39 {
            "user"
        } else {
            "assistant"
        }
    };
    let history: Vec<Value> = (0..40)
        .map(|i| json!({"Role": role(i), "Content": format!("message {i}")}))
        .collect();
    let mut body = insight_body();
    body["Messages"] = json!(history);
    let (status, res, _) = ask(&app, &token, "/v1/ai/chat", &body).await;
    assert_eq!(status, 200, "{res}");
    assert_eq!(res["data"]["cached"], false);
    let sent = fake.received()[0].body["messages"]
        .as_array()
        .unwrap()
        .clone();
    assert_eq!(sent.len(), 40);
    assert!(
        sent[0]["content"]
            .as_str()
            .unwrap()
            .ends_with("\n\nmessage 0")
    );
    for (i, m) in sent.iter().enumerate().skip(1) {
        assert_eq!(m["content"], format!("message {i}"));
        assert_eq!(m["role"], role(i));
    }

    let cases: Vec<(Value, &str)> = vec![
        (json!(null), "messages: is required"),
        (json!([]), "messages: must hold 1 to 40 messages"),
        (
            json!(
                (0..41)
                    .map(|_| json!({"role": "user", "content": "x"}))
                    .collect::<Vec<_>>()
            ),
            "messages: must hold 1 to 40",
        ),
        (
            json!([{"role": "system", "content": "x"}]),
            "messages[0].role: must be user or assistant",
        ),
        (
            json!([{"role": "assistant", "content": "x"}, {"role": "user", "content": "y"}]),
            "messages: must start and end with a user message",
        ),
        (
            json!([{"role": "user", "content": "x"}, {"role": "assistant", "content": "y"}]),
            "messages: must start and end with a user message",
        ),
        (
            json!([{"role": "user", "content": "   "}]),
            "messages[0].content: must not be empty",
        ),
        (
            json!([{"role": "user"}]),
            "messages[0].content: is required",
        ),
        (
            json!(
                (0..5)
                    .map(|_| json!({"role": "user", "content": "x".repeat(8000)}))
                    .collect::<Vec<_>>()
            ),
            "body: the prompt would be",
        ),
    ];
    for (messages, expected) in cases {
        let mut body = insight_body();
        body["messages"] = messages.clone();
        let (status, res, _) = ask(&app, &token, "/v1/ai/chat", &body).await;
        assert_eq!(status, 400, "{messages}: {res}");
        assert!(
            res["error"].as_str().unwrap().contains(expected),
            "{expected}: {res}"
        );
    }
    let mut bad = insight_body();
    bad["RefLapMs"] = json!(0);
    bad["CurLapMs"] = json!(-5);
    bad["Insights"] = json!(["not an object"]);
    bad["TrackName"] = json!("");
    let (status, res, _) = ask(&app, &token, "/v1/ai/insights", &bad).await;
    assert_eq!(status, 400, "{res}");
    let error = res["error"].as_str().unwrap();
    for field in ["trackName", "refLapMs", "curLapMs", "insights[0]"] {
        assert!(error.contains(field), "{field}: {error}");
    }
    let mut many = insight_body();
    many["SegmentDeltas"] = json!((0..201).map(|i| json!({"segment": i})).collect::<Vec<_>>());
    let (status, res, _) = ask(&app, &token, "/v1/ai/insights", &many).await;
    assert_eq!(status, 400);
    assert!(
        res["error"]
            .as_str()
            .unwrap()
            .contains("segmentDeltas: must hold at most 200"),
        "{res}"
    );
    let (status, _, _) = ask(&app, &token, "/v1/ai/insights", &json!("not an object")).await;
    assert_eq!(status, 400);
    assert_eq!(
        fake.received().len(),
        1,
        "refused requests never reach the model"
    );
    assert_eq!(app.post_json("/v1/ai/chat", &body).await.status(), 401);
}

#[tokio::test(flavor = "multi_thread")]
async fn upstream_failures_map_to_clear_answers_and_leak_nothing() {
    let fake = FakeLlm::start().await;
    let app = coached(
        Backend::Embedded,
        &fake,
        AiProvider::Anthropic,
        Some("test-key"),
    )
    .await;
    let (token, _) = app.driver("Unlucky").await;
    let cases = [
        (Mode::Unauthorized, 502, None),
        (Mode::RateLimited, 503, Some("17")),
        (Mode::Overloaded, 503, Some("30")),
        (Mode::Failing, 502, None),
        (Mode::Garbage, 502, None),
        (Mode::Hang, 504, None),
    ];
    for (i, (mode, status, retry_after)) in cases.into_iter().enumerate() {
        fake.set_mode(mode);
        let mut body = insight_body();
        body["CurLapMs"] = json!(140_000 + i); // a new question each time, never a stored one
        let (got, res, headers) = ask(&app, &token, "/v1/ai/insights", &body).await;
        assert_eq!(got, status, "{mode:?}: {res}");
        assert_eq!(
            headers
                .get("retry-after")
                .map(|v| v.to_str().unwrap().to_owned())
                .as_deref(),
            retry_after,
            "{mode:?}"
        );
        let text = res.to_string();
        assert!(
            !text.contains("SECRET-UPSTREAM-DETAIL") && !text.contains("test-key"),
            "{text}"
        );
    }
    assert_eq!(fake.received().len(), 6);
}

#[tokio::test(flavor = "multi_thread")]
async fn without_a_key_nothing_is_sent_upstream() {
    let fake = FakeLlm::start().await;
    let app = coached(Backend::Embedded, &fake, AiProvider::Anthropic, None).await;
    let (token, _) = app.driver("Keyless").await;
    for path in ["/v1/ai/insights", "/v1/ai/chat"] {
        let mut body = insight_body();
        body["messages"] = json!([{"role": "user", "content": "Why?"}]);
        let (status, res, _) = ask(&app, &token, path, &body).await;
        assert_eq!(status, 503, "{res}");
        assert_eq!(res["error"], "AI coaching is not configured on this server");
    }
    assert!(fake.received().is_empty());
}

#[tokio::test(flavor = "multi_thread")]
async fn the_openai_adapter_speaks_chat_completions_with_or_without_a_key() {
    let fake = FakeLlm::start().await;
    // A model on the driver's own machine: a base URL and no key.
    let app = coached(Backend::Embedded, &fake, AiProvider::OpenAi, None).await;
    let (token, _) = app.driver("Local").await;
    let (status, res, _) = ask(&app, &token, "/v1/ai/insights", &insight_body()).await;
    assert_eq!(status, 200, "{res}");
    assert_eq!(res["data"]["stopReason"], "stop");
    assert_eq!(res["data"]["inputTokens"], 120);
    let sent = &fake.received()[0];
    assert_eq!(sent.path, "/v1/chat/completions");
    assert!(sent.headers.get("authorization").is_none());
    assert_eq!(sent.body["messages"][0]["role"], "system");
    assert!(
        sent.body["messages"][1]["content"]
            .as_str()
            .unwrap()
            .starts_with("<session>")
    );

    let keyed = coached(
        Backend::Embedded,
        &fake,
        AiProvider::OpenAi,
        Some("sk-test"),
    )
    .await;
    let (token, _) = keyed.driver("Cloud").await;
    let (status, _, _) = ask(&keyed, &token, "/v1/ai/insights", &insight_body()).await;
    assert_eq!(status, 200);
    let sent = fake.received().pop().unwrap();
    assert_eq!(sent.headers.get("authorization").unwrap(), "Bearer sk-test");
}

/// Requests per hour and tokens per day hold across two instances over one store.
async fn limits_hold_across_instances(backend: Backend) {
    let fake = FakeLlm::start().await;
    fake.set_usage(120, 80);
    let t = ports(backend).await;
    let mut settings = t.settings.clone();
    configure(&mut settings, &fake, AiProvider::Anthropic);
    settings.ai.requests_per_hour = 4;
    // Room for one call's reservation and 300 tokens more.
    let reserved = insights_reservation().await;
    settings.ai.tokens_per_day = reserved + 300;
    secret(t.dir.path(), "anthropicApiKey", "test-key");
    let second_dir = tempfile::tempdir().unwrap();
    let one = spawn_with(settings.clone(), t.ports.clone(), t.dir).await;
    let two = spawn_with(settings, t.ports.clone(), second_dir).await;
    let (token, _) = one.driver("Budget").await;
    let question = |n: i64| {
        let mut body = insight_body();
        body["CurLapMs"] = json!(150_000 + n);
        body
    };
    // 200 tokens, then 400: the third call's reservation no longer fits.
    let (status, res, _) = ask(&one, &token, "/v1/ai/insights", &question(1)).await;
    assert_eq!(status, 200, "{res}");
    let (status, res, _) = ask(&two, &token, "/v1/ai/insights", &question(2)).await;
    assert_eq!(status, 200, "{res}");
    let (status, res, headers) = ask(&one, &token, "/v1/ai/insights", &question(3)).await;
    assert_eq!(status, 429, "{res}");
    assert!(headers.get("retry-after").is_some());
    assert_eq!(fake.received().len(), 2);

    // Four requests an hour, whichever instance: the fifth is refused before anything else.
    let (other, _) = two.driver("Hourly").await;
    fake.set_usage(1, 1);
    for (n, app) in [&one, &two, &one, &two].into_iter().enumerate() {
        let (status, res, _) = ask(app, &other, "/v1/ai/insights", &question(10 + n as i64)).await;
        assert_eq!(status, 200, "{n}: {res}");
    }
    let (status, res, headers) = ask(&two, &other, "/v1/ai/insights", &question(20)).await;
    assert_eq!(status, 429, "{res}");
    assert!(headers.get("retry-after").is_some());
    assert_eq!(fake.received().len(), 6);
}

/// The service-wide daily tokens bound the spend however many accounts ask: each driver is
/// well inside their own budget, and the service's is spent all the same.
async fn the_service_wide_token_cap_holds_across_drivers(backend: Backend) {
    let fake = FakeLlm::start().await;
    fake.set_usage(120, 80);
    let t = ports(backend).await;
    let clock = t.clock.clone();
    let mut settings = t.settings.clone();
    configure(&mut settings, &fake, AiProvider::Anthropic);
    let reserved = insights_reservation().await;
    settings.ai.tokens_per_day = 10 * reserved;
    settings.ai.service_tokens_per_day = reserved + 450;
    secret(t.dir.path(), "anthropicApiKey", "test-key");
    let app = spawn_with(settings, t.ports.clone(), t.dir).await;
    let question = |n: i64| {
        let mut body = insight_body();
        body["CurLapMs"] = json!(150_000 + n);
        body
    };
    // Three fresh accounts, 200 tokens each: 600 spent, and a call's reservation on top of
    // that no longer fits in the service's tokens (a call is admitted only while the most it
    // can cost fits, and counted with what it really cost).
    for n in 0..3 {
        let (token, _) = app.driver(&format!("Sybil{n}")).await;
        let (status, res, _) = ask(&app, &token, "/v1/ai/insights", &question(n)).await;
        assert_eq!(status, 200, "account {n}: {res}");
    }
    // The fourth account has spent nothing, and is refused before any upstream call.
    let (token, _) = app.driver("Sybil3").await;
    let (status, res, headers) = ask(&app, &token, "/v1/ai/insights", &question(3)).await;
    assert_eq!(status, 429, "{res}");
    assert!(
        res["error"]
            .as_str()
            .unwrap()
            .contains("this service's tokens for today"),
        "{res}"
    );
    let now = clock.unix();
    let until_tomorrow = 86_400 - now.rem_euclid(86_400);
    let retry_after: i64 = headers["retry-after"].to_str().unwrap().parse().unwrap();
    assert_eq!(retry_after, until_tomorrow);
    assert!(
        res["error"]
            .as_str()
            .unwrap()
            .contains(&format!("retry in {until_tomorrow} seconds")),
        "{res}"
    );
    assert_eq!(fake.received().len(), 3);
    // Tomorrow the service has its tokens again.
    clock.advance(time::Duration::seconds(until_tomorrow));
    let (token, _) = app.driver("Tomorrow").await;
    let (status, res, _) = ask(&app, &token, "/v1/ai/insights", &question(4)).await;
    assert_eq!(status, 200, "{res}");
    assert_eq!(fake.received().len(), 4);
}

/// Ten coaching calls at once, 400 tokens each by the provider's count, race for a daily cap
/// of 1,000 or 3,000 tokens: the service's (ten drivers) or one driver's. The tokens spent
/// never pass the cap, by the counter or by the provider's figures, and every call turned
/// away answers 429.
async fn calls_made_at_once_never_spend_past_a_cap(backend: Backend) {
    let fake = FakeLlm::start().await;
    fake.set_usage(300, 100);
    // Each answer takes a while, so the ten calls are in flight together.
    fake.set_delay(Duration::from_millis(300));
    let t = ports(backend).await;
    secret(t.dir.path(), "anthropicApiKey", "test-key");
    // A call reserves more than 1,000 tokens, and fewer than 3,000.
    let reserved = insights_reservation().await;
    assert!((1_000..3_000).contains(&reserved), "{reserved}");
    for (service_wide, cap) in [(true, 1_000), (true, 3_000), (false, 1_000), (false, 3_000)] {
        let mut settings = t.settings.clone();
        configure(&mut settings, &fake, AiProvider::Anthropic);
        if service_wide {
            settings.ai.service_tokens_per_day = cap;
        } else {
            settings.ai.tokens_per_day = cap;
        }
        // One store, one app per cap (its own data directory; the secrets are the store's).
        let app = spawn_with(settings, t.ports.clone(), tempfile::tempdir().unwrap()).await;
        let mut drivers = Vec::new();
        for n in 0..10 {
            if service_wide || n == 0 {
                drivers.push(app.driver(&format!("Racer{n}")).await);
            } else {
                drivers.push(drivers[0].clone());
            }
        }
        let upstream_before = fake.received().len();
        let calls = drivers.iter().enumerate().map(|(n, (token, _))| {
            let mut body = insight_body();
            body["CurLapMs"] = json!(160_000 + n);
            let app = &app;
            async move { ask(app, token, "/v1/ai/insights", &body).await }
        });
        let answers = futures::future::join_all(calls).await;

        let answered = answers
            .iter()
            .filter(|(status, _, _)| *status == 200)
            .count() as u64;
        let by_provider: u64 = answers
            .iter()
            .filter(|(status, _, _)| *status == 200)
            .map(|(_, body, _)| {
                body["data"]["inputTokens"].as_u64().unwrap()
                    + body["data"]["outputTokens"].as_u64().unwrap()
            })
            .sum();
        assert_eq!(by_provider, 400 * answered);
        assert_eq!(
            fake.received().len() - upstream_before,
            answered as usize,
            "a refused call never reaches the model"
        );
        for (status, body, headers) in answers.iter().filter(|(status, _, _)| *status != 200) {
            assert_eq!(*status, 429, "{body}");
            assert!(headers.get("retry-after").is_some(), "{body}");
        }
        let subject = if service_wide {
            "*"
        } else {
            drivers[0].1.as_str()
        };
        let counted = tokens_counted(&t, subject).await;
        let scope = if service_wide { "service" } else { "driver" };
        eprintln!(
            "{backend:?}: {scope} cap {cap}, {reserved} reserved a call: {answered} of 10 answered, \
             {by_provider} tokens by the provider, {counted} counted"
        );
        // A call whose most alone is past the cap is never made; one that fits is.
        if cap < reserved {
            assert_eq!(answered, 0, "{scope} cap {cap}");
        } else {
            assert!(answered >= 1, "{scope} cap {cap}");
        }
        assert!(
            by_provider <= cap && counted <= cap,
            "{scope} cap {cap}: {by_provider} tokens spent, {counted} counted"
        );
        // A fresh day, so the next race starts from empty counters.
        t.clock.advance(time::Duration::days(1));
    }
}

/// A call's reservation is settled whatever its outcome: replaced by the provider's figures
/// when it answers, given back when the provider refuses with an error status, and kept whole
/// when the provider may have counted tokens it never reported (a timeout).
async fn reservations_are_settled_by_the_outcome(backend: Backend) {
    let fake = FakeLlm::start().await;
    fake.set_usage(300, 100);
    let t = ports(backend).await;
    let mut settings = t.settings.clone();
    configure(&mut settings, &fake, AiProvider::Anthropic);
    secret(t.dir.path(), "anthropicApiKey", "test-key");
    let app = spawn_with(settings, t.ports.clone(), tempfile::tempdir().unwrap()).await;
    let (token, user) = app.driver("Settled").await;
    let question = |n: i64| {
        let mut body = insight_body();
        body["CurLapMs"] = json!(170_000 + n);
        body
    };
    let (status, res, _) = ask(&app, &token, "/v1/ai/insights", &question(1)).await;
    assert_eq!(status, 200, "{res}");
    assert_eq!(tokens_counted(&t, &user).await, 400);
    assert_eq!(tokens_counted(&t, "*").await, 400);

    for (n, mode) in [Mode::Failing, Mode::RateLimited, Mode::Unauthorized]
        .into_iter()
        .enumerate()
    {
        fake.set_mode(mode);
        let (status, _, _) = ask(&app, &token, "/v1/ai/insights", &question(2 + n as i64)).await;
        assert!(status == 502 || status == 503, "{mode:?}: {status}");
        assert_eq!(
            tokens_counted(&t, &user).await,
            400,
            "{mode:?} gives it back"
        );
        assert_eq!(tokens_counted(&t, "*").await, 400, "{mode:?} gives it back");
    }

    fake.set_mode(Mode::Hang);
    let (status, _, _) = ask(&app, &token, "/v1/ai/insights", &question(9)).await;
    assert_eq!(status, 504);
    let kept = reserved_for(&fake.received().last().unwrap().body);
    assert_eq!(tokens_counted(&t, &user).await, 400 + kept);
    assert_eq!(tokens_counted(&t, "*").await, 400 + kept);
}

paddock_tests::on_both_backends!(
    plain: [],
    ports: [
        limits_hold_across_instances,
        the_service_wide_token_cap_holds_across_drivers,
        calls_made_at_once_never_spend_past_a_cap,
        reservations_are_settled_by_the_outcome
    ]
);

/// The AI function's router answers through `lambda_http` as the local server does.
#[tokio::test(flavor = "multi_thread")]
async fn the_lambda_function_answers_as_the_local_server_does() {
    use tower::Service;
    let fake = FakeLlm::start().await;
    let mut t = ports(Backend::Embedded).await;
    configure(&mut t.settings, &fake, AiProvider::Anthropic);
    secret(t.dir.path(), "anthropicApiKey", "test-key");
    let state = paddock_api::state::AppState::new(t.ports.clone(), t.settings.clone()).with_coach();
    let router = paddock_api::routes::Group::Ai.router(state);
    let local = spawn_with(t.settings.clone(), t.ports.clone(), t.dir).await;
    let (token, _) = local.driver("Lambda").await;
    let (status, local_answer, _) = ask(&local, &token, "/v1/ai/insights", &insight_body()).await;
    assert_eq!(status, 200, "{local_answer}");

    let event = json!({
        "version": "2.0", "routeKey": "POST /v1/ai/insights", "rawPath": "/v1/ai/insights",
        "rawQueryString": "", "headers": {"content-type": "application/json",
            "authorization": format!("Bearer {token}")},
        "requestContext": {"accountId": "123456789012", "apiId": "api", "domainName": "api.example.com",
            "domainPrefix": "api", "http": {"method": "POST", "path": "/v1/ai/insights",
            "protocol": "HTTP/1.1", "sourceIp": "192.0.2.1", "userAgent": "test"},
            "requestId": "r1", "routeKey": "POST /v1/ai/insights", "stage": "$default",
            "time": "23/Nov/2026:10:00:00 +0000", "timeEpoch": 1_795_000_000_000_i64},
        "body": insight_body().to_string(), "isBase64Encoded": false,
    });
    let request: lambda_http::request::LambdaRequest = serde_json::from_value(event).unwrap();
    let mut adapter = lambda_http::Adapter::from(router);
    let answer = adapter
        .call(lambda_runtime::LambdaEvent::new(
            request,
            lambda_runtime::Context::default(),
        ))
        .await
        .unwrap();
    let answer = serde_json::to_value(answer).unwrap();
    assert_eq!(answer["statusCode"], 200, "{answer}");
    let body: Value = serde_json::from_str(answer["body"].as_str().unwrap()).unwrap();
    // The same request again: the stored answer, otherwise identical.
    let mut expected = local_answer.clone();
    expected["data"]["cached"] = json!(true);
    assert_eq!(body, expected);
}
