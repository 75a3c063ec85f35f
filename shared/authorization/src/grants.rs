//! Grants: a driver's consent to an app, with the scopes approved.
//!
//! A grant's tokens are one refresh-token family (`identity::refresh_tokens`): its access
//! tokens carry the family's id (`gid`), the door reads the family on every request, and
//! revoking the family ends its access and refresh tokens at once. The grant row says what
//! the driver approved, so approving the same scopes again skips the consent page.
//!
//! Keys (table `tokens`):
//! - `USER#<user id>` / `GRANT#<client id>`: `{clientId, appName, familyId, scopes,
//!   createdAt, lastUsedAt?}`.
//! - `APP#<client id>` / `GRANT#<user id>`: `{userId}`, the app's drivers, for a registered
//!   app only (its deletion ends their grants, and it counts them). A client known by its
//!   metadata document's URL has no app row, no count and no such list.

use serde::Serialize;
use serde_json::{Value, json};
use utoipa::ToSchema;

use crate::keys::{APP_PREFIX, app_key};
use paddock_identity::identity::personal_tokens::Scope;
use paddock_identity::identity::refresh_tokens::{self, app_family_ops};
use paddock_identity::identity::users::not_deleted_op;
use paddock_kernel::ids::UserId;
use paddock_kernel::ports::Ports;
use paddock_kernel::ports::clock::rfc3339;
use paddock_kernel::ports::items::{
    Condition, Item, Key, Query, SK, StoreError, TxOp, Update, item,
};
use paddock_kernel::tables::Table;

/// Sort-key prefix of grant rows.
pub const GRANT_PREFIX: &str = "GRANT#";
/// A grant's `lastUsedAt` is written at most this often.
const LAST_USED_EVERY_SECS: i64 = 60;

fn grant_key(user: &UserId, client_id: &str) -> Key {
    Key::new(format!("USER#{user}"), format!("{GRANT_PREFIX}{client_id}"))
}

/// Whether `client_id` is a registered app's (which counts its drivers), not a client known
/// by its metadata document.
fn registered(client_id: &str) -> bool {
    !crate::client_documents::is_document_client(client_id)
}

fn app_grant_key(client_id: &str, user: &UserId) -> Key {
    Key::new(
        format!("{APP_PREFIX}{client_id}"),
        format!("{GRANT_PREFIX}{user}"),
    )
}

/// A driver's grant to an app.
#[derive(Debug, Clone)]
pub struct Grant {
    /// The app.
    pub client_id: String,
    /// The app's name when the driver approved it.
    pub app_name: String,
    /// The grant's refresh-token family.
    pub family_id: String,
    /// The scopes approved.
    pub scopes: Vec<Scope>,
    created_at: i64,
    last_used_at: Option<i64>,
}

/// What a driver sees of an app they authorised.
#[derive(Debug, Clone, Serialize, ToSchema)]
#[serde(rename_all = "camelCase")]
pub struct GrantView {
    /// The app's client id.
    pub client_id: String,
    /// The app's name.
    pub app_name: String,
    /// What the driver let it do.
    pub scopes: Vec<Scope>,
    /// When the driver first authorised it (RFC 3339).
    pub granted_at: String,
    /// When it last had tokens issued (RFC 3339), if ever.
    pub last_used_at: Option<String>,
}

fn time_text(unix: i64) -> String {
    time::OffsetDateTime::from_unix_timestamp(unix)
        .map(rfc3339)
        .unwrap_or_default()
}

impl Grant {
    fn of(row: &Item) -> Option<Grant> {
        let text = |k: &str| row.get(k).and_then(Value::as_str).map(str::to_owned);
        Some(Grant {
            client_id: text("clientId")?,
            app_name: text("appName").unwrap_or_default(),
            family_id: text("familyId")?,
            scopes: (row.get("scopes")?.as_array()?.iter())
                .filter_map(|s| Scope::parse(s.as_str()?))
                .collect(),
            created_at: row
                .get("createdAt")
                .and_then(Value::as_i64)
                .unwrap_or_default(),
            last_used_at: row.get("lastUsedAt").and_then(Value::as_i64),
        })
    }

    /// What the driver sees of it.
    pub fn view(&self) -> GrantView {
        GrantView {
            client_id: self.client_id.clone(),
            app_name: self.app_name.clone(),
            scopes: self.scopes.clone(),
            granted_at: time_text(self.created_at),
            last_used_at: self.last_used_at.map(time_text),
        }
    }

    /// Whether the grant already covers `scopes`.
    pub fn covers(&self, scopes: &[Scope]) -> bool {
        scopes.iter().all(|s| self.scopes.contains(s))
    }
}

/// `user`'s grant to `client_id`, when it is live (its family not revoked).
pub async fn live(
    ports: &Ports,
    user: &UserId,
    client_id: &str,
) -> Result<Option<Grant>, StoreError> {
    let Some(grant) = ports
        .items
        .get(Table::Tokens, &grant_key(user, client_id))
        .await?
    else {
        return Ok(None);
    };
    let Some(grant) = Grant::of(&grant) else {
        return Ok(None);
    };
    let active = refresh_tokens::family_active(ports, &grant.family_id, user).await?;
    Ok(active.then_some(grant))
}

