//! The worker's shared context: [`Fetcher`] holds what every part of the worker shares (the
//! store, the guarded HTTP client, the per-host limiter, the fetch slots, the sanitizer, the
//! metrics, the settings, the summary service and the wake-ups of the background jobs).
//!
//! What is done with it lives beside it, each standing on this module: one feed's round in
//! [`crate::round`], manual and bulk refreshes in [`crate::refresh`], reading a fetched body in
//! [`crate::parse`], and the background jobs in their own modules.

use std::fmt;
use std::sync::Arc;

use tidings_feed::Sanitizer;
use tidings_fetch::{GuardedClient, HostLimiter};
use tidings_store::Store;
use tokio::sync::Semaphore;

use crate::config::WorkerConfig;
use crate::favicon::FaviconQueue;
use crate::metrics::WorkerMetrics;
use crate::summaries::Summarizer;
use crate::translations::Translator;

/// Fetches feeds and stores what they say. Cheap to clone; clones share the HTTP client, the
/// per-host limiter, the sanitizer and the metrics.
#[derive(Clone)]
pub struct Fetcher {
    pub(crate) inner: Arc<Inner>,
}

/// The shared parts, for the modules of the worker that do the work.
pub(crate) struct Inner {
    pub(crate) store: Store,
    pub(crate) client: GuardedClient,
    pub(crate) limiter: HostLimiter,
    /// Feeds in their round (fetch, parse, store) at once: the worker's concurrency. Taken
    /// after the host's permit, so feeds waiting for a busy host hold none.
    pub(crate) slots: Arc<Semaphore>,
    /// Requests still waiting on their server after the slow threshold, which gave their slot
    /// to another feed meanwhile: as many as there are slots (see [`Fetcher::fetch`]).
    pub(crate) slow_slots: Arc<Semaphore>,
    /// Parses (and sanitizes) running at once on the blocking pool: one per core (see
    /// [`Fetcher::on_parse_turn`]).
    pub(crate) parses: Semaphore,
    /// Parsed feeds being stored at once: one per core on SQLite, two on PostgreSQL (see
    /// [`Fetcher::store_turn`]).
    pub(crate) stores: Semaphore,
    pub(crate) favicons: FaviconQueue,
    pub(crate) sanitizer: Arc<Sanitizer>,
    pub(crate) metrics: Arc<WorkerMetrics>,
    pub(crate) config: WorkerConfig,
    /// Wakes the full-text job when a fetch queued items (F6).
    pub(crate) full_text_wakeup: Arc<tokio::sync::Notify>,
    /// Wakes the tagging job when a fetch stored new or changed items (F41).
    pub(crate) tags_wakeup: Arc<tokio::sync::Notify>,
    /// Wakes the WebSub subscriber when a fetch found a new hub or topic (F18).
    pub(crate) websub_wakeup: Arc<tokio::sync::Notify>,
    /// The summary service (F42), shared by the worker's summary job and the API.
    pub(crate) summarizer: Arc<Summarizer>,
    /// The translation service (issue 37), shared by the worker's translation job and the API.
    pub(crate) translator: Arc<Translator>,
}

impl fmt::Debug for Fetcher {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("Fetcher")
            .field("owner", &self.inner.config.owner)
            .finish_non_exhaustive()
    }
}

impl Fetcher {
    /// A fetcher storing into `store`, fetching through `client`.
    pub fn new(store: Store, client: GuardedClient, config: WorkerConfig) -> Fetcher {
        Fetcher::with_metrics(store, client, config, Arc::new(WorkerMetrics::default()))
    }

    /// Like [`Fetcher::new`], counting into existing metrics (shared with a server).
    pub fn with_metrics(
        store: Store,
        client: GuardedClient,
        config: WorkerConfig,
        metrics: Arc<WorkerMetrics>,
    ) -> Fetcher {
        let summarizer = Arc::new(Summarizer::new(
            store.clone(),
            config.summary.clone(),
            config.owner.clone(),
            config.lease,
        ));
        let sanitizer = Arc::new(Sanitizer::new(config.sanitize));
        let translator = Arc::new(Translator::new(
            store.clone(),
            config.translate.clone(),
            Arc::clone(&sanitizer),
            config.owner.clone(),
            config.lease,
        ));
        Fetcher {
            inner: Arc::new(Inner {
                summarizer,
                translator,
                limiter: HostLimiter::new(config.per_host, None),
                slots: Arc::new(Semaphore::new(config.concurrency.max(1))),
                slow_slots: Arc::new(Semaphore::new(config.concurrency.max(1))),
                parses: Semaphore::new(cores()),
                stores: Semaphore::new(store_turns(store.engine())),
                favicons: FaviconQueue::default(),
                sanitizer,
                store,
                client,
                metrics,
                config,
                full_text_wakeup: Arc::default(),
                tags_wakeup: Arc::default(),
                websub_wakeup: Arc::default(),
            }),
        }
    }

