//! The API keeps its contract, end to end on a real server over SQLite and PostgreSQL: every
//! refusal of what a request says is a 400 with the JSON error body naming the field and what
//! to do (never a 422), and every answer of every operation is one the OpenAPI document
//! declares, as schemathesis finds when it fuzzes the whole document (with an API key, the
//! session cookie and no credentials).

use tidings_testkit::on_both_engines;

use crate::support::{PASSWORD, TestApp, TestServer, assert_error, call};
use reqwest::{Method, StatusCode};
use serde_json::{Value, json};

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
    let feeds = TestServer::start_empty().await;
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

    phase_queries_default_group_and_upload(&app, &browser).await;
});

/// Query parameters are named; the default group cannot be deleted (a 400); an upload that is
/// not OPML is refused.
async fn phase_queries_default_group_and_upload(app: &TestApp, browser: &reqwest::Client) {
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
        let (status, _, answer) = call(browser, Method::GET, &url, None).await;
        assert_bad_request(&url, status, &answer, "invalid_request", field);
    }

    // The default group cannot be deleted: a 400, not a 422.
    let (_, _, groups) = call(browser, Method::GET, &app.url("/groups"), None).await;
    let default = groups["groups"]
        .as_array()
        .unwrap()
        .iter()
        .find(|g| g["is_default"] == true)
        .map(|g| g["id"].as_i64().unwrap())
        .expect("a default group");
    let (status, _, answer) = call(
        browser,
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
}

/// The schemathesis hooks: every address a generated request could make the server fetch is
/// pointed at the test's own feed server (no request leaves the machine), and the fuzzer's
/// user and session are never the target of the administration and session operations (a
/// password reset would revoke the key it calls with, and every later request would only
/// test the 401).
const HOOKS: &str = r#"
import os

import schemathesis

FEED_BASE = os.environ["TIDINGS_FUZZ_FEED_BASE"]
# Ids of the run's own user, session and key, and what to use instead (another user, so that
# the administration operations still act on someone; no session or key for the others).
KEEP = {
    "/api/v1/users/{id}": (os.environ["TIDINGS_FUZZ_OWN_USER"], os.environ["TIDINGS_FUZZ_OTHER_USER"]),
    "/api/v1/me/sessions/{id}": (os.environ["TIDINGS_FUZZ_OWN_SESSION"], "0"),
    "/api/v1/api-keys/{id}": (os.environ["TIDINGS_FUZZ_OWN_KEY"], "0"),
}


def local(value):
    if not isinstance(value, str):
        return value
    text = value.strip()
    refused_anyway = (
        not text
        or len(text) > 2048
        or any(ord(c) < 32 or 127 <= ord(c) <= 159 for c in text)
    )
    if refused_anyway or text.startswith(FEED_BASE):
        return value
    return FEED_BASE + ("/feed.xml" if len(text) % 2 else "/missing")


@schemathesis.hook
def before_call(context, case, kwargs):
    if isinstance(case.body, dict):
        for field in ("url", "feed_url"):
            if field in case.body:
                case.body[field] = local(case.body[field])
    kept = KEEP.get(case.operation.path)
    if kept and isinstance(case.path_parameters, dict):
        if str(case.path_parameters.get("id")) == kept[0]:
            case.path_parameters["id"] = int(kept[1])
"#;

/// The Python interpreter with schemathesis, or `None` after the skip rule (a failure under
/// `CI=true`). It is the sync clients' virtual environment, named by
/// `TIDINGS_TEST_SYNC_PYTHON`, where `.ci/run` installs it.
fn schemathesis_python(test: &str) -> Option<std::path::PathBuf> {
    const HOW: &str = "(a virtual environment's python with schemathesis: python3 -m venv DIR && \
                       DIR/bin/pip install schemathesis; .ci/run installs it)";
    let Ok(python) = std::env::var("TIDINGS_TEST_SYNC_PYTHON") else {
        tidings_testkit::skip::skip(test, &format!("TIDINGS_TEST_SYNC_PYTHON is not set {HOW}"));
        return None;
    };
    match std::process::Command::new(&python)
        .args(["-c", "import schemathesis"])
        .output()
    {
        Ok(out) if out.status.success() => Some(python.into()),
        Ok(out) => {
            let reason = format!(
                "{python} cannot import schemathesis: {} {HOW}",
                String::from_utf8_lossy(&out.stderr).trim()
            );
            tidings_testkit::skip::skip(test, &reason);
            None
        }
        Err(e) => {
            tidings_testkit::skip::skip(test, &format!("{python} does not run: {e}"));
            None
        }
    }
}

