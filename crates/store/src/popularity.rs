//! Popularity (F40): how many people bookmarked an item's link at a count source (Hatena
//! Bookmark), the pace of the calls to that source shared by every worker, and the hot list.
//!
//! - An item without a row in `item_popularity` has no known count (`None`), which is not 0.
//! - [`Store::claim_popularity_call`] hands one worker the next call to a source: the due
//!   links (never asked first, then counts older than the TTL, newest items first) and a lease
//!   on the source's row, but only when the source's pace allows a call now (the spacing since
//!   the last call, the calls left in the cycle, the back-off after failures). The pace lives
//!   in the database so that it holds for the installation, however many workers run.
//! - [`Store::hot_items`] lists a user's items by count, then date.

use std::collections::HashMap;

use crate::reading::{
    IS_READ, Listing, NOT_HIDDEN, SUMMARY_COLUMNS, SqlValue, decode_summary, summary_from_row,
};
use crate::rules_late::{Learned, write_late_changes_on};
use crate::{
    Engine, ItemFilter, ItemQuery, ItemSummary, MAX_PAGE_SIZE, Result, Store, in_tx, with_db,
};

/// An item's count as last fetched.
#[derive(Debug, Clone, Copy, PartialEq, Eq, serde::Serialize)]
pub struct Popularity {
    /// How many people bookmarked the item's link (0 when the source knows none).
    pub count: i64,
    /// When the count was fetched (Unix seconds).
    pub fetched_at: i64,
}

/// How calls to a source are paced. Times in milliseconds.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct PopularityPace {
    /// The least time between the starts of two calls.
    pub spacing_ms: i64,
    /// The length of a cycle, in which at most `max_calls_per_cycle` calls are made.
    pub cycle_ms: i64,
    /// The most calls in one cycle.
    pub max_calls_per_cycle: i64,
    /// How long a claimed call holds the source; a worker that dies mid-call frees it after
    /// this long.
    pub lease_ms: i64,
}

/// Which items are due for a count.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct PopularityDue {
    /// Counts fetched at or before this time (Unix seconds) are fetched again.
    pub stale_before: i64,
    /// Only items published at or after this time (Unix seconds): older items keep their
    /// last count.
    pub published_since: i64,
    /// The most distinct links in one call.
    pub max_urls: usize,
}

/// One link of a claimed call, with the items that carry it.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct PopularityLink {
    /// The link, as the items have it.
    pub url: String,
    /// The due items with this link.
    pub item_ids: Vec<i64>,
}

/// A call a worker claimed: the links to ask about, in order.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct PopularityCall {
    /// The source's name.
    pub source: String,
    /// Distinct links, at most [`PopularityDue::max_urls`].
    pub links: Vec<PopularityLink>,
}

/// A source's pace as stored, for tests, logs and metrics.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct PopularitySourceState {
    /// The next call's earliest start (Unix milliseconds).
    pub not_before_ms: i64,
    /// When the current cycle began (Unix milliseconds).
    pub cycle_started_ms: i64,
    /// Calls made in the current cycle.
    pub cycle_calls: i64,
    /// Consecutive failed calls.
    pub failures: i64,
    /// The worker whose call is in flight.
    pub lease_owner: Option<String>,
    /// The last failure, until a call succeeds.
    pub last_error: Option<String>,
}

/// Where a page of the hot list starts: after the item with this count, date and id.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct HotCursor {
    /// The last listed item's count.
    pub count: i64,
    /// Its publication time.
    pub published_at: i64,
    /// Its id.
    pub id: i64,
}

impl HotCursor {
    /// The cursor as an opaque string for clients.
    pub fn encode(&self) -> String {
        hex::encode(format!(
            "h:{}:{}:{}",
            self.count, self.published_at, self.id
        ))
    }

