//! Items of shared feeds, upserted by the identity rule (F4), and users' item states (F32).

use std::borrow::Cow;
use std::collections::{HashMap, HashSet};

use sha2::{Digest, Sha256};
use tidings_feed::identity::item_identity;
use tidings_feed::text::html_to_text;

use crate::batch::batches;
use crate::feeds::pg_begin_feed_items;
use crate::languages::{ItemLanguageInput, batch_languages};
use crate::search_index::{
    ItemText, TranslationText, full_texts_of, item_index_value, translations_of, write_index_rows,
};
use crate::text::{is_stripped_char, strip_control_chars};
use crate::{
    Engine, Favicon, FeedBody, FeedMetadata, FetchRecord, FullTextAuto, FullTextMode, Result,
    Store, StoreError, in_tx, row_decoder, with_db,
};

/// What becomes of a feed's kept raw body (F8) when a fetch is stored.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum BodyWrite<'a> {
    /// Keep this body, replacing the previous one.
    Keep(&'a FeedBody),
    /// Drop the kept body (the new one is too large to keep, so the old one is outdated).
    Drop,
}

/// Which new items a fetch queues for their article page (F6), given the feed's subscribers'
/// strongest mode: `true` for an item whose feed text is short (queued in the `auto` mode),
/// `false` for one queued only in the `always` mode.
pub type ShortText<'a> = &'a (dyn Fn(&NewItem) -> bool + Send + Sync);

/// Everything a parsed fetch stores besides its items, written in the items' transaction so
/// that the fetch commits once (on PostgreSQL each commit waits for the disk).
#[derive(Default, Clone, Copy)]
pub struct FetchWrites<'a> {
    /// What the feed says about itself.
    pub metadata: Option<FeedMetadata<'a>>,
    /// The icon or logo URL the feed names, when it names one.
    pub icon_url: Option<&'a str>,
    /// The feed's favicon, when its site's is known already (see
    /// [`crate::Store::save_favicon`]).
    pub favicon: Option<&'a Favicon>,
    /// The raw body to keep or drop; `None` leaves the kept one alone.
    pub body: Option<BodyWrite<'a>>,
    /// Queue the new items with a link for their article page (F6), as the feed's
    /// subscribers' modes ask: `Some(short)` tells which items' feed text is short.
    pub full_text: Option<ShortText<'a>>,
    /// Which short items the `auto` mode queues (issue 38): by default only those of feeds a
    /// subscriber in `auto` reads.
    pub full_text_auto: FullTextAuto,
    /// Queue the new items for their summary when a subscriber wants them (F42); see
    /// [`crate::Store::queue_new_summaries`].
    pub summaries: bool,
    /// The WebSub hub and topic the feed advertises, or that it advertises none (F18); see
    /// [`crate::Store::record_websub_discovery`]. `None` leaves the feed's row alone.
    pub websub: Option<WebSubDiscovery<'a>>,
    /// The fetch's outcome, recorded (and the lease released) when this owner still holds the
    /// feed's lease: `(owner, record)`.
    pub record: Option<(&'a str, &'a FetchRecord)>,
}

/// What a fetched feed says of WebSub (F18), recorded with the fetch.
#[derive(Debug, Clone, Copy)]
pub struct WebSubDiscovery<'a> {
    /// `(hub, topic)`, or `None` when the feed names no hub.
    pub found: Option<(&'a str, &'a str)>,
    /// The callback token a new subscription row takes.
    pub token: &'a str,
    /// The secret a new subscription row takes.
    pub secret: &'a str,
}

impl std::fmt::Debug for FetchWrites<'_> {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("FetchWrites")
            .field("metadata", &self.metadata)
            .field("icon_url", &self.icon_url)
            .field("favicon", &self.favicon.map(|f| &f.source_url))
            .field("body", &self.body.map(|b| matches!(b, BodyWrite::Keep(_))))
            .field("full_text", &self.full_text.is_some())
            .field("full_text_auto", &self.full_text_auto)
            .field("summaries", &self.summaries)
            .field("websub", &self.websub)
            .field("record", &self.record)
            .finish()
    }
}

/// What [`crate::Store::store_fetch`] wrote.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq)]
pub struct FetchWritten {
    /// How the items went.
    pub counts: UpsertCounts,
    /// Whether the outcome was recorded: `false` when the lease was lost (the items and the
    /// rest are stored all the same), `true` when no outcome was given.
    pub recorded: bool,
    /// New items queued for their article page.
    pub full_text_queued: u64,
    /// New items queued for their summary.
    pub summaries_queued: u64,
    /// (subscriber, new item) pairs whose state a rule changed.
    pub rules_applied: u64,
    /// New items found to be copies of stored items of other feeds (issue 35).
    pub clustered: u64,
}

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
    /// The language the item itself declares (a BCP 47 tag as written), when it does: a
    /// declaration the store checks against the item's text (issue 37), not the language
    /// stored as it is.
    pub language: Option<String>,
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
    /// Its language, a BCP 47 tag (issue 37); `None` until known.
    pub language: Option<String>,
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
    /// The item's own values, [`insert_binds_per_item`] of them: identity, guid, url, title,
    /// author, content, summary, published (or now), estimated, updated, content hash,
    /// enclosures, categories, thumbnail, then the language on a schema that has it.
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
        let query = self
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
            .bind(&p.content_hash)
            .bind(&p.enclosures)
            .bind(&p.categories)
            .bind(&item.thumbnail_url);
        match &p.language {
            Some(language) => query.bind(language),
            None => query,
        }
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
    /// The language the store decided for the item (issue 37), set with the batch's others
    /// before the write ([`Store::assign_languages`]); `None` on a schema without the column
    /// (older than migration 47), which is then not written.
    language: Option<Option<String>>,
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
        language: None,
    }
}

