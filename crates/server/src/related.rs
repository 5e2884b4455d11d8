//! Related items (F44) in the server: the in-memory candidate index of every stored vector's
//! code, kept up to date from the store, and the search that ranks its candidates.
//!
//! Each request first reads the codes stored since the last one (one indexed query; the first
//! request after a start reads them all, about 1.5 s per million items), so that vectors made
//! by any worker process are found at once. The index is scanned for the [`CANDIDATES`] codes
//! nearest the item's among the user's feeds, off the async threads; the candidates' stored
//! vectors are then read with the user's subscriptions as the condition (so the index can
//! never show another user's items, nor items deleted since it read them) and ranked by their
//! exact cosine.

use std::sync::{Arc, Mutex, RwLock};

use tidings_embed::{Code, IndexRow, RelatedIndex, cosine};
use tidings_store::{Store, StoreError};

/// Candidates taken from the index per request, ranked by their stored vectors.
pub const CANDIDATES: usize = 200;
/// Codes read from the store per query while catching up.
const CATCH_UP_BATCH: i64 = 50_000;
/// Items less similar than this are not related, whatever their rank.
pub const MIN_SCORE: f32 = 0.05;

/// The model the index holds codes of, and the codes.
#[derive(Debug, Default)]
struct Loaded {
    model: Option<String>,
    index: RelatedIndex,
}

/// The server's related-items search ([module docs](self)).
#[derive(Debug, Default)]
pub struct RelatedItems {
    loaded: Arc<RwLock<Loaded>>,
    /// One request at a time reads new codes; the others wait for it rather than read the
    /// same rows again.
    catching_up: tokio::sync::Mutex<()>,
    /// Bytes of the index after the last catch-up, for the metrics.
    memory: Mutex<usize>,
}

/// A related item and how similar it is, in −1–1 (cosine of the vectors).
#[derive(Debug, Clone, Copy, PartialEq)]
pub struct Related {
    /// The item's id.
    pub item_id: i64,
    /// The cosine similarity of its vector and the item's.
    pub score: f32,
}

impl RelatedItems {
    /// An empty index; it loads on the first request, or before with [`RelatedItems::warm_up`].
    pub fn new() -> RelatedItems {
        RelatedItems::default()
    }

    /// Loads the index in the background (the codes of the model the worker embeds with,
    /// if one was chosen), so that the first Related section after a start does not wait for
    /// it: a million items take seconds to read. A failure is logged; the first request then
    /// loads the index as it always can.
    pub fn warm_up(self: &Arc<Self>, store: Store) {
        let related = Arc::clone(self);
        tokio::spawn(async move {
            let started = std::time::Instant::now();
            let loaded = match store.embedding_model().await {
                Ok(Some(model)) => related.catch_up(&store, &model).await,
                Ok(None) => return,
                Err(error) => Err(error),
            };
            match loaded {
                Ok(()) => tracing::info!(
                    items = related.size().0,
                    seconds = started.elapsed().as_secs_f64(),
                    "related-items index loaded"
                ),
                Err(error) => {
                    tracing::warn!(%error, "related-items index: loading at start failed")
                }
            }
        });
    }

    /// Items in the index, and the bytes it holds.
    pub fn size(&self) -> (usize, usize) {
        let len = self.loaded.read().map(|l| l.index.len()).unwrap_or(0);
        (len, *self.memory.lock().unwrap_or_else(|e| e.into_inner()))
    }

    /// Reads the codes of `model` stored since the last call (all of them after a start or
    /// when the model changed).
    pub async fn catch_up(&self, store: &Store, model: &str) -> Result<(), StoreError> {
        let _one = self.catching_up.lock().await;
        let seen = {
            let mut loaded = self.loaded.write().unwrap_or_else(|e| e.into_inner());
            if loaded.model.as_deref() != Some(model) {
                *loaded = Loaded {
                    model: Some(model.to_string()),
                    index: RelatedIndex::new(),
                };
            }
            loaded.index.seen()
        };
        let mut after = seen;
        loop {
            let rows = store
                .embedding_codes_after(model, after, CATCH_UP_BATCH)
                .await?;
            let Some(last) = rows.last() else { break };
            after = last.seq;
            let full = rows.len() as i64 == CATCH_UP_BATCH;
            let rows: Vec<IndexRow> = rows
                .into_iter()
                .filter_map(|row| {
                    Some(IndexRow {
                        seq: row.seq,
                        item_id: row.item_id,
                        feed_id: row.feed_id,
                        code: Code::from_bytes(&row.code)?,
                    })
                })
                .collect();
            let mut loaded = self.loaded.write().unwrap_or_else(|e| e.into_inner());
            loaded.index.add(rows);
            if !full {
                break;
            }
        }
        let memory = self
            .loaded
            .read()
            .map(|l| l.index.memory_bytes())
            .unwrap_or(0);
        *self.memory.lock().unwrap_or_else(|e| e.into_inner()) = memory;
        Ok(())
    }

    /// Up to `limit` items of the user's subscriptions most similar to `item_id`, most
    /// similar first; empty while the item has no vector yet. [`StoreError::NotFound`] when
    /// the item is not one the user can see.
    pub async fn find(
        &self,
        store: &Store,
        user_id: i64,
        item_id: i64,
        limit: usize,
    ) -> Result<Vec<Related>, StoreError> {
        let Some(query) = store.item_vector(user_id, item_id).await? else {
            return Ok(Vec::new());
        };
        let Some(code) = Code::from_bytes(&query.code) else {
            return Ok(Vec::new());
        };
        self.catch_up(store, &query.model).await?;
        let feeds = store.user_feed_ids(user_id).await?;
        let loaded = Arc::clone(&self.loaded);
        // A scan of a million codes takes milliseconds of CPU: off the async threads.
        let candidates = tokio::task::spawn_blocking(move || {
            let loaded = loaded.read().unwrap_or_else(|e| e.into_inner());
            loaded.index.nearest(&code, &feeds, item_id, CANDIDATES)
        })
        .await
        .unwrap_or_else(|error| {
            // Only a panic in the scan gets here; the request answers without candidates.
            tracing::error!(%error, "the related-items scan failed");
            Vec::new()
        });
        let vectors = store
            .vectors_for_user(user_id, &query.model, &candidates)
            .await?;
        let mut related: Vec<Related> = vectors
            .into_iter()
            .filter(|(id, _)| *id != item_id)
            .map(|(id, vector)| Related {
                item_id: id,
                score: cosine(&query.vector, &vector),
            })
            .filter(|r| r.score >= MIN_SCORE)
            .collect();
        related.sort_by(|a, b| b.score.total_cmp(&a.score).then(b.item_id.cmp(&a.item_id)));
        related.truncate(limit);
        Ok(related)
    }
}
