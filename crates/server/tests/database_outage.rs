//! PostgreSQL going away under a running server (issue 11): requests are answered 503 with a
//! clear JSON error within a second (not after the pool's old 10 s time-out, as a 500), the
//! readiness check says so, and when the database is back the next requests succeed without
//! restarting tidings.
//!
//! The test runs a PostgreSQL instance of its own (initdb into a temporary folder, pg_ctl on a
//! free port), since it stops and starts it; the shared test server is never touched.

#[path = "../../store/tests/common/mod.rs"]
mod common;
mod support;

use std::path::{Path, PathBuf};
use std::process::Command;
use std::time::{Duration, Instant};

use common::skip;
use reqwest::{Method, StatusCode};
use support::{TestApp, assert_error, call};

/// What is missing when the PostgreSQL server programs are not installed.
const NO_SERVER_PROGRAMS: &str = "initdb and pg_ctl are not installed (looked in \
     /usr/lib/postgresql/*/bin; on Debian: apt-get install postgresql)";

/// The most a request may take to be answered 503 while the database is down. The store gives
/// up on a connection after 750 ms (TIDINGS_DATABASE_ACQUIRE_TIMEOUT_MS); the rest is margin
/// for a loaded machine.
const PROMPT: Duration = Duration::from_millis(1000);

/// A PostgreSQL instance in a temporary folder, stopped when dropped.
struct PrivatePostgres {
    bin: PathBuf,
    dir: tempfile::TempDir,
    port: u16,
    /// Whether the programs run as the `postgres` user (PostgreSQL refuses to run as root).
    as_postgres: bool,
}

impl PrivatePostgres {
    /// Creates and starts an instance, or `None` (with the skip reported) when the server
    /// programs are missing.
    fn start(test: &str) -> Option<PrivatePostgres> {
        let Some(bin) = server_programs() else {
            skip::skip(test, NO_SERVER_PROGRAMS);
            return None;
        };
        let as_postgres = output("id", &["-u"]).trim() == "0";
        let dir = tempfile::tempdir().expect("temporary folder");
        if as_postgres {
            run("chown", &["-R", "postgres:postgres", path_text(dir.path())]);
        }
        let port = std::net::TcpListener::bind("127.0.0.1:0")
            .and_then(|listener| listener.local_addr())
            .expect("a free port")
            .port();
        let instance = PrivatePostgres {
            bin,
            dir,
            port,
            as_postgres,
        };
        let data = instance.data();
        instance.program(
            "initdb",
            &[
                "-D",
                path_text(&data),
                "-U",
                "postgres",
                "-A",
                "trust",
                "-E",
                "UTF8",
                "--no-sync",
            ],
        );
        instance.up();
        Some(instance)
    }

    fn data(&self) -> PathBuf {
        self.dir.path().join("data")
    }

    /// `postgres://…` for the instance's `postgres` database.
    fn url(&self) -> String {
        format!("postgres://postgres@127.0.0.1:{}/postgres", self.port)
    }

    /// Starts the server and waits until it accepts connections.
    fn up(&self) {
        let options = format!(
            "-p {} -k {} -c listen_addresses=127.0.0.1 -c fsync=off",
            self.port,
            path_text(self.dir.path())
        );
        let log = self.dir.path().join("server.log");
        self.program(
            "pg_ctl",
            &[
                "-D",
                path_text(&self.data()),
                "-l",
                path_text(&log),
                "-o",
                &options,
                "-w",
                "start",
            ],
        );
    }

    /// Stops the server the hard way, as a crash or a pulled cable would.
    fn down(&self) {
        self.program(
            "pg_ctl",
            &[
                "-D",
                path_text(&self.data()),
                "-m",
                "immediate",
                "-w",
                "stop",
            ],
        );
    }

    /// Runs one of the server programs, failing the test
    /// with its output and the server's log when it fails.
    fn program(&self, name: &str, args: &[&str]) {
        let done = self
            .command(name)
            .args(args)
            .output()
            .unwrap_or_else(|e| panic!("run {name}: {e}"));
        if !done.status.success() {
            let log =
                std::fs::read_to_string(self.dir.path().join("server.log")).unwrap_or_default();
            panic!(
                "{name} {args:?} failed: {}{}\nserver log:\n{log}",
                String::from_utf8_lossy(&done.stdout),
                String::from_utf8_lossy(&done.stderr)
            );
        }
    }
}

