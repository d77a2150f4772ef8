//! The contract between the host and its plugins: the values handed to a
//! plugin and the answers it gives, in the host's own types. Every WIT
//! version's bindings (`since_v0_x`) convert into these; domain modules
//! (`identity`, `second_factor`) use only these, never a binding type.

/// The host's view of an account, as handed to a source.
#[derive(Debug, Clone, serde::Serialize)]
pub struct KnownAccount {
    pub id: i64,
    pub login: String,
    pub email: String,
    pub full_name: String,
    pub password_hash: Option<String>,
    pub is_active: bool,
}

/// A password sign-in, as handed to a source.
#[derive(Debug, Clone)]
pub struct PasswordSignIn {
    pub login: String,
    pub password: String,
    pub known_account: Option<KnownAccount>,
    pub settings: Vec<(String, String)>,
}

/// Who a source says the user is. Serialisable: a redirect sign-in keeps
/// one, sealed, while it waits for the local account's password.
#[derive(Debug, Clone, serde::Serialize, serde::Deserialize)]
pub struct Identity {
    pub external_id: String,
    pub login: String,
    pub full_name: String,
    pub email: String,
    /// The source vouches for `email`: only then may a sign-in link the
    /// identity to an existing account by its address.
    pub email_verified: bool,
    pub ssh_keys: Vec<String>,
    pub groups: Vec<String>,
    /// Organizations to belong to (`AUTO_CREATE_ORG`).
    pub organizations: Vec<String>,
}

/// A user in a source's full listing, for a sync.
#[derive(Debug, Clone, serde::Deserialize)]
pub struct ListedUser {
    pub identity: Identity,
    /// The source says the account may not sign in.
    pub disabled: bool,
}

/// A source's "no".
#[derive(Debug, Clone, serde::Deserialize)]
pub enum SignInRefusal {
    InvalidCredentials,
    NotSupported,
    AccountDisabled(String),
    Misconfigured(String),
    Unavailable(String),
    /// The identity provider refused, or the user declined (0.3.0 on).
    ProviderDenied(String),
    /// The callback's `state` is not the one the sign-in began with.
    StateMismatch,
    /// The provider's answer fails a check (ID token signature, issuer,
    /// audience, expiry, nonce); the text says which.
    InvalidResponse(String),
}

/// For the administrator's log and reports: the source's own words where it
/// gave some.
impl std::fmt::Display for SignInRefusal {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        match self {
            SignInRefusal::InvalidCredentials => f.write_str("the credentials were refused"),
            SignInRefusal::NotSupported => f.write_str("the source does not do this"),
            SignInRefusal::AccountDisabled(why)
            | SignInRefusal::Misconfigured(why)
            | SignInRefusal::Unavailable(why)
            | SignInRefusal::InvalidResponse(why) => f.write_str(why),
            SignInRefusal::ProviderDenied(why) => {
                write!(f, "the identity provider refused: {why}")
            }
            SignInRefusal::StateMismatch => f.write_str("the callback's state does not match"),
        }
    }
}

/// Where a sign-in by redirect sends the browser, and the state the host
/// keeps until it comes back.
#[derive(Debug, Clone, serde::Deserialize)]
pub struct Redirect {
    pub url: String,
    pub pending_state: Vec<u8>,
}

/// A registration, as handed to a source.
#[derive(Debug, Clone)]
pub struct Registration {
    pub login: String,
    pub email: String,
    pub password: String,
    pub settings: Vec<(String, String)>,
}

/// The account a source hands back after a successful registration.
#[derive(Debug, Clone, serde::Deserialize)]
pub struct NewAccount {
    pub login: String,
    pub email: String,
    pub password_hash: String,
}

/// A source's "no" to a registration; every text is for the user.
#[derive(Debug, Clone, serde::Deserialize)]
pub enum RegistrationRefusal {
    NotSupported,
    InvalidLogin(String),
    InvalidEmail(String),
    WeakPassword(String),
    Internal(String),
}

/// A factor plugin's "no".
#[derive(Debug, Clone, serde::Deserialize)]
pub enum FactorRefusal {
    Rejected,
    NotEnrolled,
    NotSupported,
    Misconfigured(String),
    Internal(String),
}

/// One half of a ceremony, as a factor plugin hands it back: what to show
/// (an `otpauth://` URI, WebAuthn options as JSON) and the state to keep.
#[derive(Debug, Clone, Default, serde::Deserialize)]
pub struct Ceremony {
    pub display: String,
    pub pending_state: Vec<u8>,
}

/// One attempt to carry one event to one receiver, as handed to a webhook
/// transport.
#[derive(Debug, Clone)]
pub struct Delivery {
    pub event_id: String,
    pub event_type: String,
    pub timestamp: i64,
    /// The JSON body, exactly as the receiver gets it.
    pub body: Vec<u8>,
    /// Where: a URL (`https://…`, `nats://host:port/subject`).
    pub target: String,
    pub secret: String,
    /// The transport's own settings and the hook's (`HTTP_METHOD`,
    /// `CONTENT_TYPE`, `AUTHORIZATION_HEADER`).
    pub settings: Vec<(String, String)>,
}

/// What a transport says became of an attempt.
#[derive(Debug, Clone, PartialEq, Eq, serde::Deserialize)]
pub enum TransportOutcome {
    Delivered,
    /// Worth another attempt; why.
    Retry(String),
    /// Refused for good; why.
    Failed(String),
}
