//! Item vectors for related items (F44): made by the configured embedder, from the item's
//! title and text, and stored with their model.
//!
//! - [`OpenAiEmbeddings`] asks any OpenAI-compatible `POST {base}/embeddings` (OpenAI, a local
//!   Ollama or llama.cpp server) for a batch of texts per request; without a base URL the
//!   [`LocalEmbedder`] of `tidings-embed` makes them, no model and no key needed.
//! - [`EmbeddingJob`] works through the store's embedding queue as an [`EnrichmentJob`]: it
//!   claims a batch per request, makes the texts (HTML to text, [`item_text`]) and the codes on
//!   the blocking pool, and stores the batch in one transaction. A provider that fails, times
//!   out or answers 429 puts the batch back with an exponential back-off and jitter (at least
//!   its `Retry-After`), and pauses this process's claims for as long (a circuit breaker), so a
//!   failing provider is asked once per pause, not once per item; an item that failed
//!   [`MAX_EMBEDDING_ATTEMPTS`] times is dropped from the queue.

use std::sync::Arc;
use std::sync::atomic::{AtomicBool, AtomicI64, Ordering};
use std::time::Duration;

use chrono::Utc;
use serde::Deserialize;
use tidings_embed::{Code, EmbedError, Embedder, LocalEmbedder, item_text, quantize};
use tidings_feed::text::html_to_text;
use tidings_store::{BudgetKind, EmbeddingJob as QueuedItem, ItemVector, Store, StoreError};
use url::Url;

pub use crate::config::embedding::{
    DEFAULT_BATCH, DEFAULT_USER_DAILY_BUDGET, EmbeddingsConfig, EmbeddingsProvider,
};
use crate::enrich::EnrichmentJob;

pub use tidings_store::MAX_EMBEDDING_ATTEMPTS;

/// How long a provider may take to answer one request.
pub const REQUEST_TIMEOUT: Duration = Duration::from_secs(30);
/// The longest answer read from a provider: 64 texts × 3,072 dimensions as JSON numbers is
/// about 4 MB.
pub const MAX_RESPONSE_BYTES: usize = 32 * 1024 * 1024;
/// The first wait after a failure; it doubles with each attempt of the item.
pub const FIRST_BACKOFF: Duration = Duration::from_secs(30);
/// The longest wait after a failure.
pub const MAX_BACKOFF: Duration = Duration::from_secs(3600);

/// An OpenAI-compatible embeddings endpoint ([module docs](self)).
#[derive(Debug, Clone)]
pub struct OpenAiEmbeddings {
    endpoint: Url,
    /// The model asked for.
    requested: String,
    /// `openai:{model}`, the name the vectors are stored under.
    name: String,
    api_key: Option<String>,
    batch: usize,
    timeout: Duration,
    client: reqwest::Client,
}

#[derive(Deserialize)]
struct EmbeddingsAnswer {
    data: Vec<EmbeddingDatum>,
}

#[derive(Deserialize)]
struct EmbeddingDatum {
    embedding: Vec<f32>,
    #[serde(default)]
    index: Option<usize>,
}

impl OpenAiEmbeddings {
    /// The endpoint `{base_url}/embeddings` for `model`, `batch` texts per request. The
    /// operator chose the URL (a local server on 127.0.0.1 is fine), so it does not go
    /// through the feeds' address guard; redirects are not followed, so the key is only ever
    /// sent there.
    pub fn new(
        base_url: &Url,
        model: &str,
        api_key: Option<String>,
        batch: usize,
    ) -> Result<OpenAiEmbeddings, EmbedError> {
        OpenAiEmbeddings::with_timeout(base_url, model, api_key, batch, REQUEST_TIMEOUT)
    }

    /// Like [`OpenAiEmbeddings::new`], waiting at most `timeout` for an answer.
    pub fn with_timeout(
        base_url: &Url,
        model: &str,
        api_key: Option<String>,
        batch: usize,
        timeout: Duration,
    ) -> Result<OpenAiEmbeddings, EmbedError> {
        // Err only means a provider is already installed, which is what we want.
        let _ = rustls::crypto::ring::default_provider().install_default();
        let client = reqwest::Client::builder()
            .timeout(timeout)
            .redirect(reqwest::redirect::Policy::none())
            .user_agent(tidings_fetch::client::default_user_agent())
            .build()
            .map_err(|error| EmbedError::Unavailable(error.to_string()))?;
        let mut endpoint = base_url.clone();
        let path = format!("{}/embeddings", base_url.path().trim_end_matches('/'));
        endpoint.set_path(&path);
        Ok(OpenAiEmbeddings {
            endpoint,
            requested: model.to_string(),
            name: format!("openai:{model}"),
            api_key,
            batch: batch.clamp(1, 2048),
            timeout,
            client,
        })
    }

