//! What an operator meets on the command line: backups while the server runs, commands that
//! refuse to create a database in the wrong folder, `tidings resume` and `tidings feed`.

use std::path::Path;
use std::process::{Command, Output};
use std::time::Duration;

use tidings_store::{NewUser, Store, StoreOptions};

use crate::support::skip;

const BIN: &str = env!("CARGO_BIN_EXE_tidings");

/// A `tidings` command in `dir` with none of the caller's TIDINGS_* settings.
fn tidings(dir: &Path) -> Command {
    let mut command = Command::new(BIN);
    command.current_dir(dir);
    for (key, _) in std::env::vars() {
        if key.starts_with("TIDINGS_") {
            command.env_remove(key);
        }
    }
    command.env("TIDINGS_LOG_LEVEL", "warn");
    command
}

async fn run(mut command: Command) -> Output {
    tokio::task::spawn_blocking(move || command.output().expect("tidings runs"))
        .await
        .unwrap()
}

fn text(bytes: &[u8]) -> String {
    String::from_utf8_lossy(bytes).into_owned()
}

async fn store_at(url: &str) -> Store {
    let store = Store::connect(&StoreOptions::new(url)).await.unwrap();
    store.migrate().await.unwrap();
    store
}

async fn add_user(store: &Store, name: &str) -> i64 {
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

/// `tidings backup` while another connection keeps writing: the copy is a complete database
/// on its own (no WAL beside it), passes SQLite's integrity check and holds every row that was
/// committed before the backup began, including rows still only in the live database's WAL.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn backup_while_a_writer_writes_is_a_consistent_copy() {
    let dir = tempfile::tempdir().unwrap();
    let url = format!("sqlite://{}", dir.path().join("tidings.db").display());
    let store = store_at(&url).await;
    for n in 0..200 {
        add_user(&store, &format!("before{n}")).await;
    }
    assert!(
        dir.path().join("tidings.db-wal").exists(),
        "recent commits sit in the WAL, which a plain file copy would miss"
    );
    let writer = {
        let store = store.clone();
        tokio::spawn(async move {
            let mut n = 0u64;
            loop {
                add_user(&store, &format!("during{n}")).await;
                n += 1;
                tokio::task::yield_now().await;
            }
        })
    };
    tokio::time::sleep(Duration::from_millis(100)).await;

    let mut backup = tidings(dir.path());
    backup.args(["backup", "copy.db"]);
    let output = run(backup).await;
    assert!(output.status.success(), "{}", text(&output.stderr));
    assert!(
        text(&output.stdout).contains("copy.db"),
        "{}",
        text(&output.stdout)
    );
    writer.abort();
    let _ = writer.await;

    let copy_path = dir.path().join("copy.db");
    assert!(!dir.path().join("copy.db-wal").exists());
    // Open a copy of the copy, so the check cannot lean on anything beside the file itself.
    let alone = tempfile::tempdir().unwrap();
    std::fs::copy(&copy_path, alone.path().join("alone.db")).unwrap();
    let copy = Store::connect(&StoreOptions::new(format!(
        "sqlite://{}",
        alone.path().join("alone.db").display()
    )))
    .await
    .unwrap();
    copy.execute_raw("PRAGMA integrity_check").await.unwrap();
    let users = copy.list_users().await.unwrap();
    let before = users
        .iter()
        .filter(|u| u.username.starts_with("before"))
        .count();
    assert_eq!(
        before, 200,
        "every row committed before the backup is in it"
    );
    assert!(
        users.iter().any(|u| u.username.starts_with("during")),
        "the backup ran while the writer wrote"
    );
    copy.close().await;

    // An existing file is not overwritten unless asked.
    let mut again = tidings(dir.path());
    again.args(["backup", "copy.db"]);
    let output = run(again).await;
    assert_eq!(output.status.code(), Some(1));
    assert!(
        text(&output.stderr).contains("exists already") && text(&output.stderr).contains("--force"),
        "{}",
        text(&output.stderr)
    );
    let mut forced = tidings(dir.path());
    forced.args(["backup", "copy.db", "--force"]);
    let output = run(forced).await;
    assert!(output.status.success(), "{}", text(&output.stderr));
    let leftovers: Vec<_> = std::fs::read_dir(dir.path())
        .unwrap()
        .filter_map(Result::ok)
        .filter(|e| e.file_name().to_string_lossy().contains("partial"))
        .collect();
    assert!(leftovers.is_empty(), "no partial copies are left behind");
    store.close().await;
}

