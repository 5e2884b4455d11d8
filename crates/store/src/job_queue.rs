//! One queue of work on items, claimed with a lease: the shape every enrichment queue shares
//! (full text, summaries, and any later one), written once.
//!
//! A queue is a table keyed by `item_id` with the columns `queued_at`, `not_before` (due
//! time), `attempts`, `lease_owner`, `lease_until` and `last_error` (see the migrations of
//! `full_text_jobs` and `summary_jobs`). Several workers, in one process or many, share a
//! queue: a claim takes due rows that no live lease holds (`FOR UPDATE SKIP LOCKED` on
//! PostgreSQL, the single writer on SQLite), so that no item is worked on twice at once; a
//! worker that dies leaves a lease that simply expires.

use crate::{Engine, Result, Store, with_db};

/// A queue table of item jobs; see the module documentation for the columns it must have.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct JobQueue {
    table: &'static str,
}

/// An item claimed from a [`JobQueue`].
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct ClaimedJob {
    /// The item's id.
    pub item_id: i64,
    /// Attempts so far, this one included.
    pub attempts: i64,
}

/// Items queued by one statement (well under SQLite's bound on parameters).
const QUEUED_PER_STATEMENT: usize = 500;

impl JobQueue {
    /// The queue kept in `table` (a name from this crate's migrations, never user input: it
    /// is written into the SQL).
    pub(crate) const fn new(table: &'static str) -> JobQueue {
        JobQueue { table }
    }

    /// Queues items, due at `not_before`; an item already queued keeps its place and lease.
    /// Items that do not exist are skipped. Returns how many were queued.
    pub(crate) async fn queue(
        &self,
        store: &Store,
        item_ids: &[i64],
        now: i64,
        not_before: i64,
    ) -> Result<u64> {
        let mut queued = 0;
        for chunk in item_ids.chunks(QUEUED_PER_STATEMENT) {
            let placeholders: Vec<String> =
                (0..chunk.len()).map(|n| format!("${}", n + 3)).collect();
            let sql = format!(
                "INSERT INTO {} (item_id, queued_at, not_before)
                 SELECT id, $1, $2 FROM items WHERE id IN ({})
                 ON CONFLICT (item_id) DO NOTHING",
                self.table,
                placeholders.join(", ")
            );
            queued += with_db!(store, write, |db| {
                let mut insert = sqlx::query(sqlx::AssertSqlSafe(sql))
                    .bind(now)
                    .bind(not_before);
                for item_id in chunk {
                    insert = insert.bind(*item_id);
                }
                insert.execute(db).await?.rows_affected()
            });
        }
        Ok(queued)
    }

    /// Rows in the queue, leased ones included.
    pub(crate) async fn len(&self, store: &Store) -> Result<i64> {
        let sql = format!("SELECT COUNT(*) FROM {}", self.table);
        Ok(with_db!(store, read, |db| {
            sqlx::query_scalar::<_, i64>(sqlx::AssertSqlSafe(sql))
                .fetch_one(db)
                .await?
        }))
    }

    /// Claims up to `limit` due items that no live lease holds, for `lease_seconds`, earliest
    /// due first, counting an attempt on each.
    pub(crate) async fn claim(
        &self,
        store: &Store,
        owner: &str,
        now: i64,
        limit: i64,
        lease_seconds: i64,
    ) -> Result<Vec<ClaimedJob>> {
        let lock = match store.engine() {
            Engine::Sqlite => "",
            Engine::Postgres => "FOR UPDATE SKIP LOCKED",
        };
        let table = self.table;
        let sql = format!(
            "UPDATE {table} SET lease_owner = $1, lease_until = $2, attempts = attempts + 1
             WHERE item_id IN (SELECT item_id FROM {table}
                               WHERE not_before <= $3 AND (lease_until IS NULL OR lease_until <= $3)
                               ORDER BY not_before, item_id LIMIT $4 {lock})
             RETURNING item_id, attempts"
        );
        self.claim_with(store, sql, owner, now, limit, lease_seconds)
            .await
    }

