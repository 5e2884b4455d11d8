//! Full text (F6): each subscription's mode, the queue of items waiting for their article
//! page, and the articles extracted, kept apart from the feeds' content.

use crate::job_queue::JobQueue;
use crate::search_index::{item_index_value, translations_of, write_index_rows};
use crate::{Engine, Result, Store, in_tx, with_db};

/// The queue of items waiting for their article page.
const FULL_TEXT_JOBS: JobQueue = JobQueue::new("full_text_jobs");

/// Whether a subscription's items get their article page fetched.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq, PartialOrd, Ord, serde::Serialize)]
#[serde(rename_all = "lowercase")]
pub enum FullTextMode {
    /// Never fetched by the worker (the reader may still ask for one item).
    Never,
    /// Fetched when the feed's text is shorter than the threshold (the default).
    #[default]
    Auto,
    /// Fetched for every item.
    Always,
}

impl FullTextMode {
    /// Every mode, weakest first.
    pub const ALL: [FullTextMode; 3] = [
        FullTextMode::Never,
        FullTextMode::Auto,
        FullTextMode::Always,
    ];

    /// The stored and API spelling: `never`, `auto`, `always`.
    pub fn as_str(self) -> &'static str {
        match self {
            FullTextMode::Never => "never",
            FullTextMode::Auto => "auto",
            FullTextMode::Always => "always",
        }
    }

    /// Reads the stored and API spelling; `None` for anything else.
    pub fn parse(text: &str) -> Option<FullTextMode> {
        FullTextMode::ALL
            .into_iter()
            .find(|mode| mode.as_str() == text)
    }
}

/// What the `auto` mode fetches in the background (issue 38). Fetching the page of every short
/// item cost an import of 413 feeds 47,807 pages (every item of the backlog), most of them of
/// items nobody opened; `Read` fetches pages for what gets read.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq)]
pub enum FullTextAuto {
    /// The new short items of a feed that a subscriber in `auto` reads: at least one in
    /// [`READ_SHARE`] of its [`READ_WINDOW`] latest earlier items marked read one by one (a
    /// feed marked read all at once does not count). A feed's first fetch (an import's or a
    /// new subscription's backlog) is never fetched, since nothing of it was read yet.
    #[default]
    Read,
    /// Every new short item (the rule before issue 38).
    Short,
}

impl FullTextAuto {
    /// Every rule.
    pub const ALL: [FullTextAuto; 2] = [FullTextAuto::Read, FullTextAuto::Short];

    /// The setting's spelling: `read`, `short`.
    pub fn as_str(self) -> &'static str {
        match self {
            FullTextAuto::Read => "read",
            FullTextAuto::Short => "short",
        }
    }

    /// Reads the setting's spelling; `None` for anything else.
    pub fn parse(text: &str) -> Option<FullTextAuto> {
        FullTextAuto::ALL
            .into_iter()
            .find(|rule| rule.as_str() == text)
    }
}

/// How many of a feed's latest items (before the fetch at hand) tell whether a subscriber
/// reads it, for [`FullTextAuto::Read`].
pub const READ_WINDOW: i64 = 50;
/// A subscriber reads a feed when at least one in this many of its [`READ_WINDOW`] latest
/// items is marked read.
pub const READ_SHARE: i64 = 10;

/// For [`FullTextAuto::Read`]: the feed `$1`'s latest items stored before the item `$2` (the
/// fetch's first new one; ids grow with each insert, while a second's timestamp may be shared
/// with the fetch before), at most `$3` of them, and the most of them one subscriber in `auto`
/// marked read, one by one (an `item_states` row: marking a feed read all at once moves a
/// watermark and writes none). A read the subscriber's rules made as the item arrived is no
/// reading: such a row was written in the item's own fetch (its time is the item's
/// `fetched_at`, where a person's mark comes later), and a hidden item was never seen.
pub(crate) const FEED_READS_SQL: &str = "
    SELECT CAST((SELECT COUNT(*) FROM (SELECT 1 FROM items r
                                       WHERE r.feed_id = $1 AND r.id < $2
                                       LIMIT $3) n) AS BIGINT),
           CAST(COALESCE(MAX((SELECT COUNT(*) FROM item_states st
                              JOIN (SELECT r.id, r.fetched_at FROM items r
                                    WHERE r.feed_id = $1 AND r.id < $2
                                    ORDER BY r.id DESC
                                    LIMIT $3) w ON w.id = st.item_id
                              WHERE st.user_id = s.user_id AND st.is_read
                                AND NOT st.is_hidden AND st.updated_at > w.fetched_at)), 0)
                AS BIGINT)
    FROM subscriptions s WHERE s.feed_id = $1 AND s.full_text = 'auto'";