    /// Where requests go.
    pub fn endpoint(&self) -> &Url {
        &self.endpoint
    }

    async fn request(&self, texts: &[String]) -> Result<Vec<Vec<f32>>, EmbedError> {
        let body = serde_json::json!({ "model": self.requested, "input": texts });
        let mut request = self.client.post(self.endpoint.clone()).json(&body);
        if let Some(key) = &self.api_key {
            request = request.bearer_auth(key);
        }
        let timeout = self.timeout;
        let unavailable = |error: reqwest::Error| unavailable(error, timeout);
        let response = request.send().await.map_err(unavailable)?;
        let status = response.status();
        if status.as_u16() == 429 {
            let retry_after = response
                .headers()
                .get(reqwest::header::RETRY_AFTER)
                .and_then(|value| value.to_str().ok())
                .and_then(|value| value.trim().parse::<u64>().ok())
                .map(Duration::from_secs);
            return Err(EmbedError::RateLimited { retry_after });
        }
        let bytes = read_limited(response, timeout).await?;
        if status.is_server_error() {
            return Err(EmbedError::Unavailable(format!("HTTP {status}")));
        }
        if !status.is_success() {
            return Err(EmbedError::Refused(format!(
                "HTTP {status}: {}",
                error_message(&bytes)
            )));
        }
        let answer: EmbeddingsAnswer = serde_json::from_slice(&bytes)
            .map_err(|error| EmbedError::Malformed(format!("not an embeddings answer: {error}")))?;
        if answer.data.len() != texts.len() {
            return Err(EmbedError::Malformed(format!(
                "{} embeddings for {} texts",
                answer.data.len(),
                texts.len()
            )));
        }
        let mut data = answer.data;
        // The data carry their input's index; order by it when every item has one.
        if data.iter().all(|d| d.index.is_some()) {
            data.sort_by_key(|d| d.index);
            if data.iter().enumerate().any(|(n, d)| d.index != Some(n)) {
                return Err(EmbedError::Malformed(
                    "indexes do not match the inputs".into(),
                ));
            }
        }
        let dims = data[0].embedding.len();
        if dims == 0 || data.iter().any(|d| d.embedding.len() != dims) {
            return Err(EmbedError::Malformed(
                "embeddings are empty or of different dimensions".into(),
            ));
        }
        Ok(data.into_iter().map(|d| d.embedding).collect())
    }
}

/// A transport error: the provider could not be reached or did not answer in time.
fn unavailable(error: reqwest::Error, timeout: Duration) -> EmbedError {
    if error.is_timeout() {
        EmbedError::Unavailable(format!("no answer within {:.1} s", timeout.as_secs_f64()))
    } else {
        EmbedError::Unavailable(error.to_string())
    }
}

/// The answer's body, at most [`MAX_RESPONSE_BYTES`].
async fn read_limited(
    mut response: reqwest::Response,
    timeout: Duration,
) -> Result<Vec<u8>, EmbedError> {
    let mut body = Vec::new();
    while let Some(chunk) = response
        .chunk()
        .await
        .map_err(|error| unavailable(error, timeout))?
    {
        if body.len() + chunk.len() > MAX_RESPONSE_BYTES {
            return Err(EmbedError::Malformed(format!(
                "the answer is larger than {MAX_RESPONSE_BYTES} bytes"
            )));
        }
        body.extend_from_slice(&chunk);
    }
    Ok(body)
}

/// The provider's own error message (`{"error": {"message": …}}`), else the start of the body.
fn error_message(body: &[u8]) -> String {
    let parsed: Option<serde_json::Value> = serde_json::from_slice(body).ok();
    let message = parsed
        .as_ref()
        .and_then(|v| v.pointer("/error/message").or_else(|| v.get("error")))
        .and_then(|v| v.as_str())
        .map(str::to_string)
        .unwrap_or_else(|| String::from_utf8_lossy(body).into_owned());
    message.chars().take(300).collect()
}

impl Embedder for OpenAiEmbeddings {
    fn model(&self) -> &str {
        &self.name
    }

