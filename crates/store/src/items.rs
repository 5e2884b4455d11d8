//! Items of shared feeds, upserted by the identity rule (F4), and users' item states (F32).

use std::collections::{HashMap, HashSet};

use sha2::{Digest, Sha256};
use tidings_feed::identity::item_identity;
use tidings_feed::text::html_to_text;

use crate::search::{full_texts_of, item_index_value, write_index_rows};
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

/// Tombstones kept alive per statement by an upsert: well under both engines' limits on
/// bound parameters.
const TOMBSTONES_TOUCHED_PER_STATEMENT: usize = 500;

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

/// Binds an item as the upsert statements read it: `$1` the feed, `$2` now (the fetch and
/// change times), then [`BindItem::bind_item_values`].
trait BindItem<'q>: Sized {
    fn bind_item(self, feed_id: i64, prepared: &'q PreparedItem<'q>, now: i64) -> Self;
    /// The item's own values, [`INSERT_BINDS_PER_ITEM`] of them: identity, guid, url, title,
    /// author, content, summary, published (or now), estimated, updated, content hash,
    /// enclosures, categories, thumbnail.
    fn bind_item_values(self, prepared: &'q PreparedItem<'q>, now: i64) -> Self;
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
        self.bind(feed_id).bind(now).bind_item_values(p, now)
    }

    fn bind_item_values(self, p: &'q PreparedItem<'q>, now: i64) -> Self {
        let item = p.item;
        self.bind(&p.identity_key)
            .bind(&item.guid)
            .bind(&item.url)
            .bind(&item.title)
            .bind(&item.author)
            .bind(&item.content)
            .bind(&item.summary)
            .bind(item.published.unwrap_or(now))
            .bind(item.published.is_none())
            .bind(item.updated)
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

/// Rows per multi-row statement, largest first: a batch of any size is written with these few
/// statement shapes, each prepared once per connection.
const BATCH_SIZES: [usize; 4] = [64, 16, 4, 1];

/// Splits `n` rows into the sizes of [`BATCH_SIZES`]: as many of the largest as fit, then the
/// next, and so on.
pub(crate) fn batches(mut n: usize) -> Vec<usize> {
    let mut sizes = Vec::new();
    for size in BATCH_SIZES {
        while n >= size {
            sizes.push(size);
            n -= size;
        }
    }
    sizes
}

/// Values bound per item by [`insert_items_sql`] (besides the feed and the time, bound once).
const INSERT_BINDS_PER_ITEM: usize = 14;

/// The insert of `rows` new items in one statement: `$1` the feed, `$2` now (the fetch and
/// change times), then per item its identity, guid, url, title, author, content, summary,
/// published (or now), estimated, updated, content hash, enclosures, categories and thumbnail.
/// An identity stored meanwhile is left alone (it is not returned).
fn insert_items_sql(rows: usize) -> String {
    let mut sql = String::from(
        "INSERT INTO items (feed_id, identity_key, guid, url, title, author, content, summary,
            published_at, is_date_estimated, updated_at, fetched_at, changed_at, content_hash,
            enclosures, categories, thumbnail_url)
         VALUES ",
    );
    for row in 0..rows {
        if row > 0 {
            sql.push_str(", ");
        }
        let first = 3 + row * INSERT_BINDS_PER_ITEM;
        let values: Vec<String> = (first..first + INSERT_BINDS_PER_ITEM)
            .map(|n| format!("${n}"))
            .collect();
        // fetched_at and changed_at (both $2) go between `updated` and the content hash.
        sql.push_str(&format!(
            "($1, {}, $2, $2, {})",
            values[..10].join(", "),
            values[10..].join(", ")
        ));
    }
    sql.push_str(" ON CONFLICT (feed_id, identity_key) DO NOTHING RETURNING id, identity_key");
    sql
}

/// The read of the content hashes stored for `keys` identities of feed `$1` (`$2`…).
fn stored_hashes_sql(keys: usize) -> String {
    let placeholders: Vec<String> = (0..keys).map(|n| format!("${}", n + 2)).collect();
    format!(
        "SELECT identity_key, content_hash FROM items
         WHERE feed_id = $1 AND identity_key IN ({})",
        placeholders.join(", ")
    )
}

/// An item to write, with its search index value computed ahead of the transaction.
struct ItemWrite<'a> {
    prepared: PreparedItem<'a>,
    /// Whether a row of this identity was stored when the batch was read.
    stored: bool,
    index: String,
}

