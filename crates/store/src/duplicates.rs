//! Duplicates across feeds (issue 35): the same story from several feeds, clustered as it
//! arrives, shown once per user, marked read together.
//!
//! Two decisions, kept apart because only the second depends on the reader:
//! - **Whether an arriving item is the same story as a stored one** ([`cluster_new_items_on`],
//!   in the transaction that stores a fetch): its lookup keys (`tidings_cluster::lookup_keys`)
//!   find the stored items of other feeds that share one, the few sharing the most are read
//!   and compared (`tidings_cluster::same_story`), and a match puts both in one cluster
//!   (`items.cluster_id`, the id of the cluster's first item). Once per item, however many
//!   users follow its feed.
//! - **Which copy each subscriber is shown** (same transaction, per subscriber): when the
//!   user can already see a copy from another feed (followed, not hidden by a rule, neither
//!   feed set to never merge), the arriving copy is recorded in `user_duplicates` as shown
//!   through that one, or the other way round when the arriving copy's feed is the one the
//!   user prefers. When the user already read the story and reads by cluster, the copy
//!   arrives read.
//!
//! Listings leave out a user's `user_duplicates` rows when collapsed (`reading`),
//! counts subtract them ([`Store::duplicate_unread`]), every listed item carries the copies
//! the user can see ([`Store::clusters_of`]), and read marks reach every copy when the user
//! reads by cluster ([`Store::cluster_copies`]).

use std::collections::{HashMap, HashSet};

use tidings_cluster::{
    Fingerprint, KeyKind, LookupKey, Story, Verdict, same_story, story_keys, worth_comparing,
};

use crate::cluster_statements::{
    ArrivingCopyRow, CandidateRow, ClusterStatements, HitRow, ShownRow,
};
use crate::{Result, Store, with_db};

/// How far apart two copies' dates may be, and how long an item keeps its lookup keys: copies
/// of a story arrive within days of each other, and older keys would only grow the table.
pub const STORY_WINDOW_SECONDS: i64 = 14 * 86_400;

/// Stored items compared with an arriving one at most: those sharing the most keys with it.
/// Copies share several keys (their URL, title and text anchors), so the first few are them.
pub const MAX_CANDIDATES: usize = 5;

/// Items under one key past which the key is a common phrase, not evidence: a stock line
/// (`Open source software and climate change.`) or a site's boilerplate is under thousands of
/// items, each of which every look-up would read, while a story's copies share a key a few
/// times (its copies after the first store only the keys their cluster lacks).
pub const MAX_KEY_POSTINGS: usize = 100;

/// Values bound per key statement: well under SQLite's limit of 32,766.
pub(crate) const KEY_BATCH: usize = 500;

/// Forgets, for user `$1`, which copies of feed `$2` were shown through another and which
/// were shown in another's place.
pub(crate) const UNLINK_FEED_SQL: &str = "DELETE FROM user_duplicates WHERE user_id = $1
       AND (item_id IN (SELECT id FROM items WHERE feed_id = $2 AND cluster_id IS NOT NULL)
            OR shown_id IN (SELECT id FROM items WHERE feed_id = $2 AND cluster_id IS NOT NULL))";

/// Whether a subscription's copies are merged: `merge`, `prefer` or `never`.
pub const DUPLICATE_CHOICES: [&str; 3] = ["merge", "prefer", "never"];

/// A user's cluster of an item: the story's other copies the user can see.
#[derive(Debug, Clone, PartialEq, Eq, serde::Serialize)]
pub struct Cluster {
    /// The cluster's id (the id of its first stored item), the same for every copy.
    pub id: i64,
    /// Copies the user can see, this one included.
    pub size: i64,
    /// The other copies, oldest first.
    pub also_in: Vec<ClusterCopy>,
}

/// Another copy of a story, as the user can see it.
#[derive(Debug, Clone, PartialEq, Eq, serde::Serialize)]
pub struct ClusterCopy {
    /// The copy's item id.
    pub item_id: i64,
    /// Its feed.
    pub feed_id: i64,
    /// The feed's title as the user named it (else its own title, else its URL).
    pub feed_title: String,
}

/// An arriving item, read for clustering: its keys only. Most arriving items have no copy
/// stored, and are never read further; the few with candidates are read whole
/// ([`Fingerprint::new`]) once their candidates are known.
pub(crate) struct Arrival {
    /// Its id.
    pub(crate) id: i64,
    /// Where it is among the fetch's new items.
    pub(crate) at: usize,
    /// Its date.
    pub(crate) published_at: i64,
    /// Its lookup keys.
    pub(crate) keys: Vec<LookupKey>,
}

