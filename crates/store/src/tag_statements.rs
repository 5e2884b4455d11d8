//! The statements that store a batch of items' tags (see `tags`), one per kind of write however
//! many items and tags the batch holds: PostgreSQL binds whole arrays, SQLite one JSON text
//! read with `json_each`. A batch of 25 items with 8 tags each was 70 to 100 statements, one
//! or two per tag name and three per item; on PostgreSQL each is a round trip while the
//! transaction stays open (docs/benchmarks.md, "100,000 feeds, one worker").

use std::collections::HashMap;

use crate::Result;
use crate::batch::json_param as json;

/// The writes of a batch of tagged items, by engine.
pub(crate) trait TagStatements {
    /// The ids of tags `names` (sorted, so that concurrent batches insert new names in one
    /// order and never deadlock), inserting the names not stored yet.
    async fn tag_ids(&mut self, names: &[&str]) -> Result<HashMap<String, i64>>;

    /// Deletes the rows `(item, version)` of the versioned queue `table` that are still at
    /// that version, and answers the items whose rows were deleted: the items still current.
    async fn complete_current(&mut self, table: &str, jobs: &[(i64, i64)]) -> Result<Vec<i64>>;

    /// Replaces the tags of `items` with `rows` (`(item, tag, score)`, each item's tags
    /// distinct).
    async fn replace_item_tags(&mut self, items: &[i64], rows: &[(i64, i64, f64)]) -> Result<()>;
}

impl TagStatements for sqlx::SqliteConnection {
    async fn tag_ids(&mut self, names: &[&str]) -> Result<HashMap<String, i64>> {
        let names = json(&names)?;
        // `WHERE TRUE` tells SQLite's parser that `ON CONFLICT` belongs to the insert.
        sqlx::query(
            "INSERT INTO tags (name) SELECT value FROM json_each($1) WHERE TRUE
             ON CONFLICT (name) DO NOTHING",
        )
        .bind(&names)
        .execute(&mut *self)
        .await?;
        let ids: Vec<(String, i64)> = sqlx::query_as(
            "SELECT name, id FROM tags WHERE name IN (SELECT value FROM json_each($1))",
        )
        .bind(&names)
        .fetch_all(&mut *self)
        .await?;
        Ok(ids.into_iter().collect())
    }

    async fn complete_current(&mut self, table: &str, jobs: &[(i64, i64)]) -> Result<Vec<i64>> {
        let sql = format!(
            "DELETE FROM {table}
             WHERE (item_id, version) IN (SELECT json_extract(value, '$[0]'),
                                                 json_extract(value, '$[1]')
                                          FROM json_each($1))
             RETURNING item_id"
        );
        Ok(sqlx::query_scalar(sqlx::AssertSqlSafe(sql))
            .bind(json(&jobs)?)
            .fetch_all(&mut *self)
            .await?)
    }

    async fn replace_item_tags(&mut self, items: &[i64], rows: &[(i64, i64, f64)]) -> Result<()> {
        sqlx::query("DELETE FROM item_tags WHERE item_id IN (SELECT value FROM json_each($1))")
            .bind(json(&items)?)
            .execute(&mut *self)
            .await?;
        if rows.is_empty() {
            return Ok(());
        }
        sqlx::query(
            "INSERT INTO item_tags (item_id, tag_id, score)
             SELECT json_extract(value, '$[0]'), json_extract(value, '$[1]'),
                    json_extract(value, '$[2]')
             FROM json_each($1)",
        )
        .bind(json(&rows)?)
        .execute(&mut *self)
        .await?;
        Ok(())
    }
}

impl TagStatements for sqlx::PgConnection {
    async fn tag_ids(&mut self, names: &[&str]) -> Result<HashMap<String, i64>> {
        // `WITH ORDINALITY` keeps the inserts in the names' order.
        sqlx::query(
            "INSERT INTO tags (name)
             SELECT n.name FROM UNNEST($1::text[]) WITH ORDINALITY AS n (name, at) ORDER BY n.at
             ON CONFLICT (name) DO NOTHING",
        )
        .bind(names)
        .execute(&mut *self)
        .await?;
        let ids: Vec<(String, i64)> =
            sqlx::query_as("SELECT name, id FROM tags WHERE name = ANY ($1)")
                .bind(names)
                .fetch_all(&mut *self)
                .await?;
        Ok(ids.into_iter().collect())
    }

    async fn complete_current(&mut self, table: &str, jobs: &[(i64, i64)]) -> Result<Vec<i64>> {
        let (items, versions): (Vec<i64>, Vec<i64>) = jobs.iter().copied().unzip();
        // The items by key (`= ANY`), whatever the statistics say of a queue that grows and
        // empties; then their versions.
        let sql = format!(
            "DELETE FROM {table}
             WHERE item_id = ANY ($1)
               AND (item_id, version) IN (SELECT * FROM UNNEST($1::bigint[], $2::bigint[]))
             RETURNING item_id"
        );
        Ok(sqlx::query_scalar(sqlx::AssertSqlSafe(sql))
            .bind(items)
            .bind(versions)
            .fetch_all(&mut *self)
            .await?)
    }

    async fn replace_item_tags(&mut self, items: &[i64], rows: &[(i64, i64, f64)]) -> Result<()> {
        sqlx::query("DELETE FROM item_tags WHERE item_id = ANY ($1)")
            .bind(items)
            .execute(&mut *self)
            .await?;
        if rows.is_empty() {
            return Ok(());
        }
        let mut columns: (Vec<i64>, Vec<i64>, Vec<f64>) = Default::default();
        for (item, tag, score) in rows {
            columns.0.push(*item);
            columns.1.push(*tag);
            columns.2.push(*score);
        }
        sqlx::query(
            "INSERT INTO item_tags (item_id, tag_id, score)
             SELECT * FROM UNNEST($1::bigint[], $2::bigint[], $3::float8[])",
        )
        .bind(columns.0)
        .bind(columns.1)
        .bind(columns.2)
        .execute(&mut *self)
        .await?;
        Ok(())
    }
}
