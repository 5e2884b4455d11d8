//! Shared feeds, their fetch state and leases, and users' subscriptions to them.

use crate::lease::Lease;
use crate::{Engine, Result, Store, StoreError, in_tx, row_decoder, unix_now, with_db};

/// What a parse says about its feed itself; a `None` keeps the stored value.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq)]
pub struct FeedMetadata<'a> {
    /// The feed's title.
    pub title: Option<&'a str>,
    /// The site the feed belongs to.
    pub site_url: Option<&'a str>,
    /// The feed's description.
    pub description: Option<&'a str>,
    /// The feed's format (`rss`, `atom`, `json`…).
    pub format: Option<&'a str>,
    /// The language the feed declares (a BCP 47 tag as written): checked against its items'
    /// before it is kept (issue 37).
    pub language: Option<&'a str>,
}

/// On PostgreSQL, the start of a feed's item upsert: a transaction that takes the lock that
/// serializes the feed's upserts (shared) with retention's deletions (exclusive,
/// [`PG_FEEDS_ITEMS_LOCK`]), so that an upsert sees the tombstones of items deleted meanwhile.
/// Both go in one simple query, one round trip; the tombstones are read by the next statement,
/// whose snapshot is taken after the lock. (SQLite has one writer; a lock on the feed row would
/// deadlock with unsubscribing.)
pub(crate) fn pg_begin_feed_items(feed_id: i64) -> String {
    format!("BEGIN; SELECT pg_advisory_xact_lock_shared(7467, ({feed_id} % 2147483647)::integer)")
}
/// The exclusive form of the lock [`pg_begin_feed_items`] takes, for each of a group of feeds
/// (`$1`, an `int8[]`), taken by retention. In the order of the locks' keys, so that two runs
/// cannot deadlock (a fetch holds one feed's only); the subquery's `ORDER BY` keeps it from
/// being merged into the outer query, whose locks are then taken in its rows' order.
pub(crate) const PG_FEEDS_ITEMS_LOCK: &str = "SELECT pg_advisory_xact_lock(7467, key)
     FROM (SELECT DISTINCT (feed_id % 2147483647)::integer AS key
           FROM unnest($1::int8[]) AS feed_id ORDER BY key) AS keys";

/// Marks feeds that nobody follows any more as orphaned (F17). Bind: `$1` = now.
pub(crate) const MARK_ORPHANS: &str = "UPDATE feeds SET orphaned_at = $1
     WHERE orphaned_at IS NULL
       AND NOT EXISTS (SELECT 1 FROM subscriptions s WHERE s.feed_id = feeds.id)";

/// Updates feed `$feed_id` with what its parse says about it (a [`crate::FeedMetadata`]; a
/// `None` keeps the stored value) on `$db`, a connection or a transaction.
macro_rules! update_feed_metadata_on {
    ($db:expr, $feed_id:expr, $metadata:expr) => {{
        let metadata: &$crate::FeedMetadata<'_> = $metadata;
        let clean =
            |text: Option<&str>| text.map(|t| $crate::text::strip_control_chars(t).into_owned());
        let (title, site_url, description) = (
            clean(metadata.title),
            clean(metadata.site_url),
            clean(metadata.description),
        );
        sqlx::query(
            "UPDATE feeds SET title = COALESCE($1, title), site_url = COALESCE($2, site_url),
                    description = COALESCE($3, description), format = COALESCE($4, format),
                    updated_at = $5
             WHERE id = $6",
        )
        .bind(&title)
        .bind(&site_url)
        .bind(&description)
        .bind(metadata.format)
        .bind($crate::unix_now())
        .bind($feed_id)
        .execute($db)
        .await?;
    }};
}
pub(crate) use update_feed_metadata_on;

/// Stores a fetch's outcome (a [`FetchRecord`]) for feed `$feed_id` and releases the lease of
/// `$owner` on `$db`, a connection or a transaction; evaluates to the rows changed (0 when
/// `$owner` no longer holds the lease).
macro_rules! record_fetch_on {
    ($db:expr, $feed_id:expr, $owner:expr, $record:expr) => {{
        let (feed_id, owner, record): (i64, &str, &$crate::FetchRecord) =
            ($feed_id, $owner, $record);
        sqlx::query(
            "UPDATE feed_fetch_state SET
                status = $1, status_reason = $2, next_check_at = $3, last_checked_at = $4,
                last_success_at = CASE WHEN $5 THEN $4 ELSE last_success_at END,
                last_error_at = CASE WHEN $5 THEN last_error_at ELSE $4 END,
                last_error = CASE WHEN $5 THEN NULL ELSE $6 END,
                last_http_status = COALESCE($7, last_http_status),
                consecutive_failures = $8, parse_failures = $9,
                etag = COALESCE($10, etag), last_modified = COALESCE($11, last_modified),
                cache_control = CASE WHEN $5 THEN $12 ELSE cache_control END,
                expires_at = CASE WHEN $5 THEN $13 ELSE expires_at END,
                retry_after_until = $14,
                lease_owner = NULL, lease_until = NULL
             WHERE feed_id = $15 AND lease_owner = $16",
        )
        .bind(record.status.as_str())
        .bind(&record.status_reason)
        .bind(record.next_check_at)
        .bind(record.checked_at)
        .bind(record.success)
        .bind(&record.error)
        .bind(record.http_status)
        .bind(record.consecutive_failures)
        .bind(record.parse_failures)
        .bind(&record.etag)
        .bind(&record.last_modified)
        .bind(&record.cache_control)
        .bind(record.expires_at)
        .bind(record.retry_after_until)
        .bind(feed_id)
        .bind(owner)
        .execute($db)
        .await?
        .rows_affected()
    }};
}
pub(crate) use record_fetch_on;