/// A server like [`TestApp::start`]'s, with the per-user, address and subscribe limits raised
/// so that the fuzzer's requests reach the handlers (the sign-in limits stay as they are).
async fn start_unthrottled(db: &tidings_testkit::TestDb) -> TestApp {
    use std::sync::Arc;
    use std::time::Duration;
    use tidings_server::ratelimit::{RateLimiter, RateLimits};
    let store = db.migrated().await;
    let listener = tokio::net::TcpListener::bind("127.0.0.1:0").await.unwrap();
    let base = format!("http://{}", listener.local_addr().unwrap());
    let config = tidings_server::ServerConfig::new(base.parse().unwrap());
    let fetcher = crate::support::test_fetcher(store.clone(), true);
    let mut state = tidings_server::AppState::new(store.clone(), config, fetcher);
    let minute = Duration::from_secs(60);
    let standard = RateLimits::standard();
    state.limits = Arc::new(RateLimits {
        per_user: RateLimiter::new(1_000_000, minute).scoped("user"),
        subscribe: RateLimiter::new(1_000_000, minute).scoped("subscribe"),
        anonymous: RateLimiter::new(1_000_000, minute).scoped("address"),
        ..standard
    });
    tokio::spawn(tidings_server::serve(
        listener,
        state,
        std::future::pending(),
    ));
    TestApp { base, store }
}

/// Every (method, path) of the OpenAPI document but the one serving the document itself,
/// which schemathesis leaves out of the operations it tests.
fn documented_operations() -> Vec<String> {
    let document = serde_json::to_value(tidings_server::api::openapi()).unwrap();
    let mut operations = Vec::new();
    for (path, item) in document["paths"].as_object().unwrap() {
        for method in ["get", "put", "post", "delete", "patch"] {
            if item.get(method).is_some() && path != "/api/v1/openapi.json" {
                operations.push(format!("{} {path}", method.to_uppercase()));
            }
        }
    }
    operations
}

/// What the fuzzer needs to know about the server it runs against.
struct FuzzTarget<'a> {
    python: &'a std::path::Path,
    app: &'a TestApp,
    dir: &'a std::path::Path,
    /// The hooks' environment: the feed server, and the ids the fuzzer must leave alone.
    env: Vec<(&'static str, String)>,
}

