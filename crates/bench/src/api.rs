//! `tidings-bench generate` and `tidings-bench api`: the reading API under load.
//!
//! `generate` builds the data set of the benchmark straight into the database (multi-row
//! inserts in large transactions): F feeds with I items between them, and U users who each
//! follow every feed, each with a read-write API key written to a file. The feeds are
//! suspended so that a running worker leaves them alone.
//!
//! `api` drives a running server with C concurrent clients (each one request after another,
//! closed loop, or at a fixed rate, open loop) through its calls in turn: by default the
//! first page of unread items, the unread counts, and mark-feed-read with `before`; with
//! `--calls` also a Google Reader app's pages of ids and of contents. Requests rotate over the
//! users' keys so that no user goes past the per-user rate limit of 120 a minute; answers 429
//! are counted, not timed.

use std::process::ExitCode;
use std::sync::Arc;
use std::sync::atomic::{AtomicUsize, Ordering};
use std::time::{Duration, Instant};

use anyhow::{Context, bail};
use clap::Args;
use tidings::config::GlobalConfig;
use tidings::output::outln;
use tidings_store::{ApiKeyScope, NewUser, unix_now};

/// Rows per INSERT statement of the generator.
const ROWS_PER_INSERT: usize = 500;
/// INSERT statements per transaction of the generator.
const INSERTS_PER_TRANSACTION: usize = 20;
/// The seconds between two consecutive items' publication times (over all feeds): a million
/// items span about 160 days, inside the 180-day retention.
pub(crate) const ITEM_SPACING_SECONDS: i64 = 14;

/// Arguments of `tidings-bench generate`.
#[derive(Debug, Args)]
pub struct GenerateArgs {
    /// Items in all, spread evenly over the feeds.
    #[arg(long, default_value_t = 1_000_000)]
    pub items: usize,
    /// Feeds, each followed by every bench user unless --feeds-per-user says otherwise.
    #[arg(long, default_value_t = 100)]
    pub subscriptions: usize,
    /// Users, each with every feed and an API key. Enough that the load stays under the
    /// per-user limit of 120 requests a minute: users ≥ requests per second / 2.
    #[arg(long, default_value_t = 500)]
    pub users: usize,
    /// Where to write the users' API keys, one a line.
    #[arg(long, default_value = "bench-keys.txt")]
    pub keys_file: std::path::PathBuf,
    /// Feeds each user follows (among the other feeds, in turn) besides the shared first
    /// feed, which every user follows: the scale data set of the sync benchmark (issue 29:
    /// one feed followed by everyone). By default every user follows every feed.
    #[arg(long)]
    pub feeds_per_user: Option<usize>,
    /// With --feeds-per-user: the first user follows this many instead, so that one user has
    /// a large account (a first sync of 100,000 items) among many small ones.
    #[arg(long)]
    pub first_user_feeds: Option<usize>,
    /// Leave the search index to the worker's backfill (the items are then not searchable
    /// until it ran): for benchmarks that need no search, such as `tidings-bench related`.
    #[arg(long)]
    pub skip_search_index: bool,
}

/// Arguments of `tidings-bench api`.
#[derive(Debug, Args)]
pub struct ApiBenchArgs {
    /// The running server's base URL.
    #[arg(long, default_value = "http://127.0.0.1:8080")]
    pub url: String,
    /// Concurrent clients, each sending its next request when the last one is answered.
    #[arg(long, default_value_t = 50)]
    pub clients: usize,
    /// Requests in all, split evenly over the three endpoints.
    #[arg(long, default_value_t = 30_000)]
    pub requests: usize,
    /// The API keys file written by `tidings-bench generate`.
    #[arg(long, default_value = "bench-keys.txt")]
    pub keys_file: std::path::PathBuf,
    /// Requests per endpoint sent first and not measured (connections, caches).
    #[arg(long, default_value_t = 300)]
    pub warmup: usize,
    /// Offered load in requests per second over all clients (open loop: each request is sent
    /// at its scheduled time and timed from it, so a slow server cannot slow the load down).
    /// Without it every client sends its next request as soon as the last one is answered.
    #[arg(long)]
    pub rate: Option<f64>,
    /// The calls, comma-separated, sent in turn: `unread` (the REST first page of unread
    /// items), `counts`, `mark-read` (a feed of the first user's, with `before`), `sync-ids`
    /// and `sync-contents` (a Google Reader app's page of 1,000 ids and of 100 items).
    #[arg(long, default_value = DEFAULT_CALLS)]
    pub calls: String,
}

