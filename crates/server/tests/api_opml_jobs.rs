//! OPML import as a background job (issue 32), against a feed server whose feeds answer only
//! when the test lets them: the upload answers 202 before any feed is checked, the counters
//! move as feeds answer, the final report has one entry per URL with the new feeds' items
//! stored, a feed that fails in a way that may pass is subscribed, and another user cannot see
//! the import.

use std::sync::Arc;

use axum::extract::{Path, State};
use axum::response::IntoResponse;
use reqwest::{Client, Method, StatusCode};
use serde_json::Value;
use tidings_testkit::on_both_engines;
use tokio::sync::Semaphore;

use crate::support::{TestApp, TestServer, assert_error, call, rss, wait_for_import};

/// Feeds `/gated/{n}.xml` that answer (a feed of two items) only once the test adds a permit
/// to the gate, one feed a permit; `/gated/down.xml` answers 503 the same way.
async fn gated_site() -> (TestServer, Arc<Semaphore>) {
    let gate = Arc::new(Semaphore::new(0));
    let router = axum::Router::new()
        .route("/gated/{name}", axum::routing::get(gated_feed))
        .with_state(Arc::clone(&gate));
    (TestServer::start(router).await, gate)
}

async fn gated_feed(
    State(gate): State<Arc<Semaphore>>,
    Path(name): Path<String>,
    headers: axum::http::HeaderMap,
) -> axum::response::Response {
    if let Ok(permit) = gate.acquire().await {
        permit.forget();
    }
    if name == "down.xml" {
        return (axum::http::StatusCode::SERVICE_UNAVAILABLE, "down for now").into_response();
    }
    let host = headers
        .get("host")
        .and_then(|h| h.to_str().ok())
        .unwrap_or("127.0.0.1");
    (
        [("content-type", "application/rss+xml")],
        rss(&format!("http://{host}"), name.trim_end_matches(".xml"), 2),
    )
        .into_response()
}

/// The import's state now.
async fn status_of(client: &Client, url: &str) -> Value {
    let (status, _, job) = call(client, Method::GET, url, None).await;
    assert_eq!(status, StatusCode::OK, "{job}");
    job
}

/// Polls `url` until `done` holds of the import (up to 30 s); answers that state.
async fn wait_for(client: &Client, url: &str, what: &str, done: impl Fn(&Value) -> bool) -> Value {
    let deadline = std::time::Instant::now() + std::time::Duration::from_secs(30);
    loop {
        let job = status_of(client, url).await;
        if done(&job) {
            return job;
        }
        assert!(std::time::Instant::now() < deadline, "{what}: {job}");
        // Within the per-user rate limit (120 requests a minute).
        tokio::time::sleep(std::time::Duration::from_millis(300)).await;
    }
}

