//! Scraped sources (F7): subscribe to a page without a feed with a scraper configuration,
//! preview what a configuration makes of the live page without saving, and change it.

use axum::extract::State;
use axum::http::StatusCode;
use serde::{Deserialize, Serialize};
use tidings_scrape::{ScrapeConfig, ScrapeError};
use tidings_store::StoreError;
use tidings_worker::{
    ScrapePreview, ScrapeSourceError, ScrapedSource, ScrapedSourceRequest, SubscribeError,
};
use utoipa::ToSchema;
use utoipa_axum::router::OpenApiRouter;
use utoipa_axum::routes;

use crate::base::auth::Auth;
use crate::base::error::{ApiError, ApiResult, ErrorBody, ErrorCategory};
use crate::base::extract::{Json, Path};
use crate::base::limits::within_limit;
use crate::base::state::AppState;
use crate::base::subscriptions::{
    SubscriptionView, check_group_and_interval, subscribe_error, subscription_limit, view,
};
use crate::base::time::time;

pub(crate) fn router() -> OpenApiRouter<AppState> {
    OpenApiRouter::new()
        .routes(routes!(create_scraped_source))
        .routes(routes!(preview))
        .routes(routes!(reconfigure))
}

/// A page and how to read it, to preview.
#[derive(Debug, Deserialize, ToSchema)]
#[serde(deny_unknown_fields)]
pub struct PreviewScrape {
    /// The page's URL (`https://` is added when it has no scheme).
    pub url: String,
    /// How to read it.
    pub scraper: ScrapeConfig,
}

/// A scraped source to subscribe to.
#[derive(Debug, Deserialize, ToSchema)]
#[serde(deny_unknown_fields)]
pub struct CreateScrapedSource {
    /// The page's URL (`https://` is added when it has no scheme).
    pub url: String,
    /// How to read it.
    pub scraper: ScrapeConfig,
    /// The group; the default group when absent.
    pub group_id: Option<i64>,
    /// A custom title; the page's `<title>` otherwise.
    pub title: Option<String>,
    /// The fetch interval in minutes (30–720, step 30; default 60).
    pub interval_minutes: Option<i64>,
}

/// A new configuration for a scraped source.
#[derive(Debug, Deserialize, ToSchema)]
#[serde(deny_unknown_fields)]
pub struct UpdateScraper {
    /// How to read the page from now on.
    pub scraper: ScrapeConfig,
}

/// One item a configuration finds, as it would be stored.
#[derive(Debug, Serialize, ToSchema)]
pub struct PreviewItem {
    /// The title, as plain text.
    pub title: Option<String>,
    /// The link, absolute.
    pub url: Option<String>,
    /// The date read from the page; null when it gives none (the fetch time is used then).
    pub published_at: Option<String>,
    /// The summary, sanitized HTML.
    pub summary: Option<String>,
}

/// What a configuration makes of the live page.
#[derive(Debug, Serialize, ToSchema)]
pub struct ScrapePreviewView {
    /// The page's URL as it would be stored (normalized).
    pub url: String,
    /// The page's `<title>`.
    pub title: Option<String>,
    /// The items, in page order.
    pub items: Vec<PreviewItem>,
}

impl From<ScrapePreview> for ScrapePreviewView {
    fn from(preview: ScrapePreview) -> Self {
        ScrapePreviewView {
            url: preview.url,
            title: preview.title,
            items: preview
                .items
                .into_iter()
                .map(|item| PreviewItem {
                    title: item.title,
                    url: item.url,
                    published_at: item.published.map(|at| time(at.timestamp())),
                    summary: item.summary,
                })
                .collect(),
        }
    }
}

/// A scraped source after subscribing or reconfiguring, with what its page gave.
#[derive(Debug, Serialize, ToSchema)]
pub struct ScrapedSourceOutcome {
    /// The subscription (its `scraper` holds the configuration).
    pub subscription: SubscriptionView,
    /// What the page gave with the configuration; these items are stored.
    pub preview: ScrapePreviewView,
}

/// The answer for a scraped source that could not be previewed, created or changed.
fn scrape_source_error(error: ScrapeSourceError) -> ApiError {
    match error {
        ScrapeSourceError::Page(page) => subscribe_error("url", SubscribeError::Discover(page)),
        ScrapeSourceError::Scrape(ScrapeError::InvalidConfig { field, reason }) => {
            ApiError::validation(
                format!("The field scraper.{field} is not valid: {reason}."),
                "Correct the scraper configuration; docs/scraped-sources.md lists its fields for each kind.",
            )
        }
        ScrapeSourceError::Scrape(error) => ApiError::new(
            StatusCode::BAD_REQUEST,
            "scrape_failed",
            ErrorCategory::Feed,
            format!("The page gives no items with this configuration: {error}."),
            "Look at the page's source and adjust the named selector or key path; the preview \
             shows what a configuration finds.",
        ),
        ScrapeSourceError::Store(StoreError::LimitReached { limit, .. }) => {
            subscription_limit(limit)
        }
        ScrapeSourceError::Store(error) => ApiError::from(error),
    }
}

