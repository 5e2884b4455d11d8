//! Each user's label names with how many items carry them, on SQLite (migration 57, issue 33):
//! the list of a user's labels without a by-label index of `item_labels`, whose entries
//! dirtied a leaf per user and label of every fetch that labelled items.
//!
//! What goes is counted by triggers (a row deleted, by hand or with its item, feed or user;
//! a row renamed). What is added is counted by the paths that add labels, once a statement,
//! through [`LabelNames`]: a trigger per added row cost about as much as the index did
//! (docs/benchmarks.md). PostgreSQL keeps its by-label index and has no such table.

use std::collections::BTreeMap;

use crate::{Result, StoreError};

/// Counts label rows a path has just added, in its transaction.
pub(crate) trait LabelNames {
    /// Adds `added` (user, label), one entry per label row inserted (not those that were
    /// there already), to the users' label counts: one statement whatever their number.
    async fn count_added_labels(&mut self, added: &[(i64, &str)]) -> Result<()>;

    /// Whether user `user_id` may have label `label` on an item: on SQLite whether it is
    /// among their names (renaming or deleting a label scans every label row, so one that is
    /// not there, such as a folder's name, needs no scan); always on PostgreSQL, whose
    /// statements find the rows through the by-label index anyway.
    async fn may_have_label(&mut self, user_id: i64, label: &str) -> Result<bool>;
}

/// SQLite: (user, label, how many) rows from a JSON array, added to the counts.
const SQLITE_COUNT_SQL: &str = "INSERT INTO item_label_names (user_id, label, items)
     SELECT value ->> 0, value ->> 1, value ->> 2 FROM json_each(?) WHERE TRUE
     ON CONFLICT (user_id, label) DO UPDATE SET items = items + excluded.items";

impl LabelNames for sqlx::SqliteConnection {
    async fn count_added_labels(&mut self, added: &[(i64, &str)]) -> Result<()> {
        if added.is_empty() {
            return Ok(());
        }
        let mut counts: BTreeMap<(i64, &str), i64> = BTreeMap::new();
        for &(user_id, label) in added {
            *counts.entry((user_id, label)).or_default() += 1;
        }
        let rows: Vec<(i64, &str, i64)> = counts.into_iter().map(|((u, l), n)| (u, l, n)).collect();
        let rows = serde_json::to_string(&rows).map_err(|e| StoreError::Invalid(e.to_string()))?;
        sqlx::query(SQLITE_COUNT_SQL)
            .bind(rows)
            .execute(&mut *self)
            .await?;
        Ok(())
    }

    async fn may_have_label(&mut self, user_id: i64, label: &str) -> Result<bool> {
        Ok(sqlx::query_scalar(
            "SELECT EXISTS (SELECT 1 FROM item_label_names WHERE user_id = ? AND label = ?)",
        )
        .bind(user_id)
        .bind(label)
        .fetch_one(&mut *self)
        .await?)
    }
}

impl LabelNames for sqlx::PgConnection {
    /// Nothing to count: PostgreSQL lists labels through its by-label index.
    async fn count_added_labels(&mut self, _added: &[(i64, &str)]) -> Result<()> {
        Ok(())
    }

    /// Always: the by-label index finds the rows, or none, at once.
    async fn may_have_label(&mut self, _user_id: i64, _label: &str) -> Result<bool> {
        Ok(true)
    }
}

/// A user's labels, sorted, on each engine: SQLite's names table, PostgreSQL's by-label index.
pub(crate) fn list_labels_sql(engine: crate::Engine) -> &'static str {
    match engine {
        crate::Engine::Sqlite => {
            "SELECT label FROM item_label_names WHERE user_id = $1 ORDER BY label"
        }
        crate::Engine::Postgres => {
            "SELECT DISTINCT label FROM item_labels WHERE user_id = $1 ORDER BY label"
        }
    }
}
