//! The API's protections against bad input and hostile clients, end to end on a real server
//! over SQLite and PostgreSQL: control characters and lengths, CSRF without browser headers,
//! caching and HSTS headers, oversized request heads, and each limiter's own 429 figures.

use tidings_testkit::on_both_engines;

use std::time::{Duration, Instant};

use crate::support::{PASSWORD, TestApp, TestServer, assert_error, call, rss};
use reqwest::{Client, Method, StatusCode};
use serde_json::{Value, json};
use tokio::io::{AsyncReadExt, AsyncWriteExt};

async fn group_names(client: &Client, app: &TestApp) -> Vec<String> {
    let (_, _, body) = call(client, Method::GET, &app.url("/groups"), None).await;
    body["groups"]
        .as_array()
        .unwrap()
        .iter()
        .map(|g| g["name"].as_str().unwrap().to_string())
        .collect()
}

on_both_engines!(
    text_fields_refuse_control_characters_and_overlong_values,
    |db| {
        let app = TestApp::start(db).await;
        app.user("alice", false).await;
        let browser = app.signed_in("alice").await;
        let feeds = TestServer::start_empty().await;
        feeds.serve(
            "/feed",
            200,
            "application/rss+xml",
            rss(&feeds.base, "F", 2),
        );
        let (status, _, subscribed) = call(
            &browser,
            Method::POST,
            &app.url("/subscriptions"),
            Some(json!({"url": feeds.url("/feed")})),
        )
        .await;
        assert_eq!(status, StatusCode::CREATED, "{subscribed}");
        let subscription = subscribed["subscription"]["id"].as_i64().unwrap();
        let groups_before = group_names(&browser, &app).await;

        // Before, on PostgreSQL each NUL was a 500; on SQLite it was stored.
        let cases: Vec<(Method, String, Value, &str)> = vec![
            (
                Method::POST,
                app.url("/groups"),
                json!({"name": "a\u{0}b"}),
                "name",
            ),
            (
                Method::POST,
                app.url("/groups"),
                json!({"name": "tab\tname"}),
                "name",
            ),
            (
                Method::POST,
                app.url("/api-keys"),
                json!({"name": "key\u{0}"}),
                "name",
            ),
            (
                Method::PATCH,
                app.url(&format!("/subscriptions/{subscription}")),
                json!({"title": "title\u{0}"}),
                "title",
            ),
            (
                Method::PATCH,
                app.url(&format!("/subscriptions/{subscription}")),
                json!({"title": "escape\u{1b}[31m"}),
                "title",
            ),
            (
                Method::POST,
                app.url("/subscriptions"),
                json!({"url": "http://example.com/\u{0}"}),
                "url",
            ),
            (
                Method::PUT,
                app.url("/preferences"),
                json!({"theme": "dark\u{0}"}),
                "theme",
            ),
        ];
        for (method, url, body, field) in cases {
            let (status, _, answer) =
                call(&browser, method.clone(), &url, Some(body.clone())).await;
            assert_eq!(
                status,
                StatusCode::BAD_REQUEST,
                "{method} {url} {body}: {answer}"
            );
            assert_error(&answer, "invalid_characters", "validation");
            let message = answer["error"]["message"].as_str().unwrap();
            assert!(message.contains(field), "{message}");
        }
        // Sign-in and user names too, without echoing the password.
        let (status, _, answer) = call(
            &app.browser(),
            Method::POST,
            &app.url("/session"),
            Some(json!({"username": "alice", "password": "secret\u{0}value"})),
        )
        .await;
        assert_eq!(status, StatusCode::BAD_REQUEST, "{answer}");
        assert!(!answer.to_string().contains("secret"), "{answer}");

        // Lengths: a 900,000-character title was accepted before.
        let (status, _, answer) = call(
            &browser,
            Method::PATCH,
            &app.url(&format!("/subscriptions/{subscription}")),
            Some(json!({"title": "x".repeat(900_000)})),
        )
        .await;
        assert_eq!(status, StatusCode::BAD_REQUEST, "{answer}");
        assert_error(&answer, "too_long", "validation");
        assert!(
            answer["error"]["message"]
                .as_str()
                .unwrap()
                .contains("title")
        );
        for (method, url, body) in [
            (
                Method::POST,
                app.url("/groups"),
                json!({"name": "g".repeat(101)}),
            ),
            (
                Method::POST,
                app.url("/api-keys"),
                json!({"name": "k".repeat(101)}),
            ),
            (
                Method::POST,
                app.url("/subscriptions"),
                json!({"url": format!("http://example.com/{}", "p".repeat(2048))}),
            ),
        ] {
            let (status, _, answer) = call(&browser, method, &url, Some(body)).await;
            assert_eq!(status, StatusCode::BAD_REQUEST, "{url}: {answer}");
            assert_error(&answer, "too_long", "validation");
        }
        phase_limits_kept_and_stated(&app, &browser, subscription, &groups_before).await;
    }
);

