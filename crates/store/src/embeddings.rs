//! Related items (F44): each item's vector, the queue of items waiting for one, and the reads
//! the related-items search needs.
//!
//! The queue is filled by the embedding worker itself, a batch at a time when it runs short
//! ([`Store::queue_embedding_jobs`]): new items first (ids from a cursor that only moves up),
//! then older items newest first (a resumable backfill), so that neither the fetch path nor
//! the migration pays for it. The vectors are stored as bytes (one signed byte per dimension)
//! with a sign code for the server's in-memory index, and the model that made them: a worker
//! with another model ([`Store::use_embedding_model`]) starts both cursors again, and only
//! vectors of the current model are read.

use crate::lease::Lease;
use std::collections::HashMap;

use crate::reading::{FROM_ITEMS, Listing};
use crate::{Engine, ItemOrder, ItemSummary, Result, Store, StoreError, in_tx, with_db};

/// Items queued per step when the queue runs short.
pub const EMBEDDING_QUEUE_BATCH: i64 = 500;
/// Failed attempts after which an item is dropped from the queue (it gets no vector until
/// the model changes).
pub const MAX_EMBEDDING_ATTEMPTS: i64 = 5;
/// Ids per statement when reading vectors or items by id.
const IDS_PER_STATEMENT: usize = 200;

/// An item claimed for embedding, with the text its vector is made from.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct EmbeddingJob {
    /// The item's id.
    pub item_id: i64,
    /// Attempts that failed before this one.
    pub attempts: i64,
    /// Its title.
    pub title: Option<String>,
    /// Its sanitized content.
    pub content: Option<String>,
    /// Its sanitized summary.
    pub summary: Option<String>,
}

/// A vector made for a claimed item.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct ItemVector {
    /// The item's id.
    pub item_id: i64,
    /// One signed byte per dimension (`tidings_embed::quantize`).
    pub vector: Vec<u8>,
    /// Its sign code (`tidings_embed::Code::to_bytes`).
    pub code: Vec<u8>,
}

/// A stored code, for the server's index.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct StoredCode {
    /// The order it was written in.
    pub seq: i64,
    /// The item's id.
    pub item_id: i64,
    /// The item's feed.
    pub feed_id: i64,
    /// The code's bytes.
    pub code: Vec<u8>,
}

/// An item's stored vector, as the related-items search starts from it.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct StoredVector {
    /// What made it.
    pub model: String,
    /// One signed byte per dimension.
    pub vector: Vec<u8>,
    /// Its sign code.
    pub code: Vec<u8>,
}

/// `(n, n+1, …)` placeholders for `count` values starting at `$first`.
fn placeholders(first: usize, count: usize) -> String {
    (first..first + count)
        .map(|n| format!("${n}"))
        .collect::<Vec<_>>()
        .join(", ")
}

impl Store {
    /// The model the stored vectors are being made with; `None` before any worker embedded.
    pub async fn embedding_model(&self) -> Result<Option<String>> {
        Ok(with_db!(self, read, |db| {
            sqlx::query_scalar::<_, Option<String>>(
                "SELECT model FROM embedding_state WHERE id = 1",
            )
            .fetch_optional(db)
            .await?
            .flatten()
        }))
    }

    /// Makes `model` the one vectors are made with. When it was another (or none), both
    /// cursors start again from the newest item, so every item is embedded with it, newest
    /// first; items already embedded with `model` are skipped. Returns whether it changed.
    pub async fn use_embedding_model(&self, model: &str) -> Result<bool> {
        if self.embedding_model().await?.as_deref() == Some(model) {
            return Ok(false);
        }
        let changed = with_db!(self, write, |db| {
            sqlx::query(
                "UPDATE embedding_state SET model = $1,
                    next_item_id = (SELECT COALESCE(MAX(id), 0) + 1 FROM items),
                    backfill_item_id = (SELECT COALESCE(MAX(id), 0) FROM items)
                 WHERE id = 1 AND (model IS NULL OR model <> $1)",
            )
            .bind(model)
            .execute(db)
            .await?
            .rows_affected()
        });
        Ok(changed > 0)
    }

