//! The embedding job's settings (F44): the embedder, its batch and parallelism. The job is in
//! [`crate::embedding`].

use url::Url;

/// Texts per request to a provider, by default (OpenAI takes up to 2,048 inputs per request).
pub const DEFAULT_BATCH: usize = 64;
/// Items a remote provider embeds per UTC day for one user's feeds, by default.
pub const DEFAULT_USER_DAILY_BUDGET: i64 = 5000;

/// Which embedder makes the vectors.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum EmbeddingsProvider {
    /// The local hashed term vectors (no model, no key; the default).
    Local,
    /// An OpenAI-compatible `/embeddings` endpoint.
    OpenAi {
        /// The API's base, up to and including its version (`https://api.openai.com/v1`,
        /// `http://127.0.0.1:11434/v1`); requests go to `{base}/embeddings`.
        base_url: Url,
        /// The model asked for, e.g. `text-embedding-3-small`.
        model: String,
        /// Sent as `Authorization: Bearer …` when given.
        api_key: Option<String>,
    },
}

/// The embedding settings of a worker.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct EmbeddingsConfig {
    /// The embedder.
    pub provider: EmbeddingsProvider,
    /// Texts per request (1–2,048).
    pub batch: usize,
    /// Batches at once; 0 turns embedding off in this process.
    pub concurrency: usize,
    /// Items a remote provider embeds per UTC day for one user's feeds (0: no limit); the
    /// local embedder costs nothing and counts nothing.
    pub user_daily_budget: i64,
}

impl Default for EmbeddingsConfig {
    fn default() -> EmbeddingsConfig {
        EmbeddingsConfig {
            provider: EmbeddingsProvider::Local,
            batch: DEFAULT_BATCH,
            concurrency: 1,
            user_daily_budget: DEFAULT_USER_DAILY_BUDGET,
        }
    }
}
