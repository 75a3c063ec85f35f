//! A pack through an upload URL: a ticket for the declared size and hash, the bytes PUT to the
//! URL (S3's presigned one, or the local server's signed one), then `complete`, which checks
//! what arrived and publishes it.

use super::*;

/// A pack to come through an upload URL.
#[derive(Debug, Clone, Serialize, ToSchema)]
#[serde(rename_all = "camelCase")]
pub struct UploadTicket {
    /// The pack's id (pass it to `complete`).
    #[schema(value_type = String)]
    pub id: SharePackId,
    /// PUT exactly the declared bytes here (`Content-Type: application/zip`).
    pub upload_url: String,
    /// When the URL stops working (RFC 3339).
    pub expires_at: String,
}

/// The declared size and digest of a pack to upload.
#[derive(Debug, Clone)]
pub struct Declared {
    /// Bytes to come.
    pub size_bytes: u64,
    /// Their SHA-256, lowercase hex.
    pub sha256: String,
}

impl Declared {
    /// `sizeBytes` 1 to the configured maximum; `sha256` 64 hex digits.
    pub fn parse(
        p: &mut Problems,
        size: Option<i64>,
        sha256: Option<String>,
        limits: &SharepackSettings,
    ) -> Option<Self> {
        let max = limits.max_bytes;
        let size = p.required("sizeBytes", size, |n| match u64::try_from(n) {
            Ok(n) if (1..=max).contains(&n) => Ok(n),
            _ => Err(format!("must be a whole number of bytes from 1 to {max}")),
        });
        let sha256 = p.required("sha256", sha256, |h| {
            let h = h.trim().to_ascii_lowercase();
            if h.len() == 64 && h.bytes().all(|b| b.is_ascii_hexdigit()) {
                Ok(h)
            } else {
                Err("must be 64 hexadecimal digits".into())
            }
        });
        Some(Self {
            size_bytes: size?,
            sha256: sha256?,
        })
    }
}

/// Starts an upload: a pending pack and a URL to PUT its bytes to. `local_url` makes the URL
/// when the blob store has none of its own.
pub async fn start_upload(
    ports: &Ports,
    limits: &SharepackSettings,
    owner: &UserId,
    labels: Labels,
    declared: Declared,
    local_url: impl FnOnce(&SharePackId, i64, u64) -> Option<String>,
) -> Result<UploadTicket, PackError> {
    count_upload(ports, owner, limits).await?;
    check_quota(ports, owner, declared.size_bytes, limits).await?;
    let now = ports.clock.now();
    let expires = now.unix_timestamp() + UPLOAD_URL_SECS;
    let pack = SharePack {
        id: SharePackId::new(),
        name: labels.name,
        description: labels.description,
        size_bytes: declared.size_bytes,
        sha256: declared.sha256,
        entry_count: 0,
        created_at: rfc3339(now),
    };
    begin(
        ports,
        owner,
        &pack,
        State::Pending,
        expires + PENDING_GRACE_SECS,
    )
    .await?;
    let ttl = Duration::from_secs(UPLOAD_URL_SECS as u64);
    let url = match ports
        .blobs
        .presigned_put(&upload_key(&pack.id), ttl, pack.size_bytes)
        .await?
    {
        Some(url) => url,
        None => local_url(&pack.id, expires, pack.size_bytes).ok_or_else(|| {
            BlobError::Unavailable(
                "the blob store has no upload URLs and no upload URL key is configured".into(),
            )
        })?,
    };
    Ok(UploadTicket {
        id: pack.id,
        upload_url: url,
        expires_at: rfc3339(time::OffsetDateTime::from_unix_timestamp(expires).unwrap_or(now)),
    })
}

/// Whether pack `id`'s upload URL may still take bytes.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Upload {
    /// Pending: the URL takes its bytes.
    Open,
    /// Being checked, or published: the URL takes nothing more.
    Closed,
    /// No such pack (or it was removed).
    Unknown,
}

/// Whether pack `id`'s upload URL may still take bytes (the local upload URL asks before and
/// after it receives them).
pub async fn upload_state(ports: &Ports, id: &SharePackId) -> Result<Upload, StoreError> {
    Ok(match record(ports, id).await?.map(|r| r.state) {
        Some(State::Pending) => Upload::Open,
        Some(State::Checking | State::Ready) => Upload::Closed,
        Some(State::Deleting) | None => Upload::Unknown,
    })
}

