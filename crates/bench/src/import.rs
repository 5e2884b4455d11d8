//! `tidings-bench import`: the OPML import of issue 32 as a person leaving another reader runs
//! it, against the farm of `tidings-bench fetch --mix` (500 feeds on one host, 87 of them
//! misbehaving), and the same farm's first update by reader (lemon24/reader, Python) for
//! comparison.
//!
//! The bench serves the farm in-process and writes its OPML, then runs the release `tidings
//! serve` given by `--tidings` as a child process on a fresh database (a temporary SQLite file,
//! or a PostgreSQL database of its own created beside the one `--database-url` names and
//! dropped at the end), with a user and an API key made beforehand. It uploads the OPML to
//! `POST /api/v1/opml` and follows the job until it is done and the imported feeds' items
//! stop arriving, sampling the server's resident memory (VmRSS) every 50 ms throughout. The
//! REST API allows a user 120 requests a minute, so the job and the stored items are
//! followed in the database (the job's row is what `GET /opml/imports/{id}` answers from);
//! the API is asked once at the end for the job's report.
//!
//! With `--enrichment` (issue 38), the importing user wants summaries of every feed, so that
//! every enrichment that needs no outside service runs (full text in `auto`, tags, related
//! items' local vectors, summaries by the built-in summarizer, languages); after the import
//! the bench waits until the server's queues are empty and its CPU time stops growing, then
//! reports the server's CPU seconds, the article pages the farm served and the database's
//! bytes per item.
//!
//! With `--reader-python`, reader's `update_feeds()` then runs on the same farm's 500 URLs in
//! a fresh reader database (a small Python script run as a child process), timed and sampled
//! the same way, once per `--reader-workers` value.

use std::path::{Path, PathBuf};
use std::process::{Child, Command, ExitCode, Stdio};
use std::sync::Arc;
use std::sync::atomic::{AtomicBool, AtomicU64, Ordering};
use std::time::{Duration, Instant};

use anyhow::{Context, bail};
use clap::Args;
use tidings::config::GlobalConfig;
use tidings::output::outln;
use tidings_store::{ImportJobStatus, NewUser, Store, StoreOptions};

use crate::mix::{Behaviour, Farm};

/// The database URL used when none is given: a temporary SQLite file.
const DEFAULT_DATABASE_URL: &str = "sqlite://tidings.db";
/// How often the server's (and reader's) resident memory is sampled.
const MEMORY_EVERY: Duration = Duration::from_millis(50);
/// With `--enrichment`, the server is idle when its queues are empty and its CPU time grew by
/// less than this over the last [`IDLE_WINDOW`].
const IDLE_CPU_SECONDS: f64 = 0.2;
const IDLE_WINDOW: Duration = Duration::from_secs(10);
/// How often the job's row and the stored items are read.
const POLL_EVERY: Duration = Duration::from_millis(100);
/// The issue's memory bound for the server, in MB.
const MEMORY_TARGET_MB: f64 = 64.0;
/// The longest the bench waits for the server to start, or the import to end.
const STARTUP_LIMIT: Duration = Duration::from_secs(60);
const IMPORT_LIMIT: Duration = Duration::from_secs(600);

/// reader's first update: every feed added, `update_feeds(workers=N)` timed, then the
/// entries counted. argv: database path, file of URLs, workers.
const READER_SCRIPT: &str = r#"
import json, sys, time
from reader import make_reader
reader = make_reader(sys.argv[1])
with open(sys.argv[2]) as urls:
    for url in urls.read().split():
        reader.add_feed(url)
started = time.monotonic()
reader.update_feeds(workers=int(sys.argv[3]))
elapsed = time.monotonic() - started
feeds = list(reader.get_feeds())
print(json.dumps({
    "seconds": elapsed,
    "entries": reader.get_entry_counts().total,
    "feeds_with_error": sum(1 for feed in feeds if feed.last_exception),
    "feeds_updated": sum(1 for feed in feeds if feed.last_updated),
}))
"#;

