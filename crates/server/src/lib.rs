//! The tidings HTTP server: health and readiness, the REST API under `/api/v1` with its
//! OpenAPI document, the web UI, and the WebSub callback (F18).

#![warn(missing_docs)]

pub mod api;
pub mod health;
pub mod media;
pub mod metrics;
pub mod mfa;
pub mod middleware;
pub mod observe;
pub mod oidc;
pub mod password;
pub mod ratelimit;
pub mod related;
pub mod setup;
pub mod sync;
pub mod ui;
pub mod websub;

use std::future::Future;
use std::sync::Arc;
use std::time::Duration;

use axum::Router;
use axum::routing::get;
use tidings_fetch::IpNetwork;
use tidings_store::Store;
use tokio::net::TcpListener;
use tower_http::compression::CompressionLayer;
use tower_http::trace::{DefaultOnFailure, TraceLayer};

use crate::ratelimit::RateLimits;

/// Settings of the HTTP server.
#[derive(Debug, Clone)]
pub struct ServerConfig {
    /// The URL people reach the server at; its origin is the one state-changing browser
    /// requests must come from, and an `https` scheme makes cookies `Secure`.
    pub base_url: url::Url,
    /// Origins allowed to call the API from other sites (CORS); none by default.
    pub cors_origins: Vec<String>,
    /// Proxies whose `X-Forwarded-For` / `X-Forwarded-Proto` are believed.
    pub trusted_proxies: Vec<IpNetwork>,
    /// A session unused this long ends.
    pub session_idle: Duration,
    /// A session ends this long after sign-in whatever happens.
    pub session_lifetime: Duration,
    /// Subscriptions a user may have (F29).
    pub max_subscriptions: i64,
    /// Requests a minute one user's apps may make to the sync APIs (600 by default: an
    /// app's first sync pages through everything; an installation whose users have large
    /// accounts or several apps each may want more).
    pub sync_requests_per_minute: u32,
    /// The opt-in media proxy for items' images (off by default).
    pub media_proxy: media::MediaProxy,
    /// Who may read `/metrics` (loopback only by default).
    pub metrics_access: metrics::MetricsAccess,
    /// Whether link clicks, tag page views and searches are counted per day (F45); on by
    /// default.
    pub usage_counts: bool,
    /// The days the worker keeps usage counts for (shown to administrators with them).
    pub usage_retention_days: u32,
    /// The OpenID Connect provider people may sign in with (F22); none by default.
    pub oidc: Option<oidc::OidcConfig>,
}

impl ServerConfig {
    /// The defaults for a server reached at `base_url`.
    pub fn new(base_url: url::Url) -> ServerConfig {
        ServerConfig {
            base_url,
            cors_origins: Vec::new(),
            trusted_proxies: Vec::new(),
            session_idle: Duration::from_secs(14 * 24 * 3600),
            session_lifetime: Duration::from_secs(60 * 24 * 3600),
            max_subscriptions: 100,
            sync_requests_per_minute: ratelimit::DEFAULT_SYNC_REQUESTS_PER_MINUTE,
            media_proxy: media::MediaProxy::default(),
            metrics_access: metrics::MetricsAccess::default(),
            usage_counts: true,
            usage_retention_days: tidings_worker::config::DEFAULT_USAGE_RETENTION_DAYS,
            oidc: None,
        }
    }
}

/// What every request handler can reach.
#[derive(Clone)]
pub struct AppState {
    /// The database.
    pub store: Store,
    /// The server's settings.
    pub config: Arc<ServerConfig>,
    /// The rate limiters: in the database on PostgreSQL (shared by every replica), in this
    /// process's memory on SQLite.
    pub limits: Arc<RateLimits>,
    /// Fetches feeds for subscribing, manual refreshes and the like, through the guarded
    /// client.
    pub fetcher: tidings_worker::Fetcher,
    /// A password hash to verify against when a sign-in names an unknown user, so that the
    /// answer takes as long as for a known one.
    pub decoy_hash: Arc<String>,
    /// The server's own series for `/metrics` (the worker's are in `fetcher`).
    pub metrics: Arc<metrics::ServerMetrics>,
    /// The OpenID Connect provider, with its discovery document and keys cached, when one
    /// is configured.
    pub oidc: Option<Arc<oidc::Provider>>,
    /// Related items (F44): the in-memory index of the stored vectors' codes.
    pub related: Arc<related::RelatedItems>,
}

impl std::fmt::Debug for AppState {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("AppState")
            .field("store", &self.store)
            .field("config", &self.config)
            .finish()
    }
}

impl AppState {
    /// State for a server on `store` with `config`, fetching through `fetcher`.
    pub fn new(store: Store, config: ServerConfig, fetcher: tidings_worker::Fetcher) -> AppState {
        let decoy = password::hash_password("decoy password that never matches")
            .unwrap_or_else(|_| String::from("$argon2id$v=19$m=19456,t=2,p=1$ZGVjb3k$ZGVjb3k"));
        // Building the provider's client only fails when TLS cannot be set up at all, which
        // every other client of the process would meet first; sign-in then says it is off.
        let oidc = config.oidc.clone().and_then(|settings| {
            oidc::Provider::new(settings)
                .inspect_err(|error| tracing::error!(%error, "OpenID Connect is unavailable"))
                .ok()
                .map(Arc::new)
        });
        AppState {
            oidc,
            limits: Arc::new(
                RateLimits::for_store(&store).with_sync_per_minute(config.sync_requests_per_minute),
            ),
            store,
            config: Arc::new(config),
            fetcher,
            decoy_hash: Arc::new(decoy),
            metrics: Arc::new(metrics::ServerMetrics::default()),
            related: Arc::new(related::RelatedItems::new()),
        }
    }
}

