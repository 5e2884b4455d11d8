//! `tidings-bench soak`: a simulated deployment under faults, checked at the end.
//!
//! It starts a PostgreSQL of its own (initdb into a temporary folder, its own port: the run
//! stops it, so it never uses a shared server), a local feed server of N feeds that each
//! publish a new item every few minutes ([`crate::soak_farm`]), API replicas (`tidings serve
//! --worker=false`) and worker processes (`tidings worker`, each with its `/metrics`) of the
//! `tidings` binary beside this one ([`product_binary`]), and C concurrent API clients that
//! read their unread items and mark some read.
//! Meanwhile it kills a random worker with SIGKILL now and then and starts it again, and takes
//! PostgreSQL away once for a while. Afterwards it checks:
//! - **items:** every item the feed server published is stored exactly once, and nothing else
//!   (against the feed server's own record);
//! - **answers:** every API answer was a success, except 503 `database_unavailable` while the
//!   database was away;
//! - **recovery:** after the outage, the API answers again and the workers store fetches again,
//!   without a restart;
//! - **logs:** no line at level ERROR outside the injected faults' windows;
//! - **memory:** the resident memory of every process, sampled over the run, stays flat.
//!
//! The run compresses time in one respect: feeds are made due every `--due-every-seconds`
//! (by setting their next check time, as `tidings-bench fetch` does between rounds) rather than
//! at the product's 30-minute minimum interval, so a short run fetches every feed many times.

use std::collections::{BTreeMap, HashMap};
use std::fs::File;
use std::path::{Path, PathBuf};
use std::process::{Child, Command, ExitCode, Stdio};
use std::sync::atomic::{AtomicBool, AtomicU64, Ordering};
use std::sync::{Arc, Mutex};
use std::time::{Duration, Instant};

use anyhow::{Context, bail};
use clap::Args;
use tidings::output::outln;
use tidings_store::{NewSubscription, NewUser, Store, StoreOptions};
use tidings_testkit::private_postgres::PrivatePostgres;

use crate::mix::XorShift;
use crate::soak_farm::Farm;

/// Arguments of `tidings-bench soak`.
#[derive(Debug, Args)]
pub struct SoakArgs {
    /// How long the load runs, in minutes (fractions allowed), before the final check.
    #[arg(long, default_value_t = 30.0)]
    pub minutes: f64,
    /// Feeds the local feed server publishes.
    #[arg(long, default_value_t = 2000)]
    pub feeds: usize,
    /// Concurrent API clients, each a user of its own following some of the feeds.
    #[arg(long, default_value_t = 50)]
    pub clients: usize,
    /// API replicas (`tidings serve --worker=false`).
    #[arg(long, default_value_t = 2)]
    pub api_replicas: usize,
    /// Worker processes (`tidings worker`).
    #[arg(long, default_value_t = 3)]
    pub workers: usize,
    /// Every feed publishes a new item this often, in seconds.
    #[arg(long, default_value_t = 180)]
    pub change_every_seconds: u64,
    /// Every feed is made due this often, in seconds (time compressed: the product's shortest
    /// interval is 30 minutes).
    #[arg(long, default_value_t = 60)]
    pub due_every_seconds: u64,
    /// A random worker is killed (SIGKILL) and restarted on average this often, in seconds;
    /// 0 kills none.
    #[arg(long, default_value_t = 60)]
    pub kill_every_seconds: u64,
    /// How long PostgreSQL is away, once, in the middle of the run, in seconds; 0 for no outage.
    #[arg(long, default_value_t = 30)]
    pub outage_seconds: u64,
    /// The workers' lease (TIDINGS_WORKER_LEASE_SECONDS): how soon a killed worker's feeds are
    /// taken over.
    #[arg(long, default_value_t = 60)]
    pub lease_seconds: u64,
    /// Seed of the random choices (which worker dies when), to repeat a run; random by default.
    #[arg(long)]
    pub seed: Option<u64>,
    /// Keep the processes' logs in this folder (by default a temporary folder, kept only when
    /// the run fails).
    #[arg(long)]
    pub log_dir: Option<PathBuf>,
}

/// Seconds since the run started, for the report.
fn secs(since: Instant) -> f64 {
    since.elapsed().as_secs_f64()
}

/// A window of time in which faults were injected, in seconds since the run started.
#[derive(Debug, Clone, Copy)]
struct Window {
    from: f64,
    to: f64,
}

impl Window {
    fn contains(&self, t: f64) -> bool {
        t >= self.from && t <= self.to
    }
}

/// One process of the deployment and its incarnations.
struct Process {
    name: String,
    args: Vec<String>,
    env: Vec<(String, String)>,
    child: Option<Child>,
    incarnation: usize,
    /// `(started at, log file)` of every incarnation.
    logs: Vec<(f64, PathBuf)>,
    /// Resident memory samples `(seconds into the run, KiB)` of this process's current
    /// incarnation; a restart starts a new series.
    rss: Vec<Vec<(f64, u64)>>,
}

/// A soak that ends early (an error in setup, the load or a fault) returns through `?` without
/// its orderly stop: whatever process is still running goes with it, so no `tidings` is left
/// behind holding ports and the database.
impl Drop for Process {
    fn drop(&mut self) {
        self.kill();
    }
}

impl Process {
    fn new(name: String, args: &[&str], env: Vec<(String, String)>) -> Process {
        Process {
            name,
            args: args.iter().map(|arg| (*arg).to_owned()).collect(),
            env,
            child: None,
            incarnation: 0,
            logs: Vec::new(),
            rss: Vec::new(),
        }
    }

    fn start(&mut self, binary: &Path, log_dir: &Path, started: Instant) -> anyhow::Result<()> {
        self.incarnation += 1;
        let log = log_dir.join(format!("{}-{}.log", self.name, self.incarnation));
        let file =
            File::create(&log).with_context(|| format!("cannot create {}", log.display()))?;
        let mut command = Command::new(binary);
        command.args(&self.args);
        for (key, _) in std::env::vars() {
            if key.starts_with("TIDINGS_") {
                command.env_remove(key);
            }
        }
        command
            .envs(self.env.iter().map(|(k, v)| (k, v)))
            .stdin(Stdio::null())
            .stdout(Stdio::null())
            .stderr(file);
        let child = command
            .spawn()
            .with_context(|| format!("cannot start {}", self.name))?;
        self.child = Some(child);
        self.logs.push((secs(started), log));
        self.rss.push(Vec::new());
        Ok(())
    }

    fn pid(&self) -> Option<u32> {
        self.child.as_ref().map(Child::id)
    }

    /// SIGKILL, as a crash or the OOM killer would.
    fn kill(&mut self) {
        if let Some(mut child) = self.child.take() {
            let _ = child.kill();
            let _ = child.wait();
        }
    }

    /// SIGTERM, then up to 15 s for a clean exit (SIGKILL after that); whether it exited 0.
    fn stop(&mut self) -> bool {
        let Some(mut child) = self.child.take() else {
            return false;
        };
        let _ = Command::new("kill")
            .args(["-TERM", &child.id().to_string()])
            .status();
        let deadline = Instant::now() + Duration::from_secs(15);
        while Instant::now() < deadline {
            if let Ok(Some(status)) = child.try_wait() {
                return status.success();
            }
            std::thread::sleep(Duration::from_millis(50));
        }
        let _ = child.kill();
        let _ = child.wait();
        false
    }

    /// Whether the current incarnation exited by itself.
    fn exited(&mut self) -> Option<std::process::ExitStatus> {
        self.child
            .as_mut()
            .and_then(|child| child.try_wait().ok().flatten())
    }

    fn sample_rss(&mut self, t: f64) {
        if let Some(kib) = self.pid().and_then(rss_kib)
            && let Some(series) = self.rss.last_mut()
        {
            series.push((t, kib));
        }
    }
}

/// VmRSS of a process in KiB, from /proc.
fn rss_kib(pid: u32) -> Option<u64> {
    let status = std::fs::read_to_string(format!("/proc/{pid}/status")).ok()?;
    status
        .lines()
        .find_map(|line| line.strip_prefix("VmRSS:"))
        .and_then(|rest| rest.trim().trim_end_matches("kB").trim().parse().ok())
}

/// What the API clients saw.
#[derive(Default)]
struct Answers {
    ok: AtomicU64,
    /// 503 database_unavailable while the database was away.
    unavailable_in_outage: AtomicU64,
    /// 503 database_unavailable at other times: the pool gave up waiting for a connection,
    /// which an overloaded machine (load from elsewhere) causes.
    busy: AtomicU64,
    /// Anything else: `(seconds into the run, what)`, the first few kept.
    unexpected: Mutex<Vec<(f64, String)>>,
    unexpected_count: AtomicU64,
    marked_read: AtomicU64,
    /// The first success after the database came back, in seconds into the run.
    first_ok_after_outage: Mutex<Option<f64>>,
}

impl Answers {
    fn unexpected(&self, t: f64, what: String) {
        self.unexpected_count.fetch_add(1, Ordering::Relaxed);
        let mut kept = self.unexpected.lock().unwrap_or_else(|p| p.into_inner());
        if kept.len() < 20 {
            kept.push((t, what));
        }
    }
}

