//! An OAuth app and a driver's browser, as the tests drive the authorization server: the app's
//! registration, PKCE, the consent page's forms (cookies kept, redirects not followed), and
//! the token endpoint.

use base64::Engine;
use serde_json::{Value, json};
use sha2::{Digest, Sha256};
use std::collections::BTreeMap;
use std::sync::Mutex;

use crate::TestApp;

/// A registered app.
#[derive(Debug, Clone)]
pub struct RegisteredApp {
    /// Its client id.
    pub client_id: String,
    /// A confidential app's secret.
    pub secret: Option<String>,
    /// The redirect URI the tests use.
    pub redirect_uri: String,
}

/// Registers an app for the driver of `owner_token` with `redirect_uri` (confidential when
/// `confidential`).
pub async fn register_app(
    app: &TestApp,
    owner_token: &str,
    redirect_uri: &str,
    confidential: bool,
) -> RegisteredApp {
    let client_type = if confidential {
        "confidential"
    } else {
        "public"
    };
    let body =
        json!({"name": "League Bot", "redirectUris": [redirect_uri], "clientType": client_type});
    let (status, made) = app
        .call(reqwest::Method::POST, "/v1/apps", owner_token, Some(body))
        .await;
    assert_eq!(status, 201, "{made}");
    RegisteredApp {
        client_id: made["data"]["app"]["clientId"].as_str().unwrap().to_owned(),
        secret: made["data"]["clientSecret"].as_str().map(str::to_owned),
        redirect_uri: redirect_uri.to_owned(),
    }
}

/// A PKCE verifier and its S256 challenge.
#[derive(Debug, Clone)]
pub struct Pkce {
    /// The verifier (kept by the app).
    pub verifier: String,
    /// `base64url(SHA-256(verifier))`.
    pub challenge: String,
}

impl Pkce {
    /// A fresh pair.
    pub fn new() -> Self {
        let verifier = format!(
            "{}{}",
            uuid::Uuid::new_v4().simple(),
            uuid::Uuid::new_v4().simple()
        );
        let challenge = base64::engine::general_purpose::URL_SAFE_NO_PAD
            .encode(Sha256::digest(verifier.as_bytes()));
        Self {
            verifier,
            challenge,
        }
    }
}

impl Default for Pkce {
    fn default() -> Self {
        Self::new()
    }
}

/// The query of an authorization request of `client` for `scope`, with `extra` parameters.
pub fn authorize_query(
    client: &RegisteredApp,
    pkce: &Pkce,
    scope: &str,
    extra: &[(&str, &str)],
) -> String {
    let mut query = form_urlencoded::Serializer::new(String::new());
    query
        .append_pair("response_type", "code")
        .append_pair("client_id", &client.client_id)
        .append_pair("redirect_uri", &client.redirect_uri)
        .append_pair("state", "state-1")
        .append_pair("code_challenge", &pkce.challenge)
        .append_pair("code_challenge_method", "S256")
        .append_pair("scope", scope);
    for (k, v) in extra {
        query.append_pair(k, v);
    }
    query.finish()
}

/// One answer as a browser sees it.
#[derive(Debug)]
pub struct Answer {
    /// The status.
    pub status: u16,
    /// `Location`, if any.
    pub location: Option<String>,
    /// The headers.
    pub headers: reqwest::header::HeaderMap,
    /// The body as text.
    pub body: String,
}

impl Answer {
    /// The parameters of the `Location` the answer sends the browser to.
    pub fn location_params(&self) -> BTreeMap<String, String> {
        let location = self.location.as_deref().expect("a redirect");
        let query = location.split_once('?').map(|(_, q)| q).unwrap_or_default();
        form_urlencoded::parse(query.as_bytes())
            .into_owned()
            .collect()
    }

