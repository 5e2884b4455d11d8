//! Tags with scores (F41): the keyphrases of new and changed items, found by
//! [`tidings_tags`] from the item's title and text and stored with their scores.
//!
//! The store queues an item in the transaction that inserts it or changes its text, and queues
//! the items stored before tags existed a batch at a time when the queue runs short (a
//! resumable backfill). [`TaggingJob`] works through the queue as an [`EnrichmentJob`]:
//! batches of [`BATCH`] items, extracted on the blocking pool and stored in one transaction
//! each. Tags found from text that changed meanwhile are dropped; the item is tagged again.

use std::sync::Arc;

use chrono::Utc;
use tidings_feed::text::html_to_text;
use tidings_store::{ItemTag, Store, StoreError, TagJob, TaggedItem};
use tokio::sync::Notify;

use crate::enrich::EnrichmentJob;
use crate::fetcher::Fetcher;

/// Items tagged per unit of work (one claim's share, one blocking task, one transaction).
pub const BATCH: usize = 25;
/// Batches tagged at once per worker: extraction is CPU work, and the writes share SQLite's
/// single writer with the fetcher.
pub const CONCURRENCY: usize = 2;

/// An item's tags from its title and text (its content, else its summary), at most `limit`;
/// with the item's `language` known, English and Japanese get the part-of-speech step (no
/// verbs or adjectives alone).
pub fn item_tags(
    title: Option<&str>,
    content: Option<&str>,
    summary: Option<&str>,
    language: Option<&str>,
    limit: usize,
) -> Vec<ItemTag> {
    let text = content
        .filter(|c| !c.trim().is_empty())
        .or(summary)
        .and_then(html_to_text)
        .unwrap_or_default();
    tidings_tags::extract_keyphrases_in(title.unwrap_or_default(), &text, language, limit)
        .into_iter()
        .map(|phrase| ItemTag {
            name: phrase.name,
            score: phrase.score,
        })
        .collect()
}

/// The tagging queue as an [`EnrichmentJob`] of a worker.
#[derive(Debug, Clone)]
pub struct TaggingJob {
    store: Store,
    owner: String,
    lease_seconds: i64,
    tags_per_item: usize,
    wakeup: Arc<Notify>,
}

impl TaggingJob {
    /// The job of `fetcher`'s worker: its store, lease owner and `tags_per_item` setting.
    pub fn new(fetcher: &Fetcher) -> TaggingJob {
        let config = fetcher.config();
        TaggingJob {
            store: fetcher.store().clone(),
            owner: config.owner.clone(),
            lease_seconds: config.lease.as_secs() as i64,
            tags_per_item: config.tags_per_item,
            wakeup: fetcher.tags_wakeup(),
        }
    }
}

impl EnrichmentJob for TaggingJob {
    type Task = Vec<TagJob>;

    fn name(&self) -> &'static str {
        "tags"
    }

    async fn claim(&self, limit: usize) -> Result<Vec<Vec<TagJob>>, StoreError> {
        let jobs = self
            .store
            .claim_tag_jobs(
                &self.owner,
                Utc::now().timestamp(),
                (limit * BATCH) as i64,
                self.lease_seconds,
            )
            .await?;
        Ok(jobs.chunks(BATCH).map(<[TagJob]>::to_vec).collect())
    }

    async fn run(&self, batch: Vec<TagJob>) {
        let limit = self.tags_per_item;
        let found = tokio::task::spawn_blocking(move || {
            batch
                .into_iter()
                .map(|job| TaggedItem {
                    item_id: job.item_id,
                    version: job.version,
                    tags: item_tags(
                        job.title.as_deref(),
                        job.content.as_deref(),
                        job.summary.as_deref(),
                        job.language.as_deref(),
                        limit,
                    ),
                })
                .collect::<Vec<_>>()
        })
        .await;
        let tagged = match found {
            Ok(tagged) => tagged,
            // The extractor panicked: the items' leases expire and they are tried again.
            Err(error) => {
                tracing::warn!(%error, "finding tags failed");
                return;
            }
        };
        match self.store.save_item_tags(&tagged).await {
            Ok(saved) => tracing::debug!(items = tagged.len(), saved, "tagged items"),
            Err(error) => tracing::warn!(%error, "storing tags failed; the items are tried again"),
        }
    }

    fn wakeup(&self) -> Option<Arc<Notify>> {
        Some(Arc::clone(&self.wakeup))
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn tags_come_from_the_title_and_the_text_of_the_html() {
        let tags = item_tags(
            Some("Rust 1.80"),
            Some("<p>The <b>Rust</b> compiler gets <i>LazyLock</i>.</p>"),
            Some("ignored summary words"),
            None,
            8,
        );
        let names: Vec<&str> = tags.iter().map(|t| t.name.as_str()).collect();
        assert_eq!(names[0], "rust");
        assert!(names.contains(&"lazylock"), "{names:?}");
        assert!(!names.contains(&"summary"), "{names:?}");
        // Without content, the summary is read.
        let tags = item_tags(
            None,
            Some("  "),
            Some("<p>Kubernetes operators</p>"),
            None,
            8,
        );
        assert!(tags.iter().any(|t| t.name == "kubernetes"), "{tags:?}");
        assert!(item_tags(Some("Rust"), None, None, None, 0).is_empty());
        // With the item's language, a verb alone is no tag.
        let text = Some("<p>The compiler adds a lint. Cargo adds a flag.</p>");
        let tags = item_tags(Some("Rust adds lints"), text, None, None, 8);
        assert!(tags.iter().any(|t| t.name == "adds"), "{tags:?}");
        let tags = item_tags(Some("Rust adds lints"), text, None, Some("en"), 8);
        assert!(!tags.iter().any(|t| t.name == "adds"), "{tags:?}");
        assert!(tags.iter().any(|t| t.name == "rust"), "{tags:?}");
    }
}
