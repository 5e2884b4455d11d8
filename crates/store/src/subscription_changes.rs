//! Changes a user makes to one subscription's feed: asking for a refresh now (F15), and
//! pointing the subscription at another feed URL.

use crate::{Result, Store, StoreError, in_tx, unix_now, with_db};

impl Store {
    /// Records a manual refresh request for a feed, allowed at most once per
    /// `min_interval_seconds` whoever asks (F15). Returns `Ok(())` when the refresh may go
    /// ahead, or `Err(seconds)` to wait. The check and the record are one statement, so two
    /// users clicking at once get one refresh.
    pub async fn request_refresh(
        &self,
        feed_id: i64,
        now: i64,
        min_interval_seconds: i64,
    ) -> Result<std::result::Result<(), i64>> {
        let recorded = with_db!(self, write, |db| {
            sqlx::query(
                "UPDATE feed_fetch_state SET last_refresh_request = $1
                 WHERE feed_id = $2
                   AND (last_refresh_request IS NULL OR last_refresh_request <= $3)",
            )
            .bind(now)
            .bind(feed_id)
            .bind(now.saturating_sub(min_interval_seconds))
            .execute(db)
            .await?
            .rows_affected()
        });
        if recorded > 0 {
            return Ok(Ok(()));
        }
        let last: Option<Option<i64>> = with_db!(self, read, |db| {
            sqlx::query_scalar(
                "SELECT last_refresh_request FROM feed_fetch_state WHERE feed_id = $1",
            )
            .bind(feed_id)
            .fetch_optional(db)
            .await?
        });
        match last {
            None => Err(StoreError::NotFound("feed")),
            Some(last) => {
                let wait = last
                    .unwrap_or(now)
                    .saturating_add(min_interval_seconds)
                    .saturating_sub(now);
                Ok(Err(wait.clamp(1, min_interval_seconds.max(1))))
            }
        }
    }

    /// Points one of the user's subscriptions at the feed with `new_url` (created if no one
    /// follows it yet), keeping its title, group and interval. The user's read and starred
    /// states of the old feed's items go, as those items are not the new feed's. Fails with
    /// a conflict when the user already follows the new URL. Returns the new feed's id.
    pub async fn change_subscription_feed(
        &self,
        user_id: i64,
        subscription_id: i64,
        new_url: &str,
    ) -> Result<i64> {
        let now = unix_now();
        let result: Result<i64> = async {
            Ok(in_tx!(self, |tx| {
                let old_feed: Option<i64> = sqlx::query_scalar(
                    "SELECT feed_id FROM subscriptions WHERE id = $1 AND user_id = $2",
                )
                .bind(subscription_id)
                .bind(user_id)
                .fetch_optional(&mut *tx)
                .await?;
                let old_feed = old_feed.ok_or(StoreError::NotFound("subscription"))?;
                let new_feed = crate::feeds::ensure_feed!(tx, new_url, now);
                if new_feed != old_feed {
                    sqlx::query("UPDATE subscriptions SET feed_id = $1 WHERE id = $2")
                        .bind(new_feed)
                        .bind(subscription_id)
                        .execute(&mut *tx)
                        .await?;
                    sqlx::query(
                        "DELETE FROM item_states WHERE user_id = $1
                           AND item_id IN (SELECT id FROM items WHERE feed_id = $2)",
                    )
                    .bind(user_id)
                    .bind(old_feed)
                    .execute(&mut *tx)
                    .await?;
                    sqlx::query(crate::feeds::MARK_ORPHANS)
                        .bind(now)
                        .execute(&mut *tx)
                        .await?;
                }
                new_feed
            }))
        }
        .await;
        match result {
            Err(StoreError::Database(e)) if StoreError::is_unique_violation(&e) => Err(
                StoreError::Conflict(format!("already subscribed to {new_url}")),
            ),
            other => other,
        }
    }
}