    /// Reads a string made by [`HotCursor::encode`]; `None` when it is not one.
    pub fn decode(text: &str) -> Option<HotCursor> {
        let bytes = hex::decode(text.trim()).ok()?;
        let text = std::str::from_utf8(&bytes).ok()?.strip_prefix("h:")?;
        let mut parts = text.split(':');
        let cursor = HotCursor {
            count: parts.next()?.parse().ok()?,
            published_at: parts.next()?.parse().ok()?,
            id: parts.next()?.parse().ok()?,
        };
        parts.next().is_none().then_some(cursor)
    }
}

/// What the hot list shows.
#[derive(Debug, Clone, Default)]
pub struct HotQuery {
    /// Feed, group, filter and limit as in a listing; `since` is the window's start (its
    /// `cursor` and `order` are not used).
    pub listing: ItemQuery,
    /// Only items with at least this count.
    pub min_count: i64,
    /// Continue after this item.
    pub cursor: Option<HotCursor>,
}

/// An item of the hot list.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct HotItem {
    /// The item as a listing shows it.
    pub item: ItemSummary,
    /// Its count.
    pub popularity: Popularity,
}

/// One page of the hot list.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct HotPage {
    /// Highest count first, then newest.
    pub items: Vec<HotItem>,
    /// Where the next page starts, when there is one.
    pub next_cursor: Option<HotCursor>,
}

/// Links that can be asked about: web addresses only.
const HAS_WEB_LINK: &str = "(i.url LIKE 'http://%' OR i.url LIKE 'https://%')";
/// Items somebody follows: a feed nobody follows is deleted soon, its counts would be waste.
const FOLLOWED: &str = "EXISTS (SELECT 1 FROM subscriptions s WHERE s.feed_id = i.feed_id)";

impl Store {
    /// Claims the next call to `source` for `owner` at `now_ms` when its pace allows one and
    /// items are due: the links (distinct, at most `due.max_urls`) of items never counted,
    /// newest first, then of items whose count is stale, newest first. The call counts
    /// against the cycle and holds the source until [`Store::save_popularity`] or
    /// [`Store::popularity_call_failed`] (or until its lease ends). `None` when the source
    /// must wait or nothing is due.
    pub async fn claim_popularity_call(
        &self,
        source: &str,
        owner: &str,
        now_ms: i64,
        pace: &PopularityPace,
        due: &PopularityDue,
    ) -> Result<Option<PopularityCall>> {
        let lock = match self.engine() {
            Engine::Sqlite => "",
            Engine::Postgres => "FOR UPDATE",
        };
        let read_pace = format!(
            "SELECT not_before_ms, cycle_started_ms, cycle_calls, lease_until_ms
             FROM popularity_sources WHERE source = $1 {lock}"
        );
        let rows_per_query = (due.max_urls.max(1) * 4) as i64;
        let unknown = format!(
            "SELECT i.id, i.url FROM items i
             WHERE i.published_at >= $1 AND {HAS_WEB_LINK} AND {FOLLOWED}
               AND NOT EXISTS (SELECT 1 FROM item_popularity p WHERE p.item_id = i.id)
             ORDER BY i.published_at DESC, i.id DESC LIMIT $2"
        );
        let stale = format!(
            "SELECT i.id, i.url FROM items i JOIN item_popularity p ON p.item_id = i.id
             WHERE i.published_at >= $1 AND p.fetched_at <= $3 AND {HAS_WEB_LINK} AND {FOLLOWED}
             ORDER BY i.published_at DESC, i.id DESC LIMIT $2"
        );
        let call = in_tx!(self, |tx| {
            sqlx::query(
                "INSERT INTO popularity_sources (source) VALUES ($1) ON CONFLICT DO NOTHING",
            )
            .bind(source)
            .execute(&mut *tx)
            .await?;
            let (not_before, cycle_started, cycle_calls, lease_until): (
                i64,
                i64,
                i64,
                Option<i64>,
            ) = sqlx::query_as(sqlx::AssertSqlSafe(read_pace))
                .bind(source)
                .fetch_one(&mut *tx)
                .await?;
            let new_cycle = now_ms >= cycle_started.saturating_add(pace.cycle_ms);
            let allowed = not_before <= now_ms
                && lease_until.is_none_or(|until| until <= now_ms)
                && (new_cycle || cycle_calls < pace.max_calls_per_cycle);
            if !allowed {
                None
            } else {
                let mut rows: Vec<(i64, String)> = sqlx::query_as(sqlx::AssertSqlSafe(unknown))
                    .bind(due.published_since)
                    .bind(rows_per_query)
                    .fetch_all(&mut *tx)
                    .await?;
                let links = group_links(&rows, due.max_urls);
                if links.len() < due.max_urls {
                    rows.extend(
                        sqlx::query_as::<_, (i64, String)>(sqlx::AssertSqlSafe(stale))
                            .bind(due.published_since)
                            .bind(rows_per_query)
                            .bind(due.stale_before)
                            .fetch_all(&mut *tx)
                            .await?,
                    );
                }
                let links = group_links(&rows, due.max_urls);
                if links.is_empty() {
                    None
                } else {
                    let (cycle_started, cycle_calls) = if new_cycle {
                        (now_ms, 1)
                    } else {
                        (cycle_started, cycle_calls + 1)
                    };
                    sqlx::query(
                        "UPDATE popularity_sources SET lease_owner = $2, lease_until_ms = $3,
                                cycle_started_ms = $4, cycle_calls = $5
                         WHERE source = $1",
                    )
                    .bind(source)
                    .bind(owner)
                    .bind(now_ms.saturating_add(pace.lease_ms.max(1)))
                    .bind(cycle_started)
                    .bind(cycle_calls)
                    .execute(&mut *tx)
                    .await?;
                    Some(PopularityCall {
                        source: source.to_owned(),
                        links,
                    })
                }
            }
        });
        Ok(call)
    }

