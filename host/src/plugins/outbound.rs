//! The `http` capability: the standard `wasi:http/outgoing-handler`, lent
//! through `wasmtime-wasi-http` with the host's own send hook and connector.
//!
//! A plugin may reach only the hosts its source's settings name (every
//! `*_URL` key: `AUTH_URL`, `TOKEN_URL`, `PROFILE_URL`, the discovery and
//! JWKS URLs), over HTTPS unless `[outbound_http] ALLOW_INSECURE_HOSTS`
//! names the host, and only at addresses `ALLOWED_HOST_LIST` allows (public
//! ones by default: loopback and private networks are refused). Each check
//! runs before any byte leaves: the destination is checked when the plugin
//! hands the request over, and the address after the host itself resolved
//! the name, on the very address it then connects to, so a name that
//! resolves to a private address (DNS rebinding) is refused too. Redirects
//! are answers like any other: a plugin that follows one sends a new request,
//! which is checked again. Every request has a timeout and a response-size
//! cap; a refusal is logged and counted per plugin.

mod fetch;
mod grant;
mod rules;
mod send;

pub use crate::config::AddressRule as Allowed;
pub use fetch::get;
pub use grant::Grant;
pub use rules::{Rules, admitted};
pub(crate) use send::Hooks;
pub use send::Wire;
