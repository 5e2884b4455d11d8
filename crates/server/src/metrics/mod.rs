//! `GET /metrics` (F62): the Prometheus text format of the fetch worker's counters, the API's
//! requests, rate-limit refusals, the fetch schedule and the database pools, for operators only;
//! and the same without the API's series for `tidings worker` processes ([`worker_router`]).
//!
//! Encoded with `prometheus-client`, the Prometheus project's own client for Rust: it has no
//! global registry (several servers in one test process each keep their own series) and it
//! writes the classic text format, so names, label escaping, `_total` suffixes and histogram
//! buckets are right by construction rather than by hand.

pub mod route;

use std::net::{IpAddr, SocketAddr};
use std::sync::Arc;
use std::time::Duration;

use axum::extract::{ConnectInfo, State};
use axum::http::{HeaderMap, StatusCode, header};
use axum::response::{IntoResponse, Response};
use prometheus_client::encoding::prometheus_text;
use prometheus_client::metrics::counter::Counter;
use prometheus_client::metrics::family::Family;
use prometheus_client::metrics::gauge::Gauge;
use prometheus_client::metrics::histogram::Histogram;
use prometheus_client::registry::Registry;
use sha2::{Digest, Sha256};
use tidings_fetch::IpNetwork;
use tidings_worker::WorkerMetrics;

/// Upper bounds of the API request-latency histogram's buckets, in seconds.
pub const REQUEST_BUCKETS: [f64; 12] = [
    0.001, 0.0025, 0.005, 0.01, 0.025, 0.05, 0.1, 0.25, 0.5, 1.0, 2.5, 10.0,
];

/// The route label of a request that matched no route (the raw path is never a label: it
/// would make one series per URL anyone sends).
pub const UNMATCHED_ROUTE: &str = "unmatched";

