//! `/v1/sharepacks`: upload (direct, or through an upload URL), read and download by id,
//! the owner's list and delete.

use crate::routes::registry::{Routes, operations};
use axum::body::{Body, Bytes};
use axum::extract::{FromRequest, Multipart, Request, State};
use axum::response::{IntoResponse, Response};
use futures::StreamExt;
use http::request::Parts;
use http::{HeaderValue, StatusCode, header};
use serde::{Deserialize, Serialize};
use tokio::io::AsyncWriteExt;
use utoipa::{IntoParams, ToSchema};

use super::envelopes::{envelope, page_envelope};
pub(crate) use super::sharepack_bodies::{PackForm, ZipBytes};
use crate::http::auth_user::{Caller, scope};
use crate::http::envelope::with_status;
use crate::http::idempotency_key::{IdempotencyKey, IdempotencyKeyHeader};
use crate::http::{ApiError, ApiJson, ApiQuery, MalformedId, PathId, ok};
use crate::routes::paging::{PageParams, Paged};
use crate::state::AppState;
use paddock_core::ids::{SharePackId, UserId};
use paddock_core::problems::{FieldProblems, Problems};
use paddock_core::sharepacks::packs::{self, Declared, Labels, SharePack};
use paddock_core::sharepacks::{blob_key, upload_key, upload_urls};

/// The share-pack routes.
pub fn routes<R: Routes>() -> R {
    R::empty()
        .operations(operations!(list, upload))
        .operations(operations!(start_upload))
        .operations(operations!(upload_content))
        .operations(operations!(metadata, delete))
        .operations(operations!(complete))
        .operations(operations!(download))
        // Bodies are read here as streams with the pack limits; multipart forms are bounded by
        // the direct-upload limit below.
        .body_limit(8 * 1024 * 1024)
}

/// `?name=&description=` of a direct `application/zip` upload.
#[derive(Debug, Deserialize, IntoParams)]
#[into_params(parameter_in = Query)]
pub(crate) struct PackLabels {
    /// 1 to 100 characters; the download's file name.
    #[param(value_type = String, min_length = 1, max_length = 100, pattern = "^[^\\u0000-\\u001f\\u007f-\\u009f\\u00ad\\u034f\\u061c\\u115f\\u1160\\u17b4\\u17b5\\u180e\\u200b-\\u200f\\u202a-\\u202e\\u2060-\\u2064\\u2066-\\u206f\\u3164\\ufeff\\uffa0\\ufff9-\\ufffb]*[^\\s\\u0000-\\u001f\\u007f-\\u009f\\u00ad\\u034f\\u061c\\u115f\\u1160\\u17b4\\u17b5\\u180e\\u200b-\\u200f\\u202a-\\u202e\\u2060-\\u2064\\u2066-\\u206f\\u3164\\ufeff\\uffa0\\ufff9-\\ufffb][^\\u0000-\\u001f\\u007f-\\u009f\\u00ad\\u034f\\u061c\\u115f\\u1160\\u17b4\\u17b5\\u180e\\u200b-\\u200f\\u202a-\\u202e\\u2060-\\u2064\\u2066-\\u206f\\u3164\\ufeff\\uffa0\\ufff9-\\ufffb]*$")]
    pub name: Option<String>,
    /// At most 1,000 characters.
    #[param(value_type = Option<String>, max_length = 1000, pattern = "^[^\\u0000-\\u001f\\u007f-\\u009f\\u00ad\\u034f\\u061c\\u115f\\u1160\\u17b4\\u17b5\\u180e\\u200b-\\u200f\\u202a-\\u202e\\u2060-\\u2064\\u2066-\\u206f\\u3164\\ufeff\\uffa0\\ufff9-\\ufffb]*$")]
    pub description: Option<String>,
}

fn labels(name: Option<String>, description: Option<String>) -> Result<Labels, FieldProblems> {
    let mut p = Problems::default();
    let labels = Labels::parse(&mut p, name, description);
    p.into_result(labels)
}

fn too_large(max: u64) -> ApiError {
    ApiError::PayloadTooLarge(format!(
        "a pack sent directly may be at most {max} bytes; larger packs go through POST /v1/sharepacks/uploads"
    ))
}

