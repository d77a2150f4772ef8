//! Postern: a self-hosted git service whose identity sources, second factors
//! and webhook transports are sandboxed WebAssembly plugins.
//!
//! One module per capability, in layers whose imports point down only:
//! `server`/`cli` → the transports (`api`, `web`, `git`) → the domain →
//! `state` → the plugin runtime (`plugins`) → `directory`, `saml` → the foundation
//! (`config`, `db`, `secrets`, `credentials`). `docs/architecture.md` is the
//! map; `tests/layers.rs` holds it against the code.

pub mod access;
pub mod allocator;
pub mod api;
pub mod audit;
pub mod authn;
pub mod cli;
pub mod cluster;
pub mod config;
pub mod content;
pub mod credentials;
pub mod db;
pub mod directory;
pub mod git;
pub mod identity;
pub mod issues;
pub mod keys;
pub mod nesting;
pub mod oauth_provider;
pub mod offboarding;
pub mod orgs;
pub mod plugins;
pub mod protection;
pub mod pulls;
pub mod ratelimit;
pub mod repos;
pub mod revocation;
pub mod roles;
pub mod saml;
pub mod scim;
pub mod second_factor;
pub mod secrets;
pub mod server;
pub mod sessions;
pub mod settings;
pub mod state;
pub mod statuses;
pub mod stored_sources;
pub mod tokens;
pub mod users;
pub mod web;
pub mod webhooks;