    /// Stores the counts of a call `owner` made (`(item id, count)`, fetched at
    /// `fetched_at`, Unix seconds) and frees the source until `next_call_ms`, its failures
    /// forgotten. Items deleted meanwhile are skipped.
    pub async fn save_popularity(
        &self,
        source: &str,
        owner: &str,
        counts: &[(i64, i64)],
        fetched_at: i64,
        next_call_ms: i64,
    ) -> Result<()> {
        // Rules that look at popularity could not hold when the items arrived: what they
        // decide with the new counts is written with them.
        let learned: HashMap<i64, Learned> = counts
            .iter()
            .map(|&(item_id, count)| (item_id, Learned::Popularity(count.max(0))))
            .collect();
        let changes = self.late_rule_changes(&learned).await?;
        let (engine, now) = (self.engine(), crate::unix_now());
        in_tx!(self, |tx| {
            write_late_changes_on!(tx, &changes, engine, now);
            for &(item_id, count) in counts {
                sqlx::query(
                    "INSERT INTO item_popularity (item_id, count, fetched_at)
                     SELECT id, $2, $3 FROM items WHERE id = $1
                     ON CONFLICT (item_id) DO UPDATE SET count = excluded.count,
                        fetched_at = excluded.fetched_at",
                )
                .bind(item_id)
                .bind(count.max(0))
                .bind(fetched_at)
                .execute(&mut *tx)
                .await?;
            }
            sqlx::query(
                "UPDATE popularity_sources SET not_before_ms = $3, failures = 0, last_error = NULL,
                        lease_owner = NULL, lease_until_ms = NULL
                 WHERE source = $1 AND lease_owner = $2",
            )
            .bind(source)
            .bind(owner)
            .bind(next_call_ms)
            .execute(&mut *tx)
            .await?;
        });
        Ok(())
    }

