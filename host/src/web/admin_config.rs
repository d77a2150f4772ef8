//! Admin panel › Configuration: every key with its value in force and
//! where it came from (default, ini, environment, panel), secrets masked;
//! the run-time keys can be changed here unless the ini file or the
//! environment sets them (locked); and the audit of changes.

use askama::Template;
use axum::extract::State;
use axum::http::StatusCode;
use axum::response::{IntoResponse, Redirect, Response};
use serde::Deserialize;

use super::admin::admin_only;
use super::{Viewer, WebError, Who, render, when};
use crate::config::schema;
use crate::settings::{self, Entry};
use crate::state::App;
use crate::web::Posted;

/// How many audit entries the page shows.
const AUDIT_SHOWN: i64 = 50;

struct Row {
    entry: Entry,
    /// A boolean key gets a true/false choice rather than a text field.
    boolean: bool,
}

impl Row {
    /// The element id of the key's row and form: `service-DISABLE_REGISTRATION`.
    fn id(&self) -> String {
        format!(
            "{}-{}",
            self.entry.section.replace('.', "_"),
            self.entry.key
        )
    }
}

struct AuditLine {
    at: String,
    actor: String,
    key: String,
    old: String,
    new: String,
}

#[derive(Template)]
#[template(path = "admin_config.html")]
struct ConfigPage {
    user: Option<Who>,
    csrf: String,
    error: Option<String>,
    file: String,
    /// `(section, rows)` in the schema's order.
    sections: Vec<(String, Vec<Row>)>,
    audit: Vec<AuditLine>,
}

async fn page(
    app: &App,
    viewer: &Viewer,
    status: StatusCode,
    error: Option<String>,
) -> Result<Response, WebError> {
    let config = app.config();
    let mut sections: Vec<(String, Vec<Row>)> = Vec::new();
    for entry in settings::entries(&config) {
        let boolean = schema::SectionPattern::classify(&entry.section)
            .and_then(|(p, _)| schema::key_spec(p.schema_name(), &entry.key))
            .is_some_and(|s| matches!(s.kind, schema::Kind::Bool));
        let row = Row { entry, boolean };
        match sections.last_mut() {
            Some((name, rows)) if *name == row.entry.section => rows.push(row),
            _ => sections.push((row.entry.section.clone(), vec![row])),
        }
    }
    let audit = settings::audit(&app.db, AUDIT_SHOWN)
        .await
        .map_err(WebError::internal)?
        .into_iter()
        .map(|c| AuditLine {
            at: when(c.at),
            actor: c.actor,
            key: c.key,
            old: c.old.unwrap_or_else(|| "(default)".into()),
            new: c.new.unwrap_or_else(|| "(default)".into()),
        })
        .collect();
    let (csrf, jar) = viewer.csrf(app);
    let page = ConfigPage {
        user: viewer.who(),
        csrf,
        error,
        file: config
            .file
            .as_ref()
            .map(|p| p.display().to_string())
            .unwrap_or_else(|| "none".into()),
        sections,
        audit,
    };
    Ok((jar, render(status, page)?).into_response())
}

/// `GET /admin/config`.
pub(crate) async fn show(State(app): State<App>, viewer: Viewer) -> Result<Response, WebError> {
    admin_only(&viewer)?;
    page(&app, &viewer, StatusCode::OK, None).await
}

#[derive(Deserialize)]
pub(crate) struct SetForm {
    #[serde(default)]
    section: String,
    #[serde(default)]
    key: String,
    #[serde(default)]
    value: String,
    /// Present when "Back to default" was pressed.
    #[serde(default)]
    reset: Option<String>,
}

/// `POST /admin/config`: changes one run-time key, or puts it back to its
/// default; in force at once, audited under the administrator's login.
pub(crate) async fn set(
    State(app): State<App>,
    Posted { viewer, form }: Posted<SetForm>,
) -> Result<Response, WebError> {
    super::admin::admin_only(&viewer)?;
    let actor = viewer.signed_in()?.actor();
    let value = form.reset.is_none().then_some(form.value.as_str());
    match settings::set(&app, &actor, &form.section, &form.key, value).await {
        Ok(_) => Ok(Redirect::to("/admin/config").into_response()),
        Err(settings::Error::Db(e)) => Err(e.into()),
        Err(e) => {
            let status = match e {
                settings::Error::Invalid(_) => StatusCode::UNPROCESSABLE_ENTITY,
                settings::Error::Unknown(..) => StatusCode::NOT_FOUND,
                _ => StatusCode::CONFLICT,
            };
            page(&app, &viewer, status, Some(e.to_string())).await
        }
    }
}
