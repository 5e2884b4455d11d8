//! Manual and bulk refreshes (`tidings refresh`, the API's refresh, a new subscription's first
//! fetch): claim a feed whatever its schedule and run its round, many at once within the
//! worker's in-flight bound; and the one-off checks and page fetches of discovery and scraped
//! sources.

use chrono::Utc;
use tidings_feed::ParseOptions;
use tidings_fetch::{FailureKind, FetchError, FetchRequest, FetchResponse};
use tidings_store::{Store, StoreError};
use url::Url;

use crate::fetcher::Fetcher;
use crate::round::FeedReport;

/// What to do about an address the server's guard does not fetch.
const REFUSED_WHAT_TO_DO: &str = "This server does not fetch this address (a private or local \
     network, or not a usable URL); if it should, ask its administrator to allow it.";
/// What to do about a feed that is not there (404, 410).
const GONE_WHAT_TO_DO: &str = "The feed is no longer at this address: look for its new address \
     on the site and subscribe to that.";
/// What to do about a document that is not a feed.
const NOT_A_FEED_WHAT_TO_DO: &str = "This address is not a feed: subscribe to the site's \
     address instead, and tidings finds the feed the page links to.";

/// Why [`Fetcher::check_feed`] found no feed.
#[derive(Debug)]
pub struct CheckFailure {
    /// Why, as the user should read it.
    pub reason: String,
    /// What the check got when the failure may pass (429, 5xx, a time-out, a network
    /// error): an import subscribes such a feed anyway and records this as its first fetch,
    /// so that a passing outage does not lose the subscription. `None` when the URL is
    /// certainly no feed (404, 410, not a feed, an address the guard refuses).
    /// (Boxed: a response is large, and most checks pass.)
    pub transient: Option<Box<Result<FetchResponse, FetchError>>>,
    /// What the user can do about it, for the failures that will not pass.
    pub what_to_do: Option<&'static str>,
}

impl CheckFailure {
    /// A failure that will not pass, with what to do about it.
    fn certain(reason: String, what_to_do: &'static str) -> CheckFailure {
        CheckFailure {
            reason,
            transient: None,
            what_to_do: Some(what_to_do),
        }
    }

    /// A failure that may pass, with what the check got.
    fn transient(reason: String, fetched: Result<FetchResponse, FetchError>) -> CheckFailure {
        CheckFailure {
            reason,
            transient: Some(Box::new(fetched)),
            what_to_do: None,
        }
    }
}

/// Feed ids [`Fetcher::refresh_all`] reads from the store at once.
pub const REFRESH_PAGE: i64 = 500;

/// Why a manual refresh could not run.
#[derive(Debug, thiserror::Error)]
pub enum RefreshError {
    /// No feed has this id.
    #[error("feed {0} not found")]
    NotFound(i64),
    /// Another worker is fetching it right now.
    #[error("feed {0} is being fetched by another worker right now")]
    Busy(i64),
    /// The database failed.
    #[error(transparent)]
    Store(#[from] StoreError),
}

impl Fetcher {
    /// Fetches one feed now, whatever its schedule (manual refresh, F15), and stores the
    /// outcome. A stopped feed is fetched too; its status then follows the result. Its WebSub
    /// subscription, if any, is retried at once (F18).
    pub async fn refresh_feed(&self, feed_id: i64) -> Result<FeedReport, RefreshError> {
        let report = self.claim_and_fetch(feed_id, None).await?;
        // A manual refresh retries the feed's WebSub subscription too (F18), whatever its
        // back-off: the subscriber job looks at it at its next round.
        self.inner
            .store
            .websub_retry_now(feed_id, Utc::now().timestamp())
            .await?;
        self.inner.websub_wakeup.notify_one();
        Ok(report)
    }

    /// Like [`Fetcher::refresh_feed`], but records `response`, which the caller fetched from
    /// the feed's URL a moment ago (subscribing: discovery's fetch that found the feed), as
    /// this fetch instead of asking the server again: a new subscription's first fetch costs
    /// no second request.
    pub async fn refresh_feed_with(
        &self,
        feed_id: i64,
        response: FetchResponse,
    ) -> Result<FeedReport, RefreshError> {
        self.claim_and_fetch(feed_id, Some(Ok(response))).await
    }

    /// Like [`Fetcher::refresh_feed_with`] for a fetch that may have failed: an import's check
    /// that timed out or could not connect is recorded as the new feed's first fetch, so that
    /// the feed shows the error and gets the worker's normal back-off.
    pub(crate) async fn refresh_feed_with_result(
        &self,
        feed_id: i64,
        fetched: Result<FetchResponse, FetchError>,
    ) -> Result<FeedReport, RefreshError> {
        self.claim_and_fetch(feed_id, Some(fetched)).await
    }

