//! The sync APIs that feed reader apps already speak (F70, F71): the Miniflux API v1 subset
//! (`/v1/…`), the Fever API (`/fever/`, `/api/fever.php`) and the Google Reader API (at the
//! root and under `/api/greader.php`). Each protocol is an adapter of its own over the store
//! queries the REST API uses; none of them calls into another. What they share is here: how a
//! presented API key becomes a user, with the same checks and limits as the REST API, and
//! OPML export and import.
//!
//! Every protocol signs in with the username and an API key (F23) rather than the account
//! password, so the password never lives in an app; read-only keys cannot change anything.

pub mod fever;
pub mod greader;
pub mod miniflux;

use axum::Router;
use tidings_store::{ApiKeyScope, Authenticated};

use crate::AppState;
use crate::api::auth::{Auth, secret_hash};
use crate::middleware::ClientContext;

/// Every sync API's routes.
pub fn router() -> Router<AppState> {
    Router::new()
        .merge(miniflux::router())
        .merge(fever::router())
        .merge(greader::router())
}

/// Whether a path under `/api/` belongs to a sync API rather than the REST API, so that the
/// REST API's protections (CSRF checks, JSON errors) leave it to the protocol.
pub fn is_sync_path(path: &str) -> bool {
    path == "/api/fever.php"
        || path == "/api/fever.php/"
        || path == "/api/greader.php"
        || path.starts_with("/api/greader.php/")
}

/// The sync APIs' paths as an app asks for them when its server address was typed with a
/// trailing slash (`https://rss.example.com/` + `/accounts/ClientLogin`, newsboat's
/// `miniflux-url "https://rss.example.com/"`, `…/api/greader.php/` + `/reader/api/0/…`): the
/// path with one slash there, or `None` when `path` is no such path. Only the slashes at the
/// start and right after a sync API's base are merged; the rest of the path (a stream id with
/// a URL in it) is left as it is, and so are other routes.
pub fn single_slash_path(path: &str) -> Option<String> {
    if !path.contains("//") {
        return None;
    }
    let mut fixed = format!("/{}", path.trim_start_matches('/'));
    for base in ["/api/greader.php", "/api/fever.php", "/fever"] {
        if let Some(rest) = fixed.strip_prefix(base)
            && rest.starts_with("//")
        {
            fixed = format!("{base}/{}", rest.trim_start_matches('/'));
            break;
        }
    }
    let sync_path = is_sync_path(&fixed)
        || fixed == "/fever"
        || fixed == "/fever/"
        || ["/accounts/ClientLogin", "/reader/api/0/", "/v1/"]
            .iter()
            .any(|prefix| fixed.starts_with(prefix));
    (sync_path && fixed != path).then_some(fixed)
}

/// A request with its path as [`single_slash_path`] gives it, before routing.
pub fn with_single_slash<B>(mut request: axum::http::Request<B>) -> axum::http::Request<B> {
    let Some(path) = single_slash_path(request.uri().path()) else {
        return request;
    };
    let path_and_query = match request.uri().query() {
        Some(query) => format!("{path}?{query}"),
        None => path,
    };
    let mut parts = request.uri().clone().into_parts();
    if let Ok(value) = path_and_query.parse() {
        parts.path_and_query = Some(value);
        if let Ok(uri) = axum::http::Uri::from_parts(parts) {
            *request.uri_mut() = uri;
        }
    }
    request
}

/// Why a sync request was not admitted.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) enum Refusal {
    /// No credentials, or wrong ones.
    BadCredentials,
    /// Too many requests: retry after this many seconds.
    RateLimited(u64),
    /// A read-only key asked for a change.
    ReadOnly,
    /// The store failed while checking.
    Unavailable,
}

/// The user of an API key presented in clear, if it is live.
pub(crate) async fn user_of_key(
    state: &AppState,
    key: &str,
) -> Result<Option<Authenticated>, Refusal> {
    let key = key.trim();
    if key.is_empty() {
        return Ok(None);
    }
    state
        .store
        .authenticate_api_key(&secret_hash(key))
        .await
        .map_err(|_| Refusal::Unavailable)
}

