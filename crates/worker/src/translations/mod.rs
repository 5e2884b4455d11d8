//! Translations (issue 37): an item's title and text in the reader's language, by the
//! provider the operator chose ([`provider`]), made once per item and language and kept.
//!
//! - The reader's "Translate" goes through [`Translator::translate`]: the stored translation
//!   if there is one, else one attempt now (on its own task, so that a request that stops
//!   waiting does not stop it), charged to the user who asked.
//! - Subscriptions marked "always translate" have their new items queued (`translation_jobs`,
//!   filled by the job itself from the items fetched since it last looked) and translated by
//!   [`TranslationJob`], an [`EnrichmentJob`] beside the fetcher, charged to the subscriber.
//! - Every request passes the provider's circuit breaker and two daily budgets counted in the
//!   store (the user's first, then the installation's). A request that fails for now
//!   (time-out, connection, 429, 5xx) is tried again after a back-off with jitter (or the
//!   429's `Retry-After`), up to `tries` requests per attempt; a queued item then waits and is
//!   tried again, up to `max_attempts` attempts. A refusal (another 4xx) is final.
//! - What the provider answers is untrusted: the HTML is sanitized again with the feeds'
//!   sanitizer, the title read as plain text, before anything is stored or shown.

pub mod provider;
mod summaries;

use std::sync::Arc;
use std::time::Duration;

use chrono::Utc;
use tidings_feed::Sanitizer;
use tidings_store::{BudgetKind, ItemTranslation, Store, StoreError, TranslationJob as Queued};
use tokio::sync::{Notify, Semaphore};

pub use provider::{
    TranslateProviderKind, TranslateSettings, Translated, TranslationProvider, TranslationRequest,
};

use crate::enrich::EnrichmentJob;
use crate::summaries::{
    Breaker, BreakerConfig, BreakerState, ProviderError, RetryPolicy, until_next_day,
};

/// Requests to the provider per UTC day, by default, across all processes.
pub const DEFAULT_DAILY_BUDGET: i64 = 1000;
/// Requests per UTC day for one user's items, by default.
pub const DEFAULT_USER_DAILY_BUDGET: i64 = 100;
/// Items translated at once per process in the background, by default.
pub const DEFAULT_PARALLELISM: usize = 2;
/// How long one request may take, by default.
pub const DEFAULT_TIMEOUT: Duration = Duration::from_secs(60);
/// How long the reader's "Translate" waits before answering that the translation is on its
/// way.
pub const DEFAULT_REQUEST_WAIT: Duration = Duration::from_secs(30);
/// How far back the background job looks for new items of the subscriptions that translate
/// theirs.
pub const NEW_ITEMS_WINDOW: Duration = Duration::from_secs(2 * 24 * 3600);

/// The translation settings.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct TranslateConfig {
    /// The provider and how to reach it; `None` when translation is off.
    pub settings: Option<TranslateSettings>,
    /// Requests per UTC day across all processes (0: no limit).
    pub daily_budget: i64,
    /// Requests per UTC day for one user's items (0: no limit).
    pub user_daily_budget: i64,
    /// Items translated at once in the background by this process (0: none here).
    pub parallelism: usize,
    /// Retries.
    pub retry: RetryPolicy,
    /// The breaker.
    pub breaker: BreakerConfig,
    /// How long "Translate" waits.
    pub request_wait: Duration,
}

impl Default for TranslateConfig {
    fn default() -> TranslateConfig {
        TranslateConfig {
            settings: None,
            daily_budget: DEFAULT_DAILY_BUDGET,
            user_daily_budget: DEFAULT_USER_DAILY_BUDGET,
            parallelism: DEFAULT_PARALLELISM,
            retry: RetryPolicy::default(),
            breaker: BreakerConfig::default(),
            request_wait: DEFAULT_REQUEST_WAIT,
        }
    }
}

