//! The WebSub callback (F18): `/websub/{token}`, where hubs verify tidings' subscription
//! requests (GET) and deliver content (POST). The protocol's decisions are the worker's
//! ([`tidings_worker::websub`]); this module only speaks HTTP: it checks the callback before
//! reading a pushed body, bounds the body to the fetch limit and to a deadline, and answers
//! with the spec's status codes.

use std::collections::HashMap;

use axum::Router;
use axum::body::Body;
use axum::extract::{Path, Query, State};
use axum::http::{HeaderMap, StatusCode, header};
use axum::response::{IntoResponse, Response};
use axum::routing::get;
use tidings_worker::websub::{
    PushOutcome, VerifyAnswer, expects_pushes, receive_push, verify_intent,
};

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

/// How long a hub has to send a pushed body, from the moment its request's head arrived:
/// pushes are small documents, and a hub that cannot send one in this time will retry.
const PUSH_BODY_TIMEOUT: std::time::Duration = std::time::Duration::from_secs(30);

/// A content distribution. The callback is checked before the body is read, the body is read
/// with a deadline and without holding anything others wait for, and only then does the push
/// wait for one of the [`PUSHES_AT_ONCE`] slots to be parsed and stored. Before, the slot was
/// taken first: four clients dripping bytes to any `/websub/…` path held all four, and a
/// correctly signed push waited as long as they liked.
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
    match expects_pushes(&state.store, &token).await {
        Ok(true) => {}
        Ok(false) => {
            state.fetcher.metrics().record_websub_push("gone");
            return plain(StatusCode::GONE, "no such subscription".into());
        }
        Err(error) => {
            tracing::warn!(%error, "websub push could not be checked; the hub will retry");
            return plain(StatusCode::SERVICE_UNAVAILABLE, "try again later".into());
        }
    }
    let received = tokio::time::timeout(PUSH_BODY_TIMEOUT, axum::body::to_bytes(body, limit)).await;
    let body = match received {
        Ok(Ok(body)) => body,
        Ok(Err(error)) if crate::base::inbound::body_timeout_of(&error).is_some() => {
            return push_timed_out(&state);
        }
        Ok(Err(_)) => {
            tracing::warn!(limit, "websub push refused: body too large or cut short");
            state.fetcher.metrics().record_websub_push("too_large");
            return plain(StatusCode::PAYLOAD_TOO_LARGE, "body too large".into());
        }
        Err(_) => return push_timed_out(&state),
    };
    let Ok(_permit) = PUSHES.acquire().await else {
        return plain(StatusCode::SERVICE_UNAVAILABLE, "try again later".into());
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

/// The answer to a push whose body did not arrive in time.
fn push_timed_out(state: &AppState) -> Response {
    tracing::warn!(
        seconds = PUSH_BODY_TIMEOUT.as_secs(),
        "websub push refused: the body did not arrive in time"
    );
    state.fetcher.metrics().record_websub_push("timeout");
    plain(
        StatusCode::REQUEST_TIMEOUT,
        format!(
            "the body did not arrive within {} seconds",
            PUSH_BODY_TIMEOUT.as_secs()
        ),
    )
}
