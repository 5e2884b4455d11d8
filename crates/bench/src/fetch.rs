//! `tidings-bench fetch` and `farm`: the fetch worker against a local feed server, end to end
//! through the guarded client, the parser, the sanitizer and the store.
//!
//! By default the server serves N feeds (RSS 2.0, Atom and JSON Feed in turn, 20 items each)
//! under 100 host names that the client resolves to 127.0.0.1, so the per-host limits bound
//! each host as they would on the internet without throttling the run as a whole. With
//! `--mix` it serves the world's mix instead, every feed on one host ([`crate::mix`]).
//! One user follows every feed; one full refresh runs, then a second one in which every feed
//! that answered is due again (the good ones answer 304).

use std::collections::HashMap;
use std::net::{IpAddr, Ipv4Addr};
use std::process::ExitCode;
use std::sync::Arc;
use std::sync::atomic::Ordering;
use std::time::Instant;

use anyhow::Context;
use axum::extract::{Path, State};
use axum::http::{HeaderMap, StatusCode, header};
use axum::response::{IntoResponse, Response};
use clap::Args;
use tidings::commands::worker::FetchSettings;
use tidings::config::GlobalConfig;
use tidings::output::outln;
use tidings_fetch::{AddressPolicy, ClientConfig, GuardedClient};
use tidings_store::{NewSubscription, NewUser, Store, StoreOptions};
use tidings_worker::{FetchResult, Fetcher, Worker, WorkerConfig, WorkerMetrics};

use crate::documents::{feed_document, icon_response};
use crate::mix;

/// Host names the bench's feeds are spread over.
const BENCH_HOSTS: usize = 100;
/// Items per feed.
const ITEMS_PER_FEED: usize = 20;
/// The database URL used when none is given: a temporary SQLite file.
const DEFAULT_DATABASE_URL: &str = "sqlite://tidings.db";

/// Arguments of `tidings-bench farm`.
#[derive(Debug, Args)]
pub struct FarmArgs {
    /// How many feeds: by default 10,000, or 500 with --mix.
    #[arg(long)]
    pub feeds: Option<usize>,
    /// Serve the world's mix (as `tidings-bench fetch --mix`) instead of uniform feeds of 20 items.
    #[arg(long)]
    pub mix: bool,
    /// The port to serve on, on 127.0.0.1. Every feed is on this one host.
    #[arg(long, default_value_t = 8900)]
    pub port: u16,
    /// The user to create and subscribe to every feed.
    #[arg(long, default_value = "bench")]
    pub user: String,
}

/// Arguments of `tidings-bench fetch`.
#[derive(Debug, Args)]
pub struct FetchBenchArgs {
    /// How many feeds the local server serves (and the user follows): by default 10,000, or
    /// 500 with --mix.
    #[arg(long)]
    pub feeds: Option<usize>,
    /// Feeds fetched at once (by default 10, or 20 with --mix).
    #[arg(long)]
    pub concurrency: Option<usize>,
    /// Serve the world's mix instead of uniform feeds: every feed on one host, 5 to 500 items,
    /// with 404s, 429s, 5xx, redirect loops, slow and trickling servers and 20 MB bodies.
    #[arg(long)]
    pub mix: bool,
    /// The outbound settings, as for `tidings worker` (private networks are always allowed:
    /// the farm is on 127.0.0.1).
    #[command(flatten)]
    pub fetch: tidings::commands::worker::FetchArgs,
}

