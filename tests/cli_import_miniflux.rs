//! `tidings import miniflux` on both engines, against two servers: a stand-in that answers the
//! recorded Miniflux answers of `crates/worker/testdata/miniflux` (shapes from Miniflux's API
//! documentation and source, see its README), and tidings' own Miniflux API served by
//! `tidings serve`. Each import carries subscriptions with titles and folders (Miniflux's
//! default category "All" is none), the crawler as full text, stars (one kept as a bookmark)
//! and read marks; a dry run and a second run change nothing; a wrong key says what to do.

use std::path::Path;
use std::sync::Arc;

use axum::Router;
use axum::extract::RawQuery;
use axum::http::{HeaderMap, StatusCode};
use axum::response::{IntoResponse, Redirect, Response};
use axum::routing::get;
use tidings_store::{FullTextMode, Store};

use crate::cli_import::{import, states};
use crate::support::*;

/// The recorded answers.
const FIXTURES: &str = concat!(
    env!("CARGO_MANIFEST_DIR"),
    "/crates/worker/testdata/miniflux"
);
/// The stand-in's API key.
const KEY: &str = "miniflux-test-key";

/// A recorded answer, with `{FEEDS}` standing for the feed server.
fn fixture(name: &str, feeds: &str) -> String {
    std::fs::read_to_string(format!("{FIXTURES}/{name}"))
        .unwrap()
        .replace("{FEEDS}", feeds)
}

/// A JSON answer of the stand-in, or Miniflux's 401 for another key than [`KEY`].
fn answer(headers: &HeaderMap, feeds: &str, name: &str) -> Response {
    let json = [("content-type", "application/json")];
    if headers.get("x-auth-token").and_then(|v| v.to_str().ok()) != Some(KEY) {
        let body = fixture("unauthorized.json", feeds);
        return (StatusCode::UNAUTHORIZED, json, body).into_response();
    }
    (json, fixture(name, feeds)).into_response()
}

/// The stand-in Miniflux: `/v1/me`, `/v1/feeds` and `/v1/entries` paged by `after_entry_id`
/// as the client must ask (by id, ascending).
fn stand_in(feeds: String) -> Router {
    let feeds = Arc::new(feeds);
    let (me, list, entries) = (feeds.clone(), feeds.clone(), feeds);
    Router::new()
        .route(
            "/v1/me",
            get(move |headers: HeaderMap| async move { answer(&headers, &me, "me.json") }),
        )
        .route(
            "/v1/feeds",
            get(move |headers: HeaderMap| async move { answer(&headers, &list, "feeds.json") }),
        )
        .route(
            "/v1/entries",
            get(
                move |headers: HeaderMap, RawQuery(query): RawQuery| async move {
                    let query = query.unwrap_or_default();
                    let pairs: Vec<&str> = query.split('&').collect();
                    for wanted in ["order=id", "direction=asc", "status=read", "status=unread"] {
                        if !pairs.contains(&wanted) {
                            let message = format!("{{\"error_message\": \"no {wanted}\"}}");
                            return (StatusCode::BAD_REQUEST, message).into_response();
                        }
                    }
                    let after = pairs
                        .iter()
                        .find_map(|pair| pair.strip_prefix("after_entry_id="));
                    match after {
                        None => answer(&headers, &entries, "entries-1.json"),
                        Some("103") => answer(&headers, &entries, "entries-2.json"),
                        _ => (
                            [("content-type", "application/json")],
                            r#"{"total": 7, "entries": []}"#,
                        )
                            .into_response(),
                    }
                },
            ),
        )
}

