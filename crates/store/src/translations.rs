//! Translations (issue 37): each item's title and text in another language, kept per item and
//! target language, so that an item is translated into one language once, whoever asks; the
//! subscriptions whose new items are translated in the background, and the queue of those
//! items; and the per-day count of requests made to the provider, so that its budget holds
//! across processes.

use std::collections::HashMap;

use crate::lease::Lease;
use crate::search_index::{item_index_value, translations_of, write_index_rows};
use crate::summaries::DailyRequests;
use crate::{Result, Store, in_tx, with_db};

/// An item's translation into one language.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct ItemTranslation {
    /// The item's id.
    pub item_id: i64,
    /// The language it was translated into, a BCP 47 tag.
    pub language: String,
    /// The title, translated (plain text).
    pub title: Option<String>,
    /// The text, translated (sanitized HTML).
    pub content: Option<String>,
    /// The language it was translated from, when the provider or the item said.
    pub source_language: Option<String>,
    /// Who translated it: `libretranslate`, `deepl`, `openai` or `anthropic`.
    pub provider: String,
    /// The model, for the model providers.
    pub model: Option<String>,
    /// When it was stored (Unix seconds).
    pub created_at: i64,
    /// Whether it was made before the item's text last changed (the feed updated the item):
    /// kept, shown and searchable until a new translation replaces it, but "Translate" and
    /// "always translate" make a new one. Ignored when saving.
    pub stale: bool,
}

/// What an item's translation is made from.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct TranslationSource {
    /// The item's id.
    pub item_id: i64,
    /// The item's title.
    pub title: Option<String>,
    /// Its best text, as sanitized HTML: the article from its page when one was kept, else
    /// the feed's content, else its summary.
    pub html: Option<String>,
    /// Its detected language.
    pub language: Option<String>,
    /// Its link, the base of relative links in the translated text.
    pub url: Option<String>,
}

/// An item claimed from the background translation queue.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct TranslationJob {
    /// The item's id.
    pub item_id: i64,
    /// The language to translate it into.
    pub language: String,
    /// Attempts so far, this one included.
    pub attempts: i64,
}

/// An item's text to translate, best first, for the item `i` of the query around it.
const ITEM_HTML: &str = "COALESCE((SELECT t.content FROM item_full_texts t WHERE t.item_id = i.id),
                                  NULLIF(i.content, ''), i.summary)";

/// Whether item `i` is not in the language `t.language` already (`en` and `en-GB` are one),
/// for the queries that queue items of subscriptions `t` that translate their new items.
const NOT_IN_TARGET: &str = "(i.language IS NULL
     OR (lower(i.language) <> lower(t.language)
         AND lower(i.language) NOT LIKE lower(t.language) || '-%'
         AND lower(t.language) NOT LIKE lower(i.language) || '-%'))";

/// The due time of a job given up: never.
const NEVER: i64 = i64::MAX / 2;

/// The search index value of item `$item_id` with its translations, read on the transaction
/// `$tx`: the tokens of its title, content (else summary) and full article, then those of
/// each translation's title and text. One row per item, shared by its readers like the
/// translations themselves: a translated item is found by words of either language. Every
/// writer of the row (an update of the item, its full article, the backfill) reads the
/// translations too, so that their words stay when the item's text changes.
macro_rules! translated_index_value {
    ($tx:expr, $engine:expr, $item_id:expr) => {{
        let item_id: i64 = $item_id;
        #[allow(clippy::type_complexity)]
        let item: Option<(
            Option<String>,
            Option<String>,
            Option<String>,
            Option<String>,
        )> = sqlx::query_as(
            "SELECT i.title, i.content, i.summary,
                        (SELECT t.content FROM item_full_texts t WHERE t.item_id = i.id)
                 FROM items i WHERE i.id = $1",
        )
        .bind(item_id)
        .fetch_optional(&mut *$tx)
        .await?;
        let translations = translations_of!($tx, &[item_id]);
        let (title, content, summary, full) = item.unwrap_or_default();
        item_index_value(
            $engine,
            title.as_deref(),
            content.as_deref(),
            summary.as_deref(),
            full.as_deref(),
            translations.get(&item_id).map_or(&[][..], Vec::as_slice),
        )
    }};
}

