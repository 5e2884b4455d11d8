//! What the fetch worker needs beyond claiming and recording (F3, F8, F11, F17, F37): raw
//! bodies, favicons, a feed's fetch state, moving a feed to a new URL (merging with an existing
//! feed of that URL), deleting orphaned feeds, leases of periodic jobs and the OPML import history.

use crate::{Engine, Result, Store, StoreError, in_tx, with_db};

/// The latest raw body of a feed, as the worker keeps it (F8), with what reading it again
/// the way its fetch did needs.
#[derive(Debug, Clone, PartialEq, Eq, Default)]
pub struct FeedBody {
    /// When it was fetched (Unix seconds); a later fetch of the identical body moves it on.
    pub fetched_at: i64,
    /// The response's media type.
    pub content_type: Option<String>,
    /// The `charset` parameter the server sent with it, which the parser weighs against the
    /// document's own declaration.
    pub charset: Option<String>,
    /// The URL that answered, after redirects: the base of the body's relative links.
    /// `None` for bodies kept before it was recorded (the feed's URL serves then).
    pub source_url: Option<String>,
    /// The response's `ETag`.
    pub etag: Option<String>,
    /// The response's `Last-Modified`.
    pub last_modified: Option<String>,
    /// Hex SHA-256 of the uncompressed body: an identical body that parsed skips parsing.
    pub sha256: String,
    /// How `body` is compressed (the worker names its codec, e.g. "zlib").
    pub compression: String,
    /// The uncompressed size in bytes (`None` for bodies kept before it was recorded).
    pub raw_size: Option<i64>,
    /// Why the body did not parse, or `None` when it did.
    pub parse_error: Option<String>,
    /// The compressed bytes.
    pub body: Vec<u8>,
}

/// Stores `$body` (a [`FeedBody`]) as feed `$feed_id`'s kept raw body on `$db`, a connection or
/// a transaction, replacing the previous one.
macro_rules! save_feed_body_on {
    ($db:expr, $feed_id:expr, $body:expr) => {{
        let body: &$crate::FeedBody = $body;
        let parse_error = body
            .parse_error
            .as_deref()
            .map($crate::text::strip_control_chars);
        sqlx::query(
            "INSERT INTO feed_bodies (feed_id, fetched_at, content_type, charset, source_url,
                                      etag, last_modified, body_sha256, compression,
                                      raw_size, parse_error, body)
             VALUES ($1, $2, $3, $4, $5, $6, $7, $8, $9, $10, $11, $12)
             ON CONFLICT (feed_id) DO UPDATE SET fetched_at = excluded.fetched_at,
                content_type = excluded.content_type, charset = excluded.charset,
                source_url = excluded.source_url, etag = excluded.etag,
                last_modified = excluded.last_modified,
                body_sha256 = excluded.body_sha256, compression = excluded.compression,
                raw_size = excluded.raw_size, parse_error = excluded.parse_error,
                body = excluded.body",
        )
        .bind($feed_id)
        .bind(body.fetched_at)
        .bind(&body.content_type)
        .bind(&body.charset)
        .bind(&body.source_url)
        .bind(&body.etag)
        .bind(&body.last_modified)
        .bind(&body.sha256)
        .bind(&body.compression)
        .bind(body.raw_size)
        .bind(parse_error.as_deref())
        .bind(&body.body)
        .execute($db)
        .await?;
    }};
}
pub(crate) use save_feed_body_on;

/// Drops feed `$feed_id`'s kept raw body on `$db`, a connection or a transaction.
macro_rules! delete_feed_body_on {
    ($db:expr, $feed_id:expr) => {{
        sqlx::query("DELETE FROM feed_bodies WHERE feed_id = $1")
            .bind($feed_id)
            .execute($db)
            .await?;
    }};
}
pub(crate) use delete_feed_body_on;

/// Records the icon URL `$icon_url` (`None` clears it) of feed `$feed_id` on `$db`, a
/// connection or a transaction.
macro_rules! set_feed_icon_url_on {
    ($db:expr, $feed_id:expr, $icon_url:expr) => {{
        let icon_url: Option<&str> = $icon_url;
        let icon_url = icon_url.map($crate::text::strip_control_chars);
        sqlx::query("UPDATE feeds SET icon_url = $1 WHERE id = $2")
            .bind(icon_url.as_deref())
            .bind($feed_id)
            .execute($db)
            .await?;
    }};
}
pub(crate) use set_feed_icon_url_on;

/// Stores `$favicon` (a [`Favicon`]) as feed `$feed_id`'s on `$db`, a connection or a
/// transaction.
macro_rules! save_favicon_on {
    ($db:expr, $feed_id:expr, $favicon:expr) => {{
        let favicon: &$crate::Favicon = $favicon;
        sqlx::query(
            "INSERT INTO favicons (feed_id, mime_type, data, source_url, fetched_at)
             VALUES ($1, $2, $3, $4, $5)
             ON CONFLICT (feed_id) DO UPDATE SET mime_type = excluded.mime_type,
                data = excluded.data, source_url = excluded.source_url,
                fetched_at = excluded.fetched_at",
        )
        .bind($feed_id)
        .bind(&favicon.mime_type)
        .bind(&favicon.data)
        .bind(&favicon.source_url)
        .bind(favicon.fetched_at)
        .execute($db)
        .await?;
    }};
}
pub(crate) use save_favicon_on;

