//! `tidings-bench sync`, `tidings-bench sync-users` and `tidings-bench sync-ingest`: the sync APIs under the
//! load of apps (issue 29), against tidings or any other Google Reader server (FreshRSS).
//!
//! `sync` drives a running server's Google Reader API with C concurrent clients (closed loop:
//! each sends its next request when the last is answered) for a fixed time per call, over the
//! calls apps make most: the reading list's ids (`n=1000`), its contents (`n=100`), the
//! subscription list and the unread counts. Per call it reports requests/s, median and p95
//! latency, and the server's CPU time per request, read from `/proc/PID/stat` (utime + stime
//! of the given processes and of all their descendants, before and after), so that a server
//! whose load generator shares its cores is still measured by what it spends. Then one app's
//! first sync: the ids of up to N items, then their contents 100 at a time by `i=`, timed.
//!
//! `sync-users` gives a tidings database more users with the same subscriptions as one user,
//! each with an API key, so that the load passes no user's sync rate limit. `sync-ingest`
//! times storing new items into the feed with the most subscribers (the data set of `bench
//! generate --feeds-per-user`) and into the feed with the fewest, through the store call the fetch
//! worker makes.

use std::collections::{HashMap, HashSet};
use std::path::PathBuf;
use std::process::ExitCode;
use std::sync::Arc;
use std::sync::atomic::{AtomicUsize, Ordering};
use std::time::{Duration, Instant};

use anyhow::{Context, bail};
use clap::Args;
use tidings::config::GlobalConfig;
use tidings::output::outln;
use tidings_store::{NewItem, NewUser, Store, unix_now};

/// The reading list's stream id.
const READING_LIST: &str = "user/-/state/com.google/reading-list";
/// Item ids per `stream/items/contents` request of the first sync, as apps ask.
const CONTENTS_BATCH: usize = 100;
/// Clock ticks per second of `/proc/PID/stat` (USER_HZ, 100 on every Linux port).
pub(crate) const CLOCK_TICKS: f64 = 100.0;
/// The longest wait the first sync accepts from a `Retry-After`.
const MAX_RETRY_WAIT: Duration = Duration::from_secs(61);

/// Arguments of `tidings-bench sync`.
#[derive(Debug, Args)]
pub struct SyncBenchArgs {
    /// The Google Reader API's base: `http://HOST:PORT/api/greader.php` for both tidings and
    /// FreshRSS (tidings also answers at the root).
    #[arg(long, default_value = "http://127.0.0.1:8080/api/greader.php")]
    pub url: String,
    /// Accounts, one a line: `USERNAME PASSWORD` (signed in with ClientLogin) or a tidings API
    /// key alone (its own token), such as the keys file of `tidings-bench generate` or `sync-users`.
    /// Requests rotate over them; the first sync uses the first.
    #[arg(long)]
    pub logins: Option<PathBuf>,
    /// One account, `USERNAME:PASSWORD` (repeatable), besides those of --logins.
    #[arg(long)]
    pub login: Vec<String>,
    /// Concurrent clients.
    #[arg(long, default_value_t = 8)]
    pub clients: usize,
    /// Seconds of measured load per call (0: skip the load, first sync only).
    #[arg(long, default_value_t = 10.0)]
    pub seconds: f64,
    /// Seconds of load before each call's measurement, not counted.
    #[arg(long, default_value_t = 2.0)]
    pub warmup: f64,
    /// A server process whose CPU time is counted with its descendants' (repeatable): the
    /// tidings server; for FreshRSS the php-fpm master and the nginx master.
    #[arg(long)]
    pub pid: Vec<u32>,
    /// Items the first sync fetches (0 skips it).
    #[arg(long, default_value_t = 100_000)]
    pub first_sync: usize,
    /// Item ids per `stream/items/ids` request of the first sync (`n=`; tidings answers up
    /// to 99,999 a request).
    #[arg(long, default_value_t = 1000)]
    pub ids_page: usize,
    /// The calls to load, comma-separated: ids, contents, subscriptions, unread.
    #[arg(
        long,
        value_delimiter = ',',
        default_value = "ids,contents,subscriptions,unread"
    )]
    pub calls: Vec<String>,
    /// Ask for answers uncompressed (no `Accept-Encoding`), as FreshRSS's nginx sends them
    /// whatever the client accepts: the like-for-like comparison. By default the client
    /// accepts gzip and brotli, as apps do, and the server's CPU includes compressing.
    #[arg(long)]
    pub no_compression: bool,
}

