//! Full-text search (F35) over items' titles and content, on both engines with the same
//! results.
//!
//! The tokens come from `tidings-text` (words folded for case, width and diacritics; CJK as
//! character bigrams). SQLite stores them space-joined in a contentless FTS5 table read by the
//! `ascii` tokenizer; PostgreSQL stores them as a tsvector built directly from the tokens and
//! their positions, under a GIN index. A query becomes an FTS5 MATCH expression or a tsquery
//! over the same tokens: every required word or phrase ANDed, excluded ones with NOT, a lone
//! CJK character as a prefix. Both engines therefore match the same items, and a listing's
//! filters, order and cursor apply to the matches as they do to a normal listing.

use tidings_text::{SearchQuery, SearchTerm, TermStatistics, rank};

use crate::backfill_cursor::BackfillStep;
use crate::reading::{
    FROM_ITEMS, FROM_STATES, IS_READ, Listing, NOT_HIDDEN, STATES_JOINED, SUMMARY_COLUMNS,
    SqlValue, decode_summary, summary_from_row,
};
use crate::search_index::{
    full_texts_of, item_index_value, item_tokens, quote_lexeme, searchable_text, text_tokens,
    translations_of, write_index_rows,
};
use crate::{
    Bookmark, Engine, ItemCursor, ItemFilter, ItemOrder, ItemQuery, ItemSummary, MAX_PAGE_SIZE,
    Result, Store, in_tx, with_db,
};

/// Existing items indexed per step of the backfill when the caller does not say.
pub const DEFAULT_BACKFILL_BATCH: i64 = 500;

/// How a search by date finds its page (see `Store::matching_by_date`); tests try others.
#[derive(Debug, Clone, Copy)]
struct SearchPlan {
    /// Up to this many matching items in the whole index, the matches are collected from
    /// the index and sorted by date; with more, a page is found by walking the date index.
    collect_at_most: i64,
    /// Items in the first window of that walk; each next window holds twice as many.
    first_window: i64,
    /// A search by relevance ranks this many matches: the newest ones in the listing's scope.
    ranked: i64,
    /// On PostgreSQL, whether the first window is sized by the estimated share of matching
    /// items (at least `first_window`).
    size_by_estimate: bool,
    /// A user with at most this many items in the listing's scope has each of them checked
    /// against the index instead of the matches collected or the date index walked (0: never).
    scope_checked_at_most: i64,
}

/// The store's plan on SQLite. Collecting 20,000 matches takes about 10 ms there; a word in
/// more than 2 % of a million items fills a page of 50 from a first window of 4,000 items,
/// and a window costs little more than its matches.
const SQLITE_PLAN: SearchPlan = SearchPlan {
    collect_at_most: 20_000,
    first_window: 4_000,
    ranked: RANKED_CANDIDATES,
    size_by_estimate: false,
    // Not measured on SQLite, where a row's check is an FTS5 query of its own: off there.
    scope_checked_at_most: 0,
};

/// The store's plan on PostgreSQL, where collecting reads a table row and an index entry per
/// match (about 15 µs each under load), and a window reads about 0.5 µs per item (the date
/// index and the primary key's range, ANDed with the GIN index's matches), with about 100 ×
/// items / matches items in a first window that holds a page: collecting is cheaper up to
/// about 2,000 matches in a million items.
const POSTGRES_PLAN: SearchPlan = SearchPlan {
    collect_at_most: 2_000,
    first_window: 1_000,
    ranked: RANKED_CANDIDATES,
    size_by_estimate: true,
    scope_checked_at_most: SCOPE_CHECKED_AT_MOST,
};

/// The date walk's windows are the whole installation's items by date, so for a user who
/// follows a small part of a large one most of each window is other users' items: a word in
/// 8 % of 10,000,000 items took 2-3 s for a user of 5,100 items, walked to the end for the
/// page's 51 matches. Checking each of such a user's items against the index is one look-up an
/// item (about 20 ms for those 5,100 on PostgreSQL), bounded by this many: a user with more
/// is a large part of the installation, whose windows hold enough of their items. It is also
/// cheaper than collecting when a term is common (see `Store::matching`).
const SCOPE_CHECKED_AT_MOST: i64 = 10_000;

/// On PostgreSQL, an estimate of matches up to this many times a plan's `collect_at_most`
/// is checked by counting (see `Store::matching`): its statistics give every word they do
/// not list about the share of the rarest word they do.
const UNCERTAIN_ESTIMATE: i64 = 4;

/// The largest window of the date walk.
const MAX_WINDOW: i64 = 1 << 18;

/// A search by relevance ranks this many matches: the newest ones in the listing's scope.
/// Ranking every match of a common word would read a large part of the index for each page.
pub const RANKED_CANDIDATES: i64 = 200;

/// Relevance weighs a query's terms by how many of the newest this many stored items contain
/// each of them (BM25's document frequency), counted from the index.
pub const STATISTICS_SAMPLE: i64 = 10_000;

/// Items looked up by id through `items_id_date_feed` (SQLite), which holds what a search's
/// conditions and order need, so collecting thousands of matches reads no item row.
const FROM_ITEMS_BY_ID: &str = "FROM items i INDEXED BY items_id_date_feed
     CROSS JOIN subscriptions s
     JOIN feeds f ON f.id = s.feed_id
     LEFT JOIN item_states st ON st.user_id = s.user_id AND st.item_id = i.id";

/// The user's items from their subscriptions: SQLite joins in the order written (`CROSS
/// JOIN`), so the user's few subscriptions come first and each feed's items by its index,
/// never the whole items table; PostgreSQL plans the order itself.
const FROM_SUBSCRIPTIONS: &str = "FROM subscriptions s
     CROSS JOIN items i
     JOIN feeds f ON f.id = s.feed_id
     LEFT JOIN item_states st ON st.user_id = s.user_id AND st.item_id = i.id";

/// The conditions of the user's listing `scope` (subscription, filter, scope, dates, cursor)
/// over [`FROM_ITEMS`], `$1` the user.
fn search_listing(user_id: i64, scope: &ItemQuery) -> Listing {
    let mut listing = Listing::new(user_id);
    listing.push("s.feed_id = i.feed_id AND s.user_id = $1".into());
    match scope.filter {
        ItemFilter::All => listing.push(NOT_HIDDEN.into()),
        ItemFilter::Unread => listing.push(format!("NOT {IS_READ}")),
        ItemFilter::Starred => listing.push("COALESCE(st.is_starred, FALSE)".into()),
    }
    listing.common(scope);
    listing
}

