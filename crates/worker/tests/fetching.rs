//! The worker's round against real HTTP servers on 127.0.0.1, on SQLite and PostgreSQL:
//! conditional GET, cache hints, error policy, limits, redirects, encodings, the SSRF guard,
//! favicons, raw bodies and metrics.

use tidings_testkit::on_both_engines;

use std::collections::HashMap;
use std::io::Write;
use std::net::IpAddr;
use std::sync::{Arc, OnceLock};
use std::time::Duration;

use crate::support::{TestServer, fetcher, fetcher_with, follow, local_client, rss, user};
use axum::Router;
use axum::http::{HeaderMap, StatusCode, header};
use axum::response::{IntoResponse, Redirect};
use axum::routing::get;
use tidings_fetch::{AddressPolicy, ClientConfig, GuardedClient, IpNetwork};
use tidings_store::FetchStatus;
use tidings_worker::{FeedReport, FetchResult, Fetcher};

async fn refresh(fetcher: &Fetcher, feed: i64) -> FeedReport {
    fetcher.refresh_feed(feed).await.expect("refresh")
}

fn delay(report: &FeedReport) -> i64 {
    report.next_check_at.expect("scheduled") - chrono::Utc::now().timestamp()
}

fn near(actual: i64, expected: i64) -> bool {
    (actual - expected).abs() <= 5
}

on_both_engines!(etag_and_last_modified_round_trip_to_a_304, |db| {
    let store = db.migrated().await;
    let alice = user(&store, "alice").await;
    let router = Router::new().route(
        "/feed",
        get(|headers: HeaderMap| async move {
            if headers.get(header::IF_NONE_MATCH).map(|v| v.as_bytes()) == Some(b"\"v1\"") {
                return StatusCode::NOT_MODIFIED.into_response();
            }
            (
                [
                    (header::ETAG, "\"v1\""),
                    (header::LAST_MODIFIED, "Mon, 02 Jun 2025 10:00:00 GMT"),
                    (header::CONTENT_TYPE, "application/rss+xml"),
                ],
                rss("a", 3),
            )
                .into_response()
        }),
    );
    let server = TestServer::start(router).await;
    let feed = follow(&store, alice, &server.url("/feed")).await;
    let fetcher = fetcher(&store);
    let first = refresh(&fetcher, feed).await;
    assert_eq!(first.result, FetchResult::Parsed, "{first}");
    assert_eq!(first.items_inserted, 3);
    assert!(first.recorded);
    let state = store.feed_fetch_state(feed).await.unwrap();
    assert_eq!(state.etag.as_deref(), Some("\"v1\""));
    assert_eq!(
        state.last_modified.as_deref(),
        Some("Mon, 02 Jun 2025 10:00:00 GMT")
    );
    // The stored items are sanitized: no script survives.
    for id in store.feed_item_ids(feed).await.unwrap() {
        let item = store.item(alice, id).await.unwrap();
        assert!(!item.content.unwrap_or_default().contains("script"));
    }
    let second = refresh(&fetcher, feed).await;
    assert_eq!(second.result, FetchResult::NotModified, "{second}");
    assert_eq!(second.http_status, Some(304));
    let sent = server.last_headers();
    assert_eq!(sent[header::IF_NONE_MATCH], "\"v1\"");
    assert_eq!(
        sent[header::IF_MODIFIED_SINCE],
        "Mon, 02 Jun 2025 10:00:00 GMT"
    );
    assert_eq!(store.count_items(feed).await.unwrap(), 3);
    assert_eq!(
        store.feed_fetch_state(feed).await.unwrap().etag.as_deref(),
        Some("\"v1\""),
        "a 304 keeps the validators"
    );
    let metrics = fetcher.metrics().snapshot();
    assert_eq!(metrics.result(FetchResult::Parsed), 1);
    assert_eq!(metrics.result(FetchResult::NotModified), 1);
    assert_eq!(metrics.statuses.get(&304), Some(&1));
    assert_eq!(metrics.items_inserted, 3);
    assert_eq!(metrics.latency_count, 2);
});

