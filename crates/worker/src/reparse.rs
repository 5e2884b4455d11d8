//! Re-deriving items from the kept raw bodies (F8), without fetching: `tidings reparse`.
//!
//! A stored body goes through the same path as a fetched one (parse with the charset and base
//! URL it came with, identity, sanitize, upsert, feed metadata), so a parser or sanitizer fix
//! reaches every feed at once instead of at its next changed body. The feed's fetch lease is
//! held meanwhile, so a worker never stores a newer fetch that the reparse then overwrites
//! with the older body's items.

use std::fmt;

use chrono::{DateTime, Utc};
use tidings_store::{StoreError, UpsertCounts};
use url::Url;

use crate::body::{self, BodyError};
use crate::fetcher::Fetcher;
use crate::refresh::Pages;

/// What re-deriving one feed's items from its kept body did.
#[derive(Debug, Clone, PartialEq, Eq, serde::Serialize)]
pub struct ReparseReport {
    /// The feed's id.
    pub feed_id: i64,
    /// The feed's URL.
    pub url: String,
    /// When the body was fetched (Unix seconds).
    pub fetched_at: i64,
    /// The body's uncompressed size in bytes.
    pub bytes: u64,
    /// Why the body does not parse, or `None` when it does.
    pub parse_error: Option<String>,
    /// Items stored for the first time.
    pub items_inserted: u64,
    /// Items whose stored content changed.
    pub items_updated: u64,
    /// Items the body gives exactly as stored.
    pub items_unchanged: u64,
    /// Items the body lists that retention deleted: not stored again.
    pub items_suppressed: u64,
}

impl ReparseReport {
    /// Whether the body parsed.
    pub fn is_success(&self) -> bool {
        self.parse_error.is_none()
    }
}

impl fmt::Display for ReparseReport {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        let fetched = DateTime::<Utc>::from_timestamp(self.fetched_at, 0).map_or_else(
            || "?".to_owned(),
            |at| at.format("%Y-%m-%d %H:%M:%S UTC").to_string(),
        );
        write!(
            f,
            "feed {} {}: body of {} ({} bytes) ",
            self.feed_id,
            crate::fetcher::url_for_log(&self.url),
            fetched,
            self.bytes
        )?;
        match &self.parse_error {
            Some(error) => write!(f, "does not parse: {error}"),
            None => {
                write!(
                    f,
                    "reparsed, {} new, {} updated, {} unchanged",
                    self.items_inserted, self.items_updated, self.items_unchanged
                )?;
                if self.items_suppressed > 0 {
                    write!(
                        f,
                        ", {} deleted earlier by retention",
                        self.items_suppressed
                    )?;
                }
                Ok(())
            }
        }
    }
}

/// Why a feed could not be reparsed.
#[derive(Debug, thiserror::Error)]
pub enum ReparseError {
    /// No feed has this id.
    #[error("feed {0} not found")]
    NotFound(i64),
    /// The feed has no kept body yet.
    #[error(
        "feed {0} has no stored body yet: bodies are kept from each successful fetch, so run \
         `tidings refresh --feed {0}` once"
    )]
    NoBody(i64),
    /// A worker is fetching it right now (its fetch parses with this build's parser anyway).
    #[error("feed {0} is being fetched by a worker right now; run the command again in a moment")]
    Busy(i64),
    /// The stored body cannot be read back.
    #[error(
        "feed {feed_id}: the stored body cannot be read ({error}); `tidings refresh --feed \
         {feed_id}` fetches and keeps a fresh one"
    )]
    Body {
        /// The feed's id.
        feed_id: i64,
        /// What is wrong with it.
        error: BodyError,
    },
    /// The database failed.
    #[error(transparent)]
    Store(#[from] StoreError),
}

impl Fetcher {
    /// Re-derives the feed's items from its kept raw body, as its fetch did, without fetching.
    /// Holds the feed's lease meanwhile: fails with [`ReparseError::Busy`] while a worker
    /// fetches it.
    pub async fn reparse_feed(&self, feed_id: i64) -> Result<ReparseReport, ReparseError> {
        let store = self.store();
        let config = self.config();
        let now = Utc::now();
        let claimed = store
            .claim_feed(
                feed_id,
                &config.owner,
                now.timestamp(),
                config.lease.as_secs() as i64,
            )
            .await?;
        let Some(due) = claimed else {
            return match store.feed_fetch_state(feed_id).await {
                Ok(_) => Err(ReparseError::Busy(feed_id)),
                Err(StoreError::NotFound(_)) => Err(ReparseError::NotFound(feed_id)),
                Err(error) => Err(error.into()),
            };
        };
        let result = self
            .reparse_claimed(feed_id, &due.url, due.scrape_config.as_deref(), now)
            .await;
        // Given back whatever happened; an error here only delays the next fetch by the lease.
        if let Err(error) = store.release_feeds(&config.owner, &[feed_id]).await {
            tracing::warn!(feed = feed_id, %error, "the reparse lease could not be released");
        }
        result
    }

