//! `tidings worker`: the fetch worker alone, so that a large installation runs several beside
//! its API replicas on one PostgreSQL. Also the fetch and worker settings that `serve`,
//! `refresh`, `discover` and `opml` share.

use std::process::ExitCode;
use std::sync::Arc;
use std::time::Duration;

use anyhow::Context;
use clap::Args;
use tidings_fetch::{AddressPolicy, ClientConfig, GuardedClient, HostLimits, limiter};
use tidings_server::media::MediaProxyMode;
use tidings_store::Store;
use tidings_worker::summaries::{ProviderKind, RemoteSettings};
use tidings_worker::{
    EmbeddingsConfig, EmbeddingsProvider, Fetcher, PopularitySource, SummaryConfig,
    TranslateConfig, Worker, WorkerConfig, WorkerMetrics,
};

/// The summary lengths one may ask for (F42).
fn tidings_summary_range() -> std::ops::RangeInclusive<usize> {
    tidings_worker::summaries::MIN_TARGET_CHARS..=tidings_worker::summaries::MAX_TARGET_CHARS
}

use crate::config::{self, ConfigError, GlobalConfig};

/// Outbound HTTP settings (F13, F26).
#[derive(Debug, Clone, Args)]
pub struct FetchArgs {
    /// Allow fetching from loopback, private (RFC 1918), CGNAT and unique-local addresses and
    /// local names: for feeds on a LAN, and for tests. Cloud metadata addresses stay refused.
    /// The flag alone means true; `--allow-private-networks=false` turns it off.
    #[arg(
        long,
        env = "TIDINGS_ALLOW_PRIVATE_NETWORKS",
        default_value = "false",
        num_args = 0..=1,
        require_equals = true,
        default_missing_value = "true",
        value_name = "true|false"
    )]
    pub allow_private_networks: String,

    /// Internal hosts outbound requests (feeds, pages, images, webhooks) may reach although
    /// the guard refuses their addresses: comma-separated addresses, CIDR networks and host
    /// names. Only these, unlike `--allow-private-networks`; cloud metadata stays refused.
    #[arg(
        long,
        env = "TIDINGS_ALLOWED_NETWORKS",
        default_value = "",
        value_name = "CIDRS_AND_HOSTS"
    )]
    pub allowed_networks: String,

    /// Total time one fetch may take, redirects and body included, in seconds (1-300).
    #[arg(long, env = "TIDINGS_FETCH_TIMEOUT_SECONDS", default_value = "10")]
    pub fetch_timeout_seconds: String,

    /// Time for a server's response headers to arrive, in seconds (1-300; at most the fetch
    /// timeout): a server that does not answer gives up its slot early.
    #[arg(
        long,
        env = "TIDINGS_FETCH_FIRST_BYTE_TIMEOUT_SECONDS",
        default_value = "5"
    )]
    pub fetch_first_byte_timeout_seconds: String,

    /// Requests started per second to one host, in bursts of as many (1-1000).
    #[arg(
        long,
        env = "TIDINGS_FETCH_PER_HOST_RATE",
        default_value_t = limiter::DEFAULT_PER_HOST_RATE.to_string()
    )]
    pub fetch_per_host_rate: String,

    /// Requests at once to one host, slow ones moved to the slow budget not counted (1-100).
    #[arg(
        long,
        env = "TIDINGS_FETCH_PER_HOST_CONCURRENCY",
        default_value_t = limiter::DEFAULT_PER_HOST_CONCURRENCY.to_string()
    )]
    pub fetch_per_host_concurrency: String,

    /// Slow requests one host may have beside those (0-100; 0 keeps slow ones in their slot).
    #[arg(
        long,
        env = "TIDINGS_FETCH_PER_HOST_SLOW",
        default_value_t = limiter::DEFAULT_PER_HOST_SLOW.to_string()
    )]
    pub fetch_per_host_slow: String,

    /// Seconds after which a request counts as slow and moves to the slow budget (1-300).
    #[arg(
        long,
        env = "TIDINGS_FETCH_PER_HOST_SLOW_AFTER_SECONDS",
        default_value_t = limiter::DEFAULT_SLOW_AFTER.as_secs().to_string()
    )]
    pub fetch_per_host_slow_after_seconds: String,
}

/// The checked outbound settings.
#[derive(Debug, Clone)]
pub struct FetchSettings {
    /// Whether private networks may be reached.
    pub allow_private_networks: bool,
    /// Networks that may be reached besides public ones (`TIDINGS_ALLOWED_NETWORKS`).
    pub allowed_networks: Vec<tidings_fetch::IpNetwork>,
    /// Host names that may be reached whatever they resolve to, metadata aside.
    pub allowed_hosts: Vec<String>,
    /// The fetch timeout.
    pub timeout: Duration,
    /// The time-out for the response headers.
    pub first_byte_timeout: Duration,
    /// Politeness per host.
    pub per_host: HostLimits,
}