/// Arguments of `tidings-bench import`.
#[derive(Debug, Args)]
pub struct ImportBenchArgs {
    /// The `tidings` binary to run as the server (a release build: target/release/tidings).
    #[arg(long)]
    pub tidings: Option<PathBuf>,
    /// Feeds of the farm (the world's mix of `tidings-bench fetch --mix`).
    #[arg(long, default_value_t = 500)]
    pub feeds: usize,
    /// The farm's port on 127.0.0.1 (0: a free one).
    #[arg(long, default_value_t = 0)]
    pub port: u16,
    /// The Python of a virtual environment with reader installed (`python3 -m venv DIR &&
    /// DIR/bin/pip install reader`): reader's first update of the same farm is timed too.
    #[arg(long)]
    pub reader_python: Option<PathBuf>,
    /// reader's `update_feeds(workers=N)` (repeatable: one run each); 1 is reader's default.
    #[arg(long, default_values_t = [1])]
    pub reader_workers: Vec<usize>,
    /// How long the stored items' count must stay the same after the job is done before it
    /// is taken as final.
    #[arg(long, default_value_t = 5.0)]
    pub settle_seconds: f64,
    /// Where to keep the server's log (by default a temporary file, shown on a failure).
    #[arg(long)]
    pub server_log: Option<PathBuf>,
    /// A setting for the server, `NAME=VALUE` (repeatable), such as
    /// `TIDINGS_FETCH_PER_HOST_CONCURRENCY=20`, to measure it against the defaults.
    #[arg(long = "server-env", value_parser = parse_setting)]
    pub server_env: Vec<(String, String)>,
    /// Every enrichment on (the user wants summaries of everything), and after the import a
    /// wait until the server is idle: then its CPU seconds, the article pages asked of the
    /// farm and the database's bytes per item are reported (issue 38).
    #[arg(long)]
    pub enrichment: bool,
    /// With `--enrichment`: the longest wait for the server to go idle after the import.
    #[arg(long, default_value_t = 1800.0)]
    pub enrichment_limit_seconds: f64,
    /// How long the server is left with nothing to do before its idle memory is read: once
    /// after its start (before the import), and once after the import (and, with
    /// `--enrichment`, after its queues went idle). 0 reads nothing.
    #[arg(long, default_value_t = 60.0)]
    pub idle_memory_seconds: f64,
}

/// `NAME=VALUE` of `--server-env`.
fn parse_setting(text: &str) -> Result<(String, String), String> {
    text.split_once('=')
        .filter(|(name, _)| !name.is_empty())
        .map(|(name, value)| (name.to_owned(), value.to_owned()))
        .ok_or_else(|| format!("{text:?} is not NAME=VALUE"))
}

/// A fresh database for one run, and how to drop it.
struct BenchDatabase {
    url: String,
    /// On PostgreSQL: the server's URL to connect to for the drop, and the database's name.
    drop: Option<(String, String)>,
}

/// What one measured child process used: its peak VmRSS by the samples and its VmHWM.
#[derive(Debug, Default, Clone, Copy)]
struct Memory {
    /// Resident memory with nothing to do, after the start and after the import (issue 38's
    /// memory targets count anonymous memory: the mapped database file is the kernel's to drop).
    idle_at_start: Option<IdleMemory>,
    idle_after_import: Option<IdleMemory>,
    peak_rss_kib: u64,
    /// When the peak was sampled, in ms after the sampling started.
    peak_at_ms: u64,
    hwm_kib: u64,
    samples: u64,
}

/// A process's resident memory at one moment, split as /proc/PID/status splits it.
#[derive(Debug, Default, Clone, Copy)]
struct IdleMemory {
    rss_kib: u64,
    /// Anonymous memory: the heap, stacks, what the allocator keeps.
    anon_kib: u64,
    /// Mapped files: the binary and, on SQLite, the database's memory map.
    file_kib: u64,
}

impl IdleMemory {
    /// Reads it now; none if the process is gone.
    fn read(pid: u32) -> Option<IdleMemory> {
        Some(IdleMemory {
            rss_kib: proc_status_kib(pid, "VmRSS:")?,
            anon_kib: proc_status_kib(pid, "RssAnon:")?,
            file_kib: proc_status_kib(pid, "RssFile:")?,
        })
    }

    /// Reads it after the process was left alone for `--idle-memory-seconds`.
    async fn after_rest(pid: u32, args: &ImportBenchArgs) -> Option<IdleMemory> {
        if args.idle_memory_seconds <= 0.0 {
            return None;
        }
        tokio::time::sleep(Duration::from_secs_f64(args.idle_memory_seconds)).await;
        IdleMemory::read(pid)
    }

    fn describe(self) -> String {
        format!(
            "RssAnon {:.1} MB, RssFile {:.1} MB (VmRSS {:.1} MB)",
            mb(self.anon_kib),
            mb(self.file_kib),
            mb(self.rss_kib)
        )
    }
}

/// Samples a process's VmRSS every [`MEMORY_EVERY`] on a thread of its own until stopped,
/// so that a busy runtime does not delay the samples.
struct MemorySampler {
    pid: u32,
    peak: Arc<AtomicU64>,
    peak_at_ms: Arc<AtomicU64>,
    samples: Arc<AtomicU64>,
    stop: Arc<AtomicBool>,
    thread: Option<std::thread::JoinHandle<()>>,
}

