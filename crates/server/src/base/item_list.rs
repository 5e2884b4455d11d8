//! The listing of a user's items that `GET /items` and `GET /tags/{tag}/items` share: its
//! parameters, filters and cursors, and the search that `q` turns it into.

use serde::Deserialize;
use tidings_store::{
    DEFAULT_PAGE_SIZE, ItemCursor, ItemFilter, ItemOrder, ItemQuery, ItemSearch, MAX_PAGE_SIZE,
};
use tidings_text::SearchQuery;
use utoipa::IntoParams;

use crate::base::auth::Auth;
use crate::base::error::{ApiError, ApiResult};
use crate::base::extract::Json;
use crate::base::items::{
    ItemList, ItemSummaryView, add_bodies, add_clusters, add_generated_summaries, add_popularity,
    add_tags, add_translated_titles, proxy_item_in,
};
use crate::base::search;
use crate::base::state::AppState;
use crate::base::time::parse_time;
use crate::media::MediaProxyMode;

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
    /// `proxied`: every image of the items (in their HTML and their thumbnails) points at this
    /// server's `/media` route, whatever the media proxy's setting, so that a device keeping
    /// items for offline reading can keep their images from this server's origin.
    pub images: Option<String>,
    /// `true`: a story that arrived from several of the user's feeds is listed once (the
    /// copy the user saw first, or the one from a feed they prefer), the others named in its
    /// `cluster`; `false`: every copy. Default: the user's preference `collapse_duplicates`.
    /// Search results and the starred items list every copy.
    pub collapse: Option<String>,
}

/// What a listing adds to the store's summaries: `include=content` and `images=proxied`.
#[derive(Debug, Clone, Copy)]
struct Extras {
    content: bool,
    images: MediaProxyMode,
}

impl Extras {
    /// Takes `include` and `images` out of `params`.
    fn take(state: &AppState, params: &mut ItemListParams) -> ApiResult<Extras> {
        let content = match params.include.take().as_deref().map(str::trim) {
            None | Some("") => false,
            Some("content") => true,
            Some(other) => {
                return Err(ApiError::validation(
                    format!("include must be content, not {other:?}"),
                    "Use include=content, or leave it out for summaries only.",
                ));
            }
        };
        let images = match params.images.take().as_deref().map(str::trim) {
            None | Some("") => state.config.media_proxy.mode,
            Some("proxied") => MediaProxyMode::All,
            Some(other) => {
                return Err(ApiError::validation(
                    format!("images must be proxied, not {other:?}"),
                    "Use images=proxied to have every image served by this server, or leave it out.",
                ));
            }
        };
        Ok(Extras { content, images })
    }
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
        collapse: false,
    })
}

/// A listing of the user's items as `params` ask, only those with the tag `tag_id` when there
/// is one (the tag page, F41).
pub(crate) async fn list(
    state: &AppState,
    auth: &Auth,
    mut params: ItemListParams,
    tag_id: Option<i64>,
) -> ApiResult<Json<ItemList>> {
    let extras = Extras::take(state, &mut params)?;
    let search = search::parse_q(params.q.as_deref())?;
    if let Some(query) = search {
        return search_items(state, auth, query, params, tag_id, extras).await;
    }
    let collapse = collapse(state, auth, params.collapse.take()).await?;
    let query = ItemQuery {
        collapse,
        ..item_query(params, tag_id)?
    };
    let page = state.store.list_items(auth.user.id, &query).await?;
    let mut items: Vec<ItemSummaryView> = page.items.into_iter().map(Into::into).collect();
    complete(state, auth, &mut items, extras).await?;
    Ok(Json(ItemList {
        has_more: page.next_cursor.is_some(),
        next_cursor: page.next_cursor.map(|c| c.encode()),
        items,
    }))
}

/// Reads `collapse` (`true` or `false`), else the user's preference.
async fn collapse(state: &AppState, auth: &Auth, text: Option<String>) -> ApiResult<bool> {
    match text.as_deref().map(str::trim) {
        None | Some("") => Ok(state.store.collapses_duplicates(auth.user.id).await?),
        Some("true") => Ok(true),
        Some("false") => Ok(false),
        Some(other) => Err(ApiError::validation(
            format!("collapse must be true or false, not {other:?}"),
            "Use collapse=true to list each story once, collapse=false for every copy.",
        )),
    }
}

/// `GET /items?q=…`: the listing's parameters over the items matching the search, each with a
/// snippet.
async fn search_items(
    state: &AppState,
    auth: &Auth,
    query: SearchQuery,
    mut params: ItemListParams,
    tag_id: Option<i64>,
    extras: Extras,
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
    // Search lists every copy that matches, each naming the others in its cluster.
    params.collapse = None;
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
    complete(state, auth, &mut items, extras).await?;
    Ok(Json(ItemList {
        has_more: next_cursor.is_some(),
        next_cursor,
        items,
    }))
}

/// Fills in what a listing shows of each item beyond the store's summary: with `content` its
/// content and enclosures, then its tags, popularity and generated summary, and its images
/// pointed at the media proxy as `extras.images` says.
async fn complete(
    state: &AppState,
    auth: &Auth,
    items: &mut [ItemSummaryView],
    extras: Extras,
) -> ApiResult<()> {
    if extras.content {
        add_bodies(state, auth, items).await?;
    }
    add_tags(state, items).await?;
    add_popularity(state, items).await?;
    add_generated_summaries(state, items).await?;
    add_clusters(state, auth, items).await?;
    add_translated_titles(state, auth, items).await?;
    for item in items {
        proxy_item_in(state, extras.images, item);
    }
    Ok(())
}
