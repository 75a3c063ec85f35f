//! A driver's webhook subscriptions: made, listed, changed, tested and deleted by the driver;
//! each with a URL checked against [`super::address`], the event types it wants and a
//! signing secret shown once (rotatable, the previous one still signing for a grace period).

use serde::{Deserialize, Serialize};
use serde_json::{Value, json};
use time::OffsetDateTime;
use utoipa::ToSchema;

use super::address::{self, Policy, Refused, WebhookUrl};
use super::client::WebhookClient;
use super::signing;
use super::verification::{self, ReceiverChecks, Unconfirmed};
use super::{EVENT_TYPES, partition};
use paddock_identity::identity::capped_lists::{CappedList, ListVersion};
use paddock_kernel::events::{Event, EventKind, WebhookDisabled, WebhookTest};
use paddock_kernel::ids::{SubscriptionId, UserId};
use paddock_kernel::ports::Ports;
use paddock_kernel::ports::clock::rfc3339;
use paddock_kernel::ports::items::{Condition, Item, Key, Query, StoreError, TxOp, Update, item};
use paddock_kernel::rate_limits::{LimitError, RateLimited};
use paddock_kernel::retry::{is_conflict, retry_on_conflict};
use paddock_kernel::tables::Table;

mod fields;
mod standing;
pub use fields::*;
pub use standing::*;

/// Subscriptions a driver may hold.
pub const MAX_PER_DRIVER: usize = 10;
/// The longest description, in characters.
pub const MAX_DESCRIPTION_CHARS: usize = 100;
/// The longest grace period of a rotated secret, in hours.
pub const MAX_GRACE_HOURS: i64 = 72;
/// The grace period of a rotated secret when none is asked for, in hours.
pub const DEFAULT_GRACE_HOURS: i64 = 24;
/// Sort-key prefix of a subscription.
pub(crate) const SUB_PREFIX: &str = "SUB#";
/// Sort key of the marker that some live subscription wants `board.passed`.
pub(crate) const WANTS_PASSED_SK: &str = "WANTS#board.passed";

/// Why a subscription request was refused.
#[derive(Debug, thiserror::Error)]
pub enum SubscriptionError {
    /// The URL breaks a rule (the error names it).
    #[error(transparent)]
    Url(#[from] Refused),
    /// No event types asked for.
    #[error("eventTypes: must name at least one of {}", EVENT_TYPES.join(", "))]
    NoEventTypes,
    /// An event type that does not exist.
    #[error("eventTypes: {0:?} is not one of {types}", types = EVENT_TYPES.join(", "))]
    UnknownEventType(String),
    /// A bad description.
    #[error(
        "description: must be at most {MAX_DESCRIPTION_CHARS} characters without control or invisible characters"
    )]
    BadDescription,
    /// A grace period outside the bounds.
    #[error("graceHours: must be a whole number of hours from 0 to {MAX_GRACE_HOURS}")]
    BadGrace,
    /// The driver holds the most subscriptions already.
    #[error("a driver may hold at most {MAX_PER_DRIVER} webhook subscriptions; delete one first")]
    TooMany,
    /// No subscription of that id is the caller's.
    #[error("no webhook subscription of that id")]
    NotFound,
    /// The receiver did not confirm it wants the deliveries.
    #[error(transparent)]
    Unconfirmed(#[from] Unconfirmed),
    /// The driver had the service call receivers too often (verifications and tests).
    #[error(transparent)]
    TooManyChecks(RateLimited),
    /// The item store failed.
    #[error(transparent)]
    Store(#[from] StoreError),
}

/// A subscription as the driver sees it (never its secret).
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize, ToSchema)]
#[serde(rename_all = "camelCase")]
pub struct Subscription {
    /// The subscription's id.
    #[schema(value_type = String)]
    pub id: SubscriptionId,
    /// Where events are posted.
    pub url: String,
    /// The event types posted.
    pub event_types: Vec<String>,
    /// The driver's own note (empty when none).
    #[serde(default)]
    #[schema(required = true)]
    pub description: String,
    /// False when the driver paused it, or after it failed for days.
    pub enabled: bool,
    /// Why it was disabled by the service, if it was.
    #[serde(default)]
    #[schema(required = true)]
    pub disabled_reason: Option<String>,
    /// Since when every delivery has failed (null after a success).
    #[serde(default)]
    #[schema(required = true)]
    pub failing_since: Option<String>,
    /// RFC 3339.
    pub created_at: String,
    /// RFC 3339.
    pub updated_at: String,
    /// Until when the secret before the last rotation still signs (RFC 3339), if it does.
    #[serde(default)]
    #[schema(required = true)]
    pub previous_secret_expires_at: Option<String>,
}

