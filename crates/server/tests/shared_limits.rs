//! Rate limits that hold across API replicas (issue 15): two servers on one PostgreSQL count
//! against one budget, so the request one over the limit is refused whichever replica it
//! reaches. (On SQLite one process serves, and counts in memory.)

use crate::support::{TestApp, assert_error, call};
use reqwest::{Method, StatusCode};
use serde_json::json;

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn two_replicas_on_postgres_share_one_budget() {
    let test = "shared_limits::two_replicas_on_postgres_share_one_budget";
    let Some(db) = tidings_testkit::TestDb::postgres(test).await else {
        return;
    };
    tidings_testkit::run_on(db, async |db| {
        let a = TestApp::start(db).await;
        let b = TestApp::start(db).await;
        a.user("alice", false).await;
        // One browser: its session cookie (for 127.0.0.1, whatever the port) reaches both.
        let browser = a.signed_in("alice").await;

        // The per-user budget is 120 requests a minute, whichever replica answers them.
        for n in 0..120u32 {
            let app = if n % 2 == 0 { &a } else { &b };
            let (status, headers, body) =
                call(&browser, Method::GET, &app.url("/subscriptions"), None).await;
            assert_eq!(status, StatusCode::OK, "request {n}: {body}");
            assert_eq!(headers["x-ratelimit-limit"], "120");
            assert_eq!(
                headers["x-ratelimit-remaining"],
                (119 - n).to_string().as_str(),
                "request {n} counts against the one budget"
            );
        }
        for app in [&a, &b] {
            let (status, headers, body) =
                call(&browser, Method::GET, &app.url("/subscriptions"), None).await;
            assert_eq!(status, StatusCode::TOO_MANY_REQUESTS, "{body}");
            assert_error(&body, "rate_limited", "limit");
            assert_eq!(headers["x-ratelimit-limit"], "120");
            assert_eq!(headers["x-ratelimit-remaining"], "0");
            assert_eq!(headers["x-ratelimit-scope"], "user");
            let retry: u64 = headers["retry-after"].to_str().unwrap().parse().unwrap();
            assert!((1..=60).contains(&retry), "Retry-After {retry}");
        }

        // Sign-in attempts from one address: 5 a minute over both replicas (one was above).
        let stranger = b.browser();
        let mut statuses = Vec::new();
        for n in 0..5 {
            let app = if n % 2 == 0 { &b } else { &a };
            let (status, _, _) = call(
                &stranger,
                Method::POST,
                &app.url("/session"),
                Some(json!({"username": "alice", "password": "not the password at all"})),
            )
            .await;
            statuses.push(status);
        }
        assert_eq!(
            statuses,
            [
                StatusCode::UNAUTHORIZED,
                StatusCode::UNAUTHORIZED,
                StatusCode::UNAUTHORIZED,
                StatusCode::UNAUTHORIZED,
                StatusCode::TOO_MANY_REQUESTS
            ]
        );
    })
    .await;
}

/// A sync request of `key` to the Miniflux API's `/v1/me` on `app`: its status and
/// `Retry-After`.
async fn sync_request(app: &TestApp, key: &str) -> (StatusCode, Option<u64>) {
    let response = reqwest::Client::new()
        .get(format!("{}/v1/me", app.base))
        .header("x-auth-token", key)
        .send()
        .await
        .unwrap();
    let retry = response
        .headers()
        .get("retry-after")
        .map(|value| value.to_str().unwrap().parse().unwrap());
    (response.status(), retry)
}

// The sync limit (every request of an app's sync) is counted in memory and added to the
// database in batches, so that a request does not write a row: one replica still answers
// 429 with Retry-After at exactly the limit, and two replicas together admit at most a batch
// less one each over it.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn the_sync_limit_holds_on_postgres_counted_in_batches() {
    let test = "shared_limits::the_sync_limit_holds_on_postgres_counted_in_batches";
    let Some(db) = tidings_testkit::TestDb::postgres(test).await else {
        return;
    };
    tidings_testkit::run_on(db, async |db| {
        let limit = 30;
        let a = TestApp::start_with(db, true, |c| c.sync_requests_per_minute = limit).await;
        let b = TestApp::start_with(db, true, |c| c.sync_requests_per_minute = limit).await;
        let alice = a.user("alice", false).await;
        a.user("bob", false).await;
        let alice_key = crate::sync_clients::api_key(&a, &a.signed_in("alice").await, "read").await;
        let bob_key = crate::sync_clients::api_key(&a, &a.signed_in("bob").await, "read").await;
        // Reads the shared count without adding to it (a cap of 1 keeps it).
        let shared_hits = async |user: i64| {
            a.store
                .count_rate_hit("sync", &format!("user:{user}"), 60_000, 1)
                .await
                .unwrap()
                .hits
        };

        // One replica: exactly the limit, then 429 with Retry-After.
        for n in 0..limit {
            let (status, _) = sync_request(&a, &alice_key).await;
            assert_eq!(status, StatusCode::OK, "request {n}");
            if n == 2 {
                assert_eq!(
                    shared_hits(alice).await,
                    1,
                    "the first hit is written at once, the next ones wait for a batch"
                );
            }
        }
        let (status, retry) = sync_request(&a, &alice_key).await;
        assert_eq!(status, StatusCode::TOO_MANY_REQUESTS);
        assert!((1..=60).contains(&retry.unwrap()), "Retry-After {retry:?}");
        assert!(
            shared_hits(alice).await >= 21,
            "the batches reached the database"
        );

        // Two replicas in turn: together at least the limit, at most a batch less one each
        // over it, then both refuse.
        let mut admitted = 0;
        for n in 0..100 {
            let app = if n % 2 == 0 { &a } else { &b };
            match sync_request(app, &bob_key).await {
                (StatusCode::OK, _) => admitted += 1,
                (StatusCode::TOO_MANY_REQUESTS, Some(_)) => {}
                other => panic!("request {n}: {other:?}"),
            }
        }
        assert!(
            (limit..=limit + 2 * 9).contains(&admitted),
            "admitted {admitted} of a limit of {limit}"
        );
        for app in [&a, &b] {
            assert_eq!(
                sync_request(app, &bob_key).await.0,
                StatusCode::TOO_MANY_REQUESTS
            );
        }
    })
    .await;
}