    /// Items waiting in the embedding queue (leased and waiting ones included).
    pub async fn embedding_queue_len(&self) -> Result<i64> {
        Ok(with_db!(self, read, |db| {
            sqlx::query_scalar::<_, i64>("SELECT COUNT(*) FROM embedding_jobs")
                .fetch_one(db)
                .await?
        }))
    }

    /// Items the backfill has not reached yet (stored before the current model was set, not
    /// queued).
    pub async fn embedding_backfill_left(&self) -> Result<i64> {
        Ok(with_db!(self, read, |db| {
            sqlx::query_scalar::<_, i64>(
                "SELECT COUNT(*) FROM items WHERE id <= (SELECT backfill_item_id FROM embedding_state WHERE id = 1)",
            )
            .fetch_one(db)
            .await?
        }))
    }

    /// Queues up to `batch` items, in one transaction: new items (at or above the forward
    /// cursor) first, else the next older ones below the backfill cursor, newest first,
    /// skipping items that already have a vector of the current model. Returns how many were
    /// queued; 0 when nothing is left (or no model is set yet).
    pub async fn queue_embedding_jobs(&self, batch: i64, now: i64) -> Result<u64> {
        let batch = batch.clamp(1, 5_000);
        let state_sql = match self.engine() {
            Engine::Sqlite => {
                "SELECT model, next_item_id, backfill_item_id FROM embedding_state WHERE id = 1"
            }
            Engine::Postgres => {
                "SELECT model, next_item_id, backfill_item_id FROM embedding_state WHERE id = 1
                 FOR UPDATE"
            }
        };
        Ok(in_tx!(self, |tx| {
            let state: Option<(Option<String>, i64, i64)> =
                sqlx::query_as(state_sql).fetch_optional(&mut *tx).await?;
            match state {
                Some((Some(model), next, backfill)) => {
                    let new: Vec<i64> = sqlx::query_scalar(
                        "SELECT id FROM items WHERE id >= $1 ORDER BY id LIMIT $2",
                    )
                    .bind(next)
                    .bind(batch)
                    .fetch_all(&mut *tx)
                    .await?;
                    let ids = if let Some(last) = new.last() {
                        sqlx::query("UPDATE embedding_state SET next_item_id = $1 WHERE id = 1")
                            .bind(last + 1)
                            .execute(&mut *tx)
                            .await?;
                        new
                    } else if backfill > 0 {
                        // Rows are read in id order down from the cursor; those embedded with
                        // this model already (queued as new since) are passed over.
                        let older: Vec<(i64, bool)> = sqlx::query_as(
                            "SELECT i.id, EXISTS (SELECT 1 FROM item_embeddings e
                                                  WHERE e.item_id = i.id AND e.model = $3)
                             FROM items i WHERE i.id <= $1 ORDER BY i.id DESC LIMIT $2",
                        )
                        .bind(backfill)
                        .bind(batch)
                        .bind(&model)
                        .fetch_all(&mut *tx)
                        .await?;
                        let rest = match older.last() {
                            Some((lowest, _)) if older.len() as i64 == batch => lowest - 1,
                            _ => 0,
                        };
                        sqlx::query(
                            "UPDATE embedding_state SET backfill_item_id = $1 WHERE id = 1",
                        )
                        .bind(rest)
                        .execute(&mut *tx)
                        .await?;
                        older
                            .into_iter()
                            .filter(|(_, done)| !done)
                            .map(|(id, _)| id)
                            .collect()
                    } else {
                        Vec::new()
                    };
                    for chunk in ids.chunks(IDS_PER_STATEMENT) {
                        let values: Vec<String> = (0..chunk.len())
                            .map(|n| format!("(${}, $1)", n + 2))
                            .collect();
                        let mut insert = sqlx::query(sqlx::AssertSqlSafe(format!(
                            "INSERT INTO embedding_jobs (item_id, queued_at) VALUES {}
                             ON CONFLICT (item_id) DO NOTHING",
                            values.join(", ")
                        )))
                        .bind(now);
                        for id in chunk {
                            insert = insert.bind(*id);
                        }
                        insert.execute(&mut *tx).await?;
                    }
                    ids.len() as u64
                }
                _ => 0,
            }
        }))
    }

    /// Claims up to `limit` queued items that are neither leased nor waiting after a failure,
    /// for `lease_seconds`, newest first; when the queue runs short the next batch is queued
    /// first ([`Store::queue_embedding_jobs`]). Several workers never get the same item
    /// (`SKIP LOCKED` on PostgreSQL, the single writer on SQLite).
    pub async fn claim_embedding_jobs(
        &self,
        owner: &str,
        now: i64,
        limit: i64,
        lease_seconds: i64,
    ) -> Result<Vec<EmbeddingJob>> {
        let limit = limit.clamp(1, 1000);
        let mut jobs = self
            .claim_queued_embeddings(owner, now, limit, lease_seconds)
            .await?;
        while (jobs.len() as i64) < limit
            && self
                .queue_embedding_jobs(EMBEDDING_QUEUE_BATCH.max(limit), now)
                .await?
                > 0
        {
            let more = limit - jobs.len() as i64;
            jobs.extend(
                self.claim_queued_embeddings(owner, now, more, lease_seconds)
                    .await?,
            );
        }
        Ok(jobs)
    }

    /// Claims up to `limit` items already in the queue (see [`Store::claim_embedding_jobs`]).
    async fn claim_queued_embeddings(
        &self,
        owner: &str,
        now: i64,
        limit: i64,
        lease_seconds: i64,
    ) -> Result<Vec<EmbeddingJob>> {
        let lease_until = now.saturating_add(lease_seconds.max(1));
        let claim = Lease {
            table: "embedding_jobs",
            set: "lease_owner = $1, lease_until = $2",
            key: "item_id",
            pick: "SELECT item_id FROM embedding_jobs
                   WHERE (lease_until IS NULL OR lease_until <= $3) AND not_before <= $3
                   ORDER BY item_id DESC LIMIT $4",
            lock: "FOR UPDATE SKIP LOCKED",
            returning: "item_id, attempts",
        }
        .sql(self.engine());
        let claimed: Vec<(i64, i64)> = with_db!(self, write, |db| {
            sqlx::query_as(sqlx::AssertSqlSafe(claim))
                .bind(owner)
                .bind(lease_until)
                .bind(now)
                .bind(limit)
                .fetch_all(db)
                .await?
        });
        if claimed.is_empty() {
            return Ok(Vec::new());
        }
        let attempts: HashMap<i64, i64> = claimed.into_iter().collect();
        let sql = format!(
            "SELECT i.id, i.title, {}, i.summary FROM items i
             WHERE i.id IN ({}) ORDER BY i.id DESC",
            crate::job_queue::ITEM_CONTENT,
            placeholders(1, attempts.len())
        );
        let rows: Vec<(i64, Option<String>, Option<String>, Option<String>)> =
            with_db!(self, read, |db| {
                let mut query = sqlx::query_as(sqlx::AssertSqlSafe(sql));
                for id in attempts.keys() {
                    query = query.bind(*id);
                }
                query.fetch_all(db).await?
            });
        Ok(rows
            .into_iter()
            .map(|(item_id, title, content, summary)| EmbeddingJob {
                item_id,
                attempts: attempts[&item_id],
                title,
                content,
                summary,
            })
            .collect())
    }

    /// Stores the vectors made by `model` for claimed items, replacing what they had, and
    /// takes them off the queue, in one transaction. Items no longer queued (deleted, or
    /// stored by another worker whose lease it was) are skipped. Each row gets the next `seq`
    /// from `embedding_state`, whose row this transaction holds until it commits, so that
    /// rows become visible in `seq` order on both engines. Returns how many were stored.
    pub async fn save_embeddings(
        &self,
        model: &str,
        vectors: &[ItemVector],
        now: i64,
    ) -> Result<u64> {
        if vectors.is_empty() {
            return Ok(0);
        }
        let mut vectors: Vec<&ItemVector> = vectors.iter().collect();
        vectors.sort_by_key(|v| v.item_id);
        Ok(in_tx!(self, |tx| {
            let mut seq: i64 = sqlx::query_scalar(
                "UPDATE embedding_state SET last_seq = last_seq + $1 WHERE id = 1
                 RETURNING last_seq - $1",
            )
            .bind(vectors.len() as i64)
            .fetch_one(&mut *tx)
            .await?;
            let mut saved = 0u64;
            for item in vectors {
                let queued = sqlx::query("DELETE FROM embedding_jobs WHERE item_id = $1")
                    .bind(item.item_id)
                    .execute(&mut *tx)
                    .await?
                    .rows_affected();
                if queued == 0 {
                    continue;
                }
                seq += 1;
                sqlx::query(
                    "INSERT INTO item_embeddings (item_id, model, vector, code, seq, embedded_at)
                     VALUES ($1, $2, $3, $4, $5, $6)
                     ON CONFLICT (item_id) DO UPDATE SET model = excluded.model,
                        vector = excluded.vector, code = excluded.code, seq = excluded.seq,
                        embedded_at = excluded.embedded_at",
                )
                .bind(item.item_id)
                .bind(model)
                .bind(&item.vector)
                .bind(&item.code)
                .bind(seq)
                .bind(now)
                .execute(&mut *tx)
                .await?;
                saved += 1;
            }
            saved
        }))
    }

    /// Puts failed items back: each waits until `not_before` and counts an attempt; those that
    /// reached [`MAX_EMBEDDING_ATTEMPTS`] are dropped. Returns how many were dropped.
    pub async fn retry_embedding_jobs(&self, item_ids: &[i64], not_before: i64) -> Result<u64> {
        let mut dropped = 0;
        for chunk in item_ids.chunks(IDS_PER_STATEMENT) {
            dropped += in_tx!(self, |tx| {
                let mut delete = sqlx::query(sqlx::AssertSqlSafe(format!(
                    "DELETE FROM embedding_jobs WHERE attempts + 1 >= $1 AND item_id IN ({})",
                    placeholders(2, chunk.len())
                )))
                .bind(MAX_EMBEDDING_ATTEMPTS);
                let mut update = sqlx::query(sqlx::AssertSqlSafe(format!(
                    "UPDATE embedding_jobs SET attempts = attempts + 1, not_before = $1,
                        lease_owner = NULL, lease_until = NULL
                     WHERE item_id IN ({})",
                    placeholders(2, chunk.len())
                )))
                .bind(not_before);
                for id in chunk {
                    delete = delete.bind(*id);
                    update = update.bind(*id);
                }
                let dropped = delete.execute(&mut *tx).await?.rows_affected();
                update.execute(&mut *tx).await?;
                dropped
            });
        }
        Ok(dropped)
    }

    /// Up to `limit` stored codes of `model` written after `seq`, in `seq` order, with their
    /// items' feeds: what the server's index reads on from.
    pub async fn embedding_codes_after(
        &self,
        model: &str,
        seq: i64,
        limit: i64,
    ) -> Result<Vec<StoredCode>> {
        let rows: Vec<(i64, i64, i64, Vec<u8>)> = with_db!(self, read, |db| {
            sqlx::query_as(
                "SELECT e.seq, e.item_id, i.feed_id, e.code FROM item_embeddings e
                 JOIN items i ON i.id = e.item_id
                 WHERE e.seq > $1 AND e.model = $2
                 ORDER BY e.seq LIMIT $3",
            )
            .bind(seq)
            .bind(model)
            .bind(limit.clamp(1, 100_000))
            .fetch_all(db)
            .await?
        });
        Ok(rows
            .into_iter()
            .map(|(seq, item_id, feed_id, code)| StoredCode {
                seq,
                item_id,
                feed_id,
                code,
            })
            .collect())
    }

    /// The stored vector of an item of the user's subscriptions; `None` while it has none.
    /// [`StoreError::NotFound`] when the item is not one the user can see.
    pub async fn item_vector(&self, user_id: i64, item_id: i64) -> Result<Option<StoredVector>> {
        let row: Option<(i64, Option<String>, Option<Vec<u8>>, Option<Vec<u8>>)> =
            with_db!(self, read, |db| {
                sqlx::query_as(
                    "SELECT i.id, e.model, e.vector, e.code FROM items i
                     JOIN subscriptions s ON s.feed_id = i.feed_id AND s.user_id = $1
                     LEFT JOIN item_embeddings e ON e.item_id = i.id
                     WHERE i.id = $2",
                )
                .bind(user_id)
                .bind(item_id)
                .fetch_optional(db)
                .await?
            });
        match row {
            None => Err(StoreError::NotFound("item")),
            Some((_, Some(model), Some(vector), Some(code))) => Ok(Some(StoredVector {
                model,
                vector,
                code,
            })),
            Some(_) => Ok(None),
        }
    }

    /// The stored vectors of `model` of those of `item_ids` the user can see (items of their
    /// subscriptions), by item.
    pub async fn vectors_for_user(
        &self,
        user_id: i64,
        model: &str,
        item_ids: &[i64],
    ) -> Result<HashMap<i64, Vec<u8>>> {
        let mut vectors = HashMap::with_capacity(item_ids.len());
        for chunk in item_ids.chunks(IDS_PER_STATEMENT) {
            // The candidates lead (SQLite keeps a CROSS JOIN's order): from about a hundred
            // ids on, SQLite's planner began with the user's subscriptions and walked every
            // item of their feeds, 100 ms at a million items instead of 1.
            let sql = format!(
                "SELECT e.item_id, e.vector FROM item_embeddings e
                 CROSS JOIN items i
                 CROSS JOIN subscriptions s
                 WHERE i.id = e.item_id AND s.feed_id = i.feed_id AND s.user_id = $1
                   AND e.model = $2 AND e.item_id IN ({})",
                placeholders(3, chunk.len())
            );
            let rows: Vec<(i64, Vec<u8>)> = with_db!(self, read, |db| {
                let mut query = sqlx::query_as(sqlx::AssertSqlSafe(sql))
                    .bind(user_id)
                    .bind(model);
                for id in chunk {
                    query = query.bind(*id);
                }
                query.fetch_all(db).await?
            });
            vectors.extend(rows);
        }
        Ok(vectors)
    }

    /// The feeds the user subscribes to.
    pub async fn user_feed_ids(&self, user_id: i64) -> Result<Vec<i64>> {
        Ok(with_db!(self, read, |db| {
            sqlx::query_scalar("SELECT feed_id FROM subscriptions WHERE user_id = $1")
                .bind(user_id)
                .fetch_all(db)
                .await?
        }))
    }

    /// Listing rows of those of `item_ids` the user can see, in the order of `item_ids`.
    pub async fn item_summaries(&self, user_id: i64, item_ids: &[i64]) -> Result<Vec<ItemSummary>> {
        let mut found: HashMap<i64, ItemSummary> = HashMap::with_capacity(item_ids.len());
        for chunk in item_ids.chunks(IDS_PER_STATEMENT) {
            let mut listing = Listing::new(user_id);
            listing.push("s.feed_id = i.feed_id AND s.user_id = $1".into());
            let ids: Vec<String> = chunk.iter().map(|id| listing.bind(*id)).collect();
            listing.push(format!("i.id IN ({})", ids.join(", ")));
            let sql = listing.sql(FROM_ITEMS, ItemOrder::NewestFirst, chunk.len() as i64);
            for item in self.run_listing(sql, &listing.binds).await? {
                found.insert(item.id, item);
            }
        }
        Ok(item_ids.iter().filter_map(|id| found.remove(id)).collect())
    }
}