/// The pending pack `id`, with its owner.
pub async fn pending(
    ports: &Ports,
    id: &SharePackId,
) -> Result<Option<(SharePack, UserId)>, StoreError> {
    Ok(record(ports, id)
        .await?
        .filter(|r| r.state == State::Pending)
        .map(|r| (r.pack, r.owner_id)))
}

pub(super) async fn record(
    ports: &Ports,
    id: &SharePackId,
) -> Result<Option<PackRecord>, StoreError> {
    match ports.items.get(Table::Sharepacks, &meta_key(id)).await? {
        Some(item) => decode(item, "share pack").map(Some),
        None => Ok(None),
    }
}

/// Closes pending pack `id`'s upload (`pending` to `checking`, on condition: one `complete`
/// at a time, and the upload URL takes nothing more), takes what arrived out of reach of later
/// uploads into a private staging directory under `staging`, checks it (size, digest, ZIP)
/// and publishes those very bytes; or removes the pack and says why.
pub async fn complete(
    ports: &Ports,
    limits: &SharepackSettings,
    owner: &UserId,
    id: &SharePackId,
    staging: &Path,
) -> Result<SharePack, PackError> {
    let Some(found) = record(ports, id).await? else {
        return Err(PackError::NotFound);
    };
    if &found.owner_id != owner {
        return Err(PackError::NotFound);
    }
    match found.state {
        State::Pending => {}
        State::Checking => return Err(PackError::Busy),
        State::Ready | State::Deleting => return Err(PackError::NotFound),
    }
    let closed = ports
        .items
        .update(
            Table::Sharepacks,
            &meta_key(id),
            Update::set("state", "checking"),
            Some(Condition::And(vec![
                Condition::eq("ownerId", owner.as_str()),
                Condition::eq("state", "pending"),
            ])),
        )
        .await;
    match closed {
        Ok(_) => {}
        Err(StoreError::ConditionFailed { .. }) => return Err(PackError::Busy),
        Err(e) => return Err(e.into()),
    }
    let mut pack = found.pack;
    let result = async {
        // A fresh directory at an unguessable name that only this process's user may enter
        // (created with mode 0700, never looser for a moment), removed when dropped.
        let mut builder = tempfile::Builder::new();
        builder.prefix("paddock-pack-");
        #[cfg(unix)]
        builder.permissions(std::os::unix::fs::PermissionsExt::from_mode(0o700));
        let dir = builder.tempdir_in(staging)?;
        let file = dir.path().join("pack.zip");
        let Some(taken) = ports
            .blobs
            .take_to_file(&upload_key(id), &held_key(id), &file)
            .await?
        else {
            return Err(PackError::Mismatch(
                "nothing was uploaded to the upload URL".into(),
            ));
        };
        if taken.length != pack.size_bytes {
            return Err(PackError::Mismatch(format!(
                "{} bytes arrived; {} were declared",
                taken.length, pack.size_bytes
            )));
        }
        let check_limits = zip_limits(limits);
        let path = file.clone();
        let (digest, summary) = tokio::task::spawn_blocking(move || -> std::io::Result<_> {
            let mut f = std::fs::File::open(&path)?;
            let mut hasher = Sha256::new();
            std::io::copy(&mut f, &mut hasher)?;
            let summary = zip_check::check(f, &check_limits);
            Ok((paddock_kernel::hashing::hex(&hasher.finalize()), summary))
        })
        .await
        .map_err(|e| std::io::Error::other(e.to_string()))??;
        if digest != pack.sha256 {
            return Err(PackError::Mismatch(
                "sha256 does not match what arrived".into(),
            ));
        }
        pack.entry_count = summary?.entries;
        if !ports
            .blobs
            .publish_taken(&taken, &file, &blob_key(id))
            .await?
        {
            return Err(PackError::Mismatch(
                "what arrived changed while it was checked".into(),
            ));
        }
        publish(ports, owner, &pack, limits).await?;
        Ok(pack)
    }
    .await;
    match &result {
        Ok(pack) => {
            outcome("ok", "upload_url");
            paddock_platform::metrics::global()
                .sharepack_bytes
                .inc_by(pack.size_bytes);
        }
        Err(e) => {
            outcome("refused", reason_of(e));
            // The upload is closed and what arrived was taken: whatever went wrong, the pack
            // cannot be completed again. Cut short here, the sweep removes it at its expiry.
            abandon(ports, id).await;
        }
    }
    result
}
