//! Sign-in providers: `Auth__Providers__<name>__<Field>` variables, or one JSON object in
//! `Auth__ProvidersJson`, checked alike.

use secrecy::SecretString;
use serde_json::Value;
use std::collections::{BTreeMap, BTreeSet};

use super::{ConfigError, Source, bad, keys};

/// How a provider is spoken to.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum ProviderKind {
    /// Any OpenID Connect provider, found by issuer discovery.
    Oidc,
    /// Google (OpenID Connect).
    Google,
    /// Microsoft personal and work accounts (OAuth2 + OIDC user-info).
    Microsoft,
    /// Discord (OAuth2 + user-info).
    Discord,
}

impl ProviderKind {
    /// Parses a configured kind.
    pub fn parse(s: &str) -> Option<Self> {
        match s.to_ascii_lowercase().as_str() {
            "oidc" | "openid" => Some(Self::Oidc),
            "google" => Some(Self::Google),
            "microsoft" => Some(Self::Microsoft),
            "discord" => Some(Self::Discord),
            _ => None,
        }
    }

    /// Whether this kind's `email_verified` is trusted unless configured otherwise.
    pub fn trusts_email_verified_by_default(self) -> bool {
        !matches!(self, Self::Oidc)
    }
}

/// A configured provider (`Auth__Providers__<name>__*`).
#[derive(Debug, Clone)]
pub struct ProviderConfig {
    /// The path segment, e.g. `google` in `/v1/auth/login/google`.
    pub name: String,
    /// How the provider is spoken to.
    pub kind: ProviderKind,
    /// The OAuth client id registered with the provider.
    pub client_id: String,
    /// From `...__ClientSecret`, or the secret named `<name>ClientSecret`; never printed.
    pub client_secret: Option<SecretString>,
    /// The issuer (required for `oidc`).
    pub issuer: Option<String>,
    /// The scopes asked for at sign-in.
    pub scopes: Vec<String>,
    /// `...__TrustEmailVerified`: whether the provider's word that an email is verified is
    /// believed, which lets its sign-in claim an account by that email. On by default for
    /// Google and Discord (its `verified` flag) and for Microsoft, where it also needs the
    /// token's `xms_edov: true` (Entra's `email` is set by the tenant); off by default for
    /// generic OIDC, whose tenants may assert any email.
    pub trust_email_verified: bool,
}

/// A provider's field (`Kind`, `ClientId`, ...) as the list names it, after this prefix.
const FIELD: &str = "Auth__Providers__<name>__";

/// The listed key of a provider's `field`.
fn field_key(field: &str) -> Option<&'static keys::Key> {
    keys::all().find(|key| key.name.strip_prefix(FIELD) == Some(field))
}

/// An error about a provider's `field` (or its `Name`): from its variables it names the
/// field's key; from `Auth__ProvidersJson` that key and the member (the field in camelCase).
fn refuse(json: bool, field: &str, reason: String) -> ConfigError {
    let json_key = keys::AUTH_PROVIDERS_JSON.name;
    match (json, field_key(field)) {
        (true, Some(_)) => bad(json_key, &format!("{}: {reason}", member_of(field))),
        (true, None) => bad(json_key, &reason),
        (false, Some(key)) => bad(key.name, &reason),
        (false, None) => bad("Auth__Providers", &reason),
    }
}

/// The member of `Auth__ProvidersJson` that sets a provider's `field`.
fn member_of(field: &str) -> String {
    field[..1].to_ascii_lowercase() + &field[1..]
}

/// Reads every provider: `Auth__Providers__<name>__<Field>` for every name present, and the
/// members of `Auth__ProvidersJson`. A name may be set one way only.
pub(super) fn read(source: &Source) -> Result<Vec<ProviderConfig>, ConfigError> {
    let names: BTreeSet<&str> = (source.vars.keys())
        .filter_map(|k| k.strip_prefix("Auth__Providers__")?.split_once("__"))
        .map(|(name, _)| name)
        .collect();
    let mut out = Vec::new();
    for name in names {
        let field = |f: &str| source.var(&format!("Auth__Providers__{name}__{f}"));
        out.push(provider(name, false, field)?);
    }
    let Some(json) = source.var(keys::AUTH_PROVIDERS_JSON.name) else {
        return Ok(out);
    };
    for (name, fields) in providers_json(&json)? {
        let set = provider(&name, true, |f| fields.get(f).cloned())?;
        if out.iter().any(|p| p.name == set.name) {
            let reason = format!(
                "provider {} is also set by Auth__Providers__{name}__* (set it one way)",
                set.name
            );
            return Err(bad(keys::AUTH_PROVIDERS_JSON.name, &reason));
        }
        out.push(set);
    }
    Ok(out)
}

/// One provider's values by field (`Kind`, `ClientId`, ...).
type Fields = BTreeMap<&'static str, String>;

