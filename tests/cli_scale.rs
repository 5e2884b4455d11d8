//! Running tidings as several processes (issue 15), through the real binary against feed
//! servers on 127.0.0.1: SIGTERM stops `worker` and `serve` within the documented bound and
//! gives their unfinished feeds back at once; a worker killed with `kill -9` loses nothing
//! (its leases expire and another worker fetches its feeds); and 2 API processes with 3 worker
//! processes on one PostgreSQL fetch 2,000 feeds once per due time without duplicate items,
//! both APIs answering with the same data.

use std::collections::HashMap;
use std::process::{Child, Stdio};
use std::sync::atomic::{AtomicBool, AtomicUsize, Ordering};
use std::sync::{Arc, Mutex};
use std::time::Duration;

use axum::Router;
use axum::routing::get;
use serde_json::{Value, json};
use tidings_store::{NewUser, Store};

use crate::support::*;

/// How long a stop may take from SIGTERM to exit: the worker's 5 s grace for fetches in
/// flight and up to 2 s to give feeds back (docs/operations.md, "Stopping"), plus a margin
/// for a machine busy with other tests. Docker kills after 10 s.
const STOP_BOUND: Duration = Duration::from_secs(9);

/// `/feed/TAG` answers at once; `/slow/TAG` answers only once `hang` is false (or after two
/// minutes), so a fetch of it stays in flight as long as the test wants.
fn slow_router(hang: Arc<AtomicBool>) -> Router {
    feed_router().route(
        "/slow/{tag}",
        get(
            move |axum::extract::Path(tag): axum::extract::Path<String>| {
                let hang = Arc::clone(&hang);
                async move {
                    let deadline = tokio::time::Instant::now() + Duration::from_secs(120);
                    while hang.load(Ordering::SeqCst) && tokio::time::Instant::now() < deadline {
                        tokio::time::sleep(Duration::from_millis(50)).await;
                    }
                    rss(&tag)
                }
            },
        ),
    )
}

/// How far the feed server's feeds got: how many were fetched, and how many of them twice.
fn fetch_progress(server: &TestServer, feeds: usize) -> String {
    let hits = hits_under(server, "/feed/");
    let twice = hits.values().filter(|&&n| n >= 2).count();
    format!(
        "{} of {feeds} feeds fetched, {twice} of them twice",
        hits.len()
    )
}

/// Requests for paths starting with `prefix`.
fn hits_under(server: &TestServer, prefix: &str) -> HashMap<String, usize> {
    server
        .hits_by_path()
        .into_iter()
        .filter(|(path, _)| path.starts_with(prefix))
        .collect()
}

/// Whether no feed among `feeds` is leased and each has been fetched and recorded.
async fn all_recorded(store: &Store, feeds: &[i64]) -> bool {
    for &feed in feeds {
        let state = store.feed_fetch_state(feed).await.unwrap();
        if state.last_checked_at.is_none() || state.lease_until.is_some() {
            return false;
        }
    }
    true
}

/// Settings that let one process fetch many feeds of one local host at once.
fn worker_command(dir: &std::path::Path, url: &str) -> std::process::Command {
    let mut command = tidings(dir, url);
    command
        .env("TIDINGS_ALLOW_PRIVATE_NETWORKS", "true")
        .env("TIDINGS_WORKER_POLL_SECONDS", "1")
        .env("TIDINGS_FETCH_PER_HOST_RATE", "1000")
        .env("TIDINGS_FETCH_PER_HOST_CONCURRENCY", "100")
        .stdout(Stdio::null())
        .stderr(Stdio::null());
    command
}

