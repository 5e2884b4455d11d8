//! The Fever API (F71) at `/fever/` and `/api/fever.php`, as Fever clients (Reeder, Unread,
//! FeedMe, …) speak it: GET or POST, parameters in the query string or a form body, the key as
//! `api_key` = md5(username:API key), and every answer HTTP 200 JSON with `auth` 0 or 1 (XML
//! with `api=xml`, as the spec describes).
//!
//! A Fever group is a tidings group, a feed is a tidings feed (its id), an item is an item
//! and "saved" is the star. Items come 50 a call, by id: `since_id` pages upwards, `max_id`
//! downwards, `with_ids` names them. Item ids are the user's arrival numbers
//! ([`SyncIds::Arrival`]): an item fetched late, or the backlog of a newly followed feed,
//! comes above every id an app already holds, so paging up from its highest id finds it.

use std::collections::HashMap;

use axum::Router;
use axum::body::Bytes;
use axum::extract::{RawQuery, State};
use axum::http::{HeaderMap, header};
use axum::response::{IntoResponse, Response};
use axum::routing::any;
use serde_json::{Map, Value, json};
use tidings_store::{MarkReadScope, SyncIds, SyncOrder, SyncQuery};

use crate::base::auth::Auth;
use crate::base::client::ClientContext;
use crate::base::state::AppState;
use crate::sync::shared::{
    Refusal, admit, content_type, form_pairs, html_for_apps, icon_data, title_for_apps,
};

/// The protocol version answered.
const API_VERSION: i64 = 3;
/// Items per `items` call, as the protocol fixes it.
const ITEMS_PER_CALL: i64 = 50;
/// `unread_recently_read` undoes the reads made within this many seconds of the latest one.
const RECENT_READS_SPAN: i64 = 15;

/// The Fever routes.
pub fn router() -> Router<AppState> {
    Router::new()
        .route("/fever", any(fever))
        .route("/fever/", any(fever))
        .route("/api/fever.php", any(fever))
        .route("/api/fever.php/", any(fever))
}

// The digest lives with the other credentials, where the account's key handling reaches it
// without importing this adapter; its old path stays for the programs and tests that name it.
pub use crate::base::auth::fever_key_digest as key_digest;

/// The request's parameters: the query string's, then the form body's (which win).
fn parameters(query: Option<&str>, headers: &HeaderMap, body: &[u8]) -> HashMap<String, String> {
    let mut found: HashMap<String, String> = form_pairs(query.unwrap_or("").as_bytes())
        .into_iter()
        .collect();
    // The boundary is read from the header as sent: it is case-sensitive.
    let raw_type = headers
        .get(axum::http::header::CONTENT_TYPE)
        .and_then(|v| v.to_str().ok())
        .unwrap_or("");
    let boundary = content_type(headers)
        .starts_with("multipart/form-data")
        .then(|| raw_type.split_once(';').map(|(_, rest)| rest))
        .flatten()
        .and_then(|rest| {
            rest.split(';').find_map(|param| {
                let (name, value) = param.split_once('=')?;
                name.trim()
                    .eq_ignore_ascii_case("boundary")
                    .then(|| value.trim().trim_matches('"'))
            })
        });
    if let Some(boundary) = boundary {
        found.extend(multipart_fields(body, boundary));
    } else {
        found.extend(form_pairs(body));
    }
    found
}

/// The text fields of a `multipart/form-data` body (some clients post the key that way).
fn multipart_fields(body: &[u8], boundary: &str) -> Vec<(String, String)> {
    let text = String::from_utf8_lossy(body);
    let delimiter = format!("--{boundary}");
    text.split(delimiter.as_str())
        .filter_map(|part| {
            let (head, value) = part.split_once("\r\n\r\n")?;
            let name = head.split("name=\"").nth(1)?.split('"').next()?.to_string();
            Some((name, value.trim_end_matches("\r\n").to_string()))
        })
        .collect()
}

/// Ids as Fever lists them, separated by commas; written into one string, since a heavy
/// user's unread list holds a million.
fn ids_text(ids: impl IntoIterator<Item = i64>) -> String {
    use std::fmt::Write as _;
    let mut text = String::new();
    for id in ids {
        if !text.is_empty() {
            text.push(',');
        }
        // Writing to a String cannot fail.
        _ = write!(text, "{id}");
    }
    text
}

