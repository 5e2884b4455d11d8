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
