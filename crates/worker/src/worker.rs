//! The worker loop (F11): claim due feeds with a lease, fetch them with bounded parallelism,
//! and run the daily retention job (F17) once a day and the rules with an age once an hour
//! across all workers.

use std::collections::{HashMap, VecDeque};
use std::future::Future;
use std::sync::Arc;
use std::time::Duration;

use chrono::Utc;
use tokio::task::JoinSet;

use crate::config::WorkerConfig;
use crate::fetcher::Fetcher;
use crate::metrics::FetchResult;
use crate::round::FeedReport;
use tidings_store::{DueFeed, Store, StoreError};

/// The name of the retention job in `job_runs`.
pub const RETENTION_JOB: &str = "retention";
/// The name in `job_runs` of the pass of the rules with an age ("older than N days"), which
/// mark read or hide items as they reach that age.
pub const AGE_RULES_JOB: &str = "age_rules";
/// How often the rules with an age run: an item is caught within the hour after it reaches
/// the rule's age.
const AGE_RULES_EVERY: Duration = Duration::from_secs(3600);
/// How long the worker waits after a database error before trying again.
const ERROR_PAUSE: Duration = Duration::from_secs(5);
/// How long fetches in flight get to finish when the worker is told to stop. Those still
/// running then are cancelled and their feeds given back at once (nothing of a cancelled
/// fetch is recorded against its feed), so a stop takes at most this plus
/// [`RELEASE_BUDGET`]: within the 10 s container runtimes wait before killing.
pub const SHUTDOWN_GRACE: Duration = Duration::from_secs(5);
/// The most a stopping worker waits for the database to take its feeds back; past it the
/// leases expire by themselves.
pub const RELEASE_BUDGET: Duration = Duration::from_secs(2);

/// What a retention run deleted.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq, serde::Serialize)]
pub struct RetentionReport {
    /// Items deleted for age.
    pub items_deleted: u64,
    /// Feeds deleted for having had no subscribers for a week.
    pub feeds_deleted: u64,
    /// Usage counts (one day, kind and key each) deleted for age.
    pub usage_counts_deleted: u64,
    /// Items whose duplicate lookup keys were dropped: stored longer ago than copies of a
    /// story arrive ([`tidings_store::STORY_WINDOW_SECONDS`]).
    pub story_keys_pruned: u64,
}

/// Retention (F17) at `now`: items tidings first stored more than `config.retention_days`
/// ago are deleted, except each feed's `config.retention_keep_per_feed` newest items and
/// starred and bookmarked ones, leaving tombstones so that fetches do not bring them back; and
/// feeds orphaned for more than `config.orphan_days` are deleted, and so are site favicons
/// not looked up for twice `config.favicon_max_age`; and usage counts (F45) of the days before
/// the last `config.usage_retention_days` are deleted. `retention_days = 0` keeps items
/// forever.
pub async fn run_retention(
    store: &Store,
    now: i64,
    config: &WorkerConfig,
) -> Result<RetentionReport, StoreError> {
    let items_deleted = if config.retention_days > 0 {
        store
            .delete_expired_items(
                now - i64::from(config.retention_days) * 86_400,
                i64::from(config.retention_keep_per_feed),
                now,
            )
            .await?
    } else {
        0
    };
    let feeds_deleted = store
        .delete_orphan_feeds(now - i64::from(config.orphan_days) * 86_400)
        .await?;
    let first_kept_day =
        tidings_store::usage_day(now) - i64::from(config.usage_retention_days.max(1)) + 1;
    let usage_counts_deleted = store.prune_usage_counts(first_kept_day).await?;
    let story_keys_pruned = store
        .prune_story_keys(now - tidings_store::STORY_WINDOW_SECONDS)
        .await?;
    // A site's favicon is looked up again when its feeds' copies are older than
    // `favicon_max_age`; a site row twice that old serves no feed any more.
    let max_age = i64::try_from(config.favicon_max_age.as_secs()).unwrap_or(i64::MAX / 2);
    store
        .delete_stale_site_favicons(now.saturating_sub(max_age.saturating_mul(2)), now)
        .await?;
    Ok(RetentionReport {
        items_deleted,
        feeds_deleted,
        usage_counts_deleted,
        story_keys_pruned,
    })
}

