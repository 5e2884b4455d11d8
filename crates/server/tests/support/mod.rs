//! What the server's end-to-end tests share: a real server on 127.0.0.1 over a test database,
//! clients, and stand-ins for the services it calls. The local feed server and the feeds are
//! testkit's, re-exported here because nearly every test uses them with the rest.

use std::sync::{Arc, Mutex};

use axum::http::StatusCode as AxumStatus;
use reqwest::{Client, Method, StatusCode};
use serde_json::{Value, json};
use tidings_server::{AppState, ServerConfig};
use tidings_store::{NewUser, Store};

use tidings_testkit::TestDb;
pub use tidings_testkit::TestServer;
pub use tidings_testkit::feeds::{rss, rss_dated, rss_items};

/// The password of every test user.
pub const PASSWORD: &str = "correct horse battery staple";

/// A fetcher for tests: private networks allowed, since test feeds are served on 127.0.0.1.
pub fn test_fetcher(store: Store, allow_private: bool) -> tidings_worker::Fetcher {
    test_fetcher_with(
        store,
        allow_private,
        tidings_worker::WorkerConfig::default(),
    )
}

/// [`test_fetcher`] with the worker's settings.
pub fn test_fetcher_with(
    store: Store,
    allow_private: bool,
    worker: tidings_worker::WorkerConfig,
) -> tidings_worker::Fetcher {
    let _ = rustls::crypto::ring::default_provider().install_default();
    let mut client = tidings_fetch::ClientConfig::default();
    client.address_policy.allow_private_networks = allow_private;
    client.timeout = std::time::Duration::from_secs(5);
    tidings_worker::Fetcher::new(
        store,
        tidings_fetch::GuardedClient::new(client).expect("HTTP client"),
        worker,
    )
}

/// A running server.
pub struct TestApp {
    /// `http://127.0.0.1:PORT`.
    pub base: String,
    /// The server's database.
    pub store: Store,
}

impl TestApp {
    /// The user's unread items on the server, as the counts give them.
    pub async fn unread_total(&self, user: i64) -> i64 {
        let counts = self.store.unread_counts(user).await.unwrap();
        counts.subscriptions.iter().map(|c| c.unread).sum()
    }

    /// Waits until the user's unread items on the server are `expected` (a page sends its
    /// marks in batches).
    pub async fn wait_unread(&self, user: i64, expected: i64) {
        for _ in 0..100 {
            if self.unread_total(user).await == expected {
                return;
            }
            tokio::time::sleep(std::time::Duration::from_millis(100)).await;
        }
        assert_eq!(self.unread_total(user).await, expected);
    }

    /// A server with the default configuration, private networks allowed for fetching.
    pub async fn start(db: &TestDb) -> TestApp {
        TestApp::start_with(db, true, |_| {}).await
    }

    /// A server with an adjusted configuration.
    pub async fn start_with(
        db: &TestDb,
        allow_private: bool,
        adjust: impl FnOnce(&mut ServerConfig),
    ) -> TestApp {
        TestApp::start_with_worker(db, allow_private, adjust, Default::default()).await
    }

    /// A server with an adjusted configuration and the worker's settings (its fetcher's).
    pub async fn start_with_worker(
        db: &TestDb,
        allow_private: bool,
        adjust: impl FnOnce(&mut ServerConfig),
        worker: tidings_worker::WorkerConfig,
    ) -> TestApp {
        let store = db.migrated().await;
        let listener = tokio::net::TcpListener::bind("127.0.0.1:0").await.unwrap();
        let address = listener.local_addr().unwrap();
        let base = format!("http://{address}");
        let mut config = ServerConfig::new(base.parse().unwrap());
        adjust(&mut config);
        let fetcher = test_fetcher_with(store.clone(), allow_private, worker);
        let state = AppState::new(store.clone(), config, fetcher);
        tokio::spawn(tidings_server::serve(
            listener,
            state,
            std::future::pending(),
        ));
        TestApp { base, store }
    }

    /// The URL of an API path.
    pub fn url(&self, path: &str) -> String {
        format!("{}/api/v1{path}", self.base)
    }

