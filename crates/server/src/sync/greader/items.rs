//! Items: as a stream's contents and ids (`stream/contents`, `stream/items/ids`,
//! `stream/items/contents`), and their states and labels (`edit-tag`, `mark-all-as-read`).

use std::borrow::Cow;
use std::collections::HashMap;

use axum::http::header;
use axum::response::{IntoResponse, Response};
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
fn enclosure_entry<'a>(
    state: &AppState,
    enclosure: &'a tidings_store::Enclosure,
) -> EnclosureEntry<'a> {
    EnclosureEntry {
        href: enclosure_url_for_apps(state, enclosure),
        length: enclosure.length.filter(|n| *n > 0),
        mime_type: enclosure
            .mime_type
            .as_deref()
            .filter(|m| !m.trim().is_empty()),
    }
}

/// An item as `stream/contents` shows it.
fn item_entry<'a>(state: &AppState, entry: &'a SyncItem) -> ItemEntry<'a> {
    let item = &entry.item;
    let mut categories = vec![Cow::Borrowed(READING_LIST)];
    if item.is_read {
        categories.push(Cow::Borrowed(READ));
    }
    if item.is_starred {
        categories.push(Cow::Borrowed(STARRED));
    }
    categories.push(Cow::Owned(label_stream_id(&entry.group_name)));
    for label in &entry.labels {
        categories.push(Cow::Owned(label_stream_id(label)));
    }
    let content = item.content.as_ref().or(item.summary.as_ref());
    let content = html_for_apps(state, content.cloned().unwrap_or_default());
    // An item without a link still has one, empty, as FreshRSS writes it: Fluent Reader reads
    // `canonical[0].href` unguarded (src/scripts/models/services/greader.ts) and Capy Reader
    // requires the `href` (readerclient/Item.kt); `[]` failed their whole sync.
    let link = item.url.as_deref().unwrap_or_default();
    ItemEntry {
        alternate: [Alternate {
            href: link,
            kind: "text/html",
        }],
        author: title_for_apps(item.author.as_deref().unwrap_or_default()),
        canonical: [Canonical { href: link }],
        categories,
        content: Text::ltr(content.clone()),
        // The id, `crawlTimeMsec` and `timestampUsec` are the user's arrival order (what
        // `ot`, `nt`, `r` and `c` work on); `published` stays the publication date.
        crawl_time_msec: Decimal(entry.arrived_us / 1000),
        enclosure: item
            .enclosures
            .iter()
            .map(|e| enclosure_entry(state, e))
            .collect(),
        id: long_item_id(entry.sync_id),
        origin: Origin {
            html_url: entry.site_url.as_deref().unwrap_or_default(),
            stream_id: feed_stream_id(entry.item.feed_id),
            title: title_for_apps(&entry.feed_title),
        },
        published: item.published_at,
        summary: Text::ltr(content),
        timestamp_usec: Decimal(entry.arrived_us),
        title: title_for_apps(item.title.as_deref().unwrap_or_default()),
        updated: item.updated_at.unwrap_or(item.published_at),
    }
}

/// An item of a stream, serialized as it is declared rather than through a JSON tree (a
/// page of 100 items as `serde_json::Value` maps took a few thousand allocations). Here and
/// in the structs under it, fields are in the alphabetical order those maps wrote them in,
/// so that the bytes are the same.
#[derive(serde::Serialize)]
struct ItemEntry<'a> {
    alternate: [Alternate<'a>; 1],
    author: String,
    canonical: [Canonical<'a>; 1],
    categories: Vec<Cow<'a, str>>,
    content: Text,
    #[serde(rename = "crawlTimeMsec")]
    crawl_time_msec: Decimal,
    enclosure: Vec<EnclosureEntry<'a>>,
    id: String,
    origin: Origin<'a>,
    published: i64,
    summary: Text,
    #[serde(rename = "timestampUsec")]
    timestamp_usec: Decimal,
    title: String,
    updated: i64,
}

/// An item's link in `alternate`.
#[derive(serde::Serialize)]
struct Alternate<'a> {
    href: &'a str,
    #[serde(rename = "type")]
    kind: &'static str,
}

/// An item's link in `canonical`.
#[derive(serde::Serialize)]
struct Canonical<'a> {
    href: &'a str,
}

/// An item's `summary` and `content`: its HTML.
#[derive(serde::Serialize)]
struct Text {
    content: String,
    direction: &'static str,
}

impl Text {
    fn ltr(content: String) -> Text {
        Text {
            content,
            direction: "ltr",
        }
    }
}

/// An item's feed.
#[derive(serde::Serialize)]
struct Origin<'a> {
    #[serde(rename = "htmlUrl")]
    html_url: &'a str,
    #[serde(rename = "streamId")]
    stream_id: String,
    title: String,
}

