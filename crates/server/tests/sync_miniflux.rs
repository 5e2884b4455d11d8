//! The Miniflux API v1 subset over HTTP against a real server, on both engines: credentials
//! (X-Auth-Token, Basic, read-only keys), feeds, categories, every entry filter, status
//! updates, the bookmark toggle, refresh, counters, OPML; the answers' shapes against a real
//! Miniflux's (`src/sync/testdata/miniflux`); and the real clients: the PyPI `miniflux`
//! package and Debian's newsboat with `urls-source "miniflux"`.

use tidings_testkit::on_both_engines;

use std::collections::HashSet;

use crate::support::{TestApp, TestServer, call};
use crate::sync_clients::{
    BASE, TwoFeeds, api_key, assert_same_shape, program, python_with, run_python, testdata_pairs,
    two_feeds,
};
use reqwest::{Client, Method, StatusCode};
use serde_json::{Value, json};

/// A client sending `X-Auth-Token: key`.
fn token_client(key: &str) -> Client {
    let mut headers = reqwest::header::HeaderMap::new();
    headers.insert("x-auth-token", key.parse().unwrap());
    Client::builder().default_headers(headers).build().unwrap()
}

fn v1(app: &TestApp, path: &str) -> String {
    format!("{}/v1{path}", app.base)
}

fn entry_ids(body: &Value) -> Vec<i64> {
    body["entries"]
        .as_array()
        .unwrap_or_else(|| panic!("no entries: {body}"))
        .iter()
        .map(|e| e["id"].as_i64().unwrap())
        .collect()
}

/// A user "ann" with two feeds in two groups: feed A with 5 items, feed B with 3.
type Setup = TwoFeeds;

async fn setup(db: &tidings_testkit::TestDb) -> Setup {
    two_feeds(TestApp::start(db).await, 0..5, 10..13).await
}

on_both_engines!(
    credentials_are_an_api_key_as_token_or_basic_password,
    |db| {
        let s = setup(db).await;
        let url = v1(&s.app, "/me");
        let (status, _, me) = call(&token_client(&s.key), Method::GET, &url, None).await;
        assert_eq!(status, StatusCode::OK, "{me}");
        assert_eq!(me["username"], "ann");

        // Basic: the username with the key as the password.
        let basic = Client::new()
            .get(&url)
            .basic_auth("ann", Some(&s.key))
            .send()
            .await
            .unwrap();
        assert_eq!(basic.status(), StatusCode::OK);
        // The key of another user's name, the account password, a wrong token: 401 as Miniflux.
        for (user, password) in [("bob", s.key.as_str()), ("ann", crate::support::PASSWORD)] {
            let refused = Client::new()
                .get(&url)
                .basic_auth(user, Some(password))
                .send()
                .await
                .unwrap();
            assert_eq!(refused.status(), StatusCode::UNAUTHORIZED, "{user}");
            let body: Value = refused.json().await.unwrap();
            assert_eq!(body["error_message"], "Access Unauthorized");
        }
        let (status, _, body) = call(&token_client("tdg_wrong"), Method::GET, &url, None).await;
        assert_eq!(status, StatusCode::UNAUTHORIZED, "{body}");
        let (status, _, _) = call(&Client::new(), Method::GET, &url, None).await;
        assert_eq!(status, StatusCode::UNAUTHORIZED);

        // A read-only key reads but changes nothing.
        let browser = s.app.signed_in("ann").await;
        let read_only = token_client(&api_key(&s.app, &browser, "read").await);
        let (status, _, _) = call(&read_only, Method::GET, &v1(&s.app, "/feeds"), None).await;
        assert_eq!(status, StatusCode::OK);
        let (status, _, body) = call(
            &read_only,
            Method::PUT,
            &v1(&s.app, "/feeds/counters"),
            None,
        )
        .await;
        assert_eq!(status, StatusCode::METHOD_NOT_ALLOWED, "{body}");
        let (status, _, body) = call(
            &read_only,
            Method::PUT,
            &v1(&s.app, &format!("/feeds/{}/mark-all-as-read", s.feed_a)),
            None,
        )
        .await;
        assert_eq!(status, StatusCode::FORBIDDEN, "{body}");
        assert!(
            body["error_message"]
                .as_str()
                .unwrap()
                .contains("read-only")
        );
        let counts = s.app.store.unread_counts(1).await.unwrap();
        assert_eq!(
            counts.subscriptions.iter().map(|c| c.unread).sum::<i64>(),
            8
        );
    }
);

