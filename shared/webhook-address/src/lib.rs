//! Where a webhook may be sent, knowing nothing of the service that sends it: the URL's own
//! rules (https, no credentials, a host) and the rules every address it resolves to must pass,
//! checked at creation and again at every delivery, after resolution, on the addresses the
//! connection then uses.
//!
//! An address is refused when it is not a public unicast address: loopback, private (RFC
//! 1918, IPv6 unique local), shared (100.64.0.0/10), link-local, the cloud metadata
//! addresses, multicast, broadcast, unspecified, documentation, benchmarking and reserved
//! ranges. IPv6 forms that carry an IPv4 address (mapped `::ffff:a.b.c.d`, compatible
//! `::a.b.c.d`, the NAT64 prefix `64:ff9b::/96`, 6to4 `2002::/16`) are judged by that
//! address; Teredo and the local-use NAT64 prefix, whose targets cannot be judged, are refused.
//!
//! The ranges are listed here rather than taken from a crate: std's `is_global` is not stable,
//! and a refusal names the range it fell in, which a caller can pass on to whoever gave the URL.

#![warn(missing_docs)]

use std::net::{IpAddr, Ipv4Addr, Ipv6Addr, SocketAddr};

use url::{Host, Url};

/// The longest URL accepted, in bytes.
pub const MAX_URL_BYTES: usize = 2048;

/// Which rule an address or URL breaks.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Rule {
    /// Not `https` (or `http` to loopback when the local-test setting allows it).
    Scheme,
    /// A user name or password in the URL.
    Credentials,
    /// Not a URL, too long, or without a host.
    Malformed,
    /// The host does not resolve.
    Unresolvable,
    /// Loopback (127.0.0.0/8, ::1).
    Loopback,
    /// Private (10/8, 172.16/12, 192.168/16, fc00::/7, fec0::/10, 64:ff9b:1::/48).
    Private,
    /// Shared address space of carrier-grade NAT (100.64.0.0/10).
    Shared,
    /// Link-local (169.254/16, fe80::/10).
    LinkLocal,
    /// A cloud metadata address (169.254.169.254, fd00:ec2::254, 100.100.100.200).
    Metadata,
    /// Multicast or broadcast.
    Multicast,
    /// Unspecified (0.0.0.0/8, ::).
    Unspecified,
    /// Documentation, benchmarking, reserved or otherwise not public unicast.
    Reserved,
}

impl Rule {
    /// The rule in words, for error messages and the delivery history.
    pub fn describe(self) -> &'static str {
        match self {
            Rule::Scheme => "must use https",
            Rule::Credentials => "must not contain a user name or password",
            Rule::Malformed => "must be an absolute URL with a host, at most 2048 bytes",
            Rule::Unresolvable => "its host does not resolve",
            Rule::Loopback => "must not resolve to a loopback address",
            Rule::Private => "must not resolve to a private address",
            Rule::Shared => "must not resolve to a shared (carrier-grade NAT) address",
            Rule::LinkLocal => "must not resolve to a link-local address",
            Rule::Metadata => "must not resolve to a cloud metadata address",
            Rule::Multicast => "must not resolve to a multicast or broadcast address",
            Rule::Unspecified => "must not resolve to an unspecified address",
            Rule::Reserved => "must not resolve to a reserved or non-public address",
        }
    }
}

/// A refused URL: the rule and, for an address rule, the address.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
#[error("url: {}{}", .rule.describe(), .address.map(|a| format!(" ({a})")).unwrap_or_default())]
pub struct Refused {
    /// The rule broken.
    pub rule: Rule,
    /// The address that broke it, for address rules.
    pub address: Option<IpAddr>,
}

impl Refused {
    fn rule(rule: Rule) -> Self {
        Self {
            rule,
            address: None,
        }
    }
}

/// What the address rules allow beyond public unicast.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default)]
pub struct Policy {
    /// Local tests only: `http` and loopback addresses.
    pub allow_loopback_http: bool,
}

impl Policy {
    /// The policy that allows `http` and loopback addresses when `allow_loopback_http` is set.
    pub fn new(allow_loopback_http: bool) -> Self {
        Self {
            allow_loopback_http,
        }
    }
}

/// A webhook URL that passed the URL's own rules (not yet its addresses).
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct WebhookUrl {
    url: Url,
}

