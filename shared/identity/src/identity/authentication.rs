//! The one door for credentials: a request's credential and what its route requires go in,
//! who is calling comes out.
//!
//! Two kinds of credential exist today, told apart by their form before any work: the access
//! token of a sign-in (a JWT, checked against the signing keys) and a driver's personal access
//! token (`pdk_...`, checked against its stored hash, its scopes and its rate limit). A route
//! requires either a sign-in ([`Required::SignIn`]: managing the account) or a scope that a
//! sign-in or a token granted it may use ([`Required::Scope`]). A new kind of credential is a
//! new [`Credential`] variant and its arm in [`Door::authenticate`]; no route changes.
//!
//! A sign-in is admitted in two steps: its signature and expiry here, its family (not revoked,
//! the caller's own) by [`Unconfirmed::confirmed`] or beside a route's first reads
//! ([`Unconfirmed::confirmed_beside`]), so that a request waits on one round trip for both.

use std::sync::Arc;
use std::time::Duration;

use paddock_config::config::JwtSettings;
use paddock_kernel::ids::UserId;
use paddock_kernel::ports::Ports;
use paddock_kernel::ports::items::StoreError;
use paddock_kernel::rate_limits::{self, Limit, LimitError, Usage};

use super::access_tokens::{AccessTokens, UNKNOWN_KEY};
use super::app_tokens::{self, AppClaims, Resource};
use super::claims::Claims;
use super::personal_tokens::{self, AuthError, Scope, TokenGrant};
use super::refresh_tokens;
use super::signing_keys::{SigningKeyError, SigningKeys};

/// The rate-limit scope of requests made with a personal access token (subject: its id).
pub const TOKEN_REQUESTS_SCOPE: &str = "token-requests";

/// The rate-limit scope of requests made with an app's tokens for one driver (subject: the
/// grant).
pub const GRANT_REQUESTS_SCOPE: &str = "grant-requests";

/// The rate-limit scope of requests made with an app's tokens for all its drivers (subject:
/// the app's client id).
pub const APP_REQUESTS_SCOPE: &str = "app-requests";

/// How often, at most, a token signed by a key this process has not read makes it read the
/// keys again (another instance read a rotation first).
pub const UNKNOWN_KEY_REREAD: Duration = Duration::from_secs(5);

