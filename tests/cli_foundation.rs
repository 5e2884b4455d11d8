//! End-to-end tests of the `tidings` binary: `serve` with health and readiness on both
//! engines, `migrate`, `user`, and configuration errors.

use std::io::{BufRead, BufReader, Read, Write};
use std::net::{SocketAddr, TcpStream};
use std::path::Path;
use std::process::{Child, Command, Stdio};
use std::sync::mpsc;
use std::time::Duration;

use tidings_testkit::skip;

const BIN: &str = env!("CARGO_BIN_EXE_tidings");
const GOOD_PASSWORD: &str = "correct horse battery staple";

/// A `tidings` command in `dir` with a clean environment for the settings it reads.
fn tidings(dir: &Path) -> Command {
    let mut command = Command::new(BIN);
    command.current_dir(dir);
    for (key, _) in std::env::vars() {
        if key.starts_with("TIDINGS_") {
            command.env_remove(key);
        }
    }
    command
}

/// A running `tidings serve`, stopped (SIGTERM) when dropped.
struct Server {
    child: Child,
    address: SocketAddr,
    log: mpsc::Receiver<String>,
    early_log: Vec<String>,
}

impl Server {
    fn start(mut command: Command) -> Server {
        command
            .arg("serve")
            .env("TIDINGS_LISTEN", "127.0.0.1:0")
            .stdout(Stdio::null())
            .stderr(Stdio::piped());
        let mut child = command.spawn().expect("start tidings serve");
        let stderr = child.stderr.take().unwrap();
        let (sender, log) = mpsc::channel();
        std::thread::spawn(move || {
            for line in BufReader::new(stderr).lines() {
                let Ok(line) = line else { break };
                if sender.send(line).is_err() {
                    break;
                }
            }
        });
        let mut early_log = Vec::new();
        let address = loop {
            let line = log
                .recv_timeout(Duration::from_secs(30))
                .unwrap_or_else(|_| panic!("no '(listening on' line; log so far: {early_log:#?}"));
            early_log.push(line.clone());
            if let Some(rest) = line.split("(listening on ").nth(1) {
                let address = rest.split(';').next().unwrap();
                break address.parse().expect("address in log");
            }
        };
        Server {
            child,
            address,
            log,
            early_log,
        }
    }

    fn get(&self, path: &str) -> (u16, String) {
        http_get(self.address, path)
    }

    /// Stops the server with SIGTERM and returns whether it exited cleanly.
    fn stop(mut self) -> bool {
        let _ = Command::new("kill")
            .args(["-TERM", &self.child.id().to_string()])
            .status();
        let status = self.child.wait().expect("wait for tidings");
        while self.log.try_recv().is_ok() {}
        status.success()
    }
}

impl Drop for Server {
    fn drop(&mut self) {
        let _ = self.child.kill();
        let _ = self.child.wait();
    }
}

fn http_get(address: SocketAddr, path: &str) -> (u16, String) {
    let mut stream = TcpStream::connect_timeout(&address, Duration::from_secs(5)).unwrap();
    stream
        .set_read_timeout(Some(Duration::from_secs(10)))
        .unwrap();
    write!(
        stream,
        "GET {path} HTTP/1.1\r\nHost: {address}\r\nConnection: close\r\n\r\n"
    )
    .unwrap();
    let mut response = String::new();
    stream.read_to_string(&mut response).unwrap();
    let status = response
        .split_whitespace()
        .nth(1)
        .and_then(|s| s.parse().ok())
        .expect("status line");
    let body = response.split("\r\n\r\n").nth(1).unwrap_or("").to_string();
    // Small JSON bodies may come chunked: keep only the JSON object.
    let body = match (body.find('{'), body.rfind('}')) {
        (Some(start), Some(end)) => body[start..=end].to_string(),
        _ => body,
    };
    (status, body)
}

fn run(command: &mut Command, stdin: Option<&str>) -> (i32, String, String) {
    command
        .stdin(Stdio::piped())
        .stdout(Stdio::piped())
        .stderr(Stdio::piped());
    let mut child = command.spawn().unwrap();
    let mut input = child.stdin.take().unwrap();
    if let Some(text) = stdin {
        input.write_all(text.as_bytes()).unwrap();
    }
    drop(input);
    let output = child.wait_with_output().unwrap();
    (
        output.status.code().unwrap_or(-1),
        String::from_utf8_lossy(&output.stdout).into_owned(),
        String::from_utf8_lossy(&output.stderr).into_owned(),
    )
}