/// Arguments of `tidings-bench sync-users`.
#[derive(Debug, Args)]
pub struct SyncUsersArgs {
    /// The user whose subscriptions every new user gets.
    #[arg(long)]
    pub from: String,
    /// How many users to create.
    #[arg(long, default_value_t = 200)]
    pub users: usize,
    /// Where to write the new users' API keys, one a line (for `tidings-bench sync --logins`).
    #[arg(long, default_value = "sync-keys.txt")]
    pub keys_file: PathBuf,
    /// A file of feed URLs (one a line, a `/moved` suffix ignored) whose stored items are
    /// deleted first, so that tidings holds what the server it is compared with could read
    /// (this FreshRSS snapshot reads no JSON Feed).
    #[arg(long)]
    pub empty_feeds: Option<PathBuf>,
}

/// Arguments of `tidings-bench sync-ingest`.
#[derive(Debug, Args)]
pub struct SyncIngestArgs {
    /// New items stored into each of the two feeds.
    #[arg(long, default_value_t = 5_000)]
    pub items: usize,
    /// Items per store call (one fetch of the feed).
    #[arg(long, default_value_t = 50)]
    pub batch: usize,
}

/// A measured call of the load.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
enum Call {
    Ids,
    Contents,
    Subscriptions,
    Unread,
}

impl Call {
    fn parse(name: &str) -> anyhow::Result<Call> {
        Ok(match name.trim() {
            "ids" => Call::Ids,
            "contents" => Call::Contents,
            "subscriptions" => Call::Subscriptions,
            "unread" => Call::Unread,
            other => {
                bail!("unknown call {other:?} in --calls: use ids, contents, subscriptions, unread")
            }
        })
    }

    /// The path and query under `/reader/api/0/`.
    fn path(self) -> String {
        match self {
            Call::Ids => format!("stream/items/ids?s={READING_LIST}&n=1000&output=json"),
            Call::Contents => format!("stream/contents/{READING_LIST}?n=100&output=json"),
            Call::Subscriptions => "subscription/list?output=json".into(),
            Call::Unread => "unread-count?output=json".into(),
        }
    }
}

/// The HTTP client, the API base and the accounts' tokens.
struct Target {
    client: reqwest::Client,
    base: String,
    tokens: Vec<String>,
}

impl Target {
    fn get(&self, path: &str, token: &str) -> reqwest::RequestBuilder {
        self.client
            .get(format!("{}/reader/api/0/{path}", self.base))
            .header("authorization", format!("GoogleLogin auth={token}"))
    }
}

/// What one call's load measured.
#[derive(Debug, Default)]
struct Samples {
    latencies: Vec<Duration>,
    limited: usize,
    failed: usize,
}

/// Runs `tidings-bench sync`.
pub async fn sync(args: SyncBenchArgs) -> anyhow::Result<ExitCode> {
    let calls: Vec<Call> = args
        .calls
        .iter()
        .filter(|c| !c.trim().is_empty())
        .map(|c| Call::parse(c))
        .collect::<anyhow::Result<_>>()?;
    let mut client = reqwest::Client::builder()
        .pool_max_idle_per_host(args.clients.max(1))
        .timeout(Duration::from_secs(120));
    if args.no_compression {
        // Without a decoder enabled, reqwest sends no Accept-Encoding.
        client = client.no_gzip().no_brotli().no_deflate();
    }
    let client = client.build()?;
    let base = args.url.trim_end_matches('/').to_string();
    let tokens = sign_in(&client, &base, &args).await?;
    let target = Arc::new(Target {
        client,
        base,
        tokens,
    });
    for pid in &args.pid {
        cpu_ticks(&[*pid]).with_context(|| format!("no process {pid} (--pid)"))?;
    }
    outln!(
        "tidings-bench sync: {} against {}, {} accounts, {} clients, {} s per call, {}; load \
         average {}",
        calls
            .iter()
            .map(|c| format!("{c:?}").to_lowercase())
            .collect::<Vec<_>>()
            .join(", "),
        target.base,
        target.tokens.len(),
        args.clients,
        args.seconds,
        if args.no_compression {
            "uncompressed"
        } else {
            "gzip or brotli accepted"
        },
        load_average()
    );
    let mut healthy = true;
    if args.seconds > 0.0 && !calls.is_empty() {
        outln!(
            "{:14} {:>8} {:>9} {:>9} {:>9} {:>12} {:>6} {:>6}  load",
            "call",
            "requests",
            "req/s",
            "median",
            "p95",
            "CPU/request",
            "429",
            "errors"
        );
        for call in calls {
            healthy &= measure_call(&target, call, &args).await?;
        }
    }
    if args.first_sync > 0 {
        healthy &= first_sync(&target, &args).await?;
    }
    Ok(if healthy {
        ExitCode::SUCCESS
    } else {
        ExitCode::FAILURE
    })
}