impl FetchArgs {
    /// Checks the settings (exit 2 naming the variable on a bad value).
    pub fn check(&self) -> Result<FetchSettings, ConfigError> {
        let rate = config::check_number(
            &self.fetch_per_host_rate,
            1..=1000u32,
            "TIDINGS_FETCH_PER_HOST_RATE",
            "--fetch-per-host-rate",
        )?;
        let per_host = HostLimits {
            concurrency: config::check_number(
                &self.fetch_per_host_concurrency,
                1..=100usize,
                "TIDINGS_FETCH_PER_HOST_CONCURRENCY",
                "--fetch-per-host-concurrency",
            )?,
            slow: config::check_number(
                &self.fetch_per_host_slow,
                0..=100usize,
                "TIDINGS_FETCH_PER_HOST_SLOW",
                "--fetch-per-host-slow",
            )?,
            slow_after: Duration::from_secs(config::check_number(
                &self.fetch_per_host_slow_after_seconds,
                1..=300u64,
                "TIDINGS_FETCH_PER_HOST_SLOW_AFTER_SECONDS",
                "--fetch-per-host-slow-after-seconds",
            )?),
            rate_per_second: rate,
            burst: rate,
        };
        let (allowed_networks, allowed_hosts) =
            tidings_fetch::parse_allowed(&self.allowed_networks).map_err(|error| ConfigError {
                variable: "TIDINGS_ALLOWED_NETWORKS",
                flag: "--allowed-networks",
                value: self.allowed_networks.clone(),
                expected: format!(
                    "comma-separated addresses, CIDR networks and host names ({error})"
                ),
            })?;
        Ok(FetchSettings {
            allowed_networks,
            allowed_hosts,
            first_byte_timeout: Duration::from_secs(config::check_number(
                &self.fetch_first_byte_timeout_seconds,
                1..=300u64,
                "TIDINGS_FETCH_FIRST_BYTE_TIMEOUT_SECONDS",
                "--fetch-first-byte-timeout-seconds",
            )?),
            per_host,
            allow_private_networks: config::check_bool(
                &self.allow_private_networks,
                "TIDINGS_ALLOW_PRIVATE_NETWORKS",
                "--allow-private-networks",
            )?,
            timeout: Duration::from_secs(config::check_number(
                &self.fetch_timeout_seconds,
                1..=300u64,
                "TIDINGS_FETCH_TIMEOUT_SECONDS",
                "--fetch-timeout-seconds",
            )?),
        })
    }
}

impl FetchSettings {
    /// The guarded client these settings describe.
    pub fn client(&self) -> anyhow::Result<GuardedClient> {
        Ok(GuardedClient::new(ClientConfig {
            timeout: self.timeout,
            first_byte_timeout: self.first_byte_timeout,
            address_policy: AddressPolicy {
                allow_private_networks: self.allow_private_networks,
                allowed_networks: self.allowed_networks.clone(),
                allowed_hosts: self.allowed_hosts.clone(),
            },
            ..ClientConfig::default()
        })?)
    }
}

/// Settings of the fetch worker (F11, F17).
#[derive(Debug, Clone, Args)]
pub struct WorkerArgs {
    #[command(flatten)]
    pub fetch: FetchArgs,

    /// Feeds fetched at once by this process (1-1000).
    #[arg(long, env = "TIDINGS_WORKER_CONCURRENCY", default_value = "10")]
    pub worker_concurrency: String,

    /// How often the worker looks for due feeds, in seconds (1-3600): the scheduler's tick.
    #[arg(long, env = "TIDINGS_WORKER_POLL_SECONDS", default_value = "30")]
    pub worker_poll_seconds: String,

    /// How long a claimed feed stays leased to its worker, in seconds (10-3600; longer than
    /// the fetch timeout): a worker that dies without giving its feeds back (kill -9, a lost
    /// machine) has them fetched by another after this long.
    #[arg(long, env = "TIDINGS_WORKER_LEASE_SECONDS", default_value = "300")]
    pub worker_lease_seconds: String,

    /// Items tidings first stored more than this many days ago are deleted daily, except each
    /// feed's newest items and starred and bookmarked ones (0 keeps items forever; at most
    /// 36500).
    #[arg(long, env = "TIDINGS_RETENTION_DAYS", default_value = "180")]
    pub retention_days: String,

    /// Retention keeps this many of every feed's newest items whatever their age (0-100000).
    #[arg(long, env = "TIDINGS_RETENTION_KEEP_PER_FEED", default_value = "50")]
    pub retention_keep_per_feed: String,

    /// Usage counts (clicks, tag page views and searches per day) are kept for this many
    /// days, today included, and deleted by the daily retention run (1-3650).
    #[arg(long, env = "TIDINGS_USAGE_RETENTION_DAYS", default_value = "90")]
    pub usage_retention_days: String,

    /// Items' images through the server: off, http (only http: images, which HTTPS pages
    /// block) or all (image hosts never see readers' addresses). The worker keeps http:
    /// images in items when it is on; the server serves them.
    #[arg(long, env = "TIDINGS_MEDIA_PROXY", default_value = "off")]
    pub media_proxy: String,

    /// Article pages fetched at once for full text (0-100; 0 turns full text off in this
    /// process: nothing is queued or fetched in the background).
    #[arg(long, env = "TIDINGS_FULL_TEXT_CONCURRENCY", default_value = "4")]
    pub full_text_concurrency: String,

    /// In a subscription's `auto` full-text mode, items whose feed text is shorter than this
    /// many characters get their article page (0-1000000).
    #[arg(long, env = "TIDINGS_FULL_TEXT_THRESHOLD", default_value = "1500")]
    pub full_text_threshold: String,

    /// Which short items a subscription's `auto` full-text mode fetches in the background:
    /// read (the new items of feeds a subscriber reads; never an import's backlog) or short
    /// (every new item shorter than the threshold).
    #[arg(long, env = "TIDINGS_FULL_TEXT_AUTO", default_value = "read")]
    pub full_text_auto: String,

