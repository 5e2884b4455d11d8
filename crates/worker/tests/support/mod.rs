#![allow(dead_code)] // Each test binary uses a different part of this module.

//! Real HTTP servers on loopback for the worker's tests, counting requests per path, and
//! helpers to build fetchers and feeds.

use std::collections::HashMap;
use std::net::SocketAddr;
use std::sync::{Arc, Mutex};
use std::time::Duration;

use axum::Router;
use axum::extract::Request;
use axum::middleware::Next;
use tidings_fetch::{AddressPolicy, ClientConfig, GuardedClient};
use tidings_store::{NewSubscription, NewUser, Store};
use tidings_worker::{Fetcher, WorkerConfig};

/// A running server; it stops with the test's runtime.
pub struct TestServer {
    pub addr: SocketAddr,
    hits: Arc<Mutex<HashMap<String, usize>>>,
    headers: Arc<Mutex<Vec<axum::http::HeaderMap>>>,
}

impl TestServer {
    /// Serves `router` on `ip`:ephemeral, counting each request by path.
    pub async fn start_on(ip: &str, router: Router) -> TestServer {
        let listener = tokio::net::TcpListener::bind((ip, 0)).await.expect("bind");
        let addr = listener.local_addr().unwrap();
        let hits: Arc<Mutex<HashMap<String, usize>>> = Arc::default();
        let headers: Arc<Mutex<Vec<axum::http::HeaderMap>>> = Arc::default();
        let (count, record) = (Arc::clone(&hits), Arc::clone(&headers));
        let router = router.layer(axum::middleware::from_fn(
            move |request: Request, next: Next| {
                let (count, record) = (Arc::clone(&count), Arc::clone(&record));
                async move {
                    *count
                        .lock()
                        .unwrap()
                        .entry(request.uri().path().to_owned())
                        .or_insert(0) += 1;
                    record.lock().unwrap().push(request.headers().clone());
                    next.run(request).await
                }
            },
        ));
        tokio::spawn(async move {
            axum::serve(listener, router).await.unwrap();
        });
        TestServer {
            addr,
            hits,
            headers,
        }
    }

    /// Serves `router` on 127.0.0.1.
    pub async fn start(router: Router) -> TestServer {
        TestServer::start_on("127.0.0.1", router).await
    }

    /// Requests to `path` so far.
    pub fn hits(&self, path: &str) -> usize {
        self.hits.lock().unwrap().get(path).copied().unwrap_or(0)
    }

    /// Requests to any path so far.
    pub fn total_hits(&self) -> usize {
        self.hits.lock().unwrap().values().sum()
    }

    /// Requests per path.
    pub fn hits_by_path(&self) -> HashMap<String, usize> {
        self.hits.lock().unwrap().clone()
    }

    /// The headers of the last request.
    pub fn last_headers(&self) -> axum::http::HeaderMap {
        self.headers
            .lock()
            .unwrap()
            .last()
            .cloned()
            .expect("no request yet")
    }

    /// `http://ADDR{path}`.
    pub fn url(&self, path: &str) -> String {
        format!("http://{}{path}", self.addr)
    }
}

/// A client that may reach loopback (the tests' servers) with a short timeout.
pub fn local_client(timeout: Duration) -> GuardedClient {
    GuardedClient::new(ClientConfig {
        timeout,
        address_policy: AddressPolicy {
            allow_private_networks: true,
            ..AddressPolicy::default()
        },
        ..ClientConfig::default()
    })
    .unwrap()
}

/// A fetcher on `store` reaching loopback, favicons off unless the test wants them.
pub fn fetcher(store: &Store) -> Fetcher {
    fetcher_with(store, local_client(Duration::from_secs(5)), |_| {})
}

/// A fetcher with a given client and config changes.
pub fn fetcher_with(
    store: &Store,
    client: GuardedClient,
    change: impl FnOnce(&mut WorkerConfig),
) -> Fetcher {
    let mut config = WorkerConfig {
        favicons: false,
        ..WorkerConfig::default()
    };
    change(&mut config);
    Fetcher::new(store.clone(), client, config)
}

/// A user named `name`.
pub async fn user(store: &Store, name: &str) -> i64 {
    store
        .create_user(&NewUser {
            username: name.into(),
            password_hash: None,
            is_admin: false,
        })
        .await
        .unwrap()
        .id
}

/// Subscribes `user_id` to `url`; returns the feed id.
pub async fn follow(store: &Store, user_id: i64, url: &str) -> i64 {
    store
        .subscribe(
            user_id,
            &NewSubscription {
                feed_url: url.into(),
                ..Default::default()
            },
        )
        .await
        .unwrap()
        .feed_id
}

/// An RSS 2.0 document with `items` items whose guids carry `tag`.
pub fn rss(tag: &str, items: usize) -> String {
    let mut out = format!(
        "<?xml version=\"1.0\" encoding=\"UTF-8\"?><rss version=\"2.0\"><channel>\
         <title>Feed {tag}</title><link>https://site.example/</link>"
    );
    // Recent dates, an hour apart, newest first.
    let now = chrono::Utc::now();
    for i in 0..items {
        let published = (now - chrono::Duration::hours(i as i64 + 1)).to_rfc2822();
        out.push_str(&format!(
            "<item><title>Item {i} {tag}</title><link>https://site.example/{tag}/{i}</link>\
             <guid>{tag}-{i}</guid><pubDate>{published}</pubDate>\
             <description>&lt;p&gt;Body {i}&lt;/p&gt;&lt;script&gt;alert(1)&lt;/script&gt;</description></item>"
        ));
    }
    out.push_str("</channel></rss>");
    out
}

/// Polls `condition` every 20 ms until it holds, panicking after `limit`.
pub async fn wait_until<F, Fut>(limit: Duration, what: &str, mut condition: F)
where
    F: FnMut() -> Fut,
    Fut: std::future::Future<Output = bool>,
{
    let deadline = tokio::time::Instant::now() + limit;
    loop {
        if condition().await {
            return;
        }
        assert!(
            tokio::time::Instant::now() < deadline,
            "timed out waiting for {what}"
        );
        tokio::time::sleep(Duration::from_millis(20)).await;
    }
}
