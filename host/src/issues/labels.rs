//! A repository's labels: read, checked, created, changed and deleted.

use sqlx::Row;
use sqlx::any::AnyRow;

use super::{Error, Label, Result, delete_row};
use crate::db::Db;

pub(super) fn label_from_row(r: &AnyRow) -> sqlx::Result<Label> {
    label_from_row_at(r, 0)
}

/// A label from the five columns starting at `at`.
pub(super) fn label_from_row_at(r: &AnyRow, at: usize) -> sqlx::Result<Label> {
    Ok(Label {
        id: r.try_get(at)?,
        repo_id: r.try_get(at + 1)?,
        name: r.try_get(at + 2)?,
        color: r.try_get(at + 3)?,
        description: r.try_get(at + 4)?,
    })
}

/// A repository's labels, by name.
pub async fn labels(db: &Db, repo_id: i64) -> Result<Vec<Label>> {
    Ok(sqlx::query(
        "SELECT id, repo_id, name, color, description FROM issue_labels WHERE repo_id = $1 ORDER BY lower_name",
    )
    .bind(repo_id)
    .fetch_all(db.pool())
    .await?
    .iter()
    .map(label_from_row)
    .collect::<sqlx::Result<_>>()?)
}

pub(super) async fn labels_by_id(db: &Db, repo_id: i64, ids: &[i64]) -> Result<Vec<Label>> {
    Ok(labels(db, repo_id)
        .await?
        .into_iter()
        .filter(|l| ids.contains(&l.id))
        .collect())
}

/// Every id names a label of the repository.
pub(super) async fn check_labels(db: &Db, repo_id: i64, ids: &[i64]) -> Result<()> {
    let known = labels(db, repo_id).await?;
    for id in ids {
        if !known.iter().any(|l| l.id == *id) {
            return Err(Error::Invalid(format!(
                "labels: {id} is not a label of this repository"
            )));
        }
    }
    Ok(())
}

pub async fn find_label(db: &Db, repo_id: i64, id: i64) -> Result<Option<Label>> {
    Ok(labels(db, repo_id).await?.into_iter().find(|l| l.id == id))
}

/// `#rrggbb` or `rrggbb` → `rrggbb`, lower case.
pub(super) fn check_color(color: &str) -> Result<String> {
    let c = color.trim().trim_start_matches('#');
    if c.len() == 6 && c.chars().all(|ch| ch.is_ascii_hexdigit()) {
        Ok(c.to_ascii_lowercase())
    } else {
        Err(Error::Invalid(format!(
            "color: {color:?} is not a colour of six hex digits (#e11d21)"
        )))
    }
}

pub(super) fn check_label_name(name: &str) -> Result<&str> {
    let name = name.trim();
    if name.is_empty() || name.chars().count() > 50 {
        return Err(Error::Invalid("name must be 1 to 50 characters".into()));
    }
    Ok(name)
}

pub async fn create_label(
    db: &Db,
    repo_id: i64,
    name: &str,
    color: &str,
    description: &str,
) -> Result<Label> {
    let name = check_label_name(name)?;
    let color = check_color(color)?;
    if labels(db, repo_id)
        .await?
        .iter()
        .any(|l| l.name.eq_ignore_ascii_case(name))
    {
        return Err(Error::DuplicateLabel(name.to_string()));
    }
    let row = sqlx::query(
        "INSERT INTO issue_labels (repo_id, name, lower_name, color, description) VALUES ($1, $2, $3, $4, $5) \
         RETURNING id, repo_id, name, color, description",
    )
    .bind(repo_id)
    .bind(name)
    .bind(name.to_lowercase())
    .bind(&color)
    .bind(description)
    .fetch_one(db.pool())
    .await?;
    Ok(label_from_row(&row)?)
}

pub async fn edit_label(
    db: &Db,
    label: &Label,
    name: Option<&str>,
    color: Option<&str>,
    description: Option<&str>,
) -> Result<Label> {
    let name = match name {
        Some(n) => check_label_name(n)?.to_string(),
        None => label.name.clone(),
    };
    let color = match color {
        Some(c) => check_color(c)?,
        None => label.color.clone(),
    };
    if labels(db, label.repo_id)
        .await?
        .iter()
        .any(|l| l.id != label.id && l.name.eq_ignore_ascii_case(&name))
    {
        return Err(Error::DuplicateLabel(name));
    }
    let description = description.unwrap_or(&label.description);
    sqlx::query(
        "UPDATE issue_labels SET name = $1, lower_name = $2, color = $3, description = $4 WHERE id = $5",
    )
    .bind(&name)
    .bind(name.to_lowercase())
    .bind(&color)
    .bind(description)
    .bind(label.id)
    .execute(db.pool())
    .await?;
    Ok(Label {
        name,
        color,
        description: description.to_string(),
        ..label.clone()
    })
}

pub async fn delete_label(db: &Db, label: &Label) -> Result<()> {
    delete_row(db, "issue_labels", label.id).await
}
