//! Subscriptions (F29, F30, F15): subscribe by a page or feed URL (discovery, the SSRF guard
//! and a first fetch), list with what the reader shows, change, unsubscribe, resume, refresh.

use axum::extract::State;
use axum::http::{HeaderValue, StatusCode, header};
use axum::response::{IntoResponse, Response};
use serde::{Deserialize, Serialize};
use tidings_store::{FullTextMode, Subscription, SubscriptionChanges, unix_now};
use tidings_worker::{RefreshError, ResolvedFeed};
use utoipa::ToSchema;
use utoipa_axum::router::OpenApiRouter;
use utoipa_axum::routes;

use crate::base::auth::Auth;
use crate::base::error::{ApiError, ApiResult, ErrorBody};
use crate::base::extract::{Json, Path};
use crate::base::limits::within_limit;
use crate::base::state::AppState;
use crate::base::subscriptions::{
    ResumedFeeds, Subscribe, SubscriptionView, check_group_and_interval, push_view,
    subscribe_checked, subscribe_error, view,
};

/// How often one feed may be refreshed by hand, whoever asks (F15).
const MANUAL_REFRESH_SECONDS: i64 = 60;

pub(crate) fn router() -> OpenApiRouter<AppState> {
    OpenApiRouter::new()
        .routes(routes!(list_subscriptions, subscribe))
        .routes(routes!(get_subscription, update_subscription, unsubscribe))
        .routes(routes!(resume))
        .routes(routes!(resume_stopped))
        .routes(routes!(refresh))
        .routes(routes!(favicon))
}

/// Reads a `full_text` field: `auto`, `always` or `never`.
fn full_text_mode(value: Option<&str>) -> ApiResult<Option<FullTextMode>> {
    value
        .map(|text| {
            FullTextMode::parse(text.trim()).ok_or_else(|| {
                ApiError::validation(
                    format!("The field full_text must be auto, always or never, not {text:?}."),
                    "Choose auto (the article page when the feed's text is short), always or \
                     never.",
                )
            })
        })
        .transpose()
}

/// The subscriptions.
#[derive(Debug, Serialize, ToSchema)]
pub struct SubscriptionList {
    /// By title.
    pub subscriptions: Vec<SubscriptionView>,
}

/// One subscription.
#[derive(Debug, Serialize, ToSchema)]
pub struct SubscriptionEnvelope {
    /// The subscription.
    pub subscription: SubscriptionView,
}

/// A subscription after subscribing or changing its feed URL, with how the typed URL was read.
#[derive(Debug, Serialize, ToSchema)]
pub struct SubscriptionOutcome {
    /// The subscription.
    pub subscription: SubscriptionView,
    /// The URL discovery started from: the one given, with the scheme that was used when it
    /// had none (`example.com/feed` → `https://example.com/feed`, or `http://…` when https did
    /// not answer). Null when no URL was given (a change of title, group or interval only).
    pub requested_url: Option<String>,
    /// The scheme added to a URL given without one: `https`, or `http` when https did not
    /// answer. Null when the URL had its scheme.
    #[schema(example = "https")]
    pub scheme_added: Option<String>,
    /// A sentence for the user about the scheme added, when one was.
    pub notice: Option<String>,
}

impl SubscriptionOutcome {
    fn new(subscription: Subscription, resolved: Option<&ResolvedFeed>) -> SubscriptionOutcome {
        SubscriptionOutcome {
            subscription: view(subscription),
            requested_url: resolved.map(|r| r.requested_url.to_string()),
            scheme_added: resolved.and_then(|r| r.scheme_added).map(str::to_owned),
            notice: resolved.and_then(ResolvedFeed::scheme_notice),
        }
    }
}

/// Changes to a subscription; absent fields stay as they are.
#[derive(Debug, Deserialize, ToSchema)]
#[serde(deny_unknown_fields)]
pub struct UpdateSubscription {
    /// A custom title; `null` or `""` goes back to the feed's own.
    #[serde(default, deserialize_with = "double_option")]
    #[schema(value_type = Option<String>)]
    pub title: Option<Option<String>>,
    /// Another of the user's groups.
    pub group_id: Option<i64>,
    /// The fetch interval in minutes (30–720, step 30).
    pub interval_minutes: Option<i64>,
    /// Full text: `auto`, `always` or `never` (see the subscription's `full_text`).
    pub full_text: Option<String>,
    /// Summarize the feed's new items when the `summarize` preference is `chosen` (F42).
    pub summarize: Option<bool>,
    /// Pause (`true`) or resume (`false`) fetching for this user: the feed is fetched while
    /// one subscription to it is not paused, so pausing never stops another user's items.
    /// A paused user's sync apps get the items that arrived meanwhile when they resume.
    pub suspended: Option<bool>,
    /// Duplicates across feeds: `merge`, `prefer` (this feed's copy of a story is the one
    /// listed) or `never` (never merge this feed's items with others).
    pub duplicates: Option<String>,
    /// Another URL for this feed (e.g. after the site moved it): checked as when subscribing
    /// (the address guard, discovery of a page's feed, the scheme tried when missing,
    /// normalization) and counted against the subscribe rate limit.
    pub feed_url: Option<String>,
    /// Always translate the feed's new items into the user's language (`true`), in the
    /// background, or stop (`false`) (issue 37). The language is `translate_to` when given,
    /// else the user's (their language setting, else the browser's, else English).
    pub translate: Option<bool>,
    /// The language `translate: true` translates into, a BCP 47 tag.
    #[schema(example = "en")]
    pub translate_to: Option<String>,
}

