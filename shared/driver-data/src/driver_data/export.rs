//! The export of everything the service holds about a driver: one JSON document (format 1),
//! written kind by kind from the registry, page by page, into a stream, so a driver with
//! thousands of sessions never makes the server hold the whole document.
//!
//! The document: `{"format": 1, "exportedAt", "userId", "profile": {...}, "<kind>": [...],
//! ..., "complete": true}`, one array per exported kind of [`DriverData::ALL`] in that order.
//! A document without `"complete": true` at its end was cut short (the server failed while
//! writing it; the failure is logged).

use serde::Serialize;
use serde_json::{Value, json};
use tokio::io::{AsyncWrite, AsyncWriteExt};

use super::{Driver, DriverData, Pages, USAGE_SCOPES, sk_after};
use paddock_boards::leaderboards::board::{BoardScope, StoredRow};
use paddock_boards::leaderboards::renames::boards_of;
use paddock_driving::sessions::records::{CLIENT_PREFIX, SESSION_PREFIX, StoredSession, partition};
use paddock_identity::identity::users::{self, LINK_INDEX_PREFIX, StoredProfile};
use paddock_kernel::ids::{JobId, SessionId, TrackId};
use paddock_kernel::ports::Ports;
use paddock_kernel::ports::items::{Item, PK, Query, SK, StoreError, TTL};
use paddock_kernel::tables::Table;

/// The version of the export's layout.
pub const FORMAT: u32 = 1;
/// Items read per page.
const PAGE: usize = 50;

