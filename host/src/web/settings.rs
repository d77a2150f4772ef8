//! A user's own settings pages, beside Security and Applications:
//! Profile (full name, e-mail, password), SSH keys and Sessions.

use askama::Template;
use axum::extract::{Path, State};
use axum::http::StatusCode;
use axum::response::{IntoResponse, Redirect, Response};
use serde::Deserialize;

use super::{Viewer, WebError, Who, nothing_here, render, when};
use crate::identity;
use crate::state::App;
use crate::users::{self, User};
use crate::web::{Button, Posted};
use crate::{keys, sessions};

#[derive(Template)]
#[template(path = "settings_profile.html")]
struct ProfilePage {
    user: Option<Who>,
    csrf: String,
    notice: Option<String>,
    /// A refusal of the profile form, shown beside it.
    profile_error: Option<String>,
    /// A refusal of the password form, shown beside it.
    password_error: Option<String>,
    full_name: String,
    email: String,
    /// Local accounts change their password here.
    local: bool,
    source: String,
}

/// What a handler changes on the profile page.
#[derive(Default)]
struct ProfileShown {
    notice: Option<String>,
    profile_error: Option<String>,
    password_error: Option<String>,
    /// The fields as typed, after a refusal.
    typed: Option<(String, String)>,
}

fn profile_page(
    app: &App,
    viewer: &Viewer,
    user: &User,
    status: StatusCode,
    shown: ProfileShown,
) -> Result<Response, WebError> {
    let (full_name, email) = shown
        .typed
        .unwrap_or_else(|| (user.full_name.clone(), user.email.clone()));
    let (csrf, jar) = viewer.csrf(app);
    let page = ProfilePage {
        user: viewer.who(),
        csrf,
        notice: shown.notice,
        profile_error: shown.profile_error,
        password_error: shown.password_error,
        full_name,
        email,
        local: user.login_source == users::LOCAL_SOURCE && user.password_hash.is_some(),
        source: user.login_source.clone(),
    };
    Ok((jar, render(status, page)?).into_response())
}

/// `GET /user/settings`: Settings › Profile.
pub(crate) async fn profile(State(app): State<App>, viewer: Viewer) -> Result<Response, WebError> {
    let user = viewer.signed_in()?;
    profile_page(&app, &viewer, user, StatusCode::OK, ProfileShown::default())
}

#[derive(Deserialize)]
pub(crate) struct ProfileForm {
    #[serde(default)]
    full_name: String,
    #[serde(default)]
    email: String,
}

/// `POST /user/settings`: full name and e-mail.
pub(crate) async fn save_profile(
    State(app): State<App>,
    Posted { viewer, form }: Posted<ProfileForm>,
) -> Result<Response, WebError> {
    let user = viewer.signed_in()?;
    let full_name = form.full_name.trim().to_string();
    let email = form.email.trim().to_string();
    let refusal = if full_name.chars().count() > 255 {
        Some("The full name is longer than 255 characters.".to_string())
    } else if !users::looks_like_email(&email) {
        Some("Enter an e-mail address such as name@example.com.".to_string())
    } else {
        let changes = users::Changes {
            full_name: Some(full_name.clone()),
            email: Some(email.clone()),
            ..Default::default()
        };
        match users::update(&app.db, user, &changes).await {
            Ok(_) => None,
            Err(e @ users::Error::EmailTaken(_)) => Some(capital(&e.to_string())),
            Err(e) => return Err(e.into()),
        }
    };
    match refusal {
        None => {
            let user = users::find_by_id(&app.db, user.id)
                .await?
                .ok_or(WebError::SignIn)?;
            profile_page(
                &app,
                &viewer,
                &user,
                StatusCode::OK,
                ProfileShown {
                    notice: Some("Your profile has been updated.".into()),
                    ..Default::default()
                },
            )
        }
        Some(why) => profile_page(
            &app,
            &viewer,
            user,
            StatusCode::UNPROCESSABLE_ENTITY,
            ProfileShown {
                profile_error: Some(why),
                typed: Some((full_name, email)),
                ..Default::default()
            },
        ),
    }
}

#[derive(Deserialize)]
pub(crate) struct PasswordForm {
    #[serde(default)]
    old_password: String,
    #[serde(default)]
    password: String,
    #[serde(default)]
    retype: String,
}

/// `POST /user/settings/password`: needs the current password.
pub(crate) async fn change_password(
    State(app): State<App>,
    Posted { viewer, form }: Posted<PasswordForm>,
) -> Result<Response, WebError> {
    let user = viewer.signed_in()?;
    let outcome = if form.password != form.retype {
        Err("The new passwords do not match.".to_string())
    } else {
        let current = viewer.caller.session.as_deref();
        match identity::change_password(&app, user, &form.old_password, &form.password, current)
            .await
        {
            Ok(()) => Ok(()),
            Err(identity::Error::Store(e)) => return Err(e.into()),
            Err(e) => Err(e.to_string()),
        }
    };
    let (status, shown) = match outcome {
        Ok(()) => (
            StatusCode::OK,
            ProfileShown {
                notice: Some("Your password has been changed.".into()),
                ..Default::default()
            },
        ),
        Err(why) => (
            StatusCode::UNPROCESSABLE_ENTITY,
            ProfileShown {
                password_error: Some(why),
                ..Default::default()
            },
        ),
    };
    profile_page(&app, &viewer, user, status, shown)
}

#[derive(Template)]
#[template(path = "settings_keys.html")]
struct KeysPage {
    user: Option<Who>,
    csrf: String,
    error: Option<String>,
    keys: Vec<(i64, String, String, String)>,
    title: String,
    content: String,
}

