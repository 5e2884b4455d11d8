//! Limits on what clients send in (issue 31), end to end on a real server over SQLite and
//! PostgreSQL: a request counts against its address unless it authenticated, sign-in state
//! is bounded in rows, over-long URLs are refused at once whatever the cookies, and slow
//! clients hold no slot that others need.

use reqwest::{Client, StatusCode};
use tidings_store::{ChallengeLimits, ChallengePurpose, ChallengeStored, NewAuthChallenge};
use tidings_testkit::on_both_engines;

use crate::support::{PASSWORD, TestApp};

/// A server that believes `X-Forwarded-For` from 127.0.0.1, so that a test can speak from
/// several client addresses.
async fn behind_proxy(db: &tidings_testkit::TestDb) -> TestApp {
    TestApp::start_with(db, true, |config| {
        config.trusted_proxies = vec!["127.0.0.1/32".parse().unwrap()];
    })
    .await
}

// Before, any `Authorization` header (or cookie) skipped the address's limit, and the passkey
// options endpoint never checks credentials: 300 requests with `Authorization: x` all answered
// 200 and left 300 rows in auth_challenges.
on_both_engines!(unauthenticated_requests_count_whatever_they_carry, |db| {
    let app = behind_proxy(db).await;
    app.user("alice", false).await;
    let client = Client::new();
    let mut ok = 0;
    let mut limited = 0;
    for _ in 0..300 {
        let response = client
            .post(app.url("/session/passkey/options"))
            .header("authorization", "x")
            .header("x-forwarded-for", "203.0.113.1")
            .send()
            .await
            .unwrap();
        match response.status() {
            StatusCode::OK => ok += 1,
            StatusCode::TOO_MANY_REQUESTS => {
                assert_eq!(response.headers()["x-ratelimit-scope"], "address");
                limited += 1;
            }
            other => panic!("unexpected {other}"),
        }
    }
    assert_eq!((ok, limited), (100, 200), "the address's 100 a minute");
    let rows = app.store.count_auth_challenges().await.unwrap();
    assert!(
        rows <= tidings_server::base::sessions::CHALLENGES_PER_CLIENT,
        "{rows} challenges kept for one address"
    );

    // A stale session cookie counts too, and so does a bearer token that is no key of ours.
    for (name, value) in [
        ("cookie", "tidings_session=0123456789abcdef"),
        ("authorization", "Bearer tdg_nosuchkey"),
    ] {
        let mut statuses = Vec::new();
        for _ in 0..101 {
            let response = client
                .post(app.url("/session/passkey/options"))
                .header(name, value)
                .header("origin", &app.base)
                .header("x-forwarded-for", format!("203.0.113.{}", 2 + name.len()))
                .send()
                .await
                .unwrap();
            statuses.push(response.status());
        }
        assert_eq!(statuses[99], StatusCode::OK, "{name}");
        assert_eq!(statuses[100], StatusCode::TOO_MANY_REQUESTS, "{name}");
    }

    // A signed-in user at the exhausted address is not held to the address's limit.
    let browser = app.browser();
    let response = browser
        .post(app.url("/session"))
        .header("x-forwarded-for", "203.0.113.50")
        .json(&serde_json::json!({"username": "alice", "password": PASSWORD}))
        .send()
        .await
        .unwrap();
    assert_eq!(response.status(), StatusCode::OK);
    for _ in 0..3 {
        let response = browser
            .get(app.url("/me"))
            .header("x-forwarded-for", "203.0.113.1")
            .send()
            .await
            .unwrap();
        assert_eq!(response.status(), StatusCode::OK);
        assert_eq!(response.headers()["x-ratelimit-scope"], "user");
    }
});

fn challenge<'a>(token: &'a str, client: &'a str, expires_at: i64) -> NewAuthChallenge<'a> {
    NewAuthChallenge {
        token_hash: token,
        purpose: ChallengePurpose::PasskeySignIn,
        user_id: None,
        challenge: Some("c"),
        expires_at,
        client_key: client,
    }
}

// Sign-in state is bounded in rows: a client keeps its newest few, the table a bounded
// number, and expired rows go when new ones come.
on_both_engines!(sign_in_challenges_are_bounded_in_rows, |db| {
    let store = db.migrated().await;
    let limits = ChallengeLimits {
        per_client: 3,
        total: 5,
    };
    let later = tidings_store::unix_now() + 300;
    for i in 0..5 {
        let token = format!("a{i}");
        let stored = store
            .create_auth_challenge(&challenge(&token, "198.51.100.1", later + i), limits)
            .await
            .unwrap();
        assert_eq!(stored, ChallengeStored::Stored);
    }
    assert_eq!(store.count_auth_challenges().await.unwrap(), 3);
    for old in ["a0", "a1"] {
        let gone = store
            .auth_challenge(old, ChallengePurpose::PasskeySignIn)
            .await
            .unwrap();
        assert!(gone.is_none(), "{old}: the client's oldest are dropped");
    }
    assert!(
        store
            .auth_challenge("a4", ChallengePurpose::PasskeySignIn)
            .await
            .unwrap()
            .is_some()
    );
    // Two more clients fill the table; the next is refused, not stored.
    for (token, client) in [("b0", "198.51.100.2"), ("c0", "198.51.100.3")] {
        let stored = store
            .create_auth_challenge(&challenge(token, client, later), limits)
            .await
            .unwrap();
        assert_eq!(stored, ChallengeStored::Stored);
    }
    let stored = store
        .create_auth_challenge(&challenge("d0", "198.51.100.4", later), limits)
        .await
        .unwrap();
    assert_eq!(stored, ChallengeStored::Full);
    assert_eq!(store.count_auth_challenges().await.unwrap(), 5);

    // Expired rows are swept by the next insert.
    let fresh = ChallengeLimits {
        per_client: 3,
        total: 100,
    };
    let past = tidings_store::unix_now() - 1;
    for i in 0..4 {
        let token = format!("e{i}");
        let client = format!("192.0.2.{i}");
        store
            .create_auth_challenge(&challenge(&token, &client, past), fresh)
            .await
            .unwrap();
    }
    store
        .create_auth_challenge(&challenge("f0", "192.0.2.9", later), fresh)
        .await
        .unwrap();
    assert_eq!(
        store.count_auth_challenges().await.unwrap(),
        6,
        "expired ones gone"
    );
});