impl MemorySampler {
    fn start(pid: u32) -> MemorySampler {
        let (peak, peak_at_ms, samples, stop) = (
            Arc::new(AtomicU64::new(0)),
            Arc::new(AtomicU64::new(0)),
            Arc::new(AtomicU64::new(0)),
            Arc::new(AtomicBool::new(false)),
        );
        let thread = {
            let (peak, peak_at, samples, stop) = (
                peak.clone(),
                peak_at_ms.clone(),
                samples.clone(),
                stop.clone(),
            );
            let started = Instant::now();
            std::thread::spawn(move || {
                while !stop.load(Ordering::Relaxed) {
                    if let Some(rss) = proc_status_kib(pid, "VmRSS:") {
                        if rss > peak.fetch_max(rss, Ordering::Relaxed) {
                            peak_at.store(started.elapsed().as_millis() as u64, Ordering::Relaxed);
                        }
                        samples.fetch_add(1, Ordering::Relaxed);
                    }
                    std::thread::sleep(MEMORY_EVERY);
                }
            })
        };
        MemorySampler {
            pid,
            peak,
            peak_at_ms,
            samples,
            stop,
            thread: Some(thread),
        }
    }

    /// The figures so far; the process must still be there for its VmHWM.
    fn finish(mut self) -> Memory {
        let hwm_kib = proc_status_kib(self.pid, "VmHWM:").unwrap_or(0);
        self.stop.store(true, Ordering::Relaxed);
        if let Some(thread) = self.thread.take() {
            let _ = thread.join();
        }
        Memory {
            idle_at_start: None,
            idle_after_import: None,
            peak_rss_kib: self.peak.load(Ordering::Relaxed),
            peak_at_ms: self.peak_at_ms.load(Ordering::Relaxed),
            hwm_kib,
            samples: self.samples.load(Ordering::Relaxed),
        }
    }
}

/// A field of /proc/PID/status in KiB (`VmRSS:`, `VmHWM:`).
fn proc_status_kib(pid: u32, field: &str) -> Option<u64> {
    let status = std::fs::read_to_string(format!("/proc/{pid}/status")).ok()?;
    status
        .lines()
        .find_map(|line| line.strip_prefix(field))
        .and_then(|rest| rest.trim().trim_end_matches("kB").trim().parse().ok())
}

fn mb(kib: u64) -> f64 {
    kib as f64 / 1024.0
}

/// What the import measured.
#[derive(Debug, Default)]
struct ImportFigures {
    accepted: Duration,
    job_done: Duration,
    items_stored: Duration,
    items: i64,
    feeds_with_items: usize,
    report: serde_json::Value,
    memory: Memory,
    /// With `--enrichment`: what the import and its enrichment cost once the server was idle.
    enrichment: Option<EnrichmentFigures>,
}

/// What the import and everything it queued cost, measured once the server was idle.
#[derive(Debug, Default)]
struct EnrichmentFigures {
    /// From the upload until the server was idle.
    idle_after: Duration,
    /// Whether it went idle within `--enrichment-limit-seconds`.
    idle: bool,
    /// The server's CPU time (user + system) from its start.
    cpu_seconds: f64,
    /// Article pages the farm served.
    article_requests: u64,
    items: i64,
    database_bytes: i64,
    /// Items with a kept article.
    full_texts: i64,
}

impl ImportFigures {
    /// Everything imported (the job done) and its items stored.
    fn everything(&self) -> Duration {
        self.job_done.max(self.items_stored)
    }
}

