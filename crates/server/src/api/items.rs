//! Reading (F31, F32, F36): item listings with cursor pagination, an item with its content,
//! read and starred state, mark-read in bulk, unread counts and "updated since".

use std::collections::BTreeMap;

use axum::extract::State;
use serde::{Deserialize, Serialize};
use tidings_store::{
    DEFAULT_PAGE_SIZE, Enclosure, ItemCursor, ItemFilter, ItemOrder, ItemQuery, ItemSummary,
    MAX_MARK_IDS, MAX_PAGE_SIZE, MAX_UNDO_IDS, MarkReadScope, ReadUndo, WatermarkBefore,
};
use utoipa::{IntoParams, ToSchema};
use utoipa_axum::router::OpenApiRouter;
use utoipa_axum::routes;

use crate::AppState;
use crate::api::auth::Auth;
use crate::api::error::{ApiError, ApiResult, ErrorBody};
use crate::api::extract::{Json, Path, Query};
use crate::api::popularity::add_popularity;
use crate::api::search;
use crate::api::summaries::add_generated_summaries;
use crate::api::time;
use tidings_store::ItemSearch;
use tidings_text::SearchQuery;

pub(crate) fn router() -> OpenApiRouter<AppState> {
    OpenApiRouter::new()
        .routes(routes!(list_items))
        .routes(routes!(get_item))
        .routes(routes!(set_item_state))
        .routes(routes!(mark_read))
        .routes(routes!(undo_mark_read))
        .routes(routes!(counts))
        .routes(routes!(updated_feeds))
}

/// Parses an RFC 3339 query or body time into Unix seconds, as a validation error.
pub(crate) fn parse_time(name: &str, text: &str) -> ApiResult<i64> {
    chrono::DateTime::parse_from_rfc3339(text.trim())
        .map(|t| t.timestamp())
        .map_err(|_| {
            ApiError::validation(
                format!("{name} {text:?} is not an RFC 3339 time"),
                "Use a time such as 2026-01-31T08:00:00Z.",
            )
        })
}

/// The values `filter` takes (the OpenAPI document lists them; `item_query` reads them).
pub const FILTERS: &[&str] = &["all", "unread", "starred"];
/// The values `order` takes; `relevance` only with `q`.
pub const ORDERS: &[&str] = &["newest", "oldest", "relevance"];
/// The values `include` takes.
pub const INCLUDES: &[&str] = &["content"];

/// The parameters of an item listing.
#[derive(Debug, Default, Deserialize, IntoParams)]
#[into_params(parameter_in = Query)]
#[serde(deny_unknown_fields)]
pub struct ItemListParams {
    /// Only this feed's items (a `feed_id` from the subscriptions list).
    pub feed_id: Option<i64>,
    /// Only items of this group's subscriptions.
    pub group_id: Option<i64>,
    /// `all`, `unread` (default) or `starred`.
    pub filter: Option<String>,
    /// `newest` (default) or `oldest` first; with `q` also `relevance` (best match first
    /// among the newest 200 matches).
    pub order: Option<String>,
    /// Search the items' titles and text (F35): words that must all occur, `"quoted
    /// phrases"`, and `-word` to exclude; up to 10 words or phrases of at most 100 characters
    /// (400 in all). Every script works, including Japanese, Chinese and Korean without spaces;
    /// case, full-width forms and accents are ignored. Combines with the other parameters;
    /// each item then has a `snippet`.
    pub q: Option<String>,
    /// Only items published at or after this time (RFC 3339).
    pub since: Option<String>,
    /// Only items published before this time (RFC 3339).
    pub until: Option<String>,
    /// The `next_cursor` of the previous page.
    pub cursor: Option<String>,
    /// Items per page, 1 to 200 (default 50).
    pub limit: Option<i64>,
    /// `content`: each item also carries its `content` and `enclosures`, so that a reader
    /// shows an item opened without asking for it again.
    pub include: Option<String>,
}

