//! WebSub (F18) end to end, on both engines: the real server and worker against a hub this
//! test runs on 127.0.0.1, which speaks the W3C WebSub spec (it takes subscription requests,
//! verifies intent at the callback, distributes signed content) and publishes the topic feed
//! itself, like websub.rocks. The cases follow websub.rocks' subscriber tests: discovery from
//! headers over the document (100, 104), a `self` URL other than the one fetched (200), a hub
//! that redirects (204), a verification for another topic refused (205), delivery answered
//! 2xx (300), invalid and missing signatures (301, 302); and renewal before the lease ends,
//! denial, unsubscription when the last subscriber leaves.

use tidings_testkit::on_both_engines;

use std::collections::HashMap;
use std::sync::{Arc, Mutex};
use std::time::Duration;

use crate::support::{TestApp, call};
use axum::extract::{Form, State};
use axum::http::{StatusCode as AxumStatus, header};
use axum::response::{IntoResponse, Response};
use axum::routing::{get, post};
use reqwest::{Method, StatusCode};
use tidings_server::{AppState, ServerConfig};
use tidings_store::{WebSubMode, WebSubState};
use tidings_worker::{Fetcher, WebSubJob, WorkerConfig, drain_enrichment};

/// How the hub signs a distribution.
#[derive(Clone, Copy)]
enum Signing {
    /// `X-Hub-Signature: METHOD=hmac` with the subscriber's secret.
    Valid(&'static str),
    /// A signature made with another secret.
    Invalid,
    /// No signature at all.
    Omit,
}

/// One subscription request the hub received.
#[derive(Debug, Clone)]
struct HubRequest {
    mode: String,
    topic: String,
    callback: String,
    secret: Option<String>,
    lease: Option<String>,
}

/// A subscriber the hub holds.
#[derive(Debug, Clone)]
struct Subscriber {
    secret: Option<String>,
}

#[derive(Default)]
struct HubState {
    base: String,
    /// The lease the hub grants, in seconds.
    lease_seconds: i64,
    /// Verify with this topic instead of the requested one (websub.rocks 205).
    verify_other_topic: bool,
    /// Deny subscriptions instead of verifying them.
    deny: bool,
    requests: Vec<HubRequest>,
    /// (mode, the callback's status, whether it echoed the challenge).
    verifications: Vec<(String, u16, bool)>,
    subscribers: HashMap<String, Subscriber>,
    /// Requests to the hub the document advertises, which the headers override (104).
    wrong_hub_requests: usize,
    /// The feed's items, newest first.
    items: Vec<String>,
}

/// The hub and publisher in one local server.
#[derive(Clone)]
struct Hub {
    base: String,
    state: Arc<Mutex<HubState>>,
    client: reqwest::Client,
}

impl Hub {
    async fn start(lease_seconds: i64) -> Hub {
        Hub::start_as(lease_seconds, None).await
    }

    /// A hub (and its feed) on 127.0.0.1, named `host` in its URLs when given (the fetcher
    /// then needs that name mapped to 127.0.0.1).
    async fn start_as(lease_seconds: i64, host: Option<&str>) -> Hub {
        let _ = rustls::crypto::ring::default_provider().install_default();
        let listener = tokio::net::TcpListener::bind("127.0.0.1:0").await.unwrap();
        let address = listener.local_addr().unwrap();
        let base = match host {
            Some(host) => format!("http://{host}:{}", address.port()),
            None => format!("http://{address}"),
        };
        let state = Arc::new(Mutex::new(HubState {
            base: base.clone(),
            lease_seconds,
            items: vec!["first".into()],
            ..HubState::default()
        }));
        let hub = Hub {
            base,
            state,
            client: reqwest::Client::new(),
        };
        let app = axum::Router::new()
            .route("/feed", get(serve_feed))
            // A temporarily redirected topic (websub.rocks 201): the topic is still the
            // `self` the final answer names.
            .route(
                "/moved-feed",
                get(|| async { (AxumStatus::FOUND, [(header::LOCATION, "/feed")]) }),
            )
            .route(
                "/hub-moved",
                post(|| async { (AxumStatus::PERMANENT_REDIRECT, [(header::LOCATION, "/hub")]) }),
            )
            .route("/wrong-hub", post(wrong_hub))
            .route("/hub", post(hub_request))
            .with_state(hub.clone());
        tokio::spawn(async move { axum::serve(listener, app).await });
        hub
    }

    /// The URL subscribed to.
    fn feed_url(&self) -> String {
        format!("{}/feed", self.base)
    }

    /// The topic the feed's headers advertise as `self`.
    fn topic(&self) -> String {
        format!("{}/feed?canonical=1", self.base)
    }

