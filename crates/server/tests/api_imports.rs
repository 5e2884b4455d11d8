//! Imports from another reader through the API (issue 32): `POST /imports` runs
//! `tidings import` as a background job. The other reader is a second tidings, started here
//! on 127.0.0.1 (on SQLite, whatever engine the importing server runs on), read through its
//! Google Reader API and its Miniflux API: Bob's subscriptions, folders, stars and read marks
//! there land in Ann's account here; a dry run and a second run change nothing; a wrong
//! password fails the job with the reason; the credentials never come back; what can be
//! checked before the job is a 400 at once; another user cannot see the import.

use std::sync::Arc;

use axum::extract::State;
use axum::response::IntoResponse;
use reqwest::{Client, Method, StatusCode};
use serde_json::{Value, json};
use tidings_store::Store;
use tidings_testkit::{TestDb, on_both_engines};
use tokio::sync::Semaphore;

use crate::support::{
    TestApp, TestServer, assert_error, call, import_opml_and_wait, rss, wait_for_import,
};

/// Bob's API key on the source, as an app's password.
async fn read_key(app: &TestApp, browser: &Client) -> String {
    let (status, _, body) = call(
        browser,
        Method::POST,
        &app.url("/api-keys"),
        Some(json!({"name": "moving out", "scope": "read"})),
    )
    .await;
    assert_eq!(status, StatusCode::CREATED, "{body}");
    body["key"].as_str().unwrap().to_owned()
}

/// The other reader: a tidings where Bob follows alpha (in "Tech") and beta (no folder), with
/// alpha 0 starred and beta 1 read. Answers the server, its database (kept alive) and Bob's
/// API key.
async fn source_reader(feeds: &TestServer) -> (TestApp, TestDb, String) {
    let db = TestDb::sqlite();
    let app = TestApp::start(&db).await;
    app.user("bob", false).await;
    let bob = app.signed_in("bob").await;
    let opml = format!(
        "<opml version=\"2.0\"><body><outline text=\"Tech\">\
         <outline text=\"Alpha\" xmlUrl=\"{}\"/></outline>\
         <outline text=\"beta\" xmlUrl=\"{}\"/></body></opml>",
        feeds.url("/alpha.xml"),
        feeds.url("/beta.xml")
    );
    let job = import_opml_and_wait(&bob, &app.url("/opml"), None, opml).await;
    assert_eq!(job["added"], 2, "{job}");
    let (_, _, items) = call(&bob, Method::GET, &app.url("/items?filter=all"), None).await;
    let items = items["items"].as_array().unwrap().clone();
    assert_eq!(items.len(), 6, "{items:?}");
    for (link, change) in [
        ("/alpha/0", json!({"is_starred": true})),
        ("/beta/1", json!({"is_read": true})),
    ] {
        let item = items
            .iter()
            .find(|item| item["url"].as_str().unwrap().ends_with(link))
            .unwrap();
        let url = app.url(&format!("/items/{}/state", item["id"]));
        let (status, _, body) = call(&bob, Method::PUT, &url, Some(change)).await;
        assert_eq!(status, StatusCode::OK, "{body}");
    }
    let key = read_key(&app, &bob).await;
    (app, db, key)
}

/// Two feeds of three items.
async fn feed_site() -> TestServer {
    let router = axum::Router::new().route(
        "/{name}",
        axum::routing::get(
            |axum::extract::Path(name): axum::extract::Path<String>| async move {
                let title = name.trim_end_matches(".xml").to_owned();
                (
                    [("content-type", "application/rss+xml")],
                    rss("http://127.0.0.1", &title, 3),
                )
            },
        ),
    );
    TestServer::start(router).await
}

/// Each subscription of `user` as (feed path, group name), sorted.
async fn subscriptions(store: &Store, user: i64) -> Vec<(String, String)> {
    let groups = store.list_groups(user).await.unwrap();
    let mut list: Vec<(String, String)> = store
        .list_subscriptions(user)
        .await
        .unwrap()
        .into_iter()
        .map(|s| {
            let group = groups.iter().find(|g| g.id == s.group_id).unwrap();
            let path = s.feed_url.rsplit('/').next().unwrap().to_owned();
            (path, group.name.clone())
        })
        .collect();
    list.sort();
    list
}

