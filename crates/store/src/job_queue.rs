//! One queue of work on items, claimed with a lease: the shape every enrichment queue shares
//! (full text, summaries, tags, and any later one), written once.
//!
//! A queue is a table keyed by `item_id` with the columns `queued_at`, `lease_owner` and
//! `lease_until`, and, as the queue needs them, `not_before` (due time), `attempts`,
//! `last_error` and `version` (see the migrations of `full_text_jobs`, `summary_jobs`,
//! and `tag_jobs`). Several workers, in one process or many, share a queue:
//! a claim takes due rows that no live lease holds (`FOR UPDATE SKIP LOCKED` on PostgreSQL,
//! the single writer on SQLite), so that no item is worked on twice at once; a worker that
//! dies leaves a lease that simply expires.
//!
//! The queues differ in three ways, each a setting of [`JobQueue`]: which due rows a claim
//! takes first ([`ClaimOrder`]), when attempts are counted ([`Attempts`]), and whether rows
//! carry a version instead of a due time ([`JobQueue::versioned`]: an item whose text changes
//! is queued again, and an outcome for its older text is not kept). A queue may also be
//! filled from a backfill cursor ([`JobQueue::queue_backfill`]) for the items stored before
//! it existed, a batch at a time, so that its migration is instant.

use crate::lease::Lease;
use std::future::Future;

use crate::{Engine, Result, Store, in_tx, with_db};

/// An item's content for the query around it (the item `i`): its full article when one was
/// extracted (F6), else the content its feed gave. What tags and embeddings are made from, so
/// that an item whose feed carries only a teaser is described by the article itself.
pub(crate) const ITEM_CONTENT: &str =
    "COALESCE((SELECT t.content FROM item_full_texts t WHERE t.item_id = i.id), i.content)";

/// A queue table of item jobs; see the module documentation for the columns it must have.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct JobQueue {
    table: &'static str,
    order: ClaimOrder,
    attempts: Attempts,
    versioned: bool,
}

/// Which due rows a claim takes first.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum ClaimOrder {
    /// Earliest due first, then the lowest item id (full text, summaries): items are worked
    /// on in the order they came, a retried one when its back-off ends.
    DueFirst,
    /// The highest item id first (tags): the newest items are the ones read now,
    /// and a backfill of old items must not hold them up.
    NewestFirst,
}

/// When a queue counts an attempt on an item.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Attempts {
    /// At each claim ([`ClaimedJob::attempts`] includes the one starting);
    /// [`JobQueue::release`] gives it back.
    AtClaim,
    /// Never: the table has no `attempts` column.
    Never,
}

/// An item claimed from a [`JobQueue`].
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct ClaimedJob {
    /// The item's id.
    pub item_id: i64,
    /// Attempts so far, as the queue counts them ([`Attempts`]); 0 in a queue without.
    pub attempts: i64,
    /// The row's version in a versioned queue (0 in others): the outcome is kept only if the
    /// row is still at it.
    pub version: i64,
}

/// A claimed item with the text the tags are made from.
#[derive(Debug, Clone, PartialEq, Eq)]
pub(crate) struct ClaimedText {
    /// The claim.
    pub job: ClaimedJob,
    /// The item's title.
    pub title: Option<String>,
    /// Its sanitized content.
    pub content: Option<String>,
    /// Its sanitized summary.
    pub summary: Option<String>,
    /// Its language, a BCP 47 tag (issue 37), when known.
    pub language: Option<String>,
}

/// How [`JobQueue::claim_texts`] fills a queue that runs short: `step` (a backfill step,
/// answering how many items it queued) runs at most `rounds` times, and no more once it
/// queues nothing.
pub(crate) struct Refill<Step> {
    /// The most steps one claim runs.
    pub rounds: usize,
    /// One step.
    pub step: Step,
}

/// Items queued by one statement (well under SQLite's bound on parameters).
const QUEUED_PER_STATEMENT: usize = 500;

/// `$first, $first+1, …` for `count` bound values.
pub(crate) fn placeholders(first: usize, count: usize) -> String {
    (first..first + count)
        .map(|n| format!("${n}"))
        .collect::<Vec<_>>()
        .join(", ")
}

/// Queues `$ids` (a `&[i64]`) in the [`JobQueue`] `$queue` inside the transaction `$tx`, at
/// `$now`, in statements of the item writes' few shapes (each prepared once per connection).
/// See [`JobQueue::queue_values_sql`] for what happens to an item already queued.
macro_rules! queue_jobs {
    ($tx:expr, $queue:expr, $ids:expr, $now:expr) => {{
        let (queue, mut rest, now): ($crate::job_queue::JobQueue, &[i64], i64) =
            ($queue, $ids, $now);
        for size in $crate::batch::batches(rest.len()) {
            let (chunk, after) = rest.split_at(size);
            rest = after;
            let mut insert =
                sqlx::query(sqlx::AssertSqlSafe(queue.queue_values_sql(size))).bind(now);
            for id in chunk {
                insert = insert.bind(*id);
            }
            insert.execute(&mut *$tx).await?;
        }
    }};
}
pub(crate) use queue_jobs;