on_both_engines!(
    an_identical_body_skips_parsing_and_the_raw_body_is_kept,
    |db| {
        let store = db.migrated().await;
        let alice = user(&store, "alice").await;
        let body = rss("same", 2);
        let served = body.clone();
        let server = TestServer::start(Router::new().route(
            "/feed",
            get(move || {
                let served = served.clone();
                async move { served }
            }),
        ))
        .await;
        let feed = follow(&store, alice, &server.url("/feed")).await;
        let fetcher = fetcher(&store);
        assert_eq!(refresh(&fetcher, feed).await.result, FetchResult::Parsed);
        let stored = store.feed_body(feed).await.unwrap().expect("body kept");
        assert_eq!(stored.compression, tidings_worker::body::CODEC);
        assert!(stored.body.len() < body.len());
        assert_eq!(
            tidings_worker::body::decompress(&stored.compression, &stored.body).unwrap(),
            body.as_bytes()
        );
        let again = refresh(&fetcher, feed).await;
        assert_eq!(again.result, FetchResult::Unchanged, "{again}");
        assert_eq!(again.status, FetchStatus::Active);
    }
);

on_both_engines!(cache_control_and_retry_after_are_honored, |db| {
    let store = db.migrated().await;
    let alice = user(&store, "alice").await;
    let router = Router::new()
        .route(
            "/max-age",
            get(|| async {
                (
                    [(header::CACHE_CONTROL, "public, max-age=7200")],
                    rss("m", 1),
                )
            }),
        )
        .route(
            "/retry-after",
            get(|| async { ([(header::RETRY_AFTER, "10800")], rss("r", 1)) }),
        )
        .route(
            "/busy",
            get(|| async {
                (
                    StatusCode::SERVICE_UNAVAILABLE,
                    [(header::RETRY_AFTER, "18000")],
                )
            }),
        );
    let server = TestServer::start(router).await;
    let fetcher = fetcher(&store);
    let max_age = follow(&store, alice, &server.url("/max-age")).await;
    let report = refresh(&fetcher, max_age).await;
    assert!(near(delay(&report), 7200), "{report}");
    let retry = follow(&store, alice, &server.url("/retry-after")).await;
    let report = refresh(&fetcher, retry).await;
    assert!(near(delay(&report), 10800), "{report}");
    let busy = follow(&store, alice, &server.url("/busy")).await;
    let report = refresh(&fetcher, busy).await;
    assert_eq!(report.status, FetchStatus::Backoff);
    assert!(near(delay(&report), 18000), "{report}");
    // Not claimable before Retry-After has passed.
    let due = store
        .claim_due_feeds("probe", chrono::Utc::now().timestamp() + 3600, 10, 60)
        .await
        .unwrap();
    assert!(due.iter().all(|d| d.feed_id != busy));
});

on_both_engines!(gone_and_forbidden_feeds_stop, |db| {
    let store = db.migrated().await;
    let alice = user(&store, "alice").await;
    let router = Router::new()
        .route("/404", get(|| async { StatusCode::NOT_FOUND }))
        .route("/410", get(|| async { StatusCode::GONE }))
        .route("/401", get(|| async { StatusCode::UNAUTHORIZED }))
        .route("/403", get(|| async { StatusCode::FORBIDDEN }));
    let server = TestServer::start(router).await;
    let fetcher = fetcher(&store);
    for status in ["404", "410", "401", "403"] {
        let feed = follow(&store, alice, &server.url(&format!("/{status}"))).await;
        let report = refresh(&fetcher, feed).await;
        assert_eq!(report.result, FetchResult::HttpError);
        assert_eq!(report.status, FetchStatus::Stopped, "{report}");
        let state = store.feed_fetch_state(feed).await.unwrap();
        assert_eq!(state.status, FetchStatus::Stopped);
        assert_eq!(state.last_http_status, Some(status.parse().unwrap()));
        assert!(state.status_reason.unwrap().contains(status));
    }
    // A stopped feed is never due, however late it is.
    let due = store
        .claim_due_feeds("probe", i64::MAX / 2, 100, 60)
        .await
        .unwrap();
    assert!(due.is_empty(), "{due:?}");
    assert_eq!(
        fetcher.metrics().snapshot().failures.get("http_status"),
        Some(&4)
    );
});