/// How much the kept raw feed bodies hold, for `tidings reparse` and the benchmark figures.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default, serde::Serialize)]
pub struct FeedBodyTotals {
    /// Feeds in the database.
    pub feeds: i64,
    /// Feeds with a kept body.
    pub bodies: i64,
    /// Kept bodies whose last parse failed.
    pub unparsed: i64,
    /// Their compressed bytes.
    pub compressed_bytes: i64,
    /// Their uncompressed bytes (bodies kept before sizes were recorded count 0).
    pub raw_bytes: i64,
}

/// A feed's favicon (F3). `data` is `None` when the last attempt found none.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Favicon {
    /// The image's MIME type (`image/…`).
    pub mime_type: Option<String>,
    /// The image bytes.
    pub data: Option<Vec<u8>>,
    /// Where the image came from.
    pub source_url: Option<String>,
    /// When it was last fetched or attempted (Unix seconds).
    pub fetched_at: i64,
}

/// A favicon's columns as read: `mime_type, data, source_url, fetched_at`.
type FaviconRow = (Option<String>, Option<Vec<u8>>, Option<String>, i64);

fn favicon_from_row((mime_type, data, source_url, fetched_at): FaviconRow) -> Favicon {
    Favicon {
        mime_type,
        data,
        source_url,
        fetched_at,
    }
}

/// What [`Store::claim_site_favicon`] found.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum SiteFaviconClaim {
    /// The caller has the claim: it looks the site up and stores the result
    /// ([`Store::save_site_favicon`]).
    Claimed,
    /// A lookup ended recently enough: its result, to reuse without a request.
    Fresh(Favicon),
    /// Another claim is running: its result will be stored when it ends.
    Busy,
}

/// A feed's URL and fetch state, for the command line, the API and tests.
#[derive(Debug, Clone, PartialEq, Eq, serde::Serialize)]
pub struct FeedFetchState {
    /// The feed's id.
    pub feed_id: i64,
    /// Its URL.
    pub url: String,
    /// Its title, once parsed.
    pub title: Option<String>,
    /// "active", "backoff" or "stopped".
    pub status: crate::FetchStatus,
    /// Why it is in backoff or stopped.
    pub status_reason: Option<String>,
    /// The stored `ETag`.
    pub etag: Option<String>,
    /// The stored `Last-Modified`.
    pub last_modified: Option<String>,
    /// When it is next due.
    pub next_check_at: i64,
    /// When it was last fetched.
    pub last_checked_at: Option<i64>,
    /// When it was last fetched successfully.
    pub last_success_at: Option<i64>,
    /// The last error.
    pub last_error: Option<String>,
    /// The last HTTP status.
    pub last_http_status: Option<i64>,
    /// Failures in a row.
    pub consecutive_failures: i64,
    /// Parse failures in a row.
    pub parse_failures: i64,
    /// Whether a worker holds a lease on it now (at the time of the query).
    pub lease_until: Option<i64>,
    /// How many users follow it.
    pub subscribers: i64,
}

/// What [`Store::move_feed`] did.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum FeedMove {
    /// The feed already had that URL.
    Unchanged,
    /// The feed's URL was changed; no other feed had the new one.
    Renamed,
    /// Another feed had the new URL: this feed was merged into it and deleted.
    Merged {
        /// The feed that remains.
        into: i64,
        /// Subscriptions moved over (users who already followed the other feed keep theirs).
        subscriptions_moved: u64,
        /// Items moved over (items the other feed already had are not duplicated; their read
        /// and starred states are carried over).
        items_moved: u64,
    },
}

/// One run of a periodic job, as recorded in `job_runs`.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct JobRun {
    /// The job's name.
    pub name: String,
    /// The worker that started it last.
    pub owner: String,
    /// When that run started.
    pub started_at: i64,
    /// When it finished, if it did.
    pub finished_at: Option<i64>,
    /// What it reported.
    pub outcome: Option<String>,
}

/// One OPML import, for the history (F37).
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct OpmlImportRecord {
    /// The record's id (ignored when recording).
    pub id: i64,
    /// When the import ran.
    pub created_at: i64,
    /// The uploaded file's name, if known.
    pub file_name: Option<String>,
    /// Feed outlines in the file.
    pub outlines: i64,
    /// Subscriptions added.
    pub added: i64,
    /// Outlines skipped (already subscribed, duplicates).
    pub skipped: i64,
    /// Outlines refused or failed.
    pub failed: i64,
    /// The per-URL report as JSON.
    pub report: String,
}

/// One row of [`Store::feed_fetch_state`]'s query: sixteen columns, the most a tuple decodes.
type FetchStateRow = (
    i64,
    String,
    Option<String>,
    String,
    Option<String>,
    Option<String>,
    Option<String>,
    i64,
    Option<i64>,
    Option<i64>,
    Option<String>,
    Option<i64>,
    i64,
    i64,
    Option<i64>,
    i64,
);

