//! What the sync API tests share: API keys, and the real clients they drive (Python packages
//! in a virtual environment named by `TIDINGS_TEST_SYNC_PYTHON`, Debian's newsboat). A test
//! whose client is missing skips with the reason printed, except under `CI=true`, where it
//! fails: CI installs them (`.ci/run`).

#![allow(dead_code)]

use std::io::Write;
use std::path::PathBuf;
use std::process::Command;

use reqwest::{Client, Method, StatusCode};
use serde_json::json;

use crate::support::{TestApp, call};

/// Publication times of the test items: item n at `BASE + n minutes`.
pub const BASE: i64 = 1_760_000_000;

/// A whole test item (link, author, content) published at `published`.
pub fn item(guid: &str, published: i64) -> tidings_store::NewItem {
    tidings_store::NewItem {
        guid: Some(guid.into()),
        url: Some(format!("https://example.com/{guid}")),
        title: Some(format!("Item {guid}")),
        author: Some("Ann Author".into()),
        content: Some(format!("<p>Full text of {guid}</p>")),
        published: Some(published),
        ..tidings_store::NewItem::default()
    }
}

/// Stores items `{prefix}-{n}` of a feed, item n published at `BASE + n minutes`.
pub async fn add_items(
    store: &tidings_store::Store,
    feed_id: i64,
    prefix: &str,
    range: std::ops::Range<i64>,
) {
    let items: Vec<tidings_store::NewItem> = range
        .map(|n| item(&format!("{prefix}-{n}"), BASE + n * 60))
        .collect();
    store.upsert_items(feed_id, &items, BASE).await.unwrap();
}

/// ann on a running server, with a read-write API key and two feeds: A
/// (`https://a.example/feed`) in the default group and B (`https://b.example/feed`) in "Tech".
pub struct TwoFeeds {
    /// The server.
    pub app: TestApp,
    /// ann's read-write API key.
    pub key: String,
    /// ann's id.
    pub user_id: i64,
    /// Feed A.
    pub feed_a: i64,
    /// Feed B.
    pub feed_b: i64,
    /// The "Tech" group, B's.
    pub group_b: i64,
}

/// [`TwoFeeds`] on `app`, with items `a-{n}` for `a_items` and `b-{n}` for `b_items`.
pub async fn two_feeds(
    app: TestApp,
    a_items: std::ops::Range<i64>,
    b_items: std::ops::Range<i64>,
) -> TwoFeeds {
    let user_id = app.user("ann", false).await;
    let browser = app.signed_in("ann").await;
    let key = api_key(&app, &browser, "read_write").await;
    let (_, feed_a) = tidings_testkit::follow(&app.store, user_id, "https://a.example/feed").await;
    let (sub_b, feed_b) =
        tidings_testkit::follow(&app.store, user_id, "https://b.example/feed").await;
    let group_b = app.store.create_group(user_id, "Tech").await.unwrap().id;
    app.store
        .update_subscription(
            user_id,
            sub_b,
            &tidings_store::SubscriptionChanges {
                group_id: Some(group_b),
                ..Default::default()
            },
        )
        .await
        .unwrap();
    add_items(&app.store, feed_a, "a", a_items).await;
    add_items(&app.store, feed_b, "b", b_items).await;
    TwoFeeds {
        app,
        key,
        user_id,
        feed_a,
        feed_b,
        group_b,
    }
}

/// The real request/response pairs of a protocol (`src/sync/testdata/<protocol>/*.json`), as
/// (file, pair).
pub fn testdata_pairs(protocol: &str) -> Vec<(String, serde_json::Value)> {
    let dir = std::path::Path::new(env!("CARGO_MANIFEST_DIR"))
        .join("src/sync/testdata")
        .join(protocol);
    let mut pairs = Vec::new();
    for entry in std::fs::read_dir(&dir).unwrap() {
        let path = entry.unwrap().path();
        if path.extension().is_none_or(|e| e != "json") {
            continue;
        }
        let text = std::fs::read_to_string(&path).unwrap();
        let pair =
            serde_json::from_str(&text).unwrap_or_else(|e| panic!("{}: {e}", path.display()));
        pairs.push((path.display().to_string(), pair));
    }
    pairs.sort_by(|a, b| a.0.cmp(&b.0));
    pairs
}

/// The variable naming the Python interpreter of the clients' virtual environment.
pub const PYTHON_ENV: &str = "TIDINGS_TEST_SYNC_PYTHON";

fn missing(test: &str, reason: &str) -> Option<PathBuf> {
    if std::env::var("CI").is_ok_and(|v| v == "true") {
        panic!("{test}: {reason} (CI installs it: see .ci/run)");
    }
    let _ = writeln!(std::io::stderr(), "SKIPPED {test}: {reason}");
    None
}

/// The Python interpreter that can import `module`, or `None` (skip) when there is none.
pub fn python_with(test: &str, module: &str) -> Option<PathBuf> {
    let Ok(python) = std::env::var(PYTHON_ENV) else {
        return missing(
            test,
            &format!(
                "{PYTHON_ENV} is not set (a virtual environment's python with the clients: \
                 pip install miniflux freshrss-api; pip install --ignore-requires-python google-reader)"
            ),
        );
    };
    let imports = Command::new(&python)
        .args(["-c", &format!("import {module}")])
        .output();
    match imports {
        Ok(out) if out.status.success() => Some(PathBuf::from(python)),
        Ok(out) => missing(
            test,
            &format!(
                "{python} cannot import {module}: {}",
                String::from_utf8_lossy(&out.stderr).trim()
            ),
        ),
        Err(e) => missing(test, &format!("{python} does not run: {e}")),
    }
}