/// Reads a body of at most `max` bytes, chunk by chunk (a larger one is refused as soon as it
/// passes the limit, without reading the rest).
async fn read_capped(body: Body, max: u64) -> Result<Bytes, ApiError> {
    let mut stream = body.into_data_stream();
    let mut out = Vec::new();
    while let Some(chunk) = stream.next().await {
        let chunk = chunk.map_err(|_| ApiError::BadRequest("body: could not be read".into()))?;
        if (out.len() + chunk.len()) as u64 > max {
            return Err(too_large(max));
        }
        out.extend_from_slice(&chunk);
    }
    Ok(Bytes::from(out))
}

/// Uploads a pack of at most 4 MiB: `application/zip` with `?name=&description=`, or
/// `multipart/form-data` with `file`, `name` and `description`.
#[utoipa::path(post, path = "/v1/sharepacks", operation_id = "uploadSharePack", tag = "sharepacks", security(("bearer" = ["sharepacks"])), params(PackLabels, IdempotencyKeyHeader),
    request_body(content((inline(ZipBytes) = "application/zip"), (inline(PackForm) = "multipart/form-data")),
        description = "The ZIP (at most Sharepacks__MaxDirectBytes, 4 MiB by default), or a form with file, name, description"),
    responses((status = 201, description = "Stored and checked (or, for a repeated `Idempotency-Key`, the pack the first request stored)", body = SharePackEnvelope),
              (status = 400, description = "A bad name or description, or a form without a file"),
              (status = 401, description = "No valid token"),
              (status = 409, description = "An earlier request under the same `Idempotency-Key` is still at work: send it again shortly"),
              (status = 413, description = "Larger than a direct upload may be (use the upload URL flow), or the driver's bytes are spent"),
              (status = 415, description = "Neither application/zip nor multipart/form-data"),
              (status = 422, description = "The `Idempotency-Key` was sent with another request, or not an acceptable ZIP: the message names the entry and the rule (unsafe or clashing names, links and special files, nested archives with such entries, data outside the archive, bytes no listed entry accounts for, overlapping entries, local headers or data descriptors that disagree with the directory, too many entries, encryption, damage, a bomb)"),
              (status = 429, description = "Too many uploads a minute, or too many packs")))]
pub(crate) async fn upload(
    State(state): State<AppState>,
    user: Caller<scope::Sharepacks>,
    IdempotencyKey(key): IdempotencyKey,
    request: Request,
) -> Result<Response, ApiError> {
    let limits = &state.settings.sharepacks;
    let owner = user.user_id();
    let (labels, bytes) = match read_upload(&state, request).await {
        Ok(read) => read,
        Err(refused) => {
            // An attempt refused here counts as one refused by the check would.
            packs::count_refused_attempt(&state.ports, limits, owner).await?;
            return Err(refused);
        }
    };
    let pack =
        packs::create_direct(&state.ports, limits, owner, labels, bytes, key.as_ref()).await?;
    Ok(with_status(StatusCode::CREATED, pack))
}