/// An item in a listing: no content.
#[derive(Debug, Serialize, ToSchema)]
pub struct ItemSummaryView {
    /// The item's id.
    pub id: i64,
    /// The shared feed's id.
    pub feed_id: i64,
    /// The user's subscription to the feed.
    pub subscription_id: i64,
    /// The feed's title as the user named it (else the feed's own, else its URL).
    pub feed_title: String,
    /// The item's title.
    pub title: Option<String>,
    /// Its link.
    pub url: Option<String>,
    /// Its author.
    pub author: Option<String>,
    /// Its sanitized summary (HTML).
    pub summary: Option<String>,
    /// When it was published.
    pub published_at: String,
    /// Whether `published_at` is when tidings first saw it, because the feed gave no date.
    pub is_date_estimated: bool,
    /// Whether the user has read it.
    pub is_read: bool,
    /// Whether the user starred it.
    pub is_starred: bool,
    /// In search results: a short excerpt of the text around the match, as HTML (the text
    /// escaped, the matched words in `<mark>`).
    #[serde(skip_serializing_if = "Option::is_none")]
    pub snippet: Option<String>,
    /// The sanitized content, with `include=content` (absent otherwise, and when the item
    /// has none).
    #[serde(skip_serializing_if = "Option::is_none")]
    pub content: Option<String>,
    /// Media enclosures, with `include=content` (absent otherwise).
    #[serde(skip_serializing_if = "Option::is_none")]
    pub enclosures: Option<Vec<EnclosureView>>,
    /// The article extracted from the item's page (full text, F6), with `include=content`
    /// when one was kept (absent otherwise).
    #[serde(skip_serializing_if = "Option::is_none")]
    pub full_content: Option<String>,
    /// The item's image to show beside it (a video's still, an episode's artwork): an absolute
    /// https URL, or null.
    pub thumbnail_url: Option<String>,
    /// How many people bookmarked the item's link (F40), with when that was fetched; null
    /// while no count is known (not yet fetched, or popularity is off), which is not 0.
    pub popularity: Option<crate::api::popularity::PopularityView>,
    /// Its tags (F41), best first: keyphrases found in its title and text, each with a score
    /// in 0–1. Empty until the item is tagged (moments after it arrives) or when nothing
    /// describes it.
    pub tags: Vec<TagView>,
    /// Its generated summary (F42), plain text, with who made it and when; null until it is
    /// summarized (`POST /items/{id}/summarize`, or for new items when the user's
    /// `summarize` preference asks for it).
    pub generated_summary: Option<crate::api::summaries::GeneratedSummaryView>,
    /// Whether the item's text is long enough to summarize: longer than a summary
    /// (`TIDINGS_SUMMARY_TARGET_CHARS`, counted in the text the summarizer reads: the full
    /// article, else the content, else the summary). False for a short item, whose text is
    /// its own summary (`POST /items/{id}/summarize` answers 400 `too_short_to_summarize`).
    /// Given by `GET /items/{id}` and with `include=content`; absent otherwise.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub summarizable: Option<bool>,
}

/// A tag of an item.
#[derive(Debug, Serialize, ToSchema)]
pub struct TagView {
    /// The tag's name: NFKC, case-folded, at most 50 characters. `GET /tags/{tag}/items` lists
    /// the items with it.
    pub name: String,
    /// How well it describes the item, from 0 to 1 (the item's best tag has 1).
    pub score: f64,
}

impl From<ItemSummary> for ItemSummaryView {
    fn from(item: ItemSummary) -> ItemSummaryView {
        ItemSummaryView {
            id: item.id,
            feed_id: item.feed_id,
            subscription_id: item.subscription_id,
            feed_title: item.feed_title,
            title: item.title,
            url: item.url,
            author: item.author,
            summary: item.summary,
            published_at: time(item.published_at),
            is_date_estimated: item.is_date_estimated,
            is_read: item.is_read,
            is_starred: item.is_starred,
            snippet: None,
            content: None,
            enclosures: None,
            full_content: None,
            thumbnail_url: item.thumbnail_url,
            tags: Vec::new(),
            popularity: None,
            generated_summary: None,
            summarizable: None,
        }
    }
}

/// One page of items.
#[derive(Debug, Serialize, ToSchema)]
pub struct ItemList {
    /// The items, in the requested order.
    pub items: Vec<ItemSummaryView>,
    /// Pass as `cursor` for the next page; null on the last page.
    pub next_cursor: Option<String>,
    /// Whether another page follows.
    pub has_more: bool,
}

/// A media enclosure.
#[derive(Debug, Serialize, ToSchema)]
pub struct EnclosureView {
    /// Where the media is.
    pub url: String,
    /// Its MIME type.
    pub mime_type: Option<String>,
    /// Its length in bytes.
    pub length: Option<i64>,
}

impl From<Enclosure> for EnclosureView {
    fn from(enclosure: Enclosure) -> EnclosureView {
        EnclosureView {
            url: enclosure.url,
            mime_type: enclosure.mime_type,
            length: enclosure.length,
        }
    }
}

