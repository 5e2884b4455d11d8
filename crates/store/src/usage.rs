//! Usage counts without personal data (F45): per UTC day, how often each item's original link
//! was opened, each tag's page viewed and each search made. A count is one upsert on
//! (day, kind, key); nothing says who, from where or when in the day. Old days are pruned by
//! the worker's daily retention run.

use std::collections::HashMap;

use crate::{Result, Store, StoreError, with_db};

/// The longest key kept, in characters (a longer one is cut): a normalized search is at most
/// 400 characters plus its quotes, a tag name far less.
pub const MAX_USAGE_KEY_CHARS: usize = 500;

/// What a count counts.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
pub enum UsageKind {
    /// An item's original link opened; the key is the item's id.
    Click,
    /// A tag's page viewed; the key is the tag's name.
    TagView,
    /// A search made; the key is the query in its canonical spelling.
    Search,
}

impl UsageKind {
    /// Every kind, in the order the totals list them.
    pub const ALL: [UsageKind; 3] = [UsageKind::Click, UsageKind::TagView, UsageKind::Search];

    /// The kind's name in the `usage_counts` table.
    pub fn as_str(self) -> &'static str {
        match self {
            UsageKind::Click => "click",
            UsageKind::TagView => "tag_view",
            UsageKind::Search => "search",
        }
    }
}

/// The day (days since 1970-01-01, UTC) that Unix time `secs` falls on.
pub fn usage_day(secs: i64) -> i64 {
    secs.div_euclid(86_400)
}

/// One key's count over a range of days.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct UsageCount {
    /// The item's id, the tag's name or the normalized query.
    pub key: String,
    /// Uses over the range.
    pub count: i64,
}

/// An item among the most clicked, with what is still known of it.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct ClickedItem {
    /// The item's id.
    pub item_id: i64,
    /// Its title; `None` when it has none or was deleted since (retention, an unfollowed feed).
    pub title: Option<String>,
    /// Its link, when still stored.
    pub url: Option<String>,
    /// Whether the item is still stored.
    pub exists: bool,
    /// Clicks over the range.
    pub count: i64,
}

/// The upsert every count goes through. The `SELECT … WHERE` form lets a click count only
/// when the clicker may see the item, in the same statement.
const COUNT_ONE: &str = "ON CONFLICT (day, kind, key) DO UPDATE SET count = usage_counts.count + 1";

impl Store {
    /// Counts one use of `key` (cut to [`MAX_USAGE_KEY_CHARS`]) of `kind` on `day`.
    pub async fn count_usage(&self, day: i64, kind: UsageKind, key: &str) -> Result<()> {
        let key = cut(key);
        let sql = format!(
            "INSERT INTO usage_counts (day, kind, key, count) VALUES ($1, $2, $3, 1) {COUNT_ONE}"
        );
        with_db!(self, write, |db| {
            sqlx::query(sqlx::AssertSqlSafe(sql))
                .bind(day)
                .bind(kind.as_str())
                .bind(key)
                .execute(db)
                .await?;
        });
        Ok(())
    }

    /// Counts one click on the original link of item `item_id` on `day`, when the item is in a
    /// feed `user_id` follows; [`StoreError::NotFound`] otherwise (nothing counted). The user
    /// decides only whether the click counts: the count does not keep who clicked.
    pub async fn count_item_click(&self, day: i64, user_id: i64, item_id: i64) -> Result<()> {
        let sql = format!(
            "INSERT INTO usage_counts (day, kind, key, count)
             SELECT $1, 'click', CAST(i.id AS TEXT), 1
             FROM items i
             WHERE i.id = $2
               AND EXISTS (SELECT 1 FROM subscriptions s
                           WHERE s.feed_id = i.feed_id AND s.user_id = $3)
             {COUNT_ONE}"
        );
        let counted = with_db!(self, write, |db| {
            sqlx::query(sqlx::AssertSqlSafe(sql))
                .bind(day)
                .bind(item_id)
                .bind(user_id)
                .execute(db)
                .await?
                .rows_affected()
        });
        if counted == 0 {
            return Err(StoreError::NotFound("item"));
        }
        Ok(())
    }

