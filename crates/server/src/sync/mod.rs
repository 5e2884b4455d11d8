//! The sync APIs that feed reader apps already speak (F70, F71): the Miniflux API v1 subset
//! (`/v1/…`), the Fever API (`/fever/`, `/api/fever.php`) and the Google Reader API (at the
//! root and under `/api/greader.php`). Each protocol is an adapter of its own over the store
//! queries the REST API uses; none of them calls into another. What they share is in [`shared`]:
//! how a presented API key becomes a user, with the same checks and limits as the REST API,
//! how items are sent to apps, and OPML export and import.
//!
//! Every protocol signs in with the username and an API key (F23) rather than the account
//! password, so the password never lives in an app; read-only keys cannot change anything.

pub mod fever;
pub mod greader;
pub mod miniflux;
pub mod shared;

use axum::Router;

use crate::base::state::AppState;

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
