//! Queries for the sync APIs that apps speak (Google Reader, Fever, Miniflux; F70, F71).
//!
//! Those protocols select items in ways the web UI's cursor listing does not: by id ranges
//! (Fever's `since_id`/`max_id`), by offset with a total (Miniflux), by read state in both
//! directions, by a list of ids, by label (Google Reader). [`SyncQuery`] covers them all with
//! one SQL builder over the same read model as `reading` (state rows over the watermark).
//! Items come back whole, content included, because these clients store them.

use crate::items::{decode_item, item_from_row};
use crate::label_names::LabelNames;
use crate::reading::{IS_READ, NOT_HIDDEN, is_read_dated, not_duplicate};
use crate::{Item, Result, Store, StoreError, in_tx, row_decoder, unix_now, with_db};

/// The most ids one [`SyncQuery::ids`] may name.
pub const MAX_SYNC_IDS: usize = 1000;
/// The most items one [`Store::sync_items`] call returns.
pub const MAX_SYNC_ITEMS: i64 = 1000;
/// The most ids one [`Store::sync_item_ids`] call returns.
pub const MAX_SYNC_ITEM_IDS: i64 = 100_000;
/// The longest item label, in characters.
pub const MAX_LABEL_CHARS: usize = 100;

/// The order of a sync listing.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default)]
pub enum SyncOrder {
    /// Newest published first; ties by id, highest first.
    #[default]
    NewestFirst,
    /// Oldest published first; ties by id, lowest first.
    OldestFirst,
    /// Lowest id (first stored) first.
    IdAscending,
    /// Highest id (last stored) first.
    IdDescending,
}

/// Which numbers a sync query's ids, id bounds, id orders and `after` speak of.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default)]
pub enum SyncIds {
    /// Items' own ids, the same for every user (the Miniflux API's entry ids).
    #[default]
    Items,
    /// The user's arrival numbers (`user_items.seq`): an item's sync id for that user, which
    /// increases in the order items became visible to them, backlogs of new subscriptions
    /// included (the Google Reader and Fever APIs' item ids).
    Arrival,
}

/// Which of the user's items a sync listing covers. Every field narrows; the default is every
/// item of every subscription, newest first.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct SyncQuery {
    /// Only this feed's items.
    pub feed_id: Option<i64>,
    /// Only items of this group's subscriptions.
    pub group_id: Option<i64>,
    /// Only items carrying this label (see [`Store::add_item_label`]).
    pub label: Option<String>,
    /// Only read (`Some(true)`) or unread (`Some(false)`) items.
    pub read: Option<bool>,
    /// Only starred (`Some(true)`) or not starred (`Some(false)`) items.
    pub starred: Option<bool>,
    /// Only these items (at most [`MAX_SYNC_IDS`]).
    pub ids: Option<Vec<i64>>,
    /// Only items published at or after this time.
    pub published_from: Option<i64>,
    /// Only items published before this time.
    pub published_before: Option<i64>,
    /// Only items with a larger id.
    pub id_above: Option<i64>,
    /// Only items with a smaller id.
    pub id_below: Option<i64>,
    /// Which ids `ids`, `id_above`, `id_below`, the id orders and `after` mean.
    pub ids_are: SyncIds,
    /// Only items that became visible to the user at or after this time (microseconds).
    pub arrived_from_us: Option<i64>,
    /// Only items that became visible to the user before this time (microseconds).
    pub arrived_before_us: Option<i64>,
    /// Continue after this (published_at, id) in a published order, or after this id (the
    /// second number) in an id order: a keyset position, so that pages neither skip nor
    /// repeat items when items arrive between them.
    pub after: Option<(i64, i64)>,
    /// The order.
    pub order: SyncOrder,
    /// Items to skip first (Miniflux's `offset`).
    pub offset: i64,
    /// The most items to return.
    pub limit: i64,
    /// Whether a story that arrived from several of the user's feeds is answered once
    /// (issue 35): `Some(true)` leaves out the copies the user is shown through another,
    /// `Some(false)` answers every copy, `None` (the default) follows the user's preference
    /// `collapse_duplicates`, read in the same statement. Items asked for by id are answered
    /// whatever this says.
    pub collapse: Option<bool>,
}

/// An item as the sync APIs show it: whole, with the user's state and subscription.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct SyncItem {
    /// The item, with the user's read and starred state.
    pub item: Item,
    /// The user's subscription to its feed.
    pub subscription_id: i64,
    /// That subscription's group.
    pub group_id: i64,
    /// The user's title for the feed, else the feed's own title, else its URL.
    pub feed_title: String,
    /// The feed's URL.
    pub feed_url: String,
    /// The feed's site.
    pub site_url: Option<String>,
    /// When the stored item last changed.
    pub changed_at: i64,
    /// The item's id in the query's [`SyncIds`]: its own id, or the user's arrival number.
    pub sync_id: i64,
    /// When the item became visible to the user, in microseconds (for [`SyncIds::Items`]
    /// queries, when it was first fetched).
    pub arrived_us: i64,
    /// The name of the subscription's group (empty if it has none).
    pub group_name: String,
    /// The labels the user put on the item, sorted.
    pub labels: Vec<String>,
}

/// One item of [`Store::sync_item_ids`].
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct SyncRef {
    /// The item's id in the query's [`SyncIds`].
    pub id: i64,
    /// The item's own id (what marks and labels take).
    pub item_id: i64,
    /// When it was published (Unix seconds).
    pub published_at: i64,
    /// When it became visible to the user, in microseconds (see [`SyncItem::arrived_us`]).
    pub arrived_us: i64,
}

/// A subscription with unread items, as [`Store::unread_feeds`] lists them. Deserialized
/// from a JSON array whose values come in the order of these fields.
#[derive(Debug, Clone, PartialEq, Eq, serde::Deserialize)]
pub struct UnreadFeed {
    /// The feed's id.
    pub feed_id: i64,
    /// The subscription's group.
    pub group_id: i64,
    /// How many of its items the user has not read.
    pub unread: i64,
    /// The publication time of its newest unread item (Unix seconds), if it has one.
    pub newest_unread: Option<i64>,
}

/// A value bound to a placeholder of a sync query.
enum Bind {
    Int(i64),
    Text(String),
}

/// Where a sync query reads an item's id, feed and publication date: from the item row, or
/// from the arrival row, which carries them (migration 56), so that a query of ids in
/// arrival order visits no item. Whether an item is unread needs its feed (for the
/// subscription's watermark) and its date: a user's 100,000 unread ids were 100,000 probes of
/// `items`, most of the 1.1-1.7 s they took for a user with a million unread (issue 38).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
struct Columns {
    item: &'static str,
    feed: &'static str,
    published: &'static str,
}

