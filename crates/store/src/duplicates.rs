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

use std::collections::HashMap;

use tidings_cluster::{Fingerprint, Story, Verdict, lookup_keys, same_story};

use crate::{Result, Store, with_db};

/// How far apart two copies' dates may be, and how long an item keeps its lookup keys: copies
/// of a story arrive within days of each other, and older keys would only grow the table.
pub const STORY_WINDOW_SECONDS: i64 = 14 * 86_400;

/// Stored items compared with an arriving one at most: those sharing the most keys with it.
/// Copies share several keys (their URL, title and text anchors), so the first few are them.
pub const MAX_CANDIDATES: usize = 5;

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

/// An arriving item, read for clustering.
pub(crate) struct Arrival {
    /// Its id.
    pub(crate) id: i64,
    /// Its date.
    pub(crate) published_at: i64,
    /// What it is, read once.
    pub(crate) fingerprint: Fingerprint,
    /// Its lookup keys.
    pub(crate) keys: Vec<i64>,
}

impl Arrival {
    /// Reads new item `id` dated `published_at` (`story` holds its text as the search index
    /// read it), or `None` when it is too old to have copies still arriving.
    pub(crate) fn new(id: i64, published_at: i64, story: &Story<'_>, now: i64) -> Option<Arrival> {
        if published_at < now - STORY_WINDOW_SECONDS {
            return None;
        }
        let fingerprint = Fingerprint::new(story);
        let keys = lookup_keys(&fingerprint).iter().map(|k| k.value).collect();
        Some(Arrival {
            id,
            published_at,
            fingerprint,
            keys,
        })
    }
}

/// A stored item an arriving one may be a copy of, as read from `items`.
pub(crate) type CandidateRow = (
    i64,
    i64,
    Option<i64>,
    i64,
    Option<String>,
    Option<String>,
    Option<String>,
    Option<String>,
    Option<String>,
);

/// The columns of a [`CandidateRow`].
pub(crate) const CANDIDATE_COLUMNS: &str =
    "id, feed_id, cluster_id, published_at, url, guid, title, content, summary";

/// A stored item read for comparing.
pub(crate) struct Candidate {
    feed_id: i64,
    cluster_id: Option<i64>,
    published_at: i64,
    fingerprint: Fingerprint,
}

/// Reads a stored item for comparing: its content (else summary) as plain text, as the
/// arriving items' text is made.
pub(crate) fn candidate(row: CandidateRow) -> (i64, Candidate) {
    let (id, feed_id, cluster_id, published_at, url, guid, title, content, summary) = row;
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
            feed_id,
            cluster_id,
            published_at,
            fingerprint,
        },
    )
}

/// For each arriving item, the stored items sharing the most keys with it (at most
/// [`MAX_CANDIDATES`], most shared first, then newest), from `(key, item)` hits.
pub(crate) fn ranked_candidates(arrivals: &[Arrival], hits: &[(i64, i64)]) -> Vec<Vec<i64>> {
    let mut by_key: HashMap<i64, Vec<i64>> = HashMap::new();
    for (key, item) in hits {
        by_key.entry(*key).or_default().push(*item);
    }
    let arriving: std::collections::HashSet<i64> = arrivals.iter().map(|a| a.id).collect();
    arrivals
        .iter()
        .map(|arrival| {
            let mut shared: HashMap<i64, usize> = HashMap::new();
            for key in &arrival.keys {
                for item in by_key.get(key).into_iter().flatten() {
                    if !arriving.contains(item) {
                        *shared.entry(*item).or_default() += 1;
                    }
                }
            }
            let mut ranked: Vec<(i64, usize)> = shared.into_iter().collect();
            ranked.sort_by(|a, b| b.1.cmp(&a.1).then(b.0.cmp(&a.0)));
            ranked
                .into_iter()
                .take(MAX_CANDIDATES)
                .map(|(id, _)| id)
                .collect()
        })
        .collect()
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
}

