//! Subscriptions as every part of the server shows and makes them: the subscription's view,
//! and subscribing with every check (the rate limit, the group, the interval, the subscription
//! limit, the address policy, discovery) that the REST API, scraped sources and the sync APIs
//! all go through, so that no app gets around one.

use axum::http::StatusCode;
use serde::{Deserialize, Serialize};
use tidings_fetch::FetchError;
use tidings_store::{FetchStatus, FullTextMode, StoreError, Subscription};
use tidings_worker::{DiscoverError, ResolvedFeed, SubscribeError, SubscribeRequest};
use utoipa::ToSchema;

use crate::base::error::{ApiError, ApiResult, ErrorCategory};
use crate::base::limits::within_limit;
use crate::base::state::AppState;
use crate::base::time::time;

/// A subscription with what the reader shows about its feed.
#[derive(Debug, Serialize, ToSchema)]
pub struct SubscriptionView {
    /// The subscription's id.
    pub id: i64,
    /// The shared feed's id (items carry it).
    pub feed_id: i64,
    /// The group it is in.
    pub group_id: i64,
    /// The title to show: the custom title, else the feed's, else its URL.
    pub title: String,
    /// The user's own title, if set.
    pub custom_title: Option<String>,
    /// The title the feed gives itself.
    pub feed_title: Option<String>,
    /// The feed's URL.
    pub feed_url: String,
    /// The site the feed belongs to.
    pub site_url: Option<String>,
    /// Where to load the feed's icon from; absent when it has none.
    pub favicon_url: Option<String>,
    /// Unread items.
    pub unread_count: i64,
    /// `active`, `backoff` (failing, retried later and later) or `stopped` (until resumed).
    #[schema(value_type = String, example = "active")]
    pub status: FetchStatus,
    /// Why it is in backoff or stopped.
    pub status_reason: Option<String>,
    /// The last fetch error.
    pub last_error: Option<String>,
    /// The last HTTP status.
    pub last_http_status: Option<i64>,
    /// When the feed is next fetched.
    pub next_check_at: String,
    /// When it was last fetched successfully.
    pub last_success_at: Option<String>,
    /// The fetch interval in minutes (30–720, step 30).
    pub interval_minutes: i64,
    /// Full text (F6): `auto` fetches the article page of new items whose feed text is
    /// shorter than the threshold (1,500 characters by default), `always` of every new item,
    /// `never` of none.
    #[schema(value_type = String, example = "auto")]
    pub full_text: FullTextMode,
    /// Whether the feed's new items are summarized for this user when their `summarize`
    /// preference is `chosen` (F42).
    pub summarize: bool,
    /// Whether the user paused the subscription: the feed is not fetched for them (another
    /// user's subscription to the same feed still fetches it), and its new items reach their
    /// sync apps only when they resume, above what the apps already have.
    pub suspended: bool,
    /// How the feed's copies of stories that also arrive from the user's other feeds are
    /// listed: `merge` (once, the copy the user saw first), `prefer` (once, this feed's copy)
    /// or `never` (this feed's items are never merged with others).
    #[schema(example = "merge")]
    pub duplicates: String,
    /// The feed's language, a BCP 47 tag: what the feed declares, unless most of its newest
    /// items are detected in another language; null until known.
    #[schema(example = "ja")]
    pub language: Option<String>,
    /// Whether the feed's new items are translated for this user in the background (issue
    /// 37), into `translate_to`.
    pub translate: bool,
    /// The language they are translated into, a BCP 47 tag; null when `translate` is off.
    #[schema(example = "en")]
    pub translate_to: Option<String>,
    /// When the user subscribed.
    pub created_at: String,
    /// For a scraped source (F7), how its page is read; null for a feed.
    pub scraper: Option<tidings_scrape::ScrapeConfig>,
    /// WebSub push (F18), in `GET /subscriptions/{id}` only, when the feed advertises (or
    /// advertised) a hub; absent otherwise and in lists.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub push: Option<PushView>,
}

/// A feed's WebSub push as the reader shows it (F18).
#[derive(Debug, Serialize, ToSchema)]
pub struct PushView {
    /// Whether this installation subscribes feeds to their hubs (`TIDINGS_WEBSUB` with a
    /// public `TIDINGS_BASE_URL`).
    pub enabled: bool,
    /// `pending` (asked, awaiting the hub's verification), `active` (the hub pushes until
    /// `active_until`), `denied` (the hub refused), or `inactive` (no subscription: push off,
    /// nobody asked yet, or the lease lapsed).
    #[schema(example = "active")]
    pub state: String,
    /// The hub the feed advertises.
    pub hub_url: Option<String>,
    /// The topic (the feed's `self` URL) subscribed to.
    pub topic_url: Option<String>,
    /// When the hub's lease ends (renewed before).
    pub active_until: Option<String>,
    /// The hub's reason for a denial.
    pub denied_reason: Option<String>,
    /// The last failed request to the hub.
    pub last_error: Option<String>,
    /// Pushes stored.
    pub pushes: i64,
    /// When the last push arrived.
    pub last_push_at: Option<String>,
    /// Pushes dropped for a bad or missing signature.
    pub rejected_pushes: i64,
}

