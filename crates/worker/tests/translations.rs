//! Translations (issue 37) on SQLite and PostgreSQL, against one stand-in server on 127.0.0.1
//! that speaks the four providers' protocols (LibreTranslate's `/translate`, DeepL's
//! `/v2/translate`, OpenAI-compatible chat completions, Anthropic Messages): each protocol's
//! request and answer, the HTML structure kept and the answer sanitized again, the cache,
//! retries, refusals, the per-user and installation budgets, the breaker, and subscriptions
//! that translate their new items in the background.

use tidings_testkit::on_both_engines;

use std::collections::VecDeque;
use std::sync::{Arc, Mutex};
use std::time::Duration;

use crate::support::{TestServer, fetcher_with, local_client, user};
use axum::Router;
use axum::extract::State;
use axum::http::{HeaderMap, StatusCode, header};
use axum::response::{IntoResponse, Response};
use axum::routing::{get, post};
use serde_json::{Value, json};
use tidings_store::Store;
use tidings_testkit::follow;
use tidings_worker::summaries::{BreakerConfig, RetryPolicy};
use tidings_worker::translations::{TranslateProviderKind as Kind, TranslateSettings};
use tidings_worker::{Fetcher, TranslateConfig, TranslateError, TranslationJob, drain_enrichment};

/// What the stand-in was asked (path, headers, body), and the statuses it answers next.
#[derive(Default)]
struct Provider {
    script: Mutex<VecDeque<u16>>,
    requests: Mutex<Vec<(String, HeaderMap, Value)>>,
}

impl Provider {
    fn then(&self, statuses: &[u16]) {
        self.script.lock().unwrap().extend(statuses.iter().copied());
    }

    fn requests(&self) -> Vec<(String, HeaderMap, Value)> {
        self.requests.lock().unwrap().clone()
    }
}

/// The stand-in's "translation" of HTML: the words of the story changed, and something a
/// sanitizer must remove added (the answer is untrusted).
fn translated_html(html: &str) -> String {
    format!(
        "{}<script>alert(1)</script><p onclick=\"steal()\">Fin.</p>",
        html.replace("mill", "moulin")
    )
}

/// The stand-in's translation of a title (HTML-escaped text for the HTML providers).
fn translated_title(title: &str) -> String {
    format!("[ja] {title}")
}

async fn answer(
    provider: Arc<Provider>,
    path: &'static str,
    headers: HeaderMap,
    body: String,
) -> Response {
    let body: Value = serde_json::from_str(&body).expect("the request is JSON");
    provider
        .requests
        .lock()
        .unwrap()
        .push((path.to_owned(), headers, body.clone()));
    let status = provider.script.lock().unwrap().pop_front().unwrap_or(200);
    if status != 200 {
        let error = json!({"error": {"message": format!("stand-in says {status}")}});
        return (
            StatusCode::from_u16(status).unwrap(),
            [(header::CONTENT_TYPE, "application/json")],
            error.to_string(),
        )
            .into_response();
    }
    let texts = |key: &str| -> Vec<String> {
        body[key]
            .as_array()
            .map(|a| a.iter().map(|t| t.as_str().unwrap().to_owned()).collect())
            .unwrap_or_default()
    };
    // Each protocol: title first, then the text (the client sends them in that order).
    let translate_part = |i: usize, text: &str| {
        if i == 0 {
            translated_title(text)
        } else {
            translated_html(text)
        }
    };
    let answer = match path {
        "libretranslate" => {
            let parts: Vec<String> = texts("q")
                .iter()
                .enumerate()
                .map(|(i, t)| translate_part(i, t))
                .collect();
            let detected: Vec<Value> = parts
                .iter()
                .map(|_| json!({"confidence": 90.0, "language": "en"}))
                .collect();
            json!({"translatedText": parts, "detectedLanguage": detected})
        }
        "deepl" => {
            let translations: Vec<Value> = texts("text")
                .iter()
                .enumerate()
                .map(|(i, t)| json!({"detected_source_language": "EN", "text": translate_part(i, t)}))
                .collect();
            json!({"translations": translations})
        }
        model => {
            let user = body["messages"]
                .as_array()
                .unwrap()
                .iter()
                .find(|m| m["role"] == "user")
                .and_then(|m| m["content"].as_str())
                .unwrap()
                .to_owned();
            let item: Value = serde_json::from_str(&user).expect("the item goes as JSON");
            let object = json!({
                "title": translated_title(item["title"].as_str().unwrap()),
                "content": translated_html(item["content"].as_str().unwrap()),
            });
            // Models wrap their JSON now and then.
            let text = format!("```json\n{object}\n```");
            if model == "anthropic" {
                json!({"id": "msg_1", "type": "message", "role": "assistant",
                       "content": [{"type": "text", "text": text}], "stop_reason": "end_turn"})
            } else {
                json!({"id": "c1", "object": "chat.completion",
                       "choices": [{"index": 0, "message": {"role": "assistant", "content": text},
                                    "finish_reason": "stop"}]})
            }
        }
    };
    (
        [(header::CONTENT_TYPE, "application/json")],
        answer.to_string(),
    )
        .into_response()
}

