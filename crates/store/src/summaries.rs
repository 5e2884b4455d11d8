//! Summaries (F42): each item's generated summary, stored once and never computed again; the
//! queue of items waiting for one; which new items users want summarized; and the per-day
//! count of requests made to a remote provider, so that its budget holds across processes.

use std::collections::HashMap;

use crate::job_queue::JobQueue;
use crate::{Result, Store, in_tx, with_db};

/// The queue of items waiting for their summary.
const SUMMARY_JOBS: JobQueue = JobQueue::new("summary_jobs");

/// How many times longer than a summary's source an item's full article must be for the
/// summary to be made again from it: a summary of a teaser (a first paragraph, a sentence) is
/// redone once the article arrives, while an article about as long as the feed's text (or a
/// page fetched again) changes nothing.
pub const REDO_SUMMARY_FACTOR: i64 = 2;

/// An item's generated summary.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct GeneratedSummary {
    /// The item's id.
    pub item_id: i64,
    /// The summary, plain text.
    pub text: String,
    /// Who wrote it: `local`, `openai` or `anthropic`.
    pub provider: String,
    /// The remote provider's model, when one wrote it.
    pub model: Option<String>,
    /// When it was stored (Unix seconds).
    pub created_at: i64,
    /// Characters of the text it was made from; `None` for summaries stored before this was
    /// recorded.
    pub source_chars: Option<i64>,
}

/// An item claimed for its summary, with the text to summarize.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct SummaryJob {
    /// The item's id.
    pub item_id: i64,
    /// Attempts so far, this one included.
    pub attempts: i64,
    /// The item's title.
    pub title: Option<String>,
    /// The best text the item has, as sanitized HTML: the article from its page (full text)
    /// when one was kept, else the feed's content, else its summary.
    pub html: Option<String>,
}

/// An item's place in the summary queue.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct SummaryJobState {
    /// Attempts so far.
    pub attempts: i64,
    /// When it is due next (Unix seconds).
    pub not_before: i64,
    /// Why the last attempt failed, if it did.
    pub last_error: Option<String>,
}

/// An item's text to summarize, best first, for the item `i` of the query around it.
const ITEM_HTML: &str = "COALESCE((SELECT t.content FROM item_full_texts t WHERE t.item_id = i.id),
                                  NULLIF(i.content, ''), i.summary)";

/// [`Store::queue_new_summaries`] on `$db`, a connection or a transaction (a fetch queues them
/// in its own transaction: [`crate::FetchWrites::summaries`]); evaluates to how many were
/// queued.
macro_rules! queue_new_summaries_on {
    ($db:expr, $feed_id:expr, $first_seen_at:expr) => {{
        let (feed_id, first_seen_at): (i64, i64) = ($feed_id, $first_seen_at);
        sqlx::query(
            "INSERT INTO summary_jobs (item_id, queued_at, not_before)
             SELECT i.id, $2, $2 FROM items i
             WHERE i.feed_id = $1 AND i.fetched_at = $2
               AND NOT EXISTS (SELECT 1 FROM item_summaries m WHERE m.item_id = i.id)
               AND EXISTS (SELECT 1 FROM subscriptions s
                           JOIN user_preferences p ON p.user_id = s.user_id
                           WHERE s.feed_id = i.feed_id
                             AND (p.summarize = 'all'
                                  OR (p.summarize = 'chosen' AND s.summarize)))
             ON CONFLICT (item_id) DO NOTHING",
        )
        .bind(feed_id)
        .bind(first_seen_at)
        .execute($db)
        .await?
        .rows_affected()
    }};
}
pub(crate) use queue_new_summaries_on;

impl Store {
    /// The summaries of those of `item_ids` that have one.
    pub async fn summaries_of_items(
        &self,
        item_ids: &[i64],
    ) -> Result<HashMap<i64, GeneratedSummary>> {
        let mut found = HashMap::new();
        // Pages of the API are at most 200 items; chunks keep any caller under SQLite's
        // bound on parameters.
        for chunk in item_ids.chunks(500) {
            let placeholders: Vec<String> = (1..=chunk.len()).map(|n| format!("${n}")).collect();
            let sql = format!(
                "SELECT item_id, text, provider, model, created_at, source_chars
                 FROM item_summaries WHERE item_id IN ({})",
                placeholders.join(", ")
            );
            #[allow(clippy::type_complexity)]
            let rows: Vec<(i64, String, String, Option<String>, i64, Option<i64>)> =
                with_db!(self, read, |db| {
                    let mut query = sqlx::query_as(sqlx::AssertSqlSafe(sql));
                    for id in chunk {
                        query = query.bind(*id);
                    }
                    query.fetch_all(db).await?
                });
            for (item_id, text, provider, model, created_at, source_chars) in rows {
                found.insert(
                    item_id,
                    GeneratedSummary {
                        item_id,
                        text,
                        provider,
                        model,
                        created_at,
                        source_chars,
                    },
                );
            }
        }
        Ok(found)
    }

