//! Tags with scores (F41): each item's keyphrases, the queue of items waiting for them, and
//! the counts of a user's tags.
//!
//! Items are queued in the transaction that inserts them or changes their text
//! ([`Store::upsert_items`]); items stored before tags existed are queued from a cursor a
//! batch at a time, when the queue runs short ([`Store::claim_tag_jobs`]). The tags
//! themselves are found by `tidings-tags` in the worker; the store keeps what it is given.

use std::collections::{BTreeSet, HashMap, HashSet};

use crate::job_queue::{JobQueue, Refill, placeholders};
use crate::rules_late::{LateChange, Learned, write_late_changes_on};
use crate::tag_statements::TagStatements;
use crate::{Result, Store, StoreError, in_tx, with_db};

/// The queue of items waiting for their tags: newest first, versioned (an item whose text
/// changes is queued again and tagged from its newer text).
pub(crate) const TAG_JOBS: JobQueue = JobQueue::new("tag_jobs").newest_first().versioned();

/// Items the backfill queues per step, when the queue runs short.
pub const TAG_BACKFILL_BATCH: i64 = 500;
/// The most tags [`Store::top_tags`] answers.
pub const MAX_TOP_TAGS: i64 = 200;

/// Items per read of items' tags (well under both engines' limits on bound values).
const IDS_PER_READ: usize = 200;

/// An item claimed for tagging, with the text its tags are found in.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct TagJob {
    /// The item's id.
    pub item_id: i64,
    /// The queue's version of the item: tags are kept only if it did not change meanwhile.
    pub version: i64,
    /// Its title.
    pub title: Option<String>,
    /// Its sanitized content.
    pub content: Option<String>,
    /// Its sanitized summary.
    pub summary: Option<String>,
    /// Its language, a BCP 47 tag (issue 37): English and Japanese items get the tagger's
    /// part-of-speech step.
    pub language: Option<String>,
}

/// A tag of an item.
#[derive(Debug, Clone, PartialEq, serde::Serialize)]
pub struct ItemTag {
    /// The tag's normalized name.
    pub name: String,
    /// How well it describes the item, in 0–1.
    pub score: f64,
}

/// The tags found for a claimed item.
#[derive(Debug, Clone, PartialEq)]
pub struct TaggedItem {
    /// The item's id.
    pub item_id: i64,
    /// The version it was claimed at ([`TagJob::version`]).
    pub version: i64,
    /// Its tags (names normalized, scores in 0–1); empty when nothing describes it.
    pub tags: Vec<ItemTag>,
}

/// A tag and how many of a user's items carry it.
#[derive(Debug, Clone, PartialEq, Eq, serde::Serialize)]
pub struct TagCount {
    /// The tag's name.
    pub name: String,
    /// Items of the user's subscriptions with the tag.
    pub count: i64,
}

/// The rows `(item, tag, score)` of the `current` items among `tagged`, with the tags' ids
/// `ids` by name: a tag named twice for an item counts once (its first score), scores are
/// kept in 0–1.
fn item_tag_rows(
    tagged: &[&TaggedItem],
    current: &HashSet<i64>,
    ids: &HashMap<String, i64>,
) -> Result<Vec<(i64, i64, f64)>> {
    let mut rows = Vec::new();
    for item in tagged.iter().filter(|item| current.contains(&item.item_id)) {
        let mut seen = HashSet::with_capacity(item.tags.len());
        for tag in &item.tags {
            let tag_id = *ids
                .get(&tag.name)
                .ok_or_else(|| StoreError::Invalid(format!("tag {:?} was not stored", tag.name)))?;
            if seen.insert(tag_id) {
                rows.push((item.item_id, tag_id, tag.score.clamp(0.0, 1.0)));
            }
        }
    }
    Ok(rows)
}

/// Queues `ids` for tagging inside the transaction `$tx`, at `$now`. An item already queued
/// gets a new version and loses its lease: its text changed after it was claimed.
macro_rules! queue_tag_jobs {
    ($tx:expr, $ids:expr, $now:expr) => {
        $crate::job_queue::queue_jobs!($tx, $crate::tags::TAG_JOBS, $ids, $now)
    };
}
pub(crate) use queue_tag_jobs;

impl Store {
    /// Items waiting in the tagging queue (leased ones included).
    pub async fn tag_queue_len(&self) -> Result<i64> {
        TAG_JOBS.len(self).await
    }

    /// Queues the next `batch` of the items stored before tags existed, and records how far
    /// it got, in one transaction (resumable; several workers take turns). Returns how many
    /// items were queued; 0 once every such item was.
    pub async fn queue_tag_backfill(&self, batch: i64, now: i64) -> Result<u64> {
        TAG_JOBS
            .queue_backfill(self, "tag_backfill", batch, now)
            .await
    }

    /// Claims up to `limit` queued items that are not leased, for `lease_seconds`, newest
    /// first. When the queue runs short, the next batch of items stored before tags existed
    /// is queued first ([`Store::queue_tag_backfill`]). Several workers never get the same
    /// item (`SKIP LOCKED` on PostgreSQL, the single writer on SQLite).
    pub async fn claim_tag_jobs(
        &self,
        owner: &str,
        now: i64,
        limit: i64,
        lease_seconds: i64,
    ) -> Result<Vec<TagJob>> {
        // One backfill step at most per claim.
        let backfill = Refill {
            rounds: 1,
            step: || self.queue_tag_backfill(TAG_BACKFILL_BATCH, now),
        };
        let claimed = TAG_JOBS
            .claim_texts(
                self,
                owner,
                now,
                limit.clamp(1, 1000),
                lease_seconds,
                backfill,
            )
            .await?;
        Ok(claimed
            .into_iter()
            .map(|claimed| TagJob {
                item_id: claimed.job.item_id,
                version: claimed.job.version,
                title: claimed.title,
                content: claimed.content,
                summary: claimed.summary,
                language: claimed.language,
            })
            .collect())
    }

