//! A shared feed's operator settings: suspending the feed for everyone and fetching it
//! through a proxy. They act on every subscriber's fetch, and a proxy URL can carry
//! credentials, so only administrators (the admin API, the command line) read or change them.

use crate::{Result, Store, StoreError, unix_now, with_db};

/// A shared feed with its operator settings.
#[derive(Debug, Clone, PartialEq, Eq, serde::Serialize)]
pub struct FeedSettings {
    /// The feed's id.
    pub id: i64,
    /// Its URL.
    pub url: String,
    /// Its title.
    pub title: Option<String>,
    /// Whether it is suspended for everyone: no worker fetches it, whoever follows it.
    pub suspended: bool,
    /// The proxy it is fetched through (`http`, `https`, `socks5` or `socks5h`), credentials
    /// included: never show it to anyone but an administrator, nor log it unredacted.
    pub proxy_url: Option<String>,
    /// How many users follow it.
    pub subscribers: i64,
    /// How many of those have not paused their subscription.
    pub active_subscribers: i64,
}

/// Changes to a feed's operator settings; `None` leaves a field as it is. The caller checks
/// the proxy URL against the outbound policy before (the store does not know it).
#[derive(Debug, Clone, Default)]
pub struct FeedSettingsChanges {
    /// Suspend (`true`) or resume (`false`) the feed for everyone.
    pub suspended: Option<bool>,
    /// A proxy URL (`Some(Some(..))`) or none (`Some(None)`).
    pub proxy_url: Option<Option<String>>,
}

type FeedSettingsRow = (i64, String, Option<String>, bool, Option<String>, i64, i64);

impl Store {
    /// A feed's operator settings.
    pub async fn feed_settings(&self, feed_id: i64) -> Result<FeedSettings> {
        let row: Option<FeedSettingsRow> = with_db!(self, read, |db| {
            sqlx::query_as(
                "SELECT f.id, f.url, f.title, f.suspended, f.proxy_url,
                        (SELECT COUNT(*) FROM subscriptions s WHERE s.feed_id = f.id),
                        (SELECT COUNT(*) FROM subscriptions s
                         WHERE s.feed_id = f.id AND s.suspended = FALSE)
                 FROM feeds f WHERE f.id = $1",
            )
            .bind(feed_id)
            .fetch_optional(db)
            .await?
        });
        let (id, url, title, suspended, proxy_url, subscribers, active_subscribers) =
            row.ok_or(StoreError::NotFound("feed"))?;
        Ok(FeedSettings {
            id,
            url,
            title,
            suspended,
            proxy_url,
            subscribers,
            active_subscribers,
        })
    }

    /// Changes a feed's operator settings and returns them as they are then. Resuming a
    /// feed makes it due at once, so its subscribers need not wait out its old schedule.
    pub async fn update_feed_settings(
        &self,
        feed_id: i64,
        changes: &FeedSettingsChanges,
    ) -> Result<FeedSettings> {
        let (set_proxy, proxy) = match &changes.proxy_url {
            Some(proxy) => (
                true,
                proxy.as_deref().map(str::trim).filter(|p| !p.is_empty()),
            ),
            None => (false, None),
        };
        let now = unix_now();
        let changed = with_db!(self, write, |db| {
            sqlx::query(
                "UPDATE feeds
                 SET suspended = COALESCE($1, suspended),
                     proxy_url = CASE WHEN $2 THEN $3 ELSE proxy_url END,
                     updated_at = $4
                 WHERE id = $5",
            )
            .bind(changes.suspended)
            .bind(set_proxy)
            .bind(proxy)
            .bind(now)
            .bind(feed_id)
            .execute(db)
            .await?
            .rows_affected()
        });
        if changed == 0 {
            return Err(StoreError::NotFound("feed"));
        }
        if changes.suspended == Some(false) {
            with_db!(self, write, |db| {
                sqlx::query(
                    "UPDATE feed_fetch_state SET next_check_at = $1
                     WHERE feed_id = $2 AND next_check_at > $1",
                )
                .bind(now)
                .bind(feed_id)
                .execute(db)
                .await?;
            });
        }
        self.feed_settings(feed_id).await
    }
}