/// The push view of a feed's WebSub row at `now`.
pub(crate) fn push_view(
    row: tidings_store::WebSubSubscription,
    enabled: bool,
    now: i64,
) -> PushView {
    use tidings_store::{WebSubMode, WebSubState};
    let active = row.is_active(now);
    let state = if active {
        "active"
    } else if row.state == WebSubState::Denied {
        "denied"
    } else if row.pending_mode == Some(WebSubMode::Subscribe) {
        "pending"
    } else {
        "inactive"
    };
    PushView {
        enabled,
        state: state.into(),
        hub_url: row.hub_url.or(row.sub_hub_url),
        topic_url: row.sub_topic_url.or(row.topic_url),
        active_until: active.then_some(row.active_until).flatten().map(time),
        denied_reason: row.denied_reason,
        last_error: row.last_error,
        pushes: row.pushes,
        last_push_at: row.last_push_at.map(time),
        rejected_pushes: row.rejected_pushes,
    }
}

/// The API's view of a subscription.
pub(crate) fn view(subscription: Subscription) -> SubscriptionView {
    let title = subscription
        .custom_title
        .clone()
        .or_else(|| subscription.feed_title.clone())
        .unwrap_or_else(|| subscription.feed_url.clone());
    SubscriptionView {
        favicon_url: subscription
            .has_favicon
            .then(|| format!("/api/v1/subscriptions/{}/favicon", subscription.id)),
        id: subscription.id,
        feed_id: subscription.feed_id,
        group_id: subscription.group_id,
        title,
        custom_title: subscription.custom_title,
        feed_title: subscription.feed_title,
        feed_url: subscription.feed_url,
        site_url: subscription.site_url,
        unread_count: subscription.unread_count,
        status: subscription.status,
        status_reason: subscription.status_reason,
        last_error: subscription.last_error,
        last_http_status: subscription.last_http_status,
        next_check_at: time(subscription.next_check_at),
        last_success_at: subscription.last_success_at.map(time),
        interval_minutes: subscription.interval_minutes,
        full_text: subscription.full_text,
        summarize: subscription.summarize,
        suspended: subscription.suspended,
        duplicates: subscription.duplicates,
        language: subscription.language,
        translate: subscription.translate_to.is_some(),
        translate_to: subscription.translate_to,
        created_at: time(subscription.created_at),
        // Stored by the API from a checked configuration; one unreadable (written by hand)
        // shows as none rather than failing the list.
        scraper: subscription
            .scrape_config
            .as_deref()
            .and_then(|text| tidings_worker::scraping::parse_config_json(text).ok()),
        push: None,
    }
}

/// A new subscription.
#[derive(Debug, Deserialize, ToSchema)]
#[serde(deny_unknown_fields)]
pub struct Subscribe {
    /// A feed URL, or a page URL whose feed is discovered. Without a scheme (`example.com/feed`)
    /// `https://` is tried first, then `http://` when https does not answer.
    pub url: String,
    /// The group; the default group when absent.
    pub group_id: Option<i64>,
    /// A custom title.
    pub title: Option<String>,
    /// The fetch interval in minutes (30–720, step 30; default 60).
    pub interval_minutes: Option<i64>,
    /// Full text: `auto` (default), `always` or `never` (see the subscription's `full_text`).
    pub full_text: Option<String>,
}

/// The answer when the user has as many subscriptions as allowed (F29).
pub(crate) fn subscription_limit(limit: i64) -> ApiError {
    ApiError::new(
        StatusCode::CONFLICT,
        "subscription_limit",
        ErrorCategory::Limit,
        format!("You have reached the limit of {limit} subscriptions."),
        "Unsubscribe from feeds you no longer read, or ask the administrator to raise the limit.",
    )
}

/// 400 about the address given: it leads to no feed. It is what the request asked for that
/// cannot be done, like any other bad value, so it is a 400 too; the category `feed` and the
/// code tell it apart from a malformed request.
fn feed_error(code: &'static str, message: String, action: &str) -> ApiError {
    ApiError::new(
        StatusCode::BAD_REQUEST,
        code,
        ErrorCategory::Feed,
        message,
        action,
    )
}

