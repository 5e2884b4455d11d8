//! Request protection (F25, F27): client address behind trusted proxies, CSRF checks for
//! cookie-authenticated writes, rate limits for requests without credentials, JSON bodies for
//! every API error (including the framework's own 404/405/413), CORS and security headers.

use std::net::{IpAddr, SocketAddr};

use axum::body::Body;
use axum::extract::{ConnectInfo, Request, State};
use axum::http::{HeaderMap, HeaderValue, Method, StatusCode, header};
use axum::middleware::Next;
use axum::response::{IntoResponse, Response};
use tower_http::cors::{AllowOrigin, CorsLayer};

use crate::base::auth::{Credentials, SESSION_COOKIE, UserLimit, check_credentials};
use crate::base::client::{ClientContext, RateSlot, cookie, rate_headers};
use crate::base::error::{ApiError, ErrorCategory};
use crate::base::state::{AppState, ServerConfig};

/// Works out the client's address and scheme, guards `/api/` requests (CSRF, anonymous rate
/// limit) and makes every API error JSON.
pub async fn protect(State(state): State<AppState>, mut request: Request, next: Next) -> Response {
    let peer = request
        .extensions()
        .get::<ConnectInfo<SocketAddr>>()
        .map(|ConnectInfo(addr)| addr.ip());
    let client = client_context(&state.config, peer, request.headers());
    request.extensions_mut().insert(client.clone());
    if let Err(error) = check_request_head(&request) {
        return error.into_response();
    }
    // The sync APIs under /api/ (Fever, Google Reader) authenticate, limit and answer errors
    // in their own protocols' ways.
    let path = request.uri().path();
    let is_api = path.starts_with("/api/") && !crate::sync::is_sync_path(path);
    if !is_api {
        return next.run(request).await;
    }

    let headers = request.headers();
    let has_bearer = headers.contains_key(header::AUTHORIZATION);
    let has_session = cookie(headers, SESSION_COOKIE).is_some();
    if has_session
        && !has_bearer
        && !request.method().is_safe()
        && let Err(error) = check_same_origin(&state.config, headers)
    {
        return error.into_response();
    }

    let slot = RateSlot::default();
    request.extensions_mut().insert(slot.clone());
    if request.method() != Method::OPTIONS
        && let Err(refused) = count_request(&state, &mut request, &client, &slot).await
    {
        return refused;
    }

    let mut response = next.run(request).await;
    // A 429 from another limiter (sign-in, subscribing) carries that limiter's figures.
    if let Some(decision) = slot.get()
        && !response.headers().contains_key("x-ratelimit-limit")
    {
        rate_headers(response.headers_mut(), decision);
    }
    json_errors(response).await
}

/// Counts an API request against one limit before any handler runs: the user's when its
/// credentials are live (the user's icons' for a feed icon, [`UserLimit`]), else its
/// address's. A request counts against the address unless it authenticated, whatever it
/// carries and whether or not its endpoint ever looks at credentials: before, any
/// `Authorization` header or cookie skipped the address's limit, so `Authorization: x` made
/// the sign-in endpoints (which write rows) unlimited. The outcome is left in the request for
/// the [`Auth`](crate::base::auth::Auth) extractor, which then does not look the credentials
/// up again. Answers the refusal when a limit is reached.
async fn count_request(
    state: &AppState,
    request: &mut Request,
    client: &ClientContext,
    slot: &RateSlot,
) -> Result<(), Response> {
    let has_credentials = request.headers().contains_key(header::AUTHORIZATION)
        || cookie(request.headers(), SESSION_COOKIE).is_some();
    if has_credentials {
        let limit = UserLimit::of(request.method(), request.uri().path());
        match check_credentials(state, request.headers(), request.extensions(), limit).await {
            Ok(Credentials::Limited(decision)) => {
                return Err(ApiError::limited(decision).into_response());
            }
            Ok(credentials) => {
                request.extensions_mut().insert(credentials);
                return Ok(());
            }
            // The store cannot tell (and the limiter, on PostgreSQL, could not count either):
            // an endpoint that needs the user answers the error without asking again, so that
            // an outage is answered as promptly as before.
            Err(error) => {
                request.extensions_mut().insert(Credentials::Failed(error));
                return Ok(());
            }
        }
    }
    let decision = state.limits.anonymous.check(&client.key()).await;
    slot.set(decision);
    if !decision.allowed {
        return Err(ApiError::limited(decision).into_response());
    }
    Ok(())
}

