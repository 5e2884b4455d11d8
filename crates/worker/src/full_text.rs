//! Full text (F6): the article page of an item whose feed gives only a teaser, fetched through
//! the guarded client under the per-host limiter, its main content extracted
//! ([`tidings_extract`]) and stored beside the feed's content.
//!
//! - A feed's fetch queues its new items with a link when a subscriber's mode asks for it:
//!   `auto` for items whose text is shorter than
//!   [`WorkerConfig::full_text_threshold`](crate::WorkerConfig::full_text_threshold), `always`
//!   for every item. Queueing is part of the fetch's one transaction
//!   ([`tidings_store::FetchWrites::full_text`]); the pages are fetched later.
//! - [`FullTextJob`] works through the queue as an [`EnrichmentJob`], at most
//!   `full_text_concurrency` pages at once per worker, each host's pages under the same limiter
//!   as its feeds. The article is kept when its text is longer than the feed's.
//! - A page that fails for now (a time-out, 429, 5xx) is tried again later, up to
//!   [`MAX_ATTEMPTS`] times; other failures are recorded at once, so that an item is fetched
//!   once.
//! - In the `auto` mode, which short items are queued follows
//!   [`WorkerConfig::full_text_auto`](crate::WorkerConfig::full_text_auto) (by default those of
//!   feeds a subscriber reads, never an import's backlog), and each site gives at most
//!   [`WorkerConfig::full_text_host_daily_pages`](crate::WorkerConfig::full_text_host_daily_pages)
//!   pages a UTC day; the rest is not fetched (issue 38).
//! - [`Fetcher::load_full_text`] does one item at once, for the reader's "load full article".

use std::sync::Arc;

use chrono::Utc;
use tidings_extract::{Article, ExtractError};
use tidings_fetch::{FailureKind, FetchError, FetchRequest, FetchResponse};
use tidings_store::{FullTextJob as QueuedItem, FullTextMode, FullTextOutcome, StoreError};
use tokio::sync::Notify;
use url::Url;

use crate::enrich::EnrichmentJob;
use crate::fetcher::{Fetcher, url_for_log};

/// Tries per item before a failure that may pass (a time-out, 429, 5xx) is recorded as final.
pub const MAX_ATTEMPTS: i64 = 3;
/// The wait before the second try; it doubles for each further one.
pub const RETRY_AFTER_SECONDS: i64 = 15 * 60;
/// The `Accept` header of article requests: pages, not feeds.
pub const PAGE_ACCEPT: &str = "text/html, application/xhtml+xml;q=0.9, */*;q=0.5";

/// Why an item's page gave no article.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
pub enum PageError {
    /// The item has no link to fetch.
    #[error("the item has no link to an article page")]
    NoLink,
    /// The link is not a URL.
    #[error("the item's link is not a web address: {0}")]
    BadLink(String),
    /// The request failed.
    #[error("the article page could not be fetched: {0}")]
    Fetch(FetchError),
    /// The server answered with an error status.
    #[error("the article page answered HTTP {0}")]
    Status(u16),
    /// The page is not HTML (a PDF, an image…).
    #[error("the article page is not an HTML page ({0})")]
    NotHtml(String),
    /// No article was found in the page.
    #[error("{0}")]
    Extract(ExtractError),
}

impl PageError {
    /// Whether trying again later may help: time-outs, connection failures, 429 and 5xx.
    pub fn is_temporary(&self) -> bool {
        match self {
            PageError::Fetch(error) => matches!(
                error.kind(),
                FailureKind::Timeout | FailureKind::Connect | FailureKind::Http
            ),
            PageError::Status(status) => *status == 429 || *status >= 500,
            _ => false,
        }
    }
}

/// An article found on an item's page.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct FoundArticle {
    /// The article, sanitized.
    pub article: Article,
    /// The page it came from, after redirects.
    pub source_url: Url,
}

/// The text length the feed gives an item (the store's measure, so that the worker's "short"
/// and the store's "much longer" count alike).
pub use tidings_store::feed_text_chars;

/// Whether an item of a feed whose subscribers' strongest mode is `mode` gets its page
/// fetched by the worker, given the feed's text length.
pub fn wants_full_text(mode: FullTextMode, feed_chars: usize, threshold: usize) -> bool {
    match mode {
        FullTextMode::Never => false,
        FullTextMode::Auto => feed_chars < threshold,
        FullTextMode::Always => true,
    }
}