/// SIGTERM while fetches hang: `tidings worker` (both engines) and `tidings serve` with its
/// worker (SQLite) exit with 0 within the bound, nothing is recorded against the feeds, and
/// another worker can claim every one of them at once. On SQLite the log is checkpointed into
/// the database file and truncated, although the test keeps the file open.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn sigterm_stops_within_the_bound_and_gives_the_feeds_back() {
    let dir = tempfile::tempdir().unwrap();
    let test = "cli_scale::sigterm_stops_within_the_bound_and_gives_the_feeds_back";
    let mut runs: Vec<_> = test_databases(dir.path(), test)
        .await
        .into_iter()
        .map(|(url, admin)| ("worker", url, admin))
        .collect();
    let serve_db = format!("sqlite://{}", dir.path().join("serve.db").display());
    runs.push(("serve", serve_db, None));
    for (role, url, admin) in runs {
        let hang = Arc::new(AtomicBool::new(true));
        let server = TestServer::start(slow_router(Arc::clone(&hang))).await;
        let store = store_at(&url).await;
        let alice = add_user(&store, "alice").await;
        let mut feeds = Vec::new();
        for n in 0..4 {
            feeds.push(subscribe(&store, alice, &server.url(&format!("/slow/{role}{n}"))).await);
        }
        feeds.sort();
        let mut command = worker_command(dir.path(), &url);
        // Fetches that would wait two minutes for the server: only the stop ends them.
        command
            .env("TIDINGS_FETCH_TIMEOUT_SECONDS", "120")
            .env("TIDINGS_FETCH_FIRST_BYTE_TIMEOUT_SECONDS", "120");
        let child = if role == "serve" {
            start_serve(command, &[]).0
        } else {
            spawn(command.arg("worker"))
        };
        wait_until(Duration::from_secs(60), "every fetch in flight", || async {
            hits_under(&server, "/slow/").len() == feeds.len()
        })
        .await;
        for &feed in &feeds {
            let state = store.feed_fetch_state(feed).await.unwrap();
            assert!(
                state.lease_until.is_some(),
                "{role} {url}: feed {feed} is leased"
            );
        }

        let (status, took) = terminate(child).await;
        assert!(status.success(), "{role} on {url} exits with 0: {status}");
        assert!(
            took < STOP_BOUND,
            "{role} on {url} took {took:?} to stop (bound {STOP_BOUND:?})"
        );
        if url.starts_with("sqlite:") {
            let path = url.trim_start_matches("sqlite://");
            let log = std::fs::metadata(format!("{path}-wal")).map_or(0, |m| m.len());
            assert_eq!(
                log, 0,
                "{role}: the SQLite log was checkpointed and truncated"
            );
        }
        for &feed in &feeds {
            let state = store.feed_fetch_state(feed).await.unwrap();
            assert_eq!(
                state.lease_until, None,
                "{role} {url}: feed {feed} given back"
            );
            assert_eq!(
                state.last_checked_at, None,
                "a cancelled fetch is not recorded"
            );
            assert_eq!(state.consecutive_failures, 0);
        }
        let now = chrono::Utc::now().timestamp();
        let mut claimed: Vec<i64> = store
            .claim_due_feeds("another-worker", now, 100, 60)
            .await
            .unwrap()
            .into_iter()
            .map(|due| due.feed_id)
            .collect();
        claimed.sort();
        assert_eq!(
            claimed, feeds,
            "{role} {url}: another worker takes them at once"
        );
        hang.store(false, Ordering::SeqCst);
        store.close().await;
        drop_postgres(admin).await;
    }
}

