//! The contract between the host and its plugins: the values handed to a
//! plugin and the answers it gives, in the host's own types. Every WIT
//! version's bindings (`since_v0_x`) convert into these; domain modules
//! (`identity`, `second_factor`) use only these, never a binding type.

/// The host's view of an account, as handed to a source.
#[derive(Debug, Clone)]
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

/// Who a source says the user is.
#[derive(Debug, Clone)]
pub struct Identity {
    pub external_id: String,
    pub login: String,
    pub full_name: String,
    pub email: String,
    pub ssh_keys: Vec<String>,
    pub groups: Vec<String>,
    /// Organizations to belong to (`AUTO_CREATE_ORG`).
    pub organizations: Vec<String>,
}

/// A user in a source's full listing, for a sync.
#[derive(Debug, Clone)]
pub struct ListedUser {
    pub identity: Identity,
    /// The source says the account may not sign in.
    pub disabled: bool,
}

/// A source's "no".
#[derive(Debug, Clone)]
pub enum SignInRefusal {
    InvalidCredentials,
    NotSupported,
    AccountDisabled(String),
    Misconfigured(String),
    Unavailable(String),
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
#[derive(Debug, Clone)]
pub struct NewAccount {
    pub login: String,
    pub email: String,
    pub password_hash: String,
}

/// A source's "no" to a registration; every text is for the user.
#[derive(Debug, Clone)]
pub enum RegistrationRefusal {
    NotSupported,
    InvalidLogin(String),
    InvalidEmail(String),
    WeakPassword(String),
    Internal(String),
}

/// A factor plugin's "no".
#[derive(Debug, Clone)]
pub enum FactorRefusal {
    Rejected,
    NotEnrolled,
    NotSupported,
    Misconfigured(String),
    Internal(String),
}

/// One half of a ceremony, as a factor plugin hands it back: what to show
/// (an `otpauth://` URI, WebAuthn options as JSON) and the state to keep.
#[derive(Debug, Clone, Default)]
pub struct Ceremony {
    pub display: String,
    pub pending_state: Vec<u8>,
}