on_both_engines!(
    feeds_and_categories_describe_subscriptions_and_groups,
    |db| {
        let s = setup(db).await;
        let client = token_client(&s.key);
        let (status, _, feeds) = call(&client, Method::GET, &v1(&s.app, "/feeds"), None).await;
        assert_eq!(status, StatusCode::OK);
        let feeds = feeds.as_array().unwrap().clone();
        assert_eq!(feeds.len(), 2);
        let b = feeds.iter().find(|f| f["id"] == s.feed_b).unwrap();
        assert_eq!(b["feed_url"], "https://b.example/feed");
        assert_eq!(b["category"]["id"], s.group_b);
        assert_eq!(b["category"]["title"], "Tech");

        let (status, _, one) = call(
            &client,
            Method::GET,
            &v1(&s.app, &format!("/feeds/{}", s.feed_a)),
            None,
        )
        .await;
        assert_eq!(status, StatusCode::OK);
        assert_eq!(one["id"], s.feed_a);
        for missing in [
            "/feeds/999999",
            "/feeds/abc",
            "/entries/999999",
            "/no/such/path",
            "/categories/999999/feeds",
        ] {
            let (status, _, body) = call(&client, Method::GET, &v1(&s.app, missing), None).await;
            assert_eq!(status, StatusCode::NOT_FOUND, "{missing}: {body}");
            assert!(body["error_message"].is_string(), "{body}");
        }

        let (_, _, categories) = call(
            &client,
            Method::GET,
            &v1(&s.app, "/categories?counts=true"),
            None,
        )
        .await;
        let tech = categories
            .as_array()
            .unwrap()
            .iter()
            .find(|c| c["id"] == s.group_b)
            .unwrap();
        assert_eq!(tech["title"], "Tech");
        assert_eq!(tech["feed_count"], 1);
        assert_eq!(tech["total_unread"], 3);
        let (_, _, in_tech) = call(
            &client,
            Method::GET,
            &v1(&s.app, &format!("/categories/{}/feeds", s.group_b)),
            None,
        )
        .await;
        assert_eq!(in_tech.as_array().unwrap().len(), 1);
        assert_eq!(in_tech[0]["id"], s.feed_b);
    }
);