/// The item row's columns.
const ITEM_COLUMNS: Columns = Columns {
    item: "i.id",
    feed: "i.feed_id",
    published: "i.published_at",
};

/// The arrival row's copies (see [`Columns`]).
const ARRIVAL_COLUMNS: Columns = Columns {
    item: "u.item_id",
    feed: "u.feed_id",
    published: "u.published_at",
};

/// A sync query's conditions with `$n` placeholders and their values; `$1` is the user.
struct Conditions {
    sql: Vec<String>,
    binds: Vec<Bind>,
    /// Where the conditions read the item's id, feed and date.
    columns: Columns,
    /// Whether a condition reads the subscription (`s`): its group, or its read watermark.
    uses_subscription: bool,
    /// Whether a condition reads the user's state row (`st`): read or starred.
    uses_state: bool,
    /// Whether a condition reads the item row (`i`), or a table joined through it.
    uses_item: bool,
}

impl Conditions {
    fn bind(&mut self, value: Bind) -> String {
        self.binds.push(value);
        format!("${}", self.binds.len())
    }

    /// The conditions of `query` for the user; `clusters` says whether the schema has the
    /// duplicates' tables (an older one answers every copy); `dated` whether the conditions
    /// may read the item's id, feed and date from its arrival row (every row carries them,
    /// and the caller's statement reads nothing else of the item). They do for a query in
    /// arrival order: a query in publication order keeps the plans that walk the items'
    /// date index.
    fn build(user_id: i64, query: &SyncQuery, clusters: bool, dated: bool) -> Result<Conditions> {
        let columns = if dated
            && query.ids_are == SyncIds::Arrival
            && matches!(
                query.order,
                SyncOrder::IdAscending | SyncOrder::IdDescending
            ) {
            ARRIVAL_COLUMNS
        } else {
            ITEM_COLUMNS
        };
        let mut c = Conditions {
            sql: Vec::new(),
            binds: vec![Bind::Int(user_id)],
            columns,
            uses_subscription: query.group_id.is_some() || query.read.is_some(),
            uses_state: query.read.is_some()
                || query.starred.is_some()
                || query.ids_are == SyncIds::Items,
            uses_item: columns == ITEM_COLUMNS
                && (query.group_id.is_some()
                    || query.read.is_some()
                    || query.starred.is_some()
                    || query.feed_id.is_some()
                    || query.label.is_some()
                    || query.published_from.is_some()
                    || query.published_before.is_some()
                    || (query.after.is_some()
                        && matches!(query.order, SyncOrder::NewestFirst | SyncOrder::OldestFirst))
                    || query.ids_are == SyncIds::Items),
        };
        if query.ids_are == SyncIds::Items {
            // Hidden items have no arrival row, which keeps them out of arrival-ordered
            // queries; a query over items' own ids (the Miniflux API) leaves them out here.
            c.sql.push(NOT_HIDDEN.to_string());
        }
        if let Some(feed_id) = query.feed_id {
            let p = c.bind(Bind::Int(feed_id));
            c.sql.push(format!("{} = {p}", columns.feed));
        }
        if let Some(group_id) = query.group_id {
            let p = c.bind(Bind::Int(group_id));
            c.sql.push(format!("s.group_id = {p}"));
        }
        if let Some(label) = &query.label {
            let p = c.bind(Bind::Text(label.clone()));
            c.sql.push(format!(
                "EXISTS (SELECT 1 FROM item_labels l
                         WHERE l.user_id = $1 AND l.item_id = {} AND l.label = {p})",
                columns.item
            ));
        }
        match query.read {
            Some(true) => c.sql.push(is_read_dated(columns.published)),
            Some(false) => c
                .sql
                .push(format!("NOT {}", is_read_dated(columns.published))),
            None => {}
        }
        match query.starred {
            Some(true) => c.sql.push("COALESCE(st.is_starred, FALSE)".into()),
            Some(false) => c.sql.push("NOT COALESCE(st.is_starred, FALSE)".into()),
            None => {}
        }
        if let Some(ids) = &query.ids {
            if ids.len() > MAX_SYNC_IDS {
                return Err(StoreError::Invalid(format!(
                    "at most {MAX_SYNC_IDS} item ids can be asked for at once"
                )));
            }
            if ids.is_empty() {
                c.sql.push("FALSE".into());
            } else {
                let placeholders: Vec<String> =
                    ids.iter().map(|id| c.bind(Bind::Int(*id))).collect();
                c.sql.push(format!(
                    "{} IN ({})",
                    id_column(query),
                    placeholders.join(", ")
                ));
            }
        }
        if clusters && query.ids.is_none() {
            c.collapse(query);
        }
        if let Some(from) = query.published_from {
            let p = c.bind(Bind::Int(from));
            c.sql.push(format!("{} >= {p}", columns.published));
        }
        if let Some(before) = query.published_before {
            let p = c.bind(Bind::Int(before));
            c.sql.push(format!("{} < {p}", columns.published));
        }
        if let Some(above) = query.id_above {
            let p = c.bind(Bind::Int(above));
            c.sql.push(format!("{} > {p}", id_column(query)));
        }
        if let Some(below) = query.id_below {
            let p = c.bind(Bind::Int(below));
            c.sql.push(format!("{} < {p}", id_column(query)));
        }
        if let Some(from) = query.arrived_from_us {
            let p = c.bind(Bind::Int(from));
            c.sql.push(format!("{} >= {p}", arrival_column(query)));
        }
        if let Some(before) = query.arrived_before_us {
            let p = c.bind(Bind::Int(before));
            c.sql.push(format!("{} < {p}", arrival_column(query)));
        }
        if let Some((published, id)) = query.after {
            let pp = c.bind(Bind::Int(published));
            let pi = c.bind(Bind::Int(id));
            c.sql.push(match query.order {
                SyncOrder::NewestFirst => {
                    format!("(i.published_at < {pp} OR (i.published_at = {pp} AND i.id < {pi}))")
                }
                SyncOrder::OldestFirst => {
                    format!("(i.published_at > {pp} OR (i.published_at = {pp} AND i.id > {pi}))")
                }
                SyncOrder::IdAscending => format!("{} > {pi}", id_column(query)),
                SyncOrder::IdDescending => format!("{} < {pi}", id_column(query)),
            });
        }
        Ok(c)
    }

    /// Leaves out the copies the user is shown through another, as `query.collapse` says:
    /// by the arrival row's item in arrival order, so that the user's arrival rows alone
    /// still answer a page of ids.
    fn collapse(&mut self, query: &SyncQuery) {
        let item = match query.ids_are {
            SyncIds::Items => "i.id",
            SyncIds::Arrival => "u.item_id",
        };
        let not_duplicate = not_duplicate(item);
        match query.collapse {
            Some(true) => self.sql.push(not_duplicate),
            Some(false) => {}
            None => self.sql.push(format!(
                "(NOT COALESCE((SELECT p.collapse_duplicates FROM user_preferences p
                                WHERE p.user_id = $1), TRUE) OR {not_duplicate})"
            )),
        }
    }

    fn where_clause(&self) -> String {
        if self.sql.is_empty() {
            "TRUE".into()
        } else {
            self.sql.join(" AND ")
        }
    }
}

