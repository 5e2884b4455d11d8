//! Embedded migrations, applied in order and recorded with their versions.
//!
//! On PostgreSQL a session-level advisory lock makes concurrent starters wait for one another,
//! so two processes never both migrate. On SQLite one `IMMEDIATE` transaction around the whole
//! run does the same, and before the first pending migration touches an existing file a
//! consistent copy (`VACUUM INTO`) is written next to it as `NAME.bak-YYYYmmddTHHMMSSZ`.

use sha2::{Digest, Sha256};
use sqlx::Connection;

use crate::{Pools, Result, Store, StoreError, unix_now};

/// The applied migrations' versions and checksums, on any connection.
macro_rules! applied_versions {
    ($conn:expr) => {
        sqlx::query_as::<_, (i64, String)>(
            "SELECT version, checksum FROM schema_migrations ORDER BY version",
        )
        .fetch_all($conn)
        .await?
    };
}

/// Runs one migration's SQL and records it, inside the caller's transaction `$tx`.
macro_rules! apply {
    ($store:expr, $tx:expr, $migration:expr) => {{
        let migration: &Migration = $migration;
        tracing::info!(
            version = migration.version,
            name = migration.name,
            engine = %$store.engine(),
            "applying migration"
        );
        sqlx::raw_sql(sqlx::AssertSqlSafe(migration.sql($store)))
            .execute(&mut *$tx)
            .await
            .map_err(|e| {
                StoreError::Migration(format!(
                    "migration {} ({}): {e}",
                    migration.version, migration.name
                ))
            })?;
        if let Some(step) = migration.data {
            let done: Result<String> = async {
                Ok(match step {
                    DataStep::NormalizeFeedUrls => {
                        let (renamed, merged) =
                            crate::fetching::normalize_feed_urls!($tx, unix_now());
                        format!("{renamed} feed URLs normalized, {merged} feeds merged")
                    }
                    DataStep::HashFeverDigests => {
                        let hashed = hash_fever_digests!($tx);
                        format!("{hashed} Fever key digests hashed")
                    }
                    DataStep::FillUsernameKeys => {
                        let (keyed, apart) = fill_username_keys!($tx);
                        format!(
                            "{keyed} user name keys set, {apart} of them apart from an older \
                             account's (those sign in with their exact names)"
                        )
                    }
                })
            }
            .await;
            let done = done.map_err(|e| {
                StoreError::Migration(format!(
                    "migration {} ({}): {e}",
                    migration.version, migration.name
                ))
            })?;
            tracing::info!(version = migration.version, "{done}");
        }
        sqlx::query(
            "INSERT INTO schema_migrations (version, name, checksum, applied_at)
             VALUES ($1, $2, $3, $4)",
        )
        .bind(migration.version)
        .bind(migration.name)
        .bind(migration.checksum($store))
        .bind(unix_now())
        .execute(&mut *$tx)
        .await?;
    }};
}

/// Gives every user the key of their name (see migration 11's SQL), inside the migration's
/// transaction `$tx`; evaluates to how many users got a key and how many of those a key of
/// their own because an older account's name has the same one.
macro_rules! fill_username_keys {
    ($tx:expr) => {{
        let users: Vec<(i64, String)> =
            sqlx::query_as("SELECT id, username FROM users ORDER BY id")
                .fetch_all(&mut *$tx)
                .await?;
        let keys = crate::users::keys_of_existing_users(&users);
        let apart = keys.iter().filter(|(_, key)| key.contains('#')).count();
        for (id, key) in &keys {
            sqlx::query("UPDATE users SET username_key = $1 WHERE id = $2")
                .bind(key)
                .bind(id)
                .execute(&mut *$tx)
                .await?;
        }
        (keys.len(), apart)
    }};
}

