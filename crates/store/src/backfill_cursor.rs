//! Where a resumable background backfill stands: a one-row table (id 1) of `next_item_id` up
//! to `last_item_id`, set by the migration that needs the backfill and moved on by each step.
//! Shared by the backfills that walk the items by id (languages, the arrival rows' dates, the
//! job queues' backfills of items stored before a queue existed), a floor below them so that
//! none imports another or the search index's module.

use crate::{Engine, Result, Store, with_db};

/// How far a backfill over the items has come.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct BackfillStep {
    /// Items indexed (or rows filled) by this step.
    pub indexed: u64,
    /// The next item id to index (of the items' pass until it is done, then of the full
    /// articles' pass, for the search index).
    pub next_item_id: i64,
    /// The last item id to index.
    pub last_item_id: i64,
}

impl BackfillStep {
    /// Whether every item the backfill is for has been done.
    pub fn is_done(&self) -> bool {
        self.next_item_id > self.last_item_id
    }
}

/// A backfill with work left: its cursor table and span.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) struct BackfillCursor {
    /// The one-row table that keeps the cursor.
    pub table: &'static str,
    /// The next item id to do.
    pub next: i64,
    /// The last item id to do.
    pub last: i64,
}

impl BackfillCursor {
    /// The step to answer when this step did nothing: the span as it was.
    pub fn unchanged(&self) -> BackfillStep {
        BackfillStep {
            indexed: 0,
            next_item_id: self.next,
            last_item_id: self.last,
        }
    }

    /// The statement that reads the cursor's next id again inside the step's transaction;
    /// on PostgreSQL it locks the row, so that workers take turns: a step that finds the
    /// cursor moved since [`Store::backfill_cursor`] read it writes nothing.
    pub fn locked_next_sql(&self, engine: Engine) -> String {
        let lock = match engine {
            Engine::Sqlite => "",
            Engine::Postgres => " FOR UPDATE",
        };
        format!("SELECT next_item_id FROM {} WHERE id = 1{lock}", self.table)
    }
}

impl Store {
    /// Where the backfill kept in `table` stands, read without a lock (once done, a step
    /// writes nothing: SQLite's one writer is shared): `Ok(cursor)` while items are left,
    /// `Err(step)` with the step to answer once none is (a schema without the row reads as
    /// done with nothing to do).
    pub(crate) async fn backfill_cursor(
        &self,
        table: &'static str,
    ) -> Result<std::result::Result<BackfillCursor, BackfillStep>> {
        let sql = format!("SELECT next_item_id, last_item_id FROM {table} WHERE id = 1");
        let state: Option<(i64, i64)> = with_db!(self, read, |db| {
            sqlx::query_as(sqlx::AssertSqlSafe(sql))
                .fetch_optional(db)
                .await?
        });
        Ok(match state {
            None => Err(BackfillStep {
                indexed: 0,
                next_item_id: 1,
                last_item_id: 0,
            }),
            Some((next, last)) => {
                let cursor = BackfillCursor { table, next, last };
                if next > last {
                    Err(cursor.unchanged())
                } else {
                    Ok(cursor)
                }
            }
        })
    }
}