    /// Stores the tags found for claimed items, replacing what they had, and takes them off
    /// the queue, in one transaction. An item that changed since it was claimed (its version
    /// moved on) or was deleted is skipped: it is tagged again from its newer text. Returns
    /// how many items' tags were stored.
    pub async fn save_item_tags(&self, tagged: &[TaggedItem]) -> Result<u64> {
        if tagged.is_empty() {
            return Ok(0);
        }
        let mut tagged: Vec<&TaggedItem> = tagged.iter().collect();
        tagged.sort_by_key(|item| item.item_id);
        // Names in one order in every transaction, so concurrent inserts never deadlock.
        let names: BTreeSet<&str> = tagged
            .iter()
            .flat_map(|item| item.tags.iter().map(|tag| tag.name.as_str()))
            .collect();
        // Rules that look at tags could not hold when the items arrived: what they decide now
        // is written with the tags (an item whose text changed meanwhile is skipped below,
        // and its change with it).
        let learned: HashMap<i64, Learned> = tagged
            .iter()
            .map(|item| {
                let names = item.tags.iter().map(|tag| tag.name.clone()).collect();
                (item.item_id, Learned::Tags(names))
            })
            .collect();
        let changes = self.late_rule_changes(&learned).await?;
        let (engine, now) = (self.engine(), crate::unix_now());
        let names: Vec<&str> = names.into_iter().collect();
        let jobs: Vec<(i64, i64)> = tagged
            .iter()
            .map(|item| (item.item_id, item.version))
            .collect();
        let saved = in_tx!(self, |tx| {
            let ids = tx.tag_ids(&names).await?;
            let current: HashSet<i64> = tx
                .complete_current(TAG_JOBS.table(), &jobs)
                .await?
                .into_iter()
                .collect();
            let current_items: Vec<i64> = tagged
                .iter()
                .map(|item| item.item_id)
                .filter(|id| current.contains(id))
                .collect();
            let rows = item_tag_rows(&tagged, &current, &ids)?;
            tx.replace_item_tags(&current_items, &rows).await?;
            let changes: Vec<LateChange> = changes
                .into_iter()
                .filter(|(_, item_id, _)| current.contains(item_id))
                .collect();
            write_late_changes_on!(tx, &changes, engine, now);
            current_items.len() as u64
        });
        Ok(saved)
    }

    /// The tags of these items, best first, by item. The caller checks that the user may
    /// see the items.
    pub async fn tags_of_items(&self, item_ids: &[i64]) -> Result<HashMap<i64, Vec<ItemTag>>> {
        let mut tags: HashMap<i64, Vec<ItemTag>> = HashMap::new();
        for chunk in item_ids.chunks(IDS_PER_READ) {
            let sql = format!(
                "SELECT it.item_id, t.name, it.score FROM item_tags it
                 JOIN tags t ON t.id = it.tag_id
                 WHERE it.item_id IN ({})
                 ORDER BY it.item_id, it.score DESC, t.name",
                placeholders(1, chunk.len())
            );
            let rows: Vec<(i64, String, f64)> = with_db!(self, read, |db| {
                let mut query = sqlx::query_as(sqlx::AssertSqlSafe(sql));
                for id in chunk {
                    query = query.bind(*id);
                }
                query.fetch_all(db).await?
            });
            for (item_id, name, score) in rows {
                tags.entry(item_id)
                    .or_default()
                    .push(ItemTag { name, score });
            }
        }
        Ok(tags)
    }

    /// The id of the tag named `name` (already normalized), when any item ever had it.
    pub async fn tag_id(&self, name: &str) -> Result<Option<i64>> {
        Ok(with_db!(self, read, |db| {
            sqlx::query_scalar("SELECT id FROM tags WHERE name = $1")
                .bind(name)
                .fetch_optional(db)
                .await?
        }))
    }

    /// The user's most frequent tags among the items of their subscriptions published at or
    /// after `since` (all items when `None`), most items first, then by name; at most `limit`
    /// (up to [`MAX_TOP_TAGS`]).
    pub async fn top_tags(
        &self,
        user_id: i64,
        since: Option<i64>,
        limit: i64,
    ) -> Result<Vec<TagCount>> {
        let rows: Vec<(String, i64)> = with_db!(self, read, |db| {
            sqlx::query_as(
                "SELECT t.name, COUNT(*) FROM subscriptions s
                 JOIN items i ON i.feed_id = s.feed_id
                 JOIN item_tags it ON it.item_id = i.id
                 JOIN tags t ON t.id = it.tag_id
                 WHERE s.user_id = $1 AND i.published_at >= $2
                 GROUP BY t.name
                 ORDER BY COUNT(*) DESC, t.name
                 LIMIT $3",
            )
            .bind(user_id)
            .bind(since.unwrap_or(i64::MIN))
            .bind(limit.clamp(1, MAX_TOP_TAGS))
            .fetch_all(db)
            .await?
        });
        Ok(rows
            .into_iter()
            .map(|(name, count)| TagCount { name, count })
            .collect())
    }
}
