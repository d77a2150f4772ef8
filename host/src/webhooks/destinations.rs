//! Where a hook may deliver: its URL parsed, its host resolved, and both
//! checked against `[webhook] ALLOWED_HOST_LIST`.

use std::net::{IpAddr, SocketAddr};
use std::time::Duration;

use crate::config::{HostRule, Webhook as WebhookConfig};
use crate::plugins::builtin;
use crate::plugins::outbound::{Allowed, admitted};

/// A hook's destination, parsed and checked against `[webhook]
/// ALLOWED_HOST_LIST`.
#[derive(Debug, Clone)]
pub struct Target {
    pub host: String,
    pub port: u16,
    /// Plain HTTP (or plain TCP for NATS), which the list must name.
    pub plain: bool,
    /// The addresses the host resolved and the list admits; empty when the
    /// name did not resolve (at registration, which then leaves the check
    /// to delivery).
    pub addresses: Vec<SocketAddr>,
}

/// The URL schemes each built-in transport takes; a third party's
/// transport takes any URL.
fn schemes(transport: &str) -> Option<&'static [&'static str]> {
    match transport {
        builtin::WEBHOOK_HTTP => Some(&["https", "http"]),
        builtin::WEBHOOK_NATS => Some(&["nats"]),
        _ => None,
    }
}

/// Whether `rules` let a delivery reach `host` at `ip`: a host-name entry
/// that names it, or an address entry that admits the address.
fn host_admits(rules: &[HostRule], host: &str, ip: IpAddr) -> bool {
    rules.iter().any(|r| match r {
        HostRule::Name(_) => r.names(host),
        HostRule::Address(a) => admitted(a, ip),
    })
}

/// Whether `rules` name `host` (or all of its addresses) other than by the
/// default `external`: only such hosts may be reached in the clear.
fn plain_allowed(rules: &[HostRule], host: &str, addresses: &[IpAddr]) -> bool {
    rules.iter().any(|r| match r {
        HostRule::Name(_) => r.names(host),
        HostRule::Address(Allowed::External) => false,
        HostRule::Address(a) => {
            !addresses.is_empty() && addresses.iter().all(|ip| admitted(a, *ip))
        }
    })
}

/// Parses and checks a hook URL for `transport`, resolving its host. At
/// registration (`strict_resolution` false) a name that does not resolve
/// passes, to be checked at delivery; at delivery it is an error.
pub async fn check_target(
    cfg: &WebhookConfig,
    transport: &str,
    url: &str,
    strict_resolution: bool,
) -> std::result::Result<Target, String> {
    let parsed = url::Url::parse(url.trim()).map_err(|e| format!("url: not a URL ({e})"))?;
    let scheme = parsed.scheme().to_ascii_lowercase();
    if let Some(allowed) = schemes(transport)
        && !allowed.contains(&scheme.as_str())
    {
        return Err(format!(
            "url: the {transport} transport takes {} URLs",
            allowed.join(" or ")
        ));
    }
    if !parsed.username().is_empty() || parsed.password().is_some() {
        return Err("url: credentials in the URL are not allowed; use authorization_header".into());
    }
    let host = parsed
        .host_str()
        .ok_or("url: the URL has no host")?
        .trim_matches(['[', ']'])
        .to_ascii_lowercase();
    let port = parsed
        .port_or_known_default()
        .or_else(|| (scheme == "nats").then_some(4222))
        .ok_or("url: the URL has no port")?;
    let plain = matches!(scheme.as_str(), "http" | "nats");
    let resolved: Vec<SocketAddr> = match tokio::time::timeout(
        Duration::from_secs(5),
        tokio::net::lookup_host((host.as_str(), port)),
    )
    .await
    {
        Ok(Ok(found)) => found.collect(),
        _ if strict_resolution => return Err(format!("{host} does not resolve")),
        _ => Vec::new(),
    };
    let rules = &cfg.allowed_host_list;
    let admitted_addresses: Vec<SocketAddr> = resolved
        .iter()
        .copied()
        .filter(|a| host_admits(rules, &host, a.ip()))
        .collect();
    if !resolved.is_empty() && admitted_addresses.len() != resolved.len() {
        let refused: Vec<String> = resolved
            .iter()
            .filter(|a| !admitted_addresses.contains(a))
            .map(|a| a.ip().to_string())
            .collect();
        return Err(format!(
            "url: {host} resolves to {}, which [webhook] ALLOWED_HOST_LIST does not allow",
            refused.join(", ")
        ));
    }
    let ips: Vec<IpAddr> = resolved.iter().map(|a| a.ip()).collect();
    if plain && !plain_allowed(rules, &host, &ips) {
        return Err(if scheme == "nats" {
            format!(
                "url: nats:// is plain TCP, allowed only to hosts [webhook] ALLOWED_HOST_LIST names ({host} is not)"
            )
        } else {
            format!(
                "url: http:// is allowed only to hosts [webhook] ALLOWED_HOST_LIST names ({host} is not); use https://"
            )
        });
    }
    Ok(Target {
        host,
        port,
        plain,
        addresses: admitted_addresses,
    })
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn plain_http_needs_a_host_the_list_names() {
        let rules = |l: &[&str]| {
            l.iter()
                .map(|w| HostRule::parse(w).expect("valid"))
                .collect::<Vec<_>>()
        };
        let lo: IpAddr = "127.0.0.1".parse().expect("literal");
        let ext: IpAddr = "93.184.216.34".parse().expect("literal");
        assert!(!plain_allowed(&rules(&["external"]), "example.com", &[ext]));
        assert!(plain_allowed(&rules(&["loopback"]), "localhost", &[lo]));
        assert!(plain_allowed(
            &rules(&["*.example.com"]),
            "hooks.example.com",
            &[ext]
        ));
        assert!(!host_admits(&rules(&["external"]), "localhost", lo));
        assert!(host_admits(&rules(&["external"]), "example.com", ext));
    }
}