impl Fetcher {
    /// Fetches `url` (through the feed's `proxy` when it has one) under the per-host limiter
    /// and extracts its article. Nothing is stored.
    pub async fn fetch_article(
        &self,
        url: Option<&str>,
        proxy: Option<&str>,
    ) -> Result<FoundArticle, PageError> {
        let url = url.ok_or(PageError::NoLink)?;
        let url = Url::parse(url).map_err(|e| PageError::BadLink(format!("{url}: {e}")))?;
        let mut request = FetchRequest::new(url).with_accept(PAGE_ACCEPT);
        if let Some(proxy) = proxy.filter(|p| !p.trim().is_empty()) {
            let proxy = Url::parse(proxy)
                .map_err(|e| PageError::Fetch(FetchError::InvalidProxy(format!("{proxy}: {e}"))))?;
            request = request.with_proxy(Some(proxy));
        }
        let host = request.url.host_str().unwrap_or_default().to_owned();
        let limiter = self.limiter();
        let permit = limiter.acquire(&host).await;
        let response = limiter
            .watch(permit, self.client().fetch(&request))
            .await
            .map_err(PageError::Fetch)?;
        if !response.is_success() {
            return Err(PageError::Status(response.status));
        }
        check_html(&response)?;
        let sanitizer = self.sanitizer();
        let source_url = response.url.clone();
        let extracted = tokio::task::spawn_blocking(move || {
            tidings_extract::extract(
                &response.body,
                &response.url,
                response.charset.as_deref(),
                &sanitizer,
            )
        })
        .await
        .unwrap_or_else(|error| Err(ExtractError::Failed(error.to_string())))
        .map_err(PageError::Extract)?;
        Ok(FoundArticle {
            article: extracted,
            source_url,
        })
    }

    /// The reader's "load full article": fetches the item's page now and stores the article
    /// whatever its length (the reader asked for it and can switch back). A failure is
    /// answered and not stored, so an article found earlier stays.
    pub async fn load_full_text(&self, item_id: i64) -> Result<FoundArticle, LoadError> {
        let store = self.store();
        let item = store
            .full_text_source(item_id)
            .await?
            .ok_or(LoadError::Store(StoreError::NotFound("item")))?;
        let found = self
            .fetch_article(item.url.as_deref(), item.proxy_url.as_deref())
            .await?;
        let outcome = FullTextOutcome::Extracted {
            content: found.article.html.clone(),
            text_chars: found.article.text_chars as i64,
            source_url: found.source_url.to_string(),
        };
        store
            .save_full_text(item_id, &outcome, Utc::now().timestamp())
            .await?;
        Ok(found)
    }

    /// The worker's round for one queued item: fetch, extract, compare, store (or put back
    /// for later).
    async fn full_text_round(&self, job: QueuedItem) {
        let store = self.store();
        let config = self.config();
        let feed_chars = feed_text_chars(job.content.as_deref(), job.summary.as_deref());
        // The subscribers may have changed their minds since the item was queued.
        if !wants_full_text(job.mode, feed_chars, config.full_text_threshold) {
            if let Err(error) = store.drop_full_text_job(job.item_id).await {
                tracing::debug!(item = job.item_id, %error, "dropping a full-text job failed");
            }
            return;
        }
        let now = Utc::now().timestamp();
        // The `auto` mode's pages are bounded per site and day (issue 38); a page past the
        // budget is not fetched and nothing is recorded, so the reader can still load it.
        if job.mode == FullTextMode::Auto && !self.within_host_budget(&job, now).await {
            if let Err(error) = store.drop_full_text_job(job.item_id).await {
                tracing::debug!(item = job.item_id, %error, "dropping a full-text job failed");
            }
            tracing::debug!(
                item = job.item_id,
                "full text: the site's daily budget is spent"
            );
            self.metrics().record_full_text("over_budget");
            return;
        }
        let outcome = match self
            .fetch_article(job.url.as_deref(), job.proxy_url.as_deref())
            .await
        {
            Ok(found) if found.article.text_chars > feed_chars => FullTextOutcome::Extracted {
                content: found.article.html,
                text_chars: found.article.text_chars as i64,
                source_url: found.source_url.to_string(),
            },
            Ok(found) => FullTextOutcome::Shorter {
                text_chars: found.article.text_chars as i64,
                source_url: found.source_url.to_string(),
            },
            Err(error) if error.is_temporary() && job.attempts < MAX_ATTEMPTS => {
                let wait = RETRY_AFTER_SECONDS << (job.attempts - 1).clamp(0, 8);
                tracing::debug!(item = job.item_id, %error, wait, "full text: trying again later");
                if let Err(error) = store
                    .retry_full_text(job.item_id, now + wait, &error.to_string())
                    .await
                {
                    tracing::warn!(item = job.item_id, %error, "a full-text retry could not be queued");
                }
                return;
            }
            Err(error) => FullTextOutcome::Failed {
                error: error.to_string(),
            },
        };
        let name = match &outcome {
            FullTextOutcome::Extracted { .. } => "extracted",
            FullTextOutcome::Shorter { .. } => "shorter",
            FullTextOutcome::Failed { .. } => "failed",
        };
        tracing::debug!(
            item = job.item_id,
            url = %job.url.as_deref().map(url_for_log).unwrap_or_default(),
            outcome = name,
            "full text"
        );
        if let Err(error) = store.save_full_text(job.item_id, &outcome, now).await {
            tracing::warn!(item = job.item_id, %error, "storing a full text failed");
        }
        // Counted once stored (and out of the queue), so that a reader of the metrics never
        // sees an outcome whose job is still queued.
        self.metrics().record_full_text(name);
    }