/// A PostgreSQL schema for one test, or `None` with the skip printed.
struct PgSchema {
    base: String,
    name: String,
}

impl PgSchema {
    fn create(test: &str) -> Option<PgSchema> {
        let Ok(base) = std::env::var("TIDINGS_TEST_POSTGRES_URL") else {
            skip::skip(
                &format!("cli_foundation::{test} on postgres"),
                skip::NO_POSTGRES,
            );
            return None;
        };
        // Unique across the tests of this process (counter) and across processes (pid).
        static NEXT: std::sync::atomic::AtomicU64 = std::sync::atomic::AtomicU64::new(0);
        let n = NEXT.fetch_add(1, std::sync::atomic::Ordering::Relaxed);
        let name = format!("cli_{}_{n}_{:x}", std::process::id(), nanos());
        psql(&base, &format!("CREATE SCHEMA {name}"));
        Some(PgSchema { base, name })
    }

    fn url(&self) -> String {
        let separator = if self.base.contains('?') { '&' } else { '?' };
        format!(
            "{}{separator}options=-c%20search_path%3D{}",
            self.base, self.name
        )
    }
}

impl Drop for PgSchema {
    fn drop(&mut self) {
        psql(
            &self.base,
            &format!("DROP SCHEMA IF EXISTS {} CASCADE", self.name),
        );
    }
}

fn nanos() -> u64 {
    std::time::SystemTime::now()
        .duration_since(std::time::UNIX_EPOCH)
        .unwrap()
        .subsec_nanos() as u64
}

/// Runs SQL through the store's own connection code, via a tiny async runtime.
fn psql(url: &str, sql: &str) {
    let runtime = tokio::runtime::Builder::new_current_thread()
        .enable_all()
        .build()
        .unwrap();
    runtime.block_on(async {
        let store = tidings_store::Store::connect(&tidings_store::StoreOptions::new(url))
            .await
            .expect("connect to the PostgreSQL test server");
        store.execute_raw(sql).await.expect("run SQL");
        store.close().await;
    });
}

#[test]
fn serve_on_a_fresh_sqlite_file_is_ready_and_prints_the_setup_link() {
    let dir = tempfile::tempdir().unwrap();
    let server = Server::start(tidings(dir.path()));
    let (status, body) = server.get("/readyz");
    assert_eq!(status, 200, "{body}");
    let ready: serde_json::Value = serde_json::from_str(&body).unwrap();
    assert_eq!(ready["status"], "ready");
    assert_eq!(ready["database"], "sqlite");
    assert!(ready["schema_version"].as_i64().unwrap() >= 2);
    let (status, body) = server.get("/healthz");
    assert_eq!(status, 200);
    assert!(body.contains("\"ok\""));
    assert!(
        server.early_log.iter().any(|l| l.contains("/setup?token=")),
        "setup link printed when no user exists: {:#?}",
        server.early_log
    );
    assert!(
        dir.path().join("tidings.db").exists(),
        "default database file created"
    );
    assert!(server.stop(), "SIGTERM stops the server cleanly");
}

#[test]
fn serve_on_postgres_is_ready() {
    let Some(schema) = PgSchema::create("serve_on_postgres_is_ready") else {
        return;
    };
    let dir = tempfile::tempdir().unwrap();
    let mut command = tidings(dir.path());
    command.env("TIDINGS_DATABASE_URL", schema.url());
    let server = Server::start(command);
    let (status, body) = server.get("/readyz");
    assert_eq!(status, 200, "{body}");
    assert!(body.contains("\"postgres\""), "{body}");
    assert!(server.stop());
    assert!(!dir.path().join("tidings.db").exists());
}

