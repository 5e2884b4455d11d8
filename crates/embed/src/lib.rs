//! Related items for tidings (F44): vectors for items, stored portably and searched in Rust.
//! Pure: no I/O.
//!
//! - [`Embedder`] is what makes vectors: [`LocalEmbedder`] (here, no model, no key: hashed
//!   term frequencies over the search tokenizer's tokens, so Japanese and Chinese work as
//!   search does) and an OpenAI-compatible `/v1/embeddings` client (in `tidings-worker`,
//!   beside the other workers that talk to services).
//! - [`vector`]: vectors are stored as one signed byte per dimension ([`quantize`]), about a
//!   quarter of `f32`s, compared with [`cosine`]; each also gets a [`Code`] of
//!   [`CODE_BITS`] sign bits of random projections (SimHash), whose Hamming distance tracks the
//!   angle between vectors.
//! - [`RelatedIndex`] keeps every item's code in memory (about 48 bytes an item) and finds the
//!   candidates nearest a query among the feeds a user reads, by a scan of the codes; the caller
//!   then ranks the candidates by the exact [`cosine`] of their stored vectors.

#![warn(missing_docs)]

pub mod index;
pub mod local;
pub mod vector;

use std::future::Future;
use std::time::Duration;

pub use index::{IndexRow, RelatedIndex};
pub use local::{LOCAL_DIMS, LOCAL_MODEL, LocalEmbedder, item_text};
pub use vector::{CODE_BITS, CODE_BYTES, Code, cosine, quantize};

/// Why a provider gave no vectors for a batch.
#[derive(Debug, Clone, PartialEq, thiserror::Error)]
pub enum EmbedError {
    /// The provider asked to slow down (HTTP 429), with how long it asked to wait.
    #[error("the embeddings provider is rate limiting (retry after {retry_after:?})")]
    RateLimited {
        /// Its `Retry-After`, when it gave one.
        retry_after: Option<Duration>,
    },
    /// The provider could not be reached, timed out or failed (5xx): worth trying later.
    #[error("the embeddings provider is unavailable: {0}")]
    Unavailable(String),
    /// The provider refused the request (4xx other than 429: a bad key, an unknown model).
    #[error("the embeddings provider refused the request: {0}")]
    Refused(String),
    /// The answer was not the embeddings asked for (not JSON, wrong count, uneven dimensions).
    #[error("the embeddings provider's answer is malformed: {0}")]
    Malformed(String),
}

/// Something that turns texts into vectors of one dimension.
pub trait Embedder: Send + Sync + 'static {
    /// What makes the vectors, e.g. `local-hash-256-v1` or `openai:text-embedding-3-small`:
    /// vectors of different models are never compared, and a new model re-embeds every item.
    fn model(&self) -> &str;

    /// The most texts per call (one request to a provider).
    fn max_batch(&self) -> usize;

    /// One vector per text, in order.
    fn embed(
        &self,
        texts: &[String],
    ) -> impl Future<Output = Result<Vec<Vec<f32>>, EmbedError>> + Send;
}