/// A condition that item `i` matches `query`, checked item by item (for few items).
fn row_matches(engine: Engine, listing: &mut Listing, query: &SearchQuery) -> String {
    match engine {
        Engine::Sqlite => {
            let matched = listing.bind_text(fts5_match(query));
            format!(
                "EXISTS (SELECT 1 FROM item_search
                         WHERE item_search MATCH {matched} AND item_search.rowid = i.id)"
            )
        }
        Engine::Postgres => {
            let matched = listing.bind_text(tsquery(query));
            format!(
                "EXISTS (SELECT 1 FROM item_search m
                         WHERE m.item_id = i.id AND m.document @@ {matched}::tsquery)"
            )
        }
    }
}

/// The columns of a search's rows over [`FROM_ITEMS`] or [`FROM_STATES`], in the order
/// `search_rows` reads: the item as a listing shows it, then its content (else summary) and
/// its full article, for a snippet and for ranking. (Read for the page's rows only, by the
/// article table's primary key, not for each match.)
fn search_columns() -> String {
    format!(
        "{SUMMARY_COLUMNS}, {IS_READ}, COALESCE(st.is_starred, FALSE), i.thumbnail_url,
         i.language, COALESCE(i.content, i.summary),
         (SELECT ft.content FROM item_full_texts ft WHERE ft.item_id = i.id)"
    )
}

/// A page of search results: the ids of the first `fetch` items `from` a join like
/// [`FROM_ITEMS`] that meet `matches` and the listing's conditions (sorted by `inner_order`,
/// the same order, perhaps written so that no index can give it), then their rows. (On
/// SQLite the ids come from the narrow index of [`FROM_ITEMS_BY_ID`], so that only the page's
/// item rows are read.)
fn page_sql(
    columns: &str,
    from: &str,
    matches: &str,
    listing: &Listing,
    (order, inner_order): (&str, &str),
    fetch: &str,
) -> String {
    format!(
        "SELECT {columns} {FROM_ITEMS}
         WHERE s.feed_id = i.feed_id AND s.user_id = $1
           AND i.id IN (SELECT i.id {from}
                        WHERE {matches} AND {}
                        ORDER BY {inner_order}
                        LIMIT {fetch})
         ORDER BY {order}",
        listing.conditions()
    )
}

/// The conditions that select the items of `scope` by date (its feed, dates and cursor; not
/// its user, group or filter, which a search applies to the matches), which a date index
/// answers alone; their values are bound on `listing`.
fn date_conditions(listing: &mut Listing, scope: &ItemQuery) -> String {
    let mut dates = listing.continued();
    dates.common(&ItemQuery {
        group_id: None,
        ..scope.clone()
    });
    let conditions = dates.conditions();
    listing.binds = dates.binds;
    conditions
}

/// The rows a line of PostgreSQL's EXPLAIN output estimates (`… rows=123 width=4)`).
fn planned_rows(line: &str) -> Option<i64> {
    let rest = &line[line.find(" rows=")? + 6..];
    let digits: String = rest.chars().take_while(char::is_ascii_digit).collect();
    digits.parse().ok()
}

/// A listing's order by date, as SQL over `i`.
fn date_order(order: ItemOrder) -> &'static str {
    match order {
        ItemOrder::NewestFirst => "i.published_at DESC, i.id DESC",
        ItemOrder::OldestFirst => "i.published_at ASC, i.id ASC",
    }
}

/// [`date_order`] as expressions no index gives, so that PostgreSQL sorts the matches it
/// found instead of walking a date index to meet them in order.
fn unindexed_date_order(order: ItemOrder) -> &'static str {
    match order {
        ItemOrder::NewestFirst => "i.published_at + 0 DESC, i.id + 0 DESC",
        ItemOrder::OldestFirst => "i.published_at + 0, i.id + 0",
    }
}

/// Items of a window of the date walk up to its edge, the date bound at `edge`: every item
/// of that second is in the window.
fn up_to_edge(order: ItemOrder, edge: &str) -> String {
    match order {
        ItemOrder::NewestFirst => format!("i.published_at >= {edge}"),
        ItemOrder::OldestFirst => format!("i.published_at <= {edge}"),
    }
}

/// What a date walk looks for: the first `fetch` of `user_id`'s items that match `query`.
#[derive(Clone, Copy)]
struct DateWalk<'a> {
    user_id: i64,
    query: &'a SearchQuery,
    fetch: i64,
}

/// One window of PostgreSQL's date walk, read before its matches are: the next items of the
/// listing by date up to the date of the `size`th, all of that second's items included (so
/// that the window is a range of dates, and the next one starts at the next second).
struct WindowBounds {
    /// The date of the window's last items; `None` when the window reaches the end of the
    /// listing.
    edge: Option<i64>,
    /// The lowest id among its items.
    lowest_id: i64,
    /// The highest id among its items.
    highest_id: i64,
}

/// `text` as a PostgreSQL string literal (standard conforming strings: only `'` is special).
fn sql_literal(text: &str) -> String {
    format!("'{}'", text.replace('\'', "''"))
}

/// A search over the user's items.
#[derive(Debug, Clone)]
pub struct ItemSearch {
    /// What to look for.
    pub query: SearchQuery,
    /// The listing's scope, filter, dates and page size; its order and cursor apply when not
    /// ordering by relevance.
    pub listing: ItemQuery,
    /// Best matches first instead of by date.
    pub by_relevance: bool,
    /// With `by_relevance`: how many matches earlier pages held.
    pub offset: i64,
}

/// An item that matched, with the plain text of its content for a snippet.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct SearchHit {
    /// The item as a listing shows it.
    pub item: ItemSummary,
    /// Its content (else its summary) as plain text, followed by its full article's (F6)
    /// when it has one: the text the index holds for it.
    pub text: String,
}

/// One page of search results.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct SearchPage {
    /// The matches, in the requested order.
    pub hits: Vec<SearchHit>,
    /// By date: where the next page starts, when there is one.
    pub next_cursor: Option<ItemCursor>,
    /// By relevance: the offset of the next page, when there is one.
    pub next_offset: Option<i64>,
}

/// A term as a tsquery: its tokens as a phrase (`<->`), the last one a prefix when asked.
fn tsquery_term(term: &SearchTerm) -> String {
    let parts: Vec<String> = term
        .tokens
        .iter()
        .enumerate()
        .map(|(k, token)| {
            let quoted = quote_lexeme(token);
            if term.prefix && k + 1 == term.tokens.len() {
                format!("{quoted}:*")
            } else {
                quoted
            }
        })
        .collect();
    format!("({})", parts.join(" <-> "))
}

/// The query as a PostgreSQL tsquery.
fn tsquery(query: &SearchQuery) -> String {
    let mut parts: Vec<String> = query.required().map(tsquery_term).collect();
    parts.extend(query.excluded().map(|t| format!("!{}", tsquery_term(t))));
    parts.join(" & ")
}

