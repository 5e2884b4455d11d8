//! Reading (F31, F32, F36): listing a user's items with cursor pagination, marking many items
//! read at once, unread counts and "updated since".
//!
//! The read model (migration 4): an item is read for a user when an `item_states` row says
//! so, or, without a row, when it was published at or before the subscription's
//! `read_before` watermark. Marking a feed read moves the watermark (one row written however
//! many items the feed has), and `subscriptions.unread_count` is kept exact by triggers, so
//! counting is one indexed read of the user's subscriptions.

use crate::{Engine, Item, Result, Store, StoreError, in_tx, row_decoder, unix_now, with_db};

/// Items per page when the caller does not say.
pub const DEFAULT_PAGE_SIZE: i64 = 50;
/// The most items one page may hold.
pub const MAX_PAGE_SIZE: i64 = 200;
/// The most ids one mark-read request may name.
pub const MAX_MARK_IDS: usize = 1000;

/// The SQL deciding whether item `i` is read for subscription `s` with state row `st`.
pub(crate) const IS_READ: &str =
    "COALESCE(st.is_read, s.read_before IS NOT NULL AND i.published_at <= s.read_before)";

/// [`IS_READ`] with the item's publication date read from `published_at` (a column): the
/// sync APIs' arrival queries read it from the arrival row (`u.published_at`, migration 56),
/// so that they need not visit the item.
pub(crate) fn is_read_dated(published_at: &str) -> String {
    format!("COALESCE(st.is_read, s.read_before IS NOT NULL AND {published_at} <= s.read_before)")
}

/// The SQL leaving out items a rule hid for the user (state row `st`). Hidden items are read
/// and never starred, so only listings of all items need it.
pub(crate) const NOT_HIDDEN: &str = "NOT COALESCE(st.is_hidden, FALSE)";

/// The SQL leaving out, for user `$1`, the copies of a story shown through another copy
/// (the item whose id is the column `item`; duplicates across feeds, see `duplicates`): a
/// collapsed listing's condition, for the web UI's listings and the sync APIs alike. Its first
/// half, which does not depend on the row, is worked out once per statement (an init plan on
/// PostgreSQL, a cached subquery on SQLite): a user without copies, most of them, then pays no
/// look-up per row. On PostgreSQL the per-row look-up cost a page of 1,000 sync ids about as
/// much as reading the page (0.38 of 0.50 ms in `EXPLAIN ANALYZE`).
pub(crate) fn not_duplicate(item: &str) -> String {
    format!(
        "(NOT EXISTS (SELECT 1 FROM user_duplicates d0 WHERE d0.user_id = $1) \
          OR NOT EXISTS (SELECT 1 FROM user_duplicates d \
                         WHERE d.user_id = $1 AND d.item_id = {item}))"
    )
}

/// Which items a listing shows.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default)]
pub enum ItemFilter {
    /// Read or not.
    All,
    /// Only unread items.
    #[default]
    Unread,
    /// Only starred items.
    Starred,
}

/// The order of a listing.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default)]
pub enum ItemOrder {
    /// Newest published first.
    #[default]
    NewestFirst,
    /// Oldest published first.
    OldestFirst,
}

/// Where a page starts: after the item with this publication time and id, in the listing's
/// order. Pages keyed this way neither skip nor repeat items when items arrive between them.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct ItemCursor {
    /// The last listed item's publication time.
    pub published_at: i64,
    /// The last listed item's id.
    pub id: i64,
}

impl ItemCursor {
    /// The cursor as an opaque string for clients.
    pub fn encode(&self) -> String {
        hex::encode(format!("{}:{}", self.published_at, self.id))
    }

    /// Reads a string made by [`ItemCursor::encode`]; `None` when it is not one.
    pub fn decode(text: &str) -> Option<ItemCursor> {
        let bytes = hex::decode(text.trim()).ok()?;
        let text = std::str::from_utf8(&bytes).ok()?;
        let (published_at, id) = text.split_once(':')?;
        Some(ItemCursor {
            published_at: published_at.parse().ok()?,
            id: id.parse().ok()?,
        })
    }
}

/// What to list.
#[derive(Debug, Clone, Default)]
pub struct ItemQuery {
    /// Only this feed's items (it must be one of the user's).
    pub feed_id: Option<i64>,
    /// Only items of this group's subscriptions (it must be one of the user's).
    pub group_id: Option<i64>,
    /// Only items with this tag (F41; [`Store::tag_id`] gives a name's id).
    pub tag_id: Option<i64>,
    /// All, unread or starred.
    pub filter: ItemFilter,
    /// Newest or oldest first.
    pub order: ItemOrder,
    /// Only items published at or after this time.
    pub since: Option<i64>,
    /// Only items published before this time.
    pub until: Option<i64>,
    /// Continue after this item.
    pub cursor: Option<ItemCursor>,
    /// Items per page (clamped to 1..=[`MAX_PAGE_SIZE`]).
    pub limit: i64,
    /// Show each story once (issue 35): leave out the copies the user is shown through
    /// another copy. Starred listings list every starred copy all the same.
    pub collapse: bool,
}

/// An item as a listing shows it: no content, with the user's state and the feed's title.
#[derive(Debug, Clone, PartialEq, Eq, serde::Serialize)]
pub struct ItemSummary {
    /// The item's id.
    pub id: i64,
    /// The shared feed's id.
    pub feed_id: i64,
    /// The user's subscription to the feed.
    pub subscription_id: i64,
    /// The user's title for the feed, else the feed's own title, else its URL.
    pub feed_title: String,
    /// The item's link.
    pub url: Option<String>,
    /// Its title.
    pub title: Option<String>,
    /// Its author.
    pub author: Option<String>,
    /// Sanitized summary.
    pub summary: Option<String>,
    /// Publication time (Unix seconds).
    pub published_at: i64,
    /// Whether `published_at` is the fetch time because the feed gave no date.
    pub is_date_estimated: bool,
    /// Whether the user has read it.
    pub is_read: bool,
    /// Whether the user starred it.
    pub is_starred: bool,
    /// The item's image (a video's still, an episode's artwork): an absolute https URL.
    pub thumbnail_url: Option<String>,
    /// Its language, a BCP 47 tag (issue 37); `None` until known.
    pub language: Option<String>,
}