fn fetch_state_from_row(row: FetchStateRow) -> FeedFetchState {
    let (feed_id, url, title, status, status_reason, etag, last_modified, next_check_at) =
        (row.0, row.1, row.2, row.3, row.4, row.5, row.6, row.7);
    let (last_checked_at, last_success_at, last_error, last_http_status) =
        (row.8, row.9, row.10, row.11);
    let (consecutive_failures, parse_failures, lease_until, subscribers) =
        (row.12, row.13, row.14, row.15);
    FeedFetchState {
        feed_id,
        url,
        title,
        status: match status.as_str() {
            "backoff" => crate::FetchStatus::Backoff,
            "stopped" => crate::FetchStatus::Stopped,
            _ => crate::FetchStatus::Active,
        },
        status_reason,
        etag,
        last_modified,
        next_check_at,
        last_checked_at,
        last_success_at,
        last_error,
        last_http_status,
        consecutive_failures,
        parse_failures,
        lease_until,
        subscribers,
    }
}

/// The steps of merging feed `$2` into feed `$1`, in order, before `$2` is deleted. For users
/// who follow both: their remaining subscription (to `$1`, with its group and settings) takes
/// the other's title when it has none of its own, and the items read under the other's
/// watermark get explicit read rows, so that nothing read turns unread. Then: move the
/// subscriptions of users who do not follow `$1` yet; carry read/starred states of items both
/// feeds have to `$1`'s copy; point bookmarks of such items at `$1`'s copy (unless the user
/// bookmarked that copy too); move the items `$1` lacks; move the raw body and favicon when
/// `$1` has none; carry tombstones of items `$1` lacks, so deleted items stay deleted.
pub(crate) const MERGE_STEPS: [&str; 9] = [
    "UPDATE subscriptions SET title =
        (SELECT s.title FROM subscriptions s
         WHERE s.feed_id = $2 AND s.user_id = subscriptions.user_id)
     WHERE feed_id = $1 AND title IS NULL
       AND user_id IN (SELECT user_id FROM subscriptions WHERE feed_id = $2)",
    "INSERT INTO item_states (user_id, item_id, is_read, is_starred, updated_at)
     SELECT s.user_id, i.id, TRUE, FALSE, i.fetched_at
     FROM subscriptions s
     JOIN subscriptions t ON t.user_id = s.user_id AND t.feed_id = $1
     JOIN items i ON i.feed_id = $2 AND i.published_at <= s.read_before
     WHERE s.feed_id = $2 AND s.read_before IS NOT NULL
       AND (t.read_before IS NULL OR i.published_at > t.read_before)
     ON CONFLICT (user_id, item_id) DO NOTHING",
    "UPDATE subscriptions SET feed_id = $1
     WHERE feed_id = $2
       AND user_id NOT IN (SELECT user_id FROM subscriptions WHERE feed_id = $1)",
    "INSERT INTO item_states (user_id, item_id, is_read, is_starred, updated_at)
     SELECT st.user_id, t.id, st.is_read, st.is_starred, st.updated_at
     FROM item_states st
     JOIN items s ON s.id = st.item_id
     JOIN items t ON t.feed_id = $1 AND t.identity_key = s.identity_key
     WHERE s.feed_id = $2
     ON CONFLICT (user_id, item_id) DO UPDATE SET
        is_read = CASE WHEN excluded.is_read THEN TRUE ELSE item_states.is_read END,
        is_starred = CASE WHEN excluded.is_starred THEN TRUE ELSE item_states.is_starred END",
    "UPDATE bookmarks SET item_id =
        (SELECT t.id FROM items s
         JOIN items t ON t.feed_id = $1 AND t.identity_key = s.identity_key
         WHERE s.id = bookmarks.item_id)
     WHERE item_id IN (SELECT s.id FROM items s
                       JOIN items t ON t.feed_id = $1 AND t.identity_key = s.identity_key
                       WHERE s.feed_id = $2)
       AND NOT EXISTS (
         SELECT 1 FROM bookmarks b2
         JOIN items t2 ON t2.id = b2.item_id AND t2.feed_id = $1
         JOIN items s2 ON s2.id = bookmarks.item_id AND s2.identity_key = t2.identity_key
         WHERE b2.user_id = bookmarks.user_id)",
    "UPDATE items SET feed_id = $1
     WHERE feed_id = $2
       AND identity_key NOT IN (SELECT identity_key FROM items WHERE feed_id = $1)",
    "UPDATE feed_bodies SET feed_id = $1 WHERE feed_id = $2
       AND NOT EXISTS (SELECT 1 FROM feed_bodies WHERE feed_id = $1)",
    "UPDATE favicons SET feed_id = $1 WHERE feed_id = $2
       AND NOT EXISTS (SELECT 1 FROM favicons WHERE feed_id = $1)",
    "INSERT INTO item_tombstones (feed_id, identity_key, deleted_at, last_seen_at)
     SELECT $1, identity_key, deleted_at, last_seen_at FROM item_tombstones
     WHERE feed_id = $2
       AND identity_key NOT IN (SELECT identity_key FROM items WHERE feed_id = $1)
     ON CONFLICT (feed_id, identity_key) DO NOTHING",
];

/// The step of [`MERGE_STEPS`] that moves subscriptions, and the one that moves items: their
/// row counts are what a merge reports.
pub(crate) const MERGE_SUBSCRIPTIONS_STEP: usize = 2;
/// See [`MERGE_SUBSCRIPTIONS_STEP`].
pub(crate) const MERGE_ITEMS_STEP: usize = 5;