/// The tables a sync query over items' own ids reads: the user's subscriptions' items with
/// their state rows.
const FROM_ITEMS: &str = "FROM items i
     JOIN subscriptions s ON s.feed_id = i.feed_id AND s.user_id = $1
     JOIN feeds f ON f.id = i.feed_id
     LEFT JOIN item_states st ON st.user_id = $1 AND st.item_id = i.id";

/// The tables a sync query in arrival order reads: the user's arrival rows first, so that
/// listings walk their index in order instead of sorting every item of the account.
const FROM_ARRIVAL: &str = "FROM user_items u
     JOIN items i ON i.id = u.item_id
     JOIN subscriptions s ON s.feed_id = i.feed_id AND s.user_id = $1
     JOIN feeds f ON f.id = i.feed_id
     LEFT JOIN item_states st ON st.user_id = $1 AND st.item_id = i.id";

/// The `FROM` and the condition that select the user's items in the query's id space, with
/// every table a whole item's columns read.
fn from_sync(query: &SyncQuery) -> (&'static str, &'static str) {
    match query.ids_are {
        SyncIds::Items => (FROM_ITEMS, "TRUE"),
        SyncIds::Arrival => (FROM_ARRIVAL, "u.user_id = $1"),
    }
}

/// The `FROM` and the user's condition of a query that reads only ids, times and what its
/// conditions `c` name: in arrival order, the user's arrival rows and their items alone
/// unless a condition reads the subscription or the state row. Those rows exist exactly for
/// the items of the user's subscriptions (triggers keep them so), so the joins that only
/// confirmed it cost three index lookups an item for nothing (3,000 for a page of ids). The
/// item itself is joined only when the statement reads it: a condition does, or it selects
/// `c.columns` (`selects_item`) and they are the item's.
fn from_sync_narrow(
    query: &SyncQuery,
    c: &Conditions,
    selects_item: bool,
) -> (String, &'static str) {
    if query.ids_are == SyncIds::Items {
        let state = if c.uses_state {
            "\n     LEFT JOIN item_states st ON st.user_id = $1 AND st.item_id = i.id"
        } else {
            ""
        };
        return (
            format!(
                "FROM items i
     JOIN subscriptions s ON s.feed_id = i.feed_id AND s.user_id = $1{state}"
            ),
            "TRUE",
        );
    }
    let mut from = String::from("FROM user_items u");
    if c.uses_item || (selects_item && c.columns == ITEM_COLUMNS) {
        from.push_str("\n     JOIN items i ON i.id = u.item_id");
    }
    if c.uses_subscription {
        from.push_str(&format!(
            "\n     JOIN subscriptions s ON s.feed_id = {} AND s.user_id = $1",
            c.columns.feed
        ));
    }
    if c.uses_state {
        from.push_str(
            "\n     LEFT JOIN item_states st ON st.user_id = $1 AND st.item_id = u.item_id",
        );
    }
    (from, "u.user_id = $1")
}

/// The column of an item's id in the query's id space.
fn id_column(query: &SyncQuery) -> &'static str {
    match query.ids_are {
        SyncIds::Items => "i.id",
        SyncIds::Arrival => "u.seq",
    }
}

/// The item's arrival time in microseconds in the query's id space.
fn arrival_column(query: &SyncQuery) -> &'static str {
    match query.ids_are {
        SyncIds::Items => "(i.fetched_at * 1000000)",
        SyncIds::Arrival => "u.arrived_us",
    }
}

fn order_by(query: &SyncQuery) -> String {
    let id = id_column(query);
    match query.order {
        SyncOrder::NewestFirst => "i.published_at DESC, i.id DESC".into(),
        SyncOrder::OldestFirst => "i.published_at ASC, i.id ASC".into(),
        SyncOrder::IdAscending => format!("{id} ASC"),
        SyncOrder::IdDescending => format!("{id} DESC"),
    }
}

/// The columns after the 18 of an item (see `items::decode_item`): subscription, group,
/// feed title, feed URL, site URL, time of the last change, sync id, arrival.
type SyncExtraRow = ((i64, i64, String, String, Option<String>, i64), (i64, i64));

row_decoder!(decode_sync_extra -> SyncExtraRow { (18, 19, 20, 21, 22, 23), (24, 25) });

row_decoder!(decode_sync_tail -> ((String, Option<String>),) { (26, 27) });

fn decode_sync_item<R>(row: &R) -> std::result::Result<SyncItem, sqlx::Error>
where
    R: sqlx::Row,
    usize: sqlx::ColumnIndex<R>,
    i64: for<'r> sqlx::Decode<'r, R::Database> + sqlx::Type<R::Database>,
    bool: for<'r> sqlx::Decode<'r, R::Database> + sqlx::Type<R::Database>,
    String: for<'r> sqlx::Decode<'r, R::Database> + sqlx::Type<R::Database>,
    Option<i64>: for<'r> sqlx::Decode<'r, R::Database> + sqlx::Type<R::Database>,
    Option<String>: for<'r> sqlx::Decode<'r, R::Database> + sqlx::Type<R::Database>,
{
    let item = item_from_row(decode_item(row)?);
    let (
        (subscription_id, group_id, feed_title, feed_url, site_url, changed_at),
        (sync_id, arrived_us),
    ) = decode_sync_extra(row)?;
    let ((group_name, labels),) = decode_sync_tail(row)?;
    // A JSON list of text, or nothing (most items have no label).
    let labels = match labels.as_deref() {
        None | Some("[]") => Vec::new(),
        Some(list) => serde_json::from_str(list)
            .map_err(|error| sqlx::Error::Decode(format!("an item's labels: {error}").into()))?,
    };
    Ok(SyncItem {
        item,
        subscription_id,
        group_id,
        feed_title,
        feed_url,
        site_url,
        changed_at,
        sync_id,
        arrived_us,
        group_name,
        labels,
    })
}

/// Binds a query's values in order and runs `$run` on the result bound to `$query`.
macro_rules! bound {
    ($sql:expr, $binds:expr, |$query:ident| $run:expr) => {{
        let mut $query = sqlx::query(sqlx::AssertSqlSafe($sql));
        for value in $binds {
            $query = match value {
                Bind::Int(v) => $query.bind(*v),
                Bind::Text(v) => $query.bind(v.clone()),
            };
        }
        $run
    }};
}

