//! `tidings-bench duplicates-ingest`: what clustering duplicates across feeds costs when items
//! arrive (issue 35). Clustering runs in the fetch's own transaction, once per new item (its
//! keys, a look-up of the stored items sharing one, the few best compared) and then per
//! subscriber of a copy found, so its cost is a share of storing a fetch.
//!
//! As `rules-ingest`, the comparison is paired: the same users and feeds are set up twice in
//! the same database, every feed's items are stored into both twins one right after the
//! other (the first alternating), through two store handles of which one has clustering
//! switched off ([`Store::set_duplicate_clustering`]). The items are the farm's mix of sizes
//! (5 to 500 a feed, log-uniform) in mixed languages, of which `--copy-percent` are copies of
//! a round's wire stories (the wire's text under the wire's link with a feed's own tracking
//! tail and site name): the copies arrive in many feeds, as a wire story does.
//!
//! Run it on an empty database for the farm alone, or with `--stored-items 1000000` for the
//! cost at a million items: keys are kept only for the last weeks' items, so the look-ups
//! meet the window's items, and that option stores that many items dated within the window,
//! with their keys, before the rounds (a key table as large as an installation that stored a
//! million items in two weeks has).

use std::process::ExitCode;
use std::time::Instant;

use anyhow::Context;
use clap::Args;
use tidings::config::GlobalConfig;
use tidings::outln;
use tidings_store::{NewItem, Store, unix_now};

use crate::paired::{Farm, Side, store_timed};
use crate::search::{Rng, article};

/// Arguments of `tidings-bench duplicates-ingest`.
#[derive(Debug, Args)]
pub struct DuplicatesIngestArgs {
    /// Feeds items arrive in.
    #[arg(long, default_value_t = 500)]
    pub feeds: usize,
    /// Users.
    #[arg(long, default_value_t = 100)]
    pub users: usize,
    /// Feeds each user follows.
    #[arg(long, default_value_t = 50)]
    pub feeds_per_user: usize,
    /// Rounds: in each, every feed of both twins gets new items.
    #[arg(long, default_value_t = 2)]
    pub rounds: usize,
    /// Of every feed's items, the share that are copies of a wire story, in percent.
    #[arg(long, default_value_t = 20)]
    pub copy_percent: usize,
    /// Wire stories a round that the copies are drawn from: with the defaults, about 11,000
    /// copies a round make clusters of about three (a story in three of the 500 feeds, so a
    /// reader sees a copy or two of it). Fewer stories make bigger clusters: 300 put each story
    /// in about 36 feeds, the wire service every paper prints.
    #[arg(long, default_value_t = 3_600)]
    pub wire_stories: usize,
    /// Items stored before the rounds, dated within the last two weeks, with their lookup
    /// keys: what every look-up of the rounds meets.
    #[arg(long, default_value_t = 0)]
    pub stored_items: usize,
}

/// Items a statement of the stored items inserts, and statements a transaction holds.
const STORED_ROWS: usize = 500;