/// At the limit, and in any script, a value is accepted and kept; nothing refused was stored;
/// the document states the limits.
async fn phase_limits_kept_and_stated(
    app: &TestApp,
    browser: &Client,
    subscription: i64,
    groups_before: &[String],
) {
    // At the limit, and with letters of any script, the value is accepted and kept.
    let title = "é".repeat(tidings_server::api::limits::MAX_TITLE_CHARS);
    let (status, _, answer) = call(
        browser,
        Method::PATCH,
        &app.url(&format!("/subscriptions/{subscription}")),
        Some(json!({"title": title})),
    )
    .await;
    assert_eq!(status, StatusCode::OK, "{answer}");
    assert_eq!(answer["subscription"]["title"], title.as_str());
    let (status, _, answer) = call(
        browser,
        Method::POST,
        &app.url("/groups"),
        Some(json!({"name": "Nachrichten 東京 ✓"})),
    )
    .await;
    assert_eq!(status, StatusCode::CREATED, "{answer}");
    // Nothing refused was stored.
    let mut expected = groups_before.to_vec();
    expected.push("Nachrichten 東京 ✓".into());
    assert_eq!(group_names(browser, app).await, expected);
    let (_, _, keys) = call(browser, Method::GET, &app.url("/api-keys"), None).await;
    assert_eq!(keys["api_keys"].as_array().unwrap().len(), 0);

    // The document states the limits.
    let (_, _, document) = call(browser, Method::GET, &app.url("/openapi.json"), None).await;
    let schemas = &document["components"]["schemas"];
    assert_eq!(
        schemas["UpdateSubscription"]["properties"]["title"]["maxLength"],
        300
    );
    assert_eq!(
        schemas["CreateGroup"]["properties"]["name"]["maxLength"],
        100
    );
    assert_eq!(schemas["Subscribe"]["properties"]["url"]["maxLength"], 2048);
}

on_both_engines!(
    cookie_writes_without_origin_or_fetch_site_are_refused,
    |db| {
        let app = TestApp::start(db).await;
        app.user("alice", false).await;
        // A client that keeps the cookie but sends neither header (not a browser).
        let bare = Client::builder().cookie_store(true).build().unwrap();
        let response = bare
            .post(app.url("/session"))
            .json(&json!({"username": "alice", "password": PASSWORD}))
            .send()
            .await
            .unwrap();
        assert_eq!(
            response.status(),
            StatusCode::OK,
            "signing in has no cookie yet"
        );
        let (status, _, body) = call(
            &bare,
            Method::POST,
            &app.url("/groups"),
            Some(json!({"name": "forged"})),
        )
        .await;
        assert_eq!(status, StatusCode::FORBIDDEN, "{body}");
        assert_error(&body, "forbidden", "auth");
        assert!(
            body["error"]["message"]
                .as_str()
                .unwrap()
                .contains("Origin")
        );
        // Reading stays possible, and Sec-Fetch-Site alone is enough for a write.
        let (status, _, _) = call(&bare, Method::GET, &app.url("/groups"), None).await;
        assert_eq!(status, StatusCode::OK);
        let response = bare
            .post(app.url("/groups"))
            .header("sec-fetch-site", "same-origin")
            .json(&json!({"name": "mine"}))
            .send()
            .await
            .unwrap();
        assert_eq!(response.status(), StatusCode::CREATED);
        // API keys are not affected.
        let browser = app.signed_in("alice").await;
        let (_, _, created) = call(
            &browser,
            Method::POST,
            &app.url("/api-keys"),
            Some(json!({"name": "script", "scope": "read_write"})),
        )
        .await;
        let key = created["key"].as_str().unwrap();
        let response = Client::new()
            .post(app.url("/groups"))
            .bearer_auth(key)
            .json(&json!({"name": "scripted"}))
            .send()
            .await
            .unwrap();
        assert_eq!(response.status(), StatusCode::CREATED);
    }
);

