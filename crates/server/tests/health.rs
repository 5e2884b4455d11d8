//! Health and readiness through the router, on a real SQLite database.

use axum::body::Body;
use axum::http::{Request, StatusCode};
use tidings_server::{AppState, ServerConfig, router};
use tidings_store::{Store, StoreOptions};
use tower::ServiceExt;

/// The server's state over `store` with the default settings.
fn app_state(store: &Store) -> AppState {
    let config = ServerConfig::new("http://127.0.0.1:8080".parse().unwrap());
    let _ = rustls::crypto::ring::default_provider().install_default();
    let fetcher = tidings_worker::Fetcher::new(
        store.clone(),
        tidings_fetch::GuardedClient::new(tidings_fetch::ClientConfig::default()).unwrap(),
        tidings_worker::WorkerConfig::default(),
    );
    AppState::new(store.clone(), config, fetcher)
}

async fn get(store: &Store, path: &str) -> (StatusCode, serde_json::Value) {
    let response = router(app_state(store))
        .oneshot(Request::get(path).body(Body::empty()).unwrap())
        .await
        .unwrap();
    let status = response.status();
    let body = axum::body::to_bytes(response.into_body(), 64 * 1024)
        .await
        .unwrap();
    (status, serde_json::from_slice(&body).unwrap())
}

async fn store(dir: &tempfile::TempDir) -> Store {
    let url = format!("sqlite://{}", dir.path().join("t.db").display());
    Store::connect(&StoreOptions::new(url)).await.unwrap()
}

#[tokio::test]
async fn ready_only_when_the_schema_is_current() {
    let dir = tempfile::tempdir().unwrap();
    let store = store(&dir).await;

    let (status, body) = get(&store, "/readyz").await;
    assert_eq!(status, StatusCode::SERVICE_UNAVAILABLE);
    assert_eq!(body["status"], "unavailable");
    assert!(
        body["reason"].as_str().unwrap().contains("tidings migrate"),
        "{body}"
    );

    store.migrate_to(1).await.unwrap();
    let (status, body) = get(&store, "/readyz").await;
    assert_eq!(status, StatusCode::SERVICE_UNAVAILABLE, "{body}");

    store.migrate().await.unwrap();
    let (status, body) = get(&store, "/readyz").await;
    assert_eq!(status, StatusCode::OK, "{body}");
    assert_eq!(body["status"], "ready");
    assert_eq!(body["database"], "sqlite");

    store
        .execute_raw("INSERT INTO schema_migrations VALUES (1000, 'future', 'x', 0)")
        .await
        .unwrap();
    let (status, body) = get(&store, "/readyz").await;
    assert_eq!(status, StatusCode::SERVICE_UNAVAILABLE);
    assert!(body["reason"].as_str().unwrap().contains("newer"), "{body}");
}

#[tokio::test]
async fn alive_without_the_database_but_not_ready() {
    let dir = tempfile::tempdir().unwrap();
    let store = store(&dir).await;
    store.migrate().await.unwrap();
    store.close().await;
    let (status, body) = get(&store, "/healthz").await;
    assert_eq!(status, StatusCode::OK);
    assert_eq!(body["status"], "ok");
    let (status, body) = get(&store, "/readyz").await;
    assert_eq!(status, StatusCode::SERVICE_UNAVAILABLE);
    assert!(
        body["reason"].as_str().unwrap().contains("does not answer"),
        "{body}"
    );
}

/// JSON and the UI's assets are sent compressed when the client accepts it, with brotli or
/// gzip as it asks, and decode to exactly what an uncompressed answer holds.
#[tokio::test]
async fn json_and_assets_are_compressed_when_the_client_accepts_it() {
    let dir = tempfile::tempdir().unwrap();
    let store = store(&dir).await;
    store.migrate().await.unwrap();
    let listener = tokio::net::TcpListener::bind("127.0.0.1:0").await.unwrap();
    let base = format!("http://{}", listener.local_addr().unwrap());
    tokio::spawn(tidings_server::serve(
        listener,
        app_state(&store),
        std::future::pending(),
    ));
    // A client that shows the bytes as sent, and one that decodes them as browsers do.
    let raw = reqwest::Client::builder()
        .no_gzip()
        .no_brotli()
        .no_deflate()
        .build()
        .unwrap();
    let decoding = reqwest::Client::new();
    let paths = [
        "/api/v1/openapi.json".to_string(),
        format!("/ui/{}/app.js", tidings_server::ui::asset_version()),
        format!("/ui/{}/app.css", tidings_server::ui::asset_version()),
    ];
    for path in &paths {
        let url = format!("{base}{path}");
        let plain = raw.get(&url).send().await.unwrap();
        assert_eq!(plain.status(), 200, "{path}");
        assert!(plain.headers().get("content-encoding").is_none(), "{path}");
        let plain = plain.bytes().await.unwrap();
        for encoding in ["br", "gzip"] {
            let sent = raw
                .get(&url)
                .header("accept-encoding", encoding)
                .send()
                .await
                .unwrap();
            assert_eq!(
                sent.headers()
                    .get("content-encoding")
                    .and_then(|v| v.to_str().ok()),
                Some(encoding),
                "{path}"
            );
            let vary = sent
                .headers()
                .get_all("vary")
                .iter()
                .filter_map(|v| v.to_str().ok())
                .collect::<Vec<_>>()
                .join(", ")
                .to_ascii_lowercase();
            assert!(vary.contains("accept-encoding"), "{path}: vary {vary}");
            let compressed = sent.bytes().await.unwrap();
            assert!(
                compressed.len() * 2 < plain.len(),
                "{path} {encoding}: {} of {} bytes",
                compressed.len(),
                plain.len()
            );
        }
        let decoded = decoding.get(&url).send().await.unwrap();
        assert_eq!(decoded.bytes().await.unwrap(), plain, "{path}");
    }
    store.close().await;
}
