//! Summaries (F42) on SQLite and PostgreSQL, against stand-in model servers on 127.0.0.1 that
//! speak the OpenAI chat-completions and the Anthropic Messages protocols: the built-in
//! summarizer for new items of the feeds users want, each protocol's request and answer,
//! retries with back-off and `Retry-After`, refusals given up at once, time-outs, the circuit
//! breaker opening and closing, the daily budget, and fetches that never wait for any of it.

use tidings_testkit::on_both_engines;

use std::collections::VecDeque;
use std::sync::{Arc, Mutex};
use std::time::{Duration, Instant};

use crate::support::{TestServer, fetcher_with, local_client, user};
use axum::Router;
use axum::extract::State;
use axum::http::{HeaderMap, StatusCode, header};
use axum::response::{IntoResponse, Response};
use axum::routing::{get, post};
use serde_json::{Value, json};
use tidings_store::{PreferenceChanges, Store};
use tidings_testkit::follow;
use tidings_worker::summaries::{BreakerConfig, ProviderKind, RemoteSettings, RetryPolicy};
use tidings_worker::{Fetcher, Requested, SummaryConfig, SummaryJob, drain_enrichment};

/// A scripted answer of the stand-in: status, `Retry-After`, delay; `None` answers with a
/// summary in the protocol's shape.
#[derive(Clone, Copy)]
struct Scripted {
    status: u16,
    retry_after: Option<u64>,
    delay: Duration,
}

const OK: Scripted = Scripted {
    status: 200,
    retry_after: None,
    delay: Duration::ZERO,
};

/// What the stand-in was asked, and what it answers next.
#[derive(Default)]
struct Model {
    script: Mutex<VecDeque<Scripted>>,
    /// When the script is empty.
    default: Mutex<Option<Scripted>>,
    requests: Mutex<Vec<(Instant, HeaderMap, Value)>>,
}

impl Model {
    fn then(&self, answers: &[Scripted]) {
        self.script.lock().unwrap().extend(answers.iter().copied());
    }

    fn always(&self, answer: Scripted) {
        *self.default.lock().unwrap() = Some(answer);
    }

    fn requests(&self) -> Vec<(Instant, HeaderMap, Value)> {
        self.requests.lock().unwrap().clone()
    }
}

/// The text of the user's message, either protocol.
fn user_text(body: &Value) -> String {
    body["messages"]
        .as_array()
        .unwrap()
        .iter()
        .find(|m| m["role"] == "user")
        .and_then(|m| m["content"].as_str())
        .unwrap_or_default()
        .to_owned()
}

async fn answer(model: Arc<Model>, anthropic: bool, headers: HeaderMap, body: String) -> Response {
    let body: Value = serde_json::from_str(&body).expect("the request is JSON");
    let scripted = {
        let next = model.script.lock().unwrap().pop_front();
        next.or(*model.default.lock().unwrap()).unwrap_or(OK)
    };
    model
        .requests
        .lock()
        .unwrap()
        .push((Instant::now(), headers, body.clone()));
    tokio::time::sleep(scripted.delay).await;
    let status = StatusCode::from_u16(scripted.status).unwrap();
    if scripted.status != 200 {
        let mut response = (
            status,
            [(header::CONTENT_TYPE, "application/json")],
            json!({"type": "error", "error": {"type": "x", "message": format!("stand-in says {}", scripted.status)}}).to_string(),
        )
            .into_response();
        if let Some(seconds) = scripted.retry_after {
            response
                .headers_mut()
                .insert(header::RETRY_AFTER, seconds.to_string().parse().unwrap());
        }
        return response;
    }
    // The summary names the title (the input's first line), so a test can tell items apart.
    let title = user_text(&body)
        .lines()
        .next()
        .unwrap_or_default()
        .to_owned();
    let summary = format!("Summary of {title}. It is short.");
    let json = if anthropic {
        json!({"id": "msg_1", "type": "message", "role": "assistant",
               "content": [{"type": "text", "text": summary}],
               "stop_reason": "end_turn"})
    } else {
        json!({"id": "chatcmpl-1", "object": "chat.completion",
               "choices": [{"index": 0, "message": {"role": "assistant", "content": summary},
                            "finish_reason": "stop"}]})
    };
    (
        [(header::CONTENT_TYPE, "application/json")],
        json.to_string(),
    )
        .into_response()
}