/// Whether `reads` of a feed's `recent` latest items make it a feed its subscriber reads.
pub(crate) fn reads_the_feed(recent: i64, reads: i64) -> bool {
    reads >= 1 && reads.saturating_mul(READ_SHARE) >= recent
}

/// Whether a subscriber in `auto` reads the feed `$feed_id` (see [`FullTextAuto::Read`]),
/// judged on its items stored before the item `$first_new`, on the transaction `$tx`.
macro_rules! feed_is_read_on {
    ($tx:expr, $feed_id:expr, $first_new:expr) => {{
        let (recent, reads): (i64, i64) = sqlx::query_as($crate::full_text::FEED_READS_SQL)
            .bind($feed_id)
            .bind($first_new)
            .bind($crate::full_text::READ_WINDOW)
            .fetch_one(&mut *$tx)
            .await?;
        $crate::full_text::reads_the_feed(recent, reads)
    }};
}
pub(crate) use feed_is_read_on;

/// The strongest mode among a feed's subscribers, as a number SQL can take the maximum of:
/// 0 never (or no subscriber), 1 auto, 2 always, for the item `i` of the query around it.
const FEED_MODE_RANK: &str = "CAST(COALESCE((SELECT MAX(CASE s.full_text WHEN 'always' THEN 2
                                                     WHEN 'auto' THEN 1 ELSE 0 END)
                                   FROM subscriptions s WHERE s.feed_id = i.feed_id), 0) AS BIGINT)";

fn mode_from_rank(rank: i64) -> FullTextMode {
    match rank {
        2 => FullTextMode::Always,
        1 => FullTextMode::Auto,
        _ => FullTextMode::Never,
    }
}

/// A queued (or loadable) item as the queries read it: id, feed, link, proxy, content,
/// summary, the feed's mode rank, attempts.
type JobRow = (
    i64,
    i64,
    Option<String>,
    Option<String>,
    Option<String>,
    Option<String>,
    i64,
    i64,
);

fn job_from_row(row: JobRow) -> FullTextJob {
    let (item_id, feed_id, url, proxy_url, content, summary, rank, attempts) = row;
    FullTextJob {
        item_id,
        feed_id,
        url,
        proxy_url,
        content,
        summary,
        attempts,
        mode: mode_from_rank(rank),
    }
}

/// An item stored by a feed's latest fetch, for the decision whether to queue it.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct FullTextCandidate {
    /// The item's id.
    pub item_id: i64,
    /// Its sanitized content.
    pub content: Option<String>,
    /// Its sanitized summary.
    pub summary: Option<String>,
}

/// A queued item claimed by a worker, with what fetching its page needs.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct FullTextJob {
    /// The item's id.
    pub item_id: i64,
    /// Its feed.
    pub feed_id: i64,
    /// The article's page (the item's link).
    pub url: Option<String>,
    /// The feed's proxy, which the page is fetched through too.
    pub proxy_url: Option<String>,
    /// The item's sanitized content, to compare the article with.
    pub content: Option<String>,
    /// Its sanitized summary.
    pub summary: Option<String>,
    /// Attempts so far, this one included.
    pub attempts: i64,
    /// The strongest mode among the feed's subscribers now (they may have changed it since
    /// the item was queued).
    pub mode: FullTextMode,
}

/// What became of an item's article page.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum FullTextOutcome {
    /// An article was extracted and kept.
    Extracted {
        /// The sanitized article.
        content: String,
        /// Characters of its text.
        text_chars: i64,
        /// The page it came from, after redirects.
        source_url: String,
    },
    /// An article was extracted but had no more text than the feed: nothing kept.
    Shorter {
        /// Characters of the article's text.
        text_chars: i64,
        /// The page, after redirects.
        source_url: String,
    },
    /// The page could not be fetched or held no article.
    Failed {
        /// Why, as the user should read it.
        error: String,
    },
}

/// An item's full text as the reader gets it.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct FullContent {
    /// The sanitized article; `None` when the page was tried and nothing was kept.
    pub content: Option<String>,
    /// When the page was fetched.
    pub fetched_at: i64,
    /// `extracted`, `shorter` or `failed`.
    pub outcome: String,
    /// Why nothing was kept, for `failed`.
    pub error: Option<String>,
}