    /// Claims the feed whatever its schedule and runs its round, with `prefetched` as its
    /// fetch when given. Fails when another worker has it or it does not exist.
    async fn claim_and_fetch(
        &self,
        feed_id: i64,
        prefetched: Option<Result<FetchResponse, FetchError>>,
    ) -> Result<FeedReport, RefreshError> {
        let config = &self.inner.config;
        let now = Utc::now().timestamp();
        let claimed = self
            .inner
            .store
            .claim_feed(feed_id, &config.owner, now, config.lease.as_secs() as i64)
            .await?;
        if let Some(due) = claimed {
            return Ok(self.fetch_claimed_with(due, prefetched).await);
        }
        match self.inner.store.feed_fetch_state(feed_id).await {
            Ok(_) => Err(RefreshError::Busy(feed_id)),
            Err(StoreError::NotFound(_)) => Err(RefreshError::NotFound(feed_id)),
            Err(error) => Err(error.into()),
        }
    }

    /// Refreshes each feed of `ids` as [`Fetcher::refresh_feed`] does, several at once, and
    /// hands each result to `each` as it comes. At most [`WorkerConfig::in_flight`] feeds are
    /// in progress at once. Returns how many feeds were tried.
    pub async fn refresh_feeds(
        &self,
        ids: impl IntoIterator<Item = i64>,
        each: impl FnMut(i64, Result<FeedReport, RefreshError>),
    ) -> u64 {
        let pages = Pages::Given(Some(ids.into_iter().collect()));
        // Given ids are not read from the store, so this cannot fail.
        self.refresh_pages(pages, each).await.unwrap_or_default()
    }

    /// [`Fetcher::refresh_pages`] with at most [`WorkerConfig::in_flight`] feeds in progress.
    async fn refresh_pages(
        &self,
        pages: Pages,
        each: impl FnMut(i64, Result<FeedReport, RefreshError>),
    ) -> Result<u64, StoreError> {
        let in_flight = self.inner.config.in_flight();
        self.for_each_page(
            pages,
            in_flight,
            |fetcher, id| async move { fetcher.refresh_feed(id).await },
            each,
        )
        .await
    }

    /// Refreshes every feed that has subscribers, stopped ones included, as
    /// [`Fetcher::refresh_feed`] does (`tidings refresh --all`). The ids are read from the
    /// store [`REFRESH_PAGE`] at a time, and at most [`WorkerConfig::in_flight`] feeds are in
    /// progress at once: memory does not grow with the number of feeds. Returns how many
    /// feeds were tried; a database error reading the ids ends the refresh once the feeds in
    /// progress are done.
    pub async fn refresh_all(
        &self,
        each: impl FnMut(i64, Result<FeedReport, RefreshError>),
    ) -> Result<u64, StoreError> {
        let pages = Pages::Subscribed {
            after: 0,
            exhausted: false,
        };
        self.refresh_pages(pages, each).await
    }

    /// The loop of refreshing and reparsing many feeds: takes pages of ids from `pages` and
    /// runs `run` on each id, at most `in_flight` at once, handing each result to `each` as it
    /// comes. Returns how many feeds were tried; a database error reading the ids ends the
    /// loop once the feeds in progress are done.
    pub(crate) async fn for_each_page<T, Fut>(
        &self,
        mut pages: Pages,
        in_flight: usize,
        run: impl Fn(Fetcher, i64) -> Fut,
        mut each: impl FnMut(i64, T),
    ) -> Result<u64, StoreError>
    where
        T: Send + 'static,
        Fut: std::future::Future<Output = T> + Send + 'static,
    {
        let in_flight = in_flight.max(1);
        let mut tasks: tokio::task::JoinSet<(i64, T)> = tokio::task::JoinSet::new();
        let mut tried = 0u64;
        let mut finished = |done: Result<(i64, _), tokio::task::JoinError>| {
            tried += 1;
            match done {
                Ok((id, result)) => each(id, result),
                // A panic is a bug; it goes on as if the task had run here. (Tasks are never
                // aborted, so there is no other error.)
                Err(error) if error.is_panic() => std::panic::resume_unwind(error.into_panic()),
                Err(_) => {}
            }
        };
        let mut failure = None;
        loop {
            let page = match pages.next(&self.inner.store).await {
                Ok(Some(page)) if !page.is_empty() => page,
                Ok(_) => break,
                Err(error) => {
                    failure = Some(error);
                    break;
                }
            };
            for id in page {
                if tasks.len() >= in_flight
                    && let Some(done) = tasks.join_next().await
                {
                    finished(done);
                }
                let task = run(self.clone(), id);
                tasks.spawn(async move { (id, task.await) });
            }
        }
        while let Some(done) = tasks.join_next().await {
            finished(done);
        }
        match failure {
            Some(error) => Err(error),
            None => Ok(tried),
        }
    }

