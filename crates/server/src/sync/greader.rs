//! The Google Reader API (F70) as the apps that still speak it use it (Reeder, NetNewsWire,
//! ReadYou, FeedMe, Unread, Fluent Reader…), at the site root and under `/api/greader.php`
//! (the FreshRSS-style address users copy from guides).
//!
//! Sign-in: `/accounts/ClientLogin` with `Email` = the username and `Passwd` = an API key
//! answers `SID`/`LSID`/`Auth` lines; the `Auth` value goes back in every request as
//! `Authorization: GoogleLogin auth=…`. `/reader/api/0/token` hands out a `T` token for
//! writes; since the credentials travel in a header and never in a cookie, a write cannot be
//! forged by another site, so `T` is accepted whatever it is (or when absent): clients send
//! stale ones, empty ones or none.
//!
//! Names: a stream `feed/<feed id>` is a subscription (`feed/<url>` is accepted too), a label
//! `user/-/label/<name>` is a group for subscriptions and, on items, a label of the user's
//! own (the `item_labels` table); a label that names both lists the group's items. The states
//! `reading-list`, `read`, `starred` and `kept-unread` (unread) are the item states. Item ids
//! are written in the long form `tag:google.com,2005:reader/item/<16 hex digits>` and, in
//! `itemRefs`, in decimal; both are accepted everywhere. Errors are plain text with the
//! status, saying what was wrong.

use std::collections::{BTreeMap, HashMap};

use axum::Router;
use axum::body::Bytes;
use axum::extract::State;
use axum::http::{HeaderMap, HeaderValue, Method, StatusCode, Uri, header};
use axum::response::{IntoResponse, Response};
use axum::routing::any;
use serde_json::{Value, json};
use sha2::{Digest, Sha256};
use tidings_store::{
    Group, MAX_MARK_IDS, MAX_SYNC_IDS, MAX_SYNC_ITEM_IDS, MAX_SYNC_ITEMS, MarkReadScope,
    StoreError, Subscription, SubscriptionChanges, SyncIds, SyncItem, SyncOrder, SyncQuery,
    unix_now,
};

use crate::base::auth::Auth;
use crate::base::client::ClientContext;
use crate::base::state::AppState;
use crate::base::subscriptions::Subscribe;
use crate::sync::shared::{
    Refusal, admit, content_type, enclosure_url_for_apps, form_pairs, html_for_apps,
    title_for_apps, user_of_key, user_of_login,
};

/// The prefix of an item id in the long form.
const ITEM_ID_PREFIX: &str = "tag:google.com,2005:reader/item/";
/// Every item of every subscription.
const READING_LIST: &str = "user/-/state/com.google/reading-list";
/// Read items.
const READ: &str = "user/-/state/com.google/read";
/// Starred items.
const STARRED: &str = "user/-/state/com.google/starred";
/// The prefix of a label's stream id.
const LABEL_PREFIX: &str = "user/-/label/";
/// The prefix of a feed's stream id.
const FEED_PREFIX: &str = "feed/";
/// Items or ids per page when the client does not say (as Google Reader).
const DEFAULT_PAGE: i64 = 20;
/// The most item ids one `edit-tag` or `stream/items/contents` request may name.
const MAX_NAMED_ITEMS: usize = 10_000;
/// `max` in `unread-count`: the count clients show as "1000+".
const UNREAD_COUNT_MAX: i64 = 1000;

/// The Google Reader routes, at the root and under `/api/greader.php`.
pub fn router() -> Router<AppState> {
    let mut router = Router::new();
    for base in ["", "/api/greader.php"] {
        router = router
            .route(&format!("{base}/accounts/ClientLogin"), any(client_login))
            .route(
                &format!("{base}/reader/api/0/{{*endpoint}}"),
                any(reader_api),
            );
    }
    router.layer(axum::extract::DefaultBodyLimit::max(
        crate::base::limits::MAX_OPML_BYTES,
    ))
}

/// An error as plain text with its status.
#[derive(Debug)]
pub struct GReaderError {
    status: StatusCode,
    message: String,
    retry_after: Option<u64>,
}

impl GReaderError {
    fn new(status: StatusCode, message: impl Into<String>) -> GReaderError {
        GReaderError {
            status,
            message: message.into(),
            retry_after: None,
        }
    }

    fn bad_request(message: impl Into<String>) -> GReaderError {
        GReaderError::new(StatusCode::BAD_REQUEST, message)
    }

    fn not_found(message: impl Into<String>) -> GReaderError {
        GReaderError::new(StatusCode::NOT_FOUND, message)
    }