/// Runs schemathesis over every operation of the served document with the credentials of
/// `auth` (schemathesis's `[auth.openapi.SCHEME]` configuration, empty for none) and extra
/// `headers`, asserting that no answer is a 5xx or undocumented (status, content type,
/// body schema) and that every operation but `excluded` was tested.
fn fuzz(
    target: &FuzzTarget,
    run: &str,
    auth: &str,
    headers: &[String],
    phases: &str,
    max_examples: u32,
    excluded: &[&str],
) {
    let junit = target.dir.join(format!("{run}.xml"));
    std::fs::write(target.dir.join("schemathesis.toml"), auth).unwrap();
    let stdout_path = target.dir.join(format!("{run}.stdout"));
    let mut args: Vec<String> = [
        "-c",
        "import sys; from schemathesis.cli import schemathesis; \
         sys.argv[0] = 'st'; sys.exit(schemathesis())",
        "run",
        &target.app.url("/openapi.json"),
        "--url",
        &target.app.base,
        "--checks",
        "not_a_server_error,status_code_conformance,content_type_conformance,\
         response_schema_conformance",
        "--phases",
        phases,
        "--mode",
        "all",
        "--max-examples",
        &max_examples.to_string(),
        "--seed",
        "11",
        // One worker: hypothesis's lambda descriptions are not thread-safe on Python 3.11
        // ("AST constructor recursion depth mismatch").
        "--workers",
        "1",
        "--request-timeout",
        "20",
        "--continue-on-failure",
        "--suppress-health-check",
        "all",
        "--report",
        "junit",
        "--report-junit-path",
    ]
    .map(String::from)
    .to_vec();
    args.push(junit.display().to_string());
    for header in headers {
        args.push("--header".into());
        args.push(header.clone());
    }
    for operation_id in excluded {
        args.push("--exclude-operation-id".into());
        args.push((*operation_id).to_string());
    }
    let started = std::time::Instant::now();
    let mut command = std::process::Command::new(target.python);
    command
        .current_dir(target.dir)
        .args(&args)
        .env("SCHEMATHESIS_HOOKS", target.dir.join("tidings_hooks.py"))
        .env("NO_COLOR", "1")
        .envs(target.env.iter().map(|(k, v)| (*k, v.as_str())))
        .stdout(std::fs::File::create(&stdout_path).unwrap())
        .stderr(std::process::Stdio::inherit());
    let mut child = command.spawn().expect("schemathesis runs");
    // Bounded by its examples; the limit is only against a hang. Two CI runs at load 15-20
    // (the machine shared with builds) went past 10 minutes without hanging, so the guard
    // sits well above what load alone does.
    let exit = loop {
        if let Some(exit) = child.try_wait().unwrap() {
            break exit;
        }
        if started.elapsed() > std::time::Duration::from_secs(25 * 60) {
            let _ = child.kill();
            panic!("{run}: schemathesis did not finish within 25 minutes");
        }
        std::thread::sleep(std::time::Duration::from_millis(200));
    };
    let stdout = std::fs::read_to_string(&stdout_path).unwrap_or_default();
    // The warnings say what the run could not reach; the summary what it tested.
    let summary = stdout
        .lines()
        .skip_while(|l| !l.contains("WARNINGS") && !l.contains("SUMMARY"));
    eprintln!(
        "{run}: schemathesis took {:.1} s\n{}",
        started.elapsed().as_secs_f64(),
        summary.collect::<Vec<_>>().join("\n")
    );
    assert!(
        exit.success(),
        "{run}: schemathesis found answers the document does not declare (or a server \
         error):\n{stdout}"
    );
    // Every operation of the document was exercised: a new endpoint is fuzzed as soon as it
    // is documented.
    let report = std::fs::read_to_string(&junit).expect("the JUnit report");
    for name in documented_operations() {
        let skipped = excluded.iter().any(|id| {
            let document = serde_json::to_value(tidings_server::api::openapi()).unwrap();
            let (method, path) = name.split_once(' ').unwrap();
            document["paths"][path][method.to_lowercase()]["operationId"] == *id
        });
        assert!(
            skipped || report.contains(&format!("name=\"{name}\"")),
            "{run}: {name} was not tested; the report:\n{report}"
        );
    }
}

on_both_engines!(every_answer_is_documented, |db| {
    let Some(python) = schemathesis_python("every_answer_is_documented") else {
        return;
    };
    let app = start_unthrottled(db).await;
    // The fuzzer's own user (an administrator, so that the administration operations are
    // reached) comes after another, whom the hooks send it to instead of itself.
    let other = app.user("other", false).await;
    let own = app.user("fuzzer", true).await;
    let browser = app.signed_in("fuzzer").await;
    let feeds = TestServer::start_empty().await;
    feeds.serve(
        "/feed.xml",
        200,
        "application/rss+xml",
        crate::support::rss(&feeds.base, "Fuzzed feed", 5),
    );
    let (key_id, key) = phase_something_for_every_kind_of_id(&app, &browser, &feeds).await;
    let (cookie, own_session) = phase_a_session_of_its_own(&app).await;

    let dir = tempfile::tempdir().unwrap();
    std::fs::write(dir.path().join("tidings_hooks.py"), HOOKS).unwrap();
    let target = FuzzTarget {
        python: &python,
        app: &app,
        dir: dir.path(),
        env: vec![
            ("TIDINGS_FUZZ_FEED_BASE", feeds.base.clone()),
            ("TIDINGS_FUZZ_OWN_USER", own.to_string()),
            ("TIDINGS_FUZZ_OTHER_USER", other.to_string()),
            ("TIDINGS_FUZZ_OWN_SESSION", own_session.to_string()),
            ("TIDINGS_FUZZ_OWN_KEY", key_id.to_string()),
        ],
    };
    tokio::task::block_in_place(|| {
        phase_fuzz_with_key_session_and_no_credentials(&target, &key, &cookie);
    });
    phase_the_credentials_still_work(&app, &key, &cookie).await;
});