on_both_engines!(api_answers_are_never_cached_and_https_sends_hsts, |db| {
    let app = TestApp::start(db).await;
    app.user("alice", false).await;
    let browser = app.signed_in("alice").await;
    let response = browser
        .post(app.url("/api-keys"))
        .json(&json!({"name": "k"}))
        .send()
        .await
        .unwrap();
    assert_eq!(response.status(), StatusCode::CREATED);
    assert_eq!(
        response.headers()["cache-control"],
        "no-store",
        "the new secret"
    );
    for (client, path) in [
        (&browser, "/me"),
        (&browser, "/groups"),
        (&browser, "/nowhere"),
        (&Client::new(), "/me"),
    ] {
        let response = client.get(app.url(path)).send().await.unwrap();
        assert_eq!(response.headers()["cache-control"], "no-store", "{path}");
        assert!(!response.headers().contains_key("strict-transport-security"));
    }
    let secure = TestApp::start_with(db, true, |config| {
        config.base_url = "https://reader.example".parse().unwrap();
    })
    .await;
    let response = Client::new()
        .get(secure.url("/setup"))
        .send()
        .await
        .unwrap();
    assert_eq!(
        response.headers()["strict-transport-security"],
        tidings_server::middleware::HSTS
    );
    let response = Client::new()
        .get(format!("{}/healthz", secure.base))
        .send()
        .await
        .unwrap();
    assert!(response.headers().contains_key("strict-transport-security"));
});

/// Sends raw bytes and returns what came back before the server closed or `wait` passed.
async fn raw_exchange(base: &str, request: &[u8], wait: Duration) -> (String, Duration) {
    let address = base.trim_start_matches("http://");
    let mut stream = tokio::net::TcpStream::connect(address).await.unwrap();
    let started = Instant::now();
    stream.write_all(request).await.unwrap();
    let mut answer = Vec::new();
    let _ = tokio::time::timeout(wait, async {
        let mut buffer = [0u8; 8192];
        loop {
            match stream.read(&mut buffer).await {
                Ok(0) | Err(_) => break,
                Ok(n) => {
                    answer.extend_from_slice(&buffer[..n]);
                    if answer.windows(4).any(|w| w == b"\r\n\r\n") {
                        break;
                    }
                }
            }
        }
    })
    .await;
    (
        String::from_utf8_lossy(&answer).into_owned(),
        started.elapsed(),
    )
}