    /// An item's summary, if it has one. The caller checks that the user may see the item.
    pub async fn generated_summary(&self, item_id: i64) -> Result<Option<GeneratedSummary>> {
        Ok(self.summaries_of_items(&[item_id]).await?.remove(&item_id))
    }

    /// Stores an item's summary, made from a text of `source_chars` characters, and takes the
    /// item off the queue, in one transaction. An item that already has one keeps it
    /// (summaries are not computed again, and two workers racing store the first), unless
    /// this one was made from a text at least [`REDO_SUMMARY_FACTOR`] times longer (the
    /// article that arrived after a summary of its teaser). Answers the summary the item has
    /// now, `None` when the item was deleted meanwhile.
    pub async fn save_summary(
        &self,
        item_id: i64,
        text: &str,
        provider: &str,
        model: Option<&str>,
        source_chars: i64,
        now: i64,
    ) -> Result<Option<GeneratedSummary>> {
        // Stored like any text from outside: without control characters (PostgreSQL refuses
        // a NUL).
        let text = crate::text::strip_control_chars(text);
        in_tx!(self, |tx| {
            sqlx::query(
                "INSERT INTO item_summaries (item_id, text, provider, model, created_at, source_chars)
                 SELECT id, $2, $3, $4, $5, $6 FROM items WHERE id = $1
                 ON CONFLICT (item_id) DO UPDATE SET text = excluded.text,
                    provider = excluded.provider, model = excluded.model,
                    created_at = excluded.created_at, source_chars = excluded.source_chars
                 WHERE item_summaries.source_chars IS NOT NULL
                   AND item_summaries.source_chars * $7 <= excluded.source_chars",
            )
            .bind(item_id)
            .bind(text.as_ref())
            .bind(provider)
            .bind(model)
            .bind(now)
            .bind(source_chars)
            .bind(REDO_SUMMARY_FACTOR)
            .execute(&mut *tx)
            .await?;
            sqlx::query(sqlx::AssertSqlSafe(SUMMARY_JOBS.complete_sql()))
                .bind(item_id)
                .execute(&mut *tx)
                .await?;
        });
        self.generated_summary(item_id).await
    }

    /// Queues the items `feed_id`'s fetch just stored (first seen at `first_seen_at`) that a
    /// subscriber wants summarized (preference `all`, or `chosen` with the subscription's
    /// `summarize` on) and that have no summary yet, due at `first_seen_at`. One statement.
    /// Returns how many were queued.
    pub async fn queue_new_summaries(&self, feed_id: i64, first_seen_at: i64) -> Result<u64> {
        Ok(with_db!(self, write, |db| {
            queue_new_summaries_on!(db, feed_id, first_seen_at)
        }))
    }

    /// Queues items for their summary, due at `not_before`; items already queued keep their
    /// place. Returns how many were queued.
    pub async fn queue_summaries(
        &self,
        item_ids: &[i64],
        now: i64,
        not_before: i64,
    ) -> Result<u64> {
        SUMMARY_JOBS.queue(self, item_ids, now, not_before).await
    }

    /// Items waiting in the summary queue (leased ones included).
    pub async fn summary_queue_len(&self) -> Result<i64> {
        SUMMARY_JOBS.len(self).await
    }

    /// Claims up to `limit` due items of the summary queue for `lease_seconds`, with their
    /// text. Several workers never get the same item.
    pub async fn claim_summary_jobs(
        &self,
        owner: &str,
        now: i64,
        limit: i64,
        lease_seconds: i64,
    ) -> Result<Vec<SummaryJob>> {
        let claimed = SUMMARY_JOBS
            .claim(self, owner, now, limit, lease_seconds)
            .await?;
        let mut jobs = Vec::with_capacity(claimed.len());
        for job in claimed {
            jobs.extend(self.summary_job(job.item_id, job.attempts).await?);
        }
        Ok(jobs)
    }

    /// Claims one queued item now, whatever its due time (the reader asked for it); `None`
    /// when another worker holds it or it is not queued.
    pub async fn claim_summary_item(
        &self,
        item_id: i64,
        owner: &str,
        now: i64,
        lease_seconds: i64,
    ) -> Result<Option<SummaryJob>> {
        match SUMMARY_JOBS
            .claim_item(self, item_id, owner, now, lease_seconds)
            .await?
        {
            Some(job) => self.summary_job(job.item_id, job.attempts).await,
            None => Ok(None),
        }
    }

