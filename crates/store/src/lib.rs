//! Storage for tidings: one schema and one store API on SQLite (the embedded default) and
//! PostgreSQL (for installations with several API replicas and workers).
//!
//! The SQL is written once where the two dialects agree (`$1` placeholders, `ON CONFLICT`,
//! `RETURNING`, `TRUE`/`FALSE`) and per engine where they do not (claiming due feeds). Times are
//! Unix seconds in UTC and ids are 64-bit integers on both engines.
//!
//! SQLite is opened as a server database: WAL, foreign keys, a busy timeout, and a single writer
//! connection beside a pool of readers, with write transactions started `IMMEDIATE`, so that the
//! worker and the API never see "database is locked" from each other.

#![warn(missing_docs)]
// Rows are decoded into tuples (sqlx's derive macros would compile a second sqlx for the
// host), so long tuple types are this crate's normal shape rather than a smell.
#![allow(clippy::type_complexity)]

mod arrival_dates;
pub mod auth_cache;
mod backfill_cursor;
mod backup;
mod batch;
mod bookmarks;
mod cluster_statements;
mod duplicates;
mod embeddings;
mod error;
mod feed_settings;
mod feeds;
mod fetching;
mod full_text;
mod identities;
mod import_jobs;
mod items;
mod job_queue;
mod label_names;
mod language_backfill;
mod languages;
mod lease;
mod mail;
mod migrate;
mod operations;
mod popularity;
mod preferences;
mod rate_limits;
mod reading;
mod retention;
mod rules;
mod rules_age;
mod rules_late;
mod scraped;
mod search;
mod search_index;
mod second_factors;
mod sessions;
mod subscription_changes;
mod summaries;
mod summary_translations;
mod sync;
mod sync_subscriptions;
mod tag_statements;
mod tags;
#[cfg(test)]
mod test_engines;
mod text;
mod translations;
mod usage;
mod user_budgets;
mod users;
mod webhooks;
mod websub;

use std::path::{Path, PathBuf};
use std::str::FromStr;
use std::sync::Arc;
use std::time::Duration;

use sqlx::ConnectOptions;
use sqlx::postgres::{PgConnectOptions, PgPool, PgPoolOptions};
use sqlx::sqlite::{
    SqliteConnectOptions, SqliteJournalMode, SqlitePool, SqlitePoolOptions, SqliteSynchronous,
};

pub use arrival_dates::ARRIVAL_DATES_BATCH;
pub use backfill_cursor::BackfillStep;
pub use backup::BackupReport;
pub use bookmarks::{Bookmark, DetachedBookmark};
pub use duplicates::{
    Cluster, ClusterCopy, DUPLICATE_CHOICES, MAX_CANDIDATES, STORY_WINDOW_SECONDS,
};
pub use embeddings::{
    EMBEDDING_QUEUE_BATCH, EmbeddingJob, ItemVector, MAX_EMBEDDING_ATTEMPTS, StoredCode,
    StoredVector,
};
pub use error::StoreError;
pub use feed_settings::{FeedSettings, FeedSettingsChanges};
pub use feeds::{
    DueFeed, FeedMetadata, FeedSummary, FetchRecord, FetchStatus, NewSubscription, Subscription,
    SubscriptionChanges, check_interval,
};
pub use fetching::{
    Favicon, FeedBody, FeedBodyTotals, FeedFetchState, FeedMove, JobRun, OpmlImportRecord,
    SiteFaviconClaim,
};
pub use full_text::{
    FullContent, FullTextAuto, FullTextCandidate, FullTextJob, FullTextMode, FullTextOutcome,
    feed_text_chars,
};
pub use identities::{Identity, NewOidcLogin, OidcLogin};
pub use import_jobs::{
    IMPORT_JOB_STALE_SECONDS, ImportJob, ImportJobEnd, ImportJobProgress, ImportJobStatus,
    MAX_LISTED_IMPORT_JOBS, NewImportJob,
};
pub use items::{
    BodyWrite, Enclosure, FetchWrites, FetchWritten, Item, ItemState, NewItem, ShortText,
    UpsertCounts, WebSubDiscovery,
};
pub use mail::{MAX_MAIL_LABEL_CHARS, MailAddress, MailDelivery, MailSender, NEWSLETTERS_GROUP};
pub use migrate::{MIGRATIONS, Migration, SchemaStatus};
pub use operations::{FetchQueue, PoolUse};
pub use popularity::{
    HotCursor, HotItem, HotPage, HotQuery, Popularity, PopularityCall, PopularityDue,
    PopularityLink, PopularityPace, PopularitySourceState,
};
pub use preferences::{
    DEFAULT_VIEWS, DUPLICATE_READ_MODES, MAX_PREFERRED_PAGE_SIZE, MIN_PREFERRED_PAGE_SIZE,
    PreferenceChanges, Preferences, SUMMARIZE_MODES, THEMES,
};
pub use rate_limits::RateWindowHit;
pub use reading::{
    DEFAULT_PAGE_SIZE, ItemBody, ItemCursor, ItemDetail, ItemFilter, ItemOrder, ItemPage,
    ItemQuery, ItemSummary, MAX_MARK_IDS, MAX_PAGE_SIZE, MAX_UNDO_IDS, MarkReadOutcome,
    MarkReadScope, ReadUndo, SubscriptionCount, UnreadCounts, UpdatedFeed, WatermarkBefore,
};
pub use rules::{
    MAX_RULE_NAME_CHARS, MAX_RULES_PER_USER, PREVIEW_ITEMS, RuleApplication, RuleInput,
    RulePreview, StoredRule, UNDO_SECONDS,
};
pub use rules_age::AgeRulesReport;
pub use search::{DEFAULT_BACKFILL_BATCH, ItemSearch, SearchHit, SearchPage};
pub use second_factors::{
    AuthChallenge, ChallengeLimits, ChallengePurpose, ChallengeStored, NewAuthChallenge, Passkey,
    SecondFactors, TotpSecret,
};
pub use sessions::{ApiKey, ApiKeyScope, Authenticated, Session};
pub use summaries::{GeneratedSummary, REDO_SUMMARY_FACTOR, SummaryJob, SummaryJobState};
pub use summary_translations::SummaryTranslation;
pub use sync::{
    MAX_LABEL_CHARS, MAX_SYNC_IDS, MAX_SYNC_ITEM_IDS, MAX_SYNC_ITEMS, SyncIds, SyncItem, SyncOrder,
    SyncQuery, SyncRef, UnreadFeed,
};
pub use sync_subscriptions::{SyncSubscription, SyncSubscriptions};
pub use tags::{ItemTag, MAX_TOP_TAGS, TAG_BACKFILL_BATCH, TagCount, TagJob, TaggedItem};
pub use text::{is_stripped_char, strip_control_chars};
/// A rule's scope, conditions and actions, as saved and previewed (`tidings-rules`).
pub use tidings_rules::{RegexSpec, RuleSpec, Scope as RuleScope};
pub use translations::{ItemTranslation, TranslationJob, TranslationSource};
pub use usage::{ClickedItem, MAX_USAGE_KEY_CHARS, UsageCount, UsageKind, usage_day};
pub use user_budgets::BudgetKind;
pub use users::{
    DEFAULT_GROUP_NAME, Group, MAX_USERNAME_LEN, NewUser, User, normalize_username, username_key,
};
pub use webhooks::{
    DELIVERY_LOG_KEEP, DeliveryLogEntry, DeliveryRecord, MAX_WEBHOOKS_PER_USER, MESSAGE_ITEMS,
    MatchSettings, MatchStep, NewWebhook, QueuedItem, Webhook, WebhookChanges, WebhookMessage,
};
pub use websub::{WebSubMode, WebSubRequest, WebSubState, WebSubSubscription};

