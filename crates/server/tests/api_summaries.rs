//! Summaries (F42) over HTTP against a real server, on both engines: "Summarize" with the
//! built-in summarizer (answered at once), `generated_summary` on items and listings, the
//! user's preference and the subscription's mark, errors, and a slow remote provider answered
//! 202 and delivered on the item later.

use tidings_testkit::on_both_engines;

use std::time::Duration;

use crate::support::{TestApp, TestServer, assert_error, call};
use reqwest::{Method, StatusCode};
use serde_json::{Value, json};

/// Sentences that make a story longer than a summary (900 characters by default).
const MORE: &str = "The council will pay for a new wheel once the volunteers have repaired the mill's stone walls. Local schools plan visits to the mill so that children can watch grain become flour. The mill's old miller, now ninety, has offered to teach the volunteers how the stones are dressed. Engineers surveyed the mill race last winter and found the channel sound after seventy years of silence. A bakery in the harbour has promised to buy the mill's first flour for its bread. The restoration of the mill is expected to bring visitors to Porthcarrow through the summer. Fishermen in the harbour remember their grandparents carrying sacks of grain up the hill to the mill. Once the mill turns again, the volunteers hope to open a small museum of the town's trades beside it. The trust that owns the mill will hold an open day in June for anyone who gave money to the work. Storms damaged the mill's roof in 1987, and tarpaulins kept the rain off the machinery until now.";

/// A feed whose items have a dozen sentences each, one short item (shorter than a summary)
/// and one item with no text at all.
fn feed(site: &str) -> String {
    let mut items = String::new();
    for i in 0..2 {
        items.push_str(&format!(
            "<item><title>Story {i}</title><link>{site}/{i}</link><guid>g{i}</guid>\
             <description>&lt;p&gt;The harbour town of Porthcarrow voted to restore mill {i}. \
             The mill last turned in 1950. Volunteers raised the money in two years. {MORE}&lt;/p&gt;\
             </description></item>"
        ));
    }
    items.push_str(&format!(
        "<item><title>Brief</title><link>{site}/brief</link><guid>brief</guid>\
         <description>The mill opens on Sunday.</description></item>\
         <item><title>Empty</title><link>{site}/empty</link><guid>empty</guid></item>"
    ));
    format!(
        "<?xml version=\"1.0\"?><rss version=\"2.0\"><channel><title>News</title>\
         <link>{site}/</link><description>d</description>{items}</channel></rss>"
    )
}

/// Subscribes `client` to the site's feed; returns the subscription and its items by title.
async fn subscribe(
    client: &reqwest::Client,
    app: &TestApp,
    site: &TestServer,
) -> (i64, Vec<(String, i64)>) {
    site.serve("/feed.xml", 200, "application/rss+xml", feed(&site.base));
    let (status, _, body) = call(
        client,
        Method::POST,
        &app.url("/subscriptions"),
        Some(json!({"url": site.url("/feed.xml")})),
    )
    .await;
    assert_eq!(status, StatusCode::CREATED, "{body}");
    let sub = body["subscription"]["id"].as_i64().unwrap();
    assert_eq!(body["subscription"]["summarize"], false);
    let (_, _, body) = call(client, Method::GET, &app.url("/items?filter=all"), None).await;
    let mut items: Vec<(String, i64)> = body["items"]
        .as_array()
        .unwrap()
        .iter()
        .map(|i| {
            (
                i["title"].as_str().unwrap().to_owned(),
                i["id"].as_i64().unwrap(),
            )
        })
        .collect();
    items.sort();
    (sub, items)
}

async fn summarize(client: &reqwest::Client, app: &TestApp, id: i64) -> (StatusCode, Value) {
    let (status, _, body) = call(
        client,
        Method::POST,
        &app.url(&format!("/items/{id}/summarize")),
        None,
    )
    .await;
    (status, body)
}

