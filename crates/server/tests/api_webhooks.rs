//! Notification channels (F43) over HTTP against a real server, on both engines: create with
//! URL forms checked and clear errors, rules naming only the user's own feeds, other users see
//! nothing, "send test" reaches a Discord stand-in on 127.0.0.1 (and reports its refusal), and
//! the delivery log shows each test.

use tidings_testkit::on_both_engines;

use crate::support::{DiscordStandIn, TestApp, TestServer, assert_error, call, test_fetcher_with};
use reqwest::{Method, StatusCode};
use serde_json::{Value, json};
use tidings_server::{AppState, ServerConfig};

/// A server whose notifications go to `discord` for Discord URLs.
async fn start(db: &tidings_testkit::TestDb, discord: &str) -> TestApp {
    let store = db.migrated().await;
    let listener = tokio::net::TcpListener::bind("127.0.0.1:0").await.unwrap();
    let base = format!("http://{}", listener.local_addr().unwrap());
    let mut worker = tidings_worker::WorkerConfig::default();
    worker.notifications.endpoints.discord = discord.parse().unwrap();
    let fetcher = test_fetcher_with(store.clone(), true, worker);
    let state = AppState::new(
        store.clone(),
        ServerConfig::new(base.parse().unwrap()),
        fetcher,
    );
    tokio::spawn(tidings_server::serve(
        listener,
        state,
        std::future::pending(),
    ));
    TestApp { base, store }
}

on_both_engines!(channels_rules_send_test_and_the_delivery_log, |db| {
    let discord = DiscordStandIn::default();
    let discord_base = discord.start().await;
    let app = start(db, &discord_base).await;
    app.user("ann", false).await;
    app.user("bob", false).await;
    let ann = app.signed_in("ann").await;
    let bob = app.signed_in("bob").await;
    let feeds = TestServer::start_empty().await;
    feeds.serve_rss("/feed.xml", "News", 2);
    let (status, _, body) = call(
        &ann,
        Method::POST,
        &app.url("/subscriptions"),
        Some(json!({"url": feeds.url("/feed.xml")})),
    )
    .await;
    assert_eq!(status, StatusCode::CREATED, "{body}");
    let feed_id = body["subscription"]["feed_id"].as_i64().unwrap();
    let hooks = app.url("/webhooks");

    // Clear errors for a wrong kind and a URL not of the kind's form.
    let (status, _, body) = call(
        &ann,
        Method::POST,
        &hooks,
        Some(json!({"kind": "teams", "url": "https://x.example/"})),
    )
    .await;
    assert_eq!(status, StatusCode::BAD_REQUEST);
    assert_error(&body, "invalid_request", "validation");
    let (status, _, body) = call(
        &ann,
        Method::POST,
        &hooks,
        Some(json!({"kind": "discord", "url": "https://example.com/api/webhooks/1/x"})),
    )
    .await;
    assert_eq!(status, StatusCode::BAD_REQUEST);
    let message = body["error"]["message"].as_str().unwrap();
    assert!(
        message.contains("https://discord.com/api/webhooks/{id}/{token}"),
        "{message}"
    );
    assert!(message.contains("host is example.com"), "{message}");
    let (status, _, body) = call(
        &ann,
        Method::POST,
        &hooks,
        Some(json!({"kind": "slack", "url": "https://hooks.slack.com/services/T1/B2/c", "rules": {"keywords": ["%%%"]}})),
    )
    .await;
    assert_eq!(status, StatusCode::BAD_REQUEST, "{body}");

    let (status, _, body) = call(
        &ann,
        Method::POST,
        &hooks,
        Some(json!({"kind": "discord", "url": "https://discord.com/api/webhooks/42/tok"})),
    )
    .await;
    assert_eq!(status, StatusCode::CREATED, "{body}");
    let hook = body["webhook"].clone();
    assert_eq!(hook["name"], "Discord");
    assert_eq!(hook["kind"], "discord");
    assert_eq!(
        hook["rules"],
        json!({"feed_ids": [], "group_ids": [], "keywords": []})
    );
    assert_eq!(
        (hook["enabled"].as_bool(), hook["queued"].as_i64()),
        (Some(true), Some(0))
    );
    assert_eq!(hook["breaker_open_until"], Value::Null);
    let id = hook["id"].as_i64().unwrap();
    let one = app.url(&format!("/webhooks/{id}"));

    let (status, _, body) = call(
        &ann,
        Method::POST,
        &hooks,
        Some(json!({
            "kind": "slack", "name": "Team", "url": "https://hooks.slack.com/services/T1/B2/c",
            "rules": {"feed_ids": [feed_id], "keywords": ["東京都", "rust"]}
        })),
    )
    .await;
    assert_eq!(status, StatusCode::CREATED, "{body}");
    assert_eq!(
        body["webhook"]["rules"]["keywords"],
        json!(["東京都", "rust"])
    );
    let (_, _, list) = call(&ann, Method::GET, &hooks, None).await;
    let names: Vec<&str> = list["webhooks"]
        .as_array()
        .unwrap()
        .iter()
        .map(|w| w["name"].as_str().unwrap())
        .collect();
    assert_eq!(names, ["Discord", "Team"]);

    // Bob sees and changes none of it, and cannot name Ann's feed in his rules.
    let (_, _, list) = call(&bob, Method::GET, &hooks, None).await;
    assert_eq!(list["webhooks"], json!([]));
    for method in [Method::GET, Method::DELETE] {
        let (status, _, _) = call(&bob, method, &one, None).await;
        assert_eq!(status, StatusCode::NOT_FOUND);
    }
    let (status, _, _) = call(&bob, Method::POST, &format!("{one}/test"), None).await;
    assert_eq!(status, StatusCode::NOT_FOUND);
    let (status, _, body) = call(
        &bob,
        Method::POST,
        &hooks,
        Some(json!({"kind": "discord", "url": "https://discord.com/api/webhooks/1/t", "rules": {"feed_ids": [feed_id]}})),
    )
    .await;
    assert_eq!(status, StatusCode::BAD_REQUEST, "{body}");
    assert!(
        body["error"]["message"]
            .as_str()
            .unwrap()
            .contains("not one of your subscriptions")
    );

    // PATCH changes what it names; a URL of another kind's form is refused.
    let (status, _, body) = call(
        &ann,
        Method::PATCH,
        &one,
        Some(json!({"name": "Alerts", "rules": {"keywords": ["outage"]}, "enabled": false})),
    )
    .await;
    assert_eq!(status, StatusCode::OK, "{body}");
    assert_eq!(body["webhook"]["name"], "Alerts");
    assert_eq!(body["webhook"]["rules"]["keywords"], json!(["outage"]));
    assert_eq!(body["webhook"]["enabled"], false);
    let (status, _, _) = call(
        &ann,
        Method::PATCH,
        &one,
        Some(json!({"url": "https://hooks.slack.com/services/T1/B2/c"})),
    )
    .await;
    assert_eq!(status, StatusCode::BAD_REQUEST);

    phase_send_test_and_the_log(&discord, &ann, &bob, &one).await;
});

