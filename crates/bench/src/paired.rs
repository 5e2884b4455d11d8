//! The paired ingest benches' measure (`rules-ingest`, `duplicates-ingest`): what one side
//! stored and what it took, wall-clock and this process's CPU.

use std::time::Instant;

use tidings_store::{FetchWrites, NewItem, NewSubscription, NewUser, Store};

use crate::search::Rng;

/// What one side of a paired ingest bench (rules or clustering on, or off) stored and what
/// it took, summed over fetches.
#[derive(Debug, Default, Clone, Copy)]
pub(crate) struct Side {
    /// Items stored.
    pub(crate) items: u64,
    /// Wall-clock seconds.
    pub(crate) seconds: f64,
    /// CPU seconds of this process, every thread (SQLite's work runs in them; PostgreSQL's in
    /// its own processes, not counted), or `None` without /proc.
    pub(crate) cpu: Option<f64>,
    /// (user, item) outcomes the rules wrote.
    pub(crate) outcomes: u64,
    /// New items found to be copies of stored items of other feeds.
    pub(crate) clustered: u64,
}

impl Side {
    /// Nothing stored yet; the CPU time is `None` where /proc cannot tell it.
    pub(crate) fn start() -> Side {
        Side {
            cpu: process_cpu_seconds().map(|_| 0.0),
            ..Side::default()
        }
    }

    /// Wall-clock and CPU µs per item stored.
    pub(crate) fn per_item(&self) -> (f64, Option<f64>) {
        let per = |seconds: f64| seconds * 1e6 / self.items.max(1) as f64;
        (per(self.seconds), self.cpu.map(per))
    }

    /// Adds `other`'s figures to these.
    pub(crate) fn add(&mut self, other: Side) {
        self.items += other.items;
        self.seconds += other.seconds;
        self.cpu = self.cpu.zip(other.cpu).map(|(a, b)| a + b);
        self.outcomes += other.outcomes;
        self.clustered += other.clustered;
    }
}

/// CPU seconds this process has used, all threads (user + system, from /proc/self/stat, in
/// Linux's clock ticks of 1/100 s). On a machine busy with other work the wall-clock time
/// includes waiting for a core, and changes with whatever else runs; the CPU time does not,
/// so it is the steadier measure of what the rules add. Summed over many fetches, the ticks
/// each fetch is charged add up to the time spent.
pub(crate) fn process_cpu_seconds() -> Option<f64> {
    let stat = std::fs::read_to_string("/proc/self/stat").ok()?;
    let fields: Vec<&str> = stat[stat.rfind(')')? + 1..].split_whitespace().collect();
    // fields[0] is field 3 (state); utime and stime are fields 14 and 15.
    let ticks: u64 = fields
        .get(11..13)?
        .iter()
        .map(|f| f.parse::<u64>().unwrap_or(0))
        .sum();
    Some(ticks as f64 / 100.0)
}

/// Stores `items` into feed `feed_id` and adds what it took to `side`.
pub(crate) async fn store_timed(
    store: &Store,
    side: &mut Side,
    feed_id: i64,
    items: &[NewItem],
    now: i64,
) -> anyhow::Result<()> {
    let started = Instant::now();
    let cpu_before = process_cpu_seconds();
    let written = store
        .store_fetch(feed_id, items, now, &FetchWrites::default())
        .await?;
    side.seconds += started.elapsed().as_secs_f64();
    side.cpu = match (side.cpu, cpu_before, process_cpu_seconds()) {
        (Some(sum), Some(before), Some(after)) => Some(sum + (after - before)),
        _ => None,
    };
    side.items += written.counts.inserted;
    side.outcomes += written.rules_applied;
    side.clustered += written.clustered;
    Ok(())
}

/// Users who each follow some of a farm's feeds.
pub(crate) struct Farm {
    /// Names the users (`{name}u{n}`) and the feeds (`https://{name}.invalid/feed/{n}`).
    pub(crate) name: String,
    /// Users.
    pub(crate) users: usize,
    /// Feeds.
    pub(crate) feeds: usize,
    /// Feeds each user follows.
    pub(crate) feeds_per_user: usize,
}

impl Farm {
    /// Creates the users and their subscriptions: distinct feeds drawn per user, so that
    /// every feed has about as many subscribers. Answers the feeds' ids in order (0 for a
    /// feed nobody drew) and each user with the first feed they follow.
    pub(crate) async fn set_up(
        &self,
        store: &Store,
    ) -> anyhow::Result<(Vec<i64>, Vec<(i64, Option<i64>)>)> {
        let mut feed_ids = vec![0i64; self.feeds];
        let mut users = Vec::with_capacity(self.users);
        for u in 0..self.users {
            let user = store
                .create_user(&NewUser {
                    username: format!("{}u{u}", self.name),
                    password_hash: None,
                    is_admin: false,
                })
                .await?
                .id;
            let mut first = None;
            let mut rng = Rng::new(u as u64 + 1);
            let mut chosen = std::collections::BTreeSet::new();
            while chosen.len() < self.feeds_per_user.min(self.feeds) {
                chosen.insert(rng.below(self.feeds));
            }
            for f in chosen {
                let new = NewSubscription {
                    feed_url: format!("https://{}.invalid/feed/{f}", self.name),
                    ..NewSubscription::default()
                };
                let Ok(subscription) = store.subscribe(user, &new).await else {
                    continue; // the same feed twice for this user
                };
                feed_ids[f] = subscription.feed_id;
                first.get_or_insert(subscription.feed_id);
            }
            users.push((user, first));
        }
        Ok((feed_ids, users))
    }
}
