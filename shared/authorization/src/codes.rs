//! Authorization codes: what a driver's approval hands the app, exchanged once for tokens.
//!
//! Keys (table `tokens`): `OAUTHCODE#<sha256 hex of the code>` / `CODE`: `{clientId, userId,
//! familyId, redirectUri, codeChallenge, scopes, resource, expiresAt, used, ttl}`, and the
//! driver's index of them, `USER#<user id>` / `OAUTHCODE#<hash>` (same expiry), so the end of
//! the driver's grants and the account's deletion remove them. A code is
//! good for a minute and is marked used by a conditional write, so of two exchanges exactly
//! one gets it. The row stays ten minutes, so a second exchange is known as a replay: the
//! tokens issued for the code are then revoked (RFC 6749 §4.1.2), by revoking the grant's
//! family. A wrong client, redirect URI or PKCE verifier still uses the code up.

use serde_json::{Value, json};
use subtle::ConstantTimeEq;

use crate::errors::{ErrorCode, OAuthError};
use paddock_identity::identity::app_tokens::Resource;
use paddock_identity::identity::personal_tokens::Scope;
use paddock_identity::identity::refresh_tokens;
use paddock_kernel::hashing::{random_token, s256, sha256_hex};
use paddock_kernel::ids::UserId;
use paddock_kernel::ports::Ports;
use paddock_kernel::ports::items::{
    Condition, Item, Key, Query, SK, StoreError, TTL, TxOp, Update, item,
};
use paddock_kernel::tables::Table;

/// How long a code can be exchanged.
pub const LIFETIME_SECS: i64 = 60;
/// How long its row is kept, so a replay is told from an unknown code.
const KEPT_SECS: i64 = 600;

/// Sort-key prefix of a driver's index of codes, and partition prefix of a code.
const CODE_PREFIX: &str = "OAUTHCODE#";

fn code_key(code: &str) -> Key {
    code_key_of_hash(&sha256_hex(code))
}

fn code_key_of_hash(hash: &str) -> Key {
    Key::new(format!("{CODE_PREFIX}{hash}"), "CODE")
}

fn index_key(user: &UserId, hash: &str) -> Key {
    Key::new(format!("USER#{user}"), format!("{CODE_PREFIX}{hash}"))
}

/// What a code stands for.
#[derive(Debug, Clone, PartialEq)]
pub struct CodeGrant {
    /// The app it was issued to.
    pub client_id: String,
    /// The driver who approved.
    pub user_id: UserId,
    /// The grant's refresh-token family.
    pub family_id: String,
    /// The redirect URI of the authorization request.
    pub redirect_uri: String,
    /// The scopes approved for this request.
    pub scopes: Vec<Scope>,
    /// The resource the tokens are for.
    pub resource: Resource,
}

/// Issues a code for `grant`, bound to the request's PKCE `challenge` (S256).
pub async fn issue(
    ports: &Ports,
    grant: &CodeGrant,
    challenge: &str,
) -> Result<String, StoreError> {
    let code = random_token(32);
    let now = ports.clock.unix();
    let scopes: Vec<&str> = grant.scopes.iter().map(|s| s.name()).collect();
    let resource = match grant.resource {
        Resource::RestApi => "api",
        Resource::Mcp => "mcp",
    };
    let row = json!({
        "clientId": grant.client_id, "userId": grant.user_id, "familyId": grant.family_id,
        "redirectUri": grant.redirect_uri, "codeChallenge": challenge, "scopes": scopes,
        "resource": resource, "expiresAt": now + LIFETIME_SECS, "used": false,
        TTL: now + KEPT_SECS,
    });
    let hash = sha256_hex(&code);
    let ops = vec![
        TxOp::Put {
            table: Table::Tokens,
            item: item(&code_key_of_hash(&hash), row),
            condition: Some(Condition::NotExists),
        },
        TxOp::Put {
            table: Table::Tokens,
            item: item(
                &index_key(&grant.user_id, &hash),
                json!({TTL: now + KEPT_SECS}),
            ),
            condition: None,
        },
    ];
    ports.items.transact(ops).await?;
    Ok(code)
}