/// On PostgreSQL `tidings backup` writes nothing and says to use pg_dump.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn backup_on_postgres_points_at_pg_dump() {
    let Ok(base) = std::env::var("TIDINGS_TEST_POSTGRES_URL") else {
        skip::skip(
            "cli_operator::backup_on_postgres_points_at_pg_dump",
            skip::NO_POSTGRES,
        );
        return;
    };
    let dir = tempfile::tempdir().unwrap();
    let schema = format!("cli_backup_{}", std::process::id());
    let admin = Store::connect(&StoreOptions::new(&base)).await.unwrap();
    admin
        .execute_raw(&format!("CREATE SCHEMA {schema}"))
        .await
        .unwrap();
    let separator = if base.contains('?') { '&' } else { '?' };
    let url = format!("{base}{separator}options=-c%20search_path%3D{schema}");
    store_at(&url).await.close().await;
    let mut backup = tidings(dir.path());
    backup
        .args(["backup", "copy.db"])
        .env("TIDINGS_DATABASE_URL", &url);
    let output = run(backup).await;
    admin
        .execute_raw(&format!("DROP SCHEMA {schema} CASCADE"))
        .await
        .unwrap();
    admin.close().await;
    assert_eq!(output.status.code(), Some(1));
    assert!(
        text(&output.stderr).contains("pg_dump"),
        "{}",
        text(&output.stderr)
    );
    assert!(!dir.path().join("copy.db").exists());
}

/// Run where there is no database, every command but `serve` and `migrate` says which file it
/// looked for and how to point at the right one, exits non-zero, and creates nothing.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn commands_in_the_wrong_folder_do_not_create_a_database() {
    let dir = tempfile::tempdir().unwrap();
    let expected = dir.path().canonicalize().unwrap().join("tidings.db");
    for args in [
        vec!["user", "list"],
        vec!["user", "add", "alice"],
        vec!["refresh", "--all"],
        vec!["resume", "--all"],
        vec!["opml", "export", "--user", "alice"],
        vec!["backup", "copy.db"],
        vec!["worker"],
    ] {
        let mut command = tidings(dir.path());
        command
            .args(&args)
            .env("TIDINGS_PASSWORD", "correct horse battery staple");
        let output = run(command).await;
        let stderr = text(&output.stderr);
        assert_eq!(output.status.code(), Some(1), "{args:?}: {stderr}");
        assert!(
            stderr.contains(&expected.display().to_string()),
            "{args:?} names the file it looked for: {stderr}"
        );
        assert!(
            stderr.contains("--database-url") && stderr.contains("TIDINGS_DATABASE_URL"),
            "{args:?} says how to point at the right one: {stderr}"
        );
        let files: Vec<_> = std::fs::read_dir(dir.path())
            .unwrap()
            .filter_map(Result::ok)
            .map(|e| e.file_name())
            .collect();
        assert!(files.is_empty(), "{args:?} created {files:?}");
    }
    // A file that is not a tidings database is refused the same way.
    std::fs::write(dir.path().join("other.db"), b"").unwrap();
    let mut command = tidings(dir.path());
    command
        .args(["user", "list"])
        .env("TIDINGS_DATABASE_URL", "sqlite://other.db");
    let output = run(command).await;
    assert_eq!(output.status.code(), Some(1));
    assert!(
        text(&output.stderr).contains("holds no tidings data"),
        "{}",
        text(&output.stderr)
    );

    // serve and migrate still create a new database.
    let mut migrate = tidings(dir.path());
    migrate.arg("migrate");
    let output = run(migrate).await;
    assert!(output.status.success(), "{}", text(&output.stderr));
    let mut list = tidings(dir.path());
    list.args(["user", "list"]);
    let output = run(list).await;
    assert!(output.status.success(), "{}", text(&output.stderr));
}