/// Starts a claimed feed's round. The fetcher waits for the feed's host and then for a fetch
/// slot, so the worker only bounds how many feeds are in progress ([`WorkerConfig::in_flight`]).
///
/// [`WorkerConfig::in_flight`]: crate::WorkerConfig::in_flight
fn spawn_fetch(
    tasks: &mut JoinSet<FeedReport>,
    fetcher: &Fetcher,
    due: DueFeed,
) -> tokio::task::AbortHandle {
    let fetcher = fetcher.clone();
    tasks.spawn(async move { fetcher.fetch_claimed(due).await })
}

/// The loop's fetches in progress, with the feed each one holds, so that a stop can give back
/// the feeds of the fetches it cancels.
#[derive(Default)]
struct Running {
    tasks: JoinSet<FeedReport>,
    feeds: HashMap<tokio::task::Id, i64>,
}

impl Running {
    fn len(&self) -> usize {
        self.tasks.len()
    }

    fn is_empty(&self) -> bool {
        self.tasks.is_empty()
    }

    fn spawn(&mut self, fetcher: &Fetcher, due: DueFeed) {
        let feed_id = due.feed_id;
        let handle = spawn_fetch(&mut self.tasks, fetcher, due);
        self.feeds.insert(handle.id(), feed_id);
    }

    /// The report of a finished fetch (`None`: its task ended abnormally), forgetting its feed.
    fn finished(
        &mut self,
        done: Result<(tokio::task::Id, FeedReport), tokio::task::JoinError>,
    ) -> Option<FeedReport> {
        match done {
            Ok((id, report)) => {
                self.feeds.remove(&id);
                Some(report)
            }
            Err(error) => {
                self.feeds.remove(&error.id());
                None
            }
        }
    }

    /// Waits for the next fetch to finish; `None` when none is running.
    async fn join_next(&mut self) -> Option<Option<FeedReport>> {
        let done = self.tasks.join_next_with_id().await?;
        Some(self.finished(done))
    }

    /// A fetch that has finished already, without waiting.
    fn try_join_next(&mut self) -> Option<Option<FeedReport>> {
        let done = self.tasks.try_join_next_with_id()?;
        Some(self.finished(done))
    }

    /// Lets the fetches finish within `grace`, then cancels the rest; returns the feeds of
    /// the cancelled ones (still leased to this worker).
    async fn stop(mut self, grace: Duration) -> Vec<i64> {
        let drain = async { while self.join_next().await.is_some() {} };
        if tokio::time::timeout(grace, drain).await.is_ok() {
            return Vec::new();
        }
        self.tasks.abort_all();
        // Cancelled tasks end at their next await; one that finished meanwhile released its
        // own lease, and a cancelled one stored nothing that needs its lease (an upsert cut
        // short is rolled back).
        let mut cancelled = Vec::new();
        while let Some(done) = self.tasks.join_next_with_id().await {
            match done {
                Ok((id, _)) => {
                    self.feeds.remove(&id);
                }
                Err(error) => cancelled.extend(self.feeds.remove(&error.id())),
            }
        }
        cancelled
    }
}

/// A worker: one loop claiming and fetching due feeds. Run several in one process or in
/// several processes on one database; leases keep them from fetching a feed twice.
#[derive(Debug, Clone)]
pub struct Worker {
    fetcher: Fetcher,
}

/// What one fetch cycle did, for its one summary line at info level: a cycle runs from the
/// first feed claimed after an idle moment until nothing is queued, running or due.
#[derive(Debug, Default)]
struct CycleTally {
    started: Option<std::time::Instant>,
    feeds: u64,
    parsed: u64,
    unchanged: u64,
    failed: u64,
    new_items: u64,
    updated_items: u64,
}

impl CycleTally {
    fn start(&mut self) {
        self.started.get_or_insert_with(std::time::Instant::now);
    }

    /// Counts one finished fetch (`None`: its task ended abnormally).
    fn add(&mut self, report: Option<&FeedReport>) {
        self.feeds += 1;
        match report.map(|r| r.result) {
            Some(FetchResult::Parsed) => self.parsed += 1,
            Some(FetchResult::NotModified | FetchResult::Unchanged) => self.unchanged += 1,
            _ => self.failed += 1,
        }
        if let Some(report) = report {
            self.new_items += report.items_inserted;
            self.updated_items += report.items_updated;
        }
    }