/// What a listing leaves out of an item and a reader needs to show it opened.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct ItemBody {
    /// Sanitized content.
    pub content: Option<String>,
    /// Media enclosures.
    pub enclosures: Vec<crate::Enclosure>,
    /// The article extracted from the item's page (F6), when one was kept.
    pub full_content: Option<String>,
}

/// One page of a listing.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct ItemPage {
    /// The items, in the listing's order.
    pub items: Vec<ItemSummary>,
    /// Where the next page starts, when there is one.
    pub next_cursor: Option<ItemCursor>,
}

/// An item with the user's subscription and title of its feed.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct ItemDetail {
    /// The item with the user's state.
    pub item: Item,
    /// The user's subscription to its feed.
    pub subscription_id: i64,
    /// The user's title for the feed, else the feed's own title, else its URL.
    pub feed_title: String,
}

/// Which items a mark-read covers.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum MarkReadScope {
    /// These items (ids not visible to the user are ignored).
    Ids(Vec<i64>),
    /// One feed the user follows.
    Feed(i64),
    /// The subscriptions of one of the user's groups.
    Group(i64),
    /// Every subscription.
    All,
    /// Only the starred items, of one feed, of one group's subscriptions, or of everything
    /// (the Starred view): what that view lists, and nothing else.
    Starred {
        /// Only this feed's starred items.
        feed_id: Option<i64>,
        /// Only the starred items of this group's subscriptions.
        group_id: Option<i64>,
    },
}

/// A subscription's read watermark before a mark-read moved it.
#[derive(Debug, Clone, Copy, PartialEq, Eq, serde::Serialize, serde::Deserialize)]
pub struct WatermarkBefore {
    /// The subscription.
    pub subscription_id: i64,
    /// Its `read_before` before the mark-read (`None`: it had none).
    pub read_before: Option<i64>,
}

/// What a mark-read changed, so that it can be undone exactly: the watermarks it moved and
/// the items whose own state it turned from unread to read.
#[derive(Debug, Clone, Default, PartialEq, Eq, serde::Serialize, serde::Deserialize)]
pub struct ReadUndo {
    /// The watermarks as they were.
    pub watermarks: Vec<WatermarkBefore>,
    /// Items that were unread by their own state (or by having none) and are read now.
    pub item_ids: Vec<i64>,
}

/// The result of a mark-read.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct MarkReadOutcome {
    /// Items that were unread and are read now.
    pub marked: u64,
    /// How to restore the state before it.
    pub undo: ReadUndo,
}

/// The item ids a restore may name at once (an undo of a mark-read of ids or of starred
/// items names at most this many; a feed's undo names only the few explicit unread rows).
pub const MAX_UNDO_IDS: usize = 10_000;

/// One subscription's unread count.
#[derive(Debug, Clone, Copy, PartialEq, Eq, serde::Serialize)]
pub struct SubscriptionCount {
    /// The subscription.
    pub subscription_id: i64,
    /// Its feed.
    pub feed_id: i64,
    /// Its group.
    pub group_id: i64,
    /// Unread items.
    pub unread: i64,
}

/// Unread counts of a user, per subscription, with the number of starred items.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct UnreadCounts {
    /// Per subscription.
    pub subscriptions: Vec<SubscriptionCount>,
    /// Starred items of the user.
    pub starred: i64,
}

/// A subscription with items that arrived after a given time (F36).
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct UpdatedFeed {
    /// The subscription.
    pub subscription_id: i64,
    /// Its feed.
    pub feed_id: i64,
    /// The user's title for the feed, else the feed's own title, else its URL.
    pub feed_title: String,
    /// Items that arrived after the time.
    pub new_items: i64,
    /// When the newest of them arrived.
    pub last_arrived_at: i64,
    /// Unread items of the subscription now.
    pub unread: i64,
}

pub(crate) type SummaryRow = (
    (i64, i64, i64, String, Option<String>, Option<String>),
    (Option<String>, Option<String>, i64, bool, bool, bool),
    (Option<String>, Option<String>),
);

/// The columns every listing selects, in [`SummaryRow`]'s order.
pub(crate) const SUMMARY_COLUMNS: &str = "i.id, i.feed_id, s.id, COALESCE(s.title, f.title, f.url),
    i.url, i.title, i.author, i.summary, i.published_at, i.is_date_estimated";

/// A value bound to a listing's placeholder.
#[derive(Debug, Clone)]
pub(crate) enum SqlValue {
    Int(i64),
    Text(String),
}

/// A listing's SQL under construction: conditions with `$n` placeholders and their values.
pub(crate) struct Listing {
    conditions: Vec<String>,
    pub(crate) binds: Vec<SqlValue>,
}

impl Listing {
    pub(crate) fn new(user_id: i64) -> Listing {
        Listing {
            conditions: Vec::new(),
            binds: vec![SqlValue::Int(user_id)],
        }
    }

    /// A listing of items alone, with no user: `$1` is the first value bound.
    pub(crate) fn unscoped() -> Listing {
        Listing {
            conditions: Vec::new(),
            binds: Vec::new(),
        }
    }

    /// A listing with no conditions whose placeholders continue after this one's: its
    /// values are this one's and then its own.
    pub(crate) fn continued(&self) -> Listing {
        Listing {
            conditions: Vec::new(),
            binds: self.binds.clone(),
        }
    }