/// The outage as it happened: when PostgreSQL went down and came back.
#[derive(Default)]
struct Outage {
    /// Seconds into the run; `f64` bits, 0 = not yet.
    down_at: AtomicU64,
    up_at: AtomicU64,
}

impl Outage {
    fn get(cell: &AtomicU64) -> Option<f64> {
        let bits = cell.load(Ordering::SeqCst);
        (bits != 0).then(|| f64::from_bits(bits))
    }

    /// Whether a request that started at `t` may meet the outage: from just before the stop
    /// until a short grace after the start (connections are re-established on demand).
    fn covers(&self, started: f64, answered: f64) -> bool {
        let Some(down) = Outage::get(&self.down_at) else {
            return false;
        };
        let up = Outage::get(&self.up_at).unwrap_or(f64::MAX);
        answered >= down - 0.5 && started <= up + 2.0
    }
}

/// Runs `tidings-bench soak`: the deployment is set up, loaded and faulted for the run's
/// length, drained, stopped and checked; each phase is a function below.
pub async fn run(args: SoakArgs) -> anyhow::Result<ExitCode> {
    check_args(&args)?;
    let seed = args.seed.unwrap_or_else(|| {
        std::time::SystemTime::now()
            .duration_since(std::time::UNIX_EPOCH)
            .map(|d| d.as_nanos() as u64)
            .unwrap_or(1)
    }) | 1;
    let duration = Duration::from_secs_f64(args.minutes * 60.0);
    let binary = product_binary()?;
    let (log_dir, temp_logs) = log_folder(args.log_dir.as_deref())?;
    let world = World::start(&args, seed, &log_dir).await?;
    let mut deployment = Deployment::start(&args, &world.database_url, binary, log_dir).await?;
    let mut load = Load::start(&world, &deployment, args.due_every_seconds);
    let faults = Faults::new(&args, duration, XorShift(seed))
        .inject(&world, &mut deployment, &load)
        .await?;
    load.stop().await;
    drain(&args, &world, &mut deployment, &load.answers).await?;
    let missing_series = check_metrics(&deployment).await?;
    let unclean = deployment.stop_all();
    let verdict = check_items(&world.store, &world.farm).await?;
    explain_lossy_feeds(&world, &verdict).await?;
    world.store.close().await;

    let mut failures = Vec::new();
    report_items(&verdict, &mut failures)?;
    report_answers(&load.answers, &mut failures)?;
    report_outage(&load, &faults, &mut failures)?;
    report_logs(&deployment, &load.outage, &faults, &mut failures)?;
    report_memory(&deployment, &mut failures)?;
    outln!(
        "faults: {} workers killed and restarted; feed server answered {} × 200 and {} × 304",
        faults.kills.len(),
        world.farm.answered_200.load(Ordering::Relaxed),
        world.farm.answered_304.load(Ordering::Relaxed)
    );
    if !missing_series.is_empty() {
        failures.push(format!("metrics: {}", missing_series.join("; ")));
    }
    report_restart_in_outage(&deployment, &faults, &mut failures)?;
    failures.extend(faults.unplanned_exits);
    if !unclean.is_empty() {
        failures.push(format!(
            "did not stop cleanly on SIGTERM: {}",
            unclean.join(", ")
        ));
    }
    verdict_of(&failures, temp_logs)
}

/// Refuses settings the run cannot work with.
fn check_args(args: &SoakArgs) -> anyhow::Result<()> {
    if !(args.minutes > 0.0 && args.minutes <= 24.0 * 60.0) {
        bail!("--minutes must be more than 0 and at most 1440");
    }
    if args.feeds == 0 || args.clients == 0 || args.api_replicas == 0 || args.workers == 0 {
        bail!("--feeds, --clients, --api-replicas and --workers must each be at least 1");
    }
    if args.change_every_seconds == 0 || args.due_every_seconds == 0 || args.lease_seconds < 15 {
        bail!(
            "--change-every-seconds and --due-every-seconds must be at least 1, \
             --lease-seconds at least 15"
        );
    }
    Ok(())
}

/// The folder for the processes' logs: `--log-dir`, or a temporary one (returned too, to keep
/// it when the run fails).
fn log_folder(asked: Option<&Path>) -> anyhow::Result<(PathBuf, Option<tempfile::TempDir>)> {
    Ok(match asked {
        Some(dir) => {
            std::fs::create_dir_all(dir)
                .with_context(|| format!("cannot create {}", dir.display()))?;
            (dir.to_path_buf(), None)
        }
        None => {
            let temp = tempfile::Builder::new().prefix("tidings-soak-").tempdir()?;
            (temp.path().to_path_buf(), Some(temp))
        }
    })
}

/// What the deployment stands on: its private PostgreSQL, the feed server, and the users the
/// API clients are.
struct World {
    postgres: Arc<PrivatePostgres>,
    database_url: String,
    /// The run's own connection, for setting feeds due and the final check.
    store: Store,
    farm: Arc<Farm>,
    /// The clients' API keys, one per client.
    keys: Vec<String>,
    /// The store's id of each of the farm's feeds, by the farm's index.
    feed_ids: Vec<i64>,
}

impl World {
    /// Starts PostgreSQL and the feed server, prints the run's plan, and makes the users.
    async fn start(args: &SoakArgs, seed: u64, log_dir: &Path) -> anyhow::Result<World> {
        let postgres = tokio::task::spawn_blocking(PrivatePostgres::start)
            .await?
            .context("the soak's private PostgreSQL could not be started")?;
        let postgres = Arc::new(postgres);
        let admin = Store::connect(&StoreOptions::new(postgres.url())).await?;
        admin.execute_raw("CREATE DATABASE tidings_soak").await?;
        admin.close().await;
        let database_url = postgres.database_url("tidings_soak");
        let mut options = StoreOptions::new(&database_url);
        options.max_connections = 4;
        let store = Store::connect(&options).await?;
        store.migrate().await?;

        let listener = tokio::net::TcpListener::bind("127.0.0.1:0").await?;
        let base = format!("http://{}", listener.local_addr()?);
        let farm = Arc::new(Farm::new(
            args.feeds,
            args.change_every_seconds * 1000,
            base.clone(),
        ));
        let router = farm.router();
        tokio::spawn(async move {
            let _ = axum::serve(listener, router).await;
        });

        let kill_plan = match args.kill_every_seconds {
            0 => "none killed".to_owned(),
            every => format!("one killed every ~{every} s"),
        };
        outln!(
            "tidings-bench soak: {} min, {} feeds changing every {} s (due every {} s), {} \
             clients, {} API replicas, {} workers ({kill_plan}, lease {} s), PostgreSQL away {} \
             s; seed {seed}",
            args.minutes,
            args.feeds,
            args.change_every_seconds,
            args.due_every_seconds,
            args.clients,
            args.api_replicas,
            args.workers,
            args.lease_seconds,
            args.outage_seconds,
        );
        outln!(
            "database {database_url} (private, {}); logs in {}",
            postgres.log_path().display(),
            log_dir.display()
        );

        let setup = Instant::now();
        let (keys, feed_ids) = subscribe_clients(&store, &farm, args.clients).await?;
        outln!(
            "setup: {} users following {} feeds in {:.1} s",
            keys.len(),
            args.feeds,
            setup.elapsed().as_secs_f64()
        );
        Ok(World {
            postgres,
            database_url,
            store,
            farm,
            keys,
            feed_ids,
        })
    }
}

/// The product's processes: API replicas (with their base URLs) and workers (with their
/// `/metrics` URLs), and what starting them again needs.
struct Deployment {
    apis: Vec<(Process, String)>,
    workers: Vec<(Process, String)>,
    binary: PathBuf,
    log_dir: PathBuf,
    /// When the processes were first started: the run's clock.
    started: Instant,
    http: reqwest::Client,
}