on_both_engines!(oversized_request_heads_get_prompt_json_answers, |db| {
    let app = TestApp::start(db).await;
    let long_path = format!("/api/v1/items?cursor={}", "a".repeat(20_000));
    let started = Instant::now();
    let response = Client::new()
        .get(format!("{}{long_path}", app.base))
        .send()
        .await
        .unwrap();
    assert!(started.elapsed() < Duration::from_secs(2));
    assert_eq!(response.status(), StatusCode::URI_TOO_LONG);
    assert_eq!(response.headers()["x-content-type-options"], "nosniff");
    assert!(response.headers().contains_key("content-security-policy"));
    assert_error(&response.json().await.unwrap(), "uri_too_long", "limit");

    let response = Client::new()
        .get(app.url("/me"))
        .header("x-padding", "p".repeat(40_000))
        .send()
        .await
        .unwrap();
    assert_eq!(
        response.status(),
        StatusCode::REQUEST_HEADER_FIELDS_TOO_LARGE
    );
    assert_eq!(response.headers()["cache-control"], "no-store");
    assert_error(
        &response.json().await.unwrap(),
        "headers_too_large",
        "limit",
    );

    // A request head that never ends (what curl sends when it drops an over-long cookie for
    // a 20,000-character URL) used to hold the connection for ever; now it is closed.
    let unfinished = format!(
        "GET /{} HTTP/1.1\r\nHost: x\r\nCookie: \r\n",
        "a".repeat(20_000)
    );
    let limit = tidings_server::HEADER_READ_TIMEOUT + Duration::from_secs(3);
    let (_, elapsed) = raw_exchange(&app.base, unfinished.as_bytes(), limit).await;
    assert!(elapsed < limit, "closed after {elapsed:?}");
    // The same request, finished, is answered at once.
    let finished = format!("{unfinished}\r\n");
    let (answer, elapsed) = raw_exchange(&app.base, finished.as_bytes(), limit).await;
    assert!(answer.starts_with("HTTP/1.1 414"), "{answer}");
    assert!(elapsed < Duration::from_secs(2));
});

on_both_engines!(each_limiters_429_carries_its_own_figures, |db| {
    let app = TestApp::start(db).await;
    app.user("alice", false).await;
    // Subscribing: 10 a minute per user (the per-user limit is 120).
    let browser = app.signed_in("alice").await;
    let mut statuses = Vec::new();
    let mut last_headers = None;
    for i in 0..11 {
        let response = browser
            .post(app.url("/subscriptions"))
            .json(&json!({"url": format!("http://127.0.0.1:9/feed{i}")}))
            .send()
            .await
            .unwrap();
        statuses.push(response.status());
        last_headers = Some(response.headers().clone());
    }
    assert_eq!(statuses[10], StatusCode::TOO_MANY_REQUESTS, "{statuses:?}");
    let headers = last_headers.unwrap();
    assert_eq!(headers["x-ratelimit-limit"], "10");
    assert_eq!(headers["x-ratelimit-remaining"], "0");

    // Sign-in: 5 attempts a minute per address (the anonymous limit is 100); the sign-in
    // above was the first.
    let client = app.browser();
    let mut statuses = Vec::new();
    let mut last = None;
    for _ in 0..5 {
        let response = client
            .post(app.url("/session"))
            .json(&json!({"username": "alice", "password": "wrong password here"}))
            .send()
            .await
            .unwrap();
        statuses.push(response.status());
        last = Some(response);
    }
    assert_eq!(statuses[..4], [StatusCode::UNAUTHORIZED; 4], "{statuses:?}");
    let last = last.unwrap();
    assert_eq!(last.status(), StatusCode::TOO_MANY_REQUESTS);
    assert_eq!(last.headers()["x-ratelimit-limit"], "5");
    assert_eq!(last.headers()["x-ratelimit-remaining"], "0");
    assert!(last.headers().contains_key("retry-after"));
});

/// A 1x1 PNG: the icon served below.
const ICON_PNG: &[u8] = &[
    0x89, 0x50, 0x4e, 0x47, 0x0d, 0x0a, 0x1a, 0x0a, 0x00, 0x00, 0x00, 0x0d, 0x49, 0x48, 0x44, 0x52,
    0x00, 0x00, 0x00, 0x01, 0x00, 0x00, 0x00, 0x01, 0x08, 0x06, 0x00, 0x00, 0x00, 0x1f, 0x15, 0xc4,
    0x89, 0x00, 0x00, 0x00, 0x0d, 0x49, 0x44, 0x41, 0x54, 0x78, 0x9c, 0x63, 0x00, 0x01, 0x00, 0x00,
    0x05, 0x00, 0x01, 0x0d, 0x0a, 0x2d, 0xb4, 0x00, 0x00, 0x00, 0x00, 0x49, 0x45, 0x4e, 0x44, 0xae,
    0x42, 0x60, 0x82,
];