    /// The next placeholder for `value`.
    pub(crate) fn bind(&mut self, value: i64) -> String {
        self.binds.push(SqlValue::Int(value));
        format!("${}", self.binds.len())
    }

    /// The next placeholder for a text `value`.
    pub(crate) fn bind_text(&mut self, value: String) -> String {
        self.binds.push(SqlValue::Text(value));
        format!("${}", self.binds.len())
    }

    pub(crate) fn push(&mut self, condition: String) {
        self.conditions.push(condition);
    }

    /// The conditions joined with AND.
    pub(crate) fn conditions(&self) -> String {
        if self.conditions.is_empty() {
            "TRUE".to_string()
        } else {
            self.conditions.join(" AND ")
        }
    }

    /// The scope, date and cursor conditions shared by every listing of `query`.
    pub(crate) fn common(&mut self, query: &ItemQuery) {
        if let Some(feed_id) = query.feed_id {
            let p = self.bind(feed_id);
            self.push(format!("i.feed_id = {p}"));
        }
        if let Some(group_id) = query.group_id {
            let p = self.bind(group_id);
            self.push(format!("s.group_id = {p}"));
        }
        if let Some(tag_id) = query.tag_id {
            let p = self.bind(tag_id);
            self.push(format!(
                "EXISTS (SELECT 1 FROM item_tags it WHERE it.item_id = i.id AND it.tag_id = {p})"
            ));
        }
        if let Some(since) = query.since {
            let p = self.bind(since);
            self.push(format!("i.published_at >= {p}"));
        }
        if let Some(until) = query.until {
            let p = self.bind(until);
            self.push(format!("i.published_at < {p}"));
        }
        if let Some(cursor) = query.cursor {
            let published = self.bind(cursor.published_at);
            let id = self.bind(cursor.id);
            // The redundant range on published_at lets the engines seek the index instead of
            // testing the row-value comparison on every row.
            self.push(match query.order {
                ItemOrder::NewestFirst => format!(
                    "i.published_at <= {published} AND (i.published_at < {published} OR i.id < {id})"
                ),
                ItemOrder::OldestFirst => format!(
                    "i.published_at >= {published} AND (i.published_at > {published} OR i.id > {id})"
                ),
            });
        }
    }

    pub(crate) fn sql(&mut self, from: &str, order: ItemOrder, limit: i64) -> String {
        let direction = direction(order);
        let limit = self.bind(limit);
        let columns = listing_columns();
        format!(
            "SELECT {columns}
             {from}
             WHERE {}
             ORDER BY i.published_at {direction}, i.id {direction}
             LIMIT {limit}",
            self.conditions()
        )
    }

    /// [`Listing::sql`] in two steps, for PostgreSQL: the page's ids first, found from what
    /// the indexes hold (a feed's date index gives each item's date and id, and the state
    /// and subscription rows the rest), then the page's rows by id. In one step PostgreSQL
    /// reads the row of every item it sorts: for a user who follows 51 feeds of a
    /// 10,000,000-item installation, the first page of unread items read all 5,100 of
    /// theirs (13.8 ms) where the ids need their index entries alone (4.6 ms).
    pub(crate) fn sql_by_id(&mut self, from: &str, order: ItemOrder, limit: i64) -> String {
        let direction = direction(order);
        let limit = self.bind(limit);
        let columns = listing_columns();
        format!(
            "SELECT {columns}
             {FROM_ITEMS}
             WHERE s.feed_id = i.feed_id AND s.user_id = $1
               AND i.id IN (SELECT i.id {from}
                            WHERE {}
                            ORDER BY i.published_at {direction}, i.id {direction}
                            LIMIT {limit})
             ORDER BY i.published_at {direction}, i.id {direction}",
            self.conditions()
        )
    }
}

/// The SQL keyword of a listing's order.
fn direction(order: ItemOrder) -> &'static str {
    match order {
        ItemOrder::NewestFirst => "DESC",
        ItemOrder::OldestFirst => "ASC",
    }
}

/// The columns of a listing's rows, as `summary_from_row` reads them.
fn listing_columns() -> String {
    format!(
        "{SUMMARY_COLUMNS}, {IS_READ}, COALESCE(st.is_starred, FALSE), i.thumbnail_url, i.language"
    )
}

/// Items first, subscriptions looked up per item: the engines walk the items' date index in
/// the listing's order and stop at the page's end. (SQLite keeps a CROSS JOIN's order.)
pub(crate) const FROM_ITEMS: &str = "FROM items i
     CROSS JOIN subscriptions s
     JOIN feeds f ON f.id = s.feed_id
     LEFT JOIN item_states st ON st.user_id = s.user_id AND st.item_id = i.id";

/// State rows first: starred items, and explicit unread rows under a watermark. The CROSS
/// JOINs keep SQLite from walking the whole date index instead of the user's few state rows;
/// the join conditions are [`STATES_JOINED`].
pub(crate) const FROM_STATES: &str = "FROM item_states st
     CROSS JOIN items i
     CROSS JOIN subscriptions s
     JOIN feeds f ON f.id = s.feed_id";

/// The join conditions of [`FROM_STATES`].
pub(crate) const STATES_JOINED: &str =
    "i.id = st.item_id AND s.user_id = st.user_id AND s.feed_id = i.feed_id";

pub(crate) fn summary_from_row(row: SummaryRow) -> ItemSummary {
    let ((id, feed_id, subscription_id, feed_title, url, title), rest, image) = row;
    let (author, summary, published_at, is_date_estimated, is_read, is_starred) = rest;
    let (thumbnail_url, language) = image;
    ItemSummary {
        id,
        feed_id,
        subscription_id,
        feed_title,
        url,
        title,
        author,
        summary,
        published_at,
        is_date_estimated,
        is_read,
        is_starred,
        thumbnail_url,
        language,
    }
}