/// A subscription as stored: what the driver sees and the secrets.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase")]
pub(crate) struct StoredSubscription {
    #[serde(flatten)]
    pub shown: Subscription,
    pub secret: String,
    #[serde(default)]
    pub previous_secret: Option<String>,
    /// Unix seconds until which `previous_secret` signs too.
    #[serde(default)]
    pub previous_secret_until: Option<i64>,
}

impl StoredSubscription {
    /// The secrets that sign a delivery at `now`: the current one, and the previous one
    /// during its grace period.
    pub(crate) fn signing_secrets(&self, now: i64) -> Vec<&str> {
        let mut secrets = vec![self.secret.as_str()];
        if let (Some(previous), Some(until)) = (&self.previous_secret, self.previous_secret_until)
            && now < until
        {
            secrets.push(previous);
        }
        secrets
    }

    pub(crate) fn wants(&self, event_type: &str) -> bool {
        self.shown.enabled && self.shown.event_types.iter().any(|t| t == event_type)
    }

    fn to_item(&self, user: &UserId) -> Item {
        item(
            &key(user, &self.shown.id),
            serde_json::to_value(self).expect("a subscription serialises"),
        )
    }

    fn from_item(row: Item) -> Result<Self, StoreError> {
        paddock_kernel::ports::items::decode(row, "webhook subscription")
    }
}

/// A subscription just made, with its secret shown this once.
#[derive(Debug, Clone, Serialize, ToSchema)]
#[serde(rename_all = "camelCase")]
pub struct CreatedSubscription {
    /// The subscription.
    #[serde(flatten)]
    pub subscription: Subscription,
    /// `whsec_...`: store it now; it is never shown again.
    pub secret: String,
}

/// A rotated secret, shown this once.
#[derive(Debug, Clone, Serialize, ToSchema)]
#[serde(rename_all = "camelCase")]
pub struct RotatedSecret {
    /// The new `whsec_...` secret.
    pub secret: String,
    /// Until when the previous secret signs too (RFC 3339); null without a grace period.
    #[schema(required = true)]
    pub previous_secret_expires_at: Option<String>,
}

/// The key of subscription `id` of `user`.
pub(crate) fn key(user: &UserId, id: &SubscriptionId) -> Key {
    Key::new(partition(user), format!("{SUB_PREFIX}{id}"))
}

fn wants_passed_key(user: &UserId) -> Key {
    Key::new(partition(user), WANTS_PASSED_SK)
}

impl From<LimitError> for SubscriptionError {
    fn from(e: LimitError) -> Self {
        match e {
            LimitError::Limited(limited) => Self::TooManyChecks(limited),
            LimitError::Store(e) => Self::Store(e),
        }
    }
}

/// What calls a subscription's receiver on the driver's demand (its verification): the
/// client, and the limit on how often.
#[derive(Clone, Copy)]
pub struct Receivers<'a> {
    /// The client that posts to receivers.
    pub client: &'a dyn WebhookClient,
    /// How often a driver may have the service call receivers.
    pub checks: ReceiverChecks,
}