/// The accounts' tokens: ClientLogin for `USER PASSWORD` lines, the line itself for a key.
async fn sign_in(
    client: &reqwest::Client,
    base: &str,
    args: &SyncBenchArgs,
) -> anyhow::Result<Vec<String>> {
    let mut accounts: Vec<(Option<String>, String)> = Vec::new();
    if let Some(path) = &args.logins {
        let text = std::fs::read_to_string(path)
            .with_context(|| format!("cannot read {}", path.display()))?;
        for line in text.lines().map(str::trim).filter(|l| !l.is_empty()) {
            match line.split_once(char::is_whitespace) {
                Some((user, password)) => {
                    accounts.push((Some(user.into()), password.trim().into()))
                }
                None => accounts.push((None, line.into())),
            }
        }
    }
    for login in &args.login {
        let (user, password) = login
            .split_once(':')
            .with_context(|| format!("--login {login:?} is not USERNAME:PASSWORD"))?;
        accounts.push((Some(user.into()), password.into()));
    }
    if accounts.is_empty() {
        bail!("no accounts: give --logins FILE or --login USERNAME:PASSWORD");
    }
    let mut tokens = Vec::with_capacity(accounts.len());
    for (user, password) in accounts {
        let Some(user) = user else {
            tokens.push(password);
            continue;
        };
        let body: String = url::form_urlencoded::Serializer::new(String::new())
            .append_pair("Email", &user)
            .append_pair("Passwd", &password)
            .finish();
        let answer = client
            .post(format!("{base}/accounts/ClientLogin"))
            .header("content-type", "application/x-www-form-urlencoded")
            .body(body)
            .send()
            .await
            .with_context(|| format!("{base} did not answer ClientLogin"))?;
        let status = answer.status();
        let text = answer.text().await?;
        let token = text
            .lines()
            .find_map(|l| l.strip_prefix("Auth="))
            .filter(|_| status.is_success())
            .with_context(|| format!("ClientLogin of {user} failed ({status}): {text}"))?;
        tokens.push(token.trim().to_string());
    }
    Ok(tokens)
}

/// Loads one call for the warm-up, then for the measured time; prints its line. Returns
/// whether no request failed.
async fn measure_call(
    target: &Arc<Target>,
    call: Call,
    args: &SyncBenchArgs,
) -> anyhow::Result<bool> {
    let counter = Arc::new(AtomicUsize::new(0));
    if args.warmup > 0.0 {
        run_load(target, call, args.clients, args.warmup, &counter).await;
    }
    let cpu_before = cpu_ticks(&args.pid);
    let started = Instant::now();
    let mut samples = run_load(target, call, args.clients, args.seconds, &counter).await;
    let elapsed = started.elapsed().as_secs_f64();
    let cpu_after = cpu_ticks(&args.pid);
    samples.latencies.sort();
    let answered = samples.latencies.len();
    let cpu = match (cpu_before, cpu_after) {
        (Some(before), Some(after)) if answered > 0 && !args.pid.is_empty() => format!(
            "{:.2} ms",
            (after.saturating_sub(before)) as f64 / CLOCK_TICKS * 1000.0 / answered as f64
        ),
        _ => "-".into(),
    };
    outln!(
        "{:14} {:>8} {:>9.1} {:>9} {:>9} {:>12} {:>6} {:>6}  {}",
        format!("{call:?}").to_lowercase(),
        answered,
        answered as f64 / elapsed,
        crate::quantiles::ms_at(&samples.latencies, 0.5, 1),
        crate::quantiles::ms_at(&samples.latencies, 0.95, 1),
        cpu,
        samples.limited,
        samples.failed,
        load_average()
    );
    Ok(samples.failed == 0)
}

