//! The factors a user has enrolled: the host's `second_factors` rows.

use sqlx::Row;

use crate::db::{self, Db};
use crate::second_factor::Result;

/// Whether the user has at least one second factor enrolled.
pub async fn enrolled(db: &Db, user_id: i64) -> db::Result<bool> {
    let row = sqlx::query("SELECT COUNT(*) FROM second_factors WHERE user_id = $1")
        .bind(user_id)
        .fetch_one(db.pool())
        .await?;
    Ok(row.try_get::<i64, _>(0)? > 0)
}

pub(super) async fn has_kind(db: &Db, user_id: i64, kind: &str) -> db::Result<bool> {
    let row = sqlx::query("SELECT COUNT(*) FROM second_factors WHERE user_id = $1 AND kind = $2")
        .bind(user_id)
        .bind(kind)
        .fetch_one(db.pool())
        .await?;
    Ok(row.try_get::<i64, _>(0)? > 0)
}

/// One enrolled factor: a TOTP secret or a WebAuthn key.
#[derive(Debug, Clone, serde::Serialize, utoipa::ToSchema)]
pub struct Factor {
    pub id: i64,
    /// The plugin: `totp` or `webauthn`.
    pub kind: String,
    /// The name the user gave it ("authenticator app" for TOTP).
    pub name: String,
    /// Unix seconds.
    pub created: i64,
}

/// The factors a user has, oldest first.
pub async fn list(db: &Db, user_id: i64) -> Result<Vec<Factor>> {
    let rows = sqlx::query(
        "SELECT id, kind, name, created FROM second_factors WHERE user_id = $1 ORDER BY id",
    )
    .bind(user_id)
    .fetch_all(db.pool())
    .await?;
    rows.iter()
        .map(|r| {
            Ok(Factor {
                id: r.try_get(0)?,
                kind: r.try_get(1)?,
                name: r.try_get(2)?,
                created: r.try_get(3)?,
            })
        })
        .collect()
}
