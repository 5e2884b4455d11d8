//! The statements of clustering duplicates at ingest (see `duplicates`), one per kind of read
//! or write however many items a fetch brings: PostgreSQL binds whole arrays (each statement is
//! a round trip to the server, and a list of 500 bound values is parsed and planned anew for
//! each length), SQLite one JSON text read with `json_each` (a statement of fixed shape,
//! prepared once per connection, where an `IN` list of each length was prepared again).
//!
//! Rows are plain tuples so that this module stands below `duplicates`, which decides what
//! they hold.

use crate::Result;
use crate::batch::json_param as json;

/// A stored item sharing a key with an arriving one: the key, the item, its cluster, its date.
pub(crate) type HitRow = (i64, i64, Option<i64>, i64);

/// A stored item read for comparing: id, cluster, url, guid, title, content, summary.
pub(crate) type CandidateRow = (
    i64,
    Option<i64>,
    Option<String>,
    Option<String>,
    Option<String>,
    Option<String>,
    Option<String>,
);

/// An arriving copy's subscriber who can already see another copy: the arriving copy, then
/// the user, the arriving copy's subscription choice, the other copy, its subscription's
/// choice, whether they read it, how they read clusters, and the other copy's date.
pub(crate) type ArrivingCopyRow = (i64, i64, String, i64, String, bool, String, i64);

/// A write of a clustering decision for one subscriber: the user, the copy shown through
/// another, the copy shown in its place, whether that copy replaces one shown before (whose
/// duplicates move to it), and the arriving copy when it arrives read (else `None`).
pub(crate) type ShownRow = (i64, i64, i64, bool, Option<i64>);

/// SQLite's key look-up: items of feeds other than `$1` under the keys, with their cluster
/// and date. Items of the arriving items' own feed are never merged with them, and a feed's own
/// boilerplate would otherwise make each of its items a candidate for the next.
fn hits_sql(keys: &str) -> String {
    format!(
        "SELECT k.key, k.item_id, i.cluster_id, i.published_at
         FROM item_story_keys k JOIN items i ON i.id = k.item_id
         WHERE i.feed_id <> $1 AND k.key IN ({keys})"
    )
}

/// Per subscriber of feed `$1`'s arriving copy `j` (`j.cluster`, `j.item`), the copies they
/// already see from other feeds: not hidden for them, not themselves shown through another,
/// neither subscription set to never merge, and the arriving copy not hidden for them either.
/// The stored copies are found by their cluster (the implied `o.cluster_id IS NOT NULL` lets
/// PostgreSQL use its partial index of clustered items). `{from}` names the relations before
/// `items o`.
fn copies_select(from: &str) -> String {
    format!(
        "SELECT j.item, s.user_id, s.duplicates, o.id, so.duplicates,
                COALESCE(st.is_read,
                         so.read_before IS NOT NULL AND o.published_at <= so.read_before),
                COALESCE((SELECT p.duplicates_read FROM user_preferences p
                          WHERE p.user_id = s.user_id), 'cluster'),
                o.published_at
         FROM {from} items o
         JOIN subscriptions s ON s.feed_id = $1
         JOIN subscriptions so ON so.feed_id = o.feed_id AND so.user_id = s.user_id
         LEFT JOIN item_states st ON st.user_id = s.user_id AND st.item_id = o.id
         WHERE o.cluster_id = j.cluster AND o.id <> j.item AND o.feed_id <> $1
           AND s.duplicates <> 'never' AND so.duplicates <> 'never'
           AND o.cluster_id IS NOT NULL AND NOT COALESCE(st.is_hidden, FALSE)
           AND NOT EXISTS (SELECT 1 FROM user_duplicates d
                           WHERE d.user_id = s.user_id AND d.item_id = o.id)
           AND NOT EXISTS (SELECT 1 FROM item_states h
                           WHERE h.user_id = s.user_id AND h.item_id = j.item AND h.is_hidden)"
    )
}

/// The order of [`copies_select`]'s rows: by arriving copy, user, then the stored copies
/// oldest first.
const COPIES_ORDER: &str = "ORDER BY 1, 2, 8, 4";

/// The reads and writes of clustering at ingest, by engine. Each takes the whole fetch's rows.
pub(crate) trait ClusterStatements {
    /// The stored items of feeds other than `feed_id` under `keys` ([`HitRow`]). PostgreSQL
    /// reads at most `per_key` of them under each key (a key under more is common, not
    /// evidence, whichever of its items are read); SQLite reads them all.
    async fn story_hits(
        &mut self,
        feed_id: i64,
        keys: &[i64],
        per_key: usize,
    ) -> Result<Vec<HitRow>>;

