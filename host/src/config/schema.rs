//! Every section and key Postern reads: its type, its default and what it
//! does. `config/app.example.ini` is generated from this table
//! (`postern admin config example`), and a test keeps the two equal.

use std::time::Duration;

/// What a value must look like.
#[derive(Debug, Clone, Copy)]
pub enum Kind {
    /// `true`/`false` (also `1`/`0`, any case), as Go's `strconv.ParseBool`.
    Bool,
    /// A whole number in `min..=max`.
    Int { min: i64, max: i64 },
    /// Free text.
    Str,
    /// An `http://` or `https://` URL.
    Url,
    /// One of the listed words.
    Enum(&'static [&'static str]),
    /// `@every <duration>`, the duration in Go form (`24h`, `30m`, `1h30m`).
    Schedule,
    /// A PEM certificate block.
    Pem,
    /// Exactly 64 hexadecimal digits.
    Sha256,
    /// A comma-separated list of the listed words.
    List(&'static [&'static str]),
    /// A comma-separated list of `<version>:<YYYY-MM-DD>` (a deprecated API
    /// version and its sunset date).
    Deprecations,
    /// A comma-separated list of `external`, `private`, `loopback`, `*` and
    /// networks in CIDR form (`ALLOWED_HOST_LIST`).
    AddressList,
    /// As [`Kind::AddressList`], and host-name globs (`*.example.com`,
    /// `hooks.internal`): `[webhook] ALLOWED_HOST_LIST`, as Gitea reads it.
    HostList,
    /// A comma-separated list of durations in Go form (`1m,5m,30m,2h`).
    Durations,
}

impl Kind {
    /// Checks `value`; the error is the "expected …" text.
    pub fn check(&self, value: &str) -> Result<(), String> {
        let v = value.trim();
        match self {
            Kind::Bool => parse_bool(v)
                .map(|_| ())
                .ok_or_else(|| "a boolean (true or false)".to_string()),
            Kind::Int { min, max } => match v.parse::<i64>() {
                Ok(n) if (*min..=*max).contains(&n) => Ok(()),
                _ if *min == 0 && *max == 65535 => Err("a port number (0-65535)".into()),
                _ => Err(format!("a whole number from {min} to {max}")),
            },
            Kind::Str => Ok(()),
            Kind::Url => {
                let ok = (v.starts_with("http://") || v.starts_with("https://"))
                    && v.split_once("://")
                        .is_some_and(|(_, rest)| !rest.is_empty() && !rest.contains(' '));
                if ok {
                    Ok(())
                } else {
                    Err("an http:// or https:// URL".into())
                }
            }
            Kind::Enum(words) => {
                if words.iter().any(|w| w.eq_ignore_ascii_case(v)) {
                    Ok(())
                } else {
                    Err(format!("one of {}", words.join(", ")))
                }
            }
            Kind::Schedule => parse_schedule(v)
                .map(|_| ())
                .ok_or_else(|| "a schedule of the form @every <duration>, e.g. @every 24h".into()),
            Kind::Pem => {
                if v.starts_with("-----BEGIN CERTIFICATE-----")
                    && v.contains("-----END CERTIFICATE-----")
                {
                    Ok(())
                } else {
                    Err("a PEM certificate block (-----BEGIN CERTIFICATE----- …)".into())
                }
            }
            Kind::Sha256 => {
                if v.len() == 64 && v.chars().all(|c| c.is_ascii_hexdigit()) {
                    Ok(())
                } else {
                    Err("a sha256 digest of 64 hexadecimal digits".into())
                }
            }
            Kind::Deprecations => parse_deprecations(v).map(|_| ()).ok_or_else(|| {
                "a comma-separated list of <version>:<YYYY-MM-DD>, e.g. v1:2027-06-30".into()
            }),
            Kind::AddressList => {
                for item in parse_list(v) {
                    if super::AddressRule::parse(&item).is_none() {
                        return Err(format!(
                            "a comma-separated list of external, private, loopback, * and networks such as 10.0.0.0/8; {item:?} is none of them"
                        ));
                    }
                }
                Ok(())
            }
            Kind::HostList => {
                for item in parse_list(v) {
                    if super::HostRule::parse(&item).is_none() {
                        return Err(format!(
                            "a comma-separated list of external, private, loopback, *, networks such as 10.0.0.0/8 and host names (globs allowed, *.example.com); {item:?} is none of them"
                        ));
                    }
                }
                Ok(())
            }
            Kind::Durations => parse_durations(v).map(|_| ()).ok_or_else(|| {
                "a comma-separated list of durations such as 1m,5m,30m,2h (each 1s to 24h)".into()
            }),
            Kind::List(words) => {
                for item in parse_list(v) {
                    if !words.contains(&item.as_str()) {
                        return Err(format!("a comma-separated list of {}", words.join(", ")));
                    }
                }
                Ok(())
            }
        }
    }
}

/// What `ID_TOKEN_SIGNING_ALGORITHMS` may list: the JWS algorithms (RFC 7518
/// §3.1) whose ID token signatures the `oauth2` plugin can check.
pub const ID_TOKEN_ALGORITHMS: &[&str] = &[
    "RS256", "RS384", "RS512", "PS256", "PS384", "PS512", "ES256", "ES384", "EdDSA", "HS256",
    "HS384", "HS512",
];

/// Go's `strconv.ParseBool`, which Gitea's ini reader uses.
pub fn parse_bool(v: &str) -> Option<bool> {
    match v.trim() {
        "1" | "t" | "T" | "TRUE" | "true" | "True" => Some(true),
        "0" | "f" | "F" | "FALSE" | "false" | "False" => Some(false),
        _ => None,
    }
}

