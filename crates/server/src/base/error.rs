//! The API's error body: `{"error": {"code", "message", "category", "action"}}` with the right
//! status, so that every client (the web UI first) can show what went wrong and what to do.

use axum::Json;
use axum::http::{HeaderValue, StatusCode, header};
use axum::response::{IntoResponse, Response};
use serde::Serialize;
use tidings_store::StoreError;
use utoipa::ToSchema;

/// What kind of problem an error is, for the UI to group messages (F55).
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, ToSchema)]
#[serde(rename_all = "lowercase")]
pub enum ErrorCategory {
    /// Not signed in, wrong credentials, or not allowed.
    Auth,
    /// The request's content is wrong.
    Validation,
    /// A feed could not be found, fetched or read.
    Feed,
    /// A limit was reached.
    Limit,
    /// The server failed.
    System,
}

/// The error object inside the body.
#[derive(Debug, Clone, Serialize, ToSchema)]
pub struct ErrorDetail {
    /// A stable machine-readable code, e.g. `invalid_credentials`.
    pub code: &'static str,
    /// What went wrong, for people.
    pub message: String,
    /// The kind of problem.
    pub category: ErrorCategory,
    /// What the user can do about it.
    pub action: String,
}

/// The body of every error response.
#[derive(Debug, Clone, Serialize, ToSchema)]
pub struct ErrorBody {
    /// The error.
    pub error: ErrorDetail,
}

/// An error answered by the API.
#[derive(Debug, Clone)]
pub struct ApiError {
    /// The HTTP status.
    pub status: StatusCode,
    /// The body's content.
    pub detail: ErrorDetail,
    /// Seconds to wait, for 429 answers.
    pub retry_after: Option<u64>,
    /// The decision of the limiter that refused the request, for its `X-RateLimit-*` headers.
    pub rate: Option<Box<crate::ratelimit::RateDecision>>,
}

impl ApiError {
    /// An error with every part given.
    pub fn new(
        status: StatusCode,
        code: &'static str,
        category: ErrorCategory,
        message: impl Into<String>,
        action: impl Into<String>,
    ) -> ApiError {
        ApiError {
            status,
            detail: ErrorDetail {
                code,
                message: message.into(),
                category,
                action: action.into(),
            },
            retry_after: None,
            rate: None,
        }
    }

    /// 400: the request's content is wrong. Every refusal of what a request says (a field's
    /// value, a missing field, a parameter) is a 400; the code and message tell which.
    pub fn validation(message: impl Into<String>, action: impl Into<String>) -> ApiError {
        ApiError::new(
            StatusCode::BAD_REQUEST,
            "invalid_request",
            ErrorCategory::Validation,
            message,
            action,
        )
    }

    /// 404 for an object that does not exist or is not the caller's (the two are not told
    /// apart, so ids of other users' objects leak nothing).
    pub fn not_found(what: &str) -> ApiError {
        ApiError::new(
            StatusCode::NOT_FOUND,
            "not_found",
            ErrorCategory::Validation,
            format!("{what} not found"),
            "Check the id; it may have been deleted.",
        )
    }

    /// 401: no valid credentials.
    pub fn unauthenticated() -> ApiError {
        ApiError::new(
            StatusCode::UNAUTHORIZED,
            "unauthenticated",
            ErrorCategory::Auth,
            "You are not signed in, or your session or API key has expired.",
            "Sign in again, or use a valid API key (Authorization: Bearer tdg_…).",
        )
    }

    /// 403: signed in but not allowed.
    pub fn forbidden(message: impl Into<String>, action: impl Into<String>) -> ApiError {
        ApiError::new(
            StatusCode::FORBIDDEN,
            "forbidden",
            ErrorCategory::Auth,
            message,
            action,
        )
    }

    /// 409: the request conflicts with what exists.
    pub fn conflict(message: impl Into<String>, action: impl Into<String>) -> ApiError {
        ApiError::new(
            StatusCode::CONFLICT,
            "conflict",
            ErrorCategory::Validation,
            message,
            action,
        )
    }

    /// 429 with the time to wait.
    pub fn rate_limited(retry_after: u64) -> ApiError {
        let mut error = ApiError::new(
            StatusCode::TOO_MANY_REQUESTS,
            "rate_limited",
            ErrorCategory::Limit,
            format!("Too many requests: try again in {retry_after} s."),
            format!("Wait {retry_after} seconds, then try again."),
        );
        error.retry_after = Some(retry_after);
        error
    }

    /// 429 `imports_running`: the user has `limit` imports (OPML files, other readers)
    /// running, the most one user runs at once.
    pub fn imports_running(limit: i64) -> ApiError {
        let mut error = ApiError::new(
            StatusCode::TOO_MANY_REQUESTS,
            "imports_running",
            ErrorCategory::Limit,
            format!("{limit} of your imports are running already."),
            "Wait for one of them to finish (Settings shows them), then import again.",
        );
        error.retry_after = Some(10);
        error
    }

    /// 429 from one limiter, whose own limit, remaining count and reset the answer's
    /// `X-RateLimit-*` headers carry.
    pub fn limited(decision: crate::ratelimit::RateDecision) -> ApiError {
        let mut error = ApiError::rate_limited(decision.reset_seconds);
        error.rate = Some(Box::new(decision));
        error
    }

