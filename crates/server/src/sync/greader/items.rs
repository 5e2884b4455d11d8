//! Items: as a stream's contents and ids (`stream/contents`, `stream/items/ids`,
//! `stream/items/contents`), and their states and labels (`edit-tag`, `mark-all-as-read`).

use std::collections::HashMap;

use axum::response::{IntoResponse, Response};
use serde_json::{Value, json};
use tidings_store::{
    MAX_MARK_IDS, MAX_SYNC_IDS, MAX_SYNC_ITEM_IDS, MAX_SYNC_ITEMS, MarkReadScope, SyncIds,
    SyncItem, SyncQuery, unix_now,
};

use super::ids::{
    READ, READING_LIST, STARRED, feed_stream_id, item_ids, label_name, label_stream_id,
    long_item_id, to_micros,
};
use super::protocol::{GReaderError, Request, Result, json_response, ok};
use super::streams::{Catalog, Stream, include, named_streams, page_of, stream_query};
use crate::base::state::AppState;
use crate::sync::shared::{enclosure_url_for_apps, html_for_apps, title_for_apps};

/// An enclosure as FreshRSS writes it and the apps read it (Capy Reader's
/// readerclient/Item.kt, NewsFlash's greader_api): `href`, and `type` and `length` (a number
/// of bytes) only when the feed gave them.
fn enclosure_json(state: &AppState, enclosure: &tidings_store::Enclosure) -> Value {
    let mut entry = json!({"href": enclosure_url_for_apps(state, enclosure)});
    if let Some(mime) = enclosure
        .mime_type
        .as_deref()
        .filter(|m| !m.trim().is_empty())
    {
        entry["type"] = json!(mime);
    }
    if let Some(length) = enclosure.length.filter(|n| *n > 0) {
        entry["length"] = json!(length);
    }
    entry
}

/// An item as `stream/contents` shows it.
fn item_json(
    state: &AppState,
    catalog: &Catalog,
    entry: &SyncItem,
    labels: &HashMap<i64, Vec<String>>,
) -> Value {
    let item = &entry.item;
    let mut categories = vec![json!(READING_LIST)];
    if item.is_read {
        categories.push(json!(READ));
    }
    if item.is_starred {
        categories.push(json!(STARRED));
    }
    categories.push(json!(label_stream_id(catalog.group_name(entry.group_id))));
    for label in labels.get(&item.id).into_iter().flatten() {
        categories.push(json!(label_stream_id(label)));
    }
    let content = item.content.clone().or_else(|| item.summary.clone());
    let content = html_for_apps(state, content.unwrap_or_default());
    // An item without a link still has one, empty, as FreshRSS writes it: Fluent Reader reads
    // `canonical[0].href` unguarded (src/scripts/models/services/greader.ts) and Capy Reader
    // requires the `href` (readerclient/Item.kt); `[]` failed their whole sync.
    let link = item.url.clone().unwrap_or_default();
    let enclosures: Vec<Value> = item
        .enclosures
        .iter()
        .map(|e| enclosure_json(state, e))
        .collect();
    json!({
        // The id, `crawlTimeMsec` and `timestampUsec` are the user's arrival order (what
        // `ot`, `nt`, `r` and `c` work on); `published` stays the publication date.
        "id": long_item_id(entry.sync_id),
        "crawlTimeMsec": (entry.arrived_us / 1000).to_string(),
        "timestampUsec": entry.arrived_us.to_string(),
        "published": item.published_at,
        "updated": item.updated_at.unwrap_or(item.published_at),
        "title": title_for_apps(item.title.as_deref().unwrap_or_default()),
        "author": title_for_apps(item.author.as_deref().unwrap_or_default()),
        "canonical": [{"href": link}],
        "alternate": [{"href": link, "type": "text/html"}],
        "categories": categories,
        "origin": {
            "streamId": feed_stream_id(entry.item.feed_id),
            "title": title_for_apps(&entry.feed_title),
            "htmlUrl": entry.site_url.clone().unwrap_or_default(),
        },
        "summary": {"direction": "ltr", "content": content},
        "content": {"direction": "ltr", "content": content},
        "enclosure": enclosures,
    })
}