impl Deployment {
    /// Starts every process and waits until the API replicas are ready.
    async fn start(
        args: &SoakArgs,
        database_url: &str,
        binary: PathBuf,
        log_dir: PathBuf,
    ) -> anyhow::Result<Deployment> {
        let started = Instant::now();
        let common_env = vec![
            ("TIDINGS_DATABASE_URL".to_owned(), database_url.to_owned()),
            ("TIDINGS_LOG_FORMAT".to_owned(), "json".to_owned()),
            ("TIDINGS_LOG_LEVEL".to_owned(), "warn".to_owned()),
            (
                "TIDINGS_ALLOW_PRIVATE_NETWORKS".to_owned(),
                "true".to_owned(),
            ),
        ];
        let mut apis = Vec::new();
        for n in 0..args.api_replicas {
            let port = free_port()?;
            let mut env = common_env.clone();
            env.push(("TIDINGS_LISTEN".into(), format!("127.0.0.1:{port}")));
            env.push(("TIDINGS_WORKER".into(), "false".into()));
            let mut process = Process::new(format!("api{n}"), &["serve"], env);
            process.start(&binary, &log_dir, started)?;
            apis.push((process, format!("http://127.0.0.1:{port}")));
        }
        let mut workers = Vec::new();
        for n in 0..args.workers {
            let port = free_port()?;
            let mut env = common_env.clone();
            env.push(("TIDINGS_WORKER_POLL_SECONDS".into(), "2".into()));
            env.push((
                "TIDINGS_WORKER_LEASE_SECONDS".into(),
                args.lease_seconds.to_string(),
            ));
            env.push((
                "TIDINGS_WORKER_METRICS_LISTEN".into(),
                format!("127.0.0.1:{port}"),
            ));
            let mut process = Process::new(format!("worker{n}"), &["worker"], env);
            process.start(&binary, &log_dir, started)?;
            workers.push((process, format!("http://127.0.0.1:{port}/metrics")));
        }
        // The server closes a keep-alive connection idle for its header-read timeout (hyper
        // counts the wait for the next request's head); a client that keeps idle connections
        // longer races that close when it reuses one at that moment, and the request fails
        // to send. Apps retry such a request; the soak's clients let idle connections go
        // first instead, so that an unexpected answer is the server's doing.
        let http = reqwest::Client::builder()
            .timeout(Duration::from_secs(30))
            .pool_idle_timeout(tidings_server::HEADER_READ_TIMEOUT / 2)
            .build()?;
        for (process, url) in &apis {
            wait_ready(&http, &format!("{url}/readyz"), &process.name).await?;
        }
        outln!("{:6.1} s  all processes up", secs(started));
        Ok(Deployment {
            apis,
            workers,
            binary,
            log_dir,
            started,
            http,
        })
    }

    /// Starts worker `slot` again (a new incarnation with its own log).
    fn restart_worker(&mut self, slot: usize) -> anyhow::Result<()> {
        self.workers[slot]
            .0
            .start(&self.binary, &self.log_dir, self.started)
    }

    /// Starts again every process that exited by itself, each an unplanned exit to report.
    fn restart_exited(&mut self, t: f64, exits: &mut Vec<String>) -> anyhow::Result<()> {
        for (process, _) in self.apis.iter_mut().chain(self.workers.iter_mut()) {
            if let Some(status) = process.exited() {
                exits.push(format!("{} exited by itself: {status}", process.name));
                outln!("{t:6.1} s  {} exited by itself: {status}", process.name);
                process.child = None;
                process.start(&self.binary, &self.log_dir, self.started)?;
            }
        }
        Ok(())
    }

    /// One line of the report (see [`sample`]).
    async fn sample(&mut self, answers: &Answers, farm: &Farm, t: f64) -> anyhow::Result<()> {
        sample(
            &mut self.apis,
            &mut self.workers,
            &self.http,
            answers,
            farm,
            t,
        )
        .await
    }

    /// SIGTERM to every process; the names of those that did not exit 0 in time.
    fn stop_all(&mut self) -> Vec<String> {
        let mut unclean = Vec::new();
        for (process, _) in self.apis.iter_mut().chain(self.workers.iter_mut()) {
            if !process.stop() {
                unclean.push(process.name.clone());
            }
        }
        unclean
    }
}

/// The API clients and the due-maker, running until stopped, and what they recorded.
struct Load {
    stop: Arc<AtomicBool>,
    answers: Arc<Answers>,
    outage: Arc<Outage>,
    /// The clients, then the due-maker.
    tasks: Vec<tokio::task::JoinHandle<()>>,
}

impl Load {
    /// Starts one client per key, spread over the API replicas, and the due-maker.
    fn start(world: &World, deployment: &Deployment, due_every_seconds: u64) -> Load {
        let stop = Arc::new(AtomicBool::new(false));
        let answers = Arc::new(Answers::default());
        let outage = Arc::new(Outage::default());
        let api_urls: Vec<String> = deployment.apis.iter().map(|(_, url)| url.clone()).collect();
        let mut tasks = Vec::new();
        for (n, key) in world.keys.iter().enumerate() {
            tasks.push(tokio::spawn(client_loop(
                deployment.http.clone(),
                api_urls[n % api_urls.len()].clone(),
                key.clone(),
                Arc::clone(&stop),
                Arc::clone(&answers),
                Arc::clone(&outage),
                deployment.started,
            )));
        }
        tasks.push(tokio::spawn(make_due_in_slices(
            world.store.clone(),
            due_every_seconds,
            Arc::clone(&stop),
        )));
        Load {
            stop,
            answers,
            outage,
            tasks,
        }
    }

    /// Stops the clients and the due-maker and waits for them.
    async fn stop(&mut self) {
        self.stop.store(true, Ordering::SeqCst);
        for task in self.tasks.drain(..) {
            let _ = task.await;
        }
    }
}

/// The faults injected while the load runs (a worker killed now and then, PostgreSQL away
/// once), the samples taken meanwhile, and what was seen of the recovery.
struct Faults {
    random: XorShift,
    duration: Duration,
    kill_every_seconds: u64,
    outage_seconds: u64,
    /// When PostgreSQL is to be stopped, in seconds into the run.
    outage_at: Option<f64>,
    outage_task: Option<tokio::task::JoinHandle<anyhow::Result<()>>>,
    sample_every: f64,
    next_sample: f64,
    next_kill: f64,
    /// Workers to start again: `(at, slot)`.
    restarts: Vec<(f64, usize)>,
    /// `(at, name, pid)` of every kill.
    kills: Vec<(f64, String, u32)>,
    /// `(PostgreSQL up at, workers storing fetches again that much later)`.
    recovery: Option<(f64, f64)>,
    unplanned_exits: Vec<String>,
    fetched_before_up: f64,
    /// A worker killed and started again while PostgreSQL is away, as a supervisor restarting
    /// it would: it must wait for the database, then work (issue 15). Its slot and its
    /// restarted incarnation.
    outage_victim: Option<(usize, usize)>,
    /// When its /metrics first answered after the outage, in seconds after it.
    victim_back: Option<f64>,
}

impl Faults {
    /// The plan of a run of `duration`: the outage centred in it, the first kill about
    /// `--kill-every-seconds` in.
    fn new(args: &SoakArgs, duration: Duration, mut random: XorShift) -> Faults {
        let outage_at = if args.outage_seconds > 0 {
            Some(duration.as_secs_f64() / 2.0 - args.outage_seconds as f64 / 2.0)
        } else {
            None
        };
        let next_kill = if args.kill_every_seconds > 0 {
            args.kill_every_seconds as f64 * (0.5 + random.unit())
        } else {
            f64::MAX
        };
        Faults {
            random,
            duration,
            kill_every_seconds: args.kill_every_seconds,
            outage_seconds: args.outage_seconds,
            outage_at,
            outage_task: None,
            sample_every: (duration.as_secs_f64() / 30.0).clamp(5.0, 60.0),
            next_sample: 0.0,
            next_kill,
            restarts: Vec::new(),
            kills: Vec::new(),
            recovery: None,
            unplanned_exits: Vec::new(),
            fetched_before_up: 0.0,
            outage_victim: None,
            victim_back: None,
        }
    }

    /// Injects the faults and samples, four times a second, until the run's time is up; then
    /// waits for the outage to end and starts the workers still to be restarted, so that every
    /// worker takes part in the drain.
    async fn inject(
        mut self,
        world: &World,
        deployment: &mut Deployment,
        load: &Load,
    ) -> anyhow::Result<Faults> {
        let started = deployment.started;
        let outage = &load.outage;
        while started.elapsed() < self.duration {
            let t = secs(started);
            self.start_outage_once(t, world, outage, started);
            let in_outage = Outage::get(&outage.down_at).is_some()
                && (Outage::get(&outage.up_at).is_none()
                    || Outage::get(&outage.up_at).is_some_and(|up| t < up + 5.0));
            self.watch_recovery(deployment, outage).await?;
            self.kill_in_outage(t, deployment, outage)?;
            self.watch_victim(deployment, outage).await?;
            // Kills, never while the database is away (the recovery is measured on the
            // others), nor of the worker started in the outage until it is seen running.
            if t >= self.next_kill && !in_outage {
                self.kill_on_schedule(t, deployment)?;
            }
            self.restart_due(t, deployment)?;
            deployment.restart_exited(t, &mut self.unplanned_exits)?;
            if t >= self.next_sample {
                self.next_sample = t + self.sample_every;
                deployment.sample(&load.answers, &world.farm, t).await?;
            }
            tokio::time::sleep(Duration::from_millis(250)).await;
        }
        if let Some(task) = self.outage_task.take() {
            task.await??;
        }
        for (_, slot) in std::mem::take(&mut self.restarts) {
            deployment.restart_worker(slot)?;
        }
        Ok(self)
    }

    /// Takes PostgreSQL away once, when its time has come.
    fn start_outage_once(&mut self, t: f64, world: &World, outage: &Arc<Outage>, started: Instant) {
        if let Some(at) = self.outage_at
            && t >= at
            && self.outage_task.is_none()
        {
            self.outage_task = Some(tokio::spawn(take_database_away(
                Arc::clone(&world.postgres),
                Duration::from_secs(self.outage_seconds),
                Arc::clone(outage),
                started,
            )));
        }
    }