/// Runs `tidings-bench import`.
pub async fn run(config: &GlobalConfig, args: ImportBenchArgs) -> anyhow::Result<ExitCode> {
    if args.tidings.is_none() && args.reader_python.is_none() {
        bail!("nothing to measure: give --tidings PATH (the server) and/or --reader-python PATH");
    }
    let temp = tempfile::tempdir().context("no temporary directory")?;
    // Phase 1: the farm, its OPML and its list of URLs.
    let (port, farm) = serve_mix(args.feeds, args.port).await?;
    let urls: Vec<String> = (0..args.feeds).map(|id| farm.feed_url(id)).collect();
    let opml = farm_opml(&urls);
    let urls_file = temp.path().join("urls.txt");
    std::fs::write(&urls_file, urls.join("\n")).context("cannot write the URL list")?;
    let prompt_items = prompt_items(&farm);
    outln!(
        "tidings-bench import: {} feeds of the mix on http://127.0.0.1:{port}/ ({} good, {} \
         items that answer within tidings' time-outs); load average {}",
        args.feeds,
        farm.behaviours()
            .iter()
            .filter(|b| matches!(b, Behaviour::WellBehaved(_)))
            .count(),
        prompt_items,
        crate::sync::load_average()
    );
    // Phase 2: tidings' import.
    let mut tidings_seconds = None;
    let mut tidings_memory = None;
    if let Some(binary) = &args.tidings {
        let database = prepare_database(config, temp.path()).await?;
        let measured = measure_tidings(binary, &database, &opml, &args, temp.path(), &farm).await;
        drop_database(&database).await;
        let figures = measured?;
        print_tidings(&figures, prompt_items, &database, &args)?;
        tidings_seconds = Some(figures.everything().as_secs_f64());
        tidings_memory = Some(figures.memory.peak_rss_kib.max(figures.memory.hwm_kib));
    }
    // Phase 3: reader's first update of the same farm.
    let mut reader_best: Option<f64> = None;
    if let Some(python) = &args.reader_python {
        for &workers in &args.reader_workers {
            let seconds = measure_reader(python, &urls_file, workers.max(1), temp.path()).await?;
            reader_best = Some(reader_best.map_or(seconds, |best| best.min(seconds)));
        }
    }
    // Phase 4: against the target.
    judge(tidings_seconds, tidings_memory, reader_best)
}

/// Prints the comparison with issue 32's target: everything imported and stored in at most
/// half of reader's (fastest) first update, with the server under 64 MB throughout.
fn judge(
    tidings: Option<f64>,
    memory_kib: Option<u64>,
    reader: Option<f64>,
) -> anyhow::Result<ExitCode> {
    let (Some(tidings), Some(memory_kib), Some(reader)) = (tidings, memory_kib, reader) else {
        return Ok(ExitCode::SUCCESS);
    };
    let (in_time, in_memory) = (tidings <= reader / 2.0, mb(memory_kib) < MEMORY_TARGET_MB);
    outln!(
        "target:         {tidings:.1} s against half of reader's {reader:.1} s ({:.1} s): {}; \
         peak memory {:.1} MB against {MEMORY_TARGET_MB} MB: {}",
        reader / 2.0,
        if in_time { "met" } else { "missed" },
        mb(memory_kib),
        if in_memory { "met" } else { "missed" },
    );
    Ok(if in_time && in_memory {
        ExitCode::SUCCESS
    } else {
        ExitCode::FAILURE
    })
}

/// Serves the mix on 127.0.0.1:`port` (0: a free port) in the background.
async fn serve_mix(feeds: usize, port: u16) -> anyhow::Result<(u16, Arc<Farm>)> {
    let listener = tokio::net::TcpListener::bind((std::net::Ipv4Addr::LOCALHOST, port))
        .await
        .with_context(|| format!("the farm could not listen on 127.0.0.1:{port}"))?;
    let port = listener.local_addr()?.port();
    let farm = Arc::new(Farm::new(feeds, port));
    let router = Arc::clone(&farm).router();
    tokio::spawn(async move {
        let _ = axum::serve(listener, router).await;
    });
    Ok((port, farm))
}

/// The farm's feeds as an OPML file, in two folders as a reader's export has them.
fn farm_opml(urls: &[String]) -> String {
    let feeds: Vec<tidings_worker::OpmlFeed> = urls
        .iter()
        .enumerate()
        .map(|(id, url)| tidings_worker::OpmlFeed {
            xml_url: url.clone(),
            title: Some(format!("Mix feed {id}")),
            html_url: None,
            group: Some(if id % 2 == 0 { "News" } else { "Blogs" }.to_owned()),
            settings: tidings_worker::OpmlSettings::default(),
            read_filters: Vec::new(),
        })
        .collect();
    tidings_worker::build_opml("The farm", &feeds, chrono::Utc::now())
}

/// The items the farm serves within tidings' default time-outs (5 s to the first byte, 10 s
/// in all): the good feeds', the moved feeds' 20 each, and the 5 of each trickling feed that
/// completes in about 6 s. The slow feeds (10 s to the first byte) and the trickling feeds
/// that would take half a minute time out, and are subscribed with that error.
fn prompt_items(farm: &Farm) -> i64 {
    farm.behaviours()
        .iter()
        .map(|behaviour| match behaviour {
            Behaviour::WellBehaved(items) => *items as i64,
            Behaviour::Moved => 20,
            Behaviour::Trickle(true) => 5,
            _ => 0,
        })
        .sum()
}

