//! Admin panel › Users: the list with search and paging, a form that
//! creates a local account, and each user's page (name, e-mail, active,
//! administrator, restricted; remove every second factor; one-time
//! bypass codes). A deactivated user's sessions and tokens stop working at
//! their next request: `sessions::lookup` and `authn` refuse inactive
//! accounts.

use askama::Template;
use axum::extract::{Path, Query, State};
use axum::http::StatusCode;
use axum::response::{IntoResponse, Redirect, Response};
use serde::Deserialize;

use super::admin::admin_only;
use super::settings::capital;
use super::{Viewer, WebError, Who, nothing_here, render, when};
use crate::db::cursor::Span;
use crate::identity;
use crate::state::App;
use crate::users::{self, User};
use crate::web::{Button, Posted};

/// Users on one page of the list.
pub(super) const PER_PAGE: i64 = 25;

/// `?q=&page=` of the panel's lists.
#[derive(Deserialize, Default)]
pub(crate) struct ListQuery {
    #[serde(default)]
    pub(super) q: String,
    #[serde(default)]
    pub(super) page: Option<i64>,
}

impl ListQuery {
    /// The page number, from 1.
    pub(super) fn page(&self) -> i64 {
        self.page.unwrap_or(1).max(1)
    }
}

/// The search, the count and the links to the previous and next page of
/// one of the panel's lists (`admin_pager.html`).
pub(super) struct Listing {
    pub(super) q: String,
    pub(super) total: i64,
    pub(super) previous: Option<String>,
    pub(super) next: Option<String>,
}

impl Listing {
    /// The listing of `total` matches at `base`, keeping the search.
    pub(super) fn new(base: &str, query: ListQuery, total: i64) -> Listing {
        let page = query.page();
        let q: String = form_urlencoded::byte_serialize(query.q.as_bytes()).collect();
        let link = |p: i64| format!("{base}?q={q}&page={p}");
        Listing {
            previous: (page > 1).then(|| link(page - 1)),
            next: (page * PER_PAGE < total).then(|| link(page + 1)),
            q: query.q,
            total,
        }
    }
}

struct UserLine {
    id: i64,
    login: String,
    email: String,
    full_name: String,
    source: String,
    admin: bool,
    active: bool,
    restricted: bool,
    created: String,
}

#[derive(Template)]
#[template(path = "admin_users.html")]
struct UsersPage {
    user: Option<Who>,
    csrf: String,
    listing: Listing,
    users: Vec<UserLine>,
}

/// `GET /admin/users`.
pub(crate) async fn list(
    State(app): State<App>,
    viewer: Viewer,
    Query(query): Query<ListQuery>,
) -> Result<Response, WebError> {
    admin_only(&viewer)?;
    let filter = users::Filter {
        q: Some(query.q.clone()),
        q_email: true,
        ..Default::default()
    };
    let (total, found) = users::search(
        &app.db,
        &filter,
        Span::Range {
            limit: PER_PAGE,
            offset: (query.page() - 1) * PER_PAGE,
        },
    )
    .await?;
    let (csrf, jar) = viewer.csrf(&app);
    let page = UsersPage {
        user: viewer.who(),
        csrf,
        listing: Listing::new("/admin/users", query, total as i64),
        users: found
            .into_iter()
            .map(|u| UserLine {
                id: u.id,
                login: u.login,
                email: u.email,
                full_name: u.full_name,
                source: u.login_source,
                admin: u.is_admin,
                active: u.is_active,
                restricted: u.is_restricted,
                created: when(u.created),
            })
            .collect(),
    };
    Ok((jar, render(StatusCode::OK, page)?).into_response())
}

#[derive(Template)]
#[template(path = "admin_user_new.html")]
struct NewUserPage {
    user: Option<Who>,
    csrf: String,
    error: Option<String>,
    login: String,
    email: String,
    admin: bool,
}

/// `GET /admin/users/new`.
pub(crate) async fn new_form(State(app): State<App>, viewer: Viewer) -> Result<Response, WebError> {
    admin_only(&viewer)?;
    new_page(&app, &viewer, StatusCode::OK, None, NewUserForm::default())
}

fn new_page(
    app: &App,
    viewer: &Viewer,
    status: StatusCode,
    error: Option<String>,
    typed: NewUserForm,
) -> Result<Response, WebError> {
    let (csrf, jar) = viewer.csrf(app);
    let page = NewUserPage {
        user: viewer.who(),
        csrf,
        error,
        login: typed.user_name,
        email: typed.email,
        admin: typed.admin.is_some(),
    };
    Ok((jar, render(status, page)?).into_response())
}

#[derive(Deserialize, Default)]
pub(crate) struct NewUserForm {
    #[serde(default)]
    user_name: String,
    #[serde(default)]
    email: String,
    #[serde(default)]
    password: String,
    #[serde(default)]
    admin: Option<String>,
}

