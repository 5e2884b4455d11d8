//! The accounts half of the REST API end to end: a real server on 127.0.0.1 over a real
//! database (SQLite, and PostgreSQL when configured), driven by a real HTTP client.

use tidings_testkit::on_both_engines;

use crate::support::{PASSWORD, TestApp, assert_error, call};
use reqwest::{Client, Method, StatusCode};
use serde_json::{Value, json};

on_both_engines!(first_admin_setup_through_the_api, |db| {
    let app = TestApp::start(db).await;
    let token = tidings_server::setup::issue_setup_token(&app.store)
        .await
        .unwrap()
        .unwrap();
    let browser = app.browser();
    let (status, _, body) = call(&browser, Method::GET, &app.url("/setup"), None).await;
    assert_eq!(
        (status, body["required"].clone()),
        (StatusCode::OK, json!(true))
    );

    let (status, _, body) = call(
        &browser,
        Method::POST,
        &app.url("/setup"),
        Some(json!({"token": "wrong", "username": "root", "password": PASSWORD})),
    )
    .await;
    assert_eq!(status, StatusCode::FORBIDDEN);
    assert_error(&body, "forbidden", "auth");

    let (status, _, body) = call(
        &browser,
        Method::POST,
        &app.url("/setup"),
        Some(json!({"token": token, "username": "root", "password": "short"})),
    )
    .await;
    assert_eq!(status, StatusCode::BAD_REQUEST);
    assert_error(&body, "weak_password", "validation");

    let (status, headers, body) = call(
        &browser,
        Method::POST,
        &app.url("/setup"),
        Some(json!({"token": token, "username": "Root", "password": PASSWORD})),
    )
    .await;
    assert_eq!(status, StatusCode::CREATED, "{body}");
    assert_eq!(body["user"]["username"], "Root", "the name as typed");
    assert_eq!(body["user"]["is_admin"], true);
    let cookie = headers["set-cookie"].to_str().unwrap();
    assert!(
        cookie.contains("HttpOnly") && cookie.contains("SameSite=Lax"),
        "{cookie}"
    );
    assert!(!cookie.contains("Secure"), "plain http: no Secure flag");

    let (status, _, body) = call(&browser, Method::GET, &app.url("/me"), None).await;
    assert_eq!(status, StatusCode::OK);
    assert_eq!(body["user"]["username"], "Root");

    let (status, _, body) = call(
        &app.browser(),
        Method::POST,
        &app.url("/setup"),
        Some(json!({"token": token, "username": "second", "password": PASSWORD})),
    )
    .await;
    assert_eq!(status, StatusCode::CONFLICT, "{body}");
    let (_, _, body) = call(&browser, Method::GET, &app.url("/setup"), None).await;
    assert_eq!(body["required"], false);
});

on_both_engines!(sign_in_and_out_without_telling_who_exists, |db| {
    let app = TestApp::start(db).await;
    app.user("alice", false).await;
    let browser = app.browser();
    let (status, _, wrong_password) = call(
        &browser,
        Method::POST,
        &app.url("/session"),
        Some(json!({"username": "alice", "password": "not the password at all"})),
    )
    .await;
    assert_eq!(status, StatusCode::UNAUTHORIZED);
    let (status, _, unknown_user) = call(
        &browser,
        Method::POST,
        &app.url("/session"),
        Some(json!({"username": "nobody", "password": "not the password at all"})),
    )
    .await;
    assert_eq!(status, StatusCode::UNAUTHORIZED);
    assert_eq!(wrong_password, unknown_user, "same answer for both");
    assert_error(&unknown_user, "invalid_credentials", "auth");

    let (status, _, _) = call(&browser, Method::GET, &app.url("/me"), None).await;
    assert_eq!(status, StatusCode::UNAUTHORIZED);
    let browser = app.signed_in("alice").await;
    let (status, _, body) = call(&browser, Method::GET, &app.url("/me"), None).await;
    assert_eq!(status, StatusCode::OK);
    assert!(body["user"]["last_login_at"].is_string());
    let (status, headers, _) = call(&browser, Method::DELETE, &app.url("/session"), None).await;
    assert_eq!(status, StatusCode::NO_CONTENT);
    assert!(
        headers["set-cookie"]
            .to_str()
            .unwrap()
            .contains("Max-Age=0")
    );
    let (status, _, body) = call(&browser, Method::GET, &app.url("/me"), None).await;
    assert_eq!(status, StatusCode::UNAUTHORIZED);
    assert_error(&body, "unauthenticated", "auth");

    // A disabled account cannot sign in, and is told so only with the right password.
    app.store
        .set_user_flags(
            app.store
                .user_credentials("alice")
                .await
                .unwrap()
                .unwrap()
                .0
                .id,
            None,
            Some(true),
        )
        .await
        .unwrap();
    let (status, _, body) = call(
        &app.browser(),
        Method::POST,
        &app.url("/session"),
        Some(json!({"username": "alice", "password": PASSWORD})),
    )
    .await;
    assert_eq!(status, StatusCode::FORBIDDEN, "{body}");
});