    fn max_batch(&self) -> usize {
        self.batch
    }

    fn embed(
        &self,
        texts: &[String],
    ) -> impl std::future::Future<Output = Result<Vec<Vec<f32>>, EmbedError>> + Send {
        self.request(texts)
    }
}

/// The embedding queue as an [`EnrichmentJob`] of a worker, with embedder `E`.
#[derive(Debug)]
pub struct EmbeddingJob<E> {
    store: Store,
    embedder: Arc<E>,
    owner: String,
    lease_seconds: i64,
    /// Whether the store was told this embedder's model.
    model_set: AtomicBool,
    /// No claims before this Unix time: the provider failed (the circuit is open).
    paused_until: AtomicI64,
    /// Items embedded per UTC day for one user's feeds (0: no limit).
    user_daily_budget: i64,
}

impl<E: Embedder> EmbeddingJob<E> {
    /// A job storing into `store`, leasing as `owner` for `lease_seconds`.
    pub fn new(store: Store, embedder: E, owner: &str, lease_seconds: i64) -> EmbeddingJob<E> {
        EmbeddingJob {
            store,
            embedder: Arc::new(embedder),
            owner: owner.to_string(),
            lease_seconds,
            model_set: AtomicBool::new(false),
            paused_until: AtomicI64::new(0),
            user_daily_budget: 0,
        }
    }

    /// The job with a per-user daily budget of `items` (0: none), for a remote provider.
    pub fn with_user_daily_budget(mut self, items: i64) -> EmbeddingJob<E> {
        self.user_daily_budget = items;
        self
    }

    /// Takes up to `wanted` items from `user`'s budget for `day`; answers how many it took
    /// (all of them, else what is left of the budget, else none).
    async fn take_user_items(&self, day: i64, user: i64, wanted: i64) -> i64 {
        let budget = self.user_daily_budget;
        let take = |count: i64| {
            self.store
                .take_user_requests(day, user, BudgetKind::Embedding, count, budget)
        };
        if matches!(take(wanted).await, Ok(true)) {
            return wanted;
        }
        let used = self
            .store
            .user_requests_on(day, user, BudgetKind::Embedding)
            .await
            .unwrap_or(budget);
        let left = (budget - used).clamp(0, wanted);
        if left > 0 && matches!(take(left).await, Ok(true)) {
            left
        } else {
            0
        }
    }

    /// Charges the batch's items to their payers' budgets for the day
    /// ([`Store::embedding_payers`]); the items past a payer's budget wait until the next UTC
    /// day, without counting an attempt. Returns the items to embed.
    async fn charge_users(&self, batch: Vec<QueuedItem>) -> Vec<QueuedItem> {
        if self.user_daily_budget <= 0 {
            return batch;
        }
        let ids: Vec<i64> = batch.iter().map(|job| job.item_id).collect();
        let payers = match self.store.embedding_payers(&ids).await {
            Ok(payers) => payers,
            Err(error) => {
                tracing::warn!(%error, "finding who pays for embeddings failed; the items wait");
                return Vec::new();
            }
        };
        let mut per_user: std::collections::BTreeMap<i64, Vec<i64>> = Default::default();
        for job in &batch {
            if let Some(user) = payers.get(&job.item_id) {
                per_user.entry(*user).or_default().push(job.item_id);
            }
        }
        let now = Utc::now().timestamp();
        let day = now.div_euclid(86_400);
        let mut over = std::collections::HashSet::new();
        for (user, items) in per_user {
            let allowed = self.take_user_items(day, user, items.len() as i64).await;
            over.extend(items.into_iter().skip(allowed as usize));
        }
        let (kept, waiting): (Vec<QueuedItem>, Vec<QueuedItem>) = batch
            .into_iter()
            .partition(|job| !over.contains(&job.item_id));
        if !waiting.is_empty() {
            let ids: Vec<i64> = waiting.iter().map(|job| job.item_id).collect();
            let tomorrow = (day + 1) * 86_400;
            tracing::info!(
                items = ids.len(),
                "embeddings wait for the next day: their users' daily budget is spent"
            );
            if let Err(error) = self.store.defer_embedding_jobs(&ids, tomorrow).await {
                tracing::warn!(%error, "deferring embeddings failed; their leases expire");
            }
        }
        kept
    }

    /// Until when claims are paused after a failure (Unix seconds; 0 or past when not).
    pub fn paused_until(&self) -> i64 {
        self.paused_until.load(Ordering::Relaxed)
    }