impl Receivers<'_> {
    /// Counts a call of `user`'s, then asks the receiver at `url` to confirm (signed with
    /// `secret`).
    async fn confirm(
        self,
        ports: &Ports,
        user: &UserId,
        url: &str,
        secret: &str,
    ) -> Result<(), SubscriptionError> {
        self.checks.admit(ports, user).await?;
        let url = WebhookUrl::parse(url, self.client.policy())?;
        verification::confirm(self.client, url, secret, ports.clock.now()).await?;
        Ok(())
    }
}

/// Attempts of a creation that lost the list's version to concurrent creations.
const CREATE_ROUNDS: u32 = 20;

/// A new subscription's request, parsed (its URL still to resolve).
#[derive(Debug, Clone)]
pub struct NewSubscription {
    /// The URL as given.
    pub url: String,
    /// The event types, checked.
    pub event_types: Vec<String>,
    /// The description, checked.
    pub description: String,
}

/// The driver's subscriptions as stored, oldest first.
pub(crate) async fn stored_all(
    ports: &Ports,
    user: &UserId,
) -> Result<Vec<StoredSubscription>, StoreError> {
    let mut rows = Vec::new();
    let mut cursor = None;
    loop {
        let page = ports
            .items
            .query(
                Query::partition(Table::Activity, partition(user))
                    .begins_with(SUB_PREFIX)
                    .limit(50)
                    .after(cursor),
            )
            .await?;
        for row in page.items {
            rows.push(StoredSubscription::from_item(row)?);
        }
        match page.next_cursor {
            Some(next) => cursor = Some(next),
            None => break,
        }
    }
    // Ids are time-ordered.
    rows.sort_by(|a, b| a.shown.id.cmp(&b.shown.id));
    Ok(rows)
}

async fn stored_one(
    ports: &Ports,
    user: &UserId,
    id: &SubscriptionId,
) -> Result<StoredSubscription, SubscriptionError> {
    match ports.items.get(Table::Activity, &key(user, id)).await? {
        Some(row) => Ok(StoredSubscription::from_item(row)?),
        None => Err(SubscriptionError::NotFound),
    }
}

/// Keeps the `board.passed` marker true to the subscriptions: present while one that is
/// enabled wants the type. Run after every change; repeating it is harmless.
pub(crate) async fn refresh_wants_passed(ports: &Ports, user: &UserId) -> Result<(), StoreError> {
    let wanted = stored_all(ports, user)
        .await?
        .iter()
        .any(|s| s.wants("board.passed"));
    let key = wants_passed_key(user);
    if wanted {
        ports
            .items
            .put(Table::Activity, item(&key, json!({})), None)
            .await
    } else {
        ports
            .items
            .delete(Table::Activity, &key, None)
            .await
            .map(|_| ())
    }
}

/// Makes a subscription for `user` once its receiver confirmed it wants the deliveries
/// ([`verification`]); the answer holds its secret, shown this once. The cap of
/// [`MAX_PER_DRIVER`] holds under creations sent at once ([`paddock_identity::identity::capped_lists`]).
pub async fn create(
    ports: &Ports,
    user: &UserId,
    new: NewSubscription,
    policy: Policy,
    receivers: Receivers<'_>,
) -> Result<CreatedSubscription, SubscriptionError> {
    let url = check_url(&new.url, policy).await?;
    // A full list is told before the receiver is called.
    if stored_all(ports, user).await?.len() >= MAX_PER_DRIVER {
        return Err(SubscriptionError::TooMany);
    }
    let now = rfc3339(ports.clock.now());
    let stored = StoredSubscription {
        shown: Subscription {
            id: SubscriptionId::new(),
            url: url.as_str().to_owned(),
            event_types: new.event_types,
            description: new.description,
            enabled: true,
            disabled_reason: None,
            failing_since: None,
            created_at: now.clone(),
            updated_at: now,
            previous_secret_expires_at: None,
        },
        secret: signing::new_secret(),
        previous_secret: None,
        previous_secret_until: None,
    };
    receivers
        .confirm(ports, user, &stored.shown.url, &stored.secret)
        .await?;
    let lost_race =
        |e: &SubscriptionError| matches!(e, SubscriptionError::Store(e) if is_conflict(e));
    match retry_on_conflict(CREATE_ROUNDS, lost_race, || write_new(ports, user, &stored)).await {
        Ok(()) => {}
        // Lost every round: a conflict the client may retry, not a failure.
        Err(SubscriptionError::Store(StoreError::ConditionFailed { .. })) => {
            return Err(StoreError::Conflict.into());
        }
        Err(e) => return Err(e),
    }
    refresh_wants_passed(ports, user).await?;
    Ok(CreatedSubscription {
        subscription: stored.shown,
        secret: stored.secret,
    })
}