    /// Fetches `url` once (through the guard and the per-host limiter) and checks that it
    /// answers with a feed that parses; returns the response, which
    /// [`Fetcher::refresh_feed_with`] can record as the feed's first fetch. `Err` says why
    /// not, as the user should read it, and whether the failure may pass (see
    /// [`CheckFailure`]). Nothing is stored.
    pub async fn check_feed(&self, url: &Url) -> Result<FetchResponse, CheckFailure> {
        let request = FetchRequest::new(url.clone());
        let host = url.host_str().unwrap_or_default().to_owned();
        let permit = self.inner.limiter.acquire(&host).await;
        let fetched = self
            .inner
            .limiter
            .watch(permit, self.inner.client.fetch(&request))
            .await;
        let response = match fetched {
            Ok(response) => response,
            Err(error) => {
                let reason = format!("could not be fetched: {error}");
                // The guard's refusals and unusable URLs never pass; a time-out, a network
                // error, a body over the limit or a redirect loop may (or may be fixed by the
                // feed's owner), and the feed is kept with its error.
                return Err(match error.kind() {
                    FailureKind::Refused | FailureKind::InvalidUrl | FailureKind::InvalidProxy => {
                        CheckFailure::certain(reason, REFUSED_WHAT_TO_DO)
                    }
                    _ => CheckFailure::transient(reason, Err(error)),
                });
            }
        };
        if !response.is_success() {
            let reason = format!("the server answered HTTP {}", response.status);
            // Only "not found" and "gone" say that no feed is there; 429, 5xx, 401/403 and
            // the rest may pass, so the feed is kept and the worker retries it with back-off.
            return Err(if matches!(response.status, 404 | 410) {
                CheckFailure::certain(reason, GONE_WHAT_TO_DO)
            } else {
                CheckFailure::transient(reason, Ok(response))
            });
        }
        let options = ParseOptions {
            feed_url: Some(response.url.clone()),
            http_charset: response.charset.clone(),
            ..ParseOptions::default()
        };
        let body = response.body.clone();
        self.on_parse_turn(move || {
            tidings_feed::parse(&body, &options)
                .map(|_| ())
                .map_err(|e| e.to_string())
        })
        .await
        // The parse error already says what the document is ("not a feed: an HTML page…").
        .unwrap_or_else(|error| Err(format!("the parser failed: {error}")))
        .map_err(|reason| CheckFailure::certain(reason, NOT_A_FEED_WHAT_TO_DO))?;
        Ok(response)
    }

    /// Fetches `url` once through the guard and the per-host limiter, as it is (no
    /// validators): a scraped source's page for a preview (F7).
    pub(crate) async fn fetch_page(
        &self,
        url: &Url,
    ) -> Result<FetchResponse, tidings_fetch::FetchError> {
        let request = FetchRequest::new(url.clone());
        let host = url.host_str().unwrap_or_default().to_owned();
        let permit = self.inner.limiter.acquire(&host).await;
        self.inner
            .limiter
            .watch(permit, self.inner.client.fetch(&request))
            .await
    }
}

/// Where [`Fetcher::for_each_page`] takes its feed ids from.
pub(crate) enum Pages {
    /// The ids given, in one page.
    Given(Option<Vec<i64>>),
    /// Every feed with subscribers, by keyset pages of ids above `after`.
    Subscribed { after: i64, exhausted: bool },
    /// Every feed with a kept raw body, by keyset pages of ids above `after`.
    WithBody { after: i64, exhausted: bool },
}

impl Pages {
    /// The next page of ids; `None` or an empty page when there are no more.
    async fn next(&mut self, store: &Store) -> Result<Option<Vec<i64>>, StoreError> {
        let subscribed = matches!(self, Pages::Subscribed { .. });
        match self {
            Pages::Given(ids) => Ok(ids.take()),
            Pages::Subscribed {
                exhausted: true, ..
            }
            | Pages::WithBody {
                exhausted: true, ..
            } => Ok(None),
            Pages::Subscribed { after, exhausted } | Pages::WithBody { after, exhausted } => {
                let ids = if subscribed {
                    store.subscribed_feed_ids(*after, REFRESH_PAGE).await?
                } else {
                    store.feeds_with_bodies(*after, REFRESH_PAGE).await?
                };
                *exhausted = (ids.len() as i64) < REFRESH_PAGE;
                if let Some(&last) = ids.last() {
                    *after = last;
                }
                Ok(Some(ids))
            }
        }
    }
}
