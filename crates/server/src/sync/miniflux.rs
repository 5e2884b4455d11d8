//! The Miniflux API v1 subset (`/v1/…`) that clients built on it use: newsboat's `miniflux`
//! backend and the official Python client, among others.
//!
//! Credentials: `X-Auth-Token: tdg_…` (an API key), or HTTP Basic with the username and an
//! API key as the password. Ids: a Miniflux feed is a tidings feed (its `id` is the feed's id,
//! the same in entries), a category is a group, an entry is an item, and Miniflux's
//! "starred" (its bookmark toggle) is tidings' star. Errors are `{"error_message": "…"}`
//! with the status Miniflux uses.

use std::collections::{BTreeMap, HashMap};

use axum::Router;
use axum::body::Bytes;
use axum::extract::{FromRequestParts, Path, RawQuery, State};
use axum::http::request::Parts;
use axum::http::{HeaderValue, StatusCode, header};
use axum::response::{IntoResponse, Response};
use axum::routing::{any, get, post, put};
use serde::Deserialize;
use serde_json::{Value, json};
use sha2::{Digest, Sha256};
use tidings_store::{
    Group, MarkReadScope, StoreError, Subscription, SyncItem, SyncOrder, SyncQuery, unix_now,
};

use crate::base::auth::Auth;
use crate::base::client::ClientContext;
use crate::base::state::AppState;
use crate::sync::shared::{
    Refusal, admit, enclosure_url_for_apps, html_for_apps, icon_data, rfc3339, user_of_key,
    user_of_login,
};

/// Entries per page when the client does not say (as Miniflux).
const DEFAULT_LIMIT: i64 = 100;
/// A feed is fetched on request at most once a minute, as through the REST API.
const REFRESH_EVERY_SECONDS: i64 = 60;

/// The Miniflux routes.
pub fn router() -> Router<AppState> {
    Router::new()
        .route("/v1/me", get(me))
        .route("/v1/feeds", get(feeds))
        .route("/v1/feeds/counters", get(counters))
        .route("/v1/feeds/refresh", put(refresh_all))
        .route("/v1/feeds/{id}", get(feed))
        .route("/v1/feeds/{id}/icon", get(feed_icon))
        .route("/v1/feeds/{id}/refresh", put(refresh_feed))
        .route("/v1/feeds/{id}/mark-all-as-read", put(mark_feed_read))
        .route("/v1/feeds/{id}/entries", get(feed_entries))
        .route("/v1/feeds/{id}/entries/{entry}", get(feed_entry))
        .route("/v1/categories", get(categories))
        .route("/v1/categories/{id}/feeds", get(category_feeds))
        .route("/v1/categories/{id}/entries", get(category_entries))
        .route(
            "/v1/categories/{id}/mark-all-as-read",
            put(mark_category_read),
        )
        .route("/v1/users/{id}/mark-all-as-read", put(mark_user_read))
        .route("/v1/entries", get(entries).put(update_entries))
        .route("/v1/entries/{id}", get(entry))
        .route("/v1/entries/{id}/bookmark", put(toggle_bookmark))
        .route("/v1/icons/{id}", get(icon))
        .route("/v1/export", get(export))
        .route("/v1/import", post(import))
        // Unknown paths under /v1 answer as Miniflux does.
        .route("/v1/{*rest}", any(not_found))
        .layer(axum::extract::DefaultBodyLimit::max(
            crate::base::limits::MAX_OPML_BYTES,
        ))
}

/// An error as Miniflux answers it.
#[derive(Debug)]
pub struct MinifluxError {
    status: StatusCode,
    message: String,
    retry_after: Option<u64>,
}

impl MinifluxError {
    fn new(status: StatusCode, message: impl Into<String>) -> MinifluxError {
        MinifluxError {
            status,
            message: message.into(),
            retry_after: None,
        }
    }

    fn bad_request(message: impl Into<String>) -> MinifluxError {
        MinifluxError::new(StatusCode::BAD_REQUEST, message)
    }

    fn not_found() -> MinifluxError {
        MinifluxError::new(StatusCode::NOT_FOUND, "Resource not found")
    }
}