/// `user`'s grant row for `client_id`, live or not (an exchange checks its family itself).
pub async fn live_row(
    ports: &Ports,
    user: &UserId,
    client_id: &str,
) -> Result<Option<Grant>, StoreError> {
    let row = ports
        .items
        .get(Table::Tokens, &grant_key(user, client_id))
        .await?;
    Ok(row.as_ref().and_then(Grant::of))
}

/// The app a driver approves: its client id and the name they saw.
#[derive(Debug, Clone, Copy)]
pub struct Approved<'a> {
    /// The app's client id.
    pub client_id: &'a str,
    /// The app's name.
    pub name: &'a str,
}

/// Records `user`'s consent to `app` for `scopes`: a new grant with a new family, or the
/// live grant widened to them. Answers the grant.
pub async fn approve(
    ports: &Ports,
    user: &UserId,
    app: Approved<'_>,
    scopes: &[Scope],
) -> Result<Grant, StoreError> {
    let now = ports.clock.unix();
    if let Some(mut grant) = live(ports, user, app.client_id).await? {
        let mut widened = grant.scopes.clone();
        widened.extend(scopes.iter().filter(|s| !grant.scopes.contains(s)));
        widened.sort();
        let names: Vec<&str> = widened.iter().map(|s| s.name()).collect();
        let same_family = Condition::eq("familyId", grant.family_id.as_str());
        ports
            .items
            .update(
                Table::Tokens,
                &grant_key(user, app.client_id),
                Update::set("scopes", names).and_set("appName", app.name),
                Some(same_family),
            )
            .await?;
        grant.scopes = widened;
        return Ok(grant);
    }
    let existed = ports
        .items
        .get(Table::Tokens, &grant_key(user, app.client_id))
        .await?;
    let (family_id, mut ops) = app_family_ops(ports, user, app.client_id);
    let mut sorted = scopes.to_vec();
    sorted.sort();
    let names: Vec<&str> = sorted.iter().map(|s| s.name()).collect();
    let row = json!({"clientId": app.client_id, "appName": app.name, "familyId": family_id,
                     "scopes": names, "createdAt": now});
    // The row read before is replaced only as read (another approval may have won).
    let as_read = match existed
        .as_ref()
        .and_then(|r| r.get("familyId"))
        .and_then(Value::as_str)
    {
        Some(old) => Condition::eq("familyId", old),
        None => Condition::NotExists,
    };
    ops.push(TxOp::Put {
        table: Table::Tokens,
        item: item(&grant_key(user, app.client_id), row),
        condition: Some(as_read),
    });
    ops.push(not_deleted_op(user));
    if registered(app.client_id) {
        ops.push(TxOp::Put {
            table: Table::Tokens,
            item: item(&app_grant_key(app.client_id, user), json!({"userId": user})),
            condition: None,
        });
    }
    if existed.is_none() && registered(app.client_id) {
        // A new driver for the app (the app must still exist).
        ops.push(TxOp::Update {
            table: Table::Tokens,
            key: app_key(app.client_id),
            update: Update::set("clientId", app.client_id).and_add("grants", 1),
            condition: Some(Condition::Exists),
        });
    }
    match ports.items.transact(ops).await {
        Ok(()) => {}
        Err(e) if e.is_condition_failed_at(2) => return Err(StoreError::Conflict),
        Err(e) => return Err(e),
    }
    Ok(Grant {
        client_id: app.client_id.to_owned(),
        app_name: app.name.to_owned(),
        family_id,
        scopes: sorted,
        created_at: now,
        last_used_at: None,
    })
}

/// Records that `grant`'s app had tokens issued at `now` (at most once a minute).
pub async fn mark_used(ports: &Ports, user: &UserId, grant: &Grant) -> Result<(), StoreError> {
    let now = ports.clock.unix();
    if grant
        .last_used_at
        .is_some_and(|t| now - t < LAST_USED_EVERY_SECS)
    {
        return Ok(());
    }
    let same = Condition::eq("familyId", grant.family_id.as_str());
    match ports
        .items
        .update(
            Table::Tokens,
            &grant_key(user, &grant.client_id),
            Update::set("lastUsedAt", now),
            Some(same),
        )
        .await
    {
        Ok(_) => Ok(()),
        Err(e) if e.is_condition_failed_at(0) => Ok(()),
        Err(e) => Err(e),
    }
}

/// The grant whose family is `family_id`, if it is `user`'s live grant to `client_id`.
pub async fn of_family(
    ports: &Ports,
    user: &UserId,
    client_id: &str,
    family_id: &str,
) -> Result<Option<Grant>, StoreError> {
    let row = ports
        .items
        .get(Table::Tokens, &grant_key(user, client_id))
        .await?;
    Ok(row
        .as_ref()
        .and_then(Grant::of)
        .filter(|g| g.family_id == family_id))
}