/// `clients` clients send `call` one request after another for `seconds`; request n uses
/// token n (rotating), counted on from `counter` so that runs continue the rotation.
async fn run_load(
    target: &Arc<Target>,
    call: Call,
    clients: usize,
    seconds: f64,
    counter: &Arc<AtomicUsize>,
) -> Samples {
    let deadline = Instant::now() + Duration::from_secs_f64(seconds);
    let path = Arc::new(call.path());
    let mut tasks = Vec::new();
    for _ in 0..clients.max(1) {
        let (target, counter, path) = (Arc::clone(target), Arc::clone(counter), path.clone());
        tasks.push(tokio::spawn(async move {
            let mut samples = Samples::default();
            while Instant::now() < deadline {
                let n = counter.fetch_add(1, Ordering::Relaxed);
                let token = &target.tokens[n % target.tokens.len()];
                let sent = Instant::now();
                match target.get(&path, token).send().await {
                    Ok(response) => {
                        let status = response.status();
                        // The body is part of the answer's time.
                        let body = response.bytes().await;
                        if status == reqwest::StatusCode::TOO_MANY_REQUESTS {
                            samples.limited += 1;
                        } else if status.is_success() && body.is_ok() {
                            samples.latencies.push(sent.elapsed());
                        } else {
                            samples.failed += 1;
                        }
                    }
                    Err(_) => samples.failed += 1,
                }
            }
            samples
        }));
    }
    let mut merged = Samples::default();
    for task in tasks {
        if let Ok(samples) = task.await {
            merged.latencies.extend(samples.latencies);
            merged.limited += samples.limited;
            merged.failed += samples.failed;
        }
    }
    merged
}

/// One app's first sync as the first account: the reading list's ids, `--ids-page` at a time
/// with the continuation, up to `--first-sync` of them, then their contents `CONTENTS_BATCH`
/// at a time by `i=` (POST). A 429 is waited out as an app would, and the waits are reported
/// apart. Returns whether every item came back.
async fn first_sync(target: &Arc<Target>, args: &SyncBenchArgs) -> anyhow::Result<bool> {
    let token = target.tokens[0].clone();
    let cpu_before = cpu_ticks(&args.pid);
    let started = Instant::now();
    let mut waited = Duration::ZERO;
    let mut requests = 0usize;
    let mut ids: Vec<String> = Vec::new();
    let mut continuation: Option<String> = None;
    while ids.len() < args.first_sync {
        let n = args.ids_page.max(1).min(args.first_sync - ids.len());
        let mut path = format!("stream/items/ids?s={READING_LIST}&n={n}&output=json");
        if let Some(c) = &continuation {
            path.push_str(&format!(
                "&c={}",
                url::form_urlencoded::byte_serialize(c.as_bytes()).collect::<String>()
            ));
        }
        let page = send_patiently(|| target.get(&path, &token), &mut waited).await?;
        requests += 1;
        let refs = page["itemRefs"].as_array().cloned().unwrap_or_default();
        ids.extend(refs.iter().filter_map(|r| match &r["id"] {
            serde_json::Value::String(s) => Some(s.clone()),
            serde_json::Value::Number(n) => Some(n.to_string()),
            _ => None,
        }));
        continuation = page["continuation"].as_str().map(String::from);
        if refs.is_empty() || continuation.is_none() {
            break;
        }
    }
    let (ids_time, ids_waited) = (started.elapsed(), waited);
    let unique: HashSet<&String> = ids.iter().collect();
    let mut received = 0usize;
    for chunk in ids.chunks(CONTENTS_BATCH) {
        let body = chunk
            .iter()
            .map(|id| format!("i={id}"))
            .collect::<Vec<_>>()
            .join("&");
        let page = send_patiently(
            || {
                target
                    .client
                    .post(format!(
                        "{}/reader/api/0/stream/items/contents?output=json",
                        target.base
                    ))
                    .header("authorization", format!("GoogleLogin auth={token}"))
                    .header("content-type", "application/x-www-form-urlencoded")
                    .body(body.clone())
            },
            &mut waited,
        )
        .await?;
        requests += 1;
        received += page["items"].as_array().map_or(0, Vec::len);
    }
    let elapsed = started.elapsed();
    let cpu = match (cpu_before, cpu_ticks(&args.pid)) {
        (Some(before), Some(after)) if !args.pid.is_empty() => {
            format!("{:.1} s", after.saturating_sub(before) as f64 / CLOCK_TICKS)
        }
        _ => "-".into(),
    };
    outln!(
        "first sync:    {} ids ({} distinct) in {:.1} s ({:.1} s waiting on 429s), {received} \
         items' contents in {:.1} s ({:.1} s waiting): {:.1} s in all, {requests} requests, \
         {:.1} s without the waits; server CPU {cpu}; load {}",
        ids.len(),
        unique.len(),
        ids_time.as_secs_f64(),
        ids_waited.as_secs_f64(),
        (elapsed - ids_time).as_secs_f64(),
        (waited - ids_waited).as_secs_f64(),
        elapsed.as_secs_f64(),
        (elapsed - waited).as_secs_f64(),
        load_average()
    );
    Ok(received == ids.len() && unique.len() == ids.len())
}