pub(crate) type ItemRow = (
    (i64, i64, Option<String>, Option<String>, Option<String>),
    (Option<String>, Option<String>, Option<String>, i64, bool),
    (Option<i64>, i64, String, String, bool, bool),
    (Option<String>, Option<String>),
);

/// Values bound per item by [`BindItem::bind_item_values`].
/// Values bound per item by [`BindItem::bind_item_values`], with the language or without.
fn insert_binds_per_item(language: bool) -> usize {
    14 + usize::from(language)
}

/// The head of an item insert: the feed, the fetch and change times, then the item's own
/// values in the order [`BindItem::bind_item_values`] binds them.
fn insert_items_head(language: bool) -> String {
    format!(
        "INSERT INTO items (feed_id, fetched_at, changed_at, identity_key,
            guid, url, title, author, content, summary, published_at, is_date_estimated,
            updated_at, content_hash, enclosures, categories, thumbnail_url{})
         VALUES ",
        if language { ", language" } else { "" }
    )
}

/// What follows the values: an identity stored meanwhile is left alone (it is not returned).
const INSERT_ITEMS_TAIL: &str =
    " ON CONFLICT (feed_id, identity_key) DO NOTHING RETURNING id, identity_key";

/// The insert of one new item on either engine: `$1` the feed, `$2` now (the fetch and change
/// times), then its values ([`BindItem::bind_item`]), with its language or without.
fn insert_item_sql(language: bool) -> String {
    let values: Vec<String> = (3..3 + insert_binds_per_item(language))
        .map(|n| format!("${n}"))
        .collect();
    format!(
        "{}($1, $2, $2, {}){INSERT_ITEMS_TAIL}",
        insert_items_head(language),
        values.join(", ")
    )
}

/// The insert of `rows` new items in one statement on SQLite, with anonymous `?` parameters
/// bound in order: per item the feed, now twice, then its values. Not `$n`: sqlx asks SQLite
/// for the name of every parameter it binds, which SQLite finds by a linear scan of the
/// statement's names, so binding 64 items' 900 numbered parameters took 400,000 steps, 7 % of
/// the CPU of a first refresh (`tidings bench fetch --mix`).
fn sqlite_insert_items_sql(rows: usize, language: bool) -> String {
    let row = format!("(?, ?, ?{})", ", ?".repeat(insert_binds_per_item(language)));
    format!(
        "{}{}{INSERT_ITEMS_TAIL}",
        insert_items_head(language),
        vec![row; rows].join(", ")
    )
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
    /// Its search index value, made from `text`.
    index: String,
    /// Its text and tokens, which its subscribers' rules look at when it is new.
    text: ItemText,
}

/// The PostgreSQL insert of any number of new items in one statement: one array per column
/// (`$3`…`$16`, in the order of [`BindItem::bind_item_values`] but the language), then the
/// items' search index values (`$17`) and languages (`$18`); `$1` is the feed and `$2` now. The same statement writes their index rows
/// and queues them for tags, so that a feed's first fetch costs one round trip for its items
/// (a statement per 64 rows of each table before). Rows go in in the arrays' order (sorted
/// by identity), so concurrent batches of one feed take row locks in the same order. Returns
/// the inserted rows' id and identity; an identity stored meanwhile is left alone. On a
/// schema older than migration 47 the languages are not written ([`pg_insert_new_items`]).
const PG_INSERT_NEW_ITEMS: &str = "
WITH new AS (
    SELECT * FROM UNNEST($3::text[], $4::text[], $5::text[], $6::text[], $7::text[],
                         $8::text[], $9::text[], $10::bigint[], $11::boolean[], $12::bigint[],
                         $13::text[], $14::text[], $15::text[], $16::text[], $17::text[],
                         $18::text[])
        WITH ORDINALITY
        AS n(identity_key, guid, url, title, author, content, summary, published_at,
             is_date_estimated, updated_at, content_hash, enclosures, categories,
             thumbnail_url, document, language, position)
), inserted AS (
    INSERT INTO items (feed_id, identity_key, guid, url, title, author, content, summary,
        published_at, is_date_estimated, updated_at, fetched_at, changed_at, content_hash,
        enclosures, categories, thumbnail_url /*language*/)
    SELECT $1, identity_key, guid, url, title, author, content, summary, published_at,
           is_date_estimated, updated_at, $2, $2, content_hash, enclosures, categories,
           thumbnail_url /*language*/
    FROM new ORDER BY position
    ON CONFLICT (feed_id, identity_key) DO NOTHING
    RETURNING id, identity_key
), indexed AS (
    INSERT INTO item_search (item_id, document)
    SELECT i.id, n.document::tsvector FROM inserted i JOIN new n USING (identity_key)
    ON CONFLICT (item_id) DO UPDATE SET document = EXCLUDED.document
), tagged AS (
    INSERT INTO tag_jobs (item_id, queued_at) SELECT id, $2 FROM inserted
    ON CONFLICT (item_id) DO UPDATE SET version = tag_jobs.version + 1,
        queued_at = excluded.queued_at, lease_owner = NULL, lease_until = NULL
)
SELECT id, identity_key FROM inserted";

/// [`PG_INSERT_NEW_ITEMS`] with the language column written (`language`) or not.
fn pg_insert_new_items(language: bool) -> String {
    if language {
        PG_INSERT_NEW_ITEMS.replace("/*language*/", ", language")
    } else {
        PG_INSERT_NEW_ITEMS.to_owned()
    }
}