/// A credential presented with a request.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Credential<'a> {
    /// The access token of a sign-in (a JWT).
    AccessToken(&'a str),
    /// A driver's personal access token.
    PersonalToken(&'a str),
    /// An app's access token, from a driver's consent.
    AppToken(&'a str),
}

impl<'a> Credential<'a> {
    /// The credential a bearer token is, by its form alone.
    pub fn from_bearer(token: &'a str) -> Self {
        if personal_tokens::is_personal_token(token) {
            Self::PersonalToken(token)
        } else if app_tokens::is_app_token(token) {
            Self::AppToken(token)
        } else {
            Self::AccessToken(token)
        }
    }
}

/// What a route requires of its caller.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Required {
    /// A sign-in: a personal access token is refused.
    SignIn,
    /// A sign-in, or a personal access token granted this scope.
    Scope(Scope),
    /// A sign-in, or a personal access token granted any of these scopes (what reading
    /// shared data, such as the tracks, is open to).
    AnyScope(&'static [Scope]),
}

/// How the caller proved who they are.
#[derive(Debug, Clone)]
pub enum Via {
    /// A sign-in, with its access token's verified claims.
    SignIn(Arc<Claims>),
    /// A personal access token.
    PersonalToken(Arc<TokenGrant>),
    /// An app's access token, with its verified claims.
    App(Arc<AppClaims>),
}

/// Who is calling, admitted whole.
#[derive(Debug, Clone)]
pub struct Caller {
    /// The caller's user id.
    pub user_id: UserId,
    /// The credential that admitted them.
    pub via: Via,
    /// The usage of a personal access token's rate limit after this request (for the
    /// answer's `RateLimit-*` headers); none for a sign-in.
    pub usage: Option<Usage>,
}

impl Caller {
    /// The claims of the caller's sign-in, if they signed in.
    pub fn claims(&self) -> Option<&Claims> {
        match &self.via {
            Via::SignIn(claims) => Some(claims),
            Via::PersonalToken(_) | Via::App(_) => None,
        }
    }

    /// The personal access token the caller used, if any.
    pub fn token(&self) -> Option<&TokenGrant> {
        match &self.via {
            Via::SignIn(_) | Via::App(_) => None,
            Via::PersonalToken(grant) => Some(grant),
        }
    }
}

/// A caller whose credential holds, with a sign-in's family still to be confirmed.
#[derive(Debug, Clone)]
pub struct Unconfirmed {
    caller: Caller,
    /// The sign-in whose family is to be read; none for a personal access token (checked
    /// whole already).
    family: Option<Arc<Claims>>,
}

/// Why a caller is not admitted.
#[derive(Debug, thiserror::Error)]
pub enum AuthenticationError {
    /// The credential does not hold (401).
    #[error("{0}")]
    Refused(String),
    /// The credential holds but may not do this (403).
    #[error("{0}")]
    NotAllowed(String),
    /// A personal access token is over its rate limit (429).
    #[error("{message}")]
    Limited {
        /// Why, naming the limit and its configuration key.
        message: String,
        /// Seconds until a request is allowed again.
        retry_after_secs: u64,
        /// The limit's usage (none remaining), for the answer's headers.
        usage: Usage,
    },
    /// No signing keys could be had.
    #[error(transparent)]
    Keys(#[from] SigningKeyError),
    /// The item store failed.
    #[error(transparent)]
    Store(#[from] StoreError),
}

/// What the door checks credentials against: the store, the signing keys and the limits.
#[derive(Clone, Copy)]
pub struct Door<'a> {
    /// The ports (the store, the clock, the secrets the keys are read from).
    pub ports: &'a Ports,
    /// The access-token keys, read and refreshed on use.
    pub keys: &'a SigningKeys,
    /// The access tokens' settings.
    pub jwt: &'a JwtSettings,
    /// How long the keys read are used before they are read again (`Secrets__RefreshSeconds`).
    pub keys_refresh: Duration,
    /// `Limits__TokenRequestsPerMinute`: per personal access token, and per app grant.
    pub token_requests_per_minute: u32,
    /// `Limits__AppRequestsPerMinute`: per app, over all its drivers.
    pub app_requests_per_minute: u32,
    /// The resource whose requests this door admits (an app's token names one).
    pub resource: Resource,
}

impl Door<'_> {
    /// Admits `credential` where `required` holds: a sign-in's signature and expiry, or a
    /// personal access token's hash, scope and rate limit (the request counted, its last use
    /// written beside the count). A sign-in's family is left to the answer's
    /// [`Unconfirmed::confirmed`].
    pub async fn authenticate(
        &self,
        credential: Credential<'_>,
        required: Required,
    ) -> Result<Unconfirmed, AuthenticationError> {
        match credential {
            Credential::AccessToken(token) => {
                let claims = self
                    .verify_access_token(token)
                    .await?
                    .map_err(|reason| AuthenticationError::Refused(reason.into()))?;
                Ok(Unconfirmed {
                    caller: Caller {
                        user_id: claims.sub.clone(),
                        via: Via::SignIn(claims.clone()),
                        usage: None,
                    },
                    family: Some(claims),
                })
            }
            Credential::PersonalToken(token) => {
                let scopes = token_scopes(&required, "personal access tokens")?;
                let caller = self.personal_token(token, scopes).await?;
                Ok(Unconfirmed {
                    caller,
                    family: None,
                })
            }
            Credential::AppToken(token) => {
                let scopes = token_scopes(&required, "an app's tokens")?;
                let caller = self.app_token(token, scopes).await?;
                Ok(Unconfirmed {
                    caller,
                    family: None,
                })
            }
        }
    }

    /// The keys of the current access tokens, read again when due.
    async fn signing_keys(&self, refresh: Duration) -> Result<Arc<AccessTokens>, SigningKeyError> {
        match self.keys.with_fresh(refresh, Arc::clone) {
            Some(keys) => Ok(keys),
            None => {
                self.keys
                    .get(self.ports.secrets.as_ref(), self.jwt, refresh)
                    .await
            }
        }
    }

    /// An app's access token checked whole: its signature, audience and expiry, its scope,
    /// its grant not revoked, and the rate limits of the grant and of the app, in one round
    /// trip.
    async fn app_token(
        &self,
        token: &str,
        scopes: &[Scope],
    ) -> Result<Caller, AuthenticationError> {
        let now = self.ports.clock.unix();
        let mut verdict = app_tokens::verify(
            &*self.signing_keys(self.keys_refresh).await?,
            token,
            self.resource,
            now,
        );
        if verdict == Err(UNKNOWN_KEY) {
            let reread = UNKNOWN_KEY_REREAD.min(self.keys_refresh.max(Duration::from_secs(1)));
            verdict = app_tokens::verify(
                &*self.signing_keys(reread).await?,
                token,
                self.resource,
                now,
            );
        }
        let claims = verdict.map_err(|reason| AuthenticationError::Refused(reason.into()))?;
        let granted = claims.scopes();
        if !scopes.iter().any(|scope| granted.contains(scope)) {
            return Err(AuthenticationError::NotAllowed(format!(
                "this app's token lacks the scope {} that this route needs",
                scope_names(scopes)
            )));
        }
        let per_grant = Limit::new("n", self.token_requests_per_minute);
        let per_app = Limit::new("n", self.app_requests_per_minute);
        let (active, grant, app) = futures::join!(
            refresh_tokens::family_active(self.ports, &claims.gid, &claims.sub),
            self.count(
                GRANT_REQUESTS_SCOPE,
                &claims.gid,
                &per_grant,
                "for this driver"
            ),
            self.count(
                APP_REQUESTS_SCOPE,
                &claims.client_id,
                &per_app,
                "for all its drivers"
            ),
        );
        if !active? {
            return Err(AuthenticationError::Refused(
                "the driver's grant to this app has been revoked".into(),
            ));
        }
        let (grant, app) = (grant?, app?);
        Ok(Caller {
            user_id: claims.sub.clone(),
            via: Via::App(Arc::new(claims)),
            usage: Some(if app.remaining < grant.remaining {
                app
            } else {
                grant
            }),
        })
    }

    /// Counts one request of an app against the limit of `scope` for `subject`.
    async fn count(
        &self,
        scope: &str,
        subject: &str,
        limit: &Limit,
        whose: &str,
    ) -> Result<Usage, AuthenticationError> {
        limited(
            rate_limits::hit_with_usage(self.ports, scope, subject, 60, limit).await,
            |max| {
                format!(
                    "too many requests from this app {whose}: at most {max} a minute \
                 (Limits__{}RequestsPerMinute)",
                    if scope == APP_REQUESTS_SCOPE {
                        "App"
                    } else {
                        "Token"
                    }
                )
            },
        )
    }

    /// The claims of `token` if it is a valid, unexpired access token of the current keys
    /// (`Err` inside: why not). While the keys read are fresh, no lock and no shared
    /// reference count is taken.
    pub async fn verify_access_token(
        &self,
        token: &str,
    ) -> Result<Result<Arc<Claims>, &'static str>, SigningKeyError> {
        let now = self.ports.clock.unix();
        let refresh = self.keys_refresh;
        let verdict = match self
            .keys
            .with_fresh(refresh, |tokens| tokens.verify(token, now))
        {
            Some(verdict) => verdict,
            None => self
                .keys
                .get(self.ports.secrets.as_ref(), self.jwt, refresh)
                .await?
                .verify(token, now),
        };
        if verdict != Err(UNKNOWN_KEY) {
            return Ok(verdict);
        }
        // Signed by a key this instance has not read yet (another instance read a rotation
        // first): the keys are read again, at most once per `UNKNOWN_KEY_REREAD`, so tokens
        // naming made-up keys cannot make every request read the secret.
        let reread = UNKNOWN_KEY_REREAD.min(refresh.max(Duration::from_secs(1)));
        let tokens = self
            .keys
            .get(self.ports.secrets.as_ref(), self.jwt, reread)
            .await?;
        Ok(tokens.verify(token, now))
    }

    /// A personal access token checked whole: its hash, its scope, its rate limit.
    async fn personal_token(
        &self,
        token: &str,
        scopes: &[Scope],
    ) -> Result<Caller, AuthenticationError> {
        let grant = personal_tokens::authenticate(self.ports, token)
            .await
            .map_err(|e| match e {
                AuthError::Refused(r) => AuthenticationError::Refused(r.to_string()),
                AuthError::Store(s) => AuthenticationError::Store(s),
            })?;
        if !scopes.iter().any(|scope| grant.allows(*scope)) {
            return Err(AuthenticationError::NotAllowed(format!(
                "this personal access token lacks the scope {} that this route needs",
                scope_names(scopes)
            )));
        }
        let now = self.ports.clock.unix();
        // The last use is written beside the request's count, in the same round trip: not
        // after the answer, which a Lambda function may never get to (it is frozen once it
        // has answered). A failed write only leaves `lastUsedAt` a minute behind.
        let mark_used = async {
            if personal_tokens::last_used_due(&grant, now)
                && let Err(e) = personal_tokens::mark_used(self.ports, &grant, now).await
            {
                tracing::warn!(error = %e, "recording a token's last use failed");
            }
        };
        let (counted, ()) = futures::join!(self.count_request(&grant), mark_used);
        Ok(Caller {
            user_id: grant.user_id.clone(),
            via: Via::PersonalToken(Arc::new(grant)),
            usage: Some(counted?),
        })
    }

    /// Counts one request of `grant` against `Limits__TokenRequestsPerMinute`.
    async fn count_request(&self, grant: &TokenGrant) -> Result<Usage, AuthenticationError> {
        let limit = Limit::new("n", self.token_requests_per_minute);
        let counted = rate_limits::hit_with_usage(
            self.ports,
            TOKEN_REQUESTS_SCOPE,
            &grant.token_id,
            60,
            &limit,
        )
        .await;
        limited(counted, |max| {
            format!(
                "too many requests with this personal access token: at most {max} a minute \
                 (Limits__TokenRequestsPerMinute)"
            )
        })
    }
}

/// A count's usage, or the refusal of a request over the limit (`why` of the limit's most).
fn limited(
    counted: Result<Usage, LimitError>,
    why: impl FnOnce(u32) -> String,
) -> Result<Usage, AuthenticationError> {
    match counted {
        Ok(usage) => Ok(usage),
        Err(LimitError::Limited(limited)) => Err(AuthenticationError::Limited {
            message: format!(
                "{}, retry in {} seconds",
                why(limited.max),
                limited.retry_after_secs
            ),
            retry_after_secs: limited.retry_after_secs,
            usage: Usage {
                limit: limited.max,
                remaining: 0,
                reset_secs: limited.retry_after_secs,
            },
        }),
        Err(LimitError::Store(e)) => Err(e.into()),
    }
}

/// The scopes a token may be admitted with for `required`; a route that needs a sign-in
/// refuses `kind` (403).
fn token_scopes<'r>(
    required: &'r Required,
    kind: &str,
) -> Result<&'r [Scope], AuthenticationError> {
    match required {
        Required::Scope(scope) => Ok(std::slice::from_ref(scope)),
        Required::AnyScope(scopes) => Ok(scopes),
        Required::SignIn => Err(AuthenticationError::NotAllowed(format!(
            "{kind} cannot be used on this route: it needs a signed-in session"
        ))),
    }
}

