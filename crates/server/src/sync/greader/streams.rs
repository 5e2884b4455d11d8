//! Streams: the user's subscriptions and groups that name them, a stream id read into what it
//! selects, the listing a stream request asks for (`s`, `it`, `xt`, `r`, `n`, `ot`, `nt`, `c`)
//! and its pages, and `unread-count`, the unread items of every stream.

use std::collections::BTreeMap;

use axum::response::{IntoResponse, Response};
use serde_json::json;
use tidings_store::{Group, Subscription, SyncIds, SyncOrder, SyncQuery};

use super::ids::{
    FEED_PREFIX, READING_LIST, continuation, feed_stream_id, label_stream_id, parse_continuation,
    to_micros, usec,
};
use super::protocol::{GReaderError, Params, Request, Result};
use crate::base::state::AppState;
use crate::sync::shared::title_for_apps;

/// Items or ids per page when the client does not say (as Google Reader).
const DEFAULT_PAGE: i64 = 20;
/// `max` in `unread-count`: the count clients show as "1000+".
const UNREAD_COUNT_MAX: i64 = 1000;

/// The user's subscriptions and groups, to name streams.
pub(super) struct Catalog {
    pub(super) groups: Vec<Group>,
    pub(super) subscriptions: Vec<Subscription>,
}

/// A stream a request names.
#[derive(Debug, Clone, PartialEq, Eq)]
pub(super) enum Stream {
    ReadingList,
    Read,
    Starred,
    KeptUnread,
    Feed(i64),
    Group(i64),
    Label(String),
    /// A Google Reader stream tidings has no items in (`broadcast`, `like`, …).
    Empty,
}

impl Catalog {
    pub(super) async fn load(state: &AppState, user_id: i64) -> Result<Catalog> {
        Ok(Catalog {
            groups: state.store.list_groups(user_id).await?,
            subscriptions: state.store.list_subscriptions(user_id).await?,
        })
    }

    /// Only what naming `streams` takes: the groups always (they are few, and items' label
    /// categories name them), the subscriptions only when a stream names a feed. The calls
    /// apps make most (the reading list's ids and contents) then read no subscription list,
    /// the largest part of their cost on accounts with hundreds of feeds.
    pub(super) async fn load_for(
        state: &AppState,
        user_id: i64,
        streams: &[&str],
    ) -> Result<Catalog> {
        let names_a_feed = streams.iter().any(|s| s.trim().starts_with(FEED_PREFIX));
        Ok(Catalog {
            groups: state.store.list_groups(user_id).await?,
            subscriptions: if names_a_feed {
                state.store.list_subscriptions(user_id).await?
            } else {
                Vec::new()
            },
        })
    }

    /// Only what reading the stream ids `streams` takes: the groups when one names a label
    /// (a group's or an item label), the subscriptions when one names a feed. Listing the
    /// reading list's ids then reads neither.
    pub(super) async fn load_to_name(
        state: &AppState,
        user_id: i64,
        streams: &[&str],
    ) -> Result<Catalog> {
        let names_a_label = streams.iter().any(|s| {
            s.trim()
                .strip_prefix("user/")
                .and_then(|rest| rest.split_once('/'))
                .is_some_and(|(_, rest)| rest.starts_with("label/"))
        });
        let mut catalog = if names_a_label {
            Catalog::load_for(state, user_id, streams).await?
        } else {
            Catalog {
                groups: Vec::new(),
                subscriptions: Vec::new(),
            }
        };
        if !names_a_label && streams.iter().any(|s| s.trim().starts_with(FEED_PREFIX)) {
            catalog.subscriptions = state.store.list_subscriptions(user_id).await?;
        }
        Ok(catalog)
    }

    pub(super) fn group_name(&self, group_id: i64) -> &str {
        self.groups
            .iter()
            .find(|g| g.id == group_id)
            .map_or("", |g| g.name.as_str())
    }

    pub(super) fn group_named(&self, name: &str) -> Option<&Group> {
        self.groups.iter().find(|g| g.name == name)
    }

    /// The subscription a `feed/…` stream id (or a bare URL) names.
    pub(super) fn subscription_of(&self, stream_id: &str) -> Result<&Subscription> {
        let rest = stream_id
            .trim()
            .strip_prefix(FEED_PREFIX)
            .unwrap_or(stream_id.trim());
        let found = match rest.parse::<i64>() {
            Ok(feed_id) => self.subscriptions.iter().find(|s| s.feed_id == feed_id),
            Err(_) => {
                // Feed URLs are stored normalized (F10): any spelling of one names it.
                let url = tidings_feed::normalize_feed_url_text(rest);
                self.subscriptions.iter().find(|s| s.feed_url == url)
            }
        };
        found.ok_or_else(|| {
            GReaderError::not_found(format!(
                "Stream not found: {stream_id} is not one of your subscriptions \
                 (subscription/list gives their ids)."
            ))
        })
    }

    /// A subscription's title as apps are sent it ([`title_for_apps`]).
    pub(super) fn title(s: &Subscription) -> String {
        let title = s.custom_title.as_ref().or(s.feed_title.as_ref());
        title_for_apps(title.unwrap_or(&s.feed_url))
    }