    /// Records that `owner`'s call to `source` failed: the counts stay as they were, the
    /// failures are counted, and the source waits until `next_call_ms(failures)` (failures
    /// including this one). Answers the failures and that time.
    pub async fn popularity_call_failed(
        &self,
        source: &str,
        owner: &str,
        error: &str,
        next_call_ms: impl FnOnce(i64) -> i64,
    ) -> Result<(i64, i64)> {
        let error = crate::text::strip_control_chars(error);
        let outcome = in_tx!(self, |tx| {
            let failures: Option<i64> = sqlx::query_scalar(
                "UPDATE popularity_sources SET failures = failures + 1
                 WHERE source = $1 AND lease_owner = $2 RETURNING failures",
            )
            .bind(source)
            .bind(owner)
            .fetch_optional(&mut *tx)
            .await?;
            match failures {
                Some(failures) => {
                    let not_before = next_call_ms(failures);
                    sqlx::query(
                        "UPDATE popularity_sources SET not_before_ms = $2, last_error = $3,
                                lease_owner = NULL, lease_until_ms = NULL
                         WHERE source = $1",
                    )
                    .bind(source)
                    .bind(not_before)
                    .bind(error.as_ref())
                    .execute(&mut *tx)
                    .await?;
                    (failures, not_before)
                }
                // The lease ended and another worker holds the source: its pace stands.
                None => (0, 0),
            }
        });
        Ok(outcome)
    }

    /// A source's pace as stored; `None` before its first call.
    pub async fn popularity_source_state(
        &self,
        source: &str,
    ) -> Result<Option<PopularitySourceState>> {
        let row: Option<(i64, i64, i64, i64, Option<String>, Option<String>)> =
            with_db!(self, read, |db| {
                sqlx::query_as(
                    "SELECT not_before_ms, cycle_started_ms, cycle_calls, failures, lease_owner,
                            last_error
                     FROM popularity_sources WHERE source = $1",
                )
                .bind(source)
                .fetch_optional(db)
                .await?
            });
        Ok(row.map(
            |(not_before_ms, cycle_started_ms, cycle_calls, failures, lease_owner, last_error)| {
                PopularitySourceState {
                    not_before_ms,
                    cycle_started_ms,
                    cycle_calls,
                    failures,
                    lease_owner,
                    last_error,
                }
            },
        ))
    }

    /// The known counts of these items (at most [`MAX_PAGE_SIZE`]); items without one are
    /// left out. The caller checks that the user may see the items.
    pub async fn popularity_of(&self, ids: &[i64]) -> Result<HashMap<i64, Popularity>> {
        if ids.is_empty() {
            return Ok(HashMap::new());
        }
        if ids.len() > MAX_PAGE_SIZE as usize {
            return Err(crate::StoreError::Invalid(format!(
                "at most {MAX_PAGE_SIZE} items' counts can be read at once"
            )));
        }
        let placeholders: Vec<String> = (1..=ids.len()).map(|n| format!("${n}")).collect();
        let sql = format!(
            "SELECT item_id, count, fetched_at FROM item_popularity WHERE item_id IN ({})",
            placeholders.join(", ")
        );
        let rows: Vec<(i64, i64, i64)> = with_db!(self, read, |db| {
            let mut query = sqlx::query_as(sqlx::AssertSqlSafe(sql));
            for id in ids {
                query = query.bind(*id);
            }
            query.fetch_all(db).await?
        });
        Ok(rows
            .into_iter()
            .map(|(id, count, fetched_at)| (id, Popularity { count, fetched_at }))
            .collect())
    }

