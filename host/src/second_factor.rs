//! Second factors. The factors themselves (TOTP, WebAuthn) arrive as
//! plugins; what is here already is the rule that a user with a factor
//! enrolled cannot use a password where no second step can be asked for
//! (git over HTTP, the API): they use a token instead.

use sqlx::Row;

use crate::db::{self, Db};

/// Whether the user has at least one second factor enrolled.
pub async fn enrolled(db: &Db, user_id: i64) -> db::Result<bool> {
    let row = sqlx::query("SELECT COUNT(*) FROM second_factors WHERE user_id = $1")
        .bind(user_id)
        .fetch_one(db.pool())
        .await?;
    Ok(row.try_get::<i64, _>(0)? > 0)
}
