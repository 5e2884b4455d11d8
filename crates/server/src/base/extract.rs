//! Extractors whose rejections are the API's JSON errors instead of plain text.

use axum::extract::FromRequest;
use axum::extract::FromRequestParts;
use axum::extract::rejection::{BytesRejection, JsonRejection, PathRejection, QueryRejection};

use crate::base::error::ApiError;
use crate::base::limits;

/// A JSON body; a malformed one is a 400 with the parser's reason and the field it is about.
/// Every string in it is checked against [`limits`](crate::base::limits) first: a control
/// character or an over-long value is a 400 naming the field, whatever the handler.
#[derive(Debug)]
pub struct Json<T>(pub T);

impl<T, S> FromRequest<S> for Json<T>
where
    T: serde::de::DeserializeOwned,
    S: Send + Sync,
{
    type Rejection = ApiError;

    async fn from_request(request: axum::extract::Request, state: &S) -> Result<Self, ApiError> {
        let axum::Json(value) =
            <axum::Json<serde_json::Value> as FromRequest<S>>::from_request(request, state).await?;
        limits::check_body(&value)?;
        serde_path_to_error::deserialize(value)
            .map(Json)
            .map_err(|e| body_field_error(&e))
    }
}

/// The 400 for a body whose fields do not fit: it names the field (`url`, `ids[2]`) unless the
/// problem is the body as a whole (a missing or unknown field, whose name serde's reason gives).
fn body_field_error(error: &serde_path_to_error::Error<serde_json::Error>) -> ApiError {
    let path = error.path().to_string();
    let reason = error.inner();
    let message = if path == "." {
        format!("The body does not have the expected fields: {reason}.")
    } else {
        format!("The field {path} is wrong: {reason}.")
    };
    ApiError::validation(
        message,
        "Check the field names and types against /api/v1/openapi.json.",
    )
}

impl<T: serde::Serialize> axum::response::IntoResponse for Json<T> {
    fn into_response(self) -> axum::response::Response {
        axum::Json(self.0).into_response()
    }
}

/// Path parameters; an id that is not a number is a 404 like any unknown id.
#[derive(Debug, FromRequestParts)]
#[from_request(via(axum::extract::Path), rejection(ApiError))]
pub struct Path<T>(pub T);

/// Query parameters, with the parser's reason on error.
#[derive(Debug, FromRequestParts)]
#[from_request(via(axum::extract::Query), rejection(ApiError))]
pub struct Query<T>(pub T);

impl From<JsonRejection> for ApiError {
    fn from(rejection: JsonRejection) -> ApiError {
        match rejection {
            JsonRejection::MissingJsonContentType(_) => ApiError::new(
                axum::http::StatusCode::UNSUPPORTED_MEDIA_TYPE,
                "unsupported_media_type",
                crate::base::error::ErrorCategory::Validation,
                "The body must be JSON, sent with Content-Type: application/json.",
                "Set the Content-Type header.",
            ),
            JsonRejection::JsonSyntaxError(e) => {
                let mut error = ApiError::validation(
                    format!("The body is not valid JSON: {}", e.body_text()),
                    "Send a well-formed JSON object.",
                );
                error.status = axum::http::StatusCode::BAD_REQUEST;
                error.detail.code = "malformed_json";
                error
            }
            JsonRejection::JsonDataError(e) => ApiError::validation(
                format!(
                    "The body does not have the expected fields: {}",
                    e.body_text()
                ),
                "Check the field names and types against /api/v1/openapi.json.",
            ),
            JsonRejection::BytesRejection(bytes) => bytes_rejection(bytes),
            other => ApiError::validation(other.body_text(), "Check the request body."),
        }
    }
}

impl From<PathRejection> for ApiError {
    fn from(_: PathRejection) -> ApiError {
        ApiError::not_found("Object")
    }
}

impl From<QueryRejection> for ApiError {
    fn from(rejection: QueryRejection) -> ApiError {
        ApiError::validation(
            format!("The query parameters are wrong: {}", rejection.body_text()),
            "Check the parameters against /api/v1/openapi.json.",
        )
    }
}

/// 408: the request body did not arrive within its deadline
/// ([`BODY_READ_TIMEOUT`](crate::base::inbound::BODY_READ_TIMEOUT)).
pub fn body_timeout(timed_out: crate::base::inbound::BodyTimedOut) -> ApiError {
    ApiError::new(
        axum::http::StatusCode::REQUEST_TIMEOUT,
        "body_timeout",
        crate::base::error::ErrorCategory::Limit,
        format!(
            "The request body did not arrive within {} seconds.",
            timed_out.seconds
        ),
        "Send the request again over a faster connection.",
    )
}

/// The error for a body that could not be read: 408 when it did not arrive in time, 413 when
/// it was too large, 400 when it broke off.
pub fn bytes_rejection(rejection: BytesRejection) -> ApiError {
    if let Some(timed_out) = crate::base::inbound::body_timeout_of(&rejection) {
        return body_timeout(timed_out);
    }
    if rejection.status() != axum::http::StatusCode::PAYLOAD_TOO_LARGE {
        return ApiError::validation(
            format!(
                "The request body could not be read: {}.",
                rejection.body_text()
            ),
            "Send the request again with the whole body.",
        );
    }
    ApiError::new(
        axum::http::StatusCode::PAYLOAD_TOO_LARGE,
        "body_too_large",
        crate::base::error::ErrorCategory::Limit,
        "The request body is too large (1 MB at most; 5 MB for OPML imports).",
        "Send a smaller body.",
    )
}