on_both_engines!(summarize_with_the_built_in_summarizer, |db| {
    let app = TestApp::start(db).await;
    let site = TestServer::start_empty().await;
    app.user("ann", false).await;
    app.user("bob", false).await;
    let ann = app.signed_in("ann").await;
    let bob = app.signed_in("bob").await;
    let (sub, items) = subscribe(&ann, &app, &site).await;
    let (brief, empty, story0, story1) = (items[0].1, items[1].1, items[2].1, items[3].1);

    // None yet: listed and shown as null.
    let (_, _, body) = call(&ann, Method::GET, &app.url("/items?filter=all"), None).await;
    assert!(
        body["items"]
            .as_array()
            .unwrap()
            .iter()
            .all(|i| i["generated_summary"].is_null())
    );
    let (status, body) = summarize(&ann, &app, story0).await;
    assert_eq!(status, StatusCode::OK, "{body}");
    assert_eq!(body["status"], "done");
    let summary = &body["generated_summary"];
    assert_eq!(summary["provider"], "local");
    let text = summary["text"].as_str().unwrap();
    assert!(text.contains("Porthcarrow"), "{text}");
    assert!(text.chars().count() <= 900, "{text}");
    assert!(!text.contains('<'), "{text}");
    assert!(summary["created_at"].as_str().unwrap().ends_with('Z'));
    // The item and the listing carry it; the other item has none.
    let (_, _, item) = call(
        &ann,
        Method::GET,
        &app.url(&format!("/items/{story0}")),
        None,
    )
    .await;
    assert_eq!(&item["item"]["generated_summary"], summary);
    assert_eq!(item["item"]["summarizable"], true);
    let (_, _, body) = call(&ann, Method::GET, &app.url("/items?filter=all"), None).await;
    for listed in body["items"].as_array().unwrap() {
        if listed["id"] == story0 {
            assert_eq!(&listed["generated_summary"], summary);
        } else {
            assert!(listed["generated_summary"].is_null());
        }
    }
    // Asked again: the same summary, not a new one.
    let (status, again) = summarize(&ann, &app, story0).await;
    assert_eq!(status, StatusCode::OK);
    assert_eq!(&again["generated_summary"], summary);

    // Another user's item, or none at all: 404.
    let (status, body) = summarize(&bob, &app, story1).await;
    assert_eq!(status, StatusCode::NOT_FOUND, "{body}");
    let (status, _) = summarize(&ann, &app, story1 + 1000).await;
    assert_eq!(status, StatusCode::NOT_FOUND);
    // A short item is its own summary: the item says so, and "Summarize" answers why
    // without making one.
    let (_, _, item) = call(
        &ann,
        Method::GET,
        &app.url(&format!("/items/{brief}")),
        None,
    )
    .await;
    assert_eq!(item["item"]["summarizable"], false, "{item}");
    let (_, _, listed) = call(
        &ann,
        Method::GET,
        &app.url("/items?filter=all&include=content"),
        None,
    )
    .await;
    for listed in listed["items"].as_array().unwrap() {
        let long = listed["id"] == story0 || listed["id"] == story1;
        assert_eq!(listed["summarizable"], long, "{listed}");
    }
    let (_, _, listed) = call(&ann, Method::GET, &app.url("/items?filter=all"), None).await;
    assert!(
        listed["items"][0].get("summarizable").is_none(),
        "only with the text"
    );
    let (status, body) = summarize(&ann, &app, brief).await;
    assert_eq!(status, StatusCode::BAD_REQUEST, "{body}");
    assert_error(&body, "too_short_to_summarize", "validation");
    let message = body["error"]["message"].as_str().unwrap();
    assert!(
        message.contains("25 characters") && message.contains("900"),
        "{message}"
    );
    assert!(app.store.generated_summary(brief).await.unwrap().is_none());
    assert!(app.store.summary_job_state(brief).await.unwrap().is_none());
    // An item with no text cannot be summarized.
    let (status, body) = summarize(&ann, &app, empty).await;
    assert_eq!(status, StatusCode::BAD_REQUEST, "{body}");
    assert_error(&body, "summary_unavailable", "validation");
    assert!(
        body["error"]["message"]
            .as_str()
            .unwrap()
            .contains("no text")
    );

    // The preference and the subscription's mark.
    let (_, _, body) = call(&ann, Method::GET, &app.url("/preferences"), None).await;
    assert_eq!(body["preferences"]["summarize"], "on_demand");
    let (status, _, body) = call(
        &ann,
        Method::PUT,
        &app.url("/preferences"),
        Some(json!({"summarize": "sometimes"})),
    )
    .await;
    assert_eq!(status, StatusCode::BAD_REQUEST, "{body}");
    let (status, _, body) = call(
        &ann,
        Method::PUT,
        &app.url("/preferences"),
        Some(json!({"summarize": "chosen"})),
    )
    .await;
    assert_eq!(status, StatusCode::OK, "{body}");
    assert_eq!(body["preferences"]["summarize"], "chosen");
    let (status, _, body) = call(
        &ann,
        Method::PATCH,
        &app.url(&format!("/subscriptions/{sub}")),
        Some(json!({"summarize": true})),
    )
    .await;
    assert_eq!(status, StatusCode::OK, "{body}");
    assert_eq!(body["subscription"]["summarize"], true);
    assert_eq!(
        body["subscription"]["full_text"], "auto",
        "other settings stay"
    );
    let (status, _, body) = call(
        &ann,
        Method::PATCH,
        &app.url(&format!("/subscriptions/{sub}")),
        Some(json!({"summarize": "yes"})),
    )
    .await;
    assert_eq!(status, StatusCode::BAD_REQUEST, "{body}");
});

