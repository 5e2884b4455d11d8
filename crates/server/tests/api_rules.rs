//! Rules (issue 33) over HTTP against a real server and a real feed on 127.0.0.1, on both
//! engines: saved with clear errors, acting on the items of a real first fetch for their user
//! alone (the REST listings, the unread counts and the Google Reader, Fever and Miniflux APIs
//! agree), previewed, applied once and undone, private to their user; a regular expression
//! may look at several fields.

use reqwest::{Client, Method, StatusCode};
use serde_json::{Value, json};
use tidings_testkit::feeds::rss_items;
use tidings_testkit::{TestServer, on_both_engines};

use tidings_server::sync::fever::key_digest;

use crate::support::{TestApp, call, greader_auth};

/// Titles of a listing (`/items?…`), sorted.
async fn titles(client: &Client, app: &TestApp, query: &str) -> Vec<String> {
    let (status, _, body) = call(
        client,
        Method::GET,
        &app.url(&format!("/items?{query}")),
        None,
    )
    .await;
    assert_eq!(status, StatusCode::OK, "{body}");
    let mut titles: Vec<String> = body["items"]
        .as_array()
        .unwrap()
        .iter()
        .map(|i| i["title"].as_str().unwrap().to_string())
        .collect();
    titles.sort();
    titles
}

/// The JSON a request answers.
async fn json_of(request: reqwest::RequestBuilder) -> Value {
    request.send().await.unwrap().json().await.unwrap()
}

/// How many items a Google Reader stream of the user lists, signed in with an API key.
async fn greader_count(app: &TestApp, user: &str, key: &str, stream: &str) -> usize {
    let base = format!("{}/api/greader.php", app.base);
    let auth = greader_auth(&base, user, key).await;
    let ids = json_of(
        Client::new()
            .get(format!("{base}/reader/api/0/stream/items/ids"))
            .query(&[("s", stream), ("n", "1000"), ("output", "json")])
            .header("authorization", format!("GoogleLogin auth={auth}")),
    )
    .await;
    ids["itemRefs"].as_array().map_or(0, Vec::len)
}

/// The titles of the Fever API's `items` for a user, and how many `unread_item_ids` it lists.
async fn fever_titles(app: &TestApp, user: &str, key: &str) -> (Vec<String>, usize) {
    let digest = key_digest(user, key);
    let ask = |what: &'static str| {
        let digest = digest.clone();
        async move {
            let answer = json_of(
                Client::new()
                    .post(format!("{}/api/fever.php?api&{what}", app.base))
                    .form(&[("api_key", digest.as_str())]),
            )
            .await;
            assert_eq!(answer["auth"], 1, "{answer}");
            answer
        }
    };
    let items = ask("items").await;
    let mut titles: Vec<String> = items["items"]
        .as_array()
        .unwrap()
        .iter()
        .map(|i| i["title"].as_str().unwrap().to_owned())
        .collect();
    titles.sort();
    let unread = ask("unread_item_ids").await;
    let ids = unread["unread_item_ids"].as_str().unwrap();
    (titles, ids.split(',').filter(|id| !id.is_empty()).count())
}

/// The titles of the Miniflux API's `/v1/entries` for a user (every status), and its total.
async fn miniflux_titles(app: &TestApp, key: &str) -> (Vec<String>, i64) {
    let page = json_of(
        Client::new()
            .get(format!("{}/v1/entries", app.base))
            .query(&[("limit", "100")])
            .header("x-auth-token", key),
    )
    .await;
    let mut titles: Vec<String> = page["entries"]
        .as_array()
        .unwrap_or_else(|| panic!("no entries in {page}"))
        .iter()
        .map(|e| e["title"].as_str().unwrap().to_owned())
        .collect();
    titles.sort();
    (titles, page["total"].as_i64().unwrap())
}

