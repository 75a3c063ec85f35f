//! Which avatars the public pages show: an avatar URL is any https URL its driver chose, and
//! every visitor's browser would fetch it, so a page shows it only from a host on the
//! allow-list (`Pages__AvatarHosts`), and the page's image policy names those hosts alone.

/// Whether the pages show `url` as an image: https, a host name on `hosts` (so never an IP
/// address), no port and no user name or password. Anything else is shown as the initial.
pub fn shown(url: &str, hosts: &[String]) -> bool {
    let Ok(url) = url::Url::parse(url) else {
        return false;
    };
    let Some(host) = url.host_str() else {
        return false;
    };
    url.scheme() == "https"
        && url.port().is_none()
        && url.username().is_empty()
        && url.password().is_none()
        && !host.starts_with('[')
        && host.parse::<std::net::IpAddr>().is_err()
        && hosts.iter().any(|h| h == host)
}

/// The Content-Security-Policy `img-src` sources of `hosts`: each over https, or `'none'`.
pub fn image_sources(hosts: &[String]) -> String {
    if hosts.is_empty() {
        return "'none'".to_owned();
    }
    hosts
        .iter()
        .map(|h| format!("https://{h}"))
        .collect::<Vec<_>>()
        .join(" ")
}

#[cfg(test)]
mod tests {
    use super::*;

    fn hosts() -> Vec<String> {
        vec![
            "cdn.discordapp.com".into(),
            "lh3.googleusercontent.com".into(),
        ]
    }

    #[test]
    fn only_https_urls_on_listed_hosts_are_shown() {
        for url in [
            "https://cdn.discordapp.com/avatars/1/a.png",
            "https://CDN.discordapp.com/avatars/1/a.png",
            "https://lh3.googleusercontent.com/a/xyz=s96-c",
            "https://cdn.discordapp.com:443/avatars/1/a.png",
        ] {
            assert!(shown(url, &hosts()), "{url}");
        }
        for url in [
            "http://cdn.discordapp.com/avatars/1/a.png",
            "https://tracker.example.com/pixel.png",
            "https://cdn.discordapp.com.example.com/a.png",
            "https://1.2.3.4/a.png",
            "https://0x7f.1/a.png",
            "https://[::1]/a.png",
            "https://cdn.discordapp.com:8443/a.png",
            "https://user@cdn.discordapp.com/a.png",
            "https://user:pw@cdn.discordapp.com/a.png",
            "javascript:alert(1)",
            "//cdn.discordapp.com/a.png",
            "",
        ] {
            assert!(!shown(url, &hosts()), "{url}");
        }
        assert!(!shown("https://cdn.discordapp.com/a.png", &[]));
    }

    #[test]
    fn the_image_policy_names_the_hosts() {
        assert_eq!(
            image_sources(&hosts()),
            "https://cdn.discordapp.com https://lh3.googleusercontent.com"
        );
        assert_eq!(image_sources(&[]), "'none'");
    }
}