on_both_engines!(entries_filter_order_and_page_like_miniflux, |db| {
    let s = setup(db).await;
    let client = token_client(&s.key);
    let get = async |query: &str| {
        let (status, _, body) = call(
            &client,
            Method::GET,
            &v1(&s.app, &format!("/entries{query}")),
            None,
        )
        .await;
        assert_eq!(status, StatusCode::OK, "{query}: {body}");
        body
    };
    // Default: oldest published first, everything.
    let all = get("").await;
    assert_eq!(all["total"], 8);
    let ids = entry_ids(&all);
    assert_eq!(ids.len(), 8);
    let published: Vec<String> = all["entries"]
        .as_array()
        .unwrap()
        .iter()
        .map(|e| e["published_at"].as_str().unwrap().to_string())
        .collect();
    let mut sorted = published.clone();
    sorted.sort();
    assert_eq!(published, sorted);
    let first = &all["entries"][0];
    assert_eq!(first["status"], "unread");
    assert_eq!(first["content"], "<p>Full text of a-0</p>");
    assert_eq!(first["feed"]["id"], s.feed_a);
    assert_eq!(first["published_at"], tidings_server::api::time(BASE));

    // Limit, offset and the total of the whole selection.
    let page = get("?direction=desc&limit=3&offset=2").await;
    assert_eq!(page["total"], 8);
    let newest_first: Vec<i64> = ids.iter().rev().copied().collect();
    assert_eq!(entry_ids(&page), newest_first[2..5].to_vec());
    let by_id = get("?order=id&direction=asc").await;
    let mut ascending = ids.clone();
    ascending.sort();
    assert_eq!(entry_ids(&by_id), ascending);

    // Feed and category filters, in the query and in the path.
    assert_eq!(get(&format!("?feed_id={}", s.feed_b)).await["total"], 3);
    assert_eq!(
        get(&format!("?category_id={}", s.group_b)).await["total"],
        3
    );
    let (_, _, in_feed) = call(
        &client,
        Method::GET,
        &v1(&s.app, &format!("/feeds/{}/entries?limit=2", s.feed_a)),
        None,
    )
    .await;
    assert_eq!(in_feed["total"], 5);
    assert_eq!(entry_ids(&in_feed).len(), 2);
    let (_, _, in_group) = call(
        &client,
        Method::GET,
        &v1(&s.app, &format!("/categories/{}/entries", s.group_b)),
        None,
    )
    .await;
    assert_eq!(in_group["total"], 3);

    // after / before are publication times, strictly.
    let window = get(&format!("?after={}&before={}", BASE + 60, BASE + 4 * 60)).await;
    let titles: Vec<&str> = window["entries"]
        .as_array()
        .unwrap()
        .iter()
        .map(|e| e["title"].as_str().unwrap())
        .collect();
    assert_eq!(titles, ["Item a-2", "Item a-3"]);
    let after_id = get(&format!("?after_entry_id={}&order=id", ascending[5])).await;
    assert_eq!(entry_ids(&after_id), ascending[6..].to_vec());

    // Status updates, status filters, the bookmark toggle and the starred filter.
    let (status, _, _) = call(
        &client,
        Method::PUT,
        &v1(&s.app, "/entries"),
        Some(json!({"entry_ids": [ids[0], ids[1]], "status": "read"})),
    )
    .await;
    assert_eq!(status, StatusCode::NO_CONTENT);
    assert_eq!(get("?status=read").await["total"], 2);
    assert_eq!(get("?status=unread").await["total"], 6);
    assert_eq!(get("?status=read&status=unread").await["total"], 8);
    assert_eq!(get("?status=removed").await["total"], 0);
    call(
        &client,
        Method::PUT,
        &v1(&s.app, "/entries"),
        Some(json!({"entry_ids": [ids[1]], "status": "unread"})),
    )
    .await;
    assert_eq!(entry_ids(&get("?status=read").await), vec![ids[0]]);

    let bookmark = v1(&s.app, &format!("/entries/{}/bookmark", ids[3]));
    let (status, _, _) = call(&client, Method::PUT, &bookmark, None).await;
    assert_eq!(status, StatusCode::NO_CONTENT);
    assert_eq!(entry_ids(&get("?starred=true").await), vec![ids[3]]);
    let (_, _, one) = call(
        &client,
        Method::GET,
        &v1(&s.app, &format!("/entries/{}", ids[3])),
        None,
    )
    .await;
    assert_eq!(one["starred"], true);
    call(&client, Method::PUT, &bookmark, None).await;
    assert_eq!(get("?starred=true").await["total"], 0);
    let (status, _, _) = call(
        &client,
        Method::GET,
        &v1(&s.app, &format!("/feeds/{}/entries/{}", s.feed_b, ids[0])),
        None,
    )
    .await;
    assert_eq!(status, StatusCode::NOT_FOUND, "an entry of another feed");

    phase_bad_parameters(&s.app, &client).await;
});

/// Bad parameters and bodies are 400 with the reason.
async fn phase_bad_parameters(app: &TestApp, client: &Client) {
    // Bad parameters and bodies are 400 with the reason.
    for query in [
        "?status=gone",
        "?limit=many",
        "?order=title",
        "?direction=up",
        "?search=x",
    ] {
        let (status, _, body) = call(
            client,
            Method::GET,
            &v1(app, &format!("/entries{query}")),
            None,
        )
        .await;
        assert_eq!(status, StatusCode::BAD_REQUEST, "{query}: {body}");
        assert!(body["error_message"].as_str().unwrap().len() > 10, "{body}");
    }
    for body in [
        json!({"entry_ids": [], "status": "read"}),
        json!({"entry_ids": [1], "status": "x"}),
        json!({"ids": [1]}),
    ] {
        let (status, _, answer) = call(client, Method::PUT, &v1(app, "/entries"), Some(body)).await;
        assert_eq!(status, StatusCode::BAD_REQUEST, "{answer}");
    }
}