/// The id of the shared feed with `$url` (normalized first, so that every spelling of one
/// address finds the same row, F10), created (with its fetch state, due at once) when nobody
/// follows it yet, and no longer orphaned either way. Runs inside the transaction `$tx`.
macro_rules! ensure_feed {
    ($tx:ident, $url:expr, $now:expr) => {{
        let url = tidings_feed::normalize_feed_url_text($url);
        // DO UPDATE (not DO NOTHING) so RETURNING yields the id of an existing feed.
        let feed_id: i64 = sqlx::query_scalar(
            "INSERT INTO feeds (url, created_at, updated_at) VALUES ($1, $2, $2)
             ON CONFLICT (url) DO UPDATE SET orphaned_at = NULL
             RETURNING id",
        )
        .bind(&url)
        .bind($now)
        .fetch_one(&mut *$tx)
        .await?;
        crate::feeds::ensure_fetch_state!($tx, feed_id, $now);
        feed_id
    }};
}

/// Gives the feed `$feed_id` its fetch state, due at `$now`, unless it has one. Runs inside
/// the transaction `$tx`.
macro_rules! ensure_fetch_state {
    ($tx:ident, $feed_id:expr, $now:expr) => {
        sqlx::query(
            "INSERT INTO feed_fetch_state (feed_id, next_check_at) VALUES ($1, $2)
             ON CONFLICT (feed_id) DO NOTHING",
        )
        .bind($feed_id)
        .bind($now)
        .execute(&mut *$tx)
        .await?
    };
}

pub(crate) use {ensure_feed, ensure_fetch_state};

/// The default fetch interval of a subscription, in minutes (F10).
pub const DEFAULT_INTERVAL_MINUTES: i64 = 60;

/// A feed's scheduling status (F14).
#[derive(Debug, Clone, Copy, PartialEq, Eq, serde::Serialize, serde::Deserialize)]
#[serde(rename_all = "lowercase")]
pub enum FetchStatus {
    /// Fetched on schedule.
    Active,
    /// Failing; retried later and later.
    Backoff,
    /// Not fetched until a user resumes it.
    Stopped,
}

impl FetchStatus {
    /// The word stored in the database and shown by the API.
    pub fn as_str(self) -> &'static str {
        match self {
            FetchStatus::Active => "active",
            FetchStatus::Backoff => "backoff",
            FetchStatus::Stopped => "stopped",
        }
    }

    fn parse(value: &str) -> FetchStatus {
        match value {
            "backoff" => FetchStatus::Backoff,
            "stopped" => FetchStatus::Stopped,
            _ => FetchStatus::Active,
        }
    }
}

/// Checks a subscription's fetch interval: 30 to 720 minutes in steps of 30 (F10).
pub fn check_interval(minutes: i64) -> Result<i64> {
    if !(30..=720).contains(&minutes) || minutes % 30 != 0 {
        return Err(StoreError::Invalid(format!(
            "the fetch interval (interval_minutes) must be 30 to 720 minutes in steps of 30, not {minutes}"
        )));
    }
    Ok(minutes)
}

/// What a user asks for when subscribing.
#[derive(Debug, Clone, Default)]
pub struct NewSubscription {
    /// The feed's URL (already discovered and checked by the caller).
    pub feed_url: String,
    /// The group to put it in; the default group when `None`.
    pub group_id: Option<i64>,
    /// A custom title.
    pub title: Option<String>,
    /// The fetch interval in minutes; 60 when `None`.
    pub interval_minutes: Option<i64>,
}

/// Changes to a subscription; `None` leaves a field as it is.
#[derive(Debug, Clone, Default)]
pub struct SubscriptionChanges {
    /// A new custom title; `Some(None)` removes it.
    pub title: Option<Option<String>>,
    /// Another of the user's groups.
    pub group_id: Option<i64>,
    /// A new interval in minutes.
    pub interval_minutes: Option<i64>,
    /// A new full-text mode (F6).
    pub full_text: Option<crate::FullTextMode>,
    /// Whether the feed's new items are summarized for a user whose preference is `chosen`
    /// (F42).
    pub summarize: Option<bool>,
    /// Pause (`true`) or resume (`false`) the user's subscription: see
    /// [`Subscription::suspended`].
    pub suspended: Option<bool>,
    /// How the feed's copies of stories in other feeds are merged: see
    /// [`Subscription::duplicates`].
    pub duplicates: Option<String>,
}