impl PrivatePostgres {
    /// A command running one of the server programs, as `postgres` when we are root.
    fn command(&self, name: &str) -> Command {
        let program = self.bin.join(name);
        if self.as_postgres {
            let mut command = Command::new("runuser");
            command.args(["-u", "postgres", "--"]).arg(program);
            command
        } else {
            Command::new(program)
        }
    }
}

impl Drop for PrivatePostgres {
    fn drop(&mut self) {
        let data = self.data();
        let _ = self
            .command("pg_ctl")
            .args(["-D", path_text(&data), "-m", "immediate", "stop"])
            .output();
    }
}

/// The newest installed PostgreSQL's folder of server programs.
fn server_programs() -> Option<PathBuf> {
    let mut found: Vec<(u32, PathBuf)> = std::fs::read_dir("/usr/lib/postgresql")
        .ok()?
        .filter_map(|entry| {
            let entry = entry.ok()?;
            let version = entry.file_name().to_str()?.parse::<u32>().ok()?;
            let bin = entry.path().join("bin");
            (bin.join("initdb").exists() && bin.join("pg_ctl").exists()).then_some((version, bin))
        })
        .collect();
    found.sort();
    found.pop().map(|(_, bin)| bin)
}

fn path_text(path: &Path) -> &str {
    path.to_str().expect("a UTF-8 temporary path")
}

fn output(program: &str, args: &[&str]) -> String {
    let done = Command::new(program)
        .args(args)
        .output()
        .unwrap_or_else(|e| panic!("run {program}: {e}"));
    String::from_utf8_lossy(&done.stdout).into_owned()
}

fn run(program: &str, args: &[&str]) {
    let done = Command::new(program)
        .args(args)
        .status()
        .unwrap_or_else(|e| panic!("run {program}: {e}"));
    assert!(done.success(), "{program} {args:?} failed");
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn postgres_down_is_a_prompt_503_and_recovery_needs_no_restart() {
    let test = "database_outage::postgres_down_is_a_prompt_503_and_recovery_needs_no_restart";
    let Some(postgres) = PrivatePostgres::start(test) else {
        return;
    };
    let db = common::TestDb::Postgres {
        admin_url: postgres.url(),
        schema: "public".into(),
    };
    let app = TestApp::start(&db).await;
    app.user("ann", false).await;
    let browser = app.signed_in("ann").await;
    let (status, _, body) = call(&browser, Method::GET, &app.url("/counts"), None).await;
    assert_eq!(status, StatusCode::OK, "{body}");

    postgres.down();
    for path in ["/counts", "/subscriptions", "/me"] {
        let started = Instant::now();
        let (status, headers, body) = call(&browser, Method::GET, &app.url(path), None).await;
        let took = started.elapsed();
        eprintln!("{path} with the database down: {status} in {took:?}");
        assert_eq!(status, StatusCode::SERVICE_UNAVAILABLE, "{path}: {body}");
        assert_error(&body, "database_unavailable", "system");
        assert!(
            body["error"]["message"]
                .as_str()
                .unwrap()
                .contains("database is unreachable"),
            "{body}"
        );
        assert_eq!(headers["retry-after"], "5", "{path}");
        assert!(took < PROMPT, "{path} took {took:?}");
    }
    let started = Instant::now();
    let ready = reqwest::get(format!("{}/readyz", app.base)).await.unwrap();
    let took = started.elapsed();
    eprintln!(
        "/readyz with the database down: {} in {took:?}",
        ready.status()
    );
    assert_eq!(ready.status(), StatusCode::SERVICE_UNAVAILABLE);
    assert!(took < PROMPT, "/readyz took {took:?}");

    // Back: the very next requests succeed, on the same server process and store.
    postgres.up();
    let (status, _, body) = call(&browser, Method::GET, &app.url("/counts"), None).await;
    assert_eq!(
        status,
        StatusCode::OK,
        "the first request after the outage: {body}"
    );
    let (status, _, body) = call(&browser, Method::GET, &app.url("/me"), None).await;
    assert_eq!(status, StatusCode::OK, "{body}");
    assert_eq!(body["user"]["username"], "ann");
    let ready = reqwest::get(format!("{}/readyz", app.base)).await.unwrap();
    assert_eq!(ready.status(), StatusCode::OK);
}