/// A fresh database: a SQLite file in `dir`, or on PostgreSQL a new database on the server
/// of `--database-url`, named after this process.
async fn prepare_database(config: &GlobalConfig, dir: &Path) -> anyhow::Result<BenchDatabase> {
    let url = &config.database_url;
    if url == DEFAULT_DATABASE_URL {
        return Ok(BenchDatabase {
            url: format!("sqlite://{}", dir.join("import.db").display()),
            drop: None,
        });
    }
    if !url.starts_with("postgres") {
        bail!(
            "--database-url: give a postgres:// URL (a database of its own is created on that server), or none for a temporary SQLite file"
        );
    }
    let name = format!("tidings_import_bench_{}", std::process::id());
    let admin = Store::connect(&StoreOptions::new(url)).await?;
    admin
        .execute_raw(&format!("CREATE DATABASE {name}"))
        .await?;
    admin.close().await;
    let mut own = url::Url::parse(url).context("--database-url is not a URL")?;
    own.set_path(&format!("/{name}"));
    Ok(BenchDatabase {
        url: own.to_string(),
        drop: Some((url.clone(), name)),
    })
}

/// Drops a PostgreSQL database of [`prepare_database`]; a failure is reported, not fatal.
async fn drop_database(database: &BenchDatabase) {
    let Some((admin_url, name)) = &database.drop else {
        return;
    };
    let dropped = async {
        let admin = Store::connect(&StoreOptions::new(admin_url)).await?;
        admin
            .execute_raw(&format!("DROP DATABASE IF EXISTS {name} WITH (FORCE)"))
            .await?;
        admin.close().await;
        anyhow::Ok(())
    }
    .await;
    if let Err(error) = dropped {
        eprintln!("tidings-bench: the database {name} was not dropped: {error:#}");
    }
}

/// Migrates the fresh database and makes the importing user and its API key there, as an
/// administrator would before handing the account over.
async fn prepare_account(
    database_url: &str,
    summaries: bool,
) -> anyhow::Result<(Store, i64, String)> {
    let store = Store::connect(&StoreOptions::new(database_url)).await?;
    store.migrate().await?;
    let user = store
        .create_user(&NewUser {
            username: "importer".into(),
            password_hash: None,
            is_admin: false,
        })
        .await?;
    if summaries {
        // Summaries are the one enrichment a user turns on; the others are on by default.
        store
            .update_preferences(
                user.id,
                &tidings_store::PreferenceChanges {
                    summarize: Some("all".into()),
                    ..tidings_store::PreferenceChanges::default()
                },
            )
            .await?;
    }
    let key = crate::api::new_api_key(&store, &user, "bench import").await?;
    Ok((store, user.id, key))
}

/// Starts `tidings serve` on `database_url` and a free port, with its log in `log`.
fn start_server(
    binary: &Path,
    database_url: &str,
    log: &Path,
    settings: &[(String, String)],
) -> anyhow::Result<(Child, String)> {
    let port = std::net::TcpListener::bind((std::net::Ipv4Addr::LOCALHOST, 0))?
        .local_addr()?
        .port();
    let log_file = std::fs::File::create(log)
        .with_context(|| format!("cannot write the server's log {}", log.display()))?;
    let child = Command::new(binary)
        .arg("serve")
        .env("TIDINGS_DATABASE_URL", database_url)
        .env("TIDINGS_LISTEN", format!("127.0.0.1:{port}"))
        // The farm is on 127.0.0.1, which the address guard refuses by default.
        .env("TIDINGS_ALLOW_PRIVATE_NETWORKS", "true")
        // The default limit (100 subscriptions a user) would stop a 500-feed import.
        .env("TIDINGS_MAX_SUBSCRIPTIONS", "1000")
        .env("TIDINGS_LOG_FORMAT", "text")
        .envs(settings.iter().map(|(name, value)| (name, value)))
        .stdin(Stdio::null())
        .stdout(log_file.try_clone()?)
        .stderr(log_file)
        .spawn()
        .with_context(|| format!("cannot start {}", binary.display()))?;
    Ok((child, format!("http://127.0.0.1:{port}")))
}

/// Waits until the server answers `/healthz`.
async fn wait_until_ready(
    client: &reqwest::Client,
    base: &str,
    child: &mut Child,
) -> anyhow::Result<()> {
    let started = Instant::now();
    loop {
        if let Ok(response) = client.get(format!("{base}/healthz")).send().await
            && response.status().is_success()
        {
            return Ok(());
        }
        if let Some(status) = child.try_wait()? {
            bail!("the server exited at its start ({status})");
        }
        if started.elapsed() > STARTUP_LIMIT {
            bail!("the server did not answer /healthz within a minute");
        }
        tokio::time::sleep(Duration::from_millis(50)).await;
    }
}

