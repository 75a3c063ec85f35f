//! A pack sent in the request itself: its hash and ZIP checked off the request's thread,
//! stored and published, once for every request sent under its idempotency key.

use super::*;

/// How long after its start an attempt to publish a pack may still be at work: the longest a
/// function runs (29 s) with a margin. An attempt older than this was ended mid-way.
pub(super) const ATTEMPT_SECS: i64 = 60;

/// A pack sent in the request itself: checked, stored, published; with a `key`, once for
/// every request sent under it (the pack of the first, answered again, or its refusal).
pub async fn create_direct(
    ports: &Ports,
    limits: &SharepackSettings,
    owner: &UserId,
    labels: Labels,
    body: Bytes,
    key: Option<&RequestKey>,
) -> Result<SharePack, PackError> {
    let mut claimed = None;
    let result = async {
        let (id, created) = match key {
            Some(key) => {
                let (digest, _) = off_thread(body.clone(), sha256_hex).await?;
                let request = request_keys::digest(&[
                    labels.name.as_bytes(),
                    labels.description.as_bytes(),
                    digest.as_bytes(),
                ]);
                let new_id = || SharePackId::new().into_string();
                let claim =
                    request_keys::claim(ports, owner, Operation::SharePack, key, &request, new_id)
                        .await
                        .map_err(|e| match e {
                            KeyError::Reused => PackError::Mismatch(e.to_string()),
                            KeyError::Store(s) => PackError::Store(s),
                        })?;
                if let Some(refusal) = claim.refused {
                    // Answered from the key, without checking the pack again; still an
                    // attempt, so a client looping on it meets the minute's limit.
                    count_upload(ports, owner, limits).await?;
                    return Err(PackError::Refused(refusal));
                }
                let id = claimed_id(&claim)?;
                if claim.repeat
                    && let Some(pack) = earlier_attempt(ports, owner, &id, claim.at).await?
                {
                    return Ok(pack);
                }
                claimed = Some((key, request));
                (id, claim.at)
            }
            None => (SharePackId::new(), ports.clock.now()),
        };
        count_upload(ports, owner, limits).await?;
        let size = body.len() as u64;
        check_quota(ports, owner, size, limits).await?;
        let check_limits = zip_limits(limits);
        let (summary, bytes) = off_thread(body, move |b| {
            zip_check::check(std::io::Cursor::new(b), &check_limits)
        })
        .await?;
        let summary = summary?;
        let now = ports.clock.now();
        let pack = SharePack {
            id,
            name: labels.name,
            description: labels.description,
            size_bytes: size,
            sha256: sha256_hex(&bytes),
            entry_count: summary.entries,
            created_at: rfc3339(created),
        };
        // No URL takes bytes for this pack: it is being checked from the start.
        let begun = begin(
            ports,
            owner,
            &pack,
            State::Checking,
            now.unix_timestamp() + PENDING_GRACE_SECS,
        )
        .await;
        match begun {
            // Another request under the same key began it first.
            Err(StoreError::ConditionFailed { .. }) if key.is_some() => {
                return Err(PackError::Busy);
            }
            other => other?,
        }
        let stored = ports
            .blobs
            .put(&blob_key(&pack.id), bytes, "application/zip")
            .await;
        if let Err(e) = stored {
            abandon(ports, &pack.id).await;
            return Err(e.into());
        }
        if let Err(e) = publish(ports, owner, &pack, limits).await {
            abandon(ports, &pack.id).await;
            return Err(e);
        }
        Ok(pack)
    }
    .await;
    match &result {
        Ok(pack) => {
            outcome("ok", "direct");
            paddock_platform::metrics::global()
                .sharepack_bytes
                .inc_by(pack.size_bytes);
        }
        Err(e) => {
            outcome("refused", reason_of(e));
            // Kept with the key, so that a repeat is refused without checking the pack again.
            // Not kept (the store failing), a repeat checks it again, and is counted.
            if let (Some((key, request)), Some(refusal)) = (claimed, lasting_refusal(e))
                && let Err(kept) = request_keys::refuse(
                    ports,
                    owner,
                    Operation::SharePack,
                    key,
                    &request,
                    &refusal,
                )
                .await
            {
                tracing::warn!(error = %kept, "could not keep a refused pack's answer with its key");
            }
        }
    }
    result
}

/// Runs `work` over `body` on a blocking thread (a digest or a ZIP check of megabytes would
/// hold up the other requests of the instance); answers its result and the body.
pub(super) async fn off_thread<T: Send + 'static>(
    body: Bytes,
    work: impl FnOnce(&[u8]) -> T + Send + 'static,
) -> Result<(T, Bytes), PackError> {
    tokio::task::spawn_blocking(move || (work(&body[..]), body))
        .await
        .map_err(|e| PackError::Io(std::io::Error::other(e.to_string())))
}

/// The pack id a key's claim names: minted by [`create_direct`] as a [`SharePackId`], so a
/// key record holding anything else did not come from this code and reads as corrupt.
fn claimed_id(claim: &Claim) -> Result<SharePackId, StoreError> {
    claim.id.parse().map_err(|e: MalformedId| {
        StoreError::Unavailable(format!("corrupt idempotency key: resourceId: {e}"))
    })
}

/// What an earlier request under the same key, first received `at`, left for pack `id`: its
/// published pack, or nothing to build on (never begun, refused, or ended mid-way and now
/// cleared, so this request starts over under the same id). An attempt that may still be at
/// work is `Busy`.
pub(super) async fn earlier_attempt(
    ports: &Ports,
    owner: &UserId,
    id: &SharePackId,
    at: time::OffsetDateTime,
) -> Result<Option<SharePack>, PackError> {
    let Some(found) = record(ports, id).await? else {
        return Ok(None);
    };
    if &found.owner_id != owner {
        return Err(PackError::NotFound);
    }
    match found.state {
        State::Ready => Ok(Some(found.pack)),
        State::Deleting => Err(PackError::NotFound),
        State::Pending | State::Checking => {
            if ports.clock.unix() < at.unix_timestamp() + ATTEMPT_SECS {
                return Err(PackError::Busy);
            }
            abandon(ports, id).await;
            Ok(None)
        }
    }
}