/// Merges feed `$source` into feed `$into` inside the transaction `$tx` (see [`MERGE_STEPS`]),
/// deletes `$source` and marks what nobody follows any more as orphaned. Evaluates to the
/// subscriptions and items moved.
macro_rules! merge_feed {
    ($tx:expr, $source:expr, $into:expr, $now:expr) => {{
        let (source, into, now): (i64, i64, i64) = ($source, $into, $now);
        let mut affected = [0u64; $crate::fetching::MERGE_STEPS.len()];
        for (step, sql) in $crate::fetching::MERGE_STEPS.into_iter().enumerate() {
            affected[step] = sqlx::query(sql)
                .bind(into)
                .bind(source)
                .execute(&mut *$tx)
                .await?
                .rows_affected();
        }
        // Cascades: the remaining subscriptions (users who had both), duplicate items with
        // their states, the fetch state.
        sqlx::query("DELETE FROM feeds WHERE id = $1")
            .bind(source)
            .execute(&mut *$tx)
            .await?;
        sqlx::query(
            "UPDATE feeds SET orphaned_at = NULL, updated_at = $2
             WHERE id = $1
               AND EXISTS (SELECT 1 FROM subscriptions s WHERE s.feed_id = $1)",
        )
        .bind(into)
        .bind(now)
        .execute(&mut *$tx)
        .await?;
        sqlx::query($crate::feeds::MARK_ORPHANS)
            .bind(now)
            .execute(&mut *$tx)
            .await?;
        (
            affected[$crate::fetching::MERGE_SUBSCRIPTIONS_STEP],
            affected[$crate::fetching::MERGE_ITEMS_STEP],
        )
    }};
}

pub(crate) use merge_feed;

/// Normalizes every feed's URL (F10, migration 10) inside the transaction `$tx`: feeds whose
/// URLs are spellings of one address are merged into one (see [`merge_feed!`]), the one that
/// already has the normalized URL, else the oldest. Evaluates to `(renamed, merged)`.
macro_rules! normalize_feed_urls {
    ($tx:expr, $now:expr) => {{
        let now: i64 = $now;
        let feeds: Vec<(i64, String)> = sqlx::query_as("SELECT id, url FROM feeds ORDER BY id")
            .fetch_all(&mut *$tx)
            .await?;
        let mut by_url: std::collections::BTreeMap<String, Vec<(i64, String)>> =
            std::collections::BTreeMap::new();
        for (id, url) in feeds {
            by_url
                .entry(tidings_feed::normalize_feed_url_text(&url))
                .or_default()
                .push((id, url));
        }
        let (mut renamed, mut merged) = (0u64, 0u64);
        for (normalized, spellings) in by_url {
            if spellings.len() == 1 && spellings[0].1 == normalized {
                continue;
            }
            let survivor = spellings
                .iter()
                .find(|(_, url)| *url == normalized)
                .unwrap_or(&spellings[0])
                .0;
            for &(id, _) in spellings.iter().filter(|(id, _)| *id != survivor) {
                $crate::fetching::merge_feed!($tx, id, survivor, now);
                merged += 1;
            }
            if !spellings.iter().any(|(_, url)| *url == normalized) {
                sqlx::query("UPDATE feeds SET url = $1, updated_at = $2 WHERE id = $3")
                    .bind(&normalized)
                    .bind(now)
                    .bind(survivor)
                    .execute(&mut *$tx)
                    .await?;
                renamed += 1;
            }
        }
        (renamed, merged)
    }};
}

pub(crate) use normalize_feed_urls;

impl Store {
    /// The hex SHA-256 of the feed's stored raw body, if one is stored and it parsed: an
    /// identical body at the next fetch needs no parsing. A kept body that did not parse
    /// answers `None`, so that an identical copy is parsed (and counted as failing) again.
    pub async fn feed_body_sha256(&self, feed_id: i64) -> Result<Option<String>> {
        Ok(with_db!(self, read, |db| {
            sqlx::query_scalar::<_, String>(
                "SELECT body_sha256 FROM feed_bodies WHERE feed_id = $1 AND parse_error IS NULL",
            )
            .bind(feed_id)
            .fetch_optional(db)
            .await?
        }))
    }

    /// Stores the feed's latest raw body, replacing the previous one (F8): one per feed.
    pub async fn save_feed_body(&self, feed_id: i64, body: &FeedBody) -> Result<()> {
        with_db!(self, write, |db| {
            save_feed_body_on!(db, feed_id, body);
        });
        Ok(())
    }

    /// Drops the feed's stored raw body, if any (a body too large to keep replaces it).
    pub async fn delete_feed_body(&self, feed_id: i64) -> Result<()> {
        with_db!(self, write, |db| {
            delete_feed_body_on!(db, feed_id);
        });
        Ok(())
    }

