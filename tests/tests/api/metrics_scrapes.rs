//! `GET /metrics` as the health function answers it in AWS, through several instances (each
//! its own wiring of the health group) over one item store, on both backends: only a scrape
//! with the metrics token reads, no token configured means the metrics are off, and the
//! metrics source is read once per `Metrics__CacheSeconds` however many instances are
//! scraped at once. On DynamoDB Local the source is CloudWatch on moto_server.

use std::sync::Arc;
use std::sync::atomic::{AtomicBool, AtomicUsize, Ordering};
use std::time::Duration;

use async_trait::async_trait;
use axum::Router;
use axum::body::Body;
use http::Request;
use http_body_util::BodyExt;
use paddock_api::routes::Group;
use paddock_api::state::AppState;
use paddock_core::ports::metrics_source::{
    MetricsSource, MetricsSourceError, SeriesValue, Statistic, Wanted,
};
use paddock_core::ports::secrets::{SecretError, SecretSource};
use paddock_tests::{Backend, TestPorts};
use time::OffsetDateTime;
use tower::ServiceExt;

/// The metrics token of these tests.
const TOKEN: &str = "metrics-token-of-the-tests-0123456789";

/// Instances of the health function in a scenario.
const INSTANCES: usize = 4;

/// The app secret with (or without) a metrics token.
struct AppSecret(Option<&'static str>);

#[async_trait]
impl SecretSource for AppSecret {
    async fn get(&self, name: &str) -> Result<Option<String>, SecretError> {
        Ok((name == "metricsToken")
            .then_some(self.0)
            .flatten()
            .map(str::to_owned))
    }
}

/// The metrics source of an instance, counting the reads that reach it: CloudWatch on
/// moto_server (DynamoDB Local), or a stand-in answering one count (embedded). Each read
/// takes at least 100 ms, so scrapes arriving together overlap it.
struct CountingSource {
    inner: Option<Arc<dyn MetricsSource>>,
    reads: AtomicUsize,
    failing: AtomicBool,
}

#[async_trait]
impl MetricsSource for CountingSource {
    async fn series(
        &self,
        wanted: &[Wanted<'_>],
        since: OffsetDateTime,
        until: OffsetDateTime,
    ) -> Result<Vec<SeriesValue>, MetricsSourceError> {
        let n = self.reads.fetch_add(1, Ordering::SeqCst) + 1;
        tokio::time::sleep(Duration::from_millis(100)).await;
        if self.failing.load(Ordering::SeqCst) {
            return Err(MetricsSourceError::Unavailable("throttled".into()));
        }
        let mut series = match &self.inner {
            Some(inner) => inner.series(wanted, since, until).await?,
            None => Vec::new(),
        };
        series.push(SeriesValue {
            name: "paddock_outbox_relayed_total".into(),
            dimensions: Vec::new(),
            statistic: Statistic::Sum,
            value: n as f64,
        });
        Ok(series)
    }
}

impl CountingSource {
    fn reads(&self) -> usize {
        self.reads.load(Ordering::SeqCst)
    }
}

/// The health function's instances over fresh ports of `backend`, with the app secret
/// holding `token`, each reading the one counting source.
struct Deployment {
    t: TestPorts,
    source: Arc<CountingSource>,
    instances: Vec<Router>,
}

async fn deployment(backend: Backend, token: Option<&'static str>) -> Deployment {
    let mut t = paddock_tests::ports(backend).await;
    t.ports.secrets = Arc::new(AppSecret(token));
    t.settings.metrics_cache = Duration::from_secs(60);
    let inner: Option<Arc<dyn MetricsSource>> = match backend {
        Backend::Embedded => None,
        Backend::Aws => Some(Arc::new(paddock_aws::CloudWatchMetrics::new(
            &paddock_aws::sdk_config().await,
            paddock_tests::unique("Paddock/scrapes-"),
        ))),
    };
    let source = Arc::new(CountingSource {
        inner,
        reads: AtomicUsize::new(0),
        failing: AtomicBool::new(false),
    });
    let instances = (0..INSTANCES)
        .map(|_| {
            let state = AppState::new(t.ports.clone(), t.settings.clone())
                .with_metrics_source(source.clone());
            Group::Health.router(state)
        })
        .collect();
    Deployment {
        t,
        source,
        instances,
    }
}

/// A scrape's answer: status, `Retry-After` / `WWW-Authenticate`, body.
struct Scrape {
    status: u16,
    retry_after: Option<u64>,
    www_authenticate: Option<String>,
    body: String,
}

impl Scrape {
    fn envelope(&self) -> serde_json::Value {
        let body: serde_json::Value = serde_json::from_str(&self.body)
            .unwrap_or_else(|e| panic!("not an envelope ({e}): {}", self.body));
        assert_eq!(body["success"], false, "{body}");
        assert!(
            body["data"].is_null() && body["error"].is_string(),
            "{body}"
        );
        body
    }
}

/// `GET /metrics` of `instance` with `authorization`, if any.
async fn scrape(instance: &Router, authorization: Option<&str>) -> Scrape {
    let mut request = Request::get("/metrics");
    if let Some(value) = authorization {
        request = request.header("authorization", value);
    }
    let response = instance
        .clone()
        .oneshot(request.body(Body::empty()).unwrap())
        .await
        .unwrap();
    let header = |name: &str| {
        response
            .headers()
            .get(name)
            .map(|v| v.to_str().unwrap().to_owned())
    };
    let (retry_after, www_authenticate) = (
        header("retry-after").map(|v| v.parse().unwrap()),
        header("www-authenticate"),
    );
    let status = response.status().as_u16();
    let body = response.into_body().collect().await.unwrap().to_bytes();
    Scrape {
        status,
        retry_after,
        www_authenticate,
        body: String::from_utf8(body.to_vec()).unwrap(),
    }
}

fn bearer() -> String {
    format!("Bearer {TOKEN}")
}

/// `per_instance` scrapes with the token on every instance at once: their texts.
async fn scrape_all_at_once(d: &Deployment, per_instance: usize) -> Vec<String> {
    let authorization = bearer();
    let scrapes = d
        .instances
        .iter()
        .flat_map(|instance| std::iter::repeat_n(instance, per_instance))
        .map(|instance| scrape(instance, Some(&authorization)));
    futures::future::join_all(scrapes)
        .await
        .into_iter()
        .map(|s| {
            assert_eq!(s.status, 200, "{}", s.body);
            s.body
        })
        .collect()
}

/// The value of the stand-in counter in `text`: which read of the source it comes from.
fn read_number(text: &str) -> u64 {
    text.lines()
        .find_map(|l| l.strip_prefix("paddock_outbox_relayed_total "))
        .unwrap_or_else(|| panic!("no counter in {text}"))
        .trim()
        .parse()
        .unwrap()
}

async fn scrapes_through_many_instances_share_one_read_per_interval(backend: Backend) {
    let d = deployment(backend, Some(TOKEN)).await;
    let texts = scrape_all_at_once(&d, 3).await;
    assert_eq!(
        d.source.reads(),
        1,
        "{} scrapes over {INSTANCES} instances",
        texts.len()
    );
    assert!(texts.iter().all(|t| read_number(t) == 1), "{texts:?}");
    // Within the interval, every instance answers the stored readout.
    d.t.clock.advance(time::Duration::seconds(59));
    let texts = scrape_all_at_once(&d, 2).await;
    assert_eq!(d.source.reads(), 1);
    assert!(texts.iter().all(|t| read_number(t) == 1), "{texts:?}");
    // Past it, one instance reads again for all; while it reads, the others answer the
    // stored readout rather than wait.
    d.t.clock.advance(time::Duration::seconds(2));
    let texts = scrape_all_at_once(&d, 3).await;
    assert_eq!(d.source.reads(), 2);
    let numbers: Vec<u64> = texts.iter().map(|t| read_number(t)).collect();
    assert!(numbers.contains(&2), "{numbers:?}");
    assert!(numbers.iter().all(|n| [1, 2].contains(n)), "{numbers:?}");
    let texts = scrape_all_at_once(&d, 1).await;
    assert!(texts.iter().all(|t| read_number(t) == 2), "{texts:?}");
    assert_eq!(d.source.reads(), 2);
    println!(
        "{backend:?}: {} scrapes over {INSTANCES} instances, two intervals: {} reads of the source",
        3 * INSTANCES * 2 + 3 * INSTANCES,
        d.source.reads()
    );
}

async fn a_scrape_without_the_token_is_refused_and_reads_nothing(backend: Backend) {
    let d = deployment(backend, Some(TOKEN)).await;
    let wrong = format!("Bearer {}", TOKEN.replace('0', "1"));
    let basic = format!("Basic {TOKEN}");
    let prefix = format!("Bearer {}", &TOKEN[..TOKEN.len() - 1]);
    let longer = format!("Bearer {TOKEN}x");
    for authorization in [
        None,
        Some("Bearer"),
        Some(wrong.as_str()),
        Some(basic.as_str()),
        Some(prefix.as_str()),
        Some(longer.as_str()),
    ] {
        for instance in &d.instances {
            let refused = scrape(instance, authorization).await;
            assert_eq!(refused.status, 401, "{authorization:?}: {}", refused.body);
            assert_eq!(
                refused.www_authenticate.as_deref(),
                Some("Bearer realm=\"metrics\""),
                "{authorization:?}"
            );
            let body = refused.envelope();
            assert!(!refused.body.contains("paddock_"), "{body}");
        }
    }
    assert_eq!(d.source.reads(), 0, "a refused scrape reads nothing");
    let allowed = scrape(&d.instances[0], Some(&bearer())).await;
    assert_eq!(allowed.status, 200, "{}", allowed.body);
    // The scheme's name is case-insensitive, as HTTP has it.
    let lower = scrape(&d.instances[1], Some(&format!("bearer {TOKEN}"))).await;
    assert_eq!(lower.status, 200, "{}", lower.body);
}

async fn without_a_configured_token_the_metrics_are_off(backend: Backend) {
    for configured in [None, Some("too-short-a-token")] {
        let d = deployment(backend, configured).await;
        for authorization in [
            None,
            Some(bearer()),
            Some("Bearer too-short-a-token".into()),
        ] {
            let off = scrape(&d.instances[0], authorization.as_deref()).await;
            assert_eq!(off.status, 404, "{configured:?} {authorization:?}");
            assert_eq!(off.envelope()["error"], "no such endpoint");
        }
        assert_eq!(d.source.reads(), 0);
    }
}

async fn a_failed_read_is_shared_and_says_when_to_retry(backend: Backend) {
    let d = deployment(backend, Some(TOKEN)).await;
    d.source.failing.store(true, Ordering::SeqCst);
    let authorization = bearer();
    let first = scrape(&d.instances[0], Some(&authorization)).await;
    assert_eq!(first.status, 503, "{}", first.body);
    assert_eq!(first.retry_after, Some(5));
    assert!(
        first.envelope()["error"]
            .as_str()
            .unwrap()
            .contains("metrics")
    );
    // The other instances learn of the failure from the store and do not read again.
    d.t.clock.advance(time::Duration::seconds(2));
    for instance in &d.instances[1..] {
        let later = scrape(instance, Some(&authorization)).await;
        assert_eq!(later.status, 503, "{}", later.body);
        assert_eq!(later.retry_after, Some(3));
    }
    assert_eq!(d.source.reads(), 1);
    // Once the failure's hold is over, one read again, and it succeeds.
    d.source.failing.store(false, Ordering::SeqCst);
    d.t.clock.advance(time::Duration::seconds(4));
    let texts = scrape_all_at_once(&d, 2).await;
    assert_eq!(d.source.reads(), 2);
    assert!(texts.iter().all(|t| read_number(t) == 2), "{texts:?}");
}

paddock_tests::on_both_backends!(
    plain: [],
    ports: [
        scrapes_through_many_instances_share_one_read_per_interval,
        a_scrape_without_the_token_is_refused_and_reads_nothing,
        without_a_configured_token_the_metrics_are_off,
        a_failed_read_is_shared_and_says_when_to_retry,
    ]
);
