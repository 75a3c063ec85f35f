//! Apps: what a driver registers to act for other drivers through OAuth.
//!
//! An app is public by default (a native or browser app, which cannot keep a secret and
//! proves itself by PKCE alone) or confidential (a server, with a secret shown once at
//! registration and kept only as its SHA-256). Its redirect URIs follow [`redirect_uris`].
//!
//! Keys (table `tokens`):
//! - `APP#<client id>` / `APP`: `{clientId, ownerId, name, redirectUris, confidential,
//!   secretHash?, createdAt, grants}`; `grants` counts the drivers whose consent is live.
//! - `USER#<owner id>` / `APP#<client id>`: `{clientId}`, the owner's list.
//! - `APP#<client id>` / `GRANT#<user id>`: one per driver who authorised it
//!   ([`crate::grants`]), so deleting the app ends every driver's grant.

use serde::Serialize;
use serde_json::{Value, json};
use subtle::ConstantTimeEq;
use utoipa::ToSchema;

use crate::errors::{ErrorCode, OAuthError};
use crate::grants;
use crate::keys::{APP_PREFIX, app_key};
use crate::redirect_uris;
use paddock_identity::identity::capped_lists::{CappedList, ListVersion};
use paddock_identity::identity::users::not_deleted_op;
use paddock_kernel::hashing::{random_token, sha256_hex};
use paddock_kernel::ids::UserId;
use paddock_kernel::ports::Ports;
use paddock_kernel::ports::clock::rfc3339;
use paddock_kernel::ports::items::{Condition, Item, Key, Query, StoreError, TxOp, Update, item};
use paddock_kernel::retry::{is_conflict, retry_on_conflict};
use paddock_kernel::tables::Table;

/// Apps a driver may register.
pub const MAX_APPS_PER_DRIVER: usize = 10;
/// Redirect URIs an app may register.
pub const MAX_REDIRECT_URIS: usize = 10;
/// The longest app name, in characters.
pub const MAX_NAME_CHARS: usize = 64;
/// What every client id starts with.
pub const CLIENT_ID_PREFIX: &str = "pdc_";
/// What every client secret starts with.
const SECRET_PREFIX: &str = "pdcs_";

fn owner_key(owner: &UserId, client_id: &str) -> Key {
    Key::new(format!("USER#{owner}"), format!("{APP_PREFIX}{client_id}"))
}

/// Whether an app is public or confidential.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, ToSchema)]
#[serde(rename_all = "lowercase")]
pub enum ClientType {
    /// Proves itself by PKCE alone (native and browser apps).
    Public,
    /// Also authenticates with its secret at the token endpoint (servers).
    Confidential,
}

/// A registered app, as stored.
#[derive(Debug, Clone)]
pub struct App {
    /// The client id.
    pub client_id: String,
    /// The driver who registered it.
    pub owner_id: UserId,
    /// Its name, shown on the consent page.
    pub name: String,
    /// Where codes may be sent.
    pub redirect_uris: Vec<String>,
    /// Public or confidential.
    pub client_type: ClientType,
    secret_hash: Option<String>,
    created_at: i64,
    grants: u64,
}

/// What the owner sees of an app.
#[derive(Debug, Clone, Serialize, ToSchema)]
#[serde(rename_all = "camelCase")]
pub struct AppView {
    /// The client id (`client_id` in the OAuth requests).
    pub client_id: String,
    /// Its name, shown to drivers on the consent page.
    pub name: String,
    /// Where codes may be sent, each matched byte for byte (a loopback URI's port aside).
    pub redirect_uris: Vec<String>,
    /// Public (PKCE alone) or confidential (PKCE and the secret).
    pub client_type: ClientType,
    /// When it was registered (RFC 3339).
    pub created_at: String,
    /// How many drivers have a live grant to it.
    pub authorized_drivers: u64,
}

/// An app just registered: a confidential app's secret is in this answer only.
#[derive(Debug, Clone, Serialize, ToSchema)]
#[serde(rename_all = "camelCase")]
pub struct RegisteredApp {
    /// The app.
    pub app: AppView,
    /// A confidential app's secret, shown this once; absent for a public app.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub client_secret: Option<String>,
}

