//! The stored rules of a repository (`branch_protections`), and the
//! `branch_protection.changed` event each change emits.

use sqlx::Row;
use sqlx::any::AnyRow;

use crate::audit::Actor;
use crate::db::{Db, now};
use crate::protection::rule::{Error, Protection, Result, Rule, validate};
use crate::webhooks;

fn from_row(r: &AnyRow) -> std::result::Result<Protection, sqlx::Error> {
    let text: String = r.try_get(2)?;
    Ok(Protection {
        id: r.try_get(0)?,
        repo_id: r.try_get(1)?,
        rule: serde_json::from_str(&text).map_err(|e| sqlx::Error::Decode(Box::new(e)))?,
        created: r.try_get(3)?,
        updated: r.try_get(4)?,
    })
}

pub async fn create(db: &Db, repo_id: i64, rule: &Rule, actor: &Actor) -> Result<Protection> {
    validate(rule)?;
    if find(db, repo_id, &rule.rule_name).await?.is_some() {
        return Err(Error::Duplicate(rule.rule_name.clone()));
    }
    let t = now();
    let mut tx = db.begin().await?;
    let row = sqlx::query(
        "INSERT INTO branch_protections (repo_id, rule_name, rule, created, updated) VALUES ($1, $2, $3, $4, $5) \
         RETURNING id, repo_id, rule, created, updated",
    )
    .bind(repo_id)
    .bind(&rule.rule_name)
    .bind(serde_json::to_string(rule).expect("a rule serialises"))
    .bind(t)
    .bind(t)
    .fetch_one(&mut *tx)
    .await?;
    webhooks::emit(
        &mut tx,
        changed(repo_id, "created", &rule.rule_name, Some(rule)),
    )
    .await?;
    let details = serde_json::json!({"new": rule});
    audited(&mut tx, actor, "repo.protection.created", repo_id, details).await?;
    tx.commit().await?;
    Ok(from_row(&row)?)
}

/// The `branch_protection.changed` event.
fn changed(repo_id: i64, action: &str, rule_name: &str, rule: Option<&Rule>) -> webhooks::Event {
    webhooks::Event {
        event_type: "branch_protection.changed",
        data: serde_json::json!({
            "repository_id": repo_id.to_string(),
            "action": action,
            "rule_name": rule_name,
            "rule": rule,
        }),
        repo_id: Some(repo_id),
        org_id: None,
        branch: None,
    }
}

pub async fn list(db: &Db, repo_id: i64) -> Result<Vec<Protection>> {
    let rows = sqlx::query(
        "SELECT id, repo_id, rule, created, updated FROM branch_protections WHERE repo_id = $1 ORDER BY id",
    )
    .bind(repo_id)
    .fetch_all(db.pool())
    .await?;
    Ok(rows
        .iter()
        .map(from_row)
        .collect::<std::result::Result<Vec<_>, _>>()?)
}

pub async fn find(db: &Db, repo_id: i64, name: &str) -> Result<Option<Protection>> {
    let row = sqlx::query(
        "SELECT id, repo_id, rule, created, updated FROM branch_protections WHERE repo_id = $1 AND rule_name = $2",
    )
    .bind(repo_id)
    .bind(name)
    .fetch_optional(db.pool())
    .await?;
    Ok(row.as_ref().map(from_row).transpose()?)
}

/// The audit row of a change to a rule, in its transaction.
async fn audited(
    tx: &mut sqlx::Transaction<'_, sqlx::Any>,
    actor: &Actor,
    action: &'static str,
    repo_id: i64,
    details: serde_json::Value,
) -> Result<()> {
    Ok(crate::repos::audit_change(tx, actor, action, repo_id, details).await?)
}

/// Replaces a rule's settings (its name stays).
pub async fn update(
    db: &Db,
    existing: &Protection,
    rule: &Rule,
    actor: &Actor,
) -> Result<Protection> {
    validate(rule)?;
    let mut tx = db.begin().await?;
    sqlx::query("UPDATE branch_protections SET rule = $1, updated = $2 WHERE id = $3")
        .bind(serde_json::to_string(rule).expect("a rule serialises"))
        .bind(now())
        .bind(existing.id)
        .execute(&mut *tx)
        .await?;
    let event = changed(
        existing.repo_id,
        "updated",
        &existing.rule.rule_name,
        Some(rule),
    );
    webhooks::emit(&mut tx, event).await?;
    let details = serde_json::json!({"old": existing.rule, "new": rule});
    audited(
        &mut tx,
        actor,
        "repo.protection.changed",
        existing.repo_id,
        details,
    )
    .await?;
    tx.commit().await?;
    Ok(find(db, existing.repo_id, &existing.rule.rule_name)
        .await?
        .expect("the rule was just updated"))
}

pub async fn delete(db: &Db, repo_id: i64, name: &str, actor: &Actor) -> Result<bool> {
    let mut tx = db.begin().await?;
    let done = sqlx::query("DELETE FROM branch_protections WHERE repo_id = $1 AND rule_name = $2")
        .bind(repo_id)
        .bind(name)
        .execute(&mut *tx)
        .await?;
    if done.rows_affected() > 0 {
        webhooks::emit(&mut tx, changed(repo_id, "deleted", name, None)).await?;
        let details = serde_json::json!({"rule_name": name});
        audited(&mut tx, actor, "repo.protection.deleted", repo_id, details).await?;
    }
    tx.commit().await?;
    Ok(done.rows_affected() > 0)
}