/// (link path, read, starred) of every item of `user`'s feeds, sorted.
async fn states(store: &Store, user: i64) -> Vec<(String, bool, bool)> {
    let mut states = Vec::new();
    for subscription in store.list_subscriptions(user).await.unwrap() {
        for id in store.feed_item_ids(subscription.feed_id).await.unwrap() {
            let item = store.item(user, id).await.unwrap();
            let link = item.url.unwrap_or_default().replace("http://127.0.0.1", "");
            states.push((link, item.is_read, item.is_starred));
        }
    }
    states.sort();
    states
}

/// Starts an import with `body`, checks the 202 and its Location, and waits until it is no
/// longer running; answers its final state.
async fn import_and_wait(app: &TestApp, client: &Client, body: Value) -> Value {
    let response = client
        .post(app.url("/imports"))
        .json(&body)
        .send()
        .await
        .unwrap();
    assert_eq!(response.status(), StatusCode::ACCEPTED);
    let location = response.headers()["location"].to_str().unwrap().to_owned();
    let started: Value = response.json().await.unwrap();
    assert_eq!(started["status"], "running", "{started}");
    let id = started["import_id"].as_i64().unwrap();
    assert_eq!(location, format!("/api/v1/imports/{id}"));
    wait_for_import(client, &app.url(&format!("/imports/{id}"))).await
}

/// The counts of one kind of the report: (added, unchanged, kept as bookmark, failed).
fn counts(job: &Value, kind: &str) -> (i64, i64, i64, i64) {
    let kind = &job["report"][kind];
    let n = |field: &str| kind[field].as_i64().unwrap_or(-1);
    (
        n("added"),
        n("unchanged"),
        n("kept_as_bookmark"),
        n("failed"),
    )
}

/// What Ann has once Bob's history is imported.
fn expected_states() -> Vec<(String, bool, bool)> {
    [
        ("/alpha/0", false, true),
        ("/alpha/1", false, false),
        ("/alpha/2", false, false),
        ("/beta/0", false, false),
        ("/beta/1", true, false),
        ("/beta/2", false, false),
    ]
    .iter()
    .map(|(link, read, starred)| (link.to_string(), *read, *starred))
    .collect()
}

fn expected_subscriptions() -> Vec<(String, String)> {
    vec![
        ("alpha.xml".to_owned(), "Tech".to_owned()),
        ("beta.xml".to_owned(), "General".to_owned()),
    ]
}