    /// Records that the feed's stored body, the one with digest `sha256`, was fetched again
    /// unchanged at `fetched_at` with these validators: the bytes stay, only the fetch time
    /// and validators move. Returns `false` when the stored body is another one (or none).
    pub async fn touch_feed_body(
        &self,
        feed_id: i64,
        sha256: &str,
        fetched_at: i64,
        etag: Option<&str>,
        last_modified: Option<&str>,
    ) -> Result<bool> {
        Ok(with_db!(self, write, |db| {
            sqlx::query(
                "UPDATE feed_bodies SET fetched_at = $3, etag = $4, last_modified = $5
                 WHERE feed_id = $1 AND body_sha256 = $2",
            )
            .bind(feed_id)
            .bind(sha256)
            .bind(fetched_at)
            .bind(etag)
            .bind(last_modified)
            .execute(db)
            .await?
            .rows_affected()
                > 0
        }))
    }

    /// Records how parsing the feed's stored body (digest `sha256`) ended when it was read
    /// again (`tidings reparse`): `None` when it parsed. A body replaced meanwhile is left
    /// alone. Returns whether the row was the one read.
    pub async fn set_feed_body_parse_error(
        &self,
        feed_id: i64,
        sha256: &str,
        parse_error: Option<&str>,
    ) -> Result<bool> {
        let parse_error = parse_error.map(crate::text::strip_control_chars);
        Ok(with_db!(self, write, |db| {
            sqlx::query(
                "UPDATE feed_bodies SET parse_error = $3 WHERE feed_id = $1 AND body_sha256 = $2",
            )
            .bind(feed_id)
            .bind(sha256)
            .bind(parse_error.as_deref())
            .execute(db)
            .await?
            .rows_affected()
                > 0
        }))
    }

    /// The other addresses of the user's subscribed feeds, as `(feed_id, url)`: those a
    /// permanent redirect moved them from, and the one that last answered after temporary
    /// redirects (kept with the raw body). A history import finds by them a feed that the
    /// other reader still names by its old address, or by where it ended up.
    pub async fn subscription_other_urls(&self, user_id: i64) -> Result<Vec<(i64, String)>> {
        Ok(with_db!(self, read, |db| {
            sqlx::query_as(
                "SELECT s.feed_id, b.source_url
                 FROM subscriptions s
                 JOIN feeds f ON f.id = s.feed_id
                 JOIN feed_bodies b ON b.feed_id = s.feed_id
                 WHERE s.user_id = $1 AND b.source_url IS NOT NULL AND b.source_url <> f.url
                 UNION
                 SELECT s.feed_id, m.url
                 FROM subscriptions s JOIN feed_former_urls m ON m.feed_id = s.feed_id
                 WHERE s.user_id = $1
                 ORDER BY 1, 2",
            )
            .bind(user_id)
            .fetch_all(db)
            .await?
        }))
    }

    /// The feed's stored raw body, if any.
    pub async fn feed_body(&self, feed_id: i64) -> Result<Option<FeedBody>> {
        type Row = (
            i64,
            Option<String>,
            Option<String>,
            Option<String>,
            Option<String>,
            Option<String>,
            String,
            String,
            Option<i64>,
            Option<String>,
            Vec<u8>,
        );
        let row: Option<Row> = with_db!(self, read, |db| {
            sqlx::query_as(
                "SELECT fetched_at, content_type, charset, source_url, etag, last_modified,
                        body_sha256, compression, raw_size, parse_error, body
                 FROM feed_bodies WHERE feed_id = $1",
            )
            .bind(feed_id)
            .fetch_optional(db)
            .await?
        });
        Ok(row.map(|row| {
            let (fetched_at, content_type, charset, source_url, etag, last_modified) =
                (row.0, row.1, row.2, row.3, row.4, row.5);
            let (sha256, compression, raw_size, parse_error, body) =
                (row.6, row.7, row.8, row.9, row.10);
            FeedBody {
                fetched_at,
                content_type,
                charset,
                source_url,
                etag,
                last_modified,
                sha256,
                compression,
                raw_size,
                parse_error,
                body,
            }
        }))
    }

    /// Ids of feeds with a stored raw body above `after`, in order, at most `limit`: the pages
    /// of `tidings reparse --all`.
    pub async fn feeds_with_bodies(&self, after: i64, limit: i64) -> Result<Vec<i64>> {
        Ok(with_db!(self, read, |db| {
            sqlx::query_scalar::<_, i64>(
                "SELECT feed_id FROM feed_bodies WHERE feed_id > $1 ORDER BY feed_id LIMIT $2",
            )
            .bind(after)
            .bind(limit.max(1))
            .fetch_all(db)
            .await?
        }))
    }

    /// How many feeds have a kept body and how many bytes the bodies take.
    pub async fn feed_body_totals(&self) -> Result<FeedBodyTotals> {
        let (feeds, bodies, unparsed, compressed_bytes, raw_bytes): (i64, i64, i64, i64, i64) =
            with_db!(self, read, |db| {
                sqlx::query_as(
                    "SELECT (SELECT COUNT(*) FROM feeds),
                            COUNT(*),
                            COUNT(parse_error),
                            CAST(COALESCE(SUM(LENGTH(body)), 0) AS BIGINT),
                            CAST(COALESCE(SUM(raw_size), 0) AS BIGINT)
                     FROM feed_bodies",
                )
                .fetch_one(db)
                .await?
            });
        Ok(FeedBodyTotals {
            feeds,
            bodies,
            unparsed,
            compressed_bytes,
            raw_bytes,
        })
    }