/// `tidings resume --user NAME` puts that user's stopped feeds back on schedule, and
/// `--all` every user's; feeds that are not stopped are left alone.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn resume_puts_stopped_feeds_back_on_schedule() {
    let dir = tempfile::tempdir().unwrap();
    let url = format!("sqlite://{}", dir.path().join("tidings.db").display());
    let store = store_at(&url).await;
    let alice = add_user(&store, "alice").await;
    let bob = add_user(&store, "bob").await;
    let mut feeds = Vec::new();
    for (user, feed) in [(alice, "a"), (bob, "b"), (bob, "c")] {
        let subscription = store
            .subscribe(
                user,
                &tidings_store::NewSubscription {
                    feed_url: format!("https://{feed}.example/feed"),
                    ..Default::default()
                },
            )
            .await
            .unwrap();
        feeds.push(subscription.feed_id);
    }
    // a and b stopped (as a refused fetch leaves them), c failing but not stopped.
    store
        .execute_raw(&format!(
            "UPDATE feed_fetch_state SET status = 'stopped', status_reason = 'refused',
                    next_check_at = 4102444800 WHERE feed_id IN ({}, {});
             UPDATE feed_fetch_state SET status = 'backoff', status_reason = 'HTTP 503',
                    next_check_at = 4102444800 WHERE feed_id = {};",
            feeds[0], feeds[1], feeds[2]
        ))
        .await
        .unwrap();
    let status = |feed: i64| {
        let store = store.clone();
        async move {
            store
                .feed_fetch_state(feed)
                .await
                .unwrap()
                .status
                .as_str()
                .to_owned()
        }
    };

    let resume = |args: &[&str]| {
        let mut command = tidings(dir.path());
        command
            .arg("resume")
            .args(args)
            .env("TIDINGS_DATABASE_URL", &url);
        run(command)
    };
    let output = resume(&["--user", "alice"]).await;
    assert!(output.status.success(), "{}", text(&output.stderr));
    assert!(
        text(&output.stdout).contains("resumed 1 stopped feed"),
        "{}",
        text(&output.stdout)
    );
    assert_eq!(status(feeds[0]).await, "active");
    assert_eq!(
        status(feeds[1]).await,
        "stopped",
        "bob's feed is not alice's to resume"
    );

    let output = resume(&["--all"]).await;
    assert!(output.status.success(), "{}", text(&output.stderr));
    assert!(
        text(&output.stdout).contains("resumed 1 stopped feed"),
        "{}",
        text(&output.stdout)
    );
    assert_eq!(status(feeds[1]).await, "active");
    assert_eq!(
        status(feeds[2]).await,
        "backoff",
        "only stopped feeds are resumed"
    );
    let due = store
        .feed_fetch_state(feeds[1])
        .await
        .unwrap()
        .next_check_at;
    assert!(
        due <= chrono::Utc::now().timestamp(),
        "due now, for the worker's next tick"
    );

    let output = resume(&["--user", "nobody"]).await;
    assert_eq!(output.status.code(), Some(1));
    assert!(
        text(&output.stderr).contains("no user named"),
        "{}",
        text(&output.stderr)
    );
    store.close().await;
}

/// `tidings serve` listening on every interface: the start-up log names a URL a browser can
/// open (never http://0.0.0.0), the database file and that the worker runs; the worker's first
/// cycle leaves one summary line at info level.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn the_start_up_log_says_where_to_go_and_each_fetch_cycle_is_summed_up() {
    use std::io::{BufRead, BufReader};
    use std::process::Stdio;

    let dir = tempfile::tempdir().unwrap();
    let feeds = tokio::net::TcpListener::bind("127.0.0.1:0").await.unwrap();
    let feed_url = format!("http://{}/feed.xml", feeds.local_addr().unwrap());
    tokio::spawn(async move {
        let router = axum::Router::new().route(
            "/feed.xml",
            axum::routing::get(|| async {
                "<rss version=\"2.0\"><channel><title>T</title><link>https://t.example/</link>\
                 <item><guid>1</guid><title>One</title></item>\
                 <item><guid>2</guid><title>Two</title></item></channel></rss>"
            }),
        );
        axum::serve(feeds, router).await.unwrap();
    });
    let url = format!("sqlite://{}", dir.path().join("tidings.db").display());
    let store = store_at(&url).await;
    let alice = add_user(&store, "alice").await;
    store
        .subscribe(
            alice,
            &tidings_store::NewSubscription {
                feed_url: feed_url.clone(),
                ..Default::default()
            },
        )
        .await
        .unwrap();
    store.close().await;

    // Killed if the test fails before its SIGTERM.
    let mut child = crate::support::spawn(
        tidings(dir.path())
            .args(["serve", "--worker", "--allow-private-networks"])
            .env("TIDINGS_LISTEN", "0.0.0.0:0")
            .env("TIDINGS_LOG_LEVEL", "info")
            .stdout(Stdio::null())
            .stderr(Stdio::piped()),
    );
    let stderr = child.stderr.take().unwrap();
    let (lines, log) = std::sync::mpsc::channel();
    std::thread::spawn(move || {
        for line in BufReader::new(stderr).lines().map_while(Result::ok) {
            if lines.send(line).is_err() {
                break;
            }
        }
    });
    let mut seen = Vec::new();
    let wait_for = |seen: &mut Vec<String>, needle: &str| -> String {
        let deadline = std::time::Instant::now() + Duration::from_secs(60);
        loop {
            let left = deadline.saturating_duration_since(std::time::Instant::now());
            let line = log
                .recv_timeout(left)
                .unwrap_or_else(|_| panic!("no line with {needle:?} in {seen:#?}"));
            seen.push(line.clone());
            if line.contains(needle) {
                return line;
            }
        }
    };
    let start = wait_for(&mut seen, "is running: open ");
    assert!(!start.contains("http://0.0.0.0"), "{start}");
    assert!(start.contains("open http://127.0.0.1:"), "{start}");
    let database = dir.path().join("tidings.db");
    assert!(
        start.contains(&format!("database sqlite://{}", database.display())),
        "{start}"
    );
    assert!(start.contains("the fetch worker runs"), "{start}");
    let cycle = wait_for(&mut seen, "fetch cycle:");
    assert!(cycle.contains("INFO"), "{cycle}");
    assert!(
        cycle.contains("1 feed in") && cycle.contains("1 parsed (2 new items"),
        "{cycle}"
    );
    let _ = Command::new("kill")
        .args(["-TERM", &child.id().to_string()])
        .status();
    let _ = child.wait();
    // Everything logged until the end: one cycle, however many ticks passed.
    while let Ok(line) = log.recv_timeout(Duration::from_secs(5)) {
        seen.push(line);
    }
    let cycles = seen.iter().filter(|l| l.contains("fetch cycle:")).count();
    assert_eq!(cycles, 1, "{seen:#?}");
}

