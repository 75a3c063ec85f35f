//! The HTML of the consent pages (maud: every interpolated value is escaped): the sign-in
//! form, the consent itself, and a page for a request that cannot go back to its app.
//!
//! No script. The one style sheet is inline and allowed by its hash; forms post only to the
//! page itself, and the answer may take the driver to the app's redirect URI, which the
//! policy names as well (browsers check a form's redirects against `form-action`).

use base64::Engine;
use maud::{DOCTYPE, Markup, PreEscaped, html};
use sha2::{Digest, Sha256};
use std::sync::LazyLock;

use paddock_core::identity::personal_tokens::Scope;

const STYLE: &str = "\
body{font-family:system-ui,-apple-system,'Segoe UI',Roboto,sans-serif;margin:0;color:#1a1a1a;background:#f6f6f6;line-height:1.45}\
main{max-width:28rem;margin:2rem auto;padding:1.5rem;background:#fff;border:1px solid #ddd;border-radius:8px}\
h1{font-size:1.3rem;margin:0 0 .75rem}p{margin:.5rem 0}.meta{color:#4a4a4a}\
ul{padding-left:1.2rem}li{margin:.3rem 0}\
label{display:block;margin:.75rem 0 .25rem;font-weight:600}\
input{font:inherit;width:100%;box-sizing:border-box;padding:.45rem .5rem;border:1px solid #767676;border-radius:4px}\
.actions{display:flex;gap:.75rem;margin-top:1.25rem}\
button{font:inherit;padding:.5rem 1rem;border-radius:4px;border:1px solid #0b57d0;background:#0b57d0;color:#fff;cursor:pointer}\
button.secondary{background:#fff;color:#0b57d0}\
a:focus,button:focus,input:focus{outline:3px solid #f2a900;outline-offset:2px}\
.providers{margin-top:1.25rem;padding-top:1rem;border-top:1px solid #ddd}\
a.provider{display:block;margin:.5rem 0;padding:.5rem 1rem;border:1px solid #0b57d0;border-radius:4px;color:#0b57d0;text-align:center;text-decoration:none}\
.error{color:#a50e0e;font-weight:600}\
";

static STYLE_SOURCE: LazyLock<String> = LazyLock::new(|| {
    let digest = Sha256::digest(STYLE.as_bytes());
    format!(
        "'sha256-{}'",
        base64::engine::general_purpose::STANDARD.encode(digest)
    )
});

/// The pages' Content-Security-Policy; `app_origin`: where an answer to the page's form may
/// send the driver (the app's redirect URI's origin).
pub(crate) fn content_security_policy(app_origin: Option<&str>) -> String {
    format!(
        "default-src 'none'; style-src {}; form-action 'self'{}; base-uri 'none'; \
         frame-ancestors 'none'",
        *STYLE_SOURCE,
        app_origin.map(|o| format!(" {o}")).unwrap_or_default()
    )
}

/// What a scope lets an app do, in the words the consent page uses.
pub(crate) fn scope_words(scope: Scope) -> &'static str {
    match scope {
        Scope::SessionsRead => "See your sessions and their laps, and the tracks",
        Scope::SessionsWrite => "Upload sessions for you",
        Scope::BoardsRead => "See where you stand on the leaderboards",
        Scope::BoardsSubmit => "Submit your laps to the leaderboards",
        Scope::ProfileRead => "See your profile: your name, picture and email address",
        Scope::ActivityRead => "See your feed and your achievements",
        Scope::Sharepacks => "See, upload, download and delete your share packs",
        Scope::Webhooks => "Make and manage webhooks that tell it what you do on Paddock",
        Scope::EventsRead => "See competition events, their standings and season tables",
        Scope::Leagues => "Run your leagues for you: make, join and leave them, and make events",
    }
}

/// Who an app comes from.
pub(crate) enum Maker {
    /// A registered app: its owner's display name.
    Driver(String),
    /// A client known by its metadata document: the host of the document's URL.
    Site(String),
}

/// The app a page is about.
pub(crate) struct AppShown<'a> {
    /// Its name.
    pub name: &'a str,
    /// Who it comes from.
    pub maker: &'a Maker,
}