/// Runs `tidings-bench generate`.
pub async fn generate(config: &GlobalConfig, args: GenerateArgs) -> anyhow::Result<ExitCode> {
    let feeds = args.subscriptions.max(1);
    let users = args.users.max(1);
    let store = crate::store::open_store_for_bulk_load(config).await?;
    let started = Instant::now();
    let now = unix_now();
    outln!(
        "tidings-bench generate: {} items over {feeds} feeds, {users} users on {} ({})",
        args.items,
        store.engine(),
        tidings_store::redact_url(&config.database_url)
    );

    // Feeds first, then items, then subscriptions: a subscription counts its feed's unread
    // items once when created, which is far cheaper than items updating many counters.
    let run = format!("{:x}", now);
    let mut feed_ids = Vec::with_capacity(feeds);
    for n in 0..feeds {
        let url = format!("https://bench-{run}.invalid/feed/{n}");
        store
            .execute_raw(&format!(
                "INSERT INTO feeds (url, title, site_url, suspended, created_at, updated_at)
                 VALUES ('{url}', 'Bench feed {n}', 'https://bench-{run}.invalid/', TRUE, {now}, {now});
                 INSERT INTO feed_fetch_state (feed_id, next_check_at)
                 SELECT id, {now} FROM feeds WHERE url = '{url}';"
            ))
            .await?;
        let id = store
            .feed_id_by_url(&url)
            .await?
            .context("a bench feed was not stored")?;
        feed_ids.push(id);
    }

    let mut statements = Vec::with_capacity(INSERTS_PER_TRANSACTION);
    let mut rows = Vec::with_capacity(ROWS_PER_INSERT);
    for k in 0..args.items {
        let feed_id = feed_ids[k % feeds];
        // Item 0 is the newest; every item has its own second, so no two tie.
        let published = now - 60 - k as i64 * ITEM_SPACING_SECONDS;
        // Realistic multilingual text, so that the search benchmark runs on it.
        let (title, content) = crate::search::article(k);
        let summary = content.split("</p>").next().unwrap_or("").to_string() + "</p>";
        let quote = |text: &str| text.replace('\'', "''");
        rows.push(format!(
            "({feed_id}, 'bench:{k}', 'bench-{k}', 'https://bench-{run}.invalid/items/{k}', \
             '{}', 'Bench Author', '{}', '{}', \
             {published}, FALSE, {published}, {published}, 'h{k}')",
            quote(&title),
            quote(&content),
            quote(&summary),
        ));
        if rows.len() == ROWS_PER_INSERT || k + 1 == args.items {
            statements.push(format!(
                "INSERT INTO items (feed_id, identity_key, guid, url, title, author, content,
                    summary, published_at, is_date_estimated, fetched_at, changed_at,
                    content_hash) VALUES {};",
                rows.join(",")
            ));
            rows.clear();
        }
        if statements.len() == INSERTS_PER_TRANSACTION
            || (k + 1 == args.items && !statements.is_empty())
        {
            store
                .execute_raw(&format!("BEGIN; {} COMMIT;", statements.join("\n")))
                .await?;
            statements.clear();
            if (k + 1) % 100_000 < ROWS_PER_INSERT * INSERTS_PER_TRANSACTION {
                outln!(
                    "items:          {} in {:.1} s",
                    k + 1,
                    started.elapsed().as_secs_f64()
                );
            }
        }
    }

    // The items went in by SQL, so the search index is built as on an upgraded database:
    // by the backfill, here in large batches without pauses.
    store
        .execute_raw(
            "UPDATE search_backfill SET next_item_id = (SELECT COALESCE(MIN(id), 1) FROM items),
                                       last_item_id = (SELECT COALESCE(MAX(id), 0) FROM items)",
        )
        .await?;
    let indexing = Instant::now();
    let mut indexed: u64 = 0;
    // Left to the worker's backfill with --skip-search-index.
    if !args.skip_search_index {
        loop {
            let step = store.backfill_search_index(5_000).await?;
            indexed += step.indexed;
            if step.is_done() {
                break;
            }
            if indexed % 100_000 < 5_000 {
                println!(
                    "search index:   {indexed} items in {:.1} s",
                    indexing.elapsed().as_secs_f64()
                );
            }
        }
    }
    println!(
        "search index:   {indexed} items in {:.1} s ({:.0} items/s)",
        indexing.elapsed().as_secs_f64(),
        indexed as f64 / indexing.elapsed().as_secs_f64().max(0.001)
    );

    let mut keys = String::new();
    for u in 0..users {
        let user = store
            .create_user(&NewUser {
                username: format!("bench-{run}-{u}"),
                password_hash: None,
                is_admin: false,
            })
            .await?;
        let followed = followed_feeds(&feed_ids, u, &args);
        subscribe_by_sql(&store, user.id, &followed, now).await?;
        let secret = new_api_key(&store, &user, "bench").await?;
        keys.push_str(&secret);
        keys.push('\n');
        if (u + 1) % 50 == 0 || u + 1 == users {
            outln!(
                "users:          {} in {:.1} s",
                u + 1,
                started.elapsed().as_secs_f64()
            );
        }
    }
    std::fs::write(&args.keys_file, keys)
        .with_context(|| format!("cannot write {}", args.keys_file.display()))?;
    outln!(
        "done in {:.1} s; database {:.1} MB; keys in {}",
        started.elapsed().as_secs_f64(),
        store.database_size_bytes().await? as f64 / 1_048_576.0,
        args.keys_file.display()
    );
    store.close().await;
    Ok(ExitCode::SUCCESS)
}

