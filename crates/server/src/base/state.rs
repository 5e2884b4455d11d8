//! What every request handler can reach: the database, the settings, the rate limiters, the
//! fetcher and the caches, built once when the server starts.

use std::sync::Arc;
use std::time::Duration;

use tidings_fetch::IpNetwork;
use tidings_store::Store;

use crate::ratelimit::{self, RateLimits};
use crate::{media, metrics, oidc, password, related};

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
    /// How long a client has to send a request's whole body once its head arrived
    /// ([`BODY_READ_TIMEOUT`](crate::base::inbound::BODY_READ_TIMEOUT) unless a test shortens
    /// it).
    pub body_read_timeout: Duration,
    /// Newsletters by email (issue 36): the domain, the inbound secret, the limits; off by
    /// default.
    pub mail: crate::mail::MailSettings,
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
            body_read_timeout: crate::base::inbound::BODY_READ_TIMEOUT,
            mail: crate::mail::MailSettings::default(),
        }
    }
}

/// What every request handler can reach: one reference to [`Shared`], so that a clone (every
/// layer and extractor takes one, several times a request) is one count, not one per field
/// (the store alone holds a dozen shared parts; their counts were 5 % of the server's CPU on
/// the sync API's most frequent call). Fields are read through it as its own; a change to
/// one (tests set their own limits) changes this clone's copy only, as it did when every
/// field was cloned.
#[derive(Clone)]
pub struct AppState(Arc<Shared>);

impl std::ops::Deref for AppState {
    type Target = Shared;

    fn deref(&self) -> &Shared {
        &self.0
    }
}

impl std::ops::DerefMut for AppState {
    fn deref_mut(&mut self) -> &mut Shared {
        Arc::make_mut(&mut self.0)
    }
}

/// The parts of [`AppState`].
#[derive(Clone)]
pub struct Shared {
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
        AppState(Arc::new(Shared {
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
        }))
    }
}
