//! The fetch worker through the real binary: `serve` fetches a subscribed feed within one
//! scheduler tick, two `tidings worker` processes share 1,000 feeds on PostgreSQL, and the
//! `refresh`, `discover` and `opml` commands, all against servers on 127.0.0.1.

use std::collections::HashMap;
use std::path::Path;
use std::process::{Output, Stdio};
use std::time::Duration;

use axum::routing::get;

use crate::support::*;

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn serve_fetches_a_subscribed_local_feed_within_one_tick() {
    let dir = tempfile::tempdir().unwrap();
    let url = format!("sqlite://{}", dir.path().join("t.db").display());
    let server = TestServer::start(feed_router()).await;
    let store = store_at(&url).await;
    let alice = add_user(&store, "alice").await;
    let feed = subscribe(&store, alice, &server.url("/feed/serve")).await;
    // A tick far longer than the test may wait: the first tick runs at start.
    let child = spawn(
        tidings(dir.path(), &url)
            .arg("serve")
            .env("TIDINGS_LISTEN", "127.0.0.1:0")
            .env("TIDINGS_ALLOW_PRIVATE_NETWORKS", "true")
            .env("TIDINGS_WORKER_POLL_SECONDS", "3600")
            .stdout(Stdio::null())
            .stderr(Stdio::null()),
    );
    wait_until(Duration::from_secs(60), "the first fetch", || async {
        store.count_items(feed).await.unwrap() == 1
    })
    .await;
    assert!(stop(child), "serve stops cleanly with its worker");
    assert_eq!(server.hits_by_path().get("/feed/serve"), Some(&1));
    store.close().await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn bad_worker_settings_exit_2_naming_the_variable() {
    let dir = tempfile::tempdir().unwrap();
    let url = format!("sqlite://{}", dir.path().join("t.db").display());
    let mut bad = tidings(dir.path(), &url);
    bad.args(["serve"]).env("TIDINGS_WORKER", "perhaps");
    let output = run(&mut bad).await;
    assert_eq!(output.status.code(), Some(2));
    assert!(String::from_utf8_lossy(&output.stderr).contains("TIDINGS_WORKER"));
    for (variable, value) in [
        ("TIDINGS_ALLOW_PRIVATE_NETWORKS", "maybe"),
        ("TIDINGS_WORKER_CONCURRENCY", "0"),
        ("TIDINGS_WORKER_POLL_SECONDS", "soon"),
        ("TIDINGS_RETENTION_DAYS", "-1"),
        ("TIDINGS_FETCH_TIMEOUT_SECONDS", "0"),
        ("TIDINGS_FETCH_FIRST_BYTE_TIMEOUT_SECONDS", "0"),
        ("TIDINGS_FETCH_PER_HOST_RATE", "0"),
        ("TIDINGS_FETCH_PER_HOST_CONCURRENCY", "0"),
        ("TIDINGS_FETCH_PER_HOST_SLOW", "lots"),
        ("TIDINGS_FETCH_PER_HOST_SLOW_AFTER_SECONDS", "0"),
        ("TIDINGS_WORKER_LEASE_SECONDS", "5"),
        // Not longer than the fetch timeout (10 s by default).
        ("TIDINGS_WORKER_LEASE_SECONDS", "10"),
    ] {
        let mut command = tidings(dir.path(), &url);
        command.arg("worker").env(variable, value);
        let output = run(&mut command).await;
        assert_eq!(output.status.code(), Some(2), "{variable}");
        assert!(
            String::from_utf8_lossy(&output.stderr).contains(variable),
            "{variable}"
        );
    }
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn refresh_discover_and_opml_on_the_command_line() {
    let dir = tempfile::tempdir().unwrap();
    let url = format!("sqlite://{}", dir.path().join("t.db").display());
    let router = feed_router().route(
        "/page",
        get(|| async {
            "<html><head><link rel=\"alternate\" type=\"application/rss+xml\" href=\"/feed/linked\">\
             </head></html>"
        }),
    );
    let server = TestServer::start(router).await;
    let store = store_at(&url).await;
    let alice = add_user(&store, "alice").await;
    let feed = subscribe(&store, alice, &server.url("/feed/cli")).await;

    let mut refresh = tidings(dir.path(), &url);
    refresh
        .args(["refresh", "--feed", &feed.to_string()])
        .env("TIDINGS_ALLOW_PRIVATE_NETWORKS", "true");
    let output = run(&mut refresh).await;
    let stdout = String::from_utf8_lossy(&output.stdout);
    assert!(output.status.success(), "{stdout}");
    assert!(stdout.contains("parsed, 1 new"), "{stdout}");

    // Without private networks the same refresh is refused, says so and names the setting,
    // but its own settings do not stop a feed the server fetches fine: nothing is recorded.
    let before = store.feed_fetch_state(feed).await.unwrap();
    let mut refused = tidings(dir.path(), &url);
    refused.args(["refresh", "--all"]);
    let output = run(&mut refused).await;
    assert_eq!(output.status.code(), Some(1));
    let stdout = String::from_utf8_lossy(&output.stdout);
    assert!(stdout.contains("refused"), "{stdout}");
    assert!(
        stdout.contains("TIDINGS_ALLOW_PRIVATE_NETWORKS=true"),
        "{stdout}"
    );
    assert!(stdout.contains("not recorded"), "{stdout}");
    let after = store.feed_fetch_state(feed).await.unwrap();
    assert_eq!(after.status, tidings_store::FetchStatus::Active, "{stdout}");
    assert_eq!(after.status_reason, before.status_reason);
    assert_eq!(after.last_checked_at, before.last_checked_at);
    // ...and the feed is not left leased: the server's worker may fetch it at once.
    let mut again = tidings(dir.path(), &url);
    again
        .args(["refresh", "--feed", &feed.to_string()])
        .env("TIDINGS_ALLOW_PRIVATE_NETWORKS", "true");
    let output = run(&mut again).await;
    assert!(
        output.status.success(),
        "{}",
        String::from_utf8_lossy(&output.stdout)
    );

    let mut discover = tidings(dir.path(), &url);
    discover
        .args(["discover", &server.url("/page")])
        .env("TIDINGS_ALLOW_PRIVATE_NETWORKS", "true");
    let output = run(&mut discover).await;
    assert!(output.status.success());
    assert_eq!(
        String::from_utf8_lossy(&output.stdout).lines().next(),
        Some(server.url("/feed/linked").as_str())
    );

    let opml = dir.path().join("in.opml");
    std::fs::write(
        &opml,
        format!(
            "<opml version=\"2.0\"><head><title>t</title></head><body>\
             <outline text=\"News\"><outline text=\"A\" xmlUrl=\"{0}\"/></outline>\
             <outline text=\"again\" xmlUrl=\"{0}\"/>\
             <outline text=\"metadata\" xmlUrl=\"http://169.254.169.254/feed\"/>\
             <outline text=\"bad\" xmlUrl=\"ftp://b.example/feed\"/>\
             </body></opml>",
            server.url("/feed/a")
        ),
    )
    .unwrap();
    let output = opml_import(dir.path(), &url, &opml, &[]).await;
    let stdout = String::from_utf8_lossy(&output.stdout);
    assert!(output.status.success(), "{stdout}");
    assert!(
        stdout.contains(&format!("added    {} [News]", server.url("/feed/a"))),
        "{stdout}"
    );
    assert!(stdout.contains("listed more than once"), "{stdout}");
    assert!(
        stdout.contains("refused  http://169.254.169.254/feed"),
        "{stdout}"
    );
    assert!(
        stdout.contains("4 feeds: 1 added, 1 skipped, 2 refused, 0 failed"),
        "{stdout}"
    );
    assert_eq!(store.list_opml_imports(alice).await.unwrap().len(), 1);

    let mut export = tidings(dir.path(), &url);
    export.args(["opml", "export", "--user", "alice"]);
    let output = run(&mut export).await;
    let document = String::from_utf8_lossy(&output.stdout);
    assert!(document.contains("<opml version=\"2.0\" "), "{document}");
    assert!(
        document.contains("<outline text=\"News\" title=\"News\">"),
        "{document}"
    );
    assert!(
        document.contains(&format!("xmlUrl=\"{}\"", server.url("/feed/a"))),
        "{document}"
    );
    store.close().await;
}

/// Runs `tidings opml import FILE --user alice` with `extra` arguments, private networks
/// allowed (the feeds are on 127.0.0.1).
async fn opml_import(dir: &Path, database_url: &str, file: &Path, extra: &[&str]) -> Output {
    let mut import = tidings(dir, database_url);
    import
        .args(["opml", "import", file.to_str().unwrap(), "--user", "alice"])
        .args(extra)
        .env("TIDINGS_ALLOW_PRIVATE_NETWORKS", "true");
    run(&mut import).await
}

/// `tidings opml import` keeps outline titles, reports feeds that answer 404 or are no feed as
/// failed (and does not subscribe them), and says plainly, with exit code 1, when a limit left
/// feeds out: more than 1,000 in the file, or the subscription limit.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn opml_import_reports_failures_and_limits_on_the_command_line() {
    let router = feed_router().route(
        "/page",
        get(|| async { "<html><body>a page, not a feed</body></html>" }),
    );
    let server = TestServer::start(router).await;
    let dir = tempfile::tempdir().unwrap();
    for (url, admin) in test_databases(dir.path(), "opml_import_reports_failures").await {
        let store = store_at(&url).await;
        let alice = add_user(&store, "alice").await;
        let opml = dir.path().join("mixed.opml");
        std::fs::write(
            &opml,
            format!(
                "<opml version=\"2.0\"><body>\
                 <outline text=\"Tech\"><outline text=\"My favourite\" xmlUrl=\"{}\"/></outline>\
                 <outline title=\"Gone\" text=\"gone\" xmlUrl=\"{}\"/>\
                 <outline text=\"Page\" xmlUrl=\"{}\"/>\
                 </body></opml>",
                server.url("/feed/fav"),
                server.url("/missing.xml"),
                server.url("/page")
            ),
        )
        .unwrap();
        let output = opml_import(dir.path(), &url, &opml, &[]).await;
        let stdout = String::from_utf8_lossy(&output.stdout);
        assert!(output.status.success(), "{url}: {stdout}");
        assert!(
            stdout.contains(&format!(
                "failed   {}: the server answered HTTP 404",
                server.url("/missing.xml")
            )),
            "{stdout}"
        );
        assert!(
            stdout.contains(&format!("failed   {}: not a feed", server.url("/page"))),
            "{stdout}"
        );
        assert!(
            stdout.contains("3 feeds: 1 added, 0 skipped, 0 refused, 2 failed"),
            "{stdout}"
        );
        let subscriptions = store.list_subscriptions(alice).await.unwrap();
        assert_eq!(subscriptions.len(), 1, "failed feeds are not subscribed");
        assert_eq!(
            subscriptions[0].custom_title.as_deref(),
            Some("My favourite")
        );
        let history = store.list_opml_imports(alice).await.unwrap();
        assert_eq!(history[0].failed, 2);
        assert!(
            history[0].report.contains("HTTP 404"),
            "{}",
            history[0].report
        );

        // 1,001 feeds and a limit of 3 subscriptions (one used): what fits is imported, and
        // the rest is named plainly, with exit code 1.
        let outlines: String = (0..1001)
            .map(|n| {
                format!(
                    "<outline xmlUrl=\"{}\"/>",
                    server.url(&format!("/feed/m{n}"))
                )
            })
            .collect();
        let many = dir.path().join("many.opml");
        std::fs::write(
            &many,
            format!("<opml version=\"2.0\"><body>{outlines}</body></opml>"),
        )
        .unwrap();
        let output = opml_import(dir.path(), &url, &many, &["--max-subscriptions", "3"]).await;
        let stdout = String::from_utf8_lossy(&output.stdout);
        let stderr = String::from_utf8_lossy(&output.stderr);
        assert_eq!(output.status.code(), Some(1), "{stderr}");
        assert!(
            stdout.contains("1001 feeds: 2 added, 0 skipped, 999 refused, 0 failed"),
            "{stdout}"
        );
        assert!(
            stderr.contains("the file lists 1001 feeds, more than the 1000 one import takes"),
            "{stderr}"
        );
        assert!(
            stderr.contains("998 feeds were not imported because the limit of 3 subscriptions"),
            "{stderr}"
        );
        assert_eq!(store.count_subscriptions(alice).await.unwrap(), 3);
        store.close().await;
        drop_postgres(admin).await;
    }
}

/// Two `tidings worker` processes on one PostgreSQL database over 1,000 due feeds: each feed
/// is fetched exactly once. Skipped (with a note) when no test server is configured.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn two_worker_processes_on_postgres_fetch_each_feed_once() {
    let Ok(admin_url) = std::env::var("TIDINGS_TEST_POSTGRES_URL") else {
        skip::skip(
            "cli_worker::two_worker_processes_on_postgres_fetch_each_feed_once",
            skip::NO_POSTGRES,
        );
        return;
    };
    let (url, schema) = postgres_schema(&admin_url).await;
    let server = TestServer::start(feed_router()).await;
    let store = store_at(&url).await;
    let alice = add_user(&store, "alice").await;
    for id in 0..1000 {
        subscribe(&store, alice, &server.url(&format!("/feed/{id}"))).await;
    }
    let dir = tempfile::tempdir().unwrap();
    let workers: Vec<KillOnDrop> = (0..2)
        .map(|_| {
            spawn(
                tidings(dir.path(), &url)
                    .arg("worker")
                    .env("TIDINGS_ALLOW_PRIVATE_NETWORKS", "true")
                    .env("TIDINGS_WORKER_POLL_SECONDS", "1")
                    .stdout(Stdio::null())
                    .stderr(Stdio::null()),
            )
        })
        .collect();
    let result = tokio::time::timeout(Duration::from_secs(240), async {
        loop {
            let feeds = store.list_feeds().await.unwrap();
            let mut done = 0;
            for feed in &feeds {
                let state = store.feed_fetch_state(feed.id).await.unwrap();
                done += usize::from(state.last_checked_at.is_some() && state.lease_until.is_none());
            }
            if done == 1000 {
                break;
            }
            tokio::time::sleep(Duration::from_millis(200)).await;
        }
    })
    .await;
    for worker in workers {
        stop(worker);
    }
    store.close().await;
    drop_postgres(Some((admin_url, schema))).await;
    assert!(result.is_ok(), "not every feed was fetched in time");
    // The workers also look for favicons ("/", "/favicon.ico"); only feeds are counted.
    let hits: HashMap<String, usize> = server
        .hits_by_path()
        .into_iter()
        .filter(|(path, _)| path.starts_with("/feed/"))
        .collect();
    assert_eq!(hits.len(), 1000);
    let twice: Vec<_> = hits.iter().filter(|(_, n)| **n != 1).collect();
    assert!(twice.is_empty(), "fetched more than once: {twice:?}");
}