    /// Claims one item at once whatever its due time (the reader asked for it), unless a
    /// live lease holds it: `None` then, or when it is not queued.
    pub(crate) async fn claim_item(
        &self,
        store: &Store,
        item_id: i64,
        owner: &str,
        now: i64,
        lease_seconds: i64,
    ) -> Result<Option<ClaimedJob>> {
        let sql = format!(
            "UPDATE {} SET lease_owner = $1, lease_until = $2, attempts = attempts + 1
             WHERE item_id = $4 AND (lease_until IS NULL OR lease_until <= $3)
             RETURNING item_id, attempts",
            self.table
        );
        Ok(self
            .claim_with(store, sql, owner, now, item_id, lease_seconds)
            .await?
            .into_iter()
            .next())
    }

    /// Runs a claim statement binding owner, lease end, now and `fourth`.
    async fn claim_with(
        &self,
        store: &Store,
        sql: String,
        owner: &str,
        now: i64,
        fourth: i64,
        lease_seconds: i64,
    ) -> Result<Vec<ClaimedJob>> {
        let lease_until = now.saturating_add(lease_seconds.max(1));
        let rows: Vec<(i64, i64)> = with_db!(store, write, |db| {
            sqlx::query_as(sqlx::AssertSqlSafe(sql))
                .bind(owner)
                .bind(lease_until)
                .bind(now)
                .bind(fourth)
                .fetch_all(db)
                .await?
        });
        let mut jobs: Vec<ClaimedJob> = rows
            .into_iter()
            .map(|(item_id, attempts)| ClaimedJob { item_id, attempts })
            .collect();
        // RETURNING gives no order on PostgreSQL.
        jobs.sort_by_key(|job| job.item_id);
        Ok(jobs)
    }

    /// Puts a claimed item back, due at `not_before`, with why it failed for now. Answers
    /// whether it was still queued.
    pub(crate) async fn retry_later(
        &self,
        store: &Store,
        item_id: i64,
        not_before: i64,
        error: &str,
    ) -> Result<bool> {
        let sql = format!(
            "UPDATE {} SET not_before = $2, lease_owner = NULL, lease_until = NULL,
                    last_error = $3
             WHERE item_id = $1",
            self.table
        );
        let error = crate::text::strip_control_chars(error);
        Ok(with_db!(store, write, |db| {
            sqlx::query(sqlx::AssertSqlSafe(sql))
                .bind(item_id)
                .bind(not_before)
                .bind(error.as_ref())
                .execute(db)
                .await?
                .rows_affected()
                > 0
        }))
    }

    /// Gives a claimed item back at once, as it was before the claim (the attempt is not
    /// counted): the worker stopped before doing it, or could not start it (a breaker open,
    /// a budget spent) and says when it may be tried.
    pub(crate) async fn release(
        &self,
        store: &Store,
        item_id: i64,
        owner: &str,
        not_before: i64,
    ) -> Result<()> {
        let sql = format!(
            "UPDATE {} SET not_before = $3, lease_owner = NULL, lease_until = NULL,
                    attempts = CASE WHEN attempts > 0 THEN attempts - 1 ELSE 0 END
             WHERE item_id = $1 AND lease_owner = $2",
            self.table
        );
        with_db!(store, write, |db| {
            sqlx::query(sqlx::AssertSqlSafe(sql))
                .bind(item_id)
                .bind(owner)
                .bind(not_before)
                .execute(db)
                .await?;
        });
        Ok(())
    }

    /// The statement that takes an item off the queue (done, or given up), for a caller that
    /// runs it in the transaction storing the outcome.
    pub(crate) fn complete_sql(&self) -> String {
        format!("DELETE FROM {} WHERE item_id = $1", self.table)
    }

    /// Takes an item off the queue.
    pub(crate) async fn complete(&self, store: &Store, item_id: i64) -> Result<()> {
        let sql = self.complete_sql();
        with_db!(store, write, |db| {
            sqlx::query(sqlx::AssertSqlSafe(sql))
                .bind(item_id)
                .execute(db)
                .await?;
        });
        Ok(())
    }

    /// An item's row: attempts, due time and last error; `None` when it is not queued.
    pub(crate) async fn state(
        &self,
        store: &Store,
        item_id: i64,
    ) -> Result<Option<(i64, i64, Option<String>)>> {
        let sql = format!(
            "SELECT attempts, not_before, last_error FROM {} WHERE item_id = $1",
            self.table
        );
        Ok(with_db!(store, read, |db| {
            sqlx::query_as(sqlx::AssertSqlSafe(sql))
                .bind(item_id)
                .fetch_optional(db)
                .await?
        }))
    }
}
