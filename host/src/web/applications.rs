//! Settings › Applications, as Gitea has it: the user's OAuth2 applications
//! (create, edit, regenerate the client secret, delete), and the
//! applications the user has authorized (revoke).
//!
//! A client secret is shown once, on the page that answers its creation
//! or regeneration, and never again: only its sha256 is kept. With
//! `[oauth2] ENABLE = false` the page says the provider is off and every
//! form answers 404.

use askama::Template;
use axum::Form;
use axum::extract::{Path, State};
use axum::http::{HeaderValue, StatusCode, header};
use axum::response::{IntoResponse, Redirect, Response};
use serde::Deserialize;
use time::OffsetDateTime;
use time::macros::format_description;

use super::{Viewer, WebError, nothing_here, render};
use crate::oauth_provider::apps::{self, Registration};
use crate::oauth_provider::{Error, codes};
use crate::state::App;
use crate::users::User;

const PAGE: &str = "/user/settings/applications";

/// What an application form holds: as stored, or as the user typed it when
/// it was refused.
#[derive(Clone)]
struct Draft {
    name: String,
    /// One URI a line, for the textarea.
    redirect_uris: String,
    confidential: bool,
}

impl Default for Draft {
    /// The create form: empty, confidential checked (Gitea's default).
    fn default() -> Self {
        Draft {
            name: String::new(),
            redirect_uris: String::new(),
            confidential: true,
        }
    }
}

impl From<&apps::App> for Draft {
    fn from(a: &apps::App) -> Self {
        Draft {
            name: a.name.clone(),
            redirect_uris: a.redirect_uris.join("\n"),
            confidential: a.confidential,
        }
    }
}

/// One of the user's applications, with its edit form.
struct Owned {
    id: i64,
    name: String,
    client_id: String,
    redirect_uris: Vec<String>,
    confidential: bool,
    form: Draft,
}

/// An application the user has authorized.
struct Authorized {
    app_id: i64,
    name: String,
    scopes: Vec<String>,
    since: String,
}

/// Credentials shown this once.
struct Secret {
    name: String,
    client_id: String,
    client_secret: String,
}

#[derive(Template)]
#[template(path = "user_applications.html")]
struct ApplicationsPage {
    user: Option<String>,
    csrf: String,
    enabled: bool,
    error: Option<String>,
    secret: Option<Secret>,
    apps: Vec<Owned>,
    authorized: Vec<Authorized>,
    create: Draft,
}

/// What a handler changes on the page; the rest is read afresh.
#[derive(Default)]
struct Shown {
    error: Option<String>,
    secret: Option<Secret>,
    /// The create form as typed, after a refusal.
    create: Option<Draft>,
    /// An edit form as typed, after a refusal: the application's id.
    editing: Option<(i64, Draft)>,
}

/// A Unix time as the page shows it.
fn when(unix: i64) -> String {
    OffsetDateTime::from_unix_timestamp(unix)
        .ok()
        .and_then(|t| {
            t.format(format_description!(
                "[year]-[month]-[day] [hour]:[minute] UTC"
            ))
            .ok()
        })
        .unwrap_or_default()
}

/// A domain error a page does not answer itself: a 500, the cause logged.
fn internal(e: Error) -> WebError {
    WebError::internal(e)
}

async fn page(
    app: &App,
    viewer: &Viewer,
    user: &User,
    status: StatusCode,
    shown: Shown,
) -> Result<Response, WebError> {
    let enabled = app.config.oauth2.enable;
    let (apps, authorized) = if enabled {
        (
            apps::list(&app.db, Some(user.id)).await.map_err(internal)?,
            codes::authorized(&app.db, user).await.map_err(internal)?,
        )
    } else {
        (Vec::new(), Vec::new())
    };
    let apps = apps
        .into_iter()
        .map(|a| {
            let form = match &shown.editing {
                Some((id, draft)) if *id == a.id => draft.clone(),
                _ => Draft::from(&a),
            };
            Owned {
                id: a.id,
                name: a.name,
                client_id: a.client_id,
                redirect_uris: a.redirect_uris,
                confidential: a.confidential,
                form,
            }
        })
        .collect();
    let authorized = authorized
        .into_iter()
        .map(|g| Authorized {
            app_id: g.app_id,
            name: g.app_name,
            scopes: g.scope.split_whitespace().map(str::to_string).collect(),
            since: when(g.created),
        })
        .collect();
    let with_secret = shown.secret.is_some();
    let (csrf, jar) = viewer.csrf(app);
    let page = ApplicationsPage {
        user: viewer.login(),
        csrf,
        enabled,
        error: shown.error,
        secret: shown.secret,
        apps,
        authorized,
        create: shown.create.unwrap_or_default(),
    };
    let mut response = (jar, render(status, page)?).into_response();
    if with_secret {
        // A page with a client secret is not kept by the browser or a proxy
        // (as RFC 6749 §5.1 asks of the token endpoint).
        response
            .headers_mut()
            .insert(header::CACHE_CONTROL, HeaderValue::from_static("no-store"));
    }
    Ok(response)
}