/// Every Fever request: authenticate, then answer each part asked for.
async fn fever(
    State(state): State<AppState>,
    RawQuery(query): RawQuery,
    headers: HeaderMap,
    client: Option<axum::Extension<ClientContext>>,
    request_user: Option<axum::Extension<crate::base::client::RequestUser>>,
    body: Bytes,
) -> Response {
    let params = parameters(query.as_deref(), &headers, &body);
    let mut answer = Map::new();
    answer.insert("api_version".into(), json!(API_VERSION));
    let key = params.get("api_key").map(String::as_str).unwrap_or("");
    let found = state
        .store
        .authenticate_fever_key(key)
        .await
        .map_err(|_| Refusal::Unavailable);
    let unread_recent = params
        .get("unread_recently_read")
        .is_some_and(|v| !matches!(v.trim(), "" | "0"));
    let writes = params.contains_key("mark") || unread_recent;
    let client = client.map(|axum::Extension(c)| c);
    let auth = match admit(&state, client.as_ref(), found, writes).await {
        Ok(auth) => {
            if let Some(axum::Extension(slot)) = &request_user {
                slot.set(auth.user.id);
            }
            auth
        }
        Err(refusal) => {
            answer.insert("auth".into(), json!(0));
            // Fever clients read only `auth`; the reason is for people looking at the answer.
            let reason = match refusal {
                Refusal::BadCredentials => "unknown api_key: md5(username:API key) expected",
                Refusal::RateLimited(_) => "too many requests; try again in a minute",
                Refusal::ReadOnly => "this API key is read-only",
                Refusal::Unavailable => "the server failed; try again later",
            };
            answer.insert("error".into(), json!(reason));
            return render(&params, answer);
        }
    };
    answer.insert("auth".into(), json!(1));
    match respond(&state, &auth, &params, unread_recent, &mut answer).await {
        Ok(()) => {}
        Err(error) => {
            tracing::error!(%error, "Fever API: store error");
            answer.insert("error".into(), json!("the server failed; try again later"));
        }
    }
    render(&params, answer)
}

/// The answer as JSON, or as the Fever spec's XML form when the request says `api=xml`.
fn render(params: &HashMap<String, String>, answer: Map<String, Value>) -> Response {
    if params.get("api").map(|v| v.trim()) != Some("xml") {
        return axum::Json(Value::Object(answer)).into_response();
    }
    let mut xml = String::from("<?xml version=\"1.0\" encoding=\"utf-8\"?>\n");
    write_xml(&mut xml, "response", &Value::Object(answer));
    ([(header::CONTENT_TYPE, "text/xml; charset=utf-8")], xml).into_response()
}

/// `value` as the element `name`, as Fever wrote its XML answers: a member of an object is an
/// element of its name, an array's entries are elements of its name without the final `s`
/// (`items` of `item`, `feeds_groups` of `feeds_group`), text is escaped.
fn write_xml(out: &mut String, name: &str, value: &Value) {
    out.push_str(&format!("<{name}>"));
    match value {
        Value::Object(members) => {
            for (key, member) in members {
                write_xml(out, key, member);
            }
        }
        Value::Array(entries) => {
            let entry_name = name.strip_suffix('s').unwrap_or(name);
            for entry in entries {
                write_xml(out, entry_name, entry);
            }
        }
        Value::String(text) => out.push_str(&xml_text(text)),
        Value::Bool(flag) => out.push_str(if *flag { "1" } else { "0" }),
        Value::Number(number) => out.push_str(&number.to_string()),
        Value::Null => {}
    }
    out.push_str(&format!("</{name}>"));
}

/// Text escaped for an XML element; characters XML 1.0 cannot hold are left out.
fn xml_text(text: &str) -> String {
    let mut out = String::with_capacity(text.len());
    for c in text.chars() {
        match c {
            '&' => out.push_str("&amp;"),
            '<' => out.push_str("&lt;"),
            '>' => out.push_str("&gt;"),
            '\t' | '\n' | '\r' => out.push(c),
            c if c < ' ' || c == '\u{FFFE}' || c == '\u{FFFF}' => {}
            c => out.push(c),
        }
    }
    out
}