/// Tells an absent field (`None`) from an explicit `null` (`Some(None)`).
pub(crate) fn double_option<'de, D>(deserializer: D) -> Result<Option<Option<String>>, D::Error>
where
    D: serde::Deserializer<'de>,
{
    Ok(Some(Option::<String>::deserialize(deserializer)?))
}

/// The user's subscriptions, with unread counts, status and last error (F30).
#[utoipa::path(get, path = "/subscriptions", tag = "subscriptions",
    responses((status = 200, body = SubscriptionList), (status = 401, body = ErrorBody)))]
async fn list_subscriptions(
    State(state): State<AppState>,
    auth: Auth,
) -> ApiResult<Json<SubscriptionList>> {
    let subscriptions = state.store.list_subscriptions(auth.user.id).await?;
    let subscriptions: Vec<_> = subscriptions.into_iter().map(view).collect();
    Ok(Json(SubscriptionList { subscriptions }))
}

/// Subscribe by a feed or page URL: the page's feeds are discovered, the address is checked
/// against the outbound policy, and the feed is fetched once so that it has items at once.
/// Limited to 10 a minute per user and to `TIDINGS_MAX_SUBSCRIPTIONS` per user (F29).
#[utoipa::path(post, path = "/subscriptions", tag = "subscriptions", request_body = Subscribe,
    responses(
        (status = 201, description = "Subscribed and fetched once", body = SubscriptionOutcome),
        (status = 404, description = "The group_id is not one of the user's groups", body = ErrorBody),
        (status = 409, description = "Already subscribed, or the subscription limit is reached", body = ErrorBody),
        (status = 400, description = "No feed found, or the address is refused", body = ErrorBody),
        (status = 429, description = "Too many subscribe requests", body = ErrorBody),
    ))]
async fn subscribe(
    State(state): State<AppState>,
    auth: Auth,
    Json(mut body): Json<Subscribe>,
) -> ApiResult<(StatusCode, Json<SubscriptionOutcome>)> {
    let full_text = full_text_mode(body.full_text.take().as_deref())?;
    let (mut subscription, resolved) = subscribe_checked(&state, auth.user.id, body).await?;
    if full_text.is_some_and(|mode| mode != subscription.full_text) {
        let changes = SubscriptionChanges {
            full_text,
            ..SubscriptionChanges::default()
        };
        subscription = state
            .store
            .update_subscription(auth.user.id, subscription.id, &changes)
            .await?;
    }
    Ok((
        StatusCode::CREATED,
        Json(SubscriptionOutcome::new(subscription, Some(&resolved))),
    ))
}

/// One of the user's subscriptions.
#[utoipa::path(get, path = "/subscriptions/{id}", tag = "subscriptions",
    params(("id" = i64, Path, description = "The subscription's id")),
    responses((status = 200, body = SubscriptionEnvelope), (status = 404, body = ErrorBody)))]
async fn get_subscription(
    State(state): State<AppState>,
    auth: Auth,
    Path(id): Path<i64>,
) -> ApiResult<Json<SubscriptionEnvelope>> {
    let subscription = state.store.subscription(auth.user.id, id).await?;
    let websub = state
        .store
        .websub_subscription(subscription.feed_id)
        .await?;
    let enabled = state.fetcher.config().websub.is_on();
    let mut subscription = view(subscription);
    subscription.push = websub.map(|row| push_view(row, enabled, chrono::Utc::now().timestamp()));
    Ok(Json(SubscriptionEnvelope { subscription }))
}

/// Change a subscription's title, group, interval, full-text mode, summaries, pause, "always translate" or feed URL. A new feed URL goes through
/// what subscribing does (the subscribe rate limit, the address guard, discovery of a page's
/// feed, the scheme tried when missing, normalization), and the new feed is fetched once.
#[utoipa::path(patch, path = "/subscriptions/{id}", tag = "subscriptions",
    request_body = UpdateSubscription,
    params(("id" = i64, Path, description = "The subscription's id")),
    responses(
        (status = 200, body = SubscriptionOutcome),
        (status = 404, body = ErrorBody),
        (status = 409, description = "Already subscribed to the new URL", body = ErrorBody),
        (status = 400, description = "Bad interval; a URL that is not allowed, does not answer or leads to no feed", body = ErrorBody),
        (status = 429, description = "Too many subscribe requests (with a new feed URL)", body = ErrorBody),
    ))]