/// `POST /admin/users/new`: a local account, as `postern admin user
/// create` makes one.
pub(crate) async fn create(
    State(app): State<App>,
    Posted { viewer, form }: Posted<NewUserForm>,
) -> Result<Response, WebError> {
    admin_only(&viewer)?;
    match identity::register(
        &app,
        form.user_name.trim(),
        form.email.trim(),
        &form.password,
        form.admin.is_some(),
        false,
    )
    .await
    {
        Ok(created) => {
            if let Err(identity::Error::Store(e)) =
                identity::audit_created(&app, &created, &viewer.actor()).await
            {
                return Err(e.into());
            }
            Ok(Redirect::to(&format!("/admin/users/{}", created.id)).into_response())
        }
        Err(identity::Error::Store(e)) => Err(e.into()),
        Err(e) => {
            let status = e.status();
            new_page(&app, &viewer, status, Some(e.to_string()), form)
        }
    }
}

#[derive(Template)]
#[template(path = "admin_user.html")]
struct UserPage {
    user: Option<Who>,
    csrf: String,
    error: Option<String>,
    notice: Option<String>,
    /// One-time bypass codes just made, with their expiry.
    codes: Option<(Vec<String>, String)>,
    subject: User,
    factors: Vec<String>,
    created: String,
    /// The administrator looks at their own account.
    own: bool,
    /// The account's external identities: source, its display name,
    /// external id, made, last used.
    links: Vec<LinkLine>,
    /// The redirect sources an identity can be linked through: name,
    /// display name.
    sources: Vec<(String, String)>,
}

struct LinkLine {
    source: String,
    source_name: String,
    external_id: String,
    created: String,
    last_used: String,
}

#[derive(Default)]
struct Shown {
    error: Option<String>,
    notice: Option<String>,
    codes: Option<(Vec<String>, String)>,
}

async fn user_page(
    app: &App,
    viewer: &Viewer,
    subject: User,
    status: StatusCode,
    shown: Shown,
) -> Result<Response, WebError> {
    let factors = crate::second_factor::list(&app.db, subject.id)
        .await?
        .into_iter()
        .map(|f| f.kind)
        .collect();
    let links = crate::identity::links::links_of(app, &subject)
        .await
        .map_err(WebError::internal)?
        .into_iter()
        .map(|l| LinkLine {
            source: l.source,
            source_name: l.source_name,
            external_id: l.external_id,
            created: when(l.created),
            last_used: l.last_used.map_or_else(|| "never".to_string(), when),
        })
        .collect();
    let (csrf, jar) = viewer.csrf(app);
    let page = UserPage {
        links,
        sources: crate::identity::redirect_sources(app),
        own: viewer.user().is_some_and(|u| u.id == subject.id),
        user: viewer.who(),
        csrf,
        error: shown.error,
        notice: shown.notice,
        codes: shown.codes,
        created: when(subject.created),
        subject,
        factors,
    };
    Ok((jar, render(status, page)?).into_response())
}

/// The person (not an organization) with this id, or the 404 page.
async fn subject(app: &App, viewer: &Viewer, id: i64) -> Result<User, WebError> {
    match users::find_by_id(&app.db, id).await? {
        Some(u) if crate::orgs::find_by_id(&app.db, u.id).await?.is_none() => Ok(u),
        _ => Err(nothing_here(viewer, app)),
    }
}

/// `GET /admin/users/{id}`.
pub(crate) async fn show(
    State(app): State<App>,
    viewer: Viewer,
    Path(id): Path<i64>,
) -> Result<Response, WebError> {
    admin_only(&viewer)?;
    let subject = subject(&app, &viewer, id).await?;
    user_page(&app, &viewer, subject, StatusCode::OK, Shown::default()).await
}

#[derive(Deserialize)]
pub(crate) struct EditForm {
    #[serde(default)]
    full_name: String,
    #[serde(default)]
    email: String,
    #[serde(default)]
    active: Option<String>,
    #[serde(default)]
    admin: Option<String>,
    #[serde(default)]
    restricted: Option<String>,
}

/// `POST /admin/users/{id}`: name, e-mail and the switches.
pub(crate) async fn edit(
    State(app): State<App>,
    Path(id): Path<i64>,
    Posted { viewer, form }: Posted<EditForm>,
) -> Result<Response, WebError> {
    admin_only(&viewer)?;
    let subject = subject(&app, &viewer, id).await?;
    let own = viewer.user().is_some_and(|u| u.id == subject.id);
    let email = form.email.trim().to_string();
    let refusal = if own && (form.active.is_none() || form.admin.is_none()) {
        Some("You cannot remove your own administrator rights or deactivate yourself.".into())
    } else if !users::looks_like_email(&email) {
        Some(format!("{email:?} is not an e-mail address."))
    } else {
        None
    };
    if let Some(why) = refusal {
        let shown = Shown {
            error: Some(why),
            ..Default::default()
        };
        return user_page(
            &app,
            &viewer,
            subject,
            StatusCode::UNPROCESSABLE_ENTITY,
            shown,
        )
        .await;
    }
    let changes = users::Changes {
        full_name: Some(form.full_name.trim().to_string()),
        email: Some(email),
        is_active: Some(form.active.is_some()),
        is_admin: Some(form.admin.is_some()),
        is_restricted: Some(form.restricted.is_some()),
        actor: Some(viewer.actor()),
    };
    match users::update(&app.db, &subject, &changes).await {
        Ok(updated) => {
            let shown = Shown {
                notice: Some("The account has been updated.".into()),
                ..Default::default()
            };
            user_page(&app, &viewer, updated, StatusCode::OK, shown).await
        }
        Err(e @ users::Error::EmailTaken(_)) => {
            let shown = Shown {
                error: Some(capital(&e.to_string())),
                ..Default::default()
            };
            user_page(&app, &viewer, subject, StatusCode::CONFLICT, shown).await
        }
        Err(e) => Err(e.into()),
    }
}

