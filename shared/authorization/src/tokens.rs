//! The token endpoint's exchanges (`/oauth/token`: a code, or a refresh token) and
//! revocation (`/oauth/revoke`, RFC 7009).
//!
//! Every exchange authenticates the client first: a confidential app by its secret, a public
//! one by sending none (its code is bound by PKCE, its refresh tokens to its client id). A
//! refresh token is single use: it is rotated on every exchange, and one presented again
//! revokes the whole grant (`identity::refresh_tokens`).

use serde::Serialize;
use utoipa::ToSchema;

use crate::apps;
use crate::client_documents;
use crate::codes;
use crate::errors::{ErrorCode, OAuthError};
use crate::grants::{self, Grant};
use paddock_identity::identity::access_tokens::AccessTokens;
use paddock_identity::identity::app_tokens::{self, AppTokenRequest, Resource};
use paddock_identity::identity::personal_tokens::Scope;
use paddock_identity::identity::refresh_tokens::{self, RefreshError, added_token_ops};
use paddock_kernel::ids::UserId;
use paddock_kernel::ports::Ports;

/// A client at the token endpoint: its id, and its secret when it sent one.
#[derive(Debug, Clone, Copy)]
pub struct Client<'a> {
    /// `client_id`.
    pub id: &'a str,
    /// `client_secret` (from HTTP Basic or the form).
    pub secret: Option<&'a str>,
}

/// What a client exchanges.
#[derive(Debug, Clone, Copy)]
pub enum Exchange<'a> {
    /// `grant_type=authorization_code`.
    Code {
        /// `code`.
        code: &'a str,
        /// `redirect_uri`, as in the authorization request.
        redirect_uri: &'a str,
        /// `code_verifier` (PKCE).
        verifier: &'a str,
        /// `resource`, if given: must be the authorization request's.
        resource: Option<&'a str>,
    },
    /// `grant_type=refresh_token`.
    Refresh {
        /// `refresh_token`.
        token: &'a str,
        /// `scope`, if given: a subset of the grant's.
        scope: Option<&'a str>,
        /// `resource`, if given (default: the REST API).
        resource: Option<&'a str>,
    },
}

/// A successful token answer (RFC 6749 §5.1).
#[derive(Debug, Clone, Serialize, ToSchema)]
pub struct TokenAnswer {
    /// The access token: `pda_` and a JWT, for `Authorization: Bearer`.
    pub access_token: String,
    /// Always `Bearer`.
    pub token_type: &'static str,
    /// The access token's lifetime in seconds.
    pub expires_in: i64,
    /// A new refresh token (single use; the one exchanged is spent).
    pub refresh_token: String,
    /// The scopes of the access token, space-separated.
    pub scope: String,
}

/// The client id of `client`, authenticated: a registered app by its secret or by sending
/// none (public), a client known by its metadata document by sending none (it is public; its
/// codes and refresh tokens are bound to its client id, and its document was read when the
/// driver consented).
pub async fn authenticate_client(ports: &Ports, client: Client<'_>) -> Result<String, OAuthError> {
    if client_documents::is_document_client(client.id) {
        if client.secret.is_some() {
            return Err(OAuthError::new(
                ErrorCode::InvalidClient,
                "a client known by its metadata document is public and has no secret: send client_id alone, with PKCE",
            ));
        }
        return Ok(client.id.to_owned());
    }
    let app = apps::find(ports, client.id).await?.ok_or_else(|| {
        OAuthError::new(
            ErrorCode::InvalidClient,
            "client_id: no app is registered with this id",
        )
    })?;
    app.authenticate(client.secret)?;
    Ok(app.client_id)
}

