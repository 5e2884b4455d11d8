//! The tidings HTTP server: health and readiness, the REST API under `/api/v1` with its
//! OpenAPI document, and the web UI as it arrives.

#![warn(missing_docs)]

pub mod api;
pub mod health;
pub mod middleware;
pub mod password;
pub mod ratelimit;
pub mod setup;
pub mod ui;

use std::future::Future;
use std::net::SocketAddr;
use std::sync::Arc;
use std::time::Duration;

use axum::Router;
use axum::routing::get;
use tidings_fetch::IpNetwork;
use tidings_store::Store;
use tokio::net::TcpListener;
use tower_http::trace::TraceLayer;

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
    /// The rate limiters, shared by all requests of this process.
    pub limits: Arc<RateLimits>,
    /// Fetches feeds for subscribing, manual refreshes and the like, through the guarded
    /// client.
    pub fetcher: tidings_worker::Fetcher,
    /// A password hash to verify against when a sign-in names an unknown user, so that the
    /// answer takes as long as for a known one.
    pub decoy_hash: Arc<String>,
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
        AppState {
            store,
            config: Arc::new(config),
            limits: Arc::new(RateLimits::standard()),
            fetcher,
            decoy_hash: Arc::new(decoy),
        }
    }
}

/// The application's routes: health, the API and its OpenAPI document.
pub fn router(state: AppState) -> Router {
    let (api, _) = api::router().split_for_parts();
    Router::new()
        .route("/healthz", get(health::healthz))
        .route("/readyz", get(health::readyz))
        .nest("/api/v1", api)
        .merge(ui::router())
        .layer(axum::middleware::from_fn_with_state(
            state.clone(),
            middleware::protect,
        ))
        .layer(middleware::cors(&state.config))
        .layer(axum::middleware::from_fn(middleware::security_headers))
        .layer(TraceLayer::new_for_http())
        .with_state(state)
}

/// Serves the application on `listener` until `shutdown` completes, then finishes the requests
/// in flight.
pub async fn serve(
    listener: TcpListener,
    state: AppState,
    shutdown: impl Future<Output = ()> + Send + 'static,
) -> std::io::Result<()> {
    axum::serve(
        listener,
        router(state).into_make_service_with_connect_info::<SocketAddr>(),
    )
    .with_graceful_shutdown(shutdown)
    .await
}
