//! Bookmarks (F34): a snapshot of an item taken when it is bookmarked, kept when the item or
//! its feed is deleted (the item reference is then set to NULL by the foreign key).

use crate::{Result, Store, StoreError, in_tx, unix_now, with_db};

/// A snapshot to keep as a bookmark without an item: a starred article imported from another
/// reader whose feed no longer exists here (F34, F37).
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct DetachedBookmark {
    /// The article's link; with the title, what makes the bookmark the same on a second import.
    pub url: Option<String>,
    /// Its title.
    pub title: Option<String>,
    /// Its content, as the other reader stored it (sanitized by whoever shows it).
    pub content: Option<String>,
    /// The name of the feed it came from.
    pub feed_title: Option<String>,
    /// Its publication time (Unix seconds).
    pub published_at: Option<i64>,
}

/// A bookmark with its snapshot.
#[derive(Debug, Clone, PartialEq, Eq, serde::Serialize)]
pub struct Bookmark {
    /// The bookmark's id.
    pub id: i64,
    /// The item it was taken from, while that item exists.
    pub item_id: Option<i64>,
    /// The item's link.
    pub url: Option<String>,
    /// The item's title.
    pub title: Option<String>,
    /// The item's sanitized content (its summary when it had no content).
    pub content: Option<String>,
    /// The feed's name as the user saw it.
    pub feed_title: Option<String>,
    /// The item's publication time (Unix seconds).
    pub published_at: Option<i64>,
    /// When the bookmark was made.
    pub created_at: i64,
    /// The item's language, a BCP 47 tag, as it was when bookmarked; for a snapshot from
    /// another reader, detected from its title and text. `None` when nothing told.
    pub language: Option<String>,
}

const BOOKMARK_COLUMNS: &str =
    "id, item_id, url, title, content, feed_title, published_at, created_at, language";

type BookmarkRow = (
    i64,
    Option<i64>,
    Option<String>,
    Option<String>,
    Option<String>,
    Option<String>,
    Option<i64>,
    i64,
    Option<String>,
);

fn bookmark_from_row(row: BookmarkRow) -> Bookmark {
    let (id, item_id, url, title, content, feed_title, published_at, created_at, language) = row;
    Bookmark {
        id,
        item_id,
        url,
        title,
        content,
        feed_title,
        published_at,
        created_at,
        language,
    }
}

/// The language of a snapshot that comes without one (a starred article from another
/// reader): what its title and the plain text of its content say.
fn detected_language(snapshot: &DetachedBookmark) -> Option<String> {
    use tidings_text::language;
    let body = snapshot
        .content
        .as_deref()
        .and_then(tidings_feed::text::html_to_text)
        .unwrap_or_default();
    let text = language::item_text(snapshot.title.as_deref(), &body);
    language::resolve(language::detect(&text), None, None)
}

impl Store {
    /// Bookmarks an item of one of the user's subscriptions, snapshotting it. Bookmarking an
    /// item twice returns the first bookmark; the flag says whether this call created it.
    pub async fn create_bookmark(&self, user_id: i64, item_id: i64) -> Result<(Bookmark, bool)> {
        let now = unix_now();
        let created: Option<i64> = in_tx!(self, |tx| {
            let visible: Option<i64> = sqlx::query_scalar(
                "SELECT i.id FROM items i
                 JOIN subscriptions s ON s.feed_id = i.feed_id AND s.user_id = $1
                 WHERE i.id = $2",
            )
            .bind(user_id)
            .bind(item_id)
            .fetch_optional(&mut *tx)
            .await?;
            visible.ok_or(StoreError::NotFound("item"))?;
            sqlx::query_scalar(
                "INSERT INTO bookmarks
                    (user_id, item_id, url, title, content, feed_title, published_at, created_at,
                     language)
                 SELECT $1, i.id, i.url, i.title, COALESCE(i.content, i.summary),
                        COALESCE(s.title, f.title, f.url), i.published_at, $3, i.language
                 FROM items i
                 JOIN subscriptions s ON s.feed_id = i.feed_id AND s.user_id = $1
                 JOIN feeds f ON f.id = i.feed_id
                 WHERE i.id = $2
                 ON CONFLICT (user_id, item_id) WHERE item_id IS NOT NULL DO NOTHING
                 RETURNING id",
            )
            .bind(user_id)
            .bind(item_id)
            .bind(now)
            .fetch_optional(&mut *tx)
            .await?
        });
        match created {
            Some(id) => Ok((self.bookmark(user_id, id).await?, true)),
            None => {
                let existing: Option<BookmarkRow> = with_db!(self, read, |db| {
                    sqlx::query_as(sqlx::AssertSqlSafe(format!(
                        "SELECT {BOOKMARK_COLUMNS} FROM bookmarks WHERE user_id = $1 AND item_id = $2"
                    )))
                    .bind(user_id)
                    .bind(item_id)
                    .fetch_optional(db)
                    .await?
                });
                let existing = existing.ok_or(StoreError::NotFound("bookmark"))?;
                Ok((bookmark_from_row(existing), false))
            }
        }
    }

