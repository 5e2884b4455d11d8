//! Scraped sources over the network (F7): fetch a page through the guarded client, read it
//! with `tidings-scrape`, and preview, subscribe to or reconfigure such a source. The fetch
//! round of a scraped source is the feed's ([`crate::round`]), with the scraper in place of
//! the feed parser ([`crate::parse`]).

use tidings_feed::Item;
use tidings_fetch::FetchResponse;
use tidings_scrape::{ScrapeConfig, ScrapeError, ScrapeOptions};
use tidings_store::{NewSubscription, StoreError, Subscription};

use crate::discovery::{DiscoverError, parse_user_url};
use crate::fetcher::Fetcher;
pub use crate::parse::parse_config_json;
use crate::refresh::RefreshError;
use crate::round::FeedReport;

/// Why a scraped source could not be previewed, created or changed.
#[derive(Debug, thiserror::Error)]
pub enum ScrapeSourceError {
    /// The URL is not one, the page could not be fetched (the guard's refusal included), or
    /// it answered with an error status: as for discovery.
    #[error(transparent)]
    Page(#[from] DiscoverError),
    /// The configuration is invalid, or the page gave no items with it; the error names the
    /// field, selector or key path.
    #[error(transparent)]
    Scrape(#[from] ScrapeError),
    /// The store refused (a conflict, the subscription limit, a group that is not the user's).
    #[error(transparent)]
    Store(#[from] StoreError),
}

/// What a configuration makes of the live page, nothing saved.
#[derive(Debug, Clone)]
pub struct ScrapePreview {
    /// The page's URL, normalized (what the source is stored under).
    pub url: String,
    /// The page's `<title>`.
    pub title: Option<String>,
    /// The items, sanitized as they would be stored.
    pub items: Vec<Item>,
}

/// A scraped source to subscribe to.
#[derive(Debug, Clone, Default)]
pub struct ScrapedSourceRequest {
    /// The page's URL (`https://` is added when it has no scheme).
    pub url: String,
    /// How to read it.
    pub config: ScrapeConfig,
    /// The group; the default group when `None`.
    pub group_id: Option<i64>,
    /// A custom title.
    pub title: Option<String>,
    /// The fetch interval in minutes (30–720, step 30); 60 when `None`.
    pub interval_minutes: Option<i64>,
    /// The user's subscription limit (F29), checked when the subscription is stored.
    pub max_subscriptions: Option<i64>,
}

/// A scraped source subscribed to or reconfigured, with the page's items.
#[derive(Debug, Clone)]
pub struct ScrapedSource {
    /// The subscription, as stored before the first fetch.
    pub subscription: Subscription,
    /// What the page gave with the configuration.
    pub preview: ScrapePreview,
    /// The fetch that stored the items; `None` when another worker had the source at that
    /// moment.
    pub first_fetch: Option<FeedReport>,
}

/// Fetches the page at `url` once through the guarded client and the per-host limiter, and
/// reads it with `config`: the items it would give, nothing stored.
pub async fn preview_scraped(
    fetcher: &Fetcher,
    url: &str,
    config: &ScrapeConfig,
) -> Result<ScrapePreview, ScrapeSourceError> {
    Ok(preview_with_response(fetcher, url, config).await?.0)
}

/// [`preview_scraped`], also returning the response, to record as the source's fetch.
async fn preview_with_response(
    fetcher: &Fetcher,
    url: &str,
    config: &ScrapeConfig,
) -> Result<(ScrapePreview, FetchResponse), ScrapeSourceError> {
    // A bad configuration is refused before any request leaves the server.
    config.validate()?;
    let url = parse_user_url(url)?;
    let response = fetcher
        .fetch_page(&url)
        .await
        .map_err(|source| DiscoverError::Fetch {
            url: url.to_string(),
            source,
        })?;
    if !response.is_success() {
        return Err(DiscoverError::Status {
            url: url.to_string(),
            status: response.status,
        }
        .into());
    }
    let body = response.body.clone();
    let options = scrape_options(&response);
    let config = config.clone();
    let sanitizer = fetcher.sanitizer();
    let scraped = tokio::task::spawn_blocking(move || {
        let mut page = tidings_scrape::scrape(&body, &options, &config)?;
        tidings_feed::sanitize_items(&mut page.items, &sanitizer);
        Ok::<_, ScrapeError>(page)
    })
    .await
    .map_err(|error| ScrapeError::MissingData(format!("the scraper failed: {error}")))??;
    let preview = ScrapePreview {
        url: tidings_feed::normalize_feed_url(&url).to_string(),
        title: scraped.title,
        items: scraped.items,
    };
    Ok((preview, response))
}

/// Subscribes `user_id` to the page at `request.url` read with `request.config`, once the
/// live page gives items with it (so a configuration that finds nothing is refused with the
/// selector at fault), and stores that fetch as the source's first.
pub async fn subscribe_scraped(
    fetcher: &Fetcher,
    user_id: i64,
    request: &ScrapedSourceRequest,
) -> Result<ScrapedSource, ScrapeSourceError> {
    let (preview, response) = preview_with_response(fetcher, &request.url, &request.config).await?;
    let subscription = fetcher
        .store()
        .subscribe_scraped(
            user_id,
            &NewSubscription {
                feed_url: preview.url.clone(),
                group_id: request.group_id,
                title: request.title.clone(),
                interval_minutes: request.interval_minutes,
            },
            &config_json(&request.config),
            request.max_subscriptions,
        )
        .await?;
    let first_fetch = first_fetch(fetcher, subscription.feed_id, response).await?;
    Ok(ScrapedSource {
        subscription,
        preview,
        first_fetch,
    })
}

/// Gives the scraped source behind the user's subscription `id` a new configuration, once
/// the live page gives items with it, and stores that fetch. Only its sole subscriber may.
pub async fn reconfigure_scraped(
    fetcher: &Fetcher,
    user_id: i64,
    id: i64,
    config: &ScrapeConfig,
) -> Result<ScrapedSource, ScrapeSourceError> {
    let current = fetcher.store().subscription(user_id, id).await?;
    if current.scrape_config.is_none() {
        return Err(StoreError::Invalid(
            "this subscription is a feed, not a scraped source".into(),
        )
        .into());
    }
    let (preview, response) = preview_with_response(fetcher, &current.feed_url, config).await?;
    let feed_id = fetcher
        .store()
        .update_scrape_config(user_id, id, &config_json(config))
        .await?;
    let first_fetch = first_fetch(fetcher, feed_id, response).await?;
    let subscription = fetcher.store().subscription(user_id, id).await?;
    Ok(ScrapedSource {
        subscription,
        preview,
        first_fetch,
    })
}

/// Records `response` as the source's fetch (no second request).
async fn first_fetch(
    fetcher: &Fetcher,
    feed_id: i64,
    response: FetchResponse,
) -> Result<Option<FeedReport>, ScrapeSourceError> {
    match fetcher.refresh_feed_with(feed_id, response).await {
        Ok(report) => Ok(Some(report)),
        Err(RefreshError::Busy(_) | RefreshError::NotFound(_)) => Ok(None),
        Err(RefreshError::Store(error)) => Err(error.into()),
    }
}

/// The configuration as stored: normalized (trimmed, blanks dropped), so that equal
/// configurations are equal text.
pub fn config_json(config: &ScrapeConfig) -> String {
    // A struct of strings and an enum always serializes.
    serde_json::to_string(&config.normalized()).unwrap_or_default()
}

fn scrape_options(response: &FetchResponse) -> ScrapeOptions {
    ScrapeOptions {
        page_url: Some(response.url.clone()),
        http_charset: response.charset.clone(),
        ..ScrapeOptions::default()
    }
}
