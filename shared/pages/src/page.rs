//! What every page answer shares: its query parameters read as the page reads them, its
//! headers (Content-Security-Policy, caching, `ETag`), conditional answers and error pages.

use axum::response::{IntoResponse, Response};
use http::{HeaderMap, HeaderValue, StatusCode, header};

use board_pages::preview::PreviewError;
use board_pages::{avatars, render};
use paddock_core::leaderboards::cache::{PreviewKey, RenderedPage};
use paddock_core::metrics;
use paddock_http::http::{ApiError, conditional};
use paddock_http::state::AppState;

/// Rows on a board or standings page.
pub(crate) const PAGE_SIZE: usize = 25;
/// Longest cursor accepted.
pub(crate) const MAX_CURSOR: usize = 512;

/// A PNG's bytes as a body of their own.
pub(crate) struct PngBytes;

impl utoipa::PartialSchema for PngBytes {
    fn schema() -> utoipa::openapi::RefOr<utoipa::openapi::schema::Schema> {
        let bytes = paddock_http::schemas::binary().description(Some("The PNG's bytes."));
        bytes.into()
    }
}

impl utoipa::ToSchema for PngBytes {}

/// The link preview `key` names, from the leaderboard cache or drawn on a miss: `read` gives
/// what it shows, `draw` the PNG of that, counted as a `kind` drawn (each is a cache miss,
/// and the costliest answer of the pages). `None` when `read` found nothing to show, which is
/// cached too (as an empty body) and answered 404 by the caller.
pub(crate) async fn link_preview<T, E>(
    state: &AppState,
    key: PreviewKey,
    kind: &'static str,
    read: impl Future<Output = Result<Option<T>, E>>,
    draw: impl FnOnce(T) -> Result<Vec<u8>, PreviewError>,
) -> Result<Option<RenderedPage>, ApiError>
where
    ApiError: From<E>,
{
    let cached = state
        .leaderboards
        .preview(key, |_| async move {
            let Some(shown) = read.await? else {
                return Ok(RenderedPage::with_etag(Vec::new()));
            };
            let png = draw(shown).map_err(|e| ApiError::Internal(anyhow::Error::new(e)))?;
            metrics::global()
                .previews_rendered
                .with_label_values(&[kind])
                .inc();
            Ok::<_, ApiError>(RenderedPage::with_etag(png))
        })
        .await?;
    Ok((!cached.body.is_empty()).then_some(cached))
}

/// A query parameter that breaks a rule: the 400 page names it.
pub(crate) struct BadParameter(pub(crate) String);