async fn respond(
    state: &AppState,
    auth: &Auth,
    params: &HashMap<String, String>,
    unread_recent: bool,
    answer: &mut Map<String, Value>,
) -> Result<(), tidings_store::StoreError> {
    let store = &state.store;
    let user_id = auth.user.id;
    let number = |name: &str| params.get(name).and_then(|v| v.trim().parse::<i64>().ok());
    let subscriptions = store.list_subscriptions(user_id).await?;
    let last_refreshed = subscriptions
        .iter()
        .filter_map(|s| s.last_success_at)
        .max()
        .unwrap_or(0);
    answer.insert("last_refreshed_on_time".into(), json!(last_refreshed));

    if let Some(mark) = params.get("mark") {
        let id = number("id").unwrap_or(0);
        let action = params.get("as").map(String::as_str).unwrap_or("");
        // `before` is a Unix time; without it, everything up to now.
        let before = number("before").filter(|b| *b > 0);
        if mark == "item" {
            mark_item(state, user_id, id, action, answer).await?;
        } else if let Some(before) = before.filter(|_| action == "read") {
            mark_arrived_before(state, user_id, mark, id, before).await?;
            answer.insert(
                "unread_item_ids".into(),
                json!(unread_ids(state, user_id).await?),
            );
        } else {
            mark_all(state, user_id, &subscriptions, mark, id, action, answer).await?;
        }
    }
    if unread_recent {
        unread_recently_read(state, user_id, answer).await?;
    }
    answer_lists(state, user_id, params, &subscriptions, answer).await
}

/// `mark=feed|group&as=read` without `before`: the whole feed, group or (group 0) everything.
async fn mark_all(
    state: &AppState,
    user_id: i64,
    subscriptions: &[tidings_store::Subscription],
    mark: &str,
    id: i64,
    action: &str,
    answer: &mut Map<String, Value>,
) -> Result<(), tidings_store::StoreError> {
    let store = &state.store;
    match (mark, action) {
        ("feed", "read") => {
            if subscriptions.iter().any(|s| s.feed_id == id) {
                store
                    .mark_read(user_id, &MarkReadScope::Feed(id), None)
                    .await?;
            }
        }
        // Group 0 is Fever's "Kindling": every feed.
        ("group", "read") if id == 0 => {
            store.mark_read(user_id, &MarkReadScope::All, None).await?;
        }
        ("group", "read") => match store
            .mark_read(user_id, &MarkReadScope::Group(id), None)
            .await
        {
            Ok(_) | Err(tidings_store::StoreError::NotFound(_)) => {}
            Err(error) => return Err(error),
        },
        _ => {
            answer.insert(
                "error".into(),
                json!(format!("cannot mark {mark} as {action:?}")),
            );
        }
    }
    answer.insert(
        "unread_item_ids".into(),
        json!(unread_ids(state, user_id).await?),
    );
    Ok(())
}

