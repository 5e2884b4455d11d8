//! Summaries (F42): each item summarized at most once, by the configured provider, from its
//! own queue and worker pool, so that a slow or failing provider never touches fetching or
//! reading.
//!
//! - A feed's fetch queues its new items when a subscriber wants them summarized (preference
//!   `all`, or `chosen` with the subscription marked) — one statement; nothing else waits.
//! - [`SummaryJob`] works through the queue as an [`EnrichmentJob`], `parallelism` items at
//!   once per process. The reader's "Summarize" goes through [`Summarizer::request`], which
//!   claims the item at once and answers when the summary is stored or the wait ends.
//! - A remote provider's requests pass its circuit breaker ([`breaker`]) and the per-day
//!   budget (counted in the store, across processes). A request that fails for now (time-out,
//!   connection, 429, 5xx) is tried again after an exponential back-off with jitter (or the
//!   429's `Retry-After`), up to `tries` requests per attempt; then the item goes back in the
//!   queue for later, up to `max_attempts` attempts. A refusal (another 4xx) drops it.
//! - An item whose text is no longer than a summary ([`worth_summarizing`]) is not
//!   summarized: its summary would be its text. It is dropped from the queue before any
//!   request (no budget spent), "Summarize" answers that it is too short, and the items the
//!   API shows say `summarizable: false`, so the reader offers no button for it.
//! - Summaries are stored once per item, with the length of the text they were made from.
//!   The one exception: when an item's full article arrives and is at least
//!   [`tidings_store::REDO_SUMMARY_FACTOR`] times longer than that text (a summary of the
//!   feed's teaser), the store queues the item once more and the new summary replaces it.

pub mod breaker;
pub mod provider;

use std::sync::Arc;
use std::time::Duration;

use chrono::Utc;
use tidings_feed::text::html_to_text;
use tidings_store::{BudgetKind, GeneratedSummary, Store, StoreError, SummaryJob as QueuedItem};
use tokio::sync::{Notify, Semaphore};

pub use breaker::{Breaker, BreakerConfig, BreakerState};
pub use provider::{ProviderError, ProviderKind, RemoteProvider, RemoteSettings};
pub use tidings_summary::{DEFAULT_TARGET_CHARS, MAX_TARGET_CHARS, MIN_TARGET_CHARS};

use crate::enrich::EnrichmentJob;

/// Items summarized at once per process, by default.
pub const DEFAULT_PARALLELISM: usize = 2;
/// Requests to a remote provider per UTC day, by default, across all processes.
pub const DEFAULT_DAILY_BUDGET: i64 = 1000;
/// Requests to a remote provider per UTC day for one user's items, by default: a tenth of the
/// installation's, so that no one user spends the budget everyone shares.
pub const DEFAULT_USER_DAILY_BUDGET: i64 = 100;
/// How long one request to a remote provider may take, by default.
pub const DEFAULT_TIMEOUT: Duration = Duration::from_secs(60);
/// How long the reader's "Summarize" waits for a remote provider before answering that the
/// summary is queued.
pub const DEFAULT_REQUEST_WAIT: Duration = Duration::from_secs(20);

/// Retries of a remote provider's requests.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct RetryPolicy {
    /// Requests per attempt at most (the first and its retries).
    pub tries: u32,
    /// The wait before the first retry; it doubles for each further one, ±25 % jitter.
    pub first_backoff: Duration,
    /// The longest wait between two requests of an attempt; a `Retry-After` asking for more
    /// ends the attempt and the item waits in the queue instead.
    pub max_backoff: Duration,
    /// The wait in the queue after a failed attempt; it doubles for each further attempt.
    pub requeue_after: Duration,
    /// Attempts per item before it is given up.
    pub max_attempts: i64,
}

impl Default for RetryPolicy {
    /// The catchup-feed seed's retries (1 s, 2 s, 4 s… up to 10 s, ±25 %), then 5 minutes
    /// doubling in the queue, 5 attempts.
    fn default() -> RetryPolicy {
        RetryPolicy {
            tries: 3,
            first_backoff: Duration::from_secs(1),
            max_backoff: Duration::from_secs(10),
            requeue_after: Duration::from_secs(5 * 60),
            max_attempts: 5,
        }
    }
}

impl RetryPolicy {
    /// The wait before retry `retry` (1 for the first) of an attempt, with ±25 % jitter.
    pub fn backoff(&self, retry: u32) -> Duration {
        let base = self
            .first_backoff
            .saturating_mul(1u32 << retry.saturating_sub(1).min(16))
            .min(self.max_backoff);
        let jitter: f64 = rand::random_range(0.75..=1.25);
        base.mul_f64(jitter).min(self.max_backoff)
    }