    /// After the outage, notes when the workers' stored fetches grow again.
    async fn watch_recovery(
        &mut self,
        deployment: &Deployment,
        outage: &Outage,
    ) -> anyhow::Result<()> {
        let started = deployment.started;
        if let Some(up) = Outage::get(&outage.up_at)
            && self.recovery.is_none()
        {
            // The workers' stored fetches since the database came back.
            let fetched = fetched_total(&deployment.http, &deployment.workers).await;
            if self.fetched_before_up == 0.0 {
                self.fetched_before_up = fetched.max(f64::MIN_POSITIVE);
            } else if fetched > self.fetched_before_up {
                self.recovery = Some((up, secs(started) - up));
                outln!(
                    "{:6.1} s  workers store fetches again, {:.1} s after PostgreSQL came back",
                    secs(started),
                    secs(started) - up
                );
            }
        }
        Ok(())
    }

    /// One kill in the outage (when it is long enough to restart within it): 2 s in, with the
    /// restart 3 s later, so that the new process starts with PostgreSQL away.
    fn kill_in_outage(
        &mut self,
        t: f64,
        deployment: &mut Deployment,
        outage: &Outage,
    ) -> anyhow::Result<()> {
        if let Some(down) = Outage::get(&outage.down_at)
            && self.outage_victim.is_none()
            && self.outage_seconds >= 8
            && t >= down + 2.0
        {
            let slot = (self.random.next() % deployment.workers.len() as u64) as usize;
            let (process, _) = &mut deployment.workers[slot];
            if let Some(pid) = process.pid() {
                process.kill();
                self.kills.push((t, process.name.clone(), pid));
                outln!(
                    "{t:6.1} s  kill -9 {} (pid {pid}), to restart it while PostgreSQL is away",
                    process.name
                );
                self.restarts.push((t + 3.0, slot));
                self.outage_victim = Some((slot, process.incarnation + 1));
            }
        }
        Ok(())
    }

    /// Notes when the worker restarted in the outage first answers on /metrics after it.
    async fn watch_victim(
        &mut self,
        deployment: &Deployment,
        outage: &Outage,
    ) -> anyhow::Result<()> {
        let started = deployment.started;
        if let (Some((slot, _)), Some(up), None) = (
            self.outage_victim,
            Outage::get(&outage.up_at),
            self.victim_back,
        ) {
            let (process, url) = &deployment.workers[slot];
            let answered = deployment
                .http
                .get(url)
                .timeout(Duration::from_secs(2))
                .send()
                .await
                .is_ok_and(|response| response.status().is_success());
            if answered {
                self.victim_back = Some(secs(started) - up);
                outln!(
                    "{:6.1} s  {}, started while PostgreSQL was away, runs: its /metrics \
                     answers {:.1} s after PostgreSQL came back",
                    secs(started),
                    process.name,
                    secs(started) - up
                );
            }
        }
        Ok(())
    }

    /// Kills a random worker (not the one started in the outage until it runs) and plans its
    /// restart 1-3 s later, and the next kill.
    fn kill_on_schedule(&mut self, t: f64, deployment: &mut Deployment) -> anyhow::Result<()> {
        let slot = (self.random.next() % deployment.workers.len() as u64) as usize;
        let spared = self.outage_victim.is_some_and(|(victim, _)| victim == slot)
            && self.victim_back.is_none();
        let (process, _) = &mut deployment.workers[slot];
        if let Some(pid) = process.pid().filter(|_| !spared) {
            process.kill();
            self.kills.push((t, process.name.clone(), pid));
            outln!("{t:6.1} s  kill -9 {} (pid {pid})", process.name);
            self.restarts
                .push((t + 1.0 + 2.0 * self.random.unit(), slot));
        }
        self.next_kill = t + self.kill_every_seconds as f64 * (0.5 + self.random.unit());
        Ok(())
    }

    /// Starts the killed workers whose restart time has come.
    fn restart_due(&mut self, t: f64, deployment: &mut Deployment) -> anyhow::Result<()> {
        let due: Vec<(f64, usize)> = self
            .restarts
            .iter()
            .copied()
            .filter(|(at, _)| t >= *at)
            .collect();
        self.restarts.retain(|(at, _)| t < *at);
        for (_, slot) in due {
            deployment.restart_worker(slot)?;
            let process = &deployment.workers[slot].0;
            outln!(
                "{:6.1} s  restarted {} (pid {})",
                secs(deployment.started),
                process.name,
                process.pid().unwrap_or(0)
            );
        }
        Ok(())
    }
}

/// The longest a drain lasts, progress or not.
const DRAIN_LIMIT: Duration = Duration::from_secs(600);

/// The drain: no new items; every feed still behind is made due until the stores hold what
/// was published (a killed worker's feeds come back after the lease), or nothing more was
/// stored for the lease and two minutes, or ten minutes have passed. The limit follows
/// progress, not the clock: on a machine at load 15-28 the workers were still storing
/// (slow, not losing) when a fixed 140 s ended the drain.
async fn drain(
    args: &SoakArgs,
    world: &World,
    deployment: &mut Deployment,
    answers: &Answers,
) -> anyhow::Result<()> {
    let started = deployment.started;
    let load_ended = secs(started);
    let (store, farm) = (&world.store, &world.farm);
    farm.freeze();
    let published = farm.published_total();
    outln!(
        "{load_ended:6.1} s  load stopped; the feed server published {published} items; draining"
    );
    let stall_limit = Duration::from_secs(args.lease_seconds + 120);
    let drain_started = Instant::now();
    let mut last_progress = Instant::now();
    let mut stored = 0;
    while last_progress.elapsed() < stall_limit && drain_started.elapsed() < DRAIN_LIMIT {
        // Only the feeds still behind are made due (again), so the workers' queue empties.
        let behind = feeds_behind(store, farm, &world.feed_ids).await?;
        let now_stored = published - behind.iter().map(|(_, missing)| missing).sum::<u64>();
        if now_stored > stored {
            last_progress = Instant::now();
        }
        stored = now_stored;
        if behind.is_empty() {
            break;
        }
        let ids: Vec<String> = behind.iter().map(|(id, _)| id.to_string()).collect();
        let now = tidings_store::unix_now();
        if let Err(error) = store
            .execute_raw(&format!(
                "UPDATE feed_fetch_state SET next_check_at = {now} \
                 WHERE next_check_at > {now} AND feed_id IN ({})",
                ids.join(",")
            ))
            .await
        {
            outln!("make due failed during the drain: {error}");
        }
        tokio::time::sleep(Duration::from_secs(3)).await;
    }
    outln!(
        "{:6.1} s  drain done in {:.1} s: {stored} items stored",
        secs(started),
        drain_started.elapsed().as_secs_f64()
    );
    deployment.sample(answers, farm, secs(started)).await
}

/// The series an operator watches (issue 15) are on every process's /metrics, with the run's
/// requests and fetches counted, before anything stops; what is missing.
async fn check_metrics(deployment: &Deployment) -> anyhow::Result<Vec<String>> {
    let mut missing_series = Vec::new();
    for (kind, processes, families, counted) in [
        (
            "API",
            &deployment.apis,
            API_FAMILIES,
            "tidings_http_request_duration_seconds_count",
        ),
        (
            "worker",
            &deployment.workers,
            WORKER_FAMILIES,
            "tidings_fetches_total",
        ),
    ] {
        // A worker restarted late may not have fetched yet, so the count is asked of the kind.
        let mut kind_counted = false;
        for (process, base) in processes.iter() {
            let url = if kind == "API" {
                format!("{base}/metrics")
            } else {
                base.clone()
            };
            let (present, counted_any) = metric_families(&deployment.http, &url, counted).await;
            for family in families {
                let family = family.strip_suffix("_total").unwrap_or(family);
                if !present.contains(family) {
                    missing_series.push(format!("{} lacks {family}", process.name));
                }
            }
            kind_counted |= counted_any;
        }
        if !kind_counted {
            missing_series.push(format!("no {kind} process counted any {counted}"));
        }
    }
    outln!(
        "metrics: {}",
        if missing_series.is_empty() {
            "every series present on every process".to_owned()
        } else {
            missing_series.join("; ")
        }
    );
    Ok(missing_series)
}

/// Prints the fetch state of every feed that lost items, to say why.
async fn explain_lossy_feeds(world: &World, verdict: &ItemVerdict) -> anyhow::Result<()> {
    let (store, farm) = (&world.store, &world.farm);
    let now = tidings_store::unix_now();
    for &i in &verdict.lossy_feeds {
        let Some(id) = store.feed_id_by_url(&farm.url(i)).await? else {
            continue;
        };
        let state = store.feed_fetch_state(id).await?;
        outln!(
            "feed {i} (id {id}) lost items: {} published, served up to {}; {:?}, ETag {:?}, \
             next check {:+} s, last checked {:+?} s, last success {:+?} s, lease until {:+?} s, \
             last error {:?}",
            farm.published(i),
            farm.served(i),
            state.status,
            state.etag,
            state.next_check_at - now,
            state.last_checked_at.map(|t| t - now),
            state.last_success_at.map(|t| t - now),
            state.lease_until.map(|t| t - now),
            state.last_error,
        );
    }
    Ok(())
}