    /// When the feed's favicon was last fetched or attempted, `None` when never.
    pub async fn favicon_fetched_at(&self, feed_id: i64) -> Result<Option<i64>> {
        Ok(with_db!(self, read, |db| {
            sqlx::query_scalar::<_, i64>("SELECT fetched_at FROM favicons WHERE feed_id = $1")
                .bind(feed_id)
                .fetch_optional(db)
                .await?
        }))
    }

    /// Stores the feed's favicon, or the fact that none was found (`data: None`).
    pub async fn save_favicon(&self, feed_id: i64, favicon: &Favicon) -> Result<()> {
        with_db!(self, write, |db| {
            save_favicon_on!(db, feed_id, favicon);
        });
        Ok(())
    }

    /// The feed's favicon record, if one was ever attempted.
    pub async fn favicon(&self, feed_id: i64) -> Result<Option<Favicon>> {
        let row: Option<FaviconRow> = with_db!(self, read, |db| {
            sqlx::query_as(
                "SELECT mime_type, data, source_url, fetched_at FROM favicons WHERE feed_id = $1",
            )
            .bind(feed_id)
            .fetch_optional(db)
            .await?
        });
        Ok(row.map(favicon_from_row))
    }

    /// Claims the lookup of a site's favicon (`site_key`, shared by every feed of the site and
    /// every process) for `claim_seconds` from `now`, unless its last lookup ended at or after
    /// `fresh_since` (then that result is returned, to reuse without a request) or another
    /// claim has not expired yet (then someone else is looking it up).
    pub async fn claim_site_favicon(
        &self,
        site_key: &str,
        now: i64,
        fresh_since: i64,
        claim_seconds: i64,
    ) -> Result<SiteFaviconClaim> {
        let site_key = crate::text::strip_control_chars(site_key);
        let claimed_until = now.saturating_add(claim_seconds);
        let claimed: Option<i64> = with_db!(self, write, |db| {
            sqlx::query_scalar(
                "INSERT INTO site_favicons (site_key, fetched_at, claimed_until)
                 VALUES ($1, 0, $2)
                 ON CONFLICT (site_key) DO UPDATE SET claimed_until = excluded.claimed_until
                 WHERE site_favicons.claimed_until <= $3 AND site_favicons.fetched_at < $4
                 RETURNING claimed_until",
            )
            .bind(&*site_key)
            .bind(claimed_until)
            .bind(now)
            .bind(fresh_since)
            .fetch_optional(db)
            .await?
        });
        if claimed.is_some() {
            return Ok(SiteFaviconClaim::Claimed);
        }
        Ok(match self.site_favicon(&site_key).await? {
            Some(favicon) if favicon.fetched_at >= fresh_since => SiteFaviconClaim::Fresh(favicon),
            _ => SiteFaviconClaim::Busy,
        })
    }

    /// The last lookup's result for a site (see [`Store::claim_site_favicon`]), `None` when
    /// no lookup of it has ended yet.
    pub async fn site_favicon(&self, site_key: &str) -> Result<Option<Favicon>> {
        let site_key = crate::text::strip_control_chars(site_key);
        let row: Option<FaviconRow> = with_db!(self, read, |db| {
            sqlx::query_as(
                "SELECT mime_type, data, source_url, fetched_at FROM site_favicons
                     WHERE site_key = $1 AND fetched_at > 0",
            )
            .bind(&*site_key)
            .fetch_optional(db)
            .await?
        });
        Ok(row.map(favicon_from_row))
    }

    /// Stores a site's lookup result (an icon, or none found: `data: None`) and ends its
    /// claim, so that every feed of the site reuses it while it is fresh.
    pub async fn save_site_favicon(&self, site_key: &str, favicon: &Favicon) -> Result<()> {
        let site_key = crate::text::strip_control_chars(site_key);
        with_db!(self, write, |db| {
            sqlx::query(
                "INSERT INTO site_favicons
                    (site_key, mime_type, data, source_url, fetched_at, claimed_until)
                 VALUES ($1, $2, $3, $4, $5, 0)
                 ON CONFLICT (site_key) DO UPDATE SET mime_type = excluded.mime_type,
                    data = excluded.data, source_url = excluded.source_url,
                    fetched_at = excluded.fetched_at, claimed_until = 0",
            )
            .bind(&*site_key)
            .bind(&favicon.mime_type)
            .bind(&favicon.data)
            .bind(&favicon.source_url)
            .bind(favicon.fetched_at)
            .execute(db)
            .await?;
        });
        Ok(())
    }

    /// Deletes the site favicons (see [`Store::claim_site_favicon`]) last looked up before
    /// `fetched_before` and not claimed at `now`: sites no feed has asked about for a long
    /// time. Returns how many were deleted.
    pub async fn delete_stale_site_favicons(&self, fetched_before: i64, now: i64) -> Result<u64> {
        Ok(with_db!(self, write, |db| {
            sqlx::query("DELETE FROM site_favicons WHERE fetched_at < $1 AND claimed_until < $2")
                .bind(fetched_before)
                .bind(now)
                .execute(db)
                .await?
                .rows_affected()
        }))
    }