/// Writes a confirmed new subscription if the driver's list has room, conditional on the
/// list's version read before its count.
async fn write_new(
    ports: &Ports,
    user: &UserId,
    stored: &StoredSubscription,
) -> Result<(), SubscriptionError> {
    let version = ListVersion::read(ports, user, CappedList::WebhookSubscriptions).await?;
    if stored_all(ports, user).await?.len() >= MAX_PER_DRIVER {
        return Err(SubscriptionError::TooMany);
    }
    let ops = vec![
        TxOp::Put {
            table: Table::Activity,
            item: stored.to_item(user),
            condition: Some(Condition::NotExists),
        },
        // A deleted account makes no subscriptions.
        paddock_identity::identity::users::not_deleted_op(user),
        version.advance_op(user),
    ];
    match ports.items.transact(ops).await {
        Ok(()) => Ok(()),
        Err(e) if e.is_condition_failed_at(0) || e.is_condition_failed_at(1) => {
            Err(SubscriptionError::NotFound)
        }
        Err(e) => Err(e.into()),
    }
}

/// The driver's subscriptions, oldest first.
pub async fn list(ports: &Ports, user: &UserId) -> Result<Vec<Subscription>, SubscriptionError> {
    Ok(stored_all(ports, user)
        .await?
        .into_iter()
        .map(|s| s.shown)
        .collect())
}

/// One of the driver's subscriptions.
pub async fn get(
    ports: &Ports,
    user: &UserId,
    id: &SubscriptionId,
) -> Result<Subscription, SubscriptionError> {
    Ok(stored_one(ports, user, id).await?.shown)
}

/// What a change sets; `None` leaves a field as it is.
#[derive(Debug, Clone, Default)]
pub struct Changes {
    /// A new URL (checked as at creation).
    pub url: Option<String>,
    /// New event types, checked.
    pub event_types: Option<Vec<String>>,
    /// A new description, checked.
    pub description: Option<String>,
    /// Pause (false) or resume (true); resuming clears the failure state.
    pub enabled: Option<bool>,
}

/// Changes one of the driver's subscriptions. A new URL, and resuming a paused
/// subscription, need the receiver's confirmation first ([`verification`]).
pub async fn update(
    ports: &Ports,
    user: &UserId,
    id: &SubscriptionId,
    changes: Changes,
    policy: Policy,
    receivers: Receivers<'_>,
) -> Result<Subscription, SubscriptionError> {
    let mut stored = stored_one(ports, user, id).await?;
    let before = stored.shown.updated_at.clone();
    let mut unconfirmed = false;
    if let Some(raw) = &changes.url {
        let url = check_url(raw, policy).await?.as_str().to_owned();
        unconfirmed |= url != stored.shown.url;
        stored.shown.url = url;
    }
    if let Some(types) = changes.event_types {
        stored.shown.event_types = types;
    }
    if let Some(description) = changes.description {
        stored.shown.description = description;
    }
    if let Some(enabled) = changes.enabled {
        if enabled && !stored.shown.enabled {
            stored.shown.disabled_reason = None;
            stored.shown.failing_since = None;
            unconfirmed = true;
        }
        stored.shown.enabled = enabled;
    }
    // Only what will receive deliveries is asked: a paused subscription's new URL is asked
    // when it is resumed.
    if unconfirmed && stored.shown.enabled {
        receivers
            .confirm(ports, user, &stored.shown.url, &stored.secret)
            .await?;
    }
    stored.shown.updated_at = rfc3339(ports.clock.now());
    replace(ports, user, &stored, &before).await?;
    refresh_wants_passed(ports, user).await?;
    Ok(stored.shown)
}