/// The writes of a fetch whose SQL differs by engine: PostgreSQL takes a whole batch in one
/// statement through arrays (each round trip to the server costs), SQLite (in the process,
/// without arrays) takes it in a few multi-row statements of fixed shapes.
trait EngineWrites {
    /// Inserts `writes` (new identities, sorted) with their search index rows and tag jobs,
    /// and returns the inserted ones' ids by identity; an identity stored meanwhile is left
    /// out (the caller updates it when it differs).
    async fn insert_new_items(
        &mut self,
        feed_id: i64,
        now: i64,
        writes: &[&ItemWrite<'_>],
    ) -> Result<HashMap<String, i64>>;

    /// Queues `ids` (new items with a link) for their article page (F6) when a subscriber of
    /// `feed_id` asks for it: `mode` `auto` queues them in the `auto` and `always` modes,
    /// `always` only in the `always` mode. Returns how many were queued.
    async fn queue_new_full_text(
        &mut self,
        feed_id: i64,
        now: i64,
        ids: &[i64],
        mode: &str,
    ) -> Result<u64>;
}

/// The full-text queueing of [`EngineWrites::queue_new_full_text`]: `$1` now, `$2` the mode
/// that asks for these items besides `always`, `$3` the feed; the ids follow (`IN` list or
/// array).
fn queue_new_full_text_sql(ids: &str) -> String {
    format!(
        "INSERT INTO full_text_jobs (item_id, queued_at, not_before)
         SELECT i.id, $1, $1 FROM items i
         WHERE i.feed_id = $3 AND i.id {ids} AND i.url IS NOT NULL
           AND EXISTS (SELECT 1 FROM subscriptions s
                       WHERE s.feed_id = $3 AND s.full_text IN ('always', $2))
           AND NOT EXISTS (SELECT 1 FROM item_full_texts t WHERE t.item_id = i.id)
         ON CONFLICT (item_id) DO NOTHING"
    )
}

impl EngineWrites for sqlx::PgConnection {
    async fn insert_new_items(
        &mut self,
        feed_id: i64,
        now: i64,
        writes: &[&ItemWrite<'_>],
    ) -> Result<HashMap<String, i64>> {
        if writes.is_empty() {
            return Ok(HashMap::new());
        }
        let text = |get: for<'w> fn(&'w ItemWrite<'w>) -> Option<&'w str>| -> Vec<Option<&str>> {
            writes.iter().map(|w| get(w)).collect()
        };
        let published: Vec<i64> = writes
            .iter()
            .map(|w| w.prepared.item.published.unwrap_or(now))
            .collect();
        let estimated: Vec<bool> = writes
            .iter()
            .map(|w| w.prepared.item.published.is_none())
            .collect();
        let updated: Vec<Option<i64>> = writes.iter().map(|w| w.prepared.item.updated).collect();
        let language = writes[0].prepared.language.is_some();
        let sql = pg_insert_new_items(language);
        let rows: Vec<(i64, String)> = sqlx::query_as(sqlx::AssertSqlSafe(sql))
            .bind(feed_id)
            .bind(now)
            .bind(text(|w| Some(w.prepared.identity_key.as_str())))
            .bind(text(|w| w.prepared.item.guid.as_deref()))
            .bind(text(|w| w.prepared.item.url.as_deref()))
            .bind(text(|w| w.prepared.item.title.as_deref()))
            .bind(text(|w| w.prepared.item.author.as_deref()))
            .bind(text(|w| w.prepared.item.content.as_deref()))
            .bind(text(|w| w.prepared.item.summary.as_deref()))
            .bind(published)
            .bind(estimated)
            .bind(updated)
            .bind(text(|w| Some(w.prepared.content_hash.as_str())))
            .bind(text(|w| Some(w.prepared.enclosures.as_str())))
            .bind(text(|w| Some(w.prepared.categories.as_str())))
            .bind(text(|w| w.prepared.item.thumbnail_url.as_deref()))
            .bind(text(|w| Some(w.index.as_str())))
            .bind(text(|w| {
                w.prepared.language.as_ref().and_then(Option::as_deref)
            }))
            .fetch_all(&mut *self)
            .await?;
        Ok(rows.into_iter().map(|(id, key)| (key, id)).collect())
    }

    async fn queue_new_full_text(
        &mut self,
        feed_id: i64,
        now: i64,
        ids: &[i64],
        mode: &str,
    ) -> Result<u64> {
        if ids.is_empty() {
            return Ok(0);
        }
        Ok(
            sqlx::query(sqlx::AssertSqlSafe(queue_new_full_text_sql("= ANY($4)")))
                .bind(now)
                .bind(mode)
                .bind(feed_id)
                .bind(ids)
                .execute(&mut *self)
                .await?
                .rows_affected(),
        )
    }
}

impl EngineWrites for sqlx::SqliteConnection {
    async fn insert_new_items(
        &mut self,
        feed_id: i64,
        now: i64,
        writes: &[&ItemWrite<'_>],
    ) -> Result<HashMap<String, i64>> {
        let mut inserted = HashMap::new();
        let mut rest = writes;
        for size in batches(writes.len()) {
            let (chunk, after) = rest.split_at(size);
            rest = after;
            let language = chunk[0].prepared.language.is_some();
            let mut insert =
                sqlx::query(sqlx::AssertSqlSafe(sqlite_insert_items_sql(size, language)));
            for write in chunk {
                insert = insert
                    .bind(feed_id)
                    .bind(now)
                    .bind(now)
                    .bind_item_values(&write.prepared, now);
            }
            for row in insert.fetch_all(&mut *self).await? {
                inserted.insert(sqlx::Row::try_get(&row, 1)?, sqlx::Row::try_get(&row, 0)?);
            }
        }
        let indexed: Vec<(i64, &str)> = writes
            .iter()
            .filter_map(|w| {
                let id = *inserted.get(&w.prepared.identity_key)?;
                Some((id, w.index.as_str()))
            })
            .collect();
        let ids: Vec<i64> = indexed.iter().map(|(id, _)| *id).collect();
        write_index_rows!(self, Engine::Sqlite, &indexed);
        crate::tags::queue_tag_jobs!(self, &ids, now);
        Ok(inserted)
    }

    async fn queue_new_full_text(
        &mut self,
        feed_id: i64,
        now: i64,
        ids: &[i64],
        mode: &str,
    ) -> Result<u64> {
        let mut queued = 0;
        for chunk in ids.chunks(TOMBSTONES_TOUCHED_PER_STATEMENT) {
            let placeholders: Vec<String> =
                (0..chunk.len()).map(|n| format!("${}", n + 4)).collect();
            let mut insert = sqlx::query(sqlx::AssertSqlSafe(queue_new_full_text_sql(&format!(
                "IN ({})",
                placeholders.join(", ")
            ))))
            .bind(now)
            .bind(mode)
            .bind(feed_id);
            for id in chunk {
                insert = insert.bind(*id);
            }
            queued += insert.execute(&mut *self).await?.rows_affected();
        }
        Ok(queued)
    }
}

/// Updates the stored row of `$p` (a [`PreparedItem`]) when its content hash differs, else
/// inserts it when no row has its identity (deleted meanwhile, or never stored), inside the
/// transaction `$tx`. Evaluates to `(inserted id, updated id)`; both `None` when unchanged.
macro_rules! update_or_insert_item {
    ($tx:expr, $feed_id:expr, $p:expr, $now:expr) => {{
        let (feed_id, p, now): (i64, &PreparedItem<'_>, i64) = ($feed_id, $p, $now);
        let language = p.language.is_some();
        let updated: Option<i64> = sqlx::query(sqlx::AssertSqlSafe(format!(
            "UPDATE items SET guid = $4, url = $5, title = $6, author = $7,
                    content = $8, summary = $9,
                    published_at = CASE WHEN $11 THEN published_at ELSE $10 END,
                    is_date_estimated =
                        CASE WHEN $11 THEN is_date_estimated ELSE FALSE END,
                    updated_at = $12, changed_at = $2, content_hash = $13,
                    enclosures = $14, categories = $15, thumbnail_url = $16{}
                 WHERE feed_id = $1 AND identity_key = $3 AND content_hash <> $13
                 RETURNING id",
            if language { ", language = $17" } else { "" }
        )))
        .bind_item(feed_id, p, now)
        .fetch_optional(&mut *$tx)
        .await?
        .map(|row| sqlx::Row::try_get(&row, 0))
        .transpose()?;
        let inserted: Option<i64> = match updated {
            Some(_) => None,
            None => sqlx::query(sqlx::AssertSqlSafe(insert_item_sql(language)))
                .bind_item(feed_id, p, now)
                .fetch_optional(&mut *$tx)
                .await?
                .map(|row| sqlx::Row::try_get(&row, 0))
                .transpose()?,
        };
        (inserted, updated)
    }};
}

/// Keeps alive, on the transaction `$tx`, the tombstones of feed `$feed_id` whose identities the
/// feed still lists (`$listed`), and removes the others once past [`TOMBSTONE_GRACE_SECONDS`]
/// when the feed has any (`$any`).
macro_rules! keep_listed_tombstones_on {
    ($tx:expr, $feed_id:expr, $listed:expr, $any:expr, $now:expr) => {{
        let (feed_id, listed, any, now): (i64, &[&str], bool, i64) =
            ($feed_id, $listed, $any, $now);
        for keys in listed.chunks(TOMBSTONES_TOUCHED_PER_STATEMENT) {
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
            touch.execute(&mut *$tx).await?;
        }
        if any {
            sqlx::query("DELETE FROM item_tombstones WHERE feed_id = $1 AND last_seen_at < $2")
                .bind(feed_id)
                .bind(now.saturating_sub(TOMBSTONE_GRACE_SECONDS))
                .execute(&mut *$tx)
                .await?;
        }
    }};
}

/// Writes on the transaction `$tx` what a fetch of feed `$feed_id` stores besides its items
/// (`$writes`: metadata, icon, favicon, WebSub discovery, raw body, outcome), first the feed's
/// language when `$language` (from [`Store::plan_writes`]) asks; evaluates to whether the
/// outcome was recorded (`true` when none was given).
macro_rules! write_fetch_extras_on {
    ($tx:expr, $feed_id:expr, $writes:expr, $now:expr, $language:expr) => {{
        let (feed_id, writes, now): (i64, &FetchWrites<'_>, i64) = ($feed_id, $writes, $now);
        // The feed's language follows its newest items' (issue 37) when some were written.
        if let Some(declared) = $language {
            crate::languages::refresh_feed_language_on!($tx, feed_id, declared);
        }
        if let Some(metadata) = &writes.metadata {
            crate::feeds::update_feed_metadata_on!(&mut *$tx, feed_id, metadata);
        }
        if let Some(icon_url) = writes.icon_url {
            crate::fetching::set_feed_icon_url_on!(&mut *$tx, feed_id, Some(icon_url));
        }
        if let Some(favicon) = writes.favicon {
            crate::fetching::save_favicon_on!(&mut *$tx, feed_id, favicon);
        }
        if let Some(websub) = writes.websub {
            crate::websub::record_websub_discovery_on!(
                &mut *$tx,
                feed_id,
                websub.found,
                websub.token,
                websub.secret,
                now
            );
        }
        match writes.body {
            Some(BodyWrite::Keep(body)) => {
                crate::fetching::save_feed_body_on!(&mut *$tx, feed_id, body);
            }
            Some(BodyWrite::Drop) => {
                crate::fetching::delete_feed_body_on!(&mut *$tx, feed_id)
            }
            None => {}
        }
        match writes.record {
            Some((owner, record)) => {
                crate::feeds::record_fetch_on!(&mut *$tx, feed_id, owner, record) > 0
            }
            None => true,
        }
    }};
}

/// Splits a fetch's prepared items by what they need: unchanged ones (same identity, same
/// content hash as `stored`) no write; the others a write, with their search index value made
/// here, before the write transaction, so that SQLite's single writer never waits for it. An
/// item that may carry a legacy key is always written, which moves it to its key.
fn item_writes<'a>(
    engine: Engine,
    stored: &HashMap<String, String>,
    prepared: Vec<PreparedItem<'a>>,
) -> (Vec<PreparedItem<'a>>, Vec<ItemWrite<'a>>) {
    // Unchanged items (same identity, same content hash) need no write; an item that
    // may carry a legacy key is always written, which moves it to its key.
    let (same, changed): (Vec<PreparedItem<'a>>, Vec<PreparedItem<'a>>) =
        prepared.into_iter().partition(|p| {
            p.legacy_key.is_none() && stored.get(&p.identity_key) == Some(&p.content_hash)
        });
    let writes_of_items: Vec<ItemWrite<'a>> = changed
        .into_iter()
        .map(|p| {
            let text = ItemText::new(
                p.item.title.as_deref(),
                p.item.content.as_deref(),
                p.item.summary.as_deref(),
            );
            ItemWrite {
                stored: stored.contains_key(&p.identity_key),
                index: text.index_value(engine),
                text,
                prepared: p,
            }
        })
        .collect();
    (same, writes_of_items)
}

/// Queues the new items with a link (`new_ids`) for their article page (F6) when a subscriber
/// asks for it: short ones (as `short` tells) in the `auto` mode when `auto_wanted` (the
/// feed's `auto` subscribers want them, see [`FullTextAuto`]), the others in `always` only.
/// Returns how many were queued.
async fn queue_articles<C: EngineWrites>(
    db: &mut C,
    feed_id: i64,
    now: i64,
    new_ids: &[(i64, &ItemWrite<'_>)],
    short: ShortText<'_>,
    auto_wanted: bool,
) -> Result<u64> {
    let (mut short_ids, mut long_ids) = (Vec::new(), Vec::new());
    let new_items = new_ids.iter().map(|(id, write)| (id, write.prepared.item));
    for (id, item) in new_items.filter(|(_, item)| item.url.is_some()) {
        if short(item) {
            short_ids.push(*id);
        } else {
            long_ids.push(*id);
        }
    }
    short_ids.sort_unstable();
    long_ids.sort_unstable();
    let short_mode = if auto_wanted {
        FullTextMode::Auto
    } else {
        FullTextMode::Always
    };
    let queued = db
        .queue_new_full_text(feed_id, now, &short_ids, short_mode.as_str())
        .await?;
    Ok(queued
        + db.queue_new_full_text(feed_id, now, &long_ids, FullTextMode::Always.as_str())
            .await?)
}

/// Queues a fetch's new items (`$new_ids`) on `$tx` as `$writes` asks and subscribers want,
/// counting them in `$written`: those with a link for their article page (F6), short ones in
/// the `auto` mode (by default only when a subscriber in `auto` reads the feed, so that no
/// backlog nobody opens is fetched) and the others in `always` only; then for their summaries
/// (F42).
macro_rules! queue_new_jobs_on {
    ($tx:expr, $feed_id:expr, $now:expr, $new_ids:expr, $writes:expr, $written:expr) => {{
        let (feed_id, now): (i64, i64) = ($feed_id, $now);
        $written.full_text_queued += match $writes.full_text {
            Some(short) => {
                let auto_wanted = match $writes.full_text_auto {
                    FullTextAuto::Short => true,
                    FullTextAuto::Read => match $new_ids.iter().map(|(id, _)| *id).min() {
                        Some(first_new) => {
                            crate::full_text::feed_is_read_on!($tx, feed_id, first_new)
                        }
                        None => false,
                    },
                };
                queue_articles(&mut *$tx, feed_id, now, $new_ids, short, auto_wanted).await?
            }
            None => 0,
        };
        if $writes.summaries && !$new_ids.is_empty() {
            $written.summaries_queued =
                crate::summaries::queue_new_summaries_on!(&mut *$tx, feed_id, now);
        }
    }};
}

/// Moves, on the transaction `$tx`, an item of feed `$feed_id` stored under its legacy
/// identity `$legacy` to its identity `$key` (its tombstone too, added to `$tombstones`),
/// unless an item of that identity exists already.
macro_rules! move_legacy_key_on {
    ($tx:expr, $feed_id:expr, $legacy:expr, $key:expr, $tombstones:expr) => {{
        let (feed_id, legacy, key): (i64, &str, &str) = ($feed_id, $legacy, $key);
        let tombstones: &mut HashSet<String> = $tombstones;
        if !tombstones.contains(key) && tombstones.contains(legacy) {
            sqlx::query(
                "UPDATE item_tombstones SET identity_key = $3
                 WHERE feed_id = $1 AND identity_key = $2",
            )
            .bind(feed_id)
            .bind(legacy)
            .bind(key)
            .execute(&mut *$tx)
            .await?;
            tombstones.insert(key.to_owned());
        }
        sqlx::query(
            "UPDATE items SET identity_key = $3
             WHERE feed_id = $1 AND identity_key = $2
               AND NOT EXISTS (SELECT 1 FROM items
                               WHERE feed_id = $1 AND identity_key = $3)",
        )
        .bind(feed_id)
        .bind(legacy)
        .bind(key)
        .execute(&mut *$tx)
        .await?;
    }};
}

/// The index values of the changed items `updated` that have a full article (`articles`, by
/// item id) or translations (`translations`, issue 37): their title, content, article and
/// translations' words, which the item's own text alone would drop from its row.
fn fuller_index_values(
    engine: Engine,
    updated: &[(i64, &ItemWrite<'_>)],
    articles: &HashMap<i64, String>,
    translations: &HashMap<i64, Vec<TranslationText>>,
) -> HashMap<i64, String> {
    let mut fuller = HashMap::new();
    for (id, write) in updated {
        let article = articles.get(id);
        let translated = translations.get(id);
        if article.is_some() || translated.is_some() {
            let item = write.prepared.item;
            fuller.insert(
                *id,
                item_index_value(
                    engine,
                    item.title.as_deref(),
                    item.content.as_deref(),
                    item.summary.as_deref(),
                    article.map(String::as_str),
                    translated.map_or(&[][..], Vec::as_slice),
                ),
            );
        }
    }
    fuller
}

impl Store {
    /// The writes a fetch's `prepared` items need ([`item_writes`], after reading the stored
    /// content hashes), each with its language decided ([`Store::assign_languages`]). The
    /// third value asks for the feed's language to be refreshed after the writes: `Some` of
    /// the language the fetch declares for the feed (perhaps none), or `None` when no item is
    /// written or the schema has no languages.
    #[allow(clippy::type_complexity)]
    async fn plan_writes<'a, 'w>(
        &self,
        feed_id: i64,
        prepared: Vec<PreparedItem<'a>>,
        writes: &FetchWrites<'w>,
    ) -> Result<(
        Vec<PreparedItem<'a>>,
        Vec<ItemWrite<'a>>,
        Option<Option<&'w str>>,
    )> {
        let stored = self.stored_content_hashes(feed_id, &prepared).await?;
        let (same, mut writes_of_items) = item_writes(self.engine(), &stored, prepared);
        let declared = writes.metadata.as_ref().and_then(|m| m.language);
        self.assign_languages(feed_id, &mut writes_of_items, declared)
            .await?;
        let refresh = !writes_of_items.is_empty() && self.languages_ready().await;
        Ok((same, writes_of_items, refresh.then_some(declared)))
    }

    /// Decides the language of each item to write (issue 37) from its title and text, its
    /// own declaration and the feed's (`declared`; without one, the feed's stored language,
    /// read only when an item's text cannot tell alone). Runs before the write transaction.
    async fn assign_languages(
        &self,
        feed_id: i64,
        writes: &mut [ItemWrite<'_>],
        declared: Option<&str>,
    ) -> Result<()> {
        if writes.is_empty() || !self.languages_ready().await {
            return Ok(());
        }
        let inputs: Vec<ItemLanguageInput<'_>> = writes
            .iter()
            .map(|w| ItemLanguageInput {
                title: w.prepared.item.title.as_deref(),
                body: &w.text.body,
                declared: w.prepared.item.language.as_deref(),
            })
            .collect();
        let guesses = crate::languages::guesses(&inputs);
        let stored = match declared {
            None if crate::languages::needs_context(&guesses) => {
                self.stored_feed_language(feed_id).await?
            }
            _ => None,
        };
        let languages = batch_languages(&inputs, &guesses, declared.or(stored.as_deref()));
        for (write, language) in writes.iter_mut().zip(languages) {
            write.prepared.language = Some(language);
        }
        Ok(())
    }

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
    /// statement, and new ones are inserted many rows per statement (on PostgreSQL all in
    /// one, with their search index rows and tag jobs).
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
        Ok(self
            .store_fetch(feed_id, items, now, &FetchWrites::default())
            .await?
            .counts)
    }

    /// Stores a parsed fetch of feed `feed_id` in one transaction: its items as
    /// [`Store::upsert_items`] does, then what `writes` holds (the feed's metadata and icon
    /// URL, its raw body, the new items' full-text queueing, the fetch's outcome and the
    /// release of its lease). One commit per fetch instead of one per write: on PostgreSQL
    /// each commit waits for the disk, and a feed's writes were five of them.
    pub async fn store_fetch(
        &self,
        feed_id: i64,
        items: &[NewItem],
        now: i64,
        writes: &FetchWrites<'_>,
    ) -> Result<FetchWritten> {
        // Control characters are removed before the identity is computed, so that a NUL in
        // a feed neither fails the write (PostgreSQL) nor makes an item differ by engine.
        let cleaned: Vec<std::borrow::Cow<'_, NewItem>> = items.iter().map(clean_item).collect();
        let mut prepared: Vec<PreparedItem<'_>> = cleaned.iter().map(|c| prepare(c)).collect();
        // A sorted, de-duplicated batch takes row locks in the same order as any concurrent
        // batch of the same feed (no deadlocks) and never touches one row twice.
        prepared.sort_by(|a, b| a.identity_key.cmp(&b.identity_key));
        prepared.dedup_by(|a, b| a.identity_key == b.identity_key);
        let engine = self.engine();
        let (same, writes_of_items, language) = self.plan_writes(feed_id, prepared, writes).await?;
        let rules = (self.rules_ready().await, &*self.rule_cache);
        let translations_ready = self.translations_ready().await;
        let mut written = FetchWritten {
            recorded: true,
            ..FetchWritten::default()
        };
        in_tx!(self, postgres_begin = pg_begin_feed_items(feed_id), |tx| {
            let counts = &mut written.counts;
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
            // New items go in multi-row inserts; the others (stored, or maybe stored under a
            // legacy key) one by one.
            let mut new_items: Vec<&ItemWrite<'_>> = Vec::new();
            let mut one_by_one: Vec<&ItemWrite<'_>> = Vec::new();
            for write in &writes_of_items {
                let p = &write.prepared;
                if let Some(legacy) = &p.legacy_key {
                    move_legacy_key_on!(tx, feed_id, legacy, &p.identity_key, &mut tombstones);
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
            // The items of one fetch arrive together; their sync arrival numbers (migration
            // 30) go oldest published first, so that "newest first" among them is by date.
            // PostgreSQL's statement trigger numbers them so; SQLite's row trigger numbers
            // rows as they are inserted, so they go in that order (one writer at a time: the
            // identity order that keeps PostgreSQL's concurrent batches from deadlocking is
            // not needed there).
            if engine == crate::Engine::Sqlite {
                new_items.sort_by_key(|w| w.prepared.item.published.unwrap_or(now));
            }
            // The new items, with their index rows and tag jobs; (id, item) of each inserted.
            let inserted = tx.insert_new_items(feed_id, now, &new_items).await?;
            let mut new_ids: Vec<(i64, &ItemWrite<'_>)> = Vec::new();
            for write in new_items {
                match inserted.get(&write.prepared.identity_key) {
                    Some(&id) => {
                        counts.inserted += 1;
                        new_ids.push((id, write));
                    }
                    // Stored meanwhile by a concurrent upsert: updated when it differs.
                    None => one_by_one.push(write),
                }
            }
            // (item id, index value) of the items written one by one.
            let mut indexed: Vec<(i64, &str)> = Vec::new();
            // Stored items that changed: their full articles (F6) are indexed with them.
            let mut updated: Vec<(i64, &ItemWrite<'_>)> = Vec::new();
            for write in one_by_one {
                match update_or_insert_item!(tx, feed_id, &write.prepared, now) {
                    (Some(id), _) => {
                        counts.inserted += 1;
                        indexed.push((id, write.index.as_str()));
                        new_ids.push((id, write));
                    }
                    (None, Some(id)) => {
                        counts.updated += 1;
                        indexed.push((id, write.index.as_str()));
                        updated.push((id, write));
                    }
                    (None, None) => counts.unchanged += 1,
                }
            }
            // A changed item keeps its full article and its translations, so its index row
            // keeps their words: read after the updates, which a concurrent save of an
            // article or a translation waits for (or waited on), so that a just-saved one is
            // seen. New items have neither.
            let mut fuller: HashMap<i64, String> = HashMap::new();
            if !updated.is_empty() {
                let ids: Vec<i64> = updated.iter().map(|(id, _)| *id).collect();
                let articles = full_texts_of!(tx, &ids);
                let translations = if translations_ready {
                    translations_of!(tx, &ids)
                } else {
                    HashMap::new()
                };
                fuller = fuller_index_values(engine, &updated, &articles, &translations);
            }
            for (id, value) in &mut indexed {
                if let Some(fuller_value) = fuller.get(id) {
                    *value = fuller_value.as_str();
                }
            }
            // Their search index rows, in the same transaction.
            write_index_rows!(tx, engine, &indexed);
            // They wait for their tags (F41), queued in the same transaction.
            let changed_ids: Vec<i64> = indexed.iter().map(|(id, _)| *id).collect();
            crate::tags::queue_tag_jobs!(tx, &changed_ids, now);
            counts.suppressed = listed_tombstones.len() as u64;
            keep_listed_tombstones_on!(
                tx,
                feed_id,
                &listed_tombstones,
                !tombstones.is_empty(),
                now
            );
            // Each subscriber's rules (issue 33), then copies in other feeds (issue 35).
            written.rules_applied =
                crate::rules::apply_rules_on!(tx, rules, feed_id, &new_ids, now);
            written.clustered =
                crate::duplicates::cluster_new_items_on!(tx, self, feed_id, &new_ids, now);
            // Article pages (F6) and summaries (F42), when subscribers want them.
            queue_new_jobs_on!(tx, feed_id, now, &new_ids, writes, written);
            // What the feed says about itself, its hub, its raw body and the fetch's outcome
            // come last: the feed's rows are locked after its items, as everywhere else.
            written.recorded = write_fetch_extras_on!(tx, feed_id, writes, now, language);
        });
        Ok(written)
    }

    /// The content hashes stored for the identities of `items` in feed `feed_id`, by identity:
    /// one query on PostgreSQL (an array of identities), a few of fixed shapes on SQLite.
    async fn stored_content_hashes(
        &self,
        feed_id: i64,
        items: &[PreparedItem<'_>],
    ) -> Result<HashMap<String, String>> {
        let mut stored = HashMap::new();
        if items.is_empty() {
            return Ok(stored);
        }
        if let crate::Pools::Postgres(pool) = &*self.pools {
            let keys: Vec<&str> = items.iter().map(|p| p.identity_key.as_str()).collect();
            let mut connection = self.postgres_connection(pool).await?;
            let rows: Vec<(String, String)> = sqlx::query_as(
                "SELECT identity_key, content_hash FROM items
                 WHERE feed_id = $1 AND identity_key = ANY($2)",
            )
            .bind(feed_id)
            .bind(keys)
            .fetch_all(&mut *connection)
            .await?;
            stored.extend(rows);
            return Ok(stored);
        }
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
        let language = self.language_column().await;
        let sql = format!(
            "SELECT i.id, i.feed_id, i.guid, i.url, i.title,
                    i.author, i.content, i.summary, i.published_at, i.is_date_estimated,
                    i.updated_at, i.fetched_at, i.enclosures, i.categories,
                    COALESCE(r.is_read,
                             s.read_before IS NOT NULL AND i.published_at <= s.read_before),
                    COALESCE(r.is_starred, FALSE), i.thumbnail_url, {language}
             FROM items i
             JOIN subscriptions s ON s.feed_id = i.feed_id AND s.user_id = $1
             LEFT JOIN item_states r ON r.item_id = i.id AND r.user_id = $1
             WHERE i.id = $2"
        );
        let row = with_db!(self, read, |db| {
            sqlx::query(sqlx::AssertSqlSafe(sql.as_str()))
                .bind(user_id)
                .bind(item_id)
                .fetch_optional(db)
                .await?
                .map(|row| decode_item(&row))
                .transpose()?
        });
        row.map(item_from_row).ok_or(StoreError::NotFound("item"))
    }

    /// The item of `feed_id` whose guid or link is one of `keys`, as another reader identified
    /// it (an import matches the other reader's items to ours this way); the guid is tried
    /// first, then the link. `None` when the feed has no such item.
    pub async fn find_feed_item(&self, feed_id: i64, keys: &[&str]) -> Result<Option<i64>> {
        for key in keys.iter().filter(|key| !key.is_empty()) {
            let found: Option<i64> = with_db!(self, read, |db| {
                sqlx::query_scalar(
                    "SELECT id FROM items WHERE feed_id = $1 AND (guid = $2 OR url = $2)
                     ORDER BY CASE WHEN guid = $2 THEN 0 ELSE 1 END, id LIMIT 1",
                )
                .bind(feed_id)
                .bind(*key)
                .fetch_optional(db)
                .await?
            });
            if found.is_some() {
                return Ok(found);
            }
        }
        Ok(None)
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
        self.set_item_state_as_of(user_id, item_id, is_read, is_starred, None)
            .await
    }

    /// [`Store::set_item_state`] for a mark made at `made_at` (Unix seconds) and sent later,
    /// as by an app that was offline: when the item's state changed after that time (on
    /// another device, say), the later change wins and this one is dropped. Answers the state
    /// the item has afterwards either way.
    pub async fn set_item_state_as_of(
        &self,
        user_id: i64,
        item_id: i64,
        is_read: Option<bool>,
        is_starred: Option<bool>,
        made_at: Option<i64>,
    ) -> Result<ItemState> {
        let state = self
            .set_one_item_state(user_id, item_id, is_read, is_starred, made_at)
            .await?;
        // A read or unread mark reaches the story's copies in other feeds (issue 35) when
        // the user reads by cluster; a star stays on the copy starred.
        if is_read.is_some() {
            for copy in self.cluster_copies(user_id, &[item_id]).await? {
                self.set_one_item_state(user_id, copy, is_read, None, made_at)
                    .await?;
            }
        }
        Ok(state)
    }

    /// [`Store::set_item_state_as_of`] for this one item, its copies left as they are.
    async fn set_one_item_state(
        &self,
        user_id: i64,
        item_id: i64,
        is_read: Option<bool>,
        is_starred: Option<bool>,
        made_at: Option<i64>,
    ) -> Result<ItemState> {
        // The state's time is when the mark was made (never later than now, whatever the
        // sender's clock says), so that marks made offline one after the other all act when
        // they arrive together, and a later change elsewhere still wins over them.
        let now = made_at.map_or(crate::unix_now(), |t| t.min(crate::unix_now()));
        let made_at = made_at.unwrap_or(i64::MAX);
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
                let written = sqlx::query_as::<_, (bool, bool)>(
                    "INSERT INTO item_states (user_id, item_id, is_read, is_starred, updated_at)
                     VALUES ($1, $2, COALESCE($3, $6), COALESCE($4, FALSE), $5)
                     ON CONFLICT (user_id, item_id) DO UPDATE SET
                        is_read = COALESCE($3, item_states.is_read),
                        is_starred = COALESCE($4, item_states.is_starred),
                        updated_at = $5
                     WHERE item_states.updated_at <= $7
                     RETURNING is_read, is_starred",
                )
                .bind(user_id)
                .bind(item_id)
                .bind(is_read)
                .bind(is_starred)
                .bind(now)
                .bind(read_by_watermark)
                .bind(made_at)
                .fetch_optional(&mut *tx)
                .await?;
                match written {
                    Some(state) => Some(state),
                    // Changed after the mark was made: the later change stands.
                    None => Some(
                        sqlx::query_as::<_, (bool, bool)>(
                            "SELECT is_read, is_starred FROM item_states
                             WHERE user_id = $1 AND item_id = $2",
                        )
                        .bind(user_id)
                        .bind(item_id)
                        .fetch_one(&mut *tx)
                        .await?,
                    ),
                }
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
    /// Decodes the 18 item columns `Store::item` selects, in its order.
    pub(crate) decode_item -> ItemRow {
    (0, 1, 2, 3, 4), (5, 6, 7, 8, 9), (10, 11, 12, 13, 14, 15), (16, 17)
});

pub(crate) fn item_from_row(row: ItemRow) -> Item {
    let ((id, feed_id, guid, url, title), middle, last, (thumbnail_url, language)) = row;
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
        language,
        is_read,
        is_starred,
    }
}

fn needs_cleaning(text: Option<&str>) -> bool {
    text.is_some_and(|t| t.chars().any(is_stripped_char))
}

fn clean(text: &Option<String>) -> Option<String> {
    text.as_deref().map(|t| strip_control_chars(t).into_owned())
}

/// An item with the control characters removed from every text field; borrowed when it holds
/// none (the usual case, which costs one scan and no copy).
pub(crate) fn clean_item(item: &NewItem) -> Cow<'_, NewItem> {
    let dirty = [
        &item.guid,
        &item.url,
        &item.title,
        &item.author,
        &item.content,
        &item.summary,
        &item.thumbnail_url,
        &item.language,
    ]
    .into_iter()
    .any(|field| needs_cleaning(field.as_deref()))
        || item.categories.iter().any(|c| needs_cleaning(Some(c)))
        || item
            .enclosures
            .iter()
            .any(|e| needs_cleaning(Some(&e.url)) || needs_cleaning(e.mime_type.as_deref()));
    if !dirty {
        return Cow::Borrowed(item);
    }
    Cow::Owned(NewItem {
        guid: clean(&item.guid),
        url: clean(&item.url),
        title: clean(&item.title),
        author: clean(&item.author),
        content: clean(&item.content),
        summary: clean(&item.summary),
        thumbnail_url: clean(&item.thumbnail_url),
        language: clean(&item.language),
        published: item.published,
        updated: item.updated,
        enclosures: item
            .enclosures
            .iter()
            .map(|e| Enclosure {
                url: strip_control_chars(&e.url).into_owned(),
                mime_type: clean(&e.mime_type),
                length: e.length,
            })
            .collect(),
        categories: item
            .categories
            .iter()
            .map(|c| strip_control_chars(c).into_owned())
            .collect(),
        identity_key: item.identity_key.clone(),
    })
}
