//! `tidings-bench retention`: the worker's retention (`Store::delete_expired_items`) deleting a
//! day's expired items while readers list a user's newest items (issue 38: a day's expired
//! items in under a minute, without blocking readers).
//!
//! It runs on the data set of `tidings-bench generate`, whose items are one a feed in turn,
//! each first stored 14 s before the next: the oldest `--expire` items are the ones stored
//! before a time found from the oldest item, spread over every feed. By default that is a
//! day's items of an installation of ten million kept for the default 180 days (55,556).
//! Readers list the first screen (the 50 newest items) of the data set's first user at a
//! steady rate, before retention (`--baseline-seconds`) and then while it runs, and both sets
//! of latencies are reported side by side.
//!
//! Retention deletes: run it on a copy, or generate again after.

use std::process::ExitCode;
use std::sync::Arc;
use std::sync::atomic::{AtomicBool, Ordering};
use std::time::{Duration, Instant};

use anyhow::Context;
use clap::Args;
use tidings::config::GlobalConfig;
use tidings::output::outln;
use tidings_store::{ItemQuery, Store, unix_now};

use crate::api::ITEM_SPACING_SECONDS;
use crate::paired::process_cpu_seconds;
use crate::sync::load_average;

/// Arguments of `tidings-bench retention`.
#[derive(Debug, Args)]
pub struct RetentionArgs {
    /// Items to expire, the oldest of the data set: by default a day's of ten million items
    /// kept 180 days.
    #[arg(long, default_value_t = 55_556)]
    pub expire: i64,
    /// The newest items of every feed kept whatever their age (the worker's default).
    #[arg(long, default_value_t = 50)]
    pub keep_per_feed: i64,
    /// Readers listing the first screen at once, before and during retention.
    #[arg(long, default_value_t = 4)]
    pub readers: usize,
    /// First screens a second over all readers, each reader's sent on a schedule of its own
    /// (as people's arrive, whether or not the last was answered); readers that asked as
    /// fast as they were answered took the two cores from retention itself.
    #[arg(long, default_value_t = 100.0)]
    pub rate: f64,
    /// How long the readers are timed before retention starts.
    #[arg(long, default_value_t = 20)]
    pub baseline_seconds: u64,
}

/// Latencies of one period, in milliseconds.
#[derive(Default)]
struct Latencies(Vec<f64>);

impl Latencies {
    /// "n requests, median / p99 / max".
    fn describe(&self) -> String {
        let mut sorted = self.0.clone();
        sorted.sort_by(f64::total_cmp);
        let at = |q| crate::quantiles::nearest_rank(&sorted, q).unwrap_or(0.0);
        format!(
            "{} requests, median {:.1} ms, p99 {:.1} ms, max {:.1} ms",
            self.0.len(),
            at(0.5),
            at(0.99),
            at(1.0)
        )
    }
}

/// Runs `tidings-bench retention`.
pub async fn run(config: &GlobalConfig, args: RetentionArgs) -> anyhow::Result<ExitCode> {
    let store = crate::store::open_store(config).await?;
    let user = store
        .list_users()
        .await?
        .into_iter()
        .map(|u| u.id)
        .min()
        .context("no user: run `tidings-bench generate` first")?;
    // The installation's oldest, not the first user's: on a data set where each user follows
    // a small part of the feeds, the first user's oldest item is newer than the oldest of
    // all, and every item in between was deleted too (155,505 for a day's 55,556 at ten
    // million items in 100,000 feeds).
    let oldest = store
        .oldest_item_stored_at()
        .await?
        .context("no items: run `tidings-bench generate` first")?;
    // The generated items are first stored ITEM_SPACING_SECONDS apart, from the oldest on
    // (their first storing is their publication date): the `expire` oldest are the ones
    // stored before this.
    let stored_before = oldest + ITEM_SPACING_SECONDS * args.expire - (ITEM_SPACING_SECONDS - 1);
    outln!(
        "tidings-bench retention: the {} oldest items on {}, {} readers of user {user}'s \
         first screen at {} a second, load {}",
        args.expire,
        store.engine(),
        args.readers,
        args.rate,
        load_average()
    );
    let readers = Readers {
        count: args.readers,
        every: Duration::from_secs_f64(args.readers as f64 / args.rate.max(0.001)),
    };
    let baseline = read_while(&store, user, &readers, async {
        tokio::time::sleep(Duration::from_secs(args.baseline_seconds)).await;
        anyhow::Ok(())
    })
    .await?
    .0;
    outln!(
        "readers alone ({} s): {}",
        args.baseline_seconds,
        baseline.describe()
    );
    let cpu = process_cpu_seconds();
    let started = Instant::now();
    let (during, deleted) = read_while(&store, user, &readers, async {
        Ok(store
            .delete_expired_items(stored_before, args.keep_per_feed, unix_now())
            .await?)
    })
    .await?;
    let seconds = started.elapsed().as_secs_f64();
    let cpu = process_cpu_seconds()
        .zip(cpu)
        .map_or(String::new(), |(after, before)| {
            format!(", this process's CPU {:.1} s", after - before)
        });
    outln!(
        "retention: {deleted} items deleted in {seconds:.1} s ({:.0} items/s{cpu}), load {}",
        deleted as f64 / seconds.max(f64::EPSILON),
        load_average()
    );
    outln!("readers during retention: {}", during.describe());
    Ok(ExitCode::SUCCESS)
}

/// How many readers ask, and how often each.
struct Readers {
    /// Reading tasks.
    count: usize,
    /// The time between two requests of one task.
    every: Duration,
}

/// Lists `user`'s first screen from the readers' tasks until `work` is done; answers the
/// latencies and what `work` answered.
async fn read_while<T>(
    store: &Store,
    user: i64,
    readers: &Readers,
    work: impl Future<Output = anyhow::Result<T>>,
) -> anyhow::Result<(Latencies, T)> {
    let done = Arc::new(AtomicBool::new(false));
    let tasks: Vec<_> = (0..readers.count)
        .map(|_| {
            let (store, done, every) = (store.clone(), done.clone(), readers.every);
            tokio::spawn(async move {
                let mut latencies = Vec::new();
                let query = ItemQuery {
                    limit: 50,
                    ..ItemQuery::default()
                };
                let mut schedule = tokio::time::interval(every);
                while !done.load(Ordering::Relaxed) {
                    schedule.tick().await;
                    let started = Instant::now();
                    store.list_items(user, &query).await?;
                    latencies.push(started.elapsed().as_secs_f64() * 1000.0);
                }
                anyhow::Ok(latencies)
            })
        })
        .collect();
    let outcome = work.await;
    done.store(true, Ordering::Relaxed);
    let mut all = Latencies::default();
    for task in tasks {
        all.0.extend(task.await??);
    }
    Ok((all, outcome?))
}