impl Arrival {
    /// Reads new item `id` (the fetch's `at`th new item) dated `published_at` into its keys,
    /// or `None` when it is too old to have copies still arriving. `story` holds its text as
    /// the search index read it and `tokens` the index's tokens of that text, so that the
    /// text is not tokenized again.
    pub(crate) fn new(
        (id, at): (i64, usize),
        published_at: i64,
        story: &Story<'_>,
        tokens: &[String],
        now: i64,
    ) -> Option<Arrival> {
        if published_at < now - STORY_WINDOW_SECONDS {
            return None;
        }
        let tokens: Vec<&str> = tokens.iter().map(String::as_str).collect();
        Some(Arrival {
            id,
            at,
            published_at,
            keys: story_keys(story, &tokens),
        })
    }
}

/// A stored item sharing a key with an arriving one, as the key look-up reads it: the key,
/// the item, its cluster and its date.
pub(crate) type Hit = HitRow;

/// A stored item read for comparing.
pub(crate) struct Candidate {
    cluster_id: Option<i64>,
    fingerprint: Fingerprint,
}

/// Reads a stored item for comparing: its content (else summary) as plain text, as the
/// arriving items' text is made.
pub(crate) fn candidate(row: CandidateRow) -> (i64, Candidate) {
    let (id, cluster_id, url, guid, title, content, summary) = row;
    let text = crate::search_index::searchable_text(content.or(summary).as_deref(), None);
    let fingerprint = Fingerprint::new(&Story {
        link: url.as_deref(),
        canonical: None,
        guid: guid.as_deref(),
        title: title.as_deref(),
        text: Some(&text),
        vector: None,
    });
    (
        id,
        Candidate {
            cluster_id,
            fingerprint,
        },
    )
}

/// For each arriving item, the stored items worth comparing with it (`worth_comparing`: a
/// shared URL or title key, or several text keys), dated within [`STORY_WINDOW_SECONDS`]; the
/// most keys shared first, then the newest; one per cluster, since a cluster's copies are one
/// story; at most [`MAX_CANDIDATES`].
pub(crate) fn ranked_candidates(arrivals: &[Arrival], hits: &[Hit]) -> Vec<Vec<i64>> {
    let mut by_key: HashMap<i64, Vec<&Hit>> = HashMap::new();
    for hit in hits {
        by_key.entry(hit.0).or_default().push(hit);
    }
    arrivals
        .iter()
        .map(|arrival| {
            let mut shared: HashMap<i64, (Vec<KeyKind>, Option<i64>)> = HashMap::new();
            for key in &arrival.keys {
                for &&(_, item, cluster, published_at) in
                    by_key.get(&key.value).into_iter().flatten()
                {
                    if (published_at - arrival.published_at).abs() <= STORY_WINDOW_SECONDS {
                        let entry = shared.entry(item).or_insert((Vec::new(), cluster));
                        entry.0.push(key.kind);
                    }
                }
            }
            let mut ranked: Vec<(i64, usize, Option<i64>)> = shared
                .into_iter()
                .filter(|(_, (kinds, _))| worth_comparing(kinds))
                .map(|(item, (kinds, cluster))| (item, kinds.len(), cluster))
                .collect();
            ranked.sort_by(|a, b| b.1.cmp(&a.1).then(b.0.cmp(&a.0)));
            let mut clusters = std::collections::HashSet::new();
            ranked
                .into_iter()
                .filter(|(_, _, cluster)| cluster.is_none_or(|c| clusters.insert(c)))
                .take(MAX_CANDIDATES)
                .map(|(id, _, _)| id)
                .collect()
        })
        .collect()
}

/// Leaves out of `keys` those known to be common.
pub(crate) fn drop_common(keys: &mut Vec<i64>, common: &std::sync::Mutex<HashSet<i64>>) {
    let common = common.lock().unwrap_or_else(|e| e.into_inner());
    if !common.is_empty() {
        keys.retain(|k| !common.contains(k));
    }
}

/// Finds the keys under more than [`MAX_KEY_POSTINGS`] of the `hits`, remembers them as
/// common and drops their hits: such a key is read once by a process, then never again.
pub(crate) fn learn_common(hits: &mut Vec<Hit>, common: &std::sync::Mutex<HashSet<i64>>) {
    let mut postings: HashMap<i64, usize> = HashMap::new();
    for hit in hits.iter() {
        *postings.entry(hit.0).or_default() += 1;
    }
    let found: HashSet<i64> = postings
        .into_iter()
        .filter(|(_, n)| *n > MAX_KEY_POSTINGS)
        .map(|(key, _)| key)
        .collect();
    if found.is_empty() {
        return;
    }
    hits.retain(|hit| !found.contains(&hit.0));
    common
        .lock()
        .unwrap_or_else(|e| e.into_inner())
        .extend(found);
}