/// Result type of every store operation.
pub type Result<T, E = StoreError> = std::result::Result<T, E>;

/// The database engine behind a [`Store`].
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Engine {
    /// An embedded SQLite file (or memory) database.
    Sqlite,
    /// A PostgreSQL server.
    Postgres,
}

impl std::fmt::Display for Engine {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str(match self {
            Engine::Sqlite => "sqlite",
            Engine::Postgres => "postgres",
        })
    }
}

/// How to open a store.
#[derive(Debug, Clone)]
pub struct StoreOptions {
    /// `sqlite://PATH` (created if missing), `sqlite::memory:`, or `postgres://…`.
    pub url: String,
    /// The most connections to hold open (PostgreSQL pool, SQLite readers).
    pub max_connections: u32,
    /// How long SQLite waits for another process's write lock before giving up.
    pub busy_timeout: Duration,
    /// Whether a missing SQLite file is created. Commands that only make sense on an existing
    /// database turn this off, so a run in the wrong folder fails with
    /// [`StoreError::NoDatabase`] instead of creating an empty one.
    pub create_if_missing: bool,
    /// How long an operation waits to reach PostgreSQL (a checked connection, or a new one
    /// while the server refuses) before failing with an error that
    /// [`StoreError::is_unavailable`] recognizes. Short, so that with the database down a
    /// request is answered 503 at once rather than after seconds; a pool whose connections
    /// are all in use is not down, and its operations queue up to [`BUSY_POOL_WAIT`]. Opening
    /// the store waits longer ([`StoreOptions::connect_wait`]) for a server that is still
    /// starting. SQLite waits for its single writer instead (its busy timeout applies).
    pub acquire_timeout: Duration,
    /// Whether a statement that takes over a second is logged as a warning, with its text.
    /// Bulk loads (`tidings bench generate`) turn this off: their statements are slow by
    /// design and megabytes long.
    pub warn_on_slow_statements: bool,
    /// How long opening a PostgreSQL store keeps trying while the server refuses connections
    /// or says it is starting ([`STARTUP_CONNECT_BUDGET`] by default). Zero makes one attempt,
    /// for a caller that waits with its own back-off and log lines (`tidings serve` and
    /// `tidings worker` wait for as long as the server is unreachable).
    pub connect_wait: Duration,
}

/// How long a PostgreSQL connection may sit in the pool before it is checked (pinged) again
/// before use; see `connect_postgres`.
const PING_IDLE_AFTER: Duration = Duration::from_secs(1);

/// How long an operation may queue for a connection of a PostgreSQL pool whose connections are
/// all in use (and work): a burst of writes waits its turn instead of failing.
pub const BUSY_POOL_WAIT: Duration = Duration::from_secs(10);

/// The default of [`StoreOptions::acquire_timeout`].
pub const DEFAULT_ACQUIRE_TIMEOUT: Duration = Duration::from_millis(750);

/// How long an operation that waits for a connection trusts that PostgreSQL accepted one
/// (see [`Store::postgres_connection`]) before it checks again.
pub const SERVER_SEEN_TRUST: Duration = Duration::from_secs(1);

/// How long opening a PostgreSQL store waits for the server to accept a connection, so that
/// tidings and its database can start together.
pub const STARTUP_CONNECT_BUDGET: Duration = Duration::from_secs(10);

