//! `tidings-bench rules-ingest`: what rules cost when items arrive (issue 33). Rules run in the
//! fetch's own transaction, once per new item for each subscriber, so their cost is a share of
//! storing a fetch. The bench sets up `--users` users who each follow `--feeds-per-user` of
//! `--feeds` feeds (so a feed is shared by about users × feeds-per-user / feeds people) and
//! have `--rules-per-user` rules each (words, phrases, fields, Japanese, a regular expression,
//! a feed's keep-only, an age; acting by hiding, marking read, starring and labelling), then
//! stores rounds of new items into every feed through `Store::store_fetch`, the worker's call,
//! one call per feed with the farm's mix of sizes (5 to 500 items, log-uniform), and the same
//! rounds with every rule switched off. Rounds alternate (off, on, on, off, …) so that the
//! growing database weighs on both alike.
//!
//! `tidings-bench rules-preview` times the rule editor's live preview for one user with
//! `--items` items (100,000 by default): what the editor waits for at each keystroke.

use std::process::ExitCode;
use std::time::Instant;

use clap::Args;
use tidings::config::GlobalConfig;
use tidings::outln;
use tidings_store::{
    FetchWrites, NewItem, NewSubscription, NewUser, RegexSpec, RuleInput, RuleScope, RuleSpec,
    Store, unix_now,
};

use crate::search::{Rng, article};

/// Arguments of `tidings-bench rules-ingest`.
#[derive(Debug, Args)]
pub struct RulesIngestArgs {
    /// Feeds items arrive in.
    #[arg(long, default_value_t = 500)]
    pub feeds: usize,
    /// Users, each with their rules.
    #[arg(long, default_value_t = 100)]
    pub users: usize,
    /// Feeds each user follows.
    #[arg(long, default_value_t = 50)]
    pub feeds_per_user: usize,
    /// Rules of each user (up to 10 kinds, repeated with other words beyond).
    #[arg(long, default_value_t = 10)]
    pub rules_per_user: usize,
    /// Rounds with rules and as many without, alternating.
    #[arg(long, default_value_t = 2)]
    pub rounds: usize,
    /// Rules whose words the data never holds: what judging every item costs when no rule
    /// acts (the writes of what rules do are then left out).
    #[arg(long)]
    pub never_match: bool,
}

/// The items of feed `feed` in round `round`: the farm's mix of sizes, mixed languages.
fn round_items(feed: usize, round: usize, now: i64) -> Vec<NewItem> {
    // Log-uniform in 5..=500, fixed per feed, as the farm's well-behaved feeds.
    let mut rng = Rng::new(feed as u64 * 31 + 7);
    let size = (5.0 * 100f64.powf(rng.below(1000) as f64 / 999.0)).round() as usize;
    (0..size)
        .map(|k| {
            let (title, content) = article(feed * 1_000 + round * 100_000 + k);
            NewItem {
                guid: Some(format!("rules-{round}-{feed}-{k}")),
                url: Some(format!("https://rules.invalid/{feed}/{round}/{k}")),
                title: Some(title),
                content: Some(content),
                published: Some(now - k as i64 * 60),
                ..NewItem::default()
            }
        })
        .collect()
}

/// Rule `k` of user `user`, who follows `first_feed` among others.
fn rule(user: usize, k: usize, first_feed: i64, never_match: bool) -> RuleSpec {
    // Words a busy reader would pick: from the data's common words to its rare ones.
    let words = [
        "sponsored",
        "football -season",
        "\"climate change\"",
        "地震",
        "title:election",
        "",
        "market",
        "python",
        "",
        "earthquake storm",
    ];
    let (query, actions): (&str, &[&str]) = match k % 10 {
        0 => (words[0], &["hide"]),
        1 => (words[1], &["read"]),
        2 => (words[2], &["label:Climate"]),
        3 => (words[3], &["label:東京"]),
        4 => (words[4], &["star"]),
        // Keep-only hides what it does not catch: with words that never match, it would hide
        // the whole feed, so it hides what it catches instead.
        6 if never_match => (words[6], &["hide"]),
        6 => (words[6], &["keep_only"]),
        7 => (words[7], &["star", "label:Python"]),
        9 => (words[9], &["read", "label:OSS"]),
        _ => ("", &["read"]),
    };
    // Beyond ten, the same kinds again, each made distinct by an excluded word of its own.
    let query = match (query.is_empty(), k < 10) {
        (true, _) => None,
        (false, _) if never_match => Some(format!("{query} qzxv{k}")),
        (false, true) => Some(query.to_string()),
        (false, false) => Some(format!("{query} -u{user}r{k}")),
    };
    let mut spec = RuleSpec {
        query,
        actions: actions.iter().map(|a| a.to_string()).collect(),
        ..RuleSpec::default()
    };
    match k % 10 {
        5 => {
            spec.regex = Some(RegexSpec {
                field: "title".into(),
                pattern: if never_match {
                    "^qzxv"
                } else {
                    "(?i)^(breaking|rust)\\b"
                }
                .into(),
            })
        }
        6 => {
            spec.scope = RuleScope {
                feed_id: Some(first_feed),
                group_id: None,
            }
        }
        8 => spec.older_than_days = Some(30),
        _ => {}
    }
    spec
}