/// The labels and the ZIP of a direct upload, in either form, within the direct-upload size.
async fn read_upload(state: &AppState, request: Request) -> Result<(Labels, Bytes), ApiError> {
    let limits = &state.settings.sharepacks;
    let content_type = request
        .headers()
        .get(header::CONTENT_TYPE)
        .and_then(|v| v.to_str().ok())
        .unwrap_or_default()
        .to_ascii_lowercase();
    let (labels, bytes) = if content_type.starts_with("application/zip") {
        let (parts, body) = request.into_parts();
        let query: PackLabels = serde_urlencoded::from_str(parts.uri.query().unwrap_or_default())
            .map_err(|e| ApiError::BadRequest(format!("query: {e}")))?;
        if let Some(length) = parts
            .headers
            .get(header::CONTENT_LENGTH)
            .and_then(|v| v.to_str().ok()?.parse::<u64>().ok())
            && length > limits.max_direct_bytes
        {
            return Err(too_large(limits.max_direct_bytes));
        }
        let labels = labels(query.name, query.description)?;
        (labels, read_capped(body, limits.max_direct_bytes).await?)
    } else if content_type.starts_with("multipart/form-data") {
        let mut form = Multipart::from_request(request, state)
            .await
            .map_err(|e| ApiError::BadRequest(format!("body: {}", e.body_text())))?;
        let (mut name, mut description, mut file) = (None, None, None);
        while let Some(field) = form
            .next_field()
            .await
            .map_err(|e| ApiError::BadRequest(format!("body: {}", e.body_text())))?
        {
            let field_name = field.name().unwrap_or_default().to_owned();
            let bytes = field.bytes().await.map_err(|e| match e.status() {
                StatusCode::PAYLOAD_TOO_LARGE => too_large(limits.max_direct_bytes),
                _ => ApiError::BadRequest(format!("{field_name}: {}", e.body_text())),
            })?;
            let text = || {
                String::from_utf8(bytes.to_vec())
                    .map_err(|_| ApiError::invalid(&field_name, "must be UTF-8 text"))
            };
            match field_name.as_str() {
                "file" => file = Some(bytes.clone()),
                "name" => name = Some(text()?),
                "description" => description = Some(text()?),
                _ => {}
            }
        }
        let labels = labels(name, description)?;
        let file = file.ok_or_else(|| ApiError::invalid("file", "is required"))?;
        if file.len() as u64 > limits.max_direct_bytes {
            return Err(too_large(limits.max_direct_bytes));
        }
        (labels, file)
    } else {
        return Err(ApiError::UnsupportedMediaType(
            "send the pack as application/zip (with ?name=) or as multipart/form-data".into(),
        ));
    };
    Ok((labels, bytes))
}

/// `POST /v1/sharepacks/uploads` body.
#[derive(Debug, Deserialize, ToSchema)]
#[serde(rename_all = "camelCase")]
pub(crate) struct UploadRequest {
    /// 1 to 100 characters; the download's file name.
    #[schema(required = true, value_type = String, min_length = 1, max_length = 100,
        pattern = "^[^\\u0000-\\u001f\\u007f-\\u009f\\u00ad\\u034f\\u061c\\u115f\\u1160\\u17b4\\u17b5\\u180e\\u200b-\\u200f\\u202a-\\u202e\\u2060-\\u2064\\u2066-\\u206f\\u3164\\ufeff\\uffa0\\ufff9-\\ufffb]*[^\\s\\u0000-\\u001f\\u007f-\\u009f\\u00ad\\u034f\\u061c\\u115f\\u1160\\u17b4\\u17b5\\u180e\\u200b-\\u200f\\u202a-\\u202e\\u2060-\\u2064\\u2066-\\u206f\\u3164\\ufeff\\uffa0\\ufff9-\\ufffb][^\\u0000-\\u001f\\u007f-\\u009f\\u00ad\\u034f\\u061c\\u115f\\u1160\\u17b4\\u17b5\\u180e\\u200b-\\u200f\\u202a-\\u202e\\u2060-\\u2064\\u2066-\\u206f\\u3164\\ufeff\\uffa0\\ufff9-\\ufffb]*$")]
    pub name: Option<String>,
    /// At most 1,000 characters.
    #[schema(value_type = Option<String>, max_length = 1000, pattern = "^[^\\u0000-\\u001f\\u007f-\\u009f\\u00ad\\u034f\\u061c\\u115f\\u1160\\u17b4\\u17b5\\u180e\\u200b-\\u200f\\u202a-\\u202e\\u2060-\\u2064\\u2066-\\u206f\\u3164\\ufeff\\uffa0\\ufff9-\\ufffb]*$")]
    pub description: Option<String>,
    /// The ZIP's exact size in bytes (at most Sharepacks__MaxBytes, 100 MiB by default).
    #[schema(required = true, value_type = i64, minimum = 1, maximum = 104_857_600)]
    pub size_bytes: Option<i64>,
    /// SHA-256 of the ZIP, 64 hexadecimal digits.
    #[schema(required = true, value_type = String, pattern = "^[0-9a-fA-F]{64}$")]
    pub sha256: Option<String>,
}