/// A port free on 127.0.0.1 a moment ago.
fn free_port() -> u16 {
    std::net::TcpListener::bind("127.0.0.1:0")
        .and_then(|listener| listener.local_addr())
        .expect("a free port")
        .port()
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_worker_serves_metrics_on_its_own_listener() {
    const TOKEN: &str = "cli-worker-metrics-token";
    let dir = tempfile::tempdir().unwrap();
    let url = format!("sqlite://{}", dir.path().join("t.db").display());

    // A bad address stops the start, naming the variable.
    let mut bad = tidings(dir.path(), &url);
    bad.arg("worker")
        .env("TIDINGS_WORKER_METRICS_LISTEN", "everywhere");
    store_at(&url).await.close().await;
    let output = run(&mut bad).await;
    assert_eq!(output.status.code(), Some(2));
    assert!(String::from_utf8_lossy(&output.stderr).contains("TIDINGS_WORKER_METRICS_LISTEN"));

    let server = TestServer::start(feed_router()).await;
    let store = store_at(&url).await;
    let user = add_user(&store, "mo").await;
    subscribe(&store, user, &server.url("/feed/metered")).await;
    let port = free_port();
    // Loopback is not among the allowed networks, so only the token lets the test in.
    let child = spawn(
        tidings(dir.path(), &url)
            .arg("worker")
            .env("TIDINGS_ALLOW_PRIVATE_NETWORKS", "true")
            .env("TIDINGS_WORKER_METRICS_LISTEN", format!("127.0.0.1:{port}"))
            .env("TIDINGS_METRICS_ALLOWED_NETWORKS", "10.0.0.0/8")
            .env("TIDINGS_METRICS_TOKEN", TOKEN)
            .stdout(Stdio::null())
            .stderr(Stdio::null()),
    );
    let metrics = format!("http://127.0.0.1:{port}/metrics");
    let _ = rustls::crypto::ring::default_provider().install_default();
    let client = reqwest::Client::new();
    let scrape = || async {
        match client.get(&metrics).bearer_auth(TOKEN).send().await {
            Ok(response) if response.status() == reqwest::StatusCode::OK => {
                response.text().await.unwrap_or_default()
            }
            _ => String::new(),
        }
    };
    wait_until(
        Duration::from_secs(60),
        "the fetch in the metrics",
        || async {
            scrape()
                .await
                .contains("tidings_fetches_total{result=\"parsed\"} 1")
        },
    )
    .await;
    let text = scrape().await;
    for expected in [
        "tidings_items_upserted_total{change=\"inserted\"} 1",
        "tidings_fetch_duration_seconds_count 1",
        "tidings_feeds{status=\"active\"} 1",
        "tidings_fetch_queue_depth 0",
        "tidings_database_up 1",
        "tidings_db_pool_max_connections{pool=\"sqlite_writer\"} 1",
    ] {
        assert!(text.contains(expected), "{expected} missing from\n{text}");
    }
    let refused = client.get(&metrics).send().await.unwrap();
    assert_eq!(refused.status(), reqwest::StatusCode::FORBIDDEN);
    assert!(
        stop(child),
        "the worker stops cleanly with its metrics listener"
    );
    store.close().await;
}

/// `tidings reparse` on each engine: a feed fetched once, its server then stopped, is
/// reparsed from the kept body into the same items; items an older parser stored differently
/// are updated; a feed without a body and an unknown feed get errors that say what to do.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn reparse_rederives_items_from_kept_bodies_with_the_server_stopped() {
    let dir = tempfile::tempdir().unwrap();
    for (url, admin) in test_databases(dir.path(), "reparse_rederives_items").await {
        // A server the test can stop.
        let listener = tokio::net::TcpListener::bind("127.0.0.1:0").await.unwrap();
        let base = format!("http://{}", listener.local_addr().unwrap());
        let server = tokio::spawn(async move {
            axum::serve(listener, feed_router()).await.unwrap();
        });
        let store = store_at(&url).await;
        let alice = add_user(&store, "alice").await;
        let fetched = subscribe(&store, alice, &format!("{base}/feed/kept")).await;
        let never = subscribe(&store, alice, &format!("{base}/feed/never")).await;
        let mut refresh = tidings(dir.path(), &url);
        refresh
            .args(["refresh", "--feed", &fetched.to_string()])
            .env("TIDINGS_ALLOW_PRIVATE_NETWORKS", "true");
        let output = run(&mut refresh).await;
        assert!(output.status.success(), "{output:?}");
        server.abort();
        let _ = server.await;
        let snapshot = |store: tidings_store::Store| async move {
            let mut items = Vec::new();
            for id in store.feed_item_ids(fetched).await.unwrap() {
                let item = store.item(alice, id).await.unwrap();
                items.push((item.guid, item.title, item.url, item.summary, item.content));
            }
            items
        };
        let before = snapshot(store.clone()).await;
        assert_eq!(before.len(), 1);

        let mut reparse = tidings(dir.path(), &url);
        reparse.args(["reparse", "--all"]);
        let output = run(&mut reparse).await;
        let stdout = String::from_utf8_lossy(&output.stdout);
        assert!(output.status.success(), "{stdout}{output:?}");
        assert!(
            stdout.contains(&format!("feed {fetched} {base}/feed/kept: body of ")),
            "{stdout}"
        );
        assert!(
            stdout.contains("reparsed, 0 new, 0 updated, 1 unchanged"),
            "{stdout}"
        );
        assert!(
            stdout.contains(
                "reparsed 1 feed from stored bodies: 0 new, 0 updated, 1 unchanged items"
            ),
            "{stdout}"
        );
        assert!(
            stdout.contains("1 feed has no stored body yet")
                && stdout.contains("tidings refresh --all"),
            "{stdout}"
        );
        assert!(stdout.contains("stored bodies: 1, "), "{stdout}");
        assert_eq!(snapshot(store.clone()).await, before);

        // Items an older parser read differently (another title, another content hash).
        store
            .execute_raw(&format!(
                "UPDATE items SET title = 'old reading', content_hash = 'old' WHERE feed_id = {fetched}"
            ))
            .await
            .unwrap();
        let mut reparse = tidings(dir.path(), &url);
        reparse.args(["reparse", "--feed", &fetched.to_string()]);
        let output = run(&mut reparse).await;
        let stdout = String::from_utf8_lossy(&output.stdout);
        assert!(output.status.success(), "{stdout}{output:?}");
        assert!(
            stdout.contains("reparsed, 0 new, 1 updated, 0 unchanged"),
            "{stdout}"
        );
        assert_eq!(snapshot(store.clone()).await, before);

        let mut reparse = tidings(dir.path(), &url);
        reparse.args(["reparse", "--feed", &never.to_string()]);
        let output = run(&mut reparse).await;
        let stderr = String::from_utf8_lossy(&output.stderr);
        assert_eq!(output.status.code(), Some(1), "{stderr}");
        assert!(
            stderr.contains(&format!(
                "feed {never} has no stored body yet: bodies are kept from each successful \
                 fetch, so run `tidings refresh --feed {never}` once"
            )),
            "{stderr}"
        );
        let mut reparse = tidings(dir.path(), &url);
        reparse.args(["reparse", "--feed", "987654"]);
        let output = run(&mut reparse).await;
        assert_eq!(output.status.code(), Some(1));
        assert!(
            String::from_utf8_lossy(&output.stderr).contains("feed 987654 not found"),
            "{output:?}"
        );
        let mut reparse = tidings(dir.path(), &url);
        reparse.arg("reparse");
        assert_eq!(run(&mut reparse).await.status.code(), Some(2));
        store.close().await;
        drop_postgres(admin).await;
    }
}

