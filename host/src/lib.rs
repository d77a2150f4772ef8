//! Postern: a self-hosted git service whose identity sources, second factors
//! and webhook transports are sandboxed WebAssembly plugins.
//!
//! One module per capability (see DESIGN.md): `config`, `db`, `plugins`,
//! `identity`, `sessions`, `api`, `web`, `cli`.

pub mod access;
pub mod api;
pub mod app;
pub mod authn;
pub mod cli;
pub mod config;
pub mod credentials;
pub mod db;
pub mod directory;
pub mod git;
pub mod identity;
pub mod keys;
pub mod orgs;
pub mod plugins;
pub mod protection;
pub mod repos;
pub mod second_factor;
pub mod secrets;
pub mod sessions;
pub mod tokens;
pub mod users;
pub mod web;