    async fn reparse_claimed(
        &self,
        feed_id: i64,
        feed_url: &str,
        scrape_config: Option<&str>,
        now: DateTime<Utc>,
    ) -> Result<ReparseReport, ReparseError> {
        let store = self.store();
        let stored = store
            .feed_body(feed_id)
            .await?
            .ok_or(ReparseError::NoBody(feed_id))?;
        // The URL that answered is the base of relative links, as it was for the fetch.
        let base = stored
            .source_url
            .as_deref()
            .and_then(|url| Url::parse(url).ok())
            .or_else(|| Url::parse(feed_url).ok());
        let (codec, compressed) = (stored.compression.clone(), stored.body);
        let raw = tokio::task::spawn_blocking(move || body::decompress(&codec, &compressed))
            .await
            .unwrap_or_else(|error| Err(BodyError::Damaged(error.to_string())))
            .map_err(|error| ReparseError::Body { feed_id, error })?;
        let bytes = raw.len() as u64;
        // A scraped source's kept body is its page, read with its configuration (F7).
        let parsed = self
            .parse_body(raw, base, stored.charset.clone(), scrape_config)
            .await;
        let mut report = ReparseReport {
            feed_id,
            url: feed_url.to_owned(),
            fetched_at: stored.fetched_at,
            bytes,
            parse_error: None,
            items_inserted: 0,
            items_updated: 0,
            items_unchanged: 0,
            items_suppressed: 0,
        };
        match parsed {
            Ok(parsed) => {
                let UpsertCounts {
                    inserted,
                    updated,
                    unchanged,
                    suppressed,
                } = self.store_parsed(feed_id, &parsed, now).await?;
                report.items_inserted = inserted;
                report.items_updated = updated;
                report.items_unchanged = unchanged;
                report.items_suppressed = suppressed;
            }
            Err(message) => report.parse_error = Some(message),
        }
        if report.parse_error != stored.parse_error {
            // The next fetch of the identical body is skipped only when it parses.
            store
                .set_feed_body_parse_error(feed_id, &stored.sha256, report.parse_error.as_deref())
                .await?;
        }
        Ok(report)
    }

    /// Reparses each feed of `ids` as [`Fetcher::reparse_feed`] does, a few at once, handing
    /// each result to `each` as it comes. Returns how many feeds were tried.
    pub async fn reparse_feeds(
        &self,
        ids: impl IntoIterator<Item = i64>,
        each: impl FnMut(i64, Result<ReparseReport, ReparseError>),
    ) -> u64 {
        let pages = Pages::Given(Some(ids.into_iter().collect()));
        // Given ids are not read from the store, so this cannot fail.
        self.reparse_pages(pages, each).await.unwrap_or_default()
    }

    /// Reparses every feed with a kept body (`tidings reparse --all`). Ids are read
    /// [`REFRESH_PAGE`](crate::fetcher::REFRESH_PAGE) at a time and only a few feeds (one per core, at most the worker's
    /// concurrency) are in progress at once, each holding one body: memory does not grow
    /// with the number of feeds. Returns how many feeds were tried; a database error reading
    /// the ids ends the run once the feeds in progress are done.
    pub async fn reparse_all(
        &self,
        each: impl FnMut(i64, Result<ReparseReport, ReparseError>),
    ) -> Result<u64, StoreError> {
        let pages = Pages::WithBody {
            after: 0,
            exhausted: false,
        };
        self.reparse_pages(pages, each).await
    }

    async fn reparse_pages(
        &self,
        pages: Pages,
        each: impl FnMut(i64, Result<ReparseReport, ReparseError>),
    ) -> Result<u64, StoreError> {
        // Parsing is CPU work: more feeds at once than cores only holds more bodies.
        let cores = std::thread::available_parallelism().map_or(2, |n| n.get());
        let at_once = cores.min(self.config().concurrency);
        self.for_each_page(
            pages,
            at_once,
            |fetcher, id| async move { fetcher.reparse_feed(id).await },
            each,
        )
        .await
    }
}