/// The largest body the server reads whole before a handler sees it when it is larger than the
/// API's usual limit ([`crate::base::limits::MAX_BODY_BYTES`]); see [`receive_large_bodies`].
pub const RECEIVE_WHOLE_BODY_UP_TO: usize = 16 * 1024 * 1024;

/// How many large bodies may be held in memory at once by [`receive_large_bodies`].
const LARGE_BODIES_AT_ONCE: usize = 4;

/// How long a client has to send a large body before the request is refused with 408.
const LARGE_BODY_TIMEOUT: std::time::Duration = std::time::Duration::from_secs(60);

/// Reads a body above the usual limit (but at most [`RECEIVE_WHOLE_BODY_UP_TO`]) whole before
/// the request goes on. A handler that refuses a body (413, or 401 before reading it) drops it
/// unread, and the connection is then closed with the client's bytes still arriving: the kernel
/// answers them with a reset, and the client (a browser uploading a 6 MB OPML file) shows a
/// broken connection instead of the answer. Once the body has arrived, the answer always
/// arrives too. At most a few such bodies are held at once; beyond that they pass unread, so
/// slow uploads holding those few slots make no other request wait.
pub async fn receive_large_bodies(request: Request, next: Next) -> Response {
    static LARGE_BODIES: tokio::sync::Semaphore =
        tokio::sync::Semaphore::const_new(LARGE_BODIES_AT_ONCE);
    let length = request
        .headers()
        .get(header::CONTENT_LENGTH)
        .and_then(|v| v.to_str().ok())
        .and_then(|v| v.parse::<usize>().ok());
    let is_large = length.is_some_and(|length| {
        length > crate::base::limits::MAX_BODY_BYTES && length <= RECEIVE_WHOLE_BODY_UP_TO
    });
    let permit = if is_large {
        LARGE_BODIES.try_acquire().ok()
    } else {
        None
    };
    let Some(_permit) = permit else {
        return next.run(request).await;
    };
    let (parts, body) = request.into_parts();
    let received = tokio::time::timeout(
        LARGE_BODY_TIMEOUT,
        axum::body::to_bytes(body, RECEIVE_WHOLE_BODY_UP_TO),
    )
    .await;
    match received {
        Ok(Ok(bytes)) => {
            next.run(Request::from_parts(parts, Body::from(bytes)))
                .await
        }
        Ok(Err(error)) => match crate::base::inbound::body_timeout_of(&error) {
            Some(timed_out) => crate::base::extract::body_timeout(timed_out).into_response(),
            None => body_unreadable(),
        },
        Err(_) => ApiError::new(
            StatusCode::REQUEST_TIMEOUT,
            "body_timeout",
            ErrorCategory::Limit,
            format!(
                "The request body did not arrive within {} seconds.",
                LARGE_BODY_TIMEOUT.as_secs()
            ),
            "Send the request again over a faster connection.",
        )
        .into_response(),
    }
}

/// The 400 for a body that ended early or ran long.
fn body_unreadable() -> Response {
    ApiError::new(
        StatusCode::BAD_REQUEST,
        "body_unreadable",
        ErrorCategory::Validation,
        "The request body ended before its Content-Length said, or was longer.",
        "Send the request again with the whole body.",
    )
    .into_response()
}