    /// The `limit` keys of `kind` used most from day `first` to day `last` (inclusive), most
    /// used first, equal counts by key.
    pub async fn top_usage(
        &self,
        kind: UsageKind,
        first: i64,
        last: i64,
        limit: i64,
    ) -> Result<Vec<UsageCount>> {
        let rows: Vec<(String, i64)> = with_db!(self, read, |db| {
            sqlx::query_as(
                "SELECT key, CAST(SUM(count) AS BIGINT) AS total
                 FROM usage_counts
                 WHERE kind = $1 AND day BETWEEN $2 AND $3
                 GROUP BY key
                 ORDER BY total DESC, key
                 LIMIT $4",
            )
            .bind(kind.as_str())
            .bind(first)
            .bind(last)
            .bind(limit.max(0))
            .fetch_all(db)
            .await?
        });
        Ok(rows
            .into_iter()
            .map(|(key, count)| UsageCount { key, count })
            .collect())
    }

    /// The `limit` items whose links were opened most from day `first` to day `last`
    /// (inclusive), with their titles and links where the items are still stored.
    pub async fn top_clicked_items(
        &self,
        first: i64,
        last: i64,
        limit: i64,
    ) -> Result<Vec<ClickedItem>> {
        let top = self.top_usage(UsageKind::Click, first, last, limit).await?;
        let ids: Vec<i64> = top.iter().filter_map(|c| c.key.parse().ok()).collect();
        let mut known: HashMap<i64, (Option<String>, Option<String>)> = HashMap::new();
        if !ids.is_empty() {
            let placeholders: Vec<String> = (1..=ids.len()).map(|n| format!("${n}")).collect();
            let sql = format!(
                "SELECT id, title, url FROM items WHERE id IN ({})",
                placeholders.join(", ")
            );
            let rows: Vec<(i64, Option<String>, Option<String>)> = with_db!(self, read, |db| {
                let mut query = sqlx::query_as(sqlx::AssertSqlSafe(sql));
                for id in &ids {
                    query = query.bind(*id);
                }
                query.fetch_all(db).await?
            });
            known.extend(rows.into_iter().map(|(id, title, url)| (id, (title, url))));
        }
        Ok(top
            .into_iter()
            .filter_map(|count| {
                let item_id: i64 = count.key.parse().ok()?;
                let stored = known.remove(&item_id);
                let exists = stored.is_some();
                let (title, url) = stored.unwrap_or_default();
                Some(ClickedItem {
                    item_id,
                    title,
                    url,
                    exists,
                    count: count.count,
                })
            })
            .collect())
    }

    /// The total uses of each kind from day `first` to day `last` (inclusive); kinds without
    /// any are absent.
    pub async fn usage_totals(&self, first: i64, last: i64) -> Result<HashMap<UsageKind, i64>> {
        let rows: Vec<(String, i64)> = with_db!(self, read, |db| {
            sqlx::query_as(
                "SELECT kind, CAST(SUM(count) AS BIGINT) FROM usage_counts
                 WHERE day BETWEEN $1 AND $2 GROUP BY kind",
            )
            .bind(first)
            .bind(last)
            .fetch_all(db)
            .await?
        });
        Ok(rows
            .into_iter()
            .filter_map(|(kind, total)| {
                UsageKind::ALL
                    .into_iter()
                    .find(|k| k.as_str() == kind)
                    .map(|k| (k, total))
            })
            .collect())
    }

    /// Deletes the counts of the days before `first_kept`; returns how many rows went.
    pub async fn prune_usage_counts(&self, first_kept: i64) -> Result<u64> {
        let deleted = with_db!(self, write, |db| {
            sqlx::query("DELETE FROM usage_counts WHERE day < $1")
                .bind(first_kept)
                .execute(db)
                .await?
                .rows_affected()
        });
        Ok(deleted)
    }
}

/// `key` cut to [`MAX_USAGE_KEY_CHARS`] characters.
fn cut(key: &str) -> &str {
    match key.char_indices().nth(MAX_USAGE_KEY_CHARS) {
        Some((end, _)) => &key[..end],
        None => key,
    }
}