/// Runs `tidings-bench farm`: subscribes a new user to the farm's feeds, then serves them
/// until Ctrl-C.
pub async fn farm(config: &GlobalConfig, args: FarmArgs) -> anyhow::Result<ExitCode> {
    let feeds = args.feeds.unwrap_or(if args.mix { 500 } else { 10_000 });
    let server = tokio::net::TcpListener::bind((Ipv4Addr::LOCALHOST, args.port))
        .await
        .with_context(|| format!("the farm could not listen on 127.0.0.1:{}", args.port))?;
    let port = args.port;
    let mix = args.mix.then(|| Arc::new(mix::Farm::new(feeds, port)));
    let router = match &mix {
        Some(farm) => Arc::clone(farm).router(),
        None => uniform_router(port, false),
    };
    let store = crate::store::open_store(config).await?;
    let user = store
        .create_user(&NewUser {
            username: args.user.clone(),
            password_hash: None,
            is_admin: false,
        })
        .await
        .with_context(|| {
            format!(
                "the user {:?} could not be created (use a new database, or another --user)",
                args.user
            )
        })?;
    let started = Instant::now();
    for id in 0..feeds {
        let feed_url = match &mix {
            Some(farm) => farm.feed_url(id),
            None => format!("http://127.0.0.1:{port}/f/{id}"),
        };
        store
            .subscribe(
                user.id,
                &NewSubscription {
                    feed_url,
                    ..NewSubscription::default()
                },
            )
            .await?;
    }
    store.close().await;
    outln!(
        "subscribed {} to {feeds} feeds in {:.1} s; serving them on http://127.0.0.1:{port}/ \
         until stopped (Ctrl-C)",
        args.user,
        started.elapsed().as_secs_f64()
    );
    axum::serve(server, router)
        .with_graceful_shutdown(async {
            let _ = tokio::signal::ctrl_c().await;
        })
        .await
        .context("the farm stopped")?;
    if let Some(farm) = mix {
        outln!(
            "requests: {} for feeds, {} for favicons",
            farm.feed_requests.load(Ordering::Relaxed),
            farm.other_requests.load(Ordering::Relaxed)
        );
    }
    Ok(ExitCode::SUCCESS)
}

/// The uniform farm's routes: feeds of 20 items whose sites are on the bench's host names
/// (`spread`) or on 127.0.0.1.
fn uniform_router(port: u16, spread: bool) -> axum::Router {
    axum::Router::new()
        .route("/f/{id}", axum::routing::get(serve_feed))
        .route("/favicon.ico", axum::routing::get(serve_icon))
        .with_state((port, spread))
}

/// Runs `tidings-bench fetch`: two full refreshes of the local farm, with their figures.
pub async fn fetch(config: &GlobalConfig, args: FetchBenchArgs) -> anyhow::Result<ExitCode> {
    let feeds = args
        .feeds
        .unwrap_or(if args.mix { 500 } else { 10_000 })
        .max(1);
    let concurrency = args
        .concurrency
        .unwrap_or(if args.mix { 20 } else { 10 })
        .max(1);
    let mut fetch_settings = args.fetch.check()?;
    fetch_settings.allow_private_networks = true;
    let (port, farm) = serve_farm(feeds, args.mix).await?;

    let temp = tempfile::tempdir().context("no temporary directory")?;
    let (store, schema) = open_bench_store(config, &temp).await?;
    print_plan(
        config,
        &store,
        &fetch_settings,
        feeds,
        concurrency,
        farm.as_deref(),
    )?;
    subscribe_bench_user(&store, feeds, |id| match &farm {
        Some(farm) => farm.feed_url(id),
        None => feed_url(id, port),
    })
    .await?;

    let metrics = Arc::new(WorkerMetrics::default());
    let worker = bench_worker(&store, &fetch_settings, concurrency, Arc::clone(&metrics))?;
    let requests = || {
        farm.as_ref().map(|farm| {
            (
                farm.feed_requests.load(Ordering::Relaxed),
                farm.other_requests.load(Ordering::Relaxed),
            )
        })
    };
    let before = requests();
    let first = timed_round(&worker, &metrics, "first refresh").await?;
    report_requests(before, requests(), feeds)?;
    store
        .execute_raw("UPDATE feed_fetch_state SET next_check_at = 0")
        .await?;
    let before = requests();
    let second_label = if args.mix {
        "second refresh"
    } else {
        "all-304 refresh"
    };
    let second = timed_round(&worker, &metrics, second_label).await?;
    report_requests(before, requests(), feeds)?;

    report_store(&store, &metrics).await?;
    if let Some(schema) = schema {
        store
            .execute_raw(&format!("DROP SCHEMA {schema} CASCADE"))
            .await?;
    }
    store.close().await;
    // With the mix, feeds that were stopped (404, 410) or told to wait (429) in the first
    // round are not due in the second.
    let complete = first == feeds && (second == feeds || args.mix);
    if !complete {
        eprintln!(
            "tidings-bench: not every feed was fetched in each round ({first}, {second} of {feeds})"
        );
    }
    Ok(if complete {
        ExitCode::SUCCESS
    } else {
        ExitCode::FAILURE
    })
}