/// Popularity (F40) through the binary: `TIDINGS_POPULARITY=hatena` with the base URL of a
/// stand-in on 127.0.0.1 gives the feeds' items their counts; bad values stop the start.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_worker_with_popularity_on_asks_the_configured_count_source() {
    let dir = tempfile::tempdir().unwrap();
    let url = format!("sqlite://{}", dir.path().join("t.db").display());
    store_at(&url).await.close().await;
    for (settings, variable) in [
        (vec![("TIDINGS_POPULARITY", "yes")], "TIDINGS_POPULARITY"),
        (
            vec![
                ("TIDINGS_POPULARITY", "hatena"),
                ("TIDINGS_HATENA_BASE_URL", "ftp://bookmark.example"),
            ],
            "TIDINGS_HATENA_BASE_URL",
        ),
    ] {
        let mut command = tidings(dir.path(), &url);
        command.arg("worker").envs(settings);
        let output = run(&mut command).await;
        assert_eq!(output.status.code(), Some(2), "{variable}");
        assert!(String::from_utf8_lossy(&output.stderr).contains(variable));
    }

    let hatena = TestServer::start(axum::Router::new().route(
        "/count/entries",
        get(
            |axum::extract::RawQuery(query): axum::extract::RawQuery| async move {
                let counts: serde_json::Map<String, serde_json::Value> =
                    url::form_urlencoded::parse(query.unwrap_or_default().as_bytes())
                        .map(|(_, link)| (link.into_owned(), 7.into()))
                        .collect();
                axum::Json(counts)
            },
        ),
    ))
    .await;
    let feeds = TestServer::start(feed_router()).await;
    let store = store_at(&url).await;
    let user = add_user(&store, "hana").await;
    let feed = subscribe(&store, user, &feeds.url("/feed/hot")).await;
    let now = chrono::Utc::now().timestamp();
    let items: Vec<tidings_store::NewItem> = (0..3)
        .map(|n| tidings_store::NewItem {
            guid: Some(format!("linked-{n}")),
            url: Some(format!("https://blog.example/{n}")),
            published: Some(now - 60),
            ..Default::default()
        })
        .collect();
    store.upsert_items(feed, &items, now).await.unwrap();
    let ids = store.feed_item_ids(feed).await.unwrap();
    let child = spawn(
        tidings(dir.path(), &url)
            .arg("worker")
            .env("TIDINGS_ALLOW_PRIVATE_NETWORKS", "true")
            .env("TIDINGS_POPULARITY", "hatena")
            .env("TIDINGS_HATENA_BASE_URL", hatena.url("/"))
            .stdout(Stdio::null())
            .stderr(Stdio::null()),
    );
    wait_until(Duration::from_secs(60), "the counts", || async {
        let known = store.popularity_of(&ids).await.unwrap();
        known.len() == 3 && known.values().all(|p| p.count == 7)
    })
    .await;
    assert!(stop(child), "the worker stops cleanly");
    assert_eq!(
        hatena.hits_by_path().get("/count/entries"),
        Some(&1),
        "one call for three links"
    );
    store.close().await;
}

