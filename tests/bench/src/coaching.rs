//! The AI coach's own cost: `POST /v1/ai/chat` through the service against the same request
//! sent straight to the model API it calls, a loopback stand-in answering at once.

use axum::Json;
use axum::Router;
use axum::routing::post;
use serde_json::{Value, json};
use std::net::SocketAddr;
use std::time::Duration;

use crate::load::{self, Load, Stats};

/// The stand-in's fixed answer, in the Anthropic Messages API's shape.
fn answer() -> Value {
    json!({
        "id": "msg_1", "type": "message", "role": "assistant", "model": "bench-model",
        "content": [{"type": "text", "text": "Brake 10 m later into T1: you lose 0.3 s there."}],
        "stop_reason": "end_turn", "usage": {"input_tokens": 350, "output_tokens": 20},
    })
}

/// Starts the stand-in model API; answers its address.
pub(crate) async fn spawn_model_api() -> anyhow::Result<SocketAddr> {
    let router = Router::new().route(
        "/v1/messages",
        post(|Json(_): Json<Value>| async { Json(answer()) }),
    );
    let listener = tokio::net::TcpListener::bind("127.0.0.1:0").await?;
    let addr = listener.local_addr()?;
    tokio::spawn(async move { axum::serve(listener, router).await });
    Ok(addr)
}

/// A chat request as the desktop client sends it.
fn chat_body() -> Value {
    json!({
        "GameId": "acc", "TrackName": "Spa-Francorchamps", "TrackLayout": "GP",
        "VehicleName": "Porsche 992 GT3 R", "RefLapMs": 138_456, "CurLapMs": 139_102,
        "Insights": [{"corner": "T1", "finding": "braking 12 m early"}],
        "SegmentDeltas": [{"segment": "T1", "deltaMs": 310}, {"segment": "Eau Rouge", "deltaMs": -40}],
        "Messages": [{"role": "user", "content": "Where do I lose the most time?"}],
    })
}

fn row(name: &str, s: &Stats, extra: &str) {
    println!(
        "{name:<34} {:>10.0} req/s   p50 {:>7.3} ms   p99 {:>7.3} ms   errors {:>3}{extra}",
        s.rps,
        s.p50.as_secs_f64() * 1e3,
        s.p99.as_secs_f64() * 1e3,
        s.errors
    );
}

/// Direct calls to the stand-in against the same conversation through the service.
pub(crate) async fn chat(
    paddock: SocketAddr,
    model_api: SocketAddr,
    access: &str,
    connections: usize,
    seconds: Duration,
    rounds: usize,
) -> anyhow::Result<()> {
    // What the service sends upstream for this conversation: the same size of request.
    let upstream = json!({
        "model": "bench-model", "max_tokens": 1024,
        "system": paddock_core::coaching::prompt::SYSTEM_PROMPT,
        "messages": [{"role": "user", "content": format!("<session>{}</session>\n\nWhere do I lose the most time?", chat_body())}],
    });
    let direct = Load::post_json("/v1/messages", &upstream).header("x-api-key", "bench-key");
    let through = Load::post_json("/v1/ai/chat", &chat_body())
        .header("authorization", &format!("Bearer {access}"));
    // One connection shows the latency the service adds to a call; many, its throughput.
    for connections in [1, connections] {
        let (base, coach) = crate::paired(
            rounds,
            || load::run(model_api, &direct, connections, seconds),
            || load::run(paddock, &through, connections, seconds),
        )
        .await?;
        row(
            &format!("baseline: model API direct, {connections} conn"),
            &base,
            "",
        );
        let added = format!(
            "   added p50 {:.3} ms, p99 {:.3} ms   ratio {:.2}x",
            (coach.p50.as_secs_f64() - base.p50.as_secs_f64()) * 1e3,
            (coach.p99.as_secs_f64() - base.p99.as_secs_f64()) * 1e3,
            coach.rps / base.rps
        );
        row(
            &format!("paddock:  POST /v1/ai/chat, {connections} conn"),
            &coach,
            &added,
        );
    }
    Ok(())
}
