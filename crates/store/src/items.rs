//! Items of shared feeds, upserted by the identity rule (F4), and users' item states (F32).

use std::collections::HashSet;

use sha2::{Digest, Sha256};
use tidings_feed::identity::item_identity;
use tidings_feed::text::html_to_text;

use crate::search::{item_index_write, write_index_row};
use crate::{Engine, Result, Store, StoreError, in_tx, row_decoder, with_db};

/// A media enclosure of an item.
#[derive(Debug, Clone, PartialEq, Eq, serde::Serialize, serde::Deserialize)]
pub struct Enclosure {
    /// Where the media is.
    pub url: String,
    /// Its MIME type, when given.
    pub mime_type: Option<String>,
    /// Its length in bytes, when given.
    pub length: Option<i64>,
}

/// An item as parsed from a feed, ready to store. HTML fields are already sanitized.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct NewItem {
    /// The feed's id for the item.
    pub guid: Option<String>,
    /// The item's link.
    pub url: Option<String>,
    /// Its title.
    pub title: Option<String>,
    /// Its author.
    pub author: Option<String>,
    /// Sanitized full content.
    pub content: Option<String>,
    /// Sanitized summary.
    pub summary: Option<String>,
    /// Publication time (Unix seconds); `None` falls back to the fetch time, marked estimated.
    pub published: Option<i64>,
    /// The item's own last-update time.
    pub updated: Option<i64>,
    /// Media enclosures.
    pub enclosures: Vec<Enclosure>,
    /// Categories.
    pub categories: Vec<String>,
    /// The item's image (a video's still, an episode's artwork): an absolute https URL.
    pub thumbnail_url: Option<String>,
    /// The item's identity key (F4) as the parser computed it
    /// ([`tidings_feed::Item::identity`]) from the feed's values before sanitizing, so that the
    /// store and `tidings parse` know an item by the same key. `None` for items built some
    /// other way: the store then computes it from the fields above, reading the summary (else
    /// the content) as text, as the parser does.
    pub identity_key: Option<String>,
}

/// How an upsert went.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq)]
pub struct UpsertCounts {
    /// Items seen for the first time.
    pub inserted: u64,
    /// Items seen before whose content changed.
    pub updated: u64,
    /// Items seen before, unchanged.
    pub unchanged: u64,
    /// Items retention deleted that the feed still lists: not stored again (see
    /// [`Store::delete_expired_items`]).
    pub suppressed: u64,
}

/// How long an item's tombstone outlives the last parse of its feed that listed the item. A
/// feed read only partly once (a damaged document) does not bring its deleted items back, and
/// a feed never keeps more tombstones than the identities it listed within this time.
pub const TOMBSTONE_GRACE_SECONDS: i64 = 7 * 86_400;

/// On PostgreSQL, serializes a feed's item upserts (shared) with retention's deletions
/// (exclusive), so that an upsert sees the tombstones of items deleted meanwhile. Bind: `$1` =
/// feed id. (SQLite has one writer; a lock on the feed row would deadlock with unsubscribing.)
pub(crate) const PG_FEED_ITEMS_LOCK_SHARED: &str =
    "SELECT pg_advisory_xact_lock_shared(7467, ($1 % 2147483647)::integer)";
/// The exclusive form of [`PG_FEED_ITEMS_LOCK_SHARED`], taken by retention.
pub(crate) const PG_FEED_ITEMS_LOCK: &str =
    "SELECT pg_advisory_xact_lock(7467, ($1 % 2147483647)::integer)";

/// A stored item with one user's state of it.
#[derive(Debug, Clone, PartialEq, Eq, serde::Serialize)]
pub struct Item {
    /// The item's id.
    pub id: i64,
    /// The feed it belongs to.
    pub feed_id: i64,
    /// The feed's id for it.
    pub guid: Option<String>,
    /// Its link.
    pub url: Option<String>,
    /// Its title.
    pub title: Option<String>,
    /// Its author.
    pub author: Option<String>,
    /// Sanitized content.
    pub content: Option<String>,
    /// Sanitized summary.
    pub summary: Option<String>,
    /// Publication time (Unix seconds).
    pub published_at: i64,
    /// Whether `published_at` is the fetch time because the feed gave no date.
    pub is_date_estimated: bool,
    /// The item's own last-update time.
    pub updated_at: Option<i64>,
    /// When tidings first saw it.
    pub fetched_at: i64,
    /// Media enclosures.
    pub enclosures: Vec<Enclosure>,
    /// Categories.
    pub categories: Vec<String>,
    /// The item's image (a video's still, an episode's artwork): an absolute https URL.
    pub thumbnail_url: Option<String>,
    /// Whether the user has read it.
    pub is_read: bool,
    /// Whether the user starred it.
    pub is_starred: bool,
}