/// `tidings feed set` suspends and resumes a feed for everyone and sets its proxy, checked
/// against the outbound settings; `tidings feed show` prints them with the password hidden.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn feed_set_suspends_and_proxies_a_shared_feed() {
    let dir = tempfile::tempdir().unwrap();
    let url = format!("sqlite://{}", dir.path().join("tidings.db").display());
    let store = store_at(&url).await;
    let alice = add_user(&store, "alice").await;
    let feed = store
        .subscribe(
            alice,
            &tidings_store::NewSubscription {
                feed_url: "https://a.example/feed".into(),
                ..Default::default()
            },
        )
        .await
        .unwrap()
        .feed_id;
    let feed_cmd = |args: &[&str]| {
        let mut command = tidings(dir.path());
        command
            .arg("feed")
            .args(args)
            .env("TIDINGS_DATABASE_URL", &url);
        run(command)
    };

    let output = feed_cmd(&["set", "HTTPS://A.example/feed", "--suspend"]).await;
    assert!(output.status.success(), "{}", text(&output.stderr));
    assert!(text(&output.stdout).contains("suspended for everyone"));
    assert!(store.feed_settings(feed).await.unwrap().suspended);

    // A proxy the guard refuses (loopback without the setting): exit 2, nothing changed,
    // the password never printed.
    let output = feed_cmd(&[
        "set",
        "https://a.example/feed",
        "--proxy",
        "socks5h://me:hunter2@127.0.0.1:1080",
    ])
    .await;
    assert_eq!(output.status.code(), Some(2), "{}", text(&output.stderr));
    let stderr = text(&output.stderr);
    assert!(
        stderr.contains("socks5h://") && !stderr.contains("hunter2"),
        "{stderr}"
    );
    assert_eq!(store.feed_settings(feed).await.unwrap().proxy_url, None);

    // Allowed with the worker's setting; resumed at the same time.
    let output = feed_cmd(&[
        "set",
        "https://a.example/feed",
        "--resume",
        "--proxy",
        "socks5h://me:hunter2@127.0.0.1:1080",
        "--allow-private-networks",
    ])
    .await;
    assert!(output.status.success(), "{}", text(&output.stderr));
    let stdout = text(&output.stdout);
    assert!(
        stdout.contains("fetched") && !stdout.contains("hunter2"),
        "{stdout}"
    );
    let settings = store.feed_settings(feed).await.unwrap();
    assert!(!settings.suspended);
    assert_eq!(
        settings.proxy_url.as_deref(),
        Some("socks5h://me:hunter2@127.0.0.1:1080")
    );
    let output = feed_cmd(&["show", "https://a.example/feed"]).await;
    let stdout = text(&output.stdout);
    assert!(
        stdout.contains("127.0.0.1:1080") && !stdout.contains("hunter2"),
        "{stdout}"
    );

    let output = feed_cmd(&["set", "https://a.example/feed", "--no-proxy"]).await;
    assert!(output.status.success(), "{}", text(&output.stderr));
    assert_eq!(store.feed_settings(feed).await.unwrap().proxy_url, None);
    // Nothing to change, two opposite changes, or an unknown feed: refused.
    for args in [
        vec!["set", "https://a.example/feed"],
        vec!["set", "https://a.example/feed", "--suspend", "--resume"],
    ] {
        assert_eq!(feed_cmd(&args).await.status.code(), Some(2), "{args:?}");
    }
    let output = feed_cmd(&["set", "https://b.example/feed", "--suspend"]).await;
    assert_eq!(output.status.code(), Some(1));
    assert!(text(&output.stderr).contains("no feed has the URL"));
}