impl JobQueue {
    /// The queue kept in `table` (a name from this crate's migrations, never user input: it
    /// is written into the SQL): due first, attempts counted at each claim, a last error kept
    /// (full text, summaries). The other methods change one setting each.
    pub(crate) const fn new(table: &'static str) -> JobQueue {
        JobQueue {
            table,
            order: ClaimOrder::DueFirst,
            attempts: Attempts::AtClaim,
            versioned: false,
        }
    }

    /// The same queue, claimed newest item first ([`ClaimOrder::NewestFirst`]).
    pub(crate) const fn newest_first(self) -> JobQueue {
        JobQueue {
            order: ClaimOrder::NewestFirst,
            ..self
        }
    }

    /// The same queue, of versioned rows without a due time or attempts (tags): queueing an
    /// item already queued moves its version on and frees its lease (its text changed after
    /// it was claimed), and an outcome is kept only for the version it was claimed at (the
    /// tags' writes take a batch off the queue at their versions in one statement).
    pub(crate) const fn versioned(self) -> JobQueue {
        JobQueue {
            attempts: Attempts::Never,
            versioned: true,
            ..self
        }
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
            let sql = format!(
                "INSERT INTO {} (item_id, queued_at, not_before)
                 SELECT id, $1, $2 FROM items WHERE id IN ({})
                 ON CONFLICT (item_id) DO NOTHING",
                self.table,
                placeholders(3, chunk.len())
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

    /// The multi-row queueing of `rows` existing items inside a transaction (see
    /// [`queue_jobs`]): `$1` now, then the item ids; a row is due at once. An item already
    /// queued keeps its place, except in a versioned queue: there it gets a new version and
    /// loses its lease.
    pub(crate) fn queue_values_sql(&self, rows: usize) -> String {
        let table = self.table;
        let values: Vec<String> = (0..rows).map(|n| format!("(${}, $1)", n + 2)).collect();
        let values = values.join(", ");
        if self.versioned {
            format!(
                "INSERT INTO {table} (item_id, queued_at) VALUES {values}
                 ON CONFLICT (item_id) DO UPDATE SET version = {table}.version + 1,
                    queued_at = excluded.queued_at, lease_owner = NULL, lease_until = NULL"
            )
        } else {
            format!(
                "INSERT INTO {table} (item_id, queued_at) VALUES {values}
                 ON CONFLICT (item_id) DO NOTHING"
            )
        }
    }

    /// Queues the next `batch` of the items stored before the queue existed, from the cursor
    /// kept in `cursor_table` (one row, id 1: `next_item_id` up to `last_item_id`, set by the
    /// queue's migration), and records how far it got, in one transaction (resumable; several
    /// workers take turns, the row locked on PostgreSQL). Returns how many items were queued;
    /// 0 once every such item was.
    pub(crate) async fn queue_backfill(
        &self,
        store: &Store,
        cursor_table: &'static str,
        batch: i64,
        now: i64,
    ) -> Result<u64> {
        // Read without a lock first: once done, a step writes nothing.
        if store.backfill_cursor(cursor_table).await?.is_err() {
            return Ok(0);
        }
        let read = format!("SELECT next_item_id, last_item_id FROM {cursor_table} WHERE id = 1");
        let locked = match store.engine() {
            Engine::Sqlite => read,
            Engine::Postgres => format!("{read} FOR UPDATE"),
        };
        let progress = format!("UPDATE {cursor_table} SET next_item_id = $1 WHERE id = 1");
        let batch = batch.clamp(1, 10_000);
        Ok(in_tx!(store, |tx| {
            let state: Option<(i64, i64)> = sqlx::query_as(sqlx::AssertSqlSafe(locked))
                .fetch_optional(&mut *tx)
                .await?;
            match state {
                Some((next, last)) if next <= last => {
                    let ids: Vec<i64> = sqlx::query_scalar(
                        "SELECT id FROM items WHERE id >= $1 AND id <= $2 ORDER BY id LIMIT $3",
                    )
                    .bind(next)
                    .bind(last)
                    .bind(batch)
                    .fetch_all(&mut *tx)
                    .await?;
                    let next = match ids.last() {
                        Some(id) if ids.len() as i64 == batch => id + 1,
                        _ => last + 1,
                    };
                    queue_jobs!(tx, *self, &ids, now);
                    sqlx::query(sqlx::AssertSqlSafe(progress))
                        .bind(next)
                        .execute(&mut *tx)
                        .await?;
                    ids.len() as u64
                }
                _ => 0,
            }
        }))
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

    /// What a claim sets besides the lease: an attempt, in a queue that counts them then.
    fn attempt_counted_at_claim(&self) -> &'static str {
        match self.attempts {
            Attempts::AtClaim => ", attempts = attempts + 1",
            Attempts::Never => "",
        }
    }

    /// The columns a claim returns after the item id: its attempts and version (0 for what
    /// the queue does not have), as [`ClaimedJob`] reads them.
    fn claimed_columns(&self) -> &'static str {
        match (self.attempts, self.versioned) {
            (Attempts::Never, true) => "CAST(0 AS BIGINT), version",
            (Attempts::Never, false) => "CAST(0 AS BIGINT), CAST(0 AS BIGINT)",
            (_, true) => "attempts, version",
            (_, false) => "attempts, CAST(0 AS BIGINT)",
        }
    }

    /// Claims up to `limit` due items that no live lease holds, for `lease_seconds`, in the
    /// queue's [`ClaimOrder`], counting an attempt on each where the queue counts them then.
    pub(crate) async fn claim(
        &self,
        store: &Store,
        owner: &str,
        now: i64,
        limit: i64,
        lease_seconds: i64,
    ) -> Result<Vec<ClaimedJob>> {
        let table = self.table;
        let attempt = self.attempt_counted_at_claim();
        let returned = self.claimed_columns();
        // A versioned queue has no due time: every row is due.
        let (due, order) = match (self.versioned, self.order) {
            (true, ClaimOrder::DueFirst) => ("", "item_id"),
            (true, ClaimOrder::NewestFirst) => ("", "item_id DESC"),
            (false, ClaimOrder::DueFirst) => ("not_before <= $3 AND ", "not_before, item_id"),
            (false, ClaimOrder::NewestFirst) => ("not_before <= $3 AND ", "item_id DESC"),
        };
        let sql = Lease {
            table,
            set: &format!("lease_owner = $1, lease_until = $2{attempt}"),
            key: "item_id",
            pick: &format!(
                "SELECT item_id FROM {table}
                 WHERE {due}(lease_until IS NULL OR lease_until <= $3)
                 ORDER BY {order} LIMIT $4"
            ),
            lock: "FOR UPDATE SKIP LOCKED",
            returning: &format!("item_id, {returned}"),
        }
        .sql(store.engine());
        self.claim_with(store, sql, owner, now, limit, lease_seconds)
            .await
    }

    /// Claims up to `limit` items like [`JobQueue::claim`], with their text, newest first.
    /// While fewer came, `refill` queues more and the rest is claimed (see [`Refill`]). Items
    /// deleted since they were queued are left out.
    pub(crate) async fn claim_texts<Step, Queued>(
        &self,
        store: &Store,
        owner: &str,
        now: i64,
        limit: i64,
        lease_seconds: i64,
        refill: Refill<Step>,
    ) -> Result<Vec<ClaimedText>>
    where
        Step: Fn() -> Queued,
        Queued: Future<Output = Result<u64>>,
    {
        let mut claimed = self.claim(store, owner, now, limit, lease_seconds).await?;
        let mut refilled = 0;
        while (claimed.len() as i64) < limit
            && refilled < refill.rounds
            && (refill.step)().await? > 0
        {
            refilled += 1;
            let more = limit - claimed.len() as i64;
            claimed.extend(self.claim(store, owner, now, more, lease_seconds).await?);
        }
        if claimed.is_empty() {
            return Ok(Vec::new());
        }
        let language = store.language_column().await;
        let sql = format!(
            "SELECT i.id, i.title, {ITEM_CONTENT}, i.summary, {language} FROM items i
             WHERE i.id IN ({}) ORDER BY i.id DESC",
            placeholders(1, claimed.len())
        );
        #[allow(clippy::type_complexity)]
        let rows: Vec<(
            i64,
            Option<String>,
            Option<String>,
            Option<String>,
            Option<String>,
        )> = with_db!(store, read, |db| {
            let mut query = sqlx::query_as(sqlx::AssertSqlSafe(sql));
            for job in &claimed {
                query = query.bind(job.item_id);
            }
            query.fetch_all(db).await?
        });
        let jobs: std::collections::HashMap<i64, ClaimedJob> =
            claimed.into_iter().map(|job| (job.item_id, job)).collect();
        Ok(rows
            .into_iter()
            .filter_map(|(item_id, title, content, summary, language)| {
                Some(ClaimedText {
                    job: *jobs.get(&item_id)?,
                    title,
                    content,
                    summary,
                    language,
                })
            })
            .collect())
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
            "UPDATE {} SET lease_owner = $1, lease_until = $2{}
             WHERE item_id = $4 AND (lease_until IS NULL OR lease_until <= $3)
             RETURNING item_id, {}",
            self.table,
            self.attempt_counted_at_claim(),
            self.claimed_columns()
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
        let rows: Vec<(i64, i64, i64)> = with_db!(store, write, |db| {
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
            .map(|(item_id, attempts, version)| ClaimedJob {
                item_id,
                attempts,
                version,
            })
            .collect();
        // RETURNING gives no order on PostgreSQL.
        match self.order {
            ClaimOrder::DueFirst => jobs.sort_by_key(|job| job.item_id),
            ClaimOrder::NewestFirst => jobs.sort_by_key(|job| std::cmp::Reverse(job.item_id)),
        }
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

    /// The queue's table.
    pub(crate) fn table(&self) -> &'static str {
        self.table
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
