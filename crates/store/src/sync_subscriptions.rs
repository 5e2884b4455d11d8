//! The user's subscriptions as the sync APIs list them (the Google Reader API's
//! `subscription/list`, asked on every sync): their text kept in one buffer, each
//! subscription's values borrowed from it, so that a list of 500 subscriptions costs a few
//! allocations rather than half a dozen a subscription (a `String` a text value, and a lowered
//! title to sort by: the allocator was a fifth of the call's CPU on PostgreSQL).

use std::borrow::Cow;
use std::ops::Range;

use crate::{Pools, Result, Store, StoreError};

/// A subscription as the sync APIs list it: what naming and showing it takes, with its
/// group's name; its text borrowed from the [`SyncSubscriptions`] it comes from.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct SyncSubscription<'a> {
    /// The subscription's id.
    pub id: i64,
    /// The feed's id.
    pub feed_id: i64,
    /// Its group.
    pub group_id: i64,
    /// That group's name.
    pub group_name: &'a str,
    /// The user's title for the feed.
    pub custom_title: Option<&'a str>,
    /// The feed's own title.
    pub feed_title: Option<&'a str>,
    /// The feed's URL.
    pub feed_url: &'a str,
    /// The feed's site.
    pub site_url: Option<&'a str>,
    /// When the user subscribed (Unix seconds).
    pub created_at: i64,
}

impl<'a> SyncSubscription<'a> {
    /// The title the lists show: the user's, else the feed's, else its URL.
    pub fn title(&self) -> &'a str {
        self.custom_title
            .or(self.feed_title)
            .unwrap_or(self.feed_url)
    }
}

/// The user's subscriptions in the order of [`Store::sync_subscriptions`], all their text in
/// one buffer.
#[derive(Debug, Clone, Default)]
pub struct SyncSubscriptions {
    /// Every text value of every subscription, and their sort keys, one after the other.
    text: String,
    entries: Vec<Entry>,
}

/// One subscription of a [`SyncSubscriptions`]: its numbers, and where its text values (and
/// its sort key) sit in the buffer.
#[derive(Debug, Clone)]
struct Entry {
    id: i64,
    feed_id: i64,
    group_id: i64,
    created_at: i64,
    group_name: Range<usize>,
    custom_title: Option<Range<usize>>,
    feed_title: Option<Range<usize>>,
    feed_url: Range<usize>,
    site_url: Option<Range<usize>>,
    key: Range<usize>,
}

impl SyncSubscriptions {
    /// A list of these subscriptions, in the order of `key` (text, by byte) and then id;
    /// without a key, the title lowered (Unicode), the order PostgreSQL's listing has in a
    /// database with the C.UTF-8 collation. Also what tests build lists with.
    pub fn from_list<'a>(
        subscriptions: impl IntoIterator<Item = (SyncSubscription<'a>, Option<&'a str>)>,
    ) -> Self {
        let mut list = Self::default();
        for (subscription, key) in subscriptions {
            list.push(subscription, key);
        }
        list.sort();
        list
    }

    /// How many subscriptions the list holds.
    pub fn len(&self) -> usize {
        self.entries.len()
    }

    /// Whether the list is empty.
    pub fn is_empty(&self) -> bool {
        self.entries.is_empty()
    }

    /// The subscriptions, in order.
    pub fn iter(&self) -> impl ExactSizeIterator<Item = SyncSubscription<'_>> {
        self.entries.iter().map(|e| {
            let text = |range: &Range<usize>| self.text.get(range.clone()).unwrap_or_default();
            SyncSubscription {
                id: e.id,
                feed_id: e.feed_id,
                group_id: e.group_id,
                group_name: text(&e.group_name),
                custom_title: e.custom_title.as_ref().map(text),
                feed_title: e.feed_title.as_ref().map(text),
                feed_url: text(&e.feed_url),
                site_url: e.site_url.as_ref().map(text),
                created_at: e.created_at,
            }
        })
    }

    /// Copies `value` into the buffer.
    fn keep(&mut self, value: &str) -> Range<usize> {
        let start = self.text.len();
        self.text.push_str(value);
        start..self.text.len()
    }

    /// Adds a subscription, with its sort key, or with its title lowered as the key.
    fn push(&mut self, s: SyncSubscription<'_>, key: Option<&str>) {
        let group_name = self.keep(s.group_name);
        let custom_title = s.custom_title.map(|t| self.keep(t));
        let feed_title = s.feed_title.map(|t| self.keep(t));
        let feed_url = self.keep(s.feed_url);
        let site_url = s.site_url.map(|t| self.keep(t));
        let key = match key {
            Some(key) => self.keep(key),
            // Most titles are ASCII: lowered in place, without a `String` of their own. The
            // same as `to_lowercase` for them; other titles take Unicode's rules (a final
            // sigma, letters that lower to two).
            None if s.title().is_ascii() => {
                let start = self.text.len();
                self.text.push_str(s.title());
                self.text[start..].make_ascii_lowercase();
                start..self.text.len()
            }
            None => self.keep(&s.title().to_lowercase()),
        };
        self.entries.push(Entry {
            id: s.id,
            feed_id: s.feed_id,
            group_id: s.group_id,
            created_at: s.created_at,
            group_name,
            custom_title,
            feed_title,
            feed_url,
            site_url,
            key,
        });
    }

    /// Puts the subscriptions in the order of their keys (bytes, which is code point order),
    /// then ids.
    fn sort(&mut self) {
        let text = self.text.as_bytes();
        let key = |e: &Entry| text.get(e.key.clone()).unwrap_or_default();
        self.entries
            .sort_unstable_by(|a, b| (key(a), a.id).cmp(&(key(b), b.id)));
    }
}