    /// Article pages of one site (host) the `auto` full-text mode fetches in the background
    /// per UTC day (0-1000000; 0: no limit). Pages past it are not fetched.
    #[arg(
        long,
        env = "TIDINGS_FULL_TEXT_HOST_DAILY_PAGES",
        default_value = "200"
    )]
    pub full_text_host_daily_pages: String,

    /// Tags found per item, at most (0-8; 0 turns tagging off in this process: items wait in
    /// the queue for a process with tagging on).
    #[arg(long, env = "TIDINGS_TAGS_PER_ITEM", default_value = "8")]
    pub tags_per_item: String,

    /// Popularity counts of items' links (F40): off, or hatena (Hatena Bookmark's bulk
    /// count endpoint, at most one call every 5 s and 100 calls every 10 minutes).
    #[arg(long, env = "TIDINGS_POPULARITY", default_value = "off")]
    pub popularity: String,

    /// The base URL of Hatena Bookmark's API, for a stand-in or a proxy.
    #[arg(long, env = "TIDINGS_HATENA_BASE_URL", default_value = tidings_worker::popularity::HATENA_BASE_URL)]
    pub hatena_base_url: String,

    /// Subscribe feeds that advertise a WebSub hub to it, so their new items arrive within
    /// seconds (F18). Needs TIDINGS_BASE_URL, which the hubs must reach: a public address, or
    /// a private one with TIDINGS_ALLOW_PRIVATE_NETWORKS (a LAN, tests). The flag alone means
    /// true.
    #[arg(
        long,
        env = "TIDINGS_WEBSUB",
        default_value = "false",
        num_args = 0..=1,
        require_equals = true,
        default_missing_value = "true",
        value_name = "true|false"
    )]
    pub websub: String,

    /// Notification channels sent to at once by this process (0-100; 0 turns notifications
    /// off in this process: new items wait for a process with them on).
    #[arg(long, env = "TIDINGS_WEBHOOK_CONCURRENCY", default_value = "4")]
    pub webhook_concurrency: String,

    /// The least time between two messages to one channel, in milliseconds (100-600000).
    #[arg(long, env = "TIDINGS_WEBHOOK_SPACING_MS", default_value = "2000")]
    pub webhook_spacing_ms: String,

    /// Time for one webhook delivery, in seconds (1-60).
    #[arg(long, env = "TIDINGS_WEBHOOK_TIMEOUT_SECONDS", default_value = "10")]
    pub webhook_timeout_seconds: String,

    /// Where Discord webhooks are sent (channels keep Discord's URL; deliveries go to its
    /// path under this base): for a stand-in or a relay.
    #[arg(long, env = "TIDINGS_WEBHOOK_DISCORD_BASE_URL", default_value = tidings_notify::target::DISCORD_BASE_URL)]
    pub webhook_discord_base_url: String,

    /// Where Slack webhooks are sent, as for Discord.
    #[arg(long, env = "TIDINGS_WEBHOOK_SLACK_BASE_URL", default_value = tidings_notify::target::SLACK_BASE_URL)]
    pub webhook_slack_base_url: String,
    /// An OpenAI-compatible embeddings API for related items (F44), up to and including its
    /// version: https://api.openai.com/v1, or a local Ollama's http://127.0.0.1:11434/v1.
    /// Without it items get local vectors (hashed term frequencies: no model, no key).
    #[arg(long, env = "TIDINGS_EMBEDDINGS_BASE_URL")]
    pub embeddings_base_url: Option<String>,

    /// The embeddings model asked for (with TIDINGS_EMBEDDINGS_BASE_URL). Changing it embeds
    /// every item again, newest first.
    #[arg(
        long,
        env = "TIDINGS_EMBEDDINGS_MODEL",
        default_value = "text-embedding-3-small"
    )]
    pub embeddings_model: String,

    /// The embeddings API's key, sent as a bearer token (none for a local server).
    #[arg(long, env = "TIDINGS_EMBEDDINGS_API_KEY", hide_env_values = true)]
    pub embeddings_api_key: Option<String>,

    /// Items per embeddings request (1-2048).
    #[arg(long, env = "TIDINGS_EMBEDDINGS_BATCH", default_value = "64")]
    pub embeddings_batch: String,

    /// Embeddings requests at once (0-16; 0 turns embedding off in this process: items wait
    /// in the queue for a process with it on).
    #[arg(long, env = "TIDINGS_EMBEDDINGS_CONCURRENCY", default_value = "1")]
    pub embeddings_concurrency: String,

    /// Items a remote embeddings provider embeds per UTC day for one user's feeds
    /// (0-100000000; 0 means no limit); the local embedder counts nothing.
    #[arg(
        long,
        env = "TIDINGS_EMBEDDINGS_USER_DAILY_BUDGET",
        default_value_t = tidings_worker::embedding::DEFAULT_USER_DAILY_BUDGET.to_string()
    )]
    pub embeddings_user_daily_budget: String,

    /// Who writes item summaries (F42): local (the built-in extractive summarizer: no key, no
    /// network), openai (any OpenAI-compatible /v1/chat/completions: OpenAI, Ollama,
    /// llama.cpp…) or anthropic (the Messages API).
    #[arg(long, env = "TIDINGS_SUMMARY_PROVIDER", default_value = "local")]
    pub summary_provider: String,

    /// The remote provider's base URL, with or without its /v1 (required for openai; for
    /// anthropic https://api.anthropic.com when absent).
    #[arg(long, env = "TIDINGS_SUMMARY_BASE_URL")]
    pub summary_base_url: Option<String>,

    /// The remote provider's model (required for openai and anthropic).
    #[arg(long, env = "TIDINGS_SUMMARY_MODEL")]
    pub summary_model: Option<String>,

    /// The remote provider's API key (required for anthropic; optional for openai, whose
    /// local servers often need none).
    #[arg(long, env = "TIDINGS_SUMMARY_API_KEY", hide_env_values = true)]
    pub summary_api_key: Option<String>,

    /// The summaries' length, in characters (100-5000).
    #[arg(long, env = "TIDINGS_SUMMARY_TARGET_CHARS", default_value = "900")]
    pub summary_target_chars: String,

    /// Requests to a remote provider per UTC day, across all processes (0-10000000; 0 means
    /// no limit). Retries count; the local provider makes none.
    #[arg(long, env = "TIDINGS_SUMMARY_DAILY_BUDGET", default_value = "1000")]
    pub summary_daily_budget: String,

    /// Requests to a remote provider per UTC day for one user's items (0-10000000; 0 means
    /// no limit): the user who pressed "Summarize", or the subscriber who pays for a queued
    /// item. Counted besides the installation's budget.
    #[arg(
        long,
        env = "TIDINGS_SUMMARY_USER_DAILY_BUDGET",
        default_value_t = tidings_worker::summaries::DEFAULT_USER_DAILY_BUDGET.to_string()
    )]
    pub summary_user_daily_budget: String,

    /// Items summarized at once by this process (0-64; 0 turns the summary worker off here:
    /// new items are not queued by its fetches, "Summarize" still works).
    #[arg(long, env = "TIDINGS_SUMMARY_PARALLELISM", default_value = "2")]
    pub summary_parallelism: String,

    /// How long one request to a remote provider may take, in seconds (1-600).
    #[arg(long, env = "TIDINGS_SUMMARY_TIMEOUT_SECONDS", default_value = "60")]
    pub summary_timeout_seconds: String,

    /// Who translates items (issue 37): off (the default), libretranslate (a LibreTranslate
    /// server), deepl (DeepL's API), openai (any OpenAI-compatible /v1/chat/completions) or
    /// anthropic (the Messages API).
    #[arg(long, env = "TIDINGS_TRANSLATE_PROVIDER", default_value = "off")]
    pub translate_provider: String,

    /// The translation provider's base URL (required for libretranslate and openai; DeepL's
    /// free or Pro API by the key, and https://api.anthropic.com, when absent).
    #[arg(long, env = "TIDINGS_TRANSLATE_BASE_URL")]
    pub translate_base_url: Option<String>,

    /// The translation provider's API key (required for deepl and anthropic; optional for
    /// libretranslate and openai).
    #[arg(long, env = "TIDINGS_TRANSLATE_API_KEY", hide_env_values = true)]
    pub translate_api_key: Option<String>,

    /// The model that translates (required for openai and anthropic).
    #[arg(long, env = "TIDINGS_TRANSLATE_MODEL")]
    pub translate_model: Option<String>,

    /// Translation requests per UTC day, across all processes (0-10000000; 0 means no
    /// limit). Retries count.
    #[arg(
        long,
        env = "TIDINGS_TRANSLATE_DAILY_BUDGET",
        default_value_t = tidings_worker::translations::DEFAULT_DAILY_BUDGET.to_string()
    )]
    pub translate_daily_budget: String,

    /// Translation requests per UTC day for one user's items (0-10000000; 0 means no limit).
    #[arg(
        long,
        env = "TIDINGS_TRANSLATE_USER_DAILY_BUDGET",
        default_value_t = tidings_worker::translations::DEFAULT_USER_DAILY_BUDGET.to_string()
    )]
    pub translate_user_daily_budget: String,

    /// Items of subscriptions marked "always translate" translated at once by this process
    /// (0-64; 0: none in this process, "Translate" still works).
    #[arg(long, env = "TIDINGS_TRANSLATE_PARALLELISM", default_value = "2")]
    pub translate_parallelism: String,

    /// How long one translation request may take, in seconds (1-600).
    #[arg(long, env = "TIDINGS_TRANSLATE_TIMEOUT_SECONDS", default_value = "60")]
    pub translate_timeout_seconds: String,
}

