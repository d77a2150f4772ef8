//! `[outbound_http]` as the checks read it, and the classes of address
//! that `ALLOWED_HOST_LIST` names.

use std::net::IpAddr;
use std::time::Duration;

use super::Allowed;

/// What `[outbound_http]` allows every plugin granted `http`.
#[derive(Debug, Clone)]
pub struct Rules {
    /// `ALLOWED_HOST_LIST`: which addresses may be reached.
    pub allowed: Vec<Allowed>,
    /// `ALLOW_INSECURE_HOSTS`: host names reachable over plain HTTP.
    pub insecure_hosts: Vec<String>,
    /// `TIMEOUT`: connecting, and waiting for each part of the answer.
    pub timeout: Duration,
    /// `MAX_RESPONSE_SIZE`: the largest response body, in bytes.
    pub max_response_size: usize,
}

impl Rules {
    /// `[outbound_http]` as the configuration read it.
    pub fn from_config(c: &crate::config::OutboundHttp) -> Self {
        Rules {
            allowed: c.allowed_host_list.clone(),
            insecure_hosts: c.allow_insecure_hosts.clone(),
            timeout: Duration::from_secs(c.timeout_secs),
            max_response_size: c.max_response_size,
        }
    }
}

impl Default for Rules {
    fn default() -> Self {
        Rules {
            allowed: vec![Allowed::External],
            insecure_hosts: Vec::new(),
            timeout: Duration::from_secs(10),
            max_response_size: 1024 * 1024,
        }
    }
}

/// Whether `rule` admits `ip`; addresses that are never reachable
/// (unspecified, multicast, broadcast, documentation) are admitted by none.
pub fn admitted(rule: &Allowed, ip: IpAddr) -> bool {
    class(ip) != Class::Never && admits(rule, ip)
}

fn admits(rule: &Allowed, ip: IpAddr) -> bool {
    match rule {
        Allowed::All => true,
        Allowed::Network(net) => net.contains(&ip),
        Allowed::Loopback => class(ip) == Class::Loopback,
        Allowed::Private => class(ip) == Class::Private,
        Allowed::External => class(ip) == Class::External,
    }
}

/// The IPv4 address an IPv6 one carries: `::ffff:a.b.c.d`, `::a.b.c.d`,
/// NAT64 (`64:ff9b::/96`, `64:ff9b:1::/48`) and 6to4 (`2002:ab:cd::/16`).
fn embedded_v4(v6: std::net::Ipv6Addr) -> Option<std::net::Ipv4Addr> {
    let s = v6.segments();
    let tail = |hi: u16, lo: u16| {
        std::net::Ipv4Addr::new((hi >> 8) as u8, hi as u8, (lo >> 8) as u8, lo as u8)
    };
    if let Some(v4) = v6.to_ipv4_mapped() {
        return Some(v4);
    }
    if s[..6] == [0; 6] && (s[6] != 0 || s[7] > 1) {
        return Some(tail(s[6], s[7]));
    }
    if s[0] == 0x64 && s[1] == 0xff9b {
        return Some(tail(s[6], s[7]));
    }
    if s[0] == 0x2002 {
        return Some(tail(s[1], s[2]));
    }
    None
}

#[derive(Debug, PartialEq, Eq)]
enum Class {
    Loopback,
    Private,
    External,
    /// Unspecified, broadcast, multicast, reserved and benchmarking
    /// ranges: never reachable.
    Never,
}

fn class(ip: IpAddr) -> Class {
    // An IPv4 address carried in IPv6 (mapped, compatible, NAT64, 6to4)
    // is judged as that IPv4 address.
    let ip = match ip {
        IpAddr::V6(v6) => embedded_v4(v6).map(IpAddr::V4).unwrap_or(ip),
        v4 => v4,
    };
    match ip {
        IpAddr::V4(v4) => {
            let o = v4.octets();
            if v4.is_loopback() {
                Class::Loopback
            } else if v4.is_unspecified()
                || v4.is_broadcast()
                || v4.is_multicast()
                || o[0] == 0
                || o[0] >= 240
                || (o[0] == 192 && o[1] == 0 && o[2] == 0)
                || (o[0] == 198 && (o[1] & 0xfe) == 18)
            {
                Class::Never
            } else if v4.is_private() || v4.is_link_local() || (o[0] == 100 && o[1] & 0xc0 == 64) {
                Class::Private
            } else {
                Class::External
            }
        }
        IpAddr::V6(v6) => {
            let first = v6.segments()[0];
            if v6.is_loopback() {
                Class::Loopback
            } else if v6.is_unspecified() || v6.is_multicast() {
                Class::Never
            } else if first & 0xfe00 == 0xfc00
                || first & 0xffc0 == 0xfe80
                || first & 0xffc0 == 0xfec0
            {
                Class::Private
            } else {
                Class::External
            }
        }
    }
}

impl Rules {
    pub(super) fn admits(&self, ip: IpAddr) -> bool {
        class(ip) != Class::Never && self.allowed.iter().any(|a| admits(a, ip))
    }

    pub(super) fn insecure_allowed(&self, host: &str) -> bool {
        self.insecure_hosts
            .iter()
            .any(|h| h == "*" || h.eq_ignore_ascii_case(host))
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn addresses_are_classed() {
        let ip = |s: &str| s.parse::<IpAddr>().unwrap();
        assert_eq!(class(ip("127.0.0.2")), Class::Loopback);
        assert_eq!(class(ip("::ffff:127.0.0.1")), Class::Loopback);
        assert_eq!(class(ip("10.1.2.3")), Class::Private);
        assert_eq!(class(ip("172.20.0.1")), Class::Private);
        assert_eq!(class(ip("169.254.169.254")), Class::Private);
        assert_eq!(class(ip("100.64.0.1")), Class::Private);
        assert_eq!(class(ip("fd00::1")), Class::Private);
        assert_eq!(class(ip("0.0.0.0")), Class::Never);
        assert_eq!(class(ip("240.0.0.1")), Class::Never);
        assert_eq!(class(ip("64:ff9b::7f00:1")), Class::Loopback);
        assert_eq!(class(ip("2002:a00:1::")), Class::Private);
        assert_eq!(class(ip("::10.0.0.1")), Class::Private);
        assert_eq!(class(ip("2001:4860::8888")), Class::External);
        assert_eq!(class(ip("8.8.8.8")), Class::External);
        let rules = Rules::default();
        assert!(rules.admits(ip("8.8.8.8")));
        assert!(!rules.admits(ip("127.0.0.1")));
        assert!(!rules.admits(ip("169.254.169.254")));
        let all = Rules {
            allowed: vec![Allowed::All],
            ..Rules::default()
        };
        assert!(all.admits(ip("127.0.0.1")) && !all.admits(ip("0.0.0.0")));
        let net = Rules {
            allowed: vec![Allowed::parse("10.0.0.0/8").unwrap()],
            ..Rules::default()
        };
        assert!(net.admits(ip("10.9.9.9")) && !net.admits(ip("11.0.0.1")));
        assert_eq!(Allowed::parse("intranet"), None);
    }
}
