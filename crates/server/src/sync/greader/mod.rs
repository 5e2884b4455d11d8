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
//!
//! The adapter is split by concern, each part on the ones before it: `protocol` (requests,
//! parameters, answers, errors), `ids` (the protocol's names for items, streams and times),
//! `auth`, `streams`, `items`, `subscriptions` and `tags`; this module routes to them.

mod auth;
mod ids;
mod items;
mod protocol;
mod streams;
mod subscriptions;
mod tags;

use axum::Router;
use axum::body::Bytes;
use axum::extract::State;
use axum::http::{HeaderMap, Method, Uri};
use axum::response::{IntoResponse, Response};
use axum::routing::any;
use serde_json::json;

// The ids' forms and the error type, which programs and tests name by these paths.
pub use ids::{long_item_id, parse_item_id};
pub use protocol::GReaderError;

use crate::base::client::{ClientContext, RequestUser};
use crate::base::state::AppState;
use crate::sync::shared::admit;
use auth::{client_login, google_login_token, is_write, user_info, user_of_token, write_token};
use ids::percent_decode;
use items::{edit_tag, mark_all_as_read, stream_contents, stream_item_ids, stream_items_contents};
use protocol::{Params, Request, text};
use streams::unread_count;
use subscriptions::{export, import, quickadd, subscription_edit, subscription_list};
use tags::{disable_tag, rename_tag, tag_list};

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

/// Every `/reader/api/0/…` request: authenticate, then answer the endpoint.
async fn reader_api(
    State(state): State<AppState>,
    method: Method,
    uri: Uri,
    headers: HeaderMap,
    client: Option<axum::Extension<ClientContext>>,
    request_user: Option<axum::Extension<RequestUser>>,
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
            "Unknown endpoint {method} /reader/api/0/{other}: docs/sync-apps.md (Google \
             Reader API) lists the supported ones."
        ))),
    };
    answer.unwrap_or_else(IntoResponse::into_response)
}
