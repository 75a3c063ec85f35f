//! The service's public base URL as a request sees it: where identity providers send a
//! driver back to.
//!
//! In AWS the template sets `Auth__PublicUrl` only from the operator's `PublicUrl` or
//! `DomainName`: the HTTP API's own address cannot be given to the auth function, because the
//! API's definition refers to the function and CloudFormation refuses the circle. Without it
//! the address is the domain API Gateway received the request on (`requestContext.domainName`
//! of the HTTP API event). API Gateway picks the API by that name, so a request that reaches
//! the function came in on the API's own address or on a custom domain mapped to it: no client
//! can choose it. The `Host` header and the forwarding headers are never read (anyone can set
//! them, and a provider would send the driver's code wherever they point).

use axum::extract::FromRequestParts;
use http::request::Parts;
use lambda_http::request::RequestContext;

use crate::state::AppState;

/// The public base URL without a trailing slash: `Auth__PublicUrl` when set, else in Lambda
/// `https://<the domain API Gateway received the request on>`, else (the local server)
/// `http://<Server__Address>`.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct PublicUrl(pub String);

impl PublicUrl {
    /// The base URL for a request with `parts`, served with `state`'s settings.
    pub fn of(parts: &Parts, state: &AppState) -> Self {
        Self::resolve(state.settings.auth.public_url.as_deref(), parts, || {
            state.public_url()
        })
    }

    /// `configured` when set, else the API Gateway domain in `parts`, else `local()`.
    fn resolve(configured: Option<&str>, parts: &Parts, local: impl FnOnce() -> String) -> Self {
        if let Some(configured) = configured {
            return Self(configured.to_owned());
        }
        if let Some(RequestContext::ApiGatewayV2(ctx)) = parts.extensions.get::<RequestContext>()
            && let Some(domain) = ctx.domain_name.as_deref().filter(|d| is_host_name(d))
        {
            return Self(format!("https://{}", domain.to_ascii_lowercase()));
        }
        Self(local())
    }
}

impl FromRequestParts<AppState> for PublicUrl {
    type Rejection = std::convert::Infallible;

    async fn from_request_parts(
        parts: &mut Parts,
        state: &AppState,
    ) -> Result<Self, Self::Rejection> {
        Ok(Self::of(parts, state))
    }
}

/// Whether `name` is a DNS host name (letters, digits, hyphens, dots; no port, path or user
/// info), as API Gateway's domain names are: anything else is not made into a URL.
fn is_host_name(name: &str) -> bool {
    !name.is_empty()
        && name.len() <= 253
        && name.split('.').all(|label| {
            !label.is_empty()
                && label.len() <= 63
                && !label.starts_with('-')
                && !label.ends_with('-')
                && label
                    .bytes()
                    .all(|b| b.is_ascii_alphanumeric() || b == b'-')
        })
}

#[cfg(test)]
mod tests {
    use super::*;
    use lambda_http::aws_lambda_events::apigw::ApiGatewayV2httpRequestContext;

    #[test]
    fn host_names_are_told_from_anything_else() {
        for good in [
            "abc123.execute-api.us-east-1.amazonaws.com",
            "api.example.com",
            "localhost",
        ] {
            assert!(is_host_name(good), "{good}");
        }
        for bad in [
            "",
            "evil.example/path",
            "evil.example:443",
            "user@evil.example",
            "a..b",
            "-a.example",
            "evil.example#",
            "évil.example",
        ] {
            assert!(!is_host_name(bad), "{bad}");
        }
    }

    fn parts(domain: Option<&str>, host: &str) -> Parts {
        let mut request = http::Request::builder()
            .uri("/v1/auth/login/google")
            .header(http::header::HOST, host)
            .header("x-forwarded-host", host)
            .body(())
            .expect("a request");
        if let Some(domain) = domain {
            let mut ctx = ApiGatewayV2httpRequestContext::default();
            ctx.domain_name = Some(domain.to_owned());
            request
                .extensions_mut()
                .insert(RequestContext::ApiGatewayV2(ctx));
        }
        request.into_parts().0
    }

    /// What a request with `parts` is given, with `configured` as `Auth__PublicUrl` and the
    /// local server's default address.
    fn base(configured: Option<&str>, parts: &Parts) -> String {
        PublicUrl::resolve(configured, parts, || "http://127.0.0.1:8080".to_owned()).0
    }

    #[test]
    fn in_lambda_the_domain_api_gateway_received_the_request_on_is_the_base_whatever_the_host_header()
     {
        let parts = parts(
            Some("Abc123.execute-api.us-east-1.amazonaws.com"),
            "evil.example",
        );
        assert_eq!(
            base(None, &parts),
            "https://abc123.execute-api.us-east-1.amazonaws.com"
        );
    }

    #[test]
    fn a_configured_public_url_wins_over_the_request() {
        let parts = parts(
            Some("abc123.execute-api.us-east-1.amazonaws.com"),
            "evil.example",
        );
        assert_eq!(
            base(Some("https://paddock.example"), &parts),
            "https://paddock.example"
        );
    }

    #[test]
    fn the_local_server_never_takes_the_host_header() {
        let parts = parts(None, "evil.example");
        assert_eq!(base(None, &parts), "http://127.0.0.1:8080");
        let odd = self::parts(Some("evil.example/steal?x="), "evil.example");
        assert_eq!(base(None, &odd), "http://127.0.0.1:8080");
    }
}