on_both_engines!(sign_in_is_rate_limited_per_address, |db| {
    let app = TestApp::start(db).await;
    let client = app.browser();
    for attempt in 0..5 {
        let (status, _, _) = call(
            &client,
            Method::POST,
            &app.url("/session"),
            Some(json!({"username": format!("u{attempt}"), "password": "wrong password here"})),
        )
        .await;
        assert_eq!(status, StatusCode::UNAUTHORIZED);
    }
    let (status, headers, body) = call(
        &client,
        Method::POST,
        &app.url("/session"),
        Some(json!({"username": "alice", "password": PASSWORD})),
    )
    .await;
    assert_eq!(status, StatusCode::TOO_MANY_REQUESTS);
    assert_error(&body, "rate_limited", "limit");
    let retry: u64 = headers["retry-after"].to_str().unwrap().parse().unwrap();
    assert!((1..=60).contains(&retry));
    assert!(
        body["error"]["message"]
            .as_str()
            .unwrap()
            .contains("try again in")
    );
    assert!(headers.contains_key("x-ratelimit-limit"));
    assert!(headers.contains_key("x-ratelimit-remaining"));
    assert!(headers.contains_key("x-ratelimit-reset"));
});

on_both_engines!(api_keys_are_shown_once_scoped_and_revocable, |db| {
    let app = TestApp::start(db).await;
    app.user("bob", false).await;
    let browser = app.signed_in("bob").await;
    let (status, _, created) = call(
        &browser,
        Method::POST,
        &app.url("/api-keys"),
        Some(json!({"name": "reader", "scope": "read"})),
    )
    .await;
    assert_eq!(status, StatusCode::CREATED, "{created}");
    let read_key = created["key"].as_str().unwrap().to_string();
    assert!(read_key.starts_with("tdg_") && read_key.len() > 60);
    assert!(read_key.starts_with(created["api_key"]["prefix"].as_str().unwrap()));
    let (_, _, created) = call(
        &browser,
        Method::POST,
        &app.url("/api-keys"),
        Some(
            json!({"name": "writer", "scope": "read_write", "expires_at": "2099-01-01T00:00:00Z"}),
        ),
    )
    .await;
    let write_key = created["key"].as_str().unwrap().to_string();
    let write_id = created["api_key"]["id"].as_i64().unwrap();
    assert_eq!(created["api_key"]["expires_at"], "2099-01-01T00:00:00Z");

    let (_, _, listed) = call(&browser, Method::GET, &app.url("/api-keys"), None).await;
    let listed = listed["api_keys"].as_array().unwrap().clone();
    assert_eq!(listed.len(), 2);
    assert!(
        !serde_json::to_string(&listed)
            .unwrap()
            .contains(&read_key[10..]),
        "secret never listed"
    );

    let script = Client::new();
    let (status, _, body) = call(&script, Method::GET, &app.url("/me"), None).await;
    assert_eq!(status, StatusCode::UNAUTHORIZED, "{body}");
    let with_key = |key: &str, method: Method, path: &str, body: Option<Value>| {
        let mut request = script.request(method, app.url(path)).bearer_auth(key);
        if let Some(body) = body {
            request = request.json(&body);
        }
        request.send()
    };
    let response = with_key(&read_key, Method::GET, "/me", None).await.unwrap();
    assert_eq!(response.status(), StatusCode::OK);
    let response = with_key(
        &read_key,
        Method::POST,
        "/api-keys",
        Some(json!({"name": "x"})),
    )
    .await
    .unwrap();
    assert_eq!(
        response.status(),
        StatusCode::FORBIDDEN,
        "read-only keys cannot write"
    );
    // Even a read-write key cannot make keys (F23): that needs a signed-in session.
    let response = with_key(
        &write_key,
        Method::POST,
        "/api-keys",
        Some(json!({"name": "x"})),
    )
    .await
    .unwrap();
    assert_eq!(response.status(), StatusCode::FORBIDDEN);
    let response = with_key("tdg_0000", Method::GET, "/me", None)
        .await
        .unwrap();
    assert_eq!(response.status(), StatusCode::UNAUTHORIZED);

    // Expired and revoked keys stop working.
    app.store
        .execute_raw(&format!(
            "UPDATE api_keys SET expires_at = 1 WHERE id = {write_id}"
        ))
        .await
        .unwrap();
    // Changed behind the server's back (no path of tidings shortens a key's life), so the
    // server's 10-second memory of keys that authenticated lately is waited out, as another
    // process's change is (docs/security.md).
    tokio::time::sleep(std::time::Duration::from_secs(11)).await;
    let response = with_key(&write_key, Method::GET, "/me", None)
        .await
        .unwrap();
    assert_eq!(response.status(), StatusCode::UNAUTHORIZED);
    let read_id = listed.iter().find(|k| k["name"] == "reader").unwrap()["id"]
        .as_i64()
        .unwrap();
    let (status, _, _) = call(
        &browser,
        Method::DELETE,
        &app.url(&format!("/api-keys/{read_id}")),
        None,
    )
    .await;
    assert_eq!(status, StatusCode::NO_CONTENT);
    let response = with_key(&read_key, Method::GET, "/me", None).await.unwrap();
    assert_eq!(response.status(), StatusCode::UNAUTHORIZED);

    for bad in [
        json!({"name": ""}),
        json!({"name": "k", "scope": "admin"}),
        json!({"name": "k", "expires_at": "tomorrow"}),
        json!({"name": "k", "expires_at": "2001-01-01T00:00:00Z"}),
    ] {
        let (status, _, body) = call(
            &browser,
            Method::POST,
            &app.url("/api-keys"),
            Some(bad.clone()),
        )
        .await;
        assert_eq!(status, StatusCode::BAD_REQUEST, "{bad}: {body}");
        assert_eq!(body["error"]["category"], "validation");
    }

    // Another user cannot see or revoke bob's keys.
    app.user("eve", false).await;
    let eve = app.signed_in("eve").await;
    let (_, _, listed) = call(&eve, Method::GET, &app.url("/api-keys"), None).await;
    assert_eq!(listed["api_keys"].as_array().unwrap().len(), 0);
    let (status, _, body) = call(
        &eve,
        Method::DELETE,
        &app.url(&format!("/api-keys/{write_id}")),
        None,
    )
    .await;
    assert_eq!(status, StatusCode::NOT_FOUND);
    assert_error(&body, "not_found", "validation");
});