/// The checked worker settings.
#[derive(Debug, Clone)]
pub struct WorkerSettings {
    /// Outbound HTTP.
    pub fetch: FetchSettings,
    /// The worker's own.
    pub worker: WorkerConfig,
    /// Which images the server's media proxy serves.
    pub media_proxy: MediaProxyMode,
}

impl WorkerArgs {
    /// Checks the settings (exit 2 naming the variable on a bad value).
    pub fn check(&self) -> Result<WorkerSettings, ConfigError> {
        let fetch = self.fetch.check()?;
        let media_proxy = MediaProxyMode::parse(&self.media_proxy).ok_or_else(|| ConfigError {
            variable: "TIDINGS_MEDIA_PROXY",
            flag: "--media-proxy",
            value: self.media_proxy.clone(),
            expected: "off, http or all".into(),
        })?;
        let lease: u64 = config::check_number(
            &self.worker_lease_seconds,
            10..=3600u64,
            "TIDINGS_WORKER_LEASE_SECONDS",
            "--worker-lease-seconds",
        )?;
        // A lease that can end while its fetch still runs lets a second worker fetch the feed.
        if lease <= fetch.timeout.as_secs() {
            return Err(ConfigError {
                variable: "TIDINGS_WORKER_LEASE_SECONDS",
                flag: "--worker-lease-seconds",
                value: self.worker_lease_seconds.clone(),
                expected: format!(
                    "more seconds than the fetch timeout (TIDINGS_FETCH_TIMEOUT_SECONDS={})",
                    fetch.timeout.as_secs()
                ),
            });
        }
        let mut worker = WorkerConfig {
            lease: Duration::from_secs(lease),
            per_host: fetch.per_host,
            concurrency: config::check_number(
                &self.worker_concurrency,
                1..=1000usize,
                "TIDINGS_WORKER_CONCURRENCY",
                "--worker-concurrency",
            )?,
            poll_interval: Duration::from_secs(config::check_number(
                &self.worker_poll_seconds,
                1..=3600u64,
                "TIDINGS_WORKER_POLL_SECONDS",
                "--worker-poll-seconds",
            )?),
            retention_days: config::check_number(
                &self.retention_days,
                0..=36500u32,
                "TIDINGS_RETENTION_DAYS",
                "--retention-days",
            )?,
            retention_keep_per_feed: config::check_number(
                &self.retention_keep_per_feed,
                0..=100_000u32,
                "TIDINGS_RETENTION_KEEP_PER_FEED",
                "--retention-keep-per-feed",
            )?,
            usage_retention_days: config::check_number(
                &self.usage_retention_days,
                1..=3650u32,
                "TIDINGS_USAGE_RETENTION_DAYS",
                "--usage-retention-days",
            )?,
            full_text_concurrency: config::check_number(
                &self.full_text_concurrency,
                0..=100usize,
                "TIDINGS_FULL_TEXT_CONCURRENCY",
                "--full-text-concurrency",
            )?,
            full_text_threshold: config::check_number(
                &self.full_text_threshold,
                0..=1_000_000usize,
                "TIDINGS_FULL_TEXT_THRESHOLD",
                "--full-text-threshold",
            )?,
            full_text_auto: self.full_text_auto()?,
            full_text_host_daily_pages: config::check_number(
                &self.full_text_host_daily_pages,
                0..=1_000_000u32,
                "TIDINGS_FULL_TEXT_HOST_DAILY_PAGES",
                "--full-text-host-daily-pages",
            )?,
            tags_per_item: config::check_number(
                &self.tags_per_item,
                0..=tidings_tags::MAX_TAGS,
                "TIDINGS_TAGS_PER_ITEM",
                "--tags-per-item",
            )?,
            ..WorkerConfig::default()
        };
        worker.sanitize.keep_http_media = media_proxy != MediaProxyMode::Off;
        worker.popularity.source = self.popularity_source()?;
        worker.websub.enabled = config::check_bool(&self.websub, "TIDINGS_WEBSUB", "--websub")?;
        self.notifications(&mut worker.notifications)?;
        worker.embeddings = self.embeddings()?;
        worker.summary = self.summary_config()?;
        worker.translate = self.translate_config()?;
        Ok(WorkerSettings {
            fetch,
            worker,
            media_proxy,
        })
    }
}