/// `kill -9` of a worker in the middle of a run on PostgreSQL: the feeds it had fetched stay
/// fetched, the ones it held come back when its leases expire, and a second worker fetches
/// them then, not before; in the end every feed has its one item, none lost or doubled.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_worker_killed_mid_run_loses_nothing_on_postgres() {
    let test = "cli_scale::a_worker_killed_mid_run_loses_nothing_on_postgres";
    let Ok(admin_url) = std::env::var("TIDINGS_TEST_POSTGRES_URL") else {
        skip::skip(test, skip::NO_POSTGRES);
        return;
    };
    let (url, schema) = postgres_schema(&admin_url).await;
    let dir = tempfile::tempdir().unwrap();
    let hang = Arc::new(AtomicBool::new(true));
    let server = TestServer::start(slow_router(Arc::clone(&hang))).await;
    let store = store_at(&url).await;
    let alice = add_user(&store, "alice").await;
    let (mut fast, mut slow) = (Vec::new(), Vec::new());
    for n in 0..20 {
        fast.push(subscribe(&store, alice, &server.url(&format!("/feed/k{n}"))).await);
        slow.push(subscribe(&store, alice, &server.url(&format!("/slow/k{n}"))).await);
    }
    let every: Vec<i64> = fast.iter().chain(&slow).copied().collect();
    let leased = |command: &mut std::process::Command| {
        command
            .env("TIDINGS_WORKER_CONCURRENCY", "50")
            // The slow feeds must still be in flight when the worker is killed: on a busy
            // machine recording the fast ones took longer than a short fetch timeout, which
            // then gave the slow feeds back before the kill.
            .env("TIDINGS_WORKER_LEASE_SECONDS", "30")
            .env("TIDINGS_FETCH_TIMEOUT_SECONDS", "25")
            .env("TIDINGS_FETCH_FIRST_BYTE_TIMEOUT_SECONDS", "25")
            .arg("worker");
    };
    let mut first = worker_command(dir.path(), &url);
    leased(&mut first);
    let first = spawn(&mut first);
    wait_until(
        Duration::from_secs(60),
        "the fast feeds fetched and the slow ones in flight",
        || async {
            hits_under(&server, "/slow/").len() == slow.len() && all_recorded(&store, &fast).await
        },
    )
    .await;
    kill_hard(first);
    let mut held_until = Vec::new();
    for &feed in &slow {
        let state = store.feed_fetch_state(feed).await.unwrap();
        held_until.push(state.lease_until.expect("still leased to the dead worker"));
        assert_eq!(state.last_checked_at, None);
    }

    hang.store(false, Ordering::SeqCst);
    let mut second = worker_command(dir.path(), &url);
    leased(&mut second);
    let second = spawn(&mut second);
    let finished = tokio::time::timeout(Duration::from_secs(90), async {
        while !all_recorded(&store, &every).await {
            tokio::time::sleep(Duration::from_millis(200)).await;
        }
    })
    .await;
    let (status, _) = terminate(second).await;
    let mut items = Vec::new();
    let mut taken_at = Vec::new();
    for &feed in &every {
        items.push(store.count_items(feed).await.unwrap());
        taken_at.push(store.feed_fetch_state(feed).await.unwrap().last_checked_at);
    }
    store.close().await;
    drop_postgres(Some((admin_url, schema))).await;

    assert!(finished.is_ok(), "every feed fetched after the kill");
    assert!(status.success());
    assert!(
        items.iter().all(|&n| n == 1),
        "one item per feed: {items:?}"
    );
    for ((feed, at), held) in slow.iter().zip(&taken_at[fast.len()..]).zip(&held_until) {
        let at = at.expect("fetched");
        assert!(
            at >= *held,
            "feed {feed} taken over at {at}, before the dead worker's lease ended ({held})"
        );
    }
    let fast_hits = hits_under(&server, "/feed/");
    assert_eq!(fast_hits.len(), fast.len());
    assert!(
        fast_hits.values().all(|&n| n == 1),
        "feeds fetched before the kill are not fetched again: {fast_hits:?}"
    );
    let slow_hits = hits_under(&server, "/slow/");
    assert!(
        slow_hits.values().all(|&n| n == 2),
        "each held feed fetched once more, by the second worker: {slow_hits:?}"
    );
}

/// A JSON API client signed in with a session cookie (which any replica accepts).
struct Api {
    client: reqwest::Client,
    cookie: String,
}

impl Api {
    /// Signs in as `username` through the server at `base`.
    async fn sign_in(base: &str, username: &str, password: &str) -> Api {
        let _ = rustls::crypto::ring::default_provider().install_default();
        let client = reqwest::Client::new();
        let response = client
            .post(format!("{base}/api/v1/session"))
            .header("content-type", "application/json")
            .body(json!({"username": username, "password": password}).to_string())
            .send()
            .await
            .unwrap();
        assert_eq!(response.status(), 200, "sign in");
        let cookie = response
            .headers()
            .get_all("set-cookie")
            .iter()
            .filter_map(|value| value.to_str().ok())
            .find(|value| value.starts_with("tidings_session="))
            .and_then(|value| value.split(';').next())
            .expect("a session cookie")
            .to_owned();
        Api { client, cookie }
    }

    /// `GET base/api/v1PATH` as JSON.
    async fn get(&self, base: &str, path: &str) -> Value {
        let response = self
            .client
            .get(format!("{base}/api/v1{path}"))
            .header("cookie", &self.cookie)
            .send()
            .await
            .unwrap();
        assert_eq!(response.status(), 200, "GET {base}{path}");
        serde_json::from_slice(&response.bytes().await.unwrap()).unwrap()
    }

