//! Discovery over the network (F2) and subscribing by a page or feed URL: fetch through the
//! guarded client, let the pure discovery of `tidings-feed` rank the candidates, check them.

use tidings_feed::{CandidateSource, FeedCandidate, ParseOptions};
use tidings_fetch::{FetchError, FetchRequest, FetchResponse, GuardedClient};
use tidings_store::{NewSubscription, StoreError, Subscription};
use url::Url;

use crate::fetcher::Fetcher;
use crate::refresh::RefreshError;
use crate::round::FeedReport;

/// Conventional paths tried when a page links no feed at all: at most this many requests.
const MAX_PATH_PROBES: usize = 6;
/// Candidates checked when subscribing, before giving up.
const MAX_CANDIDATES_CHECKED: usize = 5;

/// Why discovery found nothing.
#[derive(Debug, thiserror::Error)]
pub enum DiscoverError {
    /// The text is not a URL.
    #[error("not a URL: {0}")]
    InvalidUrl(String),
    /// The page could not be fetched.
    #[error("{url}: {source}")]
    Fetch {
        /// The URL.
        url: String,
        /// Why.
        #[source]
        source: FetchError,
    },
    /// The page answered with an error status.
    #[error("{url}: the server answered HTTP {status}")]
    Status {
        /// The URL.
        url: String,
        /// The status.
        status: u16,
    },
}

/// Reads what a user typed as a URL: `example.com/blog` means `https://example.com/blog`.
/// (Subscribing tries `http://` too when https does not answer: see [`user_url_attempts`].)
pub fn parse_user_url(text: &str) -> Result<Url, DiscoverError> {
    let mut attempts = user_url_attempts(text)?;
    Ok(attempts.remove(0))
}

/// The URLs to try for what a user typed, in order: the URL itself when it names a scheme;
/// else `https://` and then `http://` before it (`example.com/feed`, `localhost:8080/feed.xml`).
/// Each is normalized (F10). Never empty.
pub fn user_url_attempts(text: &str) -> Result<Vec<Url>, DiscoverError> {
    let text = text.trim();
    let parse = |with_scheme: String| {
        Url::parse(&with_scheme)
            .map(|url| tidings_feed::normalize_feed_url(&url))
            .map_err(|e| DiscoverError::InvalidUrl(format!("{text}: {e}")))
    };
    if text.contains("://") {
        return Ok(vec![parse(text.to_owned())?]);
    }
    Ok(vec![
        parse(format!("https://{text}"))?,
        parse(format!("http://{text}"))?,
    ])
}

/// Fetches `url` and lists the feeds it is or links to, best first. A page that links none
/// has the conventional paths (`/feed`, `/rss`…) probed, and only those that parse as feeds
/// are listed. Every request goes through the guarded client.
pub async fn discover_feeds(
    client: &GuardedClient,
    url: &Url,
) -> Result<Vec<FeedCandidate>, DiscoverError> {
    Ok(discover(client, url, false).await?.0)
}

/// [`discover_feeds`], also returning the response that showed the first candidate to be a
/// feed when there was one (the URL itself, or the first conventional path that parsed), so
/// that subscribing to it needs no second request. With `first_only`, conventional paths are
/// probed only until one is a feed.
async fn discover(
    client: &GuardedClient,
    url: &Url,
    first_only: bool,
) -> Result<(Vec<FeedCandidate>, Option<FetchResponse>), DiscoverError> {
    let request = FetchRequest::new(url.clone());
    let response = client
        .fetch(&request)
        .await
        .map_err(|source| DiscoverError::Fetch {
            url: url.to_string(),
            source,
        })?;
    if !response.is_success() {
        return Err(DiscoverError::Status {
            url: url.to_string(),
            status: response.status,
        });
    }
    // A feed reached through temporary redirects keeps the URL asked for; a permanent move
    // is followed.
    let canonical = if response.redirects == 0 {
        response.url.clone()
    } else {
        response
            .permanent_redirect
            .clone()
            .unwrap_or_else(|| url.clone())
    };
    let candidates = tidings_feed::discover(&response.body, &canonical);
    let (linked, paths): (Vec<_>, Vec<_>) = candidates
        .into_iter()
        .partition(|c| c.source != CandidateSource::ConventionalPath);
    if !linked.is_empty() {
        let input_is_a_feed = linked
            .first()
            .is_some_and(|c| c.source == CandidateSource::TheInputIsAFeed);
        return Ok((linked, input_is_a_feed.then_some(response)));
    }
    drop(response);
    let mut found = Vec::new();
    let mut first_response = None;
    for candidate in paths.into_iter().take(MAX_PATH_PROBES) {
        if let Ok(candidate_url) = Url::parse(&candidate.url)
            && let Some((feed, response)) = probe_feed(client, &candidate_url).await
        {
            if found.is_empty() {
                first_response = Some(response);
            }
            found.push(feed);
            if first_only {
                break;
            }
        }
    }
    Ok((found, first_response))
}