    /// A client with its own cookie jar, like one browser: it sends this server's `Origin`
    /// on every request, as browsers do on the writes the CSRF check looks at.
    pub fn browser(&self) -> Client {
        let mut headers = reqwest::header::HeaderMap::new();
        headers.insert(reqwest::header::ORIGIN, self.base.parse().unwrap());
        Client::builder()
            .cookie_store(true)
            .default_headers(headers)
            .build()
            .unwrap()
    }

    /// Subscribes `user` to `feed_url` in the store (nothing is fetched) with items already
    /// there, titled `titles`, newest first an hour apart, each with a line of text. Answers
    /// the feed's id.
    pub async fn feed_with_items(&self, user: i64, feed_url: &str, titles: &[&str]) -> i64 {
        let (_, feed) = tidings_testkit::follow(&self.store, user, feed_url).await;
        let now = tidings_store::unix_now();
        let items: Vec<tidings_store::NewItem> = titles
            .iter()
            .enumerate()
            .map(|(n, title)| tidings_store::NewItem {
                guid: Some(format!("item-{n}")),
                title: Some((*title).into()),
                content: Some("<p>text</p>".into()),
                published: Some(now - 3600 * (n as i64 + 1)),
                ..tidings_store::NewItem::default()
            })
            .collect();
        self.store.upsert_items(feed, &items, now).await.unwrap();
        feed
    }

    /// Creates a user with [`PASSWORD`] directly in the store; returns the id.
    pub async fn user(&self, name: &str, admin: bool) -> i64 {
        let hash = tidings_server::password::hash_password(PASSWORD).unwrap();
        self.store
            .create_user(&NewUser {
                username: name.into(),
                password_hash: Some(hash),
                is_admin: admin,
            })
            .await
            .unwrap()
            .id
    }

    /// A browser signed in as `name`.
    pub async fn signed_in(&self, name: &str) -> Client {
        let client = self.browser();
        let response = client
            .post(self.url("/session"))
            .json(&json!({"username": name, "password": PASSWORD}))
            .send()
            .await
            .unwrap();
        assert_eq!(response.status(), StatusCode::OK, "sign in {name}");
        client
    }
}

/// Sends a request, returning the status, headers and JSON body (`Null` when empty).
pub async fn call(
    client: &Client,
    method: Method,
    url: &str,
    body: Option<Value>,
) -> (StatusCode, reqwest::header::HeaderMap, Value) {
    let mut request = client.request(method, url);
    if let Some(body) = body {
        request = request.json(&body);
    }
    let response = request.send().await.unwrap();
    let status = response.status();
    let headers = response.headers().clone();
    let text = response.text().await.unwrap();
    let value = if text.is_empty() {
        Value::Null
    } else {
        serde_json::from_str(&text).unwrap_or_else(|_| panic!("not JSON: {text}"))
    };
    (status, headers, value)
}

/// Uploads an OPML file to `opml_url` (`…/api/v1/opml`) as `file_name` (when given), checks
/// the 202 that starts the import, and waits (up to a minute) until the import is no longer
/// running; answers its final state (`GET …/opml/imports/{id}`).
pub async fn import_opml_and_wait(
    client: &Client,
    opml_url: &str,
    file_name: Option<&str>,
    opml: String,
) -> Value {
    let mut request = client
        .post(opml_url)
        .header("content-type", "text/x-opml")
        .body(opml);
    if let Some(name) = file_name {
        request = request.header("x-file-name", name);
    }
    let response = request.send().await.unwrap();
    assert_eq!(response.status(), StatusCode::ACCEPTED);
    let started: Value = response.json().await.unwrap();
    assert_eq!(started["status"], "running", "{started}");
    let id = started["import_id"].as_i64().expect("an import id");
    wait_for_import(client, &format!("{opml_url}/imports/{id}")).await
}

/// Polls an import (`…/opml/imports/{id}`) until it is no longer running (up to three
/// minutes: a guard against a hang, not a measure; a 100-feed import checked only 66 feeds in
/// a minute with CI at load 28); answers its final state.
pub async fn wait_for_import(client: &Client, import_url: &str) -> Value {
    let deadline = std::time::Instant::now() + std::time::Duration::from_secs(180);
    loop {
        let (status, _, job) = call(client, Method::GET, import_url, None).await;
        assert_eq!(status, StatusCode::OK, "{job}");
        if job["status"] != "running" {
            return job;
        }
        assert!(
            std::time::Instant::now() < deadline,
            "the import is still running: {job}"
        );
        // Twice a second: well within the per-user rate limit (120 requests a minute).
        tokio::time::sleep(std::time::Duration::from_millis(500)).await;
    }
}