impl Store {
    /// The strongest full-text mode among a feed's subscribers ([`FullTextMode::Never`] when
    /// it has none).
    pub async fn feed_full_text_mode(&self, feed_id: i64) -> Result<FullTextMode> {
        let rank: i64 = with_db!(self, read, |db| {
            sqlx::query_scalar(
                "SELECT CAST(COALESCE(MAX(CASE full_text WHEN 'always' THEN 2
                                                         WHEN 'auto' THEN 1 ELSE 0 END), 0)
                             AS BIGINT)
                 FROM subscriptions WHERE feed_id = $1",
            )
            .bind(feed_id)
            .fetch_one(db)
            .await?
        });
        Ok(mode_from_rank(rank))
    }

    /// The items of `feed_id` first stored at `first_seen_at` (the fetch that just stored
    /// them) that have a link, no article yet and no place in the queue.
    pub async fn full_text_candidates(
        &self,
        feed_id: i64,
        first_seen_at: i64,
    ) -> Result<Vec<FullTextCandidate>> {
        let rows: Vec<(i64, Option<String>, Option<String>)> = with_db!(self, read, |db| {
            sqlx::query_as(
                "SELECT i.id, i.content, i.summary FROM items i
                 WHERE i.feed_id = $1 AND i.fetched_at = $2 AND i.url IS NOT NULL
                   AND NOT EXISTS (SELECT 1 FROM item_full_texts t WHERE t.item_id = i.id)
                   AND NOT EXISTS (SELECT 1 FROM full_text_jobs j WHERE j.item_id = i.id)
                 ORDER BY i.id",
            )
            .bind(feed_id)
            .bind(first_seen_at)
            .fetch_all(db)
            .await?
        });
        Ok(rows
            .into_iter()
            .map(|(item_id, content, summary)| FullTextCandidate {
                item_id,
                content,
                summary,
            })
            .collect())
    }

    /// Queues items for their article page, due at `now`; items already queued stay as they
    /// are. Returns how many were queued.
    pub async fn queue_full_text(&self, item_ids: &[i64], now: i64) -> Result<u64> {
        FULL_TEXT_JOBS.queue(self, item_ids, now, now).await
    }

    /// Items with an article kept, for benchmarks.
    pub async fn count_full_texts(&self) -> Result<i64> {
        Ok(with_db!(self, read, |db| {
            sqlx::query_scalar::<_, i64>(
                "SELECT CAST(COUNT(*) AS BIGINT) FROM item_full_texts WHERE content IS NOT NULL",
            )
            .fetch_one(db)
            .await?
        }))
    }

    /// Items waiting in the full-text queue (leased ones included).
    pub async fn full_text_queue_len(&self) -> Result<i64> {
        FULL_TEXT_JOBS.len(self).await
    }

    /// Claims up to `limit` queued items that are due and not leased, for `lease_seconds`,
    /// oldest first. Several workers never get the same item (see [`JobQueue`]).
    pub async fn claim_full_text_jobs(
        &self,
        owner: &str,
        now: i64,
        limit: i64,
        lease_seconds: i64,
    ) -> Result<Vec<FullTextJob>> {
        let claimed = FULL_TEXT_JOBS
            .claim(self, owner, now, limit, lease_seconds)
            .await?;
        let read = format!(
            "SELECT j.item_id, i.feed_id, i.url, f.proxy_url, i.content, i.summary,
                    {FEED_MODE_RANK}, j.attempts
             FROM full_text_jobs j JOIN items i ON i.id = j.item_id JOIN feeds f ON f.id = i.feed_id
             WHERE j.item_id = $1 AND j.lease_owner = $2"
        );
        let mut jobs = Vec::with_capacity(claimed.len());
        // Claims are small (the worker's free slots), so one read per item keeps the SQL the
        // same on both engines.
        for job in claimed {
            let row: Option<JobRow> = with_db!(self, write, |db| {
                sqlx::query_as(sqlx::AssertSqlSafe(read.as_str()))
                    .bind(job.item_id)
                    .bind(owner)
                    .fetch_optional(db)
                    .await?
            });
            jobs.extend(row.map(job_from_row));
        }
        Ok(jobs)
    }

    /// What fetching an item's page needs, whether or not it is queued (the reader's "load
    /// full article"). `None` when the item does not exist.
    pub async fn full_text_source(&self, item_id: i64) -> Result<Option<FullTextJob>> {
        let sql = format!(
            "SELECT i.id, i.feed_id, i.url, f.proxy_url, i.content, i.summary, {FEED_MODE_RANK},
                    CAST(0 AS BIGINT)
             FROM items i JOIN feeds f ON f.id = i.feed_id WHERE i.id = $1"
        );
        let row: Option<JobRow> = with_db!(self, read, |db| {
            sqlx::query_as(sqlx::AssertSqlSafe(sql))
                .bind(item_id)
                .fetch_optional(db)
                .await?
        });
        Ok(row.map(job_from_row))
    }

    /// Puts a claimed item back in the queue, due at `not_before` (a page that failed for now:
    /// a time-out, a 5xx, a 429).
    pub async fn retry_full_text(&self, item_id: i64, not_before: i64, error: &str) -> Result<()> {
        FULL_TEXT_JOBS
            .retry_later(self, item_id, not_before, error)
            .await?;
        Ok(())
    }

    /// Records what became of an item's page and takes the item off the queue, in one
    /// transaction. A later outcome replaces an earlier one. An item deleted meanwhile is
    /// skipped; answers whether the outcome was stored.
    ///
    /// The item's search index row is written again in the same transaction, so that search
    /// finds the item by its article's words (or no longer, when this outcome kept none).
    pub async fn save_full_text(
        &self,
        item_id: i64,
        outcome: &FullTextOutcome,
        fetched_at: i64,
    ) -> Result<bool> {
        let (content, text_chars, source_url, name, error) = match outcome {
            FullTextOutcome::Extracted {
                content,
                text_chars,
                source_url,
            } => (
                Some(content.as_str()),
                *text_chars,
                Some(source_url.as_str()),
                "extracted",
                None,
            ),
            FullTextOutcome::Shorter {
                text_chars,
                source_url,
            } => (
                None,
                *text_chars,
                Some(source_url.as_str()),
                "shorter",
                None,
            ),
            FullTextOutcome::Failed { error } => (None, 0, None, "failed", Some(error.as_str())),
        };
        // A page's text is stored like a feed's: without control characters (PostgreSQL
        // refuses a NUL).
        let content = content.map(crate::text::strip_control_chars);
        let error = error.map(crate::text::strip_control_chars);
        let engine = self.engine();
        // Locked on PostgreSQL: a feed's update of the item, or a search backfill step, waits
        // for this and then reads this article (`search::full_texts_of`), and this indexes the
        // item as any update before it left it. (Not FOR UPDATE: rows that merely refer to
        // the item, its read state or tags, need not wait.)
        let item_sql = match engine {
            Engine::Sqlite => "SELECT title, content, summary FROM items WHERE id = $1",
            Engine::Postgres => {
                "SELECT title, content, summary FROM items WHERE id = $1 FOR NO KEY UPDATE"
            }
        };
        let translations_ready = self.translations_ready().await;
        let saved = in_tx!(self, |tx| {
            let item: Option<(Option<String>, Option<String>, Option<String>)> =
                sqlx::query_as(item_sql)
                    .bind(item_id)
                    .fetch_optional(&mut *tx)
                    .await?;
            let saved = sqlx::query(
                "INSERT INTO item_full_texts
                    (item_id, content, text_chars, source_url, outcome, error, fetched_at)
                 SELECT id, $2, $3, $4, $5, $6, $7 FROM items WHERE id = $1
                 ON CONFLICT (item_id) DO UPDATE SET content = excluded.content,
                    text_chars = excluded.text_chars, source_url = excluded.source_url,
                    outcome = excluded.outcome, error = excluded.error,
                    fetched_at = excluded.fetched_at",
            )
            .bind(item_id)
            .bind(content.as_deref())
            .bind(text_chars)
            .bind(source_url)
            .bind(name)
            .bind(error.as_deref())
            .bind(fetched_at)
            .execute(&mut *tx)
            .await?
            .rows_affected();
            if let Some((title, feed_content, summary)) = item.filter(|_| saved > 0) {
                // The row keeps the item's translations' words (issue 37).
                let translations = if translations_ready {
                    translations_of!(tx, &[item_id])
                } else {
                    std::collections::HashMap::new()
                };
                let value = item_index_value(
                    engine,
                    title.as_deref(),
                    feed_content.as_deref(),
                    summary.as_deref(),
                    content.as_deref(),
                    translations.get(&item_id).map_or(&[][..], Vec::as_slice),
                );
                write_index_rows!(tx, engine, &[(item_id, value.as_str())]);
                // A summary made from a text much shorter than this article (the feed's
                // teaser) is made once more, from the article (see `save_summary`).
                if content.is_some() {
                    // Tags and the related-items vector made from the feed's teaser are
                    // made again when the article is at least as many times longer as a
                    // summary needs to be redone (twice); they read the article first
                    // (`job_queue::ITEM_CONTENT`).
                    let feed_chars =
                        feed_text_chars(feed_content.as_deref(), summary.as_deref()) as i64;
                    if text_chars
                        >= feed_chars.saturating_mul(crate::summaries::REDO_SUMMARY_FACTOR)
                    {
                        crate::tags::queue_tag_jobs!(tx, &[item_id], fetched_at);
                        sqlx::query(
                            "INSERT INTO embedding_jobs (item_id, queued_at, not_before)
                             SELECT e.item_id, $2, $2 FROM item_embeddings e
                             WHERE e.item_id = $1
                             ON CONFLICT (item_id) DO NOTHING",
                        )
                        .bind(item_id)
                        .bind(fetched_at)
                        .execute(&mut *tx)
                        .await?;
                    }
                    sqlx::query(
                        "INSERT INTO summary_jobs (item_id, queued_at, not_before)
                         SELECT m.item_id, $2, $2 FROM item_summaries m
                         WHERE m.item_id = $1 AND m.source_chars IS NOT NULL
                           AND m.source_chars * $3 <= $4
                         ON CONFLICT (item_id) DO NOTHING",
                    )
                    .bind(item_id)
                    .bind(fetched_at)
                    .bind(crate::summaries::REDO_SUMMARY_FACTOR)
                    .bind(text_chars)
                    .execute(&mut *tx)
                    .await?;
                }
            }
            sqlx::query(sqlx::AssertSqlSafe(FULL_TEXT_JOBS.complete_sql()))
                .bind(item_id)
                .execute(&mut *tx)
                .await?;
            saved > 0
        });
        Ok(saved)
    }

    /// Takes one page from `host`'s budget of `budget` pages for the UTC day `day` (days since
    /// the epoch): `true` when the page may be fetched, `false` when the day's budget is spent.
    /// Counted in the database, so that the budget holds however many workers fetch pages; the
    /// first page of a host's day deletes the counts of earlier days.
    pub async fn take_full_text_page(&self, host: &str, day: i64, budget: i64) -> Result<bool> {
        let pages: Option<i64> = with_db!(self, write, |db| {
            sqlx::query_scalar(
                "INSERT INTO full_text_host_pages (day, host, pages) VALUES ($1, $2, 1)
                 ON CONFLICT (day, host) DO UPDATE SET pages = full_text_host_pages.pages + 1
                 WHERE full_text_host_pages.pages < $3
                 RETURNING CAST(pages AS BIGINT)",
            )
            .bind(day)
            .bind(host)
            .bind(budget)
            .fetch_optional(db)
            .await?
        });
        if pages == Some(1) {
            with_db!(self, write, |db| {
                sqlx::query("DELETE FROM full_text_host_pages WHERE day < $1")
                    .bind(day)
                    .execute(db)
                    .await?
                    .rows_affected()
            });
        }
        Ok(pages.is_some())
    }

    /// Takes an item off the queue without recording anything (nobody wants its full text
    /// any more).
    pub async fn drop_full_text_job(&self, item_id: i64) -> Result<()> {
        FULL_TEXT_JOBS.complete(self, item_id).await
    }

    /// An item's full text, when its page was tried. The caller checks that the user may see
    /// the item.
    pub async fn full_content(&self, item_id: i64) -> Result<Option<FullContent>> {
        let row: Option<(Option<String>, i64, String, Option<String>)> =
            with_db!(self, read, |db| {
                sqlx::query_as(
                    "SELECT content, fetched_at, outcome, error FROM item_full_texts
                     WHERE item_id = $1",
                )
                .bind(item_id)
                .fetch_optional(db)
                .await?
            });
        Ok(
            row.map(|(content, fetched_at, outcome, error)| FullContent {
                content,
                fetched_at,
                outcome,
                error,
            }),
        )
    }
}

/// The text length the feed gives an item: the longer of its content and summary, in
/// characters of text (tags removed, entities decoded, whitespace collapsed). The one measure
/// of "short" for the full-text worker and of "much longer" for the article's save.
pub fn feed_text_chars(content: Option<&str>, summary: Option<&str>) -> usize {
    let chars = |html: Option<&str>| {
        html.and_then(tidings_feed::text::html_to_text)
            .map_or(0, |text| text.chars().count())
    };
    chars(content).max(chars(summary))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn modes_read_back_and_order_by_strength() {
        for mode in FullTextMode::ALL {
            assert_eq!(FullTextMode::parse(mode.as_str()), Some(mode));
        }
        assert_eq!(FullTextMode::parse("Auto"), None);
        assert!(FullTextMode::Always > FullTextMode::Auto);
        assert!(FullTextMode::Auto > FullTextMode::Never);
        assert_eq!(FullTextMode::default(), FullTextMode::Auto);
    }
}