/// Splits a comma-separated list, trimming and dropping empty items.
pub fn parse_list(v: &str) -> Vec<String> {
    v.split(',')
        .map(str::trim)
        .filter(|s| !s.is_empty())
        .map(str::to_string)
        .collect()
}

/// `v1:2027-06-30, v2:2028-01-01` → [(1, date), (2, date)].
pub fn parse_deprecations(v: &str) -> Option<Vec<(u8, time::Date)>> {
    let format = time::macros::format_description!("[year]-[month]-[day]");
    parse_list(v)
        .iter()
        .map(|item| {
            let (version, date) = item.split_once(':')?;
            let version = parse_api_version(version.trim())?;
            let date = time::Date::parse(date.trim(), &format).ok()?;
            Some((version, date))
        })
        .collect()
}

/// `v2` → 2.
pub fn parse_api_version(v: &str) -> Option<u8> {
    v.strip_prefix('v')?.parse().ok().filter(|n| *n > 0)
}

/// `@every <duration>` with a Go duration (`h`, `m`, `s` units, combined).
pub fn parse_schedule(v: &str) -> Option<Duration> {
    parse_duration(v.trim().strip_prefix("@every")?)
}

/// `1m,5m,30m,2h` → their durations; none empty, each from 1 s to 24 h.
pub fn parse_durations(v: &str) -> Option<Vec<Duration>> {
    let list: Option<Vec<Duration>> = parse_list(v).iter().map(|d| parse_duration(d)).collect();
    list.filter(|l| !l.is_empty() && l.iter().all(|d| d.as_secs() <= 24 * 3600))
}

/// A duration in Go form: `24h`, `30m`, `1h30m`, `10s`.
pub fn parse_duration(v: &str) -> Option<Duration> {
    let d = v.trim();
    let mut total = 0u64;
    let mut number = String::new();
    for c in d.chars() {
        if c.is_ascii_digit() {
            number.push(c);
            continue;
        }
        let n: u64 = number.parse().ok()?;
        number.clear();
        total += n * match c {
            'h' => 3600,
            'm' => 60,
            's' => 1,
            _ => return None,
        };
    }
    (number.is_empty() && total > 0).then(|| Duration::from_secs(total))
}

/// The kinds of section names.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum SectionPattern {
    /// A fixed name: `server`, `database`, …
    Fixed(&'static str),
    /// `source.<n>`: a numbered directory source.
    Directory,
    /// `source.oauth2_<name>`: an OAuth 2.0 or SAML source.
    OAuth2Source,
    /// `plugin.<id>`: a plugin's host settings and its own settings.
    Plugin,
}

impl SectionPattern {
    /// Which pattern a section name follows, and the variable part.
    pub fn classify(section: &str) -> Option<(SectionPattern, &str)> {
        if let Some(rest) = section.strip_prefix("source.") {
            return Some(match rest.strip_prefix("oauth2_") {
                Some(name) if !name.is_empty() => (SectionPattern::OAuth2Source, name),
                _ => (SectionPattern::Directory, rest),
            });
        }
        if let Some(id) = section.strip_prefix("plugin.") {
            return (!id.is_empty()).then_some((SectionPattern::Plugin, id));
        }
        SECTIONS
            .iter()
            .find(|(name, _)| *name == section)
            .map(|(name, _)| (SectionPattern::Fixed(name), ""))
    }

    /// The section name the schema lists its keys under.
    pub fn schema_name(&self) -> &'static str {
        match self {
            SectionPattern::Fixed(name) => name,
            SectionPattern::Directory => "source.<n>",
            SectionPattern::OAuth2Source => "source.oauth2_<name>",
            SectionPattern::Plugin => "plugin.<id>",
        }
    }
}

/// One key of the schema.
#[derive(Debug)]
pub struct KeySpec {
    pub key: &'static str,
    pub kind: Kind,
    /// The built-in default, as ini text; empty means unset.
    pub default: &'static str,
    pub doc: &'static str,
}

const fn k(key: &'static str, kind: Kind, default: &'static str, doc: &'static str) -> KeySpec {
    KeySpec {
        key,
        kind,
        default,
        doc,
    }
}

const BOOL: Kind = Kind::Bool;
const STR: Kind = Kind::Str;
const URL: Kind = Kind::Url;
const PORT: Kind = Kind::Int { min: 0, max: 65535 };
const SECONDS: Kind = Kind::Int {
    min: 1,
    max: 10 * 365 * 24 * 3600,
};
/// What `[plugin.<id>] GRANTS` may name: the capabilities a third-party
/// plugin can be lent. `directory` and `saml` hold a source's own
/// connection or keys and are lent to the built-in plugins alone.
/// `plugins::capabilities` holds this list against its `Capability` names.
pub const GRANTABLE: &[&str] = &["log", "credentials", "kv", "http", "tcp"];
/// The API versions this build can serve.
pub const API_VERSIONS: &[&str] = &["v1", "v2"];