// The web UI's list of feeds asks for each subscription's icon as it comes into view: a user
// with a few hundred feeds scrolling it sent more than the 120 requests a minute of the API,
// and then listing items and marking read answered 429 for the rest of the minute. Icons have
// a budget of their own.
on_both_engines!(feed_icons_never_use_up_the_users_requests, |db| {
    let app = TestApp::start(db).await;
    let alice = app.user("alice", false).await;
    let subscription = app
        .store
        .subscribe(
            alice,
            &tidings_store::NewSubscription {
                feed_url: "http://127.0.0.1:9/feed.xml".into(),
                group_id: None,
                title: None,
                interval_minutes: None,
            },
        )
        .await
        .unwrap();
    let icon = tidings_store::Favicon {
        mime_type: Some("image/png".into()),
        data: Some(ICON_PNG.to_vec()),
        source_url: Some("http://127.0.0.1:9/favicon.ico".into()),
        fetched_at: 1,
    };
    app.store
        .save_favicon(subscription.feed_id, &icon)
        .await
        .unwrap();
    let browser = app.signed_in("alice").await;
    let icon_url = app.url(&format!("/subscriptions/{}/favicon", subscription.id));
    // 200 icons, more than the API's 120 a minute: every one is served.
    for n in 0..200 {
        let response = browser.get(&icon_url).send().await.unwrap();
        assert_eq!(response.status(), StatusCode::OK, "icon {n}");
        assert_eq!(response.headers()["x-ratelimit-scope"], "icons");
        assert_eq!(response.headers()["x-ratelimit-limit"], "1200");
    }
    // The user's own requests still have their whole budget but the sign-in's.
    let (status, headers, body) = call(&browser, Method::GET, &app.url("/items"), None).await;
    assert_eq!(status, StatusCode::OK, "{body}");
    assert_eq!(headers["x-ratelimit-scope"], "user");
    assert_eq!(headers["x-ratelimit-limit"], "120");
    let remaining: i64 = headers["x-ratelimit-remaining"]
        .to_str()
        .unwrap()
        .parse()
        .unwrap();
    assert!(remaining >= 115, "{remaining} of 120 left after 200 icons");
    // Only reads of an icon count as icons: anything else under the path counts as a request.
    let (status, headers, _) = call(
        &browser,
        Method::GET,
        &app.url(&format!("/subscriptions/{}", subscription.id)),
        None,
    )
    .await;
    assert_eq!(status, StatusCode::OK);
    assert_eq!(headers["x-ratelimit-scope"], "user");
});