/// The Fever and Miniflux APIs leave ann's hidden item out (and count her read one as
/// read); bob, on the same feed, has all five unread in both.
async fn phase_fever_and_miniflux_leave_hidden_items_out(app: &TestApp, ann: &str, bob: &str) {
    let visible = [
        "BREAKING: a storm",
        "Plain news",
        "Rust 2.0 released",
        "天気予報",
    ];
    let (titles, unread) = fever_titles(app, "ann", ann).await;
    assert_eq!((titles, unread), (visible.map(String::from).to_vec(), 3));
    let (titles, total) = miniflux_titles(app, ann).await;
    assert_eq!((titles, total), (visible.map(String::from).to_vec(), 4));
    let (titles, unread) = fever_titles(app, "bob", bob).await;
    assert_eq!((titles.len(), unread), (5, 5), "{titles:?}");
    assert!(titles.contains(&"Sponsored: buy this".to_owned()));
    let (titles, total) = miniflux_titles(app, bob).await;
    assert_eq!((titles.len(), total), (5, 5), "{titles:?}");
}

async fn api_key(client: &Client, app: &TestApp) -> String {
    let (status, _, body) = call(
        client,
        Method::POST,
        &app.url("/api-keys"),
        Some(json!({"name": "sync"})),
    )
    .await;
    assert!(status.is_success(), "{body}");
    body["key"]
        .as_str()
        .or(body["api_key"]["key"].as_str())
        .unwrap()
        .to_string()
}

async fn unread_total(client: &Client, app: &TestApp) -> i64 {
    let (status, _, counts) = call(client, Method::GET, &app.url("/counts"), None).await;
    assert_eq!(status, StatusCode::OK, "{counts}");
    counts["unread"].as_i64().unwrap()
}

/// Clear refusals: each says what was wrong.
async fn phase_bad_rules_are_refused(ann: &Client, app: &TestApp) {
    let rules = app.url("/rules");
    for (body, status, words) in [
        (
            json!({"query": "x", "actions": ["explode"]}),
            StatusCode::BAD_REQUEST,
            "actions are",
        ),
        (
            json!({"actions": ["read"]}),
            StatusCode::BAD_REQUEST,
            "no condition",
        ),
        (json!({"query": "x"}), StatusCode::BAD_REQUEST, "no action"),
        (
            json!({"regex": {"field": "title", "pattern": "("}, "actions": ["read"]}),
            StatusCode::BAD_REQUEST,
            "regular expression",
        ),
        (
            json!({"regex": {"field": "title,body", "pattern": "x"}, "actions": ["read"]}),
            StatusCode::BAD_REQUEST,
            "or several joined by commas",
        ),
        (
            json!({"query": "x", "older_than_days": 0, "actions": ["read"]}),
            StatusCode::BAD_REQUEST,
            "older_than_days",
        ),
        (
            json!({"query": "x", "actions": ["notify:999999"]}),
            StatusCode::NOT_FOUND,
            "channel",
        ),
        (
            json!({"scope": {"feed_id": 999999}, "query": "x", "actions": ["read"]}),
            StatusCode::NOT_FOUND,
            "feed",
        ),
    ] {
        let (got, _, answer) = call(ann, Method::POST, &rules, Some(body.clone())).await;
        assert_eq!(got, status, "{body}: {answer}");
        let message = answer["error"]["message"].as_str().unwrap().to_lowercase();
        assert!(message.contains(words), "{body}: {message}");
    }
}

