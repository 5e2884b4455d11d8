//! Popularity (F40): how many people bookmarked each item's link, fetched from a count source
//! in batches, as an [`EnrichmentJob`] beside the feeds' fetching.
//!
//! - A [`CountSource`] answers the counts of up to [`CountSource::max_urls`] links in one
//!   call. [`HatenaBookmarks`] is Hatena Bookmark's bulk endpoint
//!   (`{base}/count/entries?url=…&url=…`, answering `{"URL": count, …}`); another source fits
//!   the same trait.
//! - [`PopularityJob`] claims one call at a time from the store: the due links (never counted
//!   first, then counts older than [`PopularityConfig::ttl`], newest items first, only items
//!   published within [`PopularityConfig::window`]) and the source's pace, which the
//!   database keeps for the whole installation: at least [`PopularityConfig::spacing`]
//!   between calls (5 s), at most [`PopularityConfig::max_calls_per_cycle`] calls (100) per
//!   [`PopularityConfig::cycle`] (10 minutes), and after a failed call (an error, 429, 5xx,
//!   an answer that is not the expected JSON) a wait that doubles with each further failure
//!   up to [`PopularityConfig::max_backoff`], or longer when the source says `Retry-After`.
//! - A link the source answers without is counted 0; an item never asked has no count
//!   (`None`), which the API shows as null, not 0. A failed call changes no count.

use std::collections::HashMap;
use std::future::Future;
use std::sync::Arc;
use std::time::Duration;

use chrono::Utc;
use tidings_fetch::{ClientConfig, FetchError, FetchRequest, FetchResponse, GuardedClient};
use tidings_store::{PopularityCall, PopularityDue, PopularityPace, StoreError};
use url::Url;

pub use crate::config::popularity::{
    DEFAULT_CYCLE, DEFAULT_MAX_BACKOFF, DEFAULT_MAX_CALLS_PER_CYCLE, DEFAULT_SPACING, DEFAULT_TTL,
    DEFAULT_WINDOW, PopularityConfig, PopularitySource,
};
use crate::enrich::EnrichmentJob;
use crate::fetcher::Fetcher;

/// Hatena Bookmark's API, the default base of [`HatenaBookmarks`].
pub const HATENA_BASE_URL: &str = "https://bookmark.hatenaapis.com";
/// The most links Hatena's bulk endpoint takes in one call.
pub const HATENA_MAX_URLS: usize = 50;
/// The most bytes of a count source's answer (50 counts take a few kilobytes).
const MAX_ANSWER_BYTES: usize = 1024 * 1024;

/// Why a count source gave no counts.
#[derive(Debug, thiserror::Error)]
pub enum CountError {
    /// The request failed (refused by the guard, no connection, a time-out…).
    #[error("the count source could not be reached: {0}")]
    Fetch(#[from] FetchError),
    /// The source answered with an error status.
    #[error("the count source answered HTTP {status}")]
    Status {
        /// The status.
        status: u16,
        /// How long the source asked to wait (`Retry-After`), when it said.
        retry_after: Option<Duration>,
    },
    /// The answer is not the expected JSON.
    #[error("the count source's answer is not a JSON object of counts: {0}")]
    Answer(String),
}

impl CountError {
    /// The wait the source asked for, if any.
    pub fn retry_after(&self) -> Option<Duration> {
        match self {
            CountError::Status { retry_after, .. } => *retry_after,
            _ => None,
        }
    }
}

/// A service that counts how many people bookmarked links.
pub trait CountSource: Send + Sync + 'static {
    /// The source's name, which keys its pace in the store.
    fn name(&self) -> &'static str;

    /// The most links one call may carry.
    fn max_urls(&self) -> usize;

    /// The counts of `urls` (at most [`CountSource::max_urls`]), keyed by link as given. A
    /// link the source does not list has no bookmarks.
    fn counts(
        &self,
        urls: &[String],
    ) -> impl Future<Output = Result<HashMap<String, i64>, CountError>> + Send;
}

/// Hatena Bookmark's bulk count endpoint.
#[derive(Debug, Clone)]
pub struct HatenaBookmarks {
    endpoint: Url,
    client: GuardedClient,
}

impl HatenaBookmarks {
    /// The endpoint under `base_url`, asked through a client with `config`'s guard. The
    /// operator chose the base, so when its host is an IP address that address is allowed
    /// even on a private network (a stand-in on 127.0.0.1); a host name goes through the
    /// guard as any (`TIDINGS_ALLOW_PRIVATE_NETWORKS` lifts local ones).
    pub fn new(base_url: &Url, config: &ClientConfig) -> Result<HatenaBookmarks, FetchError> {
        let mut config = config.clone();
        config.allow_operator_base(base_url);
        Ok(HatenaBookmarks {
            endpoint: hatena_endpoint(base_url),
            client: GuardedClient::new(config)?,
        })
    }

    /// The request URL for `urls`.
    pub fn request_url(&self, urls: &[String]) -> Url {
        let mut url = self.endpoint.clone();
        {
            let mut query = url.query_pairs_mut();
            for link in urls {
                query.append_pair("url", link);
            }
        }
        url
    }
}

