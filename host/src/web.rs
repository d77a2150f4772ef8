//! Server-rendered pages: home, sign-in, sign-out, registration.
//!
//! Every form carries a CSRF token (`_csrf`), checked against the `_csrf`
//! cookie (double submit). Both cookies are HttpOnly and SameSite=Lax, and
//! Secure when ROOT_URL is https.

mod admin;
mod admin_audit;
mod admin_config;
mod admin_users;
mod applications;
mod assets;
mod create;
mod error;
mod external;
pub(crate) mod headers;
mod home;
mod hooks;
mod issues;
mod oauth;
mod orgs;
mod page;
mod panel;
mod pulls;
mod repo_settings;
mod repos;
mod routes;
mod second_step;
mod security;
mod settings;
mod sign_up;
mod signin;
mod viewer;
mod webauthn;

pub(crate) use error::WebError;
pub(crate) use page::not_found;
pub(crate) use routes::routes;
pub(crate) use viewer::{Button, Posted, Viewer, Who};

use page::{render, when};
use second_step::{awaiting, complete_second_step};
use signin::{end_browser_session, start_second_step, start_session};
use viewer::{cookie, message, nothing_here};
