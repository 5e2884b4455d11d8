//! `POST /inbound/mail`: mail handed over by HTTP, for installations that let a mail service
//! receive their mail instead of running port 25. The body is the raw RFC 5322 message; the
//! installation's secret (`TIDINGS_MAIL_INBOUND_SECRET`) comes as `Authorization: Bearer`.
//! The recipients are the `to` query parameter (the envelope's, comma-separated), else the
//! message's own `Delivered-To`, `X-Original-To`, `To` and `Cc`. The answers are meant for mail
//! services: 2xx delivered, 4xx a refusal not to retry, 5xx try again later.
//!
//! `POST /inbound/mail/sendgrid` takes SendGrid's Inbound Parse as it posts with "POST the raw,
//! full MIME message" on: `multipart/form-data` with the message in the field `email`, the
//! envelope recipients in `envelope` (JSON, `{"to": [...], "from": "..."}`), and `to` (the
//! header's). SendGrid sets no header of ours, so the secret comes in the URL: as the password
//! of HTTP basic authentication (`https://tidings:SECRET@…`) or as `?secret=SECRET`. Request
//! logs never hold query strings.

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
    Router::new()
        .route("/inbound/mail", post(receive))
        .route("/inbound/mail/sendgrid", post(receive_sendgrid))
}