/// The items' part of the report.
fn report_items(verdict: &ItemVerdict, failures: &mut Vec<String>) -> anyhow::Result<()> {
    outln!("\nitems: {}", verdict.summary());
    if !verdict.passed() {
        failures.push(format!("items: {}", verdict.summary()));
        for line in verdict.examples.iter().take(10) {
            outln!("  {line}");
        }
    }
    Ok(())
}

/// The API answers' part of the report.
fn report_answers(answers: &Answers, failures: &mut Vec<String>) -> anyhow::Result<()> {
    let ok = answers.ok.load(Ordering::Relaxed);
    let in_outage = answers.unavailable_in_outage.load(Ordering::Relaxed);
    let unexpected = answers.unexpected_count.load(Ordering::Relaxed);
    let busy = answers.busy.load(Ordering::Relaxed);
    outln!(
        "API: {ok} successful answers, {} items marked read; {in_outage} answered 503 \
         database_unavailable while PostgreSQL was away; {busy} answered 503 at other times \
         (no connection free in time); {unexpected} unexpected",
        answers.marked_read.load(Ordering::Relaxed)
    );
    for (t, what) in answers
        .unexpected
        .lock()
        .unwrap_or_else(|p| p.into_inner())
        .iter()
    {
        outln!("  {t:6.1} s  {what}");
    }
    if unexpected > 0 {
        failures.push(format!("{unexpected} unexpected API answers"));
    }
    // A few 503s from a machine that other work starves are tolerated; more mean the
    // deployment itself does not keep up.
    if busy * 100 > ok + busy {
        failures.push(format!(
            "{busy} answers 503 outside the outage: more than 1 % of {}",
            ok + busy
        ));
    }
    Ok(())
}

/// The outage's part of the report: how long, and how soon the API and the workers recovered.
fn report_outage(load: &Load, faults: &Faults, failures: &mut Vec<String>) -> anyhow::Result<()> {
    let (outage, answers) = (&load.outage, &load.answers);
    let (Some(down), Some(up)) = (Outage::get(&outage.down_at), Outage::get(&outage.up_at)) else {
        return Ok(());
    };
    let first_ok = *answers
        .first_ok_after_outage
        .lock()
        .unwrap_or_else(|p| p.into_inner());
    outln!(
        "outage: PostgreSQL down at {down:.1} s, up at {up:.1} s ({:.1} s); first API success \
         {}; workers {}",
        up - down,
        first_ok.map_or("never".to_owned(), |t| format!("{:.1} s after", t - up)),
        faults.recovery.map_or(
            "never stored a fetch again".to_owned(),
            |(_, after)| format!("stored fetches again {after:.1} s after")
        )
    );
    if first_ok.is_none() {
        failures.push("the API did not answer again after the outage".into());
    }
    if answers.unavailable_in_outage.load(Ordering::Relaxed) == 0 {
        failures.push("no request met the outage: it was not exercised".into());
    }
    if faults.recovery.is_none() {
        failures.push("the workers did not store fetches after the outage".into());
    }
    Ok(())
}

/// The logs' part of the report: ERROR lines outside the faults' windows fail the run.
fn report_logs(
    deployment: &Deployment,
    outage: &Outage,
    faults: &Faults,
    failures: &mut Vec<String>,
) -> anyhow::Result<()> {
    let windows = fault_windows(outage, &faults.kills);
    let logs = scan_logs(
        &deployment.apis,
        &deployment.workers,
        &windows,
        deployment.started,
    );
    outln!(
        "logs: {} ERROR and {} WARN lines outside the faults' windows; {} ERROR and {} WARN \
         within them",
        logs.errors_outside,
        logs.warnings_outside,
        logs.errors_inside,
        logs.warnings_inside
    );
    for line in logs.examples.iter().take(10) {
        outln!("  {line}");
    }
    if logs.errors_outside > 0 {
        failures.push(format!(
            "{} ERROR log lines outside the injected faults",
            logs.errors_outside
        ));
    }
    Ok(())
}

/// The memory part of the report: every process's resident memory must stay flat.
fn report_memory(deployment: &Deployment, failures: &mut Vec<String>) -> anyhow::Result<()> {
    outln!("memory (RSS, MB; per process, the first and last thirds of its longest run):");
    let processes: Vec<&Process> = (deployment.apis.iter())
        .chain(deployment.workers.iter())
        .map(|(process, _)| process)
        .collect();
    let levels = warm_levels(&processes);
    let mut kinds: Vec<_> = levels.iter().collect();
    kinds.sort_by(|a, b| a.0.cmp(b.0));
    let kinds: Vec<String> = kinds.iter().map(|(k, mb)| format!("{k} {mb:.1}")).collect();
    outln!(
        "  warm level of each kind (growth is judged from it): {}",
        kinds.join(", ")
    );
    for process in processes {
        let level = levels.get(&process_kind(&process.name)).copied();
        let (line, flat) = memory_line(process, level.unwrap_or(0.0));
        outln!("  {line}");
        if !flat {
            failures.push(format!("{}'s memory grew: {line}", process.name));
        }
    }
    Ok(())
}

/// Whether the worker restarted in the outage logged that it waited for PostgreSQL, and ran.
fn report_restart_in_outage(
    deployment: &Deployment,
    faults: &Faults,
    failures: &mut Vec<String>,
) -> anyhow::Result<()> {
    let Some((slot, incarnation)) = faults.outage_victim else {
        return Ok(());
    };
    let process = &deployment.workers[slot].0;
    let waited = process.logs.get(incarnation - 1).is_some_and(|(_, log)| {
        std::fs::read_to_string(log)
            .unwrap_or_default()
            .contains("waiting for the database")
    });
    outln!(
        "restart in the outage: {} {} for PostgreSQL and {}",
        process.name,
        if waited {
            "waited"
        } else {
            "did not log that it waited"
        },
        faults
            .victim_back
            .map_or("never ran after it".to_owned(), |after| {
                format!("ran {after:.1} s after it came back")
            })
    );
    if !waited || faults.victim_back.is_none() {
        failures.push(format!(
            "{} started while PostgreSQL was away did not wait for it and run",
            process.name
        ));
    }
    Ok(())
}

/// PASS, or FAIL with every failure (and the logs kept when they were in a temporary folder).
fn verdict_of(
    failures: &[String],
    temp_logs: Option<tempfile::TempDir>,
) -> anyhow::Result<ExitCode> {
    if failures.is_empty() {
        outln!("\nPASS");
        return Ok(ExitCode::SUCCESS);
    }
    if let Some(temp) = temp_logs {
        let kept = temp.keep();
        outln!("logs kept in {}", kept.display());
    }
    outln!("\nFAIL:");
    for failure in failures {
        outln!("  - {failure}");
    }
    Ok(ExitCode::FAILURE)
}

/// The `tidings` binary the soak runs: the one beside `tidings-bench` (cargo builds both into
/// the same folder, and they are installed together), else the first on PATH.
fn product_binary() -> anyhow::Result<PathBuf> {
    let name = format!("tidings{}", std::env::consts::EXE_SUFFIX);
    let here = std::env::current_exe().context("cannot find the tidings-bench binary")?;
    let beside = here.with_file_name(&name);
    if beside.is_file() {
        return Ok(beside);
    }
    std::env::var_os("PATH")
        .and_then(|paths| {
            std::env::split_paths(&paths)
                .map(|dir| dir.join(&name))
                .find(|path| path.is_file())
        })
        .with_context(|| {
            format!(
                "cannot find the tidings binary: not at {} nor on PATH (build it with \
                 `cargo build -p tidings`)",
                beside.display()
            )
        })
}

/// A port free on 127.0.0.1 a moment ago.
fn free_port() -> anyhow::Result<u16> {
    Ok(std::net::TcpListener::bind("127.0.0.1:0")?
        .local_addr()?
        .port())
}

/// Waits up to a minute for a URL to answer 200.
async fn wait_ready(http: &reqwest::Client, url: &str, name: &str) -> anyhow::Result<()> {
    let deadline = Instant::now() + Duration::from_secs(60);
    while Instant::now() < deadline {
        if let Ok(response) = http.get(url).send().await
            && response.status().is_success()
        {
            return Ok(());
        }
        tokio::time::sleep(Duration::from_millis(200)).await;
    }
    bail!("{name} did not become ready at {url} within a minute")
}