    /// The stored items `ids`, read for comparing.
    async fn candidate_rows(&mut self, ids: &[i64]) -> Result<Vec<CandidateRow>>;

    /// Puts items in clusters: `(item, cluster, only_if_none)`, where `only_if_none` leaves an
    /// item that is in a cluster already where it is (a stored copy starting one).
    async fn set_clusters(&mut self, rows: &[(i64, i64, bool)]) -> Result<()>;

    /// Stores `(key, item)` lookup keys: distinct rows of items that have none yet (the
    /// fetch's new items), so no row can conflict and none is checked for one.
    async fn insert_story_keys(&mut self, rows: &[(i64, i64)]) -> Result<()>;

    /// [`ArrivingCopyRow`]s of feed `feed_id`'s arriving copies `joins` (`(cluster, item)`), by arriving
    /// copy, then user, then the other copy's date.
    async fn subscriber_copies(
        &mut self,
        feed_id: i64,
        joins: &[(i64, i64)],
    ) -> Result<Vec<ArrivingCopyRow>>;

    /// Writes the decisions `rows` ([`ShownRow`]) at `now`: duplicates moved to a copy that
    /// replaces the one shown, then the copies shown through another, then the read marks.
    async fn write_shown(&mut self, rows: &[ShownRow], now: i64) -> Result<()>;
}

/// SQLite's `json_each` over the array of arrays bound as `param` (`$N`), as a relation of
/// `columns` (each named for its index in the inner arrays).
fn json_rows(param: &str, columns: &[&str]) -> String {
    let picks: Vec<String> = columns
        .iter()
        .enumerate()
        .map(|(at, name)| format!("json_extract(value, '$[{at}]') AS {name}"))
        .collect();
    format!("(SELECT {} FROM json_each({param}))", picks.join(", "))
}

impl ClusterStatements for sqlx::SqliteConnection {
    async fn story_hits(
        &mut self,
        feed_id: i64,
        keys: &[i64],
        _per_key: usize,
    ) -> Result<Vec<HitRow>> {
        // SQLite walks the key index for the list whatever it knows of the tables.
        let sql = hits_sql("SELECT value FROM json_each($2)");
        Ok(sqlx::query_as(sqlx::AssertSqlSafe(sql))
            .bind(feed_id)
            .bind(json(&keys)?)
            .fetch_all(&mut *self)
            .await?)
    }

    async fn candidate_rows(&mut self, ids: &[i64]) -> Result<Vec<CandidateRow>> {
        Ok(sqlx::query_as(
            "SELECT id, cluster_id, url, guid, title, content, summary FROM items
             WHERE id IN (SELECT value FROM json_each($1))",
        )
        .bind(json(&ids)?)
        .fetch_all(&mut *self)
        .await?)
    }

    async fn set_clusters(&mut self, rows: &[(i64, i64, bool)]) -> Result<()> {
        let sql = format!(
            "UPDATE items SET cluster_id = t.cluster FROM {} AS t
             WHERE items.id = t.id AND (NOT t.only_if_none OR items.cluster_id IS NULL)",
            json_rows("$1", &["id", "cluster", "only_if_none"])
        );
        sqlx::query(sqlx::AssertSqlSafe(sql))
            .bind(json(&rows)?)
            .execute(&mut *self)
            .await?;
        Ok(())
    }

    async fn insert_story_keys(&mut self, rows: &[(i64, i64)]) -> Result<()> {
        let sql = format!(
            "INSERT INTO item_story_keys (key, item_id) SELECT key, item FROM {}",
            json_rows("$1", &["key", "item"])
        );
        sqlx::query(sqlx::AssertSqlSafe(sql))
            .bind(json(&rows)?)
            .execute(&mut *self)
            .await?;
        Ok(())
    }

    async fn subscriber_copies(
        &mut self,
        feed_id: i64,
        joins: &[(i64, i64)],
    ) -> Result<Vec<ArrivingCopyRow>> {
        // `CROSS JOIN` keeps the arriving copies first: SQLite's planner put a JSON relation
        // last and scanned every item of each subscriber's feeds.
        let from = format!("{} AS j CROSS JOIN", json_rows("$2", &["cluster", "item"]));
        let sql = format!("{} {COPIES_ORDER}", copies_select(&from));
        Ok(sqlx::query_as(sqlx::AssertSqlSafe(sql))
            .bind(feed_id)
            .bind(json(&joins)?)
            .fetch_all(&mut *self)
            .await?)
    }