on_both_engines!(mark_all_read_counters_and_opml, |db| {
    let s = setup(db).await;
    let client = token_client(&s.key);
    let (_, _, counters) = call(&client, Method::GET, &v1(&s.app, "/feeds/counters"), None).await;
    assert_eq!(counters["unreads"][s.feed_a.to_string()], 5);
    assert_eq!(counters["unreads"][s.feed_b.to_string()], 3);
    assert!(
        counters["reads"].as_object().unwrap().is_empty(),
        "{counters}"
    );

    let (status, _, _) = call(
        &client,
        Method::PUT,
        &v1(&s.app, &format!("/feeds/{}/mark-all-as-read", s.feed_a)),
        None,
    )
    .await;
    assert_eq!(status, StatusCode::NO_CONTENT);
    let (_, _, counters) = call(&client, Method::GET, &v1(&s.app, "/feeds/counters"), None).await;
    assert_eq!(counters["reads"][s.feed_a.to_string()], 5, "{counters}");
    assert!(counters["unreads"].get(s.feed_a.to_string()).is_none());
    call(
        &client,
        Method::PUT,
        &v1(
            &s.app,
            &format!("/categories/{}/mark-all-as-read", s.group_b),
        ),
        None,
    )
    .await;
    let (_, _, counters) = call(&client, Method::GET, &v1(&s.app, "/feeds/counters"), None).await;
    assert!(
        counters["unreads"].as_object().unwrap().is_empty(),
        "{counters}"
    );

    let (_, _, me) = call(&client, Method::GET, &v1(&s.app, "/me"), None).await;
    let (status, _, _) = call(
        &client,
        Method::PUT,
        &v1(
            &s.app,
            &format!("/users/{}/mark-all-as-read", me["id"].as_i64().unwrap() + 1),
        ),
        None,
    )
    .await;
    assert_eq!(status, StatusCode::FORBIDDEN);

    // OPML out and in.
    let export = client.get(v1(&s.app, "/export")).send().await.unwrap();
    assert_eq!(export.status(), StatusCode::OK);
    let opml = export.text().await.unwrap();
    assert!(
        opml.contains("https://b.example/feed") && opml.contains("Tech"),
        "{opml}"
    );
    // An import checks each feed with one fetch, so the imported feed is served locally.
    let site = TestServer::start_empty().await;
    site.serve(
        "/c.xml",
        200,
        "application/rss+xml",
        crate::support::rss(&site.base, "c", 1),
    );
    let c_url = format!("{}/c.xml", site.base);
    let import = format!(
        "<?xml version=\"1.0\"?><opml version=\"2.0\"><head><title>x</title></head><body>\
         <outline text=\"News\"><outline type=\"rss\" text=\"C\" xmlUrl=\"{c_url}\"/></outline>\
         </body></opml>"
    );
    let response = client
        .post(v1(&s.app, "/import"))
        .body(import)
        .send()
        .await
        .unwrap();
    assert_eq!(response.status(), StatusCode::CREATED);
    let (_, _, feeds) = call(&client, Method::GET, &v1(&s.app, "/feeds"), None).await;
    let c = feeds
        .as_array()
        .unwrap()
        .iter()
        .find(|f| f["feed_url"] == c_url.as_str())
        .expect("imported feed");
    assert_eq!(c["category"]["title"], "News");
    let response = client
        .post(v1(&s.app, "/import"))
        .body("not opml")
        .send()
        .await
        .unwrap();
    assert_eq!(response.status(), StatusCode::BAD_REQUEST);
    let body: Value = response.json().await.unwrap();
    assert!(
        body["error_message"].as_str().unwrap().contains("OPML"),
        "{body}"
    );
});

