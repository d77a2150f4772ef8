//! Redirect sources (OAuth 2.0 and SAML: the browser is sent to the
//! provider and back) as the administrator manages them: listed, tested,
//! added, changed and removed from the panel, the API and the CLI, as the
//! directory sources are. Gitea keeps both under `oauth2` names, and so do
//! the ini sections, URLs and API paths; the code says what they have in
//! common. A `[source.oauth2_<name>]` of the ini file is
//! read-only; the others are stored (`stored_sources::REDIRECT`, the client
//! secret sealed) and served at once by the registry.

mod changes;
mod check;
mod connection;
mod listing;
mod metadata_url;
#[cfg(test)]
mod tests;
mod view;

pub use changes::{
    KeysUpdate, add_redirect_source, remove_redirect_source, update_redirect_source,
};
pub use check::METADATA_KEY;
pub use connection::{probe_redirect_source, test_redirect_source};
pub use listing::{
    is_redirect_id, redirect_name, redirect_source, redirect_source_keys, redirect_source_views,
};
pub use metadata_url::{Refreshed, refresh_saml_metadata};
pub use view::{CertificateView, RedirectSourceView};
