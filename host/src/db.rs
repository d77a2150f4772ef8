//! The database: SQLite by default, PostgreSQL when configured.
//!
//! Queries are written once, in the SQL both backends share (`$1`
//! placeholders, `ON CONFLICT … DO UPDATE`, `RETURNING`), and run through
//! sqlx's `Any` driver. Each backend has its own migrations, with the same
//! schema, applied at start.

pub mod beacon;
pub mod cursor;
pub mod verified;

use std::collections::BTreeMap;
use std::time::{SystemTime, UNIX_EPOCH};

use sqlx::AnyConnection;
use sqlx::any::{AnyPoolOptions, install_default_drivers};
use sqlx::{AnyPool, Row};

use crate::config::{self, DbType};

/// Why a database operation failed. The text is for logs; API answers never
/// echo it.
#[derive(Debug, thiserror::Error)]
pub enum Error {
    #[error("cannot open the database ({url}): {source}")]
    Connect { url: String, source: sqlx::Error },
    #[error("cannot create the data directory {path}: {source}")]
    DataDir {
        path: String,
        source: std::io::Error,
    },
    #[error("database migration failed: {0}")]
    Migrate(#[from] sqlx::migrate::MigrateError),
    #[error("database error: {0}")]
    Query(#[from] sqlx::Error),
}

pub type Result<T> = std::result::Result<T, Error>;

static SQLITE_MIGRATIONS: sqlx::migrate::Migrator = sqlx::migrate!("../migrations/sqlite");
static POSTGRES_MIGRATIONS: sqlx::migrate::Migrator = sqlx::migrate!("../migrations/postgres");

/// A handle on the pool; cheap to clone.
#[derive(Clone)]
pub struct Db {
    pool: AnyPool,
    backend: DbType,
    /// PostgreSQL's URL, for the connection that listens for other hosts'
    /// changes (`cluster::listen`), which is not one of the pool's.
    postgres_url: Option<std::sync::Arc<str>>,
    /// SQLite's file, for readers that walk a whole table in process
    /// (`audit::verify`).
    sqlite_path: Option<std::sync::Arc<std::path::Path>>,
    /// Credentials verified lately, and the revocations that void them.
    verified: std::sync::Arc<verified::Verified>,
}

/// Seconds since the Unix epoch, UTC.
pub fn now() -> i64 {
    SystemTime::now()
        .duration_since(UNIX_EPOCH)
        .map(|d| d.as_secs() as i64)
        .unwrap_or(0)
}

/// `unix` seconds in RFC 3339, UTC: how the API and SCIM write times.
pub fn rfc3339(unix: i64) -> String {
    time::OffsetDateTime::from_unix_timestamp(unix)
        .ok()
        .and_then(|t| {
            t.format(&time::format_description::well_known::Rfc3339)
                .ok()
        })
        .unwrap_or_default()
}

impl Db {
    /// Opens the configured database and applies the pending migrations.
    pub async fn connect(cfg: &config::Database) -> Result<Db> {
        /// How long a PostgreSQL connection may sit idle before it is pinged
        /// on its way out of the pool.
        const IDLE_BEFORE_PING: std::time::Duration = std::time::Duration::from_secs(30);
        install_default_drivers();
        if cfg.db_type == DbType::Sqlite
            && let Some(dir) = cfg.path.parent().filter(|d| !d.as_os_str().is_empty())
        {
            std::fs::create_dir_all(dir).map_err(|source| Error::DataDir {
                path: dir.display().to_string(),
                source,
            })?;
        }
        let url = cfg.url();
        let redacted = if cfg.passwd.is_empty() {
            url.clone()
        } else {
            url.replace(&cfg.passwd, "***")
        };
        let sqlite = cfg.db_type == DbType::Sqlite;
        let pool = AnyPoolOptions::new()
            .max_connections(if sqlite { 4 } else { 16 })
            // sqlx pings every connection it hands out by default: one more
            // round trip per query (to SQLite's worker thread, or over the
            // network to PostgreSQL), which doubled the cost of a token call.
            // A file cannot hang up; a server connection is pinged only
            // after it sat idle, when a restart or a firewall may have cut
            // it. One cut while in steady use fails its next query, which
            // drops it from the pool.
            .test_before_acquire(false)
            .before_acquire(move |conn, meta| {
                Box::pin(async move {
                    if !sqlite && meta.idle_for >= IDLE_BEFORE_PING {
                        sqlx::Connection::ping(conn).await?;
                    }
                    Ok(true)
                })
            })
            .connect(&url)
            .await
            .map_err(|source| Error::Connect {
                url: redacted,
                source,
            })?;
        let db = Db {
            pool,
            backend: cfg.db_type.clone(),
            postgres_url: (cfg.db_type == DbType::Postgres).then(|| url.as_str().into()),
            sqlite_path: (cfg.db_type == DbType::Sqlite).then(|| cfg.path.as_path().into()),
            verified: std::sync::Arc::new(verified::Verified::new(
                (cfg.db_type == DbType::Sqlite).then_some(cfg.path.as_path()),
            )),
        };
        if db.backend == DbType::Sqlite {
            // WAL lets readers and the one writer proceed together.
            sqlx::query("PRAGMA journal_mode = WAL")
                .execute(&db.pool)
                .await?;
        }
        match db.backend {
            DbType::Sqlite => SQLITE_MIGRATIONS.run(&db.pool).await?,
            DbType::Postgres => POSTGRES_MIGRATIONS.run(&db.pool).await?,
        }
        Ok(db)
    }

    pub fn pool(&self) -> &AnyPool {
        &self.pool
    }

    /// The SQLite database's file; `None` on PostgreSQL.
    pub fn sqlite_path(&self) -> Option<&std::path::Path> {
        self.sqlite_path.as_deref()
    }

    /// Begins a transaction that writes. On SQLite it takes the write lock
    /// at once (`BEGIN IMMEDIATE`): a transaction that reads first and
    /// writes later would otherwise fail with "database is locked" when
    /// another writer came in between, instead of waiting its turn.
    pub async fn begin(&self) -> sqlx::Result<sqlx::Transaction<'static, sqlx::Any>> {
        match self.backend {
            DbType::Sqlite => self.pool.begin_with("BEGIN IMMEDIATE").await,
            DbType::Postgres => self.pool.begin().await,
        }
    }

    /// The credentials verified lately (`tokens`, `sessions`, OAuth
    /// access tokens), and the revocations that void them.
    pub fn verified(&self) -> &verified::Verified {
        &self.verified
    }

    pub fn backend(&self) -> &DbType {
        &self.backend
    }

    /// The PostgreSQL server's URL; `None` on SQLite.
    pub fn postgres_url(&self) -> Option<&str> {
        self.postgres_url.as_deref()
    }

    pub async fn kv_get(&self, plugin: &str, key: &str) -> Result<Option<Vec<u8>>> {
        let row = sqlx::query("SELECT value FROM plugin_kv WHERE plugin = $1 AND key = $2")
            .bind(plugin)
            .bind(key)
            .fetch_optional(&self.pool)
            .await?;
        Ok(row.map(|r| r.get::<Vec<u8>, _>(0)))
    }

    pub async fn kv_set(&self, plugin: &str, key: &str, value: &[u8]) -> Result<()> {
        sqlx::query(
            "INSERT INTO plugin_kv (plugin, key, value, updated) VALUES ($1, $2, $3, $4) \
             ON CONFLICT (plugin, key) DO UPDATE SET value = excluded.value, updated = excluded.updated",
        )
        .bind(plugin)
        .bind(key)
        .bind(value.to_vec())
        .bind(now())
        .execute(&self.pool)
        .await?;
        Ok(())
    }

    pub async fn kv_delete(&self, plugin: &str, key: &str) -> Result<()> {
        sqlx::query("DELETE FROM plugin_kv WHERE plugin = $1 AND key = $2")
            .bind(plugin)
            .bind(key)
            .execute(&self.pool)
            .await?;
        Ok(())
    }

    /// Adds counts to a plugin's recorded totals. Adding, not setting, so
    /// that several hosts sharing one database sum correctly.
    pub async fn plugin_status_add(
        &self,
        plugin: &str,
        counts: PluginCounts,
        last_error: Option<&str>,
    ) -> Result<()> {
        sqlx::query(
            "INSERT INTO plugin_status (plugin, calls, traps, http_refusals, last_error, updated) VALUES ($1, $2, $3, $4, $5, $6) \
             ON CONFLICT (plugin) DO UPDATE SET calls = plugin_status.calls + excluded.calls, \
             traps = plugin_status.traps + excluded.traps, \
             http_refusals = plugin_status.http_refusals + excluded.http_refusals, \
             last_error = COALESCE(excluded.last_error, plugin_status.last_error), updated = excluded.updated",
        )
        .bind(plugin)
        .bind(counts.calls as i64)
        .bind(counts.traps as i64)
        .bind(counts.http_refusals as i64)
        .bind(last_error.map(str::to_string))
        .bind(now())
        .execute(&self.pool)
        .await?;
        Ok(())
    }

    /// The stored run-time settings, `(section, KEY) → value`. The
    /// `settings` domain module writes them; the application state reads
    /// them at open, under the ini file and the environment.
    pub async fn stored_settings(&self) -> Result<BTreeMap<(String, String), String>> {
        let rows = sqlx::query("SELECT key, value FROM settings")
            .fetch_all(&self.pool)
            .await?;
        let mut out = BTreeMap::new();
        for row in rows {
            let key: String = row.try_get(0)?;
            if let Some((section, name)) = key.rsplit_once('.') {
                out.insert((section.to_string(), name.to_string()), row.try_get(1)?);
            }
        }
        Ok(out)
    }

    /// Records an identity source defined in the configuration, so that it
    /// has a stable numeric id (the API's `source_id`).
    pub async fn register_source(&self, name: &str, plugin: &str) -> Result<()> {
        let t = now();
        sqlx::query(
            "INSERT INTO sources (name, plugin, settings, is_active, created, updated) VALUES ($1, $2, '{}', 1, $3, $4) \
             ON CONFLICT (name) DO NOTHING",
        )
        .bind(name)
        .bind(plugin)
        .bind(t)
        .bind(t)
        .execute(&self.pool)
        .await?;
        Ok(())
    }

    /// The numeric id of a source, by name.
    pub async fn source_id(&self, name: &str) -> Result<Option<i64>> {
        let row = sqlx::query("SELECT id FROM sources WHERE name = $1")
            .bind(name)
            .fetch_optional(&self.pool)
            .await?;
        Ok(row.map(|r| r.get::<i64, _>(0)))
    }

    /// A source's name, by its numeric id.
    pub async fn source_name(&self, id: i64) -> Result<Option<String>> {
        let row = sqlx::query("SELECT name FROM sources WHERE id = $1")
            .bind(id)
            .fetch_optional(&self.pool)
            .await?;
        Ok(row.map(|r| r.get::<String, _>(0)))
    }

    /// Recorded totals of a plugin, and its last error.
    pub async fn plugin_status(&self, plugin: &str) -> Result<(PluginCounts, Option<String>)> {
        let row = sqlx::query(
            "SELECT calls, traps, http_refusals, last_error FROM plugin_status WHERE plugin = $1",
        )
        .bind(plugin)
        .fetch_optional(&self.pool)
        .await?;
        Ok(row
            .map(|r| {
                (
                    PluginCounts {
                        calls: r.get::<i64, _>(0) as u64,
                        traps: r.get::<i64, _>(1) as u64,
                        http_refusals: r.get::<i64, _>(2) as u64,
                    },
                    r.get::<Option<String>, _>(3),
                )
            })
            .unwrap_or_default())
    }
}

/// What is counted per plugin: calls, failed calls (traps), and requests
/// through `http` the host refused.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq)]
pub struct PluginCounts {
    pub calls: u64,
    pub traps: u64,
    pub http_refusals: u64,
}

/// `columns` (`"id, name"`) under a table alias: `"t.id, t.name"`, for a
/// query that joins tables.
pub fn qualified(columns: &str, alias: &str) -> String {
    columns
        .split(", ")
        .map(|c| format!("{alias}.{c}"))
        .collect::<Vec<_>>()
        .join(", ")
}

/// The placeholders of a multi-row `VALUES`: `($1, $2), ($3, $4)` for two
/// rows of two columns on PostgreSQL, `(?, ?), (?, ?)` on SQLite (`conn`
/// tells which). SQLite keeps a numbered name such as `$3` in a list that
/// sqlx searches once per parameter, so a statement of n numbered
/// parameters costs n² to bind; a plain `?` has no name to search. The
/// arguments are bound in order either way.
pub fn row_placeholders(conn: &AnyConnection, rows: usize, columns: usize) -> String {
    placeholders(!is_sqlite(conn), rows, columns)
}

fn placeholders(numbered: bool, rows: usize, columns: usize) -> String {
    (0..rows)
        .map(|row| {
            let marks: Vec<String> = (1..=columns)
                .map(|c| {
                    if numbered {
                        format!("${}", row * columns + c)
                    } else {
                        "?".to_string()
                    }
                })
                .collect();
            format!("({})", marks.join(", "))
        })
        .collect::<Vec<_>>()
        .join(", ")
}

/// Whether `conn` is an SQLite connection.
pub fn is_sqlite(conn: &AnyConnection) -> bool {
    conn.backend_name() == "SQLite"
}

#[cfg(test)]
mod tests {
    #[test]
    fn placeholders_number_row_by_row_or_stay_plain() {
        assert_eq!(super::placeholders(true, 2, 2), "($1, $2), ($3, $4)");
        assert_eq!(super::placeholders(true, 1, 3), "($1, $2, $3)");
        assert_eq!(super::placeholders(false, 2, 2), "(?, ?), (?, ?)");
    }

    #[test]
    fn qualified_prefixes_every_column() {
        assert_eq!(super::qualified("id, name", "t"), "t.id, t.name");
    }
}