/// Send test: the stand-in gets Discord's payload and the log shows it; a deleted Discord
/// webhook says why; the delivery log is the owner's only; a deleted webhook is gone.
async fn phase_send_test_and_the_log(
    discord: &DiscordStandIn,
    ann: &reqwest::Client,
    bob: &reqwest::Client,
    one: &str,
) {
    // Send test: the stand-in gets Discord's payload; the log shows it.
    let (status, _, result) = call(ann, Method::POST, &format!("{one}/test"), None).await;
    assert_eq!(status, StatusCode::OK, "{result}");
    assert_eq!(
        (result["ok"].as_bool(), result["http_status"].as_i64()),
        (Some(true), Some(204))
    );
    let received = discord.received.lock().unwrap().clone();
    assert_eq!(received.len(), 1);
    assert_eq!(
        received[0]["content"],
        "Test message from tidings: this channel works."
    );
    assert_eq!(
        received[0]["embeds"][0]["title"],
        "This is how new items will look"
    );
    // A deleted Discord webhook: the test says why.
    *discord.gone.lock().unwrap() = true;
    let (_, _, result) = call(ann, Method::POST, &format!("{one}/test"), None).await;
    assert_eq!(
        (result["ok"].as_bool(), result["http_status"].as_i64()),
        (Some(false), Some(404))
    );
    assert!(
        result["error"]
            .as_str()
            .unwrap()
            .contains("Unknown Webhook"),
        "{result}"
    );
    let (status, _, log) = call(
        ann,
        Method::GET,
        &format!("{one}/deliveries?limit=10"),
        None,
    )
    .await;
    assert_eq!(status, StatusCode::OK);
    let rows = log["deliveries"].as_array().unwrap();
    let summary: Vec<(&str, bool, i64)> = rows
        .iter()
        .map(|r| {
            (
                r["status"].as_str().unwrap(),
                r["test"].as_bool().unwrap(),
                r["http_status"].as_i64().unwrap(),
            )
        })
        .collect();
    assert_eq!(summary, [("failed", true, 404), ("sent", true, 204)]);
    let (status, _, _) = call(
        ann,
        Method::GET,
        &format!("{one}/deliveries?limit=500"),
        None,
    )
    .await;
    assert_eq!(status, StatusCode::BAD_REQUEST);
    let (status, _, _) = call(bob, Method::GET, &format!("{one}/deliveries"), None).await;
    assert_eq!(status, StatusCode::NOT_FOUND);

    let (status, _, _) = call(ann, Method::DELETE, one, None).await;
    assert_eq!(status, StatusCode::NO_CONTENT);
    let (status, _, _) = call(ann, Method::GET, one, None).await;
    assert_eq!(status, StatusCode::NOT_FOUND);
}