/// A user's subscription, with what the reader shows about its feed (F30).
#[derive(Debug, Clone, PartialEq, Eq, serde::Serialize)]
pub struct Subscription {
    /// The subscription's id.
    pub id: i64,
    /// The shared feed's id.
    pub feed_id: i64,
    /// The group it is in.
    pub group_id: i64,
    /// The user's own title, if any.
    pub custom_title: Option<String>,
    /// The title the feed gives itself.
    pub feed_title: Option<String>,
    /// The feed's URL.
    pub feed_url: String,
    /// The site the feed belongs to.
    pub site_url: Option<String>,
    /// The fetch interval in minutes.
    pub interval_minutes: i64,
    /// The feed's scheduling status.
    pub status: FetchStatus,
    /// Why the feed is in backoff or stopped.
    pub status_reason: Option<String>,
    /// The last fetch error.
    pub last_error: Option<String>,
    /// The last HTTP status seen.
    pub last_http_status: Option<i64>,
    /// When the feed is next due (Unix seconds).
    pub next_check_at: i64,
    /// When the feed was last fetched successfully.
    pub last_success_at: Option<i64>,
    /// Items of the feed the user has not read.
    pub unread_count: i64,
    /// When the user subscribed.
    pub created_at: i64,
    /// Whether an icon is stored for the feed (F3).
    pub has_favicon: bool,
    /// Whether the feed's items get their article page fetched (F6).
    pub full_text: crate::FullTextMode,
    /// For a scraped source (F7), its configuration (the JSON of a `tidings_scrape`
    /// `ScrapeConfig`); `None` for a feed.
    pub scrape_config: Option<String>,
    /// Whether the feed's new items are summarized when the user's summary preference is
    /// `chosen` (F42).
    pub summarize: bool,
    /// Whether the user paused the subscription: the feed is not fetched for them (others'
    /// subscriptions still fetch it), and its new items reach the user's arrival order (the
    /// sync APIs) only when they resume, above what they already have.
    pub suspended: bool,
    /// How the feed's items are merged with copies of the same stories in the user's other
    /// feeds (issue 35): `merge` (shown once, the first copy the user could see), `prefer`
    /// (shown once, this feed's copy) or `never` (never merged).
    pub duplicates: String,
    /// The feed's language, a BCP 47 tag (issue 37): what it declares, unless its newest
    /// items are mostly in another; `None` until known.
    pub language: Option<String>,
    /// The language the feed's new items are translated into for this user in the
    /// background ("always translate", issue 37), a BCP 47 tag; `None` when off.
    pub translate_to: Option<String>,
}

/// Summary of a shared feed, for administration and the command line.
#[derive(Debug, Clone, PartialEq, Eq, serde::Serialize)]
pub struct FeedSummary {
    /// The feed's id.
    pub id: i64,
    /// Its URL.
    pub url: String,
    /// Its title.
    pub title: Option<String>,
    /// Its scheduling status.
    pub status: FetchStatus,
    /// How many users follow it.
    pub subscribers: i64,
}

/// A feed claimed by a worker, with what the fetch needs.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct DueFeed {
    /// The feed's id.
    pub feed_id: i64,
    /// Its URL.
    pub url: String,
    /// The stored validator for `If-None-Match`.
    pub etag: Option<String>,
    /// The stored validator for `If-Modified-Since`.
    pub last_modified: Option<String>,
    /// Failures in a row so far.
    pub consecutive_failures: i64,
    /// Parse failures in a row so far.
    pub parse_failures: i64,
    /// The smallest interval among its subscribers who have not paused it (F10), in minutes.
    pub interval_minutes: i64,
    /// The proxy to fetch it through (F16).
    pub proxy_url: Option<String>,
    /// When the lease on it ends.
    pub lease_until: i64,
    /// For a scraped source (F7), its configuration (JSON): the page is scraped instead of
    /// parsed as a feed.
    pub scrape_config: Option<String>,
    /// When the feed's WebSub lease ends, while a hub pushes its updates (F18): polling is
    /// then only a slow safety net.
    pub push_until: Option<i64>,
    /// The hex SHA-256 of its kept raw body when that parsed (see
    /// [`Store::feed_body_sha256`]): an identical body needs no parsing.
    pub body_sha256: Option<String>,
    /// When its favicon was last fetched or attempted (see [`Store::favicon_fetched_at`]).
    pub favicon_fetched_at: Option<i64>,
}

/// The outcome of a fetch, as the scheduling policy decided it, to store for a feed.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct FetchRecord {
    /// When the fetch happened.
    pub checked_at: i64,
    /// Whether it succeeded (200 or 304, parsed).
    pub success: bool,
    /// The feed's status from now on.
    pub status: FetchStatus,
    /// Why it is in backoff or stopped.
    pub status_reason: Option<String>,
    /// When to fetch next.
    pub next_check_at: i64,
    /// The HTTP status, when a response came.
    pub http_status: Option<i64>,
    /// The error, when it failed.
    pub error: Option<String>,
    /// Failures in a row after this fetch.
    pub consecutive_failures: i64,
    /// Parse failures in a row after this fetch.
    pub parse_failures: i64,
    /// New validators; `None` keeps the stored ones (a 304 may omit them).
    pub etag: Option<String>,
    /// See `etag`.
    pub last_modified: Option<String>,
    /// The response's Cache-Control, kept for the UI and debugging.
    pub cache_control: Option<String>,
    /// Freshness from Expires / max-age, as a time.
    pub expires_at: Option<i64>,
    /// Not before this time, from Retry-After.
    pub retry_after_until: Option<i64>,
}