/// Replaces the framework's plain-text error answers (unknown path, wrong method, body too
/// large, unsupported media type) with the API's JSON error body.
async fn json_errors(response: Response) -> Response {
    let status = response.status();
    let is_json = response
        .headers()
        .get(header::CONTENT_TYPE)
        .and_then(|v| v.to_str().ok())
        .is_some_and(|v| v.starts_with("application/json"));
    if !(status.is_client_error() || status.is_server_error()) || is_json {
        return response;
    }
    let headers = response.headers().clone();
    let error = match status {
        StatusCode::NOT_FOUND => ApiError::new(
            status,
            "not_found",
            ErrorCategory::Validation,
            "There is no such API endpoint.",
            "Check the path against /api/v1/openapi.json.",
        ),
        StatusCode::METHOD_NOT_ALLOWED => ApiError::new(
            status,
            "method_not_allowed",
            ErrorCategory::Validation,
            "This endpoint does not accept that method.",
            "Check the method against /api/v1/openapi.json.",
        ),
        StatusCode::PAYLOAD_TOO_LARGE => ApiError::new(
            status,
            "body_too_large",
            ErrorCategory::Limit,
            "The request body is too large (1 MB at most; 5 MB for OPML imports).",
            "Send a smaller body.",
        ),
        StatusCode::UNSUPPORTED_MEDIA_TYPE => ApiError::new(
            status,
            "unsupported_media_type",
            ErrorCategory::Validation,
            "The body must be JSON, sent with Content-Type: application/json.",
            "Set the Content-Type header.",
        ),
        _ if status.is_server_error() => ApiError::internal(format!("plain {status} answer")),
        _ => ApiError::new(
            status,
            "bad_request",
            ErrorCategory::Validation,
            format!(
                "The request was refused ({}).",
                status.canonical_reason().unwrap_or("error")
            ),
            "Check the request against /api/v1/openapi.json.",
        ),
    };
    let mut json = error.into_response();
    for name in [header::RETRY_AFTER, header::ALLOW] {
        if let Some(value) = headers.get(&name) {
            json.headers_mut().insert(name, value.clone());
        }
    }
    for (name, value) in headers.iter() {
        if name.as_str().starts_with("x-ratelimit-") {
            json.headers_mut().insert(name.clone(), value.clone());
        }
    }
    json
}

/// The longest request target (path and query) answered; longer ones get a JSON 414. Hyper
/// itself cuts the connection with a bare 414 only at 64 KiB.
pub const MAX_URI_BYTES: usize = 8 * 1024;
/// The most bytes of request header names and values together; more gets a JSON 431.
pub const MAX_HEADER_BYTES: usize = 32 * 1024;

/// Refuses request heads larger than this server answers: a URL over [`MAX_URI_BYTES`] (414)
/// or headers over [`MAX_HEADER_BYTES`] (431), with the API's JSON error body.
fn check_request_head(request: &Request) -> Result<(), ApiError> {
    let uri_bytes = request
        .uri()
        .path_and_query()
        .map_or(0, |pq| pq.as_str().len());
    if uri_bytes > MAX_URI_BYTES {
        return Err(ApiError::new(
            StatusCode::URI_TOO_LONG,
            "uri_too_long",
            ErrorCategory::Limit,
            format!("The URL is {uri_bytes} bytes long; at most {MAX_URI_BYTES} are accepted."),
            "Send long values in a request body instead of the URL.",
        ));
    }
    let header_bytes: usize = request
        .headers()
        .iter()
        .map(|(name, value)| name.as_str().len() + value.len())
        .sum();
    if header_bytes > MAX_HEADER_BYTES {
        return Err(ApiError::new(
            StatusCode::REQUEST_HEADER_FIELDS_TOO_LARGE,
            "headers_too_large",
            ErrorCategory::Limit,
            format!(
                "The request headers are {header_bytes} bytes; at most {MAX_HEADER_BYTES} are accepted."
            ),
            "Send fewer or shorter headers (cookies included).",
        ));
    }
    Ok(())
}