row_decoder!(pub(crate) decode_summary -> SummaryRow {
    (0, 1, 2, 3, 4, 5), (6, 7, 8, 9, 10, 11), (12, 13)
});

impl Store {
    /// Runs one listing query.
    pub(crate) async fn run_listing(
        &self,
        sql: String,
        binds: &[SqlValue],
    ) -> Result<Vec<ItemSummary>> {
        let rows = with_db!(self, read, |db| {
            let mut query = sqlx::query(sqlx::AssertSqlSafe(sql));
            for value in binds {
                query = match value {
                    SqlValue::Int(value) => query.bind(*value),
                    SqlValue::Text(value) => query.bind(value.as_str()),
                };
            }
            query
                .fetch_all(db)
                .await?
                .iter()
                .map(decode_summary)
                .collect::<std::result::Result<Vec<_>, _>>()?
        });
        Ok(rows.into_iter().map(summary_from_row).collect())
    }

    /// Checks that the feed and group a query names are the user's.
    pub(crate) async fn check_scope(&self, user_id: i64, query: &ItemQuery) -> Result<()> {
        self.check_feed_and_group(user_id, query.feed_id, query.group_id)
            .await
    }

    /// Checks that `feed_id` is a feed the user follows and `group_id` one of the user's
    /// groups (each when given): listings and rules name a scope the same way, and a scope
    /// that is not the user's is "not found", as if it did not exist.
    pub(crate) async fn check_feed_and_group(
        &self,
        user_id: i64,
        feed_id: Option<i64>,
        group_id: Option<i64>,
    ) -> Result<()> {
        if let Some(feed_id) = feed_id {
            let found: Option<i64> = with_db!(self, read, |db| {
                sqlx::query_scalar(
                    "SELECT id FROM subscriptions WHERE user_id = $1 AND feed_id = $2",
                )
                .bind(user_id)
                .bind(feed_id)
                .fetch_optional(db)
                .await?
            });
            found.ok_or(StoreError::NotFound("feed"))?;
        }
        if let Some(group_id) = group_id {
            let found: Option<i64> = with_db!(self, read, |db| {
                sqlx::query_scalar("SELECT id FROM feed_groups WHERE user_id = $1 AND id = $2")
                    .bind(user_id)
                    .bind(group_id)
                    .fetch_optional(db)
                    .await?
            });
            found.ok_or(StoreError::NotFound("group"))?;
        }
        Ok(())
    }

    /// The statement of a listing's page: in two steps on PostgreSQL ([`Listing::sql_by_id`]);
    /// in one on SQLite, whose plans for it the tests hold (not measured at that scale there).
    fn page_sql(&self, listing: &mut Listing, from: &str, order: ItemOrder, fetch: i64) -> String {
        match self.engine() {
            Engine::Sqlite => listing.sql(from, order, fetch),
            Engine::Postgres => listing.sql_by_id(from, order, fetch),
        }
    }

    /// One page of the user's items: of every subscription, one feed or one group; all,
    /// unread or starred; newest or oldest first; keyed on (published_at, id).
    pub async fn list_items(&self, user_id: i64, query: &ItemQuery) -> Result<ItemPage> {
        self.check_scope(user_id, query).await?;
        let limit = query.limit.clamp(1, MAX_PAGE_SIZE);
        // One more than a page tells whether another page follows.
        let fetch = limit + 1;
        let mut items = match query.filter {
            ItemFilter::All => {
                let mut listing = Listing::new(user_id);
                listing.push("s.feed_id = i.feed_id AND s.user_id = $1".into());
                listing.push(NOT_HIDDEN.into());
                if query.collapse {
                    listing.push(not_duplicate("i.id"));
                }
                listing.common(query);
                let sql = self.page_sql(&mut listing, FROM_ITEMS, query.order, fetch);
                self.run_listing(sql, &listing.binds).await?
            }
            ItemFilter::Starred => {
                let mut listing = Listing::new(user_id);
                listing.push(format!(
                    "{STATES_JOINED} AND st.user_id = $1 AND st.is_starred"
                ));
                listing.common(query);
                let sql = self.page_sql(&mut listing, FROM_STATES, query.order, fetch);
                self.run_listing(sql, &listing.binds).await?
            }
            ItemFilter::Unread => self.list_unread(user_id, query, fetch).await?,
        };
        let next_cursor = if items.len() as i64 > limit {
            items.truncate(limit as usize);
            items.last().map(|item| ItemCursor {
                published_at: item.published_at,
                id: item.id,
            })
        } else {
            None
        };
        Ok(ItemPage { items, next_cursor })
    }