on_both_engines!(rules_act_on_a_real_fetch_for_their_user_alone, |db| {
    let app = TestApp::start(db).await;
    app.user("ann", false).await;
    app.user("bob", false).await;
    let ann = app.signed_in("ann").await;
    let bob = app.signed_in("bob").await;
    phase_bad_rules_are_refused(&ann, &app).await;
    for body in [
        json!({"name": "Ads", "query": "sponsored", "actions": ["hide"]}),
        json!({"query": "title:rust", "actions": ["star", "label:Lang"]}),
        json!({"regex": {"field": "url,title", "pattern": "(?i)^breaking"}, "actions": ["read"]}),
        json!({"query": "東京", "actions": ["label:Tokyo"]}),
    ] {
        let (status, _, saved) = call(&ann, Method::POST, &app.url("/rules"), Some(body)).await;
        assert_eq!(status, StatusCode::CREATED, "{saved}");
    }
    let (_, _, list) = call(&ann, Method::GET, &app.url("/rules"), None).await;
    let names: Vec<&str> = list["rules"]
        .as_array()
        .unwrap()
        .iter()
        .map(|r| r["name"].as_str().unwrap())
        .collect();
    assert_eq!(names, ["Ads", "title:rust", "Rule", "東京"]);

    // The feed's first fetch (ann subscribes first) runs her rules on its new items.
    let feeds = TestServer::start_empty().await;
    let site = feeds.url("");
    feeds.serve(
        "/wire.xml",
        200,
        "application/rss+xml",
        rss_items(
            &site,
            &[
                ("s1", "Sponsored: buy this", "<p>an advert</p>"),
                ("r1", "Rust 2.0 released", "<p>faster</p>"),
                ("b1", "BREAKING: a storm", "<p>wind</p>"),
                ("t1", "天気予報", "<p>東京は晴れ</p>"),
                ("n1", "Plain news", "<p>nothing</p>"),
            ],
        ),
    );
    for client in [&ann, &bob] {
        let (status, _, body) = call(
            client,
            Method::POST,
            &app.url("/subscriptions"),
            Some(json!({"url": feeds.url("/wire.xml")})),
        )
        .await;
        assert_eq!(status, StatusCode::CREATED, "{body}");
    }
    assert_eq!(
        titles(&ann, &app, "filter=all").await,
        [
            "BREAKING: a storm",
            "Plain news",
            "Rust 2.0 released",
            "天気予報"
        ]
    );
    assert_eq!(
        titles(&ann, &app, "filter=unread").await,
        ["Plain news", "Rust 2.0 released", "天気予報"]
    );
    assert_eq!(
        titles(&ann, &app, "filter=starred").await,
        ["Rust 2.0 released"]
    );
    assert_eq!(
        titles(&ann, &app, "filter=all&q=sponsored").await,
        Vec::<String>::new()
    );
    assert_eq!(unread_total(&ann, &app).await, 3);
    // Bob, on the same shared feed, sees all five as they came.
    assert_eq!(titles(&bob, &app, "filter=all").await.len(), 5);
    assert_eq!(unread_total(&bob, &app).await, 5);
    assert!(titles(&bob, &app, "filter=starred").await.is_empty());

    // The Google Reader API agrees: the hidden item is not there, the rule's star is, and
    // so are its labels.
    let ann_key = api_key(&ann, &app).await;
    let bob_key = api_key(&bob, &app).await;
    let reading = "user/-/state/com.google/reading-list";
    assert_eq!(greader_count(&app, "ann", &ann_key, reading).await, 4);
    assert_eq!(greader_count(&app, "bob", &bob_key, reading).await, 5);
    assert_eq!(
        greader_count(&app, "ann", &ann_key, "user/-/state/com.google/starred").await,
        1
    );
    assert_eq!(
        greader_count(&app, "ann", &ann_key, "user/-/label/Tokyo").await,
        1
    );
    assert_eq!(
        greader_count(&app, "bob", &bob_key, "user/-/label/Tokyo").await,
        0
    );
    phase_fever_and_miniflux_leave_hidden_items_out(&app, &ann_key, &bob_key).await;
});

