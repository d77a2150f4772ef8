//! The identity sources an administrator stored in the database rather than
//! the ini file: directory sources (`[source.<n>]`, the `directory_sources`
//! table) and redirect sources (OAuth 2.0, OpenID Connect and SAML,
//! `[source.oauth2_<name>]`, the `oauth2_sources` table).
//!
//! One store for both: a section's keys as JSON, and its one secret (a bind
//! password, a client secret) sealed apart with the instance key, in a slot
//! of its own source, so that a secret sealed for one source never opens as
//! another's. A leaf over `db` and `secrets`: the plugin runtime reads it
//! when it loads the sources, and the domain writes it when an administrator
//! adds, changes or removes one.

use std::collections::BTreeMap;
use std::fmt::Display;

use sqlx::Row;
use sqlx::any::{Any, AnyArguments, AnyRow};
use sqlx::query::Query;

use crate::db::{Db, now};
use crate::secrets::InstanceKey;

type Result<T> = std::result::Result<T, String>;

/// What names a stored source in its table: a directory source's number, a
/// redirect source's name.
pub trait SourceId: Display {
    fn bind<'q>(&self, query: Query<'q, Any, AnyArguments<'q>>)
    -> Query<'q, Any, AnyArguments<'q>>;
}

/// A [`SourceId`] as `stored` reads it back.
pub trait ReadId: SourceId + Sized {
    fn read(row: &AnyRow) -> std::result::Result<Self, sqlx::Error>;
}

impl SourceId for u32 {
    fn bind<'q>(
        &self,
        query: Query<'q, Any, AnyArguments<'q>>,
    ) -> Query<'q, Any, AnyArguments<'q>> {
        query.bind(i64::from(*self))
    }
}

impl ReadId for u32 {
    fn read(row: &AnyRow) -> std::result::Result<Self, sqlx::Error> {
        let number: i64 = row.try_get(0)?;
        u32::try_from(number).map_err(|e| sqlx::Error::Decode(Box::new(e)))
    }
}

impl SourceId for str {
    fn bind<'q>(
        &self,
        query: Query<'q, Any, AnyArguments<'q>>,
    ) -> Query<'q, Any, AnyArguments<'q>> {
        query.bind(self.to_string())
    }
}

impl SourceId for String {
    fn bind<'q>(
        &self,
        query: Query<'q, Any, AnyArguments<'q>>,
    ) -> Query<'q, Any, AnyArguments<'q>> {
        self.as_str().bind(query)
    }
}

impl ReadId for String {
    fn read(row: &AnyRow) -> std::result::Result<Self, sqlx::Error> {
        row.try_get(0)
    }
}

/// One kind of stored source: its table and how its secret is kept.
pub struct Store {
    /// The table, and the column that names a source in it.
    table: &'static str,
    id_column: &'static str,
    /// The column holding the sealed secret, and the section key it is.
    secret_column: &'static str,
    secret_key: &'static str,
    /// The sealing slot is `<slot>/<id>/<slot_key>`.
    slot: &'static str,
    slot_key: &'static str,
    /// What the secret is, for the error when it does not open.
    secret_name: &'static str,
    /// The order `stored` lists them in.
    order: &'static str,
    /// How the section is named in errors: `source.<prefix><id>`.
    section_prefix: &'static str,
    /// A source without a secret (a public OAuth client) has no key at all,
    /// rather than an empty one.
    empty_secret_is_absent: bool,
}

/// Directory sources (`[source.<n>]`), by number; the secret is the bind
/// password.
pub const DIRECTORY: Store = Store {
    table: "directory_sources",
    id_column: "number",
    secret_column: "bind_password",
    secret_key: "USER_PASSWD",
    slot: "directory_source",
    slot_key: "USER_PASSWD",
    secret_name: "bind password",
    order: "number",
    section_prefix: "",
    empty_secret_is_absent: false,
};

/// Redirect sources (`[source.oauth2_<name>]`: OAuth 2.0, OpenID Connect,
/// SAML), by name, in the order they were added; the secret is the client
/// secret.
pub const REDIRECT: Store = Store {
    table: "oauth2_sources",
    id_column: "name",
    secret_column: "client_secret",
    secret_key: "CLIENT_SECRET",
    slot: "oauth2_source",
    slot_key: "client_secret",
    secret_name: "client secret",
    order: "created, name",
    section_prefix: "oauth2_",
    empty_secret_is_absent: true,
};