/// Labels of one API request series: the route template, the method and the status.
type RequestLabels = [(&'static str, String); 3];
/// One label.
type OneLabel = [(&'static str, String); 1];

/// The server's own series. Shared (`Arc`) by every request of the process.
#[derive(Debug)]
pub struct ServerMetrics {
    requests: Family<RequestLabels, Histogram, fn() -> Histogram>,
    rate_limited: Family<OneLabel, Counter>,
}

impl Default for ServerMetrics {
    fn default() -> Self {
        fn histogram() -> Histogram {
            Histogram::new(REQUEST_BUCKETS)
        }
        ServerMetrics {
            requests: Family::new_with_constructor(histogram),
            rate_limited: Family::default(),
        }
    }
}

impl ServerMetrics {
    /// Counts one answered request under its route template (`/api/v1/feeds/{id}`), method
    /// and status, and a 429 under the limiter's scope.
    pub fn record_request(
        &self,
        route: &str,
        method: &str,
        status: StatusCode,
        elapsed: Duration,
        rate_scope: Option<&str>,
    ) {
        self.requests
            .get_or_create(&[
                ("route", route.to_owned()),
                ("method", method.to_owned()),
                ("status", status.as_u16().to_string()),
            ])
            .observe(elapsed.as_secs_f64());
        if status == StatusCode::TOO_MANY_REQUESTS {
            self.rate_limited
                .get_or_create(&[("scope", rate_scope.unwrap_or("unknown").to_owned())])
                .inc();
        }
    }
}

/// Who may read `/metrics`: clients from these networks, or anyone with the token.
#[derive(Clone)]
pub struct MetricsAccess {
    /// Networks whose clients are let in (after trusted proxies are resolved).
    pub allowed_networks: Vec<IpNetwork>,
    /// The SHA-256 of the bearer token that lets anyone in; `None` for no token.
    token_sha256: Option<[u8; 32]>,
}

impl std::fmt::Debug for MetricsAccess {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("MetricsAccess")
            .field("allowed_networks", &self.allowed_networks)
            .field("token", &self.token_sha256.map(|_| "(hidden)"))
            .finish()
    }
}

impl Default for MetricsAccess {
    /// Loopback only, no token.
    fn default() -> Self {
        MetricsAccess::new(MetricsAccess::loopback(), None)
    }
}

impl MetricsAccess {
    /// Access from `allowed_networks`, or with `token` (an empty token counts as none).
    pub fn new(allowed_networks: Vec<IpNetwork>, token: Option<&str>) -> MetricsAccess {
        MetricsAccess {
            allowed_networks,
            token_sha256: token
                .map(str::trim)
                .filter(|token| !token.is_empty())
                .map(|token| Sha256::digest(token.as_bytes()).into()),
        }
    }

    /// 127.0.0.0/8 and ::1: the default networks.
    pub fn loopback() -> Vec<IpNetwork> {
        [
            (IpAddr::from([127, 0, 0, 0]), 8),
            (IpAddr::from(std::net::Ipv6Addr::LOCALHOST), 128),
        ]
        .into_iter()
        .filter_map(|(address, prefix)| IpNetwork::new(address, prefix))
        .collect()
    }

    /// Whether a request from `client` with these headers may read the metrics.
    pub fn allows(&self, client: Option<IpAddr>, headers: &HeaderMap) -> bool {
        // IPv4 clients of a dual-stack listener arrive as ::ffff:a.b.c.d.
        let client = client.map(|ip| ip.to_canonical());
        if client.is_some_and(|ip| self.allowed_networks.iter().any(|net| net.contains(ip))) {
            return true;
        }
        let Some(expected) = self.token_sha256 else {
            return false;
        };
        let presented = headers
            .get(header::AUTHORIZATION)
            .and_then(|value| value.to_str().ok())
            .and_then(|value| value.strip_prefix("Bearer "))
            .map(str::trim);
        // Comparing digests takes the same time whatever the prefix the two share.
        presented.is_some_and(|token| {
            let digest: [u8; 32] = Sha256::digest(token.as_bytes()).into();
            digest
                .iter()
                .zip(expected)
                .fold(0u8, |diff, (a, b)| diff | (a ^ b))
                == 0
        })
    }
}

/// The answer to a client that may not read the metrics.
fn forbidden() -> Response {
    (
        StatusCode::FORBIDDEN,
        [(header::CONTENT_TYPE, "text/plain; charset=utf-8")],
        "403 Forbidden: /metrics is open only to TIDINGS_METRICS_ALLOWED_NETWORKS \
         (loopback by default) or with Authorization: Bearer TIDINGS_METRICS_TOKEN.\n",
    )
        .into_response()
}

/// What the `/metrics` of a `tidings worker` process reads: its database, its fetch counters
/// and who may scrape it.
#[derive(Clone)]
struct WorkerMetricsState {
    store: tidings_store::Store,
    fetches: Arc<WorkerMetrics>,
    access: Arc<MetricsAccess>,
}

/// The HTTP routes of a `tidings worker` process, which serves no API: `GET /metrics` with the
/// fetch series, the feed and queue gauges and the pool gauges (the API's request and
/// rate-limit series belong to `tidings serve`), under the same access rule as the server's.
/// No proxy is expected in front of it, so the client is the connection's peer address: serve
/// it with [`crate::serve_router`], which provides it.
pub fn worker_router(
    store: tidings_store::Store,
    fetches: Arc<WorkerMetrics>,
    access: MetricsAccess,
) -> axum::Router {
    axum::Router::new()
        .route("/metrics", axum::routing::get(serve_worker_metrics))
        .with_state(WorkerMetricsState {
            store,
            fetches,
            access: Arc::new(access),
        })
}

/// `GET /metrics` of a worker process.
async fn serve_worker_metrics(
    State(state): State<WorkerMetricsState>,
    ConnectInfo(peer): ConnectInfo<SocketAddr>,
    headers: HeaderMap,
) -> Response {
    if !state.access.allows(Some(peer.ip()), &headers) {
        return forbidden();
    }
    encode(&process_registry(&state.store, &state.fetches).await)
}

/// The series of any process that fetches or could: the fetch counters, the fetch schedule's
/// gauges (read from the database at each scrape) and the database pools.
async fn process_registry(store: &tidings_store::Store, fetches: &Arc<WorkerMetrics>) -> Registry {
    let mut registry = Registry::default();
    registry.register_collector(fetches.collector());
    let database_up = Gauge::<i64>::default();
    registry.register(
        "tidings_database_up",
        "1 when tidings_feeds and tidings_fetch_queue_depth could be read from the database, 0 otherwise",
        database_up.clone(),
    );
    match store.fetch_queue(tidings_store::unix_now()).await {
        Ok(queue) => {
            database_up.set(1);
            let by_status = Family::<OneLabel, Gauge>::default();
            for (status, count) in &queue.feeds_by_status {
                by_status
                    .get_or_create(&[("status", status.clone())])
                    .set(*count);
            }
            registry.register(
                "tidings_feeds",
                "Feeds by fetch status (active, backoff, stopped)",
                by_status,
            );
            let due = Gauge::<i64>::default();
            due.set(queue.due_unclaimed);
            registry.register(
                "tidings_fetch_queue_depth",
                "Feeds due now that no worker has claimed yet",
                due,
            );
        }
        Err(error) => tracing::warn!(%error, "metrics: the fetch schedule could not be read"),
    }
    let in_use = Family::<[(&'static str, String); 2], Gauge>::default();
    let max = Family::<OneLabel, Gauge>::default();
    for pool in store.pool_use() {
        let busy = pool.open.saturating_sub(pool.idle);
        for (kind, value) in [("in_use", busy), ("idle", pool.idle)] {
            in_use
                .get_or_create(&[("pool", pool.pool.to_owned()), ("state", kind.to_owned())])
                .set(i64::from(value));
        }
        max.get_or_create(&[("pool", pool.pool.to_owned())])
            .set(i64::from(pool.max));
    }
    registry.register(
        "tidings_db_pool_connections",
        "Open database connections by pool and state (in_use, idle)",
        in_use,
    );
    registry.register(
        "tidings_db_pool_max_connections",
        "The most connections each pool opens",
        max,
    );
    registry
}

/// The registry in the text format, as the answer to a scrape.
fn encode(registry: &Registry) -> Response {
    let mut text = String::new();
    if let Err(error) = prometheus_text::encode(&mut text, registry) {
        tracing::error!(%error, "metrics: encoding failed");
        return StatusCode::INTERNAL_SERVER_ERROR.into_response();
    }
    (
        [(header::CONTENT_TYPE, prometheus_text::CONTENT_TYPE)],
        text,
    )
        .into_response()
}