    /// The wait in the queue after failed attempt `attempts` (1 for the first).
    pub fn requeue(&self, attempts: i64) -> Duration {
        self.requeue_after
            .saturating_mul(1u32 << (attempts.clamp(1, 12) - 1))
    }
}

/// The summary settings.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct SummaryConfig {
    /// The provider; the built-in one by default.
    pub provider: ProviderKind,
    /// A remote provider's endpoint, model, key and time-out (`None` for `local`).
    pub remote: Option<RemoteSettings>,
    /// The summary's length, in characters (100–5,000).
    pub target_chars: usize,
    /// Items summarized at once in this process; 0 turns the summary worker off here (and
    /// nothing is queued by this process's fetches; "Summarize" still works).
    pub parallelism: usize,
    /// Requests to a remote provider per UTC day across all processes (0: no limit).
    pub daily_budget: i64,
    /// Requests to a remote provider per UTC day for one user's items (0: no limit): the user
    /// who pressed "Summarize", or the subscriber who pays for a queued item
    /// ([`tidings_store::Store::summary_payer`]).
    pub user_daily_budget: i64,
    /// Retries.
    pub retry: RetryPolicy,
    /// The breaker.
    pub breaker: BreakerConfig,
    /// How long "Summarize" waits before answering that the summary is queued.
    pub request_wait: Duration,
}

impl Default for SummaryConfig {
    fn default() -> SummaryConfig {
        SummaryConfig {
            provider: ProviderKind::Local,
            remote: None,
            target_chars: tidings_summary::DEFAULT_TARGET_CHARS,
            parallelism: DEFAULT_PARALLELISM,
            daily_budget: DEFAULT_DAILY_BUDGET,
            user_daily_budget: DEFAULT_USER_DAILY_BUDGET,
            retry: RetryPolicy::default(),
            breaker: BreakerConfig::default(),
            request_wait: DEFAULT_REQUEST_WAIT,
        }
    }
}

/// Whether a text of `text_chars` characters is worth summarizing in `target_chars`: only a
/// text longer than a summary may have one, or its "summary" would be the text itself. The one
/// rule for the summarizer, its queue and the item's `summarizable` in the API.
pub fn worth_summarizing(text_chars: usize, target_chars: usize) -> bool {
    text_chars > target_chars
}

/// Characters of the text a summary of `html` is made from (tags removed, entities decoded,
/// whitespace collapsed), as the summarizer counts them.
pub fn source_chars(html: Option<&str>) -> usize {
    html.map_or(0, tidings_extract::text_chars)
}

/// What became of one attempt at an item's summary.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Attempt {
    /// Stored (or already there).
    Stored(GeneratedSummary),
    /// Not now: back in the queue, due later, with why.
    Later(String),
    /// Given up: the item has no text, or the provider refused it; off the queue.
    GaveUp(String),
    /// Not summarized, off the queue: the text has this many characters, no more than a
    /// summary.
    TooShort(usize),
    /// The item no longer exists.
    Gone,
}

/// The reader's "Summarize", answered.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Requested {
    /// The summary is there.
    Done(GeneratedSummary),
    /// It is queued (the provider is slow, failing for now, its breaker open or its budget
    /// spent, or another worker is on it); the item carries it once stored.
    Queued(Option<String>),
    /// It cannot be made: the item has no text, or the provider refused it.
    Failed(String),
    /// The item's text has this many characters, no more than a summary's: it is its own
    /// summary.
    TooShort(usize),
}

/// The summary service of a process: the provider, its breaker, the parallelism, and the
/// store. Shared by the worker's [`SummaryJob`] and the API's "Summarize".
#[derive(Debug)]
pub struct Summarizer {
    store: Store,
    config: SummaryConfig,
    remote: Option<RemoteProvider>,
    breaker: Breaker,
    slots: Semaphore,
    owner: String,
    lease_seconds: i64,
    wakeup: Arc<Notify>,
}

impl Summarizer {
    /// The service on `store` with `config`, leasing items as `owner` for `lease`.
    pub fn new(store: Store, config: SummaryConfig, owner: String, lease: Duration) -> Summarizer {
        let remote = config
            .remote
            .clone()
            .filter(|_| config.provider.is_remote())
            .map(RemoteProvider::new);
        // Requests bounded per process: the worker's pool and "Summarize" share it.
        let slots = Semaphore::new(config.parallelism.max(1));
        // A lease outlives an attempt: every try with its time-out and back-off.
        let attempt = config.remote.as_ref().map_or(Duration::ZERO, |r| {
            (r.timeout + config.retry.max_backoff).saturating_mul(config.retry.tries.max(1))
        });
        Summarizer {
            breaker: Breaker::new(config.breaker),
            store,
            remote,
            slots,
            owner,
            lease_seconds: lease.max(attempt + Duration::from_secs(30)).as_secs() as i64,
            wakeup: Arc::default(),
            config,
        }
    }