/// An item with its content.
#[derive(Debug, Serialize, ToSchema)]
pub struct ItemView {
    /// The listing's fields.
    #[serde(flatten)]
    pub summary: ItemSummaryView,
    /// The sanitized content (HTML, allowlisted when it was stored).
    pub content: Option<String>,
    /// The feed's own id for the item.
    pub guid: Option<String>,
    /// The item's own last-update time.
    pub updated_at: Option<String>,
    /// When tidings first saw it.
    pub fetched_at: String,
    /// Media enclosures.
    pub enclosures: Vec<EnclosureView>,
    /// Categories.
    pub categories: Vec<String>,
    /// The article extracted from the item's page (full text, F6), sanitized HTML kept apart
    /// from `content`; null when none was kept. `POST /items/{id}/full-content` loads it.
    pub full_content: Option<String>,
    /// When the article's page was fetched; null with no article.
    pub full_content_fetched_at: Option<String>,
}

/// An item, wrapped.
#[derive(Debug, Serialize, ToSchema)]
pub struct ItemEnvelope {
    /// The item.
    pub item: ItemView,
}

/// A change of an item's state; absent fields stay as they are.
#[derive(Debug, Deserialize, ToSchema)]
#[serde(deny_unknown_fields)]
pub struct ItemStateChange {
    /// Read or unread.
    pub is_read: Option<bool>,
    /// Starred or not.
    pub is_starred: Option<bool>,
}

/// An item's state for the user.
#[derive(Debug, Serialize, ToSchema)]
pub struct ItemStateView {
    /// The item.
    pub item_id: i64,
    /// Read.
    pub is_read: bool,
    /// Starred.
    pub is_starred: bool,
}

/// What to mark read: exactly one of `ids`, `feed_id`, `group_id` or `all: true`; with
/// `starred: true` (and optionally `feed_id` or `group_id`), only the starred items.
#[derive(Debug, Deserialize, ToSchema)]
#[serde(deny_unknown_fields)]
pub struct MarkRead {
    /// These items (at most 1,000; ids that are not the user's are ignored).
    pub ids: Option<Vec<i64>>,
    /// Every item of this feed.
    pub feed_id: Option<i64>,
    /// Every item of this group's subscriptions.
    pub group_id: Option<i64>,
    /// Every item of every subscription.
    pub all: Option<bool>,
    /// Only the starred items: of the feed, of the group, or of everything (the Starred
    /// view, where nothing else is listed).
    pub starred: Option<bool>,
    /// Only items published before this time (RFC 3339): send the time the user's view was
    /// loaded, so that items arriving meanwhile stay unread.
    pub before: Option<String>,
}

/// How many items became read, and how to undo it.
#[derive(Debug, Serialize, ToSchema)]
pub struct MarkReadResult {
    /// Items that were unread and are read now.
    pub marked: u64,
    /// Send this unchanged to `POST /items/mark-read/undo` to restore exactly the state
    /// before.
    pub undo: ReadUndoView,
}

/// A subscription's read watermark before a mark-read.
#[derive(Debug, Serialize, Deserialize, ToSchema)]
#[serde(deny_unknown_fields)]
pub struct WatermarkView {
    /// The subscription.
    pub subscription_id: i64,
    /// Its watermark before (Unix seconds; null: none).
    pub read_before: Option<i64>,
}

/// What a mark-read changed: the watermarks it moved and the items it marked one by one.
#[derive(Debug, Serialize, Deserialize, ToSchema)]
#[serde(deny_unknown_fields)]
pub struct ReadUndoView {
    /// The watermarks as they were.
    pub watermarks: Vec<WatermarkView>,
    /// The items that became read by their own state.
    pub item_ids: Vec<i64>,
}

/// How many items are unread again after an undo.
#[derive(Debug, Serialize, ToSchema)]
pub struct UndoResult {
    /// Items unread again.
    pub restored: u64,
}

/// Unread items of one subscription.
#[derive(Debug, Serialize, ToSchema)]
pub struct SubscriptionCountView {
    /// The subscription.
    pub subscription_id: i64,
    /// Its feed.
    pub feed_id: i64,
    /// Its group.
    pub group_id: i64,
    /// Unread items.
    pub unread: i64,
}

/// Unread items of one group.
#[derive(Debug, Serialize, ToSchema)]
pub struct GroupCountView {
    /// The group.
    pub group_id: i64,
    /// Unread items of its subscriptions.
    pub unread: i64,
}

/// Unread counts of the user, in one call.
#[derive(Debug, Serialize, ToSchema)]
pub struct Counts {
    /// Unread items of all subscriptions.
    pub unread: i64,
    /// Starred items.
    pub starred: i64,
    /// Per subscription.
    pub subscriptions: Vec<SubscriptionCountView>,
    /// Per group (every group of the user, also empty ones).
    pub groups: Vec<GroupCountView>,
    /// The server's time of these counts, a second early: pass it as `since` to
    /// `/items/updated-feeds` to learn what arrived after them.
    pub as_of: String,
}