/// The query of `POST /inbound/mail`.
#[derive(Debug, Deserialize)]
pub struct InboundQuery {
    /// The envelope recipients, comma-separated; the message's headers when absent.
    pub to: Option<String>,
    /// The secret, for services that can set no header (`/inbound/mail/sendgrid` only).
    pub secret: Option<String>,
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

/// The secret a request gives: `Authorization: Bearer`, else the password of
/// `Authorization: Basic`, else (`in_query`) the `secret` query parameter.
fn given_secret(headers: &HeaderMap, query: &InboundQuery, in_query: bool) -> String {
    let authorization = headers
        .get(header::AUTHORIZATION)
        .and_then(|v| v.to_str().ok())
        .unwrap_or_default();
    if let Some(token) = authorization.strip_prefix("Bearer ") {
        return token.trim().to_string();
    }
    if let Some(basic) = authorization.strip_prefix("Basic ") {
        use base64::Engine as _;
        let decoded = base64::engine::general_purpose::STANDARD
            .decode(basic.trim())
            .unwrap_or_default();
        let pair = String::from_utf8_lossy(&decoded);
        return pair
            .split_once(':')
            .map(|(_, p)| p)
            .unwrap_or_default()
            .to_string();
    }
    if in_query {
        return query.secret.clone().unwrap_or_default();
    }
    String::new()
}

/// Whether `given` is the installation's secret. Digests are compared, in constant time, so
/// that neither the secret's bytes nor its length show in the time taken.
fn authorized(secret: &str, given: &str) -> bool {
    crate::mfa::totp::constant_time_eq(
        &Sha256::digest(given.as_bytes()),
        &Sha256::digest(secret.as_bytes()),
    )
}

/// The request's body once the endpoint is on and the secret right, read up to `limit`
/// bytes; else the answer to give.
async fn authorized_body(
    state: &AppState,
    headers: &HeaderMap,
    query: &InboundQuery,
    sendgrid: bool,
    body: Body,
) -> Result<Vec<u8>, Response> {
    let settings = &state.config.mail;
    let (Some(secret), Some(_)) = (&settings.inbound_secret, &settings.domain) else {
        return Err(answer(
            StatusCode::NOT_FOUND,
            "inbound mail is off: set TIDINGS_MAIL_DOMAIN and TIDINGS_MAIL_INBOUND_SECRET",
            None,
        ));
    };
    if !authorized(secret, &given_secret(headers, query, sendgrid)) {
        let how = if sendgrid {
            "https://tidings:<TIDINGS_MAIL_INBOUND_SECRET>@… or ?secret=<…>"
        } else {
            "Authorization: Bearer <TIDINGS_MAIL_INBOUND_SECRET>"
        };
        let message = format!("the secret is missing or wrong ({how})");
        return Err(answer(StatusCode::UNAUTHORIZED, &message, None));
    }
    // A form carries the message and a few short fields beside it.
    let limit = settings.max_bytes + if sendgrid { 256 * 1024 } else { 0 };
    match axum::body::to_bytes(body, limit).await {
        Ok(raw) => Ok(raw.to_vec()),
        Err(error) if crate::base::inbound::body_timeout_of(&error).is_some() => Err(answer(
            StatusCode::REQUEST_TIMEOUT,
            "the message came too slowly",
            None,
        )),
        Err(_) => Err(too_large(settings.max_bytes)),
    }
}

fn too_large(limit: usize) -> Response {
    let message = format!("the message is larger than {limit} bytes");
    answer(StatusCode::PAYLOAD_TOO_LARGE, &message, None)
}

/// Receives one message.
async fn receive(
    State(state): State<AppState>,
    Query(query): Query<InboundQuery>,
    headers: HeaderMap,
    body: Body,
) -> Response {
    let raw = match authorized_body(&state, &headers, &query, false, body).await {
        Ok(raw) => raw,
        Err(refused) => return refused,
    };
    let addresses: Vec<String> = match &query.to {
        // A `+` left unescaped in the query reads as a space; addresses have none.
        Some(to) => to.split(',').map(|a| a.trim().replace(' ', "+")).collect(),
        None => tidings_mail::header_recipients(&raw),
    };
    deliver_to(&state, &addresses, raw).await
}

/// Receives one message from SendGrid's Inbound Parse (raw mode). The recipients are the
/// envelope's, else the `to` field's, else the message's own headers.
async fn receive_sendgrid(
    State(state): State<AppState>,
    Query(query): Query<InboundQuery>,
    headers: HeaderMap,
    body: Body,
) -> Response {
    let form = match authorized_body(&state, &headers, &query, true, body).await {
        Ok(form) => form,
        Err(refused) => return refused,
    };
    let content_type = headers
        .get(header::CONTENT_TYPE)
        .and_then(|v| v.to_str().ok())
        .unwrap_or_default();
    let mut fields = match tidings_mail::form_fields(content_type, &form) {
        Ok(fields) => fields,
        Err(error) => {
            let message = format!("not SendGrid's raw Inbound Parse form: {error}");
            return answer(StatusCode::UNPROCESSABLE_ENTITY, &message, None);
        }
    };
    let mut field = |name: &str| {
        let at = fields.iter().position(|f| f.name == name)?;
        Some(fields.swap_remove(at).value)
    };
    let Some(raw) = field("email") else {
        return answer(
            StatusCode::UNPROCESSABLE_ENTITY,
            "the form has no field email: turn on \"POST the raw, full MIME message\"",
            None,
        );
    };
    if raw.len() > state.config.mail.max_bytes {
        return too_large(state.config.mail.max_bytes);
    }
    let envelope: Vec<String> = field("envelope")
        .and_then(|e| serde_json::from_slice::<serde_json::Value>(&e).ok())
        .and_then(|e| {
            let to = e.get("to")?.as_array()?.iter();
            Some(to.filter_map(|a| a.as_str().map(String::from)).collect())
        })
        .unwrap_or_default();
    let addresses = if !envelope.is_empty() {
        envelope
    } else if let Some(to) = field("to").filter(|to| !to.is_empty()) {
        // The header's text ("Name <a@b>, c@d"), read as a message's To.
        tidings_mail::header_recipients(&[b"To: ".as_slice(), &to, b"\r\n\r\n"].concat())
    } else {
        tidings_mail::header_recipients(&raw)
    };
    deliver_to(&state, &addresses, raw).await
}

/// Delivers `raw` to the users whose live addresses are among `addresses`.
async fn deliver_to(state: &AppState, addresses: &[String], raw: Vec<u8>) -> Response {
    let mut users = Vec::new();
    for address in addresses {
        match recipient(state, address).await {
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
    match deliver(state, &users, raw).await {
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