/// `{base}/count/entries`, whether or not the base ends with a slash.
fn hatena_endpoint(base_url: &Url) -> Url {
    let mut endpoint = base_url.clone();
    let path = format!("{}/count/entries", base_url.path().trim_end_matches('/'));
    endpoint.set_path(&path);
    endpoint.set_query(None);
    endpoint.set_fragment(None);
    endpoint
}

/// Reads a bulk count answer: a JSON object of non-negative whole numbers.
pub fn parse_counts(body: &[u8]) -> Result<HashMap<String, i64>, CountError> {
    let value: serde_json::Value =
        serde_json::from_slice(body).map_err(|e| CountError::Answer(e.to_string()))?;
    let serde_json::Value::Object(map) = value else {
        return Err(CountError::Answer("not an object".into()));
    };
    map.into_iter()
        .map(|(url, count)| match count.as_u64() {
            Some(n) => Ok((url, i64::try_from(n).unwrap_or(i64::MAX))),
            None => Err(CountError::Answer(format!(
                "the count of {url} is {count}, not a whole number"
            ))),
        })
        .collect()
}

fn status_error(response: &FetchResponse) -> CountError {
    let retry_after = tidings_fetch::policy::retry_after_seconds(&response.cache_hints, Utc::now())
        .map(Duration::from_secs);
    CountError::Status {
        status: response.status,
        retry_after,
    }
}

impl CountSource for HatenaBookmarks {
    fn name(&self) -> &'static str {
        "hatena"
    }

    fn max_urls(&self) -> usize {
        HATENA_MAX_URLS
    }

    async fn counts(&self, urls: &[String]) -> Result<HashMap<String, i64>, CountError> {
        let request = FetchRequest::new(self.request_url(urls))
            .with_accept("application/json")
            .with_max_body_bytes(MAX_ANSWER_BYTES);
        let response = self.client.fetch(&request).await?;
        if !response.is_success() {
            return Err(status_error(&response));
        }
        parse_counts(&response.body)
    }
}

/// Builds the configured source's job for `fetcher`, or `None` when popularity is off.
/// A source whose client cannot be built is logged and left off.
pub fn configured_job(fetcher: &Fetcher) -> Option<PopularityJob<HatenaBookmarks>> {
    match &fetcher.config().popularity.source {
        None => None,
        Some(PopularitySource::Hatena { base_url }) => {
            match HatenaBookmarks::new(base_url, fetcher.client().config()) {
                Ok(source) => Some(PopularityJob::new(fetcher.clone(), source)),
                Err(error) => {
                    tracing::warn!(%error, "popularity is off: its client could not be built");
                    None
                }
            }
        }
    }
}

/// The popularity calls as an [`EnrichmentJob`]: one call at a time, paced by the store.
#[derive(Debug, Clone)]
pub struct PopularityJob<S> {
    fetcher: Fetcher,
    source: Arc<S>,
}

impl<S: CountSource> PopularityJob<S> {
    /// The job of `fetcher`'s worker asking `source`.
    pub fn new(fetcher: Fetcher, source: S) -> PopularityJob<S> {
        PopularityJob {
            fetcher,
            source: Arc::new(source),
        }
    }

    fn pace(&self) -> PopularityPace {
        let config = &self.fetcher.config().popularity;
        PopularityPace {
            spacing_ms: millis(config.spacing),
            cycle_ms: millis(config.cycle),
            max_calls_per_cycle: i64::from(config.max_calls_per_cycle),
            // A call takes at most the client's time-out; the lease outlasts it.
            lease_ms: millis(self.fetcher.config().lease),
        }
    }

    /// Makes one claimed call and records its outcome; answers when the next call may start
    /// (Unix milliseconds).
    pub async fn call(&self, call: PopularityCall) -> i64 {
        let store = self.fetcher.store();
        let config = &self.fetcher.config().popularity;
        let owner = &self.fetcher.config().owner;
        let urls: Vec<String> = call.links.iter().map(|link| link.url.clone()).collect();
        let started = Utc::now().timestamp_millis();
        match self.source.counts(&urls).await {
            Ok(counts) => {
                let mut rows = Vec::new();
                for link in &call.links {
                    let count = counts.get(&link.url).copied().unwrap_or(0);
                    rows.extend(link.item_ids.iter().map(|&id| (id, count)));
                }
                let next = started.saturating_add(millis(config.spacing));
                let now = Utc::now().timestamp();
                tracing::debug!(
                    source = call.source,
                    links = urls.len(),
                    items = rows.len(),
                    "popularity counts fetched"
                );
                self.fetcher.metrics().record_popularity_call(true);
                if let Err(error) = store
                    .save_popularity(&call.source, owner, &rows, now, next)
                    .await
                {
                    tracing::warn!(%error, "storing popularity counts failed");
                }
                next
            }
            Err(error) => {
                self.fetcher.metrics().record_popularity_call(false);
                let retry_after = error.retry_after().map(millis).unwrap_or(0);
                let failed = store
                    .popularity_call_failed(&call.source, owner, &error.to_string(), |failures| {
                        let failures = u32::try_from(failures).unwrap_or(u32::MAX);
                        let wait = millis(config.backoff(failures)).max(retry_after);
                        Utc::now().timestamp_millis().saturating_add(wait)
                    })
                    .await;
                match failed {
                    Ok((failures, next)) => {
                        tracing::warn!(
                            source = call.source,
                            %error,
                            failures,
                            wait_seconds = (next - Utc::now().timestamp_millis()).max(0) / 1000,
                            "a popularity call failed; the source waits before the next"
                        );
                        next
                    }
                    Err(store_error) => {
                        tracing::warn!(%error, %store_error, "a popularity failure could not be recorded");
                        Utc::now()
                            .timestamp_millis()
                            .saturating_add(millis(config.max_backoff))
                    }
                }
            }
        }
    }
}