    /// Takes a page from the budget of the job's host for the UTC day of `now`
    /// ([`WorkerConfig::full_text_host_daily_pages`](crate::WorkerConfig::full_text_host_daily_pages)):
    /// `false` when it is spent. A job without a host (its fetch fails anyway) and a budget
    /// that cannot be read (the page is fetched rather than lost to a passing database
    /// error) count as within it.
    async fn within_host_budget(&self, job: &QueuedItem, now: i64) -> bool {
        let budget = self.config().full_text_host_daily_pages;
        let host = job
            .url
            .as_deref()
            .and_then(|url| Url::parse(url).ok())
            .and_then(|url| url.host_str().map(str::to_owned));
        let (Some(host), true) = (host, budget > 0) else {
            return true;
        };
        let day = now.div_euclid(24 * 3600);
        match self
            .store()
            .take_full_text_page(&host, day, i64::from(budget))
            .await
        {
            Ok(within) => within,
            Err(error) => {
                tracing::warn!(%host, %error, "the full-text page budget could not be counted");
                true
            }
        }
    }
}

/// The body must be a page: HTML or XHTML, or unlabelled (many servers send no type).
fn check_html(response: &FetchResponse) -> Result<(), PageError> {
    match response.content_type.as_deref() {
        None | Some("text/html" | "application/xhtml+xml" | "text/plain") => Ok(()),
        Some(other) => Err(PageError::NotHtml(other.to_owned())),
    }
}

/// Why the reader's "load full article" gave nothing.
#[derive(Debug, thiserror::Error)]
pub enum LoadError {
    /// The page gave no article.
    #[error(transparent)]
    Page(#[from] PageError),
    /// The database failed, or the item does not exist.
    #[error(transparent)]
    Store(#[from] StoreError),
}

/// The full-text queue as an [`EnrichmentJob`] of a worker.
#[derive(Debug, Clone)]
pub struct FullTextJob {
    fetcher: Fetcher,
}

impl FullTextJob {
    /// The job of `fetcher`'s worker: its client, limiter, sanitizer, store and settings.
    pub fn new(fetcher: Fetcher) -> FullTextJob {
        FullTextJob { fetcher }
    }
}

impl EnrichmentJob for FullTextJob {
    type Task = QueuedItem;

    fn name(&self) -> &'static str {
        "full_text"
    }

    async fn claim(&self, limit: usize) -> Result<Vec<QueuedItem>, StoreError> {
        let config = self.fetcher.config();
        self.fetcher
            .store()
            .claim_full_text_jobs(
                &config.owner,
                Utc::now().timestamp(),
                limit as i64,
                config.lease.as_secs() as i64,
            )
            .await
    }

    async fn run(&self, task: QueuedItem) {
        self.fetcher.full_text_round(task).await;
    }

    fn wakeup(&self) -> Option<Arc<Notify>> {
        Some(self.fetcher.full_text_wakeup())
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn modes_decide_by_the_threshold() {
        assert!(wants_full_text(FullTextMode::Auto, 1499, 1500));
        assert!(!wants_full_text(FullTextMode::Auto, 1500, 1500));
        assert!(wants_full_text(FullTextMode::Always, 100_000, 1500));
        assert!(!wants_full_text(FullTextMode::Never, 0, 1500));
    }

    #[test]
    fn the_feed_text_is_the_longer_of_content_and_summary() {
        assert_eq!(feed_text_chars(Some("<p>abc</p>"), Some("abcdef")), 6);
        assert_eq!(feed_text_chars(None, Some("<b>日本</b>")), 2);
        assert_eq!(feed_text_chars(None, None), 0);
    }

    #[test]
    fn only_passing_failures_are_tried_again() {
        assert!(PageError::Status(503).is_temporary());
        assert!(PageError::Status(429).is_temporary());
        assert!(!PageError::Status(404).is_temporary());
        assert!(
            PageError::Fetch(FetchError::Timeout(std::time::Duration::from_secs(10)))
                .is_temporary()
        );
        assert!(!PageError::Extract(ExtractError::NoArticle).is_temporary());
        assert!(!PageError::NotHtml("application/pdf".into()).is_temporary());
    }
}