    /// The hidden fields of the page's form.
    pub fn hidden_fields(&self) -> Vec<(String, String)> {
        let mut fields = Vec::new();
        for part in self.body.split("<input type=\"hidden\" ").skip(1) {
            let attr = |name: &str| {
                let start = part.find(&format!("{name}=\""))? + name.len() + 2;
                let end = start + part[start..].find('"')?;
                Some(unescape(&part[start..end]))
            };
            if let (Some(name), Some(value)) = (attr("name"), attr("value")) {
                fields.push((name, value));
            }
        }
        fields
    }
}

fn unescape(text: &str) -> String {
    text.replace("&quot;", "\"")
        .replace("&lt;", "<")
        .replace("&gt;", ">")
        .replace("&#39;", "'")
        .replace("&amp;", "&")
}

/// A driver's browser on the consent pages: keeps its cookies, follows no redirect.
pub struct Browser {
    client: reqwest::Client,
    base: String,
    cookies: Mutex<BTreeMap<String, String>>,
}

impl Browser {
    /// A browser with no cookies, against `app`.
    pub fn new(app: &TestApp) -> Self {
        Self::from_address(app, std::net::Ipv4Addr::LOCALHOST)
    }

    /// A browser with no cookies connecting from `address` (a loopback address: rate limits
    /// count each one apart), against `app`.
    pub fn from_address(app: &TestApp, address: std::net::Ipv4Addr) -> Self {
        let client = reqwest::Client::builder()
            .redirect(reqwest::redirect::Policy::none())
            .local_address(std::net::IpAddr::V4(address))
            .build()
            .expect("client");
        Self {
            client,
            base: app.address.clone(),
            cookies: Mutex::new(BTreeMap::new()),
        }
    }

    fn cookie_header(&self) -> String {
        let cookies = self.cookies.lock().unwrap();
        cookies
            .iter()
            .map(|(k, v)| format!("{k}={v}"))
            .collect::<Vec<_>>()
            .join("; ")
    }

    async fn answer(&self, response: reqwest::Response) -> Answer {
        let headers = response.headers().clone();
        for set in headers.get_all("set-cookie") {
            let pair = set.to_str().unwrap().split(';').next().unwrap();
            let (name, value) = pair.split_once('=').unwrap();
            self.cookies
                .lock()
                .unwrap()
                .insert(name.to_owned(), value.to_owned());
        }
        Answer {
            status: response.status().as_u16(),
            location: headers
                .get("location")
                .map(|l| l.to_str().unwrap().to_owned()),
            headers,
            body: response.text().await.unwrap(),
        }
    }

    /// GET `/oauth/authorize?<query>`.
    pub async fn authorize(&self, query: &str) -> Answer {
        self.authorize_path(&format!("/oauth/authorize?{query}"))
            .await
    }

    /// GET `path` (and query) of the OAuth pages.
    pub async fn authorize_path(&self, path: &str) -> Answer {
        let request = self
            .client
            .get(format!("{}{path}", self.base))
            .header("cookie", self.cookie_header());
        self.answer(request.send().await.unwrap()).await
    }

    /// Posts the page's form: its hidden fields from `page` and `more` (what the driver
    /// typed and the button pressed, in place of a hidden field of the same name), from this
    /// origin.
    pub async fn post(&self, page: &Answer, more: &[(&str, &str)]) -> Answer {
        let mut form = form_urlencoded::Serializer::new(String::new());
        for (k, v) in page.hidden_fields() {
            if !more.iter().any(|(name, _)| *name == k) {
                form.append_pair(&k, &v);
            }
        }
        for (k, v) in more {
            form.append_pair(k, v);
        }
        let request = self
            .client
            .post(format!("{}/oauth/authorize", self.base))
            .header("cookie", self.cookie_header())
            .header("origin", &self.base)
            .header("content-type", "application/x-www-form-urlencoded")
            .body(form.finish());
        self.answer(request.send().await.unwrap()).await
    }