type SubscriptionRow = (
    (i64, i64, i64, Option<String>, Option<String>, String),
    (Option<String>, i64, String, Option<String>, Option<String>),
    (Option<i64>, i64, Option<i64>, i64, i64, bool),
    (
        String,
        Option<String>,
        bool,
        bool,
        String,
        Option<String>,
        Option<String>,
    ),
);

const SUBSCRIPTION_SELECT: &str = "
SELECT s.id, s.feed_id, s.group_id, s.title, f.title, f.url,
       f.site_url, s.fetch_interval_minutes, st.status, st.status_reason, st.last_error,
       st.last_http_status, st.next_check_at, st.last_success_at, s.created_at,
       s.unread_count,
       EXISTS (SELECT 1 FROM favicons fi WHERE fi.feed_id = s.feed_id AND fi.data IS NOT NULL),
       s.full_text,
       f.scrape_config,
       s.summarize,
       s.suspended,
       s.duplicates,
       f.language,
       (SELECT t.language FROM subscription_translations t WHERE t.subscription_id = s.id)
FROM subscriptions s
JOIN feeds f ON f.id = s.feed_id
JOIN feed_fetch_state st ON st.feed_id = s.feed_id";

fn subscription_from_row(row: SubscriptionRow) -> Subscription {
    let (
        (id, feed_id, group_id, custom_title, feed_title, feed_url),
        rest,
        last,
        (full_text, scrape_config, summarize, suspended, duplicates, language, translate_to),
    ) = row;
    let (site_url, interval_minutes, status, status_reason, last_error) = rest;
    let (last_http_status, next_check_at, last_success_at, created_at, unread_count, has_favicon) =
        last;
    Subscription {
        id,
        feed_id,
        group_id,
        custom_title,
        feed_title,
        feed_url,
        site_url,
        interval_minutes,
        status: FetchStatus::parse(&status),
        status_reason,
        last_error,
        last_http_status,
        next_check_at,
        last_success_at,
        unread_count,
        created_at,
        has_favicon,
        // The column's CHECK allows only the three spellings.
        full_text: crate::FullTextMode::parse(&full_text).unwrap_or_default(),
        scrape_config,
        summarize,
        suspended,
        duplicates,
        language,
        translate_to,
    }
}

// A subscription row has 24 columns: read as four groups (see `row_decoder!`).
row_decoder!(decode_subscription -> SubscriptionRow {
    (0, 1, 2, 3, 4, 5), (6, 7, 8, 9, 10), (11, 12, 13, 14, 15, 16), (17, 18, 19, 20, 21, 22, 23)
});

impl Store {
    /// Subscribes a user to a feed, creating the shared feed row when it is the first
    /// subscriber. A feed already followed by others is reused: one row per URL, spellings
    /// of one address (`#fragment`, default port, host case, empty `?`) included (F10).
    pub async fn subscribe(&self, user_id: i64, new: &NewSubscription) -> Result<Subscription> {
        self.subscribe_within_limit(user_id, new, None).await
    }

    /// [`Store::subscribe`], refused with [`StoreError::LimitReached`] when the user already
    /// has `max_subscriptions` subscriptions (F29). The count is taken inside the transaction
    /// that inserts, with the user's row locked on PostgreSQL (SQLite has one writer), so any
    /// number of concurrent subscribes and imports never end above the limit.
    pub async fn subscribe_within_limit(
        &self,
        user_id: i64,
        new: &NewSubscription,
        max_subscriptions: Option<i64>,
    ) -> Result<Subscription> {
        self.subscribe_to_source(user_id, new, max_subscriptions, None)
            .await
    }