/// Stores `count` items of a feed nobody follows, dated within the last two weeks, and their
/// lookup keys as ingest makes them (`tidings_cluster::story_keys`), by SQL in large batches.
async fn store_background(store: &Store, count: usize, run: u64, now: i64) -> anyhow::Result<()> {
    let url = format!("https://stored-{run}.invalid/feed");
    store
        .execute_raw(&format!(
            "INSERT INTO feeds (url, title, site_url, suspended, created_at, updated_at)
             VALUES ('{url}', 'Stored', 'https://stored-{run}.invalid/', TRUE, {now}, {now})"
        ))
        .await?;
    let feed_id = store
        .feed_id_by_url(&url)
        .await?
        .context("the stored items' feed")?;
    let started = Instant::now();
    let window = tidings_store::STORY_WINDOW_SECONDS - 3_600;
    let quote = |text: &str| text.replace('\'', "''");
    for first in (0..count).step_by(STORED_ROWS * 10) {
        let mut statements = Vec::new();
        for batch in (first..count.min(first + STORED_ROWS * 10)).step_by(STORED_ROWS) {
            let (mut items, mut keys) = (Vec::new(), Vec::new());
            for k in batch..count.min(batch + STORED_ROWS) {
                let (title, content) = article(200_000_000 + k);
                let link = format!("https://stored-{run}.invalid/{k}");
                let text = content.replace("<p>", " ").replace("</p>", " ");
                let tokens = tidings_text::FieldTokens::new(&text);
                let tokens: Vec<&str> = tokens.inline().iter().map(String::as_str).collect();
                let story = tidings_cluster::Story {
                    link: Some(&link),
                    title: Some(&title),
                    text: Some(&text),
                    ..tidings_cluster::Story::default()
                };
                for key in tidings_cluster::story_keys(&story, &tokens) {
                    keys.push(format!("({}, 's{k}')", key.value));
                }
                let published = now - (k as i64 * 7_919) % window;
                items.push(format!(
                    "({feed_id}, 's{k}', 's{k}', '{link}', '{}', '{}', {published}, FALSE, \
                     {published}, {published}, 'h{k}')",
                    quote(&title),
                    quote(&content)
                ));
            }
            statements.push(format!(
                "INSERT INTO items (feed_id, identity_key, guid, url, title, content, \
                 published_at, is_date_estimated, fetched_at, changed_at, content_hash) \
                 VALUES {};
                 INSERT INTO item_story_keys (key, item_id)
                 SELECT v.column1, i.id FROM (VALUES {}) AS v
                 JOIN items i ON i.feed_id = {feed_id} AND i.identity_key = v.column2
                 ON CONFLICT DO NOTHING;",
                items.join(","),
                keys.join(",")
            ));
        }
        store
            .execute_raw(&format!("BEGIN; {} COMMIT;", statements.join("\n")))
            .await?;
        if (first / (STORED_ROWS * 10)) % 20 == 19 {
            outln!(
                "stored items: {} in {:.1} s",
                first + STORED_ROWS * 10,
                started.elapsed().as_secs_f64()
            );
        }
    }
    Ok(())
}

/// The items of feed `feed` in round `round`: the farm's mix of sizes, mixed languages, and
/// copies of the round's wire stories.
fn round_items(feed: usize, round: usize, args: &DuplicatesIngestArgs, now: i64) -> Vec<NewItem> {
    let mut rng = Rng::new(feed as u64 * 31 + 7);
    let size = (5.0 * 100f64.powf(rng.below(1000) as f64 / 999.0)).round() as usize;
    let mut draw = Rng::new((feed * 7_919 + round) as u64 + 3);
    (0..size)
        .map(|k| {
            let published = Some(now - k as i64 * 60);
            if draw.below(100) < args.copy_percent {
                let story = draw.below(args.wire_stories.max(1));
                let (title, content) = article(90_000_000 + round * 100_000 + story);
                return NewItem {
                    guid: Some(format!("dup-{round}-{feed}-{k}")),
                    url: Some(format!(
                        "https://wire.invalid/{round}/{story}?utm_source=feed{feed}&utm_medium=rss"
                    )),
                    // A site name without a number: two titles that differ only in their
                    // numbers are parts of a series to the decision, and stay apart.
                    title: Some(format!("{title} - {}", site_name(feed))),
                    content: Some(content),
                    published,
                    ..NewItem::default()
                };
            }
            // Each feed's own items are its own: no two feeds or rounds share one.
            let (title, content) = article(round * 10_000_000 + feed * 1_000 + k);
            NewItem {
                guid: Some(format!("dup-{round}-{feed}-{k}")),
                url: Some(format!("https://feed{feed}.invalid/{round}/{k}")),
                title: Some(title),
                content: Some(content),
                published,
                ..NewItem::default()
            }
        })
        .collect()
}

/// Feed `feed`'s site name in letters (`Aab`, `Abc`, …), as newspapers' names are.
fn site_name(feed: usize) -> String {
    let letter = |n: usize| char::from(b'a' + (n % 26) as u8);
    let mut name: String = [feed / 676, feed / 26, feed]
        .iter()
        .map(|&n| letter(n))
        .collect();
    name[..1].make_ascii_uppercase();
    name
}

