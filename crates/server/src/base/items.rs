//! Items as every listing shows them (the REST API's listings, search, tags, the hot list,
//! related items): the summary view with its tags, popularity and generated summary, and the
//! steps that fill those in and point images at the media proxy. The sync APIs use the same
//! image rewriting.

use std::collections::HashMap;

use serde::Serialize;
use tidings_store::{Enclosure, GeneratedSummary, ItemSummary, Popularity};
use utoipa::ToSchema;

use crate::base::auth::Auth;
use crate::base::error::ApiResult;
use crate::base::state::AppState;
use crate::base::time::time;
use crate::media::MediaProxyMode;

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
    /// The item's language, a BCP 47 tag (`en`, `ja`, `zh-TW`): detected from its title and
    /// text, and checked against what the item and its feed declare (a confident detection
    /// wins over a declaration that contradicts it). Null when nothing tells (no letters, no
    /// declaration), and for items stored before languages were kept until a background job
    /// reaches them.
    #[schema(example = "ja")]
    pub language: Option<String>,
    /// For an item of a feed the user has "always translate" on (`translate` on the
    /// subscription), its title in that language once the translation is made (issue 37);
    /// null otherwise, and for an item in that language already. `GET /items/{id}?translated=true`
    /// gives the text too.
    pub translated_title: Option<TranslatedTitleView>,
    /// How many people bookmarked the item's link (F40), with when that was fetched; null
    /// while no count is known (not yet fetched, or popularity is off), which is not 0.
    pub popularity: Option<PopularityView>,
    /// Its tags (F41), best first: keyphrases found in its title and text, each with a score
    /// in 0–1. Empty until the item is tagged (moments after it arrives) or when nothing
    /// describes it.
    pub tags: Vec<TagView>,
    /// Its generated summary (F42), plain text, with who made it and when; null until it is
    /// summarized (`POST /items/{id}/summarize`, or for new items when the user's
    /// `summarize` preference asks for it).
    pub generated_summary: Option<GeneratedSummaryView>,
    /// Whether the item's text is long enough to summarize: longer than a summary
    /// (`TIDINGS_SUMMARY_TARGET_CHARS`, counted in the text the summarizer reads: the full
    /// article, else the content, else the summary). False for a short item, whose text is
    /// its own summary (`POST /items/{id}/summarize` answers 400 `too_short_to_summarize`).
    /// Given by `GET /items/{id}` and with `include=content`; absent otherwise.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub summarizable: Option<bool>,
    /// Whether this server translates items (`TIDINGS_TRANSLATE_PROVIDER` is set), so that
    /// `POST /items/{id}/translate` may be offered (issue 37). Given by `GET /items/{id}` and
    /// with `include=content`; absent otherwise.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub translatable: Option<bool>,
    /// The same story in the user's other feeds (duplicates across feeds): null when the user
    /// sees no other copy of it (or either feed is set never to merge).
    pub cluster: Option<ClusterView>,
}

/// An item's title in the language its feed is always translated into.
#[derive(Debug, Serialize, ToSchema)]
pub struct TranslatedTitleView {
    /// The title, translated (plain text).
    pub text: String,
    /// The language it is in, a BCP 47 tag.
    #[schema(example = "en")]
    pub language: String,
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
            language: item.language,
            translated_title: None,
            tags: Vec::new(),
            popularity: None,
            generated_summary: None,
            summarizable: None,
            translatable: None,
            cluster: None,
        }
    }
}

/// The copies of one story that a user sees in several feeds.
#[derive(Debug, Clone, Serialize, ToSchema)]
pub struct ClusterView {
    /// The cluster's id: the same for every copy.
    pub id: i64,
    /// Copies the user can see, this one included.
    pub size: i64,
    /// The other copies, oldest first.
    pub also_in: Vec<ClusterCopyView>,
}

/// Another copy of a story.
#[derive(Debug, Clone, Serialize, ToSchema)]
pub struct ClusterCopyView {
    /// The copy's item id (`GET /items/{id}`).
    pub item_id: i64,
    /// Its feed.
    pub feed_id: i64,
    /// The feed's title as the user named it.
    pub feed_title: String,
}