#[test]
fn admin_from_the_environment_is_created_once_and_ends_setup() {
    let dir = tempfile::tempdir().unwrap();
    let mut command = tidings(dir.path());
    command
        .env("TIDINGS_ADMIN_USERNAME", "root-admin")
        .env("TIDINGS_ADMIN_PASSWORD", GOOD_PASSWORD);
    let server = Server::start(command);
    assert!(
        !server.early_log.iter().any(|l| l.contains("/setup?token=")),
        "no setup link once an admin exists: {:#?}",
        server.early_log
    );
    assert!(server.stop());
    let (code, out, _) = run(tidings(dir.path()).args(["user", "list"]), None);
    assert_eq!(code, 0);
    assert!(
        out.contains("root-admin") && out.contains("administrator"),
        "{out}"
    );

    // A weak admin password stops the start with exit 2, naming the variable.
    let other = tempfile::tempdir().unwrap();
    let (code, _, err) = run(
        tidings(other.path())
            .arg("serve")
            .env("TIDINGS_LISTEN", "127.0.0.1:0")
            .env("TIDINGS_ADMIN_USERNAME", "boss")
            .env("TIDINGS_ADMIN_PASSWORD", "password"),
        None,
    );
    assert_eq!(code, 2, "{err}");
    assert!(
        err.contains("TIDINGS_ADMIN_PASSWORD") && err.contains("too short"),
        "{err}"
    );
    // Half a pair is an error too.
    let (code, _, err) = run(
        tidings(other.path())
            .arg("serve")
            .env("TIDINGS_LISTEN", "127.0.0.1:0")
            .env("TIDINGS_ADMIN_USERNAME", "boss"),
        None,
    );
    assert_eq!(code, 2, "{err}");
    assert!(err.contains("TIDINGS_ADMIN_PASSWORD"), "{err}");
}

fn user_commands_on(dir: &Path, database_url: Option<&str>) {
    let cmd = || {
        let mut command = tidings(dir);
        if let Some(url) = database_url {
            command.env("TIDINGS_DATABASE_URL", url);
        }
        command
    };
    let store_url = database_url
        .map(str::to_string)
        .unwrap_or_else(|| format!("sqlite://{}", dir.join("tidings.db").display()));
    phase_add_and_list(&cmd);
    phase_passwords_and_second_factors(&cmd, &store_url);
    phase_password_sign_in_and_delete(&cmd, &store_url);
}

/// A new database comes from `migrate`; users are added with passwords from the environment
/// or standard input, listed, and weak passwords or bad names refused.
fn phase_add_and_list(cmd: &impl Fn() -> Command) {
    // A new database comes from `migrate` (or `serve`), never from `user add` run by mistake.
    let (code, _, err) = run(cmd().arg("migrate"), None);
    assert_eq!(code, 0, "{err}");
    let (code, out, err) = run(
        cmd()
            .args(["user", "add", "alice", "--admin"])
            .env("TIDINGS_PASSWORD", GOOD_PASSWORD),
        None,
    );
    assert_eq!(code, 0, "{err}");
    assert!(
        out.contains("created user alice") && out.contains("administrator"),
        "{out}"
    );

    // The password may come on standard input.
    let (code, out, err) = run(
        cmd().args(["user", "add", "Bob"]),
        Some("blue ocean 57 violin\n"),
    );
    assert_eq!(code, 0, "{err}");
    // Shown as typed; found under any case.
    assert!(out.contains("created user Bob"), "{out}");

    let (code, out, _) = run(cmd().args(["user", "list"]), None);
    assert_eq!(code, 0);
    assert!(out.contains("alice") && out.contains("Bob"), "{out}");
    let (code, out, _) = run(cmd().args(["user", "list", "--json"]), None);
    assert_eq!(code, 0);
    let users: serde_json::Value = serde_json::from_str(&out).unwrap();
    assert_eq!(users.as_array().unwrap().len(), 2);
    assert!(!out.contains("argon2"), "no password hash in the listing");

    // Weak passwords are refused with the reason, and nothing is created.
    for (weak, reason) in [
        ("short", "too short"),
        ("password1234", "too easy to guess"),
        ("carolcarol2024", "user name"),
    ] {
        let (code, _, err) = run(
            cmd()
                .args(["user", "add", "carol"])
                .env("TIDINGS_PASSWORD", weak),
            None,
        );
        assert_eq!(code, 1, "{weak}: {err}");
        assert!(err.contains(reason), "{weak}: {err}");
    }
    let (code, _, err) = run(
        cmd()
            .args(["user", "add", "alice"])
            .env("TIDINGS_PASSWORD", GOOD_PASSWORD),
        None,
    );
    assert_eq!(code, 1);
    assert!(err.contains("already exists"), "{err}");
    let (code, _, err) = run(cmd().args(["user", "add", "no spaces"]), Some("x\n"));
    assert_eq!(code, 1);
    assert!(err.contains("may only hold"), "{err}");
    let (code, _, err) = run(cmd().args(["user", "add", "dave"]), Some(""));
    assert_eq!(code, 1);
    assert!(err.contains("no password given"), "{err}");

    let (code, out, err) = run(
        cmd()
            .args(["user", "passwd", "bob"])
            .env("TIDINGS_PASSWORD", "another fine passphrase"),
        None,
    );
    assert_eq!(code, 0, "{err}");
    assert!(out.contains("password of Bob changed"), "{out}");
}