/// Serves the bench's farm on a free port of 127.0.0.1 in the background: the world's mix
/// (returned, for its request counts) or uniform feeds spread over the bench's host names.
async fn serve_farm(feeds: usize, mix: bool) -> anyhow::Result<(u16, Option<Arc<mix::Farm>>)> {
    let server = tokio::net::TcpListener::bind((Ipv4Addr::LOCALHOST, 0))
        .await
        .context("the bench feed server could not listen")?;
    let port = server.local_addr()?.port();
    let farm = mix.then(|| Arc::new(mix::Farm::new(feeds, port)));
    let router = match &farm {
        Some(farm) => Arc::clone(farm).router(),
        None => uniform_router(port, true),
    };
    tokio::spawn(async move {
        let _ = axum::serve(server, router).await;
    });
    Ok((port, farm))
}

/// The run's first lines: the farm, the database, the limits, and with the mix its make-up.
fn print_plan(
    config: &GlobalConfig,
    store: &Store,
    fetch_settings: &FetchSettings,
    feeds: usize,
    concurrency: usize,
    farm: Option<&mix::Farm>,
) -> anyhow::Result<()> {
    let limits = &fetch_settings.per_host;
    outln!(
        "tidings-bench fetch: {feeds} {} on {} ({}), concurrency {concurrency}; per host: {}/s, \
         {} at once + {} slow after {} s; first byte within {} s, all within {} s",
        if farm.is_some() {
            "feeds of the mix on one host".to_string()
        } else {
            format!("feeds x {ITEMS_PER_FEED} items on {BENCH_HOSTS} hosts")
        },
        store.engine(),
        if config.database_url == DEFAULT_DATABASE_URL {
            "temporary file".to_string()
        } else {
            tidings_store::redact_url(&config.database_url)
        },
        limits.rate_per_second,
        limits.concurrency,
        limits.slow,
        limits.slow_after.as_secs(),
        fetch_settings.first_byte_timeout.as_secs(),
        fetch_settings.timeout.as_secs(),
    );
    let Some(farm) = farm else {
        return Ok(());
    };
    let mut kinds: Vec<(&str, usize)> = Vec::new();
    for behaviour in farm.behaviours() {
        match kinds.iter_mut().find(|(name, _)| *name == behaviour.name()) {
            Some((_, count)) => *count += 1,
            None => kinds.push((behaviour.name(), 1)),
        }
    }
    let items: usize = farm
        .behaviours()
        .iter()
        .map(|b| match b {
            mix::Behaviour::WellBehaved(items) => *items,
            _ => 0,
        })
        .sum();
    let kinds: Vec<String> = kinds
        .iter()
        .map(|(name, count)| format!("{count} {name}"))
        .collect();
    outln!(
        "the mix:        {}; {items} items in the good feeds",
        kinds.join(", ")
    );
    Ok(())
}

