//! The one place a domain error becomes an answer: each error of `paddock-core` (and of the
//! ports) with the status and message the client gets. Handlers only use `?`.

use super::error::ApiError;
use paddock_core::activity::feed::{FeedReadError, PostError};
use paddock_core::coaching::coach::CoachError;
use paddock_core::coaching::llm::LlmError;
use paddock_core::competition_events::EventError;
use paddock_core::identity::authentication::AuthenticationError;
use paddock_core::identity::passwords::PasswordError;
use paddock_core::identity::signing_keys::SigningKeyError;
use paddock_core::leaderboards::cache::PageError;
use paddock_core::leaderboards::submit_lap::SubmitLapError;
use paddock_core::leagues::LeagueError;
use paddock_core::ports::{BlobError, QueueError, SecretError, StoreError};
use paddock_core::problems::FieldProblems;
use paddock_core::rate_limits::{LimitError, RateLimited};
use paddock_core::request_keys::{KeyError, Refusal, RefusalKind};
use paddock_core::sessions::CreateError;
use paddock_core::sharepacks::packs::PackError;
use paddock_core::tracks::maps::MapReadError;

/// `From<E> for ApiError` for each error `E`, given as the match of its variants. (Written in
/// a macro so that each mapping reads as one table row.)
macro_rules! answers {
    ($($error:ty => |$e:ident| $answer:expr;)*) => {$(
        impl From<$error> for ApiError {
            fn from($e: $error) -> Self {
                $answer
            }
        }
    )*};
}

/// A 503 with `Retry-After` for a backing service that failed: `message` for the client,
/// the error for the log.
fn backend(message: &str, cause: impl std::error::Error + Send + Sync + 'static) -> ApiError {
    let (message, cause) = (message.to_owned(), anyhow::Error::new(cause));
    ApiError::Backend { message, cause }
}

/// The same message for every backing service but the stores of items and files.
const UNAVAILABLE: &str = "the service is temporarily unavailable, please retry";

fn too_many(message: String, retry_after_secs: u64) -> ApiError {
    ApiError::TooManyRequests {
        message,
        retry_after_secs,
    }
}