/// A model server speaking both protocols (`/v1/chat/completions`, `/v1/messages`).
async fn model_server() -> (TestServer, Arc<Model>) {
    let model = Arc::new(Model::default());
    let router = Router::new()
        .route(
            "/v1/chat/completions",
            post(|State(m): State<Arc<Model>>, h: HeaderMap, b: String| answer(m, false, h, b)),
        )
        .route(
            "/v1/messages",
            post(|State(m): State<Arc<Model>>, h: HeaderMap, b: String| answer(m, true, h, b)),
        )
        .with_state(Arc::clone(&model));
    (TestServer::start(router).await, model)
}

/// Sentences that make a story longer than a summary (900 characters by default).
const MORE: &str = "The council will pay for a new wheel once the volunteers have repaired the mill's stone walls. Local schools plan visits to the mill so that children can watch grain become flour. The mill's old miller, now ninety, has offered to teach the volunteers how the stones are dressed. Engineers surveyed the mill race last winter and found the channel sound after seventy years of silence. A bakery in the harbour has promised to buy the mill's first flour for its bread. The restoration of the mill is expected to bring visitors to Porthcarrow through the summer. Fishermen in the harbour remember their grandparents carrying sacks of grain up the hill to the mill. Once the mill turns again, the volunteers hope to open a small museum of the town's trades beside it. The trust that owns the mill will hold an open day in June for anyone who gave money to the work. Storms damaged the mill's roof in 1987, and tarpaulins kept the rain off the machinery until now.";

/// A feed of `count` items with a dozen sentences each, on its own server.
async fn feed_server(count: usize) -> TestServer {
    feed_server_with(count, 0).await
}

/// A feed of `count` long items and `short` ones shorter than a summary ("Note 0"…).
async fn feed_server_with(count: usize, short: usize) -> TestServer {
    let mut feed = String::from(
        "<?xml version=\"1.0\" encoding=\"UTF-8\"?><rss version=\"2.0\"><channel>\
         <title>News</title><link>https://site.example/</link>",
    );
    for i in 0..count {
        feed.push_str(&format!(
            "<item><title>Story {i}</title><link>https://site.example/{i}</link><guid>g{i}</guid>\
             <description><![CDATA[<p>The harbour town of Porthcarrow voted to restore story {i}'s \
             tidal mill. The mill last turned in 1950. Volunteers raised the money in two years. \
             Work starts in spring and the mill should grind flour again by autumn. {MORE}</p>]]></description></item>"
        ));
    }
    for i in 0..short {
        feed.push_str(&format!(
            "<item><title>Note {i}</title><link>https://site.example/note/{i}</link><guid>n{i}</guid>\
             <description>The mill opens on Sunday {i}.</description></item>"
        ));
    }
    feed.push_str("</channel></rss>");
    TestServer::start(Router::new().route(
        "/feed.xml",
        get(move || {
            let feed = feed.clone();
            async move { ([(header::CONTENT_TYPE, "application/rss+xml")], feed) }
        }),
    ))
    .await
}

/// A remote provider's settings for the stand-in, with fast retries.
fn remote(kind: ProviderKind, model: &TestServer, timeout: Duration) -> SummaryConfig {
    SummaryConfig {
        provider: kind,
        remote: Some(RemoteSettings {
            kind,
            base_url: url::Url::parse(&model.url("/")).unwrap(),
            model: "stand-in-1".into(),
            api_key: Some("sk-test".into()),
            timeout,
        }),
        retry: RetryPolicy {
            tries: 3,
            first_backoff: Duration::from_millis(50),
            max_backoff: Duration::from_secs(2),
            requeue_after: Duration::from_secs(60),
            max_attempts: 3,
        },
        request_wait: Duration::from_secs(10),
        ..SummaryConfig::default()
    }
}

/// A store with a user following the feed (fetched once), and a fetcher with `summary`.
async fn setup(
    store: &Store,
    feeds: &TestServer,
    summary: SummaryConfig,
) -> (Fetcher, i64, Vec<i64>) {
    let ann = user(store, "ann").await;
    let (_, feed) = follow(store, ann, &feeds.url("/feed.xml")).await;
    let fetcher = fetcher_with(store, local_client(Duration::from_secs(5)), |config| {
        config.summary = summary;
        config.full_text_concurrency = 0;
    });
    fetcher.refresh_feed(feed).await.expect("refresh");
    // In the order of their titles: Story 0, Story 1…
    let mut titled = Vec::new();
    for id in store.feed_item_ids(feed).await.unwrap() {
        titled.push((store.item(ann, id).await.unwrap().title, id));
    }
    titled.sort();
    (fetcher, ann, titled.into_iter().map(|(_, id)| id).collect())
}

