//! `/metrics` end to end (F62), on SQLite and PostgreSQL: a real server, a real local feed
//! server, and the series moving with what happens (a fetch, a 404 feed, API calls, a 429,
//! a due feed); and the access rule (allowed networks or the bearer token, 403 otherwise).

use tidings_testkit::on_both_engines;

use std::collections::HashMap;

use crate::support::{TestApp, TestServer, call};
use reqwest::{Client, Method, StatusCode};
use serde_json::json;

/// Scrapes `/metrics` and returns every sample as `name{labels}` → value.
async fn scrape(app: &TestApp) -> HashMap<String, f64> {
    let response = Client::new()
        .get(format!("{}/metrics", app.base))
        .send()
        .await
        .unwrap();
    assert_eq!(response.status(), StatusCode::OK);
    let content_type = response.headers()["content-type"]
        .to_str()
        .unwrap()
        .to_owned();
    assert!(
        content_type.starts_with("text/plain; version=0.0.4"),
        "{content_type}"
    );
    let text = response.text().await.unwrap();
    // The encoder ends every HELP with a period of its own.
    assert!(
        !text.contains("..\n"),
        "a HELP text ends with two periods:\n{text}"
    );
    samples(&text)
}

fn value(samples: &HashMap<String, f64>, series: &str) -> f64 {
    *samples.get(series).unwrap_or_else(|| {
        let mut known: Vec<_> = samples.keys().collect();
        known.sort();
        panic!("{series} missing; the series are {known:#?}")
    })
}

on_both_engines!(series_move_with_fetches_requests_and_limits, |db| {
    let app = TestApp::start(db).await;
    let feeds = TestServer::start_empty().await;
    feeds.serve_rss("/feed.xml", "Metered", 3);
    feeds.serve_rss("/other.xml", "Other", 2);
    app.user("mia", false).await;
    let mia = app.signed_in("mia").await;

    let before = scrape(&app).await;
    assert_eq!(
        value(&before, "tidings_fetches_total{result=\"parsed\"}"),
        0.0
    );
    assert_eq!(value(&before, "tidings_fetch_queue_depth"), 0.0);
    assert_eq!(value(&before, "tidings_database_up"), 1.0);

    // A subscription fetches the feed once: 200, three items inserted.
    let (status, _, body) = call(
        &mia,
        Method::POST,
        &app.url("/subscriptions"),
        Some(json!({"url": feeds.url("/feed.xml")})),
    )
    .await;
    assert_eq!(status, StatusCode::CREATED, "{body}");
    let id = body["subscription"]["id"].as_i64().unwrap();
    let (status, _, body) = call(
        &mia,
        Method::POST,
        &app.url("/subscriptions"),
        Some(json!({"url": feeds.url("/other.xml")})),
    )
    .await;
    assert_eq!(status, StatusCode::CREATED, "{body}");

    // The feed goes away: a refresh gets a 404; a second refresh within the minute is a 429.
    feeds.serve("/feed.xml", 404, "text/plain", "not here");
    let refresh = app.url(&format!("/subscriptions/{id}/refresh"));
    let (status, _, body) = call(&mia, Method::POST, &refresh, None).await;
    assert_eq!(status, StatusCode::OK, "{body}");
    let fetch_status = body["subscription"]["status"].as_str().unwrap().to_owned();
    let (status, _, body) = call(&mia, Method::POST, &refresh, None).await;
    assert_eq!(status, StatusCode::TOO_MANY_REQUESTS, "{body}");

    // The other feed is due now and nobody claimed it: the queue has one feed.
    app.store
        .execute_raw(&format!(
            "UPDATE feed_fetch_state SET next_check_at = 0 WHERE feed_id = \
             (SELECT id FROM feeds WHERE url = '{}')",
            feeds.url("/other.xml")
        ))
        .await
        .unwrap();

    let after = scrape(&app).await;
    for (series, expected) in [
        ("tidings_fetches_total{result=\"parsed\"}", 2.0),
        ("tidings_fetches_total{result=\"http_error\"}", 1.0),
        ("tidings_fetch_http_status_total{status=\"200\"}", 2.0),
        ("tidings_fetch_http_status_total{status=\"404\"}", 1.0),
        ("tidings_fetch_failures_total{reason=\"http_status\"}", 1.0),
        ("tidings_fetch_duration_seconds_count", 3.0),
        ("tidings_fetch_duration_seconds_bucket{le=\"+Inf\"}", 3.0),
        ("tidings_items_upserted_total{change=\"inserted\"}", 5.0),
        ("tidings_fetch_parse_failures_total", 0.0),
    ] {
        assert_eq!(value(&after, series), expected, "{series}");
    }
    assert_eq!(
        value(
            &after,
            &format!("tidings_feeds{{status=\"{fetch_status}\"}}")
        ),
        1.0,
        "the refreshed feed is {fetch_status}"
    );
    assert_eq!(value(&after, "tidings_fetch_queue_depth"), 1.0);
    assert_eq!(
        value(&after, "tidings_rate_limited_total{scope=\"feed-refresh\"}"),
        1.0
    );

    // Requests are counted by route template, never by the path with its id.
    let refreshes = |status: u16| {
        format!(
            "tidings_http_request_duration_seconds_count{{route=\"/api/v1/subscriptions/{{id}}/refresh\",method=\"POST\",status=\"{status}\"}}"
        )
    };
    assert_eq!(value(&after, &refreshes(200)), 1.0);
    assert_eq!(value(&after, &refreshes(429)), 1.0);
    assert_eq!(
        value(
            &after,
            "tidings_http_request_duration_seconds_count{route=\"/api/v1/subscriptions\",method=\"POST\",status=\"201\"}"
        ),
        2.0
    );
    assert!(
        !after
            .keys()
            .any(|series| series.contains(&format!("/subscriptions/{id}/"))),
        "a raw path became a label"
    );
    // An unknown path is one series, whatever the path.
    let _ = mia
        .get(format!("{}/api/v1/no/such/{id}", app.base))
        .send()
        .await
        .unwrap();
    let later = scrape(&app).await;
    assert_eq!(
        value(
            &later,
            "tidings_http_request_duration_seconds_count{route=\"unmatched\",method=\"GET\",status=\"404\"}"
        ),
        1.0
    );
    // Pools: the scrape itself holds no connection once answered; the maximum is configured.
    let pool_max: f64 = later
        .iter()
        .filter(|(series, _)| series.starts_with("tidings_db_pool_max_connections{"))
        .map(|(_, value)| *value)
        .sum();
    assert!(pool_max >= 1.0, "{later:?}");
    assert!(
        later
            .keys()
            .any(|series| series.starts_with("tidings_db_pool_connections{")
                && series.contains("state=\"idle\"")),
        "{later:?}"
    );
});