/// Moves every md5 Fever digest still stored into the SHA-256 columns (see migration 33's SQL),
/// inside the migration's transaction `$tx`, clearing each as it goes so that a run started
/// again skips what is done; evaluates to how many digests were hashed.
macro_rules! hash_fever_digests {
    ($tx:expr) => {{
        let rows: Vec<(i64, Option<String>, Option<String>)> = sqlx::query_as(
            "SELECT id, fever_hash, fever_hash_folded FROM api_keys
             WHERE fever_hash IS NOT NULL OR fever_hash_folded IS NOT NULL ORDER BY id",
        )
        .fetch_all(&mut *$tx)
        .await?;
        let mut hashed = 0usize;
        for (id, digest, folded) in &rows {
            let hash = |d: &Option<String>| d.as_deref().map(crate::sync::fever_digest_hash);
            sqlx::query(
                "UPDATE api_keys
                 SET fever_digest_sha256 = COALESCE($1, fever_digest_sha256),
                     fever_digest_sha256_folded = COALESCE($2, fever_digest_sha256_folded),
                     fever_hash = NULL, fever_hash_folded = NULL
                 WHERE id = $3",
            )
            .bind(hash(digest))
            .bind(hash(folded))
            .bind(id)
            .execute(&mut *$tx)
            .await?;
            hashed += usize::from(digest.is_some()) + usize::from(folded.is_some());
        }
        hashed
    }};
}

/// One schema change, with its SQL for each engine.
#[derive(Debug, Clone, Copy)]
pub struct Migration {
    /// The version recorded once the migration is applied; versions increase by one.
    pub version: i64,
    /// A short description, recorded beside the version.
    pub name: &'static str,
    sqlite: &'static str,
    postgres: &'static str,
    /// Work done in Rust after the SQL, in the same transaction: what SQL cannot do alone.
    data: Option<DataStep>,
}

/// A migration's work on the data that needs Rust (not part of the checksum, which covers the
/// SQL; a data step never changes once released).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
enum DataStep {
    /// Normalizes every feed URL and merges the feeds that become one (F10).
    NormalizeFeedUrls,
    /// Sets every user's name key ([`crate::username_key`]), keeping colliding names apart.
    FillUsernameKeys,
    /// Replaces every stored md5 Fever digest by its SHA-256 (issue 31).
    HashFeverDigests,
}