async fn keys_page(
    app: &App,
    viewer: &Viewer,
    user: &User,
    status: StatusCode,
    error: Option<String>,
    typed: (String, String),
) -> Result<Response, WebError> {
    let keys = keys::list(&app.db, user.id)
        .await
        .map_err(WebError::internal)?
        .into_iter()
        .map(|k| (k.id, k.title, k.fingerprint, when(k.created)))
        .collect();
    let (csrf, jar) = viewer.csrf(app);
    let page = KeysPage {
        user: viewer.who(),
        csrf,
        error,
        keys,
        title: typed.0,
        content: typed.1,
    };
    Ok((jar, render(status, page)?).into_response())
}

/// `GET /user/settings/keys`: Settings › SSH keys.
pub(crate) async fn ssh_keys(State(app): State<App>, viewer: Viewer) -> Result<Response, WebError> {
    let user = viewer.signed_in()?;
    keys_page(
        &app,
        &viewer,
        user,
        StatusCode::OK,
        None,
        Default::default(),
    )
    .await
}

#[derive(Deserialize)]
pub(crate) struct KeyForm {
    #[serde(default)]
    title: String,
    #[serde(default)]
    content: String,
}

/// `POST /user/settings/keys`: adds a key.
pub(crate) async fn add_key(
    State(app): State<App>,
    Posted { viewer, form }: Posted<KeyForm>,
) -> Result<Response, WebError> {
    let user = viewer.signed_in()?;
    let title = form.title.trim();
    let refusal = if title.is_empty() {
        Some("Give the key a title.".to_string())
    } else {
        match keys::add(&app.db, user.id, title, &form.content, &user.actor()).await {
            Ok(_) => None,
            Err(e @ (keys::Error::Invalid(_) | keys::Error::Taken)) => {
                Some(capital(&e.to_string()))
            }
            Err(e) => return Err(WebError::internal(e)),
        }
    };
    match refusal {
        None => Ok(Redirect::to("/user/settings/keys").into_response()),
        Some(why) => {
            keys_page(
                &app,
                &viewer,
                user,
                StatusCode::UNPROCESSABLE_ENTITY,
                Some(why),
                (form.title, form.content),
            )
            .await
        }
    }
}

/// `POST /user/settings/keys/{id}/delete`.
pub(crate) async fn delete_key(
    State(app): State<App>,
    Path(id): Path<i64>,
    Posted { viewer, .. }: Posted<Button>,
) -> Result<Response, WebError> {
    let user = viewer.signed_in()?;
    if !keys::delete(&app.db, user.id, id, &user.actor())
        .await
        .map_err(WebError::internal)?
    {
        return Err(nothing_here(&viewer, &app));
    }
    Ok(Redirect::to("/user/settings/keys").into_response())
}

/// One session on the Sessions page.
struct SessionLine {
    handle: String,
    user_agent: String,
    created: String,
    last_seen: String,
    current: bool,
}

#[derive(Template)]
#[template(path = "settings_sessions.html")]
struct SessionsPage {
    user: Option<Who>,
    csrf: String,
    sessions: Vec<SessionLine>,
}

/// At most this many sessions are listed, newest first.
const SESSIONS_SHOWN: u64 = 100;

/// `GET /user/settings/sessions`: the user's signed-in browsers.
pub(crate) async fn sessions_page(
    State(app): State<App>,
    viewer: Viewer,
) -> Result<Response, WebError> {
    let user = viewer.signed_in()?;
    let current = viewer.caller.session.clone().unwrap_or_default();
    let window = crate::db::cursor::CursorWindow::Newest {
        size: SESSIONS_SHOWN,
    };
    let sessions = sessions::list(&app.db, user.id, &window)
        .await?
        .into_iter()
        .take(SESSIONS_SHOWN as usize)
        .map(|s| SessionLine {
            current: s.handle == current,
            handle: s.handle,
            user_agent: if s.user_agent.is_empty() {
                "unknown browser".into()
            } else {
                s.user_agent
            },
            created: when(s.created),
            last_seen: when(s.last_seen),
        })
        .collect();
    let (csrf, jar) = viewer.csrf(&app);
    let page = SessionsPage {
        user: viewer.who(),
        csrf,
        sessions,
    };
    Ok((jar, render(StatusCode::OK, page)?).into_response())
}

/// `POST /user/settings/sessions/others/delete`: signs out every other
/// browser.
pub(crate) async fn end_others(
    State(app): State<App>,
    Posted { viewer, .. }: Posted<Button>,
) -> Result<Response, WebError> {
    let user = viewer.signed_in()?;
    let current = viewer.caller.session.clone().unwrap_or_default();
    sessions::end_others(&app.db, user.id, &current).await?;
    Ok(Redirect::to("/user/settings/sessions").into_response())
}

/// `POST /user/settings/sessions/{handle}/delete`: signs out one browser.
pub(crate) async fn end_one(
    State(app): State<App>,
    Path(handle): Path<String>,
    Posted { viewer, .. }: Posted<Button>,
) -> Result<Response, WebError> {
    let user = viewer.signed_in()?;
    if !sessions::revoke(&app.db, user.id, &handle).await? {
        return Err(nothing_here(&viewer, &app));
    }
    Ok(Redirect::to("/user/settings/sessions").into_response())
}

/// The first letter in upper case, for a domain error shown as a sentence.
pub(super) fn capital(text: &str) -> String {
    let mut c = text.chars();
    c.next()
        .map(|f| f.to_uppercase().collect::<String>() + c.as_str())
        .unwrap_or_default()
}