/// Sends a request (rebuilt for each try), waits out 429s by their `Retry-After`, and
/// returns the JSON answer.
async fn send_patiently(
    request: impl Fn() -> reqwest::RequestBuilder,
    waited: &mut Duration,
) -> anyhow::Result<serde_json::Value> {
    loop {
        let response = request()
            .send()
            .await
            .context("the server did not answer")?;
        let status = response.status();
        if status == reqwest::StatusCode::TOO_MANY_REQUESTS {
            let wait = response
                .headers()
                .get("retry-after")
                .and_then(|v| v.to_str().ok())
                .and_then(|v| v.trim().parse::<u64>().ok())
                .map_or(Duration::from_secs(1), Duration::from_secs)
                .min(MAX_RETRY_WAIT);
            tokio::time::sleep(wait).await;
            *waited += wait;
            continue;
        }
        let body = response.bytes().await?;
        if !status.is_success() {
            bail!(
                "the server answered {status}: {}",
                String::from_utf8_lossy(&body[..body.len().min(300)])
            );
        }
        return serde_json::from_slice(&body).context("the answer is not JSON");
    }
}

/// The 1-minute load average, from /proc/loadavg.
pub(crate) fn load_average() -> String {
    std::fs::read_to_string("/proc/loadavg")
        .ok()
        .and_then(|l| l.split_whitespace().next().map(String::from))
        .unwrap_or_else(|| "?".into())
}

/// CPU clock ticks (user + system, with those of waited-for children) of the given processes
/// and of all their descendants; `None` when a given process is gone. A descendant that exits
/// between two readings moves its time into its parent's children's time, so the difference
/// of two readings still counts it once.
pub(crate) fn cpu_ticks(roots: &[u32]) -> Option<u64> {
    let mut parents: HashMap<u32, Vec<u32>> = HashMap::new();
    let mut times: HashMap<u32, u64> = HashMap::new();
    for entry in std::fs::read_dir("/proc").ok()?.flatten() {
        let Some(pid) = entry
            .file_name()
            .to_str()
            .and_then(|n| n.parse::<u32>().ok())
        else {
            continue;
        };
        let Some((ppid, ticks)) = process_stat(pid) else {
            continue;
        };
        parents.entry(ppid).or_default().push(pid);
        times.insert(pid, ticks);
    }
    let mut total = 0;
    let mut queue: Vec<u32> = roots.to_vec();
    let mut seen = HashSet::new();
    for root in roots {
        times.get(root)?;
    }
    while let Some(pid) = queue.pop() {
        if !seen.insert(pid) {
            continue;
        }
        total += times.get(&pid).copied().unwrap_or(0);
        queue.extend(parents.get(&pid).into_iter().flatten().copied());
    }
    Some(total)
}

/// A process's parent and its CPU ticks (utime + stime + cutime + cstime), from
/// /proc/PID/stat (the fields after the command name, which may hold spaces and parentheses).
fn process_stat(pid: u32) -> Option<(u32, u64)> {
    let stat = std::fs::read_to_string(format!("/proc/{pid}/stat")).ok()?;
    let rest = &stat[stat.rfind(')')? + 1..];
    let fields: Vec<&str> = rest.split_whitespace().collect();
    // fields[0] is field 3 (state): ppid is field 4, utime..cstime fields 14..17.
    let ppid = fields.get(1)?.parse().ok()?;
    let ticks = fields
        .get(11..15)?
        .iter()
        .map(|f| f.parse::<i64>().unwrap_or(0).max(0) as u64)
        .sum();
    Some((ppid, ticks))
}