/// Writes `stored` over the row last updated at `before` (a concurrent change wins and this
/// one answers as if the subscription had changed under it: not found, to be read again).
async fn replace(
    ports: &Ports,
    user: &UserId,
    stored: &StoredSubscription,
    before: &str,
) -> Result<(), SubscriptionError> {
    match ports
        .items
        .put(
            Table::Activity,
            stored.to_item(user),
            Some(Condition::eq("updatedAt", before)),
        )
        .await
    {
        Ok(()) => Ok(()),
        Err(StoreError::ConditionFailed { .. }) => Err(SubscriptionError::NotFound),
        Err(e) => Err(e.into()),
    }
}

/// Deletes one of the driver's subscriptions; nothing is delivered to it afterwards.
pub async fn delete(
    ports: &Ports,
    user: &UserId,
    id: &SubscriptionId,
) -> Result<(), SubscriptionError> {
    stored_one(ports, user, id).await?;
    ports
        .items
        .delete(Table::Activity, &key(user, id), None)
        .await?;
    refresh_wants_passed(ports, user).await?;
    Ok(())
}

/// Gives a subscription a new secret; the current one keeps signing for `grace_hours`.
pub async fn rotate_secret(
    ports: &Ports,
    user: &UserId,
    id: &SubscriptionId,
    grace_hours: i64,
) -> Result<RotatedSecret, SubscriptionError> {
    let mut stored = stored_one(ports, user, id).await?;
    let before = stored.shown.updated_at.clone();
    let now = ports.clock.now();
    let until = now + time::Duration::hours(grace_hours);
    let previous = std::mem::replace(&mut stored.secret, signing::new_secret());
    if grace_hours > 0 {
        stored.previous_secret = Some(previous);
        stored.previous_secret_until = Some(until.unix_timestamp());
        stored.shown.previous_secret_expires_at = Some(rfc3339(until));
    } else {
        stored.previous_secret = None;
        stored.previous_secret_until = None;
        stored.shown.previous_secret_expires_at = None;
    }
    stored.shown.updated_at = rfc3339(now);
    replace(ports, user, &stored, &before).await?;
    Ok(RotatedSecret {
        secret: stored.secret,
        previous_secret_expires_at: stored.shown.previous_secret_expires_at,
    })
}

/// Sends a `webhook.test` event to one subscription (through the outbox, as every event);
/// answers the event's id, which is the delivery's `webhook-id`.
pub async fn send_test(
    ports: &Ports,
    user: &UserId,
    id: &SubscriptionId,
    checks: ReceiverChecks,
) -> Result<String, SubscriptionError> {
    stored_one(ports, user, id).await?;
    checks.admit(ports, user).await?;
    let event = Event::new(
        EventKind::WebhookTest(WebhookTest {
            subscription_id: id.clone(),
        }),
        Some(user.clone()),
        ports.clock.now(),
    );
    ports.items.transact(vec![event.outbox_op()]).await?;
    Ok(event.id.to_string())
}

/// The driver's subscriptions as the export shows them (no secrets).
pub async fn exported(ports: &Ports, user: &UserId) -> Result<Vec<Subscription>, StoreError> {
    Ok(stored_all(ports, user)
        .await?
        .into_iter()
        .map(|s| s.shown)
        .collect())
}

#[cfg(test)]
mod tests;
