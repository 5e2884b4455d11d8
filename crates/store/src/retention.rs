//! Retention (F17): deleting the items tidings stored long ago, but each feed's newest and
//! what someone starred or bookmarked, with a tombstone each so that the feed's next fetch
//! does not bring them back as new.

use crate::{Pools, Result, Store, in_tx, with_db};

/// Rows deleted per transaction by retention, so that no transaction holds the write lock
/// (SQLite's, or many row locks on PostgreSQL) for long.
const RETENTION_BATCH: i64 = 1_000;
/// Tombstones written per statement: well under both engines' limits on bound parameters.
const TOMBSTONES_PER_STATEMENT: usize = 500;
/// Feeds whose expired items PostgreSQL deletes in one transaction. On an installation of
/// 100,000 feeds a day's expired items are one or two a feed: a transaction (and its five
/// round trips and commit) a feed made retention of a day at ten million items take over a
/// minute. A group's locks are held for one statement.
const POSTGRES_FEEDS_PER_TRANSACTION: usize = 250;

impl Store {
    /// Retention (F17): deletes the items tidings first stored before `stored_before` (Unix
    /// seconds; the date the feed gives is not looked at), except the `keep_per_feed` newest
    /// items of every feed (newest by date, as the reader lists them) and items someone
    /// starred or bookmarked. Each deleted item leaves a tombstone (recorded at `now`) so
    /// that the next fetch does not store it again as a new item. Works in short
    /// transactions of at most [`RETENTION_BATCH`] items: on SQLite one a feed (fetches
    /// write between them), on PostgreSQL one a group of feeds. Returns how many items were
    /// deleted.
    pub async fn delete_expired_items(
        &self,
        stored_before: i64,
        keep_per_feed: i64,
        now: i64,
    ) -> Result<u64> {
        // One index probe per feed (items_feed_fetched).
        let feeds: Vec<i64> = with_db!(self, read, |db| {
            sqlx::query_scalar(
                "SELECT f.id FROM feeds f
                 WHERE EXISTS (SELECT 1 FROM items i
                               WHERE i.feed_id = f.id AND i.fetched_at < $1)
                 ORDER BY f.id",
            )
            .bind(stored_before)
            .fetch_all(db)
            .await?
        });
        let keep_per_feed = keep_per_feed.max(0);
        let mut total = 0;
        if let Pools::Postgres(pool) = &*self.pools {
            for group in feeds.chunks(POSTGRES_FEEDS_PER_TRANSACTION) {
                loop {
                    let deleted = expire_feeds_items_postgres(
                        self,
                        pool,
                        group,
                        stored_before,
                        keep_per_feed,
                        now,
                    )
                    .await?;
                    total += deleted;
                    if deleted < RETENTION_BATCH as u64 {
                        break;
                    }
                }
            }
            return Ok(total);
        }
        for feed_id in feeds {
            loop {
                let deleted = self
                    .expire_feed_items_sqlite(feed_id, stored_before, keep_per_feed, now)
                    .await?;
                total += deleted;
                if deleted < RETENTION_BATCH as u64 {
                    break;
                }
            }
        }
        Ok(total)
    }

    /// One batch of [`Store::delete_expired_items`] for one feed, with its tombstones, in one
    /// transaction: SQLite's way, where statements cost no round trip and a transaction a
    /// feed lets fetches write between them.
    async fn expire_feed_items_sqlite(
        &self,
        feed_id: i64,
        stored_before: i64,
        keep_per_feed: i64,
        now: i64,
    ) -> Result<u64> {
        Ok(in_tx!(self, |tx| {
            // The newest item that is not kept: the one after the `keep_per_feed` newest, in
            // the reader's order (items_feed_published).
            let first_expired: Option<(i64, i64)> = sqlx::query_as(
                "SELECT published_at, id FROM items WHERE feed_id = $1
                 ORDER BY published_at DESC, id DESC LIMIT 1 OFFSET $2",
            )
            .bind(feed_id)
            .bind(keep_per_feed)
            .fetch_optional(&mut *tx)
            .await?;
            match first_expired {
                None => 0,
                Some((published_at, id)) => {
                    let keys: Vec<String> = sqlx::query_scalar(
                        "DELETE FROM items WHERE id IN (
                            SELECT i.id FROM items i
                            WHERE i.feed_id = $1 AND i.fetched_at < $2
                              AND (i.published_at < $3 OR (i.published_at = $3 AND i.id <= $4))
                              AND NOT EXISTS (SELECT 1 FROM item_states st
                                              WHERE st.item_id = i.id AND st.is_starred = TRUE)
                              AND NOT EXISTS (SELECT 1 FROM bookmarks b WHERE b.item_id = i.id)
                            LIMIT $5)
                         RETURNING identity_key",
                    )
                    .bind(feed_id)
                    .bind(stored_before)
                    .bind(published_at)
                    .bind(id)
                    .bind(RETENTION_BATCH)
                    .fetch_all(&mut *tx)
                    .await?;
                    for chunk in keys.chunks(TOMBSTONES_PER_STATEMENT) {
                        let mut sql = String::from(
                            "INSERT INTO item_tombstones
                                (feed_id, identity_key, deleted_at, last_seen_at) VALUES ",
                        );
                        for n in 0..chunk.len() {
                            if n > 0 {
                                sql.push_str(", ");
                            }
                            sql.push_str(&format!("($1, ${}, $2, $2)", n + 3));
                        }
                        sql.push_str(" ON CONFLICT (feed_id, identity_key) DO NOTHING");
                        let mut insert = sqlx::query(sqlx::AssertSqlSafe(sql))
                            .bind(feed_id)
                            .bind(now);
                        for key in chunk {
                            insert = insert.bind(key);
                        }
                        insert.execute(&mut *tx).await?;
                    }
                    keys.len() as u64
                }
            }
        }))
    }

    /// When the installation's oldest item was first stored (Unix seconds), or `None` without
    /// items: what retention looks at, for benchmarks. One probe of each feed's
    /// `items_feed_fetched`, not a scan of the items.
    pub async fn oldest_item_stored_at(&self) -> Result<Option<i64>> {
        Ok(with_db!(self, read, |db| {
            sqlx::query_scalar::<_, Option<i64>>(
                "SELECT MIN((SELECT MIN(i.fetched_at) FROM items i WHERE i.feed_id = f.id))
                 FROM feeds f",
            )
            .fetch_one(db)
            .await?
        }))
    }
}