on_both_engines!(a_google_reader_import_runs_as_a_job, |db| {
    let feeds = feed_site().await;
    let (source, _source_db, key) = source_reader(&feeds).await;
    let app = TestApp::start(db).await;
    let ann_id = app.user("ann", false).await;
    app.user("eve", false).await;
    let ann = app.signed_in("ann").await;
    let eve = app.signed_in("eve").await;
    let server = format!("{}/api/greader.php", source.base);
    let body = |dry_run: bool| {
        json!({"source": "greader", "url": server, "login": "bob", "password": key,
               "dry_run": dry_run})
    };

    let job = import_and_wait(&app, &ann, body(true)).await;
    assert_eq!(job["status"], "done", "{job}");
    // Tech is new; beta's folder on the source is its default group, "General", as here.
    assert_eq!(job["dry_run"], true, "{job}");
    assert_eq!(counts(&job, "subscriptions"), (2, 0, 0, 0), "{job}");
    assert_eq!(counts(&job, "folders"), (1, 1, 0, 0), "{job}");
    assert_eq!(counts(&job, "starred"), (1, 0, 0, 0), "{job}");
    assert!(
        app.store
            .list_subscriptions(ann_id)
            .await
            .unwrap()
            .is_empty(),
        "a dry run changes nothing"
    );
    assert!(
        app.store
            .list_groups(ann_id)
            .await
            .unwrap()
            .iter()
            .all(|g| g.name != "Tech")
    );

    let job = import_and_wait(&app, &ann, body(false)).await;
    assert_eq!(job["status"], "done", "{job}");
    assert_eq!(
        (&job["source"], &job["from"]),
        (&json!("greader"), &json!(server)),
        "{job}"
    );
    assert_eq!(job["complete"], true, "{job}");
    // Progress counted every feed and item of the history (2 feeds, 6 items in its lists).
    assert!(job["total"].as_i64().unwrap() >= 8, "{job}");
    assert_eq!(job["checked"], job["total"], "{job}");
    assert_eq!(counts(&job, "subscriptions"), (2, 0, 0, 0), "{job}");
    assert_eq!(counts(&job, "folders"), (1, 1, 0, 0), "{job}");
    assert_eq!(counts(&job, "starred"), (1, 0, 0, 0), "{job}");
    assert_eq!(counts(&job, "read_marks").0, 1, "{job}");
    assert_eq!(
        subscriptions(&app.store, ann_id).await,
        expected_subscriptions()
    );
    assert_eq!(states(&app.store, ann_id).await, expected_states());
    let id = job["import_id"].as_i64().unwrap();
    let url = app.url(&format!("/imports/{id}"));
    // Nobody else sees it, not even that it exists.
    let (status, _, answer) = call(&eve, Method::GET, &url, None).await;
    assert_eq!(status, StatusCode::NOT_FOUND, "{answer}");
    assert_error(&answer, "not_found", "validation");

    // Twice changes nothing.
    let job = import_and_wait(&app, &ann, body(false)).await;
    for kind in [
        "subscriptions",
        "folders",
        "starred",
        "read_marks",
        "labels",
    ] {
        assert_eq!(counts(&job, kind).0, 0, "{kind}: {job}");
    }
    assert_eq!(counts(&job, "subscriptions"), (0, 2, 0, 0), "{job}");
    assert_eq!(
        subscriptions(&app.store, ann_id).await,
        expected_subscriptions()
    );
    assert_eq!(states(&app.store, ann_id).await, expected_states());

    // A wrong password fails the job, saying so and what to do.
    let mut wrong = body(false);
    wrong["password"] = json!("not-the-password");
    let job = import_and_wait(&app, &ann, wrong).await;
    assert_eq!(job["status"], "failed", "{job}");
    let error = job["error"].as_str().unwrap();
    assert!(error.contains("refused the sign-in as \"bob\""), "{error}");
    assert!(error.contains("API password"), "{error}");

    // The credentials are never answered back.
    let (_, _, list) = call(&ann, Method::GET, &app.url("/imports"), None).await;
    assert_eq!(list["imports"].as_array().unwrap().len(), 4, "{list}");
    let shown = list.to_string();
    assert!(
        !shown.contains(&key) && !shown.contains("not-the-password"),
        "{shown}"
    );
    let (_, _, list) = call(&eve, Method::GET, &app.url("/imports"), None).await;
    assert_eq!(list["imports"], json!([]), "{list}");
});

on_both_engines!(a_miniflux_import_runs_as_a_job, |db| {
    let feeds = feed_site().await;
    let (source, _source_db, key) = source_reader(&feeds).await;
    let app = TestApp::start(db).await;
    let ann_id = app.user("ann", false).await;
    let ann = app.signed_in("ann").await;
    let body = json!({"source": "miniflux", "url": source.base, "api_key": key});

    let mut dry = body.clone();
    dry["dry_run"] = json!(true);
    let job = import_and_wait(&app, &ann, dry).await;
    assert_eq!(job["status"], "done", "{job}");
    assert_eq!(counts(&job, "subscriptions"), (2, 0, 0, 0), "{job}");
    assert!(
        app.store
            .list_subscriptions(ann_id)
            .await
            .unwrap()
            .is_empty()
    );

    let job = import_and_wait(&app, &ann, body.clone()).await;
    assert_eq!(job["status"], "done", "{job}");
    assert_eq!(counts(&job, "subscriptions"), (2, 0, 0, 0), "{job}");
    assert_eq!(counts(&job, "starred"), (1, 0, 0, 0), "{job}");
    assert_eq!(counts(&job, "read_marks"), (1, 5, 0, 0), "{job}");
    assert_eq!(
        subscriptions(&app.store, ann_id).await,
        expected_subscriptions()
    );
    assert_eq!(states(&app.store, ann_id).await, expected_states());

    let job = import_and_wait(&app, &ann, body.clone()).await;
    assert_eq!(counts(&job, "subscriptions"), (0, 2, 0, 0), "{job}");
    assert_eq!(counts(&job, "read_marks"), (0, 6, 0, 0), "{job}");
    assert_eq!(states(&app.store, ann_id).await, expected_states());

    let mut wrong = body.clone();
    wrong["api_key"] = json!("not-the-key");
    let job = import_and_wait(&app, &ann, wrong).await;
    assert_eq!(job["status"], "failed", "{job}");
    let error = job["error"].as_str().unwrap();
    assert!(error.contains("refused the API key"), "{error}");
    assert!(!job.to_string().contains("not-the-key"), "{job}");
});