/// Every section with its keys and a line about it, in the order of the
/// example file.
pub static SECTIONS: &[(&str, &[KeySpec])] = &[
    (
        "server",
        &[
            k(
                "HTTP_ADDR",
                STR,
                "127.0.0.1",
                "Address the web server listens on. Use 0.0.0.0 to listen on every interface.",
            ),
            k(
                "HTTP_PORT",
                PORT,
                "3000",
                "Port the web server listens on; 0 picks a free port and logs it.",
            ),
            k(
                "DOMAIN",
                STR,
                "localhost",
                "The host name users reach Postern at; the default ROOT_URL is made of it.",
            ),
            k(
                "ROOT_URL",
                URL,
                "",
                "The address users reach Postern at; unset: http://<DOMAIN>:<HTTP_PORT>/, as Gitea makes it. An https:// address makes cookies Secure.",
            ),
            k(
                "APP_DATA_PATH",
                STR,
                "data",
                "Directory for the SQLite database, the plugin cache and repositories.",
            ),
            k(
                "CRON_SYNC_LDAP",
                Kind::Schedule,
                "@every 24h",
                "How often directory sources with ENABLE_SYNC are synchronised.",
            ),
            k(
                "CRON_REFRESH_SAML_METADATA",
                Kind::Schedule,
                "@every 24h",
                "How often SAML sources with a METADATA_URL fetch their identity provider's metadata anew (certificate rollover, a moved sign-on URL).",
            ),
            k(
                "START_SSH_SERVER",
                BOOL,
                "false",
                "Run the built-in SSH server for git over SSH.",
            ),
            k(
                "SSH_DOMAIN",
                STR,
                "",
                "Host name in SSH clone URLs; empty means the host of ROOT_URL.",
            ),
            k("SSH_PORT", PORT, "22", "Port in SSH clone URLs."),
            k(
                "SSH_LISTEN_HOST",
                STR,
                "",
                "Address the SSH server listens on; empty means HTTP_ADDR.",
            ),
            k(
                "SSH_LISTEN_PORT",
                PORT,
                "",
                "Port the SSH server listens on; empty means SSH_PORT, 0 picks a free port and logs it.",
            ),
        ],
    ),
    (
        "database",
        &[
            k(
                "DB_TYPE",
                Kind::Enum(&["sqlite3", "postgres"]),
                "sqlite3",
                "Database backend: sqlite3 (embedded) or postgres.",
            ),
            k(
                "PATH",
                STR,
                "",
                "SQLite file; empty means <APP_DATA_PATH>/postern.db.",
            ),
            k("HOST", STR, "127.0.0.1:5432", "PostgreSQL host:port."),
            k("NAME", STR, "postern", "PostgreSQL database name."),
            k("USER", STR, "postgres", "PostgreSQL user."),
            k("PASSWD", STR, "", "PostgreSQL password."),
            k(
                "SSL_MODE",
                Kind::Enum(&["disable", "prefer", "require"]),
                "disable",
                "PostgreSQL TLS mode.",
            ),
        ],
    ),
    (
        "service",
        &[
            k(
                "DISABLE_REGISTRATION",
                BOOL,
                "false",
                "Turns off the registration page; accounts are then made by administrators or sources.",
            ),
            k(
                "REQUIRE_SIGNIN_VIEW",
                BOOL,
                "false",
                "Require sign-in to view repositories.",
            ),
            k(
                "LDAP_SYNC_ON_LOGIN",
                BOOL,
                "false",
                "Refresh a directory user's attributes at every sign-in.",
            ),
            k(
                "DISABLE_REGISTRATION_ORG",
                BOOL,
                "false",
                "Forbid anonymous organization creation: accounts made on the sign-up page do not create organizations; accounts an administrator or an identity source made still do.",
            ),
            k(
                "ALLOW_ONLY_ADMIN_CREATE_ORG",
                BOOL,
                "false",
                "Only site administrators create organizations.",
            ),
        ],
    ),
    (
        "security",
        &[
            k(
                "DISABLE_QUERY_AUTH_TOKEN",
                BOOL,
                "true",
                "Refuse API tokens in the query string (?access_token=, ?token=), as current Gitea does; false accepts them for old scripts. URLs end up in proxies' and browsers' logs, so headers are the safe way.",
            ),
            k(
                "ENABLE_2FA",
                BOOL,
                "false",
                "Require a second factor for every user.",
            ),
            k(
                "DISABLE_REGISTRATION",
                BOOL,
                "false",
                "Alias of [service] DISABLE_REGISTRATION, as the spec lists it here; either one turns registration off.",
            ),
            k(
                "ENABLE_REMEMBER_ME_2FA",
                BOOL,
                "false",
                "Let a browser skip the second step for a while after a successful one.",
            ),
            k(
                "REMEMBER_ME_2FA_DAYS",
                Kind::Int { min: 1, max: 365 },
                "30",
                "How long a remembered browser skips the second step, in days.",
            ),
            k(
                "MIN_PASSWORD_LENGTH",
                Kind::Int { min: 1, max: 1024 },
                "8",
                "Shortest password the local source accepts.",
            ),
            k(
                "LOGIN_RATE_LIMIT",
                Kind::Int {
                    min: 0,
                    max: 100_000,
                },
                "10",
                "Wrong passwords one account may try within LOGIN_RATE_LIMIT_WINDOW; the next attempt is answered 429 with Retry-After. 0 turns the limit off.",
            ),
            k(
                "LOGIN_RATE_LIMIT_PER_ADDRESS",
                Kind::Int {
                    min: 0,
                    max: 1_000_000,
                },
                "100",
                "Wrong passwords one client address may try, for any accounts, within LOGIN_RATE_LIMIT_WINDOW. 0 turns the limit off.",
            ),
            k(
                "LOGIN_RATE_LIMIT_WINDOW",
                Kind::Int {
                    min: 1,
                    max: 86_400,
                },
                "60",
                "The sliding window of the sign-in rate limits, in seconds.",
            ),
            k(
                "REVERSE_PROXY_TRUSTED_PROXIES",
                Kind::AddressList,
                "127.0.0.0/8,::1/128",
                "Proxies whose X-Forwarded-For names the client address the per-address rate limit counts; requests from other peers count their own address.",
            ),
        ],
    ),
    (
        "log",
        &[k(
            "LEVEL",
            Kind::Enum(&["trace", "debug", "info", "warn", "error"]),
            "info",
            "Least severe log level written.",
        )],
    ),
    (
        "source",
        &[
            k("ENABLE_LDAP", BOOL, "false", "Turn on directory sign-in."),
            k(
                "ENABLE_OAUTH2",
                BOOL,
                "false",
                "Turn on OAuth 2.0 consumer sign-in.",
            ),
        ],
    ),
    (
        "source.<n>",
        &[
            k("NAME", STR, "", "Display name of the directory source."),
            k(
                "TYPE",
                Kind::Enum(&["ldap", "2", "ad", "6"]),
                "ldap",
                "ldap (or 2) for LDAP; ad (or 6) for the directory-service variant.",
            ),
            k(
                "SECURITY_PROTOCOL",
                Kind::Enum(&["unencrypted", "ldaps", "starttls"]),
                "unencrypted",
                "How to reach the server; ldaps is used with port 636.",
            ),
            k("HOST", STR, "", "Directory server host."),
            k("PORT", PORT, "389", "Directory server port."),
            k(
                "CA_FILE",
                STR,
                "",
                "PEM file of the CA that signed the server's certificate (ldaps, starttls); empty means the system's CAs.",
            ),
            k(
                "TIMEOUT",
                Kind::Int { min: 1, max: 600 },
                "10",
                "Seconds to wait for the directory server (connect and each answer).",
            ),
            k(
                "USER_DN",
                STR,
                "",
                "Bind account DN (a read-only service account).",
            ),
            k("USER_PASSWD", STR, "", "Bind account password."),
            k(
                "USER_SEARCH_BASE_DN",
                STR,
                "",
                "Base DN where users are searched.",
            ),
            k(
                "USER_FILTER",
                STR,
                "",
                "User filter; %s stands for the login, e.g. (&(objectClass=person)(uid=%s)).",
            ),
            k(
                "ATTRIBUTE_USERNAME",
                STR,
                "",
                "Attribute used as the login name.",
            ),
            k(
                "ATTRIBUTE_NAME",
                STR,
                "",
                "Attribute used as the first or common name.",
            ),
            k(
                "ATTRIBUTE_SURNAME",
                STR,
                "",
                "Attribute used as the surname.",
            ),
            k(
                "ATTRIBUTE_MAIL",
                STR,
                "",
                "Attribute used as the e-mail address.",
            ),
            k(
                "ATTRIBUTE_SSH_PUBLIC_KEY",
                STR,
                "",
                "Attribute holding public SSH keys.",
            ),
            k(
                "ENABLE_SYNC",
                BOOL,
                "false",
                "Synchronise users on the CRON_SYNC_LDAP schedule.",
            ),
            k(
                "SYNC_ON_LOGIN",
                BOOL,
                "false",
                "Synchronise the user at sign-in.",
            ),
            k(
                "ALLOW_USER_CREATE",
                BOOL,
                "false",
                "Allow creating users from the directory.",
            ),
            k(
                "AUTO_REGISTER",
                BOOL,
                "false",
                "Create the local user on first successful sign-in (needs ALLOW_USER_CREATE too).",
            ),
            k(
                "GROUP_SEARCH_BASE_DN",
                STR,
                "",
                "Base DN where groups are searched.",
            ),
            k("GROUP_FILTER", STR, "", "Group filter."),
            k("GROUP_NAME_ATTRIBUTE", STR, "", "Group name attribute."),
            k("GROUP_MEMBER_ATTRIBUTE", STR, "", "Group member attribute."),
            k(
                "USER_GROUP_ATTRIBUTE",
                STR,
                "",
                "User attribute listing the user's groups.",
            ),
            k(
                "SYNC_GROUPS",
                BOOL,
                "false",
                "Synchronise group membership into teams.",
            ),
            k(
                "GROUP_TEAM_MAP",
                STR,
                "",
                "JSON: directory group -> organization -> teams the user is put in (with SYNC_GROUPS).",
            ),
            k(
                "AUTO_CREATE_ORG",
                BOOL,
                "false",
                "Create an organization from a directory group.",
            ),
            k(
                "ORG_NAME_ATTRIBUTE",
                STR,
                "",
                "Attribute used as the organization name.",
            ),
        ],
    ),
    (
        "source.oauth2_<name>",
        &[
            k("NAME", STR, "", "Display name."),
            k(
                "PROVIDER",
                STR,
                "",
                "Provider kind: openidConnect (or another OAuth 2.0 kind), or saml.",
            ),
            k(
                "AUTH_URL",
                URL,
                "",
                "Authorization (OAuth 2.0) or single sign-on (SAML) endpoint of the identity provider.",
            ),
            k("TOKEN_URL", URL, "", "Token endpoint (OAuth 2.0)."),
            k("PROFILE_URL", URL, "", "User-info endpoint (OAuth 2.0)."),
            k(
                "CLIENT_ID",
                STR,
                "",
                "Client id at the identity provider (OAuth 2.0).",
            ),
            k("CLIENT_SECRET", STR, "", "Client secret (OAuth 2.0)."),
            k(
                "ISSUER",
                URL,
                "",
                "SAML: Postern's own address as issuer. OpenID Connect: the provider's issuer, when it is not the discovery URL's base; the discovery document must name it (empty: that base).",
            ),
            k(
                "REDIRECT_URI",
                URL,
                "",
                "SAML assertion consumer URL: <ROOT_URL>user/oauth2/SAML/callback.",
            ),
            k(
                "CERTIFICATE",
                Kind::Pem,
                "",
                "Signing certificate of the SAML identity provider (PEM).",
            ),
            k(
                "EMAIL_ATTRIBUTE",
                STR,
                "email",
                "Claim or attribute used as e-mail (SAML default: Email).",
            ),
            k(
                "NAME_ATTRIBUTE",
                STR,
                "name",
                "Claim or attribute used as name (SAML default: Name).",
            ),
            k(
                "USERNAME_ATTRIBUTE",
                STR,
                "preferred_username",
                "Claim or attribute used as login (SAML default: UPN).",
            ),
            k(
                "SIGN_REQUESTS",
                BOOL,
                "false",
                "Sign outgoing SAML requests.",
            ),
            k(
                "ALLOW_IDP_INITIATED",
                BOOL,
                "false",
                "SAML: take unsolicited responses (IdP-initiated sign-in: Entra My Apps, the Okta dashboard, ADFS IdpInitiatedSignOn). Weaker than a sign-in begun here: nothing ties the response to the browser that posts it. Signature, audience, recipient, time window and the assertion's single use are still checked, and RelayState is followed only as a local path.",
            ),
            k(
                "WANT_ASSERTIONS_ENCRYPTED",
                BOOL,
                "false",
                "SAML: publish an encryption key in the service provider's metadata, so that the identity provider encrypts assertions to it (ADFS does whenever it sees one).",
            ),
            k(
                "USERNAME",
                Kind::Enum(&["preferred_username", "email", "userid", "nickname"]),
                "preferred_username",
                "What a new account's login is made from: preferred_username (the USERNAME_ATTRIBUTE claim or attribute), email (the address), userid (the provider's id of the user) or nickname (the nickname claim); then normalised: the part before an @, accents dropped, lower case, other characters outside letters, digits, '-', '_' and '.' made '-'.",
            ),
            k(
                "USERNAME_COLLISION",
                Kind::Enum(&["suffix", "refuse"]),
                "suffix",
                "When another account has that login already: suffix (<login>-2, -3, …) or refuse (nobody is made; the person is asked to have an administrator link the sign-in). A login never links an identity to an account.",
            ),
            k(
                "ICON_URL",
                URL,
                "",
                "An image (about 20 pixels square) on the source's \"Sign in with\" button: an https:// URL, as the pages' Content-Security-Policy loads images from this site and https:// only.",
            ),
            k(
                "TRUST_EMAIL",
                BOOL,
                "false",
                "Treat the provider's e-mail address as verified though it does not say so (Entra ID, SAML): anyone who can set that address at the provider can then take over the local account that has it.",
            ),
            k(
                "METADATA_URL",
                URL,
                "",
                "SAML, sources added in the panel, API or CLI: where the identity provider publishes its metadata. Read when the source is added, then on the [server] CRON_REFRESH_SAML_METADATA schedule through [outbound_http]; AUTH_URL and CERTIFICATE follow it, and a certificate change is logged.",
            ),
            k(
                "IDP_ENTITY_ID",
                STR,
                "",
                "SAML: the identity provider's entity id; responses whose Issuer differs are refused (empty: not checked, said at start).",
            ),
            k(
                "NAMEID_AS_USERNAME",
                BOOL,
                "true",
                "SAML: take the NameID as login when the USERNAME_ATTRIBUTE attribute is missing.",
            ),
            k(
                "OPENID_CONNECT_AUTO_DISCOVERY_URL",
                URL,
                "",
                "OpenID Connect discovery document (PROVIDER = openidConnect): the endpoints, issuer and keys are read from it.",
            ),
            k(
                "JWKS_URL",
                URL,
                "",
                "The provider's signing keys, when the discovery document names them on another host.",
            ),
            k(
                "ID_TOKEN_SIGNING_ALGORITHMS",
                Kind::List(ID_TOKEN_ALGORITHMS),
                "RS256, RS384, RS512, PS256, PS384, PS512, ES256, ES384, EdDSA",
                "OpenID Connect: the algorithms an ID token may be signed with, comma-separated; HS256/384/512 (a MAC keyed with the client secret) only if listed here.",
            ),
            k(
                "SCOPES",
                STR,
                "",
                "Scopes to ask for, space- or comma-separated (openid is always asked of an OpenID provider).",
            ),
            k(
                "OPENID_CONNECT_SCOPES",
                STR,
                "",
                "Gitea's name for extra scopes of an OpenID provider, added to SCOPES.",
            ),
            k(
                "GROUP_CLAIM_NAME",
                STR,
                "",
                "Claim that lists the user's groups; empty: groups are not read.",
            ),
            k(
                "ADMIN_GROUP",
                STR,
                "",
                "Members of this group are site administrators; others signed in through this source are not.",
            ),
            k(
                "RESTRICTED_GROUP",
                STR,
                "",
                "Members of this group are restricted users (they see only what teams and collaborations give); others signed in through this source are not.",
            ),
            k(
                "GROUP_TEAM_MAP",
                STR,
                "",
                "JSON: group -> organization -> teams the user is put in.",
            ),
            k(
                "GROUP_TEAM_MAP_REMOVAL",
                BOOL,
                "false",
                "Remove users from mapped teams when they leave the group.",
            ),
            k(
                "AUTO_REGISTER",
                BOOL,
                "false",
                "Create the local user on first sign-in.",
            ),
        ],
    ),
    (
        "oauth2_client",
        &[k(
            "ACCOUNT_LINKING",
            Kind::Enum(&["disabled", "login", "auto"]),
            "login",
            "When an external sign-in's verified e-mail belongs to a local account: disabled (refuse), login (ask for the account's password, then link) or auto (link).",
        )],
    ),
    (
        "outbound_http",
        &[
            k(
                "ALLOWED_HOST_LIST",
                Kind::AddressList,
                "external",
                "Addresses plugins granted http may reach: external, private, loopback, * or networks (10.0.0.0/8).",
            ),
            k(
                "ALLOW_INSECURE_HOSTS",
                STR,
                "",
                "Host names plugins may reach over plain HTTP, comma-separated (* for any); all others need HTTPS.",
            ),
            k(
                "TIMEOUT",
                Kind::Int { min: 1, max: 300 },
                "10",
                "Seconds to connect, and to receive a whole answer, per request.",
            ),
            k(
                "MAX_RESPONSE_SIZE",
                Kind::Int {
                    min: 1024,
                    max: 64 * 1024 * 1024,
                },
                "1048576",
                "Largest response body a plugin may receive, in bytes.",
            ),
        ],
    ),
    (
        "webhook",
        &[
            k(
                "ALLOWED_HOST_LIST",
                Kind::HostList,
                "external",
                "Where webhooks may deliver: external, private, loopback, *, networks (10.0.0.0/8) and host names (*.example.com). Checked at registration and again against the resolved address at each delivery. Plain HTTP is allowed only to a host this list names by name, network, private or loopback; every other hook needs HTTPS.",
            ),
            k(
                "DELIVER_TIMEOUT",
                Kind::Int { min: 1, max: 60 },
                "10",
                "Seconds one delivery attempt may take, connecting and the whole answer included.",
            ),
            k(
                "MAX_ATTEMPTS",
                Kind::Int { min: 5, max: 10 },
                "8",
                "Attempts per delivery before it is dead (kept for redelivery).",
            ),
            k(
                "RETRY_BACKOFF",
                Kind::Durations,
                "1m,5m,30m,2h",
                "Waits before the second, third, … attempt; the last repeats. Each wait gets up to 10 % jitter.",
            ),
            k(
                "WORKERS",
                Kind::Int { min: 1, max: 256 },
                "16",
                "Attempts this process runs at once; at most a quarter of them (rounded up) for any one hook, so that a receiver that hangs holds back only its own hook.",
            ),
            k(
                "LEASE_TIME",
                Kind::Int { min: 15, max: 3600 },
                "60",
                "Seconds a process holds the deliveries it claimed; a delivery held by a process that died is taken again after this.",
            ),
        ],
    ),
    (
        "oauth2",
        &[
            k(
                "ENABLE",
                BOOL,
                "true",
                "Turn on the OAuth 2.0 provider role.",
            ),
            k(
                "ACCESS_TOKEN_EXPIRATION",
                SECONDS,
                "3600",
                "Access token lifetime in seconds.",
            ),
            k(
                "REFRESH_TOKEN_EXPIRATION",
                SECONDS,
                "86400",
                "Refresh token lifetime in seconds.",
            ),
            k(
                "MINIMAL_TOKEN_LENGTH",
                Kind::Int { min: 32, max: 1024 },
                "32",
                "Minimum length of generated secrets.",
            ),
            k(
                "JWT_SIGNING_ALGORITHM",
                Kind::Enum(&["RS256", "ES256", "EdDSA"]),
                "RS256",
                "The algorithm of the key that signs ID tokens. A change makes a new key at the next signature; the old one stays published until its tokens expire.",
            ),
            k(
                "INVALIDATE_REFRESH_TOKENS",
                BOOL,
                "true",
                "A refresh token works once: each refresh returns a new one, and one presented twice revokes every token of its grant.",
            ),
        ],
    ),
    (
        "webauthn",
        &[
            k("ENABLE", BOOL, "true", "Allow WebAuthn security keys."),
            k(
                "DOMAIN",
                STR,
                "",
                "Relying-party id; empty means the host of ROOT_URL.",
            ),
            k(
                "TIMEOUT",
                Kind::Int {
                    min: 1000,
                    max: 600_000,
                },
                "60000",
                "Ceremony timeout in milliseconds.",
            ),
            k(
                "ATTESTATION_PREFERENCE",
                Kind::Enum(&["none", "indirect", "direct", "preferred"]),
                "none",
                "Attestation to ask for; preferred maps to indirect.",
            ),
        ],
    ),
    (
        "repository",
        &[
            k(
                "ROOT",
                STR,
                "",
                "Where repositories live; empty means <APP_DATA_PATH>/repositories.",
            ),
            k(
                "MAX_PUSH_FILES",
                Kind::Int {
                    min: 1,
                    max: 1_000_000,
                },
                "100",
                "Largest push, in MB.",
            ),
            k(
                "DEFAULT_DISABLE_PUSH",
                BOOL,
                "false",
                "New branch protections forbid force-push by default.",
            ),
            k(
                "DEFAULT_REQUIRE_SIGNED_COMMITS",
                BOOL,
                "false",
                "New branch protections require signed commits by default.",
            ),
        ],
    ),
    (
        "api",
        &[
            k(
                "DEFAULT_VERSION",
                Kind::Enum(API_VERSIONS),
                "v1",
                "API version served when a request names none.",
            ),
            k(
                "ALLOWED_VERSIONS",
                Kind::List(API_VERSIONS),
                "v1,v2",
                "API versions served; others answer 404 (path) or 406 (Accept).",
            ),
            k(
                "DEPRECATED_VERSIONS",
                Kind::Deprecations,
                "",
                "Deprecated versions and their sunset dates, e.g. v1:2027-06-30; their responses carry Deprecation and Sunset headers.",
            ),
            k(
                "MAX_BODY_SIZE",
                Kind::Int {
                    min: 1024,
                    max: 1 << 30,
                },
                "1048576",
                "Largest API request body in bytes; larger ones get 413.",
            ),
            k(
                "V1_LIST_SHAPE",
                Kind::Enum(&["envelope", "array"]),
                "array",
                "Body of a v1 list asked for without the spec's own paging parameters (nothing, page alone, limit alone, page and limit): array, as Gitea answers (with X-Total-Count and Link), or envelope. page_size, offset, size, shape and cursor always pick their own shape; v2 always answers envelopes.",
            ),
        ],
    ),
    (
        "audit",
        &[
            k(
                "RETENTION_DAYS",
                Kind::Int {
                    min: 0,
                    max: 36_500,
                },
                "0",
                "Days the security audit log keeps its rows; older ones are pruned behind a signed checkpoint (see CRON_PRUNE), so the chain still verifies. 0 keeps every row.",
            ),
            k(
                "CRON_PRUNE",
                Kind::Schedule,
                "@every 24h",
                "How often rows past RETENTION_DAYS are pruned; the first run is one period after start.",
            ),
        ],
    ),
    (
        "plugins",
        &[k(
            "ALLOW_NATIVE",
            BOOL,
            "false",
            "Admit native libraries (the SDK's C ABI) at a plugin's PATH. They run without a sandbox, in the host's process: only for code you trust as you trust Postern.",
        )],
    ),
    (
        "plugin.<id>",
        &[
            k(
                "PATH",
                STR,
                "",
                "Path of a third-party .wasm component, or of a native library when [plugins] ALLOW_NATIVE is true; built-in plugins take no PATH.",
            ),
            k(
                "SHA256",
                Kind::Sha256,
                "",
                "sha256 of the file at PATH, checked before every load (a native library: on the bytes then loaded).",
            ),
            k(
                "KIND",
                Kind::Enum(&["identity-source", "second-factor", "webhook-transport"]),
                "",
                "The plugin's world.",
            ),
            k(
                "GRANTS",
                Kind::List(GRANTABLE),
                "log",
                "Capabilities lent to the plugin: log, credentials, kv, http (wasi:http), tcp (wasi:sockets, webhook transports).",
            ),
            k(
                "MEMORY_LIMIT_MB",
                Kind::Int { min: 1, max: 1024 },
                "64",
                "Memory cap of one call, in MiB.",
            ),
            k(
                "TIMEOUT_MS",
                Kind::Int {
                    min: 10,
                    max: 600_000,
                },
                "5000",
                "Deadline of one call, in milliseconds.",
            ),
            k("ENABLED", BOOL, "true", "Load the plugin."),
        ],
    ),
];