/// Starts a large upload: PUT the bytes to `uploadUrl` (an S3 presigned URL in AWS, a signed
/// URL of this server locally), then call `complete`.
#[utoipa::path(post, path = "/v1/sharepacks/uploads", operation_id = "startSharePackUpload", tag = "sharepacks", security(("bearer" = ["sharepacks"])),
    request_body = UploadRequest,
    responses((status = 201, description = "Where to PUT the bytes", body = UploadTicketEnvelope),
              (status = 400, description = "Every problem, by field"), (status = 401, description = "No valid token"),
              (status = 413, description = "The driver's bytes are spent"),
              (status = 429, description = "Too many uploads a minute, or too many packs")))]
pub(crate) async fn start_upload(
    State(state): State<AppState>,
    user: Caller<scope::Sharepacks>,
    ApiJson(body): ApiJson<UploadRequest>,
) -> Result<Response, ApiError> {
    let limits = &state.settings.sharepacks;
    let mut p = Problems::default();
    let labels = Labels::parse(&mut p, body.name, body.description);
    let declared = Declared::parse(&mut p, body.size_bytes, body.sha256, limits);
    let (labels, declared) = p.into_result(labels.zip(declared))?;
    // Only a blob store without presigned URLs (the local directory) needs this server's own
    // upload URL and its key; S3 signs its URLs itself, and the stack's secret has no such key.
    let key = state.ports.secrets.get(upload_urls::KEY_SECRET).await?;
    let base = state.public_url();
    let ticket = packs::start_upload(&state.ports, limits, user.user_id(), labels, declared, |id, expires, length| {
        let signature = upload_urls::sign(key?.as_bytes(), id, expires, length);
        Some(format!("{base}/v1/sharepacks/uploads/{id}/content?expires={expires}&length={length}&signature={signature}"))
    })
    .await?;
    Ok(with_status(StatusCode::CREATED, ticket))
}

async fn url_signing_key(state: &AppState) -> Result<Vec<u8>, ApiError> {
    let key = state
        .ports
        .secrets
        .get(upload_urls::KEY_SECRET)
        .await?
        .ok_or_else(|| ApiError::Internal(anyhow::anyhow!("the upload URL key is missing")))?;
    Ok(key.into_bytes())
}

/// The signature of a local upload URL.
#[derive(Debug, Deserialize, IntoParams)]
#[into_params(parameter_in = Query)]
pub(crate) struct SignedUpload {
    /// When the URL expires (Unix seconds).
    #[param(value_type = i64)]
    pub expires: Option<i64>,
    /// The exact number of bytes to send.
    #[param(value_type = i64)]
    pub length: Option<u64>,
    /// The URL's HMAC.
    #[param(value_type = String)]
    pub signature: Option<String>,
}

/// The local mode's upload URL: takes exactly the declared bytes, streamed to disk (the URL's
/// signature authorises it; no token).
#[utoipa::path(put, path = "/v1/sharepacks/uploads/{id}/content", operation_id = "putSharePackContent", tag = "sharepacks",
    params(("id" = String, Path, description = "Pack id"), SignedUpload),
    request_body(content((inline(ZipBytes) = "application/zip"), (inline(ZipBytes) = "application/octet-stream")), description = "Exactly the declared bytes (any content type)"),
    responses((status = 200, description = "Stored; now call complete"),
              (status = 400, description = "Not the declared length"),
              (status = 403, description = "A wrong, tampered or expired signature"),
              (status = 404, description = "No such pending pack"),
              (status = 409, description = "The upload is closed: complete was called (the pack is being checked, or is published)")))]