/// Checks the shape of an API error body.
pub fn assert_error(body: &Value, code: &str, category: &str) {
    assert_eq!(body["error"]["code"], code, "{body}");
    assert_eq!(body["error"]["category"], category, "{body}");
    assert!(
        body["error"]["message"]
            .as_str()
            .is_some_and(|m| !m.is_empty()),
        "{body}"
    );
    assert!(
        body["error"]["action"]
            .as_str()
            .is_some_and(|m| !m.is_empty()),
        "{body}"
    );
}

/// A Discord stand-in on 127.0.0.1 for notification tests (the server's Discord base is set to
/// [`DiscordStandIn::start`]'s answer): records each message, answers 204, or 404 ("Unknown
/// Webhook") once `gone` is set.
#[derive(Clone, Default)]
pub struct DiscordStandIn {
    /// Each message's body, in order.
    pub received: Arc<Mutex<Vec<Value>>>,
    /// Each message's webhook, as `{id}/{token}`.
    pub webhooks: Arc<Mutex<Vec<String>>>,
    /// Whether the webhooks are deleted (404) from now on.
    pub gone: Arc<Mutex<bool>>,
}

impl DiscordStandIn {
    /// Starts serving; answers its base URL.
    pub async fn start(&self) -> String {
        let discord = self.clone();
        let router = axum::Router::new().route(
            "/api/webhooks/{id}/{token}",
            axum::routing::post(
                move |axum::extract::Path((id, token)): axum::extract::Path<(String, String)>,
                      body: String| {
                    let discord = discord.clone();
                    async move {
                        discord
                            .webhooks
                            .lock()
                            .unwrap()
                            .push(format!("{id}/{token}"));
                        discord
                            .received
                            .lock()
                            .unwrap()
                            .push(serde_json::from_str(&body).unwrap());
                        if *discord.gone.lock().unwrap() {
                            (AxumStatus::NOT_FOUND, r#"{"message": "Unknown Webhook"}"#)
                        } else {
                            (AxumStatus::NO_CONTENT, "")
                        }
                    }
                },
            ),
        );
        let listener = tokio::net::TcpListener::bind("127.0.0.1:0").await.unwrap();
        let address = listener.local_addr().unwrap();
        tokio::spawn(async move { axum::serve(listener, router).await.unwrap() });
        format!("http://{address}")
    }
}

/// A valid 1×1 transparent PNG, for image tests.
pub const PNG_1X1: &[u8] = &[
    0x89, 0x50, 0x4e, 0x47, 0x0d, 0x0a, 0x1a, 0x0a, 0x00, 0x00, 0x00, 0x0d, 0x49, 0x48, 0x44, 0x52,
    0x00, 0x00, 0x00, 0x01, 0x00, 0x00, 0x00, 0x01, 0x08, 0x06, 0x00, 0x00, 0x00, 0x1f, 0x15, 0xc4,
    0x89, 0x00, 0x00, 0x00, 0x0b, 0x49, 0x44, 0x41, 0x54, 0x78, 0x9c, 0x63, 0x60, 0x00, 0x02, 0x00,
    0x00, 0x05, 0x00, 0x01, 0x7a, 0x5e, 0xab, 0x3f, 0x00, 0x00, 0x00, 0x00, 0x49, 0x45, 0x4e, 0x44,
    0xae, 0x42, 0x60, 0x82,
];

/// Signs `user` in to the Google Reader API under `base` (the server's root or
/// `/api/greader.php`) with an API key: the `Auth` token of ClientLogin's answer.
pub async fn greader_auth(base: &str, user: &str, key: &str) -> String {
    let login = Client::new()
        .post(format!("{base}/accounts/ClientLogin"))
        .form(&[("Email", user), ("Passwd", key)])
        .send()
        .await
        .unwrap()
        .text()
        .await
        .unwrap();
    login
        .lines()
        .find_map(|l| l.strip_prefix("Auth="))
        .unwrap_or_else(|| panic!("no Auth line in {login}"))
        .to_string()
}