on_both_engines!(refresh_fetches_the_feed_now, |db| {
    let app = TestApp::start(db).await;
    app.user("ann", false).await;
    let browser = app.signed_in("ann").await;
    let key = api_key(&app, &browser, "read_write").await;
    let feeds = TestServer::start_empty().await;
    feeds.serve(
        "/f.xml",
        200,
        "application/rss+xml",
        crate::support::rss(&feeds.base, "f", 2),
    );
    let (status, _, sub) = call(
        &browser,
        Method::POST,
        &app.url("/subscriptions"),
        Some(json!({"url": feeds.url("/f.xml")})),
    )
    .await;
    assert_eq!(status, StatusCode::CREATED, "{sub}");
    let feed_id = sub["subscription"]["feed_id"].as_i64().unwrap();
    // Wait out the once-a-minute rule by clearing the last request.
    app.store
        .execute_raw("UPDATE feed_fetch_state SET last_refresh_request = NULL")
        .await
        .unwrap();
    feeds.serve(
        "/f.xml",
        200,
        "application/rss+xml",
        crate::support::rss(&feeds.base, "f", 4),
    );
    let client = token_client(&key);
    let (status, _, _) = call(
        &client,
        Method::PUT,
        &v1(&app, &format!("/feeds/{feed_id}/refresh")),
        None,
    )
    .await;
    assert_eq!(status, StatusCode::NO_CONTENT);
    let (_, _, entries) = call(&client, Method::GET, &v1(&app, "/entries"), None).await;
    assert_eq!(entries["total"], 4, "{entries}");
    let (status, _, _) = call(&client, Method::PUT, &v1(&app, "/feeds/refresh"), None).await;
    assert_eq!(status, StatusCode::NO_CONTENT);
});

/// Replays the real Miniflux request/response pairs of `src/sync/testdata/miniflux`.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn answers_have_the_shape_of_a_real_miniflux() {
    tidings_testkit::run_on(tidings_testkit::TestDb::sqlite(), async |db| {
        let s = setup(db).await;
        let mut seen = HashSet::new();
        for (path, pair) in testdata_pairs("miniflux") {
            let request = &pair["request"];
            let method: Method = request["method"].as_str().unwrap().parse().unwrap();
            let mut builder = Client::new().request(
                method,
                format!("{}{}", s.app.base, request["path"].as_str().unwrap()),
            );
            let token = request["headers"]["X-Auth-Token"]
                .as_str()
                .unwrap_or(&s.key);
            builder = builder.header("X-Auth-Token", token);
            if !request["body"].is_null() {
                builder = builder.json(&request["body"]);
            }
            let response = builder.send().await.unwrap();
            let want = &pair["response"];
            assert_eq!(
                response.status().as_u16() as u64,
                want["status"].as_u64().unwrap(),
                "{path}"
            );
            let text = response.text().await.unwrap();
            let ours: Value = if text.is_empty() {
                Value::Null
            } else {
                serde_json::from_str(&text).unwrap()
            };
            if !want["body"].is_null() {
                assert!(!ours.is_null(), "{path}: empty answer");
            }
            assert_same_shape(&want["body"], &ours, &path);
            seen.insert(path);
        }
        assert!(seen.len() >= 7, "testdata read: {seen:?}");
    })
    .await;
}

/// The official Python client (PyPI `miniflux`): list feeds and entries, mark read, star,
/// export OPML.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn the_python_miniflux_client_lists_marks_stars_and_exports() {
    let Some(python) = python_with("sync_miniflux::the_python_miniflux_client", "miniflux") else {
        return;
    };
    tidings_testkit::run_on(tidings_testkit::TestDb::sqlite(), async |db| {
        let s = setup(db).await;
        let script = r#"
import sys, miniflux
base, key = sys.argv[1], sys.argv[2]
for client in (miniflux.Client(base, api_key=key), miniflux.Client(base, username="ann", password=key)):
    assert client.me()["username"] == "ann"
client = miniflux.Client(base, api_key=key)
feeds = client.get_feeds()
print("feeds", len(feeds))
unread = client.get_entries(status="unread", limit=100)
print("unread", unread["total"])
first = unread["entries"][0]["id"]
client.update_entries([first], status="read")
client.toggle_bookmark(first)
print("starred", client.get_entries(starred=True)["total"])
print("unread_after", client.get_entries(status="unread")["total"])
print("counters", sum(client.get_feed_counters()["unreads"].values()))
opml = client.export_feeds()
print("opml", "b.example" in opml)
try:
    miniflux.Client(base, api_key="tdg_wrong").me()
    print("wrong key accepted")
except miniflux.AccessUnauthorized:
    print("wrong key refused")
"#;
        let base = s.app.base.clone();
        let key = s.key.clone();
        let python = python.clone();
        let out = tokio::task::spawn_blocking(move || run_python(&python, script, &[&base, &key]))
            .await
            .unwrap();
        let lines: Vec<&str> = out.lines().collect();
        assert_eq!(
            lines,
            [
                "feeds 2",
                "unread 8",
                "starred 1",
                "unread_after 7",
                "counters 7",
                "opml True",
                "wrong key refused"
            ],
            "{out}"
        );
        let first_read = s
            .app
            .store
            .sync_items(1, &tidings_store::SyncQuery { read: Some(true), limit: 10, ..Default::default() })
            .await
            .unwrap();
        assert_eq!(first_read.len(), 1);
        assert!(first_read[0].item.is_starred);
    })
    .await;
}

