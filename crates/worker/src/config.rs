//! The worker's settings.

use std::time::Duration;

use tidings_feed::SanitizeOptions;
use tidings_fetch::{HostLimits, PolicyConfig};

// The background jobs' settings live here, below the jobs: the jobs stand on the worker's
// context, which holds these settings.
pub mod embedding;
pub mod notifications;
pub mod popularity;
pub mod websub;

pub use embedding::{EmbeddingsConfig, EmbeddingsProvider};
pub use notifications::NotificationConfig;
pub use popularity::{PopularityConfig, PopularitySource};
pub use websub::WebSubConfig;

/// Feeds fetched at once by one worker, by default (F11).
pub const DEFAULT_CONCURRENCY: usize = 10;
/// Feeds claimed and waiting for their host per fetch slot: enough that feeds queued behind
/// a busy host leave work for the other slots, few enough to keep memory and leases small.
pub const IN_FLIGHT_PER_SLOT: usize = 4;
/// How often an idle worker looks for due feeds, by default.
pub const DEFAULT_POLL_INTERVAL: Duration = Duration::from_secs(30);
/// How long a claimed feed stays leased to its worker: long past the 10 s fetch timeout plus
/// parsing and storing, short enough that a crashed worker's feeds come back soon.
pub const DEFAULT_LEASE: Duration = Duration::from_secs(300);
/// Items tidings first stored more than this many days ago are deleted by retention (F17), by
/// default.
pub const DEFAULT_RETENTION_DAYS: u32 = 180;
/// Retention keeps this many of every feed's newest items whatever their age, by default, so
/// that a quiet feed always shows its latest items.
pub const DEFAULT_RETENTION_KEEP_PER_FEED: u32 = 50;
/// Usage counts (F45) of days more than this many days ago are deleted, by default.
pub const DEFAULT_USAGE_RETENTION_DAYS: u32 = 90;
/// Feeds nobody has followed for this many days are deleted (F17).
pub const DEFAULT_ORPHAN_DAYS: u32 = 7;
/// Favicons are fetched again after this long (F3: monthly).
pub const DEFAULT_FAVICON_MAX_AGE: Duration = Duration::from_secs(30 * 24 * 3600);
/// Article pages fetched at once per worker for full text (F6), by default.
pub const DEFAULT_FULL_TEXT_CONCURRENCY: usize = 4;
/// Items whose feed text is shorter than this many characters get their article page in the
/// `auto` mode (F6), by default.
pub const DEFAULT_FULL_TEXT_THRESHOLD: usize = 1500;
/// Article pages of one host (site) that the `auto` mode fetches in a UTC day, by default
/// (issue 38): enough for the feeds a person reads on a busy news site, far below a backlog.
pub const DEFAULT_FULL_TEXT_HOST_DAILY_PAGES: u32 = 200;
/// Tags an item gets at most (F41), by default.
pub const DEFAULT_TAGS_PER_ITEM: usize = tidings_tags::MAX_TAGS;
/// How often the daily jobs run.
pub const DAILY: Duration = Duration::from_secs(24 * 3600);

impl WorkerConfig {
    /// Feeds a worker keeps in progress at once, fetching or waiting for their host: the
    /// bound on its memory whatever the number of feeds.
    pub fn in_flight(&self) -> usize {
        self.concurrency.max(1) * IN_FLIGHT_PER_SLOT
    }
}