    /// The settings.
    pub fn config(&self) -> &SummaryConfig {
        &self.config
    }

    /// The provider's name as summaries record it.
    pub fn provider_name(&self) -> &'static str {
        self.config.provider.as_str()
    }

    /// The breaker's state (always closed for the local provider).
    pub fn breaker_state(&self) -> BreakerState {
        self.breaker.state()
    }

    /// The store.
    pub fn store(&self) -> &Store {
        &self.store
    }

    /// Whether fetches queue their new items for summaries (see
    /// [`tidings_store::FetchWrites::summaries`]): not when this process runs no summary worker.
    pub fn queues_new_items(&self) -> bool {
        self.config.parallelism > 0
    }

    /// Wakes the summary worker: a fetch queued items.
    pub fn wake(&self) {
        self.wakeup.notify_one();
    }

    /// The reader's "Summarize": the stored summary if there is one; else the item is queued
    /// and claimed at once, and its attempt runs (on its own task, so that a request that
    /// stops waiting does not stop it) for up to [`SummaryConfig::request_wait`].
    /// The item's cost counts against the budget of the subscriber who pays for queued items;
    /// [`Summarizer::request_by`] charges the user who asked.
    pub async fn request(self: &Arc<Self>, item_id: i64) -> Result<Requested, StoreError> {
        self.request_as(item_id, None).await
    }

    /// [`Summarizer::request`] by `user_id`, whose daily budget the request counts against.
    pub async fn request_by(
        self: &Arc<Self>,
        item_id: i64,
        user_id: i64,
    ) -> Result<Requested, StoreError> {
        self.request_as(item_id, Some(user_id)).await
    }

    async fn request_as(
        self: &Arc<Self>,
        item_id: i64,
        payer: Option<i64>,
    ) -> Result<Requested, StoreError> {
        if let Some(summary) = self.store.generated_summary(item_id).await? {
            return Ok(Requested::Done(summary));
        }
        let now = Utc::now().timestamp();
        self.store.queue_summaries(&[item_id], now, now).await?;
        let Some(job) = self
            .store
            .claim_summary_item(item_id, &self.owner, now, self.lease_seconds)
            .await?
        else {
            // Another worker has it, or it was stored meanwhile.
            return Ok(match self.store.generated_summary(item_id).await? {
                Some(summary) => Requested::Done(summary),
                None => Requested::Queued(None),
            });
        };
        let summarizer = Arc::clone(self);
        let attempt = tokio::spawn(async move { summarizer.attempt_for(job, payer).await });
        match tokio::time::timeout(self.config.request_wait, attempt).await {
            Ok(Ok(Attempt::Stored(summary))) => Ok(Requested::Done(summary)),
            Ok(Ok(Attempt::Later(why))) => Ok(Requested::Queued(Some(why))),
            Ok(Ok(Attempt::GaveUp(why))) => Ok(Requested::Failed(why)),
            Ok(Ok(Attempt::TooShort(chars))) => Ok(Requested::TooShort(chars)),
            Ok(Ok(Attempt::Gone)) => Err(StoreError::NotFound("item")),
            // The attempt panicked: its lease expires and the worker tries again.
            Ok(Err(error)) => Ok(Requested::Queued(Some(error.to_string()))),
            Err(_) => Ok(Requested::Queued(None)),
        }
    }

    /// One attempt at a claimed item: summarize, store (or put back, or give up).
    pub async fn attempt(&self, job: QueuedItem) -> Attempt {
        self.attempt_for(job, None).await
    }

    /// [`Summarizer::attempt`] charged to `payer` (else to the item's paying subscriber).
    async fn attempt_for(&self, job: QueuedItem, payer: Option<i64>) -> Attempt {
        let outcome = self.try_item(&job, payer).await;
        let recorded = self.record(&job, outcome).await;
        match recorded {
            Ok(attempt) => attempt,
            Err(error) => {
                tracing::warn!(item = job.item_id, %error, "storing a summary outcome failed");
                Attempt::Later(error.to_string())
            }
        }
    }

    /// The text and the provider's answer for one claimed item.
    async fn try_item(&self, job: &QueuedItem, payer: Option<i64>) -> Outcome {
        let text = job
            .html
            .as_deref()
            .and_then(html_to_text)
            .filter(|t| !t.trim().is_empty());
        let Some(text) = text else {
            return Outcome::GiveUp("the item has no text to summarize".into());
        };
        let target = self.config.target_chars;
        // Checked before the provider, its breaker and its budget: a short item costs nothing.
        let chars = text.chars().count();
        if !worth_summarizing(chars, target) {
            return Outcome::TooShort(chars);
        }
        let Some(remote) = &self.remote else {
            let _slot = self.slots.acquire().await;
            let summary =
                tokio::task::spawn_blocking(move || tidings_summary::summarize(&text, target).text)
                    .await;
            return match summary {
                Ok(summary) if !summary.is_empty() => Outcome::Summary(summary, None, chars),
                Ok(_) => Outcome::GiveUp("the item has no sentences to summarize".into()),
                Err(error) => Outcome::Later(format!("the summarizer failed: {error}"), None),
            };
        };
        let input = provider::input_text(job.title.as_deref(), &text);
        let _slot = self.slots.acquire().await;
        let retry = self.config.retry;
        let mut last: Option<ProviderError> = None;
        for try_number in 1..=retry.tries.max(1) {
            if let Some(error) = &last {
                let wait = error
                    .retry_after()
                    .unwrap_or_else(|| retry.backoff(try_number - 1));
                if wait > retry.max_backoff {
                    // A long Retry-After: wait in the queue, not holding a slot.
                    return Outcome::Later(error.to_string(), Some(wait));
                }
                tokio::time::sleep(wait).await;
            }
            let permit = match self.breaker.try_acquire() {
                Ok(permit) => permit,
                Err(wait) => {
                    return Outcome::Defer(
                        format!(
                            "the {} provider's circuit breaker is open after repeated failures",
                            self.provider_name()
                        ),
                        wait,
                    );
                }
            };
            match self.take_budget(job.item_id, payer).await {
                Ok(None) => {}
                Ok(Some(spent)) => {
                    self.breaker.cancel(permit);
                    return Outcome::Defer(spent, until_next_day());
                }
                Err(error) => {
                    self.breaker.cancel(permit);
                    return Outcome::Later(error.to_string(), None);
                }
            }
            let answer = remote.summarize(&input, target).await;
            self.breaker.record(permit, answer.is_ok());
            match answer {
                Ok(summary) => {
                    // A provider that overshoots the length is cut to it, at sentences.
                    let summary = if summary.chars().count() > target {
                        tidings_summary::summarize(&summary, target).text
                    } else {
                        summary
                    };
                    return Outcome::Summary(summary, Some(remote.settings().model.clone()), chars);
                }
                Err(error) if error.is_temporary() => {
                    tracing::debug!(item = job.item_id, %error, try_number, "summary request failed");
                    last = Some(error);
                }
                Err(error) => return Outcome::GiveUp(error.to_string()),
            }
        }
        let error = last.map(|e| e.to_string()).unwrap_or_default();
        Outcome::Later(error, None)
    }

    /// Counts a request for `item_id` against the paying user's budget for the day (`payer`,
    /// else the item's paying subscriber), then the installation's; `None` when it may be
    /// made, else which budget is spent. The user's comes first, so that a user past theirs
    /// never spends the installation's.
    async fn take_budget(
        &self,
        item_id: i64,
        payer: Option<i64>,
    ) -> Result<Option<String>, StoreError> {
        let day = Utc::now().timestamp().div_euclid(86_400);
        let per_user = self.config.user_daily_budget;
        if per_user > 0 {
            let payer = match payer {
                Some(user) => Some(user),
                None => self.store.summary_payer(item_id).await?,
            };
            if let Some(user) = payer
                && !self
                    .store
                    .take_user_requests(day, user, BudgetKind::Summary, 1, per_user)
                    .await?
            {
                return Ok(Some(format!(
                    "the daily budget of {per_user} requests per user to the {} provider is \
                     spent",
                    self.provider_name()
                )));
            }
        }
        let budget = if self.config.daily_budget <= 0 {
            i64::MAX
        } else {
            self.config.daily_budget
        };
        let taken = self
            .store
            .take_summary_request(day, self.provider_name(), budget)
            .await?;
        Ok((!taken).then(|| {
            format!(
                "the daily budget of {} requests to the {} provider is spent",
                self.config.daily_budget,
                self.provider_name()
            )
        }))
    }

    /// Stores an outcome: the summary, the item back in the queue, or off it.
    async fn record(&self, job: &QueuedItem, outcome: Outcome) -> Result<Attempt, StoreError> {
        let now = Utc::now().timestamp();
        let store = &self.store;
        Ok(match outcome {
            Outcome::Summary(text, model, source_chars) => {
                match store
                    .save_summary(
                        job.item_id,
                        &text,
                        self.provider_name(),
                        model.as_deref(),
                        source_chars as i64,
                        now,
                    )
                    .await?
                {
                    Some(summary) => {
                        tracing::debug!(
                            item = job.item_id,
                            provider = self.provider_name(),
                            "summarized"
                        );
                        Attempt::Stored(summary)
                    }
                    None => Attempt::Gone,
                }
            }
            Outcome::Later(why, wait) if job.attempts < self.config.retry.max_attempts => {
                let wait = wait
                    .unwrap_or_default()
                    .max(self.config.retry.requeue(job.attempts));
                store
                    .retry_summary(job.item_id, now + wait.as_secs().max(1) as i64, &why)
                    .await?;
                Attempt::Later(why)
            }
            Outcome::TooShort(chars) => {
                tracing::debug!(item = job.item_id, chars, "too short to summarize");
                store.drop_summary_job(job.item_id).await?;
                Attempt::TooShort(chars)
            }
            Outcome::Later(why, _) | Outcome::GiveUp(why) => {
                tracing::info!(item = job.item_id, reason = %why, "summary given up");
                store.drop_summary_job(job.item_id).await?;
                Attempt::GaveUp(why)
            }
            Outcome::Defer(why, wait) => {
                store
                    .release_summary_job(
                        job.item_id,
                        &self.owner,
                        now + wait.as_secs().max(1) as i64,
                    )
                    .await?;
                Attempt::Later(why)
            }
        })
    }
}