on_both_engines!(
    server_errors_and_429_back_off_with_growing_intervals,
    |db| {
        let store = db.migrated().await;
        let alice = user(&store, "alice").await;
        let router = Router::new()
            .route("/500", get(|| async { StatusCode::INTERNAL_SERVER_ERROR }))
            .route("/429", get(|| async { StatusCode::TOO_MANY_REQUESTS }));
        let server = TestServer::start(router).await;
        let fetcher = fetcher(&store);
        for path in ["/500", "/429"] {
            let feed = follow(&store, alice, &server.url(path)).await;
            let mut delays = Vec::new();
            for _ in 0..5 {
                let report = refresh(&fetcher, feed).await;
                assert_eq!(report.status, FetchStatus::Backoff, "{report}");
                delays.push(delay(&report));
            }
            // 60-minute interval first, then 30 min x 2^(n-1): 1 h, 1 h, 2 h, 4 h, 8 h.
            let expected = [3600, 3600, 7200, 14400, 28800];
            for (got, want) in delays.iter().zip(expected) {
                assert!(near(*got, want), "{path}: {delays:?}");
            }
            let state = store.feed_fetch_state(feed).await.unwrap();
            assert_eq!(state.consecutive_failures, 5);
            assert!(state.last_error.is_some());
        }
    }
);

on_both_engines!(ten_parse_failures_in_a_row_stop_a_feed, |db| {
    let store = db.migrated().await;
    let alice = user(&store, "alice").await;
    let server = TestServer::start(
        Router::new().route("/feed", get(|| async { "this is not a feed at all" })),
    )
    .await;
    let feed = follow(&store, alice, &server.url("/feed")).await;
    let fetcher = fetcher(&store);
    for attempt in 1..=10 {
        let report = refresh(&fetcher, feed).await;
        assert_eq!(report.result, FetchResult::ParseFailed);
        let expected = if attempt < 10 {
            FetchStatus::Active
        } else {
            FetchStatus::Stopped
        };
        assert_eq!(report.status, expected, "attempt {attempt}: {report}");
    }
    let state = store.feed_fetch_state(feed).await.unwrap();
    assert_eq!(state.parse_failures, 10);
    assert!(state.status_reason.unwrap().contains("10 times"));
    assert_eq!(
        fetcher.metrics().snapshot().failures.get("parse"),
        Some(&10)
    );
});

on_both_engines!(
    a_20_mb_body_is_refused_at_5_mb_and_slow_servers_time_out,
    |db| {
        let store = db.migrated().await;
        let alice = user(&store, "alice").await;
        let router = Router::new()
            .route("/huge", get(|| async { vec![b'x'; 20 * 1024 * 1024] }))
            .route(
                "/slow",
                get(|| async {
                    tokio::time::sleep(Duration::from_secs(5)).await;
                    rss("slow", 1)
                }),
            );
        let server = TestServer::start(router).await;
        let fetcher = fetcher_with(&store, local_client(Duration::from_secs(1)), |_| {});
        let huge = follow(&store, alice, &server.url("/huge")).await;
        let report = refresh(&fetcher, huge).await;
        assert_eq!(report.result, FetchResult::Failed);
        assert!(
            report.error.as_deref().unwrap().contains("5 MB"),
            "{report}"
        );
        assert_eq!(report.status, FetchStatus::Backoff);
        let slow = follow(&store, alice, &server.url("/slow")).await;
        let report = refresh(&fetcher, slow).await;
        assert!(
            report.error.as_deref().unwrap().contains("timed out"),
            "{report}"
        );
        assert_eq!(report.status, FetchStatus::Backoff);
        let failures = fetcher.metrics().snapshot().failures;
        assert_eq!(failures.get("body_too_large"), Some(&1));
        assert_eq!(failures.get("timeout"), Some(&1));
    }
);