on_both_engines!(preview_apply_undo_and_privacy_over_http, |db| {
    let app = TestApp::start(db).await;
    app.user("ann", false).await;
    app.user("bob", false).await;
    let ann = app.signed_in("ann").await;
    let bob = app.signed_in("bob").await;
    let feeds = TestServer::start_empty().await;
    let site = feeds.url("");
    feeds.serve(
        "/wire.xml",
        200,
        "application/rss+xml",
        rss_items(
            &site,
            &[
                ("a", "Football: the final", "<p>x</p>"),
                ("b", "Football: the draw", "<p>y</p>"),
                ("c", "Elections", "<p>z</p>"),
            ],
        ),
    );
    let (status, _, body) = call(
        &ann,
        Method::POST,
        &app.url("/subscriptions"),
        Some(json!({"url": feeds.url("/wire.xml")})),
    )
    .await;
    assert_eq!(status, StatusCode::CREATED, "{body}");
    let feed_id = body["subscription"]["feed_id"].as_i64().unwrap();
    let rule = json!({"name": "No football", "scope": {"feed_id": feed_id},
                      "query": "football", "actions": ["hide"]});

    // The preview shows what the rule would catch, and changes nothing.
    let (status, _, preview) = call(
        &ann,
        Method::POST,
        &app.url("/rules/preview"),
        Some(rule.clone()),
    )
    .await;
    assert_eq!(status, StatusCode::OK, "{preview}");
    assert_eq!(preview["matched"], 2, "{preview}");
    assert_eq!(preview["looked_at"], 3);
    assert_eq!(preview["items"].as_array().unwrap().len(), 2);
    let (status, _, saved) = call(&ann, Method::POST, &app.url("/rules"), Some(rule)).await;
    assert_eq!(status, StatusCode::CREATED, "{saved}");
    let id = saved["rule"]["id"].as_i64().unwrap();
    assert_eq!(saved["rule"]["scope"]["feed_id"], feed_id);
    assert_eq!(
        titles(&ann, &app, "filter=all").await.len(),
        3,
        "saving changes no existing item"
    );

    // Bob can neither read, change, apply nor delete it.
    for (method, path) in [
        (Method::GET, format!("/rules/{id}")),
        (Method::PATCH, format!("/rules/{id}")),
        (Method::POST, format!("/rules/{id}/apply")),
        (Method::DELETE, format!("/rules/{id}")),
    ] {
        let body = (method == Method::PATCH).then(|| json!({"name": "mine"}));
        let (status, _, answer) = call(&bob, method.clone(), &app.url(&path), body).await;
        assert_eq!(status, StatusCode::NOT_FOUND, "{method} {path}: {answer}");
    }

    // Applied once: the two football items go; undone: they are back, unread.
    let (status, _, applied) = call(
        &ann,
        Method::POST,
        &app.url(&format!("/rules/{id}/apply")),
        None,
    )
    .await;
    assert_eq!(status, StatusCode::OK, "{applied}");
    assert_eq!(applied["changed"], 2);
    assert_eq!(titles(&ann, &app, "filter=all").await, ["Elections"]);
    assert_eq!(unread_total(&ann, &app).await, 1);
    let undo = json!({"undo": applied["undo"].clone()});
    let (status, _, answer) = call(
        &bob,
        Method::POST,
        &app.url("/rules/apply/undo"),
        Some(undo.clone()),
    )
    .await;
    assert_eq!(
        status,
        StatusCode::NOT_FOUND,
        "another user's undo: {answer}"
    );
    let (status, _, undone) = call(
        &ann,
        Method::POST,
        &app.url("/rules/apply/undo"),
        Some(undo),
    )
    .await;
    assert_eq!(status, StatusCode::OK, "{undone}");
    assert_eq!(undone["restored"], 2);
    assert_eq!(titles(&ann, &app, "filter=all").await.len(), 3);
    assert_eq!(unread_total(&ann, &app).await, 3);

    // Changed (only what is given), then deleted.
    let (status, _, changed) = call(
        &ann,
        Method::PATCH,
        &app.url(&format!("/rules/{id}")),
        Some(json!({"enabled": false, "actions": ["read", "label:Sport"]})),
    )
    .await;
    assert_eq!(status, StatusCode::OK, "{changed}");
    assert_eq!(changed["rule"]["enabled"], false);
    assert_eq!(changed["rule"]["query"], "football");
    assert_eq!(changed["rule"]["actions"], json!(["read", "label:Sport"]));
    // A condition is removed with null; one not sent stays.
    let (_, _, aged) = call(
        &ann,
        Method::PATCH,
        &app.url(&format!("/rules/{id}")),
        Some(json!({"older_than_days": 5, "regex": {"field": "title", "pattern": "^F"}})),
    )
    .await;
    assert_eq!(aged["rule"]["older_than_days"], 5, "{aged}");
    let (status, _, cleared) = call(
        &ann,
        Method::PATCH,
        &app.url(&format!("/rules/{id}")),
        Some(json!({"older_than_days": null, "regex": null})),
    )
    .await;
    assert_eq!(status, StatusCode::OK, "{cleared}");
    assert!(
        cleared["rule"].get("older_than_days").is_none(),
        "{cleared}"
    );
    assert!(cleared["rule"].get("regex").is_none(), "{cleared}");
    assert_eq!(cleared["rule"]["query"], "football");
    let (status, _, _) = call(
        &ann,
        Method::DELETE,
        &app.url(&format!("/rules/{id}")),
        None,
    )
    .await;
    assert_eq!(status, StatusCode::NO_CONTENT);
    let (_, _, list) = call(&ann, Method::GET, &app.url("/rules"), None).await;
    assert!(list["rules"].as_array().unwrap().is_empty());
});