/// The feeds user `u` of the data set follows: all of them, or with `--feeds-per-user K`
/// the first feed (shared by everyone) and K others in turn (the first user: as many as
/// `--first-user-feeds`).
fn followed_feeds(feed_ids: &[i64], u: usize, args: &GenerateArgs) -> Vec<i64> {
    let Some(per_user) = args.feeds_per_user else {
        return feed_ids.to_vec();
    };
    let others = &feed_ids[1..];
    let count = match args.first_user_feeds {
        Some(first) if u == 0 => first,
        _ => per_user,
    }
    .min(others.len());
    let mut followed = vec![feed_ids[0]];
    followed.extend((0..count).map(|j| others[(u * per_user + j) % others.len()]));
    followed
}

/// Subscribes a user to feeds by SQL, in their default group: the triggers count each
/// feed's unread items once, far cheaper than subscribing one by one for a large data set.
pub async fn subscribe_by_sql(
    store: &tidings_store::Store,
    user_id: i64,
    feed_ids: &[i64],
    now: i64,
) -> anyhow::Result<()> {
    let group_id = store.default_group_id(user_id).await?;
    for chunk in feed_ids.chunks(ROWS_PER_INSERT) {
        let values: Vec<String> = chunk
            .iter()
            .map(|feed_id| format!("({user_id}, {feed_id}, {group_id}, 60, {now})"))
            .collect();
        store
            .execute_raw(&format!(
                "INSERT INTO subscriptions (user_id, feed_id, group_id, fetch_interval_minutes,
                    created_at) VALUES {};",
                values.join(",")
            ))
            .await?;
    }
    Ok(())
}

/// Creates a read-write API key named `name` for a user, with its Fever digest (so that
/// the Fever API takes it, as a key made in the UI); returns its secret.
pub async fn new_api_key(
    store: &tidings_store::Store,
    user: &tidings_store::User,
    name: &str,
) -> anyhow::Result<String> {
    let secret = format!(
        "{}{}",
        tidings_server::api::auth::API_KEY_PREFIX,
        tidings_server::api::auth::new_secret()
    );
    let key = store
        .create_api_key(
            user.id,
            name,
            &secret[..10],
            &tidings_server::api::auth::secret_hash(&secret),
            ApiKeyScope::ReadWrite,
            None,
        )
        .await?;
    store
        .set_api_key_fever_hash(
            key.id,
            &tidings_server::base::auth::fever_key_digest(&user.username, &secret),
        )
        .await?;
    Ok(secret)
}

/// A measured call.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
enum Call {
    UnreadPage,
    Counts,
    MarkFeedRead,
    /// A Google Reader app's page of ids (`stream/items/ids`, 1,000 of the reading list).
    SyncIds,
    /// A Google Reader app's page of contents (`stream/contents`, 100 of the reading list).
    SyncContents,
}

/// The web UI's and REST clients' calls, measured by default.
const DEFAULT_CALLS: &str = "unread,counts,mark-read";

impl Call {
    fn parse(name: &str) -> anyhow::Result<Call> {
        Ok(match name.trim() {
            "unread" => Call::UnreadPage,
            "counts" => Call::Counts,
            "mark-read" => Call::MarkFeedRead,
            "sync-ids" => Call::SyncIds,
            "sync-contents" => Call::SyncContents,
            other => bail!(
                "unknown call {other:?} in --calls: use unread, counts, mark-read, sync-ids, \
                 sync-contents"
            ),
        })
    }