impl WebhookUrl {
    /// Parses `raw` under `policy`'s URL rules.
    pub fn parse(raw: &str, policy: Policy) -> Result<Self, Refused> {
        if raw.len() > MAX_URL_BYTES {
            return Err(Refused::rule(Rule::Malformed));
        }
        let url = Url::parse(raw.trim()).map_err(|_| Refused::rule(Rule::Malformed))?;
        match url.scheme() {
            "https" => {}
            "http" if policy.allow_loopback_http => {}
            _ => return Err(Refused::rule(Rule::Scheme)),
        }
        if !url.username().is_empty() || url.password().is_some() {
            return Err(Refused::rule(Rule::Credentials));
        }
        match url.host() {
            None => return Err(Refused::rule(Rule::Malformed)),
            Some(Host::Domain("")) => return Err(Refused::rule(Rule::Malformed)),
            Some(_) => {}
        }
        Ok(Self { url })
    }

    /// The URL as text.
    pub fn as_str(&self) -> &str {
        self.url.as_str()
    }

    /// Whether the scheme is plain `http` (allowed to loopback only).
    pub fn is_plain_http(&self) -> bool {
        self.url.scheme() == "http"
    }

    /// The host as the URL names it (a domain, or an address without brackets).
    pub fn host(&self) -> String {
        match self.url.host() {
            Some(Host::Domain(d)) => d.to_owned(),
            Some(Host::Ipv4(a)) => a.to_string(),
            Some(Host::Ipv6(a)) => a.to_string(),
            None => String::new(),
        }
    }

    /// The port, explicit or the scheme's.
    pub fn port(&self) -> u16 {
        self.url.port_or_known_default().unwrap_or(443)
    }

    /// The address the host names literally, if it is one.
    fn literal(&self) -> Option<IpAddr> {
        match self.url.host()? {
            Host::Ipv4(a) => Some(IpAddr::V4(a)),
            Host::Ipv6(a) => Some(IpAddr::V6(a)),
            Host::Domain(_) => None,
        }
    }
}

/// The rule `address` breaks, if any.
pub fn classify(address: IpAddr) -> Option<Rule> {
    match address {
        IpAddr::V4(v4) => classify_v4(v4),
        IpAddr::V6(v6) => classify_v6(v6),
    }
}

fn classify_v4(a: Ipv4Addr) -> Option<Rule> {
    let [b0, b1, b2, b3] = a.octets();
    let rule = match (b0, b1, b2, b3) {
        (169, 254, 169, 254) | (100, 100, 100, 200) => Rule::Metadata,
        (0, ..) => Rule::Unspecified,
        (127, ..) => Rule::Loopback,
        (10, ..) | (172, 16..=31, ..) | (192, 168, ..) => Rule::Private,
        (100, 64..=127, ..) => Rule::Shared,
        (169, 254, ..) => Rule::LinkLocal,
        (224..=239, ..) | (255, 255, 255, 255) => Rule::Multicast,
        // IETF protocol assignments, documentation, benchmarking, 6to4 relays, reserved.
        (192, 0, 0 | 2, _)
        | (198, 51, 100, _)
        | (203, 0, 113, _)
        | (198, 18..=19, ..)
        | (192, 88, 99, _)
        | (240..=255, ..) => Rule::Reserved,
        _ => return None,
    };
    Some(rule)
}