/// How long one attempt to open a connection to PostgreSQL may take: a server behind a
/// firewall that drops packets would otherwise hold it for the system's TCP time-out (minutes).
pub const CONNECT_ATTEMPT_TIMEOUT: Duration = Duration::from_secs(10);

impl StoreOptions {
    /// Options with the defaults for the given database URL.
    pub fn new(url: impl Into<String>) -> Self {
        StoreOptions {
            url: url.into(),
            max_connections: 10,
            busy_timeout: Duration::from_secs(10),
            create_if_missing: true,
            acquire_timeout: DEFAULT_ACQUIRE_TIMEOUT,
            warn_on_slow_statements: true,
            connect_wait: STARTUP_CONNECT_BUDGET,
        }
    }
}

pub(crate) enum Pools {
    Sqlite {
        /// Readers; never used for writes.
        reader: SqlitePool,
        /// The single writer connection: writes are serialized here instead of contending for
        /// SQLite's lock.
        writer: SqlitePool,
        /// The database file, for backups before migrations; `None` for a memory database.
        path: Option<PathBuf>,
    },
    Postgres(PgPool),
}

/// The level at which statements slower than a second are logged.
fn slow_statement_level(options: &StoreOptions) -> tracing::log::LevelFilter {
    if options.warn_on_slow_statements {
        tracing::log::LevelFilter::Warn
    } else {
        tracing::log::LevelFilter::Off
    }
}

/// How much of a SQLite database file each reading connection maps into memory (`PRAGMA
/// mmap_size`); SQLite caps it at its own limit, 2 GiB less 64 KiB. The mapping is address
/// space over the operating system's page cache, not memory of its own.
const SQLITE_READER_MMAP_BYTES: u64 = 2 << 30;

/// Rows a SQLite connection's worker thread may hand over before the query's caller takes them
/// (sqlx's default is 50). The worker sends each row over a channel; once it holds this many
/// the worker sleeps until the caller drains it and wakes it, and for a page of 1,000 ids or
/// 500 subscriptions those sleeps and wake-ups were the largest part of the request's CPU. A
/// row waits there only while its caller is busy, so this bounds memory, not speed.
const SQLITE_ROW_BUFFER: usize = 1024;

/// Opens a SQLite pool, retrying while another process or pool holds the file locked.
///
/// The busy timeout does not cover every lock taken while a connection is set up: when several
/// starters switch a new file to WAL at once, SQLite answers `SQLITE_BUSY` at once to all but one
/// of them rather than risk a deadlock. Those starters wait briefly and try again, within the same
/// budget as the busy timeout, instead of failing the start.
async fn connect_sqlite_pool(
    pool: SqlitePoolOptions,
    connect: &SqliteConnectOptions,
    budget: Duration,
) -> std::result::Result<SqlitePool, sqlx::Error> {
    let deadline = std::time::Instant::now() + budget;
    let mut pause = Duration::from_millis(5);
    loop {
        match pool.clone().connect_with(connect.clone()).await {
            Err(error)
                if StoreError::is_sqlite_busy(&error) && std::time::Instant::now() < deadline =>
            {
                tokio::time::sleep(pause).await;
                pause = (pause * 2).min(Duration::from_millis(200));
            }
            outcome => return outcome,
        }
    }
}

/// The options without TLS when the URL leaves TLS to the default (no `sslmode` in it, no
/// `PGSSLMODE`) and the server is on this machine (a loopback address, `localhost`, a Unix
/// socket); `None` otherwise. sqlx's default, `prefer`, encrypts when the server offers it
/// (Debian's PostgreSQL does, with a self-signed certificate it does not check): on loopback
/// that protects nothing (whoever can read the traffic can read the processes' memory) and
/// costs both processes the encryption of every message: 0.10-0.21 ms of the 0.6-0.8 ms of
/// CPU a sync app's `stream/items/ids` request costs (crates/server/BENCHMARKS.md, fourteenth
/// round). A URL that says `sslmode=` is used as it says.
fn plain_on_loopback(url: &str, options: &PgConnectOptions) -> Option<PgConnectOptions> {
    plain_on_loopback_unless(url, options, std::env::var_os("PGSSLMODE").is_some())
}

/// [`plain_on_loopback`], told whether `PGSSLMODE` is set.
fn plain_on_loopback_unless(
    url: &str,
    options: &PgConnectOptions,
    environment_says: bool,
) -> Option<PgConnectOptions> {
    use sqlx::postgres::PgSslMode;
    let query = url.split_once('?').map_or("", |(_, query)| query);
    let asked = query
        .split('&')
        .filter_map(|pair| pair.split('=').next())
        .any(|key| key.eq_ignore_ascii_case("sslmode") || key.eq_ignore_ascii_case("ssl-mode"));
    if asked || environment_says {
        return None;
    }
    if !matches!(options.get_ssl_mode(), PgSslMode::Prefer) {
        return None;
    }
    let host = options
        .get_host()
        .trim_start_matches('[')
        .trim_end_matches(']');
    let local = options.get_socket().is_some()
        || host.starts_with('/')
        || host.eq_ignore_ascii_case("localhost")
        || host
            .parse::<std::net::IpAddr>()
            .is_ok_and(|address| address.is_loopback());
    local.then(|| options.clone().ssl_mode(PgSslMode::Disable))
}