on_both_engines!(redirect_chains_loops_and_permanent_moves, |db| {
    let store = db.migrated().await;
    let (alice, bob) = (user(&store, "alice").await, user(&store, "bob").await);
    let router = Router::new()
        .route("/a", get(|| async { Redirect::temporary("/b") }))
        .route("/b", get(|| async { Redirect::to("/c") }))
        .route("/c", get(|| async { rss("chain", 1) }))
        .route("/loop1", get(|| async { Redirect::temporary("/loop2") }))
        .route("/loop2", get(|| async { Redirect::temporary("/loop1") }))
        .route("/moved", get(|| async { Redirect::permanent("/new-home") }))
        .route("/new-home", get(|| async { rss("home", 2) }))
        .route(
            "/merge-old",
            get(|| async { Redirect::permanent("/merge-new") }),
        )
        .route("/merge-new", get(|| async { rss("merge", 2) }));
    let server = TestServer::start(router).await;
    let fetcher = fetcher(&store);

    let chain = follow(&store, alice, &server.url("/a")).await;
    let report = refresh(&fetcher, chain).await;
    assert_eq!(report.result, FetchResult::Parsed, "{report}");
    assert_eq!(report.moved_to, None, "temporary redirects keep the URL");
    assert_eq!(
        store.feed_fetch_state(chain).await.unwrap().url,
        server.url("/a")
    );

    let looping = follow(&store, alice, &server.url("/loop1")).await;
    let report = refresh(&fetcher, looping).await;
    assert!(
        report.error.as_deref().unwrap().contains("redirects"),
        "{report}"
    );

    let moved = follow(&store, alice, &server.url("/moved")).await;
    let report = refresh(&fetcher, moved).await;
    assert_eq!(
        report.moved_to.as_deref(),
        Some(server.url("/new-home").as_str())
    );
    assert_eq!(
        store.feed_fetch_state(moved).await.unwrap().url,
        server.url("/new-home")
    );

    // Bob already follows the redirect's target; Alice's old feed merges into it.
    let target = follow(&store, bob, &server.url("/merge-new")).await;
    assert_eq!(refresh(&fetcher, target).await.items_inserted, 2);
    let old = follow(&store, alice, &server.url("/merge-old")).await;
    let report = refresh(&fetcher, old).await;
    assert_eq!(report.merged_into, Some(target), "{report}");
    assert!(store.feed_fetch_state(old).await.is_err());
    let state = store.feed_fetch_state(target).await.unwrap();
    assert_eq!(state.subscribers, 2);
    assert_eq!(store.count_items(target).await.unwrap(), 2, "no duplicates");
    let alice_feeds: Vec<i64> = store
        .list_subscriptions(alice)
        .await
        .unwrap()
        .iter()
        .map(|s| s.feed_id)
        .collect();
    assert!(alice_feeds.contains(&target));
    let metrics = fetcher.metrics().snapshot();
    assert_eq!((metrics.feeds_renamed, metrics.feeds_merged), (1, 1));
});

fn gzip(bytes: &[u8]) -> Vec<u8> {
    let mut encoder = flate2::write::GzEncoder::new(Vec::new(), flate2::Compression::default());
    encoder.write_all(bytes).unwrap();
    encoder.finish().unwrap()
}

fn brotli(bytes: &[u8]) -> Vec<u8> {
    let mut out = Vec::new();
    {
        let mut writer = brotli::CompressorWriter::new(&mut out, 4096, 5, 22);
        writer.write_all(bytes).unwrap();
    }
    out
}

on_both_engines!(gzip_brotli_and_shift_jis_feeds_end_up_in_the_store, |db| {
    let store = db.migrated().await;
    let alice = user(&store, "alice").await;
    let japanese = "<?xml version=\"1.0\" encoding=\"Shift_JIS\"?><rss version=\"2.0\"><channel>\
        <title>日本語のフィード</title><link>https://jp.example/</link>\
        <item><title>こんにちは世界</title><guid>jp-1</guid><description>本文です</description></item>\
        </channel></rss>";
    let (sjis, _, _) = encoding_rs::SHIFT_JIS.encode(japanese);
    let sjis = sjis.into_owned();
    let router = Router::new()
        .route(
            "/gzip",
            get(|| async {
                (
                    [(header::CONTENT_ENCODING, "gzip")],
                    gzip(rss("gz", 2).as_bytes()),
                )
            }),
        )
        .route(
            "/br",
            get(|| async {
                (
                    [(header::CONTENT_ENCODING, "br")],
                    brotli(rss("br", 2).as_bytes()),
                )
            }),
        )
        .route(
            "/sjis",
            get(move || {
                let sjis = sjis.clone();
                async move { ([(header::CONTENT_TYPE, "application/rss+xml")], sjis) }
            }),
        );
    let server = TestServer::start(router).await;
    let fetcher = fetcher(&store);
    for path in ["/gzip", "/br"] {
        let feed = follow(&store, alice, &server.url(path)).await;
        let report = refresh(&fetcher, feed).await;
        assert_eq!(report.items_inserted, 2, "{report}");
    }
    let feed = follow(&store, alice, &server.url("/sjis")).await;
    let report = refresh(&fetcher, feed).await;
    assert_eq!(report.items_inserted, 1, "{report}");
    let id = store.feed_item_ids(feed).await.unwrap()[0];
    let item = store.item(alice, id).await.unwrap();
    assert_eq!(item.title.as_deref(), Some("こんにちは世界"));
    assert!(item.content.unwrap().contains("本文です"));
    assert!(
        item.is_date_estimated,
        "an undated item gets the fetch time"
    );
    let subscription = &store.list_subscriptions(alice).await.unwrap();
    assert!(
        subscription
            .iter()
            .any(|s| s.feed_title.as_deref() == Some("日本語のフィード"))
    );
});