/// A provider's name as a button shows it: `google` is "Google".
fn provider_label(name: &str) -> String {
    let mut chars = name.chars();
    chars.next().map_or_else(String::new, |first| {
        first.to_uppercase().chain(chars).collect()
    })
}

/// The hidden fields that carry the authorization request and the form's token.
fn carried(params: &[(String, String)], csrf: &str) -> Markup {
    html! {
        @for (name, value) in params {
            input type="hidden" name=(name) value=(value);
        }
        input type="hidden" name="csrf" value=(csrf);
    }
}

fn document(title: &str, body: Markup) -> String {
    html! {
        (DOCTYPE)
        html lang="en" {
            head {
                meta charset="utf-8";
                meta name="viewport" content="width=device-width, initial-scale=1";
                meta name="referrer" content="same-origin";
                title { (title) " · Paddock" }
                style { (PreEscaped(STYLE)) }
            }
            body { main { (body) } }
        }
    }
    .into_string()
}

/// The sign-in form, before the consent: `error` says why the last attempt failed;
/// `providers`: the identity providers a driver may sign in with instead (their names).
pub(crate) fn sign_in(
    app: &AppShown<'_>,
    params: &[(String, String)],
    csrf: &str,
    error: Option<&str>,
    providers: &[&str],
) -> String {
    let request = form_urlencoded::Serializer::new(String::new())
        .extend_pairs(params)
        .finish();
    let body = html! {
        h1 { "Sign in to Paddock" }
        p { "to let " strong { bdi { (app.name) } } " act for you." }
        @if let Some(error) = error {
            p.error role="alert" { (error) }
        }
        form method="post" action="/oauth/authorize" {
            (carried(params, csrf))
            input type="hidden" name="action" value="sign_in";
            label for="email" { "Email" }
            input id="email" name="email" type="email" autocomplete="username" required;
            label for="password" { "Password" }
            input id="password" name="password" type="password" autocomplete="current-password" required;
            div.actions { button type="submit" { "Sign in" } }
        }
        @if !providers.is_empty() {
            div.providers {
                p { "Or sign in with" }
                @for provider in providers {
                    a.provider href=(format!("/oauth/provider/{provider}?{request}")) {
                        (provider_label(provider))
                    }
                }
            }
        }
    };
    document("Sign in", body)
}

/// The consent itself: the app, its owner, what it asks for, approve or deny.
pub(crate) fn consent(
    app: &AppShown<'_>,
    scopes: &[Scope],
    driver: &str,
    params: &[(String, String)],
    csrf: &str,
) -> String {
    let body = html! {
        h1 { "Allow " bdi { (app.name) } " to act for you?" }
        @match app.maker {
            Maker::Driver(owner) => {
                p.meta { "An app made by " bdi { (owner) } ". You are signed in as " bdi { (driver) } "." }
            }
            Maker::Site(host) => {
                p.meta {
                    "An app identified by its address at " strong { bdi { (host) } }
                    ", not registered on Paddock: its name is the one it gives itself. "
                    "Allow it only if you trust " bdi { (host) } ". You are signed in as "
                    bdi { (driver) } "."
                }
            }
        }
        p { "It asks to:" }
        ul {
            @for scope in scopes {
                li { (scope_words(*scope)) " " span.meta { "(" code { (scope.name()) } ")" } }
            }
        }
        p.meta { "You can take this back at any time in your account's authorized apps." }
        form method="post" action="/oauth/authorize" {
            (carried(params, csrf))
            div.actions {
                button type="submit" name="action" value="approve" { "Allow" }
                button.secondary type="submit" name="action" value="deny" { "Deny" }
            }
        }
    };
    document("Allow access", body)
}

/// A request that cannot be sent back to its app (an unknown app or redirect URI, an expired
/// form): what went wrong, and nothing to click that would reach the app.
pub(crate) fn problem(title: &str, message: &str) -> String {
    let body = html! {
        h1 { (title) }
        p { (message) }
        p.meta { "Go back to the app and start again." }
    };
    document(title, body)
}