impl IntoResponse for MinifluxError {
    fn into_response(self) -> Response {
        let mut response = (
            self.status,
            axum::Json(json!({"error_message": self.message})),
        )
            .into_response();
        if let Some(seconds) = self.retry_after
            && let Ok(value) = HeaderValue::from_str(&seconds.to_string())
        {
            response.headers_mut().insert(header::RETRY_AFTER, value);
        }
        response
    }
}

impl From<StoreError> for MinifluxError {
    fn from(error: StoreError) -> MinifluxError {
        match error {
            StoreError::NotFound(_) => MinifluxError::not_found(),
            StoreError::Invalid(message) | StoreError::Conflict(message) => {
                MinifluxError::bad_request(message)
            }
            unavailable if unavailable.is_unavailable() => {
                tracing::warn!(
                    error = %crate::base::error::error_chain(&unavailable),
                    "Miniflux API: the database is unavailable"
                );
                let mut answer = MinifluxError::new(
                    StatusCode::SERVICE_UNAVAILABLE,
                    "The database is unreachable; try again in a few seconds.",
                );
                answer.retry_after = Some(crate::base::error::DATABASE_RETRY_SECONDS);
                answer
            }
            other => {
                tracing::error!(error = %other, "Miniflux API: store error");
                MinifluxError::new(
                    StatusCode::INTERNAL_SERVER_ERROR,
                    "The server failed; try again later.",
                )
            }
        }
    }
}

type Result<T> = std::result::Result<T, MinifluxError>;

async fn not_found() -> MinifluxError {
    MinifluxError::new(StatusCode::NOT_FOUND, "Route not found")
}

/// The caller, signed in with `X-Auth-Token` or HTTP Basic (username and API key).
pub struct Caller(Auth);

impl FromRequestParts<AppState> for Caller {
    type Rejection = MinifluxError;

    async fn from_request_parts(parts: &mut Parts, state: &AppState) -> Result<Caller> {
        let header_text = |name| parts.headers.get(name).and_then(|v| v.to_str().ok());
        let found = if let Some(token) =
            header_text(header::HeaderName::from_static("x-auth-token"))
        {
            user_of_key(state, token).await
        } else if let Some((username, key)) = header_text(header::AUTHORIZATION).and_then(basic) {
            user_of_login(state, &username, &key).await
        } else {
            Ok(None)
        };
        let client = parts.extensions.get::<ClientContext>();
        admit(state, client, found, !parts.method.is_safe())
            .await
            .map(|auth| {
                crate::base::client::note_user(&parts.extensions, auth.user.id);
                Caller(auth)
            })
            .map_err(|refusal| match refusal {
                Refusal::BadCredentials => {
                    MinifluxError::new(StatusCode::UNAUTHORIZED, "Access Unauthorized")
                }
                Refusal::RateLimited(seconds) => MinifluxError {
                    retry_after: Some(seconds),
                    ..MinifluxError::new(
                        StatusCode::TOO_MANY_REQUESTS,
                        format!("Too many requests: try again in {seconds} s."),
                    )
                },
                Refusal::ReadOnly => MinifluxError::new(
                    StatusCode::FORBIDDEN,
                    "This API key is read-only; create a read-write key for this app.",
                ),
                Refusal::Unavailable => MinifluxError::new(
                    StatusCode::INTERNAL_SERVER_ERROR,
                    "The server failed; try again later.",
                ),
            })
    }
}

/// The username and password of an `Authorization: Basic …` header.
fn basic(value: &str) -> Option<(String, String)> {
    use base64::Engine;
    let encoded = value
        .strip_prefix("Basic ")
        .or(value.strip_prefix("basic "))?;
    let decoded = base64::engine::general_purpose::STANDARD
        .decode(encoded.trim())
        .ok()?;
    let text = String::from_utf8(decoded).ok()?;
    let (user, password) = text.split_once(':')?;
    Some((user.to_string(), password.to_string()))
}

/// A path id; anything but a number is an unknown resource.
fn id(text: &str) -> Result<i64> {
    text.parse().map_err(|_| MinifluxError::not_found())
}

/// The user's subscriptions and groups, to describe feeds and entries.
struct Catalog {
    user_id: i64,
    groups: HashMap<i64, Group>,
    subscriptions: Vec<Subscription>,
}

impl Catalog {
    async fn load(state: &AppState, user_id: i64) -> Result<Catalog> {
        let groups = state
            .store
            .list_groups(user_id)
            .await?
            .into_iter()
            .map(|g| (g.id, g))
            .collect();
        let subscriptions = state.store.list_subscriptions(user_id).await?;
        Ok(Catalog {
            user_id,
            groups,
            subscriptions,
        })
    }

