//! `tidings-bench rules-ingest`: what rules cost when items arrive (issue 33). Rules run in the
//! fetch's own transaction, once per new item for each subscriber, so their cost is a share of
//! storing a fetch. The bench sets up `--users` users who each follow `--feeds-per-user` of
//! `--feeds` feeds (so a feed is shared by about users × feeds-per-user / feeds people) and
//! have `--rules-per-user` rules each (words, phrases, fields, Japanese, a regular expression,
//! a feed's keep-only, an age; acting by hiding, marking read, starring and labelling), then
//! stores rounds of new items into every feed through `Store::store_fetch`, the worker's call,
//! one call per feed with the farm's mix of sizes (5 to 500 items, log-uniform).
//!
//! The comparison is paired: the same users, feeds and rules are set up twice in the same
//! database, once with the rules on and once with them switched off, and every feed's items
//! are stored into both twins one right after the other (which twin goes first alternates
//! from feed to feed). So both sides meet the same database at the same size (its growth, the
//! full-text index's merges) and the same moments of a shared machine's load, which rounds of
//! one side then the other did not: their figures moved by more than the rules cost.
//! Clustering of duplicates is off in both twins (their items are each other's copies).
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

use crate::paired::{Farm, Side, store_timed};
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
    /// Rounds: in each, every feed of both twins (rules on, rules off) gets new items.
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
    let farm = Farm {
        name: format!("rules{run}"),
        users: args.users,
        feeds: args.feeds,
        feeds_per_user: args.feeds_per_user,
    };
    let (feed_ids, users) = farm.set_up(store).await?;
    for (u, (user, first)) in users.into_iter().enumerate() {
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

/// Stores one round's items into every feed of both twins, feed by feed, the twin that goes
/// first alternating.
async fn ingest_round(
    store: &Store,
    twins: &[(i64, i64)],
    round: usize,
    (on, off): (&mut Side, &mut Side),
) -> anyhow::Result<()> {
    let now = unix_now();
    for (f, &(with, without)) in twins.iter().enumerate() {
        if with == 0 || without == 0 {
            continue;
        }
        let items = round_items(f, round, now);
        if f % 2 == 0 {
            store_timed(store, on, with, &items, now).await?;
            store_timed(store, off, without, &items, now).await?;
        } else {
            store_timed(store, off, without, &items, now).await?;
            store_timed(store, on, with, &items, now).await?;
        }
    }
    Ok(())
}

/// Runs the bench; prints each round and the cost of the rules.
pub async fn run(config: &GlobalConfig, args: RulesIngestArgs) -> anyhow::Result<ExitCode> {
    let store = crate::store::open_store_for_bulk_load(config).await?;
    // The twins get the same items in different feeds, so with clustering on every item of
    // the twin stored second was a copy of its twin's (joined, compared, its keys stored):
    // both twins paid for a clustering no real fetch meets, and the rules' share read smaller
    // than it is. Without it the rules are measured against plain ingest, the stricter base.
    store.set_duplicate_clustering(false);
    let run = unix_now() as u64 * 2;
    let started = Instant::now();
    let with_rules = set_up(&store, &args, run).await?;
    let without_rules = set_up(&store, &args, run + 1).await?;
    // The twin's rules exist, as many and the same, but switched off.
    store
        .execute_raw(&format!(
            "UPDATE rules SET enabled = FALSE WHERE user_id IN \
             (SELECT id FROM users WHERE username LIKE 'rules{}u%')",
            run + 1
        ))
        .await?;
    let twins: Vec<(i64, i64)> = with_rules.into_iter().zip(without_rules).collect();
    outln!(
        "tidings-bench rules-ingest on {}: {} users × {} rules, {} feeds ({} per user), and \
         their twin with the rules off; set up in {:.1} s; load average {}",
        store.engine(),
        args.users,
        args.rules_per_user,
        args.feeds,
        args.feeds_per_user,
        started.elapsed().as_secs_f64(),
        crate::sync::load_average()
    );
    let (mut on, mut off) = (Side::start(), Side::start());
    for round in 0..args.rounds {
        let (mut round_on, mut round_off) = (Side::start(), Side::start());
        ingest_round(&store, &twins, round, (&mut round_on, &mut round_off)).await?;
        let (wall_on, cpu_on) = round_on.per_item();
        let (wall_off, cpu_off) = round_off.per_item();
        outln!(
            "round {round}: {} items a side; per item {wall_on:.0} µs with rules, {wall_off:.0} \
             µs without; CPU {} with, {} without; {} rule outcomes written; load {}",
            round_on.items,
            cpu_on.map_or("unknown".into(), |c| format!("{c:.0} µs")),
            cpu_off.map_or("unknown".into(), |c| format!("{c:.0} µs")),
            round_on.outcomes,
            crate::sync::load_average()
        );
        on.add(round_on);
        off.add(round_off);
    }
    let ((wall_on, cpu_on), (wall_off, cpu_off)) = (on.per_item(), off.per_item());
    outln!(
        "per item stored: {wall_on:.1} µs with rules, {wall_off:.1} µs without: rules cost {:+.1} %",
        (wall_on / wall_off - 1.0) * 100.0
    );
    // On PostgreSQL most of the work runs in the server's own processes, which this process's
    // CPU time leaves out: there the wall-clock figure, paired as it is, is the one to read.
    match (store.engine(), cpu_on, cpu_off) {
        (tidings_store::Engine::Sqlite, Some(cpu_on), Some(cpu_off)) => outln!(
            "CPU per item stored (SQLite's work included): {cpu_on:.1} µs with rules, \
             {cpu_off:.1} µs without: rules cost {:+.1} %",
            (cpu_on / cpu_off - 1.0) * 100.0
        ),
        (tidings_store::Engine::Postgres, Some(cpu_on), Some(cpu_off)) => outln!(
            "CPU of this process alone (PostgreSQL's own work is not in it): {cpu_on:.1} µs \
             per item with rules, {cpu_off:.1} µs without"
        ),
        _ => {}
    }
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