    /// [`Store::subscribe_within_limit`] to a feed (`scrape_config` `None`) or to a scraped
    /// source with that configuration (see [`Store::subscribe_scraped`]).
    pub(crate) async fn subscribe_to_source(
        &self,
        user_id: i64,
        new: &NewSubscription,
        max_subscriptions: Option<i64>,
        scrape_config: Option<&str>,
    ) -> Result<Subscription> {
        let interval = check_interval(new.interval_minutes.unwrap_or(DEFAULT_INTERVAL_MINUTES))?;
        let url = new.feed_url.trim();
        if url.is_empty() {
            return Err(StoreError::Invalid("the feed URL is empty".into()));
        }
        let title = clean_title(new.title.as_deref());
        let now = unix_now();
        let is_postgres = self.engine() == Engine::Postgres;
        let result: Result<i64> = async {
            Ok(in_tx!(self, |tx| {
                if let Some(limit) = max_subscriptions {
                    if is_postgres {
                        // Serializes this user's subscribes: the count below is then exact
                        // until this transaction ends.
                        sqlx::query("SELECT id FROM users WHERE id = $1 FOR NO KEY UPDATE")
                            .bind(user_id)
                            .execute(&mut *tx)
                            .await?;
                    }
                    let count: i64 =
                        sqlx::query_scalar("SELECT COUNT(*) FROM subscriptions WHERE user_id = $1")
                            .bind(user_id)
                            .fetch_one(&mut *tx)
                            .await?;
                    if count >= limit {
                        return Err(StoreError::LimitReached {
                            what: "subscriptions",
                            limit,
                        });
                    }
                }
                let group_id: Option<i64> =
                    match new.group_id {
                        Some(group_id) => {
                            sqlx::query_scalar(
                                "SELECT id FROM feed_groups WHERE id = $1 AND user_id = $2",
                            )
                            .bind(group_id)
                            .bind(user_id)
                            .fetch_optional(&mut *tx)
                            .await?
                        }
                        None => sqlx::query_scalar(
                            "SELECT id FROM feed_groups WHERE user_id = $1 AND is_default = TRUE",
                        )
                        .bind(user_id)
                        .fetch_optional(&mut *tx)
                        .await?,
                    };
                let group_id = group_id.ok_or(StoreError::NotFound("group"))?;
                let feed_id = match scrape_config {
                    None => ensure_feed!(tx, url, now),
                    Some(config) => crate::scraped::ensure_scraped_source!(tx, url, config, now),
                };
                sqlx::query_scalar::<_, i64>(
                    "INSERT INTO subscriptions
                        (user_id, feed_id, group_id, title, fetch_interval_minutes, created_at)
                     VALUES ($1, $2, $3, $4, $5, $6) RETURNING id",
                )
                .bind(user_id)
                .bind(feed_id)
                .bind(group_id)
                .bind(&title)
                .bind(interval)
                .bind(now)
                .fetch_one(&mut *tx)
                .await?
            }))
        }
        .await;
        match result {
            Ok(id) => {
                let subscription = self.subscription(user_id, id).await?;
                // A shared feed's backlog arrives for this user now: their rules act on it
                // as on any arriving item.
                self.run_rules_on_backlog(user_id, subscription.feed_id)
                    .await?;
                // And its copies of stories the user already sees elsewhere are shown once
                // (issue 35).
                self.link_backlog_duplicates(user_id, subscription.feed_id)
                    .await?;
                Ok(subscription)
            }
            Err(StoreError::Database(e)) if StoreError::is_unique_violation(&e) => {
                Err(StoreError::Conflict(format!("already subscribed to {url}")))
            }
            Err(e) => Err(e),
        }
    }

    /// One of the user's subscriptions.
    pub async fn subscription(&self, user_id: i64, id: i64) -> Result<Subscription> {
        let sql = format!("{SUBSCRIPTION_SELECT} WHERE s.user_id = $1 AND s.id = $2");
        let row = with_db!(self, read, |db| {
            sqlx::query(sqlx::AssertSqlSafe(sql))
                .bind(user_id)
                .bind(id)
                .fetch_optional(db)
                .await?
                .map(|row| decode_subscription(&row))
                .transpose()?
        });
        row.map(subscription_from_row)
            .ok_or(StoreError::NotFound("subscription"))
    }

    /// The user's subscriptions, by title.
    pub async fn list_subscriptions(&self, user_id: i64) -> Result<Vec<Subscription>> {
        let sql = format!(
            "{SUBSCRIPTION_SELECT} WHERE s.user_id = $1
             ORDER BY LOWER(COALESCE(s.title, f.title, f.url)), s.id"
        );
        let rows = with_db!(self, read, |db| {
            sqlx::query(sqlx::AssertSqlSafe(sql))
                .bind(user_id)
                .fetch_all(db)
                .await?
                .iter()
                .map(decode_subscription)
                .collect::<std::result::Result<Vec<_>, _>>()?
        });
        Ok(rows.into_iter().map(subscription_from_row).collect())
    }

    /// How many subscriptions the user has (for the per-user limit, F29).
    pub async fn count_subscriptions(&self, user_id: i64) -> Result<i64> {
        Ok(with_db!(self, read, |db| {
            sqlx::query_scalar::<_, i64>("SELECT COUNT(*) FROM subscriptions WHERE user_id = $1")
                .bind(user_id)
                .fetch_one(db)
                .await?
        }))
    }