/// A refused application form, shown on the page with what was typed: 422
/// for invalid fields, the 404 page for an application that is not the
/// user's; anything else is a 500.
async fn refused(
    app: &App,
    viewer: &Viewer,
    user: &User,
    e: Error,
    shown: Shown,
) -> Result<Response, WebError> {
    match e {
        Error::Invalid(_) => {
            let shown = Shown {
                error: Some(e.to_string()),
                ..shown
            };
            page(app, viewer, user, StatusCode::UNPROCESSABLE_ENTITY, shown).await
        }
        Error::NotFound => Err(nothing_here(viewer, app)),
        e => Err(internal(e)),
    }
}

/// The signed-in user of a form on this page whose CSRF token checks out.
/// With the provider off, the forms do not exist (404).
fn settings_user<'v>(app: &App, viewer: &'v Viewer, csrf: &str) -> Result<&'v User, WebError> {
    if !app.config.oauth2.enable {
        return Err(WebError::NotFound);
    }
    viewer.form_user(app, csrf)
}

/// `GET /user/settings/applications`.
pub(crate) async fn show(State(app): State<App>, viewer: Viewer) -> Result<Response, WebError> {
    let user = viewer.signed_in()?;
    page(&app, &viewer, user, StatusCode::OK, Shown::default()).await
}

/// The create and edit forms, with Gitea's field names.
#[derive(Deserialize)]
pub(crate) struct AppForm {
    #[serde(default)]
    application_name: String,
    /// One URI a line.
    #[serde(default)]
    redirect_uris: String,
    /// A checkbox: present when checked.
    #[serde(default)]
    confidential_client: Option<String>,
    #[serde(default, rename = "_csrf")]
    csrf: String,
}

impl AppForm {
    fn draft(&self) -> Draft {
        Draft {
            name: self.application_name.clone(),
            redirect_uris: self.redirect_uris.clone(),
            confidential: self.confidential_client.is_some(),
        }
    }

    fn registration(&self) -> Registration {
        Registration {
            name: self.application_name.clone(),
            redirect_uris: self.redirect_uris.lines().map(str::to_string).collect(),
            confidential: self.confidential_client.is_some(),
        }
    }
}

#[derive(Deserialize)]
pub(crate) struct CsrfOnly {
    #[serde(default, rename = "_csrf")]
    csrf: String,
}

/// `POST /user/settings/applications/oauth2`: registers an application
/// and shows its client id and secret once.
pub(crate) async fn create(
    State(app): State<App>,
    viewer: Viewer,
    Form(form): Form<AppForm>,
) -> Result<Response, WebError> {
    let user = settings_user(&app, &viewer, &form.csrf)?;
    let min_len = app.config.oauth2.minimal_token_length;
    match apps::create(&app.db, Some(user.id), form.registration(), min_len).await {
        Ok((created, client_secret)) => {
            let shown = Shown {
                secret: Some(Secret {
                    name: created.name,
                    client_id: created.client_id,
                    client_secret,
                }),
                ..Shown::default()
            };
            page(&app, &viewer, user, StatusCode::OK, shown).await
        }
        Err(e) => {
            let shown = Shown {
                create: Some(form.draft()),
                ..Shown::default()
            };
            refused(&app, &viewer, user, e, shown).await
        }
    }
}