/// Fetches `url` and returns it as a candidate, with the response, when it parses as a feed.
async fn probe_feed(client: &GuardedClient, url: &Url) -> Option<(FeedCandidate, FetchResponse)> {
    let response = client.fetch(&FetchRequest::new(url.clone())).await.ok()?;
    if !response.is_success() {
        return None;
    }
    let options = ParseOptions {
        feed_url: Some(response.url.clone()),
        http_charset: response.charset.clone(),
        ..ParseOptions::default()
    };
    let feed = tidings_feed::parse(&response.body, &options).ok()?;
    let kind = match feed.format() {
        tidings_feed::FeedFormat::Atom => tidings_feed::CandidateKind::Atom,
        tidings_feed::FeedFormat::Rss => tidings_feed::CandidateKind::Rss,
        tidings_feed::FeedFormat::Json => tidings_feed::CandidateKind::Json,
    };
    let candidate = FeedCandidate {
        url: url.to_string(),
        kind,
        title: feed.title,
        source: CandidateSource::TheInputIsAFeed,
    };
    Some((candidate, response))
}

/// What a user asks for when subscribing by URL.
#[derive(Debug, Clone, Default)]
pub struct SubscribeRequest {
    /// A feed URL or a page URL (discovery finds its feed).
    pub url: String,
    /// The group; the default group when `None`.
    pub group_id: Option<i64>,
    /// A custom title.
    pub title: Option<String>,
    /// The fetch interval in minutes (30–720, step 30); 60 when `None`.
    pub interval_minutes: Option<i64>,
    /// The user's subscription limit (F29), checked when the subscription is stored.
    pub max_subscriptions: Option<i64>,
}

/// The feed a URL typed by a user leads to.
#[derive(Debug, Clone)]
pub struct ResolvedFeed {
    /// The feed's URL, normalized (F10).
    pub feed_url: String,
    /// The URL discovery started from: what the user typed, with the scheme that was used.
    pub requested_url: Url,
    /// For a URL typed without a scheme, the scheme added (`https`, or `http` when https did
    /// not answer); `None` when the user gave one.
    pub scheme_added: Option<&'static str>,
    /// Why the https attempt was given up, when http was used instead.
    pub https_failure: Option<String>,
}

impl ResolvedFeed {
    /// A sentence for the user about the scheme added to a URL typed without one, if any.
    pub fn scheme_notice(&self) -> Option<String> {
        self.scheme_added?;
        Some(match &self.https_failure {
            None => format!(
                "The address had no scheme: {} was used.",
                self.requested_url
            ),
            Some(failure) => format!(
                "The address had no scheme: https did not answer ({failure}), so {} was used \
                 (plain http, not encrypted).",
                self.requested_url
            ),
        })
    }
}

/// A new subscription and how its first fetch went.
#[derive(Debug, Clone)]
pub struct Subscribed {
    /// The subscription, as stored before the first fetch.
    pub subscription: Subscription,
    /// The first fetch; `None` when another worker was fetching the feed at that moment.
    pub first_fetch: Option<FeedReport>,
    /// How the typed URL led to the feed.
    pub resolved: ResolvedFeed,
}