    async fn write_shown(&mut self, rows: &[ShownRow], now: i64) -> Result<()> {
        let moves: Vec<(i64, i64, i64)> = rows
            .iter()
            .filter(|r| r.3)
            .map(|r| (r.0, r.1, r.2))
            .collect();
        if !moves.is_empty() {
            let sql = format!(
                "UPDATE user_duplicates SET shown_id = t.shown FROM {} AS t
                 WHERE user_duplicates.user_id = t.user_id AND user_duplicates.shown_id = t.hidden",
                json_rows("$1", &["user_id", "hidden", "shown"])
            );
            sqlx::query(sqlx::AssertSqlSafe(sql))
                .bind(json(&moves)?)
                .execute(&mut *self)
                .await?;
        }
        let pairs: Vec<(i64, i64, i64)> = rows.iter().map(|r| (r.0, r.1, r.2)).collect();
        let sql = format!(
            "INSERT INTO user_duplicates (user_id, item_id, shown_id)
             SELECT user_id, hidden, shown FROM {} WHERE TRUE
             ON CONFLICT (user_id, item_id) DO UPDATE SET shown_id = excluded.shown_id",
            json_rows("$1", &["user_id", "hidden", "shown"])
        );
        sqlx::query(sqlx::AssertSqlSafe(sql))
            .bind(json(&pairs)?)
            .execute(&mut *self)
            .await?;
        let read: Vec<(i64, i64)> = rows.iter().filter_map(|r| Some((r.0, r.4?))).collect();
        if !read.is_empty() {
            let sql = format!(
                "INSERT INTO item_states (user_id, item_id, is_read, is_starred, updated_at)
                 SELECT user_id, item, TRUE, FALSE, $1 FROM {} WHERE TRUE
                 ON CONFLICT (user_id, item_id) DO UPDATE SET is_read = TRUE,
                     updated_at = excluded.updated_at",
                json_rows("$2", &["user_id", "item"])
            );
            sqlx::query(sqlx::AssertSqlSafe(sql))
                .bind(now)
                .bind(json(&read)?)
                .execute(&mut *self)
                .await?;
        }
        Ok(())
    }
}

impl ClusterStatements for sqlx::PgConnection {
    async fn story_hits(
        &mut self,
        feed_id: i64,
        keys: &[i64],
        per_key: usize,
    ) -> Result<Vec<HitRow>> {
        // One look-up per key, each cut after `postings_read` rows: a plan that cannot turn
        // into scans of both tables, which PostgreSQL chose for a list of keys when its
        // statistics were missing or old (a fresh installation importing, or autovacuum off):
        // 324 ms instead of 0.5 for 500 keys among 300,000, growing with every item stored.
        // The cut still tells a common key (more postings than the limit) from evidence.
        // Planned anew at each fetch (`persistent(false)`: an unnamed statement, which
        // PostgreSQL plans for its values), never as a prepared statement's generic plan: that
        // plan is kept for the connection's life, and one made while the tables were small
        // (a fresh database, no statistics) hash-joined a scan of all items for every key,
        // 0.3 s a fetch on average and up to 11 s as the items grew.
        let sql = format!(
            "SELECT h.key, h.item_id, h.cluster_id, h.published_at
             FROM UNNEST($2::bigint[]) AS q(key)
             CROSS JOIN LATERAL (
                 SELECT k.key, k.item_id, i.cluster_id, i.published_at
                 FROM item_story_keys k JOIN items i ON i.id = k.item_id
                 WHERE k.key = q.key AND i.feed_id <> $1
                 LIMIT {per_key}) AS h"
        );
        Ok(sqlx::query_as(sqlx::AssertSqlSafe(sql))
            .persistent(false)
            .bind(feed_id)
            .bind(keys)
            .fetch_all(&mut *self)
            .await?)
    }

    async fn candidate_rows(&mut self, ids: &[i64]) -> Result<Vec<CandidateRow>> {
        Ok(sqlx::query_as(
            "SELECT id, cluster_id, url, guid, title, content, summary FROM items
             WHERE id = ANY($1)",
        )
        .bind(ids)
        .fetch_all(&mut *self)
        .await?)
    }