/// Runs the server, the import and its wait, sampling the server's memory throughout; stops
/// the server at the end (and shows its log's end on a failure).
async fn measure_tidings(
    binary: &Path,
    database: &BenchDatabase,
    opml: &str,
    args: &ImportBenchArgs,
    dir: &Path,
    farm: &Farm,
) -> anyhow::Result<ImportFigures> {
    let (store, user_id, key) = prepare_account(&database.url, args.enrichment).await?;
    let log = args
        .server_log
        .clone()
        .unwrap_or_else(|| dir.join("server.log"));
    let (mut child, base) = start_server(binary, &database.url, &log, &args.server_env)?;
    let sampler = MemorySampler::start(child.id());
    let client = reqwest::Client::builder()
        .timeout(Duration::from_secs(60))
        .build()?;
    let measured = async {
        wait_until_ready(&client, &base, &mut child).await?;
        outln!(
            "server:         {} serve on {base}, {} (pid {}); load average {}",
            binary.display(),
            store.engine(),
            child.id(),
            crate::sync::load_average()
        );
        let idle_at_start = IdleMemory::after_rest(child.id(), args).await;
        let mut figures =
            import_and_wait(&client, &base, &key, opml, &store, user_id, args).await?;
        if args.enrichment {
            figures.enrichment =
                Some(wait_until_idle(&store, user_id, child.id(), farm, args).await?);
        }
        let idle_after_import = IdleMemory::after_rest(child.id(), args).await;
        anyhow::Ok((figures, idle_at_start, idle_after_import))
    }
    .await;
    let mut memory = sampler.finish();
    let _ = child.kill();
    let _ = child.wait();
    store.close().await;
    match measured {
        Ok((mut figures, idle_at_start, idle_after_import)) => {
            (memory.idle_at_start, memory.idle_after_import) = (idle_at_start, idle_after_import);
            figures.memory = memory;
            Ok(figures)
        }
        Err(error) => {
            let text = std::fs::read_to_string(&log).unwrap_or_default();
            let tail: Vec<&str> = text.lines().rev().take(20).collect();
            for line in tail.into_iter().rev() {
                eprintln!("server: {line}");
            }
            Err(error)
        }
    }
}

/// Uploads the OPML, then follows the job's row and the stored items every [`POLL_EVERY`]:
/// the times to the 202, to the job's end, and to the last item stored (the count unchanged
/// for `--settle-seconds` after the job's end); then asks the API for the job's report.
async fn import_and_wait(
    client: &reqwest::Client,
    base: &str,
    key: &str,
    opml: &str,
    store: &Store,
    user_id: i64,
    args: &ImportBenchArgs,
) -> anyhow::Result<ImportFigures> {
    let started = Instant::now();
    let response = client
        .post(format!("{base}/api/v1/opml"))
        .bearer_auth(key)
        .header("content-type", "text/x-opml")
        .header("x-file-name", "farm.opml")
        .body(opml.to_owned())
        .send()
        .await
        .context("the server did not answer the upload")?;
    let accepted = started.elapsed();
    let status = response.status();
    let started_job: serde_json::Value = response.json().await.context("the 202's body")?;
    if status != reqwest::StatusCode::ACCEPTED {
        bail!("the upload was answered {status}: {started_job}");
    }
    let job_id = started_job["import_id"]
        .as_i64()
        .context("no import_id in the 202")?;
    let settle = Duration::from_secs_f64(args.settle_seconds.max(0.0));
    let (mut job_done, mut last_count, mut last_change) = (None, 0i64, accepted);
    let mut feeds_with_items = 0;
    loop {
        tokio::time::sleep(POLL_EVERY).await;
        let now = started.elapsed();
        if job_done.is_none() {
            let job = store
                .import_job(user_id, job_id)
                .await?
                .context("the import's job is gone")?;
            match job.status {
                ImportJobStatus::Running => {}
                ImportJobStatus::Done => job_done = Some(now),
                other => bail!("the import ended {other:?}: {:?}", job.error),
            }
        }
        let per_feed = store.count_items_per_feed(user_id).await?;
        let count: i64 = per_feed.iter().map(|(_, items)| items).sum();
        if count != last_count {
            (last_count, last_change, feeds_with_items) = (count, now, per_feed.len());
        }
        if job_done.is_some_and(|done| now >= done.max(last_change) + settle) {
            break;
        }
        if now > IMPORT_LIMIT {
            bail!("the import did not end within {} s", IMPORT_LIMIT.as_secs());
        }
    }
    let report: serde_json::Value = client
        .get(format!("{base}/api/v1/opml/imports/{job_id}"))
        .bearer_auth(key)
        .send()
        .await?
        .error_for_status()?
        .json()
        .await?;
    Ok(ImportFigures {
        accepted,
        job_done: job_done.unwrap_or_default(),
        items_stored: last_change,
        items: last_count,
        feeds_with_items,
        report,
        memory: Memory::default(),
        enrichment: None,
    })
}

