//! What an operator watches (F62): feeds by fetch status, the fetch queue's depth and the
//! connection pools' use, read at each `/metrics` scrape.

use crate::feeds::DUE_FEEDS;
use crate::{Pools, Result, Store, with_db};

/// The fetch schedule's state at one moment.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct FetchQueue {
    /// Feeds by fetch status ("active", "backoff", "stopped"), every status present.
    pub feeds_by_status: Vec<(String, i64)>,
    /// Feeds due now that no worker has claimed yet.
    pub due_unclaimed: i64,
}

/// One connection pool's use.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct PoolUse {
    /// Which pool: "postgres", or "sqlite_reader" / "sqlite_writer".
    pub pool: &'static str,
    /// Connections open.
    pub open: u32,
    /// Open connections not lent out.
    pub idle: u32,
    /// The most the pool opens.
    pub max: u32,
}

impl Store {
    /// Counts feeds by fetch status and the feeds due at `now` that are not leased.
    pub async fn fetch_queue(&self, now: i64) -> Result<FetchQueue> {
        let mut feeds_by_status: Vec<(String, i64)> = with_db!(self, read, |db| {
            sqlx::query_as(
                "SELECT status, COUNT(*) FROM feed_fetch_state GROUP BY status ORDER BY status",
            )
            .fetch_all(db)
            .await?
        });
        for status in ["active", "backoff", "stopped"] {
            if !feeds_by_status.iter().any(|(known, _)| known == status) {
                feeds_by_status.push((status.to_owned(), 0));
            }
        }
        feeds_by_status.sort();
        let count_due = format!("SELECT COUNT(*) {}", DUE_FEEDS.replace("$3", "$1"));
        let due_unclaimed: i64 = with_db!(self, read, |db| {
            sqlx::query_scalar(sqlx::AssertSqlSafe(count_due.clone()))
                .bind(now)
                .fetch_one(db)
                .await?
        });
        Ok(FetchQueue {
            feeds_by_status,
            due_unclaimed,
        })
    }

    /// The connection pools' use now.
    pub fn pool_use(&self) -> Vec<PoolUse> {
        fn usage<DB: sqlx::Database>(pool: &'static str, of: &sqlx::Pool<DB>) -> PoolUse {
            PoolUse {
                pool,
                open: of.size(),
                idle: u32::try_from(of.num_idle()).unwrap_or(u32::MAX),
                max: of.options().get_max_connections(),
            }
        }
        match &*self.pools {
            Pools::Sqlite { reader, writer, .. } => vec![
                usage("sqlite_reader", reader),
                usage("sqlite_writer", writer),
            ],
            Pools::Postgres(pool) => vec![usage("postgres", pool)],
        }
    }

    /// Every stored item's GUID (empty when it has none) by its feed's URL, oldest first: for
    /// checks that compare what was stored with what the feeds published (`tidings bench
    /// soak`). Items of all feeds, so only for test deployments.
    pub async fn item_guids_by_feed_url(
        &self,
    ) -> Result<std::collections::BTreeMap<String, Vec<String>>> {
        let rows: Vec<(String, String)> = with_db!(self, read, |db| {
            sqlx::query_as(
                "SELECT f.url, COALESCE(i.guid, '') FROM items i
                 JOIN feeds f ON f.id = i.feed_id
                 ORDER BY f.url, i.id",
            )
            .fetch_all(db)
            .await?
        });
        let mut by_feed = std::collections::BTreeMap::<String, Vec<String>>::new();
        for (url, guid) in rows {
            by_feed.entry(url).or_default().push(guid);
        }
        Ok(by_feed)
    }
}
