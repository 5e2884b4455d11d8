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

use std::collections::BTreeMap;

use tidings_feed::text::plain_text;
use tidings_text::{SearchQuery, SearchTerm, index_tokens};

use crate::reading::{
    FROM_ITEMS, FROM_STATES, IS_READ, Listing, STATES_JOINED, SUMMARY_COLUMNS, SqlValue,
    decode_summary, summary_from_row,
};
use crate::{
    Bookmark, Engine, ItemCursor, ItemFilter, ItemOrder, ItemQuery, ItemSummary, MAX_PAGE_SIZE,
    Result, Store, in_tx, with_db,
};

/// Existing items indexed per step of the backfill when the caller does not say.
pub const DEFAULT_BACKFILL_BATCH: i64 = 500;

/// Above this many matching items (in the whole index), SQLite finds a page of a search by
/// date by walking the date index and checking each item against the index, instead of
/// collecting and sorting every match: with this many matches among the items, a page is
/// full after a few thousand checks at most.
const PROBE_ABOVE: i64 = 20_000;

/// PostgreSQL keeps at most this many positions of one lexeme in a tsvector.
const MAX_POSITIONS_PER_LEXEME: usize = 256;
/// PostgreSQL's highest tsvector position.
const MAX_POSITION: usize = 16_383;

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
    /// Its content (else its summary) as plain text.
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

/// How far the indexing of items that predate the search index has come.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct BackfillStep {
    /// Items indexed by this step.
    pub indexed: u64,
    /// The next item id to index.
    pub next_item_id: i64,
    /// The last item id to index.
    pub last_item_id: i64,
}

impl BackfillStep {
    /// Whether every item that predates the index is indexed.
    pub fn is_done(&self) -> bool {
        self.next_item_id > self.last_item_id
    }
}

/// The tokens indexed for an item: its title, then its content (else summary) as text.
pub(crate) fn item_tokens(
    title: Option<&str>,
    content: Option<&str>,
    summary: Option<&str>,
) -> Vec<String> {
    let body = content.or(summary).and_then(plain_text).unwrap_or_default();
    index_tokens(&format!("{}\n{body}", title.unwrap_or("")))
}

/// A PostgreSQL tsvector literal of `tokens` at positions 1, 2, …: each lexeme with its
/// positions, nothing left to a text search parser.
fn tsvector_literal(tokens: &[String]) -> String {
    let mut positions: BTreeMap<&str, Vec<usize>> = BTreeMap::new();
    for (i, token) in tokens.iter().take(MAX_POSITION).enumerate() {
        let list = positions.entry(token).or_default();
        if list.len() < MAX_POSITIONS_PER_LEXEME {
            list.push(i + 1);
        }
    }
    let mut out = String::new();
    for (lexeme, list) in positions {
        if !out.is_empty() {
            out.push(' ');
        }
        out.push_str(&quote_lexeme(lexeme));
        out.push(':');
        let list: Vec<String> = list.iter().map(usize::to_string).collect();
        out.push_str(&list.join(","));
    }
    out
}