on_both_engines!(api_keys_cannot_take_over_the_account, |db| {
    let app = TestApp::start(db).await;
    let alice = app.user("alice", false).await;
    app.user("root", true).await;
    let browser = app.signed_in("alice").await;
    let new_key = |name: &'static str| {
        let browser = browser.clone();
        let url = app.url("/api-keys");
        async move {
            let (status, _, body) = call(
                &browser,
                Method::POST,
                &url,
                Some(json!({"name": name, "scope": "read_write"})),
            )
            .await;
            assert_eq!(status, StatusCode::CREATED, "{body}");
            (
                body["key"].as_str().unwrap().to_string(),
                body["api_key"]["id"].as_i64().unwrap(),
            )
        }
    };
    let (key, key_id) = new_key("script").await;
    let keyed = |method: Method, path: &str, body: Option<Value>| {
        let mut request = Client::new()
            .request(method, app.url(path))
            .bearer_auth(&key);
        if let Some(body) = body {
            request = request.json(&body);
        }
        request.send()
    };
    let password_change =
        json!({"current_password": PASSWORD, "new_password": "a much newer passphrase here"});
    for (method, path, body) in [
        (Method::GET, "/api-keys".to_string(), None),
        (
            Method::POST,
            "/api-keys".to_string(),
            Some(json!({"name": "more"})),
        ),
        (Method::DELETE, format!("/api-keys/{key_id}"), None),
        (
            Method::PUT,
            "/me/password".to_string(),
            Some(password_change.clone()),
        ),
        (
            Method::DELETE,
            "/me".to_string(),
            Some(json!({"password": PASSWORD})),
        ),
    ] {
        let response = keyed(method.clone(), &path, body).await.unwrap();
        assert_eq!(response.status(), StatusCode::FORBIDDEN, "{method} {path}");
        assert_error(&response.json().await.unwrap(), "forbidden", "auth");
    }
    // The key still reads: nothing above happened.
    assert_eq!(
        keyed(Method::GET, "/me", None).await.unwrap().status(),
        StatusCode::OK
    );

    // Deleting the account needs the password.
    let (status, _, body) = call(&browser, Method::DELETE, &app.url("/me"), None).await;
    assert!(status.is_client_error(), "{status} {body}");
    let (status, _, _) = call(&browser, Method::GET, &app.url("/me"), None).await;
    assert_eq!(status, StatusCode::OK, "still there");

    // A password change ends the other sessions and the keys...
    let phone = app.signed_in("alice").await;
    let (status, _, body) = call(
        &browser,
        Method::PUT,
        &app.url("/me/password"),
        Some(password_change),
    )
    .await;
    assert_eq!(status, StatusCode::NO_CONTENT, "{body}");
    assert_eq!(
        keyed(Method::GET, "/me", None).await.unwrap().status(),
        StatusCode::UNAUTHORIZED
    );
    let (status, _, _) = call(&phone, Method::GET, &app.url("/me"), None).await;
    assert_eq!(status, StatusCode::UNAUTHORIZED);
    let (status, _, _) = call(&browser, Method::GET, &app.url("/me"), None).await;
    assert_eq!(status, StatusCode::OK, "this session stays");
    // ...unless the user keeps them.
    let (kept_key, _) = new_key("kept").await;
    let (status, _, body) = call(
        &browser,
        Method::PUT,
        &app.url("/me/password"),
        Some(json!({
            "current_password": "a much newer passphrase here",
            "new_password": "yet another long passphrase",
            "keep_other_sessions": true,
            "keep_api_keys": true,
        })),
    )
    .await;
    assert_eq!(status, StatusCode::NO_CONTENT, "{body}");
    let response = Client::new()
        .get(app.url("/me"))
        .bearer_auth(&kept_key)
        .send()
        .await
        .unwrap();
    assert_eq!(response.status(), StatusCode::OK);

    // An administrator's reset revokes the keys too.
    let root = app.signed_in("root").await;
    let (status, _, body) = call(
        &root,
        Method::PATCH,
        &app.url(&format!("/users/{alice}")),
        Some(json!({"password": "reset by the administrator"})),
    )
    .await;
    assert_eq!(status, StatusCode::OK, "{body}");
    let response = Client::new()
        .get(app.url("/me"))
        .bearer_auth(&kept_key)
        .send()
        .await
        .unwrap();
    assert_eq!(response.status(), StatusCode::UNAUTHORIZED);
});