impl WorkerArgs {
    /// Applies the notification settings (F43).
    fn notifications(
        &self,
        notifications: &mut tidings_worker::NotificationConfig,
    ) -> Result<(), ConfigError> {
        notifications.concurrency = config::check_number(
            &self.webhook_concurrency,
            0..=100usize,
            "TIDINGS_WEBHOOK_CONCURRENCY",
            "--webhook-concurrency",
        )?;
        notifications.policy.spacing = Duration::from_millis(config::check_number(
            &self.webhook_spacing_ms,
            100..=600_000u64,
            "TIDINGS_WEBHOOK_SPACING_MS",
            "--webhook-spacing-ms",
        )?);
        notifications.timeout = Duration::from_secs(config::check_number(
            &self.webhook_timeout_seconds,
            1..=60u64,
            "TIDINGS_WEBHOOK_TIMEOUT_SECONDS",
            "--webhook-timeout-seconds",
        )?);
        let base = |value: &str, variable: &'static str, flag: &'static str| {
            url::Url::parse(value.trim())
                .ok()
                .filter(|url| matches!(url.scheme(), "http" | "https") && url.host().is_some())
                .ok_or_else(|| ConfigError {
                    variable,
                    flag,
                    value: value.to_owned(),
                    expected: "an http(s) URL such as https://discord.com".into(),
                })
        };
        notifications.endpoints.discord = base(
            &self.webhook_discord_base_url,
            "TIDINGS_WEBHOOK_DISCORD_BASE_URL",
            "--webhook-discord-base-url",
        )?;
        notifications.endpoints.slack = base(
            &self.webhook_slack_base_url,
            "TIDINGS_WEBHOOK_SLACK_BASE_URL",
            "--webhook-slack-base-url",
        )?;
        Ok(())
    }

    /// The embeddings settings (F44): a provider when a base URL is given, else local.
    fn embeddings(&self) -> Result<EmbeddingsConfig, ConfigError> {
        let provider = match self
            .embeddings_base_url
            .as_deref()
            .map(str::trim)
            .filter(|url| !url.is_empty())
        {
            None => EmbeddingsProvider::Local,
            Some(text) => {
                let base_url = url::Url::parse(text)
                    .ok()
                    .filter(|url| matches!(url.scheme(), "http" | "https") && url.host().is_some())
                    .ok_or_else(|| ConfigError {
                        variable: "TIDINGS_EMBEDDINGS_BASE_URL",
                        flag: "--embeddings-base-url",
                        value: text.to_string(),
                        expected: "an http(s) URL such as https://api.openai.com/v1".into(),
                    })?;
                let model = self.embeddings_model.trim();
                if model.is_empty() {
                    return Err(ConfigError {
                        variable: "TIDINGS_EMBEDDINGS_MODEL",
                        flag: "--embeddings-model",
                        value: self.embeddings_model.clone(),
                        expected: "a model name such as text-embedding-3-small".into(),
                    });
                }
                EmbeddingsProvider::OpenAi {
                    base_url,
                    model: model.to_string(),
                    api_key: self
                        .embeddings_api_key
                        .as_deref()
                        .map(str::trim)
                        .filter(|key| !key.is_empty())
                        .map(str::to_string),
                }
            }
        };
        Ok(EmbeddingsConfig {
            provider,
            batch: config::check_number(
                &self.embeddings_batch,
                1..=2048usize,
                "TIDINGS_EMBEDDINGS_BATCH",
                "--embeddings-batch",
            )?,
            concurrency: config::check_number(
                &self.embeddings_concurrency,
                0..=16usize,
                "TIDINGS_EMBEDDINGS_CONCURRENCY",
                "--embeddings-concurrency",
            )?,
            user_daily_budget: config::check_number(
                &self.embeddings_user_daily_budget,
                0..=100_000_000i64,
                "TIDINGS_EMBEDDINGS_USER_DAILY_BUDGET",
                "--embeddings-user-daily-budget",
            )?,
        })
    }