/// The parameter of "updated since".
#[derive(Debug, Deserialize, IntoParams)]
#[into_params(parameter_in = Query)]
#[serde(deny_unknown_fields)]
pub struct UpdatedParams {
    /// Subscriptions with items that arrived after this time (RFC 3339).
    pub since: String,
}

/// A subscription with items that arrived after the given time.
#[derive(Debug, Serialize, ToSchema)]
pub struct UpdatedFeedView {
    /// The subscription.
    pub subscription_id: i64,
    /// Its feed.
    pub feed_id: i64,
    /// The feed's title as the user named it.
    pub feed_title: String,
    /// Items that arrived after `since`.
    pub new_items: i64,
    /// When the newest of them arrived.
    pub last_arrived_at: String,
    /// Unread items of the subscription now.
    pub unread: i64,
}

/// Subscriptions updated since a time.
#[derive(Debug, Serialize, ToSchema)]
pub struct UpdatedFeeds {
    /// The time asked about.
    pub since: String,
    /// Newest arrival first; subscriptions without new items are left out.
    pub subscriptions: Vec<UpdatedFeedView>,
}

/// The cursor of a page of search results by relevance: how many hits came before.
fn relevance_cursor(offset: i64) -> String {
    hex::encode(format!("r:{offset}"))
}

fn decode_relevance_cursor(text: &str) -> Option<i64> {
    let bytes = hex::decode(text.trim()).ok()?;
    let offset: i64 = std::str::from_utf8(&bytes)
        .ok()?
        .strip_prefix("r:")?
        .parse()
        .ok()?;
    (offset >= 0).then_some(offset)
}

/// Reads `filter` (`all`, `unread` or `starred`; `default` when absent).
pub(crate) fn parse_filter(text: Option<&str>, default: ItemFilter) -> ApiResult<ItemFilter> {
    match text.map(str::trim) {
        None => Ok(default),
        Some("all") => Ok(ItemFilter::All),
        Some("unread") => Ok(ItemFilter::Unread),
        Some("starred") => Ok(ItemFilter::Starred),
        Some(other) => Err(ApiError::validation(
            format!("filter must be all, unread or starred, not {other:?}"),
            "Use filter=all, filter=unread or filter=starred.",
        )),
    }
}

/// Reads `limit`: 1 to [`MAX_PAGE_SIZE`], [`DEFAULT_PAGE_SIZE`] when absent.
pub(crate) fn page_limit(limit: Option<i64>) -> ApiResult<i64> {
    let limit = limit.unwrap_or(DEFAULT_PAGE_SIZE);
    if !(1..=MAX_PAGE_SIZE).contains(&limit) {
        return Err(ApiError::validation(
            format!("limit must be 1 to {MAX_PAGE_SIZE}, not {limit}"),
            "Ask for at most 200 items a page and follow next_cursor for more.",
        ));
    }
    Ok(limit)
}

/// The listing `params` ask for, of the items with the tag `tag_id` when there is one.
fn item_query(params: ItemListParams, tag_id: Option<i64>) -> ApiResult<ItemQuery> {
    let filter = parse_filter(params.filter.as_deref(), ItemFilter::Unread)?;
    let order = match params.order.as_deref().map(str::trim) {
        None | Some("newest") => ItemOrder::NewestFirst,
        Some("oldest") => ItemOrder::OldestFirst,
        Some(other) => {
            return Err(ApiError::validation(
                format!("order must be newest or oldest (or relevance with q), not {other:?}"),
                "Use order=newest or order=oldest, or order=relevance together with q.",
            ));
        }
    };
    let limit = page_limit(params.limit)?;
    let cursor = match params.cursor.as_deref() {
        None => None,
        Some(text) => Some(ItemCursor::decode(text).ok_or_else(|| {
            ApiError::validation(
                "The cursor is not one this server gave out.",
                "Pass next_cursor from the previous page unchanged, or leave it out.",
            )
        })?),
    };
    Ok(ItemQuery {
        feed_id: params.feed_id,
        group_id: params.group_id,
        tag_id,
        filter,
        order,
        since: params
            .since
            .as_deref()
            .map(|t| parse_time("since", t))
            .transpose()?,
        until: params
            .until
            .as_deref()
            .map(|t| parse_time("until", t))
            .transpose()?,
        cursor,
        limit,
    })
}