/// Every migration this binary knows, oldest first.
pub const MIGRATIONS: &[Migration] = &[
    Migration {
        version: 1,
        name: "core",
        sqlite: include_str!("../migrations/sqlite/0001_core.sql"),
        postgres: include_str!("../migrations/postgres/0001_core.sql"),
        data: None,
    },
    Migration {
        version: 2,
        name: "bookmarks_preferences_raw",
        sqlite: include_str!("../migrations/sqlite/0002_bookmarks_preferences_raw.sql"),
        postgres: include_str!("../migrations/postgres/0002_bookmarks_preferences_raw.sql"),
        data: None,
    },
    Migration {
        version: 3,
        name: "fetch_jobs",
        sqlite: include_str!("../migrations/sqlite/0003_fetch_jobs.sql"),
        postgres: include_str!("../migrations/postgres/0003_fetch_jobs.sql"),
        data: None,
    },
    Migration {
        version: 4,
        name: "read_model",
        sqlite: include_str!("../migrations/sqlite/0004_read_model.sql"),
        postgres: include_str!("../migrations/postgres/0004_read_model.sql"),
        data: None,
    },
    Migration {
        version: 5,
        name: "item_insert_waits_for_mark_read",
        sqlite: include_str!("../migrations/sqlite/0005_item_insert_waits_for_mark_read.sql"),
        postgres: include_str!("../migrations/postgres/0005_item_insert_waits_for_mark_read.sql"),
        data: None,
    },
    Migration {
        version: 6,
        name: "search",
        sqlite: include_str!("../migrations/sqlite/0006_search.sql"),
        postgres: include_str!("../migrations/postgres/0006_search.sql"),
        data: None,
    },
    Migration {
        version: 7,
        name: "item_tombstones",
        sqlite: include_str!("../migrations/sqlite/0007_item_tombstones.sql"),
        postgres: include_str!("../migrations/postgres/0007_item_tombstones.sql"),
        data: None,
    },
    Migration {
        version: 8,
        name: "sync_apis",
        sqlite: include_str!("../migrations/sqlite/0008_sync_apis.sql"),
        postgres: include_str!("../migrations/postgres/0008_sync_apis.sql"),
        data: None,
    },
    Migration {
        version: 9,
        name: "item_thumbnail",
        sqlite: include_str!("../migrations/sqlite/0009_item_thumbnail.sql"),
        postgres: include_str!("../migrations/postgres/0009_item_thumbnail.sql"),
        data: None,
    },
    Migration {
        version: 10,
        name: "feed_url_identity",
        sqlite: include_str!("../migrations/sqlite/0010_feed_url_identity.sql"),
        postgres: include_str!("../migrations/postgres/0010_feed_url_identity.sql"),
        data: Some(DataStep::NormalizeFeedUrls),
    },
    Migration {
        version: 11,
        name: "username_keys",
        sqlite: include_str!("../migrations/sqlite/0011_username_keys.sql"),
        postgres: include_str!("../migrations/postgres/0011_username_keys.sql"),
        data: Some(DataStep::FillUsernameKeys),
    },
    Migration {
        version: 12,
        name: "search_order_index",
        sqlite: include_str!("../migrations/sqlite/0012_search_order_index.sql"),
        postgres: include_str!("../migrations/postgres/0012_search_order_index.sql"),
        data: None,
    },
    Migration {
        version: 13,
        name: "rate_limit_windows",
        sqlite: include_str!("../migrations/sqlite/0013_rate_limit_windows.sql"),
        postgres: include_str!("../migrations/postgres/0013_rate_limit_windows.sql"),
        data: None,
    },
    Migration {
        version: 14,
        name: "full_text",
        sqlite: include_str!("../migrations/sqlite/0014_full_text.sql"),
        postgres: include_str!("../migrations/postgres/0014_full_text.sql"),
        data: None,
    },
    Migration {
        version: 15,
        name: "scraped_sources",
        sqlite: include_str!("../migrations/sqlite/0015_scraped_sources.sql"),
        postgres: include_str!("../migrations/postgres/0015_scraped_sources.sql"),
        data: None,
    },
    Migration {
        version: 16,
        name: "feed_body_validators",
        sqlite: include_str!("../migrations/sqlite/0016_feed_body_validators.sql"),
        postgres: include_str!("../migrations/postgres/0016_feed_body_validators.sql"),
        data: None,
    },
    Migration {
        version: 17,
        name: "usage_counts",
        sqlite: include_str!("../migrations/sqlite/0017_usage_counts.sql"),
        postgres: include_str!("../migrations/postgres/0017_usage_counts.sql"),
        data: None,
    },
    Migration {
        version: 18,
        name: "item_insert_counts_per_statement",
        sqlite: include_str!("../migrations/sqlite/0018_item_insert_counts_per_statement.sql"),
        postgres: include_str!("../migrations/postgres/0018_item_insert_counts_per_statement.sql"),
        data: None,
    },
    Migration {
        version: 19,
        name: "site_favicons",
        sqlite: include_str!("../migrations/sqlite/0019_site_favicons.sql"),
        postgres: include_str!("../migrations/postgres/0019_site_favicons.sql"),
        data: None,
    },
    Migration {
        version: 20,
        name: "tags",
        sqlite: include_str!("../migrations/sqlite/0020_tags.sql"),
        postgres: include_str!("../migrations/postgres/0020_tags.sql"),
        data: None,
    },
    Migration {
        version: 21,
        name: "popularity",
        sqlite: include_str!("../migrations/sqlite/0021_popularity.sql"),
        postgres: include_str!("../migrations/postgres/0021_popularity.sql"),
        data: None,
    },
    Migration {
        version: 22,
        name: "embeddings",
        sqlite: include_str!("../migrations/sqlite/0022_embeddings.sql"),
        postgres: include_str!("../migrations/postgres/0022_embeddings.sql"),
        data: None,
    },
    Migration {
        version: 23,
        name: "summaries",
        sqlite: include_str!("../migrations/sqlite/0023_summaries.sql"),
        postgres: include_str!("../migrations/postgres/0023_summaries.sql"),
        data: None,
    },
    Migration {
        version: 24,
        name: "webhooks",
        sqlite: include_str!("../migrations/sqlite/0024_webhooks.sql"),
        postgres: include_str!("../migrations/postgres/0024_webhooks.sql"),
        data: None,
    },
    Migration {
        version: 25,
        name: "full_text_search",
        sqlite: include_str!("../migrations/sqlite/0025_full_text_search.sql"),
        postgres: include_str!("../migrations/postgres/0025_full_text_search.sql"),
        data: None,
    },
    Migration {
        version: 26,
        name: "websub",
        sqlite: include_str!("../migrations/sqlite/0026_websub.sql"),
        postgres: include_str!("../migrations/postgres/0026_websub.sql"),
        data: None,
    },
    Migration {
        version: 27,
        name: "second_factors",
        sqlite: include_str!("../migrations/sqlite/0027_second_factors.sql"),
        postgres: include_str!("../migrations/postgres/0027_second_factors.sql"),
        data: None,
    },
    Migration {
        version: 28,
        name: "oidc",
        sqlite: include_str!("../migrations/sqlite/0028_oidc.sql"),
        postgres: include_str!("../migrations/postgres/0028_oidc.sql"),
        data: None,
    },
    Migration {
        version: 29,
        name: "summary_sources",
        sqlite: include_str!("../migrations/sqlite/0029_summary_sources.sql"),
        postgres: include_str!("../migrations/postgres/0029_summary_sources.sql"),
        data: None,
    },
    Migration {
        version: 30,
        name: "sync_arrival",
        sqlite: include_str!("../migrations/sqlite/0030_sync_arrival.sql"),
        postgres: include_str!("../migrations/postgres/0030_sync_arrival.sql"),
        data: None,
    },
    Migration {
        version: 31,
        name: "sync_arrival_at_commit",
        sqlite: include_str!("../migrations/sqlite/0031_sync_arrival_at_commit.sql"),
        postgres: include_str!("../migrations/postgres/0031_sync_arrival_at_commit.sql"),
        data: None,
    },
    Migration {
        version: 32,
        name: "challenge_clients",
        sqlite: include_str!("../migrations/sqlite/0032_challenge_clients.sql"),
        postgres: include_str!("../migrations/postgres/0032_challenge_clients.sql"),
        data: None,
    },
    Migration {
        version: 33,
        name: "fever_digest_hashes",
        sqlite: include_str!("../migrations/sqlite/0033_fever_digest_hashes.sql"),
        postgres: include_str!("../migrations/postgres/0033_fever_digest_hashes.sql"),
        data: Some(DataStep::HashFeverDigests),
    },
    Migration {
        version: 34,
        name: "drop_fever_md5",
        sqlite: include_str!("../migrations/sqlite/0034_drop_fever_md5.sql"),
        postgres: include_str!("../migrations/postgres/0034_drop_fever_md5.sql"),
        data: None,
    },
    Migration {
        version: 35,
        name: "webhook_signing",
        sqlite: include_str!("../migrations/sqlite/0035_webhook_signing.sql"),
        postgres: include_str!("../migrations/postgres/0035_webhook_signing.sql"),
        data: None,
    },
    Migration {
        version: 36,
        name: "user_daily_requests",
        sqlite: include_str!("../migrations/sqlite/0036_user_daily_requests.sql"),
        postgres: include_str!("../migrations/postgres/0036_user_daily_requests.sql"),
        data: None,
    },
    Migration {
        version: 37,
        name: "import_jobs",
        sqlite: include_str!("../migrations/sqlite/0037_import_jobs.sql"),
        postgres: include_str!("../migrations/postgres/0037_import_jobs.sql"),
        data: None,
    },
    Migration {
        version: 38,
        name: "feed_former_urls",
        sqlite: include_str!("../migrations/sqlite/0038_feed_former_urls.sql"),
        postgres: include_str!("../migrations/postgres/0038_feed_former_urls.sql"),
        data: None,
    },
    Migration {
        version: 39,
        name: "subscription_suspend",
        sqlite: include_str!("../migrations/sqlite/0039_subscription_suspend.sql"),
        postgres: include_str!("../migrations/postgres/0039_subscription_suspend.sql"),
        data: None,
    },
    Migration {
        version: 40,
        name: "rules",
        sqlite: include_str!("../migrations/sqlite/0040_rules.sql"),
        postgres: include_str!("../migrations/postgres/0040_rules.sql"),
        data: None,
    },
    Migration {
        version: 41,
        name: "rule_ages",
        sqlite: include_str!("../migrations/sqlite/0041_rule_ages.sql"),
        postgres: include_str!("../migrations/postgres/0041_rule_ages.sql"),
        data: None,
    },
    Migration {
        version: 42,
        name: "preferred_language",
        sqlite: include_str!("../migrations/sqlite/0042_preferred_language.sql"),
        postgres: include_str!("../migrations/postgres/0042_preferred_language.sql"),
        data: None,
    },
    Migration {
        version: 43,
        name: "mark_read_on_scroll",
        sqlite: include_str!("../migrations/sqlite/0043_mark_read_on_scroll.sql"),
        postgres: include_str!("../migrations/postgres/0043_mark_read_on_scroll.sql"),
        data: None,
    },
    Migration {
        version: 44,
        name: "duplicates",
        sqlite: include_str!("../migrations/sqlite/0044_duplicates.sql"),
        postgres: include_str!("../migrations/postgres/0044_duplicates.sql"),
        data: None,
    },
    Migration {
        version: 45,
        name: "mail",
        sqlite: include_str!("../migrations/sqlite/0045_mail.sql"),
        postgres: include_str!("../migrations/postgres/0045_mail.sql"),
        data: None,
    },
    Migration {
        version: 46,
        name: "state_counts_per_statement",
        sqlite: include_str!("../migrations/sqlite/0046_state_counts_per_statement.sql"),
        postgres: include_str!("../migrations/postgres/0046_state_counts_per_statement.sql"),
        data: None,
    },
    Migration {
        version: 47,
        name: "languages",
        sqlite: include_str!("../migrations/sqlite/0047_languages.sql"),
        postgres: include_str!("../migrations/postgres/0047_languages.sql"),
        data: None,
    },
    Migration {
        version: 48,
        name: "translations",
        sqlite: include_str!("../migrations/sqlite/0048_translations.sql"),
        postgres: include_str!("../migrations/postgres/0048_translations.sql"),
        data: None,
    },
    Migration {
        version: 49,
        name: "rule_outcome_rows",
        sqlite: include_str!("../migrations/sqlite/0049_rule_outcome_rows.sql"),
        postgres: include_str!("../migrations/postgres/0049_rule_outcome_rows.sql"),
        data: None,
    },
    Migration {
        version: 50,
        name: "summary_translations",
        sqlite: include_str!("../migrations/sqlite/0050_summary_translations.sql"),
        postgres: include_str!("../migrations/postgres/0050_summary_translations.sql"),
        data: None,
    },
    Migration {
        version: 51,
        name: "full_text_host_pages",
        sqlite: include_str!("../migrations/sqlite/0051_full_text_host_pages.sql"),
        postgres: include_str!("../migrations/postgres/0051_full_text_host_pages.sql"),
        data: None,
    },
    Migration {
        version: 52,
        name: "user_items_covering_key",
        sqlite: include_str!("../migrations/sqlite/0052_user_items_covering_key.sql"),
        postgres: include_str!("../migrations/postgres/0052_user_items_covering_key.sql"),
        data: None,
    },
    Migration {
        version: 53,
        name: "story_keys_without_foreign_key",
        sqlite: include_str!("../migrations/sqlite/0053_story_keys_without_foreign_key.sql"),
        postgres: include_str!("../migrations/postgres/0053_story_keys_without_foreign_key.sql"),
        data: None,
    },
    Migration {
        version: 54,
        name: "bookmark_language",
        sqlite: include_str!("../migrations/sqlite/0054_bookmark_language.sql"),
        postgres: include_str!("../migrations/postgres/0054_bookmark_language.sql"),
        data: None,
    },
    Migration {
        version: 55,
        name: "item_labels_without_foreign_keys",
        sqlite: include_str!("../migrations/sqlite/0055_item_labels_without_foreign_keys.sql"),
        postgres: include_str!("../migrations/postgres/0055_item_labels_without_foreign_keys.sql"),
        data: None,
    },
    Migration {
        version: 56,
        name: "user_items_dates",
        sqlite: include_str!("../migrations/sqlite/0056_user_items_dates.sql"),
        postgres: include_str!("../migrations/postgres/0056_user_items_dates.sql"),
        data: None,
    },
    Migration {
        version: 57,
        name: "item_label_names",
        sqlite: include_str!("../migrations/sqlite/0057_item_label_names.sql"),
        postgres: include_str!("../migrations/postgres/0057_item_label_names.sql"),
        data: None,
    },
    Migration {
        version: 58,
        name: "fetch_triggers_by_key",
        sqlite: include_str!("../migrations/sqlite/0058_fetch_triggers_by_key.sql"),
        postgres: include_str!("../migrations/postgres/0058_fetch_triggers_by_key.sql"),
        data: None,
    },
    Migration {
        version: 59,
        name: "item_tags_without_foreign_keys",
        sqlite: include_str!("../migrations/sqlite/0059_item_tags_without_foreign_keys.sql"),
        postgres: include_str!("../migrations/postgres/0059_item_tags_without_foreign_keys.sql"),
        data: None,
    },
    Migration {
        version: 60,
        name: "subscription_triggers_by_key",
        sqlite: include_str!("../migrations/sqlite/0060_subscription_triggers_by_key.sql"),
        postgres: include_str!("../migrations/postgres/0060_subscription_triggers_by_key.sql"),
        data: None,
    },
    Migration {
        version: 61,
        name: "subscription_backlog_without_lookups",
        sqlite: include_str!("../migrations/sqlite/0061_subscription_backlog_without_lookups.sql"),
        postgres: include_str!(
            "../migrations/postgres/0061_subscription_backlog_without_lookups.sql"
        ),
        data: None,
    },
    Migration {
        version: 62,
        name: "subscription_departure_by_key",
        sqlite: include_str!("../migrations/sqlite/0062_subscription_departure_by_key.sql"),
        postgres: include_str!("../migrations/postgres/0062_subscription_departure_by_key.sql"),
        data: None,
    },
    Migration {
        version: 63,
        name: "sync_pending_by_transaction",
        sqlite: include_str!("../migrations/sqlite/0063_sync_pending_by_transaction.sql"),
        postgres: include_str!("../migrations/postgres/0063_sync_pending_by_transaction.sql"),
        data: None,
    },
];