impl Store {
    /// The user's items matching `query`, whole, in its order, at most
    /// [`MAX_SYNC_ITEMS`] (and `query.limit`). An item's `summary` is given only when it has
    /// no `content`: the sync APIs show one of the two, and a page of 100 items read both
    /// (on PostgreSQL each a compressed text to unpack and send).
    ///
    /// One statement with everything an app's page shows, its group's name and the item's
    /// labels included: the Google Reader API's pages read the user's groups and the page's
    /// labels with two more statements before, on PostgreSQL two more round trips.
    pub async fn sync_items(&self, user_id: i64, query: &SyncQuery) -> Result<Vec<SyncItem>> {
        // The item is read whole: its own columns serve the conditions as well.
        let c = Conditions::build(user_id, query, self.clusters_ready().await, false)?;
        // The page's size and offset are written into the statement, not bound: with them
        // as parameters PostgreSQL re-plans the statement on every run (its generic plan,
        // costed for an unknown LIMIT, never wins), and planning these joins cost more than
        // running them (~1 ms a page). Apps ask for a few sizes, so the statements stay few.
        let (limit, offset) = (query.limit.clamp(0, MAX_SYNC_ITEMS), query.offset.max(0));
        let (from, user) = from_sync(query);
        // The labels as one JSON list (each engine's own aggregate), sorted.
        let labels = match self.engine() {
            crate::Engine::Sqlite => {
                "(SELECT json_group_array(label) FROM
                     (SELECT label FROM item_labels l
                      WHERE l.user_id = $1 AND l.item_id = i.id ORDER BY label))"
            }
            crate::Engine::Postgres => {
                "(SELECT json_agg(label ORDER BY label)::text FROM item_labels l
                  WHERE l.user_id = $1 AND l.item_id = i.id)"
            }
        };
        let sql = format!(
            "SELECT i.id, i.feed_id, i.guid, i.url, i.title,
                    i.author, i.content, CASE WHEN i.content IS NULL THEN i.summary END,
                    i.published_at, i.is_date_estimated,
                    i.updated_at,
                    i.fetched_at, i.enclosures, i.categories, {IS_READ},
                    COALESCE(st.is_starred, FALSE), i.thumbnail_url, i.language,
                    s.id, s.group_id, COALESCE(s.title, f.title, f.url), f.url, f.site_url,
                    i.changed_at, {}, {},
                    COALESCE(g.name, ''), {labels}
             {from}
             LEFT JOIN feed_groups g ON g.id = s.group_id
             WHERE {user} AND {}
             ORDER BY {}
             LIMIT {limit} OFFSET {offset}",
            id_column(query),
            arrival_column(query),
            c.where_clause(),
            order_by(query)
        );
        let rows = with_db!(self, read, |db| {
            bound!(sql, &c.binds, |q| q
                .fetch_all(db)
                .await?
                .iter()
                .map(decode_sync_item)
                .collect::<std::result::Result<Vec<_>, _>>()?)
        });
        Ok(rows)
    }

    /// The ids (in the query's [`SyncIds`]), publication and arrival times of the user's
    /// items matching `query`, in its order, at most [`MAX_SYNC_ITEM_IDS`] (and
    /// `query.limit`).
    pub async fn sync_item_ids(&self, user_id: i64, query: &SyncQuery) -> Result<Vec<SyncRef>> {
        let c = self.narrow_conditions(user_id, query).await?;
        let (limit, offset) = (query.limit.clamp(0, MAX_SYNC_ITEM_IDS), query.offset.max(0));
        let (from, user) = from_sync_narrow(query, &c, true);
        let sql = format!(
            "SELECT {}, {}, {}, {} {from}
             WHERE {user} AND {} ORDER BY {} LIMIT {limit} OFFSET {offset}",
            id_column(query),
            c.columns.published,
            arrival_column(query),
            c.columns.item,
            c.where_clause(),
            order_by(query)
        );
        Ok(with_db!(self, read, |db| {
            bound!(sql, &c.binds, |q| {
                use sqlx::Row;
                q.fetch_all(db)
                    .await?
                    .iter()
                    .map(|row| {
                        Ok(SyncRef {
                            id: row.try_get(0)?,
                            published_at: row.try_get(1)?,
                            arrived_us: row.try_get(2)?,
                            item_id: row.try_get(3)?,
                        })
                    })
                    .collect::<std::result::Result<Vec<SyncRef>, sqlx::Error>>()?
            })
        }))
    }

    /// The arrival numbers and times of the user's items matching `query`, as (sync id,
    /// arrival in microseconds), in its order, at most [`MAX_SYNC_ITEM_IDS`] (and
    /// `query.limit`): a page of the Google Reader API's `stream/items/ids`, the call apps
    /// make most. For a [`SyncIds::Arrival`] query in an id order it reads the user's arrival
    /// rows alone unless a condition needs the item, and the page comes back as one row of two
    /// lists in text (on SQLite, sqlx's driver hands each row from its worker thread to the
    /// caller over a channel, and for 1,000 rows those hand-offs cost more than the query;
    /// on PostgreSQL each row is a message and each value a call). On PostgreSQL the
    /// arrival key holds the arrival time and item (migration 52), so the page is read from
    /// the index alone. Other queries are answered by [`Store::sync_item_ids`].
    pub async fn sync_arrival_refs(
        &self,
        user_id: i64,
        query: &SyncQuery,
    ) -> Result<Vec<(i64, i64)>> {
        let descending = match (query.ids_are, query.order) {
            (SyncIds::Arrival, SyncOrder::IdDescending) => true,
            (SyncIds::Arrival, SyncOrder::IdAscending) => false,
            _ => {
                let refs = self.sync_item_ids(user_id, query).await?;
                return Ok(refs.iter().map(|r| (r.id, r.arrived_us)).collect());
            }
        };
        let c = self.narrow_conditions(user_id, query).await?;
        let (limit, offset) = (query.limit.clamp(0, MAX_SYNC_ITEM_IDS), query.offset.max(0));
        let (from, _) = from_sync_narrow(query, &c, false);
        let page = format!(
            "SELECT u.seq AS seq, u.arrived_us AS arrived_us {from}
             WHERE u.user_id = $1 AND {} ORDER BY {} LIMIT {limit} OFFSET {offset}",
            c.where_clause(),
            order_by(query)
        );
        // The page comes back as one value from one pass over it, so its numbers pair up in
        // order. On SQLite two lists in text. On PostgreSQL one `bytea` of 16 bytes a row, the
        // arrival number then the time, each as `int8send` writes it (8 bytes, big-endian): a
        // binary array is sent element by element, each through a buffer of its own, which
        // for 2,002 numbers cost more than reading the page (a backend's CPU per page, 1,001
        // rows: 0.17 ms for the rows, +0.17-0.21 ms as two arrays, +0.10-0.12 ms as two
        // texts), and the texts' numbers are each written out and read back in (`seq::text`
        // is an I/O coercion): the bytes cost the backends 0.31 against 0.34 ms a page under
        // eight pgbench clients, and need no parsing here.
        let mut refs = match &*self.pools {
            crate::Pools::Sqlite { .. } => {
                let sql = format!(
                    "SELECT group_concat(seq, ' '), group_concat(arrived_us, ' ') \
                     FROM ({page}) AS page"
                );
                let (ids, times): (Option<String>, Option<String>) = with_db!(self, read, |db| {
                    bound!(sql, &c.binds, |q| {
                        use sqlx::Row;
                        let row = q.fetch_one(db).await?;
                        (row.try_get(0)?, row.try_get(1)?)
                    })
                });
                parse_number_pairs(
                    ids.as_deref().unwrap_or(""),
                    times.as_deref().unwrap_or(""),
                    limit,
                )?
            }
            crate::Pools::Postgres(_) => {
                let sql = format!(
                    "SELECT string_agg(int8send(seq) || int8send(arrived_us), ''::bytea) \
                     FROM ({page}) AS page"
                );
                let bytes: Option<Vec<u8>> = with_db!(self, read, |db| {
                    bound!(sql, &c.binds, |q| {
                        use sqlx::Row;
                        q.fetch_one(db).await?.try_get(0)?
                    })
                });
                binary_number_pairs(bytes.as_deref().unwrap_or(&[]))?
            }
        };
        // An aggregate's input order is not promised: put the page back in the query's.
        if descending {
            refs.sort_unstable_by_key(|r| std::cmp::Reverse(r.0));
        } else {
            refs.sort_unstable_by_key(|r| r.0);
        }
        Ok(refs)
    }

    /// The conditions of a query that reads ids and times, not whole items: from the arrival
    /// rows' copies of the items' feed and date once they all have them.
    async fn narrow_conditions(&self, user_id: i64, query: &SyncQuery) -> Result<Conditions> {
        let clusters = self.clusters_ready().await;
        Conditions::build(user_id, query, clusters, self.arrival_dates_ready().await)
    }

    /// Every id (in the query's [`SyncIds`]) of the user's items matching `query`, lowest
    /// first, however many (its order, offset and limit aside): the Fever API's
    /// `unread_item_ids` and `saved_item_ids`, which apps take as the whole truth (an item
    /// missing from the list is read, or not saved). Read as one row, the ids in text (as
    /// [`Store::sync_arrival_refs`] reads a page, for the same reasons: a million rows handed
    /// over one by one would cost more than the query).
    pub async fn sync_id_list(&self, user_id: i64, query: &SyncQuery) -> Result<Vec<i64>> {
        let query = SyncQuery {
            order: SyncOrder::IdAscending,
            after: None,
            offset: 0,
            ..query.clone()
        };
        let c = self.narrow_conditions(user_id, &query).await?;
        let (from, user) = from_sync_narrow(&query, &c, false);
        let id = id_column(&query);
        let list = match &*self.pools {
            crate::Pools::Sqlite { .. } => "group_concat(id, ' ')",
            crate::Pools::Postgres(_) => "string_agg(id::text, ' ')",
        };
        let sql = format!(
            "SELECT {list} FROM (SELECT {id} AS id {from} WHERE {user} AND {}) AS ids",
            c.where_clause()
        );
        let ids: Option<String> = with_db!(self, read, |db| {
            bound!(sql, &c.binds, |q| {
                use sqlx::Row;
                q.fetch_one(db).await?.try_get(0)?
            })
        });
        let mut list = NumberList(ids.as_deref().unwrap_or("").as_bytes());
        let mut ids = Vec::new();
        while let Some(id) = list.next_number()? {
            ids.push(id);
        }
        // Unordered in the statement: an ordered aggregate of a million ids sorts them on
        // PostgreSQL (on disk past `work_mem`), and a join that keeps the key's order probes
        // the subscriptions and states row by row instead of hashing them.
        ids.sort_unstable();
        Ok(ids)
    }

    /// Marks read every unread item of the user's that `query` selects (its read filter,
    /// order, offset and limit aside), however many, a thousand at a time, as marks by id do.
    /// For marks the watermark cannot make: by label, or by arrival time (an app's
    /// "everything up to the newest I have shown"). Returns how many items became read.
    pub async fn mark_sync_items_read(&self, user_id: i64, query: &SyncQuery) -> Result<u64> {
        let mut query = SyncQuery {
            read: Some(false),
            order: SyncOrder::IdAscending,
            after: None,
            offset: 0,
            limit: MAX_SYNC_ITEM_IDS,
            ..query.clone()
        };
        let mut marked = 0;
        // Pages of the lowest ids past the last page's: a heavy user's "mark everything
        // before T" (Fever's `before`, Google Reader's `ts`) selects a million items, and
        // a single page left all but the first 100,000 unread. The cursor, not the read
        // filter alone, moves the loop on, so an item that stays unread cannot hold it.
        loop {
            let page = self.sync_item_ids(user_id, &query).await?;
            let ids: Vec<i64> = page.iter().map(|r| r.item_id).collect();
            for chunk in ids.chunks(crate::MAX_MARK_IDS) {
                marked += self
                    .mark_read(user_id, &crate::MarkReadScope::Ids(chunk.to_vec()), None)
                    .await?;
            }
            match page.last() {
                Some(last) if page.len() as i64 >= MAX_SYNC_ITEM_IDS => {
                    query.id_above = Some(last.id);
                }
                _ => return Ok(marked),
            }
        }
    }

    /// The items behind some of the user's arrival numbers ([`SyncIds::Arrival`]), as
    /// (arrival number, item id); numbers that are not the user's are left out. At most
    /// [`MAX_SYNC_IDS`] at once.
    pub async fn items_of_sync_ids(&self, user_id: i64, seqs: &[i64]) -> Result<Vec<(i64, i64)>> {
        if seqs.len() > MAX_SYNC_IDS {
            return Err(StoreError::Invalid(format!(
                "at most {MAX_SYNC_IDS} item ids can be asked for at once"
            )));
        }
        if seqs.is_empty() {
            return Ok(Vec::new());
        }
        let placeholders: Vec<String> = (0..seqs.len()).map(|n| format!("${}", n + 2)).collect();
        let sql = format!(
            "SELECT seq, item_id FROM user_items WHERE user_id = $1 AND seq IN ({})",
            placeholders.join(", ")
        );
        Ok(with_db!(self, read, |db| {
            let mut q = sqlx::query_as(sqlx::AssertSqlSafe(sql.clone())).bind(user_id);
            for seq in seqs {
                q = q.bind(*seq);
            }
            q.fetch_all(db).await?
        }))
    }

    /// How many of the user's items match `query` (its order, offset and limit aside).
    pub async fn count_sync_items(&self, user_id: i64, query: &SyncQuery) -> Result<i64> {
        let c = self.narrow_conditions(user_id, query).await?;
        let (from, user) = from_sync_narrow(query, &c, false);
        let sql = format!(
            "SELECT COUNT(*) {from} WHERE {user} AND {}",
            c.where_clause()
        );
        Ok(with_db!(self, read, |db| {
            bound!(sql, &c.binds, |q| {
                use sqlx::Row;
                q.fetch_one(db).await?.try_get::<i64, _>(0)?
            })
        }))
    }

    /// The user's subscriptions with unread items, in the order of
    /// [`Store::list_subscriptions`] (by title, then id), each with its unread count and the
    /// publication time of its newest unread item (the Google Reader API's `unread-count`
    /// and its `newestItemTimestampUsec`): one statement, each subscription walking its
    /// feed's items newest first until the first unread one, and one row, a JSON array (as
    /// [`Store::sync_subscriptions`] reads its list on SQLite, for the same reason).
    pub async fn unread_feeds(&self, user_id: i64) -> Result<Vec<UnreadFeed>> {
        let from = format!(
            "FROM (SELECT s.id, s.feed_id, s.group_id, s.unread_count,
                          LOWER(COALESCE(s.title, f.title, f.url)) AS title,
                          (SELECT i.published_at FROM items i
                           LEFT JOIN item_states st ON st.user_id = $1 AND st.item_id = i.id
                           WHERE i.feed_id = s.feed_id AND NOT {IS_READ}
                           ORDER BY i.published_at DESC, i.id DESC LIMIT 1) AS newest
                   FROM subscriptions s
                   JOIN feeds f ON f.id = s.feed_id
                   WHERE s.user_id = $1 AND s.unread_count > 0) AS unread"
        );
        let columns = "feed_id, group_id, unread_count, newest";
        let mut feeds: Vec<UnreadFeed> = self
            .json_rows(columns, ("title", "id"), &from, user_id, "unread feeds")
            .await?;
        // A story from several feeds counts once when the user lists it once (issue 35), as
        // in the web UI's counts: the copies shown through another are left out. Two short
        // reads, both empty for a user without copies.
        if self.collapses_duplicates(user_id).await? {
            let duplicates = self.duplicate_unread(user_id).await?;
            if !duplicates.is_empty() {
                for feed in &mut feeds {
                    feed.unread -= duplicates.get(&feed.feed_id).copied().unwrap_or(0);
                }
                feeds.retain(|feed| feed.unread > 0);
            }
        }
        Ok(feeds)
    }

    /// The rows of `from` (a `FROM … WHERE …` with the user's id as `$1`) by `key` and then
    /// `id` (text and a number), read as one row: a JSON array of one array of `columns` a
    /// row (each engine's JSON aggregate), deserialized into `T`, whose fields come in the
    /// order of `columns`. For listings of hundreds of short rows that apps ask for on every
    /// sync: with a row each, sqlx's SQLite driver copies every value and hands each row from
    /// its worker thread to the caller. On SQLite each row carries its key and id and is put in
    /// order here: its aggregate with an `ORDER BY` inserts every row into a b-tree of its own
    /// first (a tenth of `subscription/list`'s CPU), and text in SQLite's default collation
    /// compares byte by byte, as Rust's strings do. PostgreSQL's collation is the database's
    /// locale, so it orders the rows itself.
    async fn json_rows<T: serde::de::DeserializeOwned>(
        &self,
        columns: &str,
        (key, id): (&str, &str),
        from: &str,
        user_id: i64,
        what: &str,
    ) -> Result<Vec<T>> {
        let sql = match self.engine() {
            crate::Engine::Sqlite => {
                format!(
                    "SELECT json_group_array(json_array({key}, {id}, json_array({columns}))) {from}"
                )
            }
            crate::Engine::Postgres => format!(
                "SELECT json_agg(json_build_array({columns}) ORDER BY {key}, {id})::text {from}"
            ),
        };
        // PostgreSQL's aggregate over no rows is NULL; SQLite's is `[]`.
        let list: Option<String> = with_db!(self, read, |db| {
            sqlx::query_scalar(sqlx::AssertSqlSafe(sql))
                .bind(user_id)
                .fetch_one(db)
                .await?
        });
        let list = list.as_deref().unwrap_or("[]");
        let unreadable = |error: serde_json::Error| {
            StoreError::Database(sqlx::Error::Decode(
                format!("the {what} does not read: {error}").into(),
            ))
        };
        if self.engine() == crate::Engine::Postgres {
            return serde_json::from_str(list).map_err(unreadable);
        }
        let mut rows: Vec<(String, i64, T)> = serde_json::from_str(list).map_err(unreadable)?;
        rows.sort_unstable_by(|a, b| (&a.0, a.1).cmp(&(&b.0, b.1)));
        Ok(rows.into_iter().map(|(_, _, row)| row).collect())
    }

    /// How many items each of the user's subscribed feeds holds, as (feed id, items), for
    /// feeds with items.
    pub async fn count_items_per_feed(&self, user_id: i64) -> Result<Vec<(i64, i64)>> {
        Ok(with_db!(self, read, |db| {
            sqlx::query_as(
                "SELECT s.feed_id, COUNT(*) FROM subscriptions s
                 JOIN items i ON i.feed_id = s.feed_id
                 WHERE s.user_id = $1 GROUP BY s.feed_id ORDER BY s.feed_id",
            )
            .bind(user_id)
            .fetch_all(db)
            .await?
        }))
    }

    /// Sets the read and/or starred state of several of the user's items at once; ids that
    /// are not the user's are skipped. Returns how many items were found.
    pub async fn set_items_state(
        &self,
        user_id: i64,
        ids: &[i64],
        is_read: Option<bool>,
        is_starred: Option<bool>,
    ) -> Result<u64> {
        if ids.len() > MAX_SYNC_IDS {
            return Err(StoreError::Invalid(format!(
                "at most {MAX_SYNC_IDS} items can be changed at once"
            )));
        }
        let mut found = 0;
        for id in ids {
            match self.set_item_state(user_id, *id, is_read, is_starred).await {
                Ok(_) => found += 1,
                Err(StoreError::NotFound(_)) => {}
                Err(error) => return Err(error),
            }
        }
        Ok(found)
    }

    /// Puts a label on one of the user's items (idempotent). Returns whether the item is the
    /// user's.
    pub async fn add_item_label(&self, user_id: i64, item_id: i64, label: &str) -> Result<bool> {
        let label = check_label(label)?;
        let now = unix_now();
        // Label rows have no foreign keys on PostgreSQL (version 55): the item's and the
        // subscription's rows are locked as a foreign key would lock them, so that a deletion
        // committing meanwhile leaves no label behind (the row is then skipped). SQLite has
        // one writer, so nothing deletes between this statement's read and its write.
        let lock = match self.engine() {
            crate::Engine::Postgres => "FOR KEY SHARE OF i, s",
            crate::Engine::Sqlite => "",
        };
        // On SQLite the label's count goes up in the same transaction (migration 57).
        let inserted = in_tx!(self, |tx| {
            let inserted = sqlx::query(sqlx::AssertSqlSafe(format!(
                "INSERT INTO item_labels (user_id, item_id, label, created_at)
                 SELECT $1, i.id, $3, $4 FROM items i
                 JOIN subscriptions s ON s.feed_id = i.feed_id AND s.user_id = $1
                 WHERE i.id = $2 {lock}
                 ON CONFLICT (user_id, item_id, label) DO NOTHING"
            )))
            .bind(user_id)
            .bind(item_id)
            .bind(&label)
            .bind(now)
            .execute(&mut *tx)
            .await?
            .rows_affected();
            if inserted > 0 {
                LabelNames::count_added_labels(&mut *tx, &[(user_id, label.as_str())]).await?;
            }
            inserted
        });
        if inserted > 0 {
            return Ok(true);
        }
        // Nothing inserted: already labelled, or not the user's item.
        Ok(self.item(user_id, item_id).await.is_ok())
    }

    /// Takes a label off one of the user's items (idempotent).
    pub async fn remove_item_label(&self, user_id: i64, item_id: i64, label: &str) -> Result<()> {
        with_db!(self, write, |db| {
            sqlx::query(
                "DELETE FROM item_labels WHERE user_id = $1 AND item_id = $2 AND label = $3",
            )
            .bind(user_id)
            .bind(item_id)
            .bind(label.trim())
            .execute(db)
            .await?;
        });
        Ok(())
    }

    /// The labels on the given items of the user, as (item id, label), by item then label.
    pub async fn item_labels(&self, user_id: i64, item_ids: &[i64]) -> Result<Vec<(i64, String)>> {
        let mut labels = Vec::new();
        for chunk in item_ids.chunks(500) {
            let placeholders: Vec<String> =
                (0..chunk.len()).map(|n| format!("${}", n + 2)).collect();
            let sql = format!(
                "SELECT item_id, label FROM item_labels
                 WHERE user_id = $1 AND item_id IN ({}) ORDER BY item_id, label",
                placeholders.join(", ")
            );
            let rows: Vec<(i64, String)> = with_db!(self, read, |db| {
                let mut q = sqlx::query_as(sqlx::AssertSqlSafe(sql)).bind(user_id);
                for id in chunk {
                    q = q.bind(*id);
                }
                q.fetch_all(db).await?
            });
            labels.extend(rows);
        }
        Ok(labels)
    }

    /// Every label the user has put on items, sorted (on SQLite from each user's label
    /// names, migration 57).
    pub async fn list_item_labels(&self, user_id: i64) -> Result<Vec<String>> {
        let sql = crate::label_names::list_labels_sql(self.engine());
        Ok(with_db!(self, read, |db| {
            sqlx::query_scalar(sql).bind(user_id).fetch_all(db).await?
        }))
    }

    /// Renames a label on all of the user's items; items with both labels keep one.
    pub async fn rename_item_label(&self, user_id: i64, from: &str, to: &str) -> Result<u64> {
        let to = check_label(to)?;
        let from = from.trim().to_string();
        // On SQLite each statement scans every label row (migration 57): a label the user
        // does not have (a folder's name, renamed through the same call) needs none.
        Ok(in_tx!(self, |tx| {
            if !tx.may_have_label(user_id, &from).await? {
                0
            } else {
                // Onto itself the merge would take every row (all are "already there").
                if to != from && tx.may_have_label(user_id, &to).await? {
                    sqlx::query(
                        "DELETE FROM item_labels WHERE user_id = $1 AND label = $2
                           AND item_id IN (SELECT item_id FROM item_labels
                                           WHERE user_id = $1 AND label = $3)",
                    )
                    .bind(user_id)
                    .bind(&from)
                    .bind(&to)
                    .execute(&mut *tx)
                    .await?;
                }
                sqlx::query("UPDATE item_labels SET label = $3 WHERE user_id = $1 AND label = $2")
                    .bind(user_id)
                    .bind(&from)
                    .bind(&to)
                    .execute(&mut *tx)
                    .await?
                    .rows_affected()
            }
        }))
    }

    /// Removes a label from all of the user's items.
    pub async fn delete_item_label(&self, user_id: i64, label: &str) -> Result<u64> {
        let label = label.trim();
        // As for a rename: no scan on SQLite for a label the user does not have.
        Ok(in_tx!(self, |tx| {
            if !tx.may_have_label(user_id, label).await? {
                0
            } else {
                sqlx::query("DELETE FROM item_labels WHERE user_id = $1 AND label = $2")
                    .bind(user_id)
                    .bind(label)
                    .execute(&mut *tx)
                    .await?
                    .rows_affected()
            }
        }))
    }

    /// Records the Fever API's digest of an API key, md5(username:key) as 32 hex digits, so
    /// that Fever clients can sign in with that key. Only its SHA-256 is stored
    /// ([`fever_digest_hash`]): the digest itself is what a Fever client presents, so a copy
    /// of the table must not hold it.
    pub async fn set_api_key_fever_hash(&self, key_id: i64, fever_md5: &str) -> Result<()> {
        self.set_fever_digest(
            key_id,
            "UPDATE api_keys SET fever_digest_sha256 = $1 WHERE id = $2",
            fever_md5,
        )
        .await
    }

    /// Records a second Fever digest of an API key, made with the user name's key
    /// ([`crate::username_key`]) instead of the name as stored, so that a Fever client given
    /// the name in another case or width signs in too. Stored hashed, as the first.
    pub async fn set_api_key_fever_hash_folded(&self, key_id: i64, fever_md5: &str) -> Result<()> {
        self.set_fever_digest(
            key_id,
            "UPDATE api_keys SET fever_digest_sha256_folded = $1 WHERE id = $2",
            fever_md5,
        )
        .await
    }

    async fn set_fever_digest(
        &self,
        key_id: i64,
        update: &'static str,
        fever_md5: &str,
    ) -> Result<()> {
        let fever_md5 = fever_md5.trim().to_ascii_lowercase();
        if fever_md5.len() != 32 || !fever_md5.bytes().all(|b| b.is_ascii_hexdigit()) {
            return Err(StoreError::Invalid(
                "a Fever key digest is 32 hexadecimal digits".into(),
            ));
        }
        let updated = with_db!(self, write, |db| {
            sqlx::query(update)
                .bind(fever_digest_hash(&fever_md5))
                .bind(key_id)
                .execute(db)
                .await?
                .rows_affected()
        });
        if updated == 0 {
            return Err(StoreError::NotFound("API key"));
        }
        Ok(())
    }
}

