//! The one place a domain error becomes an answer: each error of `paddock-core` (and of the
//! ports) with the status and message the client gets. Handlers only use `?`.

use super::error::ApiError;
use paddock_core::activity::feed::{FeedReadError, PostError};
use paddock_core::coaching::coach::CoachError;
use paddock_core::coaching::llm::LlmError;
use paddock_core::identity::authentication::AuthenticationError;
use paddock_core::identity::passwords::PasswordError;
use paddock_core::identity::signing_keys::SigningKeyError;
use paddock_core::leaderboards::cache::PageError;
use paddock_core::leaderboards::submit_lap::SubmitLapError;
use paddock_core::ports::{BlobError, QueueError, SecretError, StoreError};
use paddock_core::problems::FieldProblems;
use paddock_core::rate_limits::{LimitError, RateLimited};
use paddock_core::request_keys::{KeyError, Refusal, RefusalKind};
use paddock_core::sessions::CreateError;
use paddock_core::sharepacks::packs::PackError;
use paddock_core::tracks::maps::MapReadError;

impl From<StoreError> for ApiError {
    fn from(e: StoreError) -> Self {
        match e {
            StoreError::Unavailable(_) => Self::Backend {
                message: "storage is temporarily unavailable, please retry".into(),
                cause: anyhow::Error::new(e),
            },
            StoreError::Conflict => Self::Conflict("a concurrent change won, please retry".into()),
            StoreError::InvalidCursor => {
                Self::invalid("cursor", "is not a cursor this list returned")
            }
            other => Self::Internal(anyhow::Error::new(other)),
        }
    }
}

impl From<KeyError> for ApiError {
    fn from(e: KeyError) -> Self {
        match e {
            KeyError::Reused => Self::Unprocessable(e.to_string()),
            KeyError::Store(s) => s.into(),
        }
    }
}

impl From<Refusal> for ApiError {
    fn from(r: Refusal) -> Self {
        match r.kind {
            RefusalKind::Invalid => Self::BadRequest(r.message),
            RefusalKind::Unacceptable => Self::Unprocessable(r.message),
        }
    }
}

impl From<BlobError> for ApiError {
    fn from(e: BlobError) -> Self {
        match e {
            BlobError::Unavailable(_) => Self::Backend {
                message: "file storage is temporarily unavailable, please retry".into(),
                cause: anyhow::Error::new(e),
            },
            BlobError::InvalidKey(_) => Self::Internal(anyhow::Error::new(e)),
        }
    }
}

impl From<QueueError> for ApiError {
    fn from(e: QueueError) -> Self {
        match e {
            QueueError::Unavailable(_) => Self::Backend {
                message: "the service is temporarily unavailable, please retry".into(),
                cause: anyhow::Error::new(e),
            },
            QueueError::TooLarge(_) => Self::Internal(anyhow::Error::new(e)),
        }
    }
}

impl From<SecretError> for ApiError {
    fn from(e: SecretError) -> Self {
        match e {
            SecretError::Unavailable(_) => Self::Backend {
                message: "the service is temporarily unavailable, please retry".into(),
                cause: anyhow::Error::new(e),
            },
            SecretError::Malformed { .. } => Self::Internal(anyhow::Error::new(e)),
        }
    }
}

impl From<RateLimited> for ApiError {
    fn from(e: RateLimited) -> Self {
        Self::TooManyRequests {
            message: e.to_string(),
            retry_after_secs: e.retry_after_secs,
        }
    }
}

impl From<LimitError> for ApiError {
    fn from(e: LimitError) -> Self {
        match e {
            LimitError::Limited(l) => l.into(),
            LimitError::Store(s) => s.into(),
        }
    }
}

impl From<PasswordError> for ApiError {
    fn from(e: PasswordError) -> Self {
        match e {
            PasswordError::Busy { retry_after_secs } => Self::Busy {
                message: "the server is busy signing other drivers in, please retry".into(),
                retry_after_secs,
            },
            PasswordError::Failed(cause) => Self::Internal(anyhow::anyhow!(cause)),
        }
    }
}

impl From<AuthenticationError> for ApiError {
    fn from(e: AuthenticationError) -> Self {
        match e {
            AuthenticationError::Refused(reason) => Self::Unauthorized(reason),
            AuthenticationError::NotAllowed(reason) => Self::Forbidden(reason),
            AuthenticationError::Limited {
                message,
                retry_after_secs,
                ..
            } => Self::TooManyRequests {
                message,
                retry_after_secs,
            },
            AuthenticationError::Keys(e) => e.into(),
            AuthenticationError::Store(e) => e.into(),
        }
    }
}

impl From<SigningKeyError> for ApiError {
    fn from(e: SigningKeyError) -> Self {
        match e {
            SigningKeyError::Secrets(s) => s.into(),
            other => Self::Backend {
                message: other.to_string(),
                cause: anyhow::Error::new(other),
            },
        }
    }
}