    /// Puts a failed batch back, each item waiting `backoff(attempts)` (at least the
    /// provider's `Retry-After`), and pauses claims for the shortest of those waits.
    async fn put_back(&self, batch: &[QueuedItem], error: &EmbedError) {
        let now = Utc::now().timestamp();
        let floor = match error {
            EmbedError::RateLimited {
                retry_after: Some(after),
            } => after.as_secs() as i64,
            _ => 0,
        };
        let attempts = batch.iter().map(|job| job.attempts).min().unwrap_or(0);
        let wait = backoff(attempts, jitter_seed(batch)).as_secs() as i64;
        let not_before = now + wait.max(floor);
        self.paused_until.fetch_max(not_before, Ordering::Relaxed);
        let ids: Vec<i64> = batch.iter().map(|job| job.item_id).collect();
        match self.store.retry_embedding_jobs(&ids, not_before).await {
            Ok(dropped) if dropped > 0 => tracing::warn!(
                %error, dropped, "items dropped from the embedding queue after repeated failures"
            ),
            Ok(_) => tracing::warn!(%error, items = ids.len(), wait_seconds = not_before - now,
                "embedding failed; the items are tried again later"),
            Err(store_error) => tracing::warn!(%error, %store_error,
                "embedding failed and the items could not be put back; their leases expire"),
        }
    }
}

/// The wait after `attempts` earlier failures: [`FIRST_BACKOFF`] doubled per attempt, at
/// most [`MAX_BACKOFF`], then 50–100 % of it (jitter, so that workers do not retry in step).
pub fn backoff(attempts: i64, seed: u64) -> Duration {
    let doubled = FIRST_BACKOFF
        .as_secs()
        .saturating_mul(1u64 << attempts.clamp(0, 20))
        .min(MAX_BACKOFF.as_secs());
    let fraction = 0.5 + (seed % 1001) as f64 / 2000.0;
    Duration::from_secs(((doubled as f64) * fraction).round().max(1.0) as u64)
}

fn jitter_seed(batch: &[QueuedItem]) -> u64 {
    let nanos = std::time::SystemTime::now()
        .duration_since(std::time::UNIX_EPOCH)
        .map(|d| d.subsec_nanos())
        .unwrap_or_default();
    u64::from(nanos) ^ batch.first().map_or(0, |job| job.item_id as u64)
}

/// The text a queued item is embedded from: its title and its content (else its summary) as
/// plain text.
pub fn job_text(job: &QueuedItem) -> String {
    let html = job
        .content
        .as_deref()
        .filter(|c| !c.trim().is_empty())
        .or(job.summary.as_deref());
    let text = html.and_then(html_to_text);
    item_text(job.title.as_deref(), text.as_deref())
}

impl<E: Embedder> EnrichmentJob for EmbeddingJob<E> {
    type Task = Vec<QueuedItem>;

    fn name(&self) -> &'static str {
        "embeddings"
    }

    async fn claim(&self, limit: usize) -> Result<Vec<Vec<QueuedItem>>, StoreError> {
        let now = Utc::now().timestamp();
        if now < self.paused_until.load(Ordering::Relaxed) {
            return Ok(Vec::new());
        }
        if !self.model_set.load(Ordering::Relaxed) {
            if self
                .store
                .use_embedding_model(self.embedder.model())
                .await?
            {
                tracing::info!(
                    model = self.embedder.model(),
                    "embedding every item with a new model"
                );
            }
            self.model_set.store(true, Ordering::Relaxed);
        }
        let batch = self.embedder.max_batch().max(1);
        let jobs = self
            .store
            .claim_embedding_jobs(&self.owner, now, (limit * batch) as i64, self.lease_seconds)
            .await?;
        Ok(jobs.chunks(batch).map(<[QueuedItem]>::to_vec).collect())
    }

    async fn run(&self, batch: Vec<QueuedItem>) {
        let batch = self.charge_users(batch).await;
        if batch.is_empty() {
            return;
        }
        let jobs = batch.clone();
        let texts = match tokio::task::spawn_blocking(move || {
            jobs.iter().map(job_text).collect::<Vec<String>>()
        })
        .await
        {
            Ok(texts) => texts,
            Err(error) => {
                tracing::warn!(%error, "reading items' text failed; their leases expire");
                return;
            }
        };
        let vectors = match self.embedder.embed(&texts).await {
            Ok(vectors) if vectors.len() == batch.len() => vectors,
            Ok(vectors) => {
                let error = EmbedError::Malformed(format!(
                    "{} vectors for {} texts",
                    vectors.len(),
                    batch.len()
                ));
                self.put_back(&batch, &error).await;
                return;
            }
            Err(error) => {
                self.put_back(&batch, &error).await;
                return;
            }
        };
        let ids: Vec<i64> = batch.iter().map(|job| job.item_id).collect();
        let stored = tokio::task::spawn_blocking(move || {
            ids.into_iter()
                .zip(vectors)
                .map(|(item_id, vector)| ItemVector {
                    item_id,
                    code: Code::of(&vector).to_bytes(),
                    vector: quantize(&vector),
                })
                .collect::<Vec<_>>()
        })
        .await;
        let Ok(stored) = stored else {
            tracing::warn!("making codes failed; the items' leases expire");
            return;
        };
        let model = self.embedder.model();
        match self
            .store
            .save_embeddings(model, &stored, Utc::now().timestamp())
            .await
        {
            Ok(saved) => tracing::debug!(items = stored.len(), saved, model, "embedded items"),
            Err(error) => {
                tracing::warn!(%error, "storing vectors failed; the items are tried again")
            }
        }
    }
}