/// Reads pairs of numbers of 8 bytes each, big-endian, one pair after the other (PostgreSQL's
/// `int8send` of [`Store::sync_arrival_refs`]).
fn binary_number_pairs(bytes: &[u8]) -> Result<Vec<(i64, i64)>> {
    if !bytes.len().is_multiple_of(16) {
        return Err(StoreError::Database(sqlx::Error::Decode(
            format!(
                "a page of sync ids of {} bytes, not pairs of 8-byte numbers",
                bytes.len()
            )
            .into(),
        )));
    }
    let number = |b: &[u8]| {
        let mut word = [0u8; 8];
        word.copy_from_slice(b);
        i64::from_be_bytes(word)
    };
    Ok(bytes
        .chunks_exact(16)
        .map(|pair| (number(&pair[..8]), number(&pair[8..])))
        .collect())
}

/// Reads two lists of numbers separated by spaces (SQLite's `group_concat` of
/// [`Store::sync_arrival_refs`]) into pairs, the first list's n-th number with the
/// second's; `expected` is a guess of their length. In one pass over both, byte by byte:
/// through `str::parse` into two vectors, then zipped, this was a tenth of the server's CPU
/// for a page of 1,000 ids.
fn parse_number_pairs(firsts: &str, seconds: &str, expected: i64) -> Result<Vec<(i64, i64)>> {
    let capacity = usize::try_from(expected)
        .unwrap_or(0)
        .min(firsts.len() / 2 + 1);
    let mut pairs = Vec::with_capacity(capacity);
    let (mut firsts, mut seconds) = (
        NumberList(firsts.as_bytes()),
        NumberList(seconds.as_bytes()),
    );
    loop {
        match (firsts.next_number()?, seconds.next_number()?) {
            (Some(first), Some(second)) => pairs.push((first, second)),
            (None, None) => return Ok(pairs),
            _ => {
                return Err(StoreError::Database(sqlx::Error::Decode(
                    "the lists of sync ids and arrival times differ in length".into(),
                )));
            }
        }
    }
}