/// Users, their subscriptions and rules; answers the feeds' ids in order.
async fn set_up(store: &Store, args: &RulesIngestArgs, run: u64) -> anyhow::Result<Vec<i64>> {
    let mut feed_ids = vec![0i64; args.feeds];
    for u in 0..args.users {
        let user = store
            .create_user(&NewUser {
                username: format!("rules{run}u{u}"),
                password_hash: None,
                is_admin: false,
            })
            .await?
            .id;
        let mut first = None;
        // Distinct feeds drawn per user, so that every feed has about as many subscribers.
        let mut rng = Rng::new(u as u64 + 1);
        let mut chosen = std::collections::BTreeSet::new();
        while chosen.len() < args.feeds_per_user.min(args.feeds) {
            chosen.insert(rng.below(args.feeds));
        }
        for f in chosen {
            let new = NewSubscription {
                feed_url: format!("https://rules{run}.invalid/feed/{f}"),
                ..NewSubscription::default()
            };
            let Ok(subscription) = store.subscribe(user, &new).await else {
                continue; // the same feed twice for this user
            };
            feed_ids[f] = subscription.feed_id;
            first.get_or_insert(subscription.feed_id);
        }
        for k in 0..args.rules_per_user {
            let input = RuleInput {
                name: format!("rule {k}"),
                enabled: true,
                position: None,
                spec: rule(u, k, first.unwrap_or_default(), args.never_match),
            };
            store.create_rule(user, &input).await?;
        }
    }
    Ok(feed_ids)
}

/// Stores one round's items into every feed; answers (items, seconds, rule outcomes).
async fn ingest_round(
    store: &Store,
    feed_ids: &[i64],
    round: usize,
) -> anyhow::Result<(u64, f64, u64)> {
    let now = unix_now();
    let batches: Vec<(i64, Vec<NewItem>)> = feed_ids
        .iter()
        .enumerate()
        .filter(|(_, id)| **id != 0)
        .map(|(f, id)| (*id, round_items(f, round, now)))
        .collect();
    let started = Instant::now();
    let (mut items, mut outcomes) = (0u64, 0u64);
    for (feed_id, batch) in &batches {
        let written = store
            .store_fetch(*feed_id, batch, now, &FetchWrites::default())
            .await?;
        items += written.counts.inserted;
        outcomes += written.rules_applied;
    }
    Ok((items, started.elapsed().as_secs_f64(), outcomes))
}

