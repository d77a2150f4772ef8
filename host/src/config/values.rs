//! The typed values keys are read into: address and host rules, the
//! database kind, account linking, and where a value in force comes from.

/// Where a key's value in force comes from.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum ValueOrigin {
    Default,
    Ini,
    Environment,
    /// A run-time setting stored from the panel or `postern admin config set`.
    Panel,
}

impl std::fmt::Display for ValueOrigin {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str(match self {
            ValueOrigin::Default => "default",
            ValueOrigin::Ini => "ini",
            ValueOrigin::Environment => "environment",
            ValueOrigin::Panel => "panel",
        })
    }
}

#[derive(Debug, Clone, PartialEq, Eq)]
pub enum DbType {
    Sqlite,
    Postgres,
}

/// What happens when an external identity's verified e-mail belongs to a
/// local account that is not linked to it (Gitea's `ACCOUNT_LINKING`).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum AccountLinking {
    /// Refuse the sign-in.
    Disabled,
    /// Ask for the local account's password, then link.
    Login,
    /// Link at once.
    Auto,
}

/// One entry of `[outbound_http] ALLOWED_HOST_LIST` (Gitea's words for its
/// webhook list).
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum AddressRule {
    /// Public addresses.
    External,
    /// Private networks: RFC 1918, carrier-grade NAT, IPv6 unique-local and
    /// link-local addresses.
    Private,
    /// 127.0.0.0/8 and ::1.
    Loopback,
    /// Every address.
    All,
    /// One network.
    Network(ipnet::IpNet),
}

impl AddressRule {
    /// Reads one entry; `None` for a word or network it does not know.
    pub fn parse(word: &str) -> Option<Self> {
        match word.trim().to_ascii_lowercase().as_str() {
            "external" => Some(AddressRule::External),
            "private" => Some(AddressRule::Private),
            "loopback" => Some(AddressRule::Loopback),
            "*" => Some(AddressRule::All),
            other => other.parse().ok().map(AddressRule::Network),
        }
    }
}

/// One entry of `[webhook] ALLOWED_HOST_LIST`: an address rule, or a host
/// name (a glob: `*.example.com`), as Gitea reads the key.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum HostRule {
    Address(AddressRule),
    /// A host name pattern, lower case.
    Name(String),
}

impl HostRule {
    /// Reads one entry; `None` for one that is neither.
    pub fn parse(word: &str) -> Option<Self> {
        if let Some(rule) = AddressRule::parse(word) {
            return Some(HostRule::Address(rule));
        }
        let name = word.trim().to_ascii_lowercase();
        let valid = !name.is_empty()
            && name
                .chars()
                .all(|c| c.is_ascii_alphanumeric() || matches!(c, '.' | '-' | '*' | '?'))
            && glob::Pattern::new(&name).is_ok();
        valid.then_some(HostRule::Name(name))
    }

    /// Whether a host name matches this entry by name.
    pub fn names(&self, host: &str) -> bool {
        match self {
            HostRule::Name(pattern) => {
                glob::Pattern::new(pattern).is_ok_and(|p| p.matches(&host.to_ascii_lowercase()))
            }
            HostRule::Address(_) => false,
        }
    }
}