async fn prefer(store: &Store, user_id: i64, mode: &str) {
    let changes = PreferenceChanges {
        summarize: Some(mode.into()),
        ..PreferenceChanges::default()
    };
    store.update_preferences(user_id, &changes).await.unwrap();
}

fn done(requested: Requested) -> tidings_store::GeneratedSummary {
    match requested {
        Requested::Done(summary) => summary,
        other => panic!("expected a summary, got {other:?}"),
    }
}

on_both_engines!(the_local_summarizer_serves_new_items_and_requests, |db| {
    let store = db.migrated().await;
    let feeds = feed_server(3).await;
    let (fetcher, ann, ids) = setup(&store, &feeds, SummaryConfig::default()).await;
    // On demand (the default): the fetch queued nothing.
    assert_eq!(store.summary_queue_len().await.unwrap(), 0);
    let summarizer = fetcher.summarizer();
    let started = Instant::now();
    let summary = done(summarizer.request(ids[0]).await.unwrap());
    assert!(started.elapsed() < Duration::from_secs(5));
    assert_eq!(summary.provider, "local");
    assert_eq!(summary.model, None);
    assert!(summary.text.contains("Porthcarrow"), "{}", summary.text);
    assert!(!summary.text.contains('<'), "plain text: {}", summary.text);
    // Stored once: asked again, the same one comes back.
    let again = done(summarizer.request(ids[0]).await.unwrap());
    assert_eq!(again, summary);
    assert_eq!(store.summary_queue_len().await.unwrap(), 0);

    // "All new items": a fetch's new items are queued, and the job summarizes them.
    prefer(&store, ann, "all").await;
    let more = feed_server(4).await;
    let (_, feed2) = follow(&store, ann, &more.url("/feed.xml")).await;
    let report = fetcher.refresh_feed(feed2).await.unwrap();
    assert_eq!(report.items_inserted, 4);
    assert_eq!(store.summary_queue_len().await.unwrap(), 4);
    let ran = drain_enrichment(Arc::new(SummaryJob::new(Arc::clone(summarizer))), 2)
        .await
        .unwrap();
    assert_eq!(ran, 4);
    assert_eq!(store.summary_queue_len().await.unwrap(), 0);
    let new_ids = store.feed_item_ids(feed2).await.unwrap();
    let stored = store.summaries_of_items(&new_ids).await.unwrap();
    assert_eq!(stored.len(), 4);
    assert!(stored.values().all(|s| s.provider == "local"));
});

on_both_engines!(openai_requests_retry_with_back_off_and_retry_after, |db| {
    let store = db.migrated().await;
    let feeds = feed_server(2).await;
    let (server, model) = model_server().await;
    let config = remote(ProviderKind::OpenAi, &server, Duration::from_secs(5));
    let (fetcher, _, ids) = setup(&store, &feeds, config).await;
    // A 503, then a 429 asking for a second, then the answer.
    model.then(&[
        Scripted { status: 503, ..OK },
        Scripted {
            status: 429,
            retry_after: Some(1),
            ..OK
        },
    ]);
    let summary = done(fetcher.summarizer().request(ids[0]).await.unwrap());
    assert_eq!(summary.provider, "openai");
    assert_eq!(summary.model.as_deref(), Some("stand-in-1"));
    assert_eq!(summary.text, "Summary of Story 0. It is short.");
    let requests = model.requests();
    assert_eq!(requests.len(), 3);
    // The back-off after the 503 (50 ms ± 25 %), and the second the 429 asked for.
    let first_wait = requests[1].0 - requests[0].0;
    assert!(first_wait >= Duration::from_millis(37), "{first_wait:?}");
    let second_wait = requests[2].0 - requests[1].0;
    assert!(second_wait >= Duration::from_millis(990), "{second_wait:?}");
    // The protocol: bearer key, model, a system instruction with the length, the text.
    let (_, headers, body) = &requests[2];
    assert_eq!(headers["authorization"], "Bearer sk-test");
    assert_eq!(body["model"], "stand-in-1");
    let messages = body["messages"].as_array().unwrap();
    assert_eq!(messages[0]["role"], "system");
    assert!(
        messages[0]["content"]
            .as_str()
            .unwrap()
            .contains("at most 900 characters")
    );
    let text = user_text(body);
    assert!(text.starts_with("Story 0\n\n"), "{text}");
    assert!(text.contains("Volunteers raised the money"), "{text}");
    assert!(!text.contains("<p>"), "plain text is sent: {text}");
    assert!(body["max_tokens"].as_i64().unwrap() >= 900);
    // Every request counted against the day's budget.
    let day = chrono::Utc::now().timestamp().div_euclid(86_400);
    assert_eq!(store.summary_requests_on(day, "openai").await.unwrap(), 3);
    // Stored once: asking again makes no request.
    done(fetcher.summarizer().request(ids[0]).await.unwrap());
    assert_eq!(model.requests().len(), 3);

    // A long Retry-After ends the attempt: the item waits in the queue, not a worker.
    model.then(&[Scripted {
        status: 429,
        retry_after: Some(120),
        ..OK
    }]);
    let before = chrono::Utc::now().timestamp();
    match fetcher.summarizer().request(ids[1]).await.unwrap() {
        Requested::Queued(Some(why)) => assert!(why.contains("429"), "{why}"),
        other => panic!("expected queued, got {other:?}"),
    }
    let state = store
        .summary_job_state(ids[1])
        .await
        .unwrap()
        .expect("queued");
    assert!(state.not_before >= before + 120, "{state:?}");
    assert!(state.last_error.unwrap().contains("429"));
    assert_eq!(model.requests().len(), 4);
});

