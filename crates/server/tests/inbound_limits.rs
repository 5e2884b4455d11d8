//! Limits on what clients send in (issue 31), end to end on a real server over SQLite and
//! PostgreSQL: a request counts against its address unless it authenticated, sign-in state
//! is bounded in rows, over-long URLs are refused at once whatever the cookies, and slow
//! clients hold no slot that others need.

use std::time::{Duration, Instant};

use reqwest::{Client, StatusCode};
use tidings_store::{
    ChallengeLimits, ChallengePurpose, ChallengeStored, NewAuthChallenge, WebSubMode, WebSubRequest,
};
use tidings_testkit::on_both_engines;
use tokio::io::{AsyncReadExt, AsyncWriteExt};

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

// Single sign-on requests in flight are bounded in rows too: each is started by a browser that
// has not signed in. Before, only the rate of starts was limited.
on_both_engines!(single_sign_on_requests_are_bounded_in_rows, |db| {
    let store = db.migrated().await;
    let login = |state: &'static str, expires_at: i64| tidings_store::NewOidcLogin {
        state_hash: state,
        nonce: "n",
        code_verifier: "v",
        link_user_id: None,
        return_to: None,
        expires_at,
    };
    let later = tidings_store::unix_now() + 600;
    for state in ["a", "b", "c"] {
        let stored = store.create_oidc_login(&login(state, later), 3).await;
        assert_eq!(stored.unwrap(), ChallengeStored::Stored);
    }
    let stored = store.create_oidc_login(&login("d", later), 3).await;
    assert_eq!(stored.unwrap(), ChallengeStored::Full);
    assert!(store.take_oidc_login("d").await.unwrap().is_none());
    // Used ones make room.
    assert!(store.take_oidc_login("a").await.unwrap().is_some());
    let stored = store.create_oidc_login(&login("e", later), 3).await;
    assert_eq!(stored.unwrap(), ChallengeStored::Stored);
});

/// A client that sends a request's head slowly: the request line, then a header line every
/// second, never the empty line that ends the head. Answers how long the server kept it.
async fn slow_head(base: String, path: String) -> Duration {
    let mut stream = connect(&base).await;
    let started = Instant::now();
    let head = format!("POST {path} HTTP/1.1\r\nHost: x\r\n");
    if stream.write_all(head.as_bytes()).await.is_err() {
        return started.elapsed();
    }
    for i in 0..120 {
        tokio::time::sleep(Duration::from_secs(1)).await;
        let line = format!("X-Drip-{i}: x\r\n");
        if stream.write_all(line.as_bytes()).await.is_err() || closed(&mut stream).await {
            break;
        }
    }
    started.elapsed()
}

/// A client that sends a whole head (`target` is a path to POST to, or `METHOD path`; `headers`
/// one per line, each ending in CRLF) announcing a 10,000-byte body, then the body a byte
/// every half second. Answers how long the server kept it and the status line it answered, if
/// any.
async fn slow_body(base: String, target: String, headers: String) -> (Duration, String) {
    let mut stream = connect(&base).await;
    let started = Instant::now();
    let target = if target.contains(' ') {
        target
    } else {
        format!("POST {target}")
    };
    let head = format!("{target} HTTP/1.1\r\nHost: x\r\n{headers}Content-Length: 10000\r\n\r\n");
    if stream.write_all(head.as_bytes()).await.is_err() {
        return (started.elapsed(), String::new());
    }
    let mut answer = Vec::new();
    for _ in 0..240 {
        let mut buffer = [0u8; 4096];
        tokio::select! {
            read = stream.read(&mut buffer) => match read {
                Ok(n) if n > 0 => {
                    answer.extend_from_slice(&buffer[..n]);
                    break;
                }
                _ => break,
            },
            () = tokio::time::sleep(Duration::from_millis(500)) => {
                if stream.write_all(b"x").await.is_err() {
                    break;
                }
            }
        }
    }
    let answer = String::from_utf8_lossy(&answer);
    let status = answer.lines().next().unwrap_or("").to_owned();
    (started.elapsed(), status)
}

async fn connect(base: &str) -> tokio::net::TcpStream {
    tokio::net::TcpStream::connect(base.trim_start_matches("http://"))
        .await
        .unwrap()
}

/// Whether the server closed the connection (or answered), without waiting.
async fn closed(stream: &mut tokio::net::TcpStream) -> bool {
    let mut buffer = [0u8; 1024];
    tokio::time::timeout(Duration::from_millis(1), stream.read(&mut buffer))
        .await
        .is_ok()
}