/// Creates one user per client with an API key, following about two users a feed; returns
/// the keys.
async fn subscribe_clients(
    store: &Store,
    farm: &Farm,
    clients: usize,
) -> anyhow::Result<(Vec<String>, Vec<i64>)> {
    let mut users = Vec::with_capacity(clients);
    let mut keys = Vec::with_capacity(clients);
    for n in 0..clients {
        let user = store
            .create_user(&NewUser {
                username: format!("soak{n}"),
                password_hash: None,
                is_admin: false,
            })
            .await?;
        let secret = crate::api::new_api_key(store, &user, "soak").await?;
        users.push(user.id);
        keys.push(secret);
    }
    // Feed i is followed by users i mod C and (7i + 3) mod C: every feed has a reader, most
    // have two, and each user follows about 2N/C feeds.
    let mut tasks = tokio::task::JoinSet::new();
    let plan: Vec<(i64, usize)> = (0..farm.len())
        .flat_map(|i| {
            let first = i % clients;
            let second = (7 * i + 3) % clients;
            let mut followers = vec![(users[first], i)];
            if second != first {
                followers.push((users[second], i));
            }
            followers
        })
        .collect();
    let plan = Arc::new(Mutex::new(plan));
    let feed_ids = Arc::new(Mutex::new(vec![0i64; farm.len()]));
    for _ in 0..4 {
        let store = store.clone();
        let plan = Arc::clone(&plan);
        let feed_ids = Arc::clone(&feed_ids);
        let urls: Vec<String> = (0..farm.len()).map(|i| farm.url(i)).collect();
        tasks.spawn(async move {
            loop {
                let next = plan.lock().unwrap_or_else(|p| p.into_inner()).pop();
                let Some((user, i)) = next else {
                    return Ok::<(), tidings_store::StoreError>(());
                };
                let subscription = store
                    .subscribe(
                        user,
                        &NewSubscription {
                            feed_url: urls[i].clone(),
                            ..Default::default()
                        },
                    )
                    .await?;
                feed_ids.lock().unwrap_or_else(|p| p.into_inner())[i] = subscription.feed_id;
            }
        });
    }
    while let Some(done) = tasks.join_next().await {
        done??;
    }
    let feed_ids = feed_ids.lock().unwrap_or_else(|p| p.into_inner()).clone();
    Ok((keys, feed_ids))
}

/// One API client: its unread items, some of them marked read, its counts; about one request
/// a second, under the per-user limit of 120 a minute.
async fn client_loop(
    http: reqwest::Client,
    base: String,
    key: String,
    stop: Arc<AtomicBool>,
    answers: Arc<Answers>,
    outage: Arc<Outage>,
    started: Instant,
) {
    let mut round: u64 = 0;
    while !stop.load(Ordering::SeqCst) {
        round += 1;
        let mut ids: Vec<i64> = Vec::new();
        for step in 0..3 {
            let request = match step {
                0 => http.get(format!("{base}/api/v1/items?filter=unread&limit=20")),
                1 if !ids.is_empty() => http
                    .post(format!("{base}/api/v1/items/mark-read"))
                    .header(reqwest::header::CONTENT_TYPE, "application/json")
                    .body(serde_json::json!({"ids": ids}).to_string()),
                1 => continue,
                _ => http.get(format!("{base}/api/v1/counts")),
            };
            let sent = secs(started);
            let result = request.bearer_auth(&key).send().await;
            let answered = secs(started);
            match result {
                Ok(response) if response.status().is_success() => {
                    let body = json_body(response).await;
                    answers.ok.fetch_add(1, Ordering::Relaxed);
                    if let Some(up) = Outage::get(&outage.up_at)
                        && sent > up
                    {
                        let mut first = answers
                            .first_ok_after_outage
                            .lock()
                            .unwrap_or_else(|p| p.into_inner());
                        first.get_or_insert(answered);
                    }
                    if step == 0 {
                        // Half of the page is read, the other half left for later.
                        ids = body["items"]
                            .as_array()
                            .map(|items| {
                                items
                                    .iter()
                                    .filter_map(|item| item["id"].as_i64())
                                    .filter(|id| (*id as u64 + round).is_multiple_of(2))
                                    .collect()
                            })
                            .unwrap_or_default();
                    } else if step == 1 {
                        answers
                            .marked_read
                            .fetch_add(body["marked"].as_u64().unwrap_or(0), Ordering::Relaxed);
                    }
                }
                Ok(response) => {
                    let status = response.status();
                    let body = json_body(response).await;
                    let code = body["error"]["code"].as_str().unwrap_or("").to_owned();
                    let unavailable = status == reqwest::StatusCode::SERVICE_UNAVAILABLE
                        && code == "database_unavailable";
                    if unavailable && outage.covers(sent, answered) {
                        answers
                            .unavailable_in_outage
                            .fetch_add(1, Ordering::Relaxed);
                    } else if unavailable {
                        answers.busy.fetch_add(1, Ordering::Relaxed);
                    } else {
                        answers.unexpected(
                            answered,
                            format!("{base}: {status} {code} {}", body["error"]["message"]),
                        );
                    }
                }
                // With the error's causes: reqwest's own message says only that sending
                // failed, not whether it timed out or found the connection closed.
                Err(error) => answers.unexpected(
                    answered,
                    format!(
                        "{base}: {} (sent at {sent:.1} s)",
                        tidings_server::base::error::error_chain(&error)
                    ),
                ),
            }
            tokio::time::sleep(Duration::from_millis(900)).await;
        }
    }
}

/// A response's JSON body (`null` when it is not JSON).
async fn json_body(response: reqwest::Response) -> serde_json::Value {
    let bytes = response.bytes().await.unwrap_or_default();
    serde_json::from_slice(&bytes).unwrap_or_default()
}

/// Makes every feed due once per `every` seconds, a slice at a time (time compression).
async fn make_due_in_slices(store: Store, every: u64, stop: Arc<AtomicBool>) {
    let tick = Duration::from_secs(2);
    let slices = (every / 2).max(1);
    let mut slice = 0;
    while !stop.load(Ordering::SeqCst) {
        // Due now rather than at 0, so that feeds are claimed in the order they became due
        // (the claim orders by due time) and none starves behind others when the workers lag.
        // Fails while the database is away; the next tick tries again.
        let now = tidings_store::unix_now();
        let _ = store
            .execute_raw(&format!(
                "UPDATE feed_fetch_state SET next_check_at = {now} \
                 WHERE feed_id % {slices} = {slice} AND next_check_at > {now}"
            ))
            .await;
        slice = (slice + 1) % slices;
        tokio::time::sleep(tick).await;
    }
}

/// Stops PostgreSQL for `away`, then starts it again, recording when.
async fn take_database_away(
    postgres: Arc<PrivatePostgres>,
    away: Duration,
    outage: Arc<Outage>,
    started: Instant,
) -> anyhow::Result<()> {
    // From the moment the stop is asked for: connections are cut while pg_ctl waits.
    outage
        .down_at
        .store(secs(started).to_bits(), Ordering::SeqCst);
    let down = Arc::clone(&postgres);
    tokio::task::spawn_blocking(move || down.down()).await??;
    outln!("{:6.1} s  PostgreSQL stopped (immediate)", secs(started));
    tokio::time::sleep(away).await;
    let up = Arc::clone(&postgres);
    tokio::task::spawn_blocking(move || up.up()).await??;
    outage
        .up_at
        .store(secs(started).to_bits(), Ordering::SeqCst);
    outln!("{:6.1} s  PostgreSQL started again", secs(started));
    Ok(())
}

/// The series of one `/metrics` scrape.
async fn scrape(http: &reqwest::Client, url: &str) -> HashMap<String, f64> {
    let Ok(response) = http.get(url).timeout(Duration::from_secs(5)).send().await else {
        return HashMap::new();
    };
    let text = response.text().await.unwrap_or_default();
    text.lines()
        .filter(|line| !line.starts_with('#'))
        .filter_map(|line| line.rsplit_once(' '))
        .filter_map(|(series, value)| Some((series.to_owned(), value.parse().ok()?)))
        .collect()
}

/// The metric families an API process serves: its requests, the database's pool and the fetch
/// queue as the database tells it. `tidings_rate_limited` is not among them: a counter family
/// with no sample (nothing refused) is not written at all.
const API_FAMILIES: &[&str] = &[
    "tidings_http_request_duration_seconds",
    "tidings_db_pool_connections",
    "tidings_database_up",
    "tidings_feeds",
    "tidings_fetch_queue_depth",
];

/// The metric families a worker process serves: fetch outcomes, failures by reason, HTTP
/// statuses, latency, items, and the same database series.
const WORKER_FAMILIES: &[&str] = &[
    "tidings_fetches",
    "tidings_fetch_failures",
    "tidings_fetch_parse_failures",
    "tidings_fetch_http_status",
    "tidings_fetch_duration_seconds",
    "tidings_items_upserted",
    "tidings_db_pool_connections",
    "tidings_database_up",
    "tidings_feeds",
    "tidings_fetch_queue_depth",
];

/// The families a `/metrics` page declares and whether a sample of `counted` is above zero
/// (see [`declared_families`]); nothing when the page cannot be read.
async fn metric_families(
    http: &reqwest::Client,
    url: &str,
    counted: &str,
) -> (std::collections::HashSet<String>, bool) {
    let Ok(response) = http.get(url).timeout(Duration::from_secs(5)).send().await else {
        return Default::default();
    };
    declared_families(&response.text().await.unwrap_or_default(), counted)
}