/// A Miniflux stand-in whose feed list answers (empty) only once the test adds a permit.
async fn gated_miniflux() -> (TestServer, Arc<Semaphore>) {
    let gate = Arc::new(Semaphore::new(0));
    let router = axum::Router::new()
        .route(
            "/v1/me",
            axum::routing::get(|| async { ([("content-type", "application/json")], "{}") }),
        )
        .route(
            "/v1/feeds",
            axum::routing::get(|State(gate): State<Arc<Semaphore>>| async move {
                if let Ok(permit) = gate.acquire().await {
                    permit.forget();
                }
                ([("content-type", "application/json")], "[]").into_response()
            }),
        )
        .route(
            "/v1/entries",
            axum::routing::get(|| async {
                (
                    [("content-type", "application/json")],
                    r#"{"total": 0, "entries": []}"#,
                )
            }),
        )
        .with_state(Arc::clone(&gate));
    (TestServer::start(router).await, gate)
}

on_both_engines!(an_import_says_where_it_is_and_what_went_wrong, |db| {
    let app = TestApp::start(db).await;
    app.user("ann", false).await;
    let ann = app.signed_in("ann").await;
    let (stand_in, gate) = gated_miniflux().await;
    let body = json!({"source": "miniflux", "url": stand_in.base, "api_key": "k"});

    // While the other reader is being read, the job says so; a user runs three at once.
    let mut ids = Vec::new();
    for _ in 0..3 {
        let (status, _, started) =
            call(&ann, Method::POST, &app.url("/imports"), Some(body.clone())).await;
        assert_eq!(status, StatusCode::ACCEPTED, "{started}");
        ids.push(started["import_id"].as_i64().unwrap());
    }
    let (_, _, job) = call(
        &ann,
        Method::GET,
        &app.url(&format!("/imports/{}", ids[0])),
        None,
    )
    .await;
    assert_eq!(
        (&job["status"], &job["phase"]),
        (&json!("running"), &json!("reading")),
        "{job}"
    );
    assert_eq!(job["report"], Value::Null, "{job}");
    let (status, headers, answer) =
        call(&ann, Method::POST, &app.url("/imports"), Some(body.clone())).await;
    assert_eq!(status, StatusCode::TOO_MANY_REQUESTS, "{answer}");
    assert!(headers.contains_key("retry-after"));
    assert_error(&answer, "imports_running", "limit");
    gate.add_permits(3);
    for id in ids {
        let job = wait_for_import(&ann, &app.url(&format!("/imports/{id}"))).await;
        assert_eq!(job["status"], "done", "{job}");
        assert_eq!(counts(&job, "subscriptions"), (0, 0, 0, 0), "{job}");
    }

    // What can be checked at once is a 400 that says what to do.
    for (case, code, words) in [
        (
            json!({"source": "inoreader", "url": "https://a.example", "api_key": "k"}),
            "invalid_request",
            "greader",
        ),
        (
            json!({"source": "miniflux", "url": "rss.example", "api_key": "k"}),
            "invalid_request",
            "https://",
        ),
        (
            json!({"source": "miniflux", "url": "https://me:pw@rss.example", "api_key": "k"}),
            "invalid_request",
            "credentials",
        ),
        (
            json!({"source": "greader", "url": "https://rss.example/api/greader.php", "login": "ann"}),
            "invalid_request",
            "API password",
        ),
        (
            json!({"source": "miniflux", "url": "https://miniflux.example", "api_key": " "}),
            "invalid_request",
            "API Keys",
        ),
        (
            json!({"source": "miniflux", "url": "http://169.254.169.254/", "api_key": "k"}),
            "url_refused",
            "TIDINGS_ALLOW_PRIVATE_NETWORKS",
        ),
    ] {
        let (status, _, answer) =
            call(&ann, Method::POST, &app.url("/imports"), Some(case.clone())).await;
        assert_eq!(status, StatusCode::BAD_REQUEST, "{case}: {answer}");
        assert_error(&answer, code, "validation");
        assert!(
            answer["error"]["action"].as_str().unwrap().contains(words),
            "{case}: {answer}"
        );
    }

    // A server that is not there fails the job with the reason.
    let closed = std::net::TcpListener::bind("127.0.0.1:0").unwrap();
    let port = closed.local_addr().unwrap().port();
    drop(closed);
    let body = json!({"source": "greader", "url": format!("http://127.0.0.1:{port}/api/greader.php"),
                      "login": "ann", "password": "secret-password"});
    let job = import_and_wait(&app, &ann, body).await;
    assert_eq!(job["status"], "failed", "{job}");
    assert!(
        job["error"]
            .as_str()
            .unwrap()
            .contains("could not be reached"),
        "{job}"
    );
    assert!(!job.to_string().contains("secret-password"), "{job}");
});