/// WebSub (F18) through the binary: `TIDINGS_WEBSUB=true` needs a base URL hubs can reach
/// (a loopback one only with private networks allowed), and a `tidings worker` with it on
/// subscribes a feed that advertises a hub, with a callback under that base URL.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_worker_with_websub_on_subscribes_feeds_at_their_hubs() {
    let dir = tempfile::tempdir().unwrap();
    let url = format!("sqlite://{}", dir.path().join("t.db").display());
    store_at(&url).await.close().await;
    for (settings, variable, says) in [
        (
            vec![("TIDINGS_WEBSUB", "often")],
            "TIDINGS_WEBSUB",
            "true or false",
        ),
        (
            vec![("TIDINGS_WEBSUB", "true")],
            "TIDINGS_BASE_URL",
            "TIDINGS_WEBSUB=true needs",
        ),
        (
            vec![
                ("TIDINGS_WEBSUB", "true"),
                ("TIDINGS_BASE_URL", "http://127.0.0.1:9/"),
            ],
            "TIDINGS_BASE_URL",
            "TIDINGS_ALLOW_PRIVATE_NETWORKS=true",
        ),
    ] {
        for command in ["worker", "serve"] {
            let mut tidings_command = tidings(dir.path(), &url);
            tidings_command.arg(command).envs(settings.clone());
            let output = run(&mut tidings_command).await;
            let stderr = String::from_utf8_lossy(&output.stderr);
            assert_eq!(
                output.status.code(),
                Some(2),
                "{command} {variable}: {stderr}"
            );
            assert!(
                stderr.contains(variable) && stderr.contains(says),
                "{stderr}"
            );
        }
    }

    let requests: std::sync::Arc<std::sync::Mutex<Vec<String>>> = Default::default();
    let seen = std::sync::Arc::clone(&requests);
    let publisher = TestServer::start(
        axum::Router::new()
            .route(
                "/feed",
                get(|| async {
                    (
                        [
                            (axum::http::header::CONTENT_TYPE, "application/rss+xml"),
                            (axum::http::header::LINK, "</hub>; rel=\"hub\""),
                        ],
                        rss("pushed"),
                    )
                }),
            )
            .route(
                "/hub",
                axum::routing::post(move |body: String| async move {
                    seen.lock().unwrap().push(body);
                    axum::http::StatusCode::ACCEPTED
                }),
            ),
    )
    .await;
    let store = store_at(&url).await;
    let user = add_user(&store, "wes").await;
    let feed = subscribe(&store, user, &publisher.url("/feed")).await;
    let child = spawn(
        tidings(dir.path(), &url)
            .arg("worker")
            .env("TIDINGS_ALLOW_PRIVATE_NETWORKS", "true")
            .env("TIDINGS_WEBSUB", "true")
            .env("TIDINGS_BASE_URL", "http://127.0.0.1:9/reader/")
            .stdout(Stdio::null())
            .stderr(Stdio::null()),
    );
    wait_until(
        Duration::from_secs(60),
        "the subscription request",
        || async { !requests.lock().unwrap().is_empty() },
    )
    .await;
    assert!(stop(child), "the worker stops cleanly");
    let body = requests.lock().unwrap()[0].clone();
    let form: HashMap<String, String> = url::form_urlencoded::parse(body.as_bytes())
        .into_owned()
        .collect();
    assert_eq!(form["hub.mode"], "subscribe");
    assert_eq!(form["hub.topic"], publisher.url("/feed"));
    assert!(
        form["hub.callback"].starts_with("http://127.0.0.1:9/reader/websub/"),
        "{form:?}"
    );
    let row = store.websub_subscription(feed).await.unwrap().unwrap();
    assert_eq!(row.pending_mode, Some(tidings_store::WebSubMode::Subscribe));
    store.close().await;
}