/// The named parameters of `raw` (each at most once, within its length); others are ignored.
pub(crate) fn parameters<const N: usize>(
    raw: Option<&str>,
    names: [(&'static str, usize); N],
) -> Result<[Option<String>; N], BadParameter> {
    let mut values: [Option<String>; N] = std::array::from_fn(|_| None);
    for (key, value) in form_urlencoded::parse(raw.unwrap_or_default().as_bytes()) {
        let Some(i) = names.iter().position(|(n, _)| *n == key) else {
            continue;
        };
        let (name, max) = names[i];
        if values[i].is_some() {
            return Err(BadParameter(format!("{name}: may be given once")));
        }
        if value.chars().count() > max {
            return Err(BadParameter(format!(
                "{name}: must be at most {max} characters"
            )));
        }
        let value = value.trim();
        values[i] = Some(value.to_owned()).filter(|v| !v.is_empty());
    }
    Ok(values)
}

/// The answer of one page request: its headers, conditional answers, error pages and the
/// avatars it may show.
pub(crate) struct Page<'a> {
    state: &'a AppState,
    request: &'a HeaderMap,
}

impl<'a> Page<'a> {
    pub(crate) fn new(state: &'a AppState, request: &'a HeaderMap) -> Self {
        Self { state, request }
    }

    pub(crate) fn public_url(&self) -> Option<&str> {
        self.state.settings.auth.public_url.as_deref()
    }

    /// `url` when the pages show it (an allowed host: [`avatars::shown`]); otherwise `None`,
    /// and the page shows the driver's initial.
    pub(crate) fn avatar(&self, url: Option<String>) -> Option<String> {
        url.filter(|u| avatars::shown(u, &self.state.settings.pages.avatar_hosts))
    }

    /// 200 with the page, or 304 when the client holds it (`If-None-Match`).
    pub(crate) fn ok(&self, html: String) -> Response {
        self.rendered(RenderedPage::with_etag(html.into_bytes()))
    }

    /// 200 with a rendered page, or 304 when the client holds it (`If-None-Match`).
    pub(crate) fn rendered(&self, page: RenderedPage) -> Response {
        self.cached(page, |body| self.html(StatusCode::OK, body))
    }

    /// 200 with a PNG, or 304 when the client holds it (`If-None-Match`).
    pub(crate) fn png(&self, png: RenderedPage) -> Response {
        let mut response = self.cached(png, |body| (StatusCode::OK, body).into_response());
        let h = response.headers_mut();
        h.insert(header::CONTENT_TYPE, HeaderValue::from_static("image/png"));
        h.insert(
            header::X_CONTENT_TYPE_OPTIONS,
            HeaderValue::from_static("nosniff"),
        );
        response
    }

    /// `answer` of the page's body, or 304 when the client holds it; either with the pages'
    /// `Cache-Control` and the page's `ETag`.
    pub(crate) fn cached(
        &self,
        page: RenderedPage,
        answer: impl FnOnce(axum::body::Bytes) -> Response,
    ) -> Response {
        let held = conditional::holds(self.request.get(header::IF_NONE_MATCH), &page.etag);
        let mut response = if held {
            StatusCode::NOT_MODIFIED.into_response()
        } else {
            answer(page.body)
        };
        let h = response.headers_mut();
        h.insert(
            header::CACHE_CONTROL,
            self.state.board_cache_control.clone(),
        );
        if let Ok(etag) = HeaderValue::from_str(&page.etag) {
            h.insert(header::ETAG, etag);
        }
        response
    }

    /// The 404 page of a board address that names no board.
    pub(crate) fn no_board(&self) -> Response {
        self.not_found("No such board", "There is no board at this address.")
    }

    /// The 404 page of a driver address that names no driver.
    pub(crate) fn no_driver(&self) -> Response {
        self.not_found("No such driver", "There is no driver at this address.")
    }

    /// The 404 page of an event address that names no public event.
    pub(crate) fn no_event(&self) -> Response {
        self.not_found("No such event", "There is no public event at this address.")
    }

    pub(crate) fn bad_request(&self, rule: &str) -> Response {
        self.html(
            StatusCode::BAD_REQUEST,
            render::problem("Bad request", rule),
        )
    }

    pub(crate) fn not_found(&self, title: &str, message: &str) -> Response {
        self.html(StatusCode::NOT_FOUND, render::problem(title, message))
    }

    /// An HTML answer with the pages' security headers.
    pub(crate) fn html(&self, status: StatusCode, html: impl Into<axum::body::Body>) -> Response {
        let images = avatars::image_sources(&self.state.settings.pages.avatar_hosts);
        html_response(status, html, &render::content_security_policy(&images))
    }
}

/// An HTML answer with the pages' security headers, `csp` its Content-Security-Policy.
fn html_response(status: StatusCode, html: impl Into<axum::body::Body>, csp: &str) -> Response {
    let mut response = (status, html.into()).into_response();
    let h = response.headers_mut();
    h.insert(
        header::CONTENT_TYPE,
        HeaderValue::from_static("text/html; charset=utf-8"),
    );
    if let Ok(csp) = HeaderValue::from_str(csp) {
        h.insert(header::CONTENT_SECURITY_POLICY, csp);
    }
    h.insert(
        header::X_CONTENT_TYPE_OPTIONS,
        HeaderValue::from_static("nosniff"),
    );
    h.insert(
        header::REFERRER_POLICY,
        HeaderValue::from_static("same-origin"),
    );
    if !status.is_success() {
        h.insert(header::CACHE_CONTROL, HeaderValue::from_static("no-cache"));
    }
    response
}