/// Items as a stream's `items`, with the labels on them.
async fn items_json(
    state: &AppState,
    user_id: i64,
    catalog: &Catalog,
    rows: &[SyncItem],
) -> Result<Vec<Value>> {
    let ids: Vec<i64> = rows.iter().map(|r| r.item.id).collect();
    let mut labels: HashMap<i64, Vec<String>> = HashMap::new();
    for (id, label) in state.store.item_labels(user_id, &ids).await? {
        labels.entry(id).or_default().push(label);
    }
    Ok(rows
        .iter()
        .map(|r| item_json(state, catalog, r, &labels))
        .collect())
}

/// The envelope of items of a stream. No `self` link, as FreshRSS sends none: Google Reader's
/// form (a list of `{"href"}`) fails NewsFlash's `greader_api`, which reads an object, and the
/// object form would fail clients that iterate Google Reader's list (PyPI `google-reader`).
fn stream_json(request: &Request<'_>, stream_id: &str, title: &str, items: Vec<Value>) -> Value {
    json!({
        "direction": "ltr",
        "id": stream_id,
        "title": title,
        "description": "",
        "author": request.auth.user.username,
        "updated": unix_now(),
        "items": items,
    })
}

/// `stream/items/ids`: `itemRefs` with decimal ids, and a `continuation` when there is more.
pub(super) async fn stream_item_ids(request: &Request<'_>) -> Result<Response> {
    let (state, user_id) = (request.state, request.user_id());
    let catalog =
        Catalog::load_to_name(state, user_id, &named_streams(request.params, None)).await?;
    let (_, mut query) = stream_query(&catalog, request.params, None, MAX_SYNC_ITEM_IDS - 1)?;
    let (rows, next) = page_of(
        &mut query,
        async |q| Ok(state.store.sync_item_ids(user_id, q).await?),
        |r| (r.published_at, r.id),
    )
    .await?;
    let answer = ItemRefs {
        continuation: next,
        item_refs: rows
            .iter()
            .map(|r| ItemRef {
                direct_stream_ids: [],
                id: Decimal(r.id),
                timestamp_usec: Decimal(r.arrived_us),
            })
            .collect(),
    };
    // About 70 bytes a reference: written once into a buffer of that size.
    Ok(json_response(&answer, 64 + 72 * answer.item_refs.len()))
}

/// The answer of `stream/items/ids`, serialized as it is declared, without building a JSON
/// tree first: a page of 1,000 references as `serde_json::Value` maps took a few thousand
/// allocations. Fields in the alphabetical order the maps wrote them in, so that the bytes
/// are the same.
#[derive(serde::Serialize)]
struct ItemRefs {
    #[serde(skip_serializing_if = "Option::is_none")]
    continuation: Option<String>,
    #[serde(rename = "itemRefs")]
    item_refs: Vec<ItemRef>,
}

/// One reference of `stream/items/ids`.
#[derive(serde::Serialize)]
struct ItemRef {
    #[serde(rename = "directStreamIds")]
    direct_stream_ids: [i64; 0],
    id: Decimal,
    #[serde(rename = "timestampUsec")]
    timestamp_usec: Decimal,
}

/// A number written as a JSON string of its decimal digits (the protocol's ids and times),
/// without a `String` of its own.
struct Decimal(i64);

impl serde::Serialize for Decimal {
    fn serialize<S: serde::Serializer>(
        &self,
        serializer: S,
    ) -> std::result::Result<S::Ok, S::Error> {
        serializer.collect_str(&self.0)
    }
}

