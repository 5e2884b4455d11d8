//! The tidings fetch worker (F3, F8, F10–F17, F37): the background half of the product.
//!
//! - [`Worker::run`] claims due feeds with a lease (several workers, in one process or many,
//!   never fetch a feed twice at once), fetches them with bounded parallelism under a
//!   per-host rate, concurrency cap and slow budget ([`tidings_fetch::HostLimiter`]), and
//!   runs the daily retention job once a day across all workers.
//! - [`Fetcher`] is the worker's shared context: the store, the SSRF-guarded client of
//!   `tidings-fetch`, the per-host limiter, the sanitizer, the metrics and the settings, which
//!   the round and every job stand on.
//! - [`round`] is one feed's round: conditional GET, a 304 or an identical body skips parsing,
//!   otherwise parse and sanitize with `tidings-feed` ([`parse`]) and upsert the items; the
//!   outcome goes through the scheduling policy into the store; permanent redirects move (and
//!   merge) the feed; the raw body is kept compressed; the favicon is refreshed monthly.
//!   [`Fetcher::refresh_feed`] is the manual refresh ([`refresh`]), and
//!   [`Fetcher::reparse_feed`] re-derives a feed's items from its kept body without fetching
//!   ([`reparse`]).
//! - [`discovery`] finds feeds behind a page URL over the network and subscribes with a first
//!   fetch ([`subscribe_with_discovery`]); [`opml`] imports and exports subscriptions.
//! - [`full_text`] fetches the article pages of items whose feed gives only a teaser (F6), as
//!   an [`EnrichmentJob`] beside the fetching, with its own queue and parallelism.
//! - [`popularity`] fetches how many people bookmarked items' links (F40) from a count source
//!   (Hatena Bookmark) in paced batches, as another [`EnrichmentJob`].
//! - [`scraping`] previews, subscribes to and reconfigures scraped sources (F7): pages without
//!   a feed, read by `tidings-scrape` in the same fetch round.
//! - [`tagging`] finds the keyphrases of new and changed items (F41) with `tidings-tags`, as
//!   an [`EnrichmentJob`] with its own queue, and queues older items by a resumable backfill.
//! - [`websub`] subscribes feeds that advertise a WebSub hub (F18), renews and ends those
//!   subscriptions as another [`EnrichmentJob`], and takes the hub's verifications and pushes
//!   for the server's callback.
//! - [`notifications`] matches new items to users' webhook channels (Discord, Slack, generic
//!   JSON; F43) and sends them from a queue, paced per channel with a circuit breaker, as an
//!   [`EnrichmentJob`].
//! - [`embedding`] makes the vectors of new and older items for related items (F44), locally
//!   or through an OpenAI-compatible `/embeddings` endpoint, as an [`EnrichmentJob`] with its
//!   own queue, back-off and pause on provider failures.
//! - [`summaries`] summarizes items (F42) with the built-in extractive summarizer or a remote
//!   model (OpenAI-compatible, Anthropic), as an [`EnrichmentJob`] with its own queue,
//!   retries, circuit breaker and daily budget; [`Summarizer::request`] is the reader's
//!   "Summarize".
//! - [`WorkerMetrics`] counts every outcome and renders them for Prometheus.
//!
//! ```no_run
//! use tidings_fetch::{ClientConfig, GuardedClient};
//! use tidings_worker::{Fetcher, Worker, WorkerConfig};
//!
//! # async fn run(store: tidings_store::Store) -> Result<(), Box<dyn std::error::Error>> {
//! let client = GuardedClient::new(ClientConfig::default())?;
//! let fetcher = Fetcher::new(store, client, WorkerConfig::default());
//! let metrics = fetcher.metrics().clone(); // render with metrics.render_prometheus()
//! Worker::new(fetcher).run(async { let _ = tokio::signal::ctrl_c().await; }).await;
//! # drop(metrics);
//! # Ok(())
//! # }
//! ```

#![warn(missing_docs)]

pub mod body;
pub mod config;
pub mod discovery;
pub mod embedding;
pub mod enrich;
pub mod favicon;
pub mod fetcher;
pub mod full_text;
mod hub;
pub mod import;
pub mod import_job;
pub mod metrics;
pub mod notifications;
pub mod opml;
pub mod parse;
pub mod popularity;
pub mod refresh;
pub mod reparse;
pub mod round;
pub mod scraping;
pub mod search_index;
pub mod summaries;
pub mod tagging;
pub mod translations;
pub mod websub;
pub mod worker;

pub use config::WorkerConfig;
pub use discovery::{
    DiscoverError, ResolvedFeed, SubscribeError, SubscribeRequest, Subscribed, discover_feeds,
    parse_user_url, resolve_feed, subscribe_with_discovery, user_url_attempts,
};
pub use embedding::{EmbeddingJob, EmbeddingsConfig, EmbeddingsProvider, OpenAiEmbeddings};
pub use enrich::{EnrichmentJob, drain_enrichment, run_enrichment};
pub use fetcher::Fetcher;
pub use full_text::{FoundArticle, FullTextJob, LoadError, PageError};
pub use import::{
    GReaderClient, HISTORY_JOB_KIND, History, HistoryError, HistoryFeed, HistoryInput, HistoryItem,
    HistoryOptions, HistoryReport, HistoryRule, HistorySource, KindReport, MinifluxClient,
    ProgressSink, apply_history, job_source_parts, read_history_file, start_history_import,
};
pub use import_job::{JobProgress, JobReport, MAX_RUNNING_IMPORTS, StartedJob, spawn_import_job};
pub use metrics::{FetchResult, MetricsSnapshot, WorkerMetrics};
pub use notifications::{NotificationConfig, NotificationJob, Notifier, TestOutcome};
pub use opml::{
    ImportEntry, ImportError, ImportOptions, ImportReport, ImportStatus, OPML_JOB_KIND,
    OPML_NAMESPACE, OpmlDocument, OpmlError, OpmlFeed, OpmlJobSummary, OpmlSettings, build_opml,
    export_opml, import_opml, import_opml_document, import_opml_with_progress, parse_opml,
    start_opml_import,
};
pub use popularity::{
    CountError, CountSource, HatenaBookmarks, PopularityConfig, PopularityJob, PopularitySource,
};
pub use refresh::{CheckFailure, RefreshError};
pub use reparse::{ReparseError, ReparseReport};
pub use round::FeedReport;
pub use scraping::{
    ScrapePreview, ScrapeSourceError, ScrapedSource, ScrapedSourceRequest, preview_scraped,
    reconfigure_scraped, subscribe_scraped,
};
pub use search_index::{backfill_arrival_dates, backfill_languages, backfill_search_index};
pub use summaries::{Requested, Summarizer, SummaryConfig, SummaryJob};
pub use tagging::TaggingJob;
pub use translations::{TranslateConfig, TranslateError, TranslationJob, Translator};
pub use websub::{PushOutcome, VerifyAnswer, WebSubConfig, WebSubJob};
pub use worker::{AGE_RULES_JOB, RETENTION_JOB, RetentionReport, Worker, run_retention};