/// What is left to read of a list of decimal numbers separated by ASCII white space.
struct NumberList<'a>(&'a [u8]);

impl NumberList<'_> {
    /// The next number, or none at the list's end; an error for anything but an optional
    /// `-` and digits that fit an `i64`.
    fn next_number(&mut self) -> Result<Option<i64>> {
        let start = self.0.iter().position(|b| !b.is_ascii_whitespace());
        let Some(start) = start else {
            self.0 = &[];
            return Ok(None);
        };
        let rest = &self.0[start..];
        let end = rest
            .iter()
            .position(u8::is_ascii_whitespace)
            .unwrap_or(rest.len());
        let (token, after) = rest.split_at(end);
        self.0 = after;
        let (negative, digits) = match token.split_first() {
            Some((b'-', digits)) => (true, digits),
            _ => (false, token),
        };
        let mut value: i64 = 0;
        for &digit in digits {
            let next = if digit.is_ascii_digit() {
                let d = i64::from(digit - b'0');
                value.checked_mul(10).and_then(|v| {
                    if negative {
                        v.checked_sub(d)
                    } else {
                        v.checked_add(d)
                    }
                })
            } else {
                None
            };
            value = next.ok_or_else(|| bad_number(token))?;
        }
        if digits.is_empty() {
            return Err(bad_number(token));
        }
        Ok(Some(value))
    }
}