    /// Records the icon or logo URL the feed names (`None` clears it).
    pub async fn set_feed_icon_url(&self, feed_id: i64, icon_url: Option<&str>) -> Result<()> {
        with_db!(self, write, |db| {
            set_feed_icon_url_on!(db, feed_id, icon_url);
        });
        Ok(())
    }

    /// The id of the feed with this URL, in any of its spellings (F10).
    pub async fn feed_id_by_url(&self, url: &str) -> Result<Option<i64>> {
        let url = tidings_feed::normalize_feed_url_text(url);
        Ok(with_db!(self, read, |db| {
            sqlx::query_scalar::<_, i64>("SELECT id FROM feeds WHERE url = $1")
                .bind(&url)
                .fetch_optional(db)
                .await?
        }))
    }

    /// A feed's URL and fetch state.
    pub async fn feed_fetch_state(&self, feed_id: i64) -> Result<FeedFetchState> {
        let row = with_db!(self, read, |db| {
            sqlx::query_as::<_, FetchStateRow>(
                "SELECT f.id, f.url, f.title, st.status, st.status_reason, st.etag,
                        st.last_modified, st.next_check_at, st.last_checked_at,
                        st.last_success_at, st.last_error, st.last_http_status,
                        st.consecutive_failures, st.parse_failures, st.lease_until,
                        (SELECT COUNT(*) FROM subscriptions s WHERE s.feed_id = f.id)
                 FROM feeds f JOIN feed_fetch_state st ON st.feed_id = f.id
                 WHERE f.id = $1",
            )
            .bind(feed_id)
            .fetch_optional(db)
            .await?
        });
        row.map(fetch_state_from_row)
            .ok_or(StoreError::NotFound("feed"))
    }

    /// Gives the feed a new URL after a permanent redirect (F14). When another feed already
    /// has that URL, this feed is merged into it and deleted: its subscriptions move over
    /// (a user following both keeps the other one, with its group and title), its items move
    /// over unless the other feed has the same item (same identity), in which case read and
    /// starred states are carried to that item, and bookmarks follow their items.
    pub async fn move_feed(&self, feed_id: i64, new_url: &str, now: i64) -> Result<FeedMove> {
        let new_url = tidings_feed::normalize_feed_url_text(new_url);
        let new_url = new_url.as_str();
        if new_url.is_empty() {
            return Err(StoreError::Invalid("the new feed URL is empty".into()));
        }
        // A concurrent rename to the same URL can make the first attempt's UPDATE hit the
        // unique constraint; the second attempt then sees that feed and merges.
        let mut attempt = 0;
        loop {
            attempt += 1;
            match self.move_feed_once(feed_id, new_url, now).await {
                Err(StoreError::Database(e))
                    if attempt < 2 && StoreError::is_unique_violation(&e) =>
                {
                    continue;
                }
                other => return other,
            }
        }
    }

    async fn move_feed_once(&self, feed_id: i64, new_url: &str, now: i64) -> Result<FeedMove> {
        Ok(in_tx!(self, |tx| {
            let current: Option<String> = sqlx::query_scalar("SELECT url FROM feeds WHERE id = $1")
                .bind(feed_id)
                .fetch_optional(&mut *tx)
                .await?;
            let current = current.ok_or(StoreError::NotFound("feed"))?;
            let target: Option<i64> =
                sqlx::query_scalar("SELECT id FROM feeds WHERE url = $1 AND id <> $2")
                    .bind(new_url)
                    .bind(feed_id)
                    .fetch_optional(&mut *tx)
                    .await?;
            if current == new_url {
                return Ok(FeedMove::Unchanged);
            }
            // The old address stays known (and a merged feed's former ones go along), for
            // what still names the feed by it.
            let survivor = target.unwrap_or(feed_id);
            sqlx::query("DELETE FROM feed_former_urls WHERE url = $1")
                .bind(new_url)
                .execute(&mut *tx)
                .await?;
            sqlx::query("UPDATE feed_former_urls SET feed_id = $1 WHERE feed_id = $2")
                .bind(survivor)
                .bind(feed_id)
                .execute(&mut *tx)
                .await?;
            sqlx::query(
                "INSERT INTO feed_former_urls (url, feed_id, moved_at) VALUES ($1, $2, $3)
                 ON CONFLICT (url) DO UPDATE SET feed_id = excluded.feed_id,
                                                 moved_at = excluded.moved_at",
            )
            .bind(&current)
            .bind(survivor)
            .bind(now)
            .execute(&mut *tx)
            .await?;
            match target {
                None => {
                    sqlx::query("UPDATE feeds SET url = $1, updated_at = $2 WHERE id = $3")
                        .bind(new_url)
                        .bind(now)
                        .bind(feed_id)
                        .execute(&mut *tx)
                        .await?;
                    FeedMove::Renamed
                }
                Some(into) => {
                    let (subscriptions_moved, items_moved) = merge_feed!(tx, feed_id, into, now);
                    FeedMove::Merged {
                        into,
                        subscriptions_moved,
                        items_moved,
                    }
                }
            }
        }))
    }