    fn label(self) -> &'static str {
        match self {
            Call::UnreadPage => "GET /items?filter=unread (first page)",
            Call::Counts => "GET /counts",
            Call::MarkFeedRead => "POST /items/mark-read {feed_id, before}",
            Call::SyncIds => "GReader stream/items/ids n=1000",
            Call::SyncContents => "GReader stream/contents n=100",
        }
    }

    /// The request for this call as the user of `key`; `n` picks the feed to mark read.
    fn request(self, shared: &Shared, key: &str, n: usize) -> reqwest::RequestBuilder {
        const READING_LIST: &str = "user/-/state/com.google/reading-list";
        let (client, base) = (&shared.client, &shared.base);
        let rest = |path: &str| client.get(format!("{base}{path}")).bearer_auth(key);
        // A tidings API key is its own Google Reader token (no ClientLogin needed).
        let reader = |path: String| {
            client
                .get(format!("{base}/reader/api/0/{path}"))
                .header("authorization", format!("GoogleLogin auth={key}"))
        };
        match self {
            Call::UnreadPage => rest("/api/v1/items?filter=unread&limit=50"),
            Call::Counts => rest("/api/v1/counts"),
            Call::MarkFeedRead => {
                let feed_id = shared.feed_ids[(n / 7) % shared.feed_ids.len()];
                let before = chrono::Utc::now().to_rfc3339_opts(chrono::SecondsFormat::Secs, true);
                client
                    .post(format!("{base}/api/v1/items/mark-read"))
                    .bearer_auth(key)
                    .header("content-type", "application/json")
                    .body(serde_json::json!({"feed_id": feed_id, "before": before}).to_string())
            }
            Call::SyncIds => reader(format!(
                "stream/items/ids?s={READING_LIST}&n=1000&output=json"
            )),
            Call::SyncContents => {
                reader(format!("stream/contents/{READING_LIST}?n=100&output=json"))
            }
        }
    }
}

/// What one call measured.
#[derive(Debug, Default)]
struct Samples {
    latencies: Vec<Duration>,
    limited: usize,
    failed: usize,
}

/// Runs `tidings-bench api`.
pub async fn api(args: ApiBenchArgs) -> anyhow::Result<ExitCode> {
    let keys: Vec<String> = std::fs::read_to_string(&args.keys_file)
        .with_context(|| format!("cannot read {}", args.keys_file.display()))?
        .lines()
        .map(str::trim)
        .filter(|l| !l.is_empty())
        .map(String::from)
        .collect();
    if keys.is_empty() {
        bail!("{} holds no API keys", args.keys_file.display());
    }
    let base = args.url.trim_end_matches('/').to_string();
    let client = reqwest::Client::builder()
        .pool_max_idle_per_host(args.clients.max(1))
        .timeout(Duration::from_secs(30))
        .build()?;

    let calls = args
        .calls
        .split(',')
        .map(Call::parse)
        .collect::<anyhow::Result<Vec<Call>>>()?;
    let feed_ids = if calls.contains(&Call::MarkFeedRead) {
        first_users_feeds(&client, &base, &keys[0]).await?
    } else {
        Vec::new()
    };
    outln!(
        "tidings-bench api: {} clients, {} requests (+{} warm-up) against {base}, {} users, {} feeds",
        args.clients,
        args.requests,
        args.warmup * calls.len(),
        keys.len(),
        feed_ids.len()
    );

    if let Some(rate) = args.rate {
        outln!("open loop at {rate} requests/s");
    }
    let shared = Arc::new(Shared {
        client,
        base,
        keys,
        feed_ids,
        calls,
    });
    let warmup = Load {
        clients: args.clients,
        requests: args.warmup * shared.calls.len(),
        offset: 0,
        rate: args.rate,
    };
    run_load(&shared, &warmup).await;
    let started = Instant::now();
    let measured = Load {
        requests: args.requests,
        offset: warmup.requests,
        ..warmup
    };
    let results = run_load(&shared, &measured).await;
    let elapsed = started.elapsed().as_secs_f64();

    outln!(
        "{} requests in {elapsed:.1} s: {:.0} requests/s",
        args.requests,
        args.requests as f64 / elapsed
    );
    outln!(
        "{:42} {:>7} {:>9} {:>9} {:>9} {:>9} {:>6} {:>6}",
        "endpoint",
        "count",
        "median",
        "p95",
        "p99",
        "max",
        "429",
        "errors"
    );
    let mut healthy = true;
    for (call, mut samples) in shared.calls.iter().zip(results) {
        samples.latencies.sort();
        let at = |q| crate::quantiles::ms_at(&samples.latencies, q, 2);
        outln!(
            "{:42} {:>7} {:>9} {:>9} {:>9} {:>9} {:>6} {:>6}",
            call.label(),
            samples.latencies.len(),
            at(0.5),
            at(0.95),
            at(0.99),
            at(1.0),
            samples.limited,
            samples.failed
        );
        healthy &= samples.failed == 0;
    }
    Ok(if healthy {
        ExitCode::SUCCESS
    } else {
        ExitCode::FAILURE
    })
}

