//! The WebSub callback (F18): `/websub/{token}`, where hubs verify tidings' subscription
//! requests (GET) and deliver content (POST). The protocol's decisions are the worker's
//! ([`tidings_worker::websub`]); this module only speaks HTTP: it bounds the pushed body to
//! the fetch limit before reading it whole, and answers with the spec's status codes.

use std::collections::HashMap;

use axum::Router;
use axum::body::Body;
use axum::extract::{Path, Query, State};
use axum::http::{HeaderMap, StatusCode, header};
use axum::response::{IntoResponse, Response};
use axum::routing::get;
use tidings_worker::websub::{PushOutcome, VerifyAnswer, receive_push, verify_intent};

use crate::base::state::AppState;

/// Pushed bodies parsed and stored at once; more wait their turn, so that a burst of pushes
/// holds at most this many bodies in memory beside the ones arriving.
const PUSHES_AT_ONCE: usize = 4;

/// The callback's routes.
pub fn router() -> Router<AppState> {
    Router::new().route("/websub/{token}", get(verify).post(push))
}

/// A plain-text answer with the spec's safe media type and no sniffing (W3C WebSub §9: the
/// echoed challenge must not be taken for a page).
fn plain(status: StatusCode, text: String) -> Response {
    (
        status,
        [
            (header::CONTENT_TYPE, "text/plain; charset=utf-8"),
            (header::X_CONTENT_TYPE_OPTIONS, "nosniff"),
            (header::CACHE_CONTROL, "no-store"),
        ],
        text,
    )
        .into_response()
}

/// The hub's verification of intent (or denial).
async fn verify(
    State(state): State<AppState>,
    Path(token): Path<String>,
    Query(query): Query<HashMap<String, String>>,
) -> Response {
    let now = chrono::Utc::now().timestamp();
    let config = &state.fetcher.config().websub;
    match verify_intent(
        &state.store,
        state.fetcher.metrics(),
        config,
        &token,
        &query,
        now,
    )
    .await
    {
        Ok(VerifyAnswer::Challenge(challenge)) => plain(StatusCode::OK, challenge),
        Ok(VerifyAnswer::Noted) => plain(StatusCode::OK, String::new()),
        Ok(VerifyAnswer::NotFound) => plain(StatusCode::NOT_FOUND, "not found".into()),
        Err(error) => {
            tracing::warn!(%error, "websub verification could not be checked");
            // Not 404: the hub should try again rather than take it as a refusal.
            plain(StatusCode::SERVICE_UNAVAILABLE, "try again later".into())
        }
    }
}

/// A content distribution.
async fn push(
    State(state): State<AppState>,
    Path(token): Path<String>,
    headers: HeaderMap,
    body: Body,
) -> Response {
    static PUSHES: tokio::sync::Semaphore = tokio::sync::Semaphore::const_new(PUSHES_AT_ONCE);
    let limit = state.fetcher.client().config().max_body_bytes;
    let announced = headers
        .get(header::CONTENT_LENGTH)
        .and_then(|v| v.to_str().ok())
        .and_then(|v| v.trim().parse::<u64>().ok());
    if announced.is_some_and(|length| length > limit as u64) {
        tracing::warn!(
            bytes = announced,
            limit,
            "websub push refused: body too large"
        );
        state.fetcher.metrics().record_websub_push("too_large");
        return plain(StatusCode::PAYLOAD_TOO_LARGE, "body too large".into());
    }
    let Ok(_permit) = PUSHES.acquire().await else {
        return plain(StatusCode::SERVICE_UNAVAILABLE, "try again later".into());
    };
    let Ok(body) = axum::body::to_bytes(body, limit).await else {
        tracing::warn!(limit, "websub push refused: body too large or cut short");
        state.fetcher.metrics().record_websub_push("too_large");
        return plain(StatusCode::PAYLOAD_TOO_LARGE, "body too large".into());
    };
    let text = |name: &str| headers.get(name).and_then(|v| v.to_str().ok());
    let outcome = receive_push(
        &state.fetcher,
        &token,
        text("x-hub-signature"),
        text("content-type"),
        body,
    )
    .await;
    match outcome {
        Ok(outcome) => {
            let status = StatusCode::from_u16(outcome.status()).unwrap_or(StatusCode::ACCEPTED);
            let text = match outcome {
                PushOutcome::Gone => "no such subscription",
                PushOutcome::MissingSignature => "signature required",
                _ => "",
            };
            plain(status, text.into())
        }
        Err(error) => {
            tracing::warn!(%error, "websub push could not be stored; the hub will retry");
            plain(StatusCode::SERVICE_UNAVAILABLE, "try again later".into())
        }
    }
}