/// A feed `user` follows whose hub has verified our subscription; answers the callback token
/// and the secret pushes are signed with.
async fn websub_feed(app: &TestApp, user: i64) -> (String, String) {
    let (hub, topic) = ("http://127.0.0.1:9/hub", "http://127.0.0.1:9/feed");
    let (_, feed_id) = tidings_testkit::follow(&app.store, user, topic).await;
    let now = chrono::Utc::now().timestamp();
    let (token, secret) = ("t".repeat(40), "s".repeat(40));
    let store = &app.store;
    store
        .record_websub_discovery(feed_id, Some((hub, topic)), &token, &secret, now)
        .await
        .unwrap();
    store.claim_websub_due("test", now, 10, 60).await.unwrap();
    let request = WebSubRequest {
        mode: WebSubMode::Subscribe,
        hub_url: hub,
        topic_url: topic,
        callback_token: &token,
        secret: &secret,
    };
    assert!(
        store
            .websub_request_sent(feed_id, "test", &request, now)
            .await
            .unwrap()
    );
    let verified = store
        .websub_verified(&token, WebSubMode::Subscribe, 3600, now, now + 3000)
        .await
        .unwrap();
    assert!(verified);
    (token, secret)
}

/// A pushed Atom document and its `X-Hub-Signature` under `secret`.
fn signed_push(secret: &str, title: &str) -> (String, String) {
    use hmac::{KeyInit, Mac};
    let body = format!(
        "<?xml version=\"1.0\"?><feed xmlns=\"http://www.w3.org/2005/Atom\"><title>F</title>\
         <id>urn:f</id><updated>2026-01-01T00:00:00Z</updated><entry><title>{title}</title>\
         <id>urn:{title}</id><link href=\"http://127.0.0.1:9/{title}\"/>\
         <updated>2026-01-01T00:00:00Z</updated></entry></feed>"
    );
    let mut mac = <hmac::Hmac<sha2::Sha256> as KeyInit>::new_from_slice(secret.as_bytes()).unwrap();
    mac.update(body.as_bytes());
    let signature = format!("sha256={}", hex::encode(mac.finalize().into_bytes()));
    (body, signature)
}

/// Sends a correctly signed push; answers its status (or `None` when none came within 10 s)
/// and how long it took.
async fn push(app: &TestApp, token: &str, secret: &str, title: &str) -> (Option<u16>, Duration) {
    let (body, signature) = signed_push(secret, title);
    let started = Instant::now();
    let answer = Client::new()
        .post(format!("{}/websub/{token}", app.base))
        .header("content-type", "application/atom+xml")
        .header("x-hub-signature", signature)
        .body(body)
        .timeout(Duration::from_secs(10))
        .send()
        .await;
    (answer.ok().map(|r| r.status().as_u16()), started.elapsed())
}

// Before, the callback took one of 4 global slots before it checked the token, and read the
// body without a deadline: four clients dripping bytes to any /websub/ path kept a correctly
// signed push unanswered for as long as they liked.
on_both_engines!(slow_clients_hold_no_websub_push, |db| {
    let app = TestApp::start_with(db, true, |config| {
        config.body_read_timeout = Duration::from_secs(3);
    })
    .await;
    let user = app.user("alice", false).await;
    let (token, secret) = websub_feed(&app, user).await;
    let atom = "Content-Type: application/atom+xml\r\n".to_owned();
    let mut slow = Vec::new();
    for i in 0..8 {
        // Half to the real callback (whoever learnt it), half to made-up ones.
        let path = if i % 2 == 0 {
            format!("/websub/{token}")
        } else {
            format!("/websub/nosuch{i}")
        };
        slow.push(tokio::spawn(slow_body(
            app.base.clone(),
            path,
            atom.clone(),
        )));
    }
    tokio::time::sleep(Duration::from_millis(500)).await;
    let (status, elapsed) = push(&app, &token, &secret, "first").await;
    eprintln!("signed push beside 8 slow clients: {status:?} in {elapsed:?}");
    assert_eq!(status, Some(202), "answered in {elapsed:?}");
    assert!(elapsed < Duration::from_secs(2), "{elapsed:?}");
    for (i, handle) in slow.into_iter().enumerate() {
        let (kept, status) = handle.await.unwrap();
        if i % 2 == 0 {
            assert!(status.contains(" 408 "), "{status}");
            assert!(kept < Duration::from_secs(6), "kept {kept:?}");
        } else {
            assert!(status.contains(" 410 "), "{status}");
            assert!(kept < Duration::from_secs(2), "kept {kept:?}");
        }
    }
});

/// What the slow-client trial needs: a signed-in user's API key, and the WebSub callback.
struct Trial {
    app: TestApp,
    key: String,
    token: String,
    secret: String,
    feeds: crate::support::TestServer,
}