    fn subscription(&self, feed_id: i64) -> Result<&Subscription> {
        self.subscriptions
            .iter()
            .find(|s| s.feed_id == feed_id)
            .ok_or_else(MinifluxError::not_found)
    }

    fn category(&self, group_id: i64) -> Value {
        let title = self.groups.get(&group_id).map_or("", |g| g.name.as_str());
        json!({"id": group_id, "title": title, "user_id": self.user_id, "hide_globally": false})
    }

    fn feed(&self, s: &Subscription) -> Value {
        let title = s
            .custom_title
            .clone()
            .or_else(|| s.feed_title.clone())
            .unwrap_or_else(|| s.feed_url.clone());
        let icon = if s.has_favicon {
            json!({"feed_id": s.feed_id, "icon_id": s.feed_id})
        } else {
            Value::Null
        };
        json!({
            "id": s.feed_id,
            "user_id": self.user_id,
            "feed_url": s.feed_url,
            "site_url": s.site_url.clone().unwrap_or_default(),
            "title": title,
            "checked_at": rfc3339(s.last_success_at.unwrap_or(s.created_at)),
            "next_check_at": rfc3339(s.next_check_at),
            "etag_header": "",
            "last_modified_header": "",
            "parsing_error_message": s.last_error.clone().unwrap_or_default(),
            "parsing_error_count": i64::from(s.last_error.is_some()),
            "scraper_rules": "",
            "rewrite_rules": "",
            // Miniflux's crawler fetches every entry's page: full text always.
            "crawler": s.full_text == tidings_store::FullTextMode::Always,
            "blocklist_rules": "",
            "keeplist_rules": "",
            "urlrewrite_rules": "",
            "user_agent": "",
            "cookie": "",
            "username": "",
            "password": "",
            "disabled": s.status == tidings_store::FetchStatus::Stopped,
            "no_media_player": false,
            "ignore_http_cache": false,
            "allow_self_signed_certificates": false,
            "fetch_via_proxy": false,
            "hide_globally": false,
            "apprise_service_urls": "",
            "category": self.category(s.group_id),
            "icon": icon,
        })
    }

    /// An entry as the API shows it; its images and image enclosures through the media proxy
    /// when it is on.
    fn entry(&self, state: &AppState, entry: &SyncItem) -> Value {
        let item = &entry.item;
        let feed = self
            .subscriptions
            .iter()
            .find(|s| s.feed_id == item.feed_id)
            .map_or(Value::Null, |s| self.feed(s));
        let content = item.content.clone().or_else(|| item.summary.clone());
        let content = html_for_apps(state, content.unwrap_or_default());
        let identity = item
            .guid
            .clone()
            .or_else(|| item.url.clone())
            .unwrap_or_else(|| item.id.to_string());
        let hash = hex::encode(Sha256::digest(
            format!("{}:{identity}", item.feed_id).as_bytes(),
        ));
        let enclosures: Vec<Value> = item
            .enclosures
            .iter()
            .enumerate()
            .map(|(n, e)| {
                json!({
                    "id": item.id * 100 + n as i64,
                    "user_id": self.user_id,
                    "entry_id": item.id,
                    "url": enclosure_url_for_apps(state, e),
                    "mime_type": e.mime_type.clone().unwrap_or_default(),
                    "size": e.length.unwrap_or(0),
                    "media_progression": 0,
                })
            })
            .collect();
        json!({
            "id": item.id,
            "user_id": self.user_id,
            "feed_id": item.feed_id,
            "status": if item.is_read { "read" } else { "unread" },
            "hash": hash,
            "title": item.title.clone().unwrap_or_default(),
            "url": item.url.clone().unwrap_or_default(),
            "comments_url": "",
            "published_at": rfc3339(item.published_at),
            "created_at": rfc3339(item.fetched_at),
            "changed_at": rfc3339(entry.changed_at),
            "content": content,
            "author": item.author.clone().unwrap_or_default(),
            "share_code": "",
            "starred": item.is_starred,
            "reading_time": reading_minutes(&content),
            "enclosures": enclosures,
            "tags": item.categories,
            "feed": feed,
        })
    }
}

