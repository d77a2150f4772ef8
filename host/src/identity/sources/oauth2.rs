//! OAuth 2.0 sources as the administrator manages them: listed, tested,
//! added, changed and removed from the panel, the API and the CLI, as the
//! directory sources are. A `[source.oauth2_<name>]` of the ini file is
//! read-only; the others are stored (`stored_sources::REDIRECT`, the client
//! secret sealed) and served at once by the registry.

mod changes;
mod check;
mod connection;
mod listing;
#[cfg(test)]
mod tests;
mod view;

pub use changes::{KeysUpdate, add_oauth2_source, remove_oauth2_source, update_oauth2_source};
pub use check::METADATA_KEY;
pub use connection::{probe_oauth2_source, test_oauth2_source};
pub use listing::{is_oauth2_id, oauth2_name, oauth2_source, oauth2_source_keys, oauth2_sources};
pub use view::{CertificateView, OAuth2SourceView};
