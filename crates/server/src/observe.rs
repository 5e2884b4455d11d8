//! One place that sees every request (F62): it gives the request an id, times it, counts it in
//! `/metrics` under its route template and logs one line for it.
//!
//! The line names the route template (`/api/v1/feeds/{id}`), never the path with its query:
//! the sync protocols put passwords and keys in query strings (`/accounts/ClientLogin?Passwd=`,
//! `?api_key=`), and headers and bodies (cookies, bearer keys, passwords) are never logged.

use std::time::Instant;

use axum::extract::{MatchedPath, Request, State};
use axum::http::HeaderValue;
use axum::middleware::Next;
use axum::response::Response;

use crate::base::client::RequestUser;
use crate::base::state::AppState;
use crate::metrics::UNMATCHED_ROUTE;

/// The header that carries the request id back to the client, to quote when reporting a
/// problem; the same id is in the server's log line for the request.
pub const REQUEST_ID_HEADER: &str = "x-request-id";

/// Times, counts and logs every request (the outermost of the application's layers).
pub async fn observe(State(state): State<AppState>, mut request: Request, next: Next) -> Response {
    let started = Instant::now();
    let request_id = format!("{:016x}", rand::random::<u64>());
    let route = request.extensions().get::<MatchedPath>().map_or_else(
        || UNMATCHED_ROUTE.to_owned(),
        |path| path.as_str().to_owned(),
    );
    let method = request.method().as_str().to_owned();
    let user = RequestUser::default();
    request.extensions_mut().insert(user.clone());
    let mut response = next.run(request).await;
    let elapsed = started.elapsed();
    let status = response.status();
    let rate_scope = response
        .headers()
        .get("x-ratelimit-scope")
        .and_then(|value| value.to_str().ok());
    state
        .metrics
        .record_request(&route, &method, status, elapsed, rate_scope);
    let duration_ms = elapsed.as_secs_f64() * 1000.0;
    let user_id = user.get();
    macro_rules! log_request {
        ($level:ident) => {
            tracing::$level!(
                target: "tidings::request",
                request_id = %request_id,
                user_id,
                method = %method,
                route = %route,
                status = status.as_u16(),
                duration_ms,
                "request"
            )
        };
    }
    if is_routine_probe(&route, status.as_u16()) {
        log_request!(debug);
    } else {
        log_request!(info);
    }
    if let Ok(value) = HeaderValue::from_str(&request_id) {
        response.headers_mut().insert(REQUEST_ID_HEADER, value);
    }
    response
}

/// Whether a request is a health check or a metrics scrape that went well: those come every
/// few seconds from the orchestrator and the scraper, so they are logged at debug level only,
/// where they do not bury the requests people make. A failing one is logged like any other.
fn is_routine_probe(route: &str, status: u16) -> bool {
    matches!(route, "/healthz" | "/readyz" | "/metrics") && status < 400
}

#[cfg(test)]
mod tests {
    use super::is_routine_probe;

    #[test]
    fn only_successful_probes_are_quiet() {
        assert!(is_routine_probe("/healthz", 200));
        assert!(is_routine_probe("/metrics", 200));
        assert!(!is_routine_probe("/readyz", 503));
        assert!(!is_routine_probe("/metrics", 403));
        assert!(!is_routine_probe("/api/v1/items", 200));
    }
}