/// A new password ends bob's sessions and revokes his keys unless kept; resetting second
/// factors ends sessions and keeps keys.
fn phase_passwords_and_second_factors(cmd: &impl Fn() -> Command, store_url: &str) {
    // A new password ends bob's sessions and revokes his API keys, unless the operator keeps
    // them with --keep-sessions / --keep-keys.
    let passwd = |flags: &[&str]| {
        let (code, out, err) = run(
            cmd()
                .args(["user", "passwd", "bob"])
                .args(flags)
                .env("TIDINGS_PASSWORD", "another fine passphrase"),
            None,
        );
        assert_eq!(code, 0, "{flags:?}: {err}");
        out
    };
    let signed_in = |round: &str| give_session_and_key(store_url, "bob", round);
    let (sessions, keys) = signed_in("a");
    let out = passwd(&["--keep-sessions", "--keep-keys"]);
    assert!(out.contains("sessions kept, API keys kept"), "{out}");
    assert_eq!(still_working(store_url, &sessions, &keys), (2, 1));
    let out = passwd(&["--keep-keys"]);
    assert!(out.contains("2 sessions ended, API keys kept"), "{out}");
    assert_eq!(still_working(store_url, &sessions, &keys), (0, 1));
    let (sessions, _) = signed_in("b");
    let out = passwd(&["--keep-sessions"]);
    assert!(out.contains("sessions kept, 2 API keys revoked"), "{out}");
    assert_eq!(still_working(store_url, &sessions, &keys), (2, 0));
    let (sessions, keys) = signed_in("c");
    let out = passwd(&[]);
    assert!(out.contains("4 sessions ended, 1 API key revoked"), "{out}");
    assert_eq!(still_working(store_url, &sessions, &keys), (0, 0));
    let (code, _, err) = run(
        cmd()
            .args(["user", "passwd", "bob"])
            .env("TIDINGS_PASSWORD", "bob"),
        None,
    );
    assert_eq!(code, 1);
    assert!(err.contains("too short"), "{err}");

    // A user who lost their authenticator gets back in through the operator: codes,
    // recovery codes and passkeys go, sessions end, API keys stay.
    let (sessions, keys) = signed_in("d");
    with_store(store_url, async |store| {
        let (bob, _) = store.user_credentials("bob").await.unwrap().unwrap();
        store
            .begin_totp(bob.id, b"0123456789abcdefghij")
            .await
            .unwrap();
        assert!(store.confirm_totp(bob.id, 1).await.unwrap());
        let codes: Vec<String> = (0..10).map(|n| format!("hash-{n}")).collect();
        store.replace_recovery_codes(bob.id, &codes).await.unwrap();
        assert!(store.use_recovery_code(bob.id, "hash-3").await.unwrap());
        for n in 0..2 {
            let credential = format!("credential-{n}");
            store
                .add_passkey(bob.id, &credential, b"cose key", 0, "phone")
                .await
                .unwrap();
        }
        assert!(store.second_factors(bob.id).await.unwrap().required());
    });
    let (code, out, err) = run(cmd().args(["user", "reset-second-factors", "bob"]), None);
    assert_eq!(code, 0, "{err}");
    assert!(
        out.contains(
            "second factors of Bob removed: one-time codes, 2 passkeys, 9 unused recovery codes; \
             2 sessions ended"
        ),
        "{out}"
    );
    assert_eq!(still_working(store_url, &sessions, &keys), (0, 1));
    with_store(store_url, async |store| {
        let (bob, _) = store.user_credentials("bob").await.unwrap().unwrap();
        let left = store.second_factors(bob.id).await.unwrap();
        assert!(
            !left.totp && left.passkeys == 0 && left.recovery_codes_left == 0,
            "{left:?}"
        );
        assert!(!left.required());
    });
    let (code, _, err) = run(cmd().args(["user", "reset-second-factors", "nobody"]), None);
    assert_eq!(code, 1);
    assert!(err.contains("no user named nobody"), "{err}");
}