/// Users `dup{run}u*`, each following `--feeds-per-user` of the twin's feeds; the feeds' ids.
async fn set_up(store: &Store, args: &DuplicatesIngestArgs, run: u64) -> anyhow::Result<Vec<i64>> {
    let farm = Farm {
        name: format!("dup{run}"),
        users: args.users,
        feeds: args.feeds,
        feeds_per_user: args.feeds_per_user,
    };
    Ok(farm.set_up(store).await?.0)
}

/// Runs the bench; prints each round and what clustering costs.
pub async fn run(config: &GlobalConfig, args: DuplicatesIngestArgs) -> anyhow::Result<ExitCode> {
    let on = crate::store::open_store_for_bulk_load(config).await?;
    // A second handle on the same database, with clustering off: the twin without it.
    let off = crate::store::open_store_for_bulk_load(config).await?;
    off.set_duplicate_clustering(false);
    let run = unix_now() as u64 * 2;
    let started = Instant::now();
    let with = set_up(&on, &args, run).await?;
    let without = set_up(&off, &args, run + 1).await?;
    let twins: Vec<(i64, i64)> = with.into_iter().zip(without).collect();
    if args.stored_items > 0 {
        store_background(&on, args.stored_items, run, unix_now()).await?;
        outln!(
            "{} items stored within the window, with their keys, in {:.1} s",
            args.stored_items,
            started.elapsed().as_secs_f64()
        );
    }
    outln!(
        "tidings-bench duplicates-ingest on {}: {} users, {} feeds ({} per user), {} % of \
         items copies of {} wire stories a round, and the twin with clustering off; \
         set up in {:.1} s; load average {}",
        on.engine(),
        args.users,
        args.feeds,
        args.feeds_per_user,
        args.copy_percent,
        args.wire_stories,
        started.elapsed().as_secs_f64(),
        crate::sync::load_average()
    );
    let (mut total_on, mut total_off) = (Side::start(), Side::start());
    for round in 0..args.rounds {
        let (mut a, mut b) = (Side::start(), Side::start());
        let now = unix_now();
        for (f, &(with, without)) in twins.iter().enumerate() {
            if with == 0 || without == 0 {
                continue;
            }
            let items = round_items(f, round, &args, now);
            if f % 2 == 0 {
                store_timed(&on, &mut a, with, &items, now).await?;
                store_timed(&off, &mut b, without, &items, now).await?;
            } else {
                store_timed(&off, &mut b, without, &items, now).await?;
                store_timed(&on, &mut a, with, &items, now).await?;
            }
        }
        let ((wall_on, cpu_on), (wall_off, cpu_off)) = (a.per_item(), b.per_item());
        let cpu = |c: Option<f64>| c.map_or("unknown".into(), |c| format!("{c:.0} µs"));
        outln!(
            "round {round}: {} items a twin, {} found to be copies; per item {wall_on:.0} µs \
             clustered, {wall_off:.0} µs not; CPU {} clustered, {} not; load {}",
            a.items,
            a.clustered,
            cpu(cpu_on),
            cpu(cpu_off),
            crate::sync::load_average()
        );
        total_on.add(a);
        total_off.add(b);
    }
    let ((wall_on, cpu_on), (wall_off, cpu_off)) = (total_on.per_item(), total_off.per_item());
    outln!(
        "per item stored: {wall_on:.1} µs clustered, {wall_off:.1} µs not: clustering costs \
         {:+.1} % ({} of {} items were copies)",
        (wall_on / wall_off - 1.0) * 100.0,
        total_on.clustered,
        total_on.items
    );
    // What the clustered twin keeps per item to find later copies by: the rows every item
    // writes, the largest part of what clustering costs when items have no copy.
    let key_rows = on.story_key_rows().await?;
    outln!(
        "lookup key rows: {key_rows}, {:.1} per item clustered",
        key_rows as f64 / total_on.items.max(1) as f64
    );
    if let (tidings_store::Engine::Sqlite, Some(cpu_on), Some(cpu_off)) =
        (on.engine(), cpu_on, cpu_off)
    {
        outln!(
            "CPU per item stored (SQLite's work included): {cpu_on:.1} µs clustered, \
             {cpu_off:.1} µs not: clustering costs {:+.1} %",
            (cpu_on / cpu_off - 1.0) * 100.0
        );
    }
    on.close().await;
    off.close().await;
    Ok(ExitCode::SUCCESS)
}