/// After the import: waits until the server's enrichment queues are empty and its CPU time
/// grew by less than [`IDLE_CPU_SECONDS`] over [`IDLE_WINDOW`], or `--enrichment-limit-seconds`
/// passed, then reads what the import and its enrichment cost.
async fn wait_until_idle(
    store: &Store,
    user_id: i64,
    pid: u32,
    farm: &Farm,
    args: &ImportBenchArgs,
) -> anyhow::Result<EnrichmentFigures> {
    let started = Instant::now();
    let limit = Duration::from_secs_f64(args.enrichment_limit_seconds.max(0.0));
    let cpu = || crate::sync::cpu_ticks(&[pid]).context("the server is gone");
    let mut window: Vec<(Instant, u64)> = vec![(Instant::now(), cpu()?)];
    let idle = loop {
        tokio::time::sleep(Duration::from_secs(1)).await;
        let now = (Instant::now(), cpu()?);
        window.push(now);
        window.retain(|(at, _)| now.0.duration_since(*at) <= IDLE_WINDOW);
        let queued = store.full_text_queue_len().await?
            + store.tag_queue_len().await?
            + store.embedding_queue_len().await?
            + store.summary_queue_len().await?;
        let grew = (now.1 - window[0].1) as f64 / crate::sync::CLOCK_TICKS;
        let watched = now.0.duration_since(window[0].0);
        if queued == 0 && watched >= IDLE_WINDOW - Duration::from_secs(1) && grew < IDLE_CPU_SECONDS
        {
            break true;
        }
        if started.elapsed() > limit {
            break false;
        }
    };
    let items: i64 = store
        .count_items_per_feed(user_id)
        .await?
        .iter()
        .map(|(_, items)| items)
        .sum();
    Ok(EnrichmentFigures {
        idle_after: started.elapsed(),
        idle,
        cpu_seconds: cpu()? as f64 / crate::sync::CLOCK_TICKS,
        article_requests: farm
            .article_requests
            .load(std::sync::atomic::Ordering::Relaxed),
        items,
        database_bytes: store.database_size_bytes().await?,
        full_texts: store.count_full_texts().await?,
    })
}

/// Prints the import's figures.
fn print_tidings(
    figures: &ImportFigures,
    prompt_items: i64,
    database: &BenchDatabase,
    args: &ImportBenchArgs,
) -> anyhow::Result<()> {
    let report = &figures.report;
    let entries = report["entries"].as_array().cloned().unwrap_or_default();
    let with_error = entries
        .iter()
        .filter(|e| e["status"] == "added" && !e["reason"].is_null())
        .count();
    outln!(
        "import:         202 after {:.3} s; last item stored after {:.1} s; job done after {:.1} \
         s: everything imported and stored in {:.1} s; load average {}",
        figures.accepted.as_secs_f64(),
        figures.items_stored.as_secs_f64(),
        figures.job_done.as_secs_f64(),
        figures.everything().as_secs_f64(),
        crate::sync::load_average()
    );
    outln!(
        "  job:          total {}, checked {}, added {} ({with_error} of them with a passing \
         error), skipped {}, failed {}",
        report["total"],
        report["checked"],
        report["added"],
        report["skipped"],
        report["failed"],
    );
    outln!(
        "  items:        {} stored in {} feeds ({prompt_items} served within the time-outs)",
        figures.items,
        figures.feeds_with_items
    );
    outln!(
        "  memory:       peak VmRSS {:.1} MB ({:.1} s after the server's start) over {} \
         samples, VmHWM {:.1} MB ({})",
        mb(figures.memory.peak_rss_kib),
        figures.memory.peak_at_ms as f64 / 1000.0,
        figures.memory.samples,
        mb(figures.memory.hwm_kib),
        tidings_store::redact_url(&database.url)
    );
    let rest = args.idle_memory_seconds;
    if let Some(idle) = figures.memory.idle_at_start {
        outln!(
            "  idle memory:  {} after {rest:.0} s with nothing to do from the start",
            idle.describe()
        );
    }
    if let Some(idle) = figures.memory.idle_after_import {
        outln!(
            "  idle memory:  {} {rest:.0} s after the import{}",
            idle.describe(),
            if args.enrichment {
                " and its enrichment went idle"
            } else {
                "'s end"
            }
        );
    }
    if let Some(cost) = &figures.enrichment {
        outln!(
            "  enrichment:   server idle {} {:.1} s after the import's end: {:.1} s of server \
             CPU from its start; {} article pages requested, {} articles kept; {} bytes per \
             item ({} items, {} bytes); load average {}",
            if cost.idle { "after" } else { "NOT idle after" },
            cost.idle_after.as_secs_f64(),
            cost.cpu_seconds,
            cost.article_requests,
            cost.full_texts,
            cost.database_bytes / cost.items.max(1),
            cost.items,
            cost.database_bytes,
            crate::sync::load_average()
        );
    }
    Ok(())
}