impl From<FieldProblems> for ApiError {
    fn from(e: FieldProblems) -> Self {
        Self::BadRequest(e.to_string())
    }
}

impl From<CreateError> for ApiError {
    fn from(e: CreateError) -> Self {
        match e {
            CreateError::InProgress => Self::Conflict(e.to_string()),
            CreateError::Store(s) => s.into(),
            CreateError::Blob(b) => b.into(),
        }
    }
}

impl From<PackError> for ApiError {
    fn from(e: PackError) -> Self {
        match e {
            PackError::Invalid(p) => p.into(),
            PackError::Zip(_) => Self::Unprocessable(e.to_string()),
            PackError::TooLarge(m) => Self::PayloadTooLarge(m),
            PackError::Mismatch(m) => Self::Unprocessable(m),
            PackError::Limited(l) => l.into(),
            PackError::TooManyPacks(_) => Self::TooManyRequests {
                message: e.to_string(),
                retry_after_secs: 60,
            },
            PackError::NotFound => Self::NotFound(e.to_string()),
            PackError::Busy => Self::Conflict(e.to_string()),
            PackError::Refused(r) => r.into(),
            PackError::Store(s) => s.into(),
            PackError::Blob(b) => b.into(),
            PackError::Io(io) => {
                Self::Internal(anyhow::Error::new(io).context("share pack staging"))
            }
        }
    }
}

impl From<MapReadError> for ApiError {
    fn from(e: MapReadError) -> Self {
        match e {
            MapReadError::Store(e) => e.into(),
            MapReadError::Blob(e) => e.into(),
        }
    }
}

impl From<PostError> for ApiError {
    fn from(e: PostError) -> Self {
        match e {
            PostError::Invalid(p) => p.into(),
            PostError::Refused(r) => r.into(),
            PostError::Limited(l) => l.into(),
            PostError::Key(k) => k.into(),
        }
    }
}

impl From<FeedReadError> for ApiError {
    fn from(e: FeedReadError) -> Self {
        match e {
            FeedReadError::BadCursor => Self::invalid("cursor", "is not a nextCursor of your feed"),
            FeedReadError::Store(s) => s.into(),
        }
    }
}

impl From<CoachError> for ApiError {
    fn from(e: CoachError) -> Self {
        match e {
            CoachError::PromptTooLarge(_) => Self::BadRequest(e.to_string()),
            CoachError::Limit(limit) => limit.into(),
            CoachError::ServiceSpent(ref limited) => Self::TooManyRequests {
                message: e.to_string(),
                retry_after_secs: limited.retry_after_secs,
            },
            CoachError::Llm(llm) => llm.into(),
        }
    }
}

impl From<LlmError> for ApiError {
    fn from(e: LlmError) -> Self {
        match e {
            LlmError::NotConfigured => {
                Self::Unavailable("AI coaching is not configured on this server".into())
            }
            LlmError::Rejected { status } => Self::BadGateway {
                message: "the AI provider is unavailable".into(),
                cause: anyhow::anyhow!(
                    "the AI provider answered {status}: check the API key (secret anthropicApiKey or openaiApiKey), Ai__Model and Ai__BaseUrl"
                ),
            },
            LlmError::Busy { retry_after_secs } => Self::Busy {
                message: "the AI provider is busy, please retry".into(),
                retry_after_secs: retry_after_secs.unwrap_or(30).clamp(1, 3600),
            },
            LlmError::Failed { .. } | LlmError::Upstream(_) => Self::BadGateway {
                message: "the AI provider failed to answer".into(),
                cause: anyhow::Error::new(e),
            },
            LlmError::Timeout => {
                Self::GatewayTimeout("the AI provider did not answer in time".into())
            }
        }
    }
}

impl From<PageError> for ApiError {
    fn from(e: PageError) -> Self {
        match e {
            PageError::TrackNotFound => Self::NotFound("track not found".into()),
            PageError::Store(s) => s.into(),
        }
    }
}

impl From<SubmitLapError> for ApiError {
    fn from(e: SubmitLapError) -> Self {
        match e {
            SubmitLapError::SessionNotFound => Self::NotFound(e.to_string()),
            SubmitLapError::LowQuality
            | SubmitLapError::NoSuchLap(_)
            | SubmitLapError::Implausible(_) => Self::Unprocessable(e.to_string()),
            SubmitLapError::AccountGone => Self::Unauthorized(e.to_string()),
            SubmitLapError::NewBoards(limited) => limited.into(),
            SubmitLapError::Contended => Self::Conflict(e.to_string()),
            SubmitLapError::Map(e) => e.into(),
            SubmitLapError::Store(e) => e.into(),
            SubmitLapError::Caller(e) => e.into(),
        }
    }
}