/// Creates the user `bench` and subscribes it to `feeds` feeds, feed `id` at `url(id)`.
async fn subscribe_bench_user(
    store: &Store,
    feeds: usize,
    url: impl Fn(usize) -> String,
) -> anyhow::Result<()> {
    let setup = Instant::now();
    let user = store
        .create_user(&NewUser {
            username: "bench".into(),
            password_hash: None,
            is_admin: false,
        })
        .await?;
    for id in 0..feeds {
        store
            .subscribe(
                user.id,
                &NewSubscription {
                    feed_url: url(id),
                    ..NewSubscription::default()
                },
            )
            .await?;
    }
    outln!(
        "subscribed:     {feeds} feeds in {:.1} s",
        setup.elapsed().as_secs_f64()
    );
    Ok(())
}

/// The fetch worker of the bench: the outbound settings given, private networks allowed, and
/// the bench's host names resolved to 127.0.0.1.
fn bench_worker(
    store: &Store,
    fetch_settings: &FetchSettings,
    concurrency: usize,
    metrics: Arc<WorkerMetrics>,
) -> anyhow::Result<Worker> {
    let overrides: HashMap<String, Vec<IpAddr>> = (0..BENCH_HOSTS)
        .map(|h| (host(h), vec![IpAddr::V4(Ipv4Addr::LOCALHOST)]))
        .collect();
    let client = GuardedClient::new(ClientConfig {
        timeout: fetch_settings.timeout,
        first_byte_timeout: fetch_settings.first_byte_timeout,
        address_policy: AddressPolicy {
            allow_private_networks: true,
            ..AddressPolicy::default()
        },
        dns_overrides: overrides,
        ..ClientConfig::default()
    })?;
    let fetcher = Fetcher::with_metrics(
        store.clone(),
        client,
        WorkerConfig {
            concurrency,
            per_host: fetch_settings.per_host,
            ..WorkerConfig::default()
        },
        metrics,
    );
    Ok(Worker::new(fetcher))
}

/// The figures after the rounds: peak memory, the database's size, the raw bodies kept and
/// the fetch outcomes.
async fn report_store(store: &Store, metrics: &WorkerMetrics) -> anyhow::Result<()> {
    let size = store.database_size_bytes().await?;
    let peak = peak_rss_kib();
    outln!(
        "peak memory:    {}",
        peak.map_or("unknown (no /proc/self/status)".into(), |kib| format!(
            "{:.1} MB (VmHWM)",
            kib as f64 / 1024.0
        ))
    );
    outln!("database size:  {:.1} MB", size as f64 / 1_048_576.0);
    let kept = store.feed_body_totals().await?;
    outln!(
        "raw bodies:     {} kept, {:.2} MB compressed from {:.2} MB ({:.1} %), {:.1} KB per feed",
        kept.bodies,
        kept.compressed_bytes as f64 / 1_048_576.0,
        kept.raw_bytes as f64 / 1_048_576.0,
        100.0 * kept.compressed_bytes as f64 / (kept.raw_bytes.max(1)) as f64,
        kept.compressed_bytes as f64 / 1024.0 / (kept.bodies.max(1)) as f64
    );
    let snapshot = metrics.snapshot();
    outln!(
        "outcomes:       {}",
        serde_json::to_string(&snapshot.results).unwrap_or_default()
    );
    Ok(())
}

/// Prints the farm's requests during a round: feeds (redirect hops included) and favicon
/// lookups (site pages and icons), and both per feed.
fn report_requests(
    before: Option<(u64, u64)>,
    after: Option<(u64, u64)>,
    feeds: usize,
) -> anyhow::Result<()> {
    let (Some((feed_before, other_before)), Some((feed_after, other_after))) = (before, after)
    else {
        return Ok(());
    };
    let (feed, other) = (feed_after - feed_before, other_after - other_before);
    outln!(
        "  requests:     {} ({feed} for feeds, {other} for favicons): {:.2} per feed",
        feed + other,
        (feed + other) as f64 / feeds as f64
    );
    Ok(())
}

