//! Notifications (F43) against stand-ins of Discord's and Slack's webhook endpoints and a
//! generic JSON receiver on 127.0.0.1, on SQLite and PostgreSQL: new items are batched into
//! one message within Discord's limits, a 429 is waited out as long as its `retry_after`
//! says, 5xx and time-outs are retried with back-off, failures in a row open the channel's
//! breaker (nothing is sent while it is open) and a success closes it, a deleted webhook (404)
//! drops its items, the SSRF guard refuses a generic webhook on a private address unless the
//! operator allows them, and every outcome is in the channel's delivery log.

use tidings_testkit::on_both_engines;

use std::collections::VecDeque;
use std::sync::{Arc, Mutex};
use std::time::{Duration, Instant};

use crate::support::{TestServer, fetcher_with, user, wait_until};
use axum::Router;
use axum::http::{StatusCode, header};
use axum::response::{IntoResponse, Response};
use axum::routing::post;
use serde_json::Value;
use tidings_fetch::{AddressPolicy, ClientConfig, GuardedClient};
use tidings_notify::{DeliveryPolicy, Endpoints, Kind, Rules};
use tidings_store::{NewItem, NewWebhook, Store};
use tidings_testkit::follow;
use tidings_worker::{EnrichmentJob, Fetcher, NotificationJob, run_enrichment};
use url::Url;

const DISCORD_URL: &str = "https://discord.com/api/webhooks/123/tok-en";
const SLACK_URL: &str = "https://hooks.slack.com/services/T1/B2/secret";