/// How a worker behaves. `Default` is the product's behaviour.
#[derive(Debug, Clone)]
pub struct WorkerConfig {
    /// The name this worker's leases carry; unique per process (see [`default_owner`]).
    pub owner: String,
    /// Feeds fetched at once.
    pub concurrency: usize,
    /// Politeness per host: rate, concurrency cap and slow budget (F11).
    pub per_host: HostLimits,
    /// How often an idle worker looks for due feeds (the scheduler's tick).
    pub poll_interval: Duration,
    /// How long a claim lasts.
    pub lease: Duration,
    /// The scheduling policy (F12, F14).
    pub policy: PolicyConfig,
    /// Items tidings first stored more than this many days ago are deleted; 0 disables item
    /// retention.
    pub retention_days: u32,
    /// The newest items of every feed that retention keeps whatever their age.
    pub retention_keep_per_feed: u32,
    /// Feeds without subscribers for this many days are deleted.
    pub orphan_days: u32,
    /// Usage counts (F45) are kept for the last this many days (today included) and deleted
    /// after; at least 1.
    pub usage_retention_days: u32,
    /// How often the retention job runs (daily).
    pub retention_every: Duration,
    /// Whether favicons are fetched at all.
    pub favicons: bool,
    /// How old a favicon may get before it is fetched again.
    pub favicon_max_age: Duration,
    /// The HTML sanitizer's options (F5).
    pub sanitize: SanitizeOptions,
    /// Whether a fetch the address guard refuses is recorded as the feed's failure (which stops
    /// the feed). The worker records them; a command run with settings of its own (`tidings
    /// refresh`) does not, so its settings never stop the feeds the server fetches fine.
    pub record_refusals: bool,
    /// Article pages fetched at once for full text (F6); 0 turns full text off in this
    /// process (nothing queued, nothing fetched in the background).
    pub full_text_concurrency: usize,
    /// In the `auto` mode, items whose feed text has fewer characters than this get their
    /// article page.
    pub full_text_threshold: usize,
    /// Which short items the `auto` mode fetches in the background: those of feeds a
    /// subscriber reads (the default) or every one (issue 38).
    pub full_text_auto: tidings_store::FullTextAuto,
    /// Pages of one host the `auto` mode fetches in the background per UTC day, counted in
    /// the database across workers; 0: no limit. A page past it is not fetched (the reader's
    /// "load full article" still fetches it). `always` subscriptions are not counted.
    pub full_text_host_daily_pages: u32,
    /// Tags found per item, at most (F41); 0 turns tagging off in this process (items stay
    /// queued until a process with tagging on takes them).
    pub tags_per_item: usize,
    /// Popularity (F40): the count source (off by default) and its pace.
    pub popularity: PopularityConfig,
    /// WebSub (F18): whether feeds are subscribed to their hubs (off by default), the
    /// callbacks' base URL, the lease asked for and the safety-net polling of pushed feeds.
    pub websub: WebSubConfig,
    /// Notifications to webhooks (F43): parallelism, pace, breaker, where Discord and Slack
    /// are reached.
    pub notifications: NotificationConfig,
    /// Item vectors for related items (F44): the embedder, its batch and parallelism.
    pub embeddings: EmbeddingsConfig,
    /// Summaries (F42): the provider (the built-in one by default), length, parallelism,
    /// budget and retries.
    pub summary: crate::summaries::SummaryConfig,
    /// Translations (issue 37): the provider (none by default), budgets, parallelism and
    /// retries.
    pub translate: crate::translations::TranslateConfig,
}

impl Default for WorkerConfig {
    fn default() -> WorkerConfig {
        WorkerConfig {
            owner: default_owner(),
            concurrency: DEFAULT_CONCURRENCY,
            per_host: HostLimits::default(),
            poll_interval: DEFAULT_POLL_INTERVAL,
            lease: DEFAULT_LEASE,
            policy: PolicyConfig::default(),
            retention_days: DEFAULT_RETENTION_DAYS,
            retention_keep_per_feed: DEFAULT_RETENTION_KEEP_PER_FEED,
            orphan_days: DEFAULT_ORPHAN_DAYS,
            usage_retention_days: DEFAULT_USAGE_RETENTION_DAYS,
            retention_every: DAILY,
            favicons: true,
            favicon_max_age: DEFAULT_FAVICON_MAX_AGE,
            sanitize: SanitizeOptions::default(),
            record_refusals: true,
            full_text_concurrency: DEFAULT_FULL_TEXT_CONCURRENCY,
            full_text_threshold: DEFAULT_FULL_TEXT_THRESHOLD,
            full_text_auto: tidings_store::FullTextAuto::default(),
            full_text_host_daily_pages: DEFAULT_FULL_TEXT_HOST_DAILY_PAGES,
            tags_per_item: DEFAULT_TAGS_PER_ITEM,
            popularity: PopularityConfig::default(),
            websub: WebSubConfig::default(),
            notifications: NotificationConfig::default(),
            embeddings: EmbeddingsConfig::default(),
            summary: crate::summaries::SummaryConfig::default(),
            translate: crate::translations::TranslateConfig::default(),
        }
    }
}

/// A lease owner name unique to this process: host name, process id and start time, so that
/// the leases of a crashed process are never mistaken for a restarted one's.
pub fn default_owner() -> String {
    let host = std::fs::read_to_string("/etc/hostname")
        .ok()
        .map(|name| name.trim().to_owned())
        .filter(|name| !name.is_empty())
        .or_else(|| std::env::var("HOSTNAME").ok())
        .unwrap_or_else(|| "worker".to_owned());
    let started = std::time::SystemTime::now()
        .duration_since(std::time::UNIX_EPOCH)
        .map(|d| d.as_nanos() % 1_000_000_000)
        .unwrap_or(0);
    // Several workers in one process (tests, `refresh` beside a running worker) differ here.
    static SEQUENCE: std::sync::atomic::AtomicU64 = std::sync::atomic::AtomicU64::new(0);
    let sequence = SEQUENCE.fetch_add(1, std::sync::atomic::Ordering::Relaxed);
    format!("{host}-{}-{started:09}-{sequence}", std::process::id())
}