/// A client with private networks refused, which may reach 127.0.0.2 only (standing in for a
/// public server) and resolves `public.example` to 127.0.0.1.
fn guarded_client() -> GuardedClient {
    GuardedClient::new(ClientConfig {
        timeout: Duration::from_secs(5),
        address_policy: AddressPolicy {
            allow_private_networks: false,
            allowed_networks: vec![IpNetwork::new("127.0.0.2".parse().unwrap(), 32).unwrap()],
            ..AddressPolicy::default()
        },
        dns_overrides: HashMap::from([(
            "public.example".to_owned(),
            vec!["127.0.0.1".parse::<IpAddr>().unwrap()],
        )]),
        ..ClientConfig::default()
    })
    .unwrap()
}

on_both_engines!(private_addresses_are_refused_and_see_no_request, |db| {
    let store = db.migrated().await;
    let alice = user(&store, "alice").await;
    let local =
        TestServer::start(Router::new().route("/feed", get(|| async { rss("x", 1) }))).await;
    let target = local.url("/feed");
    let public = TestServer::start_on(
        "127.0.0.2",
        Router::new().route(
            "/jump",
            get(move || {
                let target = target.clone();
                async move { Redirect::temporary(&target) }
            }),
        ),
    )
    .await;
    let fetcher = fetcher_with(&store, guarded_client(), |_| {});
    let urls = [
        local.url("/feed"),
        format!("http://public.example:{}/feed", local.addr.port()),
        public.url("/jump"),
    ];
    for url in &urls {
        let feed = follow(&store, alice, url).await;
        let report = refresh(&fetcher, feed).await;
        assert_eq!(report.result, FetchResult::Failed, "{report}");
        assert!(
            report.error.as_deref().unwrap().contains("refused"),
            "{report}"
        );
        assert_eq!(
            report.status,
            FetchStatus::Stopped,
            "a refusal needs a person"
        );
    }
    assert_eq!(public.hits("/jump"), 1, "the allowed server was asked");
    assert_eq!(local.total_hits(), 0, "the loopback server saw no request");
    assert_eq!(
        fetcher.metrics().snapshot().failures.get("refused"),
        Some(&3)
    );
});

on_both_engines!(the_feeds_own_icon_comes_first, |db| {
    let store = db.migrated().await;
    let alice = user(&store, "alice").await;
    let png: &'static [u8] = b"\x89PNG\r\n\x1a\nrest-of-image";
    // The feed names its own server's logo, so its body needs the server's address.
    let base: Arc<OnceLock<String>> = Arc::default();
    let base_in_feed = Arc::clone(&base);
    let router = Router::new()
        .route(
            "/feed",
            get(move || {
                let base = base_in_feed.get().cloned().unwrap_or_default();
                async move {
                    format!(
                        "<rss version=\"2.0\"><channel><title>I</title><link>{base}/</link>\
                         <image><url>{base}/logo.png</url></image><item><guid>1</guid></item>\
                         </channel></rss>"
                    )
                }
            }),
        )
        .route(
            "/logo.png",
            get(move || async move { ([(header::CONTENT_TYPE, "image/png")], png) }),
        );
    let server = TestServer::start(router).await;
    base.set(server.url("")).unwrap();
    let fetcher = fetcher_with(&store, local_client(Duration::from_secs(5)), |config| {
        config.favicons = true;
    });
    let feed = follow(&store, alice, &server.url("/feed")).await;
    refresh(&fetcher, feed).await;
    fetcher.wait_for_favicons().await;
    let favicon = store.favicon(feed).await.unwrap().expect("attempted");
    assert_eq!(favicon.mime_type.as_deref(), Some("image/png"));
    assert_eq!(favicon.data.as_deref(), Some(png));
    assert_eq!(favicon.source_url, Some(server.url("/logo.png")));
    assert_eq!(server.hits("/"), 0, "the site page was not needed");
});