on_both_engines!(anthropic_messages_and_refusals_given_up_at_once, |db| {
    let store = db.migrated().await;
    let feeds = feed_server(2).await;
    let (server, model) = model_server().await;
    let config = remote(ProviderKind::Anthropic, &server, Duration::from_secs(5));
    let (fetcher, _, ids) = setup(&store, &feeds, config).await;
    let summary = done(fetcher.summarizer().request(ids[0]).await.unwrap());
    assert_eq!(summary.provider, "anthropic");
    assert_eq!(summary.text, "Summary of Story 0. It is short.");
    let requests = model.requests();
    assert_eq!(requests.len(), 1);
    let (_, headers, body) = &requests[0];
    assert_eq!(headers["x-api-key"], "sk-test");
    assert_eq!(headers["anthropic-version"], "2023-06-01");
    assert!(headers.get("authorization").is_none());
    assert_eq!(body["model"], "stand-in-1");
    assert!(
        body["system"]
            .as_str()
            .unwrap()
            .contains("at most 900 characters")
    );
    assert_eq!(body["messages"].as_array().unwrap().len(), 1);
    assert!(user_text(body).starts_with("Story 0\n\n"));

    // A 401 (a bad key) is not retried: the item is given up and leaves the queue.
    model.then(&[Scripted { status: 401, ..OK }]);
    match fetcher.summarizer().request(ids[1]).await.unwrap() {
        Requested::Failed(why) => {
            assert!(why.contains("refused") && why.contains("401"), "{why}");
            assert!(
                why.contains("stand-in says 401"),
                "the provider's message: {why}"
            );
        }
        other => panic!("expected a failure, got {other:?}"),
    }
    assert_eq!(model.requests().len(), 2);
    assert!(store.summary_job_state(ids[1]).await.unwrap().is_none());
    assert!(store.generated_summary(ids[1]).await.unwrap().is_none());
});

