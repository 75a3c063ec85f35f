//! A closed-loop HTTP/1.1 load generator over persistent loopback connections.

use bytes::Bytes;
use http_body_util::{BodyExt, Full};
use hyper::Request;
use hyper_util::rt::TokioIo;
use std::net::SocketAddr;
use std::time::{Duration, Instant};

/// One request shape, sent again and again.
#[derive(Clone)]
pub(crate) struct Load {
    method: http::Method,
    path: String,
    headers: Vec<(String, String)>,
    body: Bytes,
}

impl Load {
    /// `GET path`.
    pub(crate) fn get(path: &str) -> Self {
        Self {
            method: http::Method::GET,
            path: path.into(),
            headers: Vec::new(),
            body: Bytes::new(),
        }
    }

    /// `POST path` with a JSON body.
    pub(crate) fn post_json(path: &str, body: &serde_json::Value) -> Self {
        Self {
            method: http::Method::POST,
            path: path.into(),
            headers: vec![("content-type".into(), "application/json".into())],
            body: Bytes::from(body.to_string()),
        }
    }

    /// Adds a header.
    pub(crate) fn header(mut self, name: &str, value: &str) -> Self {
        self.headers.push((name.into(), value.into()));
        self
    }
}

/// Results of one measurement.
pub(crate) struct Stats {
    pub rps: f64,
    pub p50: Duration,
    pub p99: Duration,
    pub errors: usize,
}

/// One connection's latencies and failed requests.
type Measured = anyhow::Result<(Vec<Duration>, usize)>;

/// A persistent HTTP/1.1 connection to `addr` (no Nagle delay).
async fn connect(
    addr: SocketAddr,
) -> anyhow::Result<hyper::client::conn::http1::SendRequest<Full<Bytes>>> {
    let stream = tokio::net::TcpStream::connect(addr).await?;
    stream.set_nodelay(true)?;
    let (sender, conn) = hyper::client::conn::http1::handshake(TokioIo::new(stream)).await?;
    tokio::spawn(conn);
    Ok(sender)
}

/// Waits for every connection's loop and sums them up.
async fn gather(
    tasks: Vec<tokio::task::JoinHandle<Measured>>,
    started: Instant,
) -> anyhow::Result<Stats> {
    let (mut latencies, mut errors) = (Vec::new(), 0);
    for t in tasks {
        let (lat, err) = t.await??;
        latencies.extend(lat);
        errors += err;
    }
    Ok(stats(latencies, errors, started.elapsed()))
}

/// Runs `connections` loops against `addr` for `duration`; each loop waits for its answer
/// before sending the next request.
pub(crate) async fn run(
    addr: SocketAddr,
    load: &Load,
    connections: usize,
    duration: Duration,
) -> anyhow::Result<Stats> {
    let started = Instant::now();
    let deadline = started + duration;
    let mut tasks = Vec::with_capacity(connections);
    for _ in 0..connections {
        let load = load.clone();
        tasks.push(tokio::spawn(async move {
            connection(addr, load, deadline).await
        }));
    }
    gather(tasks, started).await
}

async fn connection(
    addr: SocketAddr,
    load: Load,
    deadline: Instant,
) -> anyhow::Result<(Vec<Duration>, usize)> {
    let mut sender = connect(addr).await?;
    let mut latencies = Vec::new();
    let mut errors = 0;
    while Instant::now() < deadline {
        let mut req = Request::builder()
            .method(load.method.clone())
            .uri(&load.path)
            .header("host", "127.0.0.1");
        for (k, v) in &load.headers {
            req = req.header(k, v);
        }
        let req = req.body(Full::new(load.body.clone()))?;
        let t0 = Instant::now();
        sender.ready().await?;
        let res = sender.send_request(req).await?;
        let ok = res.status().is_success();
        res.into_body().collect().await?;
        latencies.push(t0.elapsed());
        if !ok {
            errors += 1;
        }
    }
    Ok((latencies, errors))
}