/// A term as an FTS5 phrase: its tokens in double quotes (the `ascii` tokenizer splits them at
/// the spaces), followed by `*` for a prefix.
fn fts5_term(term: &SearchTerm) -> String {
    let phrase = format!("\"{}\"", term.tokens.join(" ").replace('"', "\"\""));
    if term.prefix {
        format!("{phrase}*")
    } else {
        phrase
    }
}

/// The query as an FTS5 MATCH expression.
fn fts5_match(query: &SearchQuery) -> String {
    let required: Vec<String> = query.required().map(fts5_term).collect();
    let excluded: Vec<String> = query.excluded().map(fts5_term).collect();
    let mut out = format!("({})", required.join(" AND "));
    if !excluded.is_empty() {
        out.push_str(&format!(" NOT ({})", excluded.join(" OR ")));
    }
    out
}

type SearchRow = (crate::reading::SummaryRow, Option<String>, Option<String>);

impl Store {
    /// One page of the user's items matching `search`: the listing's scope (feed, group),
    /// filter (all, unread, starred) and dates apply, newest or oldest first with the
    /// listing's cursor, or best match first by offset among the newest
    /// [`RANKED_CANDIDATES`] matches.
    pub async fn search_items(&self, user_id: i64, search: &ItemSearch) -> Result<SearchPage> {
        let plan = match self.engine() {
            Engine::Sqlite => SQLITE_PLAN,
            Engine::Postgres => POSTGRES_PLAN,
        };
        self.search_items_planned(user_id, search, plan).await
    }

    /// [`Store::search_items`] with the plan given (tests try every plan).
    async fn search_items_planned(
        &self,
        user_id: i64,
        search: &ItemSearch,
        plan: SearchPlan,
    ) -> Result<SearchPage> {
        self.check_scope(user_id, &search.listing).await?;
        let limit = search.listing.limit.clamp(1, MAX_PAGE_SIZE);
        if search.by_relevance {
            let mut scope = search.listing.clone();
            scope.cursor = None;
            scope.order = ItemOrder::NewestFirst;
            // The candidates come newest first with their text; both engines rank them with
            // the same function over the same tokens, so the order is the same on both.
            let candidates = self
                .matching(user_id, &search.query, &scope, plan.ranked, plan)
                .await?;
            let documents: Vec<Vec<String>> = candidates
                .iter()
                .map(|hit| text_tokens(hit.item.title.as_deref(), &hit.text))
                .collect();
            let statistics = if candidates.is_empty() {
                TermStatistics {
                    documents: 0,
                    containing: Vec::new(),
                }
            } else {
                self.term_statistics(&search.query).await?
            };
            let order = rank(&search.query, &documents, &statistics);
            let offset = search.offset.max(0);
            let mut candidates: Vec<Option<SearchHit>> = candidates.into_iter().map(Some).collect();
            let hits = order
                .iter()
                .skip(usize::try_from(offset).unwrap_or(usize::MAX))
                .take(limit as usize)
                .filter_map(|&k| candidates[k].take())
                .collect();
            let more = (order.len() as i64) > offset.saturating_add(limit);
            return Ok(SearchPage {
                hits,
                next_cursor: None,
                next_offset: more.then(|| offset + limit),
            });
        }
        let mut hits = self
            .matching(user_id, &search.query, &search.listing, limit + 1, plan)
            .await?;
        let more = hits.len() as i64 > limit;
        hits.truncate(limit as usize);
        let next_cursor = if more {
            hits.last().map(|hit| ItemCursor {
                published_at: hit.item.published_at,
                id: hit.item.id,
            })
        } else {
            None
        };
        Ok(SearchPage {
            hits,
            next_cursor,
            next_offset: None,
        })
    }