/// What a stand-in answers to its next request.
#[derive(Debug, Clone)]
enum Reply {
    /// The service's success (Discord 204, Slack 200 "ok").
    Ok,
    /// Discord's rate limit: 429 with `retry_after` (seconds) in the JSON body.
    DiscordLimited(f64),
    /// 429 with a `Retry-After` header (seconds), as Slack sends.
    RetryAfter(&'static str),
    /// An error status with a body.
    Status(StatusCode, &'static str),
    /// No answer for this long.
    Slow(Duration),
}

/// A request the stand-in received: when, its path and JSON body.
type Received = (Instant, String, Value);

/// A webhook stand-in: answers by script (then success), recording every request.
#[derive(Clone, Default)]
struct StandIn {
    received: Arc<Mutex<Vec<Received>>>,
    script: Arc<Mutex<VecDeque<Reply>>>,
}

impl StandIn {
    async fn start(&self, route: &str, success: StatusCode) -> TestServer {
        let stand_in = self.clone();
        let router = Router::new().route(
            route,
            post(move |uri: axum::http::Uri, body: String| {
                let stand_in = stand_in.clone();
                async move { stand_in.answer(uri.path().to_owned(), body, success).await }
            }),
        );
        TestServer::start(router).await
    }

    async fn answer(&self, path: String, body: String, success: StatusCode) -> Response {
        let json: Value = serde_json::from_str(&body).unwrap_or(Value::Null);
        self.received
            .lock()
            .unwrap()
            .push((Instant::now(), path, json));
        let reply = self.script.lock().unwrap().pop_front().unwrap_or(Reply::Ok);
        match reply {
            Reply::Ok if success == StatusCode::OK => "ok".into_response(),
            Reply::Ok => success.into_response(),
            Reply::DiscordLimited(seconds) => (
                StatusCode::TOO_MANY_REQUESTS,
                [(header::CONTENT_TYPE, "application/json")],
                format!(
                    r#"{{"message": "You are being rate limited.", "retry_after": {seconds}, "global": false}}"#
                ),
            )
                .into_response(),
            Reply::RetryAfter(seconds) => (
                StatusCode::TOO_MANY_REQUESTS,
                [(header::RETRY_AFTER, seconds)],
                "rate_limited",
            )
                .into_response(),
            Reply::Status(status, body) => (status, body).into_response(),
            Reply::Slow(wait) => {
                tokio::time::sleep(wait).await;
                success.into_response()
            }
        }
    }

    fn script(&self, replies: impl IntoIterator<Item = Reply>) {
        self.script.lock().unwrap().extend(replies);
    }

    fn received(&self) -> Vec<Received> {
        self.received.lock().unwrap().clone()
    }
}

/// A policy on a test's scale: 50 ms between messages, 150 ms first back-off, the breaker
/// open after 3 failures for 600 ms.
fn quick_policy() -> DeliveryPolicy {
    DeliveryPolicy {
        spacing: Duration::from_millis(50),
        backoff_base: Duration::from_millis(150),
        max_backoff: Duration::from_secs(2),
        max_attempts: 10,
        breaker_threshold: 3,
        breaker_pause: Duration::from_millis(600),
    }
}

/// A fetcher whose client keeps the product's guard (private networks refused), with
/// notifications pointed at the stand-ins.
fn notifying_fetcher(
    store: &Store,
    discord: &TestServer,
    slack: &TestServer,
    private: bool,
) -> Fetcher {
    let client = GuardedClient::new(ClientConfig {
        address_policy: AddressPolicy {
            allow_private_networks: private,
            ..AddressPolicy::default()
        },
        ..ClientConfig::default()
    })
    .unwrap();
    let (discord, slack) = (discord.url("/"), slack.url("/"));
    fetcher_with(store, client, |config| {
        config.notifications.policy = quick_policy();
        config.notifications.timeout = Duration::from_millis(400);
        config.notifications.endpoints = Endpoints {
            discord: Url::parse(&discord).unwrap(),
            slack: Url::parse(&slack).unwrap(),
        };
        // Items are matched as soon as they are stored (the lag is the store tests' subject).
        config.notifications.matching.lag_seconds = 0;
    })
}

/// The Discord and Slack stand-ins, running.
struct Services {
    discord: StandIn,
    slack: StandIn,
    discord_server: TestServer,
    slack_server: TestServer,
}

impl Services {
    async fn start() -> Services {
        let (discord, slack) = (StandIn::default(), StandIn::default());
        let discord_server = discord
            .start("/api/webhooks/{id}/{token}", StatusCode::NO_CONTENT)
            .await;
        let slack_server = slack.start("/services/{a}/{b}/{c}", StatusCode::OK).await;
        Services {
            discord,
            slack,
            discord_server,
            slack_server,
        }
    }

    /// A fetcher whose notifications go to these stand-ins.
    fn fetcher(&self, store: &Store, private: bool) -> Fetcher {
        notifying_fetcher(store, &self.discord_server, &self.slack_server, private)
    }
}

/// Ann, following a feed, with a channel of `kind` at `url`; answers (ann, feed, channel).
async fn channel(store: &Store, kind: Kind, url: &str) -> (i64, i64, i64) {
    let ann = user(store, "ann").await;
    let (_, feed) = follow(store, ann, "https://news.example/feed").await;
    let hook = store
        .create_webhook(
            ann,
            &NewWebhook {
                kind,
                name: "news".into(),
                url: url.into(),
                rules: Rules::default(),
                enabled: true,
            },
            chrono::Utc::now().timestamp(),
        )
        .await
        .unwrap();
    (ann, feed, hook.id)
}

/// Stores `count` new items in `feed`, published a minute apart, "Item 0" first.
async fn new_items(store: &Store, feed: i64, count: usize) {
    let now = chrono::Utc::now().timestamp();
    let items: Vec<NewItem> = (0..count)
        .map(|n| NewItem {
            guid: Some(format!("g{n}")),
            url: Some(format!("https://news.example/{n}")),
            title: Some(format!("Item {n} @everyone")),
            content: Some(format!("<p>Body of <b>item</b> {n}</p>")),
            published: Some(now - 3600 + 60 * n as i64),
            ..NewItem::default()
        })
        .collect();
    store.upsert_items(feed, &items, now).await.unwrap();
}

/// One round of the job: match, claim, send what was claimed. Answers the messages sent.
async fn round(job: &NotificationJob) -> usize {
    let messages = job.claim(4).await.unwrap();
    let sent = messages.len();
    for message in messages {
        job.run(message).await;
    }
    sent
}

/// The statuses of a channel's delivery log, oldest first.
async fn log(store: &Store, user_id: i64, webhook: i64) -> Vec<String> {
    let mut rows = store
        .webhook_deliveries(user_id, webhook, 100)
        .await
        .unwrap();
    rows.reverse();
    rows.into_iter().map(|row| row.status).collect()
}

on_both_engines!(discord_gets_batched_embeds_and_waits_out_a_429, |db| {
    let store = db.migrated().await;
    let services = Services::start().await;
    let (discord, slack) = (services.discord.clone(), services.slack.clone());
    let fetcher = services.fetcher(&store, false);
    let job = NotificationJob::new(&fetcher).unwrap();
    let (ann, feed, hook) = channel(&store, Kind::Discord, DISCORD_URL).await;
    new_items(&store, feed, 12).await;

    discord.script([Reply::DiscordLimited(0.4)]);
    assert_eq!(round(&job).await, 1);
    // Rate limited: nothing goes out before the 0.4 s Discord asked for.
    assert_eq!(round(&job).await, 0);
    wait_until(Duration::from_secs(5), "the second message", || async {
        round(&job).await > 0
    })
    .await;
    wait_until(Duration::from_secs(5), "the third message", || async {
        round(&job).await > 0
    })
    .await;
    let received = discord.received();
    assert_eq!(received.len(), 3);
    assert!(
        received
            .iter()
            .all(|(_, path, _)| path == "/api/webhooks/123/tok-en")
    );
    let waited = received[1].0 - received[0].0;
    assert!(
        waited >= Duration::from_millis(400),
        "waited only {waited:?}"
    );
    // The first 10 items (earliest first) in one message, then the last 2.
    let first = &received[1].2;
    let embeds = first["embeds"].as_array().unwrap();
    assert_eq!(embeds.len(), 10);
    assert_eq!(first["content"], "10 new items");
    assert_eq!(first["allowed_mentions"]["parse"], serde_json::json!([]));
    assert_eq!(embeds[0]["title"], "Item 0 @everyone");
    assert_eq!(embeds[0]["url"], "https://news.example/0");
    assert_eq!(embeds[0]["description"], "Body of item 0");
    assert_eq!(embeds[0]["author"]["name"], "https://news.example/feed");
    assert!(embeds[0]["timestamp"].as_str().unwrap().ends_with('Z'));
    let second = &received[2].2;
    assert_eq!(second["embeds"].as_array().unwrap().len(), 2);
    assert_eq!(second["embeds"][1]["title"], "Item 11 @everyone");
    assert!(slack.received().is_empty());

    assert_eq!(log(&store, ann, hook).await, ["retrying", "sent", "sent"]);
    let rows = store.webhook_deliveries(ann, hook, 100).await.unwrap();
    let limited = rows.last().unwrap();
    assert_eq!(limited.http_status, Some(429));
    assert!(
        limited.error.as_deref().unwrap().contains("rate limited"),
        "{limited:?}"
    );
    let channel = store.webhook(ann, hook).await.unwrap();
    assert_eq!((channel.queued, channel.failures), (0, 0));
    assert!(channel.last_sent_at.is_some());
    assert_eq!(fetcher.metrics().snapshot().webhook_sent, 2);
    assert_eq!(fetcher.metrics().snapshot().webhook_retrying, 1);
});

on_both_engines!(
    slack_failures_back_off_open_the_breaker_and_a_success_closes_it,
    |db| {
        let store = db.migrated().await;
        let (discord, slack) = (StandIn::default(), StandIn::default());
        let discord_server = discord
            .start("/api/webhooks/{id}/{token}", StatusCode::NO_CONTENT)
            .await;
        let slack_server = slack.start("/services/{a}/{b}/{c}", StatusCode::OK).await;
        let fetcher = notifying_fetcher(&store, &discord_server, &slack_server, false);
        let job = NotificationJob::new(&fetcher).unwrap();
        let (ann, feed, hook) = channel(&store, Kind::Slack, SLACK_URL).await;
        new_items(&store, feed, 2).await;

        slack.script([
            Reply::Status(StatusCode::INTERNAL_SERVER_ERROR, "oops"),
            Reply::Slow(Duration::from_secs(3)),
            Reply::RetryAfter("1"),
        ]);
        let started = Instant::now();
        // 500, then a time-out, then 429: three failures in a row open the breaker.
        assert_eq!(round(&job).await, 1);
        for what in ["the retry after a 500", "the retry after a time-out"] {
            wait_until(Duration::from_secs(5), what, || async {
                round(&job).await > 0
            })
            .await;
        }
        let channel = store.webhook(ann, hook).await.unwrap();
        assert_eq!(channel.failures, 3);
        let open_until = channel.breaker_until_ms.expect("the breaker is open");
        // Open: nothing is sent however often the job looks, until the pause is over.
        let tries = slack.received().len();
        assert_eq!(tries, 3);
        while chrono::Utc::now().timestamp_millis() < open_until - 100 {
            assert_eq!(round(&job).await, 0);
            tokio::time::sleep(Duration::from_millis(50)).await;
        }
        assert_eq!(slack.received().len(), 3);
        // Half-open: the next message is the trial, and it goes through.
        wait_until(Duration::from_secs(5), "the trial message", || async {
            round(&job).await > 0
        })
        .await;
        let channel = store.webhook(ann, hook).await.unwrap();
        assert_eq!(
            (channel.failures, channel.breaker_until_ms, channel.queued),
            (0, None, 0)
        );
        let received = slack.received();
        assert_eq!(received.len(), 4);
        assert!(received[0].1 == "/services/T1/B2/secret");
        // Back-off between the first tries: 150 ms after the 500, then 300 ms after the time-out
        // (which itself took the 400 ms time-out), and the 1 s Retry-After outlasted by the pause.
        assert!(received[1].0 - received[0].0 >= Duration::from_millis(150));
        assert!(received[2].0 - received[1].0 >= Duration::from_millis(300 + 400));
        assert!(received[3].0 - received[2].0 >= Duration::from_millis(600));
        assert!(started.elapsed() < Duration::from_secs(10));
        let payload = &received[3].2;
        assert_eq!(payload["blocks"].as_array().unwrap().len(), 5);
        assert!(
            payload["text"]
                .as_str()
                .unwrap()
                .starts_with("2 new items: Item 0 @everyone")
        );
        assert!(
            payload["blocks"][1]["text"]["text"]
                .as_str()
                .unwrap()
                .starts_with("*<https://news.example/0|Item 0 @everyone>*\nBody of item 0")
        );
        assert_eq!(
            log(&store, ann, hook).await,
            ["retrying", "retrying", "retrying", "sent"]
        );
        let rows = store.webhook_deliveries(ann, hook, 100).await.unwrap();
        let errors: Vec<String> = rows.iter().rev().filter_map(|r| r.error.clone()).collect();
        assert!(errors[0].contains("HTTP 500 (oops)"), "{errors:?}");
        assert!(
            errors[1].contains("no response") || errors[1].contains("timed out"),
            "{errors:?}"
        );
        assert!(
            errors[2].contains("HTTP 429") && errors[2].contains("wait 1.0 s"),
            "{errors:?}"
        );
    }
);

on_both_engines!(
    a_deleted_webhook_drops_its_items_and_the_guard_refuses_private_targets,
    |db| {
        let store = db.migrated().await;
        let services = Services::start().await;
        let discord = services.discord.clone();
        let generic = StandIn::default();
        let generic_server = generic.start("/hook", StatusCode::OK).await;
        let fetcher = services.fetcher(&store, false);
        let job = NotificationJob::new(&fetcher).unwrap();
        let (ann, feed, discord_hook) = channel(&store, Kind::Discord, DISCORD_URL).await;
        let generic_hook = store
            .create_webhook(
                ann,
                &NewWebhook {
                    kind: Kind::Generic,
                    name: "mine".into(),
                    url: generic_server.url("/hook"),
                    rules: Rules {
                        keywords: vec!["item 1".into()],
                        ..Rules::default()
                    },
                    enabled: true,
                },
                chrono::Utc::now().timestamp(),
            )
            .await
            .unwrap()
            .id;
        new_items(&store, feed, 3).await;
        discord.script([Reply::Status(
            StatusCode::NOT_FOUND,
            r#"{"message": "Unknown Webhook", "code": 10015}"#,
        )]);
        assert_eq!(round(&job).await, 2);
        // Discord's 404 is final: the items leave the queue, the log says why.
        let rows = store
            .webhook_deliveries(ann, discord_hook, 10)
            .await
            .unwrap();
        assert_eq!(
            (rows[0].status.as_str(), rows[0].http_status, rows[0].items),
            ("dropped", Some(404), 3)
        );
        assert!(
            rows[0]
                .error
                .as_deref()
                .unwrap()
                .contains("deleted or the URL is wrong (Unknown Webhook)")
        );
        assert_eq!(store.webhook(ann, discord_hook).await.unwrap().queued, 0);
        // The generic webhook on 127.0.0.1 is refused by the guard, never reached.
        let rows = store
            .webhook_deliveries(ann, generic_hook, 10)
            .await
            .unwrap();
        assert_eq!(
            (rows[0].status.as_str(), rows[0].http_status),
            ("dropped", None)
        );
        assert!(
            rows[0].error.as_deref().unwrap().contains("refused"),
            "{rows:?}"
        );
        assert!(generic.received().is_empty());

        // With private networks allowed by the operator, the generic webhook gets its JSON: only
        // the item its keyword names.
        new_items_more(&store, feed).await;
        let open = services.fetcher(&store, true);
        let job = NotificationJob::new(&open).unwrap();
        wait_until(Duration::from_secs(5), "the generic message", || async {
            round(&job).await;
            !generic.received().is_empty()
        })
        .await;
        let (_, path, payload) = generic.received()[0].clone();
        assert_eq!(path, "/hook");
        assert_eq!(payload["type"], "new_items");
        assert_eq!(
            payload["channel"],
            serde_json::json!({"id": generic_hook, "name": "mine"})
        );
        let items = payload["items"].as_array().unwrap();
        assert_eq!(items.len(), 1);
        assert_eq!(items[0]["title"], "Item 1 again");
        assert_eq!(items[0]["feed_id"], feed);
        assert_eq!(items[0]["summary"], "More about item 1");
    }
);

/// Two more items, one about "item 1".
async fn new_items_more(store: &Store, feed: i64) {
    let now = chrono::Utc::now().timestamp();
    let items: Vec<NewItem> = [
        ("m1", "Item 1 again", "More about item 1"),
        ("m2", "Other", "Nothing"),
    ]
    .iter()
    .map(|(guid, title, text)| NewItem {
        guid: Some((*guid).into()),
        url: Some(format!("https://news.example/{guid}")),
        title: Some((*title).into()),
        summary: Some((*text).into()),
        published: Some(now),
        ..NewItem::default()
    })
    .collect();
    store.upsert_items(feed, &items, now).await.unwrap();
}

on_both_engines!(the_running_job_delivers_new_items_fire_and_forget, |db| {
    let store = db.migrated().await;
    let services = Services::start().await;
    let discord = services.discord.clone();
    let fetcher = services.fetcher(&store, false);
    let (_, feed, _) = channel(&store, Kind::Discord, DISCORD_URL).await;
    let job = Arc::new(NotificationJob::new(&fetcher).unwrap());
    let (stop, stopped) = tokio::sync::oneshot::channel::<()>();
    let runner = tokio::spawn(run_enrichment(job, 2, Duration::from_millis(50), async {
        let _ = stopped.await;
    }));
    // Storing items returns at once; the message follows from the queue.
    let started = Instant::now();
    new_items(&store, feed, 3).await;
    assert!(started.elapsed() < Duration::from_secs(2));
    wait_until(Duration::from_secs(10), "the message", || async {
        !discord.received().is_empty()
    })
    .await;
    assert_eq!(
        discord.received()[0].2["embeds"].as_array().unwrap().len(),
        3
    );
    let _ = stop.send(());
    runner.await.unwrap();
});

on_both_engines!(
    an_internal_webhook_answer_stays_out_of_the_send_test_message,
    |db| {
        // An operator allowed one internal host (127.0.0.1 standing in for it); a user points
        // a generic webhook at an internal service there that answers with a secret.
        let store = db.migrated().await;
        let internal = StandIn::default();
        let server = internal.start("/hook", StatusCode::OK).await;
        internal.script([Reply::Status(
            StatusCode::INTERNAL_SERVER_ERROR,
            "internal token: s3cr3t-for-admins-only",
        )]);
        let client = GuardedClient::new(ClientConfig {
            address_policy: AddressPolicy {
                allowed_networks: vec!["127.0.0.1/32".parse().unwrap()],
                ..AddressPolicy::default()
            },
            ..ClientConfig::default()
        })
        .unwrap();
        let fetcher = fetcher_with(&store, client, |config| {
            config.notifications.timeout = Duration::from_millis(2000);
        });
        let (ann, _, hook) = channel(&store, Kind::Generic, &server.url("/hook")).await;
        let webhook = store.webhook(ann, hook).await.unwrap();
        let notifier = tidings_worker::Notifier::new(&fetcher).unwrap();
        let outcome = notifier.send_test(&store, &webhook).await.unwrap();
        assert_eq!(outcome.http_status, Some(500));
        let error = outcome.error.expect("the test failed");
        assert!(!error.contains("s3cr3t"), "{error}");
        assert_eq!(error, "the webhook answered HTTP 500");
        assert_eq!(internal.received().len(), 1, "the allowed host was reached");
        let logged = store.webhook_deliveries(ann, hook, 10).await.unwrap();
        assert!(
            logged
                .iter()
                .all(|row| !row.error.as_deref().unwrap_or_default().contains("s3cr3t")),
            "{logged:?}"
        );
    }
);