/// The keys an administrator may change while Postern runs (Admin ›
/// Configuration, `postern admin config set`): switches and limits that
/// every request reads afresh. Listeners, paths, the database, keys and
/// sources need a restart and are not here.
pub static RUNTIME_KEYS: &[(&str, &str)] = &[
    ("service", "DISABLE_REGISTRATION"),
    ("service", "REQUIRE_SIGNIN_VIEW"),
    ("service", "LDAP_SYNC_ON_LOGIN"),
    ("service", "DISABLE_REGISTRATION_ORG"),
    ("service", "ALLOW_ONLY_ADMIN_CREATE_ORG"),
    ("security", "ENABLE_2FA"),
    ("security", "DISABLE_REGISTRATION"),
    ("security", "ENABLE_REMEMBER_ME_2FA"),
    ("security", "REMEMBER_ME_2FA_DAYS"),
    ("security", "MIN_PASSWORD_LENGTH"),
    ("security", "LOGIN_RATE_LIMIT"),
    ("security", "LOGIN_RATE_LIMIT_PER_ADDRESS"),
    ("security", "LOGIN_RATE_LIMIT_WINDOW"),
    ("security", "REVERSE_PROXY_TRUSTED_PROXIES"),
    ("oauth2", "ACCESS_TOKEN_EXPIRATION"),
    ("oauth2", "REFRESH_TOKEN_EXPIRATION"),
    ("oauth2", "INVALIDATE_REFRESH_TOKENS"),
    ("webhook", "DELIVER_TIMEOUT"),
    ("webhook", "MAX_ATTEMPTS"),
    ("webhook", "RETRY_BACKOFF"),
    ("repository", "MAX_PUSH_FILES"),
    ("repository", "DEFAULT_DISABLE_PUSH"),
    ("repository", "DEFAULT_REQUIRE_SIGNED_COMMITS"),
    ("api", "V1_LIST_SHAPE"),
];