/// `POST /user/settings/applications/oauth2/{id}`: changes an
/// application's name, redirect URIs and kind.
pub(crate) async fn update(
    State(app): State<App>,
    viewer: Viewer,
    Path(id): Path<i64>,
    Form(form): Form<AppForm>,
) -> Result<Response, WebError> {
    let user = settings_user(&app, &viewer, &form.csrf)?;
    let result = async {
        let current = apps::find_owned(&app.db, Some(user.id), id).await?;
        apps::update(&app.db, &current, form.registration()).await
    }
    .await;
    match result {
        Ok(_) => Ok(Redirect::to(PAGE).into_response()),
        Err(e) => {
            let shown = Shown {
                editing: Some((id, form.draft())),
                ..Shown::default()
            };
            refused(&app, &viewer, user, e, shown).await
        }
    }
}

/// `POST /user/settings/applications/oauth2/{id}/regenerate_secret`: a new
/// client secret, shown once; the old one stops working at once.
pub(crate) async fn regenerate_secret(
    State(app): State<App>,
    viewer: Viewer,
    Path(id): Path<i64>,
    Form(form): Form<CsrfOnly>,
) -> Result<Response, WebError> {
    let user = settings_user(&app, &viewer, &form.csrf)?;
    let min_len = app.config.oauth2.minimal_token_length;
    let result = async {
        let current = apps::find_owned(&app.db, Some(user.id), id).await?;
        let secret = apps::regenerate_secret(&app.db, &current, min_len).await?;
        Ok::<_, Error>((current, secret))
    }
    .await;
    match result {
        Ok((current, client_secret)) => {
            let shown = Shown {
                secret: Some(Secret {
                    name: current.name,
                    client_id: current.client_id,
                    client_secret,
                }),
                ..Shown::default()
            };
            page(&app, &viewer, user, StatusCode::OK, shown).await
        }
        Err(e) => refused(&app, &viewer, user, e, Shown::default()).await,
    }
}

/// `POST /user/settings/applications/oauth2/{id}/delete`: deletes an
/// application; every token it holds stops working.
pub(crate) async fn delete(
    State(app): State<App>,
    viewer: Viewer,
    Path(id): Path<i64>,
    Form(form): Form<CsrfOnly>,
) -> Result<Response, WebError> {
    let user = settings_user(&app, &viewer, &form.csrf)?;
    let result = async {
        let current = apps::find_owned(&app.db, Some(user.id), id).await?;
        apps::delete(&app.db, &current).await
    }
    .await;
    match result {
        Ok(()) => Ok(Redirect::to(PAGE).into_response()),
        Err(e) => refused(&app, &viewer, user, e, Shown::default()).await,
    }
}

/// `POST /user/settings/applications/oauth2/authorized/{app_id}/revoke`:
/// withdraws the user's authorization of an application; its codes and
/// tokens for the user stop working at once.
pub(crate) async fn revoke(
    State(app): State<App>,
    viewer: Viewer,
    Path(app_id): Path<i64>,
    Form(form): Form<CsrfOnly>,
) -> Result<Response, WebError> {
    let user = settings_user(&app, &viewer, &form.csrf)?;
    match codes::withdraw(&app.db, user, app_id).await {
        Ok(true) => Ok(Redirect::to(PAGE).into_response()),
        Ok(false) => Err(nothing_here(&viewer, &app)),
        Err(e) => refused(&app, &viewer, user, e, Shown::default()).await,
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn times_are_shown_in_utc_to_the_minute() {
        assert_eq!(when(0), "1970-01-01 00:00 UTC");
        assert_eq!(when(1_700_000_000), "2023-11-14 22:13 UTC");
    }

    #[test]
    fn the_form_reads_one_uri_a_line_and_the_checkbox() {
        let form = AppForm {
            application_name: "ci".into(),
            redirect_uris: "https://a/cb\r\n\r\nhttps://b/cb\n".into(),
            confidential_client: None,
            csrf: String::new(),
        };
        let r = form.registration();
        assert_eq!(r.redirect_uris, ["https://a/cb", "", "https://b/cb"]);
        assert!(!r.confidential);
        assert!(Draft::default().confidential);
    }
}