    fn refused(refusal: Refusal) -> GReaderError {
        match refusal {
            Refusal::BadCredentials => GReaderError::new(
                StatusCode::UNAUTHORIZED,
                "Unauthorized: sign in with /accounts/ClientLogin (Email = your username, \
                 Passwd = an API key) and send Authorization: GoogleLogin auth=…",
            ),
            Refusal::RateLimited(seconds) => GReaderError {
                retry_after: Some(seconds),
                ..GReaderError::new(
                    StatusCode::TOO_MANY_REQUESTS,
                    format!("Too many requests: try again in {seconds} s."),
                )
            },
            Refusal::ReadOnly => GReaderError::new(
                StatusCode::FORBIDDEN,
                "This API key is read-only; create a read-write key for this app.",
            ),
            Refusal::Unavailable => GReaderError::new(
                StatusCode::INTERNAL_SERVER_ERROR,
                "The server failed; try again later.",
            ),
        }
    }
}

impl IntoResponse for GReaderError {
    fn into_response(self) -> Response {
        let mut response = (
            self.status,
            [(header::CONTENT_TYPE, "text/plain; charset=utf-8")],
            format!("{}\n", self.message),
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

impl From<StoreError> for GReaderError {
    fn from(error: StoreError) -> GReaderError {
        match error {
            StoreError::NotFound(what) => GReaderError::not_found(format!("No such {what}.")),
            StoreError::Invalid(message) | StoreError::Conflict(message) => {
                GReaderError::bad_request(message)
            }
            other => {
                tracing::error!(error = %other, "Google Reader API: store error");
                GReaderError::new(
                    StatusCode::INTERNAL_SERVER_ERROR,
                    "The server failed; try again later.",
                )
            }
        }
    }
}

impl From<crate::base::error::ApiError> for GReaderError {
    fn from(error: crate::base::error::ApiError) -> GReaderError {
        GReaderError {
            status: error.status,
            message: format!("{} {}", error.detail.message, error.detail.action),
            retry_after: error.retry_after,
        }
    }
}

type Result<T> = std::result::Result<T, GReaderError>;

/// A request's parameters: the query string's, then a form body's, repeated names kept.
struct Params(Vec<(String, String)>);

impl Params {
    fn parse(query: Option<&str>, headers: &HeaderMap, body: &[u8]) -> Params {
        let mut pairs = form_pairs(query.unwrap_or("").as_bytes());
        let content_type = content_type(headers);
        if content_type.is_empty() || content_type.starts_with("application/x-www-form-urlencoded")
        {
            pairs.extend(form_pairs(body));
        }
        Params(pairs)
    }

    /// The last value of a parameter (a form's value wins over the query string's).
    fn get(&self, name: &str) -> Option<&str> {
        self.0
            .iter()
            .rev()
            .find(|(k, _)| k == name)
            .map(|(_, v)| v.as_str())
    }

    /// Every non-empty value of a repeatable parameter, in order.
    fn all(&self, name: &str) -> Vec<&str> {
        self.0
            .iter()
            .filter(|(k, v)| k == name && !v.trim().is_empty())
            .map(|(_, v)| v.as_str())
            .collect()
    }

    fn number(&self, name: &str) -> Result<Option<i64>> {
        match self.get(name).map(str::trim).filter(|v| !v.is_empty()) {
            None => Ok(None),
            Some(text) => text.parse().map(Some).map_err(|_| {
                GReaderError::bad_request(format!(
                    "Invalid {name}={text:?}: a whole number is expected."
                ))
            }),
        }
    }
}

/// The long form of an item id.
pub fn long_item_id(id: i64) -> String {
    format!("{ITEM_ID_PREFIX}{:016x}", id as u64)
}

/// An item id in any form clients send: the long form (hex) or decimal.
pub fn parse_item_id(text: &str) -> Option<i64> {
    let text = text.trim();
    if let Some(hex) = text.strip_prefix(ITEM_ID_PREFIX) {
        if hex.is_empty() || hex.len() > 16 {
            return None;
        }
        return u64::from_str_radix(hex, 16).ok().map(|v| v as i64);
    }
    text.parse::<i64>().ok()
}

/// A time clients send in seconds, milliseconds or microseconds, in microseconds.
fn to_micros(value: i64) -> i64 {
    if value.abs() >= 100_000_000_000_000 {
        value
    } else if value.abs() >= 100_000_000_000 {
        value.saturating_mul(1_000)
    } else {
        value.saturating_mul(1_000_000)
    }
}

/// Decodes `%XX` escapes of a URL path segment (a `+` stays a `+`).
fn percent_decode(text: &str) -> String {
    let bytes = text.as_bytes();
    let mut out = Vec::with_capacity(bytes.len());
    let mut i = 0;
    while i < bytes.len() {
        if bytes[i] == b'%'
            && i + 2 < bytes.len()
            && let Some(byte) = std::str::from_utf8(&bytes[i + 1..i + 3])
                .ok()
                .and_then(|h| u8::from_str_radix(h, 16).ok())
        {
            out.push(byte);
            i += 3;
        } else {
            out.push(bytes[i]);
            i += 1;
        }
    }
    String::from_utf8_lossy(&out).into_owned()
}

/// The credentials of an `Authorization: GoogleLogin auth=…` header.
fn google_login_token(headers: &HeaderMap) -> Option<String> {
    // Read as bytes: a client may send a token it was given with a non-ASCII name in it.
    let value = String::from_utf8_lossy(headers.get(header::AUTHORIZATION)?.as_bytes());
    let value = value.trim();
    let (scheme, rest) = value.split_once(char::is_whitespace)?;
    if !scheme.eq_ignore_ascii_case("GoogleLogin") {
        return None;
    }
    let rest = rest.trim();
    let token = rest
        .strip_prefix("auth=")
        .or_else(|| rest.strip_prefix("Auth="))?;
    Some(token.trim().trim_matches('"').to_string())
}

/// The user of an `Auth` token: the API key as ClientLogin hands it out, or `username/API key`
/// (the FreshRSS form some set-up guides show).
async fn user_of_token(
    state: &AppState,
    token: &str,
) -> std::result::Result<Option<tidings_store::Authenticated>, Refusal> {
    match token.rsplit_once('/') {
        Some((username, key)) => user_of_login(state, username, key).await,
        None => user_of_key(state, token).await,
    }
}

/// The `T` token of a caller: stable for one API key, not a secret (see the module's doc).
fn write_token(auth: &Auth) -> String {
    let key_id = auth.api_key.map_or(0, |(id, _)| id);
    let digest = hex::encode(Sha256::digest(
        format!("tidings greader T {}:{key_id}", auth.user.id).as_bytes(),
    ));
    digest[..57].to_string()
}

/// `/accounts/ClientLogin`: `Email` and `Passwd` (an API key) in a form or the query string.
async fn client_login(
    State(state): State<AppState>,
    uri: Uri,
    headers: HeaderMap,
    client: Option<axum::Extension<ClientContext>>,
    body: Bytes,
) -> Response {
    let params = Params::parse(uri.query(), &headers, &body);
    let email = params.get("Email").unwrap_or("").trim().to_string();
    let key = params.get("Passwd").unwrap_or("").trim().to_string();
    let found = if email.is_empty() || key.is_empty() {
        Ok(None)
    } else {
        user_of_login(&state, &email, &key).await
    };
    let client = client.map(|axum::Extension(c)| c);
    match admit(&state, client.as_ref(), found, false).await {
        Ok(_) => {}
        Err(Refusal::BadCredentials) => {
            return (
                StatusCode::UNAUTHORIZED,
                [(header::CONTENT_TYPE, "text/plain; charset=utf-8")],
                "Error=BadAuthentication\nInfo=Email is your username and Passwd an API key \
                 (not your account password)\n",
            )
                .into_response();
        }
        Err(refusal) => return GReaderError::refused(refusal).into_response(),
    }
    // The key alone names its user; a token with the name in it would not be a valid header
    // value for names outside ASCII.
    let token = key;
    if params.get("output") == Some("json") {
        return axum::Json(json!({"SID": token, "LSID": "null", "Auth": token})).into_response();
    }
    (
        [(header::CONTENT_TYPE, "text/plain; charset=utf-8")],
        format!("SID={token}\nLSID=null\nAuth={token}\n"),
    )
        .into_response()
}

/// Whether an endpoint changes anything (a read-only key is refused there).
fn is_write(endpoint: &str) -> bool {
    matches!(
        endpoint,
        "subscription/edit"
            | "subscription/quickadd"
            | "subscription/import"
            | "rename-tag"
            | "disable-tag"
            | "edit-tag"
            | "mark-all-as-read"
    )
}

/// Every `/reader/api/0/…` request: authenticate, then answer the endpoint.
async fn reader_api(
    State(state): State<AppState>,
    method: Method,
    uri: Uri,
    headers: HeaderMap,
    client: Option<axum::Extension<ClientContext>>,
    request_user: Option<axum::Extension<crate::base::client::RequestUser>>,
    body: Bytes,
) -> Response {
    let path = uri.path();
    let endpoint = path
        .split_once("/reader/api/0/")
        .map_or("", |(_, rest)| rest);
    // The stream in the path is kept whole: a feed URL may end with a slash.
    let (endpoint, stream_in_path) = match endpoint.strip_prefix("stream/contents") {
        Some(rest) => (
            "stream/contents",
            Some(percent_decode(rest.trim_start_matches('/'))).filter(|s| !s.is_empty()),
        ),
        None => (endpoint.trim_end_matches('/'), None),
    };
    let params = if endpoint == "subscription/import" {
        Params::parse(uri.query(), &HeaderMap::new(), b"")
    } else {
        Params::parse(uri.query(), &headers, &body)
    };
    let found = match google_login_token(&headers) {
        Some(token) => user_of_token(&state, &token).await,
        None => Ok(None),
    };
    let client = client.map(|axum::Extension(c)| c);
    let auth = match admit(&state, client.as_ref(), found, is_write(endpoint)).await {
        Ok(auth) => {
            if let Some(axum::Extension(slot)) = &request_user {
                slot.set(auth.user.id);
            }
            auth
        }
        Err(refusal) => return GReaderError::refused(refusal).into_response(),
    };
    let request = Request {
        state: &state,
        auth: &auth,
        params: &params,
        headers: &headers,
        body: &body,
    };
    let answer = match endpoint {
        "token" => Ok(text(format!("{}\n", write_token(&auth)))),
        "user-info" => user_info(&request).await,
        "preference/list" => Ok(axum::Json(json!({"prefs": []})).into_response()),
        "preference/stream/list" => Ok(axum::Json(json!({"streamprefs": {}})).into_response()),
        "subscription/list" => subscription_list(&request).await,
        "subscription/edit" => subscription_edit(&request).await,
        "subscription/quickadd" => quickadd(&request).await,
        "subscription/export" => export(&request).await,
        "subscription/import" => import(&request).await,
        "tag/list" => tag_list(&request).await,
        "rename-tag" => rename_tag(&request).await,
        "disable-tag" => disable_tag(&request).await,
        "edit-tag" => edit_tag(&request).await,
        "mark-all-as-read" => mark_all_as_read(&request).await,
        "unread-count" => unread_count(&request).await,
        "stream/items/ids" => stream_item_ids(&request).await,
        "stream/items/contents" => stream_items_contents(&request).await,
        "stream/contents" => stream_contents(&request, stream_in_path).await,
        other => Err(GReaderError::not_found(format!(
            "Unknown endpoint {method} /reader/api/0/{other}: see the README's Google Reader \
             API section for the supported ones."
        ))),
    };
    answer.unwrap_or_else(IntoResponse::into_response)
}

/// What every endpoint gets.
struct Request<'a> {
    state: &'a AppState,
    auth: &'a Auth,
    params: &'a Params,
    headers: &'a HeaderMap,
    body: &'a [u8],
}

impl Request<'_> {
    fn user_id(&self) -> i64 {
        self.auth.user.id
    }
}

fn text(body: impl Into<String>) -> Response {
    (
        [(header::CONTENT_TYPE, "text/plain; charset=utf-8")],
        body.into(),
    )
        .into_response()
}

fn ok() -> Response {
    text("OK")
}

/// A JSON answer with an `ETag` (a digest of the body), or `304 Not Modified` when the request's
/// `If-None-Match` names it: NetNewsWire sends the ETag of its last `subscription/list` and
/// `tag/list` back and skips that part of its sync on a 304 (ReaderAPICaller.swift,
/// HTTPConditionalGetInfo.swift). The ETag is weak since compression may change the bytes.
fn conditional_json(headers: &HeaderMap, value: &Value) -> Response {
    let body = value.to_string();
    let etag = format!(
        "W/\"{}\"",
        &hex::encode(Sha256::digest(body.as_bytes()))[..32]
    );
    let matches = headers
        .get_all(header::IF_NONE_MATCH)
        .iter()
        .filter_map(|v| v.to_str().ok())
        .flat_map(|v| v.split(','))
        .map(|tag| tag.trim().trim_start_matches("W/"))
        .any(|tag| tag == "*" || tag == etag.trim_start_matches("W/"));
    let mut response = if matches {
        StatusCode::NOT_MODIFIED.into_response()
    } else {
        ([(header::CONTENT_TYPE, "application/json")], body).into_response()
    };
    let headers = response.headers_mut();
    if let Ok(value) = HeaderValue::from_str(&etag) {
        headers.insert(header::ETAG, value);
    }
    // Each user's own: a shared cache must not keep it, and the client asks again each time.
    headers.insert(
        header::CACHE_CONTROL,
        HeaderValue::from_static("private, no-cache"),
    );
    response
}

/// A feed's stream id: `feed/<feed id>`, as FreshRSS and Miniflux write it. A URL in it broke
/// apps that put ids into forms unencoded (NetNewsWire: `&`, `+`, `%`) or cut them with
/// `replace("feed/", "")` (Read You: every WordPress `…/feed/`).
fn feed_stream_id(feed_id: i64) -> String {
    format!("{FEED_PREFIX}{feed_id}")
}

/// A label's stream id.
fn label_stream_id(name: &str) -> String {
    format!("{LABEL_PREFIX}{name}")
}

/// Microseconds (or milliseconds) of Unix seconds, as the decimal strings clients expect.
fn usec(secs: i64) -> String {
    (secs.saturating_mul(1_000_000)).to_string()
}

/// The user's subscriptions and groups, to name streams.
struct Catalog {
    groups: Vec<Group>,
    subscriptions: Vec<Subscription>,
}

/// A stream a request names.
#[derive(Debug, Clone, PartialEq, Eq)]
enum Stream {
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
    async fn load(state: &AppState, user_id: i64) -> Result<Catalog> {
        Ok(Catalog {
            groups: state.store.list_groups(user_id).await?,
            subscriptions: state.store.list_subscriptions(user_id).await?,
        })
    }