/// Debian's newsboat 2.21 with `urls-source "miniflux"`: `newsboat -x reload print-unread`
/// counts what tidings has unread, and "mark feed read" (the `A` key) shows in tidings' API.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn newsboat_counts_unread_and_marks_read_through_miniflux() {
    let Some(newsboat) = program("sync_miniflux::newsboat", "newsboat") else {
        return;
    };
    let Some(script) = program("sync_miniflux::newsboat", "script") else {
        return;
    };
    tidings_testkit::run_on(tidings_testkit::TestDb::sqlite(), async |db| {
        let app = TestApp::start(db).await;
        app.user("ann", false).await;
        let browser = app.signed_in("ann").await;
        let key = api_key(&app, &browser, "read_write").await;
        let _feeds = phase_two_feeds_one_read(&app, &browser).await;

        let home = tempfile::tempdir().unwrap();
        let config = home.path().join("config");
        std::fs::write(
            &config,
            format!(
                "urls-source \"miniflux\"\nminiflux-url \"{}\"\nminiflux-login \"ann\"\n\
                 miniflux-password \"{key}\"\nconfirm-exit no\nshow-read-feeds yes\n",
                app.base
            ),
        )
        .unwrap();
        let urls = home.path().join("urls");
        std::fs::write(&urls, "").unwrap();
        let cache = home.path().join("cache.db");
        let args = |extra: &[&str]| -> Vec<String> {
            let mut args: Vec<String> = vec![
                "-C".into(),
                config.display().to_string(),
                "-u".into(),
                urls.display().to_string(),
                "-c".into(),
                cache.display().to_string(),
            ];
            args.extend(extra.iter().map(|s| s.to_string()));
            args
        };
        let run = |args: Vec<String>| {
            let newsboat = newsboat.clone();
            let home = home.path().to_path_buf();
            async move {
                tokio::task::spawn_blocking(move || {
                    std::process::Command::new(newsboat)
                        .args(args)
                        .env("HOME", &home)
                        .output()
                        .unwrap()
                })
                .await
                .unwrap()
            }
        };
        let out = run(args(&["-x", "reload", "print-unread"])).await;
        let stdout = String::from_utf8_lossy(&out.stdout).into_owned();
        assert!(
            out.status.success(),
            "{stdout}\n{}",
            String::from_utf8_lossy(&out.stderr)
        );
        assert!(
            stdout.contains("6 unread articles"),
            "newsboat said: {stdout}"
        );

        // Interactively, in a terminal: mark the first feed read (A), then quit (q).
        let command = std::iter::once(newsboat.display().to_string())
            .chain(args(&[]))
            .collect::<Vec<_>>()
            .join(" ");
        let home_path = home.path().to_path_buf();
        let status = tokio::task::spawn_blocking(move || {
            use std::io::Write;
            let mut child = std::process::Command::new(script)
                .args(["-qfec", &command, "/dev/null"])
                .env("HOME", &home_path)
                .env("TERM", "xterm")
                .stdin(std::process::Stdio::piped())
                .stdout(std::process::Stdio::null())
                .spawn()
                .unwrap();
            let mut stdin = child.stdin.take().unwrap();
            for (keys, pause) in [("", 2000), ("A", 2000), ("q", 1000)] {
                std::thread::sleep(std::time::Duration::from_millis(pause));
                let _ = stdin.write_all(keys.as_bytes());
                let _ = stdin.flush();
            }
            drop(stdin);
            child.wait().unwrap()
        })
        .await
        .unwrap();
        assert!(status.success(), "interactive newsboat: {status}");
        let (_, _, counts) = call(&browser, Method::GET, &app.url("/counts"), None).await;
        let unread: Vec<i64> = counts["subscriptions"]
            .as_array()
            .unwrap()
            .iter()
            .map(|c| c["unread"].as_i64().unwrap())
            .collect();
        assert!(
            unread.iter().sum::<i64>() < 6,
            "nothing was marked read: {counts}"
        );
        assert!(unread.contains(&0), "no feed was marked read: {counts}");

        let out = run(args(&["-x", "reload", "print-unread"])).await;
        let stdout = String::from_utf8_lossy(&out.stdout).into_owned();
        let expected = format!("{} unread articles", unread.iter().sum::<i64>());
        assert!(
            stdout.contains(&expected),
            "newsboat said {stdout}, tidings {counts}"
        );
    })
    .await;
}