/// An arbitrary constant naming tidings' migration lock among PostgreSQL advisory locks.
const PG_MIGRATION_LOCK: i64 = 0x7469_6469_6e67_7301;

const CREATE_MIGRATIONS_TABLE: &str = "CREATE TABLE IF NOT EXISTS schema_migrations (
    version     BIGINT PRIMARY KEY,
    name        TEXT   NOT NULL,
    checksum    TEXT   NOT NULL,
    applied_at  BIGINT NOT NULL
)";

/// How the database's schema compares with what this binary expects.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum SchemaStatus {
    /// Every known migration is applied.
    Current {
        /// The schema version.
        version: i64,
    },
    /// Some migrations are not applied yet.
    Behind {
        /// The applied version (0 for an empty database).
        version: i64,
        /// The version this binary would migrate to.
        latest: i64,
    },
    /// The database was migrated by a newer tidings.
    Ahead {
        /// The applied version.
        version: i64,
        /// The newest version this binary knows.
        latest: i64,
    },
}

impl Migration {
    fn sql(&self, store: &Store) -> &'static str {
        match &*store.pools {
            Pools::Sqlite { .. } => self.sqlite,
            Pools::Postgres(_) => self.postgres,
        }
    }

    fn checksum(&self, store: &Store) -> String {
        hex::encode(Sha256::digest(self.sql(store).as_bytes()))
    }
}