/// The families a `/metrics` text declares (its `# TYPE` lines), named without the `_total`
/// that a counter's samples carry (whichever way a TYPE line names it), and whether a sample
/// of `counted` is above zero.
fn declared_families(text: &str, counted: &str) -> (std::collections::HashSet<String>, bool) {
    let families = text
        .lines()
        .filter_map(|line| line.strip_prefix("# TYPE "))
        .filter_map(|rest| rest.split(' ').next())
        .map(|family| family.strip_suffix("_total").unwrap_or(family).to_owned())
        .collect();
    let counted_any = text.lines().any(|line| {
        line.starts_with(counted)
            && line
                .rsplit_once(' ')
                .and_then(|(_, value)| value.parse::<f64>().ok())
                .is_some_and(|value| value > 0.0)
    });
    (families, counted_any)
}

/// Fetches the live workers have stored (parsed or not modified), summed over their
/// `/metrics`.
async fn fetched_total(http: &reqwest::Client, workers: &[(Process, String)]) -> f64 {
    let mut total = 0.0;
    for (_, url) in workers {
        let series = scrape(http, url).await;
        for result in ["parsed", "not_modified", "unchanged"] {
            total += series
                .get(&format!("tidings_fetches_total{{result=\"{result}\"}}"))
                .copied()
                .unwrap_or(0.0);
        }
    }
    total
}

/// One line of the report: memory, answers, fetches and the queue from the workers' metrics.
async fn sample(
    apis: &mut [(Process, String)],
    workers: &mut [(Process, String)],
    http: &reqwest::Client,
    answers: &Answers,
    farm: &Farm,
    t: f64,
) -> anyhow::Result<()> {
    let mut memory = Vec::new();
    for (process, _) in apis.iter_mut().chain(workers.iter_mut()) {
        process.sample_rss(t);
        let kib = process
            .rss
            .last()
            .and_then(|series| series.last())
            .map(|(_, kib)| *kib);
        memory.push(format!(
            "{} {}",
            process.name,
            kib.map_or("-".to_owned(), |kib| format!("{:.1}", kib as f64 / 1024.0))
        ));
    }
    let metrics = match workers.first() {
        Some((_, url)) => scrape(http, url).await,
        None => HashMap::new(),
    };
    let gauge = |name: &str| {
        metrics
            .get(name)
            .map_or("-".to_owned(), |value| format!("{value:.0}"))
    };
    outln!(
        "{t:6.1} s  RSS MB: {} | API ok {} | queue {} | database up {} | published {}",
        memory.join(", "),
        answers.ok.load(Ordering::Relaxed),
        gauge("tidings_fetch_queue_depth"),
        gauge("tidings_database_up"),
        farm.published_total(),
    );
    Ok(())
}

/// The feeds whose stored items are fewer than they published, with how many are missing.
async fn feeds_behind(
    store: &Store,
    farm: &Farm,
    feed_ids: &[i64],
) -> anyhow::Result<Vec<(i64, u64)>> {
    let stored = store.item_guids_by_feed_url().await?;
    Ok((0..farm.len())
        .filter_map(|i| {
            let have = stored
                .get(&farm.url(i))
                .map_or(0, |guids| guids.len() as u64);
            let missing = farm.published(i).saturating_sub(have);
            (missing > 0).then_some((feed_ids[i], missing))
        })
        .collect())
}

/// What the item check found.
struct ItemVerdict {
    published: u64,
    stored: u64,
    lost: u64,
    duplicated: u64,
    unknown: u64,
    unseen: u64,
    examples: Vec<String>,
    /// Feeds with lost items, the first few, for their fetch state in the report.
    lossy_feeds: Vec<usize>,
}

impl ItemVerdict {
    fn passed(&self) -> bool {
        self.lost == 0 && self.duplicated == 0 && self.unknown == 0 && self.published > 0
    }

    fn summary(&self) -> String {
        format!(
            "{} published, {} stored; {} lost, {} stored more than once, {} not published; \
             {} left a feed before any fetch saw them",
            self.published, self.stored, self.lost, self.duplicated, self.unknown, self.unseen
        )
    }
}

/// Compares the items stored with the feed server's record: every published item once.
async fn check_items(store: &Store, farm: &Farm) -> anyhow::Result<ItemVerdict> {
    let stored = store.item_guids_by_feed_url().await?;
    let mut verdict = ItemVerdict {
        published: farm.published_total(),
        stored: 0,
        lost: 0,
        duplicated: 0,
        unknown: 0,
        unseen: farm.unseen_total(),
        examples: Vec::new(),
        lossy_feeds: Vec::new(),
    };
    let mut by_feed: BTreeMap<usize, Vec<String>> = BTreeMap::new();
    for (url, guids) in stored {
        verdict.stored += guids.len() as u64;
        match farm.index_of(&url) {
            Some(i) => {
                by_feed.insert(i, guids);
            }
            None => {
                verdict.unknown += guids.len() as u64;
                verdict
                    .examples
                    .push(format!("items of an unknown feed {url}"));
            }
        }
    }
    for i in 0..farm.len() {
        let mut counts: HashMap<&str, u64> = HashMap::new();
        for guid in by_feed.get(&i).into_iter().flatten() {
            *counts.entry(guid.as_str()).or_default() += 1;
        }
        let published = farm.published(i);
        for k in 0..published {
            let guid = Farm::guid(i, k);
            match counts.remove(guid.as_str()) {
                None => {
                    verdict.lost += 1;
                    verdict.examples.push(format!("lost: {guid}"));
                    if verdict.lossy_feeds.len() < 5 && !verdict.lossy_feeds.contains(&i) {
                        verdict.lossy_feeds.push(i);
                    }
                }
                Some(1) => {}
                Some(n) => {
                    verdict.duplicated += n - 1;
                    verdict.examples.push(format!("{guid} stored {n} times"));
                }
            }
        }
        for (guid, n) in counts {
            verdict.unknown += n;
            verdict.examples.push(format!("not published: {guid}"));
        }
    }
    Ok(verdict)
}

/// The windows in which injected faults may explain warnings and errors: the outage (and the
/// lease after it, in which fetches cut off by it are given up), and a short while after each
/// kill.
fn fault_windows(outage: &Outage, kills: &[(f64, String, u32)]) -> Vec<Window> {
    let mut windows = Vec::new();
    if let Some(down) = Outage::get(&outage.down_at) {
        let up = Outage::get(&outage.up_at).unwrap_or(f64::MAX);
        windows.push(Window {
            from: down - 1.0,
            to: up + 30.0,
        });
    }
    for (t, _, _) in kills {
        windows.push(Window {
            from: *t,
            to: t + 5.0,
        });
    }
    windows
}

/// What the processes logged at WARN and ERROR.
#[derive(Default)]
struct LogScan {
    errors_outside: u64,
    warnings_outside: u64,
    errors_inside: u64,
    warnings_inside: u64,
    examples: Vec<String>,
}

/// Reads every process's JSON log lines and sorts its warnings and errors by whether a fault
/// window explains them.
fn scan_logs(
    apis: &[(Process, String)],
    workers: &[(Process, String)],
    windows: &[Window],
    started: Instant,
) -> LogScan {
    let mut scan = LogScan::default();
    let started_wall =
        chrono::Utc::now() - chrono::Duration::from_std(started.elapsed()).unwrap_or_default();
    for (process, _) in apis.iter().chain(workers.iter()) {
        for (_, path) in &process.logs {
            let text = std::fs::read_to_string(path).unwrap_or_default();
            for line in text.lines() {
                let Ok(event) = serde_json::from_str::<serde_json::Value>(line) else {
                    // Not JSON: a panic message or the like, which is an error in itself.
                    if !line.trim().is_empty() {
                        scan.errors_outside += 1;
                        scan.examples.push(format!("{}: {line}", process.name));
                    }
                    continue;
                };
                let level = event["level"].as_str().unwrap_or("");
                let at = event["timestamp"]
                    .as_str()
                    .and_then(|t| chrono::DateTime::parse_from_rfc3339(t).ok())
                    .map(|t| (t.with_timezone(&chrono::Utc) - started_wall).as_seconds_f64());
                let inside = at.is_some_and(|t| windows.iter().any(|w| w.contains(t)));
                let counter = match (level, inside) {
                    ("ERROR", false) => &mut scan.errors_outside,
                    ("ERROR", true) => &mut scan.errors_inside,
                    ("WARN", false) => &mut scan.warnings_outside,
                    ("WARN", true) => &mut scan.warnings_inside,
                    _ => continue,
                };
                *counter += 1;
                if !inside && scan.examples.len() < 10 {
                    scan.examples.push(format!(
                        "{} at {:.1} s: {level} {}",
                        process.name,
                        at.unwrap_or(-1.0),
                        event["message"].as_str().unwrap_or(line)
                    ));
                }
            }
        }
    }
    scan
}

/// How long a process warms up (connection pool, caches, its first batch) before its memory is
/// judged: a worker restarted late in the run starts near 26 MB and reaches the others' plateau
/// within its first batches, which is warm-up, not growth.
const MEMORY_WARM_UP_SECONDS: f64 = 30.0;