    fn state(&self) -> std::sync::MutexGuard<'_, HubState> {
        self.state.lock().unwrap()
    }

    /// Adds an item and distributes the feed to every subscriber, signed as `signing` says;
    /// returns the callbacks' statuses.
    async fn publish(&self, title: &str, signing: Signing) -> Vec<u16> {
        let (body, subscribers) = {
            let mut state = self.state();
            state.items.insert(0, title.into());
            (atom(&state), state.subscribers.clone())
        };
        let mut statuses = Vec::new();
        for (callback, subscriber) in subscribers {
            let mut request = self
                .client
                .post(&callback)
                .header(header::CONTENT_TYPE, "application/atom+xml; charset=utf-8")
                .header(
                    header::LINK,
                    format!(
                        "<{}/hub>; rel=\"hub\", <{}>; rel=\"self\"",
                        self.base,
                        self.topic()
                    ),
                )
                .body(body.clone());
            let secret = subscriber.secret.clone().unwrap_or_default();
            match signing {
                Signing::Valid(method) => {
                    request = request.header("x-hub-signature", sign(method, &secret, &body));
                }
                Signing::Invalid => {
                    request = request.header("x-hub-signature", sign("sha256", "not it", &body));
                }
                Signing::Omit => {}
            }
            statuses.push(request.send().await.unwrap().status().as_u16());
        }
        statuses
    }
}

/// `url` with `pairs` appended to its query, as a hub appends its parameters to a callback.
fn with_query(url: &str, pairs: &[(&str, &str)]) -> String {
    let mut url = url::Url::parse(url).unwrap();
    url.query_pairs_mut().extend_pairs(pairs);
    url.into()
}

fn sign(method: &str, secret: &str, body: &str) -> String {
    use hmac::{KeyInit, Mac};
    fn mac<M: Mac + KeyInit>(secret: &str, body: &str) -> String {
        let mut mac = <M as KeyInit>::new_from_slice(secret.as_bytes()).unwrap();
        mac.update(body.as_bytes());
        hex::encode(mac.finalize().into_bytes())
    }
    let digest = match method {
        "sha1" => mac::<hmac::Hmac<sha1::Sha1>>(secret, body),
        "sha256" => mac::<hmac::Hmac<sha2::Sha256>>(secret, body),
        "sha512" => mac::<hmac::Hmac<sha2::Sha512>>(secret, body),
        other => panic!("no method {other}"),
    };
    format!("{method}={digest}")
}

/// The topic's Atom document. Its own hub and self links are the wrong ones: the headers
/// name the right ones and take priority (websub.rocks 104).
fn atom(state: &HubState) -> String {
    let entries: String = state
        .items
        .iter()
        .enumerate()
        .map(|(i, title)| {
            format!(
                "<entry><id>urn:item:{title}</id><title>Post {title}</title>\
                 <link href=\"{}/posts/{title}\"/><updated>2026-11-{:02}T10:00:00Z</updated>\
                 <content type=\"html\">&lt;p&gt;Words about {title}&lt;/p&gt;</content></entry>",
                state.base,
                25 - i.min(20)
            )
        })
        .collect();
    format!(
        "<?xml version=\"1.0\"?><feed xmlns=\"http://www.w3.org/2005/Atom\"><title>Pushed</title>\
         <id>urn:pushed</id><link rel=\"hub\" href=\"{0}/wrong-hub\"/>\
         <link rel=\"self\" href=\"{0}/feed?wrong=1\"/><updated>2026-11-25T10:00:00Z</updated>\
         {entries}</feed>",
        state.base
    )
}

async fn serve_feed(State(hub): State<Hub>) -> Response {
    let body = atom(&hub.state());
    (
        [
            (header::CONTENT_TYPE, "application/atom+xml".to_owned()),
            (
                header::LINK,
                format!(
                    "<{}/hub-moved>; rel=\"hub\", <{}>; rel=\"self\"",
                    hub.base,
                    hub.topic()
                ),
            ),
        ],
        body,
    )
        .into_response()
}

async fn wrong_hub(State(hub): State<Hub>) -> Response {
    hub.state().wrong_hub_requests += 1;
    (AxumStatus::BAD_REQUEST, "wrong discovery priority").into_response()
}