on_both_engines!(
    the_last_admin_survives_concurrent_demotions_and_deletions,
    |db| {
        let app = TestApp::start(db).await;
        let count = 8;
        let mut ids = Vec::new();
        let mut sessions = Vec::new();
        // Read-write keys made in the store (sign-in is limited to 5 a minute per address).
        for i in 0..count {
            let id = app.user(&format!("admin{i}"), true).await;
            let secret = format!("tdg_{:064x}", i + 1);
            app.store
                .create_api_key(
                    id,
                    "concurrency",
                    &secret[..10],
                    &tidings_server::api::auth::secret_hash(&secret),
                    tidings_store::ApiKeyScope::ReadWrite,
                    None,
                )
                .await
                .unwrap();
            let mut headers = reqwest::header::HeaderMap::new();
            headers.insert(
                reqwest::header::AUTHORIZATION,
                format!("Bearer {secret}").parse().unwrap(),
            );
            ids.push(id);
            sessions.push(Client::builder().default_headers(headers).build().unwrap());
        }
        // Every administrator demotes or deletes every one of them, all at once: 64 requests.
        let mut requests = Vec::new();
        for (n, session) in sessions.iter().enumerate() {
            for (m, id) in ids.iter().enumerate() {
                let (method, body) = if (n + m) % 2 == 0 {
                    (Method::PATCH, Some(json!({"is_admin": false})))
                } else {
                    (Method::DELETE, None)
                };
                let url = app.url(&format!("/users/{id}"));
                requests.push(async move { call(session, method, &url, body).await.0 });
            }
        }
        let statuses = futures_util::future::join_all(requests).await;
        assert!(
            statuses
                .iter()
                .all(|s| [200, 204, 401, 403, 404, 409].contains(&s.as_u16())),
            "{statuses:?}"
        );
        let active: Vec<String> = app
            .store
            .list_users()
            .await
            .unwrap()
            .into_iter()
            .filter(|u| u.is_admin && !u.is_disabled)
            .map(|u| u.username)
            .collect();
        assert!(!active.is_empty(), "no administrator left: {statuses:?}");
        // And the survivor cannot be removed afterwards either.
        let survivor = app
            .store
            .user_credentials(&active[0])
            .await
            .unwrap()
            .unwrap()
            .0
            .id;
        if active.len() == 1 {
            assert!(app.store.delete_user(survivor).await.is_err());
            assert!(
                app.store
                    .set_user_flags(survivor, Some(false), None)
                    .await
                    .is_err()
            );
        }
    }
);

/// Posts `body_len` bytes of body with a `Content-Length`, in 64 KiB pieces sent slowly once
/// past `slow_after` bytes (so that the server has decided before the body ends), as an HTTP
/// client library does; returns the answer's status, or the error that ended the request.
async fn upload_slowly(
    request: reqwest::RequestBuilder,
    body_len: usize,
    slow_after: usize,
) -> Result<StatusCode, reqwest::Error> {
    let pieces = futures_util::stream::unfold(0usize, move |sent| async move {
        if sent >= body_len {
            return None;
        }
        if sent > slow_after {
            tokio::time::sleep(Duration::from_millis(20)).await;
        }
        let n = (64 * 1024).min(body_len - sent);
        Some((Ok::<_, std::io::Error>(vec![b' '; n]), sent + n))
    });
    let response = request
        .header(reqwest::header::CONTENT_LENGTH, body_len)
        .body(reqwest::Body::wrap_stream(pieces))
        .send()
        .await?;
    Ok(response.status())
}

// A refused upload (413, or 401 before the body is read) must reach a client that is still
// sending: the server reads a large body whole before answering. Without that, an HTTP client
// whose body write met the closed connection reported the broken pipe instead of the answer
// (the OPML import test failed so under load).
on_both_engines!(refused_large_uploads_still_get_their_answer, |db| {
    let app = TestApp::start(db).await;
    app.user("alice", false).await;
    let browser = app.signed_in("alice").await;
    let (_, _, created) = call(
        &browser,
        Method::POST,
        &app.url("/api-keys"),
        Some(json!({"name": "uploads", "scope": "read_write"})),
    )
    .await;
    let key = created["key"].as_str().unwrap();
    let six_mb = 6 * 1024 * 1024;
    // Over the OPML limit: 413 once the body has arrived.
    let request = Client::new()
        .post(app.url("/opml"))
        .bearer_auth(key)
        .header("content-type", "text/x-opml");
    let status = upload_slowly(request, six_mb, 5 * 1024 * 1024 + 512 * 1024).await;
    assert_eq!(status.unwrap(), StatusCode::PAYLOAD_TOO_LARGE);
    // Over the JSON limit, without credentials: the 401 arrives too.
    let request = Client::new()
        .post(app.url("/groups"))
        .header("content-type", "application/json");
    let status = upload_slowly(request, 2 * 1024 * 1024, 1024 * 1024).await;
    assert_eq!(status.unwrap(), StatusCode::UNAUTHORIZED);
});