    /// Parses a stream id. `user/<anything>/…` is the caller's own, as `user/-/…`.
    pub(super) fn stream(&self, stream_id: &str) -> Result<Stream> {
        let stream_id = stream_id.trim();
        if stream_id.starts_with(FEED_PREFIX) {
            return Ok(Stream::Feed(self.subscription_of(stream_id)?.feed_id));
        }
        let own = stream_id
            .strip_prefix("user/")
            .and_then(|rest| rest.split_once('/'))
            .map(|(_, rest)| rest);
        let unknown = || {
            GReaderError::bad_request(format!(
                "Unknown stream id {stream_id:?}: use feed/<id>, user/-/label/<name> or \
                 user/-/state/com.google/reading-list, read, starred or kept-unread."
            ))
        };
        let Some(own) = own else {
            return Err(unknown());
        };
        if let Some(name) = own.strip_prefix("label/") {
            return Ok(match self.group_named(name) {
                Some(group) => Stream::Group(group.id),
                None => Stream::Label(name.to_string()),
            });
        }
        match own.strip_prefix("state/com.google/") {
            Some("reading-list") => Ok(Stream::ReadingList),
            Some("read") => Ok(Stream::Read),
            Some("starred") => Ok(Stream::Starred),
            Some("kept-unread") => Ok(Stream::KeptUnread),
            Some(_) => Ok(Stream::Empty),
            None => Err(unknown()),
        }
    }
}

/// Narrows `query` to the items of `stream` as well; contradictions select nothing.
pub(super) fn include(query: &mut SyncQuery, stream: &Stream) -> Result<()> {
    fn narrow<T: PartialEq + Clone>(slot: &mut Option<T>, value: T, ids: &mut Option<Vec<i64>>) {
        match slot {
            Some(existing) if *existing != value => *ids = Some(Vec::new()),
            _ => *slot = Some(value),
        }
    }
    match stream {
        Stream::ReadingList => {}
        Stream::Read => narrow(&mut query.read, true, &mut query.ids),
        Stream::KeptUnread => narrow(&mut query.read, false, &mut query.ids),
        Stream::Starred => narrow(&mut query.starred, true, &mut query.ids),
        Stream::Feed(id) => narrow(&mut query.feed_id, *id, &mut query.ids),
        Stream::Group(id) => narrow(&mut query.group_id, *id, &mut query.ids),
        Stream::Label(name) => {
            if query.label.as_ref().is_some_and(|l| l != name) {
                return Err(GReaderError::bad_request(
                    "Only one item label can be selected at a time.",
                ));
            }
            query.label = Some(name.clone());
        }
        Stream::Empty => query.ids = Some(Vec::new()),
    }
    Ok(())
}

/// Narrows `query` to the items not in `stream` (`xt`).
fn exclude(query: &mut SyncQuery, stream: &Stream) -> Result<()> {
    match stream {
        Stream::Read => include(query, &Stream::KeptUnread),
        Stream::KeptUnread => include(query, &Stream::Read),
        Stream::Starred => {
            if query.starred == Some(true) {
                query.ids = Some(Vec::new());
            }
            query.starred = Some(false);
            Ok(())
        }
        Stream::ReadingList => include(query, &Stream::Empty),
        Stream::Empty => Ok(()),
        Stream::Feed(_) | Stream::Group(_) | Stream::Label(_) => Err(GReaderError::bad_request(
            "Excluding a feed or a label (xt=…) is not supported; exclude \
             user/-/state/com.google/read, starred or kept-unread.",
        )),
    }
}

/// Every stream a stream request names: the one in the path or `s`, and `it` and `xt`.
pub(super) fn named_streams<'a>(params: &'a Params, stream: Option<&'a str>) -> Vec<&'a str> {
    let mut named: Vec<&str> = stream.into_iter().chain(params.get("s")).collect();
    named.extend(params.all("it"));
    named.extend(params.all("xt"));
    named
}

/// The listing a stream request asks for: `s` (or the stream in the path), `n`, `r`, `c`,
/// `ot`, `nt`, `xt`, `it`, with at most `max` items a page.
pub(super) fn stream_query(
    catalog: &Catalog,
    params: &Params,
    stream: Option<&str>,
    max: i64,
) -> Result<(String, SyncQuery)> {
    let stream_id = stream
        .map(str::to_string)
        .or_else(|| params.get("s").map(str::to_string))
        .filter(|s| !s.trim().is_empty())
        .unwrap_or_else(|| READING_LIST.to_string());
    // Streams list, filter and continue in the user's arrival order: an app's high-water
    // mark (`ot`, the newest id it has) then never passes over an item that was fetched after
    // its last sync but dated before it, nor over the backlog of a newly followed feed.
    let mut query = SyncQuery {
        ids_are: SyncIds::Arrival,
        ..SyncQuery::default()
    };
    include(&mut query, &catalog.stream(&stream_id)?)?;
    for target in params.all("it") {
        include(&mut query, &catalog.stream(target)?)?;
    }
    for target in params.all("xt") {
        exclude(&mut query, &catalog.stream(target)?)?;
    }
    query.order = match params.get("r").map(str::trim) {
        Some("o") => SyncOrder::IdAscending,
        None | Some("") | Some("n") | Some("d") => SyncOrder::IdDescending,
        Some(other) => {
            return Err(GReaderError::bad_request(format!(
                "Invalid r={other:?}: use r=o for oldest first, or leave it out for newest first."
            )));
        }
    };
    query.limit = params.number("n")?.unwrap_or(DEFAULT_PAGE).clamp(1, max);
    if let Some(ot) = params.number("ot")? {
        query.arrived_from_us = Some(start_of_ot(ot));
    }
    if let Some(nt) = params.number("nt")? {
        query.arrived_before_us = Some(to_micros(nt));
    }
    if let Some(c) = params.get("c").filter(|c| !c.trim().is_empty()) {
        query.after = Some(parse_continuation(c)?);
    }
    Ok((stream_id, query))
}