/// The newest version among [`MIGRATIONS`].
pub fn latest_version() -> i64 {
    MIGRATIONS.last().map_or(0, |m| m.version)
}

impl Store {
    /// Applies every pending migration. Returns the versions applied (empty when current).
    pub async fn migrate(&self) -> Result<Vec<i64>> {
        self.migrate_to(latest_version()).await
    }

    /// Applies pending migrations up to and including `target`. Upgrades in stages and tests
    /// of upgrades use it; everything else calls [`Store::migrate`].
    pub async fn migrate_to(&self, target: i64) -> Result<Vec<i64>> {
        match &*self.pools {
            Pools::Sqlite {
                writer,
                reader,
                path,
            } => {
                // The whole check-backup-apply runs inside one IMMEDIATE transaction: it holds
                // the write lock, so concurrent starters wait for one another (as the advisory
                // lock makes them on PostgreSQL) and the last one finds nothing left to do.
                let mut conn = writer.acquire().await?;
                let mut tx = conn.begin_with("BEGIN IMMEDIATE").await?;
                sqlx::raw_sql(CREATE_MIGRATIONS_TABLE)
                    .execute(&mut *tx)
                    .await?;
                let applied: Vec<(i64, String)> = applied_versions!(&mut *tx);
                self.check_applied(&applied)?;
                let pending = pending(&applied, target);
                if pending.is_empty() {
                    tx.commit().await?;
                    return Ok(Vec::new());
                }
                if let Some(path) = path
                    && !applied.is_empty()
                {
                    // VACUUM cannot run inside a transaction, so a reader connection writes
                    // the copy: it sees the committed state, which the lock keeps unchanged.
                    let mut reader = reader.acquire().await?;
                    backup_sqlite(&mut reader, path).await?;
                }
                let mut done = Vec::new();
                for migration in pending {
                    apply!(self, tx, migration);
                    done.push(migration.version);
                }
                tx.commit().await?;
                Ok(done)
            }
            Pools::Postgres(pool) => {
                let mut conn = pool.acquire().await?;
                sqlx::query("SELECT pg_advisory_lock($1)")
                    .bind(PG_MIGRATION_LOCK)
                    .execute(&mut *conn)
                    .await?;
                let result = async {
                    sqlx::raw_sql(CREATE_MIGRATIONS_TABLE)
                        .execute(&mut *conn)
                        .await?;
                    let applied: Vec<(i64, String)> = applied_versions!(&mut *conn);
                    self.check_applied(&applied)?;
                    let mut done = Vec::new();
                    for migration in pending(&applied, target) {
                        let mut tx = conn.begin().await?;
                        apply!(self, tx, migration);
                        tx.commit().await?;
                        done.push(migration.version);
                    }
                    Ok(done)
                }
                .await;
                let unlock = sqlx::query("SELECT pg_advisory_unlock($1)")
                    .bind(PG_MIGRATION_LOCK)
                    .execute(&mut *conn)
                    .await;
                if unlock.is_err() {
                    // A connection whose unlock failed must not return to the pool holding it.
                    conn.detach();
                }
                result
            }
        }
    }

