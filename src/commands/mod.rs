//! The subcommands of the `tidings` binary.

pub mod backup;
pub mod daemon;
pub mod discover;
pub mod feed;
pub mod feed_settings;
pub mod import;
pub mod migrate;
pub mod opml;
pub mod refresh;
pub mod reparse;
pub mod resume;
pub mod rules;
pub mod serve;
pub mod serve_mail;
pub mod serve_oidc;
pub mod user;
pub mod worker;

use anyhow::Context;
use tidings_store::{SchemaStatus, Store, StoreError, StoreOptions};

use crate::config::GlobalConfig;

/// The subscription limit of `--max-subscriptions` (`TIDINGS_MAX_SUBSCRIPTIONS`), checked as
/// `serve` checks it, for the commands that subscribe a user (`opml import`, `import`).
pub fn max_subscriptions(text: &str) -> anyhow::Result<i64> {
    Ok(crate::config::check_number(
        text,
        1..=100_000,
        "TIDINGS_MAX_SUBSCRIPTIONS",
        "--max-subscriptions",
    )?)
}

/// Opens the database (see [`open_existing_store`]) for a command that acts for the user
/// `name`, and answers the store with the user's id; `None` when there is no such user, after
/// saying so on standard error and closing the store (the command then exits 1).
pub async fn open_for_user(
    config: &GlobalConfig,
    name: &str,
) -> anyhow::Result<Option<(Store, i64)>> {
    let store = open_existing_store(config).await?;
    match store.user_credentials(name).await? {
        Some((user, _)) => Ok(Some((store, user.id))),
        None => {
            eprintln!("tidings: no user named {name:?}");
            store.close().await;
            Ok(None)
        }
    }
}

/// Opens a database that must exist already (every command but `serve` and `migrate`) and
/// applies pending migrations. Run in the wrong folder, a command would otherwise create an
/// empty `tidings.db` and report that nothing is there.
pub async fn open_existing_store(config: &GlobalConfig) -> anyhow::Result<Store> {
    let store = connect_existing_store(config).await?;
    migrate(store).await
}

/// Opens a database that must exist already, without migrating: a missing SQLite file, or one
/// that holds no tidings schema, is an error that says which file was looked for and how to
/// point at the right one.
pub async fn connect_existing_store(config: &GlobalConfig) -> anyhow::Result<Store> {
    connect_existing_store_with(config, store_options(config)).await
}

/// [`connect_existing_store`] with the given options (`create_if_missing` is turned off).
async fn connect_existing_store_with(
    config: &GlobalConfig,
    mut options: StoreOptions,
) -> anyhow::Result<Store> {
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

/// Applies pending migrations to `store`, logging the versions applied.
pub async fn migrate(store: Store) -> anyhow::Result<Store> {
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
    Ok(Store::connect(&store_options(config)).await?)
}

/// The store options the global settings give.
fn store_options(config: &GlobalConfig) -> StoreOptions {
    let mut options = StoreOptions::new(&config.database_url);
    options.max_connections = config.database_max_connections;
    options.acquire_timeout = config.database_acquire_timeout;
    options
}

/// Which database a long-running process opens.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum OpenMode {
    /// A new SQLite file is created (`serve`).
    CreateIfMissing,
    /// The database must exist already (`worker`).
    Existing,
}

/// The first pause of [`open_store_waiting`], doubled after each failed attempt.
const FIRST_WAIT: std::time::Duration = std::time::Duration::from_secs(1);
/// The longest pause of [`open_store_waiting`].
const LONGEST_WAIT: std::time::Duration = std::time::Duration::from_secs(30);

/// Opens and migrates the database of a long-running process (`serve`, `worker`), waiting for
/// as long as the database server is unreachable: a process started or restarted during a
/// PostgreSQL outage (or before its database in a compose file) starts once the server is back
/// instead of exiting. Each failed attempt logs a warning that says what it waits for; pauses
/// grow from 1 s to 30 s. Errors that waiting cannot fix (a bad URL, a wrong password, a
/// database or SQLite file that does not exist or cannot be opened, a failed migration) end
/// the start at once. `None` when `stop` (SIGTERM, Ctrl-C) comes first.
pub async fn open_store_waiting<S>(
    config: &GlobalConfig,
    mode: OpenMode,
    stop: &mut S,
) -> anyhow::Result<Option<Store>>
where
    S: std::future::Future<Output = ()> + Unpin,
{
    let database = tidings_store::redact_url(&config.database_url);
    let mut pause = FIRST_WAIT;
    let mut attempts = 0u32;
    loop {
        // One connection attempt each time: the pauses and their log lines are this loop's.
        let mut options = store_options(config);
        options.connect_wait = std::time::Duration::ZERO;
        let attempt = async {
            let store = match mode {
                OpenMode::CreateIfMissing => Store::connect(&options).await?,
                OpenMode::Existing => connect_existing_store_with(config, options).await?,
            };
            migrate(store).await
        };
        attempts += 1;
        let error = tokio::select! {
            opened = attempt => match opened {
                Ok(store) => {
                    if attempts > 1 {
                        tracing::info!(
                            database = %database,
                            attempts,
                            "the database {database} answers: starting"
                        );
                    }
                    return Ok(Some(store));
                }
                Err(error) => error,
            },
            () = &mut *stop => return Ok(None),
        };
        let unreachable = error
            .chain()
            .filter_map(|cause| cause.downcast_ref::<StoreError>())
            .any(StoreError::is_unreachable);
        if !unreachable {
            return Err(error);
        }
        // The innermost cause says why: "Connection refused", "the database system is
        // starting up"; the URL (without its password) says where.
        let reason = error.root_cause().to_string();
        tracing::warn!(
            retry_in_seconds = pause.as_secs(),
            "waiting for the database {database} ({reason}); trying again in {} s; \
             stop with Ctrl-C or SIGTERM",
            pause.as_secs()
        );
        tokio::select! {
            () = tokio::time::sleep(pause) => {}
            () = &mut *stop => return Ok(None),
        }
        pause = (pause * 2).min(LONGEST_WAIT);
    }
}