impl Store {
    fn slot(&self, id: &(impl Display + ?Sized)) -> String {
        format!("{}/{id}/{}", self.slot, self.slot_key)
    }

    /// The stored sources with their secrets opened: `(id, section keys)`.
    pub async fn stored<I: ReadId>(
        &self,
        db: &Db,
        key: &InstanceKey,
    ) -> Result<Vec<(I, BTreeMap<String, String>)>> {
        let rows = sqlx::query(&format!(
            "SELECT {}, settings, {} FROM {} ORDER BY {}",
            self.id_column, self.secret_column, self.table, self.order
        ))
        .fetch_all(db.pool())
        .await
        .map_err(|e| e.to_string())?;
        let mut out = Vec::new();
        for r in rows {
            let id = I::read(&r).map_err(|e| e.to_string())?;
            let settings: String = r.try_get(1).map_err(|e| e.to_string())?;
            let sealed: Vec<u8> = r.try_get(2).map_err(|e| e.to_string())?;
            let mut section: BTreeMap<String, String> =
                serde_json::from_str(&settings).map_err(|e| e.to_string())?;
            let secret = key.open(&self.slot(&id), &sealed).ok_or_else(|| {
                format!(
                    "the {} of source.{}{id} does not open with this instance's key",
                    self.secret_name, self.section_prefix
                )
            })?;
            let secret = String::from_utf8(secret).map_err(|e| e.to_string())?;
            if !(secret.is_empty() && self.empty_secret_is_absent) {
                section.insert(self.secret_key.into(), secret);
            }
            out.push((id, section));
        }
        Ok(out)
    }

    /// The keys without the secret, as the `settings` column holds them, and
    /// the secret sealed.
    fn split(
        &self,
        key: &InstanceKey,
        id: &(impl Display + ?Sized),
        section: &BTreeMap<String, String>,
    ) -> Result<(String, Vec<u8>)> {
        let mut settings = section.clone();
        let secret = settings.remove(self.secret_key).unwrap_or_default();
        let json = serde_json::to_string(&settings).map_err(|e| e.to_string())?;
        Ok((json, key.seal(&self.slot(id), secret.as_bytes())))
    }

    /// Stores a new source, its secret sealed.
    pub async fn store<I: SourceId + ?Sized>(
        &self,
        db: &Db,
        key: &InstanceKey,
        id: &I,
        section: &BTreeMap<String, String>,
    ) -> Result<()> {
        let (settings, sealed) = self.split(key, id, section)?;
        let sql = format!(
            "INSERT INTO {} ({}, settings, {}, created) VALUES ($1, $2, $3, $4)",
            self.table, self.id_column, self.secret_column
        );
        id.bind(sqlx::query(&sql))
            .bind(settings)
            .bind(sealed)
            .bind(now())
            .execute(db.pool())
            .await
            .map_err(|e| e.to_string())?;
        Ok(())
    }

    /// Replaces a stored source's keys (and secret) in one statement; false
    /// when there is no such source.
    pub async fn replace<I: SourceId + ?Sized>(
        &self,
        db: &Db,
        key: &InstanceKey,
        id: &I,
        section: &BTreeMap<String, String>,
    ) -> Result<bool> {
        let (settings, sealed) = self.split(key, id, section)?;
        let sql = format!(
            "UPDATE {} SET settings = $1, {} = $2 WHERE {} = $3",
            self.table, self.secret_column, self.id_column
        );
        let done = id
            .bind(sqlx::query(&sql).bind(settings).bind(sealed))
            .execute(db.pool())
            .await
            .map_err(|e| e.to_string())?;
        Ok(done.rows_affected() > 0)
    }

    /// Deletes a stored source; false when there was none.
    pub async fn delete<I: SourceId + ?Sized>(&self, db: &Db, id: &I) -> Result<bool> {
        let sql = format!("DELETE FROM {} WHERE {} = $1", self.table, self.id_column);
        let done = id
            .bind(sqlx::query(&sql))
            .execute(db.pool())
            .await
            .map_err(|e| e.to_string())?;
        Ok(done.rows_affected() > 0)
    }
}