/// A subscription request: checked, then verified at the callback before the answer (as
/// websub.rocks does), or denied after it.
async fn hub_request(
    State(hub): State<Hub>,
    Form(form): Form<HashMap<String, String>>,
) -> Response {
    let field = |name: &str| form.get(name).cloned();
    let (Some(mode), Some(topic), Some(callback)) =
        (field("hub.mode"), field("hub.topic"), field("hub.callback"))
    else {
        return (AxumStatus::BAD_REQUEST, "missing parameters").into_response();
    };
    if topic != hub.topic() {
        return (
            AxumStatus::BAD_REQUEST,
            "the topic is not allowed at this hub",
        )
            .into_response();
    }
    if field("hub.secret").is_some_and(|s| s.len() >= 200) {
        return (AxumStatus::BAD_REQUEST, "secret too long").into_response();
    }
    let (lease, other_topic, deny) = {
        let mut state = hub.state();
        state.requests.push(HubRequest {
            mode: mode.clone(),
            topic: topic.clone(),
            callback: callback.clone(),
            secret: field("hub.secret"),
            lease: field("hub.lease_seconds"),
        });
        (state.lease_seconds, state.verify_other_topic, state.deny)
    };
    if deny {
        let hub = hub.clone();
        tokio::spawn(async move {
            tokio::time::sleep(Duration::from_millis(50)).await;
            let status = hub
                .client
                .get(with_query(
                    &callback,
                    &[
                        ("hub.mode", "denied"),
                        ("hub.topic", topic.as_str()),
                        ("hub.reason", "no pushes for you"),
                    ],
                ))
                .send()
                .await
                .unwrap()
                .status()
                .as_u16();
            hub.state()
                .verifications
                .push(("denied".into(), status, false));
        });
        return AxumStatus::ACCEPTED.into_response();
    }
    let challenge = format!("challenge-{}", rand::random::<u64>());
    let verify_topic = if other_topic {
        format!("{}/some-other-topic", hub.base)
    } else {
        topic.clone()
    };
    let lease_text = lease.to_string();
    let response = hub
        .client
        .get(with_query(
            &callback,
            &[
                ("hub.mode", mode.as_str()),
                ("hub.topic", verify_topic.as_str()),
                ("hub.challenge", challenge.as_str()),
                ("hub.lease_seconds", lease_text.as_str()),
            ],
        ))
        .send()
        .await
        .unwrap();
    let status = response.status().as_u16();
    let content_type = response
        .headers()
        .get(header::CONTENT_TYPE)
        .map(|v| v.to_str().unwrap().to_owned());
    let echoed = response.text().await.unwrap() == challenge;
    let mut state = hub.state();
    state.verifications.push((mode.clone(), status, echoed));
    if (200..300).contains(&status) && echoed {
        assert!(
            content_type.is_some_and(|t| t.starts_with("text/plain")),
            "the challenge comes back as plain text"
        );
        if mode == "subscribe" {
            state.subscribers.insert(
                callback,
                Subscriber {
                    secret: field("hub.secret"),
                },
            );
        } else {
            state.subscribers.remove(&callback);
        }
        AxumStatus::ACCEPTED.into_response()
    } else {
        (AxumStatus::BAD_REQUEST, "verification failed").into_response()
    }
}

/// The server with WebSub on, its callbacks under its own 127.0.0.1 address (allowed for
/// tests with private networks), and the fetcher its worker would use.
async fn start_app(db: &tidings_testkit::TestDb) -> (TestApp, Fetcher) {
    start_app_resolving(db, &[]).await
}

/// [`start_app`] with a fetcher that resolves `names` to 127.0.0.1.
async fn start_app_resolving(db: &tidings_testkit::TestDb, names: &[&str]) -> (TestApp, Fetcher) {
    let store = db.migrated().await;
    let listener = tokio::net::TcpListener::bind("127.0.0.1:0").await.unwrap();
    let base = format!("http://{}", listener.local_addr().unwrap());
    let mut worker = WorkerConfig {
        favicons: false,
        full_text_concurrency: 0,
        ..WorkerConfig::default()
    };
    worker.websub.enabled = true;
    worker.websub.base_url = Some(base.parse().unwrap());
    let fetcher = if names.is_empty() {
        crate::support::test_fetcher_with(store.clone(), true, worker)
    } else {
        let mut client = tidings_fetch::ClientConfig::default();
        client.address_policy.allow_private_networks = true;
        client.timeout = Duration::from_secs(5);
        for name in names {
            client
                .dns_overrides
                .insert((*name).to_owned(), vec!["127.0.0.1".parse().unwrap()]);
        }
        let client = tidings_fetch::GuardedClient::new(client).expect("HTTP client");
        Fetcher::new(store.clone(), client, worker)
    };
    let state = AppState::new(
        store.clone(),
        ServerConfig::new(base.parse().unwrap()),
        fetcher.clone(),
    );
    tokio::spawn(tidings_server::serve(
        listener,
        state,
        std::future::pending(),
    ));
    (TestApp { base, store }, fetcher)
}