/// A state-changing request carrying the session cookie must come from our own pages: its
/// `Origin` (or, without one, `Sec-Fetch-Site`) must say so. Browsers send at least one of
/// the two on every unsafe request, so a cookie-authenticated write with neither is refused
/// too: it is either not a browser (which should use an API key) or a browser whose headers
/// were stripped, which cannot be told from a forgery.
fn check_same_origin(config: &ServerConfig, headers: &HeaderMap) -> Result<(), ApiError> {
    let refused = || {
        ApiError::forbidden(
            "This request came from another site and was refused (cross-site request forgery protection).",
            "Use tidings from its own address, or use an API key for scripts and other sites.",
        )
    };
    if let Some(origin) = headers.get(header::ORIGIN) {
        let origin = origin.to_str().map_err(|_| refused())?;
        if origin == "null" {
            return Err(refused());
        }
        let ours = config.base_url.origin().ascii_serialization();
        let host = headers.get(header::HOST).and_then(|h| h.to_str().ok());
        let same_host = host.is_some_and(|host| {
            origin == format!("http://{host}") || origin == format!("https://{host}")
        });
        return if origin == ours || same_host {
            Ok(())
        } else {
            Err(refused())
        };
    }
    match headers.get("sec-fetch-site").and_then(|v| v.to_str().ok()) {
        Some("same-origin") | Some("none") => Ok(()),
        Some(_) => Err(refused()),
        None => Err(ApiError::forbidden(
            "This request carries the session cookie but neither an Origin nor a \
             Sec-Fetch-Site header, so it cannot be told from a cross-site request forgery.",
            "Send the Origin header of this server's address, or use an API key \
             (Authorization: Bearer tdg_…) for scripts.",
        )),
    }
}

fn client_context(
    config: &ServerConfig,
    peer: Option<IpAddr>,
    headers: &HeaderMap,
) -> ClientContext {
    let trusted = |ip: &IpAddr| config.trusted_proxies.iter().any(|net| net.contains(*ip));
    let base_https = config.base_url.scheme() == "https";
    let Some(peer) = peer else {
        return ClientContext {
            ip: None,
            https: base_https,
        };
    };
    if !trusted(&peer) {
        return ClientContext {
            ip: Some(peer),
            https: base_https,
        };
    }
    // Through trusted proxies: the client is the right-most address that is not a proxy.
    let forwarded: Vec<IpAddr> = headers
        .get_all("x-forwarded-for")
        .iter()
        .filter_map(|v| v.to_str().ok())
        .flat_map(|v| v.split(','))
        .filter_map(|part| part.trim().parse().ok())
        .collect();
    let ip = forwarded
        .iter()
        .rev()
        .find(|ip| !trusted(ip))
        .copied()
        .or_else(|| forwarded.first().copied())
        .unwrap_or(peer);
    let proto_https = headers
        .get("x-forwarded-proto")
        .and_then(|v| v.to_str().ok())
        .is_some_and(|v| v.trim().eq_ignore_ascii_case("https"));
    ClientContext {
        ip: Some(ip),
        https: base_https || proto_https,
    }
}

/// CORS for the origins in `TIDINGS_CORS_ORIGINS` only; with none configured, no CORS
/// headers are sent and browsers keep other sites out.
pub fn cors(config: &ServerConfig) -> CorsLayer {
    let origins: Vec<HeaderValue> = config
        .cors_origins
        .iter()
        .filter_map(|o| HeaderValue::from_str(o).ok())
        .collect();
    CorsLayer::new()
        .allow_origin(AllowOrigin::list(origins))
        .allow_methods([
            Method::GET,
            Method::POST,
            Method::PUT,
            Method::PATCH,
            Method::DELETE,
        ])
        .allow_headers([header::AUTHORIZATION, header::CONTENT_TYPE])
        .expose_headers([
            header::RETRY_AFTER,
            header::HeaderName::from_static("x-ratelimit-limit"),
            header::HeaderName::from_static("x-ratelimit-remaining"),
            header::HeaderName::from_static("x-ratelimit-reset"),
            header::HeaderName::from_static("x-ratelimit-scope"),
        ])
        .max_age(std::time::Duration::from_secs(3600))
}

/// The Content-Security-Policy of every response: scripts and styles only from this origin
/// (no inline scripts), images from anywhere over https (feeds embed them), no frames of us,
/// and frames only from YouTube's privacy-enhanced host, for the click-to-load video player.
pub const CONTENT_SECURITY_POLICY: &str = "default-src 'self'; script-src 'self'; \
    style-src 'self'; img-src 'self' https: data:; media-src 'self' https:; \
    frame-src https://www.youtube-nocookie.com; \
    connect-src 'self'; font-src 'self'; object-src 'none'; base-uri 'none'; \
    form-action 'self'; frame-ancestors 'none'";

/// How long browsers keep to HTTPS once told (`Strict-Transport-Security`): a year.
pub const HSTS: &str = "max-age=31536000";