/// The user of an API key presented with a username: both must match. The name is looked up
/// as sign-in does ([`tidings_store::Store::user_credentials`]: any case, width or
/// composition of it), so every sync protocol that takes a username uses this.
pub(crate) async fn user_of_login(
    state: &AppState,
    username: &str,
    key: &str,
) -> Result<Option<Authenticated>, Refusal> {
    let Some(found) = user_of_key(state, key).await? else {
        return Ok(None);
    };
    let named = state
        .store
        .user_credentials(username)
        .await
        .map_err(|_| Refusal::Unavailable)?;
    Ok(named
        .is_some_and(|(named, _)| named.id == found.user.id)
        .then_some(found))
}

/// Turns what the credentials gave into an admitted caller: failed credentials count against
/// the client's address like anonymous requests, admitted ones against the user's sync limit,
/// and a read-only key is refused when `writes` is set.
pub(crate) async fn admit(
    state: &AppState,
    client: Option<&ClientContext>,
    found: Result<Option<Authenticated>, Refusal>,
    writes: bool,
) -> Result<Auth, Refusal> {
    let Some(found) = found? else {
        if let Some(client) = client {
            let decision = state.limits.anonymous.check(&client.key()).await;
            if !decision.allowed {
                return Err(Refusal::RateLimited(decision.reset_seconds));
            }
        }
        return Err(Refusal::BadCredentials);
    };
    let decision = state
        .limits
        .sync_per_user
        .check(&format!("user:{}", found.user.id))
        .await;
    if !decision.allowed {
        return Err(Refusal::RateLimited(decision.reset_seconds));
    }
    if writes && matches!(found.api_key, Some((_, ApiKeyScope::Read))) {
        return Err(Refusal::ReadOnly);
    }
    Ok(Auth {
        user: found.user,
        session_id: found.session_id,
        api_key: found.api_key,
    })
}

/// The pairs of a query string or URL-encoded form body, in order, repeated names kept.
pub(crate) fn form_pairs(text: &[u8]) -> Vec<(String, String)> {
    url::form_urlencoded::parse(text)
        .map(|(k, v)| (k.into_owned(), v.into_owned()))
        .collect()
}

/// A request's `Content-Type`, lower case; empty when absent.
pub(crate) fn content_type(headers: &axum::http::HeaderMap) -> String {
    headers
        .get(axum::http::header::CONTENT_TYPE)
        .and_then(|v| v.to_str().ok())
        .unwrap_or("")
        .to_ascii_lowercase()
}

/// A title (of an item, a feed, a group) or an author as the Google Reader and Fever APIs send
/// it: `&`, `<` and `>` as their full-width forms `＆`, `＜`, `＞`, as FreshRSS writes them to
/// apps (`escapeToUnicodeAlternative` in its lib/lib_rss.php). Some apps read these fields as
/// HTML (Read You in every view, RSS Guard's preview: `Item & <friends>` showed as `Item & `),
/// others as text (which would show `&amp;` if they were escaped): this form reads the same in
/// both.
pub(crate) fn title_for_apps(text: &str) -> String {
    text.replace('&', "＆")
        .replace('<', "＜")
        .replace('>', "＞")
}

/// An item's HTML as the sync APIs send it: its images pointed at the media proxy when it is on
/// (`TIDINGS_MEDIA_PROXY`), as the REST API sends it, so that image hosts never see the
/// reader's address.
pub(crate) fn html_for_apps(state: &AppState, html: String) -> String {
    let mut html = Some(html);
    crate::api::items::proxy_images(state, &mut html);
    html.unwrap_or_default()
}

