//! One local HTTP server for every test that fetches: a real socket on loopback (an ephemeral
//! port unless asked), which counts the requests it sees per path and keeps their headers.
//! It answers from a table of fixed documents ([`TestServer::serve`]) first, then from the
//! test's own router, so a test can serve feeds without writing handlers, or write handlers
//! when the answer must change.

use std::collections::HashMap;
use std::net::SocketAddr;
use std::sync::{Arc, Mutex};

use axum::Router;
use axum::extract::Request;
use axum::http::{HeaderMap, StatusCode, header};
use axum::middleware::Next;
use axum::response::{IntoResponse, Response};

/// One document of the fixed table.
#[derive(Clone)]
struct Served {
    status: StatusCode,
    content_type: &'static str,
    body: Vec<u8>,
}

/// What the server saw and what it serves, shared with the handler.
#[derive(Default)]
struct Shared {
    hits: Mutex<HashMap<String, usize>>,
    headers: Mutex<Vec<HeaderMap>>,
    documents: Mutex<HashMap<String, Served>>,
}

/// A running server. It stops when the test's runtime ends.
pub struct TestServer {
    /// Where it listens.
    pub addr: SocketAddr,
    /// `http://ADDR`, without a trailing slash.
    pub base: String,
    shared: Arc<Shared>,
}

impl TestServer {
    /// Serves `router` on 127.0.0.1, on an ephemeral port.
    pub async fn start(router: Router) -> TestServer {
        TestServer::start_on("127.0.0.1", router).await
    }

    /// Serves only what [`TestServer::serve`] adds (404 for anything else).
    pub async fn start_empty() -> TestServer {
        TestServer::start(Router::new()).await
    }

    /// Serves `router` on `ip`, on an ephemeral port.
    pub async fn start_on(ip: &str, router: Router) -> TestServer {
        TestServer::start_on_port(ip, 0, router)
            .await
            .expect("bind an ephemeral port")
    }

    /// Serves `router` on `ip`:`port`, or `None` when the port is taken.
    pub async fn start_on_port(ip: &str, port: u16, router: Router) -> Option<TestServer> {
        let listener = tokio::net::TcpListener::bind((ip, port)).await.ok()?;
        let addr = listener.local_addr().ok()?;
        let shared = Arc::new(Shared::default());
        let seen = Arc::clone(&shared);
        let router = router.layer(axum::middleware::from_fn(
            move |request: Request, next: Next| {
                let seen = Arc::clone(&seen);
                async move { answer(&seen, request, next).await }
            },
        ));
        tokio::spawn(async move { axum::serve(listener, router).await });
        Some(TestServer {
            addr,
            base: format!("http://{addr}"),
            shared,
        })
    }

    /// Serves `body` at `path` with `status` and `content_type`, replacing what was there.
    pub fn serve(
        &self,
        path: &str,
        status: u16,
        content_type: &'static str,
        body: impl Into<Vec<u8>>,
    ) {
        let served = Served {
            status: StatusCode::from_u16(status).expect("an HTTP status"),
            content_type,
            body: body.into(),
        };
        lock(&self.shared.documents).insert(path.to_owned(), served);
    }

    /// Serves [`crate::feeds::rss`] of `n` items titled after `title` at `path`, its links
    /// pointing back at this server.
    pub fn serve_rss(&self, path: &str, title: &str, n: usize) {
        let feed = crate::feeds::rss(&self.base, title, n);
        self.serve(path, 200, "application/rss+xml", feed);
    }

    /// `http://ADDR{path}`.
    pub fn url(&self, path: &str) -> String {
        format!("{}{path}", self.base)
    }

    /// `http://HOST:PORT{path}`, for a host name the test maps to this server.
    pub fn url_as(&self, host: &str, path: &str) -> String {
        format!("http://{host}:{}{path}", self.addr.port())
    }

    /// Requests to `path` so far.
    pub fn hits(&self, path: &str) -> usize {
        lock(&self.shared.hits).get(path).copied().unwrap_or(0)
    }

    /// Requests to any path so far.
    pub fn total_hits(&self) -> usize {
        lock(&self.shared.hits).values().sum()
    }

    /// Requests so far, by path.
    pub fn hits_by_path(&self) -> HashMap<String, usize> {
        lock(&self.shared.hits).clone()
    }

    /// The headers of the last request; panics when there was none.
    pub fn last_headers(&self) -> HeaderMap {
        lock(&self.shared.headers)
            .last()
            .cloned()
            .expect("the server has seen no request yet")
    }
}

/// Counts `request`, then answers it from the fixed table or passes it to the router.
async fn answer(shared: &Shared, request: Request, next: Next) -> Response {
    let path = request.uri().path().to_owned();
    *lock(&shared.hits).entry(path.clone()).or_insert(0) += 1;
    lock(&shared.headers).push(request.headers().clone());
    let fixed = lock(&shared.documents).get(&path).cloned();
    match fixed {
        Some(served) => (
            served.status,
            [(header::CONTENT_TYPE, served.content_type)],
            served.body,
        )
            .into_response(),
        None => next.run(request).await,
    }
}

/// Locks `mutex`, also after a test thread panicked holding it (the counts stay readable).
fn lock<T>(mutex: &Mutex<T>) -> std::sync::MutexGuard<'_, T> {
    mutex
        .lock()
        .unwrap_or_else(std::sync::PoisonError::into_inner)
}