/// Why an item has no translation now.
#[derive(Debug, thiserror::Error)]
pub enum TranslateError {
    /// No provider is configured.
    #[error(
        "translation is off: an administrator sets TIDINGS_TRANSLATE_PROVIDER (libretranslate, \
         deepl, openai or anthropic) to turn it on"
    )]
    Off,
    /// The item has neither title nor text.
    #[error("the item has no title or text to translate")]
    Empty,
    /// A daily budget is spent.
    #[error("{0}")]
    BudgetSpent(String),
    /// The provider's breaker is open, or it kept failing for now; try again after the wait,
    /// when known.
    #[error("{0}")]
    Unavailable(String, Option<Duration>),
    /// The provider refused the item, or answered with something unusable.
    #[error("{0}")]
    Failed(String),
    /// The attempt goes on; the translation is stored once made.
    #[error("the translation provider is slow; the translation is stored once it answers")]
    Pending,
    /// The item no longer exists.
    #[error("the item no longer exists")]
    Gone,
    /// The database failed.
    #[error(transparent)]
    Store(#[from] StoreError),
}

/// What one attempt came to.
enum Outcome {
    Stored(Box<ItemTranslation>),
    /// Not tried: breaker open or a budget spent; back in the queue after the wait.
    Defer(TranslateError, Duration),
    /// Failed for now after every try.
    Later(TranslateError, Option<Duration>),
    /// Failed for good.
    GiveUp(TranslateError),
}

/// The translation service of a process: the provider, its breaker, the store and the
/// sanitizer. Shared by the worker's [`TranslationJob`] and the API's "Translate".
#[derive(Debug)]
pub struct Translator {
    store: Store,
    config: TranslateConfig,
    provider: Option<Box<dyn TranslationProvider>>,
    breaker: Breaker,
    sanitizer: Arc<Sanitizer>,
    slots: Semaphore,
    owner: String,
    lease_seconds: i64,
    wakeup: Arc<Notify>,
}

impl Translator {
    /// The service on `store` with `config`, sanitizing answers with `sanitizer`, leasing
    /// queued items as `owner` for `lease`.
    pub fn new(
        store: Store,
        config: TranslateConfig,
        sanitizer: Arc<Sanitizer>,
        owner: String,
        lease: Duration,
    ) -> Translator {
        let provider = config.settings.as_ref().and_then(provider::provider);
        let attempt = config.settings.as_ref().map_or(Duration::ZERO, |s| {
            (s.timeout + config.retry.max_backoff).saturating_mul(config.retry.tries.max(1))
        });
        Translator {
            breaker: Breaker::new(config.breaker),
            slots: Semaphore::new(config.parallelism.max(1)),
            lease_seconds: lease.max(attempt + Duration::from_secs(30)).as_secs() as i64,
            wakeup: Arc::default(),
            store,
            provider,
            sanitizer,
            owner,
            config,
        }
    }

    /// The settings.
    pub fn config(&self) -> &TranslateConfig {
        &self.config
    }

    /// Whether a provider is configured.
    pub fn is_on(&self) -> bool {
        self.provider.is_some()
    }