    /// Only what naming `streams` takes: the groups always (they are few, and items' label
    /// categories name them), the subscriptions only when a stream names a feed. The calls
    /// apps make most (the reading list's ids and contents) then read no subscription list,
    /// the largest part of their cost on accounts with hundreds of feeds.
    async fn load_for(state: &AppState, user_id: i64, streams: &[&str]) -> Result<Catalog> {
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

    fn group_name(&self, group_id: i64) -> &str {
        self.groups
            .iter()
            .find(|g| g.id == group_id)
            .map_or("", |g| g.name.as_str())
    }

    fn group_named(&self, name: &str) -> Option<&Group> {
        self.groups.iter().find(|g| g.name == name)
    }

    /// The subscription a `feed/…` stream id (or a bare URL) names.
    fn subscription_of(&self, stream_id: &str) -> Result<&Subscription> {
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
    fn title(s: &Subscription) -> String {
        let title = s.custom_title.as_ref().or(s.feed_title.as_ref());
        title_for_apps(title.unwrap_or(&s.feed_url))
    }

    /// Parses a stream id. `user/<anything>/…` is the caller's own, as `user/-/…`.
    fn stream(&self, stream_id: &str) -> Result<Stream> {
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

    /// A subscription as `subscription/list` shows it.
    fn subscription_json(&self, s: &Subscription) -> Value {
        let group = self.group_name(s.group_id);
        json!({
            "id": feed_stream_id(s.feed_id),
            "title": Catalog::title(s),
            "categories": [{"id": label_stream_id(group), "label": group}],
            "url": s.feed_url,
            "htmlUrl": s.site_url.clone().unwrap_or_default(),
            // No `iconUrl`: an empty one switched off Read You's and Capy Reader's own icon
            // lookup, and tidings serves icons only to signed-in callers (apps load icons
            // without credentials), so it has no URL to give.
            "sortid": format!("{:08X}", s.id),
            "firstitemmsec": (s.created_at.saturating_mul(1000)).to_string(),
        })
    }
}

/// Narrows `query` to the items of `stream` as well; contradictions select nothing.
fn include(query: &mut SyncQuery, stream: &Stream) -> Result<()> {
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

/// The continuation of a page that ended on the item published at `published` with `id`.
fn continuation(published: i64, id: i64) -> String {
    format!("{published}_{id}")
}

fn parse_continuation(text: &str) -> Result<(i64, i64)> {
    text.trim()
        .split_once('_')
        .and_then(|(p, i)| Some((p.parse().ok()?, i.parse().ok()?)))
        .ok_or_else(|| {
            GReaderError::bad_request(format!(
                "Invalid continuation c={text:?}: send back the continuation of the previous page."
            ))
        })
}

/// Every stream a stream request names: the one in the path or `s`, and `it` and `xt`.
fn named_streams<'a>(params: &'a Params, stream: Option<&'a str>) -> Vec<&'a str> {
    let mut named: Vec<&str> = stream.into_iter().chain(params.get("s")).collect();
    named.extend(params.all("it"));
    named.extend(params.all("xt"));
    named
}

/// The listing a stream request asks for: `s` (or the stream in the path), `n`, `r`, `c`,
/// `ot`, `nt`, `xt`, `it`, with at most `max` items a page.
fn stream_query(
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
        query.arrived_from_us = Some(to_micros(ot));
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
async fn page_of<T>(
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
            let (published, id) = position(row);
            continuation(published, id)
        })
    } else {
        None
    };
    Ok((rows, next))
}

/// `user-info`: JSON whether or not `output=json` is given.
async fn user_info(request: &Request<'_>) -> Result<Response> {
    let user = &request.auth.user;
    Ok(axum::Json(json!({
        "userId": user.id.to_string(),
        "userName": user.username,
        "userProfileId": user.id.to_string(),
        "userEmail": "",
        "isBloggerUser": false,
        "signupTimeSec": user.created_at,
        "isMultiLoginEnabled": false,
    }))
    .into_response())
}

/// `subscription/list`.
async fn subscription_list(request: &Request<'_>) -> Result<Response> {
    let catalog = Catalog::load(request.state, request.user_id()).await?;
    let list: Vec<Value> = catalog
        .subscriptions
        .iter()
        .map(|s| catalog.subscription_json(s))
        .collect();
    Ok(conditional_json(
        request.headers,
        &json!({"subscriptions": list}),
    ))
}

/// The group a label names, created when missing.
async fn group_for_label(state: &AppState, user_id: i64, label: &str) -> Result<i64> {
    let name = label
        .trim()
        .strip_prefix("user/")
        .and_then(|rest| rest.split_once('/'))
        .and_then(|(_, rest)| rest.strip_prefix("label/"))
        .unwrap_or(label.trim());
    if let Some(group) = state
        .store
        .list_groups(user_id)
        .await?
        .into_iter()
        .find(|g| g.name == name)
    {
        return Ok(group.id);
    }
    Ok(state.store.create_group(user_id, name).await?.id)
}

/// The name of a label given as a stream id or a bare name.
fn label_name(text: &str) -> &str {
    let text = text.trim();
    text.strip_prefix("user/")
        .and_then(|rest| rest.split_once('/'))
        .and_then(|(_, rest)| rest.strip_prefix("label/"))
        .unwrap_or(text)
}

/// Subscribes through the REST API's checks (rate limit, subscription limit, address
/// policy, discovery), or finds the subscription the URL already is.
async fn subscribe(
    request: &Request<'_>,
    url: &str,
    group_id: Option<i64>,
    title: Option<String>,
) -> Result<Subscription> {
    let url = url.trim();
    let url = url.strip_prefix(FEED_PREFIX).unwrap_or(url);
    let catalog = Catalog::load(request.state, request.user_id()).await?;
    if let Ok(existing) = catalog.subscription_of(url) {
        return Ok(existing.clone());
    }
    Ok(crate::base::subscriptions::subscribe_checked(
        request.state,
        request.user_id(),
        Subscribe {
            url: url.to_string(),
            group_id,
            title,
            interval_minutes: None,
            full_text: None,
        },
    )
    .await?
    .0)
}

/// `subscription/edit`: `ac=subscribe|unsubscribe|edit`, `s` (repeatable), `t` (title), `a`
/// (label to move to), `r` (label to leave).
async fn subscription_edit(request: &Request<'_>) -> Result<Response> {
    let (state, user_id, params) = (request.state, request.user_id(), request.params);
    let streams = params.all("s");
    if streams.is_empty() {
        return Err(GReaderError::bad_request(
            "Missing s: the feed/<id> stream id of the subscription.",
        ));
    }
    let title = params.get("t").map(str::trim).map(str::to_string);
    let add = params.get("a").filter(|a| !a.trim().is_empty());
    let remove = params.get("r").filter(|r| !r.trim().is_empty());
    match params.get("ac").unwrap_or("edit") {
        "subscribe" => {
            let group_id = match add {
                Some(label) => Some(group_for_label(state, user_id, label).await?),
                None => None,
            };
            for stream in streams {
                let subscription = subscribe(
                    request,
                    stream,
                    group_id,
                    title.clone().filter(|t| !t.is_empty()),
                )
                .await?;
                // Already subscribed: the label and title still apply.
                let changes = SubscriptionChanges {
                    title: title.clone().filter(|t| !t.is_empty()).map(Some),
                    group_id,
                    ..SubscriptionChanges::default()
                };
                state
                    .store
                    .update_subscription(user_id, subscription.id, &changes)
                    .await?;
            }
        }
        "unsubscribe" => {
            let catalog = Catalog::load(state, user_id).await?;
            for stream in streams {
                let id = catalog.subscription_of(stream)?.id;
                state.store.unsubscribe(user_id, id).await?;
            }
        }
        "edit" => {
            let catalog = Catalog::load(state, user_id).await?;
            for stream in streams {
                let subscription = catalog.subscription_of(stream)?;
                let group_id = match (add, remove) {
                    (Some(label), _) => Some(group_for_label(state, user_id, label).await?),
                    // Leaving its group without joining another: back to the default group.
                    (None, Some(label))
                        if catalog.group_name(subscription.group_id) == label_name(label) =>
                    {
                        Some(state.store.default_group_id(user_id).await?)
                    }
                    _ => None,
                };
                let changes = SubscriptionChanges {
                    // An empty title goes back to the feed's own.
                    title: title.clone().map(|t| Some(t).filter(|t| !t.is_empty())),
                    group_id,
                    ..SubscriptionChanges::default()
                };
                state
                    .store
                    .update_subscription(user_id, subscription.id, &changes)
                    .await?;
            }
        }
        other => {
            return Err(GReaderError::bad_request(format!(
                "Invalid ac={other:?}: use subscribe, unsubscribe or edit."
            )));
        }
    }
    Ok(ok())
}

/// `subscription/quickadd`: `quickadd` = a feed or page URL. A feed that cannot be added is
/// answered `numResults: 0` with the reason, as Google Reader did; too many requests is a 429.
async fn quickadd(request: &Request<'_>) -> Result<Response> {
    let Some(url) = request
        .params
        .get("quickadd")
        .filter(|u| !u.trim().is_empty())
    else {
        return Err(GReaderError::bad_request(
            "Missing quickadd: the address of a feed or of a site.",
        ));
    };
    match subscribe(request, url, None, None).await {
        Ok(subscription) => Ok(axum::Json(json!({
            "query": url,
            "numResults": 1,
            "streamId": feed_stream_id(subscription.feed_id),
            "streamName": Catalog::title(&subscription),
        }))
        .into_response()),
        Err(error) if error.status == StatusCode::TOO_MANY_REQUESTS => Err(error),
        Err(error) if error.status.is_server_error() => Err(error),
        Err(error) => Ok(axum::Json(json!({
            "query": url,
            "numResults": 0,
            "error": error.message,
        }))
        .into_response()),
    }
}

/// `subscription/export`: the subscriptions as OPML.
async fn export(request: &Request<'_>) -> Result<Response> {
    let document = crate::sync::shared::export_opml(request.state, &request.auth.user).await?;
    Ok((
        [(header::CONTENT_TYPE, "text/xml; charset=utf-8")],
        document,
    )
        .into_response())
}

/// `subscription/import`: an OPML body; new feeds are fetched by the worker.
async fn import(request: &Request<'_>) -> Result<Response> {
    let report = crate::sync::shared::import_opml(
        request.state,
        request.user_id(),
        request.body,
        "Google Reader API import",
    )
    .await
    .map_err(|error| match error {
        crate::sync::shared::ImportRefusal::Opml(reason) => {
            GReaderError::bad_request(format!("The body is not usable OPML: {reason}"))
        }
        crate::sync::shared::ImportRefusal::Store(store) => store.into(),
    })?;
    Ok(text(format!(
        "OK: {} added, {} skipped, {} refused, {} failed",
        report.added, report.skipped, report.refused, report.failed
    )))
}

/// `tag/list`: the starred state, the groups (`folder`) and the item labels (`tag`).
async fn tag_list(request: &Request<'_>) -> Result<Response> {
    let catalog = Catalog::load(request.state, request.user_id()).await?;
    let mut tags = vec![json!({"id": STARRED})];
    let mut groups: Vec<&Group> = catalog.groups.iter().collect();
    groups.sort_by(|a, b| a.position.cmp(&b.position).then(a.name.cmp(&b.name)));
    for group in groups {
        tags.push(
            json!({"id": label_stream_id(&group.name), "label": group.name, "type": "folder"}),
        );
    }
    for label in request
        .state
        .store
        .list_item_labels(request.user_id())
        .await?
    {
        if catalog.group_named(&label).is_none() {
            tags.push(json!({"id": label_stream_id(&label), "label": label, "type": "tag"}));
        }
    }
    Ok(conditional_json(request.headers, &json!({"tags": tags})))
}

/// `rename-tag`: `s` (or `t`) the label, `dest` the new one; renames the group and the item
/// label of that name.
async fn rename_tag(request: &Request<'_>) -> Result<Response> {
    let (state, user_id, params) = (request.state, request.user_id(), request.params);
    let from = label_name(params.get("s").or(params.get("t")).unwrap_or(""));
    let to = label_name(params.get("dest").unwrap_or(""));
    if from.is_empty() || to.is_empty() {
        return Err(GReaderError::bad_request(
            "Give s=user/-/label/<old name> and dest=user/-/label/<new name>.",
        ));
    }
    let catalog = Catalog::load(state, user_id).await?;
    let group = catalog.group_named(from).map(|g| g.id);
    if let Some(group_id) = group {
        state
            .store
            .update_group(user_id, group_id, Some(to), None)
            .await?;
    }
    let renamed = state.store.rename_item_label(user_id, from, to).await?;
    if group.is_none() && renamed == 0 {
        return Err(GReaderError::not_found(format!("No label named {from:?}.")));
    }
    Ok(ok())
}

/// `disable-tag`: `s` (or `t`) the label; deletes the group (its subscriptions go to the
/// default group) and takes the label off every item.
async fn disable_tag(request: &Request<'_>) -> Result<Response> {
    let (state, user_id, params) = (request.state, request.user_id(), request.params);
    let name = label_name(params.get("s").or(params.get("t")).unwrap_or(""));
    if name.is_empty() {
        return Err(GReaderError::bad_request(
            "Give s=user/-/label/<name> (or t=<name>).",
        ));
    }
    let catalog = Catalog::load(state, user_id).await?;
    let group = catalog.group_named(name).map(|g| g.id);
    if let Some(group_id) = group {
        state.store.delete_group(user_id, group_id).await?;
    }
    let removed = state.store.delete_item_label(user_id, name).await?;
    if group.is_none() && removed == 0 {
        return Err(GReaderError::not_found(format!("No label named {name:?}.")));
    }
    Ok(ok())
}

/// The item ids of the repeatable `i` parameter, in any accepted form.
fn item_ids(params: &Params) -> Result<Vec<i64>> {
    let values = params.all("i");
    if values.len() > MAX_NAMED_ITEMS {
        return Err(GReaderError::bad_request(format!(
            "At most {MAX_NAMED_ITEMS} items (i=…) can be named at once."
        )));
    }
    values
        .into_iter()
        .map(|value| {
            parse_item_id(value).ok_or_else(|| {
                GReaderError::bad_request(format!(
                    "Invalid item id i={value:?}: use tag:google.com,2005:reader/item/<16 hex \
                     digits> or the decimal id."
                ))
            })
        })
        .collect()
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
async fn edit_tag(request: &Request<'_>) -> Result<Response> {
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
async fn mark_all_as_read(request: &Request<'_>) -> Result<Response> {
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

/// The publication time of a stream's newest unread item (Unix seconds; 0 when none).
async fn newest_unread(state: &AppState, user_id: i64, mut query: SyncQuery) -> Result<i64> {
    query.read = Some(false);
    query.limit = 1;
    let newest = state.store.sync_item_ids(user_id, &query).await?;
    Ok(newest.first().map_or(0, |r| r.published_at))
}

/// `unread-count`: every feed, label and the reading list with unread items (the reading
/// list always), each with its newest unread item's time.
async fn unread_count(request: &Request<'_>) -> Result<Response> {
    let (state, user_id) = (request.state, request.user_id());
    let catalog = Catalog::load(state, user_id).await?;
    let mut counts = Vec::new();
    let mut per_group: BTreeMap<i64, (i64, i64)> = BTreeMap::new();
    let mut total = 0;
    let mut newest_overall = 0_i64;
    let newest: HashMap<i64, i64> = state
        .store
        .newest_unread_per_feed(user_id)
        .await?
        .into_iter()
        .collect();
    for s in catalog.subscriptions.iter().filter(|s| s.unread_count > 0) {
        let newest = newest.get(&s.feed_id).copied().unwrap_or(0);
        counts.push(json!({
            "id": feed_stream_id(s.feed_id),
            "count": s.unread_count,
            "newestItemTimestampUsec": usec(newest),
        }));
        let entry = per_group.entry(s.group_id).or_default();
        entry.0 += s.unread_count;
        entry.1 = entry.1.max(newest);
        total += s.unread_count;
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

/// `stream/items/ids`: `itemRefs` with decimal ids, and a `continuation` when there is more.
async fn stream_item_ids(request: &Request<'_>) -> Result<Response> {
    let (state, user_id) = (request.state, request.user_id());
    let catalog = Catalog::load_for(state, user_id, &named_streams(request.params, None)).await?;
    let (_, mut query) = stream_query(&catalog, request.params, None, MAX_SYNC_ITEM_IDS - 1)?;
    let (rows, next) = page_of(
        &mut query,
        async |q| Ok(state.store.sync_item_ids(user_id, q).await?),
        |r| (r.published_at, r.id),
    )
    .await?;
    let refs: Vec<Value> = rows
        .iter()
        .map(|r| {
            json!({
                "id": r.id.to_string(),
                "directStreamIds": [],
                "timestampUsec": r.arrived_us.to_string(),
            })
        })
        .collect();
    let mut answer = json!({"itemRefs": refs});
    if let Some(next) = next {
        answer["continuation"] = json!(next);
    }
    Ok(axum::Json(answer).into_response())
}

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

/// `stream/contents[/<stream id>]`: the stream in the path or `s`, the reading list when
/// neither is given.
async fn stream_contents(request: &Request<'_>, stream: Option<String>) -> Result<Response> {
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
async fn stream_items_contents(request: &Request<'_>) -> Result<Response> {
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

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn item_ids_are_read_in_long_and_decimal_forms() {
        assert_eq!(
            long_item_id(42),
            "tag:google.com,2005:reader/item/000000000000002a"
        );
        assert_eq!(parse_item_id(&long_item_id(42)), Some(42));
        assert_eq!(
            parse_item_id("tag:google.com,2005:reader/item/2a"),
            Some(42)
        );
        assert_eq!(parse_item_id("42"), Some(42));
        assert_eq!(parse_item_id(" 42 "), Some(42));
        assert_eq!(parse_item_id("tag:google.com,2005:reader/item/xyz"), None);
        assert_eq!(parse_item_id("tag:google.com,2005:reader/item/"), None);
        assert_eq!(parse_item_id("forty-two"), None);
    }

    #[test]
    fn times_in_any_unit_become_microseconds() {
        assert_eq!(to_micros(1_700_000_000), 1_700_000_000_000_000);
        assert_eq!(to_micros(1_700_000_000_123), 1_700_000_000_123_000);
        assert_eq!(to_micros(1_700_000_000_123_456), 1_700_000_000_123_456);
    }

    #[test]
    fn path_segments_are_percent_decoded() {
        assert_eq!(
            percent_decode("feed%2Fhttps%3A%2F%2Fa.example%2Ffeed%3Fx%3D1+2"),
            "feed/https://a.example/feed?x=1+2"
        );
        assert_eq!(
            percent_decode("user/-/label/Tech%20News"),
            "user/-/label/Tech News"
        );
        assert_eq!(percent_decode("bad%2"), "bad%2");
        assert_eq!(percent_decode("%zz"), "%zz");
    }

    #[test]
    fn the_google_login_header_is_read() {
        let mut headers = HeaderMap::new();
        headers.insert(
            header::AUTHORIZATION,
            HeaderValue::from_static("GoogleLogin auth=ann/tdg_x"),
        );
        assert_eq!(google_login_token(&headers).as_deref(), Some("ann/tdg_x"));
        headers.insert(header::AUTHORIZATION, HeaderValue::from_static("Bearer x"));
        assert_eq!(google_login_token(&headers), None);
    }

    #[test]
    fn continuations_round_trip_and_bad_ones_are_refused() {
        assert_eq!(
            parse_continuation(&continuation(1_700_000_000, 7)).unwrap(),
            (1_700_000_000, 7)
        );
        assert!(parse_continuation("garbage").is_err());
    }
}