on_both_engines!(only_allowed_networks_or_the_token_read_metrics, |db| {
    const TOKEN: &str = "metrics-token-0123456789";
    // Loopback is not among the allowed networks here, so only the token lets the test in.
    let app = TestApp::start_with(db, true, |config| {
        config.metrics_access = tidings_server::metrics::MetricsAccess::new(
            vec!["10.0.0.0/8".parse().unwrap()],
            Some(TOKEN),
        );
    })
    .await;
    let client = Client::new();
    let metrics = format!("{}/metrics", app.base);
    let status =
        |request: reqwest::RequestBuilder| async move { request.send().await.unwrap().status() };
    assert_eq!(status(client.get(&metrics)).await, StatusCode::FORBIDDEN);
    assert_eq!(
        status(
            client
                .get(&metrics)
                .bearer_auth("metrics-token-wrong-9876543")
        )
        .await,
        StatusCode::FORBIDDEN
    );
    assert_eq!(
        status(client.get(&metrics).header("authorization", TOKEN)).await,
        StatusCode::FORBIDDEN,
        "the token without Bearer"
    );
    let response = client
        .get(&metrics)
        .bearer_auth(TOKEN)
        .send()
        .await
        .unwrap();
    assert_eq!(response.status(), StatusCode::OK);
    assert!(
        response
            .text()
            .await
            .unwrap()
            .contains("tidings_fetches_total")
    );

    // The default: loopback only, and no token works because none is set.
    let open = TestApp::start(db).await;
    let metrics = format!("{}/metrics", open.base);
    assert_eq!(status(client.get(&metrics)).await, StatusCode::OK);
    let closed = TestApp::start_with(db, true, |config| {
        config.metrics_access =
            tidings_server::metrics::MetricsAccess::new(vec!["10.0.0.0/8".parse().unwrap()], None);
    })
    .await;
    let metrics = format!("{}/metrics", closed.base);
    assert_eq!(
        status(client.get(&metrics).bearer_auth("anything-at-all-here")).await,
        StatusCode::FORBIDDEN
    );
});

/// Serves [`tidings_server::metrics::worker_router`] on 127.0.0.1 as `tidings worker` does;
/// returns its `/metrics` URL.
async fn serve_worker_metrics(
    store: tidings_store::Store,
    fetches: std::sync::Arc<tidings_worker::WorkerMetrics>,
    access: tidings_server::metrics::MetricsAccess,
) -> String {
    let listener = tokio::net::TcpListener::bind("127.0.0.1:0").await.unwrap();
    let address = listener.local_addr().unwrap();
    let app = tidings_server::metrics::worker_router(store, fetches, access);
    tokio::spawn(tidings_server::serve_router(
        listener,
        app,
        std::future::pending(),
    ));
    format!("http://{address}/metrics")
}

/// Every sample of a scrape's text as `name{labels}` → value.
fn samples(text: &str) -> HashMap<String, f64> {
    text.lines()
        .filter(|line| !line.starts_with('#') && !line.is_empty())
        .map(|line| {
            let (series, value) = line.rsplit_once(' ').unwrap();
            (series.to_owned(), value.parse::<f64>().unwrap())
        })
        .collect()
}