impl Store {
    /// Whether the schema has the translations table (migration 48); remembered once it does.
    pub(crate) async fn translations_ready(&self) -> bool {
        self.schema_ready(
            &self.translations_ready,
            "SELECT COUNT(*) FROM item_translations WHERE item_id < 0",
        )
        .await
    }

    /// The translation of `item_id` into `language`, if one is stored, saying whether it is
    /// stale (made before the item last changed). The caller checks that the user may see the
    /// item.
    pub async fn item_translation(
        &self,
        item_id: i64,
        language: &str,
    ) -> Result<Option<ItemTranslation>> {
        #[allow(clippy::type_complexity)]
        let row: Option<(
            Option<String>,
            Option<String>,
            Option<String>,
            String,
            Option<String>,
            i64,
            bool,
        )> = with_db!(self, read, |db| {
            sqlx::query_as(
                "SELECT t.title, t.content, t.source_language, t.provider, t.model,
                        t.created_at, t.created_at < i.changed_at
                 FROM item_translations t JOIN items i ON i.id = t.item_id
                 WHERE t.item_id = $1 AND t.language = $2",
            )
            .bind(item_id)
            .bind(language)
            .fetch_optional(db)
            .await?
        });
        Ok(row.map(
            |(title, content, source_language, provider, model, created_at, stale)| {
                ItemTranslation {
                    item_id,
                    language: language.to_owned(),
                    title,
                    content,
                    source_language,
                    provider,
                    model,
                    created_at,
                    stale,
                }
            },
        ))
    }

    /// The languages `item_id` has been translated into.
    pub async fn item_translation_languages(&self, item_id: i64) -> Result<Vec<String>> {
        Ok(with_db!(self, read, |db| {
            sqlx::query_scalar(
                "SELECT language FROM item_translations WHERE item_id = $1 ORDER BY language",
            )
            .bind(item_id)
            .fetch_all(db)
            .await?
        }))
    }

    /// Stores a translation (replacing one into the same language) and takes the item off the
    /// background queue for that language (its row kept, never due), in one transaction. Answers `false` when the item
    /// was deleted meanwhile.
    pub async fn save_translation(&self, translation: &ItemTranslation) -> Result<bool> {
        // Stored like any text from outside: without control characters (PostgreSQL refuses
        // a NUL).
        let title = translation
            .title
            .as_deref()
            .map(crate::text::strip_control_chars);
        let content = translation
            .content
            .as_deref()
            .map(crate::text::strip_control_chars);
        let engine = self.engine();
        // Locked on PostgreSQL, as a full article's save does: an update of the item waits for
        // this and then reads this translation for the item's index row, or this waits for
        // the update and indexes its text (not FOR UPDATE: rows that merely refer to the item
        // need not wait).
        let lock = match engine {
            crate::Engine::Sqlite => "SELECT id FROM items WHERE id = $1",
            crate::Engine::Postgres => "SELECT id FROM items WHERE id = $1 FOR NO KEY UPDATE",
        };
        let stored = in_tx!(self, |tx| {
            sqlx::query_scalar::<_, i64>(lock)
                .bind(translation.item_id)
                .fetch_optional(&mut *tx)
                .await?;
            let stored = sqlx::query(
                "INSERT INTO item_translations
                    (item_id, language, title, content, source_language, provider, model,
                     created_at)
                 SELECT id, $2, $3, $4, $5, $6, $7, $8 FROM items WHERE id = $1
                 ON CONFLICT (item_id, language) DO UPDATE SET title = excluded.title,
                    content = excluded.content, source_language = excluded.source_language,
                    provider = excluded.provider, model = excluded.model,
                    created_at = excluded.created_at",
            )
            .bind(translation.item_id)
            .bind(&translation.language)
            .bind(title.as_deref())
            .bind(content.as_deref())
            .bind(translation.source_language.as_deref())
            .bind(&translation.provider)
            .bind(translation.model.as_deref())
            .bind(translation.created_at)
            .execute(&mut *tx)
            .await?
            .rows_affected();
            // The queue's row stays, never due, so that the item is not queued again by a
            // look at new items that read before this commit (PostgreSQL's snapshot).
            sqlx::query(
                "UPDATE translation_jobs
                 SET not_before = $3, lease_owner = NULL, lease_until = NULL, last_error = NULL
                 WHERE item_id = $1 AND language = $2",
            )
            .bind(translation.item_id)
            .bind(&translation.language)
            .bind(NEVER)
            .execute(&mut *tx)
            .await?;
            if stored > 0 {
                // Searchable in both languages: the item's index row holds its own text and
                // its translations' (see `translated_index_value`).
                let value = translated_index_value!(tx, engine, translation.item_id);
                write_index_rows!(tx, engine, &[(translation.item_id, value.as_str())]);
            }
            stored
        });
        Ok(stored > 0)
    }