answers! {
    StoreError => |e| match e {
        StoreError::Unavailable(_) => backend("storage is temporarily unavailable, please retry", e),
        StoreError::Conflict => Self::Conflict("a concurrent change won, please retry".into()),
        StoreError::InvalidCursor => Self::invalid("cursor", "is not a cursor this list returned"),
        other => Self::Internal(other.into()),
    };
    KeyError => |e| match e {
        KeyError::Reused => Self::Unprocessable(e.to_string()),
        KeyError::Store(s) => s.into(),
    };
    Refusal => |r| match r.kind {
        RefusalKind::Invalid => Self::BadRequest(r.message),
        RefusalKind::Unacceptable => Self::Unprocessable(r.message),
    };
    BlobError => |e| match e {
        BlobError::Unavailable(_) => backend("file storage is temporarily unavailable, please retry", e),
        BlobError::InvalidKey(_) => Self::Internal(e.into()),
    };
    QueueError => |e| match e {
        QueueError::Unavailable(_) => backend(UNAVAILABLE, e),
        QueueError::TooLarge(_) => Self::Internal(e.into()),
    };
    SecretError => |e| match e {
        SecretError::Unavailable(_) => backend(UNAVAILABLE, e),
        SecretError::Malformed { .. } => Self::Internal(e.into()),
    };
    RateLimited => |e| too_many(e.to_string(), e.retry_after_secs);
    LimitError => |e| match e {
        LimitError::Limited(l) => l.into(),
        LimitError::Store(s) => s.into(),
    };
    PasswordError => |e| match e {
        PasswordError::Busy { retry_after_secs } => Self::Busy {
            message: "the server is busy signing other drivers in, please retry".into(),
            retry_after_secs,
        },
        PasswordError::Failed(cause) => Self::Internal(anyhow::anyhow!(cause)),
    };
    AuthenticationError => |e| match e {
        AuthenticationError::Refused(reason) => Self::Unauthorized(reason),
        AuthenticationError::NotAllowed(reason) => Self::Forbidden(reason),
        AuthenticationError::Limited { message, retry_after_secs, .. } => too_many(message, retry_after_secs),
        AuthenticationError::Keys(e) => e.into(),
        AuthenticationError::Store(e) => e.into(),
    };
    SigningKeyError => |e| match e {
        SigningKeyError::Secrets(s) => s.into(),
        other => backend(&other.to_string(), other),
    };
    FieldProblems => |e| Self::BadRequest(e.to_string());
    CreateError => |e| match e {
        CreateError::InProgress => Self::Conflict(e.to_string()),
        CreateError::Store(s) => s.into(),
        CreateError::Blob(b) => b.into(),
    };
    PackError => |e| match e {
        PackError::Invalid(p) => p.into(),
        PackError::Zip(_) => Self::Unprocessable(e.to_string()),
        PackError::TooLarge(m) => Self::PayloadTooLarge(m),
        PackError::Mismatch(m) => Self::Unprocessable(m),
        PackError::Limited(l) => l.into(),
        PackError::TooManyPacks(_) => too_many(e.to_string(), 60),
        PackError::NotFound => Self::NotFound(e.to_string()),
        PackError::Busy => Self::Conflict(e.to_string()),
        PackError::Refused(r) => r.into(),
        PackError::Store(s) => s.into(),
        PackError::Blob(b) => b.into(),
        PackError::Io(io) => Self::Internal(anyhow::Error::new(io).context("share pack staging")),
    };
    LeagueError => |e| match e {
        LeagueError::Invalid(p) => p.into(),
        LeagueError::OwnerThemselves(_) => Self::BadRequest(e.to_string()),
        LeagueError::NotFound | LeagueError::UnknownCode | LeagueError::NotAMember => {
            Self::NotFound(e.to_string())
        }
        LeagueError::NotOwner(_) => Self::Forbidden(e.to_string()),
        LeagueError::Full | LeagueError::TooManyOwned(_) | LeagueError::TooManyJoined => {
            Self::Conflict(e.to_string())
        }
        LeagueError::Store(s) => s.into(),
    };
    EventError => |e| match e {
        EventError::Invalid(p) => p.into(),
        EventError::NotFound | EventError::NotASeries => Self::NotFound(e.to_string()),
        EventError::League(league) => league.into(),
        EventError::NotOperator => Self::Forbidden(e.to_string()),
        EventError::TooManyLive => Self::Conflict(e.to_string()),
        EventError::Store(s) => s.into(),
    };
    MapReadError => |e| match e {
        MapReadError::Store(e) => e.into(),
        MapReadError::Blob(e) => e.into(),
    };
    PostError => |e| match e {
        PostError::Invalid(p) => p.into(),
        PostError::Refused(r) => r.into(),
        PostError::Limited(l) => l.into(),
        PostError::Key(k) => k.into(),
    };
    FeedReadError => |e| match e {
        FeedReadError::BadCursor => Self::invalid("cursor", "is not a nextCursor of your feed"),
        FeedReadError::Store(s) => s.into(),
    };
    CoachError => |e| match e {
        CoachError::PromptTooLarge(_) => Self::BadRequest(e.to_string()),
        CoachError::Limit(limit) => limit.into(),
        CoachError::ServiceSpent(ref limited) => too_many(e.to_string(), limited.retry_after_secs),
        CoachError::Llm(llm) => llm.into(),
    };
    LlmError => |e| match e {
        LlmError::NotConfigured => Self::Unavailable("AI coaching is not configured on this server".into()),
        LlmError::Rejected { status } => Self::BadGateway {
            message: "the AI provider is unavailable".into(),
            cause: anyhow::anyhow!("the AI provider answered {status}: check the API key (secret anthropicApiKey or openaiApiKey), Ai__Model and Ai__BaseUrl"),
        },
        LlmError::Busy { retry_after_secs } => Self::Busy {
            message: "the AI provider is busy, please retry".into(),
            retry_after_secs: retry_after_secs.unwrap_or(30).clamp(1, 3600),
        },
        LlmError::Failed { .. } | LlmError::Upstream(_) => Self::BadGateway {
            message: "the AI provider failed to answer".into(),
            cause: anyhow::Error::new(e),
        },
        LlmError::Timeout => Self::GatewayTimeout("the AI provider did not answer in time".into()),
    };
    PageError => |e| match e {
        PageError::TrackNotFound => Self::NotFound(
            "track not found: an id answers once its track's first session is uploaded".into(),
        ),
        PageError::Store(s) => s.into(),
    };
    SubmitLapError => |e| match e {
        SubmitLapError::SessionNotFound => Self::NotFound(e.to_string()),
        SubmitLapError::LowQuality | SubmitLapError::NoSuchLap(_) | SubmitLapError::Implausible(_) => {
            Self::Unprocessable(e.to_string())
        }
        SubmitLapError::AccountGone => Self::Unauthorized(e.to_string()),
        SubmitLapError::NewBoards(limited) => limited.into(),
        SubmitLapError::Contended => Self::Conflict(e.to_string()),
        SubmitLapError::Map(e) => e.into(),
        SubmitLapError::Store(e) => e.into(),
        SubmitLapError::Caller(e) => e.into(),
    };
}