/// Runs the embedding job of `config` on `store` until `shutdown`, polling every `poll`;
/// returns at once when embedding is off in this process (concurrency 0) or the provider's
/// client cannot be built (logged).
pub async fn run_configured(
    store: Store,
    config: &EmbeddingsConfig,
    owner: &str,
    lease_seconds: i64,
    poll: Duration,
    shutdown: impl std::future::Future<Output = ()>,
) {
    if config.concurrency == 0 {
        return;
    }
    match &config.provider {
        EmbeddingsProvider::Local => {
            let job = EmbeddingJob::new(store, LocalEmbedder, owner, lease_seconds);
            crate::run_enrichment(Arc::new(job), config.concurrency, poll, shutdown).await;
        }
        EmbeddingsProvider::OpenAi {
            base_url,
            model,
            api_key,
        } => match OpenAiEmbeddings::new(base_url, model, api_key.clone(), config.batch) {
            Ok(embedder) => {
                let job = EmbeddingJob::new(store, embedder, owner, lease_seconds)
                    .with_user_daily_budget(config.user_daily_budget);
                crate::run_enrichment(Arc::new(job), config.concurrency, poll, shutdown).await;
            }
            Err(error) => tracing::error!(%error, "the embeddings client could not be built"),
        },
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn backoff_doubles_up_to_the_cap_with_jitter() {
        assert_eq!(backoff(0, 0), Duration::from_secs(15));
        assert_eq!(backoff(0, 1000), Duration::from_secs(30));
        assert_eq!(backoff(1, 0), Duration::from_secs(30));
        assert_eq!(backoff(3, 0), Duration::from_secs(120));
        assert_eq!(backoff(40, 1000), Duration::from_secs(3600));
        assert!(backoff(-1, 500) >= Duration::from_secs(15));
    }

    #[test]
    fn the_endpoint_is_under_the_base_with_or_without_a_slash() {
        for base in ["http://127.0.0.1:1/v1", "http://127.0.0.1:1/v1/"] {
            let e = OpenAiEmbeddings::new(&Url::parse(base).unwrap(), "m", None, 10).unwrap();
            assert_eq!(e.endpoint().as_str(), "http://127.0.0.1:1/v1/embeddings");
            assert_eq!(e.model(), "openai:m");
        }
    }

    #[test]
    fn job_text_reads_the_content_else_the_summary() {
        let job = QueuedItem {
            item_id: 1,
            attempts: 0,
            title: Some("Title".into()),
            content: Some("<p>The <b>content</b></p>".into()),
            summary: Some("<p>summary</p>".into()),
        };
        assert_eq!(job_text(&job), "Title\n\nThe content");
        let job = QueuedItem {
            content: Some(" ".into()),
            ..job
        };
        assert_eq!(job_text(&job), "Title\n\nsummary");
    }

    #[test]
    fn provider_messages_are_read_from_their_json() {
        assert_eq!(
            error_message(br#"{"error": {"message": "Invalid API key"}}"#),
            "Invalid API key"
        );
        assert_eq!(
            error_message(br#"{"error": "model not found"}"#),
            "model not found"
        );
        assert_eq!(error_message(b"plain"), "plain");
    }
}
