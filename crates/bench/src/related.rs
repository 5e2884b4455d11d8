//! `tidings-bench related`: related items (F44) at scale, on the data set of `tidings-bench
//! generate`. Embeds every item not embedded yet with the local embedder (through the store's
//! queue, as the worker does, on every core), then times the server's related-items search for
//! the first bench user on items of the set: the index's first load, then p50 / p95
//! of whole answers (the item's vector, the index scan, the candidates' vectors, the listing
//! rows), and the process's memory.

use std::process::ExitCode;
use std::sync::Arc;
use std::time::{Duration, Instant};

use clap::Args;
use tidings::config::GlobalConfig;
use tidings::output::outln;
use tidings_embed::{Code, Embedder, LocalEmbedder, item_text, quantize};
use tidings_server::related::RelatedItems;
use tidings_store::ItemVector;

/// Arguments of `tidings-bench related`.
#[derive(Debug, Args)]
pub struct RelatedBenchArgs {
    /// Related-items searches to time.
    #[arg(long, default_value_t = 200)]
    pub searches: usize,
    /// Related items per answer.
    #[arg(long, default_value_t = 10)]
    pub limit: usize,
}

/// Items claimed and embedded per step.
const EMBED_BATCH: i64 = 1_000;

/// The process's memory from /proc (Linux), in MB.
struct Memory {
    /// Resident now.
    rss: f64,
    /// Resident at the peak.
    peak: f64,
    /// Resident and anonymous (the heap: the index, caches): the rest of the resident memory
    /// is file pages, such as SQLite's memory-mapped database, which the kernel can drop.
    anon: f64,
}

fn memory_mb() -> Memory {
    let status = std::fs::read_to_string("/proc/self/status").unwrap_or_default();
    let field = |name: &str| {
        status
            .lines()
            .find(|line| line.starts_with(name))
            .and_then(|line| line.split_whitespace().nth(1))
            .and_then(|kb| kb.parse::<f64>().ok())
            .map_or(0.0, |kb| kb / 1024.0)
    };
    Memory {
        rss: field("VmRSS:"),
        peak: field("VmHWM:"),
        anon: field("RssAnon:"),
    }
}

fn ms(duration: Duration) -> f64 {
    duration.as_secs_f64() * 1000.0
}

/// Runs `tidings-bench related`.
pub async fn run(config: &GlobalConfig, args: RelatedBenchArgs) -> anyhow::Result<ExitCode> {
    let store = crate::store::open_store(config).await?;
    let Some((user, _)) = crate::search::bench_user(&store).await? else {
        outln!("no bench user: run `tidings-bench generate` first");
        return Ok(ExitCode::from(2));
    };
    outln!(
        "tidings-bench related on {} ({})",
        store.engine(),
        tidings_store::redact_url(&config.database_url)
    );

    // Vectors for every item, as the worker makes them (local embedder), batches in parallel.
    let embedder = LocalEmbedder;
    store.use_embedding_model(embedder.model()).await?;
    let started = Instant::now();
    let mut embedded = 0u64;
    let workers = std::thread::available_parallelism().map_or(2, |n| n.get());
    loop {
        let now = tidings_store::unix_now();
        let jobs = store
            .claim_embedding_jobs("bench", now, EMBED_BATCH, 3600)
            .await?;
        if jobs.is_empty() {
            break;
        }
        let chunk = jobs.len().div_ceil(workers);
        let mut tasks = Vec::new();
        for part in jobs.chunks(chunk).map(<[_]>::to_vec) {
            tasks.push(tokio::task::spawn_blocking(move || {
                part.into_iter()
                    .map(|job| {
                        let text = job
                            .content
                            .as_deref()
                            .or(job.summary.as_deref())
                            .and_then(tidings_feed::text::html_to_text);
                        let vector =
                            embedder.vector(&item_text(job.title.as_deref(), text.as_deref()));
                        ItemVector {
                            item_id: job.item_id,
                            code: Code::of(&vector).to_bytes(),
                            vector: quantize(&vector),
                        }
                    })
                    .collect::<Vec<_>>()
            }));
        }
        let mut vectors = Vec::with_capacity(jobs.len());
        for task in tasks {
            vectors.extend(task.await?);
        }
        embedded += store
            .save_embeddings(embedder.model(), &vectors, now)
            .await?;
        if embedded % 100_000 < EMBED_BATCH as u64 {
            outln!(
                "embedded:       {embedded} items in {:.1} s",
                started.elapsed().as_secs_f64()
            );
        }
    }
    if embedded > 0 {
        outln!(
            "embedded:       {embedded} items in {:.1} s ({:.0} items/s)",
            started.elapsed().as_secs_f64(),
            embedded as f64 / started.elapsed().as_secs_f64().max(0.001)
        );
    }

    // Items to ask about, spread over the first 100,000 embedded (the backfill embeds the
    // newest first).
    let codes = store
        .embedding_codes_after(embedder.model(), 0, 100_000)
        .await?;
    anyhow::ensure!(!codes.is_empty(), "no item has a vector");
    let step = (codes.len() / args.searches.max(1)).max(1);
    let items: Vec<i64> = codes
        .iter()
        .step_by(step)
        .take(args.searches)
        .map(|c| c.item_id)
        .collect();
    drop(codes);

    let related = Arc::new(RelatedItems::new());
    let before = memory_mb();
    let loading = Instant::now();
    related.catch_up(&store, embedder.model()).await?;
    let load = loading.elapsed();
    let after = memory_mb();
    let (indexed, index_bytes) = related.size();
    outln!(
        "index:          {indexed} items loaded in {:.1} s; {:.1} MB by its own count, RSS +{:.0} MB of which anonymous +{:.0} MB",
        load.as_secs_f64(),
        index_bytes as f64 / 1e6,
        after.rss - before.rss,
        after.anon - before.anon
    );

    let mut times = Vec::with_capacity(items.len());
    let mut answered = 0usize;
    let mut scores = 0f64;
    for item in &items {
        let started = Instant::now();
        let found = related.find(&store, user, *item, args.limit).await?;
        let ids: Vec<i64> = found.iter().map(|r| r.item_id).collect();
        let rows = store.item_summaries(user, &ids).await?;
        times.push(started.elapsed());
        answered += rows.len();
        scores += found.first().map_or(0.0, |r| f64::from(r.score));
    }
    times.sort();
    let memory = memory_mb();
    outln!(
        "related:        {} searches, p50 {:.1} ms, p95 {:.1} ms, max {:.1} ms; {:.1} items per answer, best score {:.2} on average",
        times.len(),
        ms(crate::quantiles::duration_at(&times, 0.5)),
        ms(crate::quantiles::duration_at(&times, 0.95)),
        ms(times.last().copied().unwrap_or_default()),
        answered as f64 / times.len().max(1) as f64,
        scores / times.len().max(1) as f64
    );
    outln!(
        "memory:         RSS {:.0} MB ({:.0} MB anonymous, the rest mapped files), peak {:.0} MB",
        memory.rss,
        memory.anon,
        memory.peak
    );
    store.close().await;
    Ok(ExitCode::SUCCESS)
}
