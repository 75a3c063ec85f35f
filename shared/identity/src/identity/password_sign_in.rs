//! Signing in with email and password, under the sign-in rate limits: what the API's login and
//! the OAuth consent page both ask before either hands anything out.

use futures::join;

use super::account_subject;
use super::fields::Email;
use super::passwords::{PasswordError, PasswordHasher};
use super::users::{self, User};
use paddock_config::config::AuthSettings;
use paddock_kernel::ports::Ports;
use paddock_kernel::ports::items::{StoreError, TxOp};
use paddock_kernel::rate_limits::{self, Limit, LimitError, RateLimited};

/// Why a sign-in was refused.
#[derive(Debug, thiserror::Error)]
pub enum SignInError {
    /// The email or the password is wrong (one answer for both).
    #[error("invalid email or password")]
    WrongCredentials,
    /// Too many attempts (from the address, for the account, or guarded).
    #[error(transparent)]
    Limited(#[from] RateLimited),
    /// Hashing is saturated or failed.
    #[error(transparent)]
    Hashing(#[from] PasswordError),
    /// The item store failed.
    #[error(transparent)]
    Store(#[from] StoreError),
}

impl From<LimitError> for SignInError {
    fn from(e: LimitError) -> Self {
        match e {
            LimitError::Limited(limited) => Self::Limited(limited),
            LimitError::Store(e) => Self::Store(e),
        }
    }
}

/// The per-address cap on registrations and logins.
pub fn address_limit(auth: &AuthSettings) -> Limit {
    Limit::new("all", auth.attempts_per_address)
}

/// The per-account limit on failed logins, from any address.
fn failure_limit(auth: &AuthSettings) -> [Limit; 1] {
    [Limit::new("failed", auth.failed_logins_per_account)]
}

/// Counts a failed attempt against the account; only a store failure is an error here.
pub async fn count_failure(
    ports: &Ports,
    auth: &AuthSettings,
    scope: &str,
    subject: &str,
) -> Result<(), StoreError> {
    let window = auth.failed_login_window_secs;
    match rate_limits::hit(ports, scope, subject, window, &failure_limit(auth)).await {
        Ok(()) | Err(LimitError::Limited(_)) => Ok(()),
        Err(LimitError::Store(e)) => Err(e),
    }
}

/// The account whose email and password these are, asked from `addr`, with the write that
/// remembers the address (when it is new to the account) for the sign-in's own transaction.
pub async fn check(
    ports: &Ports,
    hasher: &PasswordHasher,
    auth: &AuthSettings,
    addr: &str,
    email: &Email,
    password: String,
) -> Result<(User, Option<TxOp>), SignInError> {
    let account = account_subject(&email.normalized());
    // What the sign-in decides by, read at once: the address's log, the account's failure
    // log, the email's claim and whether the account signed in from this address before.
    let keys = vec![
        rate_limits::main_log("auth", addr),
        rate_limits::main_log("login-failures", &account),
        users::email_claim_key(&email.normalized()),
        rate_limits::known_address(&account, addr),
    ];
    let [address_log, failure_log, claim, known]: [Option<_>; 4] = ports
        .items
        .get_many(keys)
        .await?
        .try_into()
        .map_err(|_| StoreError::Unavailable("a read answered other items".into()))?;
    let claim = users::email_claim_of(claim)?;
    let known = known.is_some();
    rate_limits::refusal_in(
        ports,
        address_log.as_ref(),
        auth.rate_window_secs,
        &[address_limit(auth)],
    )?;
    // One update counts the attempt against the address and against (address, account);
    // the account is read beside it (used only if the password matches).
    let limits = [
        address_limit(auth),
        Limit::new(
            format!("account:{account}"),
            auth.login_attempts_per_account,
        ),
    ];
    let (counted, user) = join!(
        rate_limits::hit_read(
            ports,
            "auth",
            addr,
            auth.rate_window_secs,
            &limits,
            None,
            address_log
        ),
        async {
            match &claim {
                Some(claim) => users::get(ports, &claim.user_id).await,
                None => Ok(None),
            }
        }
    );
    counted?;
    let user = user?;
    // Guessing one account from many addresses: past the per-account failure limit, an
    // address the account never signed in from gets a few attempts of its own per failure
    // window. Slowed, not shut out: the budget is keyed by the address, so failures from
    // elsewhere cannot use up the owner's, and the right password still signs in.
    let failures = rate_limits::refusal_in(
        ports,
        failure_log.as_ref(),
        auth.failed_login_window_secs,
        &failure_limit(auth),
    );
    if failures.is_err() && !known {
        let guarded = [Limit::new("n", auth.guarded_attempts_per_address)];
        // Beside the account's failure log, so it goes with the account's counters.
        rate_limits::hit_log(
            ports,
            "login-failures",
            &account,
            &format!("guarded#{addr}"),
            auth.failed_login_window_secs,
            &guarded,
        )
        .await?;
    }
    let hash = claim.as_ref().and_then(|c| c.password_hash.clone());
    // An unknown email verifies against a dummy hash: same answer, same time.
    let matches = hasher.verify(password, hash).await?;
    let user = match (matches, claim) {
        (true, Some(_)) => user,
        _ => None,
    };
    let Some(user) = user else {
        count_failure(ports, auth, "login-failures", &account).await?;
        return Err(SignInError::WrongCredentials);
    };
    // The address is remembered in the sign-in's own transaction.
    let remember = (!known).then(|| rate_limits::remember_address_op(ports, &account, addr));
    Ok((user, remember))
}