/// Adds the security headers to every response (F27). A handler that set a stricter
/// Content-Security-Policy of its own (the favicon endpoint sandboxes images) keeps it.
/// API answers are never stored by caches (`Cache-Control: no-store`: they hold the user's
/// data, and one of them a new key's secret), except those that set their own caching (the
/// favicon images). A server reached over HTTPS (an `https` base URL) sends HSTS.
pub async fn security_headers(
    State(state): State<AppState>,
    request: Request<Body>,
    next: Next,
) -> Response {
    let is_api = request.uri().path().starts_with("/api/");
    let mut response = next.run(request).await;
    let headers = response.headers_mut();
    if is_api && !headers.contains_key(header::CACHE_CONTROL) {
        headers.insert(header::CACHE_CONTROL, HeaderValue::from_static("no-store"));
    }
    if state.config.base_url.scheme() == "https" {
        headers.insert(
            header::STRICT_TRANSPORT_SECURITY,
            HeaderValue::from_static(HSTS),
        );
    }
    if !headers.contains_key(header::CONTENT_SECURITY_POLICY) {
        headers.insert(
            header::CONTENT_SECURITY_POLICY,
            HeaderValue::from_static(CONTENT_SECURITY_POLICY),
        );
    }
    for (name, value) in [
        ("x-content-type-options", "nosniff"),
        ("referrer-policy", "no-referrer"),
        ("x-frame-options", "DENY"),
        ("cross-origin-opener-policy", "same-origin"),
    ] {
        headers.insert(name, HeaderValue::from_static(value));
    }
    response
}

#[cfg(test)]
mod tests {
    use super::*;

    fn config() -> ServerConfig {
        let mut config = ServerConfig::new("https://reader.example".parse().unwrap());
        config.trusted_proxies = vec!["10.0.0.0/8".parse().unwrap()];
        config
    }

    fn headers(pairs: &[(&'static str, &str)]) -> HeaderMap {
        let mut map = HeaderMap::new();
        for (name, value) in pairs {
            map.append(*name, value.parse().unwrap());
        }
        map
    }

    #[test]
    fn forwarded_for_is_believed_only_from_trusted_proxies() {
        let config = config();
        let h = headers(&[
            ("x-forwarded-for", "203.0.113.9, 10.1.1.1"),
            ("x-forwarded-proto", "https"),
        ]);
        let direct = client_context(&config, Some("198.51.100.7".parse().unwrap()), &h);
        assert_eq!(direct.ip, Some("198.51.100.7".parse().unwrap()));
        let proxied = client_context(&config, Some("10.0.0.2".parse().unwrap()), &h);
        assert_eq!(proxied.ip, Some("203.0.113.9".parse().unwrap()));
        assert!(proxied.https);
        let spoofed = headers(&[("x-forwarded-for", "1.2.3.4, 203.0.113.9")]);
        let proxied = client_context(&config, Some("10.0.0.2".parse().unwrap()), &spoofed);
        assert_eq!(
            proxied.ip,
            Some("203.0.113.9".parse().unwrap()),
            "right-most untrusted"
        );
    }

    #[test]
    fn same_origin_rules() {
        let config = config();
        assert!(
            check_same_origin(&config, &headers(&[("origin", "https://reader.example")])).is_ok()
        );
        assert!(
            check_same_origin(
                &config,
                &headers(&[
                    ("origin", "http://localhost:8080"),
                    ("host", "localhost:8080")
                ])
            )
            .is_ok()
        );
        assert!(
            check_same_origin(&config, &headers(&[("origin", "https://evil.example")])).is_err()
        );
        assert!(check_same_origin(&config, &headers(&[("origin", "null")])).is_err());
        assert!(check_same_origin(&config, &headers(&[("sec-fetch-site", "cross-site")])).is_err());
        assert!(check_same_origin(&config, &headers(&[("sec-fetch-site", "same-site")])).is_err());
        assert!(check_same_origin(&config, &headers(&[("sec-fetch-site", "same-origin")])).is_ok());
        assert!(
            check_same_origin(&config, &headers(&[])).is_err(),
            "neither header: refused"
        );
    }
}