/// The members of `Auth__ProvidersJson` (an object of objects, e.g.
/// `{"google":{"clientId":"..."}}`) as each provider's fields, spelled as the variables'.
/// Client secrets are refused here: this value is a template parameter, shown in the stack.
fn providers_json(text: &str) -> Result<BTreeMap<String, Fields>, ConfigError> {
    let refuse = |reason: String| bad(keys::AUTH_PROVIDERS_JSON.name, &reason);
    let doc: Value = serde_json::from_str(text).map_err(|e| {
        refuse(format!(
            r#"is not JSON ({e}); expected {{"<name>": {{"clientId": ...}}}}"#
        ))
    })?;
    let Value::Object(providers) = doc else {
        return Err(refuse("must be a JSON object of providers by name".into()));
    };
    let mut out = BTreeMap::new();
    for (name, settings) in providers {
        let Value::Object(settings) = settings else {
            return Err(refuse(format!("provider {name:?} must be an object")));
        };
        let mut fields = BTreeMap::new();
        for (member, value) in settings {
            let field = (keys::all().filter_map(|key| key.name.strip_prefix(FIELD)))
                .find(|f| member_of(f) == member && *f != "ClientSecret");
            let Some(field) = field else {
                return Err(refuse(match member.as_str() {
                    "clientSecret" => format!(
                        "provider {name}: clientSecret does not belong here (the value is visible in the stack); put it in the app secret as {name}ClientSecret"
                    ),
                    _ => format!(
                        "provider {name}: unknown member {member:?} (kind, clientId, issuer, scopes, trustEmailVerified)"
                    ),
                }));
            };
            let text = match (field, value) {
                (_, Value::String(s)) => s,
                ("TrustEmailVerified", Value::Bool(b)) => b.to_string(),
                ("Scopes", Value::Array(items)) => (items.iter().map(Value::as_str))
                    .collect::<Option<Vec<&str>>>()
                    .ok_or_else(|| refuse(format!("provider {name}: scopes must be strings")))?
                    .join(" "),
                _ => {
                    return Err(refuse(format!(
                        "provider {name}: {member} must be a string"
                    )));
                }
            };
            if !text.trim().is_empty() {
                fields.insert(field, text.trim().to_owned());
            }
        }
        out.insert(name, fields);
    }
    Ok(out)
}

/// Checks one provider's fields, read by `field` (`Kind`, `ClientId`, ...), and applies the
/// defaults of its kind.
fn provider(
    name: &str,
    json: bool,
    field: impl Fn(&str) -> Option<String>,
) -> Result<ProviderConfig, ConfigError> {
    let refuse = |f: &str, reason: String| refuse(json, f, reason);
    let slot = name.to_ascii_lowercase();
    if slot.is_empty() || !slot.bytes().all(|b| b.is_ascii_alphanumeric() || b == b'-') {
        return Err(refuse(
            "Name",
            format!("provider name {name:?} must be letters, digits and '-'"),
        ));
    }
    let kind_text = field("Kind").unwrap_or_else(|| slot.clone());
    let kind = ProviderKind::parse(&kind_text).ok_or_else(|| {
        refuse(
            "Kind",
            format!("{kind_text:?} is not oidc, google, microsoft or discord"),
        )
    })?;
    let client_id = field("ClientId")
        .ok_or_else(|| refuse("ClientId", format!("missing for provider {slot}")))?;
    let issuer = field("Issuer");
    if kind == ProviderKind::Oidc && issuer.is_none() {
        return Err(refuse(
            "Issuer",
            format!("required for the oidc provider {slot}"),
        ));
    }
    if let Some(issuer) = &issuer {
        secure_provider_url(issuer)
            .map_err(|rule| refuse("Issuer", format!("{issuer:?} of provider {slot} {rule}")))?;
    }
    let default_scopes = match kind {
        ProviderKind::Discord => "identify email",
        _ => "openid email profile",
    };
    let scopes = field("Scopes").unwrap_or_else(|| default_scopes.to_owned());
    let trust_email_verified = match field("TrustEmailVerified") {
        None => kind.trusts_email_verified_by_default(),
        Some(v) => v.parse().map_err(|_| {
            refuse(
                "TrustEmailVerified",
                format!("{v:?} of provider {slot} is not true or false"),
            )
        })?,
    };
    Ok(ProviderConfig {
        name: slot,
        kind,
        client_id,
        client_secret: field("ClientSecret").map(Into::into),
        issuer,
        scopes: scopes.split_whitespace().map(str::to_owned).collect(),
        trust_email_verified,
    })
}

/// Refuses a provider URL (an issuer, or an endpoint its discovery names) the client secret,
/// codes and tokens would travel to or from in clear: `https` only, except a loopback host (a
/// provider on the same machine, as in tests).
pub fn secure_provider_url(url: &str) -> Result<(), &'static str> {
    let url = url::Url::parse(url).map_err(|_| "is not a URL")?;
    let host = url.host_str().ok_or("has no host")?;
    let host = host.trim_start_matches('[').trim_end_matches(']');
    let loopback = host.eq_ignore_ascii_case("localhost")
        || host
            .parse::<std::net::IpAddr>()
            .is_ok_and(|ip| ip.is_loopback());
    match url.scheme() {
        "https" => Ok(()),
        "http" if loopback => Ok(()),
        _ => Err("must be an https URL (plain http only on a loopback host)"),
    }
}