/// Why an export stopped.
#[derive(Debug, thiserror::Error)]
pub enum ExportError {
    /// The item store failed.
    #[error(transparent)]
    Store(#[from] StoreError),
    /// The blob store failed.
    #[error(transparent)]
    Blob(#[from] paddock_kernel::ports::blobs::BlobError),
    /// The reader went away (or the stream failed).
    #[error("writing the export: {0}")]
    Write(#[from] std::io::Error),
}

/// What one export wrote: items per kind.
pub type Counts = Vec<(&'static str, u64)>;

/// A session's references, gathered while its session is written, for the kinds found
/// through sessions.
struct SessionRef {
    id: SessionId,
    track: TrackId,
    job: Option<JobId>,
}

/// Writes the export of `driver` (whose stored profile is `profile`) into `out`.
pub async fn write<W: AsyncWrite + Unpin + Send>(
    ports: &Ports,
    driver: &Driver,
    profile: &StoredProfile,
    out: &mut W,
) -> Result<Counts, ExportError> {
    let head = json!({
        "format": FORMAT,
        "exportedAt": paddock_kernel::ports::clock::rfc3339(ports.clock.now()),
        "userId": driver.id,
    });
    let head = serde_json::to_string(&head).expect("the head serialises");
    out.write_all(head.trim_end_matches('}').as_bytes()).await?;
    let mut counts = Vec::new();
    let mut sessions = Vec::new();
    for kind in DriverData::ALL {
        if kind == DriverData::Profile {
            let mut shown = serde_json::to_value(&profile.user).expect("a profile serialises");
            shown["version"] = profile.version.into();
            out.write_all(format!(",\"profile\":{shown}").as_bytes())
                .await?;
            counts.push((kind.name(), 1));
            continue;
        }
        if !exported(kind) {
            continue;
        }
        out.write_all(format!(",\"{}\":[", kind.name()).as_bytes())
            .await?;
        let mut array = JsonArray { out, count: 0 };
        write_kind(kind, ports, driver, &mut sessions, &mut array).await?;
        let count = array.count;
        out.write_all(b"]").await?;
        counts.push((kind.name(), count));
    }
    out.write_all(b",\"complete\":true}").await?;
    out.flush().await?;
    Ok(counts)
}

/// Whether the export holds `kind`: credentials (token hashes, codes) and transient queue
/// traffic are left out; share-pack ZIPs are downloaded from their own endpoint; earlier
/// exports are copies of this document.
pub fn exported(kind: DriverData) -> bool {
    match kind {
        DriverData::RefreshTokens
        | DriverData::ExchangeCodes
        | DriverData::SharePackObjects
        | DriverData::PendingEvents
        | DriverData::Exports => false,
        DriverData::Profile
        | DriverData::EmailSignIn
        | DriverData::ProviderLinks
        | DriverData::SignIns
        | DriverData::AccessTokens
        | DriverData::Sessions
        | DriverData::UploadRecords
        | DriverData::TrackJobs
        | DriverData::TrackPoints
        | DriverData::LeaderboardEntries
        | DriverData::LapHistory
        | DriverData::Feed
        | DriverData::Achievements
        | DriverData::SharePacks
        | DriverData::CoachingAnswers
        | DriverData::Leagues
        | DriverData::UsageCounters
        | DriverData::SignInAddresses
        | DriverData::RequestKeys
        | DriverData::Webhooks
        | DriverData::Apps
        | DriverData::AppGrants => true,
    }
}

/// A JSON array being written: elements separated by commas.
struct JsonArray<'a, W> {
    out: &'a mut W,
    count: u64,
}

impl<W: AsyncWrite + Unpin + Send> JsonArray<'_, W> {
    async fn push(&mut self, value: &impl Serialize) -> Result<(), ExportError> {
        let mut bytes = Vec::with_capacity(256);
        if self.count > 0 {
            bytes.push(b',');
        }
        serde_json::to_writer(&mut bytes, value).map_err(std::io::Error::from)?;
        self.out.write_all(&bytes).await?;
        self.count += 1;
        Ok(())
    }
}

/// The stored attributes a driver may see: the key parts that carry meaning stay (`sk` as
/// `key`), the partition and the expiry go, and secrets never leave.
fn shown(mut item: Item) -> Value {
    item.remove(PK);
    item.remove(TTL);
    for secret in ["passwordHash", "codeChallenge", "currentToken", "previous"] {
        item.remove(secret);
    }
    if let Some(sk) = item.remove(SK) {
        item.insert("key".into(), sk);
    }
    Value::Object(item)
}

async fn write_kind<W: AsyncWrite + Unpin + Send>(
    kind: DriverData,
    ports: &Ports,
    driver: &Driver,
    sessions: &mut Vec<SessionRef>,
    array: &mut JsonArray<'_, W>,
) -> Result<(), ExportError> {
    let user = &driver.id;
    let user_pk = format!("USER#{user}");
    match kind {
        // Written as the document's `profile` object; credentials are not exported.
        DriverData::Profile
        | DriverData::RefreshTokens
        | DriverData::ExchangeCodes
        | DriverData::SharePackObjects
        | DriverData::PendingEvents
        | DriverData::Exports => {}
        DriverData::EmailSignIn => {
            if let Some(email) = &driver.email
                && let Some(claim) = users::find_by_email(ports, email).await?
                && &claim.user_id == user
            {
                let method = json!({
                    "method": "email",
                    "email": email,
                    "verified": claim.is_verified(),
                    "hasPassword": claim.password_hash.is_some(),
                });
                array.push(&method).await?;
            }
        }
        DriverData::ProviderLinks => {
            let rows = Pages::new(Table::Users, user_pk, Some(LINK_INDEX_PREFIX))
                .all(ports)
                .await?;
            for row in rows {
                let link = json!({
                    "method": "provider",
                    "provider": row.get("provider"),
                    "subject": row.get("subject"),
                });
                array.push(&link).await?;
            }
        }
        DriverData::SignIns => {
            let prefix = paddock_identity::identity::refresh_tokens::FAMILY_INDEX_PREFIX;
            for row in Pages::new(Table::Tokens, user_pk, Some(prefix))
                .all(ports)
                .await?
            {
                let Some(id) = sk_after(&row, prefix) else {
                    continue;
                };
                let key = paddock_identity::identity::refresh_tokens::family_key(&id);
                // An app's grant is a family too; it is exported with the grants.
                let family = ports.items.get(Table::Tokens, &key).await?;
                if let Some(family) = family.filter(|f| f.get("clientId").is_none()) {
                    let expires = family.get(TTL).and_then(Value::as_i64);
                    let sign_in = json!({
                        "id": id,
                        "revoked": family.get("revoked"),
                        "expiresAt": expires.and_then(|t| time::OffsetDateTime::from_unix_timestamp(t).ok())
                            .map(paddock_kernel::ports::clock::rfc3339),
                    });
                    array.push(&sign_in).await?;
                }
            }
        }
        DriverData::AccessTokens => {
            for token in paddock_identity::identity::personal_tokens::exported(ports, user).await? {
                array.push(&token).await?;
            }
        }
        DriverData::Sessions => {
            let mut cursor = None;
            loop {
                let page = ports
                    .items
                    .query(
                        Query::partition(Table::Sessions, partition(user))
                            .begins_with(SESSION_PREFIX)
                            .limit(PAGE)
                            .after(cursor),
                    )
                    .await?;
                for item in page.items {
                    let job = item
                        .get("trackJobId")
                        .and_then(Value::as_str)
                        .and_then(|id| id.parse::<JobId>().ok());
                    let session = StoredSession::from_item(item)?;
                    sessions.push(SessionRef {
                        id: session.summary.id.clone(),
                        track: session.summary.track_id.clone(),
                        job,
                    });
                    array.push(&session.detail()).await?;
                }
                match page.next_cursor {
                    Some(next) => cursor = Some(next),
                    None => break,
                }
            }
        }
        DriverData::RequestKeys => {
            let keys = paddock_kernel::request_keys::partition(user);
            push_partition(ports, array, Table::Limits, keys, None).await?;
        }
        DriverData::UploadRecords => {
            push_partition(
                ports,
                array,
                Table::Sessions,
                partition(user),
                Some(CLIENT_PREFIX),
            )
            .await?;
        }
        DriverData::TrackJobs => {
            for session in sessions.iter() {
                let Some(job) = &session.job else { continue };
                if let Some(status) = paddock_driving::tracks::jobs::status(ports, job).await? {
                    let value = json!({
                        "jobId": job, "sessionId": session.id, "trackId": session.track,
                        "status": status.status, "attempts": status.attempts, "reason": status.reason,
                    });
                    array.push(&value).await?;
                }
            }
        }
        DriverData::TrackPoints => {
            for session in sessions.iter().filter(|s| s.job.is_some()) {
                let key = paddock_driving::tracks::maps::points_key(&session.track, &session.id);
                if let Some(bytes) = ports.blobs.get(&key).await? {
                    let points: Value = serde_json::from_slice(&bytes).unwrap_or(Value::Null);
                    let value = json!({
                        "sessionId": session.id, "trackId": session.track, "points": points,
                    });
                    array.push(&value).await?;
                }
            }
        }
        DriverData::LeaderboardEntries => {
            for board in boards_of(ports, user).await? {
                let key = board.entry_key(user);
                if let Some(item) = ports.items.get(Table::Leaderboards, &key).await? {
                    let row = StoredRow::from_item(item)?;
                    let mut value = serde_json::to_value(&row.row).expect("a row serialises");
                    value["trackId"] = json!(board.track);
                    value["board"] = json!(match &board.scope {
                        BoardScope::Track => "track",
                        BoardScope::Car(_) => "car",
                        BoardScope::Event(_) => "event",
                    });
                    if let BoardScope::Event(event) = &board.scope {
                        value["eventId"] = json!(event);
                    }
                    array.push(&value).await?;
                }
            }
        }
        DriverData::LapHistory => {
            push_partition(
                ports,
                array,
                Table::Leaderboards,
                format!("USER#{user}"),
                Some(paddock_boards::leaderboards::lap_history::LAP_HISTORY_PREFIX),
            )
            .await?;
        }
        DriverData::Feed => {
            push_partition(ports, array, Table::Activity, format!("FEED#{user}"), None).await?;
        }
        DriverData::Achievements => {
            push_partition(ports, array, Table::Activity, format!("ACH#{user}"), None).await?;
        }
        DriverData::SharePacks => {
            for pk in [format!("OWNER#{user}"), format!("USAGE#{user}")] {
                push_partition(ports, array, Table::Sharepacks, pk, None).await?;
            }
        }
        DriverData::CoachingAnswers => {
            push_partition(ports, array, Table::Coaching, format!("AI#{user}"), None).await?;
        }
        DriverData::Leagues => {
            let mine = paddock_competitions::leagues::list(ports, user)
                .await
                .map_err(crate::driver_data::league_store_error)?;
            for league in mine {
                array.push(&league).await?;
            }
        }
        DriverData::Webhooks => {
            for subscription in
                paddock_social::webhooks::subscriptions::exported(ports, user).await?
            {
                array.push(&subscription).await?;
            }
        }
        DriverData::Apps => {
            for app in paddock_authorization::apps::exported(ports, user).await? {
                array.push(&app).await?;
            }
        }
        DriverData::AppGrants => {
            for grant in paddock_authorization::grants::exported(ports, user).await? {
                array.push(&grant).await?;
            }
        }
        DriverData::UsageCounters => {
            for scope in USAGE_SCOPES {
                let mut pages = Pages::new(Table::Limits, format!("RL#{scope}#{user}"), None);
                while let Some(items) = pages.next(ports).await? {
                    for item in items {
                        let mut value = shown(item);
                        value["scope"] = scope.into();
                        array.push(&value).await?;
                    }
                }
            }
        }
        DriverData::SignInAddresses => {
            if let Some(account) = &driver.account {
                let mut pages = Pages::new(Table::Limits, format!("KNOWN#{account}"), None);
                while let Some(items) = pages.next(ports).await? {
                    for item in items {
                        array.push(&json!({ "address": item.get(SK) })).await?;
                    }
                }
            }
        }
    }
    Ok(())
}

/// Pushes every item of a partition (part) as the driver may see it.
async fn push_partition<W: AsyncWrite + Unpin + Send>(
    ports: &Ports,
    array: &mut JsonArray<'_, W>,
    table: Table,
    pk: String,
    prefix: Option<&str>,
) -> Result<(), ExportError> {
    let mut pages = Pages::new(table, pk, prefix);
    while let Some(items) = pages.next(ports).await? {
        for item in items {
            array.push(&shown(item)).await?;
        }
    }
    Ok(())
}