/// The lists a request asks for: groups, feeds, favicons, items, links, unread and saved ids.
async fn answer_lists(
    state: &AppState,
    user_id: i64,
    params: &HashMap<String, String>,
    subscriptions: &[tidings_store::Subscription],
    answer: &mut Map<String, Value>,
) -> Result<(), tidings_store::StoreError> {
    let store = &state.store;
    let number = |name: &str| params.get(name).and_then(|v| v.trim().parse::<i64>().ok());
    let groups_or_feeds = params.contains_key("groups") || params.contains_key("feeds");
    if groups_or_feeds {
        let groups = store.list_groups(user_id).await?;
        if params.contains_key("groups") {
            let list: Vec<Value> = groups
                .iter()
                .map(|g| json!({"id": g.id, "title": title_for_apps(&g.name)}))
                .collect();
            answer.insert("groups".into(), json!(list));
        }
        if params.contains_key("feeds") {
            let list: Vec<Value> = subscriptions
                .iter()
                .map(|s| {
                    json!({
                        "id": s.feed_id,
                        "favicon_id": if s.has_favicon { s.feed_id } else { 0 },
                        "title": title_for_apps(
                            s.custom_title.as_ref().or(s.feed_title.as_ref()).unwrap_or(&s.feed_url),
                        ),
                        "url": s.feed_url,
                        "site_url": s.site_url.clone().unwrap_or_default(),
                        "is_spark": 0,
                        "last_updated_on_time": s.last_success_at.unwrap_or(0),
                    })
                })
                .collect();
            answer.insert("feeds".into(), json!(list));
        }
        let feeds_groups: Vec<Value> = groups
            .iter()
            .map(|g| {
                let feeds = subscriptions
                    .iter()
                    .filter(|s| s.group_id == g.id)
                    .map(|s| s.feed_id);
                json!({"group_id": g.id, "feed_ids": ids_text(feeds)})
            })
            .filter(|g| g["feed_ids"] != "")
            .collect();
        answer.insert("feeds_groups".into(), json!(feeds_groups));
    }

    if params.contains_key("favicons") {
        let mut favicons = Vec::new();
        for s in subscriptions.iter().filter(|s| s.has_favicon) {
            if let Some((_, data)) = icon_data(state, s.feed_id).await {
                favicons.push(json!({"id": s.feed_id, "data": data}));
            }
        }
        answer.insert("favicons".into(), json!(favicons));
    }

    if params.contains_key("items") {
        let mut query = SyncQuery {
            limit: ITEMS_PER_CALL,
            order: SyncOrder::IdDescending,
            ids_are: SyncIds::Arrival,
            ..SyncQuery::default()
        };
        if let Some(with_ids) = params.get("with_ids") {
            let ids: Vec<i64> = with_ids
                .split(',')
                .filter_map(|id| id.trim().parse().ok())
                .take(ITEMS_PER_CALL as usize)
                .collect();
            query.ids = Some(ids);
            query.order = SyncOrder::IdAscending;
        } else if params.contains_key("since_id") {
            // An empty or unreadable since_id (Read You's first sync sends `since_id=`) is
            // since the beginning: the oldest items, upwards, as Fever and FreshRSS answer.
            query.id_above = Some(number("since_id").unwrap_or(0));
            query.order = SyncOrder::IdAscending;
        } else if let Some(max) = number("max_id").filter(|m| *m > 0) {
            query.id_below = Some(max);
        }
        let items = store.sync_items(user_id, &query).await?;
        let list: Vec<Value> = items
            .iter()
            .map(|entry| {
                let item = &entry.item;
                json!({
                    "id": entry.sync_id,
                    "feed_id": item.feed_id,
                    "title": title_for_apps(item.title.as_deref().unwrap_or_default()),
                    "author": title_for_apps(item.author.as_deref().unwrap_or_default()),
                    "html": html_for_apps(
                        state,
                        item.content.clone().or_else(|| item.summary.clone()).unwrap_or_default(),
                    ),
                    "url": item.url.clone().unwrap_or_default(),
                    "is_saved": i64::from(item.is_starred),
                    "is_read": i64::from(item.is_read),
                    "created_on_time": item.published_at,
                })
            })
            .collect();
        let all = SyncQuery {
            ids_are: SyncIds::Arrival,
            ..SyncQuery::default()
        };
        let total = store.count_sync_items(user_id, &all).await?;
        answer.insert("total_items".into(), json!(total));
        answer.insert("items".into(), json!(list));
    }

    if params.contains_key("links") {
        // Hot links ("sparks" ranking) are not a tidings feature: none, as Fever with none.
        answer.insert("links".into(), json!([]));
    }
    if params.contains_key("unread_item_ids") {
        answer.insert(
            "unread_item_ids".into(),
            json!(unread_ids(state, user_id).await?),
        );
    }
    if params.contains_key("saved_item_ids") {
        answer.insert(
            "saved_item_ids".into(),
            json!(saved_ids(state, user_id).await?),
        );
    }
    Ok(())
}

/// `unread_recently_read=1`, "mark recently read items as unread" (the spec's Write section):
/// the latest marking is undone, as The Arsse reads it; the unread ids follow, as after a mark.
async fn unread_recently_read(
    state: &AppState,
    user_id: i64,
    answer: &mut Map<String, Value>,
) -> Result<(), tidings_store::StoreError> {
    state
        .store
        .unread_latest_reads(user_id, RECENT_READS_SPAN)
        .await?;
    answer.insert(
        "unread_item_ids".into(),
        json!(unread_ids(state, user_id).await?),
    );
    Ok(())
}