/// The columns of [`Store::sync_subscriptions`], in the order of [`SyncSubscription`]'s
/// fields.
const COLUMNS: &str = "s.id, s.feed_id, s.group_id, COALESCE(g.name, ''), s.title, f.title, \
                       f.url, f.site_url, s.created_at";

/// The user's (`$1`) subscriptions with their feeds and groups.
const FROM: &str = "FROM subscriptions s
                    JOIN feeds f ON f.id = s.feed_id
                    LEFT JOIN feed_groups g ON g.id = s.group_id
                    WHERE s.user_id = $1";

/// A subscription of SQLite's JSON list: its sort key and its columns. Text without
/// escapes is borrowed from the JSON.
#[derive(serde::Deserialize)]
struct JsonRow<'a>(
    #[serde(borrow)] Cow<'a, str>,
    #[serde(borrow)] JsonSubscription<'a>,
);

/// The columns of a [`JsonRow`], in the order of [`COLUMNS`].
#[derive(serde::Deserialize)]
struct JsonSubscription<'a>(
    i64,
    i64,
    i64,
    #[serde(borrow)] Cow<'a, str>,
    #[serde(borrow)] Option<Cow<'a, str>>,
    #[serde(borrow)] Option<Cow<'a, str>>,
    #[serde(borrow)] Cow<'a, str>,
    #[serde(borrow)] Option<Cow<'a, str>>,
    i64,
);

impl Store {
    /// The user's subscriptions as the sync APIs list them, by title, then id: on PostgreSQL
    /// the titles lowered (Unicode) and compared by code point, the order of
    /// [`Store::list_subscriptions`] in a database with the C.UTF-8 collation; in another
    /// locale titles that differ in accents or punctuation may come in another order than
    /// the web UI's (apps sort by their own rules, `sortid` or title). SQLite lowers ASCII
    /// letters only and compares bytes, as its listing does. One statement with only these
    /// columns: the full listing also reads each feed's fetch state and icon, which an app's
    /// subscription list (500 feeds, asked on every sync) never shows.
    pub async fn sync_subscriptions(&self, user_id: i64) -> Result<SyncSubscriptions> {
        match &*self.pools {
            Pools::Postgres(pool) => {
                let mut connection = self.postgres_connection(pool).await?;
                postgres_subscriptions(&mut connection, user_id).await
            }
            Pools::Sqlite { reader, .. } => sqlite_subscriptions(reader, user_id).await,
        }
    }
}

/// [`Store::sync_subscriptions`] on PostgreSQL: a row a subscription (sqlx reads PostgreSQL's
/// rows in the request's task, with no hand-offs, and `json_build_array` would write every
/// value as text: measured, an aggregate cost ~0.2 ms a request more), each copied into the
/// list as it arrives and dropped. The rows are put in order here, not by PostgreSQL: its sort
/// (each row's nine columns copied into the sort, the lowered titles compared through the
/// collation) and `LOWER` were ~0.4 ms of the backend's 1.1 ms a request for 500
/// subscriptions.
async fn postgres_subscriptions(
    connection: &mut sqlx::PgConnection,
    user_id: i64,
) -> Result<SyncSubscriptions> {
    use futures_util::TryStreamExt;
    use sqlx::Row;
    let sql = format!("SELECT {COLUMNS} {FROM}");
    let mut rows = sqlx::query(sqlx::AssertSqlSafe(sql))
        .bind(user_id)
        .fetch(connection);
    let mut list = SyncSubscriptions::default();
    // The statement's own columns, whose types are fixed: read without sqlx's type check of
    // each value (a tenth of the reading), decoded all the same.
    while let Some(row) = rows.try_next().await? {
        let subscription = SyncSubscription {
            id: row.try_get_unchecked(0)?,
            feed_id: row.try_get_unchecked(1)?,
            group_id: row.try_get_unchecked(2)?,
            group_name: row.try_get_unchecked(3)?,
            custom_title: row.try_get_unchecked(4)?,
            feed_title: row.try_get_unchecked(5)?,
            feed_url: row.try_get_unchecked(6)?,
            site_url: row.try_get_unchecked(7)?,
            created_at: row.try_get_unchecked(8)?,
        };
        list.push(subscription, None);
    }
    list.sort();
    Ok(list)
}