fn classify_v6(a: Ipv6Addr) -> Option<Rule> {
    let s = a.segments();
    if a.is_unspecified() {
        return Some(Rule::Unspecified);
    }
    if a.is_loopback() {
        return Some(Rule::Loopback);
    }
    if a == Ipv6Addr::new(0xfd00, 0xec2, 0, 0, 0, 0, 0, 0x254) {
        return Some(Rule::Metadata);
    }
    let embedded = |hi: u16, lo: u16| {
        let [a, b] = hi.to_be_bytes();
        let [c, d] = lo.to_be_bytes();
        Ipv4Addr::new(a, b, c, d)
    };
    // IPv4-mapped: the IPv4 address decides.
    if s[..6] == [0, 0, 0, 0, 0, 0xffff] {
        return classify_v4(embedded(s[6], s[7]));
    }
    // IPv4-compatible (deprecated): refused, with the IPv4 address's own rule if it has one.
    if s[..6] == [0, 0, 0, 0, 0, 0] {
        return Some(classify_v4(embedded(s[6], s[7])).unwrap_or(Rule::Reserved));
    }
    // NAT64 well-known prefix: judged by the IPv4 address it reaches.
    if s[..6] == [0x64, 0xff9b, 0, 0, 0, 0] {
        return classify_v4(embedded(s[6], s[7]));
    }
    if s[0] == 0x64 && s[1] == 0xff9b && s[2] == 1 {
        return Some(Rule::Private);
    }
    // 6to4: the IPv4 address in bits 16 to 48.
    if s[0] == 0x2002 {
        return classify_v4(embedded(s[1], s[2]));
    }
    let rule = match s[0] {
        0xfc00..=0xfdff | 0xfec0..=0xfeff => Rule::Private,
        0xfe80..=0xfebf => Rule::LinkLocal,
        0xff00..=0xffff => Rule::Multicast,
        // Teredo (2001::/32), documentation (2001:db8::/32), ORCHID and benchmarking
        // (2001:2::/48, 2001:10::/28, 2001:20::/28).
        0x2001 if s[1] == 0 || s[1] == 0xdb8 || s[1] == 2 || (0x10..=0x2f).contains(&s[1]) => {
            Rule::Reserved
        }
        0x3fff if s[1] <= 0x0fff => Rule::Reserved,
        // Only 2000::/3 is global unicast.
        0x2000..=0x3fff => return None,
        _ => Rule::Reserved,
    };
    Some(rule)
}

/// Whether `policy` lets `rule` pass.
fn allowed(rule: Rule, policy: Policy) -> bool {
    rule == Rule::Loopback && policy.allow_loopback_http
}

/// Checks every address of `addresses`; `plain_http` additionally requires each to be
/// loopback (plain http is for local tests only).
pub fn check_addresses(
    addresses: &[IpAddr],
    plain_http: bool,
    policy: Policy,
) -> Result<(), Refused> {
    if addresses.is_empty() {
        return Err(Refused::rule(Rule::Unresolvable));
    }
    for &address in addresses {
        match classify(address) {
            Some(rule) if !allowed(rule, policy) => {
                return Err(Refused {
                    rule,
                    address: Some(address),
                });
            }
            Some(_) => {}
            None if plain_http => {
                return Err(Refused {
                    rule: Rule::Scheme,
                    address: Some(address),
                });
            }
            None => {}
        }
    }
    Ok(())
}

/// Resolves the URL's host and checks every address it resolves to; answers the addresses
/// (with the port) to connect to, and only these.
pub async fn resolve_checked(url: &WebhookUrl, policy: Policy) -> Result<Vec<SocketAddr>, Refused> {
    let port = url.port();
    let addresses: Vec<IpAddr> = match url.literal() {
        Some(address) => vec![address],
        None => tokio::net::lookup_host((url.host().as_str(), port))
            .await
            .map_err(|_| Refused::rule(Rule::Unresolvable))?
            .map(|s| s.ip())
            .collect(),
    };
    check_addresses(&addresses, url.is_plain_http(), policy)?;
    Ok(addresses
        .into_iter()
        .map(|a| SocketAddr::new(a, port))
        .collect())
}

#[cfg(test)]
mod tests {
    use super::*;

    fn rule(text: &str) -> Option<Rule> {
        classify(text.parse().unwrap())
    }

    #[test]
    fn public_addresses_pass() {
        for a in [
            "1.1.1.1",
            "8.8.8.8",
            "2606:4700::1111",
            "64:ff9b::808:808",
            "2002:808:808::1",
        ] {
            assert_eq!(rule(a), None, "{a}");
        }
    }