/// Minutes to read a text at 265 words a minute, as Miniflux estimates it (markup aside).
fn reading_minutes(html: &str) -> i64 {
    let mut words = 0_i64;
    let mut in_tag = false;
    let mut in_word = false;
    for c in html.chars() {
        match c {
            '<' => {
                in_tag = true;
                in_word = false;
            }
            '>' => in_tag = false,
            _ if in_tag => {}
            c if c.is_whitespace() => in_word = false,
            _ => {
                if !in_word {
                    words += 1;
                }
                in_word = true;
            }
        }
    }
    (words + 264) / 265
}

/// `GET /v1/me`.
async fn me(State(state): State<AppState>, Caller(auth): Caller) -> Result<Response> {
    let preferences = state.store.preferences(auth.user.id).await?;
    let theme = match preferences.theme.as_str() {
        "dark" => "dark_serif",
        "light" => "light_serif",
        _ => "system_serif",
    };
    Ok(axum::Json(json!({
        "id": auth.user.id,
        "username": auth.user.username,
        "is_admin": auth.user.is_admin,
        "theme": theme,
        "language": "en_US",
        "timezone": "UTC",
        "entry_sorting_direction": "desc",
        "entry_sorting_order": "published_at",
        "entries_per_page": preferences.page_size,
        "keyboard_shortcuts": true,
        "show_reading_time": true,
        "entry_swipe": true,
        "stylesheet": "",
        "google_id": "",
        "openid_connect_id": "",
        "display_mode": "standalone",
        "default_reading_speed": 265,
        "cjk_reading_speed": 500,
        "default_home_page": "unread",
        "categories_sorting_order": "unread_count",
        "mark_read_on_view": preferences.mark_read_on_open,
        "last_login_at": auth.user.last_login_at.map(rfc3339),
    }))
    .into_response())
}

/// `GET /v1/feeds`.
async fn feeds(State(state): State<AppState>, Caller(auth): Caller) -> Result<Response> {
    let catalog = Catalog::load(&state, auth.user.id).await?;
    let list: Vec<Value> = catalog
        .subscriptions
        .iter()
        .map(|s| catalog.feed(s))
        .collect();
    Ok(axum::Json(list).into_response())
}

/// `GET /v1/feeds/{id}`.
async fn feed(
    State(state): State<AppState>,
    Caller(auth): Caller,
    Path(feed_id): Path<String>,
) -> Result<Response> {
    let catalog = Catalog::load(&state, auth.user.id).await?;
    let subscription = catalog.subscription(id(&feed_id)?)?;
    Ok(axum::Json(catalog.feed(subscription)).into_response())
}

/// `GET /v1/feeds/counters`: read and unread entries per feed.
async fn counters(State(state): State<AppState>, Caller(auth): Caller) -> Result<Response> {
    let counts = state.store.unread_counts(auth.user.id).await?;
    let totals = state.store.count_items_per_feed(auth.user.id).await?;
    let mut reads = BTreeMap::new();
    let mut unreads = BTreeMap::new();
    for count in &counts.subscriptions {
        let total = totals
            .iter()
            .find(|(feed_id, _)| *feed_id == count.feed_id)
            .map_or(0, |(_, total)| *total);
        if count.unread > 0 {
            unreads.insert(count.feed_id.to_string(), count.unread);
        }
        if total > count.unread {
            reads.insert(count.feed_id.to_string(), total - count.unread);
        }
    }
    Ok(axum::Json(json!({"reads": reads, "unreads": unreads})).into_response())
}

/// `GET /v1/feeds/{id}/icon` and `GET /v1/icons/{id}` (icon ids are feed ids).
async fn feed_icon(
    State(state): State<AppState>,
    Caller(auth): Caller,
    Path(feed_id): Path<String>,
) -> Result<Response> {
    let catalog = Catalog::load(&state, auth.user.id).await?;
    let feed_id = catalog.subscription(id(&feed_id)?)?.feed_id;
    let (mime, data) = icon_data(&state, feed_id)
        .await
        .ok_or_else(MinifluxError::not_found)?;
    Ok(axum::Json(json!({"id": feed_id, "data": data, "mime_type": mime})).into_response())
}

async fn icon(state: State<AppState>, caller: Caller, path: Path<String>) -> Result<Response> {
    feed_icon(state, caller, path).await
}