fn bad_number(token: &[u8]) -> StoreError {
    StoreError::Database(sqlx::Error::Decode(
        format!(
            "a sync id or time listed as {:?}",
            String::from_utf8_lossy(token)
        )
        .into(),
    ))
}

/// What is stored of a Fever digest: SHA-256 of the digest in lower case, as 64 hex digits.
/// A fast hash is enough: the digest hides a random 256-bit key, so nothing can be guessed
/// from the hash, and sign-in hashes what the client sends and looks that up by index (no
/// comparison of secrets byte by byte, so nothing to time).
pub(crate) fn fever_digest_hash(fever_md5: &str) -> String {
    use sha2::{Digest, Sha256};
    hex::encode(Sha256::digest(
        fever_md5.trim().to_ascii_lowercase().as_bytes(),
    ))
}

fn check_label(label: &str) -> Result<String> {
    let label = label.trim();
    if label.is_empty() || label.chars().count() > MAX_LABEL_CHARS {
        return Err(StoreError::Invalid(format!(
            "a label has 1 to {MAX_LABEL_CHARS} characters"
        )));
    }
    Ok(label.to_string())
}

#[cfg(test)]
mod tests {
    use super::{binary_number_pairs, parse_number_pairs};

    #[test]
    fn binary_number_pairs_are_read_in_order() {
        let mut bytes = Vec::new();
        for n in [3i64, 30, -1, i64::MAX, i64::MIN, 0] {
            bytes.extend_from_slice(&n.to_be_bytes());
        }
        assert_eq!(
            binary_number_pairs(&bytes).unwrap(),
            vec![(3, 30), (-1, i64::MAX), (i64::MIN, 0)]
        );
        assert_eq!(binary_number_pairs(&[]).unwrap(), vec![]);
        // A page cut anywhere but between pairs is an error, not a wrong pair.
        for cut in [1, 8, 15, 17, 40] {
            assert!(binary_number_pairs(&bytes[..cut]).is_err(), "{cut} bytes");
        }
    }

    #[test]
    fn number_pairs_are_read_in_order() {
        let pairs = parse_number_pairs("3 2 -1", " 30  20 9223372036854775807 ", 3).unwrap();
        assert_eq!(pairs, vec![(3, 30), (2, 20), (-1, i64::MAX)]);
        assert_eq!(parse_number_pairs("", "", 1000).unwrap(), vec![]);
        assert_eq!(
            parse_number_pairs("-9223372036854775808", "0", 0).unwrap(),
            vec![(i64::MIN, 0)]
        );
    }

    #[test]
    fn bad_number_lists_are_errors() {
        for (firsts, seconds) in [
            ("1 2", "1"),
            ("1", "1 2"),
            ("1 x", "1 2"),
            ("1 -", "1 2"),
            ("1 2-", "1 2"),
            ("9223372036854775808", "1"),
            ("1", "-9223372036854775809"),
        ] {
            assert!(
                parse_number_pairs(firsts, seconds, 2).is_err(),
                "{firsts:?} / {seconds:?}"
            );
        }
    }
}
