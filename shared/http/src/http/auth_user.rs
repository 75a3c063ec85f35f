//! The one extractor that authenticates every protected endpoint, over the domain's one door
//! (`identity::authentication`), and the client address.
//!
//! A route names what it requires by the extractor's type: [`Caller<scope::SignIn>`] for a
//! sign-in only (managing the account: tokens, password, profile changes, export, deletion;
//! a personal access token there is refused with 403), [`Caller<scope::X>`] for a sign-in or
//! a token granted scope `X`. With [`Deferred`] as its second parameter, a sign-in's family is
//! read beside the route's first reads ([`Caller::confirmed_with`]) instead of before them.

use axum::extract::FromRequestParts;
use http::request::Parts;
use http::{HeaderValue, header};
use std::marker::PhantomData;
use std::sync::{Arc, OnceLock};

use super::ApiError;
use crate::bearer::bearer_of;
use crate::state::AppState;
use paddock_core::identity::authentication::{
    self, AuthenticationError, Credential, Required, Unconfirmed,
};
use paddock_core::identity::claims::Claims;
use paddock_core::identity::personal_tokens::{Scope, TokenGrant};
use paddock_core::ids::UserId;
use paddock_core::rate_limits::Usage;

/// The bearer token of an `Authorization` value; 401 when there is none.
fn required_bearer(authorization: Option<&HeaderValue>) -> Result<&str, ApiError> {
    authorization
        .and_then(bearer_of)
        .ok_or_else(|| ApiError::Unauthorized("missing bearer token".into()))
}

/// What a route requires of its caller, named by a type of [`scope`].
pub trait Requirement: Send + Sync + 'static {
    /// The requirement the door checks.
    const REQUIRED: Required;
}

/// Marker types naming what each route requires, for [`Caller`].
pub mod scope {
    use super::{Required, Requirement, Scope};

    macro_rules! scopes {
        ($($name:ident $text:literal),* $(,)?) => {$(
            #[doc = concat!("Scope `", $text, "`: a sign-in, or a personal access token granted it.")]
            #[derive(Debug, Clone, Copy)]
            pub struct $name;
            impl Requirement for $name {
                const REQUIRED: Required = Required::Scope(Scope::$name);
            }
        )*};
    }

    /// A sign-in: personal access tokens are refused.
    #[derive(Debug, Clone, Copy)]
    pub struct SignIn;
    impl Requirement for SignIn {
        const REQUIRED: Required = Required::SignIn;
    }

    scopes! {
        SessionsRead "sessions:read", SessionsWrite "sessions:write", BoardsRead "boards:read",
        BoardsSubmit "boards:submit", ProfileRead "profile:read", ActivityRead "activity:read",
        Sharepacks "sharepacks", Webhooks "webhooks", EventsRead "events:read", Leagues "leagues",
    }
}

/// When a sign-in's family is confirmed: at extraction ([`Confirmed`]) or beside the route's
/// first reads ([`Deferred`]).
pub trait Confirmation: Send + Sync + 'static {
    /// What the extractor holds until the route uses it.
    type Held: Clone + std::fmt::Debug + Send + Sync;

    /// What the extractor holds of an admitted credential.
    fn hold(
        admitted: Unconfirmed,
        state: &AppState,
    ) -> impl Future<Output = Result<Self::Held, ApiError>> + Send;
}

/// The caller is admitted whole before the handler runs.
#[derive(Debug, Clone, Copy)]
pub struct Confirmed;
impl Confirmation for Confirmed {
    type Held = authentication::Caller;

    async fn hold(admitted: Unconfirmed, state: &AppState) -> Result<Self::Held, ApiError> {
        Ok(admitted.confirmed(&state.ports).await?)
    }
}

/// A sign-in's family is read beside the route's first reads ([`Caller::confirmed_with`]).
#[derive(Debug, Clone, Copy)]
pub struct Deferred;
impl Confirmation for Deferred {
    type Held = Unconfirmed;

    async fn hold(admitted: Unconfirmed, _: &AppState) -> Result<Self::Held, ApiError> {
        Ok(admitted)
    }
}

/// Where a request made with a personal access token leaves the usage of its rate limit, for
/// the `RateLimit-*` headers of its answer (see `super::rate_limit_headers`).
#[derive(Debug, Clone, Default)]
pub struct RateLimitSlot(pub(crate) Arc<OnceLock<Usage>>);

impl RateLimitSlot {
    /// Leaves `usage` for the answer's headers (the first left stays).
    pub fn set(&self, usage: Usage) {
        let _ = self.0.set(usage);
    }
}