/// Refuses a group that is not the user's and an interval out of range, before any request
/// leaves the server and before anything is changed.
pub(crate) async fn check_group_and_interval(
    state: &AppState,
    user_id: i64,
    group_id: Option<i64>,
    interval_minutes: Option<i64>,
) -> ApiResult<()> {
    if let Some(group_id) = group_id
        && !state
            .store
            .list_groups(user_id)
            .await?
            .iter()
            .any(|g| g.id == group_id)
    {
        return Err(ApiError::not_found("Group"));
    }
    if let Some(minutes) = interval_minutes {
        tidings_store::check_interval(minutes)?;
    }
    Ok(())
}

/// The answer for a URL (given in the body's `field`) that does not lead to a feed, or a
/// subscription the store refuses.
pub(crate) fn subscribe_error(field: &str, error: SubscribeError) -> ApiError {
    match error {
        SubscribeError::Store(StoreError::LimitReached { limit, .. }) => subscription_limit(limit),
        SubscribeError::Store(store) => ApiError::from(store),
        SubscribeError::NoFeed(url) => feed_error(
            "no_feed_found",
            format!(
                "No feed found at {url}: the page is not a feed, links to none, and none of \
                 /feed, /rss, /atom.xml, /feed.xml, /index.xml, /rss.xml answered with one."
            ),
            "Check the address, or look on the site for an RSS or Atom link and paste that.",
        ),
        SubscribeError::Discover(DiscoverError::InvalidUrl(reason)) => ApiError::validation(
            format!("The field {field} is not a web address: {reason}"),
            "Type an address such as https://example.com/blog.",
        ),
        SubscribeError::Discover(DiscoverError::Status { url, status }) => feed_error(
            "feed_unreachable",
            format!("{url} answered HTTP {status}."),
            "Check the address; the site may be down or the page may have moved.",
        ),
        // The refusal names the setting that would allow the address, when one does.
        SubscribeError::Discover(DiscoverError::Fetch {
            url,
            source: FetchError::Refused(refusal),
        }) => feed_error(
            "url_refused",
            format!("{url} is not allowed: {refusal}"),
            "Use a public http(s) address; an administrator can allow addresses on private \
             networks with TIDINGS_ALLOW_PRIVATE_NETWORKS=true.",
        ),
        SubscribeError::Discover(DiscoverError::Fetch { url, source }) => feed_error(
            "feed_unreachable",
            format!("{url} could not be fetched: {source}"),
            "Check the address; the site may be down.",
        ),
    }
}

/// Subscribes a user as `POST /subscriptions` does, with every check it makes (the per-user
/// rate limit, the group, the interval, the subscription limit, the outbound address policy
/// and discovery, a URL without a scheme tried in https, then http) and the first fetch. The
/// sync APIs subscribe through this too, so that no app gets around a check. Answers the
/// subscription and how the URL given led to its feed.
pub(crate) async fn subscribe_checked(
    state: &AppState,
    user_id: i64,
    body: Subscribe,
) -> ApiResult<(Subscription, ResolvedFeed)> {
    within_limit(&state.limits.subscribe, &format!("user:{user_id}")).await?;
    if body.url.trim().is_empty() {
        return Err(ApiError::validation(
            "The field url is empty.",
            "Type the address of a site or of its feed.",
        ));
    }
    check_group_and_interval(state, user_id, body.group_id, body.interval_minutes).await?;
    // A quick refusal before any request leaves the server; the store checks the limit
    // again when it inserts, so concurrent requests never end above it.
    let limit = state.config.max_subscriptions;
    if state.store.count_subscriptions(user_id).await? >= limit {
        return Err(subscription_limit(limit));
    }
    let request = SubscribeRequest {
        url: body.url.clone(),
        group_id: body.group_id,
        title: body.title,
        interval_minutes: body.interval_minutes,
        max_subscriptions: Some(limit),
    };
    let subscribed = tidings_worker::subscribe_with_discovery(&state.fetcher, user_id, &request)
        .await
        .map_err(|error| subscribe_error("url", error))?;
    let subscription = state
        .store
        .subscription(user_id, subscribed.subscription.id)
        .await?;
    Ok((subscription, subscribed.resolved))
}

/// How many stopped feeds were put back on schedule.
#[derive(Debug, Serialize, ToSchema)]
pub struct ResumedFeeds {
    /// Feeds resumed (0 when none was stopped).
    pub resumed: u64,
}