/// Related items (F44) through the binary: with `TIDINGS_EMBEDDINGS_BASE_URL` the worker asks
/// the stand-in `/v1/embeddings` on 127.0.0.1 for the items' vectors, with the model and key,
/// in batches of `TIDINGS_EMBEDDINGS_BATCH`; bad values stop the start.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_worker_embeds_items_through_the_configured_provider() {
    let dir = tempfile::tempdir().unwrap();
    let url = format!("sqlite://{}", dir.path().join("t.db").display());
    store_at(&url).await.close().await;
    for (variable, value) in [
        ("TIDINGS_EMBEDDINGS_BASE_URL", "ftp://embeddings.example/v1"),
        ("TIDINGS_EMBEDDINGS_BATCH", "0"),
        ("TIDINGS_EMBEDDINGS_CONCURRENCY", "17"),
    ] {
        let mut command = tidings(dir.path(), &url);
        command.arg("worker").env(variable, value);
        let output = run(&mut command).await;
        assert_eq!(output.status.code(), Some(2), "{variable}");
        assert!(
            String::from_utf8_lossy(&output.stderr).contains(variable),
            "{variable}"
        );
    }

    let requests: std::sync::Arc<std::sync::Mutex<Vec<(usize, String, String)>>> =
        Default::default();
    let seen = std::sync::Arc::clone(&requests);
    let provider = TestServer::start(axum::Router::new().route(
        "/v1/embeddings",
        axum::routing::post(
            move |headers: axum::http::HeaderMap, axum::Json(body): axum::Json<serde_json::Value>| {
                let seen = std::sync::Arc::clone(&seen);
                async move {
                    let inputs = body["input"].as_array().cloned().unwrap_or_default();
                    seen.lock().unwrap().push((
                        inputs.len(),
                        body["model"].as_str().unwrap_or_default().to_string(),
                        headers
                            .get("authorization")
                            .and_then(|v| v.to_str().ok())
                            .unwrap_or_default()
                            .to_string(),
                    ));
                    let data: Vec<serde_json::Value> = (0..inputs.len())
                        .map(|index| {
                            serde_json::json!({"index": index, "embedding": [1.0, index as f64, 0.5]})
                        })
                        .collect();
                    axum::Json(serde_json::json!({"data": data}))
                }
            },
        ),
    ))
    .await;
    let feeds = TestServer::start(feed_router()).await;
    let store = store_at(&url).await;
    let user = add_user(&store, "hana").await;
    let feed = subscribe(&store, user, &feeds.url("/feed/related")).await;
    let now = chrono::Utc::now().timestamp();
    let items: Vec<tidings_store::NewItem> = (0..3)
        .map(|n| tidings_store::NewItem {
            guid: Some(format!("story-{n}")),
            title: Some(format!("Story {n}")),
            published: Some(now - 60),
            ..Default::default()
        })
        .collect();
    store.upsert_items(feed, &items, now).await.unwrap();
    let child = spawn(
        tidings(dir.path(), &url)
            .arg("worker")
            .env("TIDINGS_EMBEDDINGS_BASE_URL", provider.url("/v1"))
            .env("TIDINGS_EMBEDDINGS_MODEL", "test-model")
            .env("TIDINGS_EMBEDDINGS_API_KEY", "sk-cli")
            .env("TIDINGS_EMBEDDINGS_BATCH", "2")
            .stdout(Stdio::null())
            .stderr(Stdio::null()),
    );
    wait_until(Duration::from_secs(60), "the vectors", || async {
        store
            .embedding_codes_after("openai:test-model", 0, 100)
            .await
            .unwrap()
            .len()
            == 3
    })
    .await;
    assert!(stop(child), "the worker stops cleanly");
    let requests = requests.lock().unwrap().clone();
    assert_eq!(
        requests.len(),
        2,
        "three items, two per request: {requests:?}"
    );
    assert!(requests.iter().all(|(inputs, model, key)| *inputs <= 2
        && model == "test-model"
        && key == "Bearer sk-cli"));
    store.close().await;
}