    /// Unread items come from two places: items above their subscription's watermark without
    /// a read row (walked along the date index, never below the lowest watermark among the
    /// subscriptions that have unread items), and explicit unread rows under a watermark (a
    /// small partial index). The two are merged by (published_at, id).
    async fn list_unread(
        &self,
        user_id: i64,
        query: &ItemQuery,
        fetch: i64,
    ) -> Result<Vec<ItemSummary>> {
        let (feed_id, group_id) = (query.feed_id, query.group_id);
        let bound: Option<Option<i64>> = with_db!(self, read, |db| {
            sqlx::query_as::<_, (Option<i64>, i64)>(
                "SELECT MIN(COALESCE(read_before, -9223372036854775807)), COUNT(*)
                 FROM subscriptions
                 WHERE user_id = $1 AND unread_count > 0
                   AND ($2 IS NULL OR feed_id = $2) AND ($3 IS NULL OR group_id = $3)",
            )
            .bind(user_id)
            .bind(feed_id)
            .bind(group_id)
            .fetch_one(db)
            .await
            .map(|(low, with_unread)| (with_unread > 0).then_some(low))?
        });
        // No subscription in scope has an unread item: nothing to walk.
        let Some(low) = bound else {
            return Ok(Vec::new());
        };

        let mut above = Listing::new(user_id);
        above.push("s.feed_id = i.feed_id AND s.user_id = $1 AND s.unread_count > 0".into());
        if let Some(low) = low {
            let p = above.bind(low);
            above.push(format!("i.published_at > {p}"));
        }
        above.push(format!("NOT {IS_READ}"));
        if query.collapse {
            above.push(not_duplicate("i.id"));
        }
        above.common(query);
        let sql = self.page_sql(&mut above, FROM_ITEMS, query.order, fetch);
        let mut items = self.run_listing(sql, &above.binds).await?;

        let mut under = Listing::new(user_id);
        under.push(format!(
            "{STATES_JOINED} AND st.user_id = $1 AND NOT st.is_read
             AND s.read_before IS NOT NULL AND i.published_at <= s.read_before"
        ));
        if query.collapse {
            under.push(not_duplicate("i.id"));
        }
        under.common(query);
        let sql = self.page_sql(&mut under, FROM_STATES, query.order, fetch);
        let explicit = self.run_listing(sql, &under.binds).await?;

        if !explicit.is_empty() {
            items.extend(explicit);
            items.sort_by_key(|item| (item.published_at, item.id));
            items.dedup_by_key(|item| item.id);
            if query.order == ItemOrder::NewestFirst {
                items.reverse();
            }
            items.truncate(fetch as usize);
        }
        Ok(items)
    }

    /// The content and enclosures of these items (at most [`MAX_PAGE_SIZE`]), for a listing
    /// that shows items opened without a request per item. Items not in the user's
    /// subscriptions are left out.
    pub async fn item_bodies(
        &self,
        user_id: i64,
        ids: &[i64],
    ) -> Result<std::collections::HashMap<i64, ItemBody>> {
        if ids.is_empty() {
            return Ok(std::collections::HashMap::new());
        }
        if ids.len() > MAX_PAGE_SIZE as usize {
            return Err(StoreError::Invalid(format!(
                "at most {MAX_PAGE_SIZE} items' content can be read at once"
            )));
        }
        let sql = item_bodies_sql(ids.len());
        let rows: Vec<(i64, Option<String>, String, Option<String>)> = with_db!(self, read, |db| {
            let mut query = sqlx::query_as(sqlx::AssertSqlSafe(sql));
            query = query.bind(user_id);
            for id in ids {
                query = query.bind(*id);
            }
            query.fetch_all(db).await?
        });
        Ok(rows
            .into_iter()
            .map(|(id, content, enclosures, full_content)| {
                // Written by this store as JSON; a damaged value shows as none.
                let enclosures = serde_json::from_str(&enclosures).unwrap_or_default();
                (
                    id,
                    ItemBody {
                        content,
                        enclosures,
                        full_content,
                    },
                )
            })
            .collect())
    }

    /// One item of the user's subscriptions with the user's state and the feed's title.
    pub async fn item_detail(&self, user_id: i64, item_id: i64) -> Result<ItemDetail> {
        let item = self.item(user_id, item_id).await?;
        let (subscription_id, feed_title): (i64, String) = with_db!(self, read, |db| {
            sqlx::query_as(
                "SELECT s.id, COALESCE(s.title, f.title, f.url)
                 FROM subscriptions s JOIN feeds f ON f.id = s.feed_id
                 WHERE s.user_id = $1 AND s.feed_id = $2",
            )
            .bind(user_id)
            .bind(item.feed_id)
            .fetch_optional(db)
            .await?
            .ok_or(StoreError::NotFound("item"))?
        });
        Ok(ItemDetail {
            item,
            subscription_id,
            feed_title,
        })
    }

    /// Marks items read: a list of ids, a feed, a group or everything. With `before`, only
    /// items published before that time are marked, so items that arrive while the user
    /// reads stay unread. Returns how many items became read.
    ///
    /// Ids write one state row each. A feed, group or everything moves each subscription's
    /// watermark (never backwards) and turns the explicit unread rows under it to read, so
    /// the cost does not grow with the number of items.
    pub async fn mark_read(
        &self,
        user_id: i64,
        scope: &MarkReadScope,
        before: Option<i64>,
    ) -> Result<u64> {
        Ok(self
            .mark_read_undoable(user_id, scope, before)
            .await?
            .marked)
    }