    /// Compares the applied migrations with this binary's. Used by readiness checks.
    pub async fn schema_status(&self) -> Result<SchemaStatus> {
        let exists: bool = crate::with_db!(self, read, |db| {
            match self.engine() {
                crate::Engine::Sqlite => {
                    sqlx::query_scalar::<_, i64>(
                        "SELECT COUNT(*) FROM sqlite_master WHERE type = 'table' AND name = 'schema_migrations'",
                    )
                    .fetch_one(db)
                    .await?
                        > 0
                }
                crate::Engine::Postgres => {
                    sqlx::query_scalar::<_, i64>(
                        "SELECT COUNT(*) FROM information_schema.tables WHERE table_schema = current_schema() AND table_name = 'schema_migrations'",
                    )
                    .fetch_one(db)
                    .await?
                        > 0
                }
            }
        });
        let version = if exists {
            crate::with_db!(self, read, |db| {
                sqlx::query_scalar::<_, Option<i64>>("SELECT MAX(version) FROM schema_migrations")
                    .fetch_one(db)
                    .await?
            })
            .unwrap_or(0)
        } else {
            0
        };
        let latest = latest_version();
        Ok(match version.cmp(&latest) {
            std::cmp::Ordering::Equal => SchemaStatus::Current { version },
            std::cmp::Ordering::Less => SchemaStatus::Behind { version, latest },
            std::cmp::Ordering::Greater => SchemaStatus::Ahead { version, latest },
        })
    }

