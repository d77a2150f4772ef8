//! What the capability calls carry through the C ABI, in JSON. The
//! capabilities' own types (log levels, search scopes, entries, errors)
//! are the 0.3.0 bindings' (`since_v0_3`), which derive serde as the SDK's
//! bindings of the same WIT do, so both ends read one shape; the argument
//! records below are each call's parameters by name, as the SDK sends them.
//! The `http` types are the SDK's own (natively it has no `wasi:http`).

use serde::{Deserialize, Serialize};

pub(super) use crate::plugins::since_v0_3::identity_source::postern::plugin::{
    credentials, directory, kv, log,
};

#[derive(Deserialize)]
pub(super) struct LogArgs {
    pub(super) level: log::Level,
    pub(super) message: String,
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
    pub(super) scope: directory::Scope,
    pub(super) filter: String,
    pub(super) attributes: Vec<String>,
    pub(super) size_limit: u32,
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