/// `scopes` as a route's refusal names them: `` `a` or `b` ``.
fn scope_names(scopes: &[Scope]) -> String {
    let named: Vec<String> = scopes.iter().map(|s| format!("`{}`", s.name())).collect();
    named.join(" or ")
}

impl Unconfirmed {
    /// The caller's user id, as the verified credential names it.
    pub fn user_id(&self) -> &UserId {
        &self.caller.user_id
    }

    /// The usage of a personal access token's rate limit after this request; none for a
    /// sign-in.
    pub fn usage(&self) -> Option<Usage> {
        self.caller.usage
    }

    /// Whether the credential that admitted the caller also allows `required`, with the
    /// door's refusals: for a request answered on the caller's behalf by another endpoint (the
    /// MCP server's tools answer through the REST routes), which counts no second request.
    pub fn permits(&self, required: Required) -> Result<(), AuthenticationError> {
        let (granted, kind) = match &self.caller.via {
            Via::SignIn(_) => return Ok(()),
            Via::PersonalToken(grant) => (grant.scopes.clone(), "personal access token"),
            Via::App(claims) => (claims.scopes(), "app's token"),
        };
        let scopes = token_scopes(&required, &format!("{kind}s"))?;
        if scopes.iter().any(|scope| granted.contains(scope)) {
            return Ok(());
        }
        Err(AuthenticationError::NotAllowed(format!(
            "this {kind} lacks the scope {} that this route needs",
            scope_names(scopes)
        )))
    }

    /// The caller, once a sign-in's family is confirmed: not revoked, and the caller's own.
    pub async fn confirmed(self, ports: &Ports) -> Result<Caller, AuthenticationError> {
        if let Some(claims) = &self.family
            && !refresh_tokens::family_active(ports, &claims.sid, &claims.sub).await?
        {
            return Err(AuthenticationError::Refused(
                "session has been revoked".into(),
            ));
        }
        Ok(self.caller)
    }

    /// Runs `reads` beside the confirmation of a sign-in's family, and answers both once both
    /// are done. The reads see the claimed user's data before the sign-in is confirmed: they
    /// must write nothing, and their answer must be handed over only when the caller is.
    pub async fn confirmed_beside<F: Future>(
        self,
        ports: &Ports,
        reads: F,
    ) -> (Result<Caller, AuthenticationError>, F::Output) {
        futures::join!(self.confirmed(ports), reads)
    }
}