/// Whether `key` of `section` may be changed at run time: a key of
/// [`RUNTIME_KEYS`], or a plugin's `ENABLED` switch.
pub fn is_runtime(section: &str, key: &str) -> bool {
    RUNTIME_KEYS.iter().any(|(s, k)| *s == section && *k == key)
        || (key == "ENABLED"
            && matches!(
                SectionPattern::classify(section),
                Some((SectionPattern::Plugin, _))
            ))
}

/// Whether a key holds a secret, shown masked wherever configuration is
/// listed.
pub fn is_secret(key: &str) -> bool {
    ["PASSWD", "PASSWORD", "SECRET", "PRIVATE_KEY"]
        .iter()
        .any(|word| key.ends_with(word))
}

/// The spec of `key` in the schema section `section`.
pub fn key_spec(section: &str, key: &str) -> Option<&'static KeySpec> {
    SECTIONS
        .iter()
        .find(|(name, _)| *name == section)
        .and_then(|(_, keys)| keys.iter().find(|k| k.key == key))
}

/// The default of a fixed section's key, as text.
pub fn default_of(section: &str, key: &str) -> &'static str {
    key_spec(section, key).map(|k| k.default).unwrap_or("")
}

/// The environment variable that sets `key` of `section`.
pub fn env_name(section: &str, key: &str) -> String {
    format!(
        "POSTERN__{}__{}",
        section.to_ascii_uppercase().replace('.', "_0X2E_"),
        key
    )
}