/// Fetches one of the user's feeds now, unless it was fetched in the last minute (then it is
/// fresh already, and the answer is the same).
async fn refresh_one(state: &AppState, feed_id: i64) -> Result<()> {
    let now = unix_now();
    if state
        .store
        .request_refresh(feed_id, now, REFRESH_EVERY_SECONDS)
        .await?
        .is_ok()
    {
        match state.fetcher.refresh_feed(feed_id).await {
            Ok(_) | Err(tidings_worker::RefreshError::Busy(_)) => {}
            Err(tidings_worker::RefreshError::NotFound(_)) => {
                return Err(MinifluxError::not_found());
            }
            Err(tidings_worker::RefreshError::Store(error)) => return Err(error.into()),
        }
    }
    Ok(())
}

/// `PUT /v1/feeds/{id}/refresh`: fetches the feed now.
async fn refresh_feed(
    State(state): State<AppState>,
    Caller(auth): Caller,
    Path(feed_id): Path<String>,
) -> Result<StatusCode> {
    let catalog = Catalog::load(&state, auth.user.id).await?;
    let feed_id = catalog.subscription(id(&feed_id)?)?.feed_id;
    refresh_one(&state, feed_id).await?;
    Ok(StatusCode::NO_CONTENT)
}

/// `PUT /v1/feeds/refresh`: fetches every feed of the user, in the background (as Miniflux,
/// which answers at once).
async fn refresh_all(State(state): State<AppState>, Caller(auth): Caller) -> Result<StatusCode> {
    let catalog = Catalog::load(&state, auth.user.id).await?;
    let feed_ids: Vec<i64> = catalog.subscriptions.iter().map(|s| s.feed_id).collect();
    tokio::spawn(async move {
        for feed_id in feed_ids {
            if let Err(error) = refresh_one(&state, feed_id).await {
                tracing::warn!(feed_id, error = %error.message, "Miniflux API: refresh failed");
            }
        }
    });
    Ok(StatusCode::NO_CONTENT)
}

/// `PUT /v1/feeds/{id}/mark-all-as-read`.
async fn mark_feed_read(
    State(state): State<AppState>,
    Caller(auth): Caller,
    Path(feed_id): Path<String>,
) -> Result<StatusCode> {
    state
        .store
        .mark_read(auth.user.id, &MarkReadScope::Feed(id(&feed_id)?), None)
        .await?;
    Ok(StatusCode::NO_CONTENT)
}

/// `PUT /v1/categories/{id}/mark-all-as-read`.
async fn mark_category_read(
    State(state): State<AppState>,
    Caller(auth): Caller,
    Path(group_id): Path<String>,
) -> Result<StatusCode> {
    state
        .store
        .mark_read(auth.user.id, &MarkReadScope::Group(id(&group_id)?), None)
        .await?;
    Ok(StatusCode::NO_CONTENT)
}

/// `PUT /v1/users/{id}/mark-all-as-read`: only for the caller's own id.
async fn mark_user_read(
    State(state): State<AppState>,
    Caller(auth): Caller,
    Path(user_id): Path<String>,
) -> Result<StatusCode> {
    if id(&user_id)? != auth.user.id {
        return Err(MinifluxError::new(
            StatusCode::FORBIDDEN,
            "You can only mark your own entries read.",
        ));
    }
    state
        .store
        .mark_read(auth.user.id, &MarkReadScope::All, None)
        .await?;
    Ok(StatusCode::NO_CONTENT)
}

/// `GET /v1/categories` (`counts=true` adds `feed_count` and `total_unread`).
async fn categories(
    State(state): State<AppState>,
    Caller(auth): Caller,
    RawQuery(query): RawQuery,
) -> Result<Response> {
    let with_counts = pairs(query.as_deref())
        .iter()
        .any(|(k, v)| k == "counts" && truthy(v));
    let catalog = Catalog::load(&state, auth.user.id).await?;
    let mut groups: Vec<&Group> = catalog.groups.values().collect();
    groups.sort_by(|a, b| a.position.cmp(&b.position).then(a.name.cmp(&b.name)));
    let list: Vec<Value> = groups
        .into_iter()
        .map(|g| {
            let mut category = catalog.category(g.id);
            if with_counts {
                let in_group = catalog.subscriptions.iter().filter(|s| s.group_id == g.id);
                category["feed_count"] = json!(in_group.clone().count());
                category["total_unread"] = json!(in_group.map(|s| s.unread_count).sum::<i64>());
            }
            category
        })
        .collect();
    Ok(axum::Json(list).into_response())
}

