//! `GET /metrics` of `tidings serve`: the series of the process and of the API, for the clients
//! the access rule admits (the series themselves and the rule are in the parent module, which
//! the application's state holds).

use axum::extract::{Request, State};
use axum::response::Response;
use prometheus_client::metrics::gauge::Gauge;

use super::{encode, forbidden, process_registry};
use crate::base::client::ClientContext;
use crate::base::state::AppState;

/// `GET /metrics`: the series in the Prometheus text format (0.0.4), or 403 for clients
/// outside `TIDINGS_METRICS_ALLOWED_NETWORKS` without `TIDINGS_METRICS_TOKEN`.
pub async fn serve_metrics(State(state): State<AppState>, request: Request) -> Response {
    let client = request
        .extensions()
        .get::<ClientContext>()
        .and_then(|client| client.ip);
    if !state
        .config
        .metrics_access
        .allows(client, request.headers())
    {
        return forbidden();
    }
    let mut registry = process_registry(&state.store, state.fetcher.metrics()).await;
    registry.register(
        "tidings_http_request_duration_seconds",
        "API and UI requests by route template, method and status",
        state.metrics.requests.clone(),
    );
    registry.register(
        "tidings_rate_limited",
        "Requests refused with 429 by a rate limit, by the limit's scope",
        state.metrics.rate_limited.clone(),
    );
    let (indexed, index_bytes) = state.related.size();
    let related_items = Gauge::<i64>::default();
    related_items.set(i64::try_from(indexed).unwrap_or(i64::MAX));
    registry.register(
        "tidings_related_index_items",
        "Items in the related-items index this server holds in memory",
        related_items,
    );
    let related_bytes = Gauge::<i64>::default();
    related_bytes.set(i64::try_from(index_bytes).unwrap_or(i64::MAX));
    registry.register(
        "tidings_related_index_bytes",
        "Memory of the related-items index, by its own count",
        related_bytes,
    );
    encode(&registry)
}