/// FreshRSS' feed server's kind: alpha, beta and gamma with items 0–2 (gamma: 0), recent;
/// `/old-gamma.xml` has moved to `/gamma.xml` for good.
fn feed_server() -> Router {
    let now = chrono::Utc::now().timestamp();
    let feed = |title: &str, n: i64| {
        let items: Vec<(String, i64)> = (0..n)
            .map(|n| (n.to_string(), now - (n + 1) * 3600))
            .collect();
        tidings_testkit::feeds::rss_dated("http://127.0.0.1", title, &items)
    };
    let (alpha, beta, gamma) = (feed("alpha", 3), feed("beta", 3), feed("gamma", 1));
    Router::new()
        .route("/alpha.xml", get(move || async move { alpha }))
        .route("/beta.xml", get(move || async move { beta }))
        .route("/gamma.xml", get(move || async move { gamma }))
        .route(
            "/old-gamma.xml",
            get(|| async { Redirect::permanent("/gamma.xml") }),
        )
}

/// Each subscription as (feed URL, group name, custom title, full-text mode), sorted.
async fn subscriptions(
    store: &Store,
    user: i64,
) -> Vec<(String, String, Option<String>, FullTextMode)> {
    let groups = store.list_groups(user).await.unwrap();
    let mut list: Vec<_> = store
        .list_subscriptions(user)
        .await
        .unwrap()
        .into_iter()
        .map(|s| {
            let group = groups.iter().find(|g| g.id == s.group_id).unwrap();
            (s.feed_url, group.name.clone(), s.custom_title, s.full_text)
        })
        .collect();
    list.sort();
    list
}