    /// What `item_id`'s translation is made from; `None` when the item does not exist.
    pub async fn translation_source(&self, item_id: i64) -> Result<Option<TranslationSource>> {
        let sql =
            format!("SELECT i.title, {ITEM_HTML}, i.language, i.url FROM items i WHERE i.id = $1");
        #[allow(clippy::type_complexity)]
        let row: Option<(
            Option<String>,
            Option<String>,
            Option<String>,
            Option<String>,
        )> = with_db!(self, read, |db| {
            sqlx::query_as(sqlx::AssertSqlSafe(sql))
                .bind(item_id)
                .fetch_optional(db)
                .await?
        });
        Ok(row.map(|(title, html, language, url)| TranslationSource {
            item_id,
            title,
            html,
            language,
            url,
        }))
    }

    /// Counts one request to `provider` on `day` (days since the epoch, UTC) if fewer than
    /// `budget` were made that day; answers whether it may be made. Atomic across processes.
    /// A `budget` of 0 or less means no limit (the request is still counted).
    pub async fn take_translation_request(
        &self,
        day: i64,
        provider: &str,
        budget: i64,
    ) -> Result<bool> {
        let budget = if budget <= 0 { i64::MAX } else { budget };
        self.take_daily_request(DailyRequests::Translations, day, provider, budget)
            .await
    }

    /// Translation requests counted for `provider` on `day`.
    pub async fn translation_requests_on(&self, day: i64, provider: &str) -> Result<i64> {
        self.daily_requests_on(DailyRequests::Translations, day, provider)
            .await
    }

    /// Turns "always translate into `language`" on (`Some`) or off (`None`) for the user's
    /// subscription `subscription_id`; new items from `now` on are translated. Turning it on
    /// again into the same language keeps its start.
    pub async fn set_subscription_translation(
        &self,
        user_id: i64,
        subscription_id: i64,
        language: Option<&str>,
        now: i64,
    ) -> Result<()> {
        in_tx!(self, |tx| {
            let exists: Option<i64> =
                sqlx::query_scalar("SELECT id FROM subscriptions WHERE id = $1 AND user_id = $2")
                    .bind(subscription_id)
                    .bind(user_id)
                    .fetch_optional(&mut *tx)
                    .await?;
            exists.ok_or(crate::StoreError::NotFound("subscription"))?;
            match language {
                Some(language) => {
                    sqlx::query(
                        "INSERT INTO subscription_translations (subscription_id, language, since)
                         VALUES ($1, $2, $3)
                         ON CONFLICT (subscription_id) DO UPDATE
                            SET language = excluded.language, since = excluded.since
                            WHERE subscription_translations.language <> excluded.language",
                    )
                    .bind(subscription_id)
                    .bind(language)
                    .bind(now)
                    .execute(&mut *tx)
                    .await?;
                }
                None => {
                    sqlx::query("DELETE FROM subscription_translations WHERE subscription_id = $1")
                        .bind(subscription_id)
                        .execute(&mut *tx)
                        .await?;
                }
            }
        });
        Ok(())
    }