    /// One of the user's bookmarks.
    pub async fn bookmark(&self, user_id: i64, id: i64) -> Result<Bookmark> {
        let row: Option<BookmarkRow> = with_db!(self, read, |db| {
            sqlx::query_as(sqlx::AssertSqlSafe(format!(
                "SELECT {BOOKMARK_COLUMNS} FROM bookmarks WHERE user_id = $1 AND id = $2"
            )))
            .bind(user_id)
            .bind(id)
            .fetch_optional(db)
            .await?
        });
        row.map(bookmark_from_row)
            .ok_or(StoreError::NotFound("bookmark"))
    }

    /// The user's bookmarks, newest first.
    pub async fn list_bookmarks(&self, user_id: i64) -> Result<Vec<Bookmark>> {
        let rows: Vec<BookmarkRow> = with_db!(self, read, |db| {
            sqlx::query_as(sqlx::AssertSqlSafe(format!(
                "SELECT {BOOKMARK_COLUMNS} FROM bookmarks WHERE user_id = $1
                 ORDER BY created_at DESC, id DESC"
            )))
            .bind(user_id)
            .fetch_all(db)
            .await?
        });
        Ok(rows.into_iter().map(bookmark_from_row).collect())
    }

    /// Deletes one of the user's bookmarks.
    pub async fn delete_bookmark(&self, user_id: i64, id: i64) -> Result<()> {
        let deleted = with_db!(self, write, |db| {
            sqlx::query("DELETE FROM bookmarks WHERE user_id = $1 AND id = $2")
                .bind(user_id)
                .bind(id)
                .execute(db)
                .await?
                .rows_affected()
        });
        if deleted == 0 {
            return Err(StoreError::NotFound("bookmark"));
        }
        Ok(())
    }

    /// Keeps a snapshot that belongs to no item as a bookmark, unless the user already has a
    /// bookmark with the same link and title (so that importing the same history twice adds
    /// nothing). The flag says whether this call created it.
    pub async fn create_detached_bookmark(
        &self,
        user_id: i64,
        snapshot: &DetachedBookmark,
    ) -> Result<(Bookmark, bool)> {
        let now = unix_now();
        let language = detected_language(snapshot);
        let (id, created): (i64, bool) = in_tx!(self, |tx| {
            // IS NOT DISTINCT FROM on both engines ("IS" in SQLite, spelled the standard way):
            // a snapshot without a link still matches its earlier copy.
            let existing: Option<i64> = sqlx::query_scalar(
                "SELECT id FROM bookmarks WHERE user_id = $1
                 AND url IS NOT DISTINCT FROM $2 AND title IS NOT DISTINCT FROM $3
                 ORDER BY id LIMIT 1",
            )
            .bind(user_id)
            .bind(&snapshot.url)
            .bind(&snapshot.title)
            .fetch_optional(&mut *tx)
            .await?;
            match existing {
                Some(id) => (id, false),
                None => {
                    let id: i64 = sqlx::query_scalar(
                        "INSERT INTO bookmarks
                            (user_id, item_id, url, title, content, feed_title, published_at,
                             created_at, language)
                         VALUES ($1, NULL, $2, $3, $4, $5, $6, $7, $8)
                         RETURNING id",
                    )
                    .bind(user_id)
                    .bind(&snapshot.url)
                    .bind(&snapshot.title)
                    .bind(&snapshot.content)
                    .bind(&snapshot.feed_title)
                    .bind(snapshot.published_at)
                    .bind(now)
                    .bind(&language)
                    .fetch_one(&mut *tx)
                    .await?;
                    (id, true)
                }
            }
        });
        Ok((self.bookmark(user_id, id).await?, created))
    }
}