/// Password sign-in turned off comes back on from the command line; users are deleted only
/// with --yes.
fn phase_password_sign_in_and_delete(cmd: &impl Fn() -> Command, store_url: &str) {
    // Password sign-in turned off (by an administrator relying on the OpenID provider) comes
    // back on from the command line.
    let (code, out, _) = run(cmd().args(["user", "password-sign-in"]), None);
    assert_eq!(code, 0);
    assert!(out.contains("password sign-in is on"), "{out}");
    let (code, out, _) = run(cmd().args(["user", "password-sign-in", "off"]), None);
    assert_eq!(code, 0);
    assert!(out.contains("password sign-in is off"), "{out}");
    assert!(!with_store(store_url, async |store| store
        .password_sign_in()
        .await
        .unwrap()));
    let (code, out, _) = run(cmd().args(["user", "password-sign-in", "on"]), None);
    assert_eq!(code, 0);
    assert!(out.contains("password sign-in is on"), "{out}");
    assert!(with_store(store_url, async |store| store
        .password_sign_in()
        .await
        .unwrap()));
    let (code, _, err) = run(cmd().args(["user", "password-sign-in", "maybe"]), None);
    assert_eq!(code, 2, "{err}");
    assert!(err.contains("possible values: on, off"), "{err}");

    let (code, _, err) = run(cmd().args(["user", "delete", "bob"]), None);
    assert_eq!(code, 1);
    assert!(err.contains("--yes"), "{err}");
    let (code, out, _) = run(cmd().args(["user", "delete", "bob", "--yes"]), None);
    assert_eq!(code, 0);
    assert!(out.contains("deleted user Bob"), "{out}");
    let (code, _, err) = run(cmd().args(["user", "delete", "bob", "--yes"]), None);
    assert_eq!(code, 1);
    assert!(err.contains("no user named bob"), "{err}");
    let (_, out, _) = run(cmd().args(["user", "list"]), None);
    assert!(out.contains("alice") && !out.contains("Bob"), "{out}");
}

/// Runs `work` on a store opened on `url`, in a small runtime of its own.
fn with_store<T>(url: &str, work: impl AsyncFnOnce(&tidings_store::Store) -> T) -> T {
    let runtime = tokio::runtime::Builder::new_current_thread()
        .enable_all()
        .build()
        .unwrap();
    runtime.block_on(async {
        let store = tidings_store::Store::connect(&tidings_store::StoreOptions::new(url))
            .await
            .expect("open the test database");
        let result = work(&store).await;
        store.close().await;
        result
    })
}

/// Signs `username` in twice and gives them one API key, straight through the store as the
/// server would; returns the sessions' and the key's token hashes.
fn give_session_and_key(url: &str, username: &str, round: &str) -> (Vec<String>, Vec<String>) {
    with_store(url, async |store| {
        let (user, _) = store.user_credentials(username).await.unwrap().unwrap();
        let far = tidings_store::unix_now() + 86_400;
        let mut sessions = Vec::new();
        for n in 0..2 {
            let token = format!("session-{round}-{n}");
            store
                .create_session(user.id, &token, far, None, None)
                .await
                .unwrap();
            sessions.push(token);
        }
        let key = format!("key-{round}");
        store
            .create_api_key(
                user.id,
                &key,
                "tdg_x",
                &key,
                tidings_store::ApiKeyScope::ReadWrite,
                None,
            )
            .await
            .unwrap();
        (sessions, vec![key])
    })
}

/// How many of these sessions and API keys (token hashes) still authenticate.
fn still_working(url: &str, sessions: &[String], keys: &[String]) -> (usize, usize) {
    with_store(url, async |store| {
        let mut live = (0, 0);
        for session in sessions {
            if store
                .authenticate_session(session, 86_400)
                .await
                .unwrap()
                .is_some()
            {
                live.0 += 1;
            }
        }
        for key in keys {
            if store.authenticate_api_key(key).await.unwrap().is_some() {
                live.1 += 1;
            }
        }
        live
    })
}

#[test]
fn user_commands_on_sqlite() {
    let dir = tempfile::tempdir().unwrap();
    user_commands_on(dir.path(), None);
}

#[test]
fn user_commands_on_postgres() {
    let Some(schema) = PgSchema::create("user_commands_on_postgres") else {
        return;
    };
    let dir = tempfile::tempdir().unwrap();
    user_commands_on(dir.path(), Some(&schema.url()));
}