/// What one attempt came to, before it is stored.
enum Outcome {
    /// A summary, with the model that wrote it and the characters of the text it was made
    /// from.
    Summary(String, Option<String>, usize),
    /// The text has this many characters, no more than a summary: nothing to do.
    TooShort(usize),
    /// A failure that may pass: try again later (at least after the wait given).
    Later(String, Option<Duration>),
    /// Not tried (breaker open, budget spent): back in the queue after the wait, the attempt
    /// not counted.
    Defer(String, Duration),
    /// A failure that will not pass.
    GiveUp(String),
}

/// The time until the next UTC day, when the daily budgets start again.
pub(crate) fn until_next_day() -> Duration {
    let now = Utc::now().timestamp();
    let next = (now.div_euclid(86_400) + 1) * 86_400;
    Duration::from_secs((next - now).max(1) as u64)
}

/// The summary queue as an [`EnrichmentJob`] of a worker.
#[derive(Debug, Clone)]
pub struct SummaryJob {
    summarizer: Arc<Summarizer>,
}

impl SummaryJob {
    /// The job of a process's summary service.
    pub fn new(summarizer: Arc<Summarizer>) -> SummaryJob {
        SummaryJob { summarizer }
    }
}

impl EnrichmentJob for SummaryJob {
    type Task = QueuedItem;