pub(crate) async fn upload_content(
    State(state): State<AppState>,
    // The query first: a malformed one is refused before the id is looked at, as it was
    // when the id was text.
    ApiQuery(signed): ApiQuery<SignedUpload>,
    PathId { id, .. }: PathId<SharePackId, UnsignedPack>,
    body: Body,
) -> Result<Response, ApiError> {
    let (Some(expires), Some(length), Some(signature)) =
        (signed.expires, signed.length, signed.signature)
    else {
        return Err(unsigned());
    };
    let key = url_signing_key(&state).await?;
    if !upload_urls::verify(
        &key,
        &id,
        expires,
        length,
        &signature,
        state.ports.clock.unix(),
    ) {
        return Err(badly_signed());
    }
    upload_open(&state, &id).await?;
    // Created exclusively, readable by this process only, at a name nobody can guess; removed
    // when dropped.
    let staging = tempfile::NamedTempFile::with_prefix("paddock-upload-").map_err(io_error)?;
    let mut file = tokio::fs::File::from_std(staging.reopen().map_err(io_error)?);
    let mut received = 0u64;
    let mut stream = body.into_data_stream();
    while let Some(chunk) = stream.next().await {
        let chunk = chunk.map_err(|_| ApiError::BadRequest("body: could not be read".into()))?;
        received += chunk.len() as u64;
        if received > length {
            return Err(ApiError::BadRequest(format!(
                "body: more than the declared {length} bytes"
            )));
        }
        file.write_all(&chunk).await.map_err(io_error)?;
    }
    if received != length {
        return Err(ApiError::BadRequest(format!(
            "body: {received} bytes; the URL is for {length}"
        )));
    }
    file.flush().await.map_err(io_error)?;
    // `complete` may have started while the bytes came: it closed the upload first, so what
    // is stored now is never read (and the sweep or the pack's removal clears it).
    upload_open(&state, &id).await?;
    state
        .ports
        .blobs
        .put_file(&upload_key(&id), staging.path(), "application/zip")
        .await?;
    Ok(ok(serde_json::json!({"id": id, "receivedBytes": length})))
}

fn unsigned() -> ApiError {
    ApiError::Forbidden("the upload URL is not signed".into())
}

fn badly_signed() -> ApiError {
    ApiError::Forbidden("the upload URL is invalid or expired".into())
}

/// An upload URL whose pack id is malformed was signed by nobody (only minted ids are): it is
/// refused as a URL without a signature, or with one that does not hold, is refused.
pub(crate) struct UnsignedPack;

impl<S> MalformedId<S> for UnsignedPack {
    fn answer(parts: &Parts, _: &S) -> Response {
        let signed = parts
            .uri
            .query()
            .and_then(|q| serde_urlencoded::from_str::<SignedUpload>(q).ok())
            .is_some_and(|s| s.expires.is_some() && s.length.is_some() && s.signature.is_some());
        if signed { badly_signed() } else { unsigned() }.into_response()
    }
}

/// Refuses a PUT to an upload URL whose pack is unknown, or whose upload `complete` closed.
async fn upload_open(state: &AppState, id: &SharePackId) -> Result<(), ApiError> {
    match packs::upload_state(&state.ports, id).await? {
        packs::Upload::Open => Ok(()),
        packs::Upload::Closed => Err(ApiError::Conflict(
            "the upload is closed: complete was called for this pack; start a new upload".into(),
        )),
        packs::Upload::Unknown => Err(ApiError::NotFound("share pack not found".into())),
    }
}

fn io_error(e: std::io::Error) -> ApiError {
    ApiError::Internal(anyhow::Error::new(e).context("staging an upload"))
}

/// Checks what arrived at the upload URL (size, sha256, the ZIP) and makes the pack visible;
/// a pack that fails is removed and the answer says why.
#[utoipa::path(post, path = "/v1/sharepacks/{id}/complete", operation_id = "completeSharePackUpload", tag = "sharepacks", security(("bearer" = ["sharepacks"])),
    params(("id" = String, Path, description = "Pack id")),
    responses((status = 200, description = "Checked and visible", body = SharePackEnvelope),
              (status = 401, description = "No valid token"),
              (status = 404, description = "No such pending pack of the caller"),
              (status = 409, description = "The pack is already being completed"),
              (status = 413, description = "The driver's bytes are spent"),
              (status = 422, description = "What arrived is not the declared pack, or not an acceptable ZIP (the pack is removed)"),
              (status = 429, description = "Too many packs")))]
pub(crate) async fn complete(
    State(state): State<AppState>,
    user: Caller<scope::Sharepacks>,
    PathId { id, .. }: PathId<SharePackId, NoSuchPack>,
) -> Result<Response, ApiError> {
    let limits = &state.settings.sharepacks;
    let pack = packs::complete(
        &state.ports,
        limits,
        user.user_id(),
        &id,
        &std::env::temp_dir(),
    )
    .await?;
    Ok(ok(pack))
}

