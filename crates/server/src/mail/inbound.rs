//! `POST /inbound/mail`: mail handed over by HTTP, for installations that let a mail service
//! receive their mail instead of running port 25. The body is the raw RFC 5322 message; the
//! installation's secret (`TIDINGS_MAIL_INBOUND_SECRET`) comes as `Authorization: Bearer`.
//! The recipients are the `to` query parameter (the envelope's, comma-separated), else the
//! message's own `Delivered-To`, `X-Original-To`, `To` and `Cc`. The answers are meant for mail
//! services: 2xx delivered, 4xx a refusal not to retry, 5xx try again later.

use axum::Router;
use axum::body::Body;
use axum::extract::{Query, State};
use axum::http::{HeaderMap, StatusCode, header};
use axum::response::{IntoResponse, Response};
use axum::routing::post;
use serde::Deserialize;
use sha2::{Digest, Sha256};

use super::deliver::{DeliverError, deliver, recipient};
use crate::base::state::AppState;

/// The endpoint's route.
pub fn router() -> Router<AppState> {
    Router::new().route("/inbound/mail", post(receive))
}

/// The query of `POST /inbound/mail`.
#[derive(Debug, Deserialize)]
pub struct InboundQuery {
    /// The envelope recipients, comma-separated; the message's headers when absent.
    pub to: Option<String>,
}

/// A JSON answer `{"status", "message"}` (and how many items were new).
fn answer(status: StatusCode, message: &str, delivered: Option<(usize, usize)>) -> Response {
    let mut body = serde_json::json!({ "status": status.as_u16(), "message": message });
    if let Some((recipients, new_items)) = delivered {
        body["recipients"] = recipients.into();
        body["new_items"] = new_items.into();
    }
    (
        status,
        [(header::CACHE_CONTROL, "no-store")],
        axum::Json(body),
    )
        .into_response()
}

/// Whether the request carries the installation's secret. Digests are compared, in constant
/// time, so that neither the secret's bytes nor its length show in the time taken.
fn authorized(secret: &str, headers: &HeaderMap) -> bool {
    let given = headers
        .get(header::AUTHORIZATION)
        .and_then(|v| v.to_str().ok())
        .and_then(|v| v.strip_prefix("Bearer "))
        .map(str::trim)
        .unwrap_or_default();
    crate::mfa::totp::constant_time_eq(
        &Sha256::digest(given.as_bytes()),
        &Sha256::digest(secret.as_bytes()),
    )
}

/// Receives one message.
async fn receive(
    State(state): State<AppState>,
    Query(query): Query<InboundQuery>,
    headers: HeaderMap,
    body: Body,
) -> Response {
    let settings = &state.config.mail;
    let (Some(secret), Some(_)) = (&settings.inbound_secret, &settings.domain) else {
        return answer(
            StatusCode::NOT_FOUND,
            "inbound mail is off: set TIDINGS_MAIL_DOMAIN and TIDINGS_MAIL_INBOUND_SECRET",
            None,
        );
    };
    if !authorized(secret, &headers) {
        return answer(
            StatusCode::UNAUTHORIZED,
            "the secret is missing or wrong (Authorization: Bearer <TIDINGS_MAIL_INBOUND_SECRET>)",
            None,
        );
    }
    let limit = settings.max_bytes;
    let raw = match axum::body::to_bytes(body, limit).await {
        Ok(raw) => raw.to_vec(),
        Err(error) if crate::base::inbound::body_timeout_of(&error).is_some() => {
            return answer(
                StatusCode::REQUEST_TIMEOUT,
                "the message came too slowly",
                None,
            );
        }
        Err(_) => {
            let message = format!("the message is larger than {limit} bytes");
            return answer(StatusCode::PAYLOAD_TOO_LARGE, &message, None);
        }
    };
    let addresses: Vec<String> = match &query.to {
        // A `+` left unescaped in the query reads as a space; addresses have none.
        Some(to) => to.split(',').map(|a| a.trim().replace(' ', "+")).collect(),
        None => tidings_mail::header_recipients(&raw),
    };
    let mut users = Vec::new();
    for address in &addresses {
        match recipient(&state, address).await {
            Ok(Some(user)) => users.push(user),
            Ok(None) => {}
            Err(error) => {
                tracing::warn!(%error, "inbound mail: recipients could not be checked");
                return answer(StatusCode::SERVICE_UNAVAILABLE, "try again later", None);
            }
        }
    }
    if users.is_empty() {
        return answer(
            StatusCode::NOT_FOUND,
            "no recipient is an address of this installation (unknown or revoked)",
            None,
        );
    }
    match deliver(&state, &users, raw).await {
        Ok(delivered) => {
            let new_items = delivered.iter().filter(|d| d.new_item).count();
            answer(
                StatusCode::OK,
                "delivered",
                Some((delivered.len(), new_items)),
            )
        }
        Err(DeliverError::Unreadable(error)) => answer(
            StatusCode::UNPROCESSABLE_ENTITY,
            &format!("not delivered: {error}"),
            None,
        ),
        Err(error) => {
            tracing::warn!(%error, "inbound mail: delivery failed");
            answer(StatusCode::SERVICE_UNAVAILABLE, "try again later", None)
        }
    }
}