/// `stream/contents[/<stream id>]`: the stream in the path or `s`, the reading list when
/// neither is given.
pub(super) async fn stream_contents(
    request: &Request<'_>,
    stream: Option<String>,
) -> Result<Response> {
    let (state, user_id) = (request.state, request.user_id());
    let named = named_streams(request.params, stream.as_deref());
    let catalog = Catalog::load_for(state, user_id, &named).await?;
    let (stream_id, mut query) = stream_query(
        &catalog,
        request.params,
        stream.as_deref(),
        MAX_SYNC_ITEMS - 1,
    )?;
    let (rows, next) = page_of(
        &mut query,
        async |q| Ok(state.store.sync_items(user_id, q).await?),
        |row| (row.item.published_at, row.sync_id),
    )
    .await?;
    let stream = catalog.stream(&stream_id)?;
    let title = match stream {
        Stream::Feed(feed_id) => catalog
            .subscriptions
            .iter()
            .find(|s| s.feed_id == feed_id)
            .map(Catalog::title)
            .unwrap_or_default(),
        Stream::Group(_) | Stream::Label(_) => label_name(&stream_id).to_string(),
        _ => String::new(),
    };
    // A feed's stream is named by its id, however the request named it.
    let stream_id = match stream {
        Stream::Feed(feed_id) => feed_stream_id(feed_id),
        _ => stream_id,
    };
    let items = items_json(state, user_id, &catalog, &rows).await?;
    let mut answer = stream_json(request, &stream_id, &title, items);
    if let Some(next) = next {
        answer["continuation"] = json!(next);
    }
    Ok(axum::Json(answer).into_response())
}

/// `stream/items/contents`: the items named by `i` (repeatable), in the order named.
pub(super) async fn stream_items_contents(request: &Request<'_>) -> Result<Response> {
    let (state, user_id) = (request.state, request.user_id());
    let ids = item_ids(request.params)?;
    let catalog = Catalog::load_for(state, user_id, &[]).await?;
    let mut rows: Vec<SyncItem> = Vec::new();
    for chunk in ids.chunks(MAX_SYNC_IDS) {
        let query = SyncQuery {
            ids: Some(chunk.to_vec()),
            ids_are: SyncIds::Arrival,
            limit: chunk.len() as i64,
            ..SyncQuery::default()
        };
        rows.extend(state.store.sync_items(user_id, &query).await?);
    }
    let position: HashMap<i64, usize> = ids.iter().enumerate().map(|(n, id)| (*id, n)).collect();
    rows.sort_by_key(|r| position.get(&r.sync_id).copied().unwrap_or(usize::MAX));
    let items = items_json(state, user_id, &catalog, &rows).await?;
    Ok(axum::Json(stream_json(request, READING_LIST, "", items)).into_response())
}

/// The user's items behind sync ids (the ids clients hold: arrival numbers), in the order
/// named; ids that are not the user's are left out.
async fn items_of(state: &AppState, user_id: i64, sync_ids: &[i64]) -> Result<Vec<i64>> {
    let mut found: HashMap<i64, i64> = HashMap::new();
    for chunk in sync_ids.chunks(MAX_SYNC_IDS) {
        found.extend(state.store.items_of_sync_ids(user_id, chunk).await?);
    }
    Ok(sync_ids
        .iter()
        .filter_map(|id| found.get(id).copied())
        .collect())
}

/// Marks items read, a thousand at a time.
async fn mark_ids_read(state: &AppState, user_id: i64, ids: &[i64]) -> Result<()> {
    for chunk in ids.chunks(MAX_MARK_IDS) {
        state
            .store
            .mark_read(user_id, &MarkReadScope::Ids(chunk.to_vec()), None)
            .await?;
    }
    Ok(())
}

/// Sets items' read or starred state, a thousand at a time.
async fn set_ids_state(
    state: &AppState,
    user_id: i64,
    ids: &[i64],
    read: Option<bool>,
    starred: Option<bool>,
) -> Result<()> {
    for chunk in ids.chunks(MAX_SYNC_IDS) {
        state
            .store
            .set_items_state(user_id, chunk, read, starred)
            .await?;
    }
    Ok(())
}