    /// Changes a subscription's title, group, interval, full-text mode, summaries or pause.
    pub async fn update_subscription(
        &self,
        user_id: i64,
        id: i64,
        changes: &SubscriptionChanges,
    ) -> Result<Subscription> {
        let interval = changes.interval_minutes.map(check_interval).transpose()?;
        if let Some(choice) = &changes.duplicates
            && !crate::DUPLICATE_CHOICES.contains(&choice.as_str())
        {
            return Err(StoreError::Invalid(format!(
                "the field duplicates must be merge, prefer or never, not {choice:?}"
            )));
        }
        in_tx!(self, |tx| {
            let exists: Option<i64> =
                sqlx::query_scalar("SELECT id FROM subscriptions WHERE id = $1 AND user_id = $2")
                    .bind(id)
                    .bind(user_id)
                    .fetch_optional(&mut *tx)
                    .await?;
            exists.ok_or(StoreError::NotFound("subscription"))?;
            if let Some(group_id) = changes.group_id {
                let owned: Option<i64> =
                    sqlx::query_scalar("SELECT id FROM feed_groups WHERE id = $1 AND user_id = $2")
                        .bind(group_id)
                        .bind(user_id)
                        .fetch_optional(&mut *tx)
                        .await?;
                owned.ok_or(StoreError::NotFound("group"))?;
            }
            let (set_title, title) = match &changes.title {
                Some(title) => (true, clean_title(title.as_deref())),
                None => (false, None),
            };
            sqlx::query(
                "UPDATE subscriptions
                 SET title = CASE WHEN $1 THEN $2 ELSE title END,
                     group_id = COALESCE($3, group_id),
                     fetch_interval_minutes = COALESCE($4, fetch_interval_minutes),
                     full_text = COALESCE($6, full_text),
                     summarize = COALESCE($7, summarize),
                     suspended = COALESCE($8, suspended),
                     duplicates = COALESCE($9, duplicates)
                 WHERE id = $5",
            )
            .bind(set_title)
            .bind(title)
            .bind(changes.group_id)
            .bind(interval)
            .bind(id)
            .bind(changes.full_text.map(crate::FullTextMode::as_str))
            .bind(changes.summarize)
            .bind(changes.suspended)
            .bind(changes.duplicates.as_deref())
            .execute(&mut *tx)
            .await?;
        });
        // Copies merged before are listed again once the feed is never merged; a new choice
        // of merge or prefer acts on the copies that arrive from now on.
        if changes.duplicates.as_deref() == Some("never") {
            let feed_id = self.subscription(user_id, id).await?.feed_id;
            self.unlink_feed_duplicates(user_id, feed_id).await?;
        }
        self.subscription(user_id, id).await
    }

    /// Ends a subscription. The user's read and starred states of the feed's items go with
    /// it; the shared feed stays, marked orphaned when nobody follows it any more.
    pub async fn unsubscribe(&self, user_id: i64, id: i64) -> Result<()> {
        let now = unix_now();
        let clusters = self.clusters_ready().await;
        in_tx!(self, |tx| {
            let feed_id: Option<i64> = sqlx::query_scalar(
                "DELETE FROM subscriptions WHERE id = $1 AND user_id = $2 RETURNING feed_id",
            )
            .bind(id)
            .bind(user_id)
            .fetch_optional(&mut *tx)
            .await?;
            let feed_id = feed_id.ok_or(StoreError::NotFound("subscription"))?;
            // Copies shown through this feed's are listed again (issue 35).
            if clusters {
                sqlx::query(crate::duplicates::UNLINK_FEED_SQL)
                    .bind(user_id)
                    .bind(feed_id)
                    .execute(&mut *tx)
                    .await?;
            }
            sqlx::query(
                "DELETE FROM item_states WHERE user_id = $1
                   AND item_id IN (SELECT id FROM items WHERE feed_id = $2)",
            )
            .bind(user_id)
            .bind(feed_id)
            .execute(&mut *tx)
            .await?;
            sqlx::query(MARK_ORPHANS)
                .bind(now)
                .execute(&mut *tx)
                .await?;
        });
        Ok(())
    }

    /// Every shared feed with its subscriber count.
    pub async fn list_feeds(&self) -> Result<Vec<FeedSummary>> {
        let rows: Vec<(i64, String, Option<String>, String, i64)> = with_db!(self, read, |db| {
            sqlx::query_as(
                "SELECT f.id, f.url, f.title, st.status,
                        (SELECT COUNT(*) FROM subscriptions s WHERE s.feed_id = f.id)
                 FROM feeds f JOIN feed_fetch_state st ON st.feed_id = f.id
                 ORDER BY f.id",
            )
            .fetch_all(db)
            .await?
        });
        Ok(rows
            .into_iter()
            .map(|(id, url, title, status, subscribers)| FeedSummary {
                id,
                url,
                title,
                status: FetchStatus::parse(&status),
                subscribers,
            })
            .collect())
    }

    /// One page of the ids of feeds that have subscribers, stopped ones included: at most
    /// `limit` ids above `after`, ascending. Pass the last id of a page as the next `after`
    /// (0 for the first page), so that going over every feed holds one page at a time.
    pub async fn subscribed_feed_ids(&self, after: i64, limit: i64) -> Result<Vec<i64>> {
        let ids: Vec<i64> = with_db!(self, read, |db| {
            sqlx::query_scalar(
                "SELECT f.id FROM feeds f
                 WHERE f.id > $1
                   AND EXISTS (SELECT 1 FROM subscriptions s WHERE s.feed_id = f.id)
                 ORDER BY f.id
                 LIMIT $2",
            )
            .bind(after)
            .bind(limit.max(1))
            .fetch_all(db)
            .await?
        });
        Ok(ids)
    }