/// An enclosure's URL as the sync APIs send it: an image's through the media proxy when it is
/// on, as items' images; audio and video stay where they are, since the proxy passes images
/// only.
pub(crate) fn enclosure_url_for_apps(
    state: &AppState,
    enclosure: &tidings_store::Enclosure,
) -> String {
    let config = &state.config;
    let is_image = enclosure
        .mime_type
        .as_deref()
        .is_some_and(|mime| mime.trim().to_ascii_lowercase().starts_with("image/"));
    is_image
        .then(|| {
            config
                .media_proxy
                .proxied_if_wanted(&config.base_url, &enclosure.url)
        })
        .flatten()
        .unwrap_or_else(|| enclosure.url.clone())
}

/// Formats Unix seconds as RFC 3339 UTC (`2024-05-01T10:00:00Z`).
pub(crate) fn rfc3339(secs: i64) -> String {
    crate::api::time(secs)
}

/// An icon as a `data:` URL body, `MIME;base64,DATA`, when the feed has an image icon.
pub(crate) async fn icon_data(state: &AppState, feed_id: i64) -> Option<(String, String)> {
    use base64::Engine;
    let icon = state.store.favicon(feed_id).await.ok()??;
    let (data, mime) = (icon.data?, icon.mime_type?);
    if !mime.starts_with("image/") {
        return None;
    }
    Some((
        mime.clone(),
        format!(
            "{mime};base64,{}",
            base64::engine::general_purpose::STANDARD.encode(data)
        ),
    ))
}

/// The user's subscriptions as an OPML document.
pub(crate) async fn export_opml(
    state: &AppState,
    user: &tidings_store::User,
) -> Result<String, tidings_store::StoreError> {
    let title = format!("tidings subscriptions of {}", user.username);
    tidings_worker::export_opml(&state.store, user.id, &title).await
}

/// Why an OPML import through a sync API failed.
#[derive(Debug)]
pub(crate) enum ImportRefusal {
    /// The body is not usable OPML, for this reason.
    Opml(String),
    /// The store failed.
    Store(tidings_store::StoreError),
}

/// Subscribes the user to an OPML document's feeds, within the subscription limit, as the
/// REST API's import does (new feeds are fetched by the worker).
pub(crate) async fn import_opml(
    state: &AppState,
    user_id: i64,
    body: &[u8],
    source: &str,
) -> Result<tidings_worker::ImportReport, ImportRefusal> {
    let options = tidings_worker::ImportOptions {
        file_name: Some(source.into()),
        max_subscriptions: Some(state.config.max_subscriptions),
        ..tidings_worker::ImportOptions::default()
    };
    tidings_worker::import_opml(&state.fetcher, user_id, body, &options)
        .await
        .map_err(|error| match error {
            tidings_worker::ImportError::Opml(reason) => ImportRefusal::Opml(reason.to_string()),
            tidings_worker::ImportError::Store(store) => ImportRefusal::Store(store),
        })
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_doubled_slash_of_a_sync_path_becomes_one() {
        for (asked, meant) in [
            ("//accounts/ClientLogin", "/accounts/ClientLogin"),
            ("//reader/api/0/user-info", "/reader/api/0/user-info"),
            (
                "/api/greader.php//reader/api/0/stream/contents/feed/https://a.example/x",
                "/api/greader.php/reader/api/0/stream/contents/feed/https://a.example/x",
            ),
            (
                "//api/greader.php/accounts/ClientLogin",
                "/api/greader.php/accounts/ClientLogin",
            ),
            ("//v1/me", "/v1/me"),
            ("///fever/", "/fever/"),
            ("/fever//", "/fever/"),
            ("//api/fever.php", "/api/fever.php"),
        ] {
            assert_eq!(single_slash_path(asked).as_deref(), Some(meant), "{asked}");
        }
        // A URL in a stream id keeps its slashes; other routes are left alone.
        for path in [
            "/reader/api/0/stream/contents/feed/https://a.example/x",
            "//healthz",
            "//api/v1/me",
            "/fever",
        ] {
            assert_eq!(single_slash_path(path), None, "{path}");
        }
    }
}