    /// One page of the user's hot list: items of the user's subscriptions with a known count
    /// of at least `query.min_count`, published in the window (`query.listing.since`), with the
    /// listing's feed, group and filter; highest count first, then newest.
    pub async fn hot_items(&self, user_id: i64, query: &HotQuery) -> Result<HotPage> {
        let scope = ItemQuery {
            cursor: None,
            ..query.listing.clone()
        };
        self.check_scope(user_id, &scope).await?;
        let limit = scope.limit.clamp(1, MAX_PAGE_SIZE);
        let mut listing = Listing::new(user_id);
        listing.push("s.feed_id = i.feed_id AND s.user_id = $1".into());
        listing.common(&scope);
        let min = listing.bind(query.min_count.max(0));
        listing.push(format!("p.count >= {min}"));
        match scope.filter {
            ItemFilter::All => listing.push(NOT_HIDDEN.into()),
            ItemFilter::Unread => listing.push(format!("NOT {IS_READ}")),
            ItemFilter::Starred => listing.push("COALESCE(st.is_starred, FALSE)".into()),
        }
        if let Some(cursor) = query.cursor {
            let count = listing.bind(cursor.count);
            let published = listing.bind(cursor.published_at);
            let id = listing.bind(cursor.id);
            listing.push(format!(
                "(p.count < {count} OR (p.count = {count} AND (i.published_at < {published}
                  OR (i.published_at = {published} AND i.id < {id}))))"
            ));
        }
        let fetch = listing.bind(limit + 1);
        let sql = format!(
            "SELECT {SUMMARY_COLUMNS}, {IS_READ}, COALESCE(st.is_starred, FALSE), i.thumbnail_url,
                    i.language, p.count, p.fetched_at
             FROM item_popularity p
             JOIN items i ON i.id = p.item_id
             JOIN subscriptions s ON s.feed_id = i.feed_id
             JOIN feeds f ON f.id = s.feed_id
             LEFT JOIN item_states st ON st.user_id = s.user_id AND st.item_id = i.id
             WHERE {}
             ORDER BY p.count DESC, i.published_at DESC, i.id DESC
             LIMIT {fetch}",
            listing.conditions()
        );
        let binds = listing.binds;
        let mut items: Vec<HotItem> = with_db!(self, read, |db| {
            let mut query = sqlx::query(sqlx::AssertSqlSafe(sql));
            for value in &binds {
                query = match value {
                    SqlValue::Int(value) => query.bind(*value),
                    SqlValue::Text(value) => query.bind(value.as_str()),
                };
            }
            let rows = query.fetch_all(db).await?;
            let mut items = Vec::with_capacity(rows.len());
            for row in &rows {
                use sqlx::Row;
                let summary = decode_summary(row)?;
                items.push(HotItem {
                    item: summary_from_row(summary),
                    popularity: Popularity {
                        count: row.try_get(14)?,
                        fetched_at: row.try_get(15)?,
                    },
                });
            }
            items
        });
        let next_cursor = if items.len() as i64 > limit {
            items.truncate(limit as usize);
            items.last().map(|hot| HotCursor {
                count: hot.popularity.count,
                published_at: hot.item.published_at,
                id: hot.item.id,
            })
        } else {
            None
        };
        Ok(HotPage { items, next_cursor })
    }
}

/// The first `max` distinct links of `rows` in order, each with its items.
fn group_links(rows: &[(i64, String)], max: usize) -> Vec<PopularityLink> {
    let mut links: Vec<PopularityLink> = Vec::new();
    let mut index: HashMap<&str, usize> = HashMap::new();
    for (item_id, url) in rows {
        match index.get(url.as_str()) {
            Some(&at) if !links[at].item_ids.contains(item_id) => {
                links[at].item_ids.push(*item_id);
            }
            Some(_) => {}
            None if links.len() < max => {
                index.insert(url, links.len());
                links.push(PopularityLink {
                    url: url.clone(),
                    item_ids: vec![*item_id],
                });
            }
            None => {}
        }
    }
    links
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn hot_cursors_read_back_and_refuse_others() {
        let cursor = HotCursor {
            count: 12,
            published_at: 1_700_000_000,
            id: 42,
        };
        assert_eq!(HotCursor::decode(&cursor.encode()), Some(cursor));
        assert_eq!(HotCursor::decode("zz"), None);
        assert_eq!(HotCursor::decode(&hex::encode("1700000000:42")), None);
        assert_eq!(HotCursor::decode(&hex::encode("h:1:2:3:4")), None);
    }

    #[test]
    fn links_are_distinct_and_bounded() {
        let rows = vec![
            (1, "https://a.example/".to_owned()),
            (2, "https://b.example/".to_owned()),
            (3, "https://a.example/".to_owned()),
            (4, "https://c.example/".to_owned()),
            (1, "https://a.example/".to_owned()),
        ];
        let links = group_links(&rows, 2);
        assert_eq!(links.len(), 2);
        assert_eq!(links[0].url, "https://a.example/");
        assert_eq!(links[0].item_ids, vec![1, 3]);
        assert_eq!(links[1].item_ids, vec![2]);
    }
}