/// Runs the subscriber job until nothing is due.
async fn run_subscriber(fetcher: &Fetcher) -> u64 {
    let job = WebSubJob::new(fetcher).expect("WebSub is on");
    drain_enrichment(Arc::new(job), 1).await.unwrap()
}

/// The titles of a feed's items the user sees.
async fn titles(app: &TestApp, client: &reqwest::Client, feed_id: i64) -> Vec<String> {
    let (status, _, body) = call(
        client,
        Method::GET,
        &app.url(&format!("/items?feed_id={feed_id}&filter=all")),
        None,
    )
    .await;
    assert_eq!(status, StatusCode::OK, "{body}");
    body["items"]
        .as_array()
        .unwrap()
        .iter()
        .map(|item| item["title"].as_str().unwrap_or_default().to_owned())
        .collect()
}

on_both_engines!(push_delivery_verification_and_unsubscription, |db| {
    let hub = Hub::start(3600).await;
    let (app, fetcher) = start_app(db).await;
    app.user("ann", false).await;
    let ann = app.signed_in("ann").await;
    let (status, _, body) = call(
        &ann,
        Method::POST,
        &app.url("/subscriptions"),
        Some(serde_json::json!({ "url": hub.feed_url() })),
    )
    .await;
    assert_eq!(status, StatusCode::CREATED, "{body}");
    let subscription_id = body["subscription"]["id"].as_i64().unwrap();
    let feed_id = body["subscription"]["feed_id"].as_i64().unwrap();

    let t = Push {
        hub: &hub,
        app: &app,
        fetcher: &fetcher,
        ann: &ann,
        feed_id,
        subscription_id,
    };
    phase_discovery_takes_the_headers_hub_and_self(&t).await;
    phase_subscribes_once_through_the_redirect_and_verified(&t).await;
    let engine = db.url().split(':').next().unwrap_or_default().to_owned();
    phase_signed_deliveries_are_stored_like_fetches(&t, &engine).await;
    phase_bad_signatures_are_dropped_and_counted(&t).await;
    let client = reqwest::Client::new();
    let callback = phase_unknown_callbacks_and_bad_input_break_nothing(&t, &client).await;
    phase_polling_goes_on_as_a_slow_safety_net(&t).await;
    phase_the_last_subscriber_leaving_unsubscribes(&t, &client, &callback).await;
});

/// What the phases of the push test share: the hub, the app and its fetcher, ann's browser,
/// and her subscription to the hub's feed.
struct Push<'a> {
    hub: &'a Hub,
    app: &'a TestApp,
    fetcher: &'a Fetcher,
    ann: &'a reqwest::Client,
    feed_id: i64,
    subscription_id: i64,
}

/// Discovery (100, 104, 200): the headers' hub and self, not the document's; push is not
/// active yet.
async fn phase_discovery_takes_the_headers_hub_and_self(t: &Push<'_>) {
    let Push {
        hub,
        app,
        ann,
        feed_id,
        subscription_id,
        ..
    } = *t;
    // Discovery (100, 104, 200): the headers' hub and self, not the document's.
    let row = app
        .store
        .websub_subscription(feed_id)
        .await
        .unwrap()
        .expect("a hub found");
    assert_eq!(
        row.hub_url.as_deref(),
        Some(format!("{}/hub-moved", hub.base).as_str())
    );
    assert_eq!(row.topic_url.as_deref(), Some(hub.topic().as_str()));
    let (_, _, body) = call(
        ann,
        Method::GET,
        &app.url(&format!("/subscriptions/{subscription_id}")),
        None,
    )
    .await;
    assert_eq!(body["subscription"]["push"]["state"], "inactive", "{body}");
    assert_eq!(body["subscription"]["push"]["enabled"], true);
}