/// `edit-tag`: items `i` (repeatable), tags to add `a` and to remove `r` (repeatable): the
/// read, starred and kept-unread states and the user's labels. Other Google states
/// (`broadcast`, `like`) are accepted and change nothing.
pub(super) async fn edit_tag(request: &Request<'_>) -> Result<Response> {
    let (state, user_id, params) = (request.state, request.user_id(), request.params);
    let named = item_ids(params)?;
    if named.is_empty() {
        return Err(GReaderError::bad_request(
            "Missing i: the ids of the items to tag.",
        ));
    }
    let ids = items_of(state, user_id, &named).await?;
    let catalog = Catalog::load(state, user_id).await?;
    for (tag, adding) in params
        .all("r")
        .into_iter()
        .map(|t| (t, false))
        .chain(params.all("a").into_iter().map(|t| (t, true)))
    {
        // A label is an item label here even when a group has its name.
        let stream = match catalog.stream(tag)? {
            Stream::Group(_) => Stream::Label(label_name(tag).to_string()),
            other => other,
        };
        match (stream, adding) {
            (Stream::Read, true) => mark_ids_read(state, user_id, &ids).await?,
            (Stream::Read, false) | (Stream::KeptUnread, true) => {
                set_ids_state(state, user_id, &ids, Some(false), None).await?;
            }
            (Stream::Starred, starred) => {
                set_ids_state(state, user_id, &ids, None, Some(starred)).await?;
            }
            (Stream::Label(name), true) => {
                for id in &ids {
                    state.store.add_item_label(user_id, *id, &name).await?;
                }
            }
            (Stream::Label(name), false) => {
                for id in &ids {
                    state.store.remove_item_label(user_id, *id, &name).await?;
                }
            }
            (Stream::KeptUnread, false) | (Stream::Empty, _) => {}
            (Stream::ReadingList | Stream::Feed(_) | Stream::Group(_), _) => {
                return Err(GReaderError::bad_request(format!(
                    "{tag} cannot be put on or taken off items: use \
                     user/-/state/com.google/read, starred, kept-unread or user/-/label/<name>."
                )));
            }
        }
    }
    Ok(ok())
}

/// `mark-all-as-read`: the stream `s` (the reading list when absent), with `ts` (seconds,
/// milliseconds or microseconds, as clients send it) marking only the items published at or
/// before it.
pub(super) async fn mark_all_as_read(request: &Request<'_>) -> Result<Response> {
    let (state, user_id, params) = (request.state, request.user_id(), request.params);
    let catalog = Catalog::load(state, user_id).await?;
    let stream = catalog.stream(params.get("s").unwrap_or(READING_LIST))?;
    if let Some(ts) = params.number("ts")?.filter(|ts| *ts > 0) {
        // `ts` is the arrival time of the newest item the app has shown (its
        // `timestampUsec`): what arrived after it stays unread, whatever its date.
        let mut query = SyncQuery {
            ids_are: SyncIds::Arrival,
            arrived_before_us: Some(to_micros(ts).saturating_add(1)),
            ..SyncQuery::default()
        };
        include(&mut query, &stream)?;
        state.store.mark_sync_items_read(user_id, &query).await?;
        return Ok(ok());
    }
    let scope = match &stream {
        Stream::ReadingList | Stream::KeptUnread => MarkReadScope::All,
        Stream::Feed(id) => MarkReadScope::Feed(*id),
        Stream::Group(id) => MarkReadScope::Group(*id),
        Stream::Starred => MarkReadScope::Starred {
            feed_id: None,
            group_id: None,
        },
        Stream::Read | Stream::Empty => return Ok(ok()),
        Stream::Label(name) => {
            let query = SyncQuery {
                label: Some(name.clone()),
                ..SyncQuery::default()
            };
            state.store.mark_sync_items_read(user_id, &query).await?;
            return Ok(ok());
        }
    };
    state.store.mark_read(user_id, &scope, None).await?;
    Ok(ok())
}
