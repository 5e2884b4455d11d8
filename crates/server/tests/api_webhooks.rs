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

/// What a receiver of generic webhooks got: the signature header and the exact body.
type Signed = std::sync::Arc<std::sync::Mutex<Vec<(Option<String>, Vec<u8>)>>>;

/// Checks a `X-Tidings-Signature` as the documented receiver does (docs/notifications.md):
/// HMAC-SHA256 of `<t>.<body>` with the secret, compared in constant time, and `t` recent.
fn verify_signature(secret: &str, header: &str, body: &[u8], now: i64) -> bool {
    use hmac::{KeyInit, Mac};
    let mut t = None;
    let mut v1 = None;
    for part in header.split(',') {
        match part.split_once('=') {
            Some(("t", value)) => t = value.parse::<i64>().ok(),
            Some(("v1", value)) => v1 = hex::decode(value).ok(),
            _ => {}
        }
    }
    let (Some(t), Some(v1)) = (t, v1) else {
        return false;
    };
    let mut mac = <hmac::Hmac<sha2::Sha256> as KeyInit>::new_from_slice(secret.as_bytes()).unwrap();
    mac.update(format!("{t}.").as_bytes());
    mac.update(body);
    (now - t).abs() <= 300 && mac.verify_slice(&v1).is_ok()
}

on_both_engines!(generic_webhooks_are_signed_with_a_secret_shown_once, |db| {
    let received: Signed = Default::default();
    let receiver = {
        let received = received.clone();
        TestServer::start(axum::Router::new().route(
            "/hook",
            axum::routing::post(
                move |headers: axum::http::HeaderMap, body: axum::body::Bytes| {
                    let received = received.clone();
                    async move {
                        let signature = headers
                            .get("x-tidings-signature")
                            .and_then(|v| v.to_str().ok())
                            .map(str::to_owned);
                        received.lock().unwrap().push((signature, body.to_vec()));
                        axum::http::StatusCode::NO_CONTENT
                    }
                },
            ),
        ))
        .await
    };
    let app = TestApp::start(db).await;
    app.user("ann", false).await;
    let ann = app.signed_in("ann").await;
    let (status, _, created) = call(
        &ann,
        Method::POST,
        &app.url("/webhooks"),
        Some(json!({"kind": "generic", "url": receiver.url("/hook")})),
    )
    .await;
    assert_eq!(status, StatusCode::CREATED, "{created}");
    let id = created["webhook"]["id"].as_i64().unwrap();
    let secret = created["webhook"]["signing_secret"]
        .as_str()
        .expect("the secret is shown when the channel is made")
        .to_owned();
    assert!(
        secret.starts_with("whsec_") && secret.len() >= 38,
        "{secret}"
    );
    assert_eq!(created["webhook"]["signed"], true);
    // Shown once: reading the channel (or the list) does not show it again.
    let (_, _, one) = call(
        &ann,
        Method::GET,
        &app.url(&format!("/webhooks/{id}")),
        None,
    )
    .await;
    assert!(one["webhook"].get("signing_secret").is_none(), "{one}");
    assert_eq!(one["webhook"]["signed"], true);
    let (_, _, list) = call(&ann, Method::GET, &app.url("/webhooks"), None).await;
    assert!(!list.to_string().contains(&secret));

    // "Send test": the message carries a signature of its exact body.
    let (status, _, test) = call(
        &ann,
        Method::POST,
        &app.url(&format!("/webhooks/{id}/test")),
        None,
    )
    .await;
    assert_eq!(status, StatusCode::OK, "{test}");
    assert_eq!(test["ok"], true, "{test}");
    let now = chrono::Utc::now().timestamp();
    let (signature, body) = received.lock().unwrap()[0].clone();
    let signature = signature.expect("the message is signed");
    assert!(signature.starts_with("t="), "{signature}");
    assert!(verify_signature(&secret, &signature, &body, now));
    // A forgery (another body, another secret) does not verify.
    assert!(!verify_signature(
        &secret,
        &signature,
        b"{\"forged\":true}",
        now
    ));
    assert!(!verify_signature("whsec_other", &signature, &body, now));

    // A new secret replaces the old one at once.
    let (status, _, renewed) = call(
        &ann,
        Method::POST,
        &app.url(&format!("/webhooks/{id}/secret")),
        None,
    )
    .await;
    assert_eq!(status, StatusCode::OK, "{renewed}");
    let new_secret = renewed["signing_secret"].as_str().unwrap().to_owned();
    assert_ne!(new_secret, secret);
    call(
        &ann,
        Method::POST,
        &app.url(&format!("/webhooks/{id}/test")),
        None,
    )
    .await;
    let (signature, body) = received.lock().unwrap()[1].clone();
    let signature = signature.unwrap();
    let now = chrono::Utc::now().timestamp();
    assert!(verify_signature(&new_secret, &signature, &body, now));
    assert!(!verify_signature(&secret, &signature, &body, now));
});