    /// The summary settings (F42): a remote provider needs its model, openai its base URL and
    /// anthropic its key.
    fn summary_config(&self) -> Result<SummaryConfig, ConfigError> {
        let provider = ProviderKind::parse(&self.summary_provider).ok_or_else(|| ConfigError {
            variable: "TIDINGS_SUMMARY_PROVIDER",
            flag: "--summary-provider",
            value: self.summary_provider.clone(),
            expected: "local, openai or anthropic".into(),
        })?;
        let mut summary = SummaryConfig {
            provider,
            target_chars: config::check_number(
                &self.summary_target_chars,
                tidings_summary_range(),
                "TIDINGS_SUMMARY_TARGET_CHARS",
                "--summary-target-chars",
            )?,
            daily_budget: config::check_number(
                &self.summary_daily_budget,
                0..=10_000_000i64,
                "TIDINGS_SUMMARY_DAILY_BUDGET",
                "--summary-daily-budget",
            )?,
            user_daily_budget: config::check_number(
                &self.summary_user_daily_budget,
                0..=10_000_000i64,
                "TIDINGS_SUMMARY_USER_DAILY_BUDGET",
                "--summary-user-daily-budget",
            )?,
            parallelism: config::check_number(
                &self.summary_parallelism,
                0..=64usize,
                "TIDINGS_SUMMARY_PARALLELISM",
                "--summary-parallelism",
            )?,
            ..SummaryConfig::default()
        };
        let timeout = Duration::from_secs(config::check_number(
            &self.summary_timeout_seconds,
            1..=600u64,
            "TIDINGS_SUMMARY_TIMEOUT_SECONDS",
            "--summary-timeout-seconds",
        )?);
        if !provider.is_remote() {
            return Ok(summary);
        }
        let name = provider.as_str();
        let given = |value: &Option<String>| {
            value
                .as_deref()
                .map(str::trim)
                .filter(|v| !v.is_empty())
                .map(str::to_owned)
        };
        let base_text = match (given(&self.summary_base_url), provider) {
            (Some(url), _) => url,
            (None, ProviderKind::Anthropic) => {
                tidings_worker::summaries::provider::ANTHROPIC_BASE_URL.to_owned()
            }
            (None, _) => {
                return Err(ConfigError {
                    variable: "TIDINGS_SUMMARY_BASE_URL",
                    flag: "--summary-base-url",
                    value: String::new(),
                    expected: format!(
                        "the endpoint's base URL with TIDINGS_SUMMARY_PROVIDER={name}, such as \
                         https://api.openai.com or http://127.0.0.1:11434 (Ollama)"
                    ),
                });
            }
        };
        let base_url = url::Url::parse(&base_text)
            .ok()
            .filter(|url| matches!(url.scheme(), "http" | "https") && url.host().is_some())
            .ok_or_else(|| ConfigError {
                variable: "TIDINGS_SUMMARY_BASE_URL",
                flag: "--summary-base-url",
                value: base_text.clone(),
                expected: "an http(s) URL such as https://api.openai.com".into(),
            })?;
        let model = given(&self.summary_model).ok_or_else(|| ConfigError {
            variable: "TIDINGS_SUMMARY_MODEL",
            flag: "--summary-model",
            value: String::new(),
            expected: format!("the model to ask, with TIDINGS_SUMMARY_PROVIDER={name}"),
        })?;
        let api_key = given(&self.summary_api_key);
        if provider == ProviderKind::Anthropic && api_key.is_none() {
            return Err(ConfigError {
                variable: "TIDINGS_SUMMARY_API_KEY",
                flag: "--summary-api-key",
                value: String::new(),
                expected: "an API key, with TIDINGS_SUMMARY_PROVIDER=anthropic".into(),
            });
        }
        summary.remote = Some(RemoteSettings {
            kind: provider,
            base_url,
            model,
            api_key,
            timeout,
        });
        Ok(summary)
    }

