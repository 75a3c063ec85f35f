//! The errors of the OAuth endpoints, with the codes their RFCs name (RFC 6749 §4.1.2.1 and
//! §5.2, RFC 7009, RFC 8707).

use paddock_kernel::ports::items::StoreError;

/// An error code of the OAuth RFCs.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum ErrorCode {
    /// A parameter is missing, repeated, or breaks its rule.
    InvalidRequest,
    /// The client is unknown or its authentication failed.
    InvalidClient,
    /// The code or refresh token is invalid, expired, used, or another client's.
    InvalidGrant,
    /// The client may not use this grant type.
    UnauthorizedClient,
    /// The grant type is not one this server supports.
    UnsupportedGrantType,
    /// A scope is unknown.
    InvalidScope,
    /// The driver denied the request.
    AccessDenied,
    /// The response type is not `code`.
    UnsupportedResponseType,
    /// The `resource` is not one this server serves (RFC 8707).
    InvalidTarget,
    /// The server failed.
    ServerError,
    /// The server is briefly unable to answer.
    TemporarilyUnavailable,
}

impl ErrorCode {
    /// The code as the RFCs spell it.
    pub fn as_str(self) -> &'static str {
        match self {
            Self::InvalidRequest => "invalid_request",
            Self::InvalidClient => "invalid_client",
            Self::InvalidGrant => "invalid_grant",
            Self::UnauthorizedClient => "unauthorized_client",
            Self::UnsupportedGrantType => "unsupported_grant_type",
            Self::InvalidScope => "invalid_scope",
            Self::AccessDenied => "access_denied",
            Self::UnsupportedResponseType => "unsupported_response_type",
            Self::InvalidTarget => "invalid_target",
            Self::ServerError => "server_error",
            Self::TemporarilyUnavailable => "temporarily_unavailable",
        }
    }
}

/// Why an OAuth request was not answered.
#[derive(Debug, thiserror::Error)]
pub enum OAuthError {
    /// Refused: the RFC's code and a description naming the parameter and the rule.
    #[error("{}: {description}", code.as_str())]
    Refused {
        /// The RFC's code.
        code: ErrorCode,
        /// What was wrong, for the developer reading it.
        description: String,
    },
    /// The item store failed.
    #[error(transparent)]
    Store(#[from] StoreError),
}

impl OAuthError {
    /// A refusal of `code` described by `description`.
    pub fn new(code: ErrorCode, description: impl Into<String>) -> Self {
        Self::Refused {
            code,
            description: description.into(),
        }
    }

    /// An `invalid_request` naming `parameter` and the rule it breaks.
    pub fn invalid(parameter: &str, rule: &str) -> Self {
        Self::new(ErrorCode::InvalidRequest, format!("{parameter}: {rule}"))
    }

    /// The RFC's code of this error (a store failure: `temporarily_unavailable`).
    pub fn code(&self) -> ErrorCode {
        match self {
            Self::Refused { code, .. } => *code,
            Self::Store(_) => ErrorCode::TemporarilyUnavailable,
        }
    }
}