    async fn set_clusters(&mut self, rows: &[(i64, i64, bool)]) -> Result<()> {
        sqlx::query(
            "UPDATE items SET cluster_id = t.cluster
             FROM UNNEST($1::bigint[], $2::bigint[], $3::boolean[]) AS t(id, cluster, only_if_none)
             WHERE items.id = t.id AND (NOT t.only_if_none OR items.cluster_id IS NULL)",
        )
        .bind(rows.iter().map(|r| r.0).collect::<Vec<i64>>())
        .bind(rows.iter().map(|r| r.1).collect::<Vec<i64>>())
        .bind(rows.iter().map(|r| r.2).collect::<Vec<bool>>())
        .execute(&mut *self)
        .await?;
        Ok(())
    }

    async fn insert_story_keys(&mut self, rows: &[(i64, i64)]) -> Result<()> {
        sqlx::query(
            "INSERT INTO item_story_keys (key, item_id)
             SELECT * FROM UNNEST($1::bigint[], $2::bigint[])",
        )
        .bind(rows.iter().map(|r| r.0).collect::<Vec<i64>>())
        .bind(rows.iter().map(|r| r.1).collect::<Vec<i64>>())
        .execute(&mut *self)
        .await?;
        Ok(())
    }

    async fn subscriber_copies(
        &mut self,
        feed_id: i64,
        joins: &[(i64, i64)],
    ) -> Result<Vec<ArrivingCopyRow>> {
        // One look-up per arriving copy (`LATERAL`), planned as each was alone: a join of
        // the whole list was planned with hash joins over whole tables without statistics.
        // Unnamed, as the key look-up is (`story_hits`): a prepared statement's generic plan,
        // made once while the tables were small, would be kept for the connection's life.
        let sql = format!(
            "SELECT c.* FROM UNNEST($2::bigint[], $3::bigint[]) AS j(cluster, item)
             CROSS JOIN LATERAL ({}) AS c {COPIES_ORDER}",
            copies_select("")
        );
        Ok(sqlx::query_as(sqlx::AssertSqlSafe(sql))
            .persistent(false)
            .bind(feed_id)
            .bind(joins.iter().map(|j| j.0).collect::<Vec<i64>>())
            .bind(joins.iter().map(|j| j.1).collect::<Vec<i64>>())
            .fetch_all(&mut *self)
            .await?)
    }

    async fn write_shown(&mut self, rows: &[ShownRow], now: i64) -> Result<()> {
        let column = |pick: fn(&ShownRow) -> i64| rows.iter().map(pick).collect::<Vec<i64>>();
        let read: Vec<(i64, i64)> = rows.iter().filter_map(|r| Some((r.0, r.4?))).collect();
        // Data-modifying statements of one WITH see the same snapshot: the moves and the new
        // rows touch different rows (a move's row is shown through the copy now hidden, a new
        // row is that copy's own), and the read marks another table.
        sqlx::query(
            "WITH moved AS (
                 UPDATE user_duplicates d SET shown_id = t.shown
                 FROM UNNEST($1::bigint[], $2::bigint[], $3::bigint[], $4::boolean[])
                     AS t(user_id, hidden, shown, replaces)
                 WHERE t.replaces AND d.user_id = t.user_id AND d.shown_id = t.hidden
             ), marked AS (
                 INSERT INTO item_states (user_id, item_id, is_read, is_starred, updated_at)
                 SELECT u, i, TRUE, FALSE, $7 FROM UNNEST($5::bigint[], $6::bigint[]) AS r(u, i)
                 ON CONFLICT (user_id, item_id) DO UPDATE SET is_read = TRUE,
                     updated_at = excluded.updated_at
             )
             INSERT INTO user_duplicates (user_id, item_id, shown_id)
             SELECT user_id, hidden, shown
             FROM UNNEST($1::bigint[], $2::bigint[], $3::bigint[]) AS t(user_id, hidden, shown)
             ON CONFLICT (user_id, item_id) DO UPDATE SET shown_id = excluded.shown_id",
        )
        .bind(column(|r| r.0))
        .bind(column(|r| r.1))
        .bind(column(|r| r.2))
        .bind(rows.iter().map(|r| r.3).collect::<Vec<bool>>())
        .bind(read.iter().map(|r| r.0).collect::<Vec<i64>>())
        .bind(read.iter().map(|r| r.1).collect::<Vec<i64>>())
        .bind(now)
        .execute(&mut *self)
        .await?;
        Ok(())
    }
}
