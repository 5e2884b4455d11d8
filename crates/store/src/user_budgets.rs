//! Per-user daily budgets of requests to remote providers (issue 31): besides the
//! installation's daily summary budget, each user's items may cost a remote summary or
//! embedding provider only so much a day, so that one user cannot spend what every user
//! shares. Counted in the database, atomically, so the budgets hold across processes.
//!
//! Who pays for an item: the user who asked (the reader's "Summarize"), else the user whose
//! subscription to the item's feed is the oldest among those that want it (for summaries,
//! subscribers who want summaries; for embeddings, any subscriber). A feed only one user
//! follows is always that user's.

use std::collections::HashMap;

use crate::job_queue::placeholders;
use crate::{Result, Store, with_db};

/// What a budget counts requests to.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum BudgetKind {
    /// Requests to a remote summary provider (one per summary attempt, retries included).
    Summary,
    /// Items sent to a remote embeddings provider (one per item, whatever the batch).
    Embedding,
    /// Requests to the translation provider (one per item and language, retries included).
    Translation,
}

impl BudgetKind {
    /// The stored name.
    pub fn as_str(self) -> &'static str {
        match self {
            BudgetKind::Summary => "summary",
            BudgetKind::Embedding => "embedding",
            BudgetKind::Translation => "translation",
        }
    }
}

/// Items per statement of [`Store::embedding_payers`] (well under SQLite's bound).
const IDS_PER_STATEMENT: usize = 200;

impl Store {
    /// Counts `count` requests of `kind` for `user_id` on `day` (days since the epoch, UTC) if
    /// the day's count stays within `budget`; answers whether they may be made. Atomic across
    /// processes. A `budget` of 0 or less means no limit (nothing is counted).
    pub async fn take_user_requests(
        &self,
        day: i64,
        user_id: i64,
        kind: BudgetKind,
        count: i64,
        budget: i64,
    ) -> Result<bool> {
        if budget <= 0 {
            return Ok(true);
        }
        if count > budget {
            return Ok(false);
        }
        let counted: Option<i64> = with_db!(self, write, |db| {
            sqlx::query_scalar(
                "INSERT INTO user_daily_requests (day, user_id, kind, requests)
                 VALUES ($1, $2, $3, $4)
                 ON CONFLICT (day, user_id, kind) DO UPDATE
                    SET requests = user_daily_requests.requests + $4
                    WHERE user_daily_requests.requests + $4 <= $5
                 RETURNING requests",
            )
            .bind(day)
            .bind(user_id)
            .bind(kind.as_str())
            .bind(count)
            .bind(budget)
            .fetch_optional(db)
            .await?
        });
        if counted == Some(count) {
            // The day's first count for this user: days before it are done with.
            with_db!(self, write, |db| {
                sqlx::query("DELETE FROM user_daily_requests WHERE day < $1 AND user_id = $2")
                    .bind(day)
                    .bind(user_id)
                    .execute(db)
                    .await?;
            });
        }
        Ok(counted.is_some())
    }

    /// Requests of `kind` counted for `user_id` on `day`.
    pub async fn user_requests_on(&self, day: i64, user_id: i64, kind: BudgetKind) -> Result<i64> {
        let count: Option<i64> = with_db!(self, read, |db| {
            sqlx::query_scalar(
                "SELECT requests FROM user_daily_requests
                 WHERE day = $1 AND user_id = $2 AND kind = $3",
            )
            .bind(day)
            .bind(user_id)
            .bind(kind.as_str())
            .fetch_optional(db)
            .await?
        });
        Ok(count.unwrap_or(0))
    }

    /// Who pays for summarizing `item_id` from the queue: the oldest subscription to its feed
    /// among those that want summaries (the user's preference `all`, or `chosen` with the
    /// subscription marked), else the oldest subscription; `None` when nobody subscribes.
    pub async fn summary_payer(&self, item_id: i64) -> Result<Option<i64>> {
        Ok(with_db!(self, read, |db| {
            sqlx::query_scalar(
                "SELECT s.user_id FROM items i
                 JOIN subscriptions s ON s.feed_id = i.feed_id
                 LEFT JOIN user_preferences p ON p.user_id = s.user_id
                 WHERE i.id = $1
                 ORDER BY CASE WHEN p.summarize = 'all'
                                    OR (p.summarize = 'chosen' AND s.summarize) THEN 0
                               ELSE 1 END,
                          s.id
                 LIMIT 1",
            )
            .bind(item_id)
            .fetch_optional(db)
            .await?
        }))
    }

    /// Who pays for embedding each of `item_ids`: the user of the oldest subscription to the
    /// item's feed. Items whose feed nobody follows are left out.
    pub async fn embedding_payers(&self, item_ids: &[i64]) -> Result<HashMap<i64, i64>> {
        let mut payers = HashMap::new();
        for chunk in item_ids.chunks(IDS_PER_STATEMENT) {
            let sql = format!(
                "SELECT i.id, (SELECT s.user_id FROM subscriptions s WHERE s.feed_id = i.feed_id
                               ORDER BY s.id LIMIT 1)
                 FROM items i WHERE i.id IN ({})",
                placeholders(1, chunk.len())
            );
            let rows: Vec<(i64, Option<i64>)> = with_db!(self, read, |db| {
                let mut query = sqlx::query_as(sqlx::AssertSqlSafe(sql.clone()));
                for id in chunk {
                    query = query.bind(*id);
                }
                query.fetch_all(db).await?
            });
            payers.extend(
                rows.into_iter()
                    .filter_map(|(item, user)| Some((item, user?))),
            );
        }
        Ok(payers)
    }

    /// Puts claimed embedding items back until `not_before` without counting an attempt:
    /// nothing failed, their payer's budget for the day is spent.
    pub async fn defer_embedding_jobs(&self, item_ids: &[i64], not_before: i64) -> Result<()> {
        for chunk in item_ids.chunks(IDS_PER_STATEMENT) {
            let sql = format!(
                "UPDATE embedding_jobs SET not_before = $1, lease_owner = NULL, lease_until = NULL
                 WHERE item_id IN ({})",
                placeholders(2, chunk.len())
            );
            with_db!(self, write, |db| {
                let mut query = sqlx::query(sqlx::AssertSqlSafe(sql.clone())).bind(not_before);
                for id in chunk {
                    query = query.bind(*id);
                }
                query.execute(db).await?;
            });
        }
        Ok(())
    }
}
