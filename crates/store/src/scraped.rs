//! Scraped sources (F7): feed rows whose page is read by a scraper configuration instead of
//! a feed parser. One URL is one source, as for feeds; the configuration is the JSON of a
//! `tidings_scrape::ScrapeConfig`, which the callers check and normalize (the store compares
//! it as text).

use crate::{NewSubscription, Result, Store, StoreError, Subscription, in_tx, unix_now};

/// The id of the scraped source at `$url` with the configuration `$config`, created (with
/// its fetch state, due at once) when there is none, and no longer orphaned. A feed at that
/// URL, or a source that others follow with another configuration, is a conflict; an
/// orphaned source with another configuration takes this one. Runs inside `$tx`.
macro_rules! ensure_scraped_source {
    ($tx:ident, $url:expr, $config:expr, $now:expr) => {{
        let url = tidings_feed::normalize_feed_url_text($url);
        let config: &str = $config;
        let existing: Option<(i64, String, Option<String>, bool)> = sqlx::query_as(
            "SELECT f.id, f.source_kind, f.scrape_config,
                    EXISTS (SELECT 1 FROM subscriptions s WHERE s.feed_id = f.id)
             FROM feeds f WHERE f.url = $1",
        )
        .bind(&url)
        .fetch_optional(&mut *$tx)
        .await?;
        match existing {
            None => {
                let feed_id: i64 = sqlx::query_scalar(
                    "INSERT INTO feeds (url, source_kind, scrape_config, created_at, updated_at)
                     VALUES ($1, 'scrape', $2, $3, $3) RETURNING id",
                )
                .bind(&url)
                .bind(config)
                .bind($now)
                .fetch_one(&mut *$tx)
                .await?;
                crate::feeds::ensure_fetch_state!($tx, feed_id, $now);
                feed_id
            }
            Some((_, kind, _, _)) if kind != "scrape" => {
                return Err(StoreError::Conflict(format!(
                    "{url} is followed as a feed, so it cannot be a scraped source too"
                )));
            }
            Some((feed_id, _, Some(stored), _)) if stored == config => {
                sqlx::query("UPDATE feeds SET orphaned_at = NULL WHERE id = $1")
                    .bind(feed_id)
                    .execute(&mut *$tx)
                    .await?;
                feed_id
            }
            Some((_, _, _, true)) => {
                return Err(StoreError::Conflict(format!(
                    "{url} is already followed as a scraped source with another \
                     configuration; one page has one configuration"
                )));
            }
            Some((feed_id, _, _, false)) => {
                sqlx::query(
                    "UPDATE feeds SET scrape_config = $1, orphaned_at = NULL, updated_at = $2
                     WHERE id = $3",
                )
                .bind(config)
                .bind($now)
                .bind(feed_id)
                .execute(&mut *$tx)
                .await?;
                crate::scraped::reparse_next_fetch!($tx, feed_id, $now);
                feed_id
            }
        }
    }};
}

/// Makes the next fetch of `$feed_id` read the page again with its (new) configuration: the
/// stored body and validators would otherwise skip it as unchanged; a feed stopped by parse
/// failures is resumed, due now. Runs inside `$tx`.
macro_rules! reparse_next_fetch {
    ($tx:ident, $feed_id:expr, $now:expr) => {{
        sqlx::query("DELETE FROM feed_bodies WHERE feed_id = $1")
            .bind($feed_id)
            .execute(&mut *$tx)
            .await?;
        sqlx::query(
            "UPDATE feed_fetch_state SET etag = NULL, last_modified = NULL, status = 'active',
                    status_reason = NULL, consecutive_failures = 0, parse_failures = 0,
                    next_check_at = $1, retry_after_until = NULL
             WHERE feed_id = $2",
        )
        .bind($now)
        .bind($feed_id)
        .execute(&mut *$tx)
        .await?;
    }};
}

pub(crate) use {ensure_scraped_source, reparse_next_fetch};

impl Store {
    /// Subscribes a user to the scraped source at `new.feed_url` with `scrape_config` (F7),
    /// creating it when it is the first subscriber, within the user's subscription limit as
    /// [`Store::subscribe_within_limit`]. Users who give one page the same configuration share
    /// one source. [`StoreError::Conflict`] when the URL is a feed, or a source others follow
    /// with another configuration.
    pub async fn subscribe_scraped(
        &self,
        user_id: i64,
        new: &NewSubscription,
        scrape_config: &str,
        max_subscriptions: Option<i64>,
    ) -> Result<Subscription> {
        if scrape_config.trim().is_empty() {
            return Err(StoreError::Invalid(
                "a scraped source needs a configuration".into(),
            ));
        }
        self.subscribe_to_source(user_id, new, max_subscriptions, Some(scrape_config))
            .await
    }

    /// Replaces the configuration of the scraped source behind the user's subscription `id`,
    /// and has its next fetch (due now) read the page again. Allowed only to the source's sole
    /// subscriber ([`StoreError::Conflict`] otherwise: others read it too); a feed is
    /// [`StoreError::Invalid`]. Returns the source's feed id.
    pub async fn update_scrape_config(
        &self,
        user_id: i64,
        id: i64,
        scrape_config: &str,
    ) -> Result<i64> {
        if scrape_config.trim().is_empty() {
            return Err(StoreError::Invalid(
                "a scraped source needs a configuration".into(),
            ));
        }
        let now = unix_now();
        Ok(in_tx!(self, |tx| {
            let found: Option<(i64, String)> = sqlx::query_as(
                "SELECT s.feed_id, f.source_kind FROM subscriptions s
                 JOIN feeds f ON f.id = s.feed_id
                 WHERE s.id = $1 AND s.user_id = $2",
            )
            .bind(id)
            .bind(user_id)
            .fetch_optional(&mut *tx)
            .await?;
            let (feed_id, kind) = found.ok_or(StoreError::NotFound("subscription"))?;
            if kind != "scrape" {
                return Err(StoreError::Invalid(
                    "this subscription is a feed, not a scraped source".into(),
                ));
            }
            let others: i64 = sqlx::query_scalar(
                "SELECT COUNT(*) FROM subscriptions WHERE feed_id = $1 AND user_id <> $2",
            )
            .bind(feed_id)
            .bind(user_id)
            .fetch_one(&mut *tx)
            .await?;
            if others > 0 {
                return Err(StoreError::Conflict(format!(
                    "{others} other user(s) follow this scraped source, so its configuration \
                     stays as it is"
                )));
            }
            sqlx::query("UPDATE feeds SET scrape_config = $1, updated_at = $2 WHERE id = $3")
                .bind(scrape_config)
                .bind(now)
                .bind(feed_id)
                .execute(&mut *tx)
                .await?;
            reparse_next_fetch!(tx, feed_id, now);
            feed_id
        }))
    }
}
