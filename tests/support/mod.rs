//! What the command-line tests share: the `tidings` binary with a clean environment, a feed
//! router for testkit's local server, test databases on both engines, and `tidings serve`
//! started and read. The server, the processes' guards and waiting are testkit's, re-exported
//! here because nearly every test uses them with the rest.

use std::path::Path;
use std::process::Command;
use std::time::Duration;

use axum::Router;
use axum::routing::get;
use tidings_store::{Store, StoreOptions};
use tidings_testkit::feeds::{Item, Rss};

pub use tidings_testkit::add_user;
pub use tidings_testkit::process::{KillOnDrop, kill_hard, run, spawn, stop, terminate};
pub use tidings_testkit::{TestServer, skip, wait_until};

pub const BIN: &str = env!("CARGO_BIN_EXE_tidings");

/// A `tidings` command in `dir` with none of the caller's TIDINGS_* settings.
pub fn tidings(dir: &Path, database_url: &str) -> Command {
    let mut command = Command::new(BIN);
    command.current_dir(dir);
    for (key, _) in std::env::vars() {
        if key.starts_with("TIDINGS_") {
            command.env_remove(key);
        }
    }
    command
        .env("TIDINGS_DATABASE_URL", database_url)
        .env("TIDINGS_LOG_LEVEL", "warn");
    command
}

/// An RSS document with one item whose guid is `TAG-1`.
pub fn rss(tag: &str) -> String {
    Rss::new(&format!("Feed {tag}"))
        .item(Item {
            title: format!("Hello {tag}"),
            guid: format!("{tag}-1"),
            published: Some(chrono::Utc::now()),
            ..Item::default()
        })
        .build()
}

/// `/feed/TAG` answers [`rss`]`(TAG)`.
pub fn feed_router() -> Router {
    Router::new().route(
        "/feed/{tag}",
        get(|axum::extract::Path(tag): axum::extract::Path<String>| async move { rss(&tag) }),
    )
}

/// Subscribes `user` to the feed at `url`; returns the feed's id.
pub async fn subscribe(store: &Store, user: i64, url: &str) -> i64 {
    tidings_testkit::follow(store, user, url).await.1
}

/// Opens and migrates the database at `url`.
pub async fn store_at(url: &str) -> Store {
    let store = Store::connect(&StoreOptions::new(url)).await.unwrap();
    store.migrate().await.unwrap();
    store
}

/// A new schema on the PostgreSQL test server at `admin_url`: the database URL that works in
/// it, and its name.
pub async fn postgres_schema(admin_url: &str) -> (String, String) {
    let nanos = std::time::SystemTime::now()
        .duration_since(std::time::UNIX_EPOCH)
        .map_or(0, |d| d.subsec_nanos());
    let schema = format!("cli_{}_{nanos}", std::process::id());
    let admin = Store::connect(&StoreOptions::new(admin_url)).await.unwrap();
    admin
        .execute_raw(&format!("CREATE SCHEMA {schema}"))
        .await
        .unwrap();
    admin.close().await;
    let separator = if admin_url.contains('?') { '&' } else { '?' };
    let url = format!("{admin_url}{separator}options=-c%20search_path%3D{schema}");
    (url, schema)
}

/// A database for a command-line test on each engine: a SQLite file in `dir`, and a
/// PostgreSQL schema when `TIDINGS_TEST_POSTGRES_URL` is set (dropped by [`drop_postgres`]).
pub async fn test_databases(dir: &Path, test: &str) -> Vec<(String, Option<(String, String)>)> {
    let mut databases = vec![(format!("sqlite://{}", dir.join("t.db").display()), None)];
    match std::env::var("TIDINGS_TEST_POSTGRES_URL") {
        Ok(admin_url) => {
            let (url, schema) = postgres_schema(&admin_url).await;
            databases.push((url, Some((admin_url, schema))));
        }
        Err(_) => skip::skip(&format!("{test} on postgres"), skip::NO_POSTGRES),
    }
    databases
}

/// Drops the schema [`test_databases`] or [`postgres_schema`] made, if any.
pub async fn drop_postgres(admin: Option<(String, String)>) {
    if let Some((admin_url, schema)) = admin {
        let admin = Store::connect(&StoreOptions::new(&admin_url))
            .await
            .unwrap();
        admin
            .execute_raw(&format!("DROP SCHEMA {schema} CASCADE"))
            .await
            .unwrap();
        admin.close().await;
    }
}

/// Starts `tidings serve` from `command` with `args` on a free port of 127.0.0.1 and waits
/// until it says where it listens; returns the process and its base URL. The log is read (and
/// dropped) for as long as the process runs, so it never blocks on a full pipe.
pub fn start_serve(mut command: Command, args: &[&str]) -> (KillOnDrop, String) {
    use std::io::BufRead;
    command
        .arg("serve")
        .args(args)
        .env("TIDINGS_LISTEN", "127.0.0.1:0")
        .env("TIDINGS_LOG_LEVEL", "info")
        .env_remove("TIDINGS_LOG_FORMAT")
        .stdout(std::process::Stdio::null())
        .stderr(std::process::Stdio::piped());
    let mut child = spawn(&mut command);
    let stderr = child.stderr.take().expect("piped stderr");
    let (address, found) = std::sync::mpsc::channel();
    std::thread::spawn(move || {
        let mut early = Vec::new();
        let mut address = Some(address);
        for line in std::io::BufReader::new(stderr).lines() {
            let Ok(line) = line else { break };
            if let Some(sender) = &address {
                if let Some(rest) = line.split("(listening on ").nth(1) {
                    let _ = sender.send(Ok(rest.split(';').next().unwrap_or("").to_owned()));
                    address = None;
                } else {
                    early.push(line);
                }
            }
        }
        if let Some(sender) = address {
            let _ = sender.send(Err(early));
        }
    });
    match found.recv_timeout(Duration::from_secs(60)) {
        Ok(Ok(address)) => (child, format!("http://{address}")),
        Ok(Err(log)) => panic!("tidings serve ended before listening: {log:#?}"),
        Err(_) => panic!("tidings serve did not say where it listens within 60 s"),
    }
}