/// The samples of a process's longest incarnation taken after its warm-up, or `None` when
/// fewer than four are left: too short to tell growth from warm-up.
fn steady_samples(process: &Process) -> Option<Vec<(f64, u64)>> {
    let steady_part = |series: &Vec<(f64, u64)>| -> Vec<(f64, u64)> {
        let Some(&(started, _)) = series.first() else {
            return Vec::new();
        };
        series
            .iter()
            .copied()
            .filter(|(at, _)| *at >= started + MEMORY_WARM_UP_SECONDS)
            .collect()
    };
    process
        .rss
        .iter()
        .map(steady_part)
        .max_by_key(|steady| steady.len())
        .filter(|steady| steady.len() >= 4)
}

/// The median resident memory (MB) of some samples.
fn median_mb(part: &[(f64, u64)]) -> f64 {
    let mut values: Vec<u64> = part.iter().map(|(_, kib)| *kib).collect();
    values.sort_unstable();
    values.get(values.len() / 2).copied().unwrap_or(0) as f64 / 1024.0
}

/// The first and the last third (median MB) of a process's steady samples.
fn thirds(steady: &[(f64, u64)]) -> (f64, f64) {
    let third = (steady.len() / 3).max(1);
    (
        median_mb(&steady[..third]),
        median_mb(&steady[steady.len() - third..]),
    )
}

/// What a process of one kind (`api`, `worker`: the name without its number) holds once warm:
/// the highest first-third median among the processes of that kind. A worker restarted while
/// PostgreSQL was away idles at 28 MB for longer than the warm-up and then climbs to the level
/// every other worker holds; measured against its own idle start that is growth, measured
/// against its kind it is not. A leak still shows: it takes a process past its kind's level.
fn warm_levels(processes: &[&Process]) -> HashMap<String, f64> {
    let mut levels: HashMap<String, f64> = HashMap::new();
    for process in processes {
        let Some(steady) = steady_samples(process) else {
            continue;
        };
        let (first, _) = thirds(&steady);
        let level = levels.entry(process_kind(&process.name)).or_insert(0.0);
        *level = level.max(first);
    }
    levels
}

/// A process's kind: its name without the trailing number (`worker2` → `worker`).
fn process_kind(name: &str) -> String {
    name.trim_end_matches(|c: char| c.is_ascii_digit())
        .to_string()
}

/// A process's memory over its longest incarnation: the median of the first and the last
/// third of the samples taken after its warm-up, and whether it stayed flat (the last third
/// at most 25 % and 8 MB above the higher of its own first third and `warm_level`, what its
/// kind holds once warm). An incarnation with fewer than four samples after its warm-up is
/// too short to tell growth from warm-up, and is not judged.
fn memory_line(process: &Process, warm_level: f64) -> (String, bool) {
    let Some(steady) = steady_samples(process) else {
        return (
            format!("{}: too few samples after warm-up", process.name),
            true,
        );
    };
    let (first, last) = thirds(&steady);
    let peak = steady.iter().map(|(_, kib)| *kib).max().unwrap_or(0) as f64 / 1024.0;
    let flat = last <= first.max(warm_level) * 1.25 + 8.0;
    (
        format!(
            "{}: {first:.1} → {last:.1} (peak {peak:.1}; {} samples over {:.0} s){}",
            process.name,
            steady.len(),
            steady.last().map_or(0.0, |(t, _)| *t) - steady[0].0,
            if flat { "" } else { " GREW" }
        ),
        flat,
    )
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_process_dropped_without_a_stop_is_killed() {
        let logs = tempfile::tempdir().unwrap();
        let mut process = Process::new("sleeper".into(), &["60"], Vec::new());
        process
            .start(Path::new("sleep"), logs.path(), Instant::now())
            .unwrap();
        let pid = process.pid().unwrap();
        let alive = |pid: u32| {
            std::fs::read_to_string(format!("/proc/{pid}/stat"))
                .is_ok_and(|stat| !stat.contains(") Z "))
        };
        assert!(alive(pid));
        drop(process);
        assert!(!alive(pid), "process {pid} outlived its Process");
    }

    #[test]
    fn a_seed_repeats_the_choices() {
        let mut a = XorShift(42 | 1);
        let mut b = XorShift(42 | 1);
        let first: Vec<u64> = (0..5).map(|_| a.next()).collect();
        let second: Vec<u64> = (0..5).map(|_| b.next()).collect();
        assert_eq!(first, second);
        assert!((0..1000).map(|_| a.unit()).all(|u| (0.0..1.0).contains(&u)));
    }

    #[test]
    fn the_outage_covers_requests_that_met_it() {
        let outage = Outage::default();
        assert!(!outage.covers(10.0, 10.1));
        outage.down_at.store(100.0f64.to_bits(), Ordering::SeqCst);
        outage.up_at.store(130.0f64.to_bits(), Ordering::SeqCst);
        assert!(outage.covers(99.9, 100.2));
        assert!(outage.covers(120.0, 120.8));
        assert!(outage.covers(131.0, 131.5));
        assert!(!outage.covers(90.0, 90.5));
        assert!(!outage.covers(140.0, 140.1));
    }

    #[test]
    fn families_are_named_without_a_counters_total() {
        let text = "# HELP tidings_fetches Fetches by result.\n\
                    # TYPE tidings_fetches counter\n\
                    tidings_fetches_total{result=\"parsed\"} 3\n\
                    # TYPE tidings_items_upserted_total counter\n\
                    # TYPE tidings_database_up gauge\n\
                    tidings_database_up 1\n";
        let (families, counted) = declared_families(text, "tidings_fetches_total");
        for family in [
            "tidings_fetches",
            "tidings_items_upserted",
            "tidings_database_up",
        ] {
            assert!(families.contains(family), "{family} in {families:?}");
        }
        assert!(counted);
        let (_, counted) = declared_families(text, "tidings_items_upserted_total");
        assert!(!counted, "a family without samples counted nothing");
    }

    #[test]
    fn memory_that_grows_is_flagged() {
        let mut process = Process::new("w".into(), &[], Vec::new());
        process.rss = vec![(0..10).map(|n| (n as f64 * 10.0, 40_000)).collect()];
        let (line, flat) = memory_line(&process, 0.0);
        assert!(flat && !line.contains("too few"), "{line}");
        process.rss = vec![
            (0..10)
                .map(|n| (n as f64 * 10.0, 40_000 + n * 10_000))
                .collect(),
        ];
        let (line, flat) = memory_line(&process, 0.0);
        assert!(!flat, "{line}");
        assert!(line.contains("GREW"));
    }

    #[test]
    fn idling_through_the_outage_then_warming_is_not_growth() {
        // Restarted while PostgreSQL was away: 28 MB for a minute, then the 50 MB every
        // worker holds. Judged against its own idle start it grew; against its kind, not.
        let samples = |low_until: usize, high: u64| -> Vec<(f64, u64)> {
            (0..12)
                .map(|n| {
                    let kib = if n < low_until { 28_700 } else { high };
                    (150.0 + n as f64 * 9.0, kib)
                })
                .collect()
        };
        let mut late = Process::new("worker2".into(), &[], Vec::new());
        late.rss = vec![samples(8, 50_700)];
        let mut steady = Process::new("worker0".into(), &[], Vec::new());
        steady.rss = vec![(0..16).map(|n| (n as f64 * 10.0, 51_700)).collect()];
        let levels = warm_levels(&[&late, &steady]);
        assert_eq!(levels.len(), 1, "{levels:?}");
        let level = levels["worker"];
        assert!((level - 51_700.0 / 1024.0).abs() < 0.1, "{level}");
        let (line, flat) = memory_line(&late, level);
        assert!(flat, "{line}");
        let (line, flat) = memory_line(&late, 0.0);
        assert!(!flat, "alone, its climb reads as growth: {line}");
        // A leak still shows: past the level its kind holds by more than the allowance.
        late.rss = vec![samples(8, 110_000)];
        let (line, flat) = memory_line(&late, level);
        assert!(!flat && line.contains("GREW"), "{line}");
    }

    #[test]
    fn warming_up_after_a_restart_is_not_growth() {
        // A worker restarted late: 26 MB at start, the others' 47 MB plateau 20 s later.
        let mut process = Process::new("w".into(), &[], Vec::new());
        let restarted: Vec<(f64, u64)> = (0..10)
            .map(|n| {
                let kib = if n < 2 { 26_500 } else { 47_000 + n * 100 };
                (200.0 + n as f64 * 10.0, kib)
            })
            .collect();
        process.rss = vec![vec![(0.0, 40_000), (10.0, 40_000)], restarted];
        let (line, flat) = memory_line(&process, 0.0);
        assert!(flat, "{line}");
        // Too short after its warm-up to judge at all.
        process.rss = vec![
            (0..5)
                .map(|n| (n as f64 * 10.0, 20_000 + n * 20_000))
                .collect(),
        ];
        let (line, flat) = memory_line(&process, 0.0);
        assert!(flat && line.contains("too few samples"), "{line}");
    }
}