/// Why an app request was refused.
#[derive(Debug, thiserror::Error)]
pub enum AppError {
    /// A field breaks its rule (400): the message names it.
    #[error("{field}: {rule}")]
    Invalid {
        /// The field, as the request names it.
        field: String,
        /// The rule it breaks.
        rule: String,
    },
    /// The driver already has the most apps allowed (409).
    #[error("at most {MAX_APPS_PER_DRIVER} apps per driver; delete one first")]
    TooMany,
    /// The caller has no app of that id (404).
    #[error("no such app")]
    NotFound,
    /// The account was deleted meanwhile (401).
    #[error("account no longer exists")]
    AccountGone,
    /// The item store failed.
    #[error(transparent)]
    Store(#[from] StoreError),
}

fn invalid(field: impl Into<String>, rule: impl Into<String>) -> AppError {
    AppError::Invalid {
        field: field.into(),
        rule: rule.into(),
    }
}

/// An app's name, checked: as another driver will read it on the consent page.
pub fn checked_name(name: &str) -> Result<String, AppError> {
    hidden_characters::shown_text(name, 1, MAX_NAME_CHARS).map_err(|rule| invalid("name", rule))
}

/// Redirect URIs, checked: 1 to 10, each by [`redirect_uris::check`], without repeats.
pub fn checked_redirect_uris(uris: &[String]) -> Result<Vec<String>, AppError> {
    if uris.is_empty() || uris.len() > MAX_REDIRECT_URIS {
        return Err(invalid(
            "redirectUris",
            format!("must hold 1 to {MAX_REDIRECT_URIS} URIs"),
        ));
    }
    for (i, uri) in uris.iter().enumerate() {
        redirect_uris::check(uri).map_err(|rule| invalid(format!("redirectUris[{i}]"), rule))?;
        if uris[..i].contains(uri) {
            return Err(invalid(format!("redirectUris[{i}]"), "is listed twice"));
        }
    }
    Ok(uris.to_vec())
}

/// A client type as a request names it (default: public).
pub fn checked_client_type(client_type: Option<&str>) -> Result<ClientType, AppError> {
    match client_type {
        None | Some("public") => Ok(ClientType::Public),
        Some("confidential") => Ok(ClientType::Confidential),
        Some(_) => Err(invalid("clientType", "must be `public` or `confidential`")),
    }
}

/// A new app's fields, checked.
#[derive(Debug, Clone)]
pub struct NewApp {
    /// Its name.
    pub name: String,
    /// Its redirect URIs.
    pub redirect_uris: Vec<String>,
    /// Public or confidential.
    pub client_type: ClientType,
}

/// Registers `new` for `owner`, within the per-driver cap even when registrations race.
pub async fn register(
    ports: &Ports,
    owner: &UserId,
    new: NewApp,
) -> Result<RegisteredApp, AppError> {
    retry_on_conflict(
        5,
        |e: &AppError| matches!(e, AppError::Store(s) if is_conflict(s)),
        || register_once(ports, owner, &new),
    )
    .await
}

async fn register_once(
    ports: &Ports,
    owner: &UserId,
    new: &NewApp,
) -> Result<RegisteredApp, AppError> {
    let version = ListVersion::read(ports, owner, CappedList::Apps).await?;
    if owned_ids(ports, owner).await?.len() >= MAX_APPS_PER_DRIVER {
        return Err(AppError::TooMany);
    }
    let client_id = format!("{CLIENT_ID_PREFIX}{}", random_token(16));
    let secret = (new.client_type == ClientType::Confidential)
        .then(|| format!("{SECRET_PREFIX}{}", random_token(32)));
    let now = ports.clock.unix();
    let mut record = json!({
        "clientId": client_id, "ownerId": owner, "name": new.name,
        "redirectUris": new.redirect_uris,
        "confidential": new.client_type == ClientType::Confidential,
        "createdAt": now, "grants": 0,
    });
    if let Some(secret) = &secret {
        record["secretHash"] = sha256_hex(secret).into();
    }
    let ops = vec![
        version.advance_op(owner),
        TxOp::Put {
            table: Table::Tokens,
            item: item(&app_key(&client_id), record.clone()),
            condition: Some(Condition::NotExists),
        },
        TxOp::Put {
            table: Table::Tokens,
            item: item(
                &owner_key(owner, &client_id),
                json!({"clientId": client_id}),
            ),
            condition: None,
        },
        not_deleted_op(owner),
    ];
    match ports.items.transact(ops).await {
        Ok(()) => {}
        Err(e) if e.is_condition_failed_at(0) => return Err(AppError::Store(StoreError::Conflict)),
        Err(e) if e.is_condition_failed_at(3) => return Err(AppError::AccountGone),
        Err(e) => return Err(e.into()),
    }
    let app = App::of(&item(&app_key(&client_id), record)).ok_or(AppError::NotFound)?;
    Ok(RegisteredApp {
        app: app.view(),
        client_secret: secret,
    })
}

/// The client ids of `owner`'s apps.
async fn owned_ids(ports: &Ports, owner: &UserId) -> Result<Vec<String>, StoreError> {
    let page = ports
        .items
        .query(Query::partition(Table::Tokens, format!("USER#{owner}")).begins_with(APP_PREFIX))
        .await?;
    Ok(page
        .items
        .iter()
        .filter_map(|row| Some(row.get("clientId")?.as_str()?.to_owned()))
        .collect())
}

/// `owner`'s apps, oldest first.
pub async fn list(ports: &Ports, owner: &UserId) -> Result<Vec<AppView>, StoreError> {
    let ids = owned_ids(ports, owner).await?;
    if ids.is_empty() {
        return Ok(Vec::new());
    }
    let keys = ids.iter().map(|id| (Table::Tokens, app_key(id))).collect();
    let mut apps: Vec<App> = (ports.items.get_many(keys).await?.iter())
        .filter_map(|row| App::of(row.as_ref()?))
        .filter(|app| app.owner_id == *owner)
        .collect();
    apps.sort_by_key(|app| app.created_at);
    Ok(apps.iter().map(App::view).collect())
}

/// The app of `client_id`, if one is registered.
pub async fn find(ports: &Ports, client_id: &str) -> Result<Option<App>, StoreError> {
    if !client_id.starts_with(CLIENT_ID_PREFIX) || client_id.len() > 64 {
        return Ok(None);
    }
    let row = ports.items.get(Table::Tokens, &app_key(client_id)).await?;
    Ok(row.as_ref().and_then(App::of))
}

/// `owner`'s app `client_id`, or [`AppError::NotFound`].
pub async fn owned(ports: &Ports, owner: &UserId, client_id: &str) -> Result<App, AppError> {
    find(ports, client_id)
        .await?
        .filter(|app| app.owner_id == *owner)
        .ok_or(AppError::NotFound)
}

/// Changes the name or the redirect URIs of `owner`'s app (each when given).
pub async fn change(
    ports: &Ports,
    owner: &UserId,
    client_id: &str,
    name: Option<String>,
    redirect_uris: Option<Vec<String>>,
) -> Result<AppView, AppError> {
    // The update's condition refuses another driver's app, or none: no read before it.
    let mut update = Update::set("ownerId", owner.as_str());
    if let Some(name) = name {
        update = update.and_set("name", name);
    }
    if let Some(uris) = redirect_uris {
        update = update.and_set("redirectUris", uris);
    }
    let owned_by = Condition::And(vec![
        Condition::Exists,
        Condition::eq("ownerId", owner.as_str()),
    ]);
    match ports
        .items
        .update(Table::Tokens, &app_key(client_id), update, Some(owned_by))
        .await
    {
        Ok(row) => Ok(App::of(&row).ok_or(AppError::NotFound)?.view()),
        Err(e) if e.is_condition_failed_at(0) => Err(AppError::NotFound),
        Err(e) => Err(e.into()),
    }
}

/// Deletes `owner`'s app: every driver's grant to it ends first, then the app.
pub async fn delete(ports: &Ports, owner: &UserId, client_id: &str) -> Result<(), AppError> {
    owned(ports, owner, client_id).await?;
    remove(ports, owner, client_id).await?;
    Ok(())
}

/// Ends every grant to `client_id` and removes the app's rows (its owner's deletion, or
/// the owner's own request).
pub(crate) async fn remove(
    ports: &Ports,
    owner: &UserId,
    client_id: &str,
) -> Result<(), StoreError> {
    for user in grants::drivers_of(ports, client_id).await? {
        grants::revoke(ports, &user, client_id).await?;
    }
    let ops = vec![
        TxOp::Delete {
            table: Table::Tokens,
            key: app_key(client_id),
            condition: None,
        },
        TxOp::Delete {
            table: Table::Tokens,
            key: owner_key(owner, client_id),
            condition: None,
        },
    ];
    ports.items.transact(ops).await
}

/// Removes every app `owner` registered (account deletion); answers how many.
pub async fn remove_all(ports: &Ports, owner: &UserId) -> Result<usize, StoreError> {
    let ids = owned_ids(ports, owner).await?;
    for id in &ids {
        remove(ports, owner, id).await?;
    }
    Ok(ids.len())
}

/// What the export shows of `owner`'s apps (never a secret or its hash).
pub async fn exported(ports: &Ports, owner: &UserId) -> Result<Vec<AppView>, StoreError> {
    list(ports, owner).await
}

impl App {
    /// The app of a stored record.
    pub(crate) fn of(row: &Item) -> Option<App> {
        let text = |k: &str| row.get(k).and_then(Value::as_str).map(str::to_owned);
        Some(App {
            client_id: text("clientId")?,
            owner_id: text("ownerId")?.parse().ok()?,
            name: text("name")?,
            redirect_uris: (row.get("redirectUris")?.as_array()?.iter())
                .filter_map(|u| Some(u.as_str()?.to_owned()))
                .collect(),
            client_type: if row.get("confidential").and_then(Value::as_bool) == Some(true) {
                ClientType::Confidential
            } else {
                ClientType::Public
            },
            secret_hash: text("secretHash"),
            created_at: row
                .get("createdAt")
                .and_then(Value::as_i64)
                .unwrap_or_default(),
            grants: row
                .get("grants")
                .and_then(Value::as_i64)
                .unwrap_or_default()
                .max(0) as u64,
        })
    }