/// The example ini file: every key, commented out at its default, with its
/// meaning and its environment name.
pub fn example_ini() -> String {
    let mut out = String::from(
        "; Postern configuration: every key with its default.\n\
         ; Remove the leading ';' to set a key. Each key can also be set from the\n\
         ; environment, as shown; the environment wins over this file.\n\
         ; Section names with a variable part (source.<n>, source.oauth2_<name>,\n\
         ; plugin.<id>) are written with it filled in, e.g. [source.1].\n",
    );
    for (section, keys) in SECTIONS {
        let example = match *section {
            "source.<n>" => "source.1",
            "source.oauth2_<name>" => "source.oauth2_corp",
            "plugin.<id>" => "plugin.example",
            s => s,
        };
        out.push_str(&format!("\n[{example}]\n"));
        for spec in *keys {
            out.push_str(&format!(
                "; {}\n; env: {}\n;{} = {}\n",
                spec.doc,
                env_name(example, spec.key),
                spec.key,
                spec.default
            ));
        }
    }
    out
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn example_ini_is_current() {
        let path = concat!(env!("CARGO_MANIFEST_DIR"), "/../config/app.example.ini");
        let on_disk = std::fs::read_to_string(path).unwrap_or_default();
        assert!(
            on_disk == example_ini(),
            "config/app.example.ini is stale: run `cargo run -p postern -- admin config example > config/app.example.ini`"
        );
    }

    #[test]
    fn schedules_parse_go_durations() {
        assert_eq!(
            parse_schedule("@every 24h"),
            Some(Duration::from_secs(86400))
        );
        assert_eq!(
            parse_schedule("@every 1h30m"),
            Some(Duration::from_secs(5400))
        );
        assert_eq!(parse_schedule("@every 0s"), None);
        assert_eq!(parse_schedule("@daily"), None);
        assert_eq!(parse_schedule("@every 5x"), None);
    }

    /// The keys a built-in source plugin (or the host, for a source) reads
    /// from its section, by the helpers they read with.
    fn keys_read(text: &str) -> Vec<String> {
        let mut keys = Vec::new();
        for helper in [
            "get(\"",
            "text(\"",
            "flag(\"",
            "endpoint(\"",
            "url_setting(\"",
        ] {
            for (i, _) in text.match_indices(helper) {
                let rest = &text[i + helper.len()..];
                let key: String = rest
                    .chars()
                    .take_while(|c| c.is_ascii_uppercase() || c.is_ascii_digit() || *c == '_')
                    .collect();
                if rest[key.len()..].starts_with('"') && key.len() > 2 {
                    keys.push(key);
                }
            }
        }
        keys
    }

    /// Every key the sources' code reads is in the schema, so that
    /// `config check` never calls a working key unknown and the example
    /// file lists it.
    #[test]
    fn every_key_a_source_reads_is_in_the_schema() {
        let root = concat!(env!("CARGO_MANIFEST_DIR"), "/..");
        let read = |p: &str| std::fs::read_to_string(format!("{root}/{p}")).unwrap();
        let directory = "source.<n>";
        let redirect = "source.oauth2_<name>";
        let mut checked = 0;
        for (file, sections) in [
            ("plugins/ldap/src/lib.rs", &[directory][..]),
            ("plugins/oauth2/src/config.rs", &[redirect][..]),
            ("plugins/saml/src/config.rs", &[redirect][..]),
            (
                "host/src/config/source_settings.rs",
                &[directory, redirect][..],
            ),
        ] {
            for key in keys_read(&read(file)) {
                checked += 1;
                assert!(
                    sections.iter().any(|s| key_spec(s, &key).is_some()),
                    "{file} reads {key}, which [{}] of the schema does not list",
                    sections.join("] or [")
                );
            }
        }
        assert!(checked > 40, "the helpers were not found: {checked} keys");
    }

    /// Every `get`/`flag`/`int("section", "KEY")` of `Config::from_raw` is
    /// a key of the schema: an unlisted one would read as empty.
    #[test]
    fn every_fixed_key_the_host_reads_is_in_the_schema() {
        let text = include_str!("load.rs");
        let mut checked = 0;
        for helper in ["get(\"", "flag(\"", "int(\""] {
            for (i, _) in text.match_indices(helper) {
                let rest = &text[i + helper.len()..];
                let Some((section, rest)) = rest.split_once("\", \"") else {
                    continue;
                };
                let Some((key, _)) = rest.split_once('"') else {
                    continue;
                };
                if section.contains(['"', '\n', ' ']) || key.contains([' ', '\n']) {
                    continue;
                }
                checked += 1;
                assert!(
                    key_spec(section, key).is_some(),
                    "config/load.rs reads [{section}] {key}, which the schema does not list"
                );
            }
        }
        assert!(checked > 40, "the helpers were not found: {checked} keys");
    }

    #[test]
    fn env_names_encode_dots() {
        assert_eq!(env_name("source.1", "HOST"), "POSTERN__SOURCE_0X2E_1__HOST");
    }
}