/// An item's enclosure.
#[derive(serde::Serialize)]
struct EnclosureEntry<'a> {
    href: String,
    #[serde(skip_serializing_if = "Option::is_none")]
    length: Option<i64>,
    #[serde(rename = "type", skip_serializing_if = "Option::is_none")]
    mime_type: Option<&'a str>,
}

/// A stream of items as the streams answer it. No `self` link, as FreshRSS sends none:
/// Google Reader's form (a list of `{"href"}`) fails NewsFlash's `greader_api`, which reads
/// an object, and the object form would fail clients that iterate Google Reader's list (PyPI
/// `google-reader`). Fields in alphabetical order, as [`ItemEntry`]'s.
#[derive(serde::Serialize)]
struct StreamEntry<'a> {
    author: &'a str,
    #[serde(skip_serializing_if = "Option::is_none")]
    continuation: Option<String>,
    description: &'static str,
    direction: &'static str,
    id: &'a str,
    items: Vec<ItemEntry<'a>>,
    title: &'a str,
    updated: i64,
}

/// Answers a stream of `rows` named `stream_id`.
fn stream_answer(
    request: &Request<'_>,
    stream_id: &str,
    title: &str,
    rows: &[SyncItem],
    continuation: Option<String>,
) -> Response {
    let items: Vec<ItemEntry<'_>> = rows.iter().map(|r| item_entry(request.state, r)).collect();
    // Each item's HTML twice (`summary` and `content`) and about 1 kB besides.
    let capacity = items
        .iter()
        .map(|i| 2 * i.content.content.len() + 1024)
        .sum::<usize>()
        + 256;
    let answer = StreamEntry {
        author: &request.auth.user.username,
        continuation,
        description: "",
        direction: "ltr",
        id: stream_id,
        items,
        title,
        updated: unix_now(),
    };
    json_response(&answer, capacity)
}

/// `stream/items/ids`: `itemRefs` with decimal ids, and a `continuation` when there is more.
pub(super) async fn stream_item_ids(request: &Request<'_>) -> Result<Response> {
    let (state, user_id) = (request.state, request.user_id());
    let catalog =
        Catalog::load_to_name(state, user_id, &named_streams(request.params, None)).await?;
    let (_, mut query) = stream_query(&catalog, request.params, None, MAX_SYNC_ITEM_IDS - 1)?;
    let (rows, next) = page_of(
        &mut query,
        async |q| Ok(state.store.sync_arrival_refs(user_id, q).await?),
        |&(id, arrived_us)| (arrived_us, id),
    )
    .await?;
    let body = item_refs_body(&rows, next.as_deref());
    Ok(([(header::CONTENT_TYPE, "application/json")], body).into_response())
}

/// The answer of `stream/items/ids`, `{"continuation":"…","itemRefs":[{"directStreamIds":[],
/// "id":"…","timestampUsec":"…"},…]}`, written byte by byte: it holds only numbers, and for
/// the call apps make most the serializer's string escaping and formatting machinery was
/// a tenth of the request's CPU. The same bytes as serializing the fields in alphabetical
/// order (the order JSON maps wrote them in before), as the unit test checks.
///
/// Each reference is put together in a buffer on the stack and added to the body in one
/// copy: added piece by piece (five copies of a few bytes each, each a call to `memcpy`),
/// writing the body was 13.5 % of the server's CPU for a page of 1,000 references (10 %
/// now).
fn item_refs_body(refs: &[(i64, i64)], continuation: Option<&str>) -> Vec<u8> {
    const HEAD: &[u8] = b"{\"directStreamIds\":[],\"id\":\"";
    const MIDDLE: &[u8] = b"\",\"timestampUsec\":\"";
    const TAIL: &[u8] = b"\"}";
    // A reference is at most this long: the three fixed parts and two numbers of up to 20
    // characters (a sign and 19 digits), and a comma before it.
    const MOST: usize = 1 + HEAD.len() + MIDDLE.len() + TAIL.len() + 2 * 20;
    // About 70 bytes a reference: written once into a buffer of that size.
    let mut body = Vec::with_capacity(64 + 72 * refs.len());
    body.push(b'{');
    if let Some(continuation) = continuation {
        body.extend_from_slice(b"\"continuation\":");
        // Two numbers joined by `_`, but escaped as any string would be.
        body.extend_from_slice(serde_json::Value::from(continuation).to_string().as_bytes());
        body.push(b',');
    }
    body.extend_from_slice(b"\"itemRefs\":[");
    let mut one = [0u8; MOST];
    for (n, &(id, arrived_us)) in refs.iter().enumerate() {
        let mut at = 0;
        if n > 0 {
            one[0] = b',';
            at = 1;
        }
        one[at..at + HEAD.len()].copy_from_slice(HEAD);
        at += HEAD.len();
        at += write_decimal(&mut one[at..], id);
        one[at..at + MIDDLE.len()].copy_from_slice(MIDDLE);
        at += MIDDLE.len();
        at += write_decimal(&mut one[at..], arrived_us);
        one[at..at + TAIL.len()].copy_from_slice(TAIL);
        at += TAIL.len();
        body.extend_from_slice(&one[..at]);
    }
    body.extend_from_slice(b"]}");
    body
}

