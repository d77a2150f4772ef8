//! The integration suite, one test binary: each file beside this one is a
//! module of it, so the heavy dependencies (reqwest, fantoccini,
//! openidconnect, samael, openssl, axum) are linked once, and a peer kept
//! in a static (the OpenID provider, the SAML identity provider, NATS) is
//! started once for the whole suite. Run one group with a filter on its
//! module path: `cargo test -p postern-tests -- ldap::`.

mod api;
mod audit;
mod browser;
mod content;
mod discovery;
mod enterprise_idps;
mod git;
mod gitea_client;
mod hosts;
mod issues;
mod ldap;
mod native_plugins;
mod oauth_admin;
mod oauth_consumer;
mod oauth_device;
mod oauth_pages;
mod oauth_provider;
mod panel;
mod plugin_kit;
mod protection;
mod provisioning;
mod pulls;
mod renovate;
mod repo_settings;
mod revocation;
mod roles;
mod round_trips;
mod saml;
mod saml_pysaml2;
mod sandbox;
mod scim;
mod signin;
mod ssh;
mod statuses;
mod totp;
mod webhook_pages;
mod webhooks;