/// One full round; prints its figures and returns how many feeds were fetched.
async fn timed_round(
    worker: &Worker,
    metrics: &WorkerMetrics,
    label: &str,
) -> anyhow::Result<usize> {
    let before = metrics.snapshot();
    let started = Instant::now();
    let reports = worker.run_once().await?;
    let elapsed = started.elapsed().as_secs_f64();
    let after = metrics.snapshot();
    let items =
        after.items_inserted - before.items_inserted + after.items_updated - before.items_updated;
    let count = |result| after.result(result) - before.result(result);
    outln!(
        "{label:15} {} feeds in {elapsed:.1} s: {:.0} feeds/s, {items} items stored, {:.0} items/s \
         ({} parsed, {} not modified, {} failed)",
        reports.len(),
        reports.len() as f64 / elapsed,
        items as f64 / elapsed,
        count(FetchResult::Parsed),
        count(FetchResult::NotModified),
        reports.len() as u64 - count(FetchResult::Parsed) - count(FetchResult::NotModified),
    );
    Ok(reports.len())
}

/// The bench's store: a temporary SQLite file by default; on PostgreSQL a fresh schema
/// (returned, to drop at the end) so that the bench never touches existing tables.
async fn open_bench_store(
    config: &GlobalConfig,
    temp: &tempfile::TempDir,
) -> anyhow::Result<(Store, Option<String>)> {
    let url = &config.database_url;
    if url == DEFAULT_DATABASE_URL {
        let path = temp.path().join("bench.db");
        let store =
            Store::connect(&StoreOptions::new(format!("sqlite://{}", path.display()))).await?;
        store.migrate().await?;
        return Ok((store, None));
    }
    if url.starts_with("postgres") {
        let schema = format!("bench_{}", std::process::id());
        let admin = Store::connect(&StoreOptions::new(url)).await?;
        admin
            .execute_raw(&format!("CREATE SCHEMA {schema}"))
            .await?;
        admin.close().await;
        let separator = if url.contains('?') { '&' } else { '?' };
        let mut options = StoreOptions::new(format!(
            "{url}{separator}options=-c%20search_path%3D{schema}"
        ));
        options.max_connections = config.database_max_connections;
        options.acquire_timeout = config.database_acquire_timeout;
        let store = Store::connect(&options).await?;
        store.migrate().await?;
        return Ok((store, Some(schema)));
    }
    let store = crate::store::open_store(config).await?;
    Ok((store, None))
}

fn host(index: usize) -> String {
    format!("h{index}.bench.test")
}

fn feed_url(id: usize, port: u16) -> String {
    format!("http://{}:{port}/f/{id}", host(id % BENCH_HOSTS))
}

/// VmHWM (peak resident set) of this process in KiB, from /proc/self/status.
fn peak_rss_kib() -> Option<u64> {
    let status = std::fs::read_to_string("/proc/self/status").ok()?;
    status
        .lines()
        .find_map(|line| line.strip_prefix("VmHWM:"))
        .and_then(|rest| rest.trim().trim_end_matches("kB").trim().parse().ok())
}

async fn serve_icon() -> Response {
    icon_response()
}

/// A feed, generated on each request (nothing is kept, so the server adds no memory): the
/// format by id, a stable ETag, 304 when the client sends it back.
async fn serve_feed(
    State((port, spread)): State<(u16, bool)>,
    Path(id): Path<usize>,
    headers: HeaderMap,
) -> Response {
    let etag = format!("\"bench-{id}-v1\"");
    if headers
        .get(header::IF_NONE_MATCH)
        .is_some_and(|value| value.as_bytes() == etag.as_bytes())
    {
        return (StatusCode::NOT_MODIFIED, [(header::ETAG, etag)]).into_response();
    }
    let site = if spread {
        format!("http://{}:{port}", host(id % BENCH_HOSTS))
    } else {
        format!("http://127.0.0.1:{port}")
    };
    let (content_type, body) = feed_document(id, &site, ITEMS_PER_FEED, "bench");
    (
        [
            (header::CONTENT_TYPE, content_type.to_string()),
            (header::ETAG, etag),
        ],
        body,
    )
        .into_response()
}
