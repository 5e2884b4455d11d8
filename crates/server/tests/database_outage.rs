//! PostgreSQL going away under a running server (issue 11): requests are answered 503 with a
//! clear JSON error within a second (not after the pool's old 10 s time-out, as a 500), the
//! readiness check says so, and when the database is back the next requests succeed without
//! restarting tidings.
//!
//! The test runs a PostgreSQL instance of its own (initdb into a temporary folder, pg_ctl on a
//! free port), since it stops and starts it; the shared test server is never touched.

use std::time::{Duration, Instant};

use crate::support::{TestApp, assert_error, call};
use reqwest::{Method, StatusCode};
use tidings_testkit::private_postgres::{PrivatePostgres, PrivatePostgresError};
use tidings_testkit::skip;

/// The most a request may take to be answered 503 while the database is down. The store gives
/// up on a connection after 750 ms (TIDINGS_DATABASE_ACQUIRE_TIMEOUT_MS); the rest is margin
/// for a loaded machine (with CI's load at 15 on two cores, `/readyz` once took 1.43 s). What
/// this guards against is the pool's own wait of 10 s, far above.
const PROMPT: Duration = Duration::from_millis(2500);

/// A private PostgreSQL instance, or `None` (with the skip reported) when the server programs
/// are missing.
fn private_postgres(test: &str) -> Option<PrivatePostgres> {
    match PrivatePostgres::start() {
        Ok(instance) => Some(instance),
        Err(PrivatePostgresError::NotInstalled) => {
            skip::skip(test, tidings_testkit::private_postgres::NO_SERVER_PROGRAMS);
            None
        }
        Err(error) => panic!("the private PostgreSQL did not start: {error}"),
    }
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn postgres_down_is_a_prompt_503_and_recovery_needs_no_restart() {
    let test = "database_outage::postgres_down_is_a_prompt_503_and_recovery_needs_no_restart";
    let Some(postgres) = private_postgres(test) else {
        return;
    };
    let db = tidings_testkit::TestDb::Postgres {
        admin_url: postgres.url(),
        schema: "public".into(),
    };
    let app = TestApp::start(&db).await;
    app.user("ann", false).await;
    let browser = app.signed_in("ann").await;
    let (status, _, body) = call(&browser, Method::GET, &app.url("/counts"), None).await;
    assert_eq!(status, StatusCode::OK, "{body}");

    // Test schemas commit without waiting for the disk, and the stop below is a crash: the
    // session is flushed first, as a commit that waited would have been.
    app.store
        .execute_raw("CHECKPOINT")
        .await
        .expect("checkpoint");
    postgres.down().unwrap();
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
    // Many at once, more than the pool has connections: each is still answered promptly
    // (connection attempts that pile up in the pool do not make it look merely busy).
    let started = Instant::now();
    let burst: Vec<_> = (0..30)
        .map(|_| {
            let (browser, url) = (browser.clone(), app.url("/counts"));
            tokio::spawn(async move {
                let (status, _, _) = call(&browser, Method::GET, &url, None).await;
                status
            })
        })
        .collect();
    for request in burst {
        assert_eq!(request.await.unwrap(), StatusCode::SERVICE_UNAVAILABLE);
    }
    let took = started.elapsed();
    eprintln!("30 requests at once with the database down: answered in {took:?}");
    assert!(took < PROMPT * 3, "30 requests at once took {took:?}");

    // Back: the very next requests succeed, on the same server process and store.
    postgres.up().unwrap();
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

/// Scrapes a worker's `/metrics` and returns the value of one sample, or `None` when absent.
async fn sample(metrics_url: &str, series: &str) -> Option<f64> {
    let text = reqwest::get(metrics_url).await.ok()?.text().await.ok()?;
    text.lines()
        .filter_map(|line| line.rsplit_once(' '))
        .find(|(name, _)| *name == series)
        .and_then(|(_, value)| value.parse().ok())
}

/// Polls `condition` every 100 ms for up to `limit`; whether it became true.
async fn eventually<F, Fut>(limit: Duration, mut condition: F) -> bool
where
    F: FnMut() -> Fut,
    Fut: std::future::Future<Output = bool>,
{
    let deadline = Instant::now() + limit;
    loop {
        if condition().await {
            return true;
        }
        if Instant::now() >= deadline {
            return false;
        }
        tokio::time::sleep(Duration::from_millis(100)).await;
    }
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_running_worker_resumes_fetching_after_postgres_comes_back() {
    let test = "database_outage::a_running_worker_resumes_fetching_after_postgres_comes_back";
    let Some(postgres) = private_postgres(test) else {
        return;
    };
    let db = tidings_testkit::TestDb::Postgres {
        admin_url: postgres.url(),
        schema: "public".into(),
    };
    let store = db.migrated().await;
    let feeds = crate::support::TestServer::start_empty().await;
    feeds.serve_rss("/before.xml", "Before", 2);
    feeds.serve_rss("/after.xml", "After", 3);
    let user = tidings_testkit::add_user(&store, "oona").await;
    let (_, before) = tidings_testkit::follow(&store, user, &feeds.url("/before.xml")).await;

    // A worker as `tidings worker` runs it, ticking every second, with its /metrics.
    let config = tidings_worker::WorkerConfig {
        poll_interval: Duration::from_secs(1),
        favicons: false,
        ..tidings_worker::WorkerConfig::default()
    };
    let fetcher = crate::support::test_fetcher_with(store.clone(), true, config);
    let fetches = std::sync::Arc::clone(fetcher.metrics());
    let listener = tokio::net::TcpListener::bind("127.0.0.1:0").await.unwrap();
    let metrics_url = format!("http://{}/metrics", listener.local_addr().unwrap());
    tokio::spawn(tidings_server::serve_router(
        listener,
        tidings_server::metrics::worker_router(
            store.clone(),
            fetches,
            tidings_server::metrics::MetricsAccess::default(),
        ),
        std::future::pending(),
    ));
    let (stop, stopped) = tokio::sync::oneshot::channel::<()>();
    let worker = tokio::spawn(async move {
        tidings_worker::Worker::new(fetcher)
            .run(async move {
                let _ = stopped.await;
            })
            .await;
    });
    assert!(
        eventually(Duration::from_secs(30), || async {
            store.count_items(before).await.unwrap_or(0) == 2
        })
        .await,
        "the first feed was not fetched"
    );

    // Down for longer than the worker's pause after a failed claim, so it fails several times.
    postgres.down().unwrap();
    let started = Instant::now();
    assert!(
        eventually(Duration::from_secs(10), || async {
            sample(&metrics_url, "tidings_database_up").await == Some(0.0)
        })
        .await,
        "the worker's /metrics did not report the database down"
    );
    eprintln!("database_up 0 seen after {:?}", started.elapsed());
    tokio::time::sleep(Duration::from_secs(4)).await;
    postgres.up().unwrap();

    // Back: a feed subscribed now is fetched by the same worker, without a restart.
    let (_, after) = tidings_testkit::follow(&store, user, &feeds.url("/after.xml")).await;
    let back = Instant::now();
    assert!(
        eventually(Duration::from_secs(30), || async {
            store.count_items(after).await.unwrap_or(0) == 3
        })
        .await,
        "the worker did not fetch after the outage"
    );
    eprintln!(
        "fetched again {:?} after the database came back",
        back.elapsed()
    );
    assert_eq!(sample(&metrics_url, "tidings_database_up").await, Some(1.0));
    // The worker counts a fetch's items after its last write, so the count may trail the
    // rows by a moment: waited for, not read once.
    let inserted = "tidings_items_upserted_total{change=\"inserted\"}";
    assert!(
        eventually(Duration::from_secs(10), || async {
            sample(&metrics_url, inserted).await == Some(5.0)
        })
        .await,
        "the worker's /metrics counted {:?} inserted items, not 5",
        sample(&metrics_url, inserted).await
    );
    let _ = stop.send(());
    worker.await.unwrap();
    store.close().await;
}
