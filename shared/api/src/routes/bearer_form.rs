//! A bearer token of no form this service issues is refused on every route, the public ones
//! included: a tool sending a mistyped token hears of it instead of reading anonymously. A
//! token of a known form is left to the routes (a public route ignores an expired sign-in
//! token, which the desktop client may still hold). The metrics scrape's own token is not a
//! driver's and has no form of ours; the MCP endpoint refuses tokens itself, in its
//! protocol's words and with the challenge its clients discover the authorization server by.

use axum::extract::Request;
use axum::middleware::Next;
use axum::response::{IntoResponse, Response};

use crate::http::ApiError;
use paddock_core::identity::{app_tokens, personal_tokens};
use paddock_http::bearer::bearer;

/// Refuses a request whose bearer token has no form of ours (401, as the door words it).
pub(crate) async fn refuse_malformed_bearer(req: Request, next: Next) -> Response {
    let refusal = match bearer(req.headers()) {
        Some(_) if [super::health::METRICS_PATH, mcp_server::PATH].contains(&req.uri().path()) => {
            None
        }
        Some(token) => malformed(token),
        None => None,
    };
    match refusal {
        Some(reason) => ApiError::Unauthorized(reason).into_response(),
        None => next.run(req).await,
    }
}

/// Why `token` is of no form this service issues, if it is not.
fn malformed(token: &str) -> Option<String> {
    if personal_tokens::is_personal_token(token) {
        return personal_tokens::check_form(token)
            .err()
            .map(|e| e.to_string());
    }
    let jwt = token.strip_prefix(app_tokens::PREFIX).unwrap_or(token);
    let base64url = |b: u8| b.is_ascii_alphanumeric() || b == b'-' || b == b'_';
    let jwt_shaped = jwt.split('.').count() == 3 && jwt.bytes().all(|b| base64url(b) || b == b'.');
    (!jwt_shaped).then(|| "invalid token".to_owned())
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn only_tokens_of_no_known_form_are_malformed() {
        assert_eq!(malformed("not a token").as_deref(), Some("invalid token"));
        assert_eq!(malformed("abc").as_deref(), Some("invalid token"));
        assert!(malformed("pdk_short").unwrap().contains("malformed"));
        assert_eq!(
            malformed("aaa.bbb.ccc"),
            None,
            "JWT-shaped: left to the routes"
        );
        assert_eq!(malformed("pda_aaa.bbb.ccc"), None);
        let token = personal_tokens::generate();
        assert_eq!(malformed(&token), None);
        let mut typo = token.clone();
        typo.pop();
        typo.push(if token.ends_with('A') { 'B' } else { 'A' });
        assert!(malformed(&typo).unwrap().contains("checksum"));
    }
}