    /// Stores what a successful parse says about the feed itself.
    pub async fn update_feed_metadata(
        &self,
        feed_id: i64,
        title: Option<&str>,
        site_url: Option<&str>,
        description: Option<&str>,
        format: Option<&str>,
    ) -> Result<()> {
        let metadata = crate::FeedMetadata {
            title,
            site_url,
            description,
            format,
            language: None,
        };
        with_db!(self, write, |db| {
            update_feed_metadata_on!(db, feed_id, &metadata);
        });
        Ok(())
    }

    /// Claims up to `limit` feeds that are due at `now` for the worker `owner`, leasing them
    /// for `lease_seconds`. A feed is due when it is not stopped or suspended, has at least
    /// one subscription its user has not paused, its next check has come, any Retry-After has passed, and nobody holds a
    /// live lease on it. Concurrent claimers never get the same feed: PostgreSQL skips rows
    /// locked by another claimer, SQLite claims in one write transaction. An expired lease
    /// (a crashed worker) makes the feed claimable again.
    pub async fn claim_due_feeds(
        &self,
        owner: &str,
        now: i64,
        limit: i64,
        lease_seconds: i64,
    ) -> Result<Vec<DueFeed>> {
        let lease_until = now.saturating_add(lease_seconds.max(1));
        let claim = Lease {
            table: "feed_fetch_state",
            set: "lease_owner = $1, lease_until = $2",
            key: "feed_id",
            pick: &format!("SELECT st.feed_id {DUE_FEEDS} {DUE_ORDER}"),
            lock: "FOR UPDATE OF st SKIP LOCKED",
            returning: "feed_id",
        }
        .sql(self.engine());
        let claimed: Vec<i64> = with_db!(self, write, |db| {
            sqlx::query_scalar(sqlx::AssertSqlSafe(claim))
                .bind(owner)
                .bind(lease_until)
                .bind(now)
                .bind(limit)
                .fetch_all(db)
                .await?
        });
        self.leased_feeds(owner, &claimed).await
    }

    /// Claims one feed now whatever its schedule (manual refresh, F15), unless another worker
    /// holds a live lease on it. Returns `None` when it is leased or does not exist, and for
    /// a mail feed (`mailto:`, issue 36), which is never fetched.
    pub async fn claim_feed(
        &self,
        feed_id: i64,
        owner: &str,
        now: i64,
        lease_seconds: i64,
    ) -> Result<Option<DueFeed>> {
        let lease_until = now.saturating_add(lease_seconds.max(1));
        let claimed = with_db!(self, write, |db| {
            sqlx::query(
                "UPDATE feed_fetch_state SET lease_owner = $1, lease_until = $2
                 WHERE feed_id = $3 AND (lease_until IS NULL OR lease_until <= $4)
                   AND NOT EXISTS (SELECT 1 FROM feeds f
                                   WHERE f.id = $3 AND f.url LIKE 'mailto:%')",
            )
            .bind(owner)
            .bind(lease_until)
            .bind(feed_id)
            .bind(now)
            .execute(db)
            .await?
            .rows_affected()
        });
        if claimed == 0 {
            return Ok(None);
        }
        Ok(self.leased_feeds(owner, &[feed_id]).await?.pop())
    }

    async fn leased_feeds(&self, owner: &str, ids: &[i64]) -> Result<Vec<DueFeed>> {
        let mut feeds = Vec::with_capacity(ids.len());
        // Claims are small (the worker's batch size), so one lookup per feed stays cheap and
        // keeps the SQL identical on both engines. The claim is committed, so a reader sees
        // it (and SQLite's one writer is left to the writes). The kept body's digest and the
        // favicon's age come along: the fetch needs them and reads nothing else before it
        // stores.
        for &feed_id in ids {
            let row: Option<DueFeedRow> = with_db!(self, read, |db| {
                sqlx::query_as(
                    "SELECT f.id, f.url, st.etag, st.last_modified, st.consecutive_failures,
                            st.parse_failures,
                            COALESCE((SELECT MIN(s.fetch_interval_minutes) FROM subscriptions s
                                      WHERE s.feed_id = f.id AND s.suspended = FALSE), $3),
                            f.proxy_url, st.lease_until, f.scrape_config,
                            (SELECT w.active_until FROM websub_subscriptions w
                             WHERE w.feed_id = f.id AND w.state = 'active'),
                            (SELECT b.body_sha256 FROM feed_bodies b
                             WHERE b.feed_id = f.id AND b.parse_error IS NULL),
                            (SELECT v.fetched_at FROM favicons v WHERE v.feed_id = f.id)
                     FROM feeds f JOIN feed_fetch_state st ON st.feed_id = f.id
                     WHERE f.id = $1 AND st.lease_owner = $2",
                )
                .bind(feed_id)
                .bind(owner)
                .bind(DEFAULT_INTERVAL_MINUTES)
                .fetch_optional(db)
                .await?
            });
            if let Some(row) = row {
                feeds.push(due_feed_from_row(row));
            }
        }
        Ok(feeds)
    }