/// A lexeme quoted for tsvector / tsquery input.
fn quote_lexeme(lexeme: &str) -> String {
    format!("'{}'", lexeme.replace('\\', "\\\\").replace('\'', "''"))
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

/// The statement that writes one item's index row (`$1` the item id, `$2` the value) and the
/// value for `tokens`, for `engine`.
fn index_write(engine: Engine, tokens: &[String]) -> (&'static str, String) {
    match engine {
        Engine::Sqlite => (
            "INSERT OR REPLACE INTO item_search (rowid, body) VALUES ($1, $2)",
            tokens.join(" "),
        ),
        Engine::Postgres => (
            "INSERT INTO item_search (item_id, document) VALUES ($1, $2::tsvector)
             ON CONFLICT (item_id) DO UPDATE SET document = EXCLUDED.document",
            tsvector_literal(tokens),
        ),
    }
}

/// Runs `$sql` with `$1` = `$id` and `$2` = `$value` on the transaction `$tx`.
macro_rules! write_index_row {
    ($tx:expr, $id:expr, $write:expr) => {{
        let (sql, value) = $write;
        sqlx::query(sql)
            .bind($id)
            .bind(value)
            .execute(&mut *$tx)
            .await?;
    }};
}
pub(crate) use write_index_row;

/// The index write of one item, for `upsert_items`.
pub(crate) fn item_index_write(
    engine: Engine,
    title: Option<&str>,
    content: Option<&str>,
    summary: Option<&str>,
) -> (&'static str, String) {
    index_write(engine, &item_tokens(title, content, summary))
}

type SearchRow = (crate::reading::SummaryRow, Option<String>);

impl Store {
    /// One page of the user's items matching `search`: the listing's scope (feed, group),
    /// filter (all, unread, starred) and dates apply, newest or oldest first with the
    /// listing's cursor, or best match first by offset.
    pub async fn search_items(&self, user_id: i64, search: &ItemSearch) -> Result<SearchPage> {
        self.search_items_planned(user_id, search, PROBE_ABOVE)
            .await
    }

    /// [`Store::search_items`] with the plan's threshold given (tests try both plans).
    async fn search_items_planned(
        &self,
        user_id: i64,
        search: &ItemSearch,
        probe_above: i64,
    ) -> Result<SearchPage> {
        self.check_scope(user_id, &search.listing).await?;
        let limit = search.listing.limit.clamp(1, MAX_PAGE_SIZE);
        let fetch = limit + 1;
        let mut listing = Listing::new(user_id);
        listing.push("s.feed_id = i.feed_id AND s.user_id = $1".into());
        match search.listing.filter {
            ItemFilter::All => {}
            ItemFilter::Unread => listing.push(format!("NOT {IS_READ}")),
            ItemFilter::Starred => listing.push("COALESCE(st.is_starred, FALSE)".into()),
        }
        let mut scope = search.listing.clone();
        if search.by_relevance {
            scope.cursor = None;
        }
        listing.common(&scope);
        let engine = self.engine();
        let matched = match engine {
            Engine::Sqlite => listing.bind_text(fts5_match(&search.query)),
            Engine::Postgres => listing.bind_text(tsquery(&search.query)),
        };
        let columns = format!(
            "{SUMMARY_COLUMNS}, {IS_READ}, COALESCE(st.is_starred, FALSE), i.thumbnail_url,
             COALESCE(i.content, i.summary)"
        );
        let limit_p = listing.bind(fetch);
        let sql = if search.by_relevance {
            let offset_p = listing.bind(search.offset.max(0));
            match engine {
                Engine::Sqlite => format!(
                    "SELECT {columns}
                     FROM item_search
                     CROSS JOIN items i
                     CROSS JOIN subscriptions s
                     JOIN feeds f ON f.id = s.feed_id
                     LEFT JOIN item_states st ON st.user_id = s.user_id AND st.item_id = i.id
                     WHERE item_search MATCH {matched} AND i.id = item_search.rowid AND {}
                     ORDER BY item_search.rank, i.id DESC
                     LIMIT {limit_p} OFFSET {offset_p}",
                    listing.conditions()
                ),
                Engine::Postgres => format!(
                    "SELECT {columns}
                     FROM item_search m
                     JOIN items i ON i.id = m.item_id
                     CROSS JOIN subscriptions s
                     JOIN feeds f ON f.id = s.feed_id
                     LEFT JOIN item_states st ON st.user_id = s.user_id AND st.item_id = i.id
                     WHERE m.document @@ {matched}::tsquery AND {}
                     ORDER BY ts_rank(m.document, {matched}::tsquery) DESC, i.id DESC
                     LIMIT {limit_p} OFFSET {offset_p}",
                    listing.conditions()
                ),
            }
        } else {
            let direction = match search.listing.order {
                ItemOrder::NewestFirst => "DESC",
                ItemOrder::OldestFirst => "ASC",
            };
            // The plan depends on how many items match (see PROBE_ABOVE): few are listed
            // from the index's matches; many are found by walking the date index (or the
            // user's starred items) and checking each item against the index, which stops
            // as soon as a page is full.
            let probe = search.listing.filter == ItemFilter::Starred
                || (engine == Engine::Sqlite
                    && self.count_matches(&search.query, probe_above + 1).await? > probe_above);
            let (from, matches) = match (engine, probe) {
                (Engine::Sqlite, false) => (
                    FROM_ITEMS,
                    format!(
                        "i.id IN (SELECT rowid FROM item_search WHERE item_search MATCH {matched})"
                    ),
                ),
                (Engine::Sqlite, true) => (
                    FROM_ITEMS,
                    format!(
                        "EXISTS (SELECT 1 FROM item_search
                                 WHERE item_search MATCH {matched} AND item_search.rowid = i.id)"
                    ),
                ),
                (Engine::Postgres, _) => (
                    FROM_ITEMS,
                    format!(
                        "i.id IN (SELECT item_id FROM item_search WHERE document @@ {matched}::tsquery)"
                    ),
                ),
            };
            let (from, matches) = if search.listing.filter == ItemFilter::Starred {
                // Starred items are few: start from the user's state rows.
                (
                    FROM_STATES,
                    format!("{STATES_JOINED} AND st.user_id = $1 AND {matches}"),
                )
            } else {
                (from, matches)
            };
            format!(
                "SELECT {columns}
                 {from}
                 WHERE {matches} AND {}
                 ORDER BY i.published_at {direction}, i.id {direction}
                 LIMIT {limit_p}",
                listing.conditions()
            )
        };
        let rows: Vec<SearchRow> = with_db!(self, read, |db| {
            let mut query = sqlx::query(sqlx::AssertSqlSafe(sql));
            for value in &listing.binds {
                query = match value {
                    SqlValue::Int(value) => query.bind(*value),
                    SqlValue::Text(value) => query.bind(value.as_str()),
                };
            }
            let mut rows = Vec::new();
            for row in query.fetch_all(db).await? {
                let summary = decode_summary(&row)?;
                // After the summary's columns (the thumbnail is its last, 12).
                let text: Option<String> = sqlx::Row::try_get(&row, 13)?;
                rows.push((summary, text));
            }
            rows
        });
        let mut hits: Vec<SearchHit> = rows
            .into_iter()
            .map(|(summary, text)| SearchHit {
                item: summary_from_row(summary),
                text: text.as_deref().and_then(plain_text).unwrap_or_default(),
            })
            .collect();
        let more = hits.len() as i64 > limit;
        hits.truncate(limit as usize);
        let (next_cursor, next_offset) = match (more, search.by_relevance) {
            (false, _) => (None, None),
            (true, true) => (None, Some(search.offset.max(0) + limit)),
            (true, false) => (
                hits.last().map(|hit| ItemCursor {
                    published_at: hit.item.published_at,
                    id: hit.item.id,
                }),
                None,
            ),
        };
        Ok(SearchPage {
            hits,
            next_cursor,
            next_offset,
        })
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
                let tokens = item_tokens(b.title.as_deref(), b.content.as_deref(), None);
                query.matches(&tokens)
            })
            .collect())
    }

    /// How many items match `query` in the whole index, counting up to `at_most`.
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
            Engine::Postgres => with_db!(self, read, |db| {
                sqlx::query_scalar::<_, i64>(
                    "SELECT COUNT(*) FROM (SELECT 1 FROM item_search
                                           WHERE document @@ $1::tsquery LIMIT $2) AS m",
                )
                .bind(tsquery(query))
                .bind(at_most)
                .fetch_one(db)
                .await?
            }),
        })
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
    /// 6), resuming where the last step stopped; new and changed items are indexed as they
    /// are stored. Each step is one short transaction, so the server keeps serving while a
    /// large database is indexed; search finds what is indexed so far.
    pub async fn backfill_search_index(&self, batch: i64) -> Result<BackfillStep> {
        let batch = batch.clamp(1, 10_000);
        let engine = self.engine();
        let (state_sql, items_sql) = match engine {
            Engine::Sqlite => (
                "SELECT next_item_id, last_item_id FROM search_backfill WHERE id = 1",
                "SELECT id, title, content, summary FROM items
                 WHERE id >= $1 AND id <= $2 ORDER BY id LIMIT $3",
            ),
            // Locked: one backfill step at a time among processes, and an item changed while
            // it is indexed waits, so its newer text is indexed after this.
            Engine::Postgres => (
                "SELECT next_item_id, last_item_id FROM search_backfill WHERE id = 1 FOR UPDATE",
                "SELECT id, title, content, summary FROM items
                 WHERE id >= $1 AND id <= $2 ORDER BY id LIMIT $3 FOR SHARE",
            ),
        };
        let step = in_tx!(self, |tx| {
            let state: Option<(i64, i64)> =
                sqlx::query_as(state_sql).fetch_optional(&mut *tx).await?;
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
                    sqlx::query_as(items_sql)
                        .bind(next)
                        .bind(last)
                        .bind(batch)
                        .fetch_all(&mut *tx)
                        .await?;
                for (id, title, content, summary) in &items {
                    write_index_row!(
                        tx,
                        *id,
                        item_index_write(
                            engine,
                            title.as_deref(),
                            content.as_deref(),
                            summary.as_deref()
                        )
                    );
                }
                let next = match items.last() {
                    Some((id, ..)) if items.len() as i64 == batch => id + 1,
                    _ => last + 1,
                };
                sqlx::query("UPDATE search_backfill SET next_item_id = $1 WHERE id = 1")
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

#[cfg(test)]
mod tests {
    use super::*;
    use crate::{NewItem, NewSubscription, NewUser, StoreOptions};

    /// Both plans of a search by date list the same items in the same order, also with the
    /// listing's filters and across pages.
    #[tokio::test]
    async fn both_plans_agree() {
        let store = Store::connect(&StoreOptions::new("sqlite::memory:"))
            .await
            .unwrap();
        store.migrate().await.unwrap();
        let user = store
            .create_user(&NewUser {
                username: "ann".into(),
                password_hash: None,
                is_admin: false,
            })
            .await
            .unwrap()
            .id;
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
                        for probe_above in [i64::MAX - 1, 0] {
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
                            let mut ids = Vec::new();
                            loop {
                                let page = store
                                    .search_items_planned(user, &search, probe_above)
                                    .await
                                    .unwrap();
                                ids.extend(page.hits.iter().map(|h| h.item.id));
                                match page.next_cursor {
                                    Some(cursor) => search.listing.cursor = Some(cursor),
                                    None => break,
                                }
                            }
                            pages.push(ids);
                        }
                        assert_eq!(
                            pages[0], pages[1],
                            "{text} {filter:?} {order:?} {feed_id:?}"
                        );
                        if filter == ItemFilter::All && feed_id.is_none() && text == "rust" {
                            // Per feed: 27 titles with "rust", 3 of them before `since`.
                            assert_eq!(pages[0].len(), 2 * 24);
                        }
                    }
                }
            }
        }
    }

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

    #[test]
    fn tsvector_has_positions() {
        let tokens: Vec<String> = ["b", "a", "b", "it's"]
            .iter()
            .map(|s| s.to_string())
            .collect();
        assert_eq!(tsvector_literal(&tokens), "'a':2 'b':1,3 'it''s':4");
        assert_eq!(tsvector_literal(&[]), "");
        let many: Vec<String> = (0..20_000).map(|_| "x".to_string()).collect();
        let literal = tsvector_literal(&many);
        assert_eq!(literal.matches(',').count(), MAX_POSITIONS_PER_LEXEME - 1);
    }

    #[test]
    fn item_text_is_title_and_content_without_markup() {
        let tokens = item_tokens(
            Some("Rust 東京"),
            Some("<p>Hello <b>wörld</b> &amp; <a href=\"https://x.example/secret\">link</a></p>"),
            Some("ignored summary"),
        );
        assert_eq!(tokens, ["rust", "東京", "hello", "world", "link", "京"]);
        let tokens = item_tokens(None, None, Some("<p>summary only</p>"));
        assert_eq!(tokens, ["summary", "only"]);
    }
}