#[test]
fn bad_settings_exit_2_naming_the_variable() {
    let dir = tempfile::tempdir().unwrap();
    let cases: &[(&str, &str, &str)] = &[
        ("TIDINGS_LISTEN", "nonsense", "127.0.0.1:8080"),
        ("TIDINGS_DATABASE_URL", "mysql://x/y", "sqlite://"),
        ("TIDINGS_LOG_LEVEL", "loud", "debug"),
        ("TIDINGS_LOG_FORMAT", "xml", "json"),
        ("TIDINGS_DATABASE_MAX_CONNECTIONS", "-1", "whole number"),
        ("TIDINGS_BASE_URL", "ftp://x", "https://"),
        ("TIDINGS_MEDIA_PROXY", "sometimes", "off, http or all"),
        (
            "TIDINGS_METRICS_ALLOWED_NETWORKS",
            "10.0.0.0/33",
            "CIDR ranges",
        ),
    ];
    for (variable, value, accepted) in cases {
        let (code, _, err) = run(tidings(dir.path()).arg("serve").env(variable, value), None);
        assert_eq!(code, 2, "{variable}={value}: {err}");
        assert!(err.contains(variable), "{variable}: {err}");
        assert!(err.contains(value), "{variable}: {err}");
        assert!(err.contains(accepted), "{variable}: {err}");
    }
    assert!(
        !dir.path().join("tidings.db").exists(),
        "nothing created on a bad start"
    );
    // A short media proxy key is refused without echoing the secret.
    let (code, _, err) = run(
        tidings(dir.path())
            .arg("serve")
            .env("TIDINGS_MEDIA_PROXY", "http")
            .env("TIDINGS_MEDIA_PROXY_KEY", "short secret"),
        None,
    );
    assert_eq!(code, 2, "{err}");
    assert!(
        err.contains("TIDINGS_MEDIA_PROXY_KEY") && err.contains("32 characters"),
        "{err}"
    );
    assert!(!err.contains("short secret"), "{err}");
    // So is a short metrics token.
    let (code, _, err) = run(
        tidings(dir.path())
            .arg("serve")
            .env("TIDINGS_METRICS_TOKEN", "tiny token"),
        None,
    );
    assert_eq!(code, 2, "{err}");
    assert!(
        err.contains("TIDINGS_METRICS_TOKEN") && err.contains("16 characters"),
        "{err}"
    );
    assert!(!err.contains("tiny token"), "{err}");
    // An unknown flag is clap's exit 2 as well.
    let (code, _, _) = run(tidings(dir.path()).args(["serve", "--bogus"]), None);
    assert_eq!(code, 2);
}

#[test]
fn migrate_applies_and_reports() {
    let dir = tempfile::tempdir().unwrap();
    let (code, out, _) = run(tidings(dir.path()).args(["migrate", "--check"]), None);
    assert_eq!(code, 1, "pending on a new database: {out}");
    assert!(out.contains("pending"), "{out}");
    let (code, out, err) = run(tidings(dir.path()).arg("migrate"), None);
    assert_eq!(code, 0, "{err}");
    assert!(out.contains("applied migration(s) 1, 2"), "{out}");
    let (code, out, _) = run(tidings(dir.path()).arg("migrate"), None);
    assert_eq!(code, 0);
    assert!(out.contains("nothing to do"), "{out}");
    let (code, out, _) = run(tidings(dir.path()).args(["migrate", "--check"]), None);
    assert_eq!(code, 0);
    assert!(out.contains("current"), "{out}");
}

#[test]
fn every_subcommand_has_help() {
    for args in [
        vec!["--help"],
        vec!["serve", "--help"],
        vec!["migrate", "--help"],
        vec!["user", "--help"],
        vec!["user", "add", "--help"],
        vec!["user", "list", "--help"],
        vec!["user", "passwd", "--help"],
        vec!["user", "delete", "--help"],
        vec!["user", "reset-second-factors", "--help"],
        vec!["user", "password-sign-in", "--help"],
        vec!["feed", "--help"],
        vec!["feed", "show", "--help"],
        vec!["feed", "set", "--help"],
    ] {
        let dir = tempfile::tempdir().unwrap();
        let (code, out, _) = run(tidings(dir.path()).args(&args), None);
        assert_eq!(code, 0, "{args:?}");
        assert!(out.contains("Usage:"), "{args:?}: {out}");
    }
}