/// The caller's packs, newest first.
#[utoipa::path(get, path = "/v1/sharepacks", operation_id = "listSharePacks", tag = "sharepacks", security(("bearer" = ["sharepacks"])), params(PageParams),
    responses((status = 200, description = "One page", body = SharePackListEnvelope),
              (status = 400, description = "Bad limit or cursor"), (status = 401, description = "No valid token")))]
pub(crate) async fn list(
    State(state): State<AppState>,
    user: Caller<scope::Sharepacks>,
    ApiQuery(page): ApiQuery<PageParams>,
) -> Result<Response, ApiError> {
    let (items, next_cursor) =
        packs::list(&state.ports, user.user_id(), page.limit()?, page.cursor()).await?;
    Ok(ok(Paged { items, next_cursor }))
}

/// A pack's metadata, with its owner's display name.
#[derive(Debug, Serialize, ToSchema)]
#[serde(rename_all = "camelCase")]
pub(crate) struct PackDetail {
    #[serde(flatten)]
    pack: SharePack,
    /// The owner's display name now.
    owner_display_name: String,
}

async fn visible(state: &AppState, id: &SharePackId) -> Result<(SharePack, UserId), ApiError> {
    packs::get(&state.ports, id)
        .await?
        .ok_or_else(pack_not_found)
}

fn pack_not_found() -> ApiError {
    ApiError::NotFound("share pack not found".into())
}

/// A malformed pack id names no pack: answered as an unknown one.
pub(crate) struct NoSuchPack;

impl<S> MalformedId<S> for NoSuchPack {
    fn answer(_: &Parts, _: &S) -> Response {
        pack_not_found().into_response()
    }
}

/// Any signed-in driver with the id may read a pack's metadata.
#[utoipa::path(get, path = "/v1/sharepacks/{id}", operation_id = "getSharePack", tag = "sharepacks", security(("bearer" = ["sharepacks"])),
    params(("id" = String, Path, description = "Pack id")),
    responses((status = 200, description = "The pack", body = PackDetailEnvelope),
              (status = 401, description = "No valid token"), (status = 404, description = "No such pack")))]
pub(crate) async fn metadata(
    State(state): State<AppState>,
    _user: Caller<scope::Sharepacks>,
    PathId { id, .. }: PathId<SharePackId, NoSuchPack>,
) -> Result<Response, ApiError> {
    let (pack, owner) = visible(&state, &id).await?;
    let owner_display_name = paddock_core::identity::users::get(&state.ports, &owner)
        .await?
        .map(|u| u.display_name)
        .unwrap_or_default();
    Ok(ok(PackDetail {
        pack,
        owner_display_name,
    }))
}

/// The file name of a download: the pack's name made safe for a header.
fn file_name(name: &str) -> String {
    let safe: String = name
        .chars()
        .map(|c| {
            if c.is_ascii_alphanumeric() || " ._-()".contains(c) {
                c
            } else {
                '_'
            }
        })
        .collect();
    format!("{}.zip", safe.trim())
}

/// The byte-identical ZIP, streamed (locally) or through a 5-minute presigned URL (AWS).
#[utoipa::path(get, path = "/v1/sharepacks/{id}/download", operation_id = "downloadSharePack", tag = "sharepacks", security(("bearer" = ["sharepacks"])),
    params(("id" = String, Path, description = "Pack id")),
    responses((status = 200, description = "The ZIP", content_type = "application/zip", body = inline(ZipBytes)),
              (status = 302, description = "AWS: the ZIP at a presigned S3 URL"),
              (status = 401, description = "No valid token"), (status = 404, description = "No such pack")))]