/// The user's items: of every subscription, one feed (`feed_id`) or one group (`group_id`);
/// `filter` all / unread / starred; newest or oldest first; `since` / `until` on the
/// publication time. Pages are keyed on (published, id): follow `next_cursor` while
/// `has_more`; items that arrive meanwhile are neither skipped nor repeated. With `q`, only
/// the items matching the search, each with a highlighted `snippet`, and `order=relevance`
/// is available. With `include=content` every item also carries its content and enclosures.
#[utoipa::path(get, path = "/items", tag = "items", params(ItemListParams),
    responses(
        (status = 200, body = ItemList),
        (status = 404, description = "The feed or group is not the user's", body = ErrorBody),
        (status = 400, description = "A malformed parameter", body = ErrorBody),
    ))]
async fn list_items(
    State(state): State<AppState>,
    auth: Auth,
    Query(params): Query<ItemListParams>,
) -> ApiResult<Json<ItemList>> {
    list(&state, &auth, params, None).await
}

/// A listing of the user's items as `params` ask, only those with the tag `tag_id` when there
/// is one (the tag page, F41).
pub(crate) async fn list(
    state: &AppState,
    auth: &Auth,
    mut params: ItemListParams,
    tag_id: Option<i64>,
) -> ApiResult<Json<ItemList>> {
    let with_content = match params.include.take().as_deref().map(str::trim) {
        None | Some("") => false,
        Some("content") => true,
        Some(other) => {
            return Err(ApiError::validation(
                format!("include must be content, not {other:?}"),
                "Use include=content, or leave it out for summaries only.",
            ));
        }
    };
    let search = search::parse_q(params.q.as_deref())?;
    if let Some(query) = search {
        return search_items(state, auth, query, params, tag_id, with_content).await;
    }
    let query = item_query(params, tag_id)?;
    let page = state.store.list_items(auth.user.id, &query).await?;
    let mut items: Vec<ItemSummaryView> = page.items.into_iter().map(Into::into).collect();
    if with_content {
        add_bodies(state, auth, &mut items).await?;
    }
    add_tags(state, &mut items).await?;
    add_popularity(state, &mut items).await?;
    add_generated_summaries(state, &mut items).await?;
    for item in &mut items {
        proxy_item(state, item);
    }
    Ok(Json(ItemList {
        has_more: page.next_cursor.is_some(),
        next_cursor: page.next_cursor.map(|c| c.encode()),
        items,
    }))
}

/// Points a listed item's images (its HTML and its thumbnail) at the media proxy, when it is on.
pub(crate) fn proxy_item(state: &AppState, item: &mut ItemSummaryView) {
    proxy_images(state, &mut item.summary);
    proxy_images(state, &mut item.content);
    proxy_images(state, &mut item.full_content);
    let config = &state.config;
    if let Some(url) = item.thumbnail_url.as_deref()
        && let Some(proxied) = config.media_proxy.proxied_if_wanted(&config.base_url, url)
    {
        item.thumbnail_url = Some(proxied);
    }
}

/// Points the images of an item's HTML at the media proxy, when it is on.
pub(crate) fn proxy_images(state: &AppState, html: &mut Option<String>) {
    let config = &state.config;
    if let Some(text) = html.as_deref()
        && let Some(rewritten) = config.media_proxy.rewrite_html(&config.base_url, text)
    {
        *html = Some(rewritten);
    }
}

/// Adds each listed item's content and enclosures (`include=content`).
async fn add_bodies(state: &AppState, auth: &Auth, items: &mut [ItemSummaryView]) -> ApiResult<()> {
    let ids: Vec<i64> = items.iter().map(|item| item.id).collect();
    let mut bodies = state.store.item_bodies(auth.user.id, &ids).await?;
    for item in items {
        let body = bodies.remove(&item.id);
        item.enclosures = Some(
            body.as_ref()
                .map(|b| b.enclosures.iter().cloned().map(Into::into).collect())
                .unwrap_or_default(),
        );
        let (content, full_content) = body.map_or((None, None), |b| (b.content, b.full_content));
        item.summarizable = Some(summarizable(
            state,
            full_content.as_deref(),
            content.as_deref(),
            item.summary.as_deref(),
        ));
        item.content = content;
        item.full_content = full_content;
    }
    Ok(())
}

/// Whether the summarizer would summarize an item with these texts: its best one, as the
/// summary queue reads it (the article, else the content, else the summary), must be longer
/// than a summary. The summarizer's own rule, so the reader offers "Summarize" exactly when
/// it can work.
fn summarizable(
    state: &AppState,
    full_content: Option<&str>,
    content: Option<&str>,
    summary: Option<&str>,
) -> bool {
    use tidings_worker::summaries::{source_chars, worth_summarizing};
    let best = full_content
        .or(content.filter(|c| !c.is_empty()))
        .or(summary);
    worth_summarizing(
        source_chars(best),
        state.fetcher.summarizer().config().target_chars,
    )
}