    fn name(&self) -> &'static str {
        "summaries"
    }

    async fn claim(&self, limit: usize) -> Result<Vec<QueuedItem>, StoreError> {
        let summarizer = &self.summarizer;
        summarizer
            .store
            .claim_summary_jobs(
                &summarizer.owner,
                Utc::now().timestamp(),
                limit as i64,
                summarizer.lease_seconds,
            )
            .await
    }

    async fn run(&self, task: QueuedItem) {
        self.summarizer.attempt(task).await;
    }

    fn wakeup(&self) -> Option<Arc<Notify>> {
        Some(Arc::clone(&self.summarizer.wakeup))
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn backoff_doubles_with_jitter_within_the_cap() {
        let policy = RetryPolicy::default();
        for _ in 0..50 {
            let first = policy.backoff(1);
            assert!(first >= Duration::from_millis(750) && first <= Duration::from_millis(1250));
            let third = policy.backoff(3);
            assert!(third >= Duration::from_secs(3) && third <= Duration::from_secs(5));
            assert!(policy.backoff(10) <= policy.max_backoff);
        }
        assert_eq!(policy.requeue(1), Duration::from_secs(300));
        assert_eq!(policy.requeue(3), Duration::from_secs(1200));
    }

    #[test]
    fn the_budget_starts_again_at_midnight_utc() {
        let wait = until_next_day();
        assert!(wait > Duration::ZERO && wait <= Duration::from_secs(86_400));
    }
}