    /// Gives back feeds `owner` claimed but will not fetch (a worker stopping with feeds still
    /// queued), so another worker can take them at once instead of after the lease. Only
    /// leases `owner` still holds are released. Returns how many were.
    pub async fn release_feeds(&self, owner: &str, feed_ids: &[i64]) -> Result<u64> {
        if feed_ids.is_empty() {
            return Ok(0);
        }
        let released = in_tx!(self, |tx| {
            let mut released = 0;
            for feed_id in feed_ids {
                released += sqlx::query(
                    "UPDATE feed_fetch_state SET lease_owner = NULL, lease_until = NULL
                     WHERE feed_id = $1 AND lease_owner = $2",
                )
                .bind(feed_id)
                .bind(owner)
                .execute(&mut *tx)
                .await?
                .rows_affected();
            }
            released
        });
        Ok(released)
    }

    /// Stores a fetch's outcome and releases the lease. Returns `false`, storing nothing, when
    /// `owner` no longer holds the lease (it expired and another worker took the feed).
    pub async fn record_fetch(
        &self,
        feed_id: i64,
        owner: &str,
        record: &FetchRecord,
    ) -> Result<bool> {
        let updated = with_db!(self, write, |db| record_fetch_on!(
            db, feed_id, owner, record
        ));
        Ok(updated > 0)
    }

    /// Puts a stopped or failing feed back on schedule, due now (F15).
    pub async fn resume_feed(&self, feed_id: i64) -> Result<()> {
        let changed = with_db!(self, write, |db| {
            sqlx::query(
                "UPDATE feed_fetch_state SET status = 'active', status_reason = NULL,
                        consecutive_failures = 0, parse_failures = 0, next_check_at = $1,
                        retry_after_until = NULL
                 WHERE feed_id = $2",
            )
            .bind(unix_now())
            .bind(feed_id)
            .execute(db)
            .await?
            .rows_affected()
        });
        if changed == 0 {
            return Err(StoreError::NotFound("feed"));
        }
        Ok(())
    }

    /// Puts every stopped feed back on schedule, due now: those `user_id` follows, or, with
    /// `None`, every followed feed (an administrator's action, e.g. after a setting that
    /// refused them was fixed). Returns how many feeds were resumed.
    pub async fn resume_stopped_feeds(&self, user_id: Option<i64>) -> Result<u64> {
        let resumed = with_db!(self, write, |db| {
            sqlx::query(
                "UPDATE feed_fetch_state SET status = 'active', status_reason = NULL,
                        consecutive_failures = 0, parse_failures = 0, next_check_at = $1,
                        retry_after_until = NULL
                 WHERE status = 'stopped'
                   AND feed_id IN (SELECT feed_id FROM subscriptions
                                   WHERE $2 IS NULL OR user_id = $2)",
            )
            .bind(unix_now())
            .bind(user_id)
            .execute(db)
            .await?
            .rows_affected()
        });
        Ok(resumed)
    }
}

type DueFeedRow = (
    i64,
    String,
    Option<String>,
    Option<String>,
    i64,
    i64,
    i64,
    Option<String>,
    Option<i64>,
    Option<String>,
    Option<i64>,
    Option<String>,
    Option<i64>,
);

fn due_feed_from_row(row: DueFeedRow) -> DueFeed {
    let (
        feed_id,
        url,
        etag,
        last_modified,
        failures,
        parse_failures,
        interval,
        proxy,
        lease,
        scrape,
        push_until,
        body_sha256,
        favicon_fetched_at,
    ) = row;
    DueFeed {
        feed_id,
        url,
        etag,
        last_modified,
        consecutive_failures: failures,
        parse_failures,
        interval_minutes: interval,
        proxy_url: proxy,
        lease_until: lease.unwrap_or_default(),
        scrape_config: scrape,
        push_until,
        body_sha256,
        favicon_fetched_at,
    }
}

/// The feeds due at `$3` (now) and not leased: the claim's rows, and the queue depth of
/// `/metrics`. `$3` is the only parameter, so a query with no other renumbers it. A mail feed
/// (`mailto:`, issue 36) is never due: its items arrive by mail, there is nothing to fetch.
pub(crate) const DUE_FEEDS: &str = "FROM feed_fetch_state st
    JOIN feeds f ON f.id = st.feed_id
    WHERE st.status <> 'stopped' AND f.suspended = FALSE
      AND st.next_check_at <= $3
      AND f.url NOT LIKE 'mailto:%'
      AND (st.retry_after_until IS NULL OR st.retry_after_until <= $3)
      AND (st.lease_until IS NULL OR st.lease_until <= $3)
      AND EXISTS (SELECT 1 FROM subscriptions s
                  WHERE s.feed_id = st.feed_id AND s.suspended = FALSE)";

/// Oldest due first, at most `$4`.
const DUE_ORDER: &str = "ORDER BY st.next_check_at, st.feed_id LIMIT $4";

fn clean_title(title: Option<&str>) -> Option<String> {
    title
        .map(|t| {
            crate::text::strip_control_chars(t)
                .split_whitespace()
                .collect::<Vec<_>>()
                .join(" ")
        })
        .filter(|t| !t.is_empty())
}