    /// [`Store::mark_read`], answering also what changed, for [`Store::restore_read`].
    pub async fn mark_read_undoable(
        &self,
        user_id: i64,
        scope: &MarkReadScope,
        before: Option<i64>,
    ) -> Result<MarkReadOutcome> {
        let now = unix_now();
        match scope {
            MarkReadScope::Ids(ids) => {
                if ids.len() > MAX_MARK_IDS {
                    return Err(StoreError::Invalid(format!(
                        "at most {MAX_MARK_IDS} ids can be marked at once"
                    )));
                }
                self.mark_ids_read(user_id, ids, before, now).await
            }
            MarkReadScope::Feed(feed_id) => self
                .mark_subscriptions_read(user_id, "feed_id = $2", Some(*feed_id), before, now)
                .await?
                .ok_or(StoreError::NotFound("feed")),
            MarkReadScope::Group(group_id) => {
                self.check_group(user_id, *group_id).await?;
                Ok(self
                    .mark_subscriptions_read(user_id, "group_id = $2", Some(*group_id), before, now)
                    .await?
                    .unwrap_or_default())
            }
            MarkReadScope::All => Ok(self
                .mark_subscriptions_read(user_id, "$2 IS NULL", None, before, now)
                .await?
                .unwrap_or_default()),
            MarkReadScope::Starred { feed_id, group_id } => {
                let query = ItemQuery {
                    feed_id: *feed_id,
                    group_id: *group_id,
                    ..ItemQuery::default()
                };
                self.check_scope(user_id, &query).await?;
                // The user's starred items are few (a state row each): list the unread ones
                // in scope and mark them one by one, like ids.
                let mut listing = Listing::new(user_id);
                listing.push(format!(
                    "{STATES_JOINED} AND st.user_id = $1 AND st.is_starred AND NOT {IS_READ}"
                ));
                listing.common(&query);
                let mut sql = format!(
                    "SELECT i.id {FROM_STATES} WHERE {}",
                    listing.conditions.join(" AND ")
                );
                if let Some(before) = before {
                    let p = listing.bind(before);
                    sql.push_str(&format!(" AND i.published_at < {p}"));
                }
                let ids: Vec<i64> = with_db!(self, read, |db| {
                    let mut q = sqlx::query_scalar(sqlx::AssertSqlSafe(sql));
                    for value in &listing.binds {
                        q = match value {
                            SqlValue::Int(value) => q.bind(*value),
                            SqlValue::Text(value) => q.bind(value.as_str()),
                        };
                    }
                    q.fetch_all(db).await?
                });
                let mut outcome = MarkReadOutcome::default();
                for chunk in ids.chunks(MAX_MARK_IDS) {
                    let part = self.mark_ids_read(user_id, chunk, before, now).await?;
                    outcome.marked += part.marked;
                    outcome.undo.item_ids.extend(part.undo.item_ids);
                }
                Ok(outcome)
            }
        }
    }

    async fn check_group(&self, user_id: i64, group_id: i64) -> Result<()> {
        let owned: Option<i64> = with_db!(self, read, |db| {
            sqlx::query_scalar("SELECT id FROM feed_groups WHERE user_id = $1 AND id = $2")
                .bind(user_id)
                .bind(group_id)
                .fetch_optional(db)
                .await?
        });
        owned.map(|_| ()).ok_or(StoreError::NotFound("group"))
    }