    /// Logs the cycle's summary when it fetched anything, and starts a new tally.
    fn finish(&mut self) {
        let tally = std::mem::take(self);
        let Some(started) = tally.started else {
            return;
        };
        if tally.feeds == 0 {
            return;
        }
        let seconds = started.elapsed().as_secs_f64();
        tracing::info!(
            feeds = tally.feeds,
            parsed = tally.parsed,
            unchanged = tally.unchanged,
            failed = tally.failed,
            new_items = tally.new_items,
            updated_items = tally.updated_items,
            seconds,
            "fetch cycle: {} feed{} in {seconds:.1} s: {} parsed ({} new items, {} updated), \
             {} unchanged or not modified, {} failed",
            tally.feeds,
            if tally.feeds == 1 { "" } else { "s" },
            tally.parsed,
            tally.new_items,
            tally.updated_items,
            tally.unchanged,
            tally.failed,
        );
    }
}

impl Worker {
    /// A worker fetching with `fetcher` (whose config gives the owner, parallelism and tick).
    pub fn new(fetcher: Fetcher) -> Worker {
        Worker { fetcher }
    }

    /// The fetcher, for manual refreshes beside the loop and for the metrics.
    pub fn fetcher(&self) -> &Fetcher {
        &self.fetcher
    }

    /// Runs until `shutdown` completes: claims due feeds as slots free up, sleeps a tick when
    /// nothing is due, runs the daily jobs when their time has come. On shutdown it stops
    /// claiming, gives back the feeds claimed but not started, lets fetches in flight finish
    /// within [`SHUTDOWN_GRACE`] and cancels the rest, giving their feeds back too (within
    /// [`RELEASE_BUDGET`]; if the database cannot be reached, the leases expire instead).
    pub async fn run(&self, shutdown: impl Future<Output = ()>) {
        let config = self.fetcher.config().clone();
        let in_flight = config.in_flight();
        let mut tasks = Running::default();
        let mut jobs: JoinSet<()> = JoinSet::new();
        let mut next_job_check = tokio::time::Instant::now();
        let batch = config.concurrency.max(1) as i64;
        let mut queue: VecDeque<DueFeed> = VecDeque::new();
        let mut more_due = false;
        let mut cycle = CycleTally::default();
        tokio::pin!(shutdown);
        tracing::info!(
            owner = %config.owner,
            concurrency = config.concurrency,
            poll_seconds = config.poll_interval.as_secs_f64(),
            "worker started"
        );
        let background = self.start_background_jobs();
        loop {
            if tokio::time::Instant::now() >= next_job_check {
                next_job_check = tokio::time::Instant::now() + config.poll_interval;
                if jobs.is_empty() {
                    self.maybe_start_daily_jobs(&mut jobs).await;
                }
            }
            let mut pause = config.poll_interval;
            // Claims go in batches of `concurrency` into a local queue, started while fewer
            // than `in_flight` feeds are in progress: one claim per batch rather than one per
            // finished fetch keeps the claim query (a sort over the due feeds) off the hot
            // path on large installations, and the bound keeps memory flat.
            if queue.is_empty() && tasks.len() < in_flight {
                match self.claim_batch(batch, &mut queue, &mut cycle).await {
                    Some(more) => more_due = more,
                    None => {
                        more_due = false;
                        pause = ERROR_PAUSE.min(config.poll_interval);
                    }
                }
            }
            // Nothing queued, running or left due: the cycle is over.
            if queue.is_empty() && tasks.is_empty() {
                cycle.finish();
            }
            while tasks.len() < in_flight
                && let Some(due) = queue.pop_front()
            {
                tasks.spawn(&self.fetcher, due);
            }
            // More is waiting (queued or likely due): come back as soon as a slot frees.
            if !queue.is_empty() || more_due {
                pause = Duration::MAX;
            }
            // `Duration::MAX` means "until a fetch finishes"; with none running, at once.
            let wait_for_tasks = pause == Duration::MAX && !tasks.is_empty();
            let sleep = tokio::time::sleep(if pause == Duration::MAX {
                Duration::ZERO
            } else {
                pause
            });
            tokio::select! {
                () = &mut shutdown => break,
                Some(done) = tasks.join_next(), if !tasks.is_empty() => {
                    // Collect whatever else finished too, then claim for the freed slots.
                    cycle.add(done.as_ref());
                    while let Some(done) = tasks.try_join_next() {
                        cycle.add(done.as_ref());
                    }
                }
                Some(_) = jobs.join_next(), if !jobs.is_empty() => {}
                () = sleep, if !wait_for_tasks => {}
            }
        }
        self.shut_down(queue, tasks, jobs, background).await;
    }