pub(crate) async fn download(
    State(state): State<AppState>,
    _user: Caller<scope::Sharepacks>,
    PathId { id, .. }: PathId<SharePackId, NoSuchPack>,
) -> Result<Response, ApiError> {
    let (pack, _) = visible(&state, &id).await?;
    let key = blob_key(&pack.id);
    let name = file_name(&pack.name);
    paddock_core::metrics::global().sharepack_downloads.inc();
    if let Some(url) = state
        .ports
        .blobs
        .presigned_get(&key, std::time::Duration::from_secs(300), Some(&name))
        .await?
    {
        let location = HeaderValue::from_str(&url).map_err(|e| ApiError::Internal(e.into()))?;
        return Ok((StatusCode::FOUND, [(header::LOCATION, location)]).into_response());
    }
    let stream = state
        .ports
        .blobs
        .get_stream(&key)
        .await?
        .ok_or_else(|| ApiError::Internal(anyhow::anyhow!("pack {id} has no object")))?;
    let disposition = HeaderValue::from_str(&format!("attachment; filename=\"{name}\""))
        .map_err(|e| ApiError::Internal(e.into()))?;
    let etag = HeaderValue::from_str(&format!("\"{}\"", pack.sha256))
        .map_err(|e| ApiError::Internal(e.into()))?;
    Ok((
        [
            (
                header::CONTENT_TYPE,
                HeaderValue::from_static("application/zip"),
            ),
            (header::CONTENT_DISPOSITION, disposition),
            (header::ETAG, etag),
            (header::CONTENT_LENGTH, HeaderValue::from(stream.length)),
        ],
        Body::from_stream(stream.body),
    )
        .into_response())
}

/// Deletes the caller's pack; anyone else (and an unknown id) gets 404.
#[utoipa::path(delete, path = "/v1/sharepacks/{id}", operation_id = "deleteSharePack", tag = "sharepacks", security(("bearer" = ["sharepacks"])),
    params(("id" = String, Path, description = "Pack id")),
    responses((status = 200, description = "Deleted", body = DeletedPackEnvelope),
              (status = 401, description = "No valid token"), (status = 404, description = "No such pack of the caller")))]
pub(crate) async fn delete(
    State(state): State<AppState>,
    user: Caller<scope::Sharepacks>,
    PathId { id, .. }: PathId<SharePackId, NoSuchPack>,
) -> Result<Response, ApiError> {
    packs::delete(&state.ports, user.user_id(), &id).await?;
    Ok(ok(DeletedPack { id, deleted: true }))
}

/// What `DELETE /v1/sharepacks/{id}` answers.
#[derive(Debug, Serialize, ToSchema)]
pub(crate) struct DeletedPack {
    /// The deleted pack's id.
    #[schema(value_type = String)]
    pub id: SharePackId,
    /// Always true: the pack is gone.
    pub deleted: bool,
}

envelope!(
    /// A share pack.
    SharePackEnvelope => SharePack
);

page_envelope!(
    /// One page of the caller's share packs.
    SharePackListEnvelope => SharePackList of SharePack
);

envelope!(
    /// A share pack's details.
    PackDetailEnvelope => PackDetail
);

envelope!(
    /// Where to upload a pack's bytes.
    UploadTicketEnvelope => paddock_core::sharepacks::packs::UploadTicket
);

envelope!(
    /// A share pack deleted.
    DeletedPackEnvelope => DeletedPack
);

#[cfg(test)]
mod tests {
    #[test]
    fn the_documented_label_patterns_are_the_display_name_rule() {
        let doc = serde_json::to_value(crate::routes::openapi::document()).unwrap();
        let names = paddock_core::identity::fields::display_name_pattern();
        let free = paddock_core::identity::fields::free_text_pattern();
        let start = &doc["components"]["schemas"]["UploadRequest"]["properties"];
        assert_eq!(start["name"]["pattern"].as_str(), Some(names.as_str()));
        assert_eq!(
            start["description"]["pattern"].as_str(),
            Some(free.as_str())
        );
        let params = doc["paths"]["/v1/sharepacks"]["post"]["parameters"]
            .as_array()
            .unwrap();
        let pattern = |name: &str| {
            params
                .iter()
                .find(|p| p["name"] == name)
                .and_then(|p| p["schema"]["pattern"].as_str())
                .map(str::to_owned)
        };
        assert_eq!(pattern("name"), Some(names));
        assert_eq!(pattern("description"), Some(free));
    }
}