/// Runs one refresh chain per token: each request presents the refresh token the previous
/// answer returned (rotation makes every request different).
pub(crate) async fn run_refresh_chains(
    addr: SocketAddr,
    tokens: Vec<String>,
    duration: Duration,
) -> anyhow::Result<Stats> {
    let started = Instant::now();
    let deadline = started + duration;
    let tasks: Vec<_> = tokens
        .into_iter()
        .map(|t| tokio::spawn(refresh_chain(addr, t, deadline)))
        .collect();
    gather(tasks, started).await
}

async fn refresh_chain(
    addr: SocketAddr,
    mut token: String,
    deadline: Instant,
) -> anyhow::Result<(Vec<Duration>, usize)> {
    let mut sender = connect(addr).await?;
    let (mut latencies, mut errors) = (Vec::new(), 0);
    while Instant::now() < deadline {
        let body = serde_json::json!({"refreshToken": token}).to_string();
        let req = Request::post("/v1/auth/refresh")
            .header("host", "127.0.0.1")
            .header("content-type", "application/json")
            .body(Full::new(Bytes::from(body)))?;
        let t0 = Instant::now();
        sender.ready().await?;
        let res = sender.send_request(req).await?;
        let ok = res.status().is_success();
        let bytes = res.into_body().collect().await?.to_bytes();
        latencies.push(t0.elapsed());
        if !ok {
            errors += 1;
            break;
        }
        let v: serde_json::Value = serde_json::from_slice(&bytes)?;
        token = v["data"]["refreshToken"]
            .as_str()
            .unwrap_or_default()
            .to_owned();
    }
    Ok((latencies, errors))
}

/// Requests/s and latency percentiles of a measurement.
pub(crate) fn stats(mut latencies: Vec<Duration>, errors: usize, elapsed: Duration) -> Stats {
    latencies.sort_unstable();
    let pick = |q: f64| {
        latencies
            .get(((latencies.len() as f64 * q) as usize).min(latencies.len().saturating_sub(1)))
            .copied()
    };
    Stats {
        rps: latencies.len() as f64 / elapsed.as_secs_f64(),
        p50: pick(0.50).unwrap_or_default(),
        p99: pick(0.99).unwrap_or_default(),
        errors,
    }
}

/// Runs `connections` loops of uploads, each with a fresh `ClientSessionId` spliced into the
/// body between `prefix` and `suffix` (so no upload is a duplicate of another).
pub(crate) async fn run_uploads(
    addr: SocketAddr,
    token: &str,
    (prefix, suffix): (Bytes, Bytes),
    connections: usize,
    duration: Duration,
) -> anyhow::Result<Stats> {
    let started = Instant::now();
    let deadline = started + duration;
    let tasks: Vec<_> = (0..connections)
        .map(|c| {
            let (token, prefix, suffix) = (token.to_owned(), prefix.clone(), suffix.clone());
            tokio::spawn(async move {
                let mut sender = connect(addr).await?;
                let (mut latencies, mut errors) = (Vec::new(), 0usize);
                let mut n = 0u64;
                while Instant::now() < deadline {
                    n += 1;
                    let id = format!("bench-{c}-{n}-{}", started.elapsed().as_nanos());
                    let mut body = Vec::with_capacity(prefix.len() + id.len() + suffix.len());
                    body.extend_from_slice(&prefix);
                    body.extend_from_slice(id.as_bytes());
                    body.extend_from_slice(&suffix);
                    let req = Request::post("/v1/sessions")
                        .header("host", "127.0.0.1")
                        .header("content-type", "application/json")
                        .header("authorization", format!("Bearer {token}"))
                        .body(Full::new(Bytes::from(body)))?;
                    let t0 = Instant::now();
                    sender.ready().await?;
                    let res = sender.send_request(req).await?;
                    let ok = res.status() == http::StatusCode::CREATED;
                    res.into_body().collect().await?;
                    latencies.push(t0.elapsed());
                    if !ok {
                        errors += 1;
                    }
                }
                anyhow::Ok((latencies, errors))
            })
        })
        .collect();
    gather(tasks, started).await
}
