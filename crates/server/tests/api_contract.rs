//! The API keeps its contract, end to end on a real server over SQLite and PostgreSQL: every
//! refusal of what a request says is a 400 with the JSON error body naming the field and what
//! to do (never a 422).

#[path = "../../store/tests/common/mod.rs"]
mod common;

mod support;

use reqwest::{Method, StatusCode};
use serde_json::{Value, json};
use support::{FeedServer, PASSWORD, TestApp, assert_error, call};

/// Checks that an answer is a 400 of `category` with the code `code`, whose message names
/// `field`.
fn assert_bad_request(what: &str, status: StatusCode, body: &Value, code: &str, field: &str) {
    assert_eq!(status, StatusCode::BAD_REQUEST, "{what}: {body}");
    let category = if body["error"]["category"] == "feed" {
        "feed"
    } else {
        "validation"
    };
    assert_error(body, code, category);
    let message = body["error"]["message"].as_str().unwrap_or_default();
    assert!(
        message.contains(field),
        "{what}: the message does not name {field}: {body}"
    );
}

on_both_engines!(validation_errors_are_400_naming_the_field, |db| {
    let app = TestApp::start(db).await;
    app.user("alice", false).await;
    let browser = app.signed_in("alice").await;
    let feeds = FeedServer::start().await;
    feeds.serve(
        "/page",
        200,
        "text/html",
        "<html><head><title>No feed here</title></head><body>Hello</body></html>",
    );

    // Each was a 422 before; each names what was wrong.
    let cases: Vec<(Method, String, Value, &str, &str)> = vec![
        // A field of the wrong type: serde's reason, with the field's path.
        (
            Method::POST,
            app.url("/groups"),
            json!({"name": 5}),
            "invalid_request",
            "name",
        ),
        (
            Method::POST,
            app.url("/bookmarks"),
            json!({"item_id": "one"}),
            "invalid_request",
            "item_id",
        ),
        (
            Method::POST,
            app.url("/items/mark-read"),
            json!({"ids": [1, "two"]}),
            "invalid_request",
            "ids[1]",
        ),
        // A missing field.
        (
            Method::POST,
            app.url("/groups"),
            json!({}),
            "invalid_request",
            "name",
        ),
        // Values the handlers or the store refuse.
        (
            Method::POST,
            app.url("/subscriptions"),
            json!({"url": "  "}),
            "invalid_request",
            "url",
        ),
        (
            Method::POST,
            app.url("/subscriptions"),
            json!({"url": "http://[::1"}),
            "invalid_request",
            "url",
        ),
        (
            Method::POST,
            app.url("/subscriptions"),
            json!({"url": feeds.url("/feed-elsewhere"), "interval_minutes": 45}),
            "invalid_request",
            "interval_minutes",
        ),
        (
            Method::PUT,
            app.url("/preferences"),
            json!({"page_size": 5000}),
            "invalid_request",
            "page_size",
        ),
        (
            Method::PUT,
            app.url("/me/password"),
            json!({"current_password": PASSWORD, "new_password": "aaaaaaaaaaaaaaaa"}),
            "weak_password",
            "assword",
        ),
        (
            Method::POST,
            app.url("/items/mark-read"),
            json!({"all": true, "before": "yesterday"}),
            "invalid_request",
            "before",
        ),
        (
            Method::POST,
            app.url("/api-keys"),
            json!({"name": "k", "scope": "read", "expires_at": "2000-01-01T00:00:00Z"}),
            "invalid_request",
            "expires_at",
        ),
        // An address that leads to no feed is bad input too: a 400 of category feed.
        (
            Method::POST,
            app.url("/subscriptions"),
            json!({"url": feeds.url("/page")}),
            "no_feed_found",
            "No feed found",
        ),
    ];
    for (method, url, body, code, field) in cases {
        let what = format!("{method} {url} {body}");
        let (status, _, answer) = call(&browser, method, &url, Some(body)).await;
        assert_bad_request(&what, status, &answer, code, field);
    }

    // Query parameters: the parameter is named.
    for (query, field) in [
        ("limit=0", "limit"),
        ("limit=abc", "limit"),
        ("filter=everything", "filter"),
        ("order=sideways", "order"),
        ("since=yesterday", "since"),
        ("q=a%20b%20c%20d%20e%20f%20g%20h%20i%20j%20k", "q"),
    ] {
        let url = app.url(&format!("/items?{query}"));
        let (status, _, answer) = call(&browser, Method::GET, &url, None).await;
        assert_bad_request(&url, status, &answer, "invalid_request", field);
    }

    // The default group cannot be deleted: a 400, not a 422.
    let (_, _, groups) = call(&browser, Method::GET, &app.url("/groups"), None).await;
    let default = groups["groups"]
        .as_array()
        .unwrap()
        .iter()
        .find(|g| g["is_default"] == true)
        .map(|g| g["id"].as_i64().unwrap())
        .expect("a default group");
    let (status, _, answer) = call(
        &browser,
        Method::DELETE,
        &app.url(&format!("/groups/{default}")),
        None,
    )
    .await;
    assert_bad_request(
        "delete default group",
        status,
        &answer,
        "invalid_request",
        "default group",
    );

    // An upload that is not OPML.
    let response = browser
        .post(app.url("/opml"))
        .header("content-type", "text/x-opml")
        .body("this is not OPML")
        .send()
        .await
        .unwrap();
    let status = response.status();
    let answer: Value = response.json().await.unwrap();
    assert_bad_request("OPML import", status, &answer, "invalid_opml", "OPML");
});