/// The `(key, item)` rows to store for the arriving items: their keys but the common ones,
/// and for a copy that joined a cluster only the keys its cluster had no item under (the
/// story is found through its first copies already; a story reprinted by many feeds would
/// otherwise make its own keys common).
pub(crate) fn keys_to_store(
    arrivals: &[Arrival],
    joins: &[Join],
    hits: &[Hit],
    common: &std::sync::Mutex<HashSet<i64>>,
) -> Vec<(i64, i64)> {
    let joined: HashMap<i64, i64> = joins.iter().map(|j| (j.item_id, j.cluster_id)).collect();
    let common = common.lock().unwrap_or_else(|e| e.into_inner());
    let known: HashSet<(i64, i64)> = hits
        .iter()
        .map(|&(key, item, cluster, _)| (key, cluster.unwrap_or(item)))
        .collect();
    let known = &known;
    let mut rows: Vec<(i64, i64)> = arrivals
        .iter()
        .flat_map(|a| {
            let cluster = joined.get(&a.id).copied();
            a.keys
                .iter()
                .filter(move |k| cluster.is_none_or(|c| !known.contains(&(k.value, c))))
                .map(move |k| (k.value, a.id))
        })
        .filter(|(key, _)| !common.contains(key))
        .collect();
    // Distinct rows, so that the insert needs no conflict check (an item's keys are distinct
    // already; this keeps it so whatever makes them).
    rows.sort_unstable();
    rows.dedup();
    rows
}

/// An arriving item found to be a copy: the cluster it joins, and the stored item that
/// starts the cluster when it had none.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) struct Join {
    /// The arriving item.
    pub(crate) item_id: i64,
    /// The cluster's id.
    pub(crate) cluster_id: i64,
    /// The stored copy, when it starts the cluster now.
    pub(crate) starts: Option<i64>,
    /// The arriving item's date.
    pub(crate) published_at: i64,
}

/// Which arriving items are copies of which stored ones: the first candidate (in rank order)
/// that `same_story` calls the same as the arriving item (read whole in `read`, in the
/// arrivals' order; `None` for those without candidates).
pub(crate) fn decide_joins(
    arrivals: &[Arrival],
    read: &[Option<Fingerprint>],
    ranked: &[Vec<i64>],
    candidates: &HashMap<i64, Candidate>,
) -> Vec<Join> {
    let mut joins = Vec::new();
    // A stored item that starts a cluster for one arrival is already in it for the next.
    let mut started: HashMap<i64, i64> = HashMap::new();
    for ((arrival, fingerprint), ids) in arrivals.iter().zip(read).zip(ranked) {
        let Some(fingerprint) = fingerprint else {
            continue;
        };
        let found = ids.iter().find_map(|id| {
            let c = candidates.get(id)?;
            let same = matches!(same_story(fingerprint, &c.fingerprint), Verdict::Same(_));
            same.then_some((*id, c))
        });
        if let Some((id, c)) = found {
            let cluster_id = c.cluster_id.or(started.get(&id).copied());
            joins.push(Join {
                item_id: arrival.id,
                cluster_id: cluster_id.unwrap_or(id),
                starts: cluster_id.is_none().then_some(id),
                published_at: arrival.published_at,
            });
            started.insert(id, cluster_id.unwrap_or(id));
        }
    }
    joins
}

/// `(?, ?, …)` or `($first, …)`: `n` placeholders in one parenthesized list.
pub(crate) fn placeholder_list(numbered: bool, first: usize, n: usize) -> String {
    crate::batch::placeholder_rows(numbered, first, 1, n)
}

/// One subscriber's view of an arriving copy: the user, the arriving copy's subscription
/// choice, a copy they already see, its subscription's choice, whether they read it, how they
/// read clusters, and the copy's date (an [`ArrivingCopyRow`] without its arriving copy).
pub(crate) type SubscriberCopy = (i64, String, i64, String, bool, String, i64);