/// [`Store::sync_subscriptions`] on SQLite: the list as one row, a JSON array of one array a
/// subscription, each with its sort key (with a row a subscription, sqlx's SQLite
/// driver copied each of 500 rows' nine values and handed the row from its worker thread to
/// the caller, about half of the call's CPU). Put in order here: SQLite's aggregate with an
/// `ORDER BY` inserts every row into a b-tree of its own first (a tenth of the call's CPU),
/// and its default collation compares bytes, as this does.
async fn sqlite_subscriptions(
    reader: &sqlx::SqlitePool,
    user_id: i64,
) -> Result<SyncSubscriptions> {
    let sql = format!(
        "SELECT json_group_array(json_array(LOWER(COALESCE(s.title, f.title, f.url)), \
         json_array({COLUMNS}))) {FROM}"
    );
    let json: Option<String> = sqlx::query_scalar(sqlx::AssertSqlSafe(sql))
        .bind(user_id)
        .fetch_one(reader)
        .await?;
    let rows: Vec<JsonRow<'_>> =
        serde_json::from_str(json.as_deref().unwrap_or("[]")).map_err(|error| {
            StoreError::Database(sqlx::Error::Decode(
                format!("the subscription list does not read: {error}").into(),
            ))
        })?;
    let mut list = SyncSubscriptions::default();
    for JsonRow(key, s) in &rows {
        let subscription = SyncSubscription {
            id: s.0,
            feed_id: s.1,
            group_id: s.2,
            group_name: &s.3,
            custom_title: s.4.as_deref(),
            feed_title: s.5.as_deref(),
            feed_url: &s.6,
            site_url: s.7.as_deref(),
            created_at: s.8,
        };
        list.push(subscription, Some(key));
    }
    list.sort();
    Ok(list)
}

#[cfg(test)]
mod tests {
    use super::*;

    fn subscription<'a>(id: i64, title: Option<&'a str>, url: &'a str) -> SyncSubscription<'a> {
        SyncSubscription {
            id,
            feed_id: id * 10,
            group_id: id % 3,
            group_name: if id % 2 == 0 { "Even" } else { "" },
            // Every fourth one named by the user, the others by their feed.
            custom_title: if id % 4 == 0 { title } else { None },
            feed_title: if id % 4 == 0 { None } else { title },
            feed_url: url,
            site_url: (id % 3 == 0).then_some("https://site.example/"),
            created_at: 1_700_000_000 + id,
        }
    }

    /// Without keys the list is in the order PostgreSQL's listing used to read it in: the
    /// title lowered by Unicode's rules (`to_lowercase`), by code point, then the id; every
    /// value comes back as it went in.
    #[test]
    fn the_list_keeps_every_value_in_the_order_of_lowered_titles() {
        let given = [
            subscription(1, Some("beta"), "https://b.example/"),
            subscription(2, Some("Alpha"), "https://a.example/"),
            subscription(3, None, "HTTPS://Z.example/"),
            subscription(4, Some("alpha"), "https://a2.example/"),
            subscription(5, Some("Élan"), "https://e.example/"),
            subscription(6, Some("élan"), "https://e2.example/"),
            subscription(7, Some("ΟΔΟΣ"), "https://o.example/"),
            subscription(8, Some("οδος"), "https://o2.example/"),
            subscription(9, Some("İstanbul"), "https://i.example/"),
            subscription(10, Some("Zebra & <Co>"), "https://zebra.example/"),
            subscription(11, Some(""), "https://empty.example/"),
            subscription(0, Some("BETA"), "https://b0.example/"),
        ];
        let list = SyncSubscriptions::from_list(given.iter().map(|s| (*s, None)));
        let mut expected = given.to_vec();
        expected.sort_by_cached_key(|s| (s.title().to_lowercase(), s.id));
        assert_eq!(list.len(), given.len());
        assert_eq!(list.iter().collect::<Vec<_>>(), expected);
        let ids: Vec<i64> = list.iter().map(|s| s.id).collect();
        // "ΟΔΟΣ" lowers to "οδος" with a final sigma (ς), as "οδος" is written: the two tie
        // and go by id (a letter-by-letter lowering, σ, would put 8 first).
        assert_eq!(ids, [11, 2, 4, 0, 1, 3, 9, 10, 5, 6, 7, 8]);
        assert!(SyncSubscriptions::default().is_empty());
    }

    /// With keys (SQLite's own lowering), the keys order the list, then the ids.
    #[test]
    fn given_keys_order_the_list() {
        let given = [
            (subscription(1, Some("B"), "https://b.example/"), Some("b")),
            (subscription(2, Some("a"), "https://a.example/"), Some("c")),
            (subscription(3, Some("C"), "https://c.example/"), Some("b")),
        ];
        let list = SyncSubscriptions::from_list(given);
        let ids: Vec<i64> = list.iter().map(|s| s.id).collect();
        assert_eq!(ids, [1, 3, 2]);
        assert_eq!(list.iter().next(), Some(given[0].0));
    }
}