/// A user's state of one item.
#[derive(Debug, Clone, Copy, PartialEq, Eq, serde::Serialize)]
pub struct ItemState {
    /// Read.
    pub is_read: bool,
    /// Starred.
    pub is_starred: bool,
}

/// Binds an item's fields as `$1`–`$16` in the order both upsert statements use: feed,
/// identity, guid, url, title, author, content, summary, published (or now), estimated,
/// updated, now, content hash, enclosures, categories, thumbnail.
trait BindItem<'q>: Sized {
    fn bind_item(self, feed_id: i64, prepared: &'q PreparedItem<'q>, now: i64) -> Self;
}

impl<'q, DB> BindItem<'q> for sqlx::query::Query<'q, DB, <DB as sqlx::Database>::Arguments>
where
    DB: sqlx::Database,
    i64: sqlx::Encode<'q, DB> + sqlx::Type<DB>,
    bool: sqlx::Encode<'q, DB> + sqlx::Type<DB>,
    Option<i64>: sqlx::Encode<'q, DB> + sqlx::Type<DB>,
    &'q str: sqlx::Encode<'q, DB> + sqlx::Type<DB>,
    &'q String: sqlx::Encode<'q, DB> + sqlx::Type<DB>,
    &'q Option<String>: sqlx::Encode<'q, DB> + sqlx::Type<DB>,
{
    fn bind_item(self, feed_id: i64, p: &'q PreparedItem<'q>, now: i64) -> Self {
        let item = p.item;
        self.bind(feed_id)
            .bind(&p.identity_key)
            .bind(&item.guid)
            .bind(&item.url)
            .bind(&item.title)
            .bind(&item.author)
            .bind(&item.content)
            .bind(&item.summary)
            .bind(item.published.unwrap_or(now))
            .bind(item.published.is_none())
            .bind(item.updated)
            .bind(now)
            .bind(&p.content_hash)
            .bind(&p.enclosures)
            .bind(&p.categories)
            .bind(&item.thumbnail_url)
    }
}

/// The stored form of an item, with its identity and content hash computed.
struct PreparedItem<'a> {
    item: &'a NewItem,
    identity_key: String,
    /// The key an item without guid and link had before identities came from the parser, when
    /// it differs from `identity_key`.
    legacy_key: Option<String>,
    content_hash: String,
    enclosures: String,
    categories: String,
}

fn prepare(item: &NewItem) -> PreparedItem<'_> {
    let published = item
        .published
        .and_then(|secs| chrono::DateTime::from_timestamp(secs, 0));
    let identity = |summary: Option<&str>| {
        item_identity(
            item.guid.as_deref(),
            item.url.as_deref(),
            item.title.as_deref(),
            published,
            summary,
        )
    };
    let identity_key = match &item.identity_key {
        Some(key) => key.clone(),
        None => {
            let text = item
                .summary
                .as_deref()
                .or(item.content.as_deref())
                .and_then(html_to_text);
            identity(text.as_deref()).key
        }
    };
    // Before identities came from the parser, an item without guid and link was keyed by its
    // sanitized summary HTML; such rows are moved to the new key when seen again.
    let legacy_key = identity_key
        .starts_with("h:")
        .then(|| identity(item.summary.as_deref()).key)
        .filter(|legacy| *legacy != identity_key);
    let enclosures = serde_json::to_string(&item.enclosures).unwrap_or_else(|_| "[]".into());
    let categories = serde_json::to_string(&item.categories).unwrap_or_else(|_| "[]".into());
    // What the reader shows; an estimated date is not part of it, so refetching an undated
    // item does not count as a change.
    let mut hasher = Sha256::new();
    for part in [
        item.url.as_deref(),
        item.title.as_deref(),
        item.author.as_deref(),
        item.content.as_deref(),
        item.summary.as_deref(),
    ] {
        hasher.update(part.unwrap_or("").as_bytes());
        hasher.update([0u8]);
    }
    hasher.update(item.published.map(|p| p.to_string()).unwrap_or_default());
    hasher.update([0u8]);
    hasher.update(item.updated.map(|p| p.to_string()).unwrap_or_default());
    hasher.update([0u8]);
    hasher.update(&enclosures);
    hasher.update([0u8]);
    hasher.update(&categories);
    // Hashed only when present, so items stored before thumbnails existed keep their hash.
    if let Some(thumbnail) = &item.thumbnail_url {
        hasher.update([0u8]);
        hasher.update(thumbnail.as_bytes());
    }
    PreparedItem {
        item,
        identity_key,
        legacy_key,
        content_hash: hex::encode(hasher.finalize()),
        enclosures,
        categories,
    }
}

