//! Duplicates across feeds over HTTP, on both engines: every item carries its `cluster`,
//! `GET /items` lists a story once or every copy (`collapse`, else the preference), counts
//! count it once (the Google Reader API's `unread-count` too), the preferences and the
//! per-subscription choice are read and checked, and a sync app (Fever) sees one copy and its
//! read mark reaches the others.

use tidings_testkit::{follow, on_both_engines};

use crate::support::{TestApp, assert_error, call, greader_auth};
use crate::sync_clients::api_key;
use reqwest::{Client, Method, StatusCode};
use serde_json::{Value, json};
use tidings_server::sync::fever::key_digest;
use tidings_store::{NewItem, unix_now};

const TEXT: &str = "<p>The central bank left its main interest rate unchanged on Thursday, \
    saying inflation had cooled faster than expected over the summer while the labour market \
    stayed tight. Policymakers voted seven to two to hold the rate, and the governor told \
    reporters that cuts would depend on wage growth in the coming months.</p>";

fn copy(guid: &str, url: &str, title: &str) -> NewItem {
    NewItem {
        guid: Some(guid.into()),
        url: Some(url.into()),
        title: Some(title.into()),
        content: Some(TEXT.into()),
        published: Some(unix_now() - 3600),
        ..NewItem::default()
    }
}

fn ids(body: &Value) -> Vec<i64> {
    let mut ids: Vec<i64> = body["items"]
        .as_array()
        .unwrap_or_else(|| panic!("no items: {body}"))
        .iter()
        .map(|i| i["id"].as_i64().unwrap())
        .collect();
    ids.sort_unstable();
    ids
}

async fn get(client: &Client, url: &str) -> Value {
    let (status, _, body) = call(client, Method::GET, url, None).await;
    assert_eq!(status, StatusCode::OK, "{url}: {body}");
    body
}

/// Fever's answer to `query` for the key digest.
async fn fever(app: &TestApp, digest: &str, query: &str) -> Value {
    let response = Client::new()
        .post(format!("{}/fever/?api&{query}", app.base))
        .header("content-type", "application/x-www-form-urlencoded")
        .body(format!("api_key={digest}"))
        .send()
        .await
        .unwrap();
    assert_eq!(response.status(), StatusCode::OK);
    response.json().await.unwrap()
}

/// The Google Reader API's unread counts per stream id, signed in with the API key.
async fn greader_unread(app: &TestApp, key: &str) -> Vec<(String, i64)> {
    let auth = greader_auth(&app.base, "ann", key).await;
    let client = Client::new();
    let answer: Value = client
        .get(format!(
            "{}/reader/api/0/unread-count?output=json",
            app.base
        ))
        .header("authorization", format!("GoogleLogin auth={auth}"))
        .send()
        .await
        .unwrap()
        .json()
        .await
        .unwrap();
    let mut counts: Vec<(String, i64)> = answer["unreadcounts"]
        .as_array()
        .unwrap_or_else(|| panic!("no unreadcounts: {answer}"))
        .iter()
        .map(|c| {
            (
                c["id"].as_str().unwrap().to_string(),
                c["count"].as_i64().unwrap(),
            )
        })
        .collect();
    counts.sort();
    counts
}