/// On PostgreSQL, one transaction of [`Store::delete_expired_items`] for a group of feeds
/// (ids ascending): their locks (exclusive, in id order, so that two runs cannot deadlock; a
/// fetch holds one feed's, shared), then one statement that deletes up to
/// [`RETENTION_BATCH`] of their expired items and writes the tombstones. Returns how many
/// items it deleted: as many as the batch means there may be more.
async fn expire_feeds_items_postgres(
    store: &Store,
    pool: &sqlx::PgPool,
    feeds: &[i64],
    stored_before: i64,
    keep_per_feed: i64,
    now: i64,
) -> Result<u64> {
    let mut connection = store.postgres_connection(pool).await?;
    // A crash can lose only the last moment's deletions with their tombstones, which come
    // back whole and go again at the next run; sampled at ten million items, a quarter of
    // retention's time was commits waiting for the write-ahead log to reach the disk.
    let mut tx = sqlx::Connection::begin_with(
        &mut *connection,
        "BEGIN; SET LOCAL synchronous_commit = off",
    )
    .await?;
    sqlx::query(crate::feeds::PG_FEEDS_ITEMS_LOCK)
        .bind(feeds)
        .execute(&mut *tx)
        .await?;
    let deleted: i64 = sqlx::query_scalar(PG_EXPIRE_FEEDS_ITEMS)
        .bind(feeds)
        .bind(keep_per_feed)
        .bind(stored_before)
        .bind(RETENTION_BATCH)
        .bind(now)
        .fetch_one(&mut *tx)
        .await?;
    tx.commit().await?;
    Ok(deleted.max(0) as u64)
}

/// Deletes, with their tombstones, up to `$4` of the expired items of the feeds `$1`: stored
/// before `$3`, older in the reader's order than each feed's `$2` newest, neither starred nor
/// bookmarked; answers how many it deleted (at `$5`, now). Each feed's first expired item is
/// found in `items_feed_published` and its expired items in `items_feed_fetched`, one
/// feed at a time (the `LIMIT` keeps the planner from joining the feeds with all items); the
/// items go by primary key, their tombstones in the same statement.
const PG_EXPIRE_FEEDS_ITEMS: &str = "WITH expiring AS MATERIALIZED (
        SELECT f.feed_id, k.published_at, k.id
        FROM unnest($1::int8[]) AS f(feed_id)
        CROSS JOIN LATERAL (SELECT published_at, id FROM items WHERE feed_id = f.feed_id
                            ORDER BY published_at DESC, id DESC LIMIT 1 OFFSET $2) AS k),
    doomed AS (
        DELETE FROM items WHERE id = ANY(ARRAY(
            SELECT x.id FROM expiring e
            CROSS JOIN LATERAL (
                SELECT i.id FROM items i
                WHERE i.feed_id = e.feed_id AND i.fetched_at < $3
                  AND (i.published_at < e.published_at
                       OR (i.published_at = e.published_at AND i.id <= e.id))
                  AND NOT EXISTS (SELECT 1 FROM item_states st
                                  WHERE st.item_id = i.id AND st.is_starred = TRUE)
                  AND NOT EXISTS (SELECT 1 FROM bookmarks b WHERE b.item_id = i.id)
                LIMIT $4) AS x
            LIMIT $4))
        RETURNING feed_id, identity_key),
    buried AS (
        INSERT INTO item_tombstones (feed_id, identity_key, deleted_at, last_seen_at)
        SELECT feed_id, identity_key, $5, $5 FROM doomed
        ON CONFLICT (feed_id, identity_key) DO NOTHING)
    SELECT count(*) FROM doomed";