/// Answers `exchange` for `client`: tokens signed by `keys`, issued by `issuer`.
pub async fn exchange(
    ports: &Ports,
    keys: &AccessTokens,
    issuer: &str,
    client: Client<'_>,
    exchange: Exchange<'_>,
) -> Result<TokenAnswer, OAuthError> {
    let client_id = authenticate_client(ports, client).await?;
    let (user, family, refresh, scopes, resource, grant) = match exchange {
        Exchange::Code {
            code,
            redirect_uri,
            verifier,
            resource,
        } => {
            let redeemed = codes::redeem(ports, code, &client_id, redirect_uri, verifier).await?;
            if let Some(asked) = resource
                && Resource::named(issuer, asked) != Some(redeemed.resource)
            {
                return Err(OAuthError::new(
                    ErrorCode::InvalidTarget,
                    "resource: is not the one of the authorization request",
                ));
            }
            let grant =
                grants::of_family(ports, &redeemed.user_id, &client_id, &redeemed.family_id)
                    .await?
                    .ok_or_else(revoked)?;
            let (issued, ops) =
                added_token_ops(ports, &redeemed.user_id, &redeemed.family_id, &client_id);
            match ports.items.transact(ops).await {
                Ok(()) => {}
                Err(e) if e.is_condition_failed_at(0) => return Err(revoked()),
                Err(e) => return Err(e.into()),
            }
            (
                redeemed.user_id,
                redeemed.family_id,
                issued.raw,
                redeemed.scopes,
                redeemed.resource,
                grant,
            )
        }
        Exchange::Refresh {
            token,
            scope,
            resource,
        } => {
            let client_id = client_id.as_str();
            let read_grant = |user: UserId| async move {
                let grant = grants::live_row(ports, &user, client_id).await?;
                Ok((user, grant))
            };
            let (issued, (user, grant)) =
                refresh_tokens::rotate_for(ports, token, Some(client_id), read_grant)
                    .await
                    .map_err(refresh_refused)?;
            let grant = grant
                .filter(|g| g.family_id == issued.family_id)
                .ok_or_else(revoked)?;
            let scopes = narrowed(&grant, scope)?;
            let resource = match resource {
                None => Resource::RestApi,
                Some(uri) => Resource::named(issuer, uri).ok_or_else(|| {
                    OAuthError::new(
                        ErrorCode::InvalidTarget,
                        "resource: is not one this server serves",
                    )
                })?,
            };
            (user, issued.family_id, issued.raw, scopes, resource, grant)
        }
    };
    grants::mark_used(ports, &user, &grant).await?;
    let request = AppTokenRequest {
        issuer,
        user_id: &user,
        client_id: &client_id,
        grant_id: &family,
        scopes: &scopes,
        resource,
    };
    let (access_token, claims) = app_tokens::issue(keys, &request, ports.clock.now());
    Ok(TokenAnswer {
        access_token,
        token_type: "Bearer",
        expires_in: app_tokens::LIFETIME_SECS,
        refresh_token: refresh,
        scope: claims.scope,
    })
}

fn revoked() -> OAuthError {
    OAuthError::new(
        ErrorCode::InvalidGrant,
        "the driver's grant to this app was revoked",
    )
}

fn refresh_refused(e: RefreshError) -> OAuthError {
    let why = match e {
        RefreshError::Invalid => "refresh_token is invalid, expired or another client's",
        RefreshError::Replayed => "refresh_token was already used; the grant's tokens are revoked",
        RefreshError::Revoked => "the driver's grant to this app was revoked",
        RefreshError::Store(s) => return s.into(),
    };
    OAuthError::new(ErrorCode::InvalidGrant, why)
}

/// The scopes a refresh asks for: `scope` when given (within the grant's), else the grant's.
fn narrowed(grant: &Grant, scope: Option<&str>) -> Result<Vec<Scope>, OAuthError> {
    let Some(scope) = scope.filter(|s| !s.trim().is_empty()) else {
        return Ok(grant.scopes.clone());
    };
    let mut asked = Vec::new();
    for name in scope.split(' ').filter(|s| !s.is_empty()) {
        match Scope::parse(name) {
            Some(s) if grant.scopes.contains(&s) => asked.push(s),
            _ => {
                return Err(OAuthError::new(
                    ErrorCode::InvalidScope,
                    format!("scope: `{name}` is not among the scopes the driver granted"),
                ));
            }
        }
    }
    Ok(asked)
}

/// Revokes `token` (an access or refresh token `client` holds): the grant's tokens all stop,
/// since each access token is checked against the grant. An unknown token, or another
/// client's, changes nothing and is not told apart (RFC 7009 §2.2).
pub async fn revoke(
    ports: &Ports,
    keys: &AccessTokens,
    client: Client<'_>,
    token: &str,
) -> Result<(), OAuthError> {
    let client_id = authenticate_client(ports, client).await?;
    let family = if app_tokens::is_app_token(token) {
        let now = ports.clock.unix();
        Resource::ALL
            .into_iter()
            .find_map(|r| app_tokens::verify(keys, token, r, now).ok())
            .filter(|claims| claims.client_id == client_id)
            .map(|claims| claims.gid)
    } else {
        refresh_tokens::app_family_of(ports, token)
            .await?
            .filter(|(_, owner)| *owner == client_id)
            .map(|(family, _)| family)
    };
    if let Some(family) = family {
        refresh_tokens::revoke_family(ports, &family).await?;
    }
    Ok(())
}