    /// `POST base/api/v1PATH` with a JSON body, from the server's own origin.
    async fn post(&self, base: &str, path: &str, body: Value) -> Value {
        let response = self
            .client
            .post(format!("{base}/api/v1{path}"))
            .header("cookie", &self.cookie)
            .header("origin", base)
            .header("content-type", "application/json")
            .body(body.to_string())
            .send()
            .await
            .unwrap();
        assert_eq!(response.status(), 200, "POST {base}{path}");
        serde_json::from_slice(&response.bytes().await.unwrap()).unwrap()
    }
}

/// `/counts` without its time stamp, for comparing two answers.
fn counts_without_time(mut counts: Value) -> Value {
    counts.as_object_mut().unwrap().remove("as_of");
    counts
}

/// A page of `/items` as (id, feed, title, read) rows, for comparing two answers.
fn item_rows(page: &Value) -> Vec<(i64, i64, String, bool)> {
    page["items"]
        .as_array()
        .unwrap()
        .iter()
        .map(|item| {
            (
                item["id"].as_i64().unwrap(),
                item["feed_id"].as_i64().unwrap(),
                item["title"].as_str().unwrap_or("").to_owned(),
                item["is_read"].as_bool().unwrap(),
            )
        })
        .collect()
}

/// The deployment of issue 15 in small: 2 API processes (`serve --no-worker`) and 3
/// `tidings worker` processes on one PostgreSQL, 2,000 feeds on a local server. Every feed is
/// fetched once per due time (twice over two due times, as the feed server counts), no item is
/// stored twice, and both APIs answer with the same data, a change made through one seen
/// through the other.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn two_api_and_three_worker_processes_share_2000_feeds_on_postgres() {
    const FEEDS: usize = 2000;
    let test = "cli_scale::two_api_and_three_worker_processes_share_2000_feeds_on_postgres";
    let Ok(admin_url) = std::env::var("TIDINGS_TEST_POSTGRES_URL") else {
        skip::skip(test, skip::NO_POSTGRES);
        return;
    };
    let (url, schema) = postgres_schema(&admin_url).await;
    let dir = tempfile::tempdir().unwrap();
    // Each due time publishes one more item per feed: round N serves items 1..=N.
    let round = Arc::new(AtomicUsize::new(1));
    let server = phase_serve_rounds(Arc::clone(&round)).await;
    let store = store_at(&url).await;
    let password = "correct horse battery staple";
    let alice = store
        .create_user(&NewUser {
            username: "alice".into(),
            password_hash: Some(tidings_server::password::hash_password(password).unwrap()),
            is_admin: false,
        })
        .await
        .unwrap()
        .id;
    let feeds = phase_subscribe_all(&store, alice, &server.base, FEEDS).await;
    assert_eq!(feeds.len(), FEEDS);

    let apis: Vec<(KillOnDrop, String)> = (0..2)
        .map(|_| start_serve(tidings(dir.path(), &url), &["--no-worker"]))
        .collect();
    let workers: Vec<KillOnDrop> = (0..3)
        .map(|_| {
            let mut command = worker_command(dir.path(), &url);
            command
                .env("TIDINGS_WORKER_CONCURRENCY", "20")
                .arg("worker");
            spawn(&mut command)
        })
        .collect();

    let feed_hits = || hits_under(&server, "/feed/");
    let fetched = |times: usize| {
        let hits = feed_hits();
        hits.len() == FEEDS && hits.values().all(|&n| n >= times)
    };
    // A bound that only catches a stall: alone this takes about 30 s, but debug builds of
    // five processes on a loaded 2-core machine took over 150 s, and at a load of 20-29
    // (builds beside the tests) over 300 s.
    let outcome = tokio::time::timeout(Duration::from_secs(600), async {
        for due_time in 1..=2 {
            while !fetched(due_time) {
                tokio::time::sleep(Duration::from_millis(200)).await;
            }
            while !all_recorded(&store, &feeds).await {
                tokio::time::sleep(Duration::from_millis(200)).await;
            }
            if due_time == 1 {
                // The interval passes: every feed is due again, with one more item.
                round.store(2, Ordering::SeqCst);
                let now = chrono::Utc::now().timestamp();
                store
                    .execute_raw(&format!(
                        "UPDATE feed_fetch_state SET next_check_at = {now}"
                    ))
                    .await
                    .unwrap();
            }
        }
    })
    .await;
    // A few scheduler ticks more: nothing is fetched a third time.
    tokio::time::sleep(Duration::from_secs(3)).await;
    let hits = feed_hits();

    let mut checks = Vec::new();
    if outcome.is_ok() {
        let (a, b) = (&apis[0].1, &apis[1].1);
        let api = Api::sign_in(a, "alice", password).await;
        let counts_a = counts_without_time(api.get(a, "/counts").await);
        let counts_b = counts_without_time(api.get(b, "/counts").await);
        let page_a = item_rows(&api.get(a, "/items?limit=100").await);
        let page_b = item_rows(&api.get(b, "/items?limit=100").await);
        let ids: Vec<i64> = page_a.iter().map(|row| row.0).collect();
        let marked = api.post(b, "/items/mark-read", json!({ "ids": ids })).await;
        let after_a = api.get(a, "/counts").await;
        let page_after = item_rows(&api.get(a, "/items?limit=100&filter=all").await);
        checks.push((
            counts_a, counts_b, page_a, page_b, marked, after_a, page_after,
        ));
    }
    let mut statuses = Vec::new();
    for child in workers
        .into_iter()
        .chain(apis.into_iter().map(|(child, _)| child))
    {
        statuses.push(terminate(child).await.0);
    }
    let mut counts = Vec::new();
    for &feed in &feeds {
        counts.push(store.count_items(feed).await.unwrap());
    }
    store.close().await;
    drop_postgres(Some((admin_url, schema))).await;

    let progress = fetch_progress(&server, FEEDS);
    assert!(
        outcome.is_ok(),
        "not every feed was fetched twice in time: {progress}"
    );
    assert!(
        statuses.iter().all(|s| s.success()),
        "every process stops cleanly: {statuses:?}"
    );
    let not_twice: Vec<_> = hits.iter().filter(|(_, n)| **n != 2).collect();
    assert!(
        not_twice.is_empty(),
        "feeds not fetched exactly once per due time: {not_twice:?}"
    );
    assert!(
        counts.iter().all(|&n| n == 2),
        "two items per feed, none doubled: {:?}",
        counts.iter().filter(|&&n| n != 2).collect::<Vec<_>>()
    );
    let (counts_a, counts_b, page_a, page_b, marked, after_a, page_after) = checks.remove(0);
    assert_eq!(counts_a["unread"], json!(FEEDS * 2));
    assert_eq!(counts_a, counts_b, "both APIs count the same");
    assert_eq!(page_a.len(), 100);
    assert_eq!(page_a, page_b, "both APIs list the same items");
    assert_eq!(marked["marked"], json!(100), "{marked}");
    assert_eq!(
        after_a["unread"],
        json!(FEEDS * 2 - 100),
        "read through one API, seen through the other"
    );
    let mut read: Vec<i64> = page_after
        .iter()
        .filter(|row| row.3)
        .map(|row| row.0)
        .collect();
    read.sort();
    let mut expected: Vec<i64> = page_a.iter().map(|row| row.0).collect();
    expected.sort();
    assert_eq!(
        read, expected,
        "the items read through one API are read through the other"
    );
}