    /// 503 with `Retry-After`: the database cannot answer now (unreachable, or on SQLite
    /// locked too long), which retrying shortly may get past. Logged once, as a warning with
    /// the cause.
    pub fn database_unavailable(error: &StoreError) -> ApiError {
        tracing::warn!(error = %error_chain(error), "request failed: the database is unavailable");
        let mut answer = ApiError::new(
            StatusCode::SERVICE_UNAVAILABLE,
            "database_unavailable",
            ErrorCategory::System,
            "The database is unreachable or too busy to answer right now.",
            format!(
                "Try again in {DATABASE_RETRY_SECONDS} seconds. If it lasts, the administrator \
                 should check that the database server runs (the server log names the cause)."
            ),
        );
        answer.retry_after = Some(DATABASE_RETRY_SECONDS);
        answer
    }

    /// 500, logged with a reference the user can quote; no internals in the body. This is the
    /// one log line of the failure: the HTTP trace layer leaves 5xx answers to it (debug level
    /// there), so give it the whole cause (see [`error_chain`]).
    pub fn internal(error: impl std::fmt::Display) -> ApiError {
        let reference = hex::encode(rand::random::<[u8; 4]>());
        tracing::error!(%reference, %error, "request failed");
        ApiError::new(
            StatusCode::INTERNAL_SERVER_ERROR,
            "internal_error",
            ErrorCategory::System,
            format!("Something went wrong on the server (reference {reference})."),
            "Try again later; if it keeps happening, tell the administrator the reference.",
        )
    }
}

impl IntoResponse for ApiError {
    fn into_response(self) -> Response {
        let mut response = (self.status, Json(ErrorBody { error: self.detail })).into_response();
        if let Some(seconds) = self.retry_after
            && let Ok(value) = HeaderValue::from_str(&seconds.to_string())
        {
            response.headers_mut().insert(header::RETRY_AFTER, value);
        }
        if let Some(decision) = self.rate {
            crate::base::client::rate_headers(response.headers_mut(), *decision);
        }
        response
    }
}

impl From<StoreError> for ApiError {
    fn from(error: StoreError) -> ApiError {
        match error {
            StoreError::NotFound(what) => ApiError::not_found(&capitalize(what)),
            StoreError::Conflict(message) => {
                ApiError::conflict(sentence(&message), "Nothing was changed.")
            }
            StoreError::Invalid(message) => ApiError::validation(
                capitalize(&message),
                "Correct the value and send the request again.",
            ),
            limit @ StoreError::LimitReached { .. } => ApiError::new(
                StatusCode::CONFLICT,
                "limit_reached",
                ErrorCategory::Limit,
                capitalize(&limit.to_string()),
                "Remove some, or ask the administrator to raise the limit.",
            ),
            unavailable if unavailable.is_unavailable() => {
                ApiError::database_unavailable(&unavailable)
            }
            other => ApiError::internal(error_chain(&other)),
        }
    }
}

/// The `Retry-After` of a 503 for an unavailable database, in seconds.
pub const DATABASE_RETRY_SECONDS: u64 = 5;

/// An error with its causes, outermost first, as one line: `a: b: c`. A cause whose text the
/// error's own message already shows (as `thiserror`'s `{0}` and sqlx's messages do) is not
/// repeated.
pub fn error_chain(error: &dyn std::error::Error) -> String {
    let mut text = error.to_string();
    let mut source = error.source();
    while let Some(cause) = source {
        let cause_text = cause.to_string();
        if !text.contains(&cause_text) {
            text.push_str(": ");
            text.push_str(&cause_text);
        }
        source = cause.source();
    }
    text
}

/// Upper-cases the first letter, for messages built from lower-case store errors.
pub fn capitalize(text: &str) -> String {
    let mut chars = text.chars();
    match chars.next() {
        Some(first) => first.to_uppercase().chain(chars).collect(),
        None => String::new(),
    }
}

/// A store message as a sentence: capitalized, ending with a full stop, so that a client that
/// shows the message and the action together reads two sentences.
fn sentence(text: &str) -> String {
    let mut sentence = capitalize(text.trim_end());
    if !sentence.ends_with(['.', '!', '?']) {
        sentence.push('.');
    }
    sentence
}

/// The result type of handlers.
pub type ApiResult<T> = Result<T, ApiError>;

#[cfg(test)]
mod tests {
    use super::error_chain;

    /// An error with its own message over a cause.
    #[derive(Debug)]
    struct Wrapping(String, std::io::Error);

    impl std::fmt::Display for Wrapping {
        fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
            f.write_str(&self.0)
        }
    }

    impl std::error::Error for Wrapping {
        fn source(&self) -> Option<&(dyn std::error::Error + 'static)> {
            Some(&self.1)
        }
    }

    #[test]
    fn an_error_says_its_causes_once() {
        // reqwest's message says only that sending failed; the cause says what did.
        let timed_out = std::io::Error::new(std::io::ErrorKind::TimedOut, "operation timed out");
        let sending = Wrapping("error sending request".into(), timed_out);
        assert_eq!(
            error_chain(&sending),
            "error sending request: operation timed out"
        );
        // A cause the message already shows (thiserror's `{0}`) is not repeated.
        let full = std::io::Error::other("disk full");
        let writing = Wrapping("cannot write: disk full".into(), full);
        assert_eq!(error_chain(&writing), "cannot write: disk full");
    }
}