    /// The first `fetch` items of the user's listing `scope` (its filter, scope, dates,
    /// cursor and order) that match `query`, in the listing's order.
    ///
    /// The plan depends on how many items the user has in the scope and how many match in
    /// the whole index. Starred items are few: the user's starred items are checked one by
    /// one, and so are all of a user's items in the scope when they are at most
    /// `plan.scope_checked_at_most` (see [`SCOPE_CHECKED_AT_MOST`]). Up to `plan.collect_at_most` matches
    /// are collected from the index and sorted by date (on SQLite through an index that holds
    /// each item's date and feed, so that no item row is read). More are found by walking
    /// the listing's date index a window at a time and matching only that window: both
    /// engines read the matches in the window's id range from the index (PostgreSQL by
    /// ANDing the GIN index's matches with the primary key's range), then keep those in the
    /// window. The first window holds `plan.first_window` items and each
    /// next one twice as many, so a common word needs one window and a rarer one a few.
    /// A window is one statement on SQLite and two on PostgreSQL (its bounds, then its
    /// matches); the collecting plan is one.
    async fn matching(
        &self,
        user_id: i64,
        query: &SearchQuery,
        scope: &ItemQuery,
        fetch: i64,
        plan: SearchPlan,
    ) -> Result<Vec<SearchHit>> {
        let engine = self.engine();
        let columns = search_columns();
        let order = date_order(scope.order);
        if scope.filter == ItemFilter::Starred {
            let mut listing = search_listing(user_id, scope);
            listing.push(format!("{STATES_JOINED} AND st.user_id = $1"));
            let matches = row_matches(engine, &mut listing, query);
            let fetch = listing.bind(fetch);
            let sql = format!(
                "SELECT {columns} {FROM_STATES}
                 WHERE {} AND {matches}
                 ORDER BY {order}
                 LIMIT {fetch}",
                listing.conditions()
            );
            return self.search_rows(sql, &listing.binds).await;
        }
        // On PostgreSQL a window that holds `fetch` matches grows with `fetch` while collecting
        // does not, so a longer fetch (a ranking's candidates) collects more before walking:
        // the two cost the same at about the square root of `fetch`.
        let collect_at_most = if plan.size_by_estimate && fetch > 51 {
            let scale = (fetch as f64 / 51.0).sqrt();
            (plan.collect_at_most as f64 * scale) as i64
        } else {
            plan.collect_at_most
        };
        // A small account's items are checked one by one whatever the matches: collecting
        // reads each term's whole list of matches in the index, a common word's from disk in
        // a large installation (347 ms for two words, one of them common, in 10,000,000).
        let checked = self
            .scope_is_small(user_id, scope, plan.scope_checked_at_most)
            .await?;
        let matches = if checked {
            0
        } else {
            self.count_matches(query, collect_at_most.saturating_add(1))
                .await?
        };
        // PostgreSQL's estimate for a word its statistics do not list is one figure for all
        // of them, near its rarest listed word's share (4,655 of a million here): a word in
        // 1,539 items was walked a window of 86,000 at a time, 248 ms, where collecting its
        // matches takes 20 ms. Near the line, the matches are counted, up to it.
        let collect = !checked
            && (matches <= collect_at_most
                || (plan.size_by_estimate
                    && engine == Engine::Postgres
                    && matches <= UNCERTAIN_ESTIMATE * collect_at_most
                    && self.matches_at_most(query, collect_at_most).await?));
        if collect || checked {
            let mut listing = search_listing(user_id, scope);
            let (from, matches) = match engine {
                _ if checked => (FROM_SUBSCRIPTIONS, row_matches(engine, &mut listing, query)),
                Engine::Sqlite => {
                    let matched = listing.bind_text(fts5_match(query));
                    (
                        FROM_ITEMS_BY_ID,
                        format!(
                            "i.id IN (SELECT rowid FROM item_search
                                      WHERE item_search MATCH {matched})"
                        ),
                    )
                }
                Engine::Postgres => {
                    let matched = listing.bind_text(tsquery(query));
                    (
                        FROM_ITEMS,
                        format!(
                            "i.id IN (SELECT item_id FROM item_search
                                      WHERE document @@ {matched}::tsquery)"
                        ),
                    )
                }
            };
            let fetch = listing.bind(fetch);
            // On PostgreSQL, the order as expressions the date index cannot give: otherwise
            // the planner, expecting the page early, walks the date index checking each item
            // against the index (150 ms for a word in 0.2 % of a million items, against 45
            // ms collecting its matches under the same load), or, checking a user's items,
            // walks the whole installation's dates as the date walk does.
            let inner_order = match engine {
                Engine::Sqlite => order,
                Engine::Postgres => unindexed_date_order(scope.order),
            };
            let sql = page_sql(
                &columns,
                from,
                &matches,
                &listing,
                (order, inner_order),
                &fetch,
            );
            return self.search_rows(sql, &listing.binds).await;
        }
        let mut size = plan.first_window.max(1);
        if plan.size_by_estimate && engine == Engine::Postgres {
            // Each item of a window costs a look at its index row here: size the first
            // window to hold about twice the page's matches.
            let items = self.estimated_index_rows().await?;
            size = size.max(2 * fetch * items / matches.max(1)).min(MAX_WINDOW);
        }
        let walk = DateWalk {
            user_id,
            query,
            fetch,
        };
        match &*self.pools {
            crate::Pools::Sqlite { .. } => self.sqlite_windows(walk, scope, size).await,
            crate::Pools::Postgres(_) => self.postgres_windows(walk, scope, size).await,
        }
    }

    /// The date walk on SQLite: each window is one statement, which reads the window's items
    /// from the date index, the index's matches within their id range, and keeps the matches
    /// in the window.
    async fn sqlite_windows(
        &self,
        walk: DateWalk<'_>,
        scope: &ItemQuery,
        mut size: i64,
    ) -> Result<Vec<SearchHit>> {
        let DateWalk {
            user_id,
            query,
            fetch,
        } = walk;
        let columns = search_columns();
        let order = date_order(scope.order);
        let mut found: Vec<SearchHit> = Vec::new();
        let mut window_scope = scope.clone();
        loop {
            // The window: the next `size` items by date in the feed (if one is given) and the
            // dates asked for, read from a date index alone.
            let mut listing = search_listing(user_id, &window_scope);
            let dates = date_conditions(&mut listing, &window_scope);
            let size_p = listing.bind(size);
            let matched = listing.bind_text(fts5_match(query));
            let matches = format!(
                "i.id IN (SELECT rowid FROM item_search
                          WHERE item_search MATCH {matched}
                            AND rowid >= (SELECT MIN(id) FROM dated)
                            AND rowid <= (SELECT MAX(id) FROM dated))
                 AND +i.id IN (SELECT id FROM dated)"
            );
            let rest = listing.bind(fetch - found.len() as i64);
            let sql = format!(
                "WITH dated AS MATERIALIZED (
                     SELECT i.id FROM items i WHERE {dates} ORDER BY {order} LIMIT {size_p})
                 {}",
                page_sql(
                    &columns,
                    FROM_ITEMS_BY_ID,
                    &matches,
                    &listing,
                    (order, order),
                    &rest
                )
            );
            found.extend(self.search_rows(sql, &listing.binds).await?);
            if found.len() as i64 >= fetch {
                break;
            }
            // The window's last item, if the window was full: the next one starts after it.
            let Some(last) = self.window_last(&window_scope, size).await? else {
                break;
            };
            window_scope.cursor = Some(last);
            size = size.saturating_mul(2).min(MAX_WINDOW);
        }
        Ok(found)
    }

    /// The date walk on PostgreSQL. Each window's bounds are read first and bound as numbers
    /// (see [`WindowBounds`]); its page is then the GIN index's matches within the window's id
    /// range (a BitmapAnd with the primary key's range, so that only the matches in the
    /// window are read), kept if they are in the window by date.
    ///
    /// Read inside the page's statement, as SQLite's walk does, the bounds were unknown to
    /// the planner until it ran: it took an id range for 5,006 items where there were
    /// 86,024, and it materialized the window, read it twice for its lowest and highest id
    /// and hashed it, 56 + 59 + 62 ms of a two-word search by relevance in a million items.
    async fn postgres_windows(
        &self,
        walk: DateWalk<'_>,
        scope: &ItemQuery,
        mut size: i64,
    ) -> Result<Vec<SearchHit>> {
        let columns = search_columns();
        let order = date_order(scope.order);
        // Not the date index's order: otherwise the planner, expecting the page early, walks
        // the date index checking each item of the window against the search index.
        let inner_order = unindexed_date_order(scope.order);
        let mut found: Vec<SearchHit> = Vec::new();
        let mut window_scope = scope.clone();
        loop {
            let Some(window) = self.window_bounds(&window_scope, size).await? else {
                break;
            };
            let mut listing = search_listing(walk.user_id, &window_scope);
            if let Some(edge) = window.edge {
                let edge = listing.bind(edge);
                listing.push(up_to_edge(scope.order, &edge));
            }
            // The id range bounds the index's matches alone: on `i` as well, PostgreSQL
            // takes it as unrelated to the dates and expects a hundredth of the window,
            // then checks each item of the window against the index (9,714 probes for a CJK
            // word, where one bitmap of the index found its 107 matches in the window).
            let low = listing.bind(window.lowest_id);
            let high = listing.bind(window.highest_id);
            let matched = listing.bind_text(tsquery(walk.query));
            let matches = format!(
                "i.id IN (SELECT m.item_id FROM item_search m
                          WHERE m.document @@ {matched}::tsquery
                            AND m.item_id >= {low} AND m.item_id <= {high})"
            );
            let rest = listing.bind(walk.fetch - found.len() as i64);
            let sql = page_sql(
                &columns,
                FROM_ITEMS,
                &matches,
                &listing,
                (order, inner_order),
                &rest,
            );
            found.extend(self.search_rows(sql, &listing.binds).await?);
            let Some(edge) = window.edge else {
                break;
            };
            if found.len() as i64 >= walk.fetch {
                break;
            }
            // After every item of the window's last second: an id no item has.
            let id = match scope.order {
                ItemOrder::NewestFirst => i64::MIN,
                ItemOrder::OldestFirst => i64::MAX,
            };
            window_scope.cursor = Some(ItemCursor {
                published_at: edge,
                id,
            });
            size = size.saturating_mul(2).min(MAX_WINDOW);
        }
        Ok(found)
    }

    /// The `size`th of the next items of `scope` by date (its feed, dates and cursor), read
    /// from a date index alone: a window's last item, `None` when fewer are left.
    async fn window_last(&self, scope: &ItemQuery, size: i64) -> Result<Option<ItemCursor>> {
        let order = date_order(scope.order);
        let mut last = Listing::unscoped();
        let dates = date_conditions(&mut last, scope);
        let offset = last.bind(size - 1);
        let sql = format!(
            "SELECT i.published_at, i.id FROM items i WHERE {dates}
             ORDER BY {order} LIMIT 1 OFFSET {offset}"
        );
        let last = self.pairs(sql, &last.binds).await?.pop();
        Ok(last.map(|(published_at, id)| ItemCursor { published_at, id }))
    }

    /// The bounds of the window of the next `size` items of `scope` by date (its feed, dates
    /// and cursor; not its user, group or filter), read from a date index alone; `None` when
    /// no items are left.
    async fn window_bounds(&self, scope: &ItemQuery, size: i64) -> Result<Option<WindowBounds>> {
        let edge = self
            .window_last(scope, size)
            .await?
            .map(|last| last.published_at);
        let mut window = Listing::unscoped();
        let mut dates = date_conditions(&mut window, scope);
        if let Some(edge) = edge {
            let edge = window.bind(edge);
            dates.push_str(" AND ");
            dates.push_str(&up_to_edge(scope.order, &edge));
        }
        // `+ 0`: not PostgreSQL's shortcut for MIN and MAX, the primary key walked from one
        // end until an item of the window, which reads most of the table when the window's
        // ids are at the other end.
        let sql = format!(
            "SELECT MIN(i.id + 0), MAX(i.id + 0) FROM items i WHERE {dates} HAVING COUNT(*) > 0"
        );
        let Some((lowest_id, highest_id)) = self.pairs(sql, &window.binds).await?.pop() else {
            return Ok(None);
        };
        Ok(Some(WindowBounds {
            edge,
            lowest_id,
            highest_id,
        }))
    }

    /// How many of the newest [`STATISTICS_SAMPLE`] stored items (by id) there are, and how
    /// many of them contain each required term of `query`: the terms' weights for
    /// [`rank`]. Counted, not estimated, on both engines, so both weigh the terms alike; a
    /// sample, so a common word costs little to count.
    async fn term_statistics(&self, query: &SearchQuery) -> Result<TermStatistics> {
        let engine = self.engine();
        let newest: i64 = with_db!(self, read, |db| {
            sqlx::query_scalar::<_, i64>("SELECT COALESCE(MAX(id), 0) FROM items")
                .fetch_one(db)
                .await?
        });
        let after = newest - STATISTICS_SAMPLE;
        // `$1` the id the sample starts after, `$2`… the terms.
        let mut columns = vec!["(SELECT COUNT(*) FROM items WHERE id > $1)".to_string()];
        let mut terms = Vec::new();
        for term in query.required() {
            let n = terms.len() + 2;
            columns.push(match engine {
                Engine::Sqlite => format!(
                    "(SELECT COUNT(*) FROM item_search WHERE item_search MATCH ${n} AND rowid > $1)"
                ),
                Engine::Postgres => format!(
                    "(SELECT COUNT(*) FROM item_search
                      WHERE item_id > $1 AND document @@ ${n}::tsquery)"
                ),
            });
            terms.push(match engine {
                Engine::Sqlite => fts5_term(term),
                Engine::Postgres => tsquery_term(term),
            });
        }
        let sql = format!("SELECT {}", columns.join(", "));
        let counts: Vec<i64> = with_db!(self, read, |db| {
            let mut statement = sqlx::query(sqlx::AssertSqlSafe(sql))
                .persistent(engine == Engine::Sqlite)
                .bind(after);
            for term in &terms {
                statement = statement.bind(term.as_str());
            }
            let row = statement.fetch_one(db).await?;
            let mut counts = Vec::with_capacity(terms.len() + 1);
            for k in 0..=terms.len() {
                counts.push(sqlx::Row::try_get::<i64, _>(&row, k)?);
            }
            counts
        });
        let as_count = |n: i64| u64::try_from(n).unwrap_or(0);
        Ok(TermStatistics {
            documents: as_count(counts[0]),
            containing: counts[1..].iter().copied().map(as_count).collect(),
        })
    }

    /// Runs a query of [`search_columns`] with the listing's values bound.
    async fn search_rows(&self, sql: String, binds: &[SqlValue]) -> Result<Vec<SearchHit>> {
        // PostgreSQL plans a statement prepared once for any values after a few runs; a
        // search's plan depends on its values (how common the words are, the window's size),
        // so there each runs unprepared and is planned for its values.
        let prepared = self.engine() == Engine::Sqlite;
        let rows: Vec<SearchRow> = with_db!(self, read, |db| {
            let mut query = sqlx::query(sqlx::AssertSqlSafe(sql)).persistent(prepared);
            for value in binds {
                query = match value {
                    SqlValue::Int(value) => query.bind(*value),
                    SqlValue::Text(value) => query.bind(value.as_str()),
                };
            }
            let mut rows = Vec::new();
            for row in query.fetch_all(db).await? {
                let summary = decode_summary(&row)?;
                // After the summary's columns (the language is its last, 13).
                let text: Option<String> = sqlx::Row::try_get(&row, 14)?;
                let full_text: Option<String> = sqlx::Row::try_get(&row, 15)?;
                rows.push((summary, text, full_text));
            }
            rows
        });
        Ok(rows
            .into_iter()
            .map(|(summary, text, full_text)| SearchHit {
                item: summary_from_row(summary),
                text: searchable_text(text.as_deref(), full_text.as_deref()),
            })
            .collect())
    }

    /// Runs a query of (publication time, item id) pairs with the listing's values bound.
    async fn pairs(&self, sql: String, binds: &[SqlValue]) -> Result<Vec<(i64, i64)>> {
        let prepared = self.engine() == Engine::Sqlite;
        Ok(with_db!(self, read, |db| {
            let mut query =
                sqlx::query_as::<_, (i64, i64)>(sqlx::AssertSqlSafe(sql)).persistent(prepared);
            for value in binds {
                query = match value {
                    SqlValue::Int(value) => query.bind(*value),
                    SqlValue::Text(value) => query.bind(value.as_str()),
                };
            }
            query.fetch_all(db).await?
        }))
    }

    /// The user's bookmarks whose snapshot (title and content) matches `query`, newest
    /// first. Bookmarks are few per user, so their snapshots are matched here with the same
    /// tokenizer and rules as the items' index.
    pub async fn search_bookmarks(
        &self,
        user_id: i64,
        query: &SearchQuery,
    ) -> Result<Vec<Bookmark>> {
        let bookmarks = self.list_bookmarks(user_id).await?;
        Ok(bookmarks
            .into_iter()
            .filter(|b| {
                let tokens = item_tokens(b.title.as_deref(), b.content.as_deref(), None, None);
                query.matches(&tokens)
            })
            .collect())
    }

    /// Whether the user has at most `at_most` items in `scope`'s feed or group (all of their
    /// subscriptions' items otherwise; its filter and dates are left out, so this is an upper
    /// bound), counted up to one more from the subscriptions and each feed's date index.
    async fn scope_is_small(&self, user_id: i64, scope: &ItemQuery, at_most: i64) -> Result<bool> {
        if at_most <= 0 {
            return Ok(false);
        }
        let mut listing = Listing::new(user_id);
        listing.push("s.user_id = $1 AND i.feed_id = s.feed_id".into());
        // The scope's feed and group as every listing writes them; nothing else of the query.
        listing.common(&ItemQuery {
            feed_id: scope.feed_id,
            group_id: scope.group_id,
            ..ItemQuery::default()
        });
        let limit = listing.bind(at_most.saturating_add(1));
        let sql = format!(
            "SELECT COUNT(*), COUNT(*) FROM (SELECT 1 FROM subscriptions s CROSS JOIN items i
                                      WHERE {} LIMIT {limit}) AS scoped",
            listing.conditions()
        );
        let counted = self.pairs(sql, &listing.binds).await?;
        Ok(counted.first().is_some_and(|&(items, _)| items <= at_most))
    }

    /// How many items match `query` in the whole index. SQLite counts them, up to
    /// `at_most`, from the index alone. PostgreSQL would read a table row per match to count
    /// them, so there it is the planner's estimate, from the statistics that ANALYZE keeps
    /// of the index's most common lexemes, which may be more than `at_most`.
    async fn count_matches(&self, query: &SearchQuery, at_most: i64) -> Result<i64> {
        Ok(match self.engine() {
            Engine::Sqlite => with_db!(self, read, |db| {
                sqlx::query_scalar::<_, i64>(
                    "SELECT COUNT(*) FROM (SELECT rowid FROM item_search
                                           WHERE item_search MATCH $1 LIMIT $2)",
                )
                .bind(fts5_match(query))
                .bind(at_most)
                .fetch_one(db)
                .await?
            }),
            Engine::Postgres => {
                // The query as a literal: with a parameter, EXPLAIN estimates for any value.
                let sql = format!(
                    "EXPLAIN SELECT 1 FROM item_search WHERE document @@ {}::tsquery",
                    sql_literal(&tsquery(query))
                );
                let plan: Vec<String> = with_db!(self, read, |db| {
                    sqlx::query_scalar::<_, String>(sqlx::AssertSqlSafe(sql))
                        .persistent(false)
                        .fetch_all(db)
                        .await?
                });
                // Not capped: the first window is sized by it.
                plan.first()
                    .and_then(|line| planned_rows(line))
                    .unwrap_or(at_most)
            }
        })
    }

    /// Whether at most `at_most` items match `query` (PostgreSQL), counted in the index up to
    /// one more: each match read costs about what collecting it would.
    async fn matches_at_most(&self, query: &SearchQuery, at_most: i64) -> Result<bool> {
        // The query as a literal and planned for this search, so that the planner sees how
        // few matches it expects and reads the GIN index rather than the table.
        let sql = format!(
            "SELECT COUNT(*) FROM (SELECT 1 FROM item_search
                                   WHERE document @@ {}::tsquery LIMIT {}) AS m",
            sql_literal(&tsquery(query)),
            at_most.saturating_add(1)
        );
        let counted: i64 = with_db!(self, read, |db| {
            sqlx::query_scalar::<_, i64>(sqlx::AssertSqlSafe(sql))
                .persistent(false)
                .fetch_one(db)
                .await?
        });
        Ok(counted <= at_most)
    }

    /// How many items the search index holds by PostgreSQL's estimate.
    async fn estimated_index_rows(&self) -> Result<i64> {
        Ok(with_db!(self, read, |db| {
            sqlx::query_scalar::<_, f32>(
                "SELECT reltuples FROM pg_class WHERE oid = 'item_search'::regclass",
            )
            .fetch_one(db)
            .await? as i64
        }))
    }

    /// How many items the search index holds.
    pub async fn search_index_rows(&self) -> Result<i64> {
        Ok(with_db!(self, read, |db| {
            sqlx::query_scalar::<_, i64>("SELECT COUNT(*) FROM item_search")
                .fetch_one(db)
                .await?
        }))
    }

    /// The search index's size on disk, in bytes (SQLite: the FTS5 table's pages; PostgreSQL:
    /// the table with its GIN index and TOAST).
    pub async fn search_index_size_bytes(&self) -> Result<i64> {
        Ok(match self.engine() {
            Engine::Sqlite => with_db!(self, read, |db| {
                sqlx::query_scalar::<_, i64>(
                    "SELECT COALESCE(SUM(pgsize), 0) FROM dbstat WHERE name LIKE 'item_search%'",
                )
                .fetch_one(db)
                .await?
            }),
            Engine::Postgres => with_db!(self, read, |db| {
                sqlx::query_scalar::<_, i64>("SELECT pg_total_relation_size('item_search')")
                    .fetch_one(db)
                    .await?
            }),
        })
    }

    /// Indexes up to `batch` of the items that existed before the search index (migration
    /// 6), resuming where the last step stopped, then the full articles (F6) saved before
    /// they were searched (migration 25); new and changed items and articles are indexed as
    /// they are stored. Each step is one or two short transactions, so the server keeps
    /// serving while a large database is indexed; search finds what is indexed so far. The
    /// step answers the items' progress until they are done, then the articles'.
    pub async fn backfill_search_index(&self, batch: i64) -> Result<BackfillStep> {
        let batch = batch.clamp(1, 10_000);
        let items = self.backfill_step(BackfillPass::Items, batch).await?;
        if !items.is_done() {
            return Ok(items);
        }
        let articles = self.backfill_step(BackfillPass::FullTexts, batch).await?;
        Ok(BackfillStep {
            indexed: items.indexed + articles.indexed,
            ..articles
        })
    }

    /// One step of one pass of [`Store::backfill_search_index`].
    async fn backfill_step(&self, pass: BackfillPass, batch: i64) -> Result<BackfillStep> {
        let engine = self.engine();
        // The items' rows: on PostgreSQL locked, so that one backfill step runs at a time
        // among processes, and an item changed (or given its article) while it is indexed
        // waits, so its newer text is indexed after this.
        let lock = match engine {
            Engine::Sqlite => "",
            Engine::Postgres => "FOR UPDATE",
        };
        let share = match engine {
            Engine::Sqlite => "",
            Engine::Postgres => "FOR SHARE",
        };
        let (state_sql, items_sql) = match pass {
            BackfillPass::Items => (
                format!(
                    "SELECT next_item_id, last_item_id FROM search_backfill WHERE id = 1 {lock}"
                ),
                format!(
                    "SELECT id, title, content, summary FROM items
                     WHERE id >= $1 AND id <= $2 ORDER BY id LIMIT $3 {share}"
                ),
            ),
            BackfillPass::FullTexts => (
                format!(
                    "SELECT next_item_id, last_item_id FROM search_full_text_backfill
                     WHERE id = 1 {lock}"
                ),
                format!(
                    "SELECT id, title, content, summary FROM items
                     WHERE id IN (SELECT item_id FROM item_full_texts
                                  WHERE item_id >= $1 AND item_id <= $2
                                    AND content IS NOT NULL
                                  ORDER BY item_id LIMIT $3)
                     ORDER BY id {share}"
                ),
            ),
        };
        let progress_sql = match pass {
            BackfillPass::Items => "UPDATE search_backfill SET next_item_id = $1 WHERE id = 1",
            BackfillPass::FullTexts => {
                "UPDATE search_full_text_backfill SET next_item_id = $1 WHERE id = 1"
            }
        };
        let translations_ready = self.translations_ready().await;
        let step = in_tx!(self, |tx| {
            let state: Option<(i64, i64)> = sqlx::query_as(sqlx::AssertSqlSafe(state_sql))
                .fetch_optional(&mut *tx)
                .await?;
            let Some((next, last)) = state else {
                return Ok(BackfillStep {
                    indexed: 0,
                    next_item_id: 1,
                    last_item_id: 0,
                });
            };
            if next > last {
                BackfillStep {
                    indexed: 0,
                    next_item_id: next,
                    last_item_id: last,
                }
            } else {
                let items: Vec<(i64, Option<String>, Option<String>, Option<String>)> =
                    sqlx::query_as(sqlx::AssertSqlSafe(items_sql))
                        .bind(next)
                        .bind(last)
                        .bind(batch)
                        .fetch_all(&mut *tx)
                        .await?;
                let ids: Vec<i64> = items.iter().map(|(id, ..)| *id).collect();
                // After the statement that locked the items (see `full_texts_of`).
                let full_texts = full_texts_of!(tx, &ids);
                let translations = if translations_ready {
                    translations_of!(tx, &ids)
                } else {
                    std::collections::HashMap::new()
                };
                let values: Vec<String> = items
                    .iter()
                    .map(|(id, title, content, summary)| {
                        item_index_value(
                            engine,
                            title.as_deref(),
                            content.as_deref(),
                            summary.as_deref(),
                            full_texts.get(id).map(String::as_str),
                            translations.get(id).map_or(&[][..], Vec::as_slice),
                        )
                    })
                    .collect();
                let rows: Vec<(i64, &str)> = ids
                    .iter()
                    .zip(&values)
                    .map(|(id, value)| (*id, value.as_str()))
                    .collect();
                write_index_rows!(tx, engine, &rows);
                let next = match items.last() {
                    Some((id, ..)) if items.len() as i64 == batch => id + 1,
                    _ => last + 1,
                };
                sqlx::query(progress_sql)
                    .bind(next)
                    .execute(&mut *tx)
                    .await?;
                BackfillStep {
                    indexed: items.len() as u64,
                    next_item_id: next,
                    last_item_id: last,
                }
            }
        });
        Ok(step)
    }
}

