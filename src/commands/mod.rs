//! The subcommands of the `tidings` binary.

pub mod backup;
pub mod bench;
pub mod bench_api;
pub mod bench_mix;
pub mod bench_parse;
pub mod bench_search;
pub mod bench_soak;
pub mod discover;
pub mod feed;
pub mod migrate;
pub mod opml;
pub mod refresh;
pub mod reparse;
pub mod resume;
pub mod serve;
pub mod soak_farm;
pub mod user;
pub mod worker;

use anyhow::Context;
use tidings_store::{SchemaStatus, Store, StoreError, StoreOptions};

use crate::config::GlobalConfig;

/// Opens the configured database, creating it when it is a new SQLite file, and applies
/// pending migrations: what `serve` and the benchmarks do first.
pub async fn open_store(config: &GlobalConfig) -> anyhow::Result<Store> {
    let store = connect_store(config).await?;
    migrate(store).await
}

/// [`open_store`] for a bulk load (`tidings bench generate`): its statements are slow by
/// design and megabytes long, so they are not logged as slow statements.
pub async fn open_store_for_bulk_load(config: &GlobalConfig) -> anyhow::Result<Store> {
    let mut options = StoreOptions::new(&config.database_url);
    options.max_connections = config.database_max_connections;
    options.warn_on_slow_statements = false;
    migrate(Store::connect(&options).await?).await
}

/// Opens a database that must exist already (every command but `serve`, `migrate` and the
/// benchmarks) and applies pending migrations. Run in the wrong folder, a command would
/// otherwise create an empty `tidings.db` and report that nothing is there.
pub async fn open_existing_store(config: &GlobalConfig) -> anyhow::Result<Store> {
    let store = connect_existing_store(config).await?;
    migrate(store).await
}

/// Opens a database that must exist already, without migrating: a missing SQLite file, or one
/// that holds no tidings schema, is an error that says which file was looked for and how to
/// point at the right one.
pub async fn connect_existing_store(config: &GlobalConfig) -> anyhow::Result<Store> {
    let mut options = StoreOptions::new(&config.database_url);
    options.max_connections = config.database_max_connections;
    options.acquire_timeout = config.database_acquire_timeout;
    options.create_if_missing = false;
    let store = match Store::connect(&options).await {
        Ok(store) => store,
        Err(StoreError::NoDatabase { path }) => {
            return Err(NoDatabase {
                path,
                url: config.database_url.clone(),
                empty: false,
            }
            .into());
        }
        Err(error) => return Err(error.into()),
    };
    if let Some(path) = store.sqlite_path().map(std::path::Path::to_path_buf) {
        let version = match store.schema_status().await? {
            SchemaStatus::Current { version }
            | SchemaStatus::Behind { version, .. }
            | SchemaStatus::Ahead { version, .. } => version,
        };
        if version == 0 {
            store.close().await;
            let path = std::env::current_dir()
                .map(|dir| dir.join(&path))
                .unwrap_or(path);
            return Err(NoDatabase {
                path,
                url: config.database_url.clone(),
                empty: true,
            }
            .into());
        }
    }
    Ok(store)
}

/// A command that needs an existing database found none where it looked.
#[derive(Debug)]
pub struct NoDatabase {
    /// The file looked for, absolute.
    pub path: std::path::PathBuf,
    /// The database URL it came from.
    pub url: String,
    /// Whether the file exists but holds no tidings data.
    pub empty: bool,
}

impl std::fmt::Display for NoDatabase {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        let what = if self.empty {
            "holds no tidings data"
        } else {
            "does not exist"
        };
        write!(
            f,
            "no tidings database: {} {what} (from TIDINGS_DATABASE_URL or --database-url: {}; a \
             relative path is read from the current folder). Point at your database with \
             --database-url sqlite:///full/path/to/tidings.db or TIDINGS_DATABASE_URL; \
             `tidings serve` or `tidings migrate` creates a new one",
            self.path.display(),
            tidings_store::redact_url(&self.url),
        )
    }
}

impl std::error::Error for NoDatabase {}

async fn migrate(store: Store) -> anyhow::Result<Store> {
    let applied = store
        .migrate()
        .await
        .context("the database could not be migrated")?;
    if !applied.is_empty() {
        tracing::info!(?applied, "database migrated");
    }
    Ok(store)
}

/// The database as the start-up log names it: a SQLite file by its absolute path, a PostgreSQL
/// URL without its password.
pub fn describe_database(config: &GlobalConfig, store: &Store) -> String {
    match store.sqlite_path() {
        Some(path) => {
            let path = std::env::current_dir()
                .map(|dir| dir.join(path))
                .unwrap_or_else(|_| path.to_path_buf());
            format!("sqlite://{}", path.display())
        }
        None => tidings_store::redact_url(&config.database_url),
    }
}

/// Opens the configured database without migrating.
pub async fn connect_store(config: &GlobalConfig) -> anyhow::Result<Store> {
    let mut options = StoreOptions::new(&config.database_url);
    options.max_connections = config.database_max_connections;
    options.acquire_timeout = config.database_acquire_timeout;
    Ok(Store::connect(&options).await?)
}
