//! The arrival rows' copy of their item's feed and publication date (migration 56, issue 38).
//!
//! Whether an item is unread for a user is decided by the item's date against the watermark
//! of its feed's subscription (see `reading`). Listing a user's unread sync ids read one
//! `items` row per arrival row for those two numbers, scattered over the whole table; the
//! arrival rows now carry them, written by the triggers that write the rows. Rows stored
//! before migration 56 are given theirs here, one span of item ids per transaction, by a
//! background job; until it is done the sync queries read the numbers from the items.

use crate::backfill_cursor::BackfillStep;
use crate::{Result, Store, in_tx, with_db};

/// Item ids whose arrival rows one step of [`Store::backfill_arrival_dates`] fills when the
/// caller does not say: one statement of SQL alone, a few thousand rows on a small install.
pub const ARRIVAL_DATES_BATCH: i64 = 5_000;

impl Store {
    /// Whether every arrival row carries its item's feed and date: migration 56 is applied
    /// and its backfill done. Asked until it is, then remembered (rows written later carry
    /// them from the start).
    pub(crate) async fn arrival_dates_ready(&self) -> bool {
        use std::sync::atomic::Ordering;
        if self.arrival_dates_ready.load(Ordering::Relaxed) {
            return true;
        }
        let left: Result<i64> = async {
            Ok(with_db!(self, read, |db| {
                sqlx::query_scalar(
                    "SELECT COUNT(*) FROM arrival_dates_backfill
                     WHERE id = 1 AND next_item_id <= last_item_id",
                )
                .fetch_one(db)
                .await?
            }))
        }
        .await;
        // An older schema (no such table) reads as not ready.
        let ready = matches!(left, Ok(0));
        if ready {
            self.arrival_dates_ready.store(true, Ordering::Relaxed);
        }
        ready
    }

    /// Gives the arrival rows of the next `batch` item ids (stored before migration 56) their
    /// item's feed and date, then records how far it got; [`BackfillStep::is_done`] once every
    /// such row has them. `indexed` counts the rows written. Resumable, and several workers
    /// take turns (the cursor row is locked on PostgreSQL and a step whose cursor moved
    /// meanwhile writes nothing). A row given its numbers meanwhile by a trigger (its item
    /// moved or redated) keeps them.
    pub async fn backfill_arrival_dates(&self, batch: i64) -> Result<BackfillStep> {
        let batch = batch.clamp(1, 100_000);
        let cursor = match self.backfill_cursor("arrival_dates_backfill").await? {
            Ok(cursor) => cursor,
            Err(done) => return Ok(done),
        };
        let (next, last) = (cursor.next, cursor.last);
        let upper = next.saturating_add(batch - 1).min(last);
        let state_sql = cursor.locked_next_sql(self.engine());
        let written = in_tx!(self, |tx| {
            let current: i64 = sqlx::query_scalar(sqlx::AssertSqlSafe(state_sql))
                .fetch_one(&mut *tx)
                .await?;
            if current != next {
                // Another worker took this span meanwhile.
                None
            } else {
                let rows = sqlx::query(
                    "UPDATE user_items AS u SET feed_id = i.feed_id, published_at = i.published_at
                     FROM items AS i
                     WHERE i.id = u.item_id AND u.item_id >= $1 AND u.item_id <= $2
                       AND u.feed_id IS NULL",
                )
                .bind(next)
                .bind(upper)
                .execute(&mut *tx)
                .await?
                .rows_affected();
                sqlx::query("UPDATE arrival_dates_backfill SET next_item_id = $1 WHERE id = 1")
                    .bind(upper + 1)
                    .execute(&mut *tx)
                    .await?;
                Some(rows)
            }
        });
        Ok(match written {
            Some(indexed) => BackfillStep {
                indexed,
                next_item_id: upper + 1,
                last_item_id: last,
            },
            None => cursor.unchanged(),
        })
    }
}