    /// Refuses a database migrated by a newer binary, or one whose applied migrations were
    /// edited since: running on either could corrupt data.
    fn check_applied(&self, applied: &[(i64, String)]) -> Result<()> {
        for (version, checksum) in applied {
            match MIGRATIONS.iter().find(|m| m.version == *version) {
                None => {
                    return Err(StoreError::Migration(format!(
                        "the database is at schema version {version}, newer than this tidings \
                         knows ({}); run a newer tidings or restore a backup",
                        latest_version()
                    )));
                }
                Some(known) if known.checksum(self) != *checksum => {
                    return Err(StoreError::Migration(format!(
                        "migration {version} ({}) applied to this database differs from the one \
                         built into this tidings",
                        known.name
                    )));
                }
                Some(_) => {}
            }
        }
        Ok(())
    }
}

fn pending(applied: &[(i64, String)], target: i64) -> Vec<&'static Migration> {
    MIGRATIONS
        .iter()
        .filter(|m| m.version <= target && !applied.iter().any(|(v, _)| *v == m.version))
        .collect()
}

/// Writes a consistent copy of the database next to it before a migration changes it.
async fn backup_sqlite(conn: &mut sqlx::SqliteConnection, path: &std::path::Path) -> Result<()> {
    let stamp = chrono::Utc::now().format("%Y%m%dT%H%M%SZ");
    let mut name = path.as_os_str().to_owned();
    name.push(format!(".bak-{stamp}"));
    let mut backup = std::path::PathBuf::from(name);
    let mut n = 1;
    while backup.exists() {
        let mut name = path.as_os_str().to_owned();
        name.push(format!(".bak-{stamp}-{n}"));
        backup = std::path::PathBuf::from(name);
        n += 1;
    }
    let target = backup.to_str().ok_or_else(|| {
        StoreError::Migration(format!("backup path {} is not UTF-8", backup.display()))
    })?;
    sqlx::query("VACUUM INTO $1")
        .bind(target.to_string())
        .execute(conn)
        .await
        .map_err(|e| StoreError::Migration(format!("backup to {target} failed: {e}")))?;
    tracing::info!(backup = %backup.display(), "backed up the database before migrating");
    Ok(())
}