/// A caller the door admitted at another endpoint that answers through the routes (the MCP
/// server's tools read through the REST routes), as a request extension: a route checks its
/// own requirement against it ([`Unconfirmed::permits`]) instead of counting a second request.
#[derive(Debug, Clone)]
pub struct Admitted(pub Unconfirmed);

/// The caller of a route that requires `R`, admitted by the domain's door.
#[derive(Debug, Clone)]
pub struct Caller<R: Requirement, C: Confirmation = Confirmed> {
    held: C::Held,
    required: PhantomData<R>,
}

impl<R: Requirement, C: Confirmation> Caller<R, C> {
    /// Authenticates an `Authorization` header's value against `R` (a sign-in's family
    /// confirmed as `C` says); `slot` takes a token's rate-limit usage for the answer's headers.
    /// A caller `admitted` already is checked against `R` alone.
    pub async fn from_authorization(
        authorization: Option<&HeaderValue>,
        slot: Option<&RateLimitSlot>,
        admitted: Option<&Admitted>,
        state: &AppState,
    ) -> Result<Self, ApiError> {
        if let Some(Admitted(admitted)) = admitted {
            admitted.permits(R::REQUIRED)?;
            return Ok(Self {
                held: C::hold(admitted.clone(), state).await?,
                required: PhantomData,
            });
        }
        let credential = Credential::from_bearer(required_bearer(authorization)?);
        let admitted = state.door().authenticate(credential, R::REQUIRED).await;
        let usage = match &admitted {
            Ok(unconfirmed) => unconfirmed.usage(),
            Err(AuthenticationError::Limited { usage, .. }) => Some(*usage),
            Err(_) => None,
        };
        if let (Some(slot), Some(usage)) = (slot, usage) {
            let _ = slot.0.set(usage);
        }
        Ok(Self {
            held: C::hold(admitted?, state).await?,
            required: PhantomData,
        })
    }
}

impl<R: Requirement> Caller<R, Confirmed> {
    /// The caller's user id.
    pub fn user_id(&self) -> &UserId {
        &self.held.user_id
    }

    /// The token the request was made with, if not a sign-in.
    pub fn token(&self) -> Option<&TokenGrant> {
        self.held.token()
    }
}

impl<C: Confirmation<Held = authentication::Caller>> Caller<scope::SignIn, C> {
    /// The verified claims of the caller's sign-in.
    pub fn claims(&self) -> &Claims {
        match self.held.claims() {
            Some(claims) => claims,
            // The door admits nothing but a sign-in where one is required.
            None => unreachable!("a route requiring a sign-in admitted a personal token"),
        }
    }
}

impl<R: Requirement> Caller<R, Deferred> {
    /// The caller's user id, as the verified credential names it.
    pub fn user_id(&self) -> &UserId {
        self.held.user_id()
    }

    /// Runs `reads` beside the confirmation of the caller's sign-in; answers the caller and
    /// what the reads answered once both are done and the sign-in holds. A revoked sign-in is
    /// refused (401) whatever the reads answered.
    pub async fn confirmed_with<T, E>(
        self,
        state: &AppState,
        reads: impl Future<Output = Result<T, E>>,
    ) -> Result<(Caller<R>, T), ApiError>
    where
        ApiError: From<E>,
    {
        let (confirmed, read) = self.held.confirmed_beside(&state.ports, reads).await;
        let caller = Caller {
            held: confirmed?,
            required: PhantomData,
        };
        Ok((caller, read?))
    }

    /// The answer to a request refused for itself (a field breaking a rule, say): a revoked
    /// sign-in is told that first, as when the sign-in is checked before anything else.
    pub async fn refusal(self, state: &AppState, refused: ApiError) -> ApiError {
        match self.held.confirmed(&state.ports).await {
            Ok(_) => refused,
            Err(e) => e.into(),
        }
    }

    /// The admitted credential, for a use case that confirms the sign-in itself (beside its
    /// own first reads).
    pub fn into_unconfirmed(self) -> Unconfirmed {
        self.held
    }
}

impl<R: Requirement, C: Confirmation> FromRequestParts<AppState> for Caller<R, C> {
    type Rejection = ApiError;

    async fn from_request_parts(parts: &mut Parts, state: &AppState) -> Result<Self, ApiError> {
        let (slot, admitted) = (parts.extensions.get(), parts.extensions.get());
        Self::from_authorization(
            parts.headers.get(header::AUTHORIZATION),
            slot,
            admitted,
            state,
        )
        .await
    }
}