async fn trial_setup(db: &tidings_testkit::TestDb) -> Trial {
    let app = TestApp::start_with(db, true, |config| {
        config.body_read_timeout = Duration::from_secs(3);
    })
    .await;
    let user = app.user("alice", false).await;
    let browser = app.signed_in("alice").await;
    let created: serde_json::Value = browser
        .post(app.url("/api-keys"))
        .json(&serde_json::json!({"name": "apps", "scope": "read_write"}))
        .send()
        .await
        .unwrap()
        .json()
        .await
        .unwrap();
    let key = created["key"].as_str().unwrap().to_owned();
    let (token, secret) = websub_feed(&app, user).await;
    let feeds = crate::support::TestServer::start_empty().await;
    feeds.serve_rss("/opml-feed", "From OPML", 2);
    Trial {
        app,
        key,
        token,
        secret,
        feeds,
    }
}

/// Every public route that reads a body, as `(name, request target, head lines)` for the slow
/// clients.
fn slow_targets(trial: &Trial) -> Vec<(&'static str, String, String)> {
    let form = "Content-Type: application/x-www-form-urlencoded\r\n".to_owned();
    vec![
        (
            "sign-in",
            "/api/v1/session".into(),
            format!(
                "Content-Type: application/json\r\nOrigin: {}\r\n",
                trial.app.base
            ),
        ),
        (
            "websub",
            format!("/websub/{}", trial.token),
            "Content-Type: application/atom+xml\r\n".into(),
        ),
        ("greader", "/accounts/ClientLogin".into(), form.clone()),
        ("fever", "/api/fever.php?api".into(), form),
        (
            "miniflux",
            "PUT /v1/entries".into(),
            format!(
                "X-Auth-Token: {}\r\nContent-Type: application/json\r\n",
                trial.key
            ),
        ),
        (
            "opml",
            "/api/v1/opml".into(),
            format!(
                "Authorization: Bearer {}\r\nContent-Type: text/x-opml\r\n",
                trial.key
            ),
        ),
    ]
}

/// One normal request of each kind, answered with its status and time.
async fn normal_round(trial: &Trial) -> Vec<(&'static str, u16, Duration)> {
    let app = &trial.app;
    let client = Client::builder()
        .timeout(Duration::from_secs(10))
        .build()
        .unwrap();
    let fever_key = {
        use md5::Digest;
        hex::encode(md5::Md5::digest(format!("alice:{}", trial.key).as_bytes()))
    };
    let opml = format!(
        "<?xml version=\"1.0\"?><opml version=\"2.0\"><body><outline type=\"rss\" \
         text=\"F\" xmlUrl=\"{}\"/></body></opml>",
        trial.feeds.url("/opml-feed")
    );
    let requests = vec![
        ("health", client.get(format!("{}/healthz", app.base))),
        (
            "sign-in",
            client
                .post(app.url("/session"))
                .header("origin", &app.base)
                .json(&serde_json::json!({"username": "alice", "password": PASSWORD})),
        ),
        (
            "greader",
            client
                .post(format!("{}/accounts/ClientLogin", app.base))
                .form(&[("Email", "alice"), ("Passwd", trial.key.as_str())]),
        ),
        (
            "fever",
            client
                .post(format!("{}/api/fever.php?api", app.base))
                .form(&[("api_key", fever_key.as_str())]),
        ),
        (
            "miniflux",
            client
                .get(format!("{}/v1/me", app.base))
                .header("x-auth-token", &trial.key),
        ),
        (
            "opml",
            client
                .post(app.url("/opml"))
                .bearer_auth(&trial.key)
                .header("content-type", "text/x-opml")
                .body(opml),
        ),
    ];
    let mut answers = Vec::new();
    for (name, request) in requests {
        let started = Instant::now();
        let status = request.send().await.map_or(0, |r| r.status().as_u16());
        answers.push((name, status, started.elapsed()));
    }
    let title = format!("pushed{}", rand_suffix());
    let (status, elapsed) = push(app, &trial.token, &trial.secret, &title).await;
    answers.push(("websub", status.unwrap_or(0), elapsed));
    answers
}

fn rand_suffix() -> u128 {
    std::time::SystemTime::now()
        .duration_since(std::time::UNIX_EPOCH)
        .unwrap()
        .as_nanos()
}