/// Opens (and closes) one connection to PostgreSQL, retrying while the server refuses
/// connections or says it is starting, for at most `budget` (one attempt when it is zero); the
/// error is the server's last answer, so a wrong password or database name is reported as such
/// at once. An attempt that gets no answer within [`CONNECT_ATTEMPT_TIMEOUT`] fails as timed
/// out.
async fn wait_for_postgres(
    connect: &PgConnectOptions,
    budget: Duration,
) -> std::result::Result<(), sqlx::Error> {
    use sqlx::Connection;
    let deadline = std::time::Instant::now() + budget;
    let mut pause = Duration::from_millis(20);
    loop {
        let attempt = tokio::time::timeout(CONNECT_ATTEMPT_TIMEOUT, connect.connect())
            .await
            .unwrap_or_else(|_| {
                Err(sqlx::Error::Io(std::io::Error::new(
                    std::io::ErrorKind::TimedOut,
                    format!("no answer within {} s", CONNECT_ATTEMPT_TIMEOUT.as_secs()),
                )))
            });
        match attempt {
            Ok(connection) => {
                let _ = connection.close().await;
                return Ok(());
            }
            Err(error) if is_starting(&error) && std::time::Instant::now() + pause < deadline => {
                tokio::time::sleep(pause).await;
                pause = (pause * 2).min(Duration::from_millis(500));
            }
            Err(error) => return Err(error),
        }
    }
}

/// Whether the PostgreSQL server of `options` accepts a connection (TCP, or its Unix socket)
/// within `limit`: the connection is closed before a word is said, which PostgreSQL does not
/// log. Tells a server that is down or unreachable from one that is slow to finish opening a
/// session.
async fn server_accepts(options: &PgConnectOptions, limit: Duration) -> std::io::Result<()> {
    let socket = match options.get_socket() {
        Some(folder) => Some(folder.join(format!(".s.PGSQL.{}", options.get_port()))),
        None if options.get_host().starts_with('/') => {
            Some(Path::new(options.get_host()).join(format!(".s.PGSQL.{}", options.get_port())))
        }
        None => None,
    };
    let connect = async {
        match socket {
            #[cfg(unix)]
            Some(path) => tokio::net::UnixStream::connect(path).await.map(drop),
            #[cfg(not(unix))]
            Some(_) => Ok(()),
            None => tokio::net::TcpStream::connect((options.get_host(), options.get_port()))
                .await
                .map(drop),
        }
    };
    tokio::time::timeout(limit, connect)
        .await
        .unwrap_or_else(|_| {
            Err(std::io::Error::new(
                std::io::ErrorKind::TimedOut,
                format!("no answer within {} ms", limit.as_millis()),
            ))
        })
}

/// Whether a connection attempt failed because the server is not accepting connections yet:
/// refused, or PostgreSQL's "the database system is starting up" (57P03).
fn is_starting(error: &sqlx::Error) -> bool {
    match error {
        sqlx::Error::Io(e) => e.kind() == std::io::ErrorKind::ConnectionRefused,
        sqlx::Error::Database(db) => db.code().as_deref() == Some("57P03"),
        _ => false,
    }
}

/// A handle on the database. Cheap to clone; all clones share the connection pools.
#[derive(Clone)]
pub struct Store {
    pub(crate) pools: Arc<Pools>,
    /// How long an operation waits to learn that PostgreSQL can be reached (see
    /// [`StoreOptions::acquire_timeout`]).
    pub(crate) acquire_timeout: Duration,
    /// When PostgreSQL last accepted a TCP connection of [`server_accepts`], shared by the
    /// clones.
    server_seen: Arc<std::sync::Mutex<Option<std::time::Instant>>>,
    /// API keys that authenticated lately (see [`auth_cache`]), shared by the clones.
    pub(crate) auth_cache: Arc<auth_cache::AuthCache>,
    /// Whether the schema has the rules table (version 40), once seen: a store opened on an
    /// older schema (an upgrade in progress, tests of migrations) stores items without rules.
    pub(crate) rules_ready: Arc<std::sync::atomic::AtomicBool>,
    /// Whether the schema has the duplicate clustering's tables (migration 44): a store
    /// opened on an older schema (an upgrade in progress, a test) stores fetches without it.
    pub(crate) clusters_ready: Arc<std::sync::atomic::AtomicBool>,
    /// Whether every arrival row carries its item's feed and date (migration 56 and its
    /// backfill done), once seen: until then the sync queries read them from the items.
    pub(crate) arrival_dates_ready: Arc<std::sync::atomic::AtomicBool>,
    /// Whether the schema has the language columns (migration 47): a store opened on an older
    /// schema stores and reads items without their language.
    pub(crate) languages_ready: Arc<std::sync::atomic::AtomicBool>,
    /// Whether the schema has the translations table (migration 48): a store opened on an
    /// older schema indexes items without translations' words.
    pub(crate) translations_ready: Arc<std::sync::atomic::AtomicBool>,
    /// Whether arriving items are clustered with copies from other feeds (on unless
    /// [`Store::set_duplicate_clustering`] turned it off).
    pub(crate) clustering_off: Arc<std::sync::atomic::AtomicBool>,
    /// Lookup keys found under more than [`duplicates::MAX_KEY_POSTINGS`] items (a stock
    /// phrase, a feed's boilerplate): no longer looked up nor stored by this process, shared by
    /// the clones.
    pub(crate) common_story_keys: Arc<std::sync::Mutex<std::collections::HashSet<i64>>>,
    /// Rules compiled for fetches, reused while unchanged.
    pub(crate) rule_cache: Arc<RuleCache>,
}

/// Rules compiled for fetches by id, with the spec each was compiled from, shared by a
/// store's clones (see `rules::FeedRules`).
pub(crate) type RuleCache =
    std::sync::Mutex<std::collections::HashMap<i64, (String, Arc<tidings_rules::Rule>)>>;

impl std::fmt::Debug for Store {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("Store")
            .field("engine", &self.engine())
            .finish()
    }
}