    /// The kept translated titles of items, each into the language asked for it (`wanted`:
    /// item id and language), by item id: what a listing shows for the items of feeds that
    /// are always translated. Items without a translation into their language (not made
    /// yet, or with no title) are absent; a stale one is given, as the item shows it.
    pub async fn translated_titles(
        &self,
        wanted: &[(i64, String)],
    ) -> Result<HashMap<i64, String>> {
        let mut found = HashMap::new();
        if wanted.is_empty() || !self.translations_ready().await {
            return Ok(found);
        }
        let languages: HashMap<i64, &str> = wanted
            .iter()
            .map(|(item_id, language)| (*item_id, language.as_str()))
            .collect();
        let ids: Vec<i64> = languages.keys().copied().collect();
        // Chunks keep any caller under SQLite's bound on parameters.
        for chunk in ids.chunks(500) {
            let sql = format!(
                "SELECT item_id, language, title FROM item_translations
                 WHERE item_id IN ({}) AND title IS NOT NULL",
                crate::job_queue::placeholders(1, chunk.len())
            );
            let rows: Vec<(i64, String, String)> = with_db!(self, read, |db| {
                let mut query = sqlx::query_as(sqlx::AssertSqlSafe(sql));
                for id in chunk {
                    query = query.bind(*id);
                }
                query.fetch_all(db).await?
            });
            for (item_id, language, title) in rows {
                if languages.get(&item_id) == Some(&language.as_str()) {
                    found.insert(item_id, title);
                }
            }
        }
        Ok(found)
    }

    /// The user's subscriptions that translate their new items, with the language of each.
    pub async fn subscription_translations(&self, user_id: i64) -> Result<HashMap<i64, String>> {
        let rows: Vec<(i64, String)> = with_db!(self, read, |db| {
            sqlx::query_as(
                "SELECT t.subscription_id, t.language FROM subscription_translations t
                 JOIN subscriptions s ON s.id = t.subscription_id
                 WHERE s.user_id = $1",
            )
            .bind(user_id)
            .fetch_all(db)
            .await?
        });
        Ok(rows.into_iter().collect())
    }

    /// Queues the items first seen since `since` (and since their subscription turned
    /// translation on) of subscriptions that translate their new items, into the
    /// subscription's language, unless the item is in that language already (`en` and
    /// `en-GB` are one), is translated into it, or is queued for it. Items of those
    /// subscriptions that changed since `since` after they were queued (the feed updated
    /// their text) are queued again unless translated since the change, so that a stale
    /// translation is replaced. Answers how many were queued, again included.
    pub async fn queue_new_translations(&self, since: i64, now: i64) -> Result<u64> {
        let new_items = format!(
            "INSERT INTO translation_jobs (item_id, language, queued_at, not_before)
             SELECT DISTINCT i.id, t.language, $2, $2
             FROM subscription_translations t
             JOIN subscriptions s ON s.id = t.subscription_id
             JOIN items i ON i.feed_id = s.feed_id
             WHERE i.fetched_at >= $1 AND i.fetched_at >= t.since AND {NOT_IN_TARGET}
               AND NOT EXISTS (SELECT 1 FROM item_translations x
                               WHERE x.item_id = i.id AND x.language = t.language)
             ON CONFLICT (item_id, language) DO NOTHING"
        );
        // Only rows done or given up (never due) go back: one waiting or leased is on its
        // way, and its attempt reads the changed text.
        let changed_items = format!(
            "UPDATE translation_jobs
             SET queued_at = $2, not_before = $2, attempts = 0, last_error = NULL,
                 lease_owner = NULL, lease_until = NULL
             WHERE not_before = $3 AND (item_id, language) IN (
                SELECT i.id, t.language
                FROM subscription_translations t
                JOIN subscriptions s ON s.id = t.subscription_id
                JOIN items i ON i.feed_id = s.feed_id
                JOIN translation_jobs j ON j.item_id = i.id AND j.language = t.language
                WHERE i.changed_at >= $1 AND i.changed_at > i.fetched_at
                  AND i.changed_at >= t.since AND i.changed_at > j.queued_at
                  AND {NOT_IN_TARGET}
                  AND NOT EXISTS (SELECT 1 FROM item_translations x
                                  WHERE x.item_id = i.id AND x.language = t.language
                                    AND x.created_at >= i.changed_at))"
        );
        Ok(in_tx!(self, |tx| {
            let queued = sqlx::query(sqlx::AssertSqlSafe(new_items))
                .bind(since)
                .bind(now)
                .execute(&mut *tx)
                .await?
                .rows_affected();
            queued
                + sqlx::query(sqlx::AssertSqlSafe(changed_items))
                    .bind(since)
                    .bind(now)
                    .bind(NEVER)
                    .execute(&mut *tx)
                    .await?
                    .rows_affected()
        }))
    }