    /// The jobs that run beside the fetching until the worker stops, each with its own queue
    /// and parallelism: the search index backfill, full text, tags, summaries, popularity,
    /// WebSub, notifications and item vectors.
    fn start_background_jobs(&self) -> Vec<tokio::task::JoinHandle<()>> {
        let config = self.fetcher.config();
        // Arrival rows that predate their copy of the item's feed and date (issue 38) get it
        // first (SQL alone; until it is done the sync APIs' lists of ids read every item
        // they list), then items that predate the search index are
        // indexed beside the fetching, then items that predate languages (issue 37) are
        // given theirs: one after the other, so that an upgrade's backfills take one core
        // at most.
        let backfill_store = self.fetcher.store().clone();
        let backfill = tokio::spawn(async move {
            let pause = crate::search_index::BACKFILL_PAUSE;
            if let Err(error) = crate::backfill_arrival_dates(&backfill_store, pause).await {
                tracing::warn!(%error, "arrival dates backfill stopped; it resumes at the next start");
                return;
            }
            if let Err(error) = crate::backfill_search_index(&backfill_store, pause).await {
                tracing::warn!(%error, "search index backfill stopped; it resumes at the next start");
                return;
            }
            if let Err(error) = crate::backfill_languages(&backfill_store, pause).await {
                tracing::warn!(%error, "language backfill stopped; it resumes at the next start");
            }
        });
        // Full text (F6) beside the fetching, with its own queue and parallelism, so that
        // article pages never hold a feed's fetch slot.
        let full_text = (config.full_text_concurrency > 0).then(|| {
            let job = Arc::new(crate::FullTextJob::new(self.fetcher.clone()));
            tokio::spawn(crate::run_enrichment(
                job,
                config.full_text_concurrency,
                config.poll_interval,
                std::future::pending(),
            ))
        });
        // Tags (F41) beside the fetching, from their own queue.
        let tagging = (config.tags_per_item > 0).then(|| {
            let job = Arc::new(crate::TaggingJob::new(&self.fetcher));
            tokio::spawn(crate::run_enrichment(
                job,
                crate::tagging::CONCURRENCY,
                config.poll_interval,
                std::future::pending(),
            ))
        });
        // Summaries (F42) beside it, from their own queue, so that a slow provider never
        // holds a fetch.
        let summaries = (config.summary.parallelism > 0).then(|| {
            let job = Arc::new(crate::SummaryJob::new(Arc::clone(
                self.fetcher.summarizer(),
            )));
            tokio::spawn(crate::run_enrichment(
                job,
                config.summary.parallelism,
                config.poll_interval,
                std::future::pending(),
            ))
        });
        // Translations (issue 37) of the subscriptions marked "always translate", from their
        // own queue, when a provider is configured.
        let translations = (config.translate.parallelism > 0 && self.fetcher.translator().is_on())
            .then(|| {
                let job = Arc::new(crate::TranslationJob::new(Arc::clone(
                    self.fetcher.translator(),
                )));
                tokio::spawn(crate::run_enrichment(
                    job,
                    config.translate.parallelism,
                    config.poll_interval,
                    std::future::pending(),
                ))
            });
        // Popularity (F40) beside it: one call at a time, paced through the store so that
        // the pace holds however many workers run.
        let popularity = crate::popularity::configured_job(&self.fetcher).map(|job| {
            tokio::spawn(crate::run_enrichment(
                Arc::new(job),
                1,
                config.poll_interval,
                std::future::pending(),
            ))
        });
        // WebSub (F18): subscribing, renewing and unsubscribing feeds at their hubs, when on.
        let websub = crate::WebSubJob::new(&self.fetcher).map(|job| {
            tokio::spawn(crate::run_enrichment(
                Arc::new(job),
                crate::websub::CONCURRENCY,
                config.poll_interval,
                std::future::pending(),
            ))
        });
        // Notifications (F43) beside it: new items matched to channels and sent from their
        // own queue, paced per channel, never in the fetch's way.
        let notifications = crate::notifications::configured_job(&self.fetcher).map(|job| {
            tokio::spawn(crate::run_enrichment(
                Arc::new(job),
                config.notifications.concurrency,
                config.notifications.poll,
                std::future::pending(),
            ))
        });
        // Item vectors for related items (F44) from their own queue; a failing provider only
        // slows this job.
        let embeddings = {
            let store = self.fetcher.store().clone();
            let embeddings = config.embeddings.clone();
            let (owner, lease, poll) = (
                config.owner.clone(),
                config.lease.as_secs() as i64,
                config.poll_interval,
            );
            tokio::spawn(async move {
                crate::embedding::run_configured(
                    store,
                    &embeddings,
                    &owner,
                    lease,
                    poll,
                    std::future::pending(),
                )
                .await;
            })
        };
        let optional = [
            full_text,
            tagging,
            summaries,
            translations,
            popularity,
            websub,
            notifications,
        ];
        let mut started = vec![backfill];
        started.extend(optional.into_iter().flatten());
        started.push(embeddings);
        started
    }

