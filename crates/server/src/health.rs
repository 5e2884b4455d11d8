//! Liveness and readiness (F63).

use axum::Json;
use axum::extract::State;
use axum::http::StatusCode;
use serde_json::{Value, json};
use tidings_store::SchemaStatus;

use crate::base::state::AppState;

/// `GET /healthz`: the process is alive and serving. Never touches the database, so an
/// orchestrator does not restart a healthy process because the database is briefly away.
pub async fn healthz() -> Json<Value> {
    Json(json!({ "status": "ok", "version": env!("CARGO_PKG_VERSION") }))
}

/// `GET /readyz`: the database answers and its schema is the one this binary expects. 503 with
/// the reason otherwise, so a load balancer sends no traffic to a replica that cannot serve.
pub async fn readyz(State(state): State<AppState>) -> (StatusCode, Json<Value>) {
    let engine = state.store.engine().to_string();
    if let Err(error) = state.store.ping().await {
        tracing::warn!(error = %crate::base::error::error_chain(&error), "readiness: database unreachable");
        // Answered within the store's acquire timeout, so a balancer's check does not hang.
        return unavailable(
            &engine,
            "the database does not answer: it is unreachable or too busy".to_string(),
        );
    }
    match state.store.schema_status().await {
        Ok(SchemaStatus::Current { version }) => (
            StatusCode::OK,
            Json(json!({
                "status": "ready",
                "database": engine,
                "schema_version": version,
            })),
        ),
        Ok(SchemaStatus::Behind { version, latest }) => unavailable(
            &engine,
            format!("the schema is at version {version}, {latest} is needed: run tidings migrate"),
        ),
        Ok(SchemaStatus::Ahead { version, latest }) => unavailable(
            &engine,
            format!("the schema is at version {version}, newer than this tidings knows ({latest})"),
        ),
        Err(error) => {
            tracing::warn!(%error, "readiness: schema check failed");
            unavailable(&engine, "the schema version cannot be read".to_string())
        }
    }
}

fn unavailable(engine: &str, reason: String) -> (StatusCode, Json<Value>) {
    (
        StatusCode::SERVICE_UNAVAILABLE,
        Json(json!({ "status": "unavailable", "database": engine, "reason": reason })),
    )
}