// Slowloris-style clients on every public route that reads a body: three that never finish
// their head and three that drip their body, per route, while normal requests of every kind
// are timed. Each normal request must still answer promptly, each slow body be cut off at the
// body deadline, each slow head at the head deadline. `-- --nocapture` prints the numbers.
on_both_engines!(slow_clients_on_every_public_route, |db| {
    let trial = trial_setup(db).await;
    let started = Instant::now();
    let mut heads = Vec::new();
    let mut bodies = Vec::new();
    for (name, target, headers) in slow_targets(&trial) {
        let path = target.rsplit(' ').next().unwrap().to_owned();
        for _ in 0..3 {
            let head = slow_head(trial.app.base.clone(), path.clone());
            heads.push((name, tokio::spawn(head)));
            let body = slow_body(trial.app.base.clone(), target.clone(), headers.clone());
            bodies.push((name, tokio::spawn(body)));
        }
    }
    tokio::time::sleep(Duration::from_millis(1500)).await;
    let mut worst = Duration::ZERO;
    for round in 0..2 {
        for (name, status, elapsed) in normal_round(&trial).await {
            eprintln!(
                "round {round} at {:.1} s: {name} answered {status} in {} ms",
                started.elapsed().as_secs_f64(),
                elapsed.as_millis()
            );
            assert!((200..300).contains(&status), "{name}: {status}");
            worst = worst.max(elapsed);
        }
        tokio::time::sleep(Duration::from_secs(1)).await;
    }
    eprintln!(
        "36 slow clients; slowest normal answer: {} ms",
        worst.as_millis()
    );
    assert!(worst < Duration::from_secs(2), "slowest {worst:?}");
    for (name, handle) in bodies {
        let (kept, status) = handle.await.unwrap();
        eprintln!("slow body to {name}: cut off after {kept:?} ({status})");
        assert!(kept < Duration::from_secs(6), "{name}: kept {kept:?}");
    }
    let limit = tidings_server::HEADER_READ_TIMEOUT + Duration::from_secs(3);
    for (name, handle) in heads {
        let kept = handle.await.unwrap();
        eprintln!("slow head to {name}: cut off after {kept:?}");
        assert!(kept < limit, "{name}: kept {kept:?}");
    }
});

/// Sends `request` on a new connection; answers the first line of what came back within 5 s
/// (empty when nothing did) and how long that took.
async fn first_answer_line(base: &str, request: &[u8]) -> (String, Duration) {
    let mut stream = connect(base).await;
    let started = Instant::now();
    stream.write_all(request).await.unwrap();
    let mut answer = Vec::new();
    let _ = tokio::time::timeout(Duration::from_secs(5), async {
        let mut buffer = [0u8; 4096];
        while let Ok(n) = stream.read(&mut buffer).await {
            if n == 0 {
                break;
            }
            answer.extend_from_slice(&buffer[..n]);
            if answer.windows(2).any(|w| w == b"\r\n") {
                break;
            }
        }
    })
    .await;
    let answer = String::from_utf8_lossy(&answer);
    (
        answer.lines().next().unwrap_or("").to_owned(),
        started.elapsed(),
    )
}

// curl, given a cookie file and a URL over 8 KiB, sends `Cookie: ` and never ends the head:
// before, such a request got no answer at all (the connection closed at the 10 s head
// deadline), while the same URL without a cookie got its 414 at once.
on_both_engines!(over_long_urls_get_414_at_once_whatever_the_head, |db| {
    let app = TestApp::start(db).await;
    app.user("alice", false).await;
    let long = "a".repeat(9000);
    let session = "tidings_session=0123456789abcdef";
    for path in ["/api/v1/items?cursor=", "/", "/websub/", "/v1/entries?x="] {
        for tail in [
            "Cookie: \r\n".to_owned(),
            format!("Cookie: {session}\r\n\r\n"),
            "\r\n".to_owned(),
        ] {
            let request = format!("GET {path}{long} HTTP/1.1\r\nHost: x\r\n{tail}");
            let (line, elapsed) = first_answer_line(&app.base, request.as_bytes()).await;
            assert!(
                line.starts_with("HTTP/1.1 414"),
                "{path} {tail:?}: {line:?}"
            );
            assert!(
                elapsed < Duration::from_secs(2),
                "{path} {tail:?}: {elapsed:?}"
            );
        }
    }
    // The 414 is the API's JSON error.
    let response = Client::new()
        .get(format!("{}/api/v1/items?cursor={long}", app.base))
        .header("cookie", session)
        .send()
        .await
        .unwrap();
    assert_eq!(response.status(), StatusCode::URI_TOO_LONG);
    assert_eq!(response.headers()["x-content-type-options"], "nosniff");
    let body: serde_json::Value = response.json().await.unwrap();
    crate::support::assert_error(&body, "uri_too_long", "limit");
    // A URL within the limit still passes, on a connection that goes on.
    let ok = Client::new()
        .get(format!("{}/healthz?{}", app.base, "a".repeat(8000)))
        .send()
        .await
        .unwrap();
    assert_eq!(ok.status(), StatusCode::OK);
});