    /// The provider's name (`off` when none).
    pub fn provider_name(&self) -> &'static str {
        self.provider.as_ref().map_or("off", |p| p.name())
    }

    /// The breaker's state.
    pub fn breaker_state(&self) -> BreakerState {
        self.breaker.state()
    }

    /// Wakes the background job.
    pub fn wake(&self) {
        self.wakeup.notify_one();
    }

    /// The reader's "Translate": `item_id` into `target` (a BCP 47 tag), charged to
    /// `user_id`. The stored translation when there is one made from the item's current
    /// text; else one attempt, waited for up
    /// to [`TranslateConfig::request_wait`] (it goes on afterwards, and stores its result).
    pub async fn translate(
        self: &Arc<Self>,
        item_id: i64,
        target: &str,
        user_id: i64,
    ) -> Result<ItemTranslation, TranslateError> {
        // A stale one (made before the feed changed the item's text) is made again.
        if let Some(found) = self.store.item_translation(item_id, target).await?
            && !found.stale
        {
            return Ok(found);
        }
        if self.provider.is_none() {
            return Err(TranslateError::Off);
        }
        let translator = Arc::clone(self);
        let target = target.to_owned();
        let attempt =
            tokio::spawn(async move { translator.attempt(item_id, &target, Some(user_id)).await });
        match tokio::time::timeout(self.config.request_wait, attempt).await {
            Ok(Ok(Outcome::Stored(translation))) => Ok(*translation),
            Ok(Ok(
                Outcome::Defer(error, _) | Outcome::Later(error, _) | Outcome::GiveUp(error),
            )) => Err(error),
            Ok(Err(error)) => Err(TranslateError::Failed(format!(
                "the translation attempt failed: {error}"
            ))),
            Err(_) => Err(TranslateError::Pending),
        }
    }

    /// One attempt at `item_id` into `target`, charged to `payer` (else to the item's paying
    /// subscriber): translate, sanitize, store.
    async fn attempt(&self, item_id: i64, target: &str, payer: Option<i64>) -> Outcome {
        let Some(provider) = &self.provider else {
            return Outcome::GiveUp(TranslateError::Off);
        };
        // Made meanwhile (by "Translate", or by another worker): nothing to ask.
        match self.store.item_translation(item_id, target).await {
            Ok(Some(found)) if !found.stale => return Outcome::Stored(Box::new(found)),
            Ok(_) => {}
            Err(error) => return Outcome::Later(error.into(), None),
        }
        let source = match self.store.translation_source(item_id).await {
            Ok(Some(source)) => source,
            Ok(None) => return Outcome::GiveUp(TranslateError::Gone),
            Err(error) => return Outcome::Later(error.into(), None),
        };
        let base = source.url.as_deref().and_then(|u| url::Url::parse(u).ok());
        let html = source
            .html
            .as_deref()
            .map(|html| self.bounded(html, base.as_ref()));
        let request = TranslationRequest {
            title: source.title.clone().filter(|t| !t.trim().is_empty()),
            html: html.filter(|h| !h.trim().is_empty()),
            source: source.language.clone(),
            target: target.to_owned(),
        };
        if request.title.is_none() && request.html.is_none() {
            return Outcome::GiveUp(TranslateError::Empty);
        }
        let _slot = self.slots.acquire().await;
        let answer = match self.ask(provider.as_ref(), &request, item_id, payer).await {
            Ok(answer) => answer,
            Err(outcome) => return outcome,
        };
        // The provider's answer is untrusted: sanitized like a feed's, the title read as text.
        let sanitizer = Arc::clone(&self.sanitizer);
        let cleaned = tokio::task::spawn_blocking(move || {
            let content = answer.html.map(|h| sanitizer.clean(&h, base.as_ref()));
            let title = answer
                .title
                .as_deref()
                .and_then(tidings_feed::text::html_to_text);
            (title, content, answer.detected)
        })
        .await;
        let Ok((title, content, detected)) = cleaned else {
            return Outcome::Later(
                TranslateError::Failed("sanitizing the translation failed".into()),
                None,
            );
        };
        let translation = ItemTranslation {
            item_id,
            language: target.to_owned(),
            title,
            content,
            source_language: detected.or(source.language),
            provider: provider.name().to_owned(),
            model: provider.model().map(str::to_owned),
            created_at: Utc::now().timestamp(),
            stale: false,
        };
        match self.store.save_translation(&translation).await {
            Ok(true) => Outcome::Stored(Box::new(translation)),
            Ok(false) => Outcome::GiveUp(TranslateError::Gone),
            Err(error) => Outcome::Later(error.into(), None),
        }
    }

    /// The text as sent: at most [`provider::MAX_INPUT_CHARS`], a longer one cut and
    /// sanitized again so that its tags close.
    fn bounded(&self, html: &str, base: Option<&url::Url>) -> String {
        if html.chars().count() <= provider::MAX_INPUT_CHARS {
            return html.to_owned();
        }
        let cut: String = html.chars().take(provider::MAX_INPUT_CHARS).collect();
        // A tag cut in half is dropped whole.
        let cut = match (cut.rfind('<'), cut.rfind('>')) {
            (Some(open), Some(close)) if open > close => cut[..open].to_owned(),
            (Some(open), None) => cut[..open].to_owned(),
            _ => cut,
        };
        self.sanitizer.clean(&cut, base)
    }

    /// Asks the provider, with the breaker, the budgets and the retries.
    async fn ask(
        &self,
        provider: &dyn TranslationProvider,
        request: &TranslationRequest,
        item_id: i64,
        payer: Option<i64>,
    ) -> Result<Translated, Outcome> {
        let retry = self.config.retry;
        let mut last: Option<ProviderError> = None;
        for try_number in 1..=retry.tries.max(1) {
            if let Some(error) = &last {
                let wait = error
                    .retry_after()
                    .unwrap_or_else(|| retry.backoff(try_number - 1));
                if wait > retry.max_backoff {
                    return Err(Outcome::Later(
                        self.unavailable(error, Some(wait)),
                        Some(wait),
                    ));
                }
                tokio::time::sleep(wait).await;
            }
            let permit = match self.breaker.try_acquire() {
                Ok(permit) => permit,
                Err(wait) => {
                    let why = format!(
                        "the {} translation provider's circuit breaker is open after repeated \
                         failures; try again in {} s",
                        provider.name(),
                        wait.as_secs().max(1)
                    );
                    return Err(Outcome::Defer(
                        TranslateError::Unavailable(why, Some(wait)),
                        wait,
                    ));
                }
            };
            match self.take_budget(item_id, &request.target, payer).await {
                Ok(None) => {}
                Ok(Some(spent)) => {
                    self.breaker.cancel(permit);
                    return Err(Outcome::Defer(
                        TranslateError::BudgetSpent(spent),
                        until_next_day(),
                    ));
                }
                Err(error) => {
                    self.breaker.cancel(permit);
                    return Err(Outcome::Later(error.into(), None));
                }
            }
            let answer = provider.translate(request).await;
            self.breaker.record(permit, answer.is_ok());
            match answer {
                Ok(answer) => return Ok(answer),
                Err(error) if error.is_temporary() => {
                    tracing::debug!(item = item_id, %error, try_number, "translation request failed");
                    last = Some(error);
                }
                Err(error) => {
                    return Err(Outcome::GiveUp(TranslateError::Failed(format!(
                        "the {} translation provider {}",
                        provider.name(),
                        describe(&error)
                    ))));
                }
            }
        }
        let error = last.unwrap_or(ProviderError::BadAnswer("no request was made".into()));
        Err(Outcome::Later(self.unavailable(&error, None), None))
    }

    fn unavailable(&self, error: &ProviderError, wait: Option<Duration>) -> TranslateError {
        TranslateError::Unavailable(
            format!(
                "the {} translation provider {}",
                self.provider_name(),
                describe(error)
            ),
            wait.or(error.retry_after()),
        )
    }

    /// Counts a request against the paying user's budget for the day, then the
    /// installation's; `None` when it may be made, else which budget is spent.
    async fn take_budget(
        &self,
        item_id: i64,
        target: &str,
        payer: Option<i64>,
    ) -> Result<Option<String>, StoreError> {
        let day = Utc::now().timestamp().div_euclid(86_400);
        let per_user = self.config.user_daily_budget;
        if per_user > 0 {
            let payer = match payer {
                Some(user) => Some(user),
                None => self.store.translation_payer(item_id, target).await?,
            };
            if let Some(user) = payer
                && !self
                    .store
                    .take_user_requests(day, user, BudgetKind::Translation, 1, per_user)
                    .await?
            {
                return Ok(Some(format!(
                    "your daily budget of {per_user} translation requests is spent; it starts \
                     again at midnight UTC"
                )));
            }
        }
        let taken = self
            .store
            .take_translation_request(day, self.provider_name(), self.config.daily_budget)
            .await?;
        Ok((!taken).then(|| {
            format!(
                "this server's daily budget of {} translation requests is spent; it starts \
                 again at midnight UTC",
                self.config.daily_budget
            )
        }))
    }

    /// One attempt at a queued item, and its outcome recorded in the queue.
    pub async fn run_queued(&self, job: Queued) {
        let outcome = self.attempt(job.item_id, &job.language, None).await;
        let now = Utc::now().timestamp();
        let recorded = match outcome {
            Outcome::Stored(_) => Ok(()),
            Outcome::Defer(why, wait) => {
                let due = now + wait.as_secs().max(1) as i64;
                self.store
                    .retry_translation(&job, due, &why.to_string(), false)
                    .await
            }
            Outcome::Later(why, wait) if job.attempts < self.config.retry.max_attempts => {
                let wait = wait
                    .unwrap_or_default()
                    .max(self.config.retry.requeue(job.attempts));
                let due = now + wait.as_secs().max(1) as i64;
                self.store
                    .retry_translation(&job, due, &why.to_string(), true)
                    .await
            }
            Outcome::Later(why, _) | Outcome::GiveUp(why) => {
                tracing::info!(item = job.item_id, language = %job.language, reason = %why,
                               "translation given up");
                self.store.give_up_translation(&job, &why.to_string()).await
            }
        };
        if let Err(error) = recorded {
            tracing::warn!(item = job.item_id, %error, "recording a translation outcome failed");
        }
    }
}