    /// The translation settings (issue 37): each provider's base URL, key and model as it
    /// needs them.
    fn translate_config(&self) -> Result<TranslateConfig, ConfigError> {
        use tidings_worker::translations::TranslateProviderKind as Kind;
        let kind = Kind::parse(&self.translate_provider).ok_or_else(|| ConfigError {
            variable: "TIDINGS_TRANSLATE_PROVIDER",
            flag: "--translate-provider",
            value: self.translate_provider.clone(),
            expected: "off, libretranslate, deepl, openai or anthropic".into(),
        })?;
        let mut translate = TranslateConfig {
            daily_budget: config::check_number(
                &self.translate_daily_budget,
                0..=10_000_000i64,
                "TIDINGS_TRANSLATE_DAILY_BUDGET",
                "--translate-daily-budget",
            )?,
            user_daily_budget: config::check_number(
                &self.translate_user_daily_budget,
                0..=10_000_000i64,
                "TIDINGS_TRANSLATE_USER_DAILY_BUDGET",
                "--translate-user-daily-budget",
            )?,
            parallelism: config::check_number(
                &self.translate_parallelism,
                0..=64usize,
                "TIDINGS_TRANSLATE_PARALLELISM",
                "--translate-parallelism",
            )?,
            ..TranslateConfig::default()
        };
        let timeout = Duration::from_secs(config::check_number(
            &self.translate_timeout_seconds,
            1..=600u64,
            "TIDINGS_TRANSLATE_TIMEOUT_SECONDS",
            "--translate-timeout-seconds",
        )?);
        if kind == Kind::Off {
            return Ok(translate);
        }
        let name = kind.as_str();
        let given = |value: &Option<String>| {
            value
                .as_deref()
                .map(str::trim)
                .filter(|v| !v.is_empty())
                .map(str::to_owned)
        };
        let api_key = given(&self.translate_api_key);
        if matches!(kind, Kind::DeepL | Kind::Anthropic) && api_key.is_none() {
            return Err(ConfigError {
                variable: "TIDINGS_TRANSLATE_API_KEY",
                flag: "--translate-api-key",
                value: String::new(),
                expected: format!("an API key, with TIDINGS_TRANSLATE_PROVIDER={name}"),
            });
        }
        let base_text = match (given(&self.translate_base_url), kind) {
            (Some(url), _) => url,
            (None, Kind::DeepL) => {
                use tidings_worker::translations::provider::{
                    DEEPL_FREE_BASE_URL, DEEPL_PRO_BASE_URL,
                };
                let free = api_key.as_deref().is_some_and(|k| k.ends_with(":fx"));
                (if free {
                    DEEPL_FREE_BASE_URL
                } else {
                    DEEPL_PRO_BASE_URL
                })
                .to_owned()
            }
            (None, Kind::Anthropic) => {
                tidings_worker::summaries::provider::ANTHROPIC_BASE_URL.to_owned()
            }
            (None, _) => {
                return Err(ConfigError {
                    variable: "TIDINGS_TRANSLATE_BASE_URL",
                    flag: "--translate-base-url",
                    value: String::new(),
                    expected: format!(
                        "the provider's base URL with TIDINGS_TRANSLATE_PROVIDER={name}, such as \
                         http://127.0.0.1:5000 (LibreTranslate) or https://api.openai.com"
                    ),
                });
            }
        };
        let base_url = url::Url::parse(&base_text)
            .ok()
            .filter(|url| matches!(url.scheme(), "http" | "https") && url.host().is_some())
            .ok_or_else(|| ConfigError {
                variable: "TIDINGS_TRANSLATE_BASE_URL",
                flag: "--translate-base-url",
                value: base_text.clone(),
                expected: "an http(s) URL such as http://127.0.0.1:5000".into(),
            })?;
        let model = given(&self.translate_model);
        if kind.needs_model() && model.is_none() {
            return Err(ConfigError {
                variable: "TIDINGS_TRANSLATE_MODEL",
                flag: "--translate-model",
                value: String::new(),
                expected: format!("the model to ask, with TIDINGS_TRANSLATE_PROVIDER={name}"),
            });
        }
        translate.settings = Some(tidings_worker::translations::TranslateSettings {
            kind,
            base_url,
            api_key,
            model,
            timeout,
        });
        Ok(translate)
    }

    /// The popularity count source the settings name, `None` when it is off.
    /// `TIDINGS_FULL_TEXT_AUTO`: `read` or `short`.
    fn full_text_auto(&self) -> Result<tidings_store::FullTextAuto, ConfigError> {
        tidings_store::FullTextAuto::parse(&self.full_text_auto.trim().to_ascii_lowercase())
            .ok_or_else(|| ConfigError {
                variable: "TIDINGS_FULL_TEXT_AUTO",
                flag: "--full-text-auto",
                value: self.full_text_auto.clone(),
                expected: "read or short".into(),
            })
    }

    fn popularity_source(&self) -> Result<Option<PopularitySource>, ConfigError> {
        let base_url = || -> Result<url::Url, ConfigError> {
            url::Url::parse(self.hatena_base_url.trim())
                .ok()
                .filter(|url| matches!(url.scheme(), "http" | "https") && url.host().is_some())
                .ok_or_else(|| ConfigError {
                    variable: "TIDINGS_HATENA_BASE_URL",
                    flag: "--hatena-base-url",
                    value: self.hatena_base_url.clone(),
                    expected: "an http(s) URL such as https://bookmark.hatenaapis.com".into(),
                })
        };
        match self.popularity.trim().to_ascii_lowercase().as_str() {
            "off" | "" => Ok(None),
            "hatena" => Ok(Some(PopularitySource::Hatena {
                base_url: base_url()?,
            })),
            _ => Err(ConfigError {
                variable: "TIDINGS_POPULARITY",
                flag: "--popularity",
                value: self.popularity.clone(),
                expected: "off or hatena".into(),
            }),
        }
    }
}

impl WorkerSettings {
    /// Gives WebSub (F18) the server's public URL for its callbacks. With `TIDINGS_WEBSUB` on,
    /// the URL must be given and be one hubs can reach: not loopback, private or a local name,
    /// unless private networks are allowed (a LAN, tests).
    pub fn set_websub_base_url(&mut self, base: Option<&url::Url>) -> Result<(), ConfigError> {
        self.worker.websub.base_url = base.cloned();
        if !self.worker.websub.enabled {
            return Ok(());
        }
        let Some(base) = base else {
            return Err(ConfigError {
                variable: "TIDINGS_BASE_URL",
                flag: "--base-url",
                value: String::new(),
                expected: "the URL hubs reach this server at, which TIDINGS_WEBSUB=true needs \
                           (e.g. https://reader.example.com)"
                    .into(),
            });
        };
        tidings_worker::websub::check_public_base_url(base, self.fetch.allow_private_networks)
            .map_err(|reason| ConfigError {
                variable: "TIDINGS_BASE_URL",
                flag: "--base-url",
                value: base.to_string(),
                expected: format!(
                    "a public URL hubs can reach for TIDINGS_WEBSUB=true ({reason}); for a LAN \
                     or tests, set TIDINGS_ALLOW_PRIVATE_NETWORKS=true"
                ),
            })
    }