/// The subscriber subscribes the feed once, through the hub's 308 (204), with a secret and a
/// lease; the hub verifies intent, renewal is planned, and the secret never leaves the server.
async fn phase_subscribes_once_through_the_redirect_and_verified(t: &Push<'_>) {
    let Push {
        hub,
        app,
        fetcher,
        ann,
        feed_id,
        subscription_id,
    } = *t;
    // The subscriber subscribes the feed once, through the hub's 308 (204), with a secret and
    // a lease; the hub verifies intent before it answers, and the callback confirms.
    assert_eq!(run_subscriber(fetcher).await, 1);
    {
        let state = hub.state();
        assert_eq!(
            state.wrong_hub_requests, 0,
            "the document's hub is not used"
        );
        assert_eq!(state.requests.len(), 1);
        let request = &state.requests[0];
        assert_eq!(request.mode, "subscribe");
        assert_eq!(request.topic, hub.topic());
        assert!(
            request
                .callback
                .starts_with(&format!("{}/websub/", app.base)),
            "{}",
            request.callback
        );
        assert_eq!(request.secret.as_ref().map(String::len), Some(64));
        assert_eq!(request.lease.as_deref(), Some("864000"));
        assert_eq!(state.verifications, [("subscribe".to_owned(), 200, true)]);
        assert_eq!(state.subscribers.len(), 1);
    }
    let row = app
        .store
        .websub_subscription(feed_id)
        .await
        .unwrap()
        .unwrap();
    let now = chrono::Utc::now().timestamp();
    assert_eq!(row.state, WebSubState::Active);
    assert_eq!(row.pending_mode, None);
    assert!((row.active_until.unwrap() - (now + 3600)).abs() <= 5);
    assert_eq!(
        row.next_action_at,
        row.active_until.unwrap() - 720,
        "renewal a fifth of the lease before its end"
    );
    assert_eq!(run_subscriber(fetcher).await, 0, "nothing more to do");
    let (_, _, body) = call(
        ann,
        Method::GET,
        &app.url(&format!("/subscriptions/{subscription_id}")),
        None,
    )
    .await;
    let push = &body["subscription"]["push"];
    assert_eq!(push["state"], "active", "{body}");
    assert!(push["active_until"].is_string());
    assert_eq!(push["topic_url"], hub.topic());
    assert!(
        push.get("secret").is_none(),
        "the secret never leaves the server"
    );
}

/// 300: signed distributions (sha1, sha256, sha512) are answered 2xx and stored like a fetched
/// body: items, search index, raw body. `engine` names the database in the timing printed.
async fn phase_signed_deliveries_are_stored_like_fetches(t: &Push<'_>, engine: &str) {
    let Push {
        hub,
        app,
        ann,
        feed_id,
        ..
    } = *t;
    // 300: a signed distribution is answered 2xx and stored like a fetched body (sha1,
    // sha256 and sha512 alike): items, search index, raw body.
    // The callback answers once the push is stored: the publish's time is the delay from the
    // hub's POST to the item in the reader.
    let started = std::time::Instant::now();
    assert_eq!(hub.publish("second", Signing::Valid("sha256")).await, [202]);
    eprintln!(
        "a signed push stored in {} ms ({})",
        started.elapsed().as_millis(),
        engine
    );
    assert_eq!(hub.publish("third", Signing::Valid("sha1")).await, [202]);
    assert_eq!(hub.publish("fourth", Signing::Valid("sha512")).await, [202]);
    let seen = titles(app, ann, feed_id).await;
    for title in ["Post second", "Post third", "Post fourth", "Post first"] {
        assert!(seen.iter().any(|t| t == title), "{title} in {seen:?}");
    }
    let (_, _, found) = call(
        ann,
        Method::GET,
        &app.url(&format!("/items?feed_id={feed_id}&filter=all&q=fourth")),
        None,
    )
    .await;
    assert_eq!(found["items"].as_array().unwrap().len(), 1, "{found}");
    let pushed = atom(&hub.state());
    assert_eq!(
        app.store
            .feed_body_sha256(feed_id)
            .await
            .unwrap()
            .as_deref(),
        Some(tidings_worker::body::sha256_hex(pushed.as_bytes()).as_str()),
        "the pushed body is kept as the feed's raw body"
    );
}

/// 301, 302: an invalid signature is acknowledged but dropped, a missing one refused; both
/// counted, in the store and in /metrics.
async fn phase_bad_signatures_are_dropped_and_counted(t: &Push<'_>) {
    let Push {
        hub,
        app,
        fetcher,
        ann,
        feed_id,
        ..
    } = *t;
    // 301: an invalid signature is acknowledged (it tells a forger nothing) but dropped;
    // 302: a missing one is refused. Neither is stored.
    assert_eq!(hub.publish("forged", Signing::Invalid).await, [202]);
    assert_eq!(hub.publish("unsigned", Signing::Omit).await, [403]);
    let seen = titles(app, ann, feed_id).await;
    assert!(
        !seen
            .iter()
            .any(|t| t == "Post forged" || t == "Post unsigned"),
        "{seen:?}"
    );
    let row = app
        .store
        .websub_subscription(feed_id)
        .await
        .unwrap()
        .unwrap();
    assert_eq!((row.pushes, row.rejected_pushes), (3, 2));
    let metrics = fetcher.metrics().snapshot();
    assert_eq!(metrics.websub_pushes.get("stored"), Some(&3));
    assert_eq!(metrics.websub_pushes.get("bad_signature"), Some(&1));
    assert_eq!(metrics.websub_pushes.get("missing_signature"), Some(&1));
    let scraped = reqwest::get(format!("{}/metrics", app.base))
        .await
        .unwrap()
        .text()
        .await
        .unwrap();
    for line in [
        "tidings_websub_pushes_total{outcome=\"stored\"} 3",
        "tidings_websub_pushes_total{outcome=\"bad_signature\"} 1",
        "tidings_websub_requests_total{outcome=\"subscribe_accepted\"} 1",
        "tidings_websub_verifications_total{outcome=\"confirmed\"} 1",
    ] {
        assert!(
            scraped.lines().any(|l| l == line),
            "{line} in /metrics:\n{scraped}"
        );
    }
}

