//! What every Google Reader endpoint works with: the request (its caller, parameters, headers
//! and body), its parameters read from the query string and a form body, and the answers: plain
//! text, `OK`, JSON with an `ETag`, and errors as plain text with their status.

use axum::http::{HeaderMap, HeaderValue, StatusCode, header};
use axum::response::{IntoResponse, Response};
use serde_json::Value;
use tidings_store::StoreError;

use crate::base::auth::Auth;
use crate::base::state::AppState;
use crate::sync::shared::{Refusal, content_type, form_pairs};

/// An error as plain text with its status.
#[derive(Debug)]
pub struct GReaderError {
    pub(super) status: StatusCode,
    pub(super) message: String,
    retry_after: Option<u64>,
}

impl GReaderError {
    pub(super) fn new(status: StatusCode, message: impl Into<String>) -> GReaderError {
        GReaderError {
            status,
            message: message.into(),
            retry_after: None,
        }
    }

    pub(super) fn bad_request(message: impl Into<String>) -> GReaderError {
        GReaderError::new(StatusCode::BAD_REQUEST, message)
    }

    pub(super) fn not_found(message: impl Into<String>) -> GReaderError {
        GReaderError::new(StatusCode::NOT_FOUND, message)
    }

    pub(super) fn refused(refusal: Refusal) -> GReaderError {
        match refusal {
            Refusal::BadCredentials => GReaderError::new(
                StatusCode::UNAUTHORIZED,
                "Unauthorized: sign in with /accounts/ClientLogin (Email = your username, \
                 Passwd = an API key) and send Authorization: GoogleLogin auth=…",
            ),
            Refusal::RateLimited(seconds) => GReaderError {
                retry_after: Some(seconds),
                ..GReaderError::new(
                    StatusCode::TOO_MANY_REQUESTS,
                    format!("Too many requests: try again in {seconds} s."),
                )
            },
            Refusal::ReadOnly => GReaderError::new(
                StatusCode::FORBIDDEN,
                "This API key is read-only; create a read-write key for this app.",
            ),
            Refusal::Unavailable => GReaderError::new(
                StatusCode::INTERNAL_SERVER_ERROR,
                "The server failed; try again later.",
            ),
        }
    }
}

impl IntoResponse for GReaderError {
    fn into_response(self) -> Response {
        let mut response = (
            self.status,
            [(header::CONTENT_TYPE, "text/plain; charset=utf-8")],
            format!("{}\n", self.message),
        )
            .into_response();
        if let Some(seconds) = self.retry_after
            && let Ok(value) = HeaderValue::from_str(&seconds.to_string())
        {
            response.headers_mut().insert(header::RETRY_AFTER, value);
        }
        response
    }
}

impl From<StoreError> for GReaderError {
    fn from(error: StoreError) -> GReaderError {
        match error {
            StoreError::NotFound(what) => GReaderError::not_found(format!("No such {what}.")),
            StoreError::Invalid(message) | StoreError::Conflict(message) => {
                GReaderError::bad_request(message)
            }
            other => {
                tracing::error!(error = %other, "Google Reader API: store error");
                GReaderError::new(
                    StatusCode::INTERNAL_SERVER_ERROR,
                    "The server failed; try again later.",
                )
            }
        }
    }
}

impl From<crate::base::error::ApiError> for GReaderError {
    fn from(error: crate::base::error::ApiError) -> GReaderError {
        GReaderError {
            status: error.status,
            message: format!("{} {}", error.detail.message, error.detail.action),
            retry_after: error.retry_after,
        }
    }
}

/// What an endpoint answers: its response, or an error in the protocol's plain text.
pub(super) type Result<T> = std::result::Result<T, GReaderError>;

/// A request's parameters: the query string's, then a form body's, repeated names kept.
pub(super) struct Params(Vec<(String, String)>);

impl Params {
    pub(super) fn parse(query: Option<&str>, headers: &HeaderMap, body: &[u8]) -> Params {
        let mut pairs = form_pairs(query.unwrap_or("").as_bytes());
        let content_type = content_type(headers);
        if content_type.is_empty() || content_type.starts_with("application/x-www-form-urlencoded")
        {
            pairs.extend(form_pairs(body));
        }
        Params(pairs)
    }