/// `GET /v1/categories/{id}/feeds`.
async fn category_feeds(
    State(state): State<AppState>,
    Caller(auth): Caller,
    Path(group_id): Path<String>,
) -> Result<Response> {
    let group_id = id(&group_id)?;
    let catalog = Catalog::load(&state, auth.user.id).await?;
    if !catalog.groups.contains_key(&group_id) {
        return Err(MinifluxError::not_found());
    }
    let list: Vec<Value> = catalog
        .subscriptions
        .iter()
        .filter(|s| s.group_id == group_id)
        .map(|s| catalog.feed(s))
        .collect();
    Ok(axum::Json(list).into_response())
}

/// The query string's pairs, repeated keys kept.
fn pairs(query: Option<&str>) -> Vec<(String, String)> {
    crate::sync::shared::form_pairs(query.unwrap_or("").as_bytes())
}

/// Go's `strconv.ParseBool` truths, and Python's `True` as clients send it.
fn truthy(value: &str) -> bool {
    matches!(
        value.trim().to_ascii_lowercase().as_str(),
        "true" | "1" | "t" | "yes" | "on"
    )
}

fn number(name: &str, value: &str) -> Result<i64> {
    value.trim().parse().map_err(|_| {
        MinifluxError::bad_request(format!(
            "Invalid value for {name}: {value:?} is not a whole number."
        ))
    })
}

/// The entry filters of a query string (Miniflux's names), over `base`.
fn entry_query(query: Option<&str>, mut base: SyncQuery) -> Result<SyncQuery> {
    let mut statuses: Vec<String> = Vec::new();
    let mut order = "published_at".to_string();
    let mut descending = false;
    base.limit = DEFAULT_LIMIT;
    for (key, value) in pairs(query) {
        match key.as_str() {
            "status" => match value.as_str() {
                "read" | "unread" | "removed" => statuses.push(value),
                _ => {
                    return Err(MinifluxError::bad_request(format!(
                        "Invalid entry status {value:?}: use read, unread or removed."
                    )));
                }
            },
            "starred" => base.starred = Some(truthy(&value)),
            "limit" => base.limit = number("limit", &value)?.max(0),
            "offset" => base.offset = number("offset", &value)?.max(0),
            "order" => order = value,
            "direction" => {
                descending = match value.as_str() {
                    "asc" => false,
                    "desc" => true,
                    _ => {
                        return Err(MinifluxError::bad_request(format!(
                            "Invalid sorting direction {value:?}: use asc or desc."
                        )));
                    }
                }
            }
            "after" | "published_after" => base.published_from = Some(number(&key, &value)? + 1),
            "before" | "published_before" => base.published_before = Some(number(&key, &value)?),
            "after_entry_id" => base.id_above = Some(number(&key, &value)?),
            "before_entry_id" => base.id_below = Some(number(&key, &value)?),
            "category_id" => base.group_id = Some(number(&key, &value)?),
            "feed_id" => base.feed_id = Some(number(&key, &value)?),
            "search" if !value.trim().is_empty() => {
                return Err(MinifluxError::bad_request(
                    "Searching is not supported by this server's Miniflux API.",
                ));
            }
            _ => {}
        }
    }
    let wants = |s: &str| statuses.iter().any(|x| x == s);
    base.read = match (wants("read"), wants("unread")) {
        (true, false) => Some(true),
        (false, true) => Some(false),
        // Only "removed": tidings keeps no removed entries.
        (false, false) if wants("removed") => {
            base.ids = Some(Vec::new());
            None
        }
        _ => None,
    };
    base.order = match (order.as_str(), descending) {
        ("published_at", false) => SyncOrder::OldestFirst,
        ("published_at", true) => SyncOrder::NewestFirst,
        ("id" | "created_at", false) => SyncOrder::IdAscending,
        ("id" | "created_at", true) => SyncOrder::IdDescending,
        (other, _) => {
            return Err(MinifluxError::bad_request(format!(
                "Invalid sorting order {other:?}: this server sorts by id, created_at or \
                 published_at."
            )));
        }
    };
    Ok(base)
}