/// Unknown callbacks: a push is told the subscription is gone, a verification is refused;
/// nothing pending is verified, and bad input never breaks the callback. Returns the callback.
async fn phase_unknown_callbacks_and_bad_input_break_nothing(
    t: &Push<'_>,
    client: &reqwest::Client,
) -> String {
    let Push {
        hub, app, feed_id, ..
    } = *t;
    // Unknown callbacks: a push is told the subscription is gone, a verification is refused;
    // bad input never breaks the callback.
    let unknown = format!("{}/websub/{}", app.base, "0".repeat(64));
    let status = client
        .post(&unknown)
        .body("<feed/>")
        .send()
        .await
        .unwrap()
        .status();
    assert_eq!(status, StatusCode::GONE);
    let status = client
        .get(with_query(
            &unknown,
            &[
                ("hub.mode", "subscribe"),
                ("hub.topic", &hub.topic()),
                ("hub.challenge", "x"),
            ],
        ))
        .send()
        .await
        .unwrap()
        .status();
    assert_eq!(status, StatusCode::NOT_FOUND);
    let callback = hub.state().requests[0].callback.clone();
    let topic = hub.topic();
    for query in [
        vec![("hub.mode", "subscribe"), ("hub.challenge", "x")],
        vec![
            ("hub.mode", "unsubscribe"),
            ("hub.topic", topic.as_str()),
            ("hub.challenge", "x"),
        ],
        vec![
            ("hub.mode", "subscribe"),
            ("hub.topic", topic.as_str()),
            ("hub.challenge", "x"),
        ],
        vec![("hub.mode", "bogus"), ("hub.topic", topic.as_str())],
        vec![
            ("hub.mode", "denied"),
            ("hub.topic", "https://elsewhere.example/"),
        ],
    ] {
        let response = client
            .get(with_query(&callback, &query))
            .send()
            .await
            .unwrap();
        assert_eq!(
            response.status(),
            StatusCode::NOT_FOUND,
            "nothing pending for {query:?}"
        );
    }
    let huge = vec![b'x'; 6 * 1024 * 1024];
    let status = client
        .post(&callback)
        .body(huge)
        .send()
        .await
        .unwrap()
        .status();
    assert_eq!(status, StatusCode::PAYLOAD_TOO_LARGE);
    for junk in [&b"\0\xff<not xml"[..], b"", b"{\"items\": 5}"] {
        let status = client
            .post(&callback)
            .header("x-hub-signature", "sha256=00")
            .body(junk.to_vec())
            .send()
            .await
            .unwrap()
            .status();
        assert_eq!(status, StatusCode::ACCEPTED);
    }
    assert_eq!(
        app.store
            .websub_subscription(feed_id)
            .await
            .unwrap()
            .unwrap()
            .state,
        WebSubState::Active,
        "still subscribed after the noise"
    );

    callback
}

/// Polling goes on as a slow safety net while the hub pushes.
async fn phase_polling_goes_on_as_a_slow_safety_net(t: &Push<'_>) {
    let Push {
        fetcher, feed_id, ..
    } = *t;
    // Polling goes on as a slow safety net while the hub pushes.
    let report = fetcher.refresh_feed(feed_id).await.unwrap();
    let now = chrono::Utc::now().timestamp();
    assert!(
        report.next_check_at.unwrap() >= now + 6 * 3600 - 60,
        "next poll {:?} at least six hours away",
        report.next_check_at
    );
}