on_both_engines!(time_outs_open_the_breaker_and_a_trial_closes_it, |db| {
    let store = db.migrated().await;
    let feeds = feed_server(4).await;
    let (server, model) = model_server().await;
    let mut config = remote(ProviderKind::OpenAi, &server, Duration::from_millis(300));
    config.retry.tries = 1;
    config.breaker = BreakerConfig {
        failures_to_open: 2,
        open_for: Duration::from_millis(1500),
        successes_to_close: 1,
    };
    let (fetcher, _, ids) = setup(&store, &feeds, config).await;
    let summarizer = fetcher.summarizer();
    model.always(Scripted {
        delay: Duration::from_secs(3),
        ..OK
    });
    for id in &ids[..2] {
        let started = Instant::now();
        match summarizer.request(*id).await.unwrap() {
            Requested::Queued(Some(why)) => assert!(why.contains("did not answer"), "{why}"),
            other => panic!("expected queued after a time-out, got {other:?}"),
        }
        assert!(
            started.elapsed() < Duration::from_secs(2),
            "the time-out holds"
        );
        let state = store.summary_job_state(*id).await.unwrap().unwrap();
        assert_eq!(state.attempts, 1);
    }
    assert_eq!(model.requests().len(), 2);
    assert_eq!(
        summarizer.breaker_state(),
        tidings_worker::summaries::BreakerState::Open
    );
    // Open: no request is made, and the attempt is not counted.
    match summarizer.request(ids[2]).await.unwrap() {
        Requested::Queued(Some(why)) => assert!(why.contains("circuit breaker"), "{why}"),
        other => panic!("expected queued while open, got {other:?}"),
    }
    assert_eq!(model.requests().len(), 2);
    let state = store.summary_job_state(ids[2]).await.unwrap().unwrap();
    assert_eq!(state.attempts, 0);
    assert!(state.not_before >= chrono::Utc::now().timestamp());
    // The provider recovers; after the open time one trial goes through and closes it.
    *model.default.lock().unwrap() = None;
    tokio::time::sleep(Duration::from_millis(1600)).await;
    let summary = done(summarizer.request(ids[3]).await.unwrap());
    assert_eq!(summary.text, "Summary of Story 3. It is short.");
    assert_eq!(
        summarizer.breaker_state(),
        tidings_worker::summaries::BreakerState::Closed
    );
});

on_both_engines!(the_daily_budget_defers_items_to_the_next_day, |db| {
    let store = db.migrated().await;
    let feeds = feed_server(2).await;
    let (server, model) = model_server().await;
    let mut config = remote(ProviderKind::OpenAi, &server, Duration::from_secs(5));
    config.daily_budget = 1;
    let (fetcher, _, ids) = setup(&store, &feeds, config).await;
    done(fetcher.summarizer().request(ids[0]).await.unwrap());
    match fetcher.summarizer().request(ids[1]).await.unwrap() {
        Requested::Queued(Some(why)) => assert!(why.contains("daily budget of 1"), "{why}"),
        other => panic!("expected queued, got {other:?}"),
    }
    assert_eq!(model.requests().len(), 1);
    let tomorrow = (chrono::Utc::now().timestamp().div_euclid(86_400) + 1) * 86_400;
    let state = store.summary_job_state(ids[1]).await.unwrap().unwrap();
    assert!(state.not_before >= tomorrow, "{state:?}");
    assert_eq!(state.attempts, 0);
    // The worker's claim does not take it before then.
    let job = Arc::new(SummaryJob::new(Arc::clone(fetcher.summarizer())));
    assert_eq!(drain_enrichment(job, 2).await.unwrap(), 0);
});

on_both_engines!(a_slow_provider_never_delays_fetching, |db| {
    let store = db.migrated().await;
    let feeds = feed_server(5).await;
    let (server, model) = model_server().await;
    model.always(Scripted {
        delay: Duration::from_secs(2),
        ..OK
    });
    let ann = user(&store, "ann").await;
    prefer(&store, ann, "all").await;
    let (_, feed) = follow(&store, ann, &feeds.url("/feed.xml")).await;
    let fetcher = fetcher_with(&store, local_client(Duration::from_secs(5)), |config| {
        config.summary = remote(ProviderKind::OpenAi, &server, Duration::from_secs(5));
        config.full_text_concurrency = 0;
    });
    // The summary worker runs beside the fetch, busy with a slow provider.
    let job = Arc::new(SummaryJob::new(Arc::clone(fetcher.summarizer())));
    let runner = tokio::spawn(tidings_worker::run_enrichment(
        job,
        2,
        Duration::from_millis(50),
        std::future::pending(),
    ));
    let started = Instant::now();
    let report = fetcher.refresh_feed(feed).await.unwrap();
    assert_eq!(report.items_inserted, 5);
    assert!(
        started.elapsed() < Duration::from_millis(1500),
        "the fetch took {:?}",
        started.elapsed()
    );
    // The items are readable at once, summaries or not.
    let ids = store.feed_item_ids(feed).await.unwrap();
    assert!(store.item(ann, ids[0]).await.is_ok());
    crate::support::wait_until(Duration::from_secs(20), "all five summaries", || {
        let store = store.clone();
        let ids = ids.clone();
        async move { store.summaries_of_items(&ids).await.unwrap().len() == 5 }
    })
    .await;
    runner.abort();
    // Two at a time (the parallelism), one request each.
    assert_eq!(model.requests().len(), 5);
});