on_both_engines!(an_icon_link_on_the_site_page_is_used, |db| {
    let store = db.migrated().await;
    let alice = user(&store, "alice").await;
    let png: &'static [u8] = b"\x89PNG\r\n\x1a\nrest-of-image";
    let router = Router::new()
        .route(
            "/feed",
            get(|| async {
                "<rss version=\"2.0\"><channel><title>P</title><item><guid>1</guid></item></channel></rss>"
            }),
        )
        .route(
            "/",
            get(|| async {
                "<html><head><link rel=\"shortcut icon\" href=\"/i/site.png\"></head></html>"
            }),
        )
        .route(
            "/i/site.png",
            get(move || async move { ([(header::CONTENT_TYPE, "text/html")], png) }),
        )
        .route(
            "/favicon.ico",
            get(move || async move { ([(header::CONTENT_TYPE, "image/x-icon")], png) }),
        );
    let server = TestServer::start(router).await;
    let fetcher = fetcher_with(&store, local_client(Duration::from_secs(5)), |config| {
        config.favicons = true;
    });
    let feed = follow(&store, alice, &server.url("/feed")).await;
    refresh(&fetcher, feed).await;
    fetcher.wait_for_favicons().await;
    // The linked icon is served as text/html: refused; /favicon.ico is the fallback.
    let favicon = store.favicon(feed).await.unwrap().expect("attempted");
    assert_eq!(favicon.mime_type.as_deref(), Some("image/x-icon"));
    assert_eq!(server.hits("/i/site.png"), 1);
    assert_eq!(server.hits("/favicon.ico"), 1);
    assert_eq!(fetcher.metrics().snapshot().favicons_found, 1);
    // Fresh for a month: the next fetch asks for the feed only.
    let before = server.total_hits();
    refresh(&fetcher, feed).await;
    assert_eq!(server.total_hits(), before + 1);
});

/// Runs `workers` until one of them has finished a run of the periodic job `job`, then stops
/// them.
async fn run_until_job_done(
    store: &tidings_store::Store,
    workers: &[tidings_worker::Worker],
    job: &str,
) {
    let (stop, stopped) = tokio::sync::watch::channel(false);
    let mut running = Vec::new();
    for worker in workers {
        let worker = worker.clone();
        let mut stopped = stopped.clone();
        running.push(tokio::spawn(async move {
            worker
                .run(async move {
                    let _ = stopped.wait_for(|s| *s).await;
                })
                .await;
        }));
    }
    crate::support::wait_until(Duration::from_secs(30), job, || async {
        store
            .job_run(job)
            .await
            .unwrap()
            .is_some_and(|run| run.finished_at.is_some())
    })
    .await;
    stop.send(true).unwrap();
    for task in running {
        task.await.unwrap();
    }
}

/// Alice following a feed served by a test server, with an item titled `title` published
/// `days` days ago stored straight into it; answers alice and the server (kept alive).
async fn alice_with_an_item(
    store: &tidings_store::Store,
    title: &str,
    days: i64,
) -> (i64, TestServer) {
    let alice = user(store, "alice").await;
    let server =
        TestServer::start(Router::new().route("/feed", get(|| async { rss("r", 1) }))).await;
    let feed = follow(store, alice, &server.url("/feed")).await;
    let published = chrono::Utc::now().timestamp() - days * 86_400;
    store
        .execute_raw(&format!(
            "INSERT INTO items (feed_id, identity_key, title, published_at, fetched_at, changed_at, content_hash)
             VALUES ({feed}, '{title}', '{title}', {published}, {published}, {published}, 'h')"
        ))
        .await
        .unwrap();
    (alice, server)
}