/// Adds each listed item's tags (F41).
pub(crate) async fn add_tags(state: &AppState, items: &mut [ItemSummaryView]) -> ApiResult<()> {
    let ids: Vec<i64> = items.iter().map(|item| item.id).collect();
    let mut tags = state.store.tags_of_items(&ids).await?;
    for item in items {
        item.tags = tags
            .remove(&item.id)
            .unwrap_or_default()
            .into_iter()
            .map(|tag| TagView {
                name: tag.name,
                score: tag.score,
            })
            .collect();
    }
    Ok(())
}

/// `GET /items?q=…`: the listing's parameters over the items matching the search, each with a
/// snippet.
async fn search_items(
    state: &AppState,
    auth: &Auth,
    query: SearchQuery,
    mut params: ItemListParams,
    tag_id: Option<i64>,
    with_content: bool,
) -> ApiResult<Json<ItemList>> {
    let by_relevance = params.order.as_deref().map(str::trim) == Some("relevance");
    let mut offset = 0;
    if by_relevance {
        params.order = None;
        if let Some(cursor) = params.cursor.take() {
            offset = decode_relevance_cursor(&cursor).ok_or_else(|| {
                ApiError::validation(
                    "The cursor is not one this server gave out for order=relevance.",
                    "Pass next_cursor from the previous page unchanged, or leave it out.",
                )
            })?;
        }
    }
    let listing = item_query(params, tag_id)?;
    let search = ItemSearch {
        query,
        listing,
        by_relevance,
        offset,
    };
    let page = state.store.search_items(auth.user.id, &search).await?;
    let next_cursor = match (page.next_cursor, page.next_offset) {
        (Some(cursor), _) => Some(cursor.encode()),
        (None, Some(offset)) => Some(relevance_cursor(offset)),
        (None, None) => None,
    };
    let mut items: Vec<ItemSummaryView> = page
        .hits
        .into_iter()
        .map(|hit| {
            let snippet = search::snippet_html(&hit.text, &search.query);
            ItemSummaryView {
                snippet: Some(snippet),
                ..hit.item.into()
            }
        })
        .collect();
    if with_content {
        add_bodies(state, auth, &mut items).await?;
    }
    add_tags(state, &mut items).await?;
    add_popularity(state, &mut items).await?;
    add_generated_summaries(state, &mut items).await?;
    for item in &mut items {
        proxy_item(state, item);
    }
    Ok(Json(ItemList {
        has_more: next_cursor.is_some(),
        next_cursor,
        items,
    }))
}

/// One item of the user's subscriptions, with its sanitized content.
#[utoipa::path(get, path = "/items/{id}", tag = "items",
    params(("id" = i64, Path, description = "The item's id")),
    responses((status = 200, body = ItemEnvelope), (status = 404, body = ErrorBody)))]
async fn get_item(
    State(state): State<AppState>,
    auth: Auth,
    Path(id): Path<i64>,
) -> ApiResult<Json<ItemEnvelope>> {
    let detail = state.store.item_detail(auth.user.id, id).await?;
    let item = detail.item;
    // The listing's fields, through the same conversion as the listing.
    let summary = ItemSummary {
        id: item.id,
        feed_id: item.feed_id,
        subscription_id: detail.subscription_id,
        feed_title: detail.feed_title,
        url: item.url,
        title: item.title,
        author: item.author,
        summary: item.summary,
        published_at: item.published_at,
        is_date_estimated: item.is_date_estimated,
        is_read: item.is_read,
        is_starred: item.is_starred,
        thumbnail_url: item.thumbnail_url,
    };
    let mut summary: ItemSummaryView = summary.into();
    add_tags(&state, std::slice::from_mut(&mut summary)).await?;
    add_popularity(&state, std::slice::from_mut(&mut summary)).await?;
    add_generated_summaries(&state, std::slice::from_mut(&mut summary)).await?;
    proxy_item(&state, &mut summary);
    let mut content = item.content;
    proxy_images(&state, &mut content);
    // The article from the item's page (F6), kept apart from the feed's content.
    let full = state.store.full_content(item.id).await?;
    let full_content_fetched_at = full
        .as_ref()
        .filter(|full| full.content.is_some())
        .map(|full| time(full.fetched_at));
    let mut full_content = full.and_then(|full| full.content);
    summary.summarizable = Some(summarizable(
        &state,
        full_content.as_deref(),
        content.as_deref(),
        summary.summary.as_deref(),
    ));
    proxy_images(&state, &mut full_content);
    Ok(Json(ItemEnvelope {
        item: ItemView {
            summary,
            content,
            guid: item.guid,
            updated_at: item.updated_at.map(time),
            fetched_at: time(item.fetched_at),
            enclosures: item.enclosures.into_iter().map(Into::into).collect(),
            categories: item.categories,
            full_content,
            full_content_fetched_at,
        },
    }))
}