/// Runs the bench; prints each round and the cost of the rules.
pub async fn run(config: &GlobalConfig, args: RulesIngestArgs) -> anyhow::Result<ExitCode> {
    let store = crate::store::open_store_for_bulk_load(config).await?;
    let run = unix_now() as u64;
    let started = Instant::now();
    let feed_ids = set_up(&store, &args, run).await?;
    outln!(
        "tidings-bench rules-ingest on {}: {} users × {} rules, {} feeds ({} per user); set up in \
         {:.1} s; load average {}",
        store.engine(),
        args.users,
        args.rules_per_user,
        args.feeds,
        args.feeds_per_user,
        started.elapsed().as_secs_f64(),
        crate::sync::load_average()
    );
    let (mut with, mut without) = ((0u64, 0f64), (0u64, 0f64));
    for round in 0..args.rounds * 2 {
        // off, on, on, off, off, on, …: each side as often early as late.
        let on = matches!(round % 4, 1 | 2);
        store
            .execute_raw(&format!(
                "UPDATE rules SET enabled = {}",
                if on { "TRUE" } else { "FALSE" }
            ))
            .await?;
        let (items, seconds, outcomes) = ingest_round(&store, &feed_ids, round).await?;
        outln!(
            "round {round}, rules {}: {items} items in {seconds:.2} s ({:.0} items/s), {outcomes} \
             rule outcomes written; load {}",
            if on { "on " } else { "off" },
            items as f64 / seconds,
            crate::sync::load_average()
        );
        let side = if on { &mut with } else { &mut without };
        side.0 += items;
        side.1 += seconds;
    }
    let per_item = |(items, seconds): (u64, f64)| seconds * 1e6 / items.max(1) as f64;
    let (on, off) = (per_item(with), per_item(without));
    outln!(
        "per item stored: {on:.1} µs with rules, {off:.1} µs without: rules cost {:+.1} %",
        (on / off - 1.0) * 100.0
    );
    store.close().await;
    Ok(ExitCode::SUCCESS)
}

/// Arguments of `tidings-bench rules-preview`.
#[derive(Debug, Args)]
pub struct RulesPreviewArgs {
    /// Items of the user, in feeds of the farm's mix of sizes.
    #[arg(long, default_value_t = 100_000)]
    pub items: u64,
    /// Times each rule is previewed.
    #[arg(long, default_value_t = 5)]
    pub repeat: usize,
}

/// Gives a new user feeds of the farm's sizes until they hold `items` items; answers the user.
async fn preview_user(store: &Store, items: u64, run: u64) -> anyhow::Result<i64> {
    let user = store
        .create_user(&NewUser {
            username: format!("preview{run}"),
            password_hash: None,
            is_admin: false,
        })
        .await?
        .id;
    let (mut stored, mut feed, now) = (0u64, 0usize, unix_now());
    while stored < items {
        let new = NewSubscription {
            feed_url: format!("https://preview{run}.invalid/feed/{feed}"),
            ..NewSubscription::default()
        };
        let feed_id = store.subscribe(user, &new).await?.feed_id;
        // Two rounds a feed: a feed's items a few weeks apart, as a followed feed gathers.
        for round in 0..2 {
            let batch = round_items(feed, round, now - round as i64 * 86_400 * 14);
            let written = store
                .store_fetch(feed_id, &batch, now, &FetchWrites::default())
                .await?;
            stored += written.counts.inserted;
        }
        feed += 1;
    }
    Ok(user)
}

/// Runs the preview bench: each of the ingest bench's rule kinds previewed `--repeat` times,
/// with the median and slowest time per kind.
pub async fn preview(config: &GlobalConfig, args: RulesPreviewArgs) -> anyhow::Result<ExitCode> {
    let store = crate::store::open_store_for_bulk_load(config).await?;
    let run = unix_now() as u64;
    let started = Instant::now();
    let user = preview_user(&store, args.items, run).await?;
    outln!(
        "tidings-bench rules-preview on {}: one user with {} items, set up in {:.1} s; load \
         average {}",
        store.engine(),
        args.items,
        started.elapsed().as_secs_f64(),
        crate::sync::load_average()
    );
    let mut all = Vec::new();
    for k in 0..10 {
        let spec = rule(0, k, 0, false);
        let mut times = Vec::new();
        let mut matched = 0;
        for _ in 0..args.repeat.max(1) {
            let started = Instant::now();
            matched = store.preview_rule(user, &spec).await?.matched;
            times.push(started.elapsed().as_secs_f64() * 1e3);
        }
        times.sort_by(f64::total_cmp);
        outln!(
            "rule {k} ({}): {matched} of 1,000 caught; median {:.0} ms, slowest {:.0} ms",
            spec.query.as_deref().unwrap_or("no words"),
            times[times.len() / 2],
            times[times.len() - 1]
        );
        all.extend(times);
    }
    all.sort_by(f64::total_cmp);
    outln!(
        "every preview: median {:.0} ms, p95 {:.0} ms; load average {}",
        all[all.len() / 2],
        all[all.len() * 95 / 100],
        crate::sync::load_average()
    );
    store.close().await;
    Ok(ExitCode::SUCCESS)
}