/// Why subscribing failed.
#[derive(Debug, thiserror::Error)]
pub enum SubscribeError {
    /// The page or feed could not be fetched.
    #[error(transparent)]
    Discover(#[from] DiscoverError),
    /// Nothing at the URL is or links to a feed that parses.
    #[error("no feed found at {0}")]
    NoFeed(String),
    /// The store refused (already subscribed: `StoreError::Conflict`; the subscription limit:
    /// `StoreError::LimitReached`; bad interval or group).
    #[error(transparent)]
    Store(#[from] StoreError),
}

/// Whether a failed https attempt for a URL typed without a scheme is worth an http attempt:
/// nothing answered in https (no listener, no TLS, a plain-http server on that port). A
/// refusal by the guard or an answer in https is final.
fn https_did_not_answer(error: &DiscoverError) -> bool {
    matches!(
        error,
        DiscoverError::Fetch {
            source: FetchError::Connect(_)
                | FetchError::Timeout(_)
                | FetchError::NoResponse(_)
                | FetchError::Http(_),
            ..
        }
    )
}

/// Finds the feed that `text` (a feed or page URL as a user typed it) leads to, through the
/// guarded client: a URL without a scheme is tried in https, then in http when https does not
/// answer; a page's feeds are discovered and the best that parses is taken. This is what both
/// subscribing and changing a subscription's URL go through.
pub async fn resolve_feed(fetcher: &Fetcher, text: &str) -> Result<ResolvedFeed, SubscribeError> {
    Ok(resolve_feed_with_response(fetcher, text).await?.0)
}

/// [`resolve_feed`], also returning the response that showed the chosen URL to be a feed, so
/// that subscribing records it as the feed's first fetch: the server is asked once for the
/// feed, not once to check and once more to fetch.
async fn resolve_feed_with_response(
    fetcher: &Fetcher,
    text: &str,
) -> Result<(ResolvedFeed, Option<FetchResponse>), SubscribeError> {
    let attempts = user_url_attempts(text)?;
    let scheme_given = attempts.len() == 1;
    let mut https_failure = None;
    let mut found = None;
    for url in attempts {
        match discover(fetcher.client(), &url, true).await {
            Ok((candidates, response)) => {
                found = Some((url, candidates, response));
                break;
            }
            Err(error) if !scheme_given && https_failure.is_none() => {
                if !https_did_not_answer(&error) {
                    return Err(error.into());
                }
                https_failure = Some(match &error {
                    DiscoverError::Fetch { source, .. } => source.to_string(),
                    other => other.to_string(),
                });
            }
            Err(error) => return Err(error.into()),
        }
    }
    let Some((requested_url, candidates, mut first_response)) = found else {
        // Unreachable: the last attempt's error is returned above.
        return Err(SubscribeError::NoFeed(text.trim().to_owned()));
    };
    let mut chosen = None;
    for candidate in candidates.into_iter().take(MAX_CANDIDATES_CHECKED) {
        if candidate.source == CandidateSource::TheInputIsAFeed {
            chosen = Some((candidate.url, first_response.take()));
            break;
        }
        if let Ok(candidate_url) = Url::parse(&candidate.url)
            && let Some((_, response)) = probe_feed(fetcher.client(), &candidate_url).await
        {
            chosen = Some((candidate.url, Some(response)));
            break;
        }
    }
    let (feed_url, response) =
        chosen.ok_or_else(|| SubscribeError::NoFeed(requested_url.to_string()))?;
    let resolved = ResolvedFeed {
        feed_url: tidings_feed::normalize_feed_url_text(&feed_url),
        scheme_added: (!scheme_given).then(|| {
            if requested_url.scheme() == "https" {
                "https"
            } else {
                "http"
            }
        }),
        requested_url,
        https_failure,
    };
    Ok((resolved, response))
}

/// Subscribes `user_id` to the feed at (or linked from) `request.url` and fetches it once at
/// once, so the reader has items to show (the REST API's `POST /subscriptions`).
pub async fn subscribe_with_discovery(
    fetcher: &Fetcher,
    user_id: i64,
    request: &SubscribeRequest,
) -> Result<Subscribed, SubscribeError> {
    let (resolved, response) = resolve_feed_with_response(fetcher, &request.url).await?;
    let subscription = fetcher
        .store()
        .subscribe_within_limit(
            user_id,
            &NewSubscription {
                feed_url: resolved.feed_url.clone(),
                group_id: request.group_id,
                title: request.title.clone(),
                interval_minutes: request.interval_minutes,
            },
            request.max_subscriptions,
        )
        .await?;
    let first = match response {
        Some(response) => {
            fetcher
                .refresh_feed_with(subscription.feed_id, response)
                .await
        }
        None => fetcher.refresh_feed(subscription.feed_id).await,
    };
    let first_fetch = match first {
        Ok(report) => Some(report),
        Err(RefreshError::Busy(_)) => None,
        Err(RefreshError::NotFound(_)) => None,
        Err(RefreshError::Store(error)) => return Err(error.into()),
    };
    Ok(Subscribed {
        subscription,
        first_fetch,
        resolved,
    })
}
