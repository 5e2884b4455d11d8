//! The language backfill (issue 37): items stored before migration 47 are given their
//! language, and their feeds theirs, in the background, one batch per transaction, as the
//! search index's backfill does.

use std::collections::HashMap;

use crate::backfill_cursor::BackfillStep;
use crate::languages::{ItemLanguageInput, batch_languages, guesses, refresh_feed_language_on};
use crate::search_index::searchable_text;
use crate::{Result, Store, in_tx, with_db};

/// The columns of an item the backfill reads: id, feed, title, content, summary.
type BackfillRow = (i64, i64, Option<String>, Option<String>, Option<String>);

impl Store {
    /// Gives the next `batch` of the items stored before migration 47 their language, and
    /// their feeds theirs, then records how far it got; [`BackfillStep::is_done`] once every
    /// such item has one. Detection runs before the write transaction (SQLite's one writer
    /// does not wait for it); an item given its language meanwhile by a new fetch keeps it.
    /// Resumable, and several workers take turns (the cursor row is locked on PostgreSQL and
    /// a step whose cursor moved meanwhile writes nothing).
    pub async fn backfill_languages(&self, batch: i64) -> Result<BackfillStep> {
        let batch = batch.clamp(1, 10_000);
        let cursor = match self.backfill_cursor("language_backfill").await? {
            Ok(cursor) => cursor,
            Err(done) => return Ok(done),
        };
        let (next, last) = (cursor.next, cursor.last);
        let rows: Vec<BackfillRow> = with_db!(self, read, |db| {
            sqlx::query_as(
                "SELECT id, feed_id, title, content, summary FROM items
                 WHERE id >= $1 AND id <= $2 ORDER BY id LIMIT $3",
            )
            .bind(next)
            .bind(last)
            .bind(batch)
            .fetch_all(db)
            .await?
        });
        let found = backfill_languages_of(self, &rows).await?;
        let after = match rows.last() {
            Some((id, ..)) if rows.len() as i64 == batch => id + 1,
            _ => last + 1,
        };
        let state_sql = cursor.locked_next_sql(self.engine());
        let written = in_tx!(self, |tx| {
            let current: i64 = sqlx::query_scalar(sqlx::AssertSqlSafe(state_sql))
                .fetch_one(&mut *tx)
                .await?;
            if current != next {
                // Another worker took this batch meanwhile.
                None
            } else {
                for (id, language) in &found {
                    sqlx::query(
                        "UPDATE items SET language = $2 WHERE id = $1 AND language IS NULL",
                    )
                    .bind(*id)
                    .bind(language)
                    .execute(&mut *tx)
                    .await?;
                }
                let mut feeds: Vec<i64> = rows.iter().map(|(_, feed, ..)| *feed).collect();
                feeds.sort_unstable();
                feeds.dedup();
                for feed_id in feeds {
                    refresh_feed_language_on!(tx, feed_id, None);
                }
                sqlx::query("UPDATE language_backfill SET next_item_id = $1 WHERE id = 1")
                    .bind(after)
                    .execute(&mut *tx)
                    .await?;
                Some(rows.len() as u64)
            }
        });
        Ok(match written {
            Some(indexed) => BackfillStep {
                indexed,
                next_item_id: after,
                last_item_id: last,
            },
            None => cursor.unchanged(),
        })
    }
}

/// The languages of the backfill's `rows` (item id, language), by feed, each feed's stored
/// language as its declaration.
async fn backfill_languages_of(
    store: &Store,
    rows: &[BackfillRow],
) -> Result<Vec<(i64, Option<String>)>> {
    let mut by_feed: HashMap<i64, Vec<&BackfillRow>> = HashMap::new();
    for row in rows {
        by_feed.entry(row.1).or_default().push(row);
    }
    let mut found = Vec::with_capacity(rows.len());
    for (feed_id, items) in by_feed {
        let bodies: Vec<String> = items
            .iter()
            .map(|(_, _, _, content, summary)| {
                searchable_text(content.as_deref().or(summary.as_deref()), None)
            })
            .collect();
        let inputs: Vec<ItemLanguageInput<'_>> = items
            .iter()
            .zip(&bodies)
            .map(|((_, _, title, ..), body)| ItemLanguageInput {
                title: title.as_deref(),
                body,
                declared: None,
            })
            .collect();
        let declared = store.stored_feed_language(feed_id).await?;
        let languages = batch_languages(&inputs, &guesses(&inputs), declared.as_deref());
        found.extend(items.iter().map(|(id, ..)| *id).zip(languages));
    }
    Ok(found)
}