/// The last subscriber leaves: the feed is unsubscribed at its hub, which verifies, and a late
/// delivery to the old callback is answered 410.
async fn phase_the_last_subscriber_leaving_unsubscribes(
    t: &Push<'_>,
    client: &reqwest::Client,
    callback: &str,
) {
    let Push {
        hub,
        app,
        fetcher,
        ann,
        feed_id,
        subscription_id,
    } = *t;
    // The last subscriber leaves: the feed is unsubscribed at its hub, which verifies.
    let (status, _, _) = call(
        ann,
        Method::DELETE,
        &app.url(&format!("/subscriptions/{subscription_id}")),
        None,
    )
    .await;
    assert_eq!(status, StatusCode::NO_CONTENT);
    assert_eq!(run_subscriber(fetcher).await, 1);
    {
        let state = hub.state();
        let last = state.requests.last().unwrap();
        assert_eq!(last.mode, "unsubscribe");
        assert_eq!(last.callback, callback, "the same callback is unsubscribed");
        assert_eq!(
            state.verifications.last().unwrap(),
            &("unsubscribe".to_owned(), 200, true)
        );
        assert!(state.subscribers.is_empty());
    }
    let row = app
        .store
        .websub_subscription(feed_id)
        .await
        .unwrap()
        .unwrap();
    assert_eq!(row.state, WebSubState::Inactive);
    assert_eq!(row.pending_mode, None);
    assert_eq!(run_subscriber(fetcher).await, 0);
    // A late delivery to the old callback is answered 410, so the hub stops.
    let status = client
        .post(callback)
        .header("x-hub-signature", sign("sha256", &row.secret, "<feed/>"))
        .body("<feed/>")
        .send()
        .await
        .unwrap()
        .status();
    assert_eq!(status, StatusCode::GONE);
}

on_both_engines!(renewal_before_the_lease_ends_refusal_and_denial, |db| {
    // A hub granting 10-second leases: renewal comes two seconds before the end.
    let hub = Hub::start(10).await;
    let (app, fetcher) = start_app(db).await;
    let ann_id = app.user("ann", false).await;
    let moved = format!("{}/moved-feed", hub.base);
    let (_, feed_id) = tidings_testkit::follow(&app.store, ann_id, &moved).await;
    fetcher.refresh_feed(feed_id).await.unwrap();
    let row = app
        .store
        .websub_subscription(feed_id)
        .await
        .unwrap()
        .unwrap();
    assert_eq!(row.topic_url.as_deref(), Some(hub.topic().as_str()));

    // 205: the hub verifies with another topic; the callback refuses with 404, and the
    // request stays pending (the subscriber does not believe it subscribed).
    hub.state().verify_other_topic = true;
    assert_eq!(run_subscriber(&fetcher).await, 1);
    assert_eq!(
        hub.state().verifications,
        [("subscribe".to_owned(), 404, false)]
    );
    let row = app
        .store
        .websub_subscription(feed_id)
        .await
        .unwrap()
        .unwrap();
    assert_eq!(row.state, WebSubState::Inactive);
    assert!(
        row.last_error.as_deref().unwrap().contains("HTTP 400"),
        "{row:?}"
    );
    assert_eq!(row.failures, 1);

    // The retry (its back-off skipped here) subscribes.
    hub.state().verify_other_topic = false;
    // A manual refresh retries at once, back-off or not.
    fetcher.refresh_feed(feed_id).await.unwrap();
    assert_eq!(run_subscriber(&fetcher).await, 1);
    let first = app
        .store
        .websub_subscription(feed_id)
        .await
        .unwrap()
        .unwrap();
    assert_eq!(first.state, WebSubState::Active);
    let first_until = first.active_until.unwrap();
    assert_eq!(
        first.next_action_at,
        first_until - 2,
        "renewal two seconds before the end"
    );

    // Renewal: due before the lease ends, the same callback and secret, a new lease.
    while chrono::Utc::now().timestamp() < first.next_action_at {
        tokio::time::sleep(Duration::from_millis(100)).await;
    }
    assert_eq!(run_subscriber(&fetcher).await, 1);
    let renewed_at = chrono::Utc::now().timestamp();
    assert!(renewed_at < first_until, "renewed before the lease ended");
    let renewed = app
        .store
        .websub_subscription(feed_id)
        .await
        .unwrap()
        .unwrap();
    assert_eq!(renewed.state, WebSubState::Active);
    assert!(renewed.active_until.unwrap() > first_until);
    {
        let state = hub.state();
        let subscribes: Vec<&HubRequest> = state
            .requests
            .iter()
            .filter(|r| r.mode == "subscribe")
            .collect();
        assert_eq!(
            subscribes.len(),
            3,
            "the refused one, the first and the renewal"
        );
        assert_eq!(subscribes[1].callback, subscribes[2].callback);
        assert_eq!(subscribes[1].secret, subscribes[2].secret);
    }

    // Denial: the hub refuses a later renewal; the feed shows it and is not asked again soon.
    hub.state().deny = true;
    fetcher.refresh_feed(feed_id).await.unwrap();
    // Active, not due for renewal yet: the refresh made it due, and the job waits.
    assert_eq!(run_subscriber(&fetcher).await, 1);
    assert_eq!(hub.state().requests.len(), 3, "nothing sent");
    // At the renewal, the hub denies.
    let row = app
        .store
        .websub_subscription(feed_id)
        .await
        .unwrap()
        .unwrap();
    while chrono::Utc::now().timestamp() < row.next_action_at {
        tokio::time::sleep(Duration::from_millis(100)).await;
    }
    assert_eq!(run_subscriber(&fetcher).await, 1);
    let mut denied = None;
    for _ in 0..50 {
        let row = app
            .store
            .websub_subscription(feed_id)
            .await
            .unwrap()
            .unwrap();
        if row.state == WebSubState::Denied {
            denied = Some(row);
            break;
        }
        tokio::time::sleep(Duration::from_millis(100)).await;
    }
    let denied = denied.expect("the denial arrived");
    assert_eq!(denied.denied_reason.as_deref(), Some("no pushes for you"));
    assert_eq!(denied.pending_mode, None::<WebSubMode>);
    assert!(denied.next_action_at > chrono::Utc::now().timestamp() + 86_400);
    assert_eq!(
        hub.state().verifications.last().unwrap(),
        &("denied".to_owned(), 200, false)
    );
    let subscription_id = app
        .store
        .list_subscriptions(ann_id)
        .await
        .unwrap()
        .first()
        .unwrap()
        .id;
    let ann = app.signed_in("ann").await;
    let (_, _, body) = call(
        &ann,
        Method::GET,
        &app.url(&format!("/subscriptions/{subscription_id}")),
        None,
    )
    .await;
    assert_eq!(body["subscription"]["push"]["state"], "denied", "{body}");
    assert_eq!(
        body["subscription"]["push"]["denied_reason"],
        "no pushes for you"
    );
    assert_eq!(run_subscriber(&fetcher).await, 0, "a denied feed rests");
});