on_both_engines!(short_items_are_skipped_before_any_request, |db| {
    let store = db.migrated().await;
    let feeds = feed_server_with(1, 1).await;
    let (server, model) = model_server().await;
    let config = remote(ProviderKind::OpenAi, &server, Duration::from_secs(5));
    let (fetcher, ann, ids) = setup(&store, &feeds, config).await;
    let summarizer = fetcher.summarizer();
    // "Note 0" is its own summary: no request, nothing stored, nothing left queued.
    match summarizer.request(ids[0]).await.unwrap() {
        Requested::TooShort(chars) => assert_eq!(chars, "The mill opens on Sunday 0.".len()),
        other => panic!("expected too short, got {other:?}"),
    }
    assert!(model.requests().is_empty());
    assert!(store.generated_summary(ids[0]).await.unwrap().is_none());
    assert_eq!(store.summary_queue_len().await.unwrap(), 0);

    // Summarizing every new item: the short ones leave the queue without a request, so the
    // budget goes to the long ones only.
    prefer(&store, ann, "all").await;
    let more = feed_server_with(2, 3).await;
    let (_, feed2) = follow(&store, ann, &more.url("/feed.xml")).await;
    fetcher.refresh_feed(feed2).await.unwrap();
    assert_eq!(store.summary_queue_len().await.unwrap(), 5);
    let ran = drain_enrichment(Arc::new(SummaryJob::new(Arc::clone(summarizer))), 2)
        .await
        .unwrap();
    assert_eq!(ran, 5);
    assert_eq!(store.summary_queue_len().await.unwrap(), 0);
    assert_eq!(model.requests().len(), 2);
    let day = chrono::Utc::now().timestamp().div_euclid(86_400);
    assert_eq!(store.summary_requests_on(day, "openai").await.unwrap(), 2);
    let new_ids = store.feed_item_ids(feed2).await.unwrap();
    let stored = store.summaries_of_items(&new_ids).await.unwrap();
    assert_eq!(stored.len(), 2);
    for summary in stored.values() {
        let item = store.item(ann, summary.item_id).await.unwrap();
        assert!(
            item.title.as_deref().unwrap().starts_with("Story"),
            "{item:?}"
        );
        // What it was made from: the item's whole text.
        assert!(summary.source_chars.unwrap() > 900, "{summary:?}");
    }
});

on_both_engines!(one_user_cannot_spend_the_installations_daily_budget, |db| {
    // Ann and Bob follow the same feed; the installation may make 4 requests a day, each
    // user 2. Ann presses "Summarize" on everything: her third request waits for tomorrow
    // and costs the installation nothing, and Bob still gets his two.
    let store = db.migrated().await;
    let feeds = feed_server(5).await;
    let (server, model) = model_server().await;
    let mut config = remote(ProviderKind::OpenAi, &server, Duration::from_secs(5));
    config.daily_budget = 4;
    config.user_daily_budget = 2;
    let (fetcher, ann, ids) = setup(&store, &feeds, config).await;
    let bob = user(&store, "bob").await;
    follow(&store, bob, &feeds.url("/feed.xml")).await;
    let summarizer = fetcher.summarizer();
    done(summarizer.request_by(ids[0], ann).await.unwrap());
    done(summarizer.request_by(ids[1], ann).await.unwrap());
    match summarizer.request_by(ids[2], ann).await.unwrap() {
        Requested::Queued(Some(why)) => assert!(why.contains("per user"), "{why}"),
        other => panic!("expected Ann's third request to wait, got {other:?}"),
    }
    assert_eq!(model.requests().len(), 2, "no request past Ann's budget");
    let day = chrono::Utc::now().timestamp().div_euclid(86_400);
    assert_eq!(store.summary_requests_on(day, "openai").await.unwrap(), 2);
    done(summarizer.request_by(ids[3], bob).await.unwrap());
    done(summarizer.request_by(ids[4], bob).await.unwrap());
    assert_eq!(model.requests().len(), 4);
    let spent = |user| {
        let store = store.clone();
        async move {
            store
                .user_requests_on(day, user, tidings_store::BudgetKind::Summary)
                .await
                .unwrap()
        }
    };
    assert_eq!((spent(ann).await, spent(bob).await), (2, 2));
});