/// The feeds' site: `/feed/{tag}` serves items 1..=N of round N, N read from `published`.
async fn phase_serve_rounds(published: Arc<AtomicUsize>) -> TestServer {
    TestServer::start(Router::new().route(
        "/feed/{tag}",
        get(
            move |axum::extract::Path(tag): axum::extract::Path<String>| {
                let items: String = (1..=published.load(Ordering::SeqCst))
                    .map(|n| {
                        format!(
                            "<item><title>{tag} #{n}</title><guid>{tag}-{n}</guid>\
                             <pubDate>Tue, 0{n} Sep 2026 10:00:00 GMT</pubDate></item>"
                        )
                    })
                    .collect();
                async move {
                    format!(
                        "<?xml version=\"1.0\"?><rss version=\"2.0\"><channel>\
                         <title>Feed {tag}</title>{items}</channel></rss>"
                    )
                }
            },
        ),
    ))
    .await
}

/// `count` subscriptions of `alice` to the site at `server_base`, made eight at a time.
async fn phase_subscribe_all(
    store: &Store,
    alice: i64,
    server_base: &str,
    count: usize,
) -> Vec<i64> {
    let mut subscribing = tokio::task::JoinSet::new();
    for part in 0..8 {
        let (store, server_base) = (store.clone(), server_base.to_string());
        subscribing.spawn(async move {
            let mut feeds = Vec::new();
            for n in (part..count).step_by(8) {
                feeds.push(subscribe(&store, alice, &format!("{server_base}/feed/f{n}")).await);
            }
            feeds
        });
    }
    let mut all = Vec::new();
    while let Some(part) = subscribing.join_next().await {
        all.extend(part.unwrap());
    }
    all
}