impl From<tidings_store::Cluster> for ClusterView {
    fn from(cluster: tidings_store::Cluster) -> ClusterView {
        ClusterView {
            id: cluster.id,
            size: cluster.size,
            also_in: cluster
                .also_in
                .into_iter()
                .map(|copy| ClusterCopyView {
                    item_id: copy.item_id,
                    feed_id: copy.feed_id,
                    feed_title: copy.feed_title,
                })
                .collect(),
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

/// How many people bookmarked an item's link, as last fetched.
#[derive(Debug, Clone, Serialize, ToSchema)]
pub struct PopularityView {
    /// The count (0: the source knows no bookmark of the link).
    pub count: i64,
    /// When it was fetched.
    pub fetched_at: String,
}

impl From<Popularity> for PopularityView {
    fn from(popularity: Popularity) -> PopularityView {
        PopularityView {
            count: popularity.count,
            fetched_at: time(popularity.fetched_at),
        }
    }
}

/// Fills in each item's `popularity` (left null where no count is known).
pub(crate) async fn add_popularity(
    state: &AppState,
    items: &mut [ItemSummaryView],
) -> ApiResult<()> {
    let ids: Vec<i64> = items.iter().map(|item| item.id).collect();
    let mut known = state.store.popularity_of(&ids).await?;
    for item in items {
        item.popularity = known.remove(&item.id).map(Into::into);
    }
    Ok(())
}

/// An item's generated summary.
#[derive(Debug, Clone, Serialize, ToSchema)]
pub struct GeneratedSummaryView {
    /// The summary, plain text.
    pub text: String,
    /// Who wrote it: `local` (the built-in extractive summarizer), `openai` (an
    /// OpenAI-compatible model) or `anthropic`.
    pub provider: String,
    /// When it was made.
    pub created_at: String,
}

impl From<GeneratedSummary> for GeneratedSummaryView {
    fn from(summary: GeneratedSummary) -> GeneratedSummaryView {
        GeneratedSummaryView {
            text: summary.text,
            provider: summary.provider,
            created_at: time(summary.created_at),
        }
    }
}

/// Points a listed item's images (its HTML and its thumbnail) at the media proxy, when it is on.
pub(crate) fn proxy_item(state: &AppState, item: &mut ItemSummaryView) {
    proxy_item_in(state, state.config.media_proxy.mode, item);
}

/// Points the images of a listed item that `mode` sends through the media proxy at it: the
/// configured mode's, or every image for a device that keeps them offline.
pub(crate) fn proxy_item_in(state: &AppState, mode: MediaProxyMode, item: &mut ItemSummaryView) {
    proxy_images_in(state, mode, &mut item.summary);
    proxy_images_in(state, mode, &mut item.content);
    proxy_images_in(state, mode, &mut item.full_content);
    let config = &state.config;
    if let Some(url) = item.thumbnail_url.as_deref()
        && let Some(proxied) = config.media_proxy.proxied_in(mode, &config.base_url, url)
    {
        item.thumbnail_url = Some(proxied);
    }
}

/// Points the images of an item's HTML at the media proxy, when it is on.
pub(crate) fn proxy_images(state: &AppState, html: &mut Option<String>) {
    proxy_images_in(state, state.config.media_proxy.mode, html);
}

fn proxy_images_in(state: &AppState, mode: MediaProxyMode, html: &mut Option<String>) {
    let config = &state.config;
    if let Some(text) = html.as_deref()
        && let Some(rewritten) = config
            .media_proxy
            .rewrite_html_in(mode, &config.base_url, text)
    {
        *html = Some(rewritten);
    }
}

/// Adds each listed item's content and enclosures (`include=content`).
pub(crate) async fn add_bodies(
    state: &AppState,
    auth: &Auth,
    items: &mut [ItemSummaryView],
) -> ApiResult<()> {
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
        item.translatable = Some(state.fetcher.translator().is_on());
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
pub(crate) fn summarizable(
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

/// Adds the translated title of each listed item of a feed the user always translates: one
/// small query for the user's such feeds (none for most users: then nothing more), then the
/// kept titles of the items not in that language already.
pub(crate) async fn add_translated_titles(
    state: &AppState,
    auth: &Auth,
    items: &mut [ItemSummaryView],
) -> ApiResult<()> {
    if items.is_empty() {
        return Ok(());
    }
    let translated = state.store.subscription_translations(auth.user.id).await?;
    if translated.is_empty() {
        return Ok(());
    }
    let wanted: Vec<(i64, String)> = items
        .iter()
        .filter_map(|item| {
            let to = translated.get(&item.subscription_id)?;
            let same = item
                .language
                .as_deref()
                .is_some_and(|from| tidings_text::language::same_language_tags(from, to));
            (!same).then(|| (item.id, to.clone()))
        })
        .collect();
    let mut titles = state.store.translated_titles(&wanted).await?;
    for item in items {
        if let (Some(text), Some(language)) = (
            titles.remove(&item.id),
            translated.get(&item.subscription_id),
        ) {
            item.translated_title = Some(TranslatedTitleView {
                text,
                language: language.clone(),
            });
        }
    }
    Ok(())
}

/// Adds each listed item's cluster: the other copies of its story the user sees.
pub(crate) async fn add_clusters(
    state: &AppState,
    auth: &Auth,
    items: &mut [ItemSummaryView],
) -> ApiResult<()> {
    let ids: Vec<i64> = items.iter().map(|item| item.id).collect();
    let mut clusters = state.store.clusters_of(auth.user.id, &ids).await?;
    for item in items {
        item.cluster = clusters.remove(&item.id).map(Into::into);
    }
    Ok(())
}

/// Adds each listed item's generated summary (null when it has none).
pub(crate) async fn add_generated_summaries(
    state: &AppState,
    items: &mut [ItemSummaryView],
) -> ApiResult<()> {
    let ids: Vec<i64> = items.iter().map(|item| item.id).collect();
    let mut found: HashMap<i64, GeneratedSummary> = state.store.summaries_of_items(&ids).await?;
    for item in items {
        item.generated_summary = found.remove(&item.id).map(Into::into);
    }
    Ok(())
}