/// Set an item's read and/or starred state; idempotent.
#[utoipa::path(put, path = "/items/{id}/state", tag = "items", request_body = ItemStateChange,
    params(("id" = i64, Path, description = "The item's id")),
    responses(
        (status = 200, body = ItemStateView),
        (status = 404, body = ErrorBody),
        (status = 400, description = "Neither field given", body = ErrorBody),
    ))]
async fn set_item_state(
    State(state): State<AppState>,
    auth: Auth,
    Path(id): Path<i64>,
    Json(body): Json<ItemStateChange>,
) -> ApiResult<Json<ItemStateView>> {
    if body.is_read.is_none() && body.is_starred.is_none() {
        return Err(ApiError::validation(
            "Nothing to change: give is_read and/or is_starred.",
            "Send {\"is_read\": true} or {\"is_starred\": true}.",
        ));
    }
    let new_state = state
        .store
        .set_item_state(auth.user.id, id, body.is_read, body.is_starred)
        .await?;
    Ok(Json(ItemStateView {
        item_id: id,
        is_read: new_state.is_read,
        is_starred: new_state.is_starred,
    }))
}

/// Mark items read: `{"ids": […]}`, or `{"feed_id": …}`, `{"group_id": …}` or
/// `{"all": true}`, each optionally with `"before"` (RFC 3339): then only items published
/// before that time are marked, so items that arrive while the user reads are not lost.
#[utoipa::path(post, path = "/items/mark-read", tag = "items", request_body = MarkRead,
    responses(
        (status = 200, body = MarkReadResult),
        (status = 404, description = "The feed or group is not the user's", body = ErrorBody),
        (status = 400, description = "Not exactly one scope, or a bad time", body = ErrorBody),
    ))]
async fn mark_read(
    State(state): State<AppState>,
    auth: Auth,
    Json(body): Json<MarkRead>,
) -> ApiResult<Json<MarkReadResult>> {
    let before = body
        .before
        .as_deref()
        .map(|t| parse_time("before", t))
        .transpose()?;
    match body.starred {
        Some(true) => {
            if body.ids.is_some() || body.all == Some(false) {
                return Err(ApiError::validation(
                    "starred goes with feed_id, group_id or all, not with ids.",
                    "Send {\"starred\": true} with a feed_id, a group_id or nothing else.",
                ));
            }
            if body.feed_id.is_some() && body.group_id.is_some() {
                return Err(ApiError::validation(
                    "Give at most one of feed_id or group_id with starred.",
                    "Send {\"starred\": true, \"feed_id\": 3} or {\"starred\": true}.",
                ));
            }
            let scope = MarkReadScope::Starred {
                feed_id: body.feed_id,
                group_id: body.group_id,
            };
            return marked_result(&state, &auth, &scope, before).await;
        }
        Some(false) => {
            return Err(ApiError::validation(
                "starred must be true when given.",
                "Leave starred out to mark every item of the scope.",
            ));
        }
        None => {}
    }
    let mut scopes = Vec::new();
    if let Some(ids) = body.ids {
        if ids.len() > MAX_MARK_IDS {
            return Err(ApiError::validation(
                format!("At most {MAX_MARK_IDS} ids can be marked at once."),
                "Split the ids over several requests, or mark the feed read.",
            ));
        }
        scopes.push(MarkReadScope::Ids(ids));
    }
    if let Some(feed_id) = body.feed_id {
        scopes.push(MarkReadScope::Feed(feed_id));
    }
    if let Some(group_id) = body.group_id {
        scopes.push(MarkReadScope::Group(group_id));
    }
    match body.all {
        Some(true) => scopes.push(MarkReadScope::All),
        Some(false) => {
            return Err(ApiError::validation(
                "all must be true when given.",
                "Send {\"all\": true}, or name ids, a feed_id or a group_id.",
            ));
        }
        None => {}
    }
    if scopes.len() != 1 {
        return Err(ApiError::validation(
            "Give exactly one of ids, feed_id, group_id or all.",
            "Send e.g. {\"feed_id\": 3, \"before\": \"2026-01-31T08:00:00Z\"}.",
        ));
    }
    let scope = scopes.remove(0);
    marked_result(&state, &auth, &scope, before).await
}