/// The path of a program on PATH, or `None` (skip) when it is missing.
pub fn program(test: &str, name: &str) -> Option<PathBuf> {
    let found = std::env::var_os("PATH").and_then(|paths| {
        std::env::split_paths(&paths)
            .map(|dir| dir.join(name))
            .find(|path| path.is_file())
    });
    match found {
        Some(path) => Some(path),
        None => missing(
            test,
            &format!("{name} is not installed (apt-get install {name})"),
        ),
    }
}

/// Runs a Python script with arguments; panics with its output unless it succeeds. Returns
/// its standard output.
pub fn run_python(python: &std::path::Path, script: &str, args: &[&str]) -> String {
    let out = Command::new(python)
        .arg("-c")
        .arg(script)
        .args(args)
        .output()
        .expect("run python");
    let stdout = String::from_utf8_lossy(&out.stdout).into_owned();
    assert!(
        out.status.success(),
        "the Python client failed:\n{stdout}\n{}",
        String::from_utf8_lossy(&out.stderr)
    );
    stdout
}

/// [`run_python`] off the async runtime, answering the lines the script printed.
pub async fn python_lines(python: PathBuf, script: &'static str, args: &[&str]) -> Vec<String> {
    let args: Vec<String> = args.iter().map(|a| a.to_string()).collect();
    let out = tokio::task::spawn_blocking(move || {
        let args: Vec<&str> = args.iter().map(String::as_str).collect();
        run_python(&python, script, &args)
    })
    .await
    .unwrap();
    out.lines().map(str::to_string).collect()
}

/// Creates an API key for the user signed in with `browser`; returns the secret.
pub async fn api_key(app: &TestApp, browser: &Client, scope: &str) -> String {
    let (status, _, body) = call(
        browser,
        Method::POST,
        &app.url("/api-keys"),
        Some(json!({"name": format!("app {scope}"), "scope": scope})),
    )
    .await;
    assert_eq!(status, StatusCode::CREATED, "{body}");
    body["key"].as_str().unwrap().to_string()
}

/// Every key of `reference` (a real server's answer) is in `ours` with the same JSON type,
/// recursively through objects and the first element of arrays.
pub fn assert_same_shape(reference: &serde_json::Value, ours: &serde_json::Value, at: &str) {
    use serde_json::Value;
    let kind = |v: &Value| match v {
        Value::Null => "null",
        Value::Bool(_) => "bool",
        Value::Number(_) => "number",
        Value::String(_) => "string",
        Value::Array(_) => "array",
        Value::Object(_) => "object",
    };
    match (reference, ours) {
        // A map keyed by ids (e.g. counters per feed): the values' types must agree.
        (Value::Object(want), Value::Object(have))
            if !want.is_empty() && want.keys().all(|k| k.parse::<i64>().is_ok()) =>
        {
            assert!(
                have.keys().all(|k| k.parse::<i64>().is_ok()),
                "{at}: keys are not ids in {ours}"
            );
            if let (Some(w), Some(h)) = (want.values().next(), have.values().next()) {
                assert_same_shape(w, h, &format!("{at}[id]"));
            }
        }
        (Value::Object(want), Value::Object(have)) => {
            for (key, value) in want {
                let Some(found) = have.get(key) else {
                    panic!("{at}.{key} is missing from {ours}");
                };
                assert_same_shape(value, found, &format!("{at}.{key}"));
            }
        }
        (Value::Array(want), Value::Array(have)) => {
            if let (Some(w), Some(h)) = (want.first(), have.first()) {
                assert_same_shape(w, h, &format!("{at}[0]"));
            }
        }
        // A nullable field may be null on one side.
        (Value::Null, _) | (_, Value::Null) => {}
        (want, have) => assert_eq!(kind(want), kind(have), "{at}: {have} vs {want}"),
    }
}

/// An item title with HTML's special characters in it, as text.
pub const AWKWARD_TITLE: &str = "Item & <friends>";

/// [`AWKWARD_TITLE`] as FreshRSS writes titles to apps (`escapeToUnicodeAlternative` in its
/// `lib/lib_rss.php`): `&`, `<` and `>` as their full-width forms, which apps that read the
/// title as HTML (Read You, RSS Guard's preview) and apps that read it as text both show whole.
pub const AWKWARD_TITLE_SENT: &str = "Item ＆ ＜friends＞";

/// Stores an item titled [`AWKWARD_TITLE`] by "Ann & <Bob>" in `feed_id`, and names the user's
/// subscription to that feed "News & <Views>".
pub async fn add_awkward_titles(store: &tidings_store::Store, user_id: i64, feed_id: i64) {
    let awkward = tidings_store::NewItem {
        title: Some(AWKWARD_TITLE.into()),
        author: Some("Ann & <Bob>".into()),
        ..item("awkward", BASE + 600 * 60)
    };
    store.upsert_items(feed_id, &[awkward], BASE).await.unwrap();
    let subscription = store
        .list_subscriptions(user_id)
        .await
        .unwrap()
        .into_iter()
        .find(|s| s.feed_id == feed_id)
        .unwrap();
    store
        .update_subscription(
            user_id,
            subscription.id,
            &tidings_store::SubscriptionChanges {
                title: Some(Some("News & <Views>".into())),
                ..Default::default()
            },
        )
        .await
        .unwrap();
}