    /// Runs `work` (a parse, a sanitize) on the blocking pool when a core is free for it: at
    /// most one such work per core at once. Parsing is CPU work, so more at once would not end
    /// sooner, but each would hold its body and its half-built feed meanwhile, and a blocking
    /// thread of its own: an OPML import checks 40 feeds at once, and with every check's parse
    /// running at once the server's memory depended on how fast the machine let them end
    /// (issue 32). `Err` when `work` panicked.
    pub(crate) async fn on_parse_turn<T: Send + 'static>(
        &self,
        work: impl FnOnce() -> T + Send + 'static,
    ) -> Result<T, tokio::task::JoinError> {
        // Never closed, so this always yields a turn.
        let _turn = self.inner.parses.acquire().await.ok();
        tokio::task::spawn_blocking(work).await
    }

    /// A turn to store a parsed feed's items, a few at once ([`store_turns`]): preparing them (each
    /// item's search index and the tokens its subscribers' rules read, many small
    /// allocations) is CPU work, and SQLite writes one feed at a time anyway; without turns
    /// every fetch slot's feed held its prepared items while it waited for the writer (or for
    /// PostgreSQL), which is what made an OPML import's peak depend on the machine's load
    /// (issue 32). Held while the feed is stored.
    pub(crate) async fn store_turn(&self) -> Option<tokio::sync::SemaphorePermit<'_>> {
        // Never closed, so this always yields a turn.
        self.inner.stores.acquire().await.ok()
    }

    /// The store.
    pub fn store(&self) -> &Store {
        &self.inner.store
    }

    /// The guarded HTTP client.
    pub fn client(&self) -> &GuardedClient {
        &self.inner.client
    }

    /// The counters of every fetch this fetcher made.
    pub fn metrics(&self) -> &Arc<WorkerMetrics> {
        &self.inner.metrics
    }

    /// The settings.
    pub fn config(&self) -> &WorkerConfig {
        &self.inner.config
    }

    /// The per-host limiter every request of this fetcher waits for.
    pub(crate) fn limiter(&self) -> &HostLimiter {
        &self.inner.limiter
    }

    /// The HTML sanitizer, shared with blocking tasks (and with the server's mail delivery,
    /// which sanitizes newsletters as feed content).
    pub fn sanitizer(&self) -> Arc<Sanitizer> {
        Arc::clone(&self.inner.sanitizer)
    }

    /// What wakes the full-text job when this process queues items (F6).
    pub(crate) fn full_text_wakeup(&self) -> Arc<tokio::sync::Notify> {
        Arc::clone(&self.inner.full_text_wakeup)
    }

    /// The summary service (F42).
    pub fn summarizer(&self) -> &Arc<Summarizer> {
        &self.inner.summarizer
    }

    /// The translation service (issue 37).
    pub fn translator(&self) -> &Arc<Translator> {
        &self.inner.translator
    }

    /// What wakes the tagging job when this process stores new or changed items (F41).
    pub(crate) fn tags_wakeup(&self) -> Arc<tokio::sync::Notify> {
        Arc::clone(&self.inner.tags_wakeup)
    }

    /// What wakes the WebSub subscriber when this process finds a hub (F18).
    pub(crate) fn websub_wakeup(&self) -> Arc<tokio::sync::Notify> {
        Arc::clone(&self.inner.websub_wakeup)
    }
}

/// The cores this process may use: how many parses and stores run at once.
fn cores() -> usize {
    std::thread::available_parallelism().map_or(1, std::num::NonZero::get)
}

/// Feeds stored at once: one per core on SQLite, which writes one at a time anyway; two per
/// core on PostgreSQL, whose writes also wait on the server (its commit), so that a store
/// waiting there does not hold up the next feed's preparing (one per core took the OPML
/// import 2-4 s longer on a busy machine, issue 32).
fn store_turns(engine: tidings_store::Engine) -> usize {
    match engine {
        tidings_store::Engine::Sqlite => cores(),
        tidings_store::Engine::Postgres => 2 * cores(),
    }
}

/// A feed URL as logs show it: credentials hidden by the one redaction helper
/// ([`tidings_fetch::redact_url`]: `user:***@`, `?token=***`, webhook paths).
pub fn url_for_log(url: &str) -> String {
    tidings_fetch::redact_url(url)
}

#[cfg(test)]
mod tests {
    #[test]
    fn logged_urls_hide_passwords_and_query_values() {
        assert_eq!(
            super::url_for_log("https://ann:hunter2@example.com/feed?token=s3cret#x"),
            "https://ann:***@example.com/feed?token=***#x"
        );
        assert_eq!(
            super::url_for_log("https://example.com/feed"),
            "https://example.com/feed"
        );
    }
}