    /// The last value of a parameter (a form's value wins over the query string's).
    pub(super) fn get(&self, name: &str) -> Option<&str> {
        self.0
            .iter()
            .rev()
            .find(|(k, _)| k == name)
            .map(|(_, v)| v.as_str())
    }

    /// Every non-empty value of a repeatable parameter, in order.
    pub(super) fn all(&self, name: &str) -> Vec<&str> {
        self.0
            .iter()
            .filter(|(k, v)| k == name && !v.trim().is_empty())
            .map(|(_, v)| v.as_str())
            .collect()
    }

    pub(super) fn number(&self, name: &str) -> Result<Option<i64>> {
        match self.get(name).map(str::trim).filter(|v| !v.is_empty()) {
            None => Ok(None),
            Some(text) => text.parse().map(Some).map_err(|_| {
                GReaderError::bad_request(format!(
                    "Invalid {name}={text:?}: a whole number is expected."
                ))
            }),
        }
    }
}

/// What every endpoint gets.
pub(super) struct Request<'a> {
    pub(super) state: &'a AppState,
    pub(super) auth: &'a Auth,
    pub(super) params: &'a Params,
    pub(super) headers: &'a HeaderMap,
    pub(super) body: &'a [u8],
}

impl Request<'_> {
    pub(super) fn user_id(&self) -> i64 {
        self.auth.user.id
    }
}

/// A plain-text answer, as the protocol gives tokens, `OK` and import reports.
pub(super) fn text(body: impl Into<String>) -> Response {
    (
        [(header::CONTENT_TYPE, "text/plain; charset=utf-8")],
        body.into(),
    )
        .into_response()
}

/// The answer of a write that worked.
pub(super) fn ok() -> Response {
    text("OK")
}

/// A JSON answer serialized straight from `value` into a buffer of `capacity` bytes (grown
/// if needed), as `axum::Json` answers it but without its small first buffer's regrowth.
pub(super) fn json_response(value: &impl serde::Serialize, capacity: usize) -> Response {
    let mut body = Vec::with_capacity(capacity);
    match serde_json::to_writer(&mut body, value) {
        Ok(()) => ([(header::CONTENT_TYPE, "application/json")], body).into_response(),
        Err(error) => {
            tracing::error!(%error, "Google Reader API: an answer could not be serialized");
            GReaderError::new(
                StatusCode::INTERNAL_SERVER_ERROR,
                "The server failed; try again later.",
            )
            .into_response()
        }
    }
}

/// A JSON answer with an `ETag` (a digest of the body), or `304 Not Modified` when the request's
/// `If-None-Match` names it: NetNewsWire sends the ETag of its last `subscription/list` and
/// `tag/list` back and skips that part of its sync on a 304 (ReaderAPICaller.swift,
/// HTTPConditionalGetInfo.swift). The ETag is weak since compression may change the bytes.
pub(super) fn conditional_json(headers: &HeaderMap, value: &Value) -> Response {
    conditional_json_body(headers, value.to_string().into_bytes())
}

/// [`conditional_json`] of a body already serialized.
pub(super) fn conditional_json_body(headers: &HeaderMap, body: Vec<u8>) -> Response {
    // Any change of the body gives another tag but for the odds of a 128-bit collision; the
    // tag guards against nothing but stale copies, so a fast non-cryptographic digest serves
    // (SHA-256 of a 500-subscription list took more CPU than escaping its text).
    let etag = format!("W/\"{:032x}\"", xxhash_rust::xxh3::xxh3_128(&body));
    let matches = headers
        .get_all(header::IF_NONE_MATCH)
        .iter()
        .filter_map(|v| v.to_str().ok())
        .flat_map(|v| v.split(','))
        .map(|tag| tag.trim().trim_start_matches("W/"))
        .any(|tag| tag == "*" || tag == etag.trim_start_matches("W/"));
    let mut response = if matches {
        StatusCode::NOT_MODIFIED.into_response()
    } else {
        ([(header::CONTENT_TYPE, "application/json")], body).into_response()
    };
    let headers = response.headers_mut();
    if let Ok(value) = HeaderValue::from_str(&etag) {
        headers.insert(header::ETAG, value);
    }
    // Each user's own: a shared cache must not keep it, and the client asks again each time.
    headers.insert(
        header::CACHE_CONTROL,
        HeaderValue::from_static("private, no-cache"),
    );
    response
}
