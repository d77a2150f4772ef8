//! `AUTO_CREATE_ORG`: the organizations a source names, made for it, and
//! their Members teams kept in step with the source.

use std::collections::HashSet;

use sqlx::Row;

use crate::plugins::Plugin;
use crate::state::App;
use crate::users::User;

/// The team of an organization made by `AUTO_CREATE_ORG` that holds the
/// directory's members (read access to every repository).
const MEMBERS_TEAM: &str = "Members";

/// `AUTO_CREATE_ORG`: makes the organizations the source names (with an
/// empty Owners team and a Members team), puts the user in the Members team
/// of each, and takes them out of those of the source's organizations it no
/// longer names. Organizations the source did not make are never touched.
pub(super) async fn sync_orgs(
    app: &App,
    source: &Plugin,
    user: &User,
    wanted: &[String],
) -> anyhow::Result<bool> {
    use crate::orgs;
    let ours = |org_id: i64| async move {
        let row = sqlx::query("SELECT 1 FROM source_orgs WHERE source = $1 AND org_id = $2")
            .bind(source.id.to_string())
            .bind(org_id)
            .fetch_optional(app.db.pool())
            .await?;
        anyhow::Ok(row.is_some())
    };
    let mut changed = false;
    let mut keep: HashSet<i64> = HashSet::new();
    for name in wanted {
        let org = match orgs::find(&app.db, name).await? {
            Some(org) => {
                if !ours(org.id).await? {
                    tracing::warn!(source = %source.id, "AUTO_CREATE_ORG: {name:?} exists and was not made by this source; left alone");
                    continue;
                }
                org
            }
            None => match orgs::create_unowned(&app.db, name, name).await {
                Ok((org, _)) => {
                    orgs::create_team(
                        &app.db,
                        org.id,
                        MEMBERS_TEAM,
                        "Members from the directory",
                        crate::access::Level::Read,
                        true,
                    )
                    .await?;
                    sqlx::query("INSERT INTO source_orgs (source, org_id) VALUES ($1, $2)")
                        .bind(source.id.to_string())
                        .bind(org.id)
                        .execute(app.db.pool())
                        .await?;
                    tracing::info!(source = %source.id, "AUTO_CREATE_ORG: created the organization {name:?}");
                    org
                }
                Err(e) => {
                    tracing::warn!(source = %source.id, "AUTO_CREATE_ORG: cannot create {name:?}: {e}");
                    continue;
                }
            },
        };
        keep.insert(org.id);
        let teams = orgs::teams(&app.db, org.id).await?;
        if let Some(team) = teams.iter().find(|t| t.name == MEMBERS_TEAM)
            && !orgs::members(&app.db, team.id)
                .await?
                .iter()
                .any(|m| m.eq_ignore_ascii_case(&user.login))
        {
            orgs::add_member(&app.db, team.id, user.id, None).await?;
            changed = true;
        }
    }
    let rows = sqlx::query("SELECT org_id FROM source_orgs WHERE source = $1")
        .bind(source.id.to_string())
        .fetch_all(app.db.pool())
        .await?;
    for r in rows {
        let org_id: i64 = r.try_get(0)?;
        if keep.contains(&org_id) {
            continue;
        }
        for team in orgs::teams(&app.db, org_id).await? {
            if team.name == MEMBERS_TEAM
                && orgs::members(&app.db, team.id)
                    .await?
                    .iter()
                    .any(|m| m.eq_ignore_ascii_case(&user.login))
            {
                orgs::remove_member(&app.db, &team, user.id, None).await?;
                changed = true;
            }
        }
    }
    Ok(changed)
}
