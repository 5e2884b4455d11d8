//! Reading (F31, F32, F36): item listings with cursor pagination, an item with its content,
//! read and starred state, mark-read in bulk, unread counts and "updated since".

use std::collections::BTreeMap;

use axum::extract::State;
use serde::{Deserialize, Serialize};
use tidings_store::{
    ItemSummary, MAX_MARK_IDS, MAX_UNDO_IDS, MarkReadScope, ReadUndo, WatermarkBefore,
};
use utoipa::{IntoParams, ToSchema};
use utoipa_axum::router::OpenApiRouter;
use utoipa_axum::routes;

use crate::base::auth::Auth;
use crate::base::error::{ApiError, ApiResult, ErrorBody};
use crate::base::extract::{Json, Path, Query};
use crate::base::item_list::{ItemListParams, list};
use crate::base::items::{
    EnclosureView, ItemList, ItemSummaryView, add_clusters, add_generated_summaries,
    add_popularity, add_tags, add_translated_titles, proxy_images, proxy_item, summarizable,
};
use crate::base::state::AppState;
use crate::base::time::{parse_time, time};

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
    /// With `translated=true`: the item's cached translation into the language asked
    /// (`to`, else the user's); absent when it has none yet (`POST /items/{id}/translate`
    /// makes one) and without `translated=true`.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub translation: Option<crate::base::translations::TranslationView>,
    /// With `translated=true`: the item's summary in that language, when one is kept for its
    /// summary as it is now (`POST /items/{id}/summarize?translated=true` makes one).
    #[serde(skip_serializing_if = "Option::is_none")]
    pub summary_translation: Option<crate::base::translations::SummaryTranslationView>,
}

/// What `GET /items/{id}` adds to the item.
#[derive(Debug, Default, Deserialize, IntoParams)]
#[into_params(parameter_in = Query)]
pub struct ItemParams {
    /// `true`: the answer carries the item's cached translation (`translation`), made by
    /// `POST /items/{id}/translate` or by the feed's "always translate"; no provider is asked.
    pub translated: Option<bool>,
    /// The translation's language, a BCP 47 tag; the user's language when absent (as for
    /// `POST /items/{id}/translate`).
    pub to: Option<String>,
}

/// A change of an item's state; absent fields stay as they are.
#[derive(Debug, Deserialize, ToSchema)]
#[serde(deny_unknown_fields)]
pub struct ItemStateChange {
    /// Read or unread.
    pub is_read: Option<bool>,
    /// Starred or not.
    pub is_starred: Option<bool>,
    /// When the mark was made (RFC 3339), for a mark sent later than it was made, as the web
    /// app does with marks made offline: when the item's state changed after that time (on
    /// another device), that later change wins and this one is not applied; the answer is
    /// the state the item has.
    pub at: Option<String>,
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

/// One item of the user's subscriptions, with its sanitized content.
#[utoipa::path(get, path = "/items/{id}", tag = "items",
    params(("id" = i64, Path, description = "The item's id"), ItemParams),
    responses(
        (status = 200, body = ItemEnvelope),
        (status = 400, description = "`to` is not a language tag", body = ErrorBody),
        (status = 404, body = ErrorBody),
    ))]
async fn get_item(
    State(state): State<AppState>,
    auth: Auth,
    headers: axum::http::HeaderMap,
    Path(id): Path<i64>,
    Query(params): Query<ItemParams>,
) -> ApiResult<Json<ItemEnvelope>> {
    let (translation, summary_translation) = if params.translated == Some(true) {
        let target = crate::base::translations::target_language(
            &state,
            auth.user.id,
            &headers,
            params.to.as_deref(),
        )
        .await?;
        state.store.item(auth.user.id, id).await?;
        let found = state.store.item_translation(id, &target).await?;
        let summary = state.store.summary_translation(id, &target).await?;
        let translation = found.map(|found| {
            let mut view = crate::base::translations::TranslationView::from(found);
            proxy_images(&state, &mut view.content);
            view
        });
        (translation, summary.map(Into::into))
    } else {
        (None, None)
    };
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
        language: item.language,
    };
    let mut summary: ItemSummaryView = summary.into();
    add_tags(&state, std::slice::from_mut(&mut summary)).await?;
    add_popularity(&state, std::slice::from_mut(&mut summary)).await?;
    add_generated_summaries(&state, std::slice::from_mut(&mut summary)).await?;
    add_clusters(&state, &auth, std::slice::from_mut(&mut summary)).await?;
    add_translated_titles(&state, &auth, std::slice::from_mut(&mut summary)).await?;
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
    summary.translatable = Some(state.fetcher.translator().is_on());
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
        translation,
        summary_translation,
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
    let made_at = body
        .at
        .as_deref()
        .map(|t| parse_time("at", t))
        .transpose()?;
    let new_state = state
        .store
        .set_item_state_as_of(auth.user.id, id, body.is_read, body.is_starred, made_at)
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