/// Runs `$body` with `$db` bound to the right pool of the store's engine. The body is compiled
/// once per engine, so the same SQL text serves both.
macro_rules! with_db {
    ($store:expr, read, |$db:ident| $body:expr) => {
        match &*$store.pools {
            $crate::Pools::Sqlite { reader, .. } => {
                let $db = reader;
                $body
            }
            $crate::Pools::Postgres(pool) => {
                let mut connection = $store.postgres_connection(pool).await?;
                let $db = &mut *connection;
                $body
            }
        }
    };
    ($store:expr, write, |$db:ident| $body:expr) => {
        match &*$store.pools {
            $crate::Pools::Sqlite { writer, .. } => {
                let $db = writer;
                $body
            }
            $crate::Pools::Postgres(pool) => {
                let mut connection = $store.postgres_connection(pool).await?;
                let $db = &mut *connection;
                $body
            }
        }
    };
}

/// Runs `$body` inside a write transaction bound to `$tx` and commits it when the body
/// succeeds; an early return through `?` drops the transaction, which rolls it back. On SQLite
/// the transaction starts `IMMEDIATE` so it holds the write lock from its first statement.
macro_rules! in_tx {
    ($store:expr, |$tx:ident| $body:expr) => {
        $crate::in_tx!($store, postgres_begin = "BEGIN", |$tx| $body)
    };
    // On PostgreSQL the transaction opens with `$begin`, a simple query that may carry more
    // statements after `BEGIN` (a lock), run in the same round trip.
    ($store:expr, postgres_begin = $begin:expr, |$tx:ident| $body:expr) => {
        match &*$store.pools {
            $crate::Pools::Sqlite { writer, .. } => {
                #[allow(unused_mut)]
                let mut $tx = writer.begin_with("BEGIN IMMEDIATE").await?;
                let value = $body;
                $tx.commit().await?;
                value
            }
            $crate::Pools::Postgres(pool) => {
                let mut connection = $store.postgres_connection(pool).await?;
                #[allow(unused_mut)]
                let mut $tx =
                    sqlx::Connection::begin_with(&mut *connection, sqlx::AssertSqlSafe($begin))
                        .await?;
                let value = $body;
                $tx.commit().await?;
                value
            }
        }
    };
}

impl Store {
    /// Whether the schema has what `probe` (a query reading a table or column of a later
    /// migration) reads, remembered in `flag` once it has: a store opened on an older schema
    /// (an upgrade in progress, tests of migrations) leaves out what needs it, and never
    /// asks again once it is there.
    pub(crate) async fn schema_ready(
        &self,
        flag: &std::sync::atomic::AtomicBool,
        probe: &'static str,
    ) -> bool {
        use std::sync::atomic::Ordering;
        if flag.load(Ordering::Relaxed) {
            return true;
        }
        let found: Result<i64> = async {
            Ok(with_db!(self, read, |db| {
                sqlx::query_scalar(probe).fetch_one(db).await?
            }))
        }
        .await;
        let ready = found.is_ok();
        flag.store(ready, Ordering::Relaxed);
        ready
    }
}