/// The two passes of the search backfill.
#[derive(Debug, Clone, Copy)]
enum BackfillPass {
    /// Items stored before the search index (migration 6).
    Items,
    /// Full articles saved before they were searched (migration 25).
    FullTexts,
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::{NewItem, NewSubscription};

    /// Every plan of a search by date lists the same items in the same order, also with the
    /// listing's filters and across pages: collecting the matches, and walking the date index
    /// in windows as small as one item (so windows end inside a second that several items
    /// share). On SQLite, and on PostgreSQL when `TIDINGS_TEST_POSTGRES_URL` names a server.
    #[tokio::test]
    async fn every_plan_agrees() {
        crate::test_engines::on_each_engine(async |store: &Store| {
            // Searches are not compiled to machine code first (which takes longer than they
            // run): the store turns PostgreSQL's JIT off.
            if let crate::Pools::Postgres(pool) = &*store.pools {
                let jit: String = sqlx::query_scalar("SHOW jit")
                    .fetch_one(pool)
                    .await
                    .unwrap();
                assert_eq!(jit, "off");
            }
            plans_agree(store).await;
        })
        .await;
    }

    async fn plans_agree(store: &Store) {
        let user = crate::test_engines::migrated_with_user(store, "ann").await;
        let mut feeds = Vec::new();
        for url in ["https://a.example/", "https://b.example/"] {
            let subscription = store
                .subscribe(
                    user,
                    &NewSubscription {
                        feed_url: url.into(),
                        ..Default::default()
                    },
                )
                .await
                .unwrap();
            feeds.push(subscription.feed_id);
        }
        let words = ["rust", "東京", "café", "straße"];
        for (f, feed) in feeds.iter().enumerate() {
            let items: Vec<NewItem> = (0..60)
                .map(|n| NewItem {
                    guid: Some(format!("{f}-{n}")),
                    title: Some(format!("{} {}", words[n % 4], words[(n / 4) % 4])),
                    // Some items share a second, so the tie-break on id matters.
                    published: Some(1_700_000_000 + (n as i64 / 3) * 60),
                    ..NewItem::default()
                })
                .collect();
            store
                .upsert_items(*feed, &items, 1_700_000_000)
                .await
                .unwrap();
        }
        let first = store
            .search_items(
                user,
                &ItemSearch {
                    query: q("rust"),
                    listing: ItemQuery {
                        filter: ItemFilter::All,
                        limit: 5,
                        ..ItemQuery::default()
                    },
                    by_relevance: false,
                    offset: 0,
                },
            )
            .await
            .unwrap();
        store
            .set_item_state(user, first.hits[0].item.id, Some(true), Some(true))
            .await
            .unwrap();
        store
            .set_item_state(user, first.hits[3].item.id, None, Some(true))
            .await
            .unwrap();
        for text in ["rust", "東京 cafe", "\"rust 東京\"", "rust -strasse", "東"] {
            for filter in [ItemFilter::All, ItemFilter::Unread, ItemFilter::Starred] {
                for order in [ItemOrder::NewestFirst, ItemOrder::OldestFirst] {
                    for feed_id in [None, Some(feeds[1])] {
                        let mut pages = Vec::new();
                        for plan in PLANS {
                            let mut search = ItemSearch {
                                query: q(text),
                                listing: ItemQuery {
                                    filter,
                                    order,
                                    feed_id,
                                    since: Some(1_700_000_000 + 60),
                                    limit: 7,
                                    ..ItemQuery::default()
                                },
                                by_relevance: false,
                                offset: 0,
                            };
                            pages.push(all_pages(store, user, &mut search, plan).await);
                        }
                        for (plan, page) in PLANS.iter().zip(&pages) {
                            assert_eq!(
                                &pages[0], page,
                                "{text} {filter:?} {order:?} {feed_id:?} {plan:?}"
                            );
                        }
                        if filter == ItemFilter::All && feed_id.is_none() && text == "rust" {
                            // Per feed: 27 titles with "rust", 3 of them before `since`.
                            assert_eq!(pages[0].len(), 2 * 24);
                        }
                    }
                }
            }
        }
        // By relevance: the same ranking from every plan; with `ranked` bounding the
        // candidates, exactly the newest matches are ranked, over all pages.
        let newest: Vec<i64> = store
            .search_items(user, &by_date("rust", 5))
            .await
            .unwrap()
            .hits
            .iter()
            .map(|h| h.item.id)
            .collect();
        let mut rankings = Vec::new();
        for ranked in [RANKED_CANDIDATES, 5] {
            for plan in PLANS {
                let plan = SearchPlan { ranked, ..plan };
                let mut search = by_date("rust", 2);
                search.by_relevance = true;
                rankings.push((ranked, all_pages(store, user, &mut search, plan).await));
            }
        }
        assert_eq!(rankings[0].1.len(), 54);
        if store.engine() == Engine::Postgres {
            // The count that settles an uncertain estimate: exact up to the bound, "rust" in
            // 54 items' titles of 120.
            assert!(store.matches_at_most(&q("rust"), 54).await.unwrap());
            assert!(store.matches_at_most(&q("rust"), 60).await.unwrap());
            assert!(!store.matches_at_most(&q("rust"), 53).await.unwrap());
            assert!(!store.matches_at_most(&q("rust"), 0).await.unwrap());
            assert!(store.matches_at_most(&q("nowhere"), 0).await.unwrap());
        }
        // The scope's size that decides whether each item is checked: 120 items in the
        // user's two feeds, 60 in one; counted up to one more than asked.
        let everything = ItemQuery::default();
        let one_feed = ItemQuery {
            feed_id: Some(feeds[1]),
            ..ItemQuery::default()
        };
        assert!(store.scope_is_small(user, &everything, 120).await.unwrap());
        assert!(!store.scope_is_small(user, &everything, 119).await.unwrap());
        assert!(store.scope_is_small(user, &one_feed, 60).await.unwrap());
        assert!(!store.scope_is_small(user, &one_feed, 59).await.unwrap());
        assert!(!store.scope_is_small(user, &everything, 0).await.unwrap());
        let nobody = crate::test_engines::migrated_with_user(store, "nobody").await;
        assert!(store.scope_is_small(nobody, &everything, 1).await.unwrap());
        for (ranked, ids) in &rankings {
            let first = rankings.iter().find(|(r, _)| r == ranked).unwrap();
            assert_eq!(ids, &first.1, "ranked {ranked}");
        }
        let mut bounded = rankings.last().unwrap().1.clone();
        bounded.sort_unstable();
        let mut expected = newest.clone();
        expected.sort_unstable();
        assert_eq!(bounded, expected);
    }