/// Summaries (F42): a remote provider without what it needs, or a value out of range, stops
/// the start with the variable's name (exit 2); the API key's value is never printed.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn bad_summary_settings_stop_the_start_with_their_name() {
    let dir = tempfile::tempdir().unwrap();
    let url = format!("sqlite://{}", dir.path().join("t.db").display());
    store_at(&url).await.close().await;
    for (settings, variable) in [
        (
            vec![("TIDINGS_SUMMARY_PROVIDER", "gpt")],
            "TIDINGS_SUMMARY_PROVIDER",
        ),
        (
            vec![
                ("TIDINGS_SUMMARY_PROVIDER", "openai"),
                ("TIDINGS_SUMMARY_MODEL", "llama3"),
            ],
            "TIDINGS_SUMMARY_BASE_URL",
        ),
        (
            vec![
                ("TIDINGS_SUMMARY_PROVIDER", "openai"),
                ("TIDINGS_SUMMARY_BASE_URL", "http://127.0.0.1:11434"),
            ],
            "TIDINGS_SUMMARY_MODEL",
        ),
        (
            vec![
                ("TIDINGS_SUMMARY_PROVIDER", "openai"),
                ("TIDINGS_SUMMARY_BASE_URL", "ftp://models.example"),
                ("TIDINGS_SUMMARY_MODEL", "m"),
            ],
            "TIDINGS_SUMMARY_BASE_URL",
        ),
        (
            vec![
                ("TIDINGS_SUMMARY_PROVIDER", "anthropic"),
                ("TIDINGS_SUMMARY_MODEL", "claude-x"),
            ],
            "TIDINGS_SUMMARY_API_KEY",
        ),
        (
            vec![
                ("TIDINGS_SUMMARY_PROVIDER", "anthropic"),
                ("TIDINGS_SUMMARY_API_KEY", "sk-secret-value"),
            ],
            "TIDINGS_SUMMARY_MODEL",
        ),
        (
            vec![("TIDINGS_SUMMARY_TARGET_CHARS", "50")],
            "TIDINGS_SUMMARY_TARGET_CHARS",
        ),
        (
            vec![("TIDINGS_SUMMARY_TARGET_CHARS", "5001")],
            "TIDINGS_SUMMARY_TARGET_CHARS",
        ),
        (
            vec![("TIDINGS_SUMMARY_DAILY_BUDGET", "-1")],
            "TIDINGS_SUMMARY_DAILY_BUDGET",
        ),
        (
            vec![("TIDINGS_SUMMARY_PARALLELISM", "65")],
            "TIDINGS_SUMMARY_PARALLELISM",
        ),
        (
            vec![("TIDINGS_SUMMARY_TIMEOUT_SECONDS", "0")],
            "TIDINGS_SUMMARY_TIMEOUT_SECONDS",
        ),
    ] {
        refused_with_its_name(dir.path(), &url, &settings, variable).await;
    }
}