/// Removes every code of `user` with its index row (their grants end, or the account goes);
/// answers how many codes were still there.
pub async fn remove_all(ports: &Ports, user: &UserId) -> Result<usize, StoreError> {
    let page = ports
        .items
        .query(Query::partition(Table::Tokens, format!("USER#{user}")).begins_with(CODE_PREFIX))
        .await?;
    let mut removed = 0;
    for row in &page.items {
        let sk = row.get(SK).and_then(Value::as_str);
        let Some(hash) = sk.and_then(|sk| sk.strip_prefix(CODE_PREFIX)) else {
            continue;
        };
        let mine = Some(Condition::eq("userId", user.as_str()));
        match ports
            .items
            .delete(Table::Tokens, &code_key_of_hash(hash), mine)
            .await
        {
            Ok(found) => removed += usize::from(found.is_some()),
            Err(e) if e.is_condition_failed_at(0) => {}
            Err(e) => return Err(e),
        }
        ports
            .items
            .delete(Table::Tokens, &index_key(user, hash), None)
            .await?;
    }
    Ok(removed)
}

fn invalid_grant(why: &str) -> OAuthError {
    OAuthError::new(ErrorCode::InvalidGrant, why)
}

/// Exchanges `code` once, for `client_id` at `redirect_uri` with PKCE `verifier`: what it
/// stands for, or why not.
pub async fn redeem(
    ports: &Ports,
    code: &str,
    client_id: &str,
    redirect_uri: &str,
    verifier: &str,
) -> Result<CodeGrant, OAuthError> {
    if code.len() > 128 {
        return Err(invalid_grant("code is invalid or expired"));
    }
    let now = ports.clock.unix();
    let key = code_key(code);
    let unused = Condition::And(vec![Condition::Exists, Condition::eq("used", false)]);
    let row = match ports
        .items
        .update(
            Table::Tokens,
            &key,
            Update::set("used", true).and_set("usedAt", now),
            Some(unused),
        )
        .await
    {
        Ok(row) => row,
        Err(e) if e.is_condition_failed_at(0) => {
            return Err(replayed_or_unknown(ports, &key).await?);
        }
        Err(e) => return Err(e.into()),
    };
    let text = |k: &str| row.get(k).and_then(Value::as_str).unwrap_or_default();
    if row
        .get("expiresAt")
        .and_then(Value::as_i64)
        .is_none_or(|e| e <= now)
    {
        return Err(invalid_grant("code is invalid or expired"));
    }
    if text("clientId") != client_id {
        return Err(invalid_grant("code was issued to another client"));
    }
    if text("redirectUri") != redirect_uri {
        return Err(invalid_grant(
            "redirect_uri is not the one of the authorization request",
        ));
    }
    let challenge = text("codeChallenge");
    if !bool::from(s256(verifier).as_bytes().ct_eq(challenge.as_bytes())) {
        return Err(invalid_grant(
            "code_verifier does not match the code_challenge of the authorization request",
        ));
    }
    stored_grant(&row).ok_or_else(|| OAuthError::new(ErrorCode::ServerError, "corrupt code"))
}

/// The refusal of a code that could not be marked used: a replay (its grant's tokens are
/// then revoked), or a code never issued or gone.
async fn replayed_or_unknown(ports: &Ports, key: &Key) -> Result<OAuthError, StoreError> {
    let row = ports.items.get(Table::Tokens, key).await?;
    let Some(row) = row.filter(|r| r.get("used").and_then(Value::as_bool) == Some(true)) else {
        return Ok(invalid_grant("code is invalid or expired"));
    };
    if let Some(family) = row.get("familyId").and_then(Value::as_str) {
        refresh_tokens::revoke_family(ports, family).await?;
    }
    Ok(invalid_grant(
        "code was already used; the tokens issued for it are revoked",
    ))
}

fn stored_grant(row: &Item) -> Option<CodeGrant> {
    let text = |k: &str| row.get(k).and_then(Value::as_str).map(str::to_owned);
    Some(CodeGrant {
        client_id: text("clientId")?,
        user_id: text("userId")?.parse().ok()?,
        family_id: text("familyId")?,
        redirect_uri: text("redirectUri")?,
        scopes: (row.get("scopes")?.as_array()?.iter())
            .filter_map(|s| Scope::parse(s.as_str()?))
            .collect(),
        resource: match text("resource")?.as_str() {
            "mcp" => Resource::Mcp,
            _ => Resource::RestApi,
        },
    })
}