/// Defines `fn $name(row) -> Result<$row>` reading columns into nested tuples (sqlx decodes
/// tuples of at most 16 columns, so wider rows are read as groups). The function is generic
/// over the engine's row type, with the bounds every store column type meets on both engines.
macro_rules! row_decoder {
    ($(#[$doc:meta])* $vis:vis $name:ident -> $row:ty { $( ( $($column:literal),+ ) ),+ }) => {
        $(#[$doc])*
        $vis fn $name<R>(row: &R) -> std::result::Result<$row, sqlx::Error>
        where
            R: sqlx::Row,
            usize: sqlx::ColumnIndex<R>,
            i64: for<'r> sqlx::Decode<'r, R::Database> + sqlx::Type<R::Database>,
            bool: for<'r> sqlx::Decode<'r, R::Database> + sqlx::Type<R::Database>,
            String: for<'r> sqlx::Decode<'r, R::Database> + sqlx::Type<R::Database>,
            Option<i64>: for<'r> sqlx::Decode<'r, R::Database> + sqlx::Type<R::Database>,
            Option<String>: for<'r> sqlx::Decode<'r, R::Database> + sqlx::Type<R::Database>,
        {
            Ok(( $( ( $( row.try_get($column)?, )+ ), )+ ))
        }
    };
}

pub(crate) use {in_tx, row_decoder, with_db};

impl Store {
    /// Opens the database named by `options.url`, creating a SQLite file if it is missing.
    /// Does not migrate: call [`Store::migrate`] (the server and `tidings migrate` do).
    pub async fn connect(options: &StoreOptions) -> Result<Store> {
        let url = options.url.trim();
        if url.starts_with("sqlite:") {
            Self::connect_sqlite(url, options).await
        } else if url.starts_with("postgres://") || url.starts_with("postgresql://") {
            Self::connect_postgres(url, options).await
        } else {
            Err(StoreError::BadUrl {
                url: redact_url(url),
                reason: "expected sqlite://PATH, sqlite::memory: or postgres://…".into(),
            })
        }
    }

    async fn connect_sqlite(url: &str, options: &StoreOptions) -> Result<Store> {
        let base = SqliteConnectOptions::from_str(url).map_err(|e| StoreError::BadUrl {
            url: url.to_string(),
            reason: e.to_string(),
        })?;
        let is_memory = url.contains(":memory:") || base.get_filename().as_os_str().is_empty();
        if !is_memory && !options.create_if_missing && !base.get_filename().exists() {
            let path = base.get_filename();
            let path = std::env::current_dir()
                .map(|dir| dir.join(path))
                .unwrap_or_else(|_| path.to_path_buf());
            return Err(StoreError::NoDatabase { path });
        }
        let base = base
            .create_if_missing(options.create_if_missing)
            .foreign_keys(true)
            .busy_timeout(options.busy_timeout)
            .synchronous(SqliteSynchronous::Normal)
            .row_buffer_size(SQLITE_ROW_BUFFER)
            .log_statements(tracing::log::LevelFilter::Trace)
            .log_slow_statements(slow_statement_level(options), Duration::from_secs(1));
        let base = if is_memory {
            base
        } else {
            base.journal_mode(SqliteJournalMode::Wal)
        };
        let path = (!is_memory).then(|| base.get_filename().to_path_buf());

        // A memory database exists per connection, so it gets one connection for everything.
        let writer_pool = SqlitePoolOptions::new()
            .max_connections(1)
            .min_connections(if is_memory { 1 } else { 0 })
            .idle_timeout(if is_memory {
                None
            } else {
                Some(Duration::from_secs(600))
            })
            .max_lifetime(if is_memory {
                None
            } else {
                Some(Duration::from_secs(3600))
            });
        // The writer keeps its statement journals (and sorts) in memory (`temp_store`): a
        // statement in a transaction of several, as a fetch's are, first copies every page it
        // changes into one, and SQLite's default spills it to a temporary file past 64 KiB, a
        // write call per page. Those writes were 8 % of the rules-ingest bench's samples; in
        // memory a fetch costs 4.6 % less CPU (docs/benchmarks.md, issue 33). A journal holds
        // what its one statement changed and goes with it; large deletes are batched.
        let writer_options = base.clone().pragma("temp_store", "memory");
        let writer = connect_sqlite_pool(writer_pool, &writer_options, options.busy_timeout)
            .await
            .map_err(|e| StoreError::Connect {
                url: url.to_string(),
                source: e,
            })?;
        let reader = if is_memory {
            writer.clone()
        } else {
            let reader = SqlitePoolOptions::new().max_connections(options.max_connections.max(1));
            // Readers map the file instead of copying each page in with a read call: on the
            // search benchmark's million items that cut the process's CPU time by a sixth.
            let reader_options = base
                .clone()
                .pragma("mmap_size", SQLITE_READER_MMAP_BYTES.to_string());
            connect_sqlite_pool(reader, &reader_options, options.busy_timeout)
                .await
                .map_err(|e| StoreError::Connect {
                    url: url.to_string(),
                    source: e,
                })?
        };
        Ok(Store {
            pools: Arc::new(Pools::Sqlite {
                reader,
                writer,
                path,
            }),
            acquire_timeout: options.acquire_timeout,
            server_seen: Arc::default(),
            auth_cache: Arc::default(),
            rules_ready: Arc::default(),
            clusters_ready: Arc::default(),
            arrival_dates_ready: Arc::default(),
            languages_ready: Arc::default(),
            translations_ready: Arc::default(),
            clustering_off: Arc::default(),
            common_story_keys: Arc::default(),
            rule_cache: Arc::default(),
        })
    }

    async fn connect_postgres(url: &str, options: &StoreOptions) -> Result<Store> {
        let connect = PgConnectOptions::from_str(url)
            .map_err(|e| StoreError::BadUrl {
                url: redact_url(url),
                reason: e.to_string(),
            })?
            .log_statements(tracing::log::LevelFilter::Trace)
            .log_slow_statements(slow_statement_level(options), Duration::from_secs(1))
            // PostgreSQL compiles a statement it estimates as costly (a search over a million
            // items) to machine code first, which takes 100-200 ms: longer than tidings'
            // statements take to run.
            .options([("jit", "off")]);
        let failed = |source| StoreError::Connect {
            url: redact_url(url),
            source,
        };
        let connect = match plain_on_loopback(url, &connect) {
            Some(plain) => match wait_for_postgres(&plain, options.connect_wait).await {
                Ok(()) => plain,
                // A server that takes only TLS connections, even from this machine
                // (`hostssl` in pg_hba.conf), refuses the plain one: TLS as by default.
                Err(sqlx::Error::Database(db)) if db.code().as_deref() == Some("28000") => {
                    wait_for_postgres(&connect, options.connect_wait)
                        .await
                        .map_err(failed)?;
                    connect
                }
                Err(error) => return Err(failed(error)),
            },
            None => {
                wait_for_postgres(&connect, options.connect_wait)
                    .await
                    .map_err(failed)?;
                connect
            }
        };
        // Connections are opened on demand and checked before each use (sqlx's default), and
        // none is kept open by force (no min_connections): after an outage the broken ones are
        // dropped and the next operation connects afresh, so the store recovers by itself.
        // The pool's own acquire time-out is for a busy pool, whose connections all work: an
        // operation may queue that long. An unreachable server is found out sooner, by
        // `postgres_connection`, which each operation takes its connection from.
        //
        // The check before use is a round trip (sqlx's ping). sqlx pings every connection as
        // it goes back to the pool too, and drops one that fails, so a connection idle for
        // less than `PING_IDLE_AFTER` answered a moment ago: it is used without the check.
        // That saved one of the three round trips of every statement (an app's sync request
        // runs three or four). A connection broken in that moment fails its one operation and
        // is dropped when it comes back.
        let pool = PgPoolOptions::new()
            .max_connections(options.max_connections.max(2))
            .acquire_timeout(BUSY_POOL_WAIT.max(options.acquire_timeout))
            .test_before_acquire(false)
            .before_acquire(|connection, meta| {
                Box::pin(async move {
                    if meta.idle_for >= PING_IDLE_AFTER {
                        sqlx::Connection::ping(connection).await?;
                    }
                    Ok(true)
                })
            })
            // sqlx keeps a connection's buffers at the size of the largest message it carried
            // (a feed's new items go in one statement: about 1 MB for 500 items), so after a
            // burst of writes every pooled connection held one such buffer; given back as the
            // connection returns, only the statements running hold theirs (issue 32). A small
            // buffer grows again in a few reallocations, nothing next to the round trip.
            .after_release(|connection, _| {
                Box::pin(async move {
                    sqlx::Connection::shrink_buffers(connection);
                    Ok(true)
                })
            })
            .min_connections(0)
            .connect_lazy_with(connect);
        Ok(Store {
            pools: Arc::new(Pools::Postgres(pool)),
            acquire_timeout: options.acquire_timeout,
            server_seen: Arc::default(),
            auth_cache: Arc::default(),
            rules_ready: Arc::default(),
            clusters_ready: Arc::default(),
            arrival_dates_ready: Arc::default(),
            languages_ready: Arc::default(),
            translations_ready: Arc::default(),
            clustering_off: Arc::default(),
            common_story_keys: Arc::default(),
            rule_cache: Arc::default(),
        })
    }

    /// A connection for one operation, which shows that PostgreSQL can be reached, within
    /// [`StoreOptions::acquire_timeout`]: an idle one (checked by a ping) or a new one. When
    /// none comes in time, the wait goes on (up to [`BUSY_POOL_WAIT`] in all) while the server
    /// is there: every connection may be in use, or a new one slow to open on a loaded
    /// machine. Whether it is there is found out by a TCP connection to it ([`server_accepts`];
    /// one that succeeded is trusted for [`SERVER_SEEN_TRUST`], so that an overloaded process
    /// does not add a connection per waiting operation). When the server refuses or does not
    /// answer, the operation fails at once with an error [`StoreError::is_unavailable`]
    /// recognizes, instead of retrying the refused connection for the pool's whole wait. When
    /// no connection is idle the check runs at once, beside the acquisition, so that during an
    /// outage every operation fails in milliseconds. The operation runs on this connection, so
    /// the check costs no second checkout.
    pub(crate) async fn postgres_connection(
        &self,
        pool: &PgPool,
    ) -> Result<sqlx::pool::PoolConnection<sqlx::Postgres>> {
        // One acquisition throughout: dropping it would abandon a connection half opened.
        let acquire = pool.acquire();
        tokio::pin!(acquire);
        let seen = || {
            self.server_seen
                .lock()
                .unwrap_or_else(std::sync::PoisonError::into_inner)
        };
        let trusted = || seen().is_some_and(|at| at.elapsed() < SERVER_SEEN_TRUST);
        // With no idle connection the pool has to open one, and while the server is away that
        // is refused at once: finding that out at once too answers every request of an outage
        // promptly, rather than after the whole acquire timeout.
        let probed_now = pool.num_idle() == 0 && !trusted();
        if probed_now {
            let options = pool.connect_options();
            tokio::select! {
                acquired = &mut acquire => return Ok(acquired?),
                reachable = server_accepts(&options, self.acquire_timeout) => match reachable {
                    Ok(()) => *seen() = Some(std::time::Instant::now()),
                    Err(error) => return Err(StoreError::Database(sqlx::Error::Io(error))),
                },
            }
        }
        if let Ok(acquired) = tokio::time::timeout(self.acquire_timeout, &mut acquire).await {
            return Ok(acquired?);
        }
        if !trusted() {
            let options = pool.connect_options();
            tokio::select! {
                acquired = &mut acquire => return Ok(acquired?),
                reachable = server_accepts(&options, self.acquire_timeout) => match reachable {
                    Ok(()) => *seen() = Some(std::time::Instant::now()),
                    Err(error) => return Err(StoreError::Database(sqlx::Error::Io(error))),
                },
            }
        }
        Ok(acquire.await?)
    }

    /// The engine this store runs on.
    pub fn engine(&self) -> Engine {
        match &*self.pools {
            Pools::Sqlite { .. } => Engine::Sqlite,
            Pools::Postgres(_) => Engine::Postgres,
        }
    }

    /// The SQLite database file, when the store is a SQLite file.
    pub fn sqlite_path(&self) -> Option<&std::path::Path> {
        match &*self.pools {
            Pools::Sqlite { path, .. } => path.as_deref(),
            Pools::Postgres(_) => None,
        }
    }

    /// Checks that the database answers a trivial query.
    pub async fn ping(&self) -> Result<()> {
        with_db!(self, read, |db| {
            sqlx::query("SELECT 1").execute(db).await?;
        });
        Ok(())
    }

    /// Runs SQL text as it is, on the writer. For administration and test set-up only: never
    /// with input from a user.
    pub async fn execute_raw(&self, sql: &str) -> Result<()> {
        with_db!(self, write, |db| {
            sqlx::raw_sql(sqlx::AssertSqlSafe(sql.to_string()))
                .execute(db)
                .await?;
        });
        Ok(())
    }

    /// The column names of one of the database's tables, in order (none for an unknown
    /// table): for checks of what the schema keeps, such as that a table holds no user.
    pub async fn table_columns(&self, table: &str) -> Result<Vec<String>> {
        Ok(match &*self.pools {
            Pools::Sqlite { reader, .. } => {
                sqlx::query_scalar("SELECT name FROM pragma_table_info($1) ORDER BY cid")
                    .bind(table)
                    .fetch_all(reader)
                    .await?
            }
            Pools::Postgres(pool) => {
                let mut connection = self.postgres_connection(pool).await?;
                sqlx::query_scalar(
                    "SELECT CAST(column_name AS TEXT) FROM information_schema.columns
                     WHERE table_schema = current_schema() AND table_name = $1
                     ORDER BY ordinal_position",
                )
                .bind(table)
                .fetch_all(&mut *connection)
                .await?
            }
        })
    }

    /// Closes every connection, waiting for the ones in use to be returned. A SQLite file's
    /// write-ahead log is checkpointed into the database and truncated first, so that the file
    /// alone is the whole database once the process has stopped (for a copy, or a restart
    /// that need not replay the log), even while another process keeps the file open.
    pub async fn close(&self) {
        match &*self.pools {
            Pools::Sqlite {
                reader,
                writer,
                path,
            } => {
                reader.close().await;
                if path.is_some() {
                    match sqlx::query_as::<_, (i64, i64, i64)>("PRAGMA wal_checkpoint(TRUNCATE)")
                        .fetch_one(writer)
                        .await
                    {
                        // A reader of another process still on an older snapshot keeps the log
                        // from being truncated; what could be copied back was.
                        Ok((busy, _, _)) if busy != 0 => tracing::debug!(
                            "another process is reading: the SQLite log was checkpointed but not truncated"
                        ),
                        Ok(_) => {}
                        Err(error) => tracing::warn!(%error, "checkpointing the SQLite log failed"),
                    }
                }
                writer.close().await;
            }
            Pools::Postgres(pool) => pool.close().await,
        }
    }
}

/// The URL with its credentials hidden, for messages and logs: the one helper of
/// [`tidings_fetch::redact_url`] (password, query values).
pub fn redact_url(url: &str) -> String {
    tidings_fetch::redact_url(url)
}

/// The current time as Unix seconds.
pub fn unix_now() -> i64 {
    chrono::Utc::now().timestamp()
}

#[cfg(test)]
mod tests {
    use super::*;

    /// A store on a new SQLite file (kept while the directory lives), with its two pools.
    async fn sqlite_file_store() -> (tempfile::TempDir, Store) {
        let dir = tempfile::tempdir().unwrap();
        let url = format!("sqlite://{}", dir.path().join("t.db").display());
        let mut options = StoreOptions::new(url);
        options.create_if_missing = true;
        let store = Store::connect(&options).await.unwrap();
        (dir, store)
    }

    /// Which URLs leave TLS to the default on a server of this machine: only those get a
    /// plain connection.
    #[test]
    fn loopback_servers_are_reached_without_tls_unless_the_url_asks() {
        use sqlx::postgres::PgSslMode;
        let plain = |url: &str, environment_says: bool| {
            let options = PgConnectOptions::from_str(url).unwrap();
            plain_on_loopback_unless(url, &options, environment_says).map(|o| o.get_ssl_mode())
        };
        for url in [
            "postgres://postgres@127.0.0.1:5432/tidings",
            "postgres://postgres@127.8.0.1/tidings",
            "postgres://postgres@localhost/tidings",
            "postgres://postgres@LOCALHOST/tidings?application_name=x",
            "postgres://postgres@[::1]:5432/tidings",
            "postgres:///tidings?host=/var/run/postgresql",
            "postgres://postgres@127.0.0.1/test?options=-c%20search_path%3Dt",
        ] {
            assert!(
                matches!(plain(url, false), Some(PgSslMode::Disable)),
                "{url}"
            );
        }
        for url in [
            "postgres://postgres@127.0.0.1/tidings?sslmode=prefer",
            "postgres://postgres@127.0.0.1/tidings?sslmode=require",
            "postgres://postgres@localhost/tidings?application_name=x&ssl-mode=prefer",
            "postgres://postgres@db.example.org/tidings",
            "postgres://postgres@10.0.0.5/tidings",
            "postgres://postgres@[2001:db8::1]/tidings",
        ] {
            assert!(plain(url, false).is_none(), "{url}");
        }
        assert!(plain("postgres://postgres@127.0.0.1/tidings", true).is_none());
    }

    /// The value of `PRAGMA {name}` on a connection of `pool`.
    async fn pragma(pool: &SqlitePool, name: &str) -> i64 {
        sqlx::query_scalar::<_, i64>(sqlx::AssertSqlSafe(format!("PRAGMA {name}")))
            .fetch_one(pool)
            .await
            .unwrap()
    }

    /// A file database's readers map it into memory (`PRAGMA mmap_size`); the writer does not.
    #[tokio::test]
    async fn sqlite_readers_map_the_file() {
        let (_dir, store) = sqlite_file_store().await;
        let Pools::Sqlite { reader, writer, .. } = &*store.pools else {
            unreachable!("a SQLite URL opens a SQLite store");
        };
        assert!(
            pragma(reader, "mmap_size").await >= 1 << 30,
            "readers map the file"
        );
        assert_eq!(pragma(writer, "mmap_size").await, 0, "the writer reads");
        store.close().await;
    }

    /// The writer keeps statement journals in memory (`PRAGMA temp_store` 2); readers, which
    /// write none, keep SQLite's default.
    #[tokio::test]
    async fn sqlite_writer_keeps_statement_journals_in_memory() {
        let (_dir, store) = sqlite_file_store().await;
        let Pools::Sqlite { reader, writer, .. } = &*store.pools else {
            unreachable!("a SQLite URL opens a SQLite store");
        };
        assert_eq!(pragma(writer, "temp_store").await, 2, "in memory");
        assert_eq!(pragma(reader, "temp_store").await, 0, "as SQLite has it");
        store.close().await;
    }
}
