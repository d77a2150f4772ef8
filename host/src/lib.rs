//! Postern: a self-hosted git service whose identity sources, second factors
//! and webhook transports are sandboxed WebAssembly plugins.
//!
//! One module per capability (see DESIGN.md): `config`, `db`, `plugins`,
//! `identity`, `sessions`, `api`, `web`, `cli`.

pub mod api;
pub mod app;
pub mod cli;
pub mod config;
pub mod credentials;
pub mod db;
pub mod identity;
pub mod plugins;
pub mod sessions;
pub mod users;
pub mod web;