fn millis(duration: Duration) -> i64 {
    i64::try_from(duration.as_millis()).unwrap_or(i64::MAX)
}

impl<S: CountSource> EnrichmentJob for PopularityJob<S> {
    type Task = PopularityCall;

    fn name(&self) -> &'static str {
        "popularity"
    }

    async fn claim(&self, _limit: usize) -> Result<Vec<PopularityCall>, StoreError> {
        let config = self.fetcher.config();
        let now = Utc::now();
        let due = PopularityDue {
            stale_before: now.timestamp() - config.popularity.ttl.as_secs() as i64,
            published_since: now.timestamp() - config.popularity.window.as_secs() as i64,
            max_urls: self.source.max_urls(),
        };
        let call = self
            .fetcher
            .store()
            .claim_popularity_call(
                self.source.name(),
                &config.owner,
                now.timestamp_millis(),
                &self.pace(),
                &due,
            )
            .await?;
        Ok(call.into_iter().collect())
    }

    /// Makes the call, then waits until the pace allows the next one (at most the poll
    /// interval), so that the runner claims again on time and not a poll later.
    async fn run(&self, task: PopularityCall) {
        let next = self.call(task).await;
        let wait = (next - Utc::now().timestamp_millis()).max(0) as u64;
        let wait = Duration::from_millis(wait).min(self.fetcher.config().poll_interval);
        tokio::time::sleep(wait).await;
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_default_pace_is_hatenas() {
        let config = PopularityConfig::default();
        assert_eq!(config.source, None, "off unless configured");
        assert_eq!(config.spacing, Duration::from_secs(5));
        assert_eq!(config.max_calls_per_cycle, 100);
        assert_eq!(config.ttl, Duration::from_secs(24 * 3600));
        assert_eq!(HATENA_MAX_URLS, 50);
        assert_eq!(HATENA_BASE_URL, "https://bookmark.hatenaapis.com");
    }

    #[test]
    fn backoff_doubles_from_the_spacing_up_to_its_cap() {
        let config = PopularityConfig::default();
        assert_eq!(config.backoff(0), Duration::from_secs(5));
        assert_eq!(config.backoff(1), Duration::from_secs(10));
        assert_eq!(config.backoff(3), Duration::from_secs(40));
        assert_eq!(config.backoff(12), Duration::from_secs(5 << 12));
        assert_eq!(config.backoff(13), Duration::from_secs(6 * 3600));
        assert_eq!(config.backoff(u32::MAX), Duration::from_secs(6 * 3600));
    }

    #[test]
    fn the_endpoint_and_query_follow_hatenas_form() {
        let source = HatenaBookmarks::new(
            &Url::parse("https://bookmark.hatenaapis.com/").unwrap(),
            &ClientConfig::default(),
        )
        .unwrap();
        let url = source.request_url(&[
            "https://a.example/x?y=1&z=2".to_owned(),
            "https://b.example/日本".to_owned(),
        ]);
        assert_eq!(
            url.as_str(),
            "https://bookmark.hatenaapis.com/count/entries?\
             url=https%3A%2F%2Fa.example%2Fx%3Fy%3D1%26z%3D2&\
             url=https%3A%2F%2Fb.example%2F%E6%97%A5%E6%9C%AC"
        );
        let under = hatena_endpoint(&Url::parse("http://127.0.0.1:9/api?x=1").unwrap());
        assert_eq!(under.as_str(), "http://127.0.0.1:9/api/count/entries");
    }

    #[test]
    fn answers_must_be_objects_of_whole_numbers() {
        let counts =
            parse_counts(br#"{"https://a.example/": 12, "https://b.example/": 0}"#).unwrap();
        assert_eq!(counts["https://a.example/"], 12);
        assert_eq!(counts["https://b.example/"], 0);
        assert!(parse_counts(b"<html>busy</html>").is_err());
        assert!(parse_counts(b"[1, 2]").is_err());
        assert!(parse_counts(br#"{"https://a.example/": -1}"#).is_err());
        assert!(parse_counts(br#"{"https://a.example/": "12"}"#).is_err());
        assert!(parse_counts(br#"{"https://a.example/": 1.5}"#).is_err());
    }
}
