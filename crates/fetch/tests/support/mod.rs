#![allow(dead_code)] // Each test binary uses a different part of this module.

//! Local HTTP servers for the client tests: real sockets on loopback, ephemeral ports, and a
//! count of the requests each one saw.

use std::net::SocketAddr;
use std::sync::atomic::{AtomicUsize, Ordering};
use std::sync::{Arc, Mutex};

use axum::Router;
use axum::extract::Request;
use axum::http::HeaderMap;
use axum::middleware::Next;
use tidings_fetch::{AddressPolicy, ClientConfig, GuardedClient};

/// A running server. It stops when the test's runtime ends.
pub struct TestServer {
    pub addr: SocketAddr,
    hits: Arc<AtomicUsize>,
    last_headers: Arc<Mutex<Option<HeaderMap>>>,
}

impl TestServer {
    /// Serves `router` on `ip`:ephemeral, counting every request.
    pub async fn start_on(ip: &str, router: Router) -> TestServer {
        TestServer::start_on_port(ip, 0, router)
            .await
            .expect("bind an ephemeral port")
    }

    /// Serves `router` on `ip`:`port`, or `None` when the port is taken.
    pub async fn start_on_port(ip: &str, port: u16, router: Router) -> Option<TestServer> {
        let listener = tokio::net::TcpListener::bind((ip, port)).await.ok()?;
        let addr = listener.local_addr().unwrap();
        let hits = Arc::new(AtomicUsize::new(0));
        let last_headers = Arc::new(Mutex::new(None));
        let (count, record) = (Arc::clone(&hits), Arc::clone(&last_headers));
        let router = router.layer(axum::middleware::from_fn(
            move |request: Request, next: Next| {
                let (count, record) = (Arc::clone(&count), Arc::clone(&record));
                async move {
                    count.fetch_add(1, Ordering::SeqCst);
                    *record.lock().unwrap() = Some(request.headers().clone());
                    next.run(request).await
                }
            },
        ));
        tokio::spawn(async move {
            axum::serve(listener, router).await.unwrap();
        });
        Some(TestServer {
            addr,
            hits,
            last_headers,
        })
    }

    /// Serves `router` on 127.0.0.1.
    pub async fn start(router: Router) -> TestServer {
        TestServer::start_on("127.0.0.1", router).await
    }

    /// Requests seen so far.
    pub fn hits(&self) -> usize {
        self.hits.load(Ordering::SeqCst)
    }

    /// The headers of the last request.
    pub fn last_headers(&self) -> HeaderMap {
        self.last_headers
            .lock()
            .unwrap()
            .clone()
            .expect("no request")
    }

    /// `http://127.0.0.1:PORT{path}`.
    pub fn url(&self, path: &str) -> String {
        format!("http://{}{path}", self.addr)
    }

    /// `http://HOST:PORT{path}`, for a host the test maps to this server.
    pub fn url_as(&self, host: &str, path: &str) -> String {
        format!("http://{host}:{}{path}", self.addr.port())
    }
}

/// A client that may reach loopback, as `TIDINGS_ALLOW_PRIVATE_NETWORKS=true` gives.
pub fn lan_client() -> GuardedClient {
    GuardedClient::new(lan_config()).unwrap()
}

/// The settings of [`lan_client`].
pub fn lan_config() -> ClientConfig {
    ClientConfig {
        address_policy: AddressPolicy {
            allow_private_networks: true,
            ..AddressPolicy::default()
        },
        ..ClientConfig::default()
    }
}