/// Something for every kind of id to find: a group, a subscription with items (and their
/// vectors), a bookmark, and a read-write API key. Returns the key's id and the key.
async fn phase_something_for_every_kind_of_id(
    app: &TestApp,
    browser: &reqwest::Client,
    feeds: &TestServer,
) -> (i64, String) {
    // Something for every kind of id to find: a group, a subscription with items, a bookmark.
    let (status, _, _) = call(
        browser,
        Method::POST,
        &app.url("/groups"),
        Some(json!({"name": "Fuzzed"})),
    )
    .await;
    assert_eq!(status, StatusCode::CREATED);
    let (status, _, body) = call(
        browser,
        Method::POST,
        &app.url("/subscriptions"),
        Some(json!({"url": feeds.url("/feed.xml")})),
    )
    .await;
    assert_eq!(status, StatusCode::CREATED, "{body}");
    let (_, _, items) = call(browser, Method::GET, &app.url("/items?filter=all"), None).await;
    let item = items["items"][0]["id"].as_i64().expect("an item");
    // Vectors for the items, so that related items (F44) answer some.
    let embedding = tidings_worker::EmbeddingJob::new(
        app.store.clone(),
        tidings_embed::LocalEmbedder,
        "fuzzer",
        60,
    );
    tidings_worker::drain_enrichment(std::sync::Arc::new(embedding), 1)
        .await
        .unwrap();
    let (status, _, _) = call(
        browser,
        Method::POST,
        &app.url("/bookmarks"),
        Some(json!({"item_id": item})),
    )
    .await;
    assert_eq!(status, StatusCode::CREATED);
    let (status, _, key) = call(
        browser,
        Method::POST,
        &app.url("/api-keys"),
        Some(json!({"name": "fuzzer", "scope": "read_write"})),
    )
    .await;
    assert_eq!(status, StatusCode::CREATED, "{key}");
    let key_id = key["api_key"]["id"].as_i64().unwrap();
    let key = key["key"].as_str().unwrap().to_string();
    (key_id, key)
}

/// A session of the fuzzer's own for the session-only operations (keys, password, account).
/// Returns its cookie (`tidings_session=…`) and its id.
async fn phase_a_session_of_its_own(app: &TestApp) -> (String, i64) {
    let session = app.browser();
    let response = session
        .post(app.url("/session"))
        .json(&json!({"username": "fuzzer", "password": PASSWORD}))
        .send()
        .await
        .unwrap();
    assert_eq!(response.status(), StatusCode::OK);
    let cookie = response
        .headers()
        .get_all("set-cookie")
        .iter()
        .filter_map(|v| v.to_str().ok())
        .find_map(|v| {
            v.split(';')
                .next()
                .filter(|c| c.starts_with("tidings_session="))
        })
        .expect("the session cookie")
        .to_string();
    let (_, _, sessions) = call(&session, Method::GET, &app.url("/me/sessions"), None).await;
    let own_session = sessions["sessions"]
        .as_array()
        .unwrap()
        .iter()
        .find(|s| s["current"] == true)
        .and_then(|s| s["id"].as_i64())
        .expect("the current session");
    (cookie, own_session)
}

/// The three fuzzing runs: with the API key, with the session cookie, without credentials.
fn phase_fuzz_with_key_session_and_no_credentials(target: &FuzzTarget, key: &str, cookie: &str) {
    // With a read-write API key: everything a script or an app does.
    fuzz(
        target,
        "api-key",
        &format!("[auth.openapi.api_key]\nbearer = \"{key}\"\n"),
        &[],
        "examples,coverage,fuzzing",
        8,
        &[],
    );
    // With the session cookie and this server's Origin, as the web UI: the session-only
    // operations too. Signing out would end the run's own session.
    let token = cookie.trim_start_matches("tidings_session=");
    fuzz(
        target,
        "session",
        &format!("[auth.openapi.session]\napi_key = \"{token}\"\n"),
        &[format!("Origin: {}", target.app.base)],
        "examples,coverage,fuzzing",
        5,
        &["sign_out"],
    );
    // Without credentials: a few cases each (most answers are the one 401).
    fuzz(target, "anonymous", "", &[], "fuzzing", 3, &[]);
}

/// The credentials still work: the runs tested the API, not a run of 401s.
async fn phase_the_credentials_still_work(app: &TestApp, key: &str, cookie: &str) {
    let response = reqwest::Client::new()
        .get(app.url("/me"))
        .bearer_auth(key)
        .send()
        .await
        .unwrap();
    assert_eq!(response.status(), StatusCode::OK, "the API key");
    let response = reqwest::Client::new()
        .get(app.url("/me"))
        .header("cookie", cookie)
        .send()
        .await
        .unwrap();
    assert_eq!(response.status(), StatusCode::OK, "the session");
}