/// What to write for one subscriber of an arriving copy.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) struct Shown {
    /// The user.
    pub(crate) user_id: i64,
    /// The copy shown through another.
    pub(crate) hidden: i64,
    /// The copy shown in its place.
    pub(crate) shown: i64,
    /// Whether the copy shown took the place of one shown before (whose duplicates move to
    /// it).
    pub(crate) replaces: bool,
    /// Whether the arriving copy arrives read: the user read the story and reads by cluster.
    pub(crate) read: bool,
}

/// Decides, per subscriber, which copy is shown: the copy of the feed they prefer, else the
/// earliest published (the source that had the story first, whichever feed was fetched
/// first); between copies as early, the one they already see. `(item_id, published_at)` is
/// the arriving copy.
pub(crate) fn decide_shown(
    (item_id, published_at): (i64, i64),
    rows: &[SubscriberCopy],
) -> Vec<Shown> {
    let mut out: Vec<Shown> = Vec::new();
    for (user_id, choice, other, other_choice, other_read, reads_by, other_published) in rows {
        // Rows come oldest copy first per user: the first is the one they see.
        if out.last().is_some_and(|s| s.user_id == *user_id) {
            continue;
        }
        let read = *other_read && reads_by == "cluster";
        let arriving_shown = match (choice == "prefer", other_choice == "prefer") {
            (true, false) => true,
            (false, true) => false,
            _ => published_at < *other_published,
        };
        out.push(if arriving_shown {
            Shown {
                user_id: *user_id,
                hidden: *other,
                shown: item_id,
                replaces: true,
                read,
            }
        } else {
            Shown {
                user_id: *user_id,
                hidden: item_id,
                shown: *other,
                replaces: false,
                read,
            }
        });
    }
    out
}

/// Clusters the items a fetch of feed `$feed_id` just stored (`$new`: `(id, write)` pairs),
/// in the fetch's transaction `$tx`, when `$store` clusters: finds and compares candidates,
/// writes the clusters, the arriving items' keys and each subscriber's shown copy. Answers
/// how many items joined a cluster. Called after the rules, so that a copy a rule hid for a
/// subscriber is not one they are shown.
macro_rules! cluster_new_items_on {
    ($tx:expr, $store:expr, $feed_id:expr, $new:expr, $now:expr) => {
        if $store.clusters_on().await {
            let now: i64 = $now;
            let arriving: Vec<$crate::duplicates::Arriving<'_>> = $new
                .iter()
                .map(|(id, write)| {
                    let item = write.prepared.item;
                    $crate::duplicates::Arriving {
                        id: *id,
                        story: tidings_cluster::Story {
                            link: item.url.as_deref(),
                            canonical: None,
                            guid: item.guid.as_deref(),
                            title: item.title.as_deref(),
                            text: Some(write.text.body.as_str()),
                            vector: None,
                        },
                        tokens: write.text.body_tokens.inline(),
                        published_at: item.published.unwrap_or(now),
                    }
                })
                .collect();
            let common = &$store.common_story_keys;
            $crate::duplicates::cluster_items(&mut *$tx, common, $feed_id, &arriving, now).await?
        } else {
            0
        }
    };
}
pub(crate) use cluster_new_items_on;

/// An arriving item as clustering reads it: its id, its story (its text as the search index
/// read it), the index's tokens of that text, and its date.
pub(crate) struct Arriving<'a> {
    /// Its id.
    pub(crate) id: i64,
    /// Its story.
    pub(crate) story: Story<'a>,
    /// The search index's tokens of its text, so that the text is not tokenized again.
    pub(crate) tokens: &'a [String],
    /// Its date (the fetch's time when it has none).
    pub(crate) published_at: i64,
}