fn outcome(source: ScrapedSource) -> ScrapedSourceOutcome {
    ScrapedSourceOutcome {
        subscription: view(source.subscription),
        preview: source.preview.into(),
    }
}

/// Preview a scraped source: the page is fetched once (through the address guard) and read
/// with the configuration; nothing is saved. Counted against the subscribe rate limit, since
/// it makes a request.
#[utoipa::path(post, path = "/scraped-sources/preview", tag = "subscriptions",
    request_body = PreviewScrape,
    responses(
        (status = 200, description = "What the configuration finds on the live page", body = ScrapePreviewView),
        (status = 400, description = "An invalid configuration; a page that is refused, does not answer, or gives no items with it (the message names the selector or key path that matched nothing)", body = ErrorBody),
        (status = 429, description = "Too many subscribe requests", body = ErrorBody),
    ))]
async fn preview(
    State(state): State<AppState>,
    auth: Auth,
    Json(body): Json<PreviewScrape>,
) -> ApiResult<Json<ScrapePreviewView>> {
    within_limit(&state.limits.subscribe, &format!("user:{}", auth.user.id)).await?;
    let preview = tidings_worker::preview_scraped(&state.fetcher, &body.url, &body.scraper)
        .await
        .map_err(scrape_source_error)?;
    Ok(Json(preview.into()))
}

/// Subscribe to a page without a feed, read with a scraper configuration (F7). The page is
/// fetched once and must give items with it; that fetch stores them. Limited like
/// subscribing (10 a minute, `TIDINGS_MAX_SUBSCRIPTIONS`).
#[utoipa::path(post, path = "/scraped-sources", tag = "subscriptions",
    request_body = CreateScrapedSource,
    responses(
        (status = 201, description = "Subscribed; the page's items are stored", body = ScrapedSourceOutcome),
        (status = 400, description = "An invalid configuration; a page that is refused, does not answer, or gives no items with it", body = ErrorBody),
        (status = 404, description = "The group_id is not one of the user's groups", body = ErrorBody),
        (status = 409, description = "Already subscribed; the page is a feed or is followed with another configuration; or the subscription limit is reached", body = ErrorBody),
        (status = 429, description = "Too many subscribe requests", body = ErrorBody),
    ))]
async fn create_scraped_source(
    State(state): State<AppState>,
    auth: Auth,
    Json(body): Json<CreateScrapedSource>,
) -> ApiResult<(StatusCode, Json<ScrapedSourceOutcome>)> {
    let user_id = auth.user.id;
    within_limit(&state.limits.subscribe, &format!("user:{user_id}")).await?;
    if body.url.trim().is_empty() {
        return Err(ApiError::validation(
            "The field url is empty.",
            "Give the address of the page to scrape.",
        ));
    }
    check_group_and_interval(&state, user_id, body.group_id, body.interval_minutes).await?;
    let limit = state.config.max_subscriptions;
    if state.store.count_subscriptions(user_id).await? >= limit {
        return Err(subscription_limit(limit));
    }
    let request = ScrapedSourceRequest {
        url: body.url,
        config: body.scraper,
        group_id: body.group_id,
        title: body.title,
        interval_minutes: body.interval_minutes,
        max_subscriptions: Some(limit),
    };
    let mut source = tidings_worker::subscribe_scraped(&state.fetcher, user_id, &request)
        .await
        .map_err(scrape_source_error)?;
    // As it is after its first fetch (title, status).
    source.subscription = state
        .store
        .subscription(user_id, source.subscription.id)
        .await?;
    Ok((StatusCode::CREATED, Json(outcome(source))))
}

/// Change the configuration of a scraped source. The page is fetched once and must give
/// items with the new configuration; it is read again at once. Only a source's sole
/// subscriber may change it.
#[utoipa::path(put, path = "/subscriptions/{id}/scraper", tag = "subscriptions",
    request_body = UpdateScraper,
    params(("id" = i64, Path, description = "The subscription's id")),
    responses(
        (status = 200, body = ScrapedSourceOutcome),
        (status = 400, description = "An invalid configuration; the subscription is a feed; a page that is refused, does not answer, or gives no items with it", body = ErrorBody),
        (status = 404, body = ErrorBody),
        (status = 409, description = "Other users follow this source", body = ErrorBody),
        (status = 429, description = "Too many subscribe requests", body = ErrorBody),
    ))]
async fn reconfigure(
    State(state): State<AppState>,
    auth: Auth,
    Path(id): Path<i64>,
    Json(body): Json<UpdateScraper>,
) -> ApiResult<Json<ScrapedSourceOutcome>> {
    state.store.subscription(auth.user.id, id).await?;
    within_limit(&state.limits.subscribe, &format!("user:{}", auth.user.id)).await?;
    let source =
        tidings_worker::reconfigure_scraped(&state.fetcher, auth.user.id, id, &body.scraper)
            .await
            .map_err(scrape_source_error)?;
    Ok(Json(outcome(source)))
}