on_both_engines!(retention_runs_once_a_day_across_workers, |db| {
    let store = db.migrated().await;
    let (_alice, _server) = alice_with_an_item(&store, "ancient", 400).await;
    // Two workers start together; exactly one runs the job. (They keep no minimum of items
    // per feed, so the lone ancient item is due.)
    let workers: Vec<tidings_worker::Worker> = (0..2)
        .map(|_| {
            tidings_worker::Worker::new(fetcher_with(
                &store,
                local_client(Duration::from_secs(5)),
                |config| config.retention_keep_per_feed = 0,
            ))
        })
        .collect();
    run_until_job_done(&store, &workers, tidings_worker::RETENTION_JOB).await;
    let deleted: u64 = workers
        .iter()
        .map(|w| w.fetcher().metrics().snapshot().retention_items_deleted)
        .sum();
    assert_eq!(deleted, 1);
    let run = store
        .job_run(tidings_worker::RETENTION_JOB)
        .await
        .unwrap()
        .unwrap();
    assert!(run.outcome.unwrap().contains("deleted 1 items"));
});

on_both_engines!(rules_with_an_age_run_every_hour_in_the_worker, |db| {
    let store = db.migrated().await;
    // An item two days old, and a rule "older than one day: read" saved three days ago, when
    // the item was not yet a day old: the item has passed the rule's age since.
    let (alice, _server) = alice_with_an_item(&store, "Aged", 2).await;
    let now = chrono::Utc::now().timestamp();
    let rule = tidings_store::RuleInput {
        name: "expire".into(),
        enabled: true,
        position: None,
        spec: tidings_store::RuleSpec {
            older_than_days: Some(1),
            actions: vec!["read".into()],
            ..tidings_store::RuleSpec::default()
        },
    };
    let saved = store.create_rule(alice, &rule).await.unwrap();
    store
        .execute_raw(&format!(
            "UPDATE rules SET updated_at = {} WHERE id = {}",
            now - 3 * 86_400,
            saved.id
        ))
        .await
        .unwrap();
    let worker = tidings_worker::Worker::new(fetcher_with(
        &store,
        local_client(Duration::from_secs(5)),
        |config| config.poll_interval = Duration::from_millis(200),
    ));
    run_until_job_done(&store, &[worker], tidings_worker::AGE_RULES_JOB).await;
    let run = store
        .job_run(tidings_worker::AGE_RULES_JOB)
        .await
        .unwrap()
        .unwrap();
    assert_eq!(
        run.outcome.as_deref(),
        Some("rules with an age: 1, items changed: 1")
    );
    let unread = tidings_store::ItemQuery {
        filter: tidings_store::ItemFilter::Unread,
        limit: 50,
        ..tidings_store::ItemQuery::default()
    };
    let titles: Vec<Option<String>> = store
        .list_items(alice, &unread)
        .await
        .unwrap()
        .items
        .into_iter()
        .map(|i| i.title)
        .collect();
    assert!(!titles.contains(&Some("Aged".into())), "{titles:?}");
});

on_both_engines!(control_characters_in_a_feed_are_removed_not_fatal, |db| {
    let store = db.migrated().await;
    let alice = user(&store, "alice").await;
    // A NUL as a character reference and raw, with other C0 controls, in every kind of text:
    // PostgreSQL refuses a NUL in a text column, so before they were removed the whole batch
    // failed there while the feed still showed as working.
    let body = "<?xml version=\"1.0\"?><rss version=\"2.0\"><channel>\
        <title>Feed&#0; with\u{1}NUL</title><link>https://example.com/</link>\
        <description>d&#0;</description>\
        <item><title>First&#0;one</title><guid>one&#0;</guid>\
        <link>https://example.com/1</link><author>me\u{0}@example.com</author>\
        <description>&lt;p&gt;body&#0;\u{0}\u{1b}[31m\ntext&lt;/p&gt;</description>\
        <category>c\u{0}at</category></item>\
        <item><title>Second\u{0}</title><guid>two</guid></item>\
        </channel></rss>";
    let router = Router::new().route(
        "/feed",
        get(move || async move { ([(header::CONTENT_TYPE, "application/rss+xml")], body) }),
    );
    let server = TestServer::start(router).await;
    let feed = follow(&store, alice, &server.url("/feed")).await;
    let report = refresh(&fetcher(&store), feed).await;
    assert_eq!(report.result, FetchResult::Parsed, "{report}");
    assert_eq!(report.items_inserted, 2, "{report}");
    let state = store.feed_fetch_state(feed).await.unwrap();
    assert_eq!(state.status, FetchStatus::Active);
    let mut titles = Vec::new();
    for id in store.feed_item_ids(feed).await.unwrap() {
        let item = store.item(alice, id).await.unwrap();
        for text in [&item.title, &item.guid, &item.author, &item.content]
            .into_iter()
            .flatten()
            .chain(item.categories.iter())
        {
            assert!(
                !text.chars().any(tidings_store::is_stripped_char),
                "{text:?}"
            );
        }
        titles.push(item.title.unwrap_or_default());
    }
    titles.sort();
    // The parser reads `&#0;` as U+FFFD, as HTML does; a raw NUL is removed.
    assert_eq!(titles, ["First\u{fffd}one", "Second"]);
    let subscriptions = store.list_subscriptions(alice).await.unwrap();
    let title = subscriptions[0].feed_title.clone().unwrap_or_default();
    assert!(
        !title.contains('\u{0}') && title.starts_with("Feed"),
        "{title:?}"
    );
});