on_both_engines!(a_worker_process_serves_its_own_fetch_series, |db| {
    let store = db.migrated().await;
    let feeds = TestServer::start_empty().await;
    feeds.serve_rss("/one.xml", "One", 4);
    feeds.serve("/gone.xml", 404, "text/plain", "gone");
    let user = tidings_testkit::add_user(&store, "wes").await;
    tidings_testkit::follow(&store, user, &feeds.url("/one.xml")).await;
    tidings_testkit::follow(&store, user, &feeds.url("/gone.xml")).await;
    let fetcher = crate::support::test_fetcher(store.clone(), true);
    let fetches = std::sync::Arc::clone(fetcher.metrics());
    let url = serve_worker_metrics(
        store.clone(),
        std::sync::Arc::clone(&fetches),
        tidings_server::metrics::MetricsAccess::default(),
    )
    .await;

    let before = Client::new().get(&url).send().await.unwrap();
    assert_eq!(before.status(), StatusCode::OK);
    let before = samples(&before.text().await.unwrap());
    assert_eq!(value(&before, "tidings_fetch_queue_depth"), 2.0);
    assert_eq!(value(&before, "tidings_feeds{status=\"active\"}"), 2.0);
    assert_eq!(value(&before, "tidings_database_up"), 1.0);

    // The worker's round: one feed parsed with four items, one 404.
    let reports = tidings_worker::Worker::new(fetcher)
        .run_once()
        .await
        .unwrap();
    assert_eq!(reports.len(), 2);

    let response = Client::new().get(&url).send().await.unwrap();
    assert_eq!(response.status(), StatusCode::OK);
    assert!(
        response.headers()["content-type"]
            .to_str()
            .unwrap()
            .starts_with("text/plain; version=0.0.4")
    );
    let after = samples(&response.text().await.unwrap());
    for (series, expected) in [
        ("tidings_fetches_total{result=\"parsed\"}", 1.0),
        ("tidings_fetches_total{result=\"http_error\"}", 1.0),
        ("tidings_fetch_failures_total{reason=\"http_status\"}", 1.0),
        ("tidings_fetch_http_status_total{status=\"404\"}", 1.0),
        ("tidings_fetch_duration_seconds_count", 2.0),
        ("tidings_items_upserted_total{change=\"inserted\"}", 4.0),
        ("tidings_items_upserted_total{change=\"updated\"}", 0.0),
        ("tidings_fetch_queue_depth", 0.0),
        ("tidings_database_up", 1.0),
    ] {
        assert_eq!(value(&after, series), expected, "{series}");
    }
    let feeds_total: f64 = after
        .iter()
        .filter(|(series, _)| series.starts_with("tidings_feeds{"))
        .map(|(_, value)| *value)
        .sum();
    assert_eq!(feeds_total, 2.0, "{after:?}");
    assert!(
        after
            .keys()
            .any(|series| series.starts_with("tidings_db_pool_max_connections{")),
        "{after:?}"
    );
    // A worker serves no API: no request or rate-limit series, and no other route.
    assert!(
        !after
            .keys()
            .any(|series| series.starts_with("tidings_http_request")
                || series.starts_with("tidings_rate_limited")),
        "{after:?}"
    );
    let other = Client::new()
        .get(url.replace("/metrics", "/api/v1/counts"))
        .send()
        .await
        .unwrap();
    assert_eq!(other.status(), StatusCode::NOT_FOUND);
});

on_both_engines!(
    a_worker_process_metrics_are_protected_like_the_server,
    |db| {
        const TOKEN: &str = "worker-metrics-token-0123";
        let _ = rustls::crypto::ring::default_provider().install_default();
        let store = db.migrated().await;
        let fetches = std::sync::Arc::new(tidings_worker::WorkerMetrics::default());
        // Loopback is not allowed here, so only the token lets the test in.
        let url = serve_worker_metrics(
            store,
            fetches,
            tidings_server::metrics::MetricsAccess::new(
                vec!["10.0.0.0/8".parse().unwrap()],
                Some(TOKEN),
            ),
        )
        .await;
        let client = Client::new();
        let refused = client.get(&url).send().await.unwrap();
        assert_eq!(refused.status(), StatusCode::FORBIDDEN);
        assert!(
            refused
                .text()
                .await
                .unwrap()
                .contains("TIDINGS_METRICS_ALLOWED_NETWORKS")
        );
        let wrong = client
            .get(&url)
            .bearer_auth("worker-metrics-token-wrong")
            .send()
            .await
            .unwrap();
        assert_eq!(wrong.status(), StatusCode::FORBIDDEN);
        let allowed = client.get(&url).bearer_auth(TOKEN).send().await.unwrap();
        assert_eq!(allowed.status(), StatusCode::OK);
        assert!(
            allowed
                .text()
                .await
                .unwrap()
                .contains("tidings_fetches_total{result=\"parsed\"} 0")
        );
    }
);