    /// Deletes feeds nobody has followed since before `orphaned_before` (F17), with their
    /// items (bookmarks keep their snapshots). Returns how many feeds were deleted.
    pub async fn delete_orphan_feeds(&self, orphaned_before: i64) -> Result<u64> {
        Ok(with_db!(self, write, |db| {
            sqlx::query(
                "DELETE FROM feeds
                 WHERE orphaned_at IS NOT NULL AND orphaned_at < $1
                   AND NOT EXISTS (SELECT 1 FROM subscriptions s WHERE s.feed_id = feeds.id)",
            )
            .bind(orphaned_before)
            .execute(db)
            .await?
            .rows_affected()
        }))
    }

    /// Claims the periodic job `name` for `owner` when its last run started at least
    /// `period_seconds` before `now` (or it never ran). One conditional upsert, so among
    /// several workers racing for it exactly one gets `true` per period.
    pub async fn claim_job(
        &self,
        name: &str,
        owner: &str,
        now: i64,
        period_seconds: i64,
    ) -> Result<bool> {
        let claimed: Option<String> = with_db!(self, write, |db| {
            sqlx::query_scalar(
                "INSERT INTO job_runs (name, owner, started_at) VALUES ($1, $2, $3)
                 ON CONFLICT (name) DO UPDATE SET owner = excluded.owner,
                    started_at = excluded.started_at, finished_at = NULL, outcome = NULL
                 WHERE job_runs.started_at <= $4
                 RETURNING name",
            )
            .bind(name)
            .bind(owner)
            .bind(now)
            .bind(now.saturating_sub(period_seconds.max(0)))
            .fetch_optional(db)
            .await?
        });
        Ok(claimed.is_some())
    }

    /// Records how the job run `owner` claimed ended.
    pub async fn finish_job(&self, name: &str, owner: &str, now: i64, outcome: &str) -> Result<()> {
        with_db!(self, write, |db| {
            sqlx::query(
                "UPDATE job_runs SET finished_at = $1, outcome = $2
                 WHERE name = $3 AND owner = $4",
            )
            .bind(now)
            .bind(outcome)
            .bind(name)
            .bind(owner)
            .execute(db)
            .await?;
        });
        Ok(())
    }

    /// The last run of the periodic job `name`.
    pub async fn job_run(&self, name: &str) -> Result<Option<JobRun>> {
        let row: Option<(String, String, i64, Option<i64>, Option<String>)> =
            with_db!(self, read, |db| {
                sqlx::query_as(
                    "SELECT name, owner, started_at, finished_at, outcome FROM job_runs
                     WHERE name = $1",
                )
                .bind(name)
                .fetch_optional(db)
                .await?
            });
        Ok(
            row.map(|(name, owner, started_at, finished_at, outcome)| JobRun {
                name,
                owner,
                started_at,
                finished_at,
                outcome,
            }),
        )
    }

    /// Adds a finished OPML import to the user's history (a done `opml` import job); returns
    /// its id.
    pub async fn record_opml_import(&self, user_id: i64, record: &OpmlImportRecord) -> Result<i64> {
        Ok(with_db!(self, write, |db| {
            sqlx::query_scalar::<_, i64>(
                "INSERT INTO import_jobs (user_id, kind, status, source, total, checked, added,
                                          skipped, failed, entries, created_at, updated_at,
                                          finished_at)
                 VALUES ($1, 'opml', 'done', $2, $3, $3, $4, $5, $6, $7, $8, $8, $8)
                 RETURNING id",
            )
            .bind(user_id)
            .bind(&record.file_name)
            .bind(record.outlines)
            .bind(record.added)
            .bind(record.skipped)
            .bind(record.failed)
            .bind(&record.report)
            .bind(record.created_at)
            .fetch_one(db)
            .await?
        }))
    }

    /// The user's OPML imports (their `opml` import jobs), newest first.
    pub async fn list_opml_imports(&self, user_id: i64) -> Result<Vec<OpmlImportRecord>> {
        type Row = (i64, i64, Option<String>, i64, i64, i64, i64, String);
        let rows: Vec<Row> = with_db!(self, read, |db| {
            sqlx::query_as(
                "SELECT id, created_at, source, total, added, skipped, failed, entries
                 FROM import_jobs WHERE user_id = $1 AND kind = 'opml'
                 ORDER BY created_at DESC, id DESC",
            )
            .bind(user_id)
            .fetch_all(db)
            .await?
        });
        Ok(rows
            .into_iter()
            .map(
                |(id, created_at, file_name, outlines, added, skipped, failed, report)| {
                    OpmlImportRecord {
                        id,
                        created_at,
                        file_name,
                        outlines,
                        added,
                        skipped,
                        failed,
                        report,
                    }
                },
            )
            .collect())
    }

    /// The database's size in bytes (the SQLite file's pages, or the PostgreSQL database), for
    /// benchmarks and the admin view.
    pub async fn database_size_bytes(&self) -> Result<i64> {
        Ok(match self.engine() {
            Engine::Sqlite => with_db!(self, read, |db| {
                sqlx::query_scalar::<_, i64>(
                    "SELECT page_count * page_size FROM pragma_page_count(), pragma_page_size()",
                )
                .fetch_one(db)
                .await?
            }),
            Engine::Postgres => with_db!(self, read, |db| {
                sqlx::query_scalar::<_, i64>("SELECT pg_database_size(current_database())")
                    .fetch_one(db)
                    .await?
            }),
        })
    }
}