    /// Posts the sign-in form of `page` with `email` and `password`.
    pub async fn sign_in(&self, page: &Answer, email: &str, password: &str) -> Answer {
        let typed = [
            ("action", "sign_in"),
            ("email", email),
            ("password", password),
        ];
        self.post(page, &typed).await
    }

    /// Signs in on the page and approves: answers the redirect back to the app.
    pub async fn consent(&self, query: &str, email: &str, password: &str) -> Answer {
        let page = self.authorize(query).await;
        assert_eq!(page.status, 200, "{}", page.body);
        let consent = if page.body.contains("name=\"password\"") {
            let signed_in = self.sign_in(&page, email, password).await;
            if signed_in.status == 303 {
                return signed_in;
            }
            assert_eq!(signed_in.status, 200, "{}", signed_in.body);
            signed_in
        } else {
            page
        };
        let approved = self.post(&consent, &[("action", "approve")]).await;
        assert_eq!(approved.status, 303, "{}", approved.body);
        approved
    }
}

/// A driver with a known email and password; answers (token, user id, email).
pub async fn driver_with_password(app: &TestApp, name: &str) -> (String, String, String) {
    let email = format!("{}@example.com", crate::unique(name));
    let request = json!({"email": email, "password": "correct horse battery", "displayName": name});
    let response = app.post_json("/v1/auth/register", &request).await;
    let body: Value = response.json().await.unwrap();
    let token = body["data"]["accessToken"]
        .as_str()
        .expect("registered")
        .to_owned();
    let id = body["data"]["user"]["id"].as_str().unwrap().to_owned();
    (token, id, email)
}

/// POSTs `form` to the token endpoint (or `path`), with HTTP Basic `basic` if given.
pub async fn token_request(
    app: &TestApp,
    path: &str,
    form: &[(&str, &str)],
    basic: Option<(&str, &str)>,
) -> (u16, Value) {
    let mut body = form_urlencoded::Serializer::new(String::new());
    for (k, v) in form {
        body.append_pair(k, v);
    }
    let mut request = app
        .client
        .post(format!("{}{path}", app.address))
        .header("content-type", "application/x-www-form-urlencoded")
        .body(body.finish());
    if let Some((id, secret)) = basic {
        request = request.basic_auth(id, Some(secret));
    }
    let response = request.send().await.unwrap();
    let status = response.status().as_u16();
    let bytes = response.bytes().await.unwrap();
    (
        status,
        serde_json::from_slice(&bytes).unwrap_or(Value::Null),
    )
}

/// A public client's refresh-token grant at `/oauth/token`: the status and the answer.
pub async fn refresh_grant(app: &TestApp, refresh_token: &str, client_id: &str) -> (u16, Value) {
    let form = [
        ("grant_type", "refresh_token"),
        ("refresh_token", refresh_token),
        ("client_id", client_id),
    ];
    token_request(app, "/oauth/token", &form, None).await
}

/// The text member `name` of a token endpoint's answer (panics naming it when absent).
pub fn text<'a>(value: &'a Value, name: &str) -> &'a str {
    value[name]
        .as_str()
        .unwrap_or_else(|| panic!("{name} in {value}"))
}

/// Exchanges the code of `approved` (the redirect back to the app) for tokens.
pub async fn exchange_code(
    app: &TestApp,
    client: &RegisteredApp,
    approved: &Answer,
    pkce: &Pkce,
) -> (u16, Value) {
    let params = approved.location_params();
    let code = params.get("code").expect("a code");
    let mut form = vec![
        ("grant_type", "authorization_code"),
        ("code", code.as_str()),
        ("redirect_uri", client.redirect_uri.as_str()),
        ("code_verifier", pkce.verifier.as_str()),
    ];
    let basic = client
        .secret
        .as_deref()
        .map(|s| (client.client_id.as_str(), s));
    if basic.is_none() {
        form.push(("client_id", &client.client_id));
    }
    token_request(app, "/oauth/token", &form, basic).await
}