    /// Undoes a mark-read with what it answered: lowers the watermarks it moved back to where
    /// they were (never raises one) and turns the items it marked unread again. Names only
    /// the user's own subscriptions and items; others are ignored. Answers how many items
    /// are unread again.
    pub async fn restore_read(&self, user_id: i64, undo: &ReadUndo) -> Result<u64> {
        if undo.item_ids.len() > MAX_UNDO_IDS {
            return Err(StoreError::Invalid(format!(
                "at most {MAX_UNDO_IDS} items can be restored at once"
            )));
        }
        let mut ids = undo.item_ids.clone();
        ids.sort_unstable();
        ids.dedup();
        let lock = match self.engine() {
            Engine::Sqlite => "",
            Engine::Postgres => " FOR NO KEY UPDATE",
        };
        let total_sql = format!(
            "SELECT CAST(COALESCE(SUM(unread_count), 0) AS BIGINT) FROM (SELECT unread_count FROM subscriptions
             WHERE user_id = $1 ORDER BY id{lock}) t"
        );
        let restored: i64 = in_tx!(self, |tx| {
            let unread_before: i64 = sqlx::query_scalar(sqlx::AssertSqlSafe(total_sql.clone()))
                .bind(user_id)
                .fetch_one(&mut *tx)
                .await?;
            for mark in &undo.watermarks {
                sqlx::query(
                    "UPDATE subscriptions SET read_before = $3
                     WHERE id = $1 AND user_id = $2 AND read_before IS NOT NULL
                       AND ($3 IS NULL OR read_before > $3)",
                )
                .bind(mark.subscription_id)
                .bind(user_id)
                .bind(mark.read_before)
                .execute(&mut *tx)
                .await?;
            }
            for id in &ids {
                sqlx::query(
                    "UPDATE item_states SET is_read = FALSE, updated_at = $3
                     WHERE user_id = $1 AND item_id = $2 AND is_read",
                )
                .bind(user_id)
                .bind(id)
                .bind(unix_now())
                .execute(&mut *tx)
                .await?;
            }
            let unread_after: i64 = sqlx::query_scalar(sqlx::AssertSqlSafe(total_sql))
                .bind(user_id)
                .fetch_one(&mut *tx)
                .await?;
            unread_after - unread_before
        });
        Ok(restored.max(0) as u64)
    }

    /// Turns unread again the items of the user's latest marking: those whose own state was
    /// set read within `span` seconds before the most recent such change (the Fever API's
    /// `unread_recently_read`). Items read by a watermark alone (a feed or group marked read as
    /// a whole, which writes no row per item) stay read. Answers how many items changed.
    pub async fn unread_latest_reads(&self, user_id: i64, span: i64) -> Result<u64> {
        let now = unix_now();
        Ok(with_db!(self, write, |db| {
            sqlx::query(
                "UPDATE item_states SET is_read = FALSE, updated_at = $2
                 WHERE user_id = $1 AND is_read
                   AND updated_at >= (SELECT MAX(updated_at) - $3 FROM item_states
                                      WHERE user_id = $1 AND is_read)",
            )
            .bind(user_id)
            .bind(now)
            .bind(span.max(0))
            .execute(db)
            .await?
            .rows_affected()
        }))
    }

    async fn mark_ids_read(
        &self,
        user_id: i64,
        ids: &[i64],
        before: Option<i64>,
        now: i64,
    ) -> Result<MarkReadOutcome> {
        let mut ids = ids.to_vec();
        // Copies of the same stories in other feeds are read with them (issue 35), when the
        // user reads by cluster; the undo names them too.
        let copies = self.cluster_copies(user_id, &ids).await?;
        ids.extend(copies);
        ids.sort_unstable();
        ids.dedup();
        let mut marked = Vec::new();
        in_tx!(self, |tx| {
            for id in &ids {
                // The state the item has now, and whether it is the user's at all.
                let current: Option<(bool, i64)> = sqlx::query_as(sqlx::AssertSqlSafe(format!(
                    "SELECT {IS_READ}, i.published_at FROM items i
                     JOIN subscriptions s ON s.feed_id = i.feed_id AND s.user_id = $1
                     LEFT JOIN item_states st ON st.user_id = $1 AND st.item_id = i.id
                     WHERE i.id = $2"
                )))
                .bind(user_id)
                .bind(id)
                .fetch_optional(&mut *tx)
                .await?;
                let Some((is_read, published_at)) = current else {
                    continue;
                };
                if is_read || before.is_some_and(|b| published_at >= b) {
                    continue;
                }
                sqlx::query(
                    "INSERT INTO item_states (user_id, item_id, is_read, is_starred, updated_at)
                     VALUES ($1, $2, TRUE, FALSE, $3)
                     ON CONFLICT (user_id, item_id) DO UPDATE SET is_read = TRUE, updated_at = $3",
                )
                .bind(user_id)
                .bind(id)
                .bind(now)
                .execute(&mut *tx)
                .await?;
                marked.push(*id);
            }
        });
        Ok(MarkReadOutcome {
            marked: marked.len() as u64,
            undo: ReadUndo {
                watermarks: Vec::new(),
                item_ids: marked,
            },
        })
    }

    /// Moves the watermarks of the user's subscriptions matching `condition` (on `$2`).
    /// `None` when no subscription matched.
    async fn mark_subscriptions_read(
        &self,
        user_id: i64,
        condition: &str,
        value: Option<i64>,
        before: Option<i64>,
        now: i64,
    ) -> Result<Option<MarkReadOutcome>> {
        // On PostgreSQL the rows are locked first, so that an item insert in flight on one of
        // these feeds either commits before the counts and dates below are read, or waits and
        // then sees the new watermark (migration 5). SQLite's single writer serializes both.
        let lock = match self.engine() {
            Engine::Sqlite => "",
            Engine::Postgres => " FOR NO KEY UPDATE",
        };
        let select = format!(
            "SELECT id, feed_id, read_before, unread_count FROM subscriptions
             WHERE user_id = $1 AND {condition} ORDER BY id{lock}"
        );
        let marked: Option<MarkReadOutcome> = in_tx!(self, |tx| {
            let subscriptions: Vec<(i64, i64, Option<i64>, i64)> =
                sqlx::query_as(sqlx::AssertSqlSafe(select))
                    .bind(user_id)
                    .bind(value)
                    .fetch_all(&mut *tx)
                    .await?;
            if subscriptions.is_empty() {
                None
            } else {
                let mut outcome = MarkReadOutcome::default();
                for (id, feed_id, read_before, unread_before) in subscriptions {
                    // "Before T" covers items published up to T - 1 s (times are whole
                    // seconds); without it, every item the feed has now.
                    let target = match before {
                        Some(before) => Some(before.saturating_sub(1)),
                        None => {
                            sqlx::query_scalar::<_, Option<i64>>(
                                "SELECT MAX(published_at) FROM items WHERE feed_id = $1",
                            )
                            .bind(feed_id)
                            .fetch_one(&mut *tx)
                            .await?
                        }
                    };
                    let Some(target) = target else {
                        continue;
                    };
                    let flipped: Vec<i64> = sqlx::query_scalar(
                        "UPDATE item_states SET is_read = TRUE, updated_at = $3
                         WHERE user_id = $1 AND NOT is_read
                           AND EXISTS (SELECT 1 FROM items i
                                       WHERE i.id = item_states.item_id AND i.feed_id = $2
                                         AND i.published_at <= $4)
                         RETURNING item_id",
                    )
                    .bind(user_id)
                    .bind(feed_id)
                    .bind(now)
                    .bind(target)
                    .fetch_all(&mut *tx)
                    .await?;
                    outcome.undo.item_ids.extend(flipped);
                    let watermark = read_before.map_or(target, |w| w.max(target));
                    if read_before != Some(watermark) {
                        outcome.undo.watermarks.push(WatermarkBefore {
                            subscription_id: id,
                            read_before,
                        });
                    }
                    // Setting read_before makes the triggers recount the subscription. (Read
                    // back separately: SQLite's RETURNING shows the row before its triggers.)
                    sqlx::query("UPDATE subscriptions SET read_before = $2 WHERE id = $1")
                        .bind(id)
                        .bind(watermark)
                        .execute(&mut *tx)
                        .await?;
                    let unread_after: i64 =
                        sqlx::query_scalar("SELECT unread_count FROM subscriptions WHERE id = $1")
                            .bind(id)
                            .fetch_one(&mut *tx)
                            .await?;
                    outcome.marked += unread_before.saturating_sub(unread_after).max(0) as u64;
                }
                Some(outcome)
            }
        });
        Ok(marked)
    }

    /// Per feed the user follows, their unread copies shown through another: what counts
    /// leave out when the user collapses clusters.
    pub async fn duplicate_unread(
        &self,
        user_id: i64,
    ) -> Result<std::collections::HashMap<i64, i64>> {
        let sql = format!(
            "SELECT s.feed_id, COUNT(*)
             FROM user_duplicates d
             JOIN items i ON i.id = d.item_id
             JOIN subscriptions s ON s.feed_id = i.feed_id AND s.user_id = d.user_id
             LEFT JOIN item_states st ON st.user_id = d.user_id AND st.item_id = d.item_id
             WHERE d.user_id = $1 AND NOT {}
             GROUP BY s.feed_id",
            IS_READ
        );
        let rows: Vec<(i64, i64)> = with_db!(self, read, |db| {
            sqlx::query_as(sqlx::AssertSqlSafe(sql))
                .bind(user_id)
                .fetch_all(db)
                .await?
        });
        Ok(rows.into_iter().collect())
    }

    /// The user's unread counts per subscription and the number of starred items: one read
    /// of the maintained counters, however many items there are.
    pub async fn unread_counts(&self, user_id: i64) -> Result<UnreadCounts> {
        let rows: Vec<(i64, i64, i64, i64)> = with_db!(self, read, |db| {
            sqlx::query_as(
                "SELECT id, feed_id, group_id, unread_count FROM subscriptions
                 WHERE user_id = $1 ORDER BY id",
            )
            .bind(user_id)
            .fetch_all(db)
            .await?
        });
        // Each engine's own spelling, so that it matches the partial index's condition.
        let starred_sql = match self.engine() {
            Engine::Sqlite => {
                "SELECT COUNT(*) FROM item_states WHERE user_id = $1 AND is_starred = 1"
            }
            Engine::Postgres => {
                "SELECT COUNT(*) FROM item_states WHERE user_id = $1 AND is_starred"
            }
        };
        let starred: i64 = with_db!(self, read, |db| {
            sqlx::query_scalar(starred_sql)
                .bind(user_id)
                .fetch_one(db)
                .await?
        });
        // A story from several feeds counts once when the user lists it once (issue 35):
        // the copies shown through another are left out.
        let duplicates = if self.collapses_duplicates(user_id).await? {
            self.duplicate_unread(user_id).await?
        } else {
            std::collections::HashMap::new()
        };
        Ok(UnreadCounts {
            subscriptions: rows
                .into_iter()
                .map(
                    |(subscription_id, feed_id, group_id, unread)| SubscriptionCount {
                        subscription_id,
                        feed_id,
                        group_id,
                        unread: unread - duplicates.get(&feed_id).copied().unwrap_or(0),
                    },
                )
                .collect(),
            starred,
        })
    }

    /// The user's subscriptions with items that arrived after `since` (F36), newest arrival
    /// first.
    pub async fn updated_feeds(&self, user_id: i64, since: i64) -> Result<Vec<UpdatedFeed>> {
        let rows: Vec<(i64, i64, String, i64, i64, i64)> = with_db!(self, read, |db| {
            sqlx::query_as(
                "SELECT s.id, s.feed_id, COALESCE(s.title, f.title, f.url), COUNT(*),
                        MAX(i.fetched_at), s.unread_count
                 FROM subscriptions s
                 JOIN feeds f ON f.id = s.feed_id
                 JOIN items i ON i.feed_id = s.feed_id AND i.fetched_at > $2
                 WHERE s.user_id = $1
                 GROUP BY s.id, s.feed_id, s.title, f.title, f.url, s.unread_count
                 ORDER BY MAX(i.fetched_at) DESC, s.id",
            )
            .bind(user_id)
            .bind(since)
            .fetch_all(db)
            .await?
        });
        Ok(rows
            .into_iter()
            .map(
                |(subscription_id, feed_id, feed_title, new_items, last_arrived_at, unread)| {
                    UpdatedFeed {
                        subscription_id,
                        feed_id,
                        feed_title,
                        new_items,
                        last_arrived_at,
                        unread,
                    }
                },
            )
            .collect())
    }
}