/// Runs a paged listing: one item more than the page tells whether there is a next page.
/// `position` gives a row's (arrival time, sync id), what its continuation carries.
pub(super) async fn page_of<T>(
    query: &mut SyncQuery,
    fetch: impl AsyncFnOnce(&SyncQuery) -> Result<Vec<T>>,
    position: impl Fn(&T) -> (i64, i64),
) -> Result<(Vec<T>, Option<String>)> {
    let page = query.limit;
    query.limit = page + 1;
    let mut rows = fetch(query).await?;
    let next = if rows.len() as i64 > page {
        rows.truncate(page as usize);
        rows.last().map(|row| {
            let (arrived_us, id) = position(row);
            continuation(arrived_us, id)
        })
    } else {
        None
    };
    Ok((rows, next))
}

/// The publication time of a stream's newest unread item (Unix seconds; 0 when none).
async fn newest_unread(state: &AppState, user_id: i64, mut query: SyncQuery) -> Result<i64> {
    query.read = Some(false);
    query.limit = 1;
    let newest = state.store.sync_item_ids(user_id, &query).await?;
    Ok(newest.first().map_or(0, |r| r.published_at))
}

/// `unread-count`: every feed, label and the reading list with unread items (the reading
/// list always), each with its newest unread item's time.
pub(super) async fn unread_count(request: &Request<'_>) -> Result<Response> {
    let (state, user_id) = (request.state, request.user_id());
    // Only the groups: the subscriptions with unread items come with their counts (the full
    // subscription listing read each feed's fetch state and icon, which this never shows).
    let catalog = Catalog {
        groups: state.store.list_groups(user_id).await?,
        subscriptions: Vec::new(),
    };
    let mut counts = Vec::new();
    let mut per_group: BTreeMap<i64, (i64, i64)> = BTreeMap::new();
    let mut total = 0;
    let mut newest_overall = 0_i64;
    for s in state.store.unread_feeds(user_id).await? {
        let newest = s.newest_unread.unwrap_or(0);
        counts.push(json!({
            "id": feed_stream_id(s.feed_id),
            "count": s.unread,
            "newestItemTimestampUsec": usec(newest),
        }));
        let entry = per_group.entry(s.group_id).or_default();
        entry.0 += s.unread;
        entry.1 = entry.1.max(newest);
        total += s.unread;
        newest_overall = newest_overall.max(newest);
    }
    for (group_id, (count, newest)) in per_group {
        counts.push(json!({
            "id": label_stream_id(catalog.group_name(group_id)),
            "count": count,
            "newestItemTimestampUsec": usec(newest),
        }));
    }
    for label in state.store.list_item_labels(user_id).await? {
        if catalog.group_named(&label).is_some() {
            continue;
        }
        let query = SyncQuery {
            label: Some(label.clone()),
            read: Some(false),
            ..SyncQuery::default()
        };
        let count = state.store.count_sync_items(user_id, &query).await?;
        if count > 0 {
            counts.push(json!({
                "id": label_stream_id(&label),
                "count": count,
                "newestItemTimestampUsec": usec(newest_unread(state, user_id, query).await?),
            }));
        }
    }
    counts.push(json!({
        "id": READING_LIST,
        "count": total,
        "newestItemTimestampUsec": usec(newest_overall),
    }));
    Ok(axum::Json(json!({"max": UNREAD_COUNT_MAX, "unreadcounts": counts})).into_response())
}

/// Where `ot` starts, in microseconds. Given in seconds, it covers the whole second before it
/// too: Fluent Reader sends the crawl time of the newest item it has, rounded to the nearest
/// second (`Math.round(crawlTimeMsec / 1000)`), which can land up to half a second after
/// items it has not seen, such as a new subscription's backlog numbered in that half second.
/// Starting a second earlier costs at most a second of items the app has (apps keep items by
/// id); in milliseconds or microseconds, `ot` is exact.
fn start_of_ot(ot: i64) -> i64 {
    if to_micros(ot) == ot.saturating_mul(1_000_000) {
        to_micros(ot.saturating_sub(1))
    } else {
        to_micros(ot)
    }
}