/// Two local feeds, subscribed and fetched through the API, one item read beforehand: 6 unread.
/// Returns the feeds' site, to keep serving.
async fn phase_two_feeds_one_read(app: &TestApp, browser: &Client) -> TestServer {
    // Local feeds, subscribed and fetched through the API.
    let feeds = TestServer::start_empty().await;
    feeds.serve(
        "/one.xml",
        200,
        "application/rss+xml",
        crate::support::rss(&feeds.base, "one", 4),
    );
    feeds.serve(
        "/two.xml",
        200,
        "application/rss+xml",
        crate::support::rss(&feeds.base, "two", 3),
    );
    for path in ["/one.xml", "/two.xml"] {
        let (status, _, body) = call(
            browser,
            Method::POST,
            &app.url("/subscriptions"),
            Some(json!({"url": feeds.url(path)})),
        )
        .await;
        assert_eq!(status, StatusCode::CREATED, "{body}");
    }
    // One item read in the web UI's API beforehand: 6 unread.
    let (_, _, items) = call(
        browser,
        Method::GET,
        &app.url("/items?filter=unread&limit=1"),
        None,
    )
    .await;
    let read_id = items["items"][0]["id"].as_i64().unwrap();
    call(
        browser,
        Method::POST,
        &app.url("/items/mark-read"),
        Some(json!({"ids": [read_id]})),
    )
    .await;
    feeds
}

// newsboat with `miniflux-url "https://host/"` (and other apps given an address with a trailing
// slash) asks for `//v1/…`: served as the path with one slash.
on_both_engines!(a_typed_trailing_slash_still_reaches_the_api, |db| {
    let s = setup(db).await;
    let client = token_client(&s.key);
    let url = format!("{}//v1/me", s.app.base);
    let (status, _, me) = call(&client, Method::GET, &url, None).await;
    assert_eq!(status, StatusCode::OK, "{me}");
    assert_eq!(me["username"], "ann");
    let url = format!("{}//v1/entries?status=unread", s.app.base);
    let (status, _, entries) = call(&client, Method::GET, &url, None).await;
    assert_eq!(status, StatusCode::OK, "{entries}");
    assert_eq!(entries["total"], 8);
});

// The per-user sync limit is a setting (`TIDINGS_SYNC_REQUESTS_PER_MINUTE`): past it every
// sync API answers 429 with Retry-After.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn the_sync_limit_is_a_setting() {
    tidings_testkit::run_on(tidings_testkit::TestDb::sqlite(), async |db| {
        let app = TestApp::start_with(db, true, |config| config.sync_requests_per_minute = 3).await;
        let s = two_feeds(app, 0..1, 10..11).await;
        let client = token_client(&s.key);
        let url = v1(&s.app, "/me");
        for n in 0..3 {
            let response = client.get(&url).send().await.unwrap();
            assert_eq!(response.status(), StatusCode::OK, "request {n}");
        }
        let refused = client.get(&url).send().await.unwrap();
        assert_eq!(refused.status(), StatusCode::TOO_MANY_REQUESTS);
        assert!(refused.headers().contains_key("retry-after"));
    })
    .await;
}