/// A stand-in speaking the four protocols.
async fn provider_server() -> (TestServer, Arc<Provider>) {
    let provider = Arc::new(Provider::default());
    let route = |path: &'static str| {
        post(move |State(p): State<Arc<Provider>>, h: HeaderMap, b: String| answer(p, path, h, b))
    };
    let router = Router::new()
        .route("/translate", route("libretranslate"))
        .route("/v2/translate", route("deepl"))
        .route("/v1/chat/completions", route("openai"))
        .route("/v1/messages", route("anthropic"))
        .with_state(Arc::clone(&provider));
    (TestServer::start(router).await, provider)
}

/// A feed of `count` English stories with some HTML structure.
async fn feed_server(count: usize) -> TestServer {
    let mut feed = String::from(
        "<?xml version=\"1.0\" encoding=\"UTF-8\"?><rss version=\"2.0\"><channel>\
         <title>News</title><link>https://site.example/</link><language>en</language>",
    );
    for i in 0..count {
        feed.push_str(&format!(
            "<item><title>Story {i} &amp; the mill</title><link>https://site.example/{i}</link>\
             <guid>g{i}</guid><description><![CDATA[<h2>The mill</h2><p>The harbour town voted \
             to restore its <a href=\"https://site.example/story\">tidal mill</a>.</p>\
             <ul><li>The mill last turned in 1950.</li><li>Volunteers raised the money.</li></ul>]]>\
             </description></item>"
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

/// Settings for `kind` at the stand-in, with fast retries.
fn config(kind: Kind, server: &TestServer) -> TranslateConfig {
    TranslateConfig {
        settings: Some(TranslateSettings {
            kind,
            base_url: url::Url::parse(&server.url("/")).unwrap(),
            api_key: Some("key-test".into()),
            model: kind.needs_model().then(|| "stand-in-1".to_owned()),
            timeout: Duration::from_secs(5),
        }),
        retry: RetryPolicy {
            tries: 3,
            first_backoff: Duration::from_millis(20),
            max_backoff: Duration::from_secs(2),
            requeue_after: Duration::from_secs(60),
            max_attempts: 3,
        },
        request_wait: Duration::from_secs(10),
        ..TranslateConfig::default()
    }
}

/// A store with a user following the feed (fetched once), and a fetcher with `translate`.
async fn setup(
    store: &Store,
    feeds: &TestServer,
    translate: TranslateConfig,
) -> (Fetcher, i64, i64, Vec<i64>) {
    let ann = user(store, "ann").await;
    let (subscription, feed) = follow(store, ann, &feeds.url("/feed.xml")).await;
    let fetcher = fetcher_with(store, local_client(Duration::from_secs(5)), |config| {
        config.translate = translate;
        config.full_text_concurrency = 0;
    });
    fetcher.refresh_feed(feed).await.expect("refresh");
    let mut ids = store.feed_item_ids(feed).await.unwrap();
    ids.sort();
    (fetcher, ann, subscription, ids)
}

on_both_engines!(
    each_protocol_translates_keeping_the_html_and_sanitizing_it,
    |db| {
        let store = db.migrated().await;
        let feeds = feed_server(4).await;
        let (server, provider) = provider_server().await;
        let kinds = [
            Kind::LibreTranslate,
            Kind::DeepL,
            Kind::OpenAi,
            Kind::Anthropic,
        ];
        let ann = user(&store, "ann").await;
        let (_, feed) = follow(&store, ann, &feeds.url("/feed.xml")).await;
        let mut ids = Vec::new();
        for (n, kind) in kinds.into_iter().enumerate() {
            let fetcher = fetcher_with(&store, local_client(Duration::from_secs(5)), |c| {
                c.translate = config(kind, &server);
                c.full_text_concurrency = 0;
            });
            if n == 0 {
                fetcher.refresh_feed(feed).await.unwrap();
                ids = store.feed_item_ids(feed).await.unwrap();
                ids.sort();
            }
            let item = ids[n];
            let translator = fetcher.translator();
            let translation = translator.translate(item, "ja", ann).await.unwrap();
            assert_eq!(translation.provider, kind.as_str());
            assert_eq!(translation.language, "ja");
            // The title read back as text: the escaped ampersand is one again.
            let title = translation.title.clone().unwrap();
            assert!(
                title.starts_with("[ja] Story ") && title.ends_with(" & the mill"),
                "{title}"
            );
            let content = translation.content.clone().unwrap();
            // The structure kept, the words changed, what the provider slipped in removed.
            assert!(content.contains("<h2>The moulin</h2>"), "{content}");
            assert!(
                content.contains("<li>The moulin last turned in 1950.</li>"),
                "{content}"
            );
            assert!(
                content.contains("href=\"https://site.example/story\""),
                "{content}"
            );
            assert!(!content.contains("<script"), "{content}");
            assert!(!content.contains("onclick"), "{content}");
            assert!(!content.contains("alert(1)"), "{content}");
            assert!(content.contains("Fin."), "{content}");
            match kind {
                Kind::LibreTranslate | Kind::DeepL => {
                    assert_eq!(translation.source_language.as_deref(), Some("en"))
                }
                _ => {
                    assert_eq!(translation.model.as_deref(), Some("stand-in-1"));
                    // The item's own detected language.
                    assert_eq!(translation.source_language.as_deref(), Some("en"));
                }
            }
            // Cached: asked again, no request.
            let before = provider.requests().len();
            let again = translator.translate(item, "ja", ann).await.unwrap();
            assert_eq!(again, translation);
            assert_eq!(provider.requests().len(), before);
            assert_eq!(
                store.item_translation(item, "ja").await.unwrap(),
                Some(translation)
            );
        }
        // Each protocol's request.
        let requests = provider.requests();
        assert_eq!(requests.len(), 4);
        let (path, headers, body) = &requests[0];
        assert_eq!(path, "libretranslate");
        assert_eq!(body["format"], "html");
        assert_eq!(body["source"], "auto");
        assert_eq!(body["target"], "ja");
        assert_eq!(body["api_key"], "key-test");
        // The title escaped for the HTML mode (the first item by id is the feed's last).
        let title = body["q"][0].as_str().unwrap();
        assert!(
            title.starts_with("Story ") && title.ends_with(" &amp; the mill"),
            "{title}"
        );
        assert!(body["q"][1].as_str().unwrap().contains("<h2>The mill</h2>"));
        assert!(headers.get("authorization").is_none());
        let (path, headers, body) = &requests[1];
        assert_eq!(path, "deepl");
        assert_eq!(headers["authorization"], "DeepL-Auth-Key key-test");
        assert_eq!(body["tag_handling"], "html");
        assert_eq!(body["target_lang"], "JA");
        assert_eq!(body["text"].as_array().unwrap().len(), 2);
        let (path, headers, body) = &requests[2];
        assert_eq!(path, "openai");
        assert_eq!(headers["authorization"], "Bearer key-test");
        assert_eq!(body["model"], "stand-in-1");
        assert_eq!(body["messages"][0]["role"], "system");
        assert!(
            body["messages"][0]["content"]
                .as_str()
                .unwrap()
                .contains("ja")
        );
        let (path, headers, body) = &requests[3];
        assert_eq!(path, "anthropic");
        assert_eq!(headers["x-api-key"], "key-test");
        assert_eq!(headers["anthropic-version"], "2023-06-01");
        assert!(body["system"].as_str().unwrap().contains("keep every tag"));
        // Every request counted, per provider, and against the user.
        let day = chrono::Utc::now().timestamp().div_euclid(86_400);
        for kind in kinds {
            assert_eq!(
                store
                    .translation_requests_on(day, kind.as_str())
                    .await
                    .unwrap(),
                1
            );
        }
        let spent = store
            .user_requests_on(day, ann, tidings_store::BudgetKind::Translation)
            .await
            .unwrap();
        assert_eq!(spent, 4);
    }
);

on_both_engines!(failures_retry_refusals_stop_and_budgets_hold, |db| {
    let store = db.migrated().await;
    let feeds = feed_server(5).await;
    let (server, provider) = provider_server().await;
    let mut translate = config(Kind::DeepL, &server);
    translate.user_daily_budget = 3;
    translate.daily_budget = 4;
    let (fetcher, ann, _, ids) = setup(&store, &feeds, translate).await;
    let translator = fetcher.translator();
    // A 503 and a 429, then the answer: three requests, one translation.
    provider.then(&[503, 429]);
    translator.translate(ids[0], "de", ann).await.unwrap();
    assert_eq!(provider.requests().len(), 3);
    // The user's budget (3) is spent: the next is refused before any request.
    let error = translator.translate(ids[1], "de", ann).await.unwrap_err();
    assert!(matches!(error, TranslateError::BudgetSpent(_)), "{error:?}");
    assert!(
        error.to_string().contains("your daily budget of 3"),
        "{error}"
    );
    assert_eq!(provider.requests().len(), 3);
    // Another user has theirs; a refusal is final after one request and says what failed.
    let bob = user(&store, "bob").await;
    follow(&store, bob, &feeds.url("/feed.xml")).await;
    provider.then(&[403]);
    let error = translator.translate(ids[1], "de", bob).await.unwrap_err();
    assert!(matches!(error, TranslateError::Failed(_)), "{error:?}");
    assert!(
        error
            .to_string()
            .contains("deepl translation provider refused the request (HTTP 403)"),
        "{error}"
    );
    assert_eq!(provider.requests().len(), 4);
    // The installation's budget (4) is spent now.
    let error = translator.translate(ids[2], "de", bob).await.unwrap_err();
    assert!(
        error
            .to_string()
            .contains("this server's daily budget of 4"),
        "{error}"
    );
    assert_eq!(provider.requests().len(), 4);
    // A translation made before is still served: no request, no budget.
    assert!(translator.translate(ids[0], "de", bob).await.is_ok());
});

on_both_engines!(the_breaker_opens_and_off_says_which_setting, |db| {
    let store = db.migrated().await;
    let feeds = feed_server(3).await;
    let (server, provider) = provider_server().await;
    let mut translate = config(Kind::LibreTranslate, &server);
    translate.retry.tries = 1;
    translate.breaker = BreakerConfig {
        failures_to_open: 2,
        open_for: Duration::from_secs(60),
        successes_to_close: 1,
    };
    let (fetcher, ann, _, ids) = setup(&store, &feeds, translate).await;
    let translator = fetcher.translator();
    provider.then(&[500, 500]);
    for id in &ids[..2] {
        let error = translator.translate(*id, "fr", ann).await.unwrap_err();
        assert!(
            matches!(error, TranslateError::Unavailable(..)),
            "{error:?}"
        );
        assert!(error.to_string().contains("failed (HTTP 500)"), "{error}");
    }
    let error = translator.translate(ids[2], "fr", ann).await.unwrap_err();
    assert!(
        error.to_string().contains("circuit breaker is open"),
        "{error}"
    );
    assert_eq!(provider.requests().len(), 2);

    // Off (the default): no provider, an answer naming the setting.
    let off = fetcher_with(&store, local_client(Duration::from_secs(5)), |_| {});
    assert!(!off.translator().is_on());
    let error = off
        .translator()
        .translate(ids[0], "fr", ann)
        .await
        .unwrap_err();
    assert!(matches!(error, TranslateError::Off));
    assert!(
        error.to_string().contains("TIDINGS_TRANSLATE_PROVIDER"),
        "{error}"
    );
});

on_both_engines!(
    subscriptions_marked_translate_their_new_items_in_the_background,
    |db| {
        let store = db.migrated().await;
        let feeds = feed_server(3).await;
        let (server, provider) = provider_server().await;
        let (fetcher, ann, subscription, ids) =
            setup(&store, &feeds, config(Kind::OpenAi, &server)).await;
        let job = Arc::new(TranslationJob::new(Arc::clone(fetcher.translator())));
        // Nothing is marked: nothing is queued.
        assert_eq!(drain_enrichment(Arc::clone(&job), 2).await.unwrap(), 0);
        // Marked from before the fetch: its items are new enough. Into English, their own
        // language, nothing is to do.
        store
            .set_subscription_translation(ann, subscription, Some("en"), 0)
            .await
            .unwrap();
        assert_eq!(drain_enrichment(Arc::clone(&job), 2).await.unwrap(), 0);
        store
            .set_subscription_translation(ann, subscription, Some("ja"), 0)
            .await
            .unwrap();
        assert_eq!(
            store.subscription_translations(ann).await.unwrap()[&subscription],
            "ja"
        );
        assert_eq!(drain_enrichment(Arc::clone(&job), 2).await.unwrap(), 3);
        for id in &ids {
            let translation = store.item_translation(*id, "ja").await.unwrap().unwrap();
            assert_eq!(translation.provider, "openai");
        }
        assert_eq!(store.translation_queue_len().await.unwrap(), 0);
        assert_eq!(provider.requests().len(), 3);
        // Translated once: nothing is queued again.
        assert_eq!(drain_enrichment(Arc::clone(&job), 2).await.unwrap(), 0);
        // A refusal gives the item up, and it is not queued again.
        store
            .set_subscription_translation(ann, subscription, Some("ko"), 0)
            .await
            .unwrap();
        provider.then(&[400, 400, 400]);
        assert_eq!(drain_enrichment(Arc::clone(&job), 1).await.unwrap(), 3);
        assert_eq!(drain_enrichment(Arc::clone(&job), 1).await.unwrap(), 0);
        assert_eq!(store.item_translation(ids[0], "ko").await.unwrap(), None);
        // Off: the subscription's items are no longer queued.
        store
            .set_subscription_translation(ann, subscription, None, 0)
            .await
            .unwrap();
        assert!(
            store
                .subscription_translations(ann)
                .await
                .unwrap()
                .is_empty()
        );
    }
);