on_both_engines!(
    a_slow_remote_provider_answers_202_and_the_item_gets_it_later,
    |db| {
        use axum::routing::post;
        // An OpenAI-compatible stand-in that takes 1.5 s.
        let router = axum::Router::new().route(
            "/v1/chat/completions",
            post(|| async {
                tokio::time::sleep(Duration::from_millis(1500)).await;
                axum::Json(json!({"choices": [{"message": {"role": "assistant",
                                                       "content": "A slow model's summary."}}]}))
            }),
        );
        let listener = tokio::net::TcpListener::bind("127.0.0.1:0").await.unwrap();
        let model = format!("http://{}", listener.local_addr().unwrap());
        tokio::spawn(async move { axum::serve(listener, router).await.unwrap() });
        let summary = tidings_worker::SummaryConfig {
            provider: tidings_worker::summaries::ProviderKind::OpenAi,
            remote: Some(tidings_worker::summaries::RemoteSettings {
                kind: tidings_worker::summaries::ProviderKind::OpenAi,
                base_url: model.parse().unwrap(),
                model: "slow-1".into(),
                api_key: None,
                timeout: Duration::from_secs(10),
            }),
            request_wait: Duration::from_millis(300),
            ..tidings_worker::SummaryConfig::default()
        };
        let worker = tidings_worker::WorkerConfig {
            summary,
            ..tidings_worker::WorkerConfig::default()
        };
        let app = TestApp::start_with_worker(db, true, |_| {}, worker).await;
        let site = TestServer::start_empty().await;
        app.user("ann", false).await;
        let ann = app.signed_in("ann").await;
        let (_, items) = subscribe(&ann, &app, &site).await;
        let story0 = items[2].1;
        let started = std::time::Instant::now();
        let (status, body) = summarize(&ann, &app, story0).await;
        assert_eq!(status, StatusCode::ACCEPTED, "{body}");
        assert!(
            started.elapsed() < Duration::from_millis(1400),
            "the answer does not wait"
        );
        assert_eq!(body["status"], "queued");
        assert!(body["generated_summary"].is_null());
        // Reading goes on meanwhile, and the summary arrives on the item.
        let deadline = std::time::Instant::now() + Duration::from_secs(10);
        loop {
            let (status, _, item) = call(
                &ann,
                Method::GET,
                &app.url(&format!("/items/{story0}")),
                None,
            )
            .await;
            assert_eq!(status, StatusCode::OK);
            if !item["item"]["generated_summary"].is_null() {
                assert_eq!(
                    item["item"]["generated_summary"]["text"],
                    "A slow model's summary."
                );
                assert_eq!(item["item"]["generated_summary"]["provider"], "openai");
                break;
            }
            assert!(
                std::time::Instant::now() < deadline,
                "no summary after 10 s"
            );
            tokio::time::sleep(Duration::from_millis(100)).await;
        }
    }
);