/// Updates the stored row of `$p` (a [`PreparedItem`]) when its content hash differs, else
/// inserts it when no row has its identity (deleted meanwhile, or never stored), inside the
/// transaction `$tx`. Evaluates to `(inserted id, updated id)`; both `None` when unchanged.
macro_rules! update_or_insert_item {
    ($tx:expr, $feed_id:expr, $p:expr, $now:expr) => {{
        let (feed_id, p, now): (i64, &PreparedItem<'_>, i64) = ($feed_id, $p, $now);
        let updated: Option<i64> = sqlx::query(
            "UPDATE items SET guid = $4, url = $5, title = $6, author = $7,
                    content = $8, summary = $9,
                    published_at = CASE WHEN $11 THEN published_at ELSE $10 END,
                    is_date_estimated =
                        CASE WHEN $11 THEN is_date_estimated ELSE FALSE END,
                    updated_at = $12, changed_at = $2, content_hash = $13,
                    enclosures = $14, categories = $15, thumbnail_url = $16
                 WHERE feed_id = $1 AND identity_key = $3 AND content_hash <> $13
                 RETURNING id",
        )
        .bind_item(feed_id, p, now)
        .fetch_optional(&mut *$tx)
        .await?
        .map(|row| sqlx::Row::try_get(&row, 0))
        .transpose()?;
        let inserted: Option<i64> = match updated {
            Some(_) => None,
            None => sqlx::query(sqlx::AssertSqlSafe(insert_items_sql(1)))
                .bind_item(feed_id, p, now)
                .fetch_optional(&mut *$tx)
                .await?
                .map(|row| sqlx::Row::try_get(&row, 0))
                .transpose()?,
        };
        (inserted, updated)
    }};
}

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
    /// Cheap for what did not change: the stored content hashes of the batch are read first
    /// (before the write transaction, as is the search index text of what is to be written,
    /// so SQLite's single writer never waits for that work), unchanged items cost no
    /// statement, and new ones are inserted many rows per statement.
    ///
    /// New and changed items are queued for their tags (F41) in the same transaction.
    ///
    /// Race-safe without locking first: inserts rely on the `(feed_id, identity_key)` unique
    /// constraint (`ON CONFLICT DO NOTHING`); an item inserted meanwhile by a concurrent
    /// upsert is then updated when its content differs, so concurrent upserts of the same
    /// items never duplicate them.
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
        let engine = self.engine();
        let stored = self.stored_content_hashes(feed_id, &prepared).await?;
        // Unchanged items (same identity, same content hash) need no write; an item that
        // may carry a legacy key is always written, which moves it to its key.
        let (same, changed): (Vec<PreparedItem<'_>>, Vec<PreparedItem<'_>>) =
            prepared.into_iter().partition(|p| {
                p.legacy_key.is_none() && stored.get(&p.identity_key) == Some(&p.content_hash)
            });
        let writes: Vec<ItemWrite<'_>> = changed
            .into_iter()
            .map(|p| ItemWrite {
                stored: stored.contains_key(&p.identity_key),
                index: item_index_value(
                    engine,
                    p.item.title.as_deref(),
                    p.item.content.as_deref(),
                    p.item.summary.as_deref(),
                    None,
                ),
                prepared: p,
            })
            .collect();
        let mut counts = UpsertCounts::default();
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
            // Tombstoned identities the feed still lists: their tombstones stay alive.
            let mut listed_tombstones: Vec<&str> = Vec::new();
            for p in &same {
                if tombstones.contains(&p.identity_key) {
                    listed_tombstones.push(&p.identity_key);
                } else {
                    counts.unchanged += 1;
                }
            }
            // (item id, index value) of every new or changed item.
            let mut indexed: Vec<(i64, &str)> = Vec::new();
            // New items go in multi-row inserts; the others (stored, or maybe stored under a
            // legacy key) one by one.
            let mut new_items: Vec<&ItemWrite<'_>> = Vec::new();
            let mut one_by_one: Vec<&ItemWrite<'_>> = Vec::new();
            for write in &writes {
                let p = &write.prepared;
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
                    listed_tombstones.push(&p.identity_key);
                    continue;
                }
                if !write.stored && p.legacy_key.is_none() {
                    new_items.push(write);
                } else {
                    one_by_one.push(write);
                }
            }
            let mut rest: &[&ItemWrite<'_>] = &new_items;
            for size in batches(new_items.len()) {
                let (chunk, after) = rest.split_at(size);
                rest = after;
                let mut insert = sqlx::query(sqlx::AssertSqlSafe(insert_items_sql(size)))
                    .bind(feed_id)
                    .bind(now);
                for write in chunk {
                    insert = insert.bind_item_values(&write.prepared, now);
                }
                let inserted: std::collections::HashMap<String, i64> = insert
                    .fetch_all(&mut *tx)
                    .await?
                    .iter()
                    .map(|row| {
                        Ok::<_, sqlx::Error>((
                            sqlx::Row::try_get(row, 1)?,
                            sqlx::Row::try_get(row, 0)?,
                        ))
                    })
                    .collect::<std::result::Result<_, _>>()?;
                for write in chunk {
                    match inserted.get(&write.prepared.identity_key) {
                        Some(&id) => {
                            counts.inserted += 1;
                            indexed.push((id, write.index.as_str()));
                        }
                        // Stored meanwhile by a concurrent upsert: updated when it differs.
                        None => one_by_one.push(write),
                    }
                }
            }
            // Stored items that changed: their full articles (F6) are indexed with them.
            let mut updated: Vec<(i64, &ItemWrite<'_>)> = Vec::new();
            for write in one_by_one {
                match update_or_insert_item!(tx, feed_id, &write.prepared, now) {
                    (Some(id), _) => {
                        counts.inserted += 1;
                        indexed.push((id, write.index.as_str()));
                    }
                    (None, Some(id)) => {
                        counts.updated += 1;
                        indexed.push((id, write.index.as_str()));
                        updated.push((id, write));
                    }
                    (None, None) => counts.unchanged += 1,
                }
            }
            // A changed item keeps its full article, so its index row keeps the article's
            // words: read after the updates, which a concurrent save of an article waits for
            // (or waited on), so that a just-saved article is seen. New items have none.
            let mut with_article: std::collections::HashMap<i64, String> =
                std::collections::HashMap::new();
            if !updated.is_empty() {
                let ids: Vec<i64> = updated.iter().map(|(id, _)| *id).collect();
                let articles = full_texts_of!(tx, &ids);
                for (id, write) in &updated {
                    if let Some(article) = articles.get(id) {
                        let item = write.prepared.item;
                        with_article.insert(
                            *id,
                            item_index_value(
                                engine,
                                item.title.as_deref(),
                                item.content.as_deref(),
                                item.summary.as_deref(),
                                Some(article),
                            ),
                        );
                    }
                }
            }
            for (id, value) in &mut indexed {
                if let Some(article_value) = with_article.get(id) {
                    *value = article_value.as_str();
                }
            }
            // New and changed items' search index rows, in the same transaction.
            write_index_rows!(tx, engine, &indexed);
            // New and changed items wait for their tags (F41), queued in the same transaction.
            let changed_ids: Vec<i64> = indexed.iter().map(|(id, _)| *id).collect();
            crate::tags::queue_tag_jobs!(tx, &changed_ids, now);
            counts.suppressed = listed_tombstones.len() as u64;
            for keys in listed_tombstones.chunks(TOMBSTONES_TOUCHED_PER_STATEMENT) {
                let placeholders: Vec<String> =
                    (0..keys.len()).map(|n| format!("${}", n + 3)).collect();
                let mut touch = sqlx::query(sqlx::AssertSqlSafe(format!(
                    "UPDATE item_tombstones SET last_seen_at = $2
                     WHERE feed_id = $1 AND identity_key IN ({})",
                    placeholders.join(", ")
                )))
                .bind(feed_id)
                .bind(now);
                for key in keys {
                    touch = touch.bind(*key);
                }
                touch.execute(&mut *tx).await?;
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

    /// The content hashes stored for the identities of `items` in feed `feed_id`, by identity.
    async fn stored_content_hashes(
        &self,
        feed_id: i64,
        items: &[PreparedItem<'_>],
    ) -> Result<HashMap<String, String>> {
        let mut stored = HashMap::new();
        let mut rest = items;
        for size in batches(items.len()) {
            let (chunk, after) = rest.split_at(size);
            rest = after;
            let rows: Vec<(String, String)> = with_db!(self, read, |db| {
                let mut read =
                    sqlx::query_as(sqlx::AssertSqlSafe(stored_hashes_sql(size))).bind(feed_id);
                for p in chunk {
                    read = read.bind(&p.identity_key);
                }
                read.fetch_all(db).await?
            });
            stored.extend(rows);
        }
        Ok(stored)
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