/// The lines a process writes to standard error, collected as they come (the pipe is drained
/// for as long as the process runs, so it never blocks).
fn collect_stderr(child: &mut Child) -> Arc<Mutex<Vec<String>>> {
    use std::io::BufRead;
    let lines: Arc<Mutex<Vec<String>>> = Arc::default();
    let sink = Arc::clone(&lines);
    let stderr = child.stderr.take().expect("piped stderr");
    std::thread::spawn(move || {
        for line in std::io::BufReader::new(stderr).lines() {
            let Ok(line) = line else { break };
            sink.lock().unwrap().push(line);
        }
    });
    lines
}

/// Waits (up to 5 s) until the reader of [`collect_stderr`] has read the pipe to its end, which
/// is after the process exits: the exit can be seen before its last lines are read. The reader
/// holds the other handle on the lines until then.
async fn until_drained(lines: &Arc<Mutex<Vec<String>>>) {
    let deadline = tokio::time::Instant::now() + Duration::from_secs(5);
    while Arc::strong_count(lines) > 1 && tokio::time::Instant::now() < deadline {
        tokio::time::sleep(Duration::from_millis(20)).await;
    }
}

/// The collected lines that contain `needle`.
fn lines_with(lines: &Mutex<Vec<String>>, needle: &str) -> Vec<String> {
    lines
        .lock()
        .unwrap()
        .iter()
        .filter(|line| line.contains(needle))
        .cloned()
        .collect()
}

/// Waits up to `limit` for the process to end by itself.
async fn exit_within(child: &mut KillOnDrop, limit: Duration) -> Option<std::process::ExitStatus> {
    let deadline = tokio::time::Instant::now() + limit;
    while tokio::time::Instant::now() < deadline {
        if let Some(status) = child.try_wait().unwrap() {
            return Some(status);
        }
        tokio::time::sleep(Duration::from_millis(50)).await;
    }
    None
}