on_both_engines!(clusters_over_rest_and_fever, |db| {
    let app = TestApp::start(db).await;
    let ann_id = app.user("ann", false).await;
    let ann = app.signed_in("ann").await;
    let (_, wire) = follow(&app.store, ann_id, "https://wire.example/feed").await;
    let (paper_sub, paper) = follow(&app.store, ann_id, "https://paper.example/feed").await;
    let now = unix_now();
    let url = "https://wire.example/2026/11/bank-holds-rates";
    let wire_copy = copy("w1", url, "Bank holds rates as inflation cools");
    app.store
        .store_fetch(wire, &[wire_copy], now, &Default::default())
        .await
        .unwrap();
    let paper_copy = copy(
        "p1",
        "https://www.wire.example/2026/11/bank-holds-rates?utm_source=paper",
        "Bank holds rates as inflation cools | The Paper",
    );
    app.store
        .store_fetch(paper, &[paper_copy], now, &Default::default())
        .await
        .unwrap();
    let w = app.store.feed_item_ids(wire).await.unwrap()[0];
    let p = app.store.feed_item_ids(paper).await.unwrap()[0];

    // Listed once by default, with the other copy named; every copy when asked.
    let body = get(&ann, &app.url("/items?filter=all")).await;
    assert_eq!(ids(&body), vec![w]);
    let cluster = &body["items"][0]["cluster"];
    assert_eq!(cluster["size"], 2, "{body}");
    assert_eq!(cluster["also_in"][0]["item_id"], p);
    assert_eq!(cluster["also_in"][0]["feed_id"], paper);
    assert!(cluster["also_in"][0]["feed_title"].is_string());
    let body = get(&ann, &app.url("/items?filter=all&collapse=false")).await;
    assert_eq!(ids(&body), vec![w, p]);
    let item = get(&ann, &app.url(&format!("/items/{p}"))).await;
    assert_eq!(item["item"]["cluster"]["also_in"][0]["item_id"], w);
    assert_eq!(item["item"]["cluster"]["id"], cluster["id"]);
    let (status, _, body) = call(
        &ann,
        Method::GET,
        &app.url("/items?collapse=sometimes"),
        None,
    )
    .await;
    assert_eq!(status, StatusCode::BAD_REQUEST, "{body}");
    assert_error(&body, "invalid_request", "validation");
    assert_eq!(get(&ann, &app.url("/counts")).await["unread"], 1);

    // A sync app sees one copy; its read mark reaches the other.
    let key = api_key(&app, &ann, "read_write").await;
    // Google Reader's unread counts count the story once too: under the feed shown.
    let counts = greader_unread(&app, &key).await;
    let feed_count = |feed: i64| {
        let id = format!("feed/{feed}");
        counts.iter().find(|(s, _)| *s == id).map(|c| c.1)
    };
    assert_eq!(feed_count(wire), Some(1), "{counts:?}");
    assert_eq!(feed_count(paper), None, "{counts:?}");
    let reading_list = counts
        .iter()
        .find(|(s, _)| s.ends_with("/state/com.google/reading-list"));
    assert_eq!(reading_list.map(|c| c.1), Some(1), "{counts:?}");
    let digest = key_digest("ann", &key);
    let items = fever(&app, &digest, "items").await;
    let listed = items["items"].as_array().unwrap();
    assert_eq!(listed.len(), 1, "{items}");
    let fever_id = listed[0]["id"].as_i64().unwrap();
    fever(&app, &digest, &format!("mark=item&as=read&id={fever_id}")).await;
    let item = get(&ann, &app.url(&format!("/items/{p}"))).await;
    assert_eq!(item["item"]["is_read"], true, "the other copy is read too");
    assert_eq!(get(&ann, &app.url("/counts")).await["unread"], 0);

    // The preferences: read, changed, checked.
    let prefs = get(&ann, &app.url("/preferences")).await;
    assert_eq!(prefs["preferences"]["collapse_duplicates"], true);
    assert_eq!(prefs["preferences"]["duplicates_read"], "cluster");
    let (status, _, body) = call(
        &ann,
        Method::PUT,
        &app.url("/preferences"),
        Some(json!({"collapse_duplicates": false, "duplicates_read": "copy"})),
    )
    .await;
    assert_eq!(status, StatusCode::OK, "{body}");
    assert_eq!(
        ids(&get(&ann, &app.url("/items?filter=all")).await),
        vec![w, p]
    );
    assert_eq!(
        fever(&app, &digest, "items").await["items"]
            .as_array()
            .unwrap()
            .len(),
        2
    );
    let (status, _, body) = call(
        &ann,
        Method::PUT,
        &app.url("/preferences"),
        Some(json!({"duplicates_read": "all"})),
    )
    .await;
    assert_eq!(status, StatusCode::BAD_REQUEST, "{body}");
    assert_error(&body, "invalid_request", "validation");

    // Per subscription: never merge this feed, and a bad choice refused.
    let sub = get(&ann, &app.url(&format!("/subscriptions/{paper_sub}"))).await;
    assert_eq!(sub["subscription"]["duplicates"], "merge", "{sub}");
    let (status, _, body) = call(
        &ann,
        Method::PATCH,
        &app.url(&format!("/subscriptions/{paper_sub}")),
        Some(json!({"duplicates": "never"})),
    )
    .await;
    assert_eq!(status, StatusCode::OK, "{body}");
    let body = get(&ann, &app.url("/items?filter=all&collapse=true")).await;
    assert_eq!(ids(&body), vec![w, p]);
    assert!(body["items"][0]["cluster"].is_null(), "{body}");
    let (status, _, body) = call(
        &ann,
        Method::PATCH,
        &app.url(&format!("/subscriptions/{paper_sub}")),
        Some(json!({"duplicates": "sometimes"})),
    )
    .await;
    assert_eq!(status, StatusCode::BAD_REQUEST, "{body}");
    assert_error(&body, "invalid_request", "validation");
});