    /// A claimed item with its title and text.
    async fn summary_job(&self, item_id: i64, attempts: i64) -> Result<Option<SummaryJob>> {
        let sql = format!("SELECT i.title, {ITEM_HTML} FROM items i WHERE i.id = $1");
        let row: Option<(Option<String>, Option<String>)> = with_db!(self, read, |db| {
            sqlx::query_as(sqlx::AssertSqlSafe(sql))
                .bind(item_id)
                .fetch_optional(db)
                .await?
        });
        Ok(row.map(|(title, html)| SummaryJob {
            item_id,
            attempts,
            title,
            html,
        }))
    }

    /// Puts a claimed item back in the queue, due at `not_before`, with why it failed.
    pub async fn retry_summary(&self, item_id: i64, not_before: i64, error: &str) -> Result<()> {
        SUMMARY_JOBS
            .retry_later(self, item_id, not_before, error)
            .await?;
        Ok(())
    }

    /// Gives a claimed item back without counting the attempt, due at `not_before` (the
    /// provider's breaker is open, or its budget for the day is spent).
    pub async fn release_summary_job(
        &self,
        item_id: i64,
        owner: &str,
        not_before: i64,
    ) -> Result<()> {
        SUMMARY_JOBS.release(self, item_id, owner, not_before).await
    }

    /// Takes an item off the summary queue without a summary (it has no text, or its
    /// provider refused it for good).
    pub async fn drop_summary_job(&self, item_id: i64) -> Result<()> {
        SUMMARY_JOBS.complete(self, item_id).await
    }

    /// An item's place in the summary queue; `None` when it is not queued.
    pub async fn summary_job_state(&self, item_id: i64) -> Result<Option<SummaryJobState>> {
        Ok(SUMMARY_JOBS
            .state(self, item_id)
            .await?
            .map(|(attempts, not_before, last_error)| SummaryJobState {
                attempts,
                not_before,
                last_error,
            }))
    }

    /// Counts one request to `provider` on `day` (days since the epoch, UTC) if fewer than
    /// `budget` were made that day; answers whether it may be made. Atomic across processes.
    pub async fn take_summary_request(
        &self,
        day: i64,
        provider: &str,
        budget: i64,
    ) -> Result<bool> {
        self.take_daily_request(DailyRequests::Summaries, day, provider, budget)
            .await
    }

    /// Requests counted for `provider` on `day`.
    pub async fn summary_requests_on(&self, day: i64, provider: &str) -> Result<i64> {
        self.daily_requests_on(DailyRequests::Summaries, day, provider)
            .await
    }
}

/// A table of requests per day and provider, for an installation's daily budget.
#[derive(Debug, Clone, Copy)]
pub(crate) enum DailyRequests {
    /// `summary_requests`.
    Summaries,
    /// `translation_requests` (issue 37).
    Translations,
}

impl DailyRequests {
    fn table(self) -> &'static str {
        match self {
            DailyRequests::Summaries => "summary_requests",
            DailyRequests::Translations => "translation_requests",
        }
    }
}

impl Store {
    /// Counts one request to `provider` on `day` in `table` if fewer than `budget` were made
    /// that day (none when `budget` is 0 or less); answers whether it may be made. Atomic
    /// across processes.
    pub(crate) async fn take_daily_request(
        &self,
        table: DailyRequests,
        day: i64,
        provider: &str,
        budget: i64,
    ) -> Result<bool> {
        let table = table.table();
        let sql = format!(
            "INSERT INTO {table} (day, provider, requests)
             SELECT $1, $2, 1 WHERE $3 > 0
             ON CONFLICT (day, provider) DO UPDATE
                SET requests = {table}.requests + 1
                WHERE {table}.requests < $3
             RETURNING requests"
        );
        let counted: Option<i64> = with_db!(self, write, |db| {
            sqlx::query_scalar(sqlx::AssertSqlSafe(sql))
                .bind(day)
                .bind(provider)
                .bind(budget)
                .fetch_optional(db)
                .await?
        });
        Ok(counted.is_some())
    }

    /// Requests counted for `provider` on `day` in `table`.
    pub(crate) async fn daily_requests_on(
        &self,
        table: DailyRequests,
        day: i64,
        provider: &str,
    ) -> Result<i64> {
        let sql = format!(
            "SELECT requests FROM {} WHERE day = $1 AND provider = $2",
            table.table()
        );
        let count: Option<i64> = with_db!(self, read, |db| {
            sqlx::query_scalar(sqlx::AssertSqlSafe(sql))
                .bind(day)
                .bind(provider)
                .fetch_optional(db)
                .await?
        });
        Ok(count.unwrap_or(0))
    }
}