/// The feeds mark-read picks from: the first user's, from their counts (every bench user
/// follows them unless `generate` had --feeds-per-user).
async fn first_users_feeds(
    client: &reqwest::Client,
    base: &str,
    key: &str,
) -> anyhow::Result<Vec<i64>> {
    let counts = client
        .get(format!("{base}/api/v1/counts"))
        .bearer_auth(key)
        .send()
        .await
        .context("the server did not answer")?
        .error_for_status()?
        .bytes()
        .await?;
    let counts: serde_json::Value = serde_json::from_slice(&counts)?;
    let feed_ids: Vec<i64> = counts["subscriptions"]
        .as_array()
        .map(|subs| subs.iter().filter_map(|s| s["feed_id"].as_i64()).collect())
        .unwrap_or_default();
    if feed_ids.is_empty() {
        bail!("the first bench user has no subscriptions; run `tidings-bench generate` first");
    }
    Ok(feed_ids)
}

/// What every client of a run shares.
struct Shared {
    client: reqwest::Client,
    base: String,
    keys: Vec<String>,
    /// The feeds mark-read picks from: the first user's.
    feed_ids: Vec<i64>,
    /// The calls, in turn.
    calls: Vec<Call>,
}

/// One run of requests.
#[derive(Debug, Clone, Copy)]
struct Load {
    /// Concurrent clients.
    clients: usize,
    /// Requests in all.
    requests: usize,
    /// The number of the first request, so that runs continue the rotation over users.
    offset: usize,
    /// Requests per second in all, or `None` for closed loop.
    rate: Option<f64>,
}

/// Sends the load's requests from its clients; request n calls `calls[n % calls]` as user
/// `(offset + n) / calls % users`. Returns the samples per call.
async fn run_load(shared: &Arc<Shared>, load: &Load) -> Vec<Samples> {
    let next = Arc::new(AtomicUsize::new(0));
    let started = tokio::time::Instant::now();
    let Load {
        clients,
        requests,
        offset,
        rate,
    } = *load;
    let calls = shared.calls.len();
    let mut tasks = Vec::new();
    for _ in 0..clients.max(1) {
        let shared = Arc::clone(shared);
        let next = Arc::clone(&next);
        tasks.push(tokio::spawn(async move {
            let mut samples: Vec<Samples> = (0..calls).map(|_| Samples::default()).collect();
            loop {
                let n = next.fetch_add(1, Ordering::Relaxed);
                if n >= requests {
                    return samples;
                }
                // Open loop: wait for the request's slot; its time counts from the slot.
                let scheduled = match rate {
                    Some(rate) if rate > 0.0 => {
                        let at = started + Duration::from_secs_f64(n as f64 / rate);
                        tokio::time::sleep_until(at).await;
                        Some(at.into_std())
                    }
                    _ => None,
                };
                let global = offset + n;
                let call = shared.calls[global % calls];
                let key = &shared.keys[(global / calls) % shared.keys.len()];
                let request = call.request(&shared, key, global);
                let sent = scheduled.unwrap_or_else(Instant::now);
                let outcome = request.send().await;
                let slot = &mut samples[global % calls];
                match outcome {
                    Ok(response) => {
                        let status = response.status();
                        // The body is part of the answer's time.
                        let body = response.bytes().await;
                        let took = sent.elapsed();
                        if status == reqwest::StatusCode::TOO_MANY_REQUESTS {
                            slot.limited += 1;
                        } else if status.is_success() && body.is_ok() {
                            slot.latencies.push(took);
                        } else {
                            slot.failed += 1;
                        }
                    }
                    Err(_) => slot.failed += 1,
                }
            }
        }));
    }
    let mut merged: Vec<Samples> = (0..calls).map(|_| Samples::default()).collect();
    for task in tasks {
        if let Ok(samples) = task.await {
            for (into, from) in merged.iter_mut().zip(samples) {
                into.latencies.extend(from.latencies);
                into.limited += from.limited;
                into.failed += from.failed;
            }
        }
    }
    merged
}
