//! The life of a pack: checked upload (direct, or through an upload URL and `complete`),
//! reads by id, the owner's list, and the owner's delete. Nothing becomes visible before its
//! bytes passed the ZIP checks; quotas are kept in the same transaction that publishes.

use bytes::Bytes;
use serde::{Deserialize, Serialize};
use sha2::{Digest, Sha256};
use std::path::Path;
use std::time::Duration;
use utoipa::ToSchema;
use zip_check::ZipProblem;

use super::{blob_key, held_key, object_keys, upload_key, zip_limits};
use hidden_characters::shown_text;
use paddock_config::config::SharepackSettings;
use paddock_kernel::ids::{MalformedId, SharePackId, UserId};
use paddock_kernel::ports::clock::rfc3339;
use paddock_kernel::ports::items::{
    Condition, Key, Query, StoreError, TTL, TxOp, Update, decode, item,
};
use paddock_kernel::ports::{BlobError, Ports};
use paddock_kernel::problems::{FieldProblems, Problems};
use paddock_kernel::rate_limits::{self, Limit, LimitError};
use paddock_kernel::request_keys::{
    self, Claim, KeyError, Operation, Refusal, RefusalKind, RequestKey,
};
use paddock_kernel::tables::Table;

mod by_url;
mod direct;
pub use by_url::*;
pub use direct::*;

/// How long an upload URL is valid.
pub const UPLOAD_URL_SECS: i64 = 15 * 60;
/// How long a pending pack is kept after its URL expired (then swept with its object).
const PENDING_GRACE_SECS: i64 = 3600;

/// A pack's metadata, as every reader sees it.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize, ToSchema)]
#[serde(rename_all = "camelCase")]
pub struct SharePack {
    /// The pack's id (whoever has it may read and download the pack).
    #[schema(value_type = String)]
    pub id: SharePackId,
    /// Its name (the download's file name).
    pub name: String,
    /// What it holds.
    pub description: String,
    /// The ZIP's size.
    pub size_bytes: u64,
    /// SHA-256 of the ZIP, lowercase hex (also the download's `ETag`).
    pub sha256: String,
    /// Entries in the ZIP.
    pub entry_count: usize,
    /// RFC 3339.
    pub created_at: String,
}

/// Whether a pack is visible yet.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "lowercase")]
enum State {
    /// Waiting for its bytes at its upload URL.
    Pending,
    /// Its bytes are being checked: its upload URL takes nothing more, and only the check that
    /// set this state may publish it.
    Checking,
    Ready,
    /// Being deleted: hidden, and expiring, so a delete cut short is finished by the sweep.
    Deleting,
}

/// The stored metadata item.
#[derive(Debug, Clone, Serialize, Deserialize)]
#[serde(rename_all = "camelCase")]
struct PackRecord {
    #[serde(flatten)]
    pack: SharePack,
    owner_id: UserId,
    state: State,
}

fn meta_key(id: &SharePackId) -> Key {
    Key::new(format!("PACK#{id}"), "META")
}

fn owner_key(owner: &UserId, pack: &SharePack) -> Key {
    Key::new(
        format!("OWNER#{owner}"),
        format!("{}#{}", pack.created_at, pack.id),
    )
}

fn usage_key(owner: &UserId) -> Key {
    Key::new(format!("USAGE#{owner}"), "USAGE")
}