    /// Claims up to `batch` due feeds into `queue`, counting them into the cycle; answers
    /// whether more are likely due, or `None` when the claim failed (logged).
    async fn claim_batch(
        &self,
        batch: i64,
        queue: &mut VecDeque<DueFeed>,
        cycle: &mut CycleTally,
    ) -> Option<bool> {
        let config = self.fetcher.config();
        let now = Utc::now().timestamp();
        let claimed = self
            .fetcher
            .store()
            .claim_due_feeds(&config.owner, now, batch, config.lease.as_secs() as i64)
            .await;
        match claimed {
            Ok(claimed) => {
                let more_due = claimed.len() as i64 == batch;
                if !claimed.is_empty() {
                    cycle.start();
                }
                queue.extend(claimed);
                Some(more_due)
            }
            Err(error) => {
                tracing::warn!(%error, "claiming due feeds failed");
                None
            }
        }
    }

    /// The end of [`Worker::run`]: feeds claimed but not started go back at once, while the
    /// fetches in flight get their grace; then the feeds of those cancelled go back too.
    /// Either way another worker takes them without waiting for the lease. Then the daily and
    /// background jobs stop.
    async fn shut_down(
        &self,
        queue: VecDeque<DueFeed>,
        tasks: Running,
        mut jobs: JoinSet<()>,
        background: Vec<tokio::task::JoinHandle<()>>,
    ) {
        let owner = &self.fetcher.config().owner;
        tracing::info!(
            owner = %owner,
            in_flight = tasks.len(),
            queued = queue.len(),
            "worker stopping"
        );
        let unstarted: Vec<i64> = queue.iter().map(|due| due.feed_id).collect();
        let (_, cancelled) = tokio::join!(self.give_back(&unstarted), tasks.stop(SHUTDOWN_GRACE));
        self.give_back(&cancelled).await;
        jobs.abort_all();
        for job in background {
            job.abort();
        }
        tracing::info!(owner = %owner, "worker stopped");
    }

    /// Releases this worker's leases on `feeds` within [`RELEASE_BUDGET`]; when the database
    /// cannot take them back in time, the leases expire by themselves.
    async fn give_back(&self, feeds: &[i64]) {
        if feeds.is_empty() {
            return;
        }
        let owner = &self.fetcher.config().owner;
        let release = self.fetcher.store().release_feeds(owner, feeds);
        match tokio::time::timeout(RELEASE_BUDGET, release).await {
            Ok(Ok(released)) => {
                tracing::info!(released, "gave back feeds this worker will not fetch");
            }
            Ok(Err(error)) => {
                tracing::warn!(%error, "giving back feeds failed; their leases will expire");
            }
            Err(_) => {
                tracing::warn!("giving back feeds took too long; their leases will expire");
            }
        }
    }

    /// Claims and fetches every feed due now, `concurrency` at a time, until none is due;
    /// returns the reports. For tests and one-shot runs over a few feeds: the reports are kept
    /// (use [`Worker::run_once_with`] for many).
    pub async fn run_once(&self) -> Result<Vec<FeedReport>, StoreError> {
        let mut reports = Vec::new();
        self.run_once_with(|report| reports.push(report)).await?;
        Ok(reports)
    }