async fn update_subscription(
    State(state): State<AppState>,
    auth: Auth,
    headers: axum::http::HeaderMap,
    Path(id): Path<i64>,
    Json(body): Json<UpdateSubscription>,
) -> ApiResult<Json<SubscriptionOutcome>> {
    // Check everything before changing anything.
    state.store.subscription(auth.user.id, id).await?;
    let translate_to = match (body.translate, body.translate_to.as_deref()) {
        (Some(false), _) => Some(None),
        (Some(true), given) | (None, given @ Some(_)) => Some(Some(
            crate::base::translations::target_language(&state, auth.user.id, &headers, given)
                .await?,
        )),
        (None, None) => None,
    };
    check_group_and_interval(&state, auth.user.id, body.group_id, body.interval_minutes).await?;
    let full_text = full_text_mode(body.full_text.as_deref())?;
    let resolved = match body.feed_url.as_deref() {
        None => None,
        Some(text) => {
            within_limit(&state.limits.subscribe, &format!("user:{}", auth.user.id)).await?;
            if text.trim().is_empty() {
                return Err(ApiError::validation(
                    "The field feed_url is empty.",
                    "Give the address of the feed or of its site.",
                ));
            }
            Some(
                tidings_worker::resolve_feed(&state.fetcher, text)
                    .await
                    .map_err(|error| subscribe_error("feed_url", error))?,
            )
        }
    };
    let changes = SubscriptionChanges {
        title: body
            .title
            .map(|title| title.filter(|t| !t.trim().is_empty())),
        group_id: body.group_id,
        interval_minutes: body.interval_minutes,
        full_text,
        summarize: body.summarize,
        suspended: body.suspended,
        duplicates: body.duplicates.map(|d| d.trim().to_lowercase()),
    };
    state
        .store
        .update_subscription(auth.user.id, id, &changes)
        .await?;
    if let Some(resolved) = &resolved {
        let old_feed = state.store.subscription(auth.user.id, id).await?.feed_id;
        let new_feed = state
            .store
            .change_subscription_feed(auth.user.id, id, &resolved.feed_url)
            .await?;
        if new_feed != old_feed {
            // Fetch the new feed now so the user sees its items; failures show as status.
            if let Err(error) = state.fetcher.refresh_feed(new_feed).await {
                tracing::info!(%error, feed = new_feed, "first fetch after a URL change");
            }
        }
    }
    if let Some(language) = translate_to {
        let now = chrono::Utc::now().timestamp();
        state
            .store
            .set_subscription_translation(auth.user.id, id, language.as_deref(), now)
            .await?;
        state.fetcher.translator().wake();
    }
    let subscription = state.store.subscription(auth.user.id, id).await?;
    Ok(Json(SubscriptionOutcome::new(
        subscription,
        resolved.as_ref(),
    )))
}

/// Unsubscribe. The user's read and starred states of the feed's items go with it; the
/// shared feed stays for its other subscribers.
#[utoipa::path(delete, path = "/subscriptions/{id}", tag = "subscriptions",
    params(("id" = i64, Path, description = "The subscription's id")),
    responses((status = 204, description = "Unsubscribed"), (status = 404, body = ErrorBody)))]
async fn unsubscribe(
    State(state): State<AppState>,
    auth: Auth,
    Path(id): Path<i64>,
) -> ApiResult<StatusCode> {
    state.store.unsubscribe(auth.user.id, id).await?;
    Ok(StatusCode::NO_CONTENT)
}

/// Resume a stopped or failing feed: it is fetched at the next tick (F15).
#[utoipa::path(post, path = "/subscriptions/{id}/resume", tag = "subscriptions",
    params(("id" = i64, Path, description = "The subscription's id")),
    responses((status = 200, body = SubscriptionEnvelope), (status = 404, body = ErrorBody)))]
async fn resume(
    State(state): State<AppState>,
    auth: Auth,
    Path(id): Path<i64>,
) -> ApiResult<Json<SubscriptionEnvelope>> {
    let subscription = state.store.subscription(auth.user.id, id).await?;
    state.store.resume_feed(subscription.feed_id).await?;
    let subscription = state.store.subscription(auth.user.id, id).await?;
    let websub = state
        .store
        .websub_subscription(subscription.feed_id)
        .await?;
    let enabled = state.fetcher.config().websub.is_on();
    let mut subscription = view(subscription);
    subscription.push = websub.map(|row| push_view(row, enabled, chrono::Utc::now().timestamp()));
    Ok(Json(SubscriptionEnvelope { subscription }))
}