/// A provider's failure, worded for a translation ("the deepl translation provider …").
fn describe(error: &ProviderError) -> String {
    match error {
        ProviderError::Timeout(wait) => format!("did not answer within {} s", wait.as_secs()),
        ProviderError::Connect(why) => format!("could not be reached: {why}"),
        ProviderError::RateLimited { retry_after } => format!(
            "is rate limiting (HTTP 429{})",
            retry_after
                .map(|d| format!(", retry after {} s", d.as_secs()))
                .unwrap_or_default()
        ),
        ProviderError::Server { status, message } => format!("failed (HTTP {status}): {message}"),
        ProviderError::Refused { status, message } => {
            format!("refused the request (HTTP {status}): {message}")
        }
        ProviderError::BadAnswer(why) => format!("gave an answer that is not usable: {why}"),
    }
}

/// The background translations of subscriptions marked "always translate", as an
/// [`EnrichmentJob`] of a worker.
#[derive(Debug, Clone)]
pub struct TranslationJob {
    translator: Arc<Translator>,
}

impl TranslationJob {
    /// The job of a process's translation service.
    pub fn new(translator: Arc<Translator>) -> TranslationJob {
        TranslationJob { translator }
    }
}

impl EnrichmentJob for TranslationJob {
    type Task = Queued;

    fn name(&self) -> &'static str {
        "translations"
    }

    async fn claim(&self, limit: usize) -> Result<Vec<Queued>, StoreError> {
        let translator = &self.translator;
        let now = Utc::now().timestamp();
        // New items of the subscriptions that translate theirs join the queue first: one
        // statement over the recent items only.
        let since = now - NEW_ITEMS_WINDOW.as_secs() as i64;
        translator.store.queue_new_translations(since, now).await?;
        translator
            .store
            .claim_translation_jobs(
                &translator.owner,
                now,
                limit as i64,
                translator.lease_seconds,
            )
            .await
    }

    async fn run(&self, task: Queued) {
        self.translator.run_queued(task).await;
    }

    fn wakeup(&self) -> Option<Arc<Notify>> {
        Some(Arc::clone(&self.translator.wakeup))
    }
}