fn stdout_of(output: &std::process::Output) -> String {
    String::from_utf8_lossy(&output.stdout).into_owned()
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn miniflux_import_from_recorded_answers() {
    let test = "miniflux_import_from_recorded_answers";
    let dir = tempfile::tempdir().unwrap();
    let feeds = TestServer::start(feed_server()).await;
    let miniflux = TestServer::start(stand_in(feeds.base.clone())).await;
    let args = [
        "miniflux",
        &miniflux.base,
        "--user",
        "alice",
        "--api-key",
        KEY,
    ];
    let link = |path: &str| format!("http://127.0.0.1/{path}");
    for (url, admin) in test_databases(dir.path(), test).await {
        let store = store_at(&url).await;
        let alice = add_user(&store, "alice").await;

        let mut wrong = args.to_vec();
        wrong[5] = "not-the-key";
        let output = import(dir.path(), &url, &wrong);
        let stderr = String::from_utf8_lossy(&output.stderr).into_owned();
        assert_eq!(output.status.code(), Some(1), "{stderr}");
        assert!(stderr.contains("refused the API key"), "{stderr}");
        assert!(stderr.contains("Settings > API Keys"), "{stderr}");
        assert!(
            !stderr.contains("not-the-key"),
            "the key is not shown: {stderr}"
        );

        let mut dry = args.to_vec();
        dry.push("--dry-run");
        let output = import(dir.path(), &url, &dry);
        let stdout = stdout_of(&output);
        assert!(output.status.success(), "{stdout}");
        assert!(stdout.contains("subscriptions: 3 would add"), "{stdout}");
        assert!(stdout.contains("folders: 1 would add"), "{stdout}");
        assert!(stdout.contains("settings: 1 would add"), "{stdout}");
        assert!(store.list_subscriptions(alice).await.unwrap().is_empty());

        let output = import(dir.path(), &url, &args);
        let stdout = stdout_of(&output);
        assert!(output.status.success(), "{stdout}");
        for line in [
            "subscriptions: 3 added, 0 already there",
            // "News" (twice); the feeds of "All", Miniflux's default, go to the default group.
            "folders: 1 added, 1 already there",
            "starred: 3 added, 0 already there, 1 kept as bookmarks",
            "read marks: 2 added, 4 already there",
            "labels: 0 added",
            "settings: 1 added, 0 already there, 1 not kept",
            "not kept (settings): ",
            "alpha.xml: scraper rules, user agent (tidings has no such setting)",
        ] {
            assert!(stdout.contains(line), "{line}: {stdout}");
        }
        assert!(
            !stdout.contains("Custom/1.0"),
            "setting values are not printed"
        );
        let expected = vec![
            (
                feeds.url("/alpha.xml"),
                "News".to_owned(),
                Some("Alpha (mine)".to_owned()),
                FullTextMode::Always,
            ),
            // The title the user saw is kept as the subscription's own, as from FreshRSS.
            (
                feeds.url("/beta.xml"),
                "General".to_owned(),
                Some("beta".to_owned()),
                FullTextMode::Auto,
            ),
            // Moved for good at its first fetch: tidings follows it, and knows the old address.
            (
                feeds.url("/gamma.xml"),
                "News".to_owned(),
                Some("gamma".to_owned()),
                FullTextMode::Auto,
            ),
        ];
        assert_eq!(subscriptions(&store, alice).await, expected);
        let groups: Vec<String> = store
            .list_groups(alice)
            .await
            .unwrap()
            .into_iter()
            .map(|g| g.name)
            .collect();
        assert!(!groups.contains(&"All".to_owned()), "{groups:?}");
        let expected_states: Vec<(String, bool, bool)> = [
            ("alpha/0", false, true),
            ("alpha/1", true, false),
            ("alpha/2", false, false),
            ("beta/0", true, false),
            ("beta/1", false, true),
            ("beta/2", false, false),
            ("gamma/0", false, true),
        ]
        .iter()
        .map(|(path, read, starred)| (link(path), *read, *starred))
        .collect();
        assert_eq!(states(&store, alice).await, expected_states);
        let bookmarks = store.list_bookmarks(alice).await.unwrap();
        assert_eq!(bookmarks.len(), 1, "{bookmarks:?}");
        assert_eq!(
            bookmarks[0].url.as_deref(),
            Some(link("alpha/old").as_str())
        );
        assert_eq!(
            bookmarks[0].content.as_deref(),
            Some("<p>Kept from Miniflux</p>")
        );
        assert_eq!(bookmarks[0].published_at, Some(1_563_098_400));
        assert_eq!(bookmarks[0].feed_title.as_deref(), Some("Alpha (mine)"));

        // Twice changes nothing, the moved feed included (found by its former address).
        let output = import(dir.path(), &url, &args);
        let stdout = stdout_of(&output);
        assert!(output.status.success(), "{stdout}");
        for line in [
            "subscriptions: 0 added, 3 already there",
            "folders: 0 added, 2 already there",
            // The bookmark is there too.
            "starred: 0 added, 4 already there",
            "read marks: 0 added, 6 already there",
            "settings: 0 added, 1 already there, 1 not kept",
        ] {
            assert!(stdout.contains(line), "{line}: {stdout}");
        }
        assert_eq!(subscriptions(&store, alice).await, expected);
        assert_eq!(states(&store, alice).await, expected_states);
        assert_eq!(store.list_bookmarks(alice).await.unwrap().len(), 1);
        store.close().await;
        drop_postgres(admin).await;
    }
}

/// Bob's account on a tidings: alpha in "Tech" with full text always, beta at the top level
/// (the default group), alpha 0 starred and beta 1 read; answers his API key.
async fn set_up_bob(dir: &Path, url: &str, store: &Store, feeds: &TestServer) -> String {
    let bob = add_user(store, "bob").await;
    let opml = dir.join("bob.opml");
    std::fs::write(
        &opml,
        format!(
            "<opml version=\"2.0\"><head><title>t</title></head><body>\
             <outline text=\"Tech\"><outline text=\"Alpha\" xmlUrl=\"{}\"/></outline>\
             <outline text=\"beta\" xmlUrl=\"{}\"/></body></opml>",
            feeds.url("/alpha.xml"),
            feeds.url("/beta.xml")
        ),
    )
    .unwrap();
    let output = tidings(dir, url)
        .args(["opml", "import", opml.to_str().unwrap(), "--user", "bob"])
        .env("TIDINGS_ALLOW_PRIVATE_NETWORKS", "true")
        .output()
        .unwrap();
    assert!(output.status.success(), "{output:?}");
    for subscription in store.list_subscriptions(bob).await.unwrap() {
        let items = store.feed_item_ids(subscription.feed_id).await.unwrap();
        assert_eq!(items.len(), 3, "{} fetched", subscription.feed_url);
        for id in items {
            let item = store.item(bob, id).await.unwrap();
            let link = item.url.unwrap_or_default();
            let (read, star) = match link.as_str() {
                "http://127.0.0.1/alpha/0" => (None, Some(true)),
                "http://127.0.0.1/beta/1" => (Some(true), None),
                _ => continue,
            };
            store.set_item_state(bob, id, read, star).await.unwrap();
        }
        if subscription.feed_url.ends_with("/alpha.xml") {
            let changes = tidings_store::SubscriptionChanges {
                full_text: Some(FullTextMode::Always),
                ..Default::default()
            };
            store
                .update_subscription(bob, subscription.id, &changes)
                .await
                .unwrap();
        }
    }
    let key = "tidings-source-key";
    store
        .create_api_key(
            bob,
            "import",
            "tdg_x",
            &tidings_server::base::auth::secret_hash(key),
            tidings_store::ApiKeyScope::Read,
            None,
        )
        .await
        .unwrap();
    key.to_owned()
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn miniflux_import_from_tidings_own_miniflux_api() {
    let test = "miniflux_import_from_tidings_own_miniflux_api";
    let dir = tempfile::tempdir().unwrap();
    let feeds = TestServer::start(feed_server()).await;
    for (url, admin) in test_databases(dir.path(), test).await {
        // Bob's tidings and Alice's are one database here (so that both engines serve the
        // API); Alice's subscriptions share Bob's feeds, and are still made by the import.
        let store = store_at(&url).await;
        let alice = add_user(&store, "alice").await;
        let key = set_up_bob(dir.path(), &url, &store, &feeds).await;
        let (_server, base) = start_serve(tidings(dir.path(), &url), &["--no-worker"]);
        let args = ["miniflux", &base, "--user", "alice", "--api-key", &key];
        let output = import(dir.path(), &url, &args);
        let stdout = stdout_of(&output);
        assert!(output.status.success(), "{stdout}");
        for line in [
            "subscriptions: 2 added",
            "folders: 1 added",
            "starred: 1 added",
            "read marks: 1 added, 5 already there",
            "settings: 1 added",
        ] {
            assert!(stdout.contains(line), "{line}: {stdout}");
        }
        let expected = vec![
            (
                feeds.url("/alpha.xml"),
                "Tech".to_owned(),
                Some("Alpha".to_owned()),
                FullTextMode::Always,
            ),
            (
                feeds.url("/beta.xml"),
                "General".to_owned(),
                Some("beta".to_owned()),
                FullTextMode::Auto,
            ),
        ];
        assert_eq!(subscriptions(&store, alice).await, expected);
        let expected_states: Vec<(String, bool, bool)> = [
            ("alpha/0", false, true),
            ("alpha/1", false, false),
            ("alpha/2", false, false),
            ("beta/0", false, false),
            ("beta/1", true, false),
            ("beta/2", false, false),
        ]
        .iter()
        .map(|(path, read, starred)| (format!("http://127.0.0.1/{path}"), *read, *starred))
        .collect();
        assert_eq!(states(&store, alice).await, expected_states);

        let output = import(dir.path(), &url, &args);
        let stdout = stdout_of(&output);
        assert!(output.status.success(), "{stdout}");
        for line in [
            "subscriptions: 0 added, 2 already there",
            "starred: 0 added, 1 already there",
            "read marks: 0 added, 6 already there",
        ] {
            assert!(stdout.contains(line), "{line}: {stdout}");
        }
        assert_eq!(states(&store, alice).await, expected_states);
        store.close().await;
        drop_postgres(admin).await;
    }
}