/// An RSS document of `items` items, the newest dated `newest` and each a week older than
/// the one before, plus the extra items given first.
fn dated_rss(extra: &[&str], items: i64, newest: chrono::DateTime<chrono::Utc>) -> String {
    let mut out = String::from(
        "<?xml version=\"1.0\"?><rss version=\"2.0\"><channel><title>Quiet</title>\
         <link>https://quiet.example/</link>",
    );
    for guid in extra {
        out.push_str(&format!(
            "<item><title>{guid}</title><guid>{guid}</guid><pubDate>{}</pubDate></item>",
            chrono::Utc::now().to_rfc2822()
        ));
    }
    for n in 0..items {
        let date = (newest - chrono::Duration::weeks(n)).to_rfc2822();
        out.push_str(&format!(
            "<item><title>Post {n}</title><guid>post-{n}</guid><pubDate>{date}</pubDate></item>"
        ));
    }
    out.push_str("</channel></rss>");
    out
}

on_both_engines!(
    a_quiet_feeds_old_items_are_shown_and_stay_deleted_after_retention,
    |db| {
        let store = db.migrated().await;
        let alice = user(&store, "alice").await;
        // A quiet blog: 60 posts, the newest two years old. The body changes when `extra` does.
        let two_years_ago = chrono::Utc::now() - chrono::Duration::days(730);
        let extra: Arc<std::sync::Mutex<Vec<&'static str>>> = Arc::default();
        let served = Arc::clone(&extra);
        let router = Router::new().route(
            "/feed",
            get(move || {
                let served = Arc::clone(&served);
                async move {
                    let extra = served.lock().unwrap().clone();
                    (
                        [(header::CONTENT_TYPE, "application/rss+xml")],
                        dated_rss(&extra, 60, two_years_ago),
                    )
                }
            }),
        );
        let server = TestServer::start(router).await;
        let feed = follow(&store, alice, &server.url("/feed")).await;
        let fetcher = fetcher(&store);
        let first = refresh(&fetcher, feed).await;
        assert_eq!(first.result, FetchResult::Parsed, "{first}");
        assert_eq!(first.items_inserted, 60, "{first}");
        let page = store
            .list_items(
                alice,
                &tidings_store::ItemQuery {
                    feed_id: Some(feed),
                    limit: 100,
                    ..Default::default()
                },
            )
            .await
            .unwrap();
        assert_eq!(page.items.len(), 60, "the quiet feed shows its items");

        // Half a year later (as far as tidings knows), retention keeps the newest 50.
        let now = chrono::Utc::now().timestamp();
        store
            .execute_raw(&format!(
                "UPDATE items SET fetched_at = {} WHERE feed_id = {feed}",
                now - 200 * 86_400
            ))
            .await
            .unwrap();
        let report = tidings_worker::run_retention(&store, now, fetcher.config())
            .await
            .unwrap();
        assert_eq!(report.items_deleted, 10);
        assert_eq!(store.count_items(feed).await.unwrap(), 50);

        // The feed changes and still lists the deleted posts: they do not come back.
        extra.lock().unwrap().push("fresh");
        let again = refresh(&fetcher, feed).await;
        assert_eq!(again.result, FetchResult::Parsed, "{again}");
        assert_eq!(
            (again.items_inserted, again.items_suppressed),
            (1, 10),
            "{again}"
        );
        assert_eq!(store.count_items(feed).await.unwrap(), 51);
        let counts = store.unread_counts(alice).await.unwrap();
        assert_eq!(counts.subscriptions[0].unread, 51);
        assert_eq!(store.count_tombstones(feed).await.unwrap(), 10);
    }
);