    #[test]
    fn every_non_public_range_is_refused_with_its_rule() {
        let cases = [
            ("127.0.0.1", Rule::Loopback),
            ("127.255.0.9", Rule::Loopback),
            ("::1", Rule::Loopback),
            ("10.1.2.3", Rule::Private),
            ("172.16.0.1", Rule::Private),
            ("172.31.255.255", Rule::Private),
            ("192.168.1.1", Rule::Private),
            ("fd12::1", Rule::Private),
            ("fec0::1", Rule::Private),
            ("100.64.0.1", Rule::Shared),
            ("100.127.255.254", Rule::Shared),
            ("169.254.1.1", Rule::LinkLocal),
            ("fe80::1", Rule::LinkLocal),
            ("169.254.169.254", Rule::Metadata),
            ("100.100.100.200", Rule::Metadata),
            ("fd00:ec2::254", Rule::Metadata),
            ("224.0.0.1", Rule::Multicast),
            ("255.255.255.255", Rule::Multicast),
            ("ff02::1", Rule::Multicast),
            ("0.0.0.0", Rule::Unspecified),
            ("0.1.2.3", Rule::Unspecified),
            ("::", Rule::Unspecified),
            ("192.0.2.1", Rule::Reserved),
            ("198.18.0.1", Rule::Reserved),
            ("240.0.0.1", Rule::Reserved),
            ("2001:db8::1", Rule::Reserved),
            ("2001::1", Rule::Reserved),
            ("100::1", Rule::Reserved),
            ("::ffff:127.0.0.1", Rule::Loopback),
            ("::ffff:10.0.0.1", Rule::Private),
            ("::ffff:169.254.169.254", Rule::Metadata),
            ("::127.0.0.1", Rule::Loopback),
            ("::8.8.8.8", Rule::Reserved),
            ("64:ff9b::7f00:1", Rule::Loopback),
            ("64:ff9b::a9fe:a9fe", Rule::Metadata),
            ("64:ff9b:1::1", Rule::Private),
            ("2002:a00:1::1", Rule::Private),
            ("2002:7f00:1::1", Rule::Loopback),
        ];
        for (address, expected) in cases {
            assert_eq!(rule(address), Some(expected), "{address}");
        }
    }

    #[test]
    fn mapped_public_addresses_pass() {
        assert_eq!(rule("::ffff:8.8.8.8"), None);
    }

    #[test]
    fn url_rules_name_what_they_refuse() {
        let strict = Policy::default();
        let refused = |raw: &str, policy| WebhookUrl::parse(raw, policy).unwrap_err().rule;
        assert_eq!(refused("http://example.com/hook", strict), Rule::Scheme);
        assert_eq!(refused("ftp://example.com/hook", strict), Rule::Scheme);
        assert_eq!(
            refused("https://user:pw@example.com/", strict),
            Rule::Credentials
        );
        assert_eq!(
            refused("https://user@example.com/", strict),
            Rule::Credentials
        );
        assert_eq!(refused("not a url", strict), Rule::Malformed);
        let long = format!("https://example.com/{}", "a".repeat(MAX_URL_BYTES));
        assert_eq!(refused(&long, strict), Rule::Malformed);
        assert!(WebhookUrl::parse("https://example.com/hook", strict).is_ok());
        let local = Policy {
            allow_loopback_http: true,
        };
        assert!(WebhookUrl::parse("http://127.0.0.1:9/hook", local).is_ok());
    }

    #[test]
    fn plain_http_reaches_loopback_only_and_only_when_allowed() {
        let local = Policy {
            allow_loopback_http: true,
        };
        let loopback = ["127.0.0.1".parse().unwrap()];
        let public = ["8.8.8.8".parse().unwrap()];
        assert!(check_addresses(&loopback, true, local).is_ok());
        assert_eq!(
            check_addresses(&public, true, local).unwrap_err().rule,
            Rule::Scheme
        );
        assert_eq!(
            check_addresses(&loopback, false, Policy::default())
                .unwrap_err()
                .rule,
            Rule::Loopback
        );
        // One bad address among good ones refuses the host.
        let mixed = ["8.8.8.8".parse().unwrap(), "10.0.0.1".parse().unwrap()];
        assert_eq!(
            check_addresses(&mixed, false, Policy::default())
                .unwrap_err()
                .rule,
            Rule::Private
        );
    }

    #[tokio::test]
    async fn literal_and_resolved_hosts_are_checked() {
        let strict = Policy::default();
        for raw in [
            "https://127.0.0.1/",
            "https://[::1]/",
            "https://[::ffff:7f00:1]/",
            "https://localhost/",
            "https://169.254.169.254/latest/meta-data",
            "https://[fd00:ec2::254]/",
            // Other spellings of 127.0.0.1 that URL parsers accept.
            "https://2130706433/",
            "https://0x7f000001/",
            "https://127.1/",
            "https://0177.0.0.1/",
            "https://localhost./",
        ] {
            let url = WebhookUrl::parse(raw, strict).unwrap();
            assert!(resolve_checked(&url, strict).await.is_err(), "{raw}");
        }
    }
}