/// Appends a number's decimal digits.
pub(super) fn push_decimal(out: &mut Vec<u8>, n: i64) {
    let mut digits = [0u8; 20];
    let len = write_decimal(&mut digits, n);
    out.extend_from_slice(&digits[..len]);
}

/// The decimal digits of 0 to 99, two by two.
const DIGIT_PAIRS: &[u8; 200] = b"\
0001020304050607080910111213141516171819\
2021222324252627282930313233343536373839\
4041424344454647484950515253545556575859\
6061626364656667686970717273747576777879\
8081828384858687888990919293949596979899";

/// Writes a number's decimal digits (and its sign) at the start of `out`, which holds at
/// least 20 bytes, and says how many it wrote. Two digits a step, from the last, each
/// straight into its place: no buffer of its own to copy from.
fn write_decimal(out: &mut [u8], n: i64) -> usize {
    let sign = usize::from(n < 0);
    let mut rest = n.unsigned_abs();
    let len = sign + rest.checked_ilog10().map_or(1, |log| log as usize + 1);
    let digits = &mut out[..len];
    let mut at = len;
    while rest >= 100 {
        let pair = (rest % 100) as usize * 2;
        rest /= 100;
        at -= 2;
        digits[at..at + 2].copy_from_slice(&DIGIT_PAIRS[pair..pair + 2]);
    }
    if rest >= 10 {
        let pair = rest as usize * 2;
        at -= 2;
        digits[at..at + 2].copy_from_slice(&DIGIT_PAIRS[pair..pair + 2]);
    } else {
        at -= 1;
        digits[at] = b'0' + rest as u8;
    }
    if sign == 1 {
        digits[0] = b'-';
    }
    len
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
    // Items carry their group's name and labels, so the catalog is read only to name the
    // streams asked for: the reading list needs none of it.
    let catalog = Catalog::load_to_name(state, user_id, &named).await?;
    let (stream_id, mut query) = stream_query(
        &catalog,
        request.params,
        stream.as_deref(),
        MAX_SYNC_ITEMS - 1,
    )?;
    let (rows, next) = page_of(
        &mut query,
        async |q| Ok(state.store.sync_items(user_id, q).await?),
        |row| (row.arrived_us, row.sync_id),
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
    Ok(stream_answer(request, &stream_id, &title, &rows, next))
}

/// `stream/items/contents`: the items named by `i` (repeatable), in the order named.
pub(super) async fn stream_items_contents(request: &Request<'_>) -> Result<Response> {
    let (state, user_id) = (request.state, request.user_id());
    let ids = item_ids(request.params)?;
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
    Ok(stream_answer(request, READING_LIST, "", &rows, None))
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

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn numbers_are_written_as_their_decimal_digits() {
        let mut cases = vec![
            0,
            1,
            9,
            10,
            99,
            100,
            101,
            999,
            1_000,
            i64::MAX,
            i64::MIN,
            -1,
            -10,
        ];
        for digits in 1..=18 {
            let power = 10i64.pow(digits);
            cases.extend([power - 1, power, power + 1, -power, -(power - 1)]);
        }
        for n in cases {
            let mut out = Vec::new();
            push_decimal(&mut out, n);
            assert_eq!(String::from_utf8(out).unwrap(), n.to_string(), "{n}");
        }
    }

    #[test]
    fn item_refs_are_written_as_the_serializer_wrote_them() {
        for (refs, continuation) in [
            (vec![], None),
            (vec![(1, 0)], None),
            (
                vec![
                    (83840, 1_795_878_391_279_920),
                    (-7, i64::MIN),
                    (i64::MAX, 9),
                ],
                Some("1795878391278921_82841"),
            ),
        ] {
            let mut expected = serde_json::json!({
                "itemRefs": refs
                    .iter()
                    .map(|(id, us)| serde_json::json!({
                        "directStreamIds": [],
                        "id": id.to_string(),
                        "timestampUsec": us.to_string(),
                    }))
                    .collect::<Vec<_>>(),
            });
            if let Some(c) = continuation {
                expected["continuation"] = serde_json::json!(c);
            }
            assert_eq!(
                String::from_utf8(item_refs_body(&refs, continuation)).unwrap(),
                expected.to_string()
            );
        }
    }
}
