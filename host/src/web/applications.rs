//! Settings › Applications, as Gitea has it: the user's personal access
//! tokens (create with scopes, expiry and repository limits, shown once;
//! delete), the user's OAuth2 applications (create, edit, regenerate the
//! client secret, delete), and the applications the user has authorized
//! (revoke).
//!
//! A client secret is shown once, on the page that answers its creation
//! or regeneration, and never again: only its sha256 is kept. With
//! `[oauth2] ENABLE = false` the page says the provider is off and every
//! form answers 404.

use askama::Template;
use axum::extract::{Path, State};
use axum::http::{HeaderValue, StatusCode, header};
use axum::response::{IntoResponse, Redirect, Response};
use serde::Deserialize;
use time::macros::format_description;

use super::settings::capital;
use super::{Viewer, WebError, Who, nothing_here, render, when};
use crate::oauth_provider::apps::{self, Registration};
use crate::oauth_provider::{Error, codes};
use crate::state::App;
use crate::users::User;
use crate::web::{Button, Posted};

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

impl From<&apps::Client> for Draft {
    fn from(a: &apps::Client) -> Self {
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

/// One of the user's personal access tokens (never its secret).
struct TokenRow {
    id: i64,
    name: String,
    last_eight: String,
    scopes: String,
    repositories: String,
    expires: String,
    last_used: String,
}

/// The token form as typed, after a refusal.
#[derive(Clone, Default)]
struct TokenDraft {
    name: String,
    /// `(area, "", "read" or "write")` for each area's select.
    scopes: Vec<(&'static str, String)>,
    expires: String,
    repositories: String,
}

impl TokenDraft {
    fn level(&self, area: &str) -> &str {
        self.scopes
            .iter()
            .find(|(a, _)| *a == area)
            .map(|(_, l)| l.as_str())
            .unwrap_or("")
    }
}

#[derive(Template)]
#[template(path = "user_applications.html")]
struct ApplicationsPage {
    user: Option<Who>,
    csrf: String,
    enabled: bool,
    error: Option<String>,
    secret: Option<Secret>,
    apps: Vec<Owned>,
    authorized: Vec<Authorized>,
    create: Draft,
    tokens: Vec<TokenRow>,
    token_error: Option<String>,
    /// A token just created: (name, secret), shown this once.
    new_token: Option<(String, String)>,
    token_form: TokenDraft,
    areas: &'static [&'static str],
}

/// What a handler changes on the page; the rest is read afresh.
#[derive(Default)]
struct Shown {
    error: Option<String>,
    secret: Option<Secret>,
    token_error: Option<String>,
    new_token: Option<(String, String)>,
    token_form: Option<TokenDraft>,
    /// The create form as typed, after a refusal.
    create: Option<Draft>,
    /// An edit form as typed, after a refusal: the application's id.
    editing: Option<(i64, Draft)>,
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
    let enabled = app.config().oauth2.enable;
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
    let tokens = crate::tokens::list(&app.db, user.id)
        .await
        .map_err(WebError::internal)?
        .into_iter()
        .map(|t| TokenRow {
            id: t.id,
            name: t.name,
            last_eight: t.last_eight,
            scopes: t.scopes.names().join(", "),
            repositories: if t.repositories.is_empty() {
                "all".into()
            } else {
                format!("{} repositories", t.repositories.len())
            },
            expires: t.expires.map(when).unwrap_or_else(|| "never".into()),
            last_used: t.last_used.map(when).unwrap_or_else(|| "never".into()),
        })
        .collect();
    let with_secret = shown.secret.is_some() || shown.new_token.is_some();
    let (csrf, jar) = viewer.csrf(app);
    let page = ApplicationsPage {
        user: viewer.who(),
        csrf,
        enabled,
        error: shown.error,
        secret: shown.secret,
        apps,
        authorized,
        create: shown.create.unwrap_or_default(),
        tokens,
        token_error: shown.token_error,
        new_token: shown.new_token,
        token_form: shown.token_form.unwrap_or_default(),
        areas: AREAS,
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

/// The signed-in user of a form on this page. With the provider off, the
/// forms do not exist (404).
fn settings_user<'v>(app: &App, viewer: &'v Viewer) -> Result<&'v User, WebError> {
    if !app.config().oauth2.enable {
        return Err(WebError::NotFound);
    }
    viewer.signed_in()
}

/// `GET /user/settings/applications`.
pub(crate) async fn show(State(app): State<App>, viewer: Viewer) -> Result<Response, WebError> {
    let user = viewer.signed_in()?;
    page(&app, &viewer, user, StatusCode::OK, Shown::default()).await
}

/// The scope areas of a token, each a select on the form.
const AREAS: &[&str] = &["repository", "organization", "user", "admin"];

/// The token form.
#[derive(Deserialize)]
pub(crate) struct TokenForm {
    #[serde(default)]
    name: String,
    #[serde(default)]
    scope_repository: String,
    #[serde(default)]
    scope_organization: String,
    #[serde(default)]
    scope_user: String,
    #[serde(default)]
    scope_admin: String,
    /// `YYYY-MM-DD`: the token works through the end of that day (UTC).
    #[serde(default)]
    expires: String,
    /// `owner/name`, comma- or space-separated; empty for every repository.
    #[serde(default)]
    repositories: String,
}

impl TokenForm {
    fn draft(&self) -> TokenDraft {
        TokenDraft {
            name: self.name.clone(),
            scopes: vec![
                ("repository", self.scope_repository.clone()),
                ("organization", self.scope_organization.clone()),
                ("user", self.scope_user.clone()),
                ("admin", self.scope_admin.clone()),
            ],
            expires: self.expires.clone(),
            repositories: self.repositories.clone(),
        }
    }

    fn request(&self) -> Result<crate::tokens::Request, String> {
        let scopes = self
            .draft()
            .scopes
            .into_iter()
            .filter(|(_, level)| !level.is_empty())
            .map(|(area, level)| format!("{level}:{area}"))
            .collect();
        let expires = match self.expires.trim() {
            "" => None,
            day => {
                let date = time::Date::parse(day, format_description!("[year]-[month]-[day]"))
                    .map_err(|_| format!("Expiry: {day:?} is not a date (YYYY-MM-DD)"))?;
                let end = date
                    .next_day()
                    .ok_or("Expiry: too far ahead")?
                    .midnight()
                    .assume_utc();
                Some(end.unix_timestamp())
            }
        };
        Ok(crate::tokens::Request {
            name: self.name.clone(),
            scopes,
            repositories: self
                .repositories
                .split([',', ' ', '\n'])
                .map(str::to_string)
                .collect(),
            expires,
        })
    }
}

/// `POST /user/settings/applications/tokens`: creates a personal access
/// token and shows it once.
pub(crate) async fn create_token(
    State(app): State<App>,
    Posted { viewer, form }: Posted<TokenForm>,
) -> Result<Response, WebError> {
    let user = viewer.signed_in()?;
    let outcome = match form.request() {
        Ok(request) => crate::tokens::issue(&app.db, user.id, &request, &user.actor()).await,
        Err(why) => Err(crate::tokens::Error::Invalid(why)),
    };
    let (status, shown) = match outcome {
        Ok((secret, token)) => (
            StatusCode::OK,
            Shown {
                new_token: Some((token.name, secret)),
                ..Shown::default()
            },
        ),
        Err(e @ (crate::tokens::Error::Invalid(_) | crate::tokens::Error::NameTaken(_))) => (
            StatusCode::UNPROCESSABLE_ENTITY,
            Shown {
                token_error: Some(capital(&e.to_string())),
                token_form: Some(form.draft()),
                ..Shown::default()
            },
        ),
        Err(e) => return Err(WebError::internal(e)),
    };
    page(&app, &viewer, user, status, shown).await
}

/// `POST /user/settings/applications/tokens/{id}/delete`.
pub(crate) async fn delete_token(
    State(app): State<App>,
    Path(id): Path<i64>,
    Posted { viewer, .. }: Posted<Button>,
) -> Result<Response, WebError> {
    let user = viewer.signed_in()?;
    if !crate::tokens::delete(&app.db, user.id, &id.to_string(), &user.actor())
        .await
        .map_err(WebError::internal)?
    {
        return Err(nothing_here(&viewer, &app));
    }
    Ok(Redirect::to(PAGE).into_response())
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
            // The page does not show it; an edit keeps what the API set.
            id_token_signed_response_alg: None,
        }
    }
}