/// Which arriving items are copies of which stored ones: the first candidate (in rank order)
/// from another feed, dated within [`STORY_WINDOW_SECONDS`], that `same_story` calls the same.
pub(crate) fn decide_joins(
    feed_id: i64,
    arrivals: &[Arrival],
    ranked: &[Vec<i64>],
    candidates: &HashMap<i64, Candidate>,
) -> Vec<Join> {
    let mut joins = Vec::new();
    // A stored item that starts a cluster for one arrival is already in it for the next.
    let mut started: HashMap<i64, i64> = HashMap::new();
    for (arrival, ids) in arrivals.iter().zip(ranked) {
        let found = ids.iter().find_map(|id| {
            let c = candidates.get(id)?;
            let near = (c.published_at - arrival.published_at).abs() <= STORY_WINDOW_SECONDS;
            let same = c.feed_id != feed_id
                && near
                && matches!(
                    same_story(&arrival.fingerprint, &c.fingerprint),
                    Verdict::Same(_)
                );
            same.then_some((*id, c))
        });
        if let Some((id, c)) = found {
            let cluster_id = c.cluster_id.or(started.get(&id).copied());
            joins.push(Join {
                item_id: arrival.id,
                cluster_id: cluster_id.unwrap_or(id),
                starts: cluster_id.is_none().then_some(id),
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
/// choice, a copy they already see, its subscription's choice, whether they read it, and
/// how they read clusters.
pub(crate) type SubscriberCopy = (i64, String, i64, String, bool, String);

/// Per subscriber of an arriving copy (`$2`, of feed `$3`, in cluster `$1`), the copies they
/// already see from other feeds, oldest first: not hidden for them, not themselves shown
/// through another, neither subscription set to never merge, and the arriving copy not
/// hidden for them either.
pub(crate) const SUBSCRIBER_COPIES_SQL: &str =
    "SELECT s.user_id, s.duplicates, o.id, so.duplicates,
            COALESCE(st.is_read, so.read_before IS NOT NULL AND o.published_at <= so.read_before),
            COALESCE((SELECT p.duplicates_read FROM user_preferences p
                      WHERE p.user_id = s.user_id), 'cluster')
     FROM subscriptions s
     JOIN items o ON o.cluster_id = $1 AND o.id <> $2 AND o.feed_id <> $3
     JOIN subscriptions so ON so.feed_id = o.feed_id AND so.user_id = s.user_id
     LEFT JOIN item_states st ON st.user_id = s.user_id AND st.item_id = o.id
     WHERE s.feed_id = $3 AND s.duplicates <> 'never' AND so.duplicates <> 'never'
       AND NOT COALESCE(st.is_hidden, FALSE)
       AND NOT EXISTS (SELECT 1 FROM user_duplicates d
                       WHERE d.user_id = s.user_id AND d.item_id = o.id)
       AND NOT EXISTS (SELECT 1 FROM item_states h
                       WHERE h.user_id = s.user_id AND h.item_id = $2 AND h.is_hidden)
     ORDER BY s.user_id, o.published_at, o.id";

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

/// Decides, per subscriber, which copy is shown: the one they already see, unless the
/// arriving copy's subscription is preferred and the other's is not.
pub(crate) fn decide_shown(item_id: i64, rows: &[SubscriberCopy]) -> Vec<Shown> {
    let mut out: Vec<Shown> = Vec::new();
    for (user_id, choice, other, other_choice, other_read, reads_by) in rows {
        // Rows come oldest copy first per user: the first is the one they see.
        if out.last().is_some_and(|s| s.user_id == *user_id) {
            continue;
        }
        let read = *other_read && reads_by == "cluster";
        out.push(if choice == "prefer" && other_choice != "prefer" {
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
            $crate::duplicates::cluster_items_on!($tx, $feed_id, $new, $now)
        } else {
            0
        }
    };
}
pub(crate) use cluster_new_items_on;

/// [`cluster_new_items_on`]'s work.
macro_rules! cluster_items_on {
    ($tx:expr, $feed_id:expr, $new:expr, $now:expr) => {{
        let (feed_id, now): (i64, i64) = ($feed_id, $now);
        let arrivals: Vec<$crate::duplicates::Arrival> = $new
            .iter()
            .filter_map(|(id, write)| {
                let item = write.prepared.item;
                let story = tidings_cluster::Story {
                    link: item.url.as_deref(),
                    canonical: None,
                    guid: item.guid.as_deref(),
                    title: item.title.as_deref(),
                    text: Some(write.text.body.as_str()),
                    vector: None,
                };
                let published_at = item.published.unwrap_or(now);
                $crate::duplicates::Arrival::new(*id, published_at, &story, now)
            })
            .collect();
        let numbered = $crate::batch::numbered(&*$tx);
        let mut keys: Vec<i64> = arrivals
            .iter()
            .flat_map(|a| a.keys.iter().copied())
            .collect();
        keys.sort_unstable();
        keys.dedup();
        // Phase 1: the stored items sharing a key with an arriving one.
        let mut hits: Vec<(i64, i64)> = Vec::new();
        for chunk in keys.chunks($crate::duplicates::KEY_BATCH) {
            let sql = format!(
                "SELECT key, item_id FROM item_story_keys WHERE key IN {}",
                $crate::duplicates::placeholder_list(numbered, 1, chunk.len())
            );
            let mut query = sqlx::query_as::<_, (i64, i64)>(sqlx::AssertSqlSafe(sql));
            for key in chunk {
                query = query.bind(*key);
            }
            hits.extend(query.fetch_all(&mut *$tx).await?);
        }
        let ranked = $crate::duplicates::ranked_candidates(&arrivals, &hits);
        // Phase 2: those sharing the most, read and compared.
        let mut wanted: Vec<i64> = ranked.iter().flatten().copied().collect();
        wanted.sort_unstable();
        wanted.dedup();
        let mut candidates = std::collections::HashMap::new();
        for chunk in wanted.chunks($crate::duplicates::KEY_BATCH) {
            let sql = format!(
                "SELECT {} FROM items WHERE id IN {}",
                $crate::duplicates::CANDIDATE_COLUMNS,
                $crate::duplicates::placeholder_list(numbered, 1, chunk.len())
            );
            let mut query =
                sqlx::query_as::<_, $crate::duplicates::CandidateRow>(sqlx::AssertSqlSafe(sql));
            for id in chunk {
                query = query.bind(*id);
            }
            for row in query.fetch_all(&mut *$tx).await? {
                let (id, candidate) = $crate::duplicates::candidate(row);
                candidates.insert(id, candidate);
            }
        }
        let joins = $crate::duplicates::decide_joins(feed_id, &arrivals, &ranked, &candidates);
        // Phase 3: the clusters, and the arriving items' keys for those that come later.
        for join in &joins {
            if let Some(first) = join.starts {
                sqlx::query(
                    "UPDATE items SET cluster_id = $1 WHERE id = $1 AND cluster_id IS NULL",
                )
                .bind(first)
                .execute(&mut *$tx)
                .await?;
            }
            sqlx::query("UPDATE items SET cluster_id = $1 WHERE id = $2")
                .bind(join.cluster_id)
                .bind(join.item_id)
                .execute(&mut *$tx)
                .await?;
        }
        let rows: Vec<(i64, i64)> = arrivals
            .iter()
            .flat_map(|a| a.keys.iter().map(move |k| (*k, a.id)))
            .collect();
        for chunk in rows.chunks($crate::duplicates::KEY_BATCH / 2) {
            let sql = format!(
                "INSERT INTO item_story_keys (key, item_id) VALUES {} ON CONFLICT DO NOTHING",
                $crate::batch::placeholder_rows(numbered, 1, chunk.len(), 2)
            );
            let mut query = sqlx::query(sqlx::AssertSqlSafe(sql));
            for (key, item) in chunk {
                query = query.bind(*key).bind(*item);
            }
            query.execute(&mut *$tx).await?;
        }
        // Phase 4: each subscriber's shown copy.
        for join in &joins {
            let rows: Vec<$crate::duplicates::SubscriberCopy> =
                sqlx::query_as($crate::duplicates::SUBSCRIBER_COPIES_SQL)
                    .bind(join.cluster_id)
                    .bind(join.item_id)
                    .bind(feed_id)
                    .fetch_all(&mut *$tx)
                    .await?;
            for shown in $crate::duplicates::decide_shown(join.item_id, &rows) {
                $crate::duplicates::write_shown_on!($tx, shown, join.item_id, now);
            }
        }
        joins.len() as u64
    }};
}
pub(crate) use cluster_items_on;

/// Writes one subscriber's [`Shown`] for arriving copy `$item_id` on `$db`.
macro_rules! write_shown_on {
    ($db:expr, $shown:expr, $item_id:expr, $now:expr) => {{
        let shown: $crate::duplicates::Shown = $shown;
        if shown.replaces {
            sqlx::query(
                "UPDATE user_duplicates SET shown_id = $3 WHERE user_id = $1 AND shown_id = $2",
            )
            .bind(shown.user_id)
            .bind(shown.hidden)
            .bind(shown.shown)
            .execute(&mut *$db)
            .await?;
        }
        sqlx::query(
            "INSERT INTO user_duplicates (user_id, item_id, shown_id) VALUES ($1, $2, $3)
             ON CONFLICT (user_id, item_id) DO UPDATE SET shown_id = excluded.shown_id",
        )
        .bind(shown.user_id)
        .bind(shown.hidden)
        .bind(shown.shown)
        .execute(&mut *$db)
        .await?;
        if shown.read {
            sqlx::query(
                "INSERT INTO item_states (user_id, item_id, is_read, is_starred, updated_at)
                 VALUES ($1, $2, TRUE, FALSE, $3)
                 ON CONFLICT (user_id, item_id) DO UPDATE SET is_read = TRUE, updated_at = $3",
            )
            .bind(shown.user_id)
            .bind($item_id)
            .bind($now)
            .execute(&mut *$db)
            .await?;
        }
    }};
}
pub(crate) use write_shown_on;

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
        use std::sync::atomic::Ordering;
        if self.clusters_ready.load(Ordering::Relaxed) {
            return true;
        }
        let found: Result<i64> = async {
            Ok(with_db!(self, read, |db| {
                sqlx::query_scalar(
                    "SELECT COUNT(*) FROM item_story_keys WHERE key = 0 AND item_id < 0",
                )
                .fetch_one(db)
                .await?
            }))
        }
        .await;
        let ready = found.is_ok();
        self.clusters_ready.store(ready, Ordering::Relaxed);
        ready
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

    fn arrival(id: i64, keys: &[i64]) -> Arrival {
        Arrival {
            id,
            published_at: 0,
            fingerprint: Fingerprint::default(),
            keys: keys.to_vec(),
        }
    }

    #[test]
    fn candidates_are_ranked_by_shared_keys_and_never_each_other() {
        let arrivals = [arrival(10, &[1, 2, 3]), arrival(11, &[3])];
        // Item 5 shares keys 1 and 2, item 6 key 3, item 11 (arriving) key 3.
        let hits = [(1, 5), (2, 5), (3, 6), (3, 11)];
        let ranked = ranked_candidates(&arrivals, &hits);
        assert_eq!(ranked[0], vec![5, 6]);
        assert_eq!(ranked[1], vec![6]);
    }

    fn row(user: i64, choice: &str, other: i64, other_choice: &str, read: bool) -> SubscriberCopy {
        (
            user,
            choice.into(),
            other,
            other_choice.into(),
            read,
            "cluster".into(),
        )
    }

    #[test]
    fn the_copy_seen_first_is_shown_unless_the_arriving_feed_is_preferred() {
        let rows = [
            row(1, "merge", 7, "merge", true),
            row(1, "merge", 8, "merge", false),
            row(2, "prefer", 7, "merge", false),
            row(3, "prefer", 9, "prefer", false),
        ];
        let shown = decide_shown(20, &rows);
        assert_eq!(shown.len(), 3);
        assert_eq!(
            (shown[0].hidden, shown[0].shown, shown[0].read),
            (20, 7, true)
        );
        assert_eq!(
            (shown[1].hidden, shown[1].shown, shown[1].replaces),
            (7, 20, true)
        );
        assert_eq!((shown[2].hidden, shown[2].shown), (20, 9));
    }

    #[test]
    fn placeholders_follow_the_engine() {
        assert_eq!(placeholder_list(true, 2, 3), "($2, $3, $4)");
        assert_eq!(placeholder_list(false, 2, 3), "(?, ?, ?)");
    }
}
