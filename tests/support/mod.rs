//! What the command-line tests share: the `tidings` binary with a clean environment, a local
//! feed server counting requests per path, test databases on both engines, and waiting for
//! and stopping processes.

#![allow(dead_code)]

use std::collections::HashMap;
use std::path::Path;
use std::process::{Child, Command, Output};
use std::sync::{Arc, Mutex};
use std::time::Duration;

use axum::Router;
use axum::extract::Request;
use axum::middleware::Next;
use axum::routing::get;
use tidings_store::{NewSubscription, NewUser, Store, StoreOptions};

pub use tidings_testkit::skip;

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

/// A local server counting requests per path.
pub struct FeedServer {
    /// `http://127.0.0.1:PORT`.
    pub base: String,
    hits: Arc<Mutex<HashMap<String, usize>>>,
}

impl FeedServer {
    /// Serves `router` on a free port of 127.0.0.1, counting every request by path.
    pub async fn start(router: Router) -> FeedServer {
        let listener = tokio::net::TcpListener::bind("127.0.0.1:0").await.unwrap();
        let base = format!("http://{}", listener.local_addr().unwrap());
        let hits: Arc<Mutex<HashMap<String, usize>>> = Arc::default();
        let count = Arc::clone(&hits);
        let router = router.layer(axum::middleware::from_fn(
            move |request: Request, next: Next| {
                let count = Arc::clone(&count);
                async move {
                    *count
                        .lock()
                        .unwrap()
                        .entry(request.uri().path().to_owned())
                        .or_insert(0) += 1;
                    next.run(request).await
                }
            },
        ));
        tokio::spawn(async move {
            axum::serve(listener, router).await.unwrap();
        });
        FeedServer { base, hits }
    }

    /// The URL of `path` on this server.
    pub fn url(&self, path: &str) -> String {
        format!("{}{path}", self.base)
    }

    /// Requests so far, by path.
    pub fn hits(&self) -> HashMap<String, usize> {
        self.hits.lock().unwrap().clone()
    }
}

/// An RSS document with one item whose guid is `TAG-1`.
pub fn rss(tag: &str) -> String {
    let published = chrono::Utc::now().to_rfc2822();
    format!(
        "<?xml version=\"1.0\"?><rss version=\"2.0\"><channel><title>Feed {tag}</title>\
         <item><title>Hello {tag}</title><guid>{tag}-1</guid><pubDate>{published}</pubDate></item>\
         </channel></rss>"
    )
}

/// `/feed/TAG` answers [`rss`]`(TAG)`.
pub fn feed_router() -> Router {
    Router::new().route(
        "/feed/{tag}",
        get(|axum::extract::Path(tag): axum::extract::Path<String>| async move { rss(&tag) }),
    )
}

/// Opens and migrates the database at `url`.
pub async fn store_at(url: &str) -> Store {
    let store = Store::connect(&StoreOptions::new(url)).await.unwrap();
    store.migrate().await.unwrap();
    store
}

/// Creates an ordinary user without a password; returns the id.
pub async fn add_user(store: &Store, name: &str) -> i64 {
    store
        .create_user(&NewUser {
            username: name.into(),
            password_hash: None,
            is_admin: false,
        })
        .await
        .unwrap()
        .id
}

/// Subscribes `user` to the feed at `url`; returns the feed's id.
pub async fn subscribe(store: &Store, user: i64, url: &str) -> i64 {
    store
        .subscribe(
            user,
            &NewSubscription {
                feed_url: url.into(),
                ..Default::default()
            },
        )
        .await
        .unwrap()
        .feed_id
}

/// Polls `condition` every 50 ms, panicking after `limit`.
pub async fn wait_until<F, Fut>(limit: Duration, what: &str, mut condition: F)
where
    F: FnMut() -> Fut,
    Fut: std::future::Future<Output = bool>,
{
    let deadline = tokio::time::Instant::now() + limit;
    while !condition().await {
        assert!(
            tokio::time::Instant::now() < deadline,
            "timed out waiting for {what}"
        );
        tokio::time::sleep(Duration::from_millis(50)).await;
    }
}

/// A spawned process that is killed (SIGKILL) and reaped when dropped, so that a test that
/// panics leaves no `tidings` process running behind it. Derefs to the [`Child`].
pub struct KillOnDrop(Option<Child>);

impl KillOnDrop {
    /// Guards `child`.
    pub fn new(child: Child) -> KillOnDrop {
        KillOnDrop(Some(child))
    }

    /// The process, no longer guarded: for a caller that waits for it itself.
    pub fn into_inner(mut self) -> Child {
        self.0.take().expect("a guarded child")
    }
}

impl std::ops::Deref for KillOnDrop {
    type Target = Child;
    fn deref(&self) -> &Child {
        self.0.as_ref().expect("a guarded child")
    }
}

impl std::ops::DerefMut for KillOnDrop {
    fn deref_mut(&mut self) -> &mut Child {
        self.0.as_mut().expect("a guarded child")
    }
}

impl Drop for KillOnDrop {
    fn drop(&mut self) {
        if let Some(mut child) = self.0.take() {
            let _ = child.kill();
            let _ = child.wait();
        }
    }
}

/// Starts `command`, guarded by [`KillOnDrop`].
pub fn spawn(command: &mut Command) -> KillOnDrop {
    KillOnDrop::new(command.spawn().expect("start tidings"))
}

/// Stops a child with SIGTERM and waits for it.
pub fn stop(child: KillOnDrop) -> bool {
    let mut child = child.into_inner();
    let _ = Command::new("kill")
        .args(["-TERM", &child.id().to_string()])
        .status();
    child.wait().map(|s| s.success()).unwrap_or(false)
}

/// Runs `command` to its end off the async executor.
pub async fn run(command: &mut Command) -> Output {
    let mut command = std::mem::replace(command, Command::new(BIN));
    tokio::task::spawn_blocking(move || command.output().expect("tidings runs"))
        .await
        .unwrap()
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

/// Sends SIGKILL (`kill -9`): the process ends at once, giving nothing back.
pub fn kill_hard(child: KillOnDrop) {
    let mut child = child.into_inner();
    let _ = Command::new("kill")
        .args(["-KILL", &child.id().to_string()])
        .status();
    let _ = child.wait();
}

/// Sends SIGTERM and waits (off the async executor) for the process to end; returns its exit
/// status and how long it took from the signal.
pub async fn terminate(child: KillOnDrop) -> (std::process::ExitStatus, Duration) {
    let mut child = child.into_inner();
    let signalled = std::time::Instant::now();
    let _ = Command::new("kill")
        .args(["-TERM", &child.id().to_string()])
        .status();
    tokio::task::spawn_blocking(move || {
        let status = child.wait().expect("wait for tidings");
        (status, signalled.elapsed())
    })
    .await
    .unwrap()
}
