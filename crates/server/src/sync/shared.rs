//! What the sync adapters share, a floor below them so that none imports another: how a
//! presented API key becomes a user (with the same checks and limits as the REST API), how
//! titles, HTML, enclosures, times and icons are sent to apps, and OPML export and import.

use tidings_store::{ApiKeyScope, Authenticated};

use crate::base::auth::{Auth, secret_hash};
use crate::base::client::ClientContext;
use crate::base::state::AppState;

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
    crate::base::items::proxy_images(state, &mut html);
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
    crate::base::time::time(secs)
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