/// `mark=item`: one item, named by its sync id, read, unread, saved or unsaved; the answer
/// carries the list the mark changed.
async fn mark_item(
    state: &AppState,
    user_id: i64,
    sync_id: i64,
    action: &str,
    answer: &mut Map<String, Value>,
) -> Result<(), tidings_store::StoreError> {
    let store = &state.store;
    let item = store
        .items_of_sync_ids(user_id, &[sync_id])
        .await?
        .first()
        .map(|(_, item)| *item);
    if let Some(id) = item {
        match action {
            "read" => {
                store
                    .mark_read(user_id, &MarkReadScope::Ids(vec![id]), None)
                    .await?;
            }
            "unread" => {
                _ = store
                    .set_items_state(user_id, &[id], Some(false), None)
                    .await?
            }
            "saved" => {
                _ = store
                    .set_items_state(user_id, &[id], None, Some(true))
                    .await?
            }
            "unsaved" => {
                _ = store
                    .set_items_state(user_id, &[id], None, Some(false))
                    .await?
            }
            _ => {
                answer.insert(
                    "error".into(),
                    json!(format!("cannot mark item as {action:?}")),
                );
            }
        }
    }
    // Clients update their lists from these after a mark.
    if action == "saved" || action == "unsaved" {
        answer.insert(
            "saved_item_ids".into(),
            json!(saved_ids(state, user_id).await?),
        );
    } else {
        answer.insert(
            "unread_item_ids".into(),
            json!(unread_ids(state, user_id).await?),
        );
    }
    Ok(())
}

/// `mark=feed|group&as=read&before=T`: the unread items of the feed or group (group 0: all)
/// that reached the user before T. Fever clients send as T the time of their last
/// fetch of items, so items that arrived after it, whatever their date, stay unread.
async fn mark_arrived_before(
    state: &AppState,
    user_id: i64,
    mark: &str,
    id: i64,
    before: i64,
) -> Result<(), tidings_store::StoreError> {
    let mut query = SyncQuery {
        ids_are: SyncIds::Arrival,
        // Strictly before the second: an item that arrived within it may have missed the
        // client's request, and an item left unread is better than one never seen.
        arrived_before_us: Some(before.saturating_mul(1_000_000)),
        ..SyncQuery::default()
    };
    match mark {
        "feed" => query.feed_id = Some(id),
        "group" if id != 0 => query.group_id = Some(id),
        "group" => {}
        _ => return Ok(()),
    }
    state.store.mark_sync_items_read(user_id, &query).await?;
    Ok(())
}

/// Every unread item's id, however many: Fever apps take the list as the whole truth and mark
/// read whatever they hold that is not in it (Read You's `FeverRssService.sync`, step 4), so a
/// list cut at any length would read a heavy user's newer items for them.
async fn unread_ids(state: &AppState, user_id: i64) -> Result<String, tidings_store::StoreError> {
    let query = SyncQuery {
        read: Some(false),
        ids_are: SyncIds::Arrival,
        ..SyncQuery::default()
    };
    let ids = state.store.sync_id_list(user_id, &query).await?;
    Ok(ids_text(ids))
}

/// Every saved (starred) item's id, however many, for the same reason as [`unread_ids`].
async fn saved_ids(state: &AppState, user_id: i64) -> Result<String, tidings_store::StoreError> {
    let query = SyncQuery {
        starred: Some(true),
        ids_are: SyncIds::Arrival,
        ..SyncQuery::default()
    };
    let ids = state.store.sync_id_list(user_id, &query).await?;
    Ok(ids_text(ids))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_digest_is_md5_of_username_colon_key() {
        // md5("ann:secret"), as `printf ann:secret | md5sum` prints it.
        assert_eq!(
            key_digest("ann", "secret"),
            "5bdf88162a706752a8ca6fe5eab3a60f"
        );
    }

    #[test]
    fn parameters_come_from_the_query_and_form_or_multipart_bodies() {
        let mut headers = HeaderMap::new();
        let form = parameters(
            Some("api&items&since_id=3"),
            &headers,
            b"api_key=abc&mark=item",
        );
        assert_eq!(form["api_key"], "abc");
        assert_eq!(form["since_id"], "3");
        assert!(form.contains_key("api") && form.contains_key("items"));
        headers.insert(
            axum::http::header::CONTENT_TYPE,
            "multipart/form-data; boundary=XyZ".parse().unwrap(),
        );
        let body =
            b"--XyZ\r\nContent-Disposition: form-data; name=\"api_key\"\r\n\r\nk1\r\n--XyZ--\r\n";
        assert_eq!(parameters(Some("api"), &headers, body)["api_key"], "k1");
    }
}