    /// The ids of every page of `search` with `plan`, following its cursor or offset; no
    /// page is longer than the limit.
    async fn all_pages(
        store: &Store,
        user: i64,
        search: &mut ItemSearch,
        plan: SearchPlan,
    ) -> Vec<i64> {
        let mut ids = Vec::new();
        loop {
            let page = store
                .search_items_planned(user, search, plan)
                .await
                .unwrap();
            assert!(page.hits.len() as i64 <= search.listing.limit);
            ids.extend(page.hits.iter().map(|h| h.item.id));
            match (page.next_cursor, page.next_offset) {
                (Some(cursor), _) => search.listing.cursor = Some(cursor),
                (None, Some(offset)) => search.offset = offset,
                (None, None) => return ids,
            }
        }
    }

    fn by_date(text: &str, limit: i64) -> ItemSearch {
        ItemSearch {
            query: q(text),
            listing: ItemQuery {
                filter: ItemFilter::All,
                limit,
                ..ItemQuery::default()
            },
            by_relevance: false,
            offset: 0,
        }
    }

    /// Collecting every match, walking the date index in windows of 1, 3 and 4,000 items, and
    /// checking each of the user's items.
    const PLANS: [SearchPlan; 5] = [
        SearchPlan {
            collect_at_most: i64::MAX - 1,
            first_window: 4_000,
            ranked: RANKED_CANDIDATES,
            size_by_estimate: false,
            scope_checked_at_most: 0,
        },
        SearchPlan {
            collect_at_most: 0,
            first_window: 1,
            ranked: RANKED_CANDIDATES,
            size_by_estimate: false,
            scope_checked_at_most: 0,
        },
        SearchPlan {
            collect_at_most: 0,
            first_window: 3,
            ranked: RANKED_CANDIDATES,
            size_by_estimate: false,
            scope_checked_at_most: 0,
        },
        SearchPlan {
            collect_at_most: 0,
            first_window: 4_000,
            ranked: RANKED_CANDIDATES,
            size_by_estimate: false,
            scope_checked_at_most: 0,
        },
        // Never collected: each of the user's items checked.
        SearchPlan {
            collect_at_most: 0,
            first_window: 4_000,
            ranked: RANKED_CANDIDATES,
            size_by_estimate: false,
            scope_checked_at_most: i64::MAX - 1,
        },
    ];

    fn q(text: &str) -> SearchQuery {
        SearchQuery::parse(text).unwrap()
    }

    #[test]
    fn queries_for_both_engines() {
        let query = q(r#"rust "async io" 東京都 東 -java -"big data""#);
        assert_eq!(
            fts5_match(&query),
            r#"("rust" AND "async io" AND "東京 京都" AND "東"*) NOT ("java" OR "big data")"#
        );
        assert_eq!(
            tsquery(&query),
            "('rust') & ('async' <-> 'io') & ('東京' <-> '京都') & ('東':*) & !('java') & !('big' <-> 'data')"
        );
    }
}