/// A process started while PostgreSQL is down waits for it instead of exiting (issue 15): on a
/// private PostgreSQL instance that the test stops and starts, `tidings worker` started with
/// the server stopped logs what it waits for, with growing pauses, and once the server is
/// started it fetches without a restart; `tidings serve` waiting the same way stops cleanly on
/// SIGTERM. Errors that waiting cannot fix still end the start at once: a database that does
/// not exist, a SQLite file that cannot be created.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_process_started_while_postgres_is_down_waits_for_it() {
    use tidings_testkit::private_postgres::{
        NO_SERVER_PROGRAMS, PrivatePostgres, PrivatePostgresError,
    };
    let test = "cli_scale::a_process_started_while_postgres_is_down_waits_for_it";
    let postgres = match PrivatePostgres::start() {
        Ok(instance) => instance,
        Err(PrivatePostgresError::NotInstalled) => {
            skip::skip(test, NO_SERVER_PROGRAMS);
            return;
        }
        Err(error) => panic!("the private PostgreSQL did not start: {error}"),
    };
    let dir = tempfile::tempdir().unwrap();
    let admin = store_at(&postgres.url()).await;
    admin.execute_raw("CREATE DATABASE tidings").await.unwrap();
    admin.close().await;
    let url = postgres.database_url("tidings");
    let server = TestServer::start(feed_router()).await;
    let store = store_at(&url).await;
    let alice = add_user(&store, "alice").await;
    subscribe(&store, alice, &server.url("/feed/waited")).await;
    store.close().await;

    // Waiting cannot make a missing database appear: the start fails at once, saying why.
    let mut missing = worker_command(dir.path(), &postgres.database_url("no_such_database"));
    missing.arg("worker").stderr(Stdio::piped());
    let mut missing = spawn(&mut missing);
    let missing_log = collect_stderr(&mut missing);
    let status = exit_within(&mut missing, Duration::from_secs(20)).await;
    until_drained(&missing_log).await;
    assert_eq!(
        status.and_then(|s| s.code()),
        Some(1),
        "a missing database ends the start: {:?}",
        missing_log.lock().unwrap()
    );
    assert!(
        !lines_with(&missing_log, "does not exist").is_empty(),
        "{:?}",
        missing_log.lock().unwrap()
    );
    // Nor a SQLite file in a folder that does not exist (serve creates missing files).
    let unopenable = format!(
        "sqlite://{}",
        dir.path().join("no/such/folder/t.db").display()
    );
    let mut sqlite = tidings(dir.path(), &unopenable);
    sqlite
        .arg("serve")
        .env("TIDINGS_LISTEN", "127.0.0.1:0")
        .stdout(Stdio::null())
        .stderr(Stdio::piped());
    let mut sqlite = spawn(&mut sqlite);
    let sqlite_log = collect_stderr(&mut sqlite);
    let status = exit_within(&mut sqlite, Duration::from_secs(20)).await;
    until_drained(&sqlite_log).await;
    assert_eq!(
        status.and_then(|s| s.code()),
        Some(1),
        "an unopenable SQLite file ends the start: {:?}",
        sqlite_log.lock().unwrap()
    );
    assert!(lines_with(&sqlite_log, "waiting for the database").is_empty());

    // The worker starts while the server is stopped: it waits, saying for what.
    postgres.down().unwrap();
    let mut command = worker_command(dir.path(), &url);
    command
        .env("TIDINGS_LOG_LEVEL", "info")
        .arg("worker")
        .stderr(Stdio::piped());
    let mut worker = spawn(&mut command);
    let log = collect_stderr(&mut worker);
    // Logged as every URL is, with its user name and password hidden.
    let shown = tidings_fetch::redact_url(&url);
    wait_until(Duration::from_secs(30), "two waiting lines", || {
        let waiting = lines_with(&log, "waiting for the database");
        async move { waiting.len() >= 2 }
    })
    .await;
    let waiting = lines_with(&log, "waiting for the database");
    assert!(
        waiting[0].contains(&shown) && waiting[0].contains("trying again in 1 s"),
        "{waiting:?}"
    );
    assert!(
        waiting[1].contains("trying again in 2 s"),
        "the pause grows: {waiting:?}"
    );
    assert!(worker.try_wait().unwrap().is_none(), "the worker waits");
    assert!(server.hits_by_path().is_empty());

    // The server starts: the same process fetches, without a restart.
    postgres.up().unwrap();
    wait_until(Duration::from_secs(60), "the feed fetched", || {
        let fetched = server.hits_by_path().contains_key("/feed/waited");
        async move { fetched }
    })
    .await;
    assert!(
        !lines_with(&log, "answers: starting").is_empty(),
        "{:?}",
        log.lock().unwrap()
    );
    let (status, _) = terminate(worker).await;
    assert!(status.success(), "the worker stops cleanly: {status}");

    // `serve` waits the same way, and SIGTERM while it waits stops it at once, cleanly.
    postgres.down().unwrap();
    let mut command = tidings(dir.path(), &url);
    command
        .args(["serve", "--no-worker"])
        .env("TIDINGS_LISTEN", "127.0.0.1:0")
        .stdout(Stdio::null())
        .stderr(Stdio::piped());
    let mut serve = spawn(&mut command);
    let serve_log = collect_stderr(&mut serve);
    wait_until(Duration::from_secs(30), "serve waiting", || {
        let waiting = lines_with(&serve_log, "waiting for the database");
        async move { !waiting.is_empty() }
    })
    .await;
    let (status, took) = terminate(serve).await;
    assert!(
        status.success(),
        "serve stops cleanly while waiting: {status}"
    );
    assert!(took < Duration::from_secs(3), "serve took {took:?} to stop");
}