/// Why a pack operation failed.
#[derive(Debug, thiserror::Error)]
pub enum PackError {
    /// A field breaks a rule.
    #[error(transparent)]
    Invalid(#[from] FieldProblems),
    /// The bytes are not an acceptable ZIP.
    #[error("{0}")]
    Zip(#[from] ZipProblem),
    /// Too large for this way in.
    #[error("{0}")]
    TooLarge(String),
    /// What arrived is not what was declared.
    #[error("{0}")]
    Mismatch(String),
    /// A quota or the upload rate is spent.
    #[error(transparent)]
    Limited(#[from] LimitError),
    /// The driver holds as many packs as allowed.
    #[error("you already hold {0} share packs; delete one first")]
    TooManyPacks(u32),
    /// No such pack (or not the caller's).
    #[error("share pack not found")]
    NotFound,
    /// The pack is already being completed.
    #[error("the share pack is already being checked; wait for that answer")]
    Busy,
    /// A repeat under an `Idempotency-Key` whose first request was refused: that refusal.
    #[error("{0}")]
    Refused(Refusal),
    /// The item store failed.
    #[error(transparent)]
    Store(#[from] StoreError),
    /// The blob store failed.
    #[error(transparent)]
    Blob(#[from] BlobError),
    /// Local file work failed.
    #[error("staging the pack failed: {0}")]
    Io(#[from] std::io::Error),
}

/// A name and description, checked.
#[derive(Debug, Clone)]
pub struct Labels {
    name: String,
    description: String,
}

impl Labels {
    /// `name` 1 to 100 characters, `description` at most 1,000; trimmed, no control, invisible
    /// or text-direction characters (the display-name rule).
    pub fn parse(
        p: &mut Problems,
        name: Option<String>,
        description: Option<String>,
    ) -> Option<Self> {
        let name = p.required("name", name, |n| shown_text(&n, 1, 100));
        let description = p.check(
            "description",
            shown_text(description.as_deref().unwrap_or_default(), 0, 1000),
        );
        Some(Self {
            name: name?,
            description: description?,
        })
    }
}

fn sha256_hex(bytes: &[u8]) -> String {
    paddock_kernel::hashing::hex(&Sha256::digest(bytes))
}

/// Counts one upload attempt of `owner` against `Sharepacks__UploadsPerMinute`. Every
/// attempt counts, whatever its answer: a refused pack cost a check too, and a client sending
/// a refused request again and again meets 429. Only a repeat answered with the pack its key
/// already made is not counted again.
async fn count_upload(
    ports: &Ports,
    owner: &UserId,
    limits: &SharepackSettings,
) -> Result<(), PackError> {
    let limit = [Limit::new("n", limits.uploads_per_minute)];
    rate_limits::hit(ports, "sharepack-upload", owner.as_str(), 60, &limit).await?;
    Ok(())
}

/// Counts an upload attempt that the API refused before it reached a use case (a body too
/// large, a bad name, a form without a file): attempts count whatever their answer. Answers
/// [`PackError::Limited`] when the minute's uploads are spent (the attempt is then answered
/// 429 rather than with its own refusal).
pub async fn count_refused_attempt(
    ports: &Ports,
    limits: &SharepackSettings,
    owner: &UserId,
) -> Result<(), PackError> {
    count_upload(ports, owner, limits).await
}

/// The refusal a keyed request leaves with its key: those that depend on the request alone
/// (its fields, its bytes), never those of the moment (a limit, a quota, a backend).
fn lasting_refusal(e: &PackError) -> Option<Refusal> {
    match e {
        PackError::Invalid(_) => Some(Refusal::new(RefusalKind::Invalid, e.to_string())),
        PackError::Zip(_) => Some(Refusal::new(RefusalKind::Unacceptable, e.to_string())),
        _ => None,
    }
}

/// Refuses early what the quotas would refuse at publication.
async fn check_quota(
    ports: &Ports,
    owner: &UserId,
    size: u64,
    limits: &SharepackSettings,
) -> Result<(), PackError> {
    let usage = ports
        .items
        .get(Table::Sharepacks, &usage_key(owner))
        .await?;
    let field = |name: &str| {
        usage
            .as_ref()
            .and_then(|u| u.get(name))
            .and_then(serde_json::Value::as_u64)
            .unwrap_or(0)
    };
    if field("packs") >= u64::from(limits.max_per_user) {
        return Err(PackError::TooManyPacks(limits.max_per_user));
    }
    if field("bytes") + size > limits.max_bytes_per_user {
        return Err(PackError::TooLarge(format!(
            "share packs of a driver may hold at most {} bytes in all; delete one first",
            limits.max_bytes_per_user
        )));
    }
    Ok(())
}

/// Writes the unpublished item (before any object exists), expiring at `expires`.
async fn begin(
    ports: &Ports,
    owner: &UserId,
    pack: &SharePack,
    state: State,
    expires: i64,
) -> Result<(), StoreError> {
    let record = PackRecord {
        pack: pack.clone(),
        owner_id: owner.clone(),
        state,
    };
    let mut attributes = serde_json::to_value(&record).expect("a pack serialises");
    attributes[TTL] = expires.into();
    ports
        .items
        .put(
            Table::Sharepacks,
            item(&meta_key(&pack.id), attributes),
            Some(Condition::NotExists),
        )
        .await
}

/// Makes a checked pack visible and counts it against the quotas, in one transaction; only
/// the check that moved the item to `checking` gets here.
async fn publish(
    ports: &Ports,
    owner: &UserId,
    pack: &SharePack,
    limits: &SharepackSettings,
) -> Result<(), PackError> {
    let record = PackRecord {
        pack: pack.clone(),
        owner_id: owner.clone(),
        state: State::Ready,
    };
    let room = i64::try_from(limits.max_bytes_per_user.saturating_sub(pack.size_bytes))
        .unwrap_or(i64::MAX);
    let ops = vec![
        TxOp::Put {
            table: Table::Sharepacks,
            item: item(
                &meta_key(&pack.id),
                serde_json::to_value(&record).expect("a pack serialises"),
            ),
            condition: Some(Condition::eq("state", "checking")),
        },
        TxOp::Put {
            table: Table::Sharepacks,
            item: item(
                &owner_key(owner, pack),
                serde_json::to_value(pack).expect("a pack serialises"),
            ),
            condition: None,
        },
        TxOp::Update {
            table: Table::Sharepacks,
            key: usage_key(owner),
            update: Update::default()
                .and_add("packs", 1)
                .and_add("bytes", i64::try_from(pack.size_bytes).unwrap_or(i64::MAX)),
            condition: Some(Condition::Or(vec![
                Condition::NotExists,
                Condition::And(vec![
                    Condition::Lt("packs".into(), i64::from(limits.max_per_user).into()),
                    Condition::Or(vec![
                        Condition::AttrNotExists("bytes".into()),
                        Condition::Lt("bytes".into(), (room + 1).into()),
                    ]),
                ]),
            ])),
        },
    ];
    match ports.items.transact(ops).await {
        Ok(()) => Ok(()),
        // Applied with its answer lost, then refused when sent again (no longer `checking`)
        // or not answered at all: a pack found ready is published, and its object must not
        // be removed as a refused pack's would be.
        Err(e) if e.is_condition_failed_at(0) || matches!(e, StoreError::Unavailable(_)) => {
            let stored = ports
                .items
                .get(Table::Sharepacks, &meta_key(&pack.id))
                .await;
            if let Ok(Some(stored)) = stored
                && stored.get("state").and_then(serde_json::Value::as_str) == Some("ready")
            {
                return Ok(());
            }
            match e {
                StoreError::ConditionFailed { .. } => Err(PackError::NotFound),
                e => Err(e.into()),
            }
        }
        Err(StoreError::ConditionFailed { .. }) => {
            Err(PackError::TooManyPacks(limits.max_per_user))
        }
        Err(e) => Err(e.into()),
    }
}

/// Removes a pack that will not be published: its objects and its unpublished item.
async fn abandon(ports: &Ports, id: &SharePackId) {
    for key in object_keys(id) {
        if let Err(e) = ports.blobs.delete(&key).await {
            tracing::warn!(error = %e, pack = %id, "could not remove a refused pack's object; the sweep will");
        }
    }
    let pending = Some(Condition::Or(vec![
        Condition::eq("state", "pending"),
        Condition::eq("state", "checking"),
    ]));
    if let Err(e) = ports
        .items
        .delete(Table::Sharepacks, &meta_key(id), pending)
        .await
    {
        tracing::debug!(error = %e, pack = %id, "the refused pack's item was already gone");
    }
}

fn outcome(result: &str, reason: &str) {
    paddock_platform::metrics::global()
        .sharepack_uploads
        .with_label_values(&[result, reason])
        .inc();
}

fn reason_of(e: &PackError) -> &'static str {
    match e {
        PackError::Invalid(_) => "invalid",
        PackError::Zip(z) => match z.innermost() {
            ZipProblem::NotAZip | ZipProblem::Malformed(_) => "not_a_zip",
            ZipProblem::TooManyEntries(..)
            | ZipProblem::TooManyEntriesInAll(..)
            | ZipProblem::DirectoryTooLarge(..) => "too_many_entries",
            ZipProblem::StrayData(_)
            | ZipProblem::Unaccounted { .. }
            | ZipProblem::Overlap { .. }
            | ZipProblem::HiddenInData(..) => "stray_data",
            ZipProblem::HeadersDisagree { .. } | ZipProblem::Descriptor(..) => "headers_disagree",
            ZipProblem::UnsafeName(..) | ZipProblem::SamePath(..) => "unsafe_name",
            ZipProblem::NotPlainFile(..) => "not_plain_file",
            ZipProblem::Nested(..)
            | ZipProblem::NestedTooDeep(_)
            | ZipProblem::NestedTooLarge(..) => "nested_archive",
            ZipProblem::Encrypted(_) => "encrypted",
            ZipProblem::Damaged(..) => "damaged",
            ZipProblem::TooLarge(_) | ZipProblem::Bomb(..) => "bomb",
        },
        PackError::TooLarge(_) => "too_large",
        PackError::Mismatch(_) => "mismatch",
        PackError::Limited(_) | PackError::TooManyPacks(_) => "quota",
        PackError::NotFound => "not_found",
        PackError::Busy => "busy",
        PackError::Refused(_) => "repeated_refusal",
        PackError::Store(_) | PackError::Blob(_) | PackError::Io(_) => "backend",
    }
}

/// A visible pack and its owner.
pub async fn get(
    ports: &Ports,
    id: &SharePackId,
) -> Result<Option<(SharePack, UserId)>, StoreError> {
    Ok(record(ports, id)
        .await?
        .filter(|r| r.state == State::Ready)
        .map(|r| (r.pack, r.owner_id)))
}

/// One page of `owner`'s packs, newest first.
pub async fn list(
    ports: &Ports,
    owner: &UserId,
    limit: usize,
    cursor: Option<String>,
) -> Result<(Vec<SharePack>, Option<String>), StoreError> {
    let page = ports
        .items
        .query(
            Query::partition(Table::Sharepacks, format!("OWNER#{owner}"))
                .descending()
                .limit(limit)
                .after(cursor),
        )
        .await?;
    let packs = page
        .items
        .into_iter()
        .map(|item| decode(item, "share pack"))
        .collect::<Result<Vec<SharePack>, _>>()?;
    Ok((packs, page.next_cursor))
}

/// Deletes `owner`'s pack `id`. One transaction (conditional on the owner and the pack being
/// ready, so anyone else, and a second concurrent delete, get `NotFound`) hides the pack behind
/// an expiring `deleting` state, drops it from the owner's list and gives back its quota; then
/// the object goes, then the item. A delete cut short in between leaves an expiring item that
/// the retention sweep removes with the object.
pub async fn delete(ports: &Ports, owner: &UserId, id: &SharePackId) -> Result<(), PackError> {
    let Some((pack, pack_owner)) = get(ports, id).await? else {
        return Err(PackError::NotFound);
    };
    if &pack_owner != owner {
        return Err(PackError::NotFound);
    }
    let expires = ports.clock.unix() + PENDING_GRACE_SECS;
    let ops = vec![
        TxOp::Update {
            table: Table::Sharepacks,
            key: meta_key(id),
            update: Update::set("state", "deleting").and_set(TTL, expires),
            condition: Some(Condition::And(vec![
                Condition::eq("ownerId", owner.as_str()),
                Condition::eq("state", "ready"),
            ])),
        },
        TxOp::Delete {
            table: Table::Sharepacks,
            key: owner_key(owner, &pack),
            condition: None,
        },
        TxOp::Update {
            table: Table::Sharepacks,
            key: usage_key(owner),
            update: Update::default()
                .and_add("packs", -1)
                .and_add("bytes", -i64::try_from(pack.size_bytes).unwrap_or(i64::MAX)),
            condition: None,
        },
    ];
    match ports.items.transact(ops).await {
        Ok(()) => {}
        Err(StoreError::ConditionFailed { .. } | StoreError::Conflict) => {
            return Err(PackError::NotFound);
        }
        Err(e) => return Err(e.into()),
    }
    for key in object_keys(id) {
        ports.blobs.delete(&key).await?;
    }
    ports
        .items
        .delete(Table::Sharepacks, &meta_key(id), None)
        .await?;
    Ok(())
}