on_both_engines!(an_opml_import_runs_in_the_background, |db| {
    let app = TestApp::start(db).await;
    let (site, gate) = gated_site().await;
    app.user("ann", false).await;
    app.user("bob", false).await;
    let ann = app.signed_in("ann").await;
    let bob = app.signed_in("bob").await;
    let outlines: String = (0..4)
        .map(|n| {
            format!(
                "<outline text=\"Feed {n}\" xmlUrl=\"{}\"/>",
                site.url(&format!("/gated/{n}.xml"))
            )
        })
        .collect();
    let opml = format!(
        "<opml version=\"2.0\"><body><outline text=\"Folder\">{outlines}\
         <outline text=\"Down\" xmlUrl=\"{}\"/><outline text=\"Gone\" xmlUrl=\"{}\"/>\
         </outline><outline text=\"Bad\" xmlUrl=\"javascript:alert(1)\"/></body></opml>",
        site.url("/gated/down.xml"),
        site.url("/nothing-here.xml"),
    );
    // The answer comes while every feed is still held back.
    let response = ann
        .post(app.url("/opml"))
        .header("content-type", "text/x-opml")
        .header("x-file-name", "mine.opml")
        .body(opml)
        .send()
        .await
        .unwrap();
    assert_eq!(response.status(), StatusCode::ACCEPTED);
    let location = response.headers()["location"].to_str().unwrap().to_owned();
    let started: Value = response.json().await.unwrap();
    assert_eq!(started["status"], "running", "{started}");
    assert_eq!(started["total"], 7, "{started}");
    let id = started["import_id"].as_i64().unwrap();
    assert_eq!(location, format!("/api/v1/opml/imports/{id}"));
    let url = app.url(&format!("/opml/imports/{id}"));

    // The address refused and the 404 settle without the gate; the gated feeds wait.
    let job = wait_for(&ann, &url, "the ungated entries settle", |job| {
        job["checked"] == 2
    })
    .await;
    assert_eq!(job["status"], "running", "{job}");
    assert_eq!(
        (job["added"].as_i64(), job["failed"].as_i64()),
        (Some(0), Some(2)),
        "{job}"
    );
    assert_eq!(
        job["entries"],
        Value::Array(vec![]),
        "the report comes once done: {job}"
    );
    // Nobody else sees it, not even that it exists.
    let (status, _, body) = call(&bob, Method::GET, &url, None).await;
    assert_eq!(status, StatusCode::NOT_FOUND, "{body}");
    assert_error(&body, "not_found", "validation");

    // Two feeds answer: the counters move.
    gate.add_permits(2);
    let job = wait_for(&ann, &url, "two feeds are added", |job| job["added"] == 2).await;
    assert_eq!(job["checked"], 4, "{job}");
    // The rest answer (the 503 among them): the import is done.
    gate.add_permits(3);
    let job = wait_for_import(&ann, &url).await;
    assert_eq!(job["status"], "done", "{job}");
    assert_eq!(
        (
            &job["total"],
            &job["checked"],
            &job["added"],
            &job["failed"],
            &job["refused"]
        ),
        (
            &Value::from(7),
            &Value::from(7),
            &Value::from(5),
            &Value::from(2),
            &Value::from(1)
        ),
        "{job}"
    );
    assert_eq!(job["file_name"], "mine.opml");
    assert!(job["finished_at"].is_string(), "{job}");
    let entries = job["entries"].as_array().unwrap();
    assert_eq!(entries.len(), 7, "{job}");
    assert_eq!(entries[0]["status"], "added");
    assert_eq!(entries[0]["group"], "Folder");
    // A 503 may pass: subscribed, with its error.
    assert_eq!(entries[4]["status"], "added", "{job}");
    assert!(
        entries[4]["reason"].as_str().unwrap().contains("HTTP 503"),
        "{job}"
    );
    assert_eq!(entries[5]["status"], "failed", "{job}");
    assert_eq!(entries[5]["reason"], "the server answered HTTP 404");
    assert_eq!(entries[6]["status"], "refused", "{job}");

    // Done means stored: every feed that answered has its items.
    let (_, _, listed) = call(&ann, Method::GET, &app.url("/subscriptions"), None).await;
    let subscriptions = listed["subscriptions"].as_array().unwrap();
    assert_eq!(subscriptions.len(), 5, "{listed}");
    let (_, _, items) = call(&ann, Method::GET, &app.url("/items?filter=all"), None).await;
    assert_eq!(items["items"].as_array().unwrap().len(), 8, "{items}");
    let down = subscriptions
        .iter()
        .find(|s| s["title"] == "Down")
        .expect("the feed that was down is subscribed");
    assert!(down["last_error"].is_string(), "{down}");

    // The history lists it.
    let (_, _, history) = call(&ann, Method::GET, &app.url("/opml/imports"), None).await;
    assert_eq!(history["imports"][0]["id"], id, "{history}");
    assert_eq!(history["imports"][0]["status"], "done", "{history}");
    let (_, _, history) = call(&bob, Method::GET, &app.url("/opml/imports"), None).await;
    assert_eq!(history["imports"], Value::Array(vec![]), "{history}");
});

on_both_engines!(a_user_runs_a_few_imports_at_once, |db| {
    let app = TestApp::start(db).await;
    let (site, gate) = gated_site().await;
    app.user("ann", false).await;
    let ann = app.signed_in("ann").await;
    let upload = |n: usize| {
        let opml = format!(
            "<opml version=\"2.0\"><body><outline xmlUrl=\"{}\"/></body></opml>",
            site.url(&format!("/gated/{n}.xml"))
        );
        ann.post(app.url("/opml"))
            .header("content-type", "text/x-opml")
            .body(opml)
            .send()
    };
    let mut ids = Vec::new();
    for n in 0..3 {
        let response = upload(n).await.unwrap();
        assert_eq!(response.status(), StatusCode::ACCEPTED);
        let started: Value = response.json().await.unwrap();
        ids.push(started["import_id"].as_i64().unwrap());
    }
    let response = upload(3).await.unwrap();
    assert_eq!(response.status(), StatusCode::TOO_MANY_REQUESTS);
    assert!(response.headers().contains_key("retry-after"));
    let body: Value = response.json().await.unwrap();
    assert_error(&body, "imports_running", "limit");
    // Once they are done, the next one runs.
    gate.add_permits(3);
    for id in ids {
        let job = wait_for_import(&ann, &app.url(&format!("/opml/imports/{id}"))).await;
        assert_eq!(job["status"], "done", "{job}");
    }
    gate.add_permits(1);
    let response = upload(3).await.unwrap();
    assert_eq!(response.status(), StatusCode::ACCEPTED);
    // An id that is nobody's is not found either.
    let (status, _, _) = call(&ann, Method::GET, &app.url("/opml/imports/999999"), None).await;
    assert_eq!(status, StatusCode::NOT_FOUND);
});