/// Times reader's first update of the farm with `workers` threads; returns its seconds.
async fn measure_reader(
    python: &Path,
    urls_file: &Path,
    workers: usize,
    dir: &Path,
) -> anyhow::Result<f64> {
    let script = dir.join("reader_update.py");
    std::fs::write(&script, READER_SCRIPT).context("cannot write reader's script")?;
    let db = dir.join(format!("reader-{workers}.sqlite"));
    let started = Instant::now();
    let child = Command::new(python)
        .arg(&script)
        .arg(&db)
        .arg(urls_file)
        .arg(workers.to_string())
        .stdin(Stdio::null())
        .stdout(Stdio::piped())
        .stderr(Stdio::piped())
        .spawn()
        .with_context(|| format!("cannot start {}", python.display()))?;
    let sampler = MemorySampler::start(child.id());
    // VmHWM is read just before the end, while the script counts its entries.
    // Waited for off the runtime, whose threads serve the farm meanwhile.
    let output = tokio::task::spawn_blocking(move || child.wait_with_output()).await??;
    let wall = started.elapsed();
    let memory = sampler.finish();
    if !output.status.success() {
        bail!(
            "reader's update failed ({}): {}",
            output.status,
            String::from_utf8_lossy(&output.stderr)
        );
    }
    let figures: serde_json::Value = serde_json::from_slice(&output.stdout).with_context(|| {
        format!(
            "reader's script printed {:?}",
            String::from_utf8_lossy(&output.stdout)
        )
    })?;
    let seconds = figures["seconds"]
        .as_f64()
        .context("no seconds from reader")?;
    outln!(
        "reader:         update_feeds(workers={workers}) {seconds:.1} s ({:.1} s with adding the \
         feeds and starting Python); {} entries, {} feeds updated, {} with an error; peak VmRSS \
         {:.1} MB; load average {}",
        wall.as_secs_f64(),
        figures["entries"],
        figures["feeds_updated"],
        figures["feeds_with_error"],
        mb(memory.peak_rss_kib),
        crate::sync::load_average()
    );
    Ok(seconds)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_farms_opml_reads_back_as_its_500_feeds_in_two_folders() {
        let farm = Farm::new(500, 1);
        let urls: Vec<String> = (0..500).map(|id| farm.feed_url(id)).collect();
        let document = tidings_worker::parse_opml(farm_opml(&urls).as_bytes()).unwrap();
        let read: Vec<&str> = document.feeds.iter().map(|f| f.xml_url.as_str()).collect();
        let mut expected: Vec<&str> = urls.iter().map(String::as_str).collect();
        let mut sorted = read.clone();
        sorted.sort_unstable();
        expected.sort_unstable();
        assert_eq!(sorted, expected);
        let groups: std::collections::HashSet<_> =
            document.feeds.iter().map(|f| f.group.as_deref()).collect();
        assert_eq!(groups.len(), 2);
    }

    #[test]
    fn the_items_served_within_the_time_outs_are_the_good_moved_and_short_trickling_feeds() {
        // The measured imports stored exactly this many.
        assert_eq!(prompt_items(&Farm::new(500, 1)), 41_920);
    }

    #[test]
    fn server_settings_are_name_equals_value() {
        assert_eq!(
            parse_setting("MALLOC_ARENA_MAX=2"),
            Ok(("MALLOC_ARENA_MAX".into(), "2".into()))
        );
        assert_eq!(parse_setting("A=b=c"), Ok(("A".into(), "b=c".into())));
        assert!(parse_setting("MALLOC_ARENA_MAX").is_err());
        assert!(parse_setting("=2").is_err());
    }
}