/// [`cluster_new_items_on`]'s work, on a fetch's transaction `db`: phases that each read or
/// write the whole fetch's rows in one statement ([`ClusterStatements`]).
pub(crate) async fn cluster_items<C: ClusterStatements>(
    db: &mut C,
    common: &std::sync::Mutex<HashSet<i64>>,
    feed_id: i64,
    new: &[Arriving<'_>],
    now: i64,
) -> Result<u64> {
    // Phase 1: the arriving items' keys, from the index's tokens.
    let arrivals: Vec<Arrival> = new
        .iter()
        .enumerate()
        .filter_map(|(at, a)| Arrival::new((a.id, at), a.published_at, &a.story, a.tokens, now))
        .collect();
    let mut keys: Vec<i64> = arrivals
        .iter()
        .flat_map(|a| a.keys.iter().map(|k| k.value))
        .collect();
    keys.sort_unstable();
    keys.dedup();
    drop_common(&mut keys, common);
    if keys.is_empty() {
        return Ok(0);
    }
    // Phase 2: the stored items of other feeds sharing a key with an arriving one.
    let mut hits: Vec<Hit> = db.story_hits(feed_id, &keys, MAX_KEY_POSTINGS + 1).await?;
    learn_common(&mut hits, common);
    let ranked = ranked_candidates(&arrivals, &hits);
    // Phase 3: those worth it, and the arriving items that have some, read and compared.
    let mut wanted: Vec<i64> = ranked.iter().flatten().copied().collect();
    wanted.sort_unstable();
    wanted.dedup();
    let mut candidates = HashMap::new();
    if !wanted.is_empty() {
        candidates.extend(db.candidate_rows(&wanted).await?.into_iter().map(candidate));
    }
    let read: Vec<Option<Fingerprint>> = arrivals
        .iter()
        .zip(&ranked)
        .map(|(arrival, ids)| (!ids.is_empty()).then(|| Fingerprint::new(&new[arrival.at].story)))
        .collect();
    let joins = decide_joins(&arrivals, &read, &ranked, &candidates);
    // Phase 4: the clusters, and the arriving items' keys for those that come later.
    if !joins.is_empty() {
        let rows: Vec<(i64, i64, bool)> = joins
            .iter()
            .flat_map(|j| {
                let start = j.starts.map(|first| (first, first, true));
                start.into_iter().chain([(j.item_id, j.cluster_id, false)])
            })
            .collect();
        db.set_clusters(&rows).await?;
    }
    let rows = keys_to_store(&arrivals, &joins, &hits, common);
    if !rows.is_empty() {
        db.insert_story_keys(&rows).await?;
    }
    // Phase 5: each subscriber's shown copy.
    show_copies(db, feed_id, &joins, now).await?;
    Ok(joins.len() as u64)
}

/// Decides and writes which copy each subscriber of feed `feed_id` is shown for the arriving
/// copies `joins`: one read and one write for all of them. An arriving copy in a cluster that
/// an earlier one of the same fetch joined waits for that one's writes (they change which
/// copies its subscribers see), so it goes in a later round; a feed repeating a story in one
/// fetch is rare.
async fn show_copies<C: ClusterStatements>(
    db: &mut C,
    feed_id: i64,
    joins: &[Join],
    now: i64,
) -> Result<()> {
    let mut rest: Vec<&Join> = joins.iter().collect();
    while !rest.is_empty() {
        let mut clusters = HashSet::new();
        let (round, later): (Vec<&Join>, Vec<&Join>) = rest
            .into_iter()
            .partition(|j| clusters.insert(j.cluster_id));
        rest = later;
        let pairs: Vec<(i64, i64)> = round.iter().map(|j| (j.cluster_id, j.item_id)).collect();
        let copies: Vec<ArrivingCopyRow> = db.subscriber_copies(feed_id, &pairs).await?;
        let mut by_item: HashMap<i64, Vec<SubscriberCopy>> = HashMap::new();
        for (item, user, choice, other, other_choice, read, reads_by, published) in copies {
            by_item.entry(item).or_default().push((
                user,
                choice,
                other,
                other_choice,
                read,
                reads_by,
                published,
            ));
        }
        let mut writes: Vec<ShownRow> = Vec::new();
        for join in &round {
            let Some(rows) = by_item.get(&join.item_id) else {
                continue;
            };
            writes.extend(
                decide_shown((join.item_id, join.published_at), rows)
                    .into_iter()
                    .map(|s| {
                        (
                            s.user_id,
                            s.hidden,
                            s.shown,
                            s.replaces,
                            s.read.then_some(join.item_id),
                        )
                    }),
            );
        }
        if !writes.is_empty() {
            db.write_shown(&writes, now).await?;
        }
    }
    Ok(())
}

/// A user's copies of clustered items, as [`Store::clusters_of`] reads them: the item, its
/// cluster, and one other copy (id, feed, the user's title of the feed).
type CopyRow = (i64, i64, i64, i64, String);

impl Store {
    /// Turns the clustering of arriving items on (the default) or off, for this store and its
    /// clones: off, fetches store no keys and make no clusters (what was clustered before
    /// stays). For an installation that wants none of it, and for measuring what it costs.
    pub fn set_duplicate_clustering(&self, on: bool) {
        self.clustering_off
            .store(!on, std::sync::atomic::Ordering::Relaxed);
    }

    /// Whether arriving items are clustered: the schema has the tables and it is not off.
    pub(crate) async fn clusters_on(&self) -> bool {
        !self
            .clustering_off
            .load(std::sync::atomic::Ordering::Relaxed)
            && self.clusters_ready().await
    }

    /// Whether the schema has the clustering's tables; remembered once it does.
    pub(crate) async fn clusters_ready(&self) -> bool {
        self.schema_ready(
            &self.clusters_ready,
            "SELECT COUNT(*) FROM item_story_keys WHERE key = 0 AND item_id < 0",
        )
        .await
    }

    /// The clusters of these items (at most a page) as the user sees them: for each item with
    /// copies the user can see in other feeds, its cluster; items without are left out.
    pub async fn clusters_of(&self, user_id: i64, ids: &[i64]) -> Result<HashMap<i64, Cluster>> {
        let mut clusters: HashMap<i64, Cluster> = HashMap::new();
        if ids.is_empty() {
            return Ok(clusters);
        }
        for chunk in ids.chunks(KEY_BATCH) {
            let list = placeholder_list(true, 2, chunk.len());
            let sql = format!(
                "SELECT i.id, i.cluster_id, o.id, o.feed_id, COALESCE(so.title, f.title, f.url)
                 FROM items i
                 JOIN subscriptions si ON si.feed_id = i.feed_id AND si.user_id = $1
                 JOIN items o ON o.cluster_id = i.cluster_id AND o.id <> i.id
                 JOIN subscriptions so ON so.feed_id = o.feed_id AND so.user_id = $1
                 JOIN feeds f ON f.id = o.feed_id
                 LEFT JOIN item_states st ON st.user_id = $1 AND st.item_id = o.id
                 WHERE i.id IN {list} AND i.cluster_id IS NOT NULL
                   AND si.duplicates <> 'never' AND so.duplicates <> 'never'
                   AND o.feed_id <> i.feed_id AND NOT COALESCE(st.is_hidden, FALSE)
                 ORDER BY i.id, o.published_at, o.id"
            );
            let rows: Vec<CopyRow> = with_db!(self, read, |db| {
                let mut query = sqlx::query_as(sqlx::AssertSqlSafe(sql)).bind(user_id);
                for id in chunk {
                    query = query.bind(*id);
                }
                query.fetch_all(db).await?
            });
            for (item_id, cluster_id, other, feed_id, feed_title) in rows {
                let cluster = clusters.entry(item_id).or_insert_with(|| Cluster {
                    id: cluster_id,
                    size: 1,
                    also_in: Vec::new(),
                });
                cluster.size += 1;
                cluster.also_in.push(ClusterCopy {
                    item_id: other,
                    feed_id,
                    feed_title,
                });
            }
        }
        Ok(clusters)
    }

    /// Whether the user reads by cluster (marking one copy read marks the others): their
    /// `duplicates_read` preference.
    pub(crate) async fn reads_by_cluster(&self, user_id: i64) -> Result<bool> {
        if !self.clusters_ready().await {
            return Ok(false);
        }
        let mode: Option<String> = with_db!(self, read, |db| {
            sqlx::query_scalar("SELECT duplicates_read FROM user_preferences WHERE user_id = $1")
                .bind(user_id)
                .fetch_optional(db)
                .await?
        });
        Ok(mode.is_none_or(|m| m == "cluster"))
    }

    /// The other copies the user can see of these items' stories, when the user reads by
    /// cluster (else none): what a read or unread mark on one copy also marks.
    pub async fn cluster_copies(&self, user_id: i64, ids: &[i64]) -> Result<Vec<i64>> {
        if ids.is_empty() || !self.reads_by_cluster(user_id).await? {
            return Ok(Vec::new());
        }
        let clusters = self.clusters_of(user_id, ids).await?;
        let mut copies: Vec<i64> = clusters
            .values()
            .flat_map(|c| c.also_in.iter().map(|copy| copy.item_id))
            .filter(|id| !ids.contains(id))
            .collect();
        copies.sort_unstable();
        copies.dedup();
        Ok(copies)
    }

    /// Whether the user collapses clusters in listings, counts and the sync APIs: their
    /// `collapse_duplicates` preference (on by default).
    pub async fn collapses_duplicates(&self, user_id: i64) -> Result<bool> {
        if !self.clusters_ready().await {
            return Ok(false);
        }
        let on: Option<bool> = with_db!(self, read, |db| {
            sqlx::query_scalar(
                "SELECT collapse_duplicates FROM user_preferences WHERE user_id = $1",
            )
            .bind(user_id)
            .fetch_optional(db)
            .await?
        });
        Ok(on.unwrap_or(true))
    }

    /// A feed's backlog for a user who just subscribed: its items that are copies of items
    /// the user already sees from other feeds are shown through those (the clusters were
    /// decided when the items arrived for the feed's other subscribers).
    pub async fn link_backlog_duplicates(&self, user_id: i64, feed_id: i64) -> Result<u64> {
        if !self.clusters_ready().await {
            return Ok(0);
        }
        let linked = with_db!(self, write, |db| {
            sqlx::query(
                "INSERT INTO user_duplicates (user_id, item_id, shown_id)
                 SELECT $1, i.id, MIN(o.id)
                 FROM items i
                 JOIN subscriptions si ON si.feed_id = i.feed_id AND si.user_id = $1
                 JOIN items o ON o.cluster_id = i.cluster_id AND o.feed_id <> i.feed_id
                 JOIN subscriptions so ON so.feed_id = o.feed_id AND so.user_id = $1
                 WHERE i.feed_id = $2 AND i.cluster_id IS NOT NULL
                   AND si.duplicates <> 'never' AND so.duplicates <> 'never'
                   AND NOT EXISTS (SELECT 1 FROM user_duplicates d
                                   WHERE d.user_id = $1 AND d.item_id = o.id)
                 GROUP BY i.id
                 ON CONFLICT (user_id, item_id) DO NOTHING",
            )
            .bind(user_id)
            .bind(feed_id)
            .execute(db)
            .await?
            .rows_affected()
        });
        Ok(linked)
    }

    /// Forgets which of a feed's copies the user was shown through another, both ways: when
    /// they stop following it or set it to never merge, its copies and the ones shown through
    /// them are listed again.
    pub async fn unlink_feed_duplicates(&self, user_id: i64, feed_id: i64) -> Result<u64> {
        let unlinked = with_db!(self, write, |db| {
            sqlx::query(UNLINK_FEED_SQL)
                .bind(user_id)
                .bind(feed_id)
                .execute(db)
                .await?
                .rows_affected()
        });
        Ok(unlinked)
    }

    /// How many `(key, item)` lookup key rows are stored: what clustering writes per item,
    /// for the bench's report and for checks that deleted items take their keys along.
    pub async fn story_key_rows(&self) -> Result<i64> {
        Ok(with_db!(self, read, |db| {
            sqlx::query_scalar("SELECT COUNT(*) FROM item_story_keys")
                .fetch_one(db)
                .await?
        }))
    }

    /// Drops the lookup keys of items stored before `stored_before` (Unix seconds): their
    /// copies have arrived by then. Walks the oldest keyed items by id (ids rise with the
    /// time items are stored) and stops at the first one young enough. Answers how many items
    /// lost their keys.
    pub async fn prune_story_keys(&self, stored_before: i64) -> Result<u64> {
        let mut pruned = 0u64;
        loop {
            let oldest: Vec<(i64, i64)> = with_db!(self, read, |db| {
                sqlx::query_as(
                    "SELECT k.item_id, i.fetched_at
                     FROM (SELECT DISTINCT item_id FROM item_story_keys
                           ORDER BY item_id LIMIT 500) k
                     JOIN items i ON i.id = k.item_id
                     ORDER BY k.item_id",
                )
                .fetch_all(db)
                .await?
            });
            let old: Vec<i64> = oldest
                .iter()
                .take_while(|(_, fetched)| *fetched < stored_before)
                .map(|(id, _)| *id)
                .collect();
            let Some(&last) = old.last() else {
                return Ok(pruned);
            };
            with_db!(self, write, |db| {
                sqlx::query("DELETE FROM item_story_keys WHERE item_id <= $1")
                    .bind(last)
                    .execute(db)
                    .await?
                    .rows_affected()
            });
            pruned += old.len() as u64;
            if old.len() < oldest.len() {
                return Ok(pruned);
            }
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn arrival(id: i64, keys: &[(KeyKind, i64)]) -> Arrival {
        Arrival {
            id,
            at: 0,
            published_at: 1_000_000,
            keys: keys
                .iter()
                .map(|&(kind, value)| LookupKey { kind, value })
                .collect(),
        }
    }

    #[test]
    fn candidates_are_those_worth_comparing_ranked_by_shared_keys() {
        use KeyKind::{Text, Url};
        let arrivals = [
            arrival(10, &[(Url, 1), (Text, 2), (Text, 3), (Text, 4)]),
            arrival(11, &[(Text, 4)]),
        ];
        let day = 86_400;
        let hits = [
            // Item 5 shares the URL; item 6 two text keys, item 7 one alone.
            (1, 5, None, 1_000_000),
            (2, 6, None, 1_000_000),
            (3, 6, None, 1_000_000),
            (4, 7, None, 1_000_000),
            // Item 8 shares three keys but is a month older than the arrivals.
            (2, 8, None, 1_000_000 - 30 * day),
            (3, 8, None, 1_000_000 - 30 * day),
            (4, 8, None, 1_000_000 - 30 * day),
        ];
        let ranked = ranked_candidates(&arrivals, &hits);
        assert_eq!(ranked[0], vec![6, 5]);
        // One shared text key is not worth reading the item for.
        assert!(ranked[1].is_empty());
    }

    #[test]
    fn a_key_under_many_items_is_learned_as_common_and_neither_read_nor_stored_again() {
        let common = std::sync::Mutex::new(HashSet::new());
        let mut hits: Vec<Hit> = (0..=MAX_KEY_POSTINGS as i64)
            .map(|item| (9, 100 + item, None, 1_000_000))
            .collect();
        hits.push((2, 7, None, 1_000_000));
        learn_common(&mut hits, &common);
        assert_eq!(hits, vec![(2, 7, None, 1_000_000)]);
        let mut keys = vec![2, 9];
        drop_common(&mut keys, &common);
        assert_eq!(keys, vec![2]);
        // An arrival keyed 2, 3 and 9: 9 is common; it joined item 7's cluster, which has 2.
        let arrivals = [arrival(
            20,
            &[(KeyKind::Text, 2), (KeyKind::Text, 3), (KeyKind::Text, 9)],
        )];
        let joins = [Join {
            item_id: 20,
            cluster_id: 7,
            starts: Some(7),
            published_at: 1_000_000,
        }];
        assert_eq!(
            keys_to_store(&arrivals, &joins, &hits, &common),
            vec![(3, 20)]
        );
        // Had it joined nothing, it would keep every key but the common one.
        assert_eq!(
            keys_to_store(&arrivals, &[], &hits, &common),
            vec![(2, 20), (3, 20)]
        );
    }

    #[test]
    fn one_copy_of_a_cluster_is_compared() {
        let arrivals = [arrival(
            10,
            &[(KeyKind::Title, 1), (KeyKind::Text, 2), (KeyKind::Text, 3)],
        )];
        let hits = [
            (1, 5, Some(5), 1_000_000),
            (2, 5, Some(5), 1_000_000),
            (1, 6, Some(5), 1_000_000),
            (1, 7, None, 1_000_000),
        ];
        assert_eq!(ranked_candidates(&arrivals, &hits)[0], vec![5, 7]);
    }

    fn row(user: i64, choice: &str, other: (i64, i64), other_choice: &str) -> SubscriberCopy {
        let (id, published) = other;
        let read = id == 7;
        let reads_by = "cluster".to_string();
        (
            user,
            choice.into(),
            id,
            other_choice.into(),
            read,
            reads_by,
            published,
        )
    }

    #[test]
    fn the_earliest_copy_is_shown_unless_a_feed_is_preferred() {
        let rows = [
            // User 1 sees copy 7 (read) and 8, both published before the arriving copy.
            row(1, "merge", (7, 100), "merge"),
            row(1, "merge", (8, 150), "merge"),
            // User 2 prefers the arriving copy's feed.
            row(2, "prefer", (7, 100), "merge"),
            // User 3 prefers both feeds: the earlier copy stays.
            row(3, "prefer", (9, 100), "prefer"),
            // User 4 sees copy 10, published after the arriving copy: the wire was fetched
            // later than the paper that printed it.
            row(4, "merge", (10, 500), "merge"),
            // User 5 prefers copy 11's feed, published later.
            row(5, "merge", (11, 500), "prefer"),
        ];
        let shown = decide_shown((20, 200), &rows);
        let pairs: Vec<(i64, i64, i64, bool)> = shown
            .iter()
            .map(|s| (s.user_id, s.hidden, s.shown, s.replaces))
            .collect();
        assert_eq!(
            pairs,
            vec![
                (1, 20, 7, false),
                (2, 7, 20, true),
                (3, 20, 9, false),
                (4, 10, 20, true),
                (5, 20, 11, false),
            ]
        );
        // User 1 read the story: the copy arrives read.
        assert!(shown[0].read);
        assert!(!shown[3].read);
    }

    #[test]
    fn placeholders_follow_the_engine() {
        assert_eq!(placeholder_list(true, 2, 3), "($2, $3, $4)");
        assert_eq!(placeholder_list(false, 2, 3), "(?, ?, ?)");
    }
}