/// The statement of [`Store::item_bodies`] for `count` ids (`$2` on; `$1` the user).
///
/// The subscription is checked by EXISTS, not joined: SQLite planned the join from the
/// user's subscriptions through each feed's items and read every item of the account to find
/// the page's 50 (0.25-0.77 s for one user with a million items, issue 38); this way it reads
/// the items by id and checks each one's subscription.
fn item_bodies_sql(count: usize) -> String {
    let placeholders: Vec<String> = (0..count).map(|n| format!("${}", n + 2)).collect();
    format!(
        "SELECT i.id, i.content, i.enclosures, t.content FROM items i
         LEFT JOIN item_full_texts t ON t.item_id = i.id
         WHERE i.id IN ({})
           AND EXISTS (SELECT 1 FROM subscriptions s
                       WHERE s.feed_id = i.feed_id AND s.user_id = $1)",
        placeholders.join(", ")
    )
}

#[cfg(test)]
mod tests {
    use super::*;

    /// The arrival queries' read test is the listings' own, over another column.
    #[test]
    fn dated_read_test_is_the_listings_one() {
        assert_eq!(is_read_dated("i.published_at"), IS_READ);
    }

    /// SQLite reads a listing's bodies by item id, not through the feeds' items (issue 38: on
    /// a join it walked `items_feed_fetched` for every subscription, a million rows for 50).
    /// Without statistics, as a bench database and a new installation have none.
    #[tokio::test]
    async fn sqlite_reads_bodies_by_item_id() {
        let dir = tempfile::tempdir().unwrap();
        let url = format!("sqlite://{}", dir.path().join("t.db").display());
        let mut options = crate::StoreOptions::new(url);
        options.create_if_missing = true;
        let store = Store::connect(&options).await.unwrap();
        store.migrate().await.unwrap();
        let crate::Pools::Sqlite { reader, .. } = &*store.pools else {
            unreachable!("a SQLite URL opens a SQLite store");
        };
        let mut explain = sqlx::query(sqlx::AssertSqlSafe(format!(
            "EXPLAIN QUERY PLAN {}",
            item_bodies_sql(50)
        )));
        for n in 0..51 {
            explain = explain.bind(n as i64);
        }
        let plan: Vec<String> = explain
            .fetch_all(reader)
            .await
            .unwrap()
            .iter()
            .map(|row| sqlx::Row::get::<String, _>(row, 3))
            .collect();
        let plan = plan.join("\n");
        assert!(
            plan.contains("SEARCH i USING INTEGER PRIMARY KEY"),
            "items by id:\n{plan}"
        );
        assert!(!plan.contains("items_feed_fetched"), "not by feed:\n{plan}");
        store.close().await;
    }
}