    /// Like [`Worker::run_once`], handing each report to `each` as it comes instead of
    /// keeping them: memory stays flat however many feeds are due. Returns how many feeds
    /// were fetched, once the favicons they queued are stored too.
    pub async fn run_once_with(&self, mut each: impl FnMut(FeedReport)) -> Result<u64, StoreError> {
        let config = self.fetcher.config().clone();
        let in_flight = config.in_flight();
        let mut tasks: JoinSet<FeedReport> = JoinSet::new();
        let mut fetched = 0u64;
        let mut finished = |done: Result<FeedReport, tokio::task::JoinError>| {
            if let Ok(report) = done {
                fetched += 1;
                each(report);
            }
        };
        let batch = config.concurrency.max(1) as i64;
        let mut queue: VecDeque<DueFeed> = VecDeque::new();
        loop {
            if queue.is_empty() && tasks.len() < in_flight {
                queue.extend(
                    self.fetcher
                        .store()
                        .claim_due_feeds(
                            &config.owner,
                            Utc::now().timestamp(),
                            batch,
                            config.lease.as_secs() as i64,
                        )
                        .await?,
                );
                if queue.is_empty() {
                    // Nothing more is due: wait for the fetches in flight, then claim again
                    // (a feed may have become due meanwhile) or finish.
                    match tasks.join_next().await {
                        Some(done) => {
                            finished(done);
                            continue;
                        }
                        None => {
                            self.fetcher.wait_for_favicons().await;
                            return Ok(fetched);
                        }
                    }
                }
            }
            while tasks.len() < in_flight
                && let Some(due) = queue.pop_front()
            {
                spawn_fetch(&mut tasks, &self.fetcher, due);
            }
            // Full: wait for one feed to finish before claiming or starting more.
            if tasks.len() >= in_flight
                && let Some(done) = tasks.join_next().await
            {
                finished(done);
            }
            while let Some(done) = tasks.try_join_next() {
                finished(done);
            }
        }
    }

    /// Starts the retention job when this worker wins today's run, else the hourly pass of
    /// the rules with an age when it wins that (one job at a time per worker).
    async fn maybe_start_daily_jobs(&self, jobs: &mut JoinSet<()>) {
        let config = self.fetcher.config();
        let store = self.fetcher.store().clone();
        let now = Utc::now().timestamp();
        if self.claim(RETENTION_JOB, now, config.retention_every).await {
            let config = config.clone();
            let metrics = Arc::clone(self.fetcher.metrics());
            self.spawn_recorded(jobs, RETENTION_JOB, async move {
                match run_retention(&store, now, &config).await {
                    Ok(report) => {
                        metrics.record_retention(report.items_deleted, report.feeds_deleted);
                        tracing::info!(
                            items = report.items_deleted,
                            feeds = report.feeds_deleted,
                            usage_counts = report.usage_counts_deleted,
                            "retention done"
                        );
                        format!(
                            "deleted {} items, {} orphan feeds and {} usage counts",
                            report.items_deleted, report.feeds_deleted, report.usage_counts_deleted
                        )
                    }
                    Err(error) => {
                        tracing::warn!(%error, "retention failed");
                        format!("failed: {error}")
                    }
                }
            });
        } else if self.claim(AGE_RULES_JOB, now, AGE_RULES_EVERY).await {
            self.spawn_recorded(jobs, AGE_RULES_JOB, async move {
                match store.run_age_rules(now).await {
                    Ok(report) => {
                        tracing::info!(
                            rules = report.rules,
                            changed = report.changed,
                            "rules with an age done"
                        );
                        format!(
                            "rules with an age: {}, items changed: {}",
                            report.rules, report.changed
                        )
                    }
                    Err(error) => {
                        tracing::warn!(%error, "the rules with an age failed");
                        format!("failed: {error}")
                    }
                }
            });
        }
    }

    /// Whether this worker wins the run of job `name` (one per `every` across all workers).
    async fn claim(&self, name: &str, now: i64, every: Duration) -> bool {
        let config = self.fetcher.config();
        let every = i64::try_from(every.as_secs()).unwrap_or(i64::MAX);
        match self
            .fetcher
            .store()
            .claim_job(name, &config.owner, now, every)
            .await
        {
            Ok(claimed) => claimed,
            Err(error) => {
                tracing::warn!(%error, job = name, "a periodic job could not be claimed");
                false
            }
        }
    }

    /// Runs a claimed job's `work` in `jobs` and records its outcome (what `work` answers).
    fn spawn_recorded(
        &self,
        jobs: &mut JoinSet<()>,
        name: &'static str,
        work: impl Future<Output = String> + Send + 'static,
    ) {
        let store = self.fetcher.store().clone();
        let owner = self.fetcher.config().owner.clone();
        jobs.spawn(async move {
            let outcome = work.await;
            let finished = Utc::now().timestamp();
            if let Err(error) = store.finish_job(name, &owner, finished, &outcome).await {
                tracing::warn!(%error, job = name, "a periodic job's run could not be recorded");
            }
        });
    }
}