/// Translation (issue 37): a provider without what it needs, or a value out of range, stops
/// the start with the variable's name (exit 2); the API key's value is never printed.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn bad_translation_settings_stop_the_start_with_their_name() {
    let dir = tempfile::tempdir().unwrap();
    let url = format!("sqlite://{}", dir.path().join("t.db").display());
    store_at(&url).await.close().await;
    for (settings, variable) in [
        (
            vec![("TIDINGS_TRANSLATE_PROVIDER", "google")],
            "TIDINGS_TRANSLATE_PROVIDER",
        ),
        (
            vec![("TIDINGS_TRANSLATE_PROVIDER", "libretranslate")],
            "TIDINGS_TRANSLATE_BASE_URL",
        ),
        (
            vec![("TIDINGS_TRANSLATE_PROVIDER", "deepl")],
            "TIDINGS_TRANSLATE_API_KEY",
        ),
        (
            vec![
                ("TIDINGS_TRANSLATE_PROVIDER", "anthropic"),
                ("TIDINGS_TRANSLATE_API_KEY", "sk-secret-value"),
            ],
            "TIDINGS_TRANSLATE_MODEL",
        ),
        (
            vec![
                ("TIDINGS_TRANSLATE_PROVIDER", "openai"),
                ("TIDINGS_TRANSLATE_BASE_URL", "ftp://models.example"),
                ("TIDINGS_TRANSLATE_MODEL", "m"),
            ],
            "TIDINGS_TRANSLATE_BASE_URL",
        ),
        (
            vec![("TIDINGS_TRANSLATE_USER_DAILY_BUDGET", "-1")],
            "TIDINGS_TRANSLATE_USER_DAILY_BUDGET",
        ),
        (
            vec![("TIDINGS_TRANSLATE_PARALLELISM", "65")],
            "TIDINGS_TRANSLATE_PARALLELISM",
        ),
        (
            vec![("TIDINGS_TRANSLATE_TIMEOUT_SECONDS", "0")],
            "TIDINGS_TRANSLATE_TIMEOUT_SECONDS",
        ),
    ] {
        refused_with_its_name(dir.path(), &url, &settings, variable).await;
    }
}

/// `tidings worker` with `settings` exits 2 naming `variable`, never printing the test key.
async fn refused_with_its_name(
    dir: &std::path::Path,
    url: &str,
    settings: &[(&str, &str)],
    variable: &str,
) {
    let mut command = tidings(dir, url);
    command.arg("worker").envs(settings.iter().copied());
    let output = run(&mut command).await;
    let stderr = String::from_utf8_lossy(&output.stderr);
    assert_eq!(output.status.code(), Some(2), "{settings:?}: {stderr}");
    assert!(stderr.contains(variable), "{settings:?}: {stderr}");
    assert!(!stderr.contains("sk-secret-value"), "{stderr}");
}