on_both_engines!(csrf_cors_headers_and_body_rules, |db| {
    let app = TestApp::start_with(db, true, |config| {
        config.cors_origins = vec!["https://app.example".into()];
    })
    .await;
    app.user("carol", false).await;
    let browser = app.signed_in("carol").await;

    // A cookie-authenticated write from another site is refused; from our origin it passes.
    let response = browser
        .post(app.url("/api-keys"))
        .header("origin", "https://evil.example")
        .json(&json!({"name": "k"}))
        .send()
        .await
        .unwrap();
    assert_eq!(response.status(), StatusCode::FORBIDDEN);
    let body: Value = response.json().await.unwrap();
    assert!(
        body["error"]["message"]
            .as_str()
            .unwrap()
            .contains("forgery")
    );
    // A client that sends no Origin of its own, only Sec-Fetch-Site.
    let bare = Client::builder().cookie_store(true).build().unwrap();
    let response = bare
        .post(app.url("/session"))
        .json(&json!({"username": "carol", "password": PASSWORD}))
        .send()
        .await
        .unwrap();
    assert_eq!(response.status(), StatusCode::OK);
    let response = bare
        .post(app.url("/api-keys"))
        .header("sec-fetch-site", "cross-site")
        .json(&json!({"name": "k"}))
        .send()
        .await
        .unwrap();
    assert_eq!(response.status(), StatusCode::FORBIDDEN);
    let response = browser
        .post(app.url("/api-keys"))
        .header("origin", app.base.clone())
        .json(&json!({"name": "k", "scope": "read_write"}))
        .send()
        .await
        .unwrap();
    assert_eq!(response.status(), StatusCode::CREATED);
    let key = response.json::<Value>().await.unwrap()["key"]
        .as_str()
        .unwrap()
        .to_string();
    // API keys are exempt: the Origin does not matter.
    let response = Client::new()
        .post(app.url("/groups"))
        .bearer_auth(&key)
        .header("origin", "https://evil.example")
        .json(&json!({"name": "k2"}))
        .send()
        .await
        .unwrap();
    assert_eq!(response.status(), StatusCode::CREATED);

    // CORS only for the configured origin.
    let allowed = Client::new()
        .get(app.url("/setup"))
        .header("origin", "https://app.example")
        .send()
        .await
        .unwrap();
    assert_eq!(
        allowed.headers()["access-control-allow-origin"],
        "https://app.example"
    );
    let other = Client::new()
        .get(app.url("/setup"))
        .header("origin", "https://other.example")
        .send()
        .await
        .unwrap();
    assert!(!other.headers().contains_key("access-control-allow-origin"));

    // Security headers everywhere.
    for path in ["/healthz", "/api/v1/me", "/api/v1/nowhere"] {
        let response = Client::new()
            .get(format!("{}{path}", app.base))
            .send()
            .await
            .unwrap();
        let headers = response.headers();
        let csp = headers["content-security-policy"].to_str().unwrap();
        assert!(csp.contains("frame-ancestors 'none'") && csp.contains("script-src 'self'"));
        assert!(!csp.contains("unsafe-inline"));
        assert_eq!(headers["x-content-type-options"], "nosniff");
        assert!(headers.contains_key("referrer-policy"));
    }

    // Bodies: malformed, wrong type, unknown fields, too large; unknown paths and methods.
    let raw = |body: &'static str, content_type: &'static str| {
        browser
            .post(app.url("/api-keys"))
            .header("content-type", content_type)
            .body(body)
            .send()
    };
    let response = raw("{not json", "application/json").await.unwrap();
    assert_eq!(response.status(), StatusCode::BAD_REQUEST);
    assert_error(
        &response.json().await.unwrap(),
        "malformed_json",
        "validation",
    );
    let response = raw("{}", "text/plain").await.unwrap();
    assert_eq!(response.status(), StatusCode::UNSUPPORTED_MEDIA_TYPE);
    let response = raw(r#"{"name": "k", "colour": "red"}"#, "application/json")
        .await
        .unwrap();
    assert_eq!(response.status(), StatusCode::BAD_REQUEST);
    let huge = format!(r#"{{"name": "{}"}}"#, "x".repeat(2 * 1024 * 1024));
    // Its own client: the server answers 413 without reading the body and then closes the
    // connection, which a pooled client might otherwise reuse.
    let response = app
        .signed_in("carol")
        .await
        .post(app.url("/api-keys"))
        .header("content-type", "application/json")
        .body(huge)
        .send()
        .await
        .unwrap();
    assert_eq!(response.status(), StatusCode::PAYLOAD_TOO_LARGE);
    assert_error(&response.json().await.unwrap(), "body_too_large", "limit");
    let (status, _, body) = call(&browser, Method::GET, &app.url("/nowhere"), None).await;
    assert_eq!(status, StatusCode::NOT_FOUND);
    assert_error(&body, "not_found", "validation");
    let (status, _, body) = call(&browser, Method::PATCH, &app.url("/me"), None).await;
    assert_eq!(status, StatusCode::METHOD_NOT_ALLOWED);
    assert_error(&body, "method_not_allowed", "validation");
    let (status, _, _) = call(
        &browser,
        Method::DELETE,
        &app.url("/api-keys/not-a-number"),
        None,
    )
    .await;
    assert_eq!(status, StatusCode::NOT_FOUND);
});

on_both_engines!(password_change_and_sessions, |db| {
    let app = TestApp::start(db).await;
    app.user("dora", false).await;
    let laptop = app.signed_in("dora").await;
    let phone = app.signed_in("dora").await;
    let (_, _, listed) = call(&laptop, Method::GET, &app.url("/me/sessions"), None).await;
    let sessions = listed["sessions"].as_array().unwrap();
    assert_eq!(sessions.len(), 2);
    assert_eq!(sessions.iter().filter(|s| s["current"] == true).count(), 1);

    let (status, _, body) = call(
        &laptop,
        Method::PUT,
        &app.url("/me/password"),
        Some(json!({"current_password": "wrong wrong wrong", "new_password": "a brand new passphrase"})),
    )
    .await;
    assert_eq!(status, StatusCode::FORBIDDEN, "{body}");
    let (status, _, body) = call(
        &laptop,
        Method::PUT,
        &app.url("/me/password"),
        Some(json!({"current_password": PASSWORD, "new_password": "dora12345678"})),
    )
    .await;
    assert_eq!(status, StatusCode::BAD_REQUEST);
    assert_error(&body, "weak_password", "validation");
    let (status, _, _) = call(
        &laptop,
        Method::PUT,
        &app.url("/me/password"),
        Some(json!({"current_password": PASSWORD, "new_password": "a brand new passphrase"})),
    )
    .await;
    assert_eq!(status, StatusCode::NO_CONTENT);
    let (status, _, _) = call(&laptop, Method::GET, &app.url("/me"), None).await;
    assert_eq!(status, StatusCode::OK, "the changing session stays");
    let (status, _, _) = call(&phone, Method::GET, &app.url("/me"), None).await;
    assert_eq!(status, StatusCode::UNAUTHORIZED, "other sessions end");
    let (_, _, listed) = call(&laptop, Method::GET, &app.url("/me/sessions"), None).await;
    assert_eq!(listed["sessions"].as_array().unwrap().len(), 1);
    let (status, _, _) = call(
        &app.browser(),
        Method::POST,
        &app.url("/session"),
        Some(json!({"username": "dora", "password": "a brand new passphrase"})),
    )
    .await;
    assert_eq!(status, StatusCode::OK);
});

on_both_engines!(administrators_manage_users, |db| {
    let app = TestApp::start(db).await;
    app.user("admin", true).await;
    app.user("user", false).await;
    let admin = app.signed_in("admin").await;
    let user = app.signed_in("user").await;

    let (status, _, body) = call(&user, Method::GET, &app.url("/users"), None).await;
    assert_eq!(status, StatusCode::FORBIDDEN);
    assert_error(&body, "forbidden", "auth");
    let (_, _, listed) = call(&admin, Method::GET, &app.url("/users"), None).await;
    assert_eq!(listed["users"].as_array().unwrap().len(), 2);

    let (status, _, body) = call(
        &admin,
        Method::POST,
        &app.url("/users"),
        Some(json!({"username": "newbie", "password": "password"})),
    )
    .await;
    assert_eq!(status, StatusCode::BAD_REQUEST, "{body}");
    let (status, _, body) = call(
        &admin,
        Method::POST,
        &app.url("/users"),
        Some(json!({"username": "newbie", "password": PASSWORD})),
    )
    .await;
    assert_eq!(status, StatusCode::CREATED, "{body}");
    let newbie = body["user"]["id"].as_i64().unwrap();
    let (status, _, _) = call(
        &admin,
        Method::POST,
        &app.url("/users"),
        Some(json!({"username": "NEWBIE", "password": PASSWORD})),
    )
    .await;
    assert_eq!(status, StatusCode::CONFLICT);

    let newbie_browser = app.signed_in("newbie").await;
    let (status, _, body) = call(
        &admin,
        Method::PATCH,
        &app.url(&format!("/users/{newbie}")),
        Some(json!({"is_disabled": true})),
    )
    .await;
    assert_eq!(status, StatusCode::OK, "{body}");
    assert_eq!(body["user"]["is_disabled"], true);
    let (status, _, _) = call(&newbie_browser, Method::GET, &app.url("/me"), None).await;
    assert_eq!(status, StatusCode::UNAUTHORIZED, "disabling ends sessions");

    let admin_id = app
        .store
        .user_credentials("admin")
        .await
        .unwrap()
        .unwrap()
        .0
        .id;
    let (status, _, body) = call(
        &admin,
        Method::PATCH,
        &app.url(&format!("/users/{admin_id}")),
        Some(json!({"is_admin": false})),
    )
    .await;
    assert_eq!(status, StatusCode::CONFLICT, "{body}");
    let (status, _, _) = call(
        &admin,
        Method::DELETE,
        &app.url(&format!("/users/{admin_id}")),
        None,
    )
    .await;
    assert_eq!(status, StatusCode::CONFLICT);
    let (status, _, _) = call(
        &admin,
        Method::DELETE,
        &app.url("/me"),
        Some(json!({"password": PASSWORD})),
    )
    .await;
    assert_eq!(
        status,
        StatusCode::CONFLICT,
        "the last admin keeps their account"
    );

    let (status, _, _) = call(
        &admin,
        Method::DELETE,
        &app.url(&format!("/users/{newbie}")),
        None,
    )
    .await;
    assert_eq!(status, StatusCode::NO_CONTENT);
    let (status, _, _) = call(
        &admin,
        Method::DELETE,
        &app.url(&format!("/users/{newbie}")),
        None,
    )
    .await;
    assert_eq!(status, StatusCode::NOT_FOUND);

    // A user deletes their own account, with their password; they cannot sign in again.
    let (status, _, _) = call(
        &user,
        Method::DELETE,
        &app.url("/me"),
        Some(json!({"password": "not the password"})),
    )
    .await;
    assert_eq!(status, StatusCode::FORBIDDEN);
    let (status, _, _) = call(
        &user,
        Method::DELETE,
        &app.url("/me"),
        Some(json!({"password": PASSWORD})),
    )
    .await;
    assert_eq!(status, StatusCode::NO_CONTENT);
    let (status, _, _) = call(
        &app.browser(),
        Method::POST,
        &app.url("/session"),
        Some(json!({"username": "user", "password": PASSWORD})),
    )
    .await;
    assert_eq!(status, StatusCode::UNAUTHORIZED);
});

on_both_engines!(the_openapi_document_describes_every_route, |db| {
    let app = TestApp::start(db).await;
    let (status, _, doc) = call(&Client::new(), Method::GET, &app.url("/openapi.json"), None).await;
    assert_eq!(status, StatusCode::OK);
    assert!(doc["openapi"].as_str().unwrap().starts_with("3.1"));
    let paths = doc["paths"].as_object().unwrap();
    for (path, method) in [
        ("/api/v1/session", "post"),
        ("/api/v1/session", "delete"),
        ("/api/v1/me", "get"),
        ("/api/v1/me", "delete"),
        ("/api/v1/api-keys", "get"),
        ("/api/v1/api-keys", "post"),
        ("/api/v1/api-keys/{id}", "delete"),
        ("/api/v1/users", "get"),
        ("/api/v1/users", "post"),
        ("/api/v1/users/{id}", "patch"),
        ("/api/v1/users/{id}", "delete"),
        ("/api/v1/setup", "post"),
    ] {
        assert!(
            paths.get(path).and_then(|p| p.get(method)).is_some(),
            "{method} {path} documented"
        );
    }
    // Every documented operation is served: none answers 404 or 405.
    let client = Client::new();
    for (path, operations) in paths {
        for method in operations.as_object().unwrap().keys() {
            let url = format!("{}{}", app.base, path.replace("{id}", "1"));
            let method: Method = method.to_uppercase().parse().unwrap();
            let response = client
                .request(method.clone(), &url)
                .header("content-type", "application/json")
                .body("{}")
                .send()
                .await
                .unwrap();
            let status = response.status();
            assert!(
                status != StatusCode::METHOD_NOT_ALLOWED
                    && !(status == StatusCode::NOT_FOUND
                        && response.json::<Value>().await.unwrap()["error"]["code"] == "not_found"
                        && !path.contains("{id}")),
                "{method} {path} answered {status}"
            );
        }
    }
});
