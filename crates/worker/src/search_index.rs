//! The search index backfill (F35): items stored before the search index existed (migration 6),
//! then full articles (F6) saved before they were searched (migration 25), are indexed in the
//! background, one small batch per transaction, so that upgrading a large database neither
//! blocks the migration nor the server. Search finds what is indexed so far.

use std::time::Duration;

use tidings_store::{DEFAULT_BACKFILL_BATCH, Store, StoreError};

/// The pause between batches, so that the API's and the fetcher's writes get their turn at
/// SQLite's single writer.
pub const BACKFILL_PAUSE: Duration = Duration::from_millis(20);

/// Indexes every item that predates the search index, and every full article that predates
/// its indexing, `DEFAULT_BACKFILL_BATCH` at a time with
/// `pause` between batches, and returns how many were indexed. Progress is stored after each
/// batch, so a restart resumes where this stopped; several workers at once take turns.
pub async fn backfill_search_index(store: &Store, pause: Duration) -> Result<u64, StoreError> {
    let mut total = 0;
    let mut batches: u64 = 0;
    loop {
        let step = store.backfill_search_index(DEFAULT_BACKFILL_BATCH).await?;
        total += step.indexed;
        if step.is_done() {
            if total > 0 {
                tracing::info!(items = total, "search index backfill done");
            }
            return Ok(total);
        }
        batches += 1;
        if batches % 200 == 1 {
            tracing::info!(
                indexed = total,
                next_item_id = step.next_item_id,
                last_item_id = step.last_item_id,
                "search index backfill in progress"
            );
        }
        tokio::time::sleep(pause).await;
    }
}

/// Gives every item stored before languages were kept (migration 47) its language, and their
/// feeds theirs (issue 37), `DEFAULT_BACKFILL_BATCH` at a time with `pause` between batches;
/// returns how many items were read. Resumable as [`backfill_search_index`] is.
pub async fn backfill_languages(store: &Store, pause: Duration) -> Result<u64, StoreError> {
    let mut total = 0;
    loop {
        let step = store.backfill_languages(DEFAULT_BACKFILL_BATCH).await?;
        total += step.indexed;
        if step.is_done() {
            if total > 0 {
                tracing::info!(items = total, "language backfill done");
            }
            return Ok(total);
        }
        tokio::time::sleep(pause).await;
    }
}

/// Gives every arrival row stored before migration 56 its item's feed and date (issue 38),
/// `ARRIVAL_DATES_BATCH` item ids at a time with `pause` between batches; returns how many
/// rows were written. Resumable as [`backfill_search_index`] is. Until it is done the sync
/// APIs' lists of ids read every item they list.
pub async fn backfill_arrival_dates(store: &Store, pause: Duration) -> Result<u64, StoreError> {
    let mut total = 0;
    loop {
        let step = store
            .backfill_arrival_dates(tidings_store::ARRIVAL_DATES_BATCH)
            .await?;
        total += step.indexed;
        if step.is_done() {
            if total > 0 {
                tracing::info!(rows = total, "arrival dates backfill done");
            }
            return Ok(total);
        }
        tokio::time::sleep(pause).await;
    }
}