    /// Queues `item_id` for its translation into `language`, due now; answers whether it was
    /// queued (an item queued already keeps its place).
    pub async fn queue_translation(&self, item_id: i64, language: &str, now: i64) -> Result<bool> {
        let queued = with_db!(self, write, |db| {
            sqlx::query(
                "INSERT INTO translation_jobs (item_id, language, queued_at, not_before)
                 SELECT id, $2, $3, $3 FROM items WHERE id = $1
                 ON CONFLICT (item_id, language) DO NOTHING",
            )
            .bind(item_id)
            .bind(language)
            .bind(now)
            .execute(db)
            .await?
            .rows_affected()
        });
        Ok(queued > 0)
    }

    /// Claims up to `limit` due items of the translation queue for `lease_seconds`, counting
    /// an attempt each. Several workers never get the same item and language.
    pub async fn claim_translation_jobs(
        &self,
        owner: &str,
        now: i64,
        limit: i64,
        lease_seconds: i64,
    ) -> Result<Vec<TranslationJob>> {
        let sql = Lease {
            table: "translation_jobs",
            set: "lease_owner = $1, lease_until = $2, attempts = attempts + 1",
            key: "(item_id, language)",
            pick: "SELECT item_id, language FROM translation_jobs
                   WHERE not_before <= $3 AND (lease_until IS NULL OR lease_until <= $3)
                   ORDER BY not_before, item_id LIMIT $4",
            lock: "FOR UPDATE SKIP LOCKED",
            returning: "item_id, language, attempts",
        }
        .sql(self.engine());
        let rows: Vec<(i64, String, i64)> = with_db!(self, write, |db| {
            sqlx::query_as(sqlx::AssertSqlSafe(sql))
                .bind(owner)
                .bind(now + lease_seconds)
                .bind(now)
                .bind(limit)
                .fetch_all(db)
                .await?
        });
        Ok(rows
            .into_iter()
            .map(|(item_id, language, attempts)| TranslationJob {
                item_id,
                language,
                attempts,
            })
            .collect())
    }

    /// Puts a claimed item back in the queue, due at `not_before`, with why it failed;
    /// `count_attempt: false` gives the attempt back (the breaker was open or a budget spent).
    pub async fn retry_translation(
        &self,
        job: &TranslationJob,
        not_before: i64,
        error: &str,
        count_attempt: bool,
    ) -> Result<()> {
        with_db!(self, write, |db| {
            sqlx::query(
                "UPDATE translation_jobs
                 SET not_before = $3, last_error = $4, lease_owner = NULL, lease_until = NULL,
                     attempts = CASE WHEN $5 THEN attempts ELSE attempts - 1 END
                 WHERE item_id = $1 AND language = $2",
            )
            .bind(job.item_id)
            .bind(&job.language)
            .bind(not_before)
            .bind(error)
            .bind(count_attempt)
            .execute(db)
            .await?;
        });
        Ok(())
    }

    /// Gives a claimed item up: it stays in the queue, never due, so that it is not queued
    /// again, with why.
    pub async fn give_up_translation(&self, job: &TranslationJob, error: &str) -> Result<()> {
        self.retry_translation(job, NEVER, error, true).await
    }

    /// Items waiting in the translation queue (done and given-up ones left out).
    pub async fn translation_queue_len(&self) -> Result<i64> {
        Ok(with_db!(self, read, |db| {
            sqlx::query_scalar("SELECT COUNT(*) FROM translation_jobs WHERE not_before < $1")
                .bind(NEVER)
                .fetch_one(db)
                .await?
        }))
    }

    /// Who pays for translating `item_id` into `language` from the queue: the user of the
    /// oldest subscription to its feed that translates into that language, else of the oldest
    /// subscription; `None` when nobody subscribes.
    pub async fn translation_payer(&self, item_id: i64, language: &str) -> Result<Option<i64>> {
        Ok(with_db!(self, read, |db| {
            sqlx::query_scalar(
                "SELECT s.user_id FROM items i
                 JOIN subscriptions s ON s.feed_id = i.feed_id
                 LEFT JOIN subscription_translations t
                        ON t.subscription_id = s.id AND t.language = $2
                 WHERE i.id = $1
                 ORDER BY CASE WHEN t.subscription_id IS NULL THEN 1 ELSE 0 END, s.id
                 LIMIT 1",
            )
            .bind(item_id)
            .bind(language)
            .fetch_optional(db)
            .await?
        }))
    }
}