/// `POST /admin/users/{id}/reset_2fa`: removes every second factor, as
/// `postern admin user reset-2fa` does.
pub(crate) async fn reset_second_factors(
    State(app): State<App>,
    Path(id): Path<i64>,
    Posted { viewer, .. }: Posted<Button>,
) -> Result<Response, WebError> {
    admin_only(&viewer)?;
    let subject = subject(&app, &viewer, id).await?;
    crate::second_factor::reset(&app, &subject, &viewer.actor()).await?;
    Ok(Redirect::to(&format!("/admin/users/{id}")).into_response())
}

/// How many bypass codes the panel makes at a time.
const BYPASS_CODES: usize = 5;

/// `POST /admin/users/{id}/bypass_codes`: one-time codes for a user who
/// lost their second factor, shown this once.
pub(crate) async fn bypass_codes(
    State(app): State<App>,
    Path(id): Path<i64>,
    Posted { viewer, .. }: Posted<Button>,
) -> Result<Response, WebError> {
    admin_only(&viewer)?;
    let subject = subject(&app, &viewer, id).await?;
    let (codes, expires) = crate::second_factor::generate_bypass_codes(
        &app.db,
        &subject,
        BYPASS_CODES,
        &viewer.actor(),
    )
    .await?;
    let shown = Shown {
        codes: Some((codes, when(expires))),
        ..Default::default()
    };
    let mut response = user_page(&app, &viewer, subject, StatusCode::OK, shown).await?;
    response.headers_mut().insert(
        axum::http::header::CACHE_CONTROL,
        axum::http::HeaderValue::from_static("no-store"),
    );
    Ok(response)
}

/// The panel's form that links an identity to the account (or moves it
/// from another one).
#[derive(Deserialize)]
pub(crate) struct LinkForm {
    #[serde(default)]
    source: String,
    #[serde(default)]
    external_id: String,
    /// `on`: take the identity from the account that has it.
    #[serde(default)]
    take_over: Option<String>,
}

/// The user page after a link change: its notice, or the refusal above
/// the form (422).
async fn after_link_change(
    app: &App,
    viewer: &Viewer,
    subject: User,
    done: Result<String, crate::identity::Error>,
) -> Result<Response, WebError> {
    match done {
        Ok(notice) => {
            let shown = Shown {
                notice: Some(notice),
                ..Default::default()
            };
            user_page(app, viewer, subject, StatusCode::OK, shown).await
        }
        Err(e @ (crate::identity::Error::Refused(_) | crate::identity::Error::UnknownSource)) => {
            let shown = Shown {
                error: Some(e.to_string()),
                ..Default::default()
            };
            user_page(
                app,
                viewer,
                subject,
                StatusCode::UNPROCESSABLE_ENTITY,
                shown,
            )
            .await
        }
        Err(e) => Err(WebError::internal(e)),
    }
}

/// `POST /admin/users/{id}/links`: links an external identity to the
/// account, as `postern admin user link` does.
pub(crate) async fn link(
    State(app): State<App>,
    Path(id): Path<i64>,
    Posted { viewer, form }: Posted<LinkForm>,
) -> Result<Response, WebError> {
    use crate::identity::links::{self, Linked};
    admin_only(&viewer)?;
    let subject = subject(&app, &viewer, id).await?;
    let done = links::link(
        &app,
        &subject,
        &form.source,
        &form.external_id,
        form.take_over.is_some(),
    )
    .await
    .map(|linked| match linked {
        Linked::Moved(from) => format!("The identity was moved from {from} to this account."),
        Linked::New | Linked::Unchanged => "The identity is linked to this account.".into(),
    });
    after_link_change(&app, &viewer, subject, done).await
}

/// The panel's Unlink button: which source.
#[derive(Deserialize)]
pub(crate) struct UnlinkForm {
    #[serde(default)]
    source: String,
}

/// `POST /admin/users/{id}/unlink`: removes the account's link to a
/// source, as `postern admin user unlink` does.
pub(crate) async fn unlink(
    State(app): State<App>,
    Path(id): Path<i64>,
    Posted { viewer, form }: Posted<UnlinkForm>,
) -> Result<Response, WebError> {
    admin_only(&viewer)?;
    let subject = subject(&app, &viewer, id).await?;
    let done = crate::identity::links::unlink(&app, &subject, &form.source)
        .await
        .map(|()| format!("The link to {} was removed.", form.source));
    after_link_change(&app, &viewer, subject, done).await
}