on_both_engines!(a_private_address_is_refused_up_front, |db| {
    let app = TestApp::start_with(db, false, |_| {}).await;
    app.user("ann", false).await;
    let ann = app.signed_in("ann").await;
    let body = json!({"source": "greader", "url": "http://127.0.0.1:9/api/greader.php",
                      "login": "ann", "password": "p"});
    let (status, _, answer) = call(&ann, Method::POST, &app.url("/imports"), Some(body)).await;
    assert_eq!(status, StatusCode::BAD_REQUEST, "{answer}");
    assert_error(&answer, "url_refused", "validation");
    let action = answer["error"]["action"].as_str().unwrap();
    assert!(
        action.contains("TIDINGS_ALLOW_PRIVATE_NETWORKS=true"),
        "{answer}"
    );
});

on_both_engines!(a_starred_items_file_is_imported_as_a_job, |db| {
    let app = TestApp::start(db).await;
    let ann_id = app.user("ann", false).await;
    let ann = app.signed_in("ann").await;
    let file = json!({"items": [
        {"title": "Old post", "published": 1_500_000_000,
         "alternate": [{"href": "https://gone.example/old"}],
         "content": {"content": "<p>kept</p>"},
         "origin": {"streamId": "feed/https://gone.example/feed", "title": "Gone"}}
    ]})
    .to_string();
    let upload = |dry_run: bool| {
        ann.post(app.url(&format!("/imports/file?dry_run={dry_run}")))
            .header("content-type", "application/json")
            .header("x-file-name", "starred.json")
            .body(file.clone())
            .send()
    };
    for (dry_run, kept) in [(true, 1), (false, 1), (false, 0)] {
        let response = upload(dry_run).await.unwrap();
        assert_eq!(response.status(), StatusCode::ACCEPTED);
        let started: Value = response.json().await.unwrap();
        let url = app.url(&format!("/imports/{}", started["import_id"]));
        let job = wait_for_import(&ann, &url).await;
        assert_eq!(job["status"], "done", "{job}");
        assert_eq!(
            (&job["source"], &job["from"]),
            (&json!("file"), &json!("starred.json"))
        );
        assert_eq!(counts(&job, "starred").2, kept, "dry run {dry_run}: {job}");
        let bookmarks = app.store.list_bookmarks(ann_id).await.unwrap();
        assert_eq!(
            bookmarks.len(),
            usize::from(!dry_run || kept == 0),
            "{bookmarks:?}"
        );
    }
    let response = ann
        .post(app.url("/imports/file"))
        .body("hello")
        .send()
        .await
        .unwrap();
    assert_eq!(response.status(), StatusCode::BAD_REQUEST);
    let answer: Value = response.json().await.unwrap();
    assert_error(&answer, "invalid_file", "validation");
});