    /// What the owner sees of it.
    pub fn view(&self) -> AppView {
        AppView {
            client_id: self.client_id.clone(),
            name: self.name.clone(),
            redirect_uris: self.redirect_uris.clone(),
            client_type: self.client_type,
            created_at: time::OffsetDateTime::from_unix_timestamp(self.created_at)
                .map(rfc3339)
                .unwrap_or_default(),
            authorized_drivers: self.grants,
        }
    }

    /// Whether `presented` is one of the app's redirect URIs.
    pub fn redirects_to(&self, presented: &str) -> bool {
        (self.redirect_uris.iter()).any(|registered| redirect_uris::matches(registered, presented))
    }

    /// Checks the client's authentication at the token endpoint: a confidential app's secret
    /// must be `secret`; a public app has none and must send none (RFC 6749 §2.3).
    pub fn authenticate(&self, secret: Option<&str>) -> Result<(), OAuthError> {
        let refused = |why: &str| OAuthError::new(ErrorCode::InvalidClient, why);
        match (&self.secret_hash, secret) {
            (Some(hash), Some(secret)) => {
                let presented = sha256_hex(secret);
                if bool::from(presented.as_bytes().ct_eq(hash.as_bytes())) {
                    Ok(())
                } else {
                    Err(refused("client authentication failed"))
                }
            }
            (Some(_), None) => Err(refused(
                "this app is confidential: authenticate with its secret (client_secret_basic or client_secret_post)",
            )),
            (None, Some(_)) => Err(refused(
                "this app is public and has no secret: send client_id alone, with PKCE",
            )),
            (None, None) => Ok(()),
        }
    }
}