/// `POST /user/settings/applications/oauth2`: registers an application
/// and shows its client id and secret once.
pub(crate) async fn create(
    State(app): State<App>,
    Posted { viewer, form }: Posted<AppForm>,
) -> Result<Response, WebError> {
    let user = settings_user(&app, &viewer)?;
    let min_len = app.config().oauth2.minimal_token_length;
    match apps::create(
        &app.db,
        Some(user.id),
        form.registration(),
        min_len,
        &user.actor(),
    )
    .await
    {
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
    Path(id): Path<i64>,
    Posted { viewer, form }: Posted<AppForm>,
) -> Result<Response, WebError> {
    let user = settings_user(&app, &viewer)?;
    let result = async {
        let current = apps::find_owned(&app.db, Some(user.id), id).await?;
        apps::update(&app.db, &current, form.registration(), &user.actor()).await
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
    Path(id): Path<i64>,
    Posted { viewer, .. }: Posted<Button>,
) -> Result<Response, WebError> {
    let user = settings_user(&app, &viewer)?;
    let min_len = app.config().oauth2.minimal_token_length;
    let result = async {
        let current = apps::find_owned(&app.db, Some(user.id), id).await?;
        let secret = apps::regenerate_secret(&app.db, &current, min_len, &user.actor()).await?;
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
    Path(id): Path<i64>,
    Posted { viewer, .. }: Posted<Button>,
) -> Result<Response, WebError> {
    let user = settings_user(&app, &viewer)?;
    let result = async {
        let current = apps::find_owned(&app.db, Some(user.id), id).await?;
        apps::delete(&app.db, &current, &user.actor()).await
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
    Path(app_id): Path<i64>,
    Posted { viewer, .. }: Posted<Button>,
) -> Result<Response, WebError> {
    let user = settings_user(&app, &viewer)?;
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
        };
        let r = form.registration();
        assert_eq!(r.redirect_uris, ["https://a/cb", "", "https://b/cb"]);
        assert!(!r.confidential);
        assert!(Draft::default().confidential);
    }
}