/// Runs `tidings-bench sync-users`.
pub async fn sync_users(config: &GlobalConfig, args: SyncUsersArgs) -> anyhow::Result<ExitCode> {
    let store = crate::store::open_store_for_bulk_load(config).await?;
    let (from, _) = store
        .user_credentials(&args.from)
        .await?
        .with_context(|| format!("no user {:?} (--from)", args.from))?;
    let feed_ids: Vec<i64> = store
        .list_subscriptions(from.id)
        .await?
        .iter()
        .map(|s| s.feed_id)
        .collect();
    if feed_ids.is_empty() {
        bail!("{} has no subscriptions to copy", args.from);
    }
    if let Some(path) = &args.empty_feeds {
        empty_feeds(&store, path).await?;
    }
    let started = Instant::now();
    let now = unix_now();
    let mut keys = String::new();
    for u in 0..args.users {
        let user = store
            .create_user(&NewUser {
                username: format!("{}-sync-{now:x}-{u}", args.from),
                password_hash: None,
                is_admin: false,
            })
            .await?;
        crate::api::subscribe_by_sql(&store, user.id, &feed_ids, now).await?;
        keys.push_str(&crate::api::new_api_key(&store, &user, "bench sync").await?);
        keys.push('\n');
    }
    std::fs::write(&args.keys_file, keys)
        .with_context(|| format!("cannot write {}", args.keys_file.display()))?;
    outln!(
        "{} users with the {} subscriptions of {} in {:.1} s; keys in {}",
        args.users,
        feed_ids.len(),
        args.from,
        started.elapsed().as_secs_f64(),
        args.keys_file.display()
    );
    store.close().await;
    Ok(ExitCode::SUCCESS)
}

/// Deletes the items of the feeds a file lists (their URLs, or those with `/moved` appended).
async fn empty_feeds(store: &Store, path: &std::path::Path) -> anyhow::Result<()> {
    let text =
        std::fs::read_to_string(path).with_context(|| format!("cannot read {}", path.display()))?;
    let wanted: HashSet<&str> = text
        .lines()
        .map(str::trim)
        .filter(|l| !l.is_empty())
        .collect();
    let mut emptied = 0;
    for feed in store.list_feeds().await? {
        if wanted.contains(feed.url.trim_end_matches("/moved")) {
            store
                .execute_raw(&format!("DELETE FROM items WHERE feed_id = {}", feed.id))
                .await?;
            emptied += 1;
        }
    }
    outln!("emptied {emptied} of the {} feeds listed", wanted.len());
    Ok(())
}

/// Runs `tidings-bench sync-ingest`.
pub async fn sync_ingest(config: &GlobalConfig, args: SyncIngestArgs) -> anyhow::Result<ExitCode> {
    let store = crate::store::open_store_for_bulk_load(config).await?;
    let feeds = store.list_feeds().await?;
    let shared = feeds
        .iter()
        .max_by_key(|f| f.subscribers)
        .context("the database has no feeds: run `tidings-bench generate` first")?;
    // For comparison: the feed with the fewest subscribers.
    let single = feeds
        .iter()
        .filter(|f| f.subscribers > 0 && f.id != shared.id)
        .min_by_key(|f| f.subscribers);
    outln!(
        "tidings-bench sync-ingest on {}: {} new items per feed, {} per store call; load \
         average {}",
        store.engine(),
        args.items,
        args.batch,
        load_average()
    );
    for feed in std::iter::once(shared).chain(single) {
        let rate = ingest(&store, feed.id, &args).await?;
        outln!(
            "feed {} ({} subscribers): {} items in {:.1} s: {:.0} items/s; load {}",
            feed.id,
            feed.subscribers,
            args.items,
            args.items as f64 / rate,
            rate,
            load_average()
        );
    }
    store.close().await;
    Ok(ExitCode::SUCCESS)
}

/// Stores `args.items` new items into a feed, `args.batch` per call; returns items/s.
async fn ingest(store: &Store, feed_id: i64, args: &SyncIngestArgs) -> anyhow::Result<f64> {
    let now = unix_now();
    let run = std::process::id();
    let started = Instant::now();
    for start in (0..args.items).step_by(args.batch.max(1)) {
        let items: Vec<NewItem> = (start..(start + args.batch.max(1)).min(args.items))
            .map(|k| {
                let (title, content) = crate::search::article(k);
                NewItem {
                    guid: Some(format!("ingest-{now}-{run}-{feed_id}-{k}")),
                    url: Some(format!("https://ingest.invalid/{now}/{feed_id}/{k}")),
                    title: Some(title),
                    content: Some(content),
                    published: Some(now - k as i64),
                    ..NewItem::default()
                }
            })
            .collect();
        let counts = store.upsert_items(feed_id, &items, unix_now()).await?;
        if counts.inserted as usize != items.len() {
            bail!(
                "feed {feed_id}: {} of {} items were inserted",
                counts.inserted,
                items.len()
            );
        }
    }
    Ok(args.items as f64 / started.elapsed().as_secs_f64().max(0.000_001))
}