/// Answers a listing of entries: `{"total", "entries"}`.
async fn list_entries(state: &AppState, auth: &Auth, query: SyncQuery) -> Result<Response> {
    let catalog = Catalog::load(state, auth.user.id).await?;
    if let Some(feed_id) = query.feed_id {
        catalog.subscription(feed_id)?;
    }
    if let Some(group_id) = query.group_id
        && !catalog.groups.contains_key(&group_id)
    {
        return Err(MinifluxError::not_found());
    }
    let total = state.store.count_sync_items(auth.user.id, &query).await?;
    let items = state.store.sync_items(auth.user.id, &query).await?;
    let entries: Vec<Value> = items.iter().map(|e| catalog.entry(state, e)).collect();
    Ok(axum::Json(json!({"total": total, "entries": entries})).into_response())
}

/// `GET /v1/entries`.
async fn entries(
    State(state): State<AppState>,
    Caller(auth): Caller,
    RawQuery(query): RawQuery,
) -> Result<Response> {
    let query = entry_query(query.as_deref(), SyncQuery::default())?;
    list_entries(&state, &auth, query).await
}

/// `GET /v1/feeds/{id}/entries`.
async fn feed_entries(
    State(state): State<AppState>,
    Caller(auth): Caller,
    Path(feed_id): Path<String>,
    RawQuery(query): RawQuery,
) -> Result<Response> {
    let base = SyncQuery {
        feed_id: Some(id(&feed_id)?),
        ..SyncQuery::default()
    };
    let query = entry_query(query.as_deref(), base)?;
    list_entries(&state, &auth, query).await
}

/// `GET /v1/categories/{id}/entries`.
async fn category_entries(
    State(state): State<AppState>,
    Caller(auth): Caller,
    Path(group_id): Path<String>,
    RawQuery(query): RawQuery,
) -> Result<Response> {
    let base = SyncQuery {
        group_id: Some(id(&group_id)?),
        ..SyncQuery::default()
    };
    let query = entry_query(query.as_deref(), base)?;
    list_entries(&state, &auth, query).await
}

/// One entry of the user, optionally required to be of a feed.
async fn one_entry(
    state: &AppState,
    auth: &Auth,
    entry_id: i64,
    feed_id: Option<i64>,
) -> Result<Response> {
    let query = SyncQuery {
        ids: Some(vec![entry_id]),
        feed_id,
        limit: 1,
        ..SyncQuery::default()
    };
    let catalog = Catalog::load(state, auth.user.id).await?;
    let item = state
        .store
        .sync_items(auth.user.id, &query)
        .await?
        .into_iter()
        .next()
        .ok_or_else(MinifluxError::not_found)?;
    Ok(axum::Json(catalog.entry(state, &item)).into_response())
}

/// `GET /v1/entries/{id}`.
async fn entry(
    State(state): State<AppState>,
    Caller(auth): Caller,
    Path(entry_id): Path<String>,
) -> Result<Response> {
    one_entry(&state, &auth, id(&entry_id)?, None).await
}

/// `GET /v1/feeds/{id}/entries/{entry}`.
async fn feed_entry(
    State(state): State<AppState>,
    Caller(auth): Caller,
    Path((feed_id, entry_id)): Path<(String, String)>,
) -> Result<Response> {
    one_entry(&state, &auth, id(&entry_id)?, Some(id(&feed_id)?)).await
}

/// The body of `PUT /v1/entries`.
#[derive(Debug, Deserialize)]
struct EntryStatusUpdate {
    entry_ids: Vec<i64>,
    status: String,
}

/// `PUT /v1/entries`: `{"entry_ids": [...], "status": "read" | "unread" | "removed"}`.
async fn update_entries(
    State(state): State<AppState>,
    Caller(auth): Caller,
    body: Bytes,
) -> Result<StatusCode> {
    let update: EntryStatusUpdate = serde_json::from_slice(&body).map_err(|e| {
        MinifluxError::bad_request(format!(
            "The body must be {{\"entry_ids\": [ids], \"status\": \"read\"|\"unread\"}}: {e}"
        ))
    })?;
    if update.entry_ids.is_empty() {
        return Err(MinifluxError::bad_request(
            "The list of entry_ids is empty.",
        ));
    }
    let read = match update.status.as_str() {
        "read" | "removed" => true,
        "unread" => false,
        other => {
            return Err(MinifluxError::bad_request(format!(
                "Invalid entry status {other:?}: use read or unread."
            )));
        }
    };
    if read {
        state
            .store
            .mark_read(auth.user.id, &MarkReadScope::Ids(update.entry_ids), None)
            .await?;
    } else {
        state
            .store
            .set_items_state(auth.user.id, &update.entry_ids, Some(false), None)
            .await?;
    }
    Ok(StatusCode::NO_CONTENT)
}