/// The apps `user` authorised, with live grants, by app name. The grants' families are read
/// in one batch.
pub async fn list(ports: &Ports, user: &UserId) -> Result<Vec<GrantView>, StoreError> {
    let grants = all_of(ports, user).await?;
    let keys = (grants.iter())
        .map(|g| (Table::Tokens, refresh_tokens::family_key(&g.family_id)))
        .collect();
    let families = if grants.is_empty() {
        Vec::new()
    } else {
        ports.items.get_many(keys).await?
    };
    let live = |family: &Option<Item>| {
        family.as_ref().is_some_and(|f| {
            f.get("revoked").and_then(Value::as_bool) == Some(false)
                && f.get("userId").and_then(Value::as_str) == Some(user.as_str())
        })
    };
    let mut live_grants: Vec<GrantView> = (grants.iter().zip(&families))
        .filter(|(_, family)| live(family))
        .map(|(grant, _)| grant.view())
        .collect();
    live_grants.sort_by(|a, b| a.app_name.cmp(&b.app_name));
    Ok(live_grants)
}

/// Every grant row of `user`, live or not.
async fn all_of(ports: &Ports, user: &UserId) -> Result<Vec<Grant>, StoreError> {
    let mut grants = Vec::new();
    let mut cursor = None;
    loop {
        let page = ports
            .items
            .query(
                Query::partition(Table::Tokens, format!("USER#{user}"))
                    .begins_with(GRANT_PREFIX)
                    .after(cursor),
            )
            .await?;
        grants.extend(page.items.iter().filter_map(Grant::of));
        match page.next_cursor {
            Some(next) => cursor = Some(next),
            None => return Ok(grants),
        }
    }
}

/// The drivers with a grant row for `client_id`.
pub(crate) async fn drivers_of(ports: &Ports, client_id: &str) -> Result<Vec<UserId>, StoreError> {
    let mut drivers = Vec::new();
    let mut cursor = None;
    loop {
        let page = ports
            .items
            .query(
                Query::partition(Table::Tokens, format!("{APP_PREFIX}{client_id}"))
                    .begins_with(GRANT_PREFIX)
                    .after(cursor),
            )
            .await?;
        drivers.extend(page.items.iter().filter_map(|row| {
            row.get(SK)?
                .as_str()?
                .strip_prefix(GRANT_PREFIX)?
                .parse()
                .ok()
        }));
        match page.next_cursor {
            Some(next) => cursor = Some(next),
            None => return Ok(drivers),
        }
    }
}

/// Ends `user`'s grant to `client_id`: its tokens stop at once (the family is revoked),
/// and the app no longer counts the driver. Answers whether there was one.
pub async fn revoke(ports: &Ports, user: &UserId, client_id: &str) -> Result<bool, StoreError> {
    let Some(row) = ports
        .items
        .get(Table::Tokens, &grant_key(user, client_id))
        .await?
    else {
        return Ok(false);
    };
    let Some(grant) = Grant::of(&row) else {
        return Ok(false);
    };
    refresh_tokens::revoke_family(ports, &grant.family_id).await?;
    let mut ops = vec![TxOp::Delete {
        table: Table::Tokens,
        key: grant_key(user, client_id),
        condition: Some(Condition::eq("familyId", grant.family_id.as_str())),
    }];
    if registered(client_id) {
        ops.extend([
            TxOp::Delete {
                table: Table::Tokens,
                key: app_grant_key(client_id, user),
                condition: None,
            },
            TxOp::Update {
                table: Table::Tokens,
                key: app_key(client_id),
                update: Update::set("clientId", client_id).and_add("grants", -1),
                condition: Some(Condition::Exists),
            },
        ]);
    }
    loop {
        match ports.items.transact(ops.clone()).await {
            Ok(()) => return Ok(true),
            // Another revocation (or a new approval) changed the row: its own write counts.
            Err(e) if e.is_condition_failed_at(0) => return Ok(true),
            // The app is gone (being deleted): nothing left to count.
            Err(e) if e.is_condition_failed_at(2) && ops.len() == 3 => {
                ops.pop();
            }
            Err(e) => return Err(e),
        }
    }
}

/// Ends every grant of `user` (a password change, a takeover, the account's deletion), and
/// removes the codes not yet exchanged; answers how many grants ended.
pub async fn revoke_all(ports: &Ports, user: &UserId) -> Result<usize, StoreError> {
    crate::codes::remove_all(ports, user).await?;
    let mut ended = 0;
    for grant in all_of(ports, user).await? {
        ended += usize::from(revoke(ports, user, &grant.client_id).await?);
    }
    Ok(ended)
}

/// What the export shows of `user`'s grants, live or not.
pub async fn exported(ports: &Ports, user: &UserId) -> Result<Vec<GrantView>, StoreError> {
    Ok(all_of(ports, user).await?.iter().map(Grant::view).collect())
}