async fn marked_result(
    state: &AppState,
    auth: &Auth,
    scope: &MarkReadScope,
    before: Option<i64>,
) -> ApiResult<Json<MarkReadResult>> {
    let outcome = state
        .store
        .mark_read_undoable(auth.user.id, scope, before)
        .await?;
    Ok(Json(MarkReadResult {
        marked: outcome.marked,
        undo: ReadUndoView {
            watermarks: outcome
                .undo
                .watermarks
                .into_iter()
                .map(|w| WatermarkView {
                    subscription_id: w.subscription_id,
                    read_before: w.read_before,
                })
                .collect(),
            item_ids: outcome.undo.item_ids,
        },
    }))
}

/// Undo a mark-read: send its `undo` unchanged. Watermarks go back to where they were
/// (never forward) and the items it marked are unread again; subscriptions and items that
/// are not the user's are ignored.
#[utoipa::path(post, path = "/items/mark-read/undo", tag = "items", request_body = ReadUndoView,
    responses(
        (status = 200, body = UndoResult),
        (status = 400, description = "Too many ids", body = ErrorBody),
    ))]
async fn undo_mark_read(
    State(state): State<AppState>,
    auth: Auth,
    Json(body): Json<ReadUndoView>,
) -> ApiResult<Json<UndoResult>> {
    if body.item_ids.len() > MAX_UNDO_IDS {
        return Err(ApiError::validation(
            format!("At most {MAX_UNDO_IDS} item ids can be restored at once."),
            "Send the undo of one mark-read, unchanged.",
        ));
    }
    let undo = ReadUndo {
        watermarks: body
            .watermarks
            .into_iter()
            .map(|w| WatermarkBefore {
                subscription_id: w.subscription_id,
                read_before: w.read_before,
            })
            .collect(),
        item_ids: body.item_ids,
    };
    let restored = state.store.restore_read(auth.user.id, &undo).await?;
    Ok(Json(UndoResult { restored }))
}

/// Unread counts per subscription and per group, the total, and the number of starred items:
/// one cheap call (the counts are maintained as items and states change).
#[utoipa::path(get, path = "/counts", tag = "items",
    responses((status = 200, body = Counts), (status = 401, body = ErrorBody)))]
async fn counts(State(state): State<AppState>, auth: Auth) -> ApiResult<Json<Counts>> {
    let counts = state.store.unread_counts(auth.user.id).await?;
    let groups = state.store.list_groups(auth.user.id).await?;
    let mut per_group: BTreeMap<i64, i64> = groups.iter().map(|g| (g.id, 0)).collect();
    for count in &counts.subscriptions {
        *per_group.entry(count.group_id).or_default() += count.unread;
    }
    Ok(Json(Counts {
        as_of: time(chrono::Utc::now().timestamp() - 1),
        unread: counts.subscriptions.iter().map(|c| c.unread).sum(),
        starred: counts.starred,
        subscriptions: counts
            .subscriptions
            .into_iter()
            .map(|c| SubscriptionCountView {
                subscription_id: c.subscription_id,
                feed_id: c.feed_id,
                group_id: c.group_id,
                unread: c.unread,
            })
            .collect(),
        groups: groups
            .iter()
            .map(|g| GroupCountView {
                group_id: g.id,
                unread: per_group.get(&g.id).copied().unwrap_or(0),
            })
            .collect(),
    }))
}

/// "Updated since" (F36): the subscriptions with items that arrived after `since`, with how
/// many, so a client can refresh only those.
#[utoipa::path(get, path = "/items/updated-feeds", tag = "items", params(UpdatedParams),
    responses(
        (status = 200, body = UpdatedFeeds),
        (status = 400, description = "since is missing or not RFC 3339", body = ErrorBody),
    ))]
async fn updated_feeds(
    State(state): State<AppState>,
    auth: Auth,
    Query(params): Query<UpdatedParams>,
) -> ApiResult<Json<UpdatedFeeds>> {
    let since = parse_time("since", &params.since)?;
    let feeds = state.store.updated_feeds(auth.user.id, since).await?;
    Ok(Json(UpdatedFeeds {
        since: time(since),
        subscriptions: feeds
            .into_iter()
            .map(|f| UpdatedFeedView {
                subscription_id: f.subscription_id,
                feed_id: f.feed_id,
                feed_title: f.feed_title,
                new_items: f.new_items,
                last_arrived_at: time(f.last_arrived_at),
                unread: f.unread,
            })
            .collect(),
    }))
}