/// Feeds `/gated/{n}.xml` that answer only once the test adds a permit to the gate, and a
/// Miniflux stand-in that lists two of them (no entries).
async fn miniflux_of_gated_feeds() -> (TestServer, TestServer, Arc<Semaphore>) {
    let gate = Arc::new(Semaphore::new(0));
    let feeds = TestServer::start(
        axum::Router::new()
            .route(
                "/gated/{name}",
                axum::routing::get(
                    |State(gate): State<Arc<Semaphore>>,
                     axum::extract::Path(name): axum::extract::Path<String>| async move {
                        if let Ok(permit) = gate.acquire().await {
                            permit.forget();
                        }
                        let title = name.trim_end_matches(".xml").to_owned();
                        (
                            [("content-type", "application/rss+xml")],
                            rss("http://127.0.0.1", &title, 2),
                        )
                    },
                ),
            )
            .with_state(Arc::clone(&gate)),
    )
    .await;
    let list = json!([
        {"id": 1, "feed_url": feeds.url("/gated/0.xml"), "title": "Zero"},
        {"id": 2, "feed_url": feeds.url("/gated/1.xml"), "title": "One"}
    ])
    .to_string();
    let json_answer = |body: String| ([("content-type", "application/json")], body);
    let miniflux = TestServer::start(
        axum::Router::new()
            .route(
                "/v1/me",
                axum::routing::get(move || async move { json_answer("{}".into()) }),
            )
            .route(
                "/v1/feeds",
                axum::routing::get(move || async move { json_answer(list) }),
            )
            .route(
                "/v1/entries",
                axum::routing::get(move || async move {
                    json_answer(r#"{"total": 0, "entries": []}"#.into())
                }),
            ),
    )
    .await;
    (feeds, miniflux, gate)
}

/// Polls the import at `url` until `done` holds of it (up to 30 s); answers that state.
async fn wait_until_job(
    client: &Client,
    url: &str,
    what: &str,
    done: impl Fn(&Value) -> bool,
) -> Value {
    let deadline = std::time::Instant::now() + std::time::Duration::from_secs(30);
    loop {
        let (status, _, job) = call(client, Method::GET, url, None).await;
        assert_eq!(status, StatusCode::OK, "{job}");
        if done(&job) {
            return job;
        }
        assert!(std::time::Instant::now() < deadline, "{what}: {job}");
        // Within the per-user rate limit (120 requests a minute).
        tokio::time::sleep(std::time::Duration::from_millis(300)).await;
    }
}

on_both_engines!(progress_moves_as_the_new_feeds_are_checked, |db| {
    let (_feeds, miniflux, gate) = miniflux_of_gated_feeds().await;
    let app = TestApp::start(db).await;
    app.user("ann", false).await;
    let ann = app.signed_in("ann").await;
    let body = json!({"source": "miniflux", "url": miniflux.base, "api_key": "k"});
    let (status, _, started) = call(&ann, Method::POST, &app.url("/imports"), Some(body)).await;
    assert_eq!(status, StatusCode::ACCEPTED, "{started}");
    let url = app.url(&format!("/imports/{}", started["import_id"]));
    let job = wait_until_job(&ann, &url, "the history read", |job| job["total"] == 2).await;
    assert_eq!(
        (&job["phase"], &job["checked"]),
        (&json!("importing"), &json!(0)),
        "{job}"
    );
    gate.add_permits(1);
    let job = wait_until_job(&ann, &url, "one feed checked", |job| job["checked"] == 1).await;
    assert_eq!(job["status"], "running", "{job}");
    gate.add_permits(1);
    let job = wait_for_import(&ann, &url).await;
    assert_eq!(
        (&job["status"], &job["checked"]),
        (&json!("done"), &json!(2)),
        "{job}"
    );
    assert_eq!(counts(&job, "subscriptions"), (2, 0, 0, 0), "{job}");
});