/// `PUT /v1/entries/{id}/bookmark`: toggles the star.
async fn toggle_bookmark(
    State(state): State<AppState>,
    Caller(auth): Caller,
    Path(entry_id): Path<String>,
) -> Result<StatusCode> {
    let entry_id = id(&entry_id)?;
    let item = state.store.item(auth.user.id, entry_id).await?;
    state
        .store
        .set_item_state(auth.user.id, entry_id, None, Some(!item.is_starred))
        .await?;
    Ok(StatusCode::NO_CONTENT)
}

/// `GET /v1/export`: the subscriptions as OPML.
async fn export(State(state): State<AppState>, Caller(auth): Caller) -> Result<Response> {
    let document = crate::sync::shared::export_opml(&state, &auth.user).await?;
    Ok((
        [(header::CONTENT_TYPE, "text/xml; charset=utf-8")],
        document,
    )
        .into_response())
}

/// `POST /v1/import`: subscribes to an OPML file's feeds (new feeds are fetched by the
/// worker).
async fn import(
    State(state): State<AppState>,
    Caller(auth): Caller,
    body: Bytes,
) -> Result<Response> {
    let report =
        crate::sync::shared::import_opml(&state, auth.user.id, &body, "Miniflux API import")
            .await
            .map_err(|error| match error {
                crate::sync::shared::ImportRefusal::Opml(reason) => {
                    MinifluxError::bad_request(format!("The file is not usable OPML: {reason}"))
                }
                crate::sync::shared::ImportRefusal::Store(store) => store.into(),
            })?;
    Ok((
        StatusCode::CREATED,
        axum::Json(json!({
            "message": format!(
                "Feeds imported successfully: {} added, {} skipped, {} refused, {} failed.",
                report.added, report.skipped, report.refused, report.failed
            )
        })),
    )
        .into_response())
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn basic_credentials_are_decoded() {
        assert_eq!(
            basic("Basic YWxpY2U6dGRnX3NlY3JldA=="),
            Some(("alice".into(), "tdg_secret".into()))
        );
        assert_eq!(basic("Bearer x"), None);
        assert_eq!(basic("Basic !!!"), None);
    }

    #[test]
    fn entry_filters_follow_miniflux_names() {
        let q = entry_query(
            Some("status=unread&starred=true&limit=5&offset=10&order=id&direction=desc&after=100&before=200&category_id=7&feed_id=9&after_entry_id=3"),
            SyncQuery::default(),
        )
        .unwrap();
        assert_eq!(q.read, Some(false));
        assert_eq!(q.starred, Some(true));
        assert_eq!((q.limit, q.offset), (5, 10));
        assert_eq!(q.order, SyncOrder::IdDescending);
        assert_eq!(q.published_from, Some(101));
        assert_eq!(q.published_before, Some(200));
        assert_eq!(
            (q.group_id, q.feed_id, q.id_above),
            (Some(7), Some(9), Some(3))
        );
        // Both statuses: no filter; the default order is oldest first, 100 entries.
        let q = entry_query(Some("status=read&status=unread"), SyncQuery::default()).unwrap();
        assert_eq!(
            (q.read, q.order, q.limit),
            (None, SyncOrder::OldestFirst, 100)
        );
        assert_eq!(
            entry_query(Some("status=removed"), SyncQuery::default())
                .unwrap()
                .ids,
            Some(vec![])
        );
        for bad in [
            "status=gone",
            "limit=x",
            "order=title",
            "direction=up",
            "search=x",
        ] {
            assert!(
                entry_query(Some(bad), SyncQuery::default()).is_err(),
                "{bad}"
            );
        }
    }

    #[test]
    fn reading_time_counts_words_outside_markup() {
        assert_eq!(reading_minutes(""), 0);
        assert_eq!(reading_minutes("<p>one two</p>"), 1);
        let long = "word ".repeat(600);
        assert_eq!(reading_minutes(&long), 3);
    }
}