pub(crate) type ItemRow = (
    (i64, i64, Option<String>, Option<String>, Option<String>),
    (Option<String>, Option<String>, Option<String>, i64, bool),
    (Option<i64>, i64, String, String, bool, bool),
    (Option<String>,),
);

impl Store {
    /// Stores a feed's items by the identity rule (F4): a new identity is inserted, a known
    /// one is updated in place when its content changed (keeping every user's read and
    /// starred state), and an unchanged one is left alone. Items without a date get `now`,
    /// marked estimated, and keep their first estimate on later fetches.
    ///
    /// An identity retention deleted (it has a tombstone) is not stored again; its tombstone
    /// is kept alive while the feed lists it, and tombstones the feed has not listed for
    /// [`TOMBSTONE_GRACE_SECONDS`] are removed. Items are never refused for their date.
    ///
    /// Race-safe without reading first: the insert relies on the `(feed_id, identity_key)`
    /// unique constraint (`ON CONFLICT DO NOTHING`), and only then is the existing row
    /// updated, so concurrent upserts of the same items never duplicate them.
    pub async fn upsert_items(
        &self,
        feed_id: i64,
        items: &[NewItem],
        now: i64,
    ) -> Result<UpsertCounts> {
        // Control characters are removed before the identity is computed, so that a NUL in
        // a feed neither fails the write (PostgreSQL) nor makes an item differ by engine.
        let cleaned: Vec<std::borrow::Cow<'_, NewItem>> =
            items.iter().map(crate::text::clean_item).collect();
        let mut prepared: Vec<PreparedItem<'_>> = cleaned.iter().map(|c| prepare(c)).collect();
        // A sorted, de-duplicated batch takes row locks in the same order as any concurrent
        // batch of the same feed (no deadlocks) and never touches one row twice.
        prepared.sort_by(|a, b| a.identity_key.cmp(&b.identity_key));
        prepared.dedup_by(|a, b| a.identity_key == b.identity_key);
        let mut counts = UpsertCounts::default();
        let engine = self.engine();
        let is_postgres = engine == Engine::Postgres;
        in_tx!(self, |tx| {
            if is_postgres {
                sqlx::query(PG_FEED_ITEMS_LOCK_SHARED)
                    .bind(feed_id)
                    .execute(&mut *tx)
                    .await?;
            }
            let mut tombstones: HashSet<String> =
                sqlx::query_scalar("SELECT identity_key FROM item_tombstones WHERE feed_id = $1")
                    .bind(feed_id)
                    .fetch_all(&mut *tx)
                    .await?
                    .into_iter()
                    .collect();
            for p in &prepared {
                if let Some(legacy) = &p.legacy_key {
                    if !tombstones.contains(&p.identity_key) && tombstones.contains(legacy) {
                        sqlx::query(
                            "UPDATE item_tombstones SET identity_key = $3
                             WHERE feed_id = $1 AND identity_key = $2",
                        )
                        .bind(feed_id)
                        .bind(legacy)
                        .bind(&p.identity_key)
                        .execute(&mut *tx)
                        .await?;
                        tombstones.insert(p.identity_key.clone());
                    }
                    sqlx::query(
                        "UPDATE items SET identity_key = $3
                         WHERE feed_id = $1 AND identity_key = $2
                           AND NOT EXISTS (SELECT 1 FROM items
                                           WHERE feed_id = $1 AND identity_key = $3)",
                    )
                    .bind(feed_id)
                    .bind(legacy)
                    .bind(&p.identity_key)
                    .execute(&mut *tx)
                    .await?;
                }
                if tombstones.contains(&p.identity_key) {
                    counts.suppressed += 1;
                    sqlx::query(
                        "UPDATE item_tombstones SET last_seen_at = $3
                         WHERE feed_id = $1 AND identity_key = $2",
                    )
                    .bind(feed_id)
                    .bind(&p.identity_key)
                    .bind(now)
                    .execute(&mut *tx)
                    .await?;
                    continue;
                }
                let inserted: Option<i64> = sqlx::query(
                    "INSERT INTO items (feed_id, identity_key, guid, url, title, author, content,
                        summary, published_at, is_date_estimated, updated_at, fetched_at,
                        changed_at, content_hash, enclosures, categories, thumbnail_url)
                     VALUES ($1, $2, $3, $4, $5, $6, $7, $8, $9, $10, $11, $12, $12, $13, $14, $15,
                        $16)
                     ON CONFLICT (feed_id, identity_key) DO NOTHING
                     RETURNING id",
                )
                .bind_item(feed_id, p, now)
                .fetch_optional(&mut *tx)
                .await?
                .map(|row| sqlx::Row::try_get(&row, 0))
                .transpose()?;
                let updated: Option<i64> = match inserted {
                    Some(_) => None,
                    None => sqlx::query(
                        "UPDATE items SET guid = $3, url = $4, title = $5, author = $6,
                                content = $7, summary = $8,
                                published_at = CASE WHEN $10 THEN published_at ELSE $9 END,
                                is_date_estimated =
                                    CASE WHEN $10 THEN is_date_estimated ELSE FALSE END,
                                updated_at = $11, changed_at = $12, content_hash = $13,
                                enclosures = $14, categories = $15, thumbnail_url = $16
                             WHERE feed_id = $1 AND identity_key = $2 AND content_hash <> $13
                             RETURNING id",
                    )
                    .bind_item(feed_id, p, now)
                    .fetch_optional(&mut *tx)
                    .await?
                    .map(|row| sqlx::Row::try_get(&row, 0))
                    .transpose()?,
                };
                match (inserted, updated) {
                    (Some(_), _) => counts.inserted += 1,
                    (None, Some(_)) => counts.updated += 1,
                    (None, None) => counts.unchanged += 1,
                }
                // A new or changed item's search index row, in the same transaction.
                if let Some(id) = inserted.or(updated) {
                    let item = p.item;
                    write_index_row!(
                        tx,
                        id,
                        item_index_write(
                            engine,
                            item.title.as_deref(),
                            item.content.as_deref(),
                            item.summary.as_deref()
                        )
                    );
                }
            }
            if !tombstones.is_empty() {
                sqlx::query("DELETE FROM item_tombstones WHERE feed_id = $1 AND last_seen_at < $2")
                    .bind(feed_id)
                    .bind(now.saturating_sub(TOMBSTONE_GRACE_SECONDS))
                    .execute(&mut *tx)
                    .await?;
            }
        });
        Ok(counts)
    }

    /// How many tombstones a feed has: identities retention deleted that a fetch does not
    /// store again.
    pub async fn count_tombstones(&self, feed_id: i64) -> Result<i64> {
        Ok(with_db!(self, read, |db| {
            sqlx::query_scalar::<_, i64>("SELECT COUNT(*) FROM item_tombstones WHERE feed_id = $1")
                .bind(feed_id)
                .fetch_one(db)
                .await?
        }))
    }

    /// How many items a feed has.
    pub async fn count_items(&self, feed_id: i64) -> Result<i64> {
        Ok(with_db!(self, read, |db| {
            sqlx::query_scalar::<_, i64>("SELECT COUNT(*) FROM items WHERE feed_id = $1")
                .bind(feed_id)
                .fetch_one(db)
                .await?
        }))
    }

    /// The ids of a feed's items, newest first.
    pub async fn feed_item_ids(&self, feed_id: i64) -> Result<Vec<i64>> {
        Ok(with_db!(self, read, |db| {
            sqlx::query_scalar::<_, i64>(
                "SELECT id FROM items WHERE feed_id = $1 ORDER BY published_at DESC, id DESC",
            )
            .bind(feed_id)
            .fetch_all(db)
            .await?
        }))
    }

    /// An item of one of the user's subscribed feeds, with the user's state of it.
    pub async fn item(&self, user_id: i64, item_id: i64) -> Result<Item> {
        let row = with_db!(self, read, |db| {
            sqlx::query(
                "SELECT i.id, i.feed_id, i.guid, i.url, i.title,
                        i.author, i.content, i.summary, i.published_at, i.is_date_estimated,
                        i.updated_at, i.fetched_at, i.enclosures, i.categories,
                        COALESCE(r.is_read,
                                 s.read_before IS NOT NULL AND i.published_at <= s.read_before),
                        COALESCE(r.is_starred, FALSE), i.thumbnail_url
                 FROM items i
                 JOIN subscriptions s ON s.feed_id = i.feed_id AND s.user_id = $1
                 LEFT JOIN item_states r ON r.item_id = i.id AND r.user_id = $1
                 WHERE i.id = $2",
            )
            .bind(user_id)
            .bind(item_id)
            .fetch_optional(db)
            .await?
            .map(|row| decode_item(&row))
            .transpose()?
        });
        row.map(item_from_row).ok_or(StoreError::NotFound("item"))
    }

    /// Sets a user's read and/or starred state of an item; idempotent. The item must be in
    /// one of the user's subscriptions. Without a state row an item is read when its
    /// subscription's watermark covers it (see `reading`); the row written here overrides that.
    pub async fn set_item_state(
        &self,
        user_id: i64,
        item_id: i64,
        is_read: Option<bool>,
        is_starred: Option<bool>,
    ) -> Result<ItemState> {
        let now = crate::unix_now();
        let state: Option<(bool, bool)> = in_tx!(self, |tx| {
            // Whether the subscription's read watermark covers the item: a new state row
            // starts from that verdict, so starring an item does not make it unread.
            let visible: Option<bool> = sqlx::query_scalar(
                "SELECT s.read_before IS NOT NULL AND i.published_at <= s.read_before
                 FROM items i
                 JOIN subscriptions s ON s.feed_id = i.feed_id AND s.user_id = $1
                 WHERE i.id = $2",
            )
            .bind(user_id)
            .bind(item_id)
            .fetch_optional(&mut *tx)
            .await?;
            if let Some(read_by_watermark) = visible {
                Some(
                    sqlx::query_as::<_, (bool, bool)>(
                        "INSERT INTO item_states (user_id, item_id, is_read, is_starred, updated_at)
                         VALUES ($1, $2, COALESCE($3, $6), COALESCE($4, FALSE), $5)
                         ON CONFLICT (user_id, item_id) DO UPDATE SET
                            is_read = COALESCE($3, item_states.is_read),
                            is_starred = COALESCE($4, item_states.is_starred),
                            updated_at = $5
                         RETURNING is_read, is_starred",
                    )
                    .bind(user_id)
                    .bind(item_id)
                    .bind(is_read)
                    .bind(is_starred)
                    .bind(now)
                    .bind(read_by_watermark)
                    .fetch_one(&mut *tx)
                    .await?,
                )
            } else {
                None
            }
        });
        let (is_read, is_starred) = state.ok_or(StoreError::NotFound("item"))?;
        Ok(ItemState {
            is_read,
            is_starred,
        })
    }
}

row_decoder!(
    /// Decodes the 17 item columns `Store::item` selects, in its order.
    pub(crate) decode_item -> ItemRow {
    (0, 1, 2, 3, 4), (5, 6, 7, 8, 9), (10, 11, 12, 13, 14, 15), (16)
});

pub(crate) fn item_from_row(row: ItemRow) -> Item {
    let ((id, feed_id, guid, url, title), middle, last, (thumbnail_url,)) = row;
    let (author, content, summary, published_at, is_date_estimated) = middle;
    let (updated_at, fetched_at, enclosures, categories, is_read, is_starred) = last;
    Item {
        id,
        feed_id,
        guid,
        url,
        title,
        author,
        content,
        summary,
        published_at,
        is_date_estimated,
        updated_at,
        fetched_at,
        // Written by this store as JSON; a damaged value shows as empty rather than failing.
        enclosures: serde_json::from_str(&enclosures).unwrap_or_default(),
        categories: serde_json::from_str(&categories).unwrap_or_default(),
        thumbnail_url,
        is_read,
        is_starred,
    }
}