/// Resume every stopped feed the user follows (F15): each is fetched at the next tick, as
/// after its own resume. Feeds that are only failing (backoff) are left to their schedule.
#[utoipa::path(post, path = "/subscriptions/resume-stopped", tag = "subscriptions",
    responses(
        (status = 200, description = "The stopped feeds were resumed", body = ResumedFeeds),
        (status = 401, description = "Not signed in", body = ErrorBody),
        (status = 403, description = "A read-only API key, or a cross-site request", body = ErrorBody),
        (status = 429, description = "Too many requests", body = ErrorBody),
    ))]
async fn resume_stopped(
    State(state): State<AppState>,
    auth: Auth,
) -> ApiResult<Json<ResumedFeeds>> {
    let resumed = state.store.resume_stopped_feeds(Some(auth.user.id)).await?;
    Ok(Json(ResumedFeeds { resumed }))
}

/// How a manual refresh went.
#[derive(Debug, Serialize, ToSchema)]
pub struct RefreshOutcome {
    /// The subscription after the fetch.
    pub subscription: SubscriptionView,
    /// `fetched`, or `busy` when a worker was fetching it at that moment.
    pub result: String,
    /// New items stored.
    pub items_inserted: u64,
    /// Known items that changed.
    pub items_updated: u64,
}

/// Fetch the feed now, whatever its schedule (F15); at most once a minute per feed.
#[utoipa::path(post, path = "/subscriptions/{id}/refresh", tag = "subscriptions",
    params(("id" = i64, Path, description = "The subscription's id")),
    responses(
        (status = 200, body = RefreshOutcome),
        (status = 404, body = ErrorBody),
        (status = 429, description = "Refreshed less than a minute ago", body = ErrorBody),
    ))]
async fn refresh(
    State(state): State<AppState>,
    auth: Auth,
    Path(id): Path<i64>,
) -> ApiResult<Json<RefreshOutcome>> {
    let subscription = state.store.subscription(auth.user.id, id).await?;
    if let Err(wait) = state
        .store
        .request_refresh(subscription.feed_id, unix_now(), MANUAL_REFRESH_SECONDS)
        .await?
    {
        let mut error = ApiError::limited(crate::ratelimit::RateDecision {
            allowed: false,
            limit: 1,
            remaining: 0,
            reset_seconds: wait.max(1) as u64,
            scope: "feed-refresh",
        });
        error.detail.message =
            format!("This feed was refreshed less than a minute ago: try again in {wait} s.");
        return Err(error);
    }
    let (result, inserted, updated) = match state.fetcher.refresh_feed(subscription.feed_id).await {
        Ok(report) => ("fetched", report.items_inserted, report.items_updated),
        Err(RefreshError::Busy(_)) => ("busy", 0, 0),
        Err(RefreshError::NotFound(_)) => return Err(ApiError::not_found("Subscription")),
        Err(RefreshError::Store(error)) => return Err(error.into()),
    };
    let subscription = state.store.subscription(auth.user.id, id).await?;
    Ok(Json(RefreshOutcome {
        subscription: view(subscription),
        result: result.to_string(),
        items_inserted: inserted,
        items_updated: updated,
    }))
}

/// The feed's icon (F3), when it has one.
#[utoipa::path(get, path = "/subscriptions/{id}/favicon", tag = "subscriptions",
    params(("id" = i64, Path, description = "The subscription's id")),
    responses(
        (status = 200, description = "The icon's bytes, with its image MIME type", content_type = "image/*", body = Vec<u8>),
        (status = 404, description = "No icon", body = ErrorBody),
    ))]
async fn favicon(
    State(state): State<AppState>,
    auth: Auth,
    Path(id): Path<i64>,
) -> ApiResult<Response> {
    let subscription = state.store.subscription(auth.user.id, id).await?;
    let icon = state
        .store
        .favicon(subscription.feed_id)
        .await?
        .and_then(|icon| Some((icon.data?, icon.mime_type?)))
        .filter(|(_, mime)| mime.starts_with("image/"));
    let Some((data, mime)) = icon else {
        return Err(ApiError::not_found("Icon"));
    };
    let mut response = data.into_response();
    let headers = response.headers_mut();
    // Only image types are stored; an SVG could carry script, so it is sandboxed.
    headers.insert(
        header::CONTENT_TYPE,
        HeaderValue::from_str(&mime)
            .unwrap_or(HeaderValue::from_static("application/octet-stream")),
    );
    headers.insert(
        header::CACHE_CONTROL,
        HeaderValue::from_static("private, max-age=86400"),
    );
    headers.insert(
        header::CONTENT_SECURITY_POLICY,
        HeaderValue::from_static("default-src 'none'; style-src 'unsafe-inline'; sandbox"),
    );
    Ok(response)
}