/// The application's routes: health, the API and its OpenAPI document.
pub fn router(state: AppState) -> Router {
    use tower::ServiceExt;
    // A sync API's path asked for with a doubled slash (a server address typed with a trailing
    // slash) is routed as the path with one slash: the rewrite has to come before routing,
    // which a layer of the router below would not.
    Router::new().fallback_service(routes(state).map_request(sync::with_single_slash))
}

/// The routes of [`router`], and every layer.
fn routes(state: AppState) -> Router {
    let (api, _) = api::router().split_for_parts();
    Router::new()
        .route("/healthz", get(health::healthz))
        .route("/readyz", get(health::readyz))
        .route("/media", get(media::serve_media))
        .route("/metrics", get(metrics::serve_metrics))
        .nest("/api/v1", api)
        .merge(sync::router())
        .merge(oidc::routes::router())
        .merge(ui::router())
        .merge(websub::router())
        .layer(axum::middleware::from_fn_with_state(
            state.clone(),
            middleware::protect,
        ))
        .layer(middleware::cors(&state.config))
        .layer(axum::middleware::from_fn_with_state(
            state.clone(),
            middleware::security_headers,
        ))
        // Outside `protect`, so that its refusals too reach a client still sending a large body.
        .layer(axum::middleware::from_fn(middleware::receive_large_bodies))
        // gzip or brotli, as the client accepts; images and tiny bodies are left as they are.
        .layer(CompressionLayer::new())
        // Outside the others, so the count and the log line see every answer (a 429 or 403 of
        // `protect` too). A layer of the router still sees the matched route template.
        .layer(axum::middleware::from_fn_with_state(
            state.clone(),
            observe::observe,
        ))
        // Failures are logged once, where they happen and with their cause (ApiError::internal,
        // the sync APIs, the readiness check); the trace layer's own line for a 5xx answer would
        // repeat it, so it is at debug level with the rest of the request trace.
        .layer(
            TraceLayer::new_for_http()
                // The path only: a query string can hold a password or a key (ClientLogin's
                // Passwd, Fever's api_key), and the default span would log the whole URI.
                .make_span_with(|request: &axum::http::Request<axum::body::Body>| {
                    tracing::debug_span!(
                        "request",
                        method = %request.method(),
                        path = %request.uri().path(),
                    )
                })
                .on_failure(DefaultOnFailure::new().level(tracing::Level::DEBUG)),
        )
        .with_state(state)
}

/// How long a client may take to send a request's head (line and headers) before the
/// connection is closed; without it, a client that never ends its headers held a connection
/// (and the server's attention) for ever.
pub const HEADER_READ_TIMEOUT: Duration = Duration::from_secs(10);

/// How long requests in flight get to finish once the server is told to stop; connections
/// still open then are closed. Within the 10 s container runtimes wait before killing.
pub const SHUTDOWN_GRACE: Duration = Duration::from_secs(5);

/// Serves the application on `listener` until `shutdown` completes, then stops accepting and
/// lets the requests in flight finish within [`SHUTDOWN_GRACE`].
pub async fn serve(
    listener: TcpListener,
    state: AppState,
    shutdown: impl Future<Output = ()> + Send + 'static,
) -> std::io::Result<()> {
    state.related.warm_up(state.store.clone());
    serve_router(listener, router(state), shutdown).await
}

/// Serves any router on `listener` as [`serve`] does (the header-read timeout, HTTP/1 and
/// HTTP/2, the peer address as `ConnectInfo<SocketAddr>`) until `shutdown` completes: for
/// the application, and for the `/metrics` listener of `tidings worker`.
pub async fn serve_router(
    listener: TcpListener,
    app: Router,
    shutdown: impl Future<Output = ()> + Send + 'static,
) -> std::io::Result<()> {
    use hyper_util::rt::{TokioExecutor, TokioIo, TokioTimer};
    use tower::ServiceExt;

    let mut builder = hyper_util::server::conn::auto::Builder::new(TokioExecutor::new());
    builder
        .http1()
        .timer(TokioTimer::new())
        .header_read_timeout(HEADER_READ_TIMEOUT);
    builder.http2().timer(TokioTimer::new());
    let graceful = hyper_util::server::graceful::GracefulShutdown::new();
    let mut shutdown = std::pin::pin!(shutdown);
    loop {
        let (stream, peer) = tokio::select! {
            accepted = listener.accept() => match accepted {
                Ok(accepted) => accepted,
                Err(error) => {
                    // Out of file descriptors and the like: wait instead of spinning.
                    tracing::warn!(%error, "accepting a connection failed");
                    tokio::time::sleep(Duration::from_millis(100)).await;
                    continue;
                }
            },
            () = &mut shutdown => break,
        };
        let _ = stream.set_nodelay(true);
        let app = app.clone();
        let service = hyper::service::service_fn(
            move |mut request: axum::http::Request<hyper::body::Incoming>| {
                request
                    .extensions_mut()
                    .insert(axum::extract::ConnectInfo(peer));
                app.clone().oneshot(request.map(axum::body::Body::new))
            },
        );
        let connection = builder
            .serve_connection_with_upgrades(TokioIo::new(stream), service)
            .into_owned();
        let connection = graceful.watch(connection);
        tokio::spawn(async move {
            if let Err(error) = connection.await {
                tracing::debug!(%error, %peer, "connection ended with an error");
            }
        });
    }
    drop(listener);
    if tokio::time::timeout(SHUTDOWN_GRACE, graceful.shutdown())
        .await
        .is_err()
    {
        tracing::warn!(
            "requests still in flight {} s after the stop were cut off",
            SHUTDOWN_GRACE.as_secs()
        );
    }
    Ok(())
}