    /// A fetcher on `store` with these settings, counting into `metrics`.
    pub fn fetcher(&self, store: Store, metrics: Arc<WorkerMetrics>) -> anyhow::Result<Fetcher> {
        Ok(Fetcher::with_metrics(
            store,
            self.fetch.client()?,
            self.worker.clone(),
            metrics,
        ))
    }
}

/// Arguments of `tidings worker`.
#[derive(Debug, Args)]
pub struct WorkerCommandArgs {
    #[command(flatten)]
    pub worker: WorkerArgs,

    /// Address and port on which this worker serves its /metrics (fetches, items, feeds by
    /// status, queue depth, pools), e.g. 0.0.0.0:9464. None by default: no listener.
    #[arg(long, env = "TIDINGS_WORKER_METRICS_LISTEN")]
    pub metrics_listen: Option<String>,

    #[command(flatten)]
    pub metrics: super::daemon::MetricsArgs,

    /// The URL people and WebSub hubs reach the server at: the worker subscribes feeds with
    /// callbacks under it when TIDINGS_WEBSUB is on.
    #[arg(long, env = "TIDINGS_BASE_URL")]
    pub base_url: Option<String>,
}

/// Runs `tidings worker` until SIGINT or SIGTERM.
pub async fn run(config: &GlobalConfig, args: WorkerCommandArgs) -> anyhow::Result<ExitCode> {
    let mut settings = args.worker.check()?;
    let base_url = match args.base_url.as_deref() {
        Some(url) => Some(config::check_base_url(url)?),
        None => None,
    };
    settings.set_websub_base_url(base_url.as_ref())?;
    let metrics_listen = match args.metrics_listen.as_deref().map(str::trim) {
        Some(listen) if !listen.is_empty() => Some(config::check_listen_as(
            listen,
            "TIDINGS_WORKER_METRICS_LISTEN",
            "--metrics-listen",
        )?),
        _ => None,
    };
    let access = args.metrics.check()?;
    // Registered first, so that a stop while waiting for the database ends the wait.
    let mut shutdown = Box::pin(super::daemon::shutdown_signal()?);
    let Some(store) =
        super::open_store_waiting(config, super::OpenMode::Existing, &mut shutdown).await?
    else {
        tracing::info!("stopped before the database answered");
        return Ok(ExitCode::SUCCESS);
    };
    let metrics = Arc::new(WorkerMetrics::default());
    let fetcher = settings.fetcher(store.clone(), Arc::clone(&metrics))?;
    // Bound before the worker starts, so that a taken port stops the start with its reason.
    let (stop_metrics, metrics_stopped) = tokio::sync::oneshot::channel::<()>();
    let metrics_server = match metrics_listen {
        Some(address) => {
            let listener = tokio::net::TcpListener::bind(address)
                .await
                .with_context(|| format!("cannot listen on {address} for /metrics"))?;
            let bound = listener.local_addr()?;
            let app = tidings_server::metrics::worker_router(store.clone(), metrics, access);
            tracing::info!(address = %bound, "worker metrics at http://{bound}/metrics");
            Some(tokio::spawn(tidings_server::serve_router(
                listener,
                app,
                async move {
                    let _ = metrics_stopped.await;
                },
            )))
        }
        None => None,
    };
    let database = super::describe_database(config, &store);
    tracing::info!(
        database = %database,
        "worker running on {database}; stop it with Ctrl-C or SIGTERM"
    );
    Worker::new(fetcher).run(shutdown).await;
    let _ = stop_metrics.send(());
    if let Some(server) = metrics_server {
        match server.await {
            Ok(Err(error)) => tracing::warn!(%error, "the metrics listener failed"),
            Err(error) => tracing::warn!(%error, "the metrics listener ended abnormally"),
            Ok(Ok(())) => {}
        }
    }
    store.close().await;
    Ok(ExitCode::SUCCESS)
}

/// A worker running inside another command (`serve`), stopped with [`BackgroundWorker::stop`].
pub struct BackgroundWorker {
    stop: tokio::sync::watch::Sender<bool>,
    task: tokio::task::JoinHandle<()>,
    /// The worker's counters, for the server's `/metrics`.
    pub metrics: Arc<WorkerMetrics>,
}

impl BackgroundWorker {
    /// Starts the worker on `store` as a task of the current runtime.
    pub fn spawn(settings: &WorkerSettings, store: Store) -> anyhow::Result<BackgroundWorker> {
        let metrics = Arc::new(WorkerMetrics::default());
        let fetcher = settings.fetcher(store, Arc::clone(&metrics))?;
        let (stop, mut stopped) = tokio::sync::watch::channel(false);
        let task = tokio::spawn(async move {
            Worker::new(fetcher)
                .run(async move {
                    // An error means the sender is gone, which also means stop.
                    let _ = stopped.wait_for(|stop| *stop).await;
                })
                .await;
        });
        Ok(BackgroundWorker {
            stop,
            task,
            metrics,
        })
    }

    /// Asks the worker to stop and waits until it has (fetches in flight get a grace period).
    pub async fn stop(self) {
        let _ = self.stop.send(true);
        if let Err(error) = self.task.await {
            tracing::warn!(%error, "the worker task ended abnormally");
        }
        let totals = self.metrics.snapshot();
        tracing::info!(
            fetches = totals.fetches(),
            items_inserted = totals.items_inserted,
            items_updated = totals.items_updated,
            "worker totals"
        );
    }
}
