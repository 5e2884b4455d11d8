//! Health and readiness through the router, on a real SQLite database.

use axum::body::Body;
use axum::http::{Request, StatusCode};
use tidings_server::{AppState, ServerConfig, router};
use tidings_store::{Store, StoreOptions};
use tower::ServiceExt;

async fn get(store: &Store, path: &str) -> (StatusCode, serde_json::Value) {
    let config = ServerConfig::new("http://127.0.0.1:8080".parse().unwrap());
    let _ = rustls::crypto::ring::default_provider().install_default();
    let fetcher = tidings_worker::Fetcher::new(
        store.clone(),
        tidings_fetch::GuardedClient::new(tidings_fetch::ClientConfig::default()).unwrap(),
        tidings_worker::WorkerConfig::default(),
    );
    let response = router(AppState::new(store.clone(), config, fetcher))
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
