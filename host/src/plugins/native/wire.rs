//! The capability calls' arguments, answers and errors, mirrored from the
//! SDK's binding types as they travel through the C ABI in JSON.

use serde::{Deserialize, Serialize};

use crate::plugins::capabilities::{CredentialsError, KvError, LogLevel};

#[derive(Deserialize)]
pub(super) struct LogArgs {
    pub(super) level: LevelWire,
    pub(super) message: String,
}

#[derive(Deserialize)]
pub(super) enum LevelWire {
    Trace,
    Debug,
    Info,
    Warn,
    Error,
}

impl From<LevelWire> for LogLevel {
    fn from(l: LevelWire) -> Self {
        match l {
            LevelWire::Trace => LogLevel::Trace,
            LevelWire::Debug => LogLevel::Debug,
            LevelWire::Info => LogLevel::Info,
            LevelWire::Warn => LogLevel::Warn,
            LevelWire::Error => LogLevel::Error,
        }
    }
}

#[derive(Deserialize)]
pub(super) struct KeyArgs {
    pub(super) key: String,
}

#[derive(Deserialize)]
pub(super) struct KeyValueArgs {
    pub(super) key: String,
    pub(super) value: Vec<u8>,
}

#[derive(Deserialize)]
pub(super) struct PasswordArgs {
    pub(super) password: String,
}

#[derive(Deserialize)]
pub(super) struct VerifyArgs {
    pub(super) password: String,
    pub(super) hash: String,
}

#[derive(Deserialize)]
pub(super) struct BindArgs {
    pub(super) dn: String,
    pub(super) password: String,
}

#[derive(Deserialize)]
pub(super) struct SearchArgs {
    pub(super) base: String,
    pub(super) scope: ScopeWire,
    pub(super) filter: String,
    pub(super) attributes: Vec<String>,
    pub(super) size_limit: u32,
}

#[derive(Deserialize)]
pub(super) enum ScopeWire {
    Base,
    OneLevel,
    Subtree,
}

/// `kv.error`.
#[derive(Serialize)]
pub(super) enum KvWire {
    TooLarge,
    Unavailable(String),
}

impl From<KvError> for KvWire {
    fn from(e: KvError) -> Self {
        match e {
            KvError::TooLarge => KvWire::TooLarge,
            KvError::Unavailable(why) => KvWire::Unavailable(why),
        }
    }
}

/// `credentials.error`.
#[derive(Serialize)]
pub(super) enum CredentialsWire {
    MalformedHash,
    TooLong,
    Internal(String),
}

impl From<CredentialsError> for CredentialsWire {
    fn from(e: CredentialsError) -> Self {
        match e {
            CredentialsError::MalformedHash => CredentialsWire::MalformedHash,
            CredentialsError::TooLong => CredentialsWire::TooLong,
            CredentialsError::Internal(why) => CredentialsWire::Internal(why),
        }
    }
}

/// `directory.error`.
#[derive(Serialize)]
pub(super) enum DirectoryWire {
    Unavailable(String),
    BindFailed(String),
    Refused(String),
    SizeLimitExceeded,
    Misconfigured(String),
}

impl From<crate::directory::Error> for DirectoryWire {
    fn from(e: crate::directory::Error) -> Self {
        use crate::directory::Error as E;
        match e {
            E::Unavailable(why) => DirectoryWire::Unavailable(why),
            E::BindFailed(why) => DirectoryWire::BindFailed(why),
            E::Refused(why) => DirectoryWire::Refused(why),
            E::SizeLimitExceeded => DirectoryWire::SizeLimitExceeded,
            E::Misconfigured(why) => DirectoryWire::Misconfigured(why),
        }
    }
}

/// `directory.entry`.
#[derive(Serialize)]
pub(super) struct EntryWire {
    dn: String,
    attributes: Vec<AttributeWire>,
}

#[derive(Serialize)]
struct AttributeWire {
    name: String,
    values: Vec<Vec<u8>>,
}

impl From<crate::directory::Entry> for EntryWire {
    fn from(e: crate::directory::Entry) -> Self {
        EntryWire {
            dn: e.dn,
            attributes: e
                .attributes
                .into_iter()
                .map(|(name, values)| AttributeWire { name, values })
                .collect(),
        }
    }
}

/// The SDK's `http` request and response.
#[derive(Deserialize)]
pub(super) struct HttpRequestWire {
    pub(super) method: String,
    pub(super) uri: String,
    pub(super) headers: Vec<(String, Vec<u8>)>,
    pub(super) body: Vec<u8>,
}

#[derive(Serialize)]
pub(super) struct HttpResponseWire {
    pub(super) status: u16,
    pub(super) headers: Vec<(String, Vec<u8>)>,
    pub(super) body: Vec<u8>,
}

/// The SDK's `HttpError`.
#[derive(Serialize)]
pub(super) enum HttpErrorWire {
    Denied { host: String },
    InvalidRequest(String),
    Other(String),
}