on_both_engines!(a_hubs_endless_lease_is_clamped, |db| {
    // A hub once granted i64::MAX seconds; tidings stored it as it came.
    let hub = Hub::start(i64::MAX).await;
    let (app, fetcher) = start_app(db).await;
    let ann_id = app.user("ann", false).await;
    let (_, feed_id) = tidings_testkit::follow(&app.store, ann_id, &hub.feed_url()).await;
    fetcher.refresh_feed(feed_id).await.unwrap();
    assert_eq!(run_subscriber(&fetcher).await, 1);
    let now = chrono::Utc::now().timestamp();
    let row = app
        .store
        .websub_subscription(feed_id)
        .await
        .unwrap()
        .unwrap();
    assert_eq!(row.state, WebSubState::Active, "{row:?}");
    assert_eq!(
        row.lease_seconds,
        Some(tidings_worker::websub::MAX_LEASE_SECONDS)
    );
    let until = row.active_until.unwrap();
    assert!(until <= now + tidings_worker::websub::MAX_LEASE_SECONDS + 5);
    assert!(
        row.next_action_at < until,
        "renewed before it ends: {row:?}"
    );
});

on_both_engines!(an_http_hub_never_gets_the_secret, |db| {
    // A hub at a plain http:// address that is not loopback (a name, here mapped to
    // 127.0.0.1 for the test): the secret would cross the network in clear text. tidings does
    // not subscribe, says why, and polls the feed.
    let hub = Hub::start_as(3600, Some("hub.example")).await;
    let (app, fetcher) = start_app_resolving(db, &["hub.example"]).await;
    let ann_id = app.user("ann", false).await;
    let (_, feed_id) = tidings_testkit::follow(&app.store, ann_id, &hub.feed_url()).await;
    fetcher.refresh_feed(feed_id).await.unwrap();
    let row = app
        .store
        .websub_subscription(feed_id)
        .await
        .unwrap()
        .expect("the hub was discovered");
    assert!(
        row.hub_url
            .as_deref()
            .unwrap()
            .starts_with("http://hub.example:")
    );
    run_subscriber(&fetcher).await;
    {
        let state = hub.state();
        assert!(
            state
                .requests
                .iter()
                .all(|request| request.secret.is_none()),
            "a secret went to an http:// hub: {:?}",
            state.requests
        );
    }
    let row = app
        .store
        .websub_subscription(feed_id)
        .await
        .unwrap()
        .unwrap();
    assert_ne!(row.state, WebSubState::Active);
    let error = row.last_error.unwrap_or_default();
    assert!(error.contains("not https"), "{error}");
    assert!(row.next_action_at > chrono::Utc::now().timestamp() + 24 * 3600);
});
