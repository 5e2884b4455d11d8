//! What the API accepts as text, in one place: the longest value of every field of a request
//! body, and the characters no text may hold. The JSON extractor checks every request body
//! against this table before the handler sees it, and the OpenAPI document takes its
//! `maxLength` values from it, so the two cannot disagree.

use axum::http::StatusCode;
use serde_json::Value;

use crate::base::error::{ApiError, ApiResult, ErrorCategory};
use crate::ratelimit::RateLimiter;

/// The largest request body accepted, except OPML imports (F27).
pub const MAX_BODY_BYTES: usize = 1024 * 1024;
/// The largest OPML import accepted.
pub const MAX_OPML_BYTES: usize = 5 * 1024 * 1024;

/// The longest user name, in characters.
pub const MAX_USERNAME_CHARS: usize = tidings_store::MAX_USERNAME_LEN;
/// The longest password, in characters (the password policy also caps it at 1024 bytes).
pub const MAX_PASSWORD_CHARS: usize = crate::password::MAX_PASSWORD_BYTES;
/// The longest feed or page address.
pub const MAX_URL_CHARS: usize = 2048;
/// The longest subscription title.
pub const MAX_TITLE_CHARS: usize = 300;
/// The longest group or API key name.
pub const MAX_NAME_CHARS: usize = 100;
/// The longest setup token (the printed one has 64 characters).
pub const MAX_TOKEN_CHARS: usize = 128;
/// The longest time (RFC 3339) or choice (theme, view).
pub const MAX_SHORT_CHARS: usize = 64;
/// The longest value of any string field not named in [`FIELD_LIMITS`].
pub const MAX_OTHER_CHARS: usize = 1000;

/// The longest value, in characters, of each request-body field by its name.
pub const FIELD_LIMITS: &[(&str, usize)] = &[
    ("username", MAX_USERNAME_CHARS),
    ("confirm_username", MAX_USERNAME_CHARS),
    ("password", MAX_PASSWORD_CHARS),
    ("current_password", MAX_PASSWORD_CHARS),
    ("new_password", MAX_PASSWORD_CHARS),
    ("token", MAX_TOKEN_CHARS),
    ("url", MAX_URL_CHARS),
    ("feed_url", MAX_URL_CHARS),
    ("title", MAX_TITLE_CHARS),
    ("name", MAX_NAME_CHARS),
    ("expires_at", MAX_SHORT_CHARS),
    ("before", MAX_SHORT_CHARS),
    ("theme", MAX_SHORT_CHARS),
    ("default_view", MAX_SHORT_CHARS),
    // A search (the usage count of one): the search language's own bound.
    ("q", tidings_text::MAX_QUERY_CHARS),
    // A scraped source's configuration (F7): the scraper's own bounds.
    ("item_selector", tidings_scrape::MAX_SELECTOR_LEN),
    ("title_selector", tidings_scrape::MAX_SELECTOR_LEN),
    ("url_selector", tidings_scrape::MAX_SELECTOR_LEN),
    ("date_selector", tidings_scrape::MAX_SELECTOR_LEN),
    ("date_format", tidings_scrape::MAX_SELECTOR_LEN),
    ("summary_selector", tidings_scrape::MAX_SELECTOR_LEN),
    ("data_key", tidings_scrape::MAX_SELECTOR_LEN),
    ("context_key", tidings_scrape::MAX_SELECTOR_LEN),
    ("url_prefix", tidings_scrape::MAX_URL_PREFIX_LEN),
];

/// The longest accepted value of the field `name`.
pub fn max_chars(name: &str) -> usize {
    FIELD_LIMITS
        .iter()
        .find(|(field, _)| *field == name)
        .map_or(MAX_OTHER_CHARS, |(_, max)| *max)
}

/// Whether a character is a control character (Unicode category Cc: U+0000–U+001F and
/// U+007F–U+009F). None of the API's fields holds text where one belongs: names, titles,
/// addresses, passwords and tokens are all one line.
pub fn is_refused_char(c: char) -> bool {
    c.is_control()
}

/// Checks one text value of the field `field` (its name as the client sent it, e.g. `title`
/// or `ids[2]`) against the limit of the field `name`.
pub fn check_text(field: &str, name: &str, value: &str) -> Result<(), ApiError> {
    if let Some((position, c)) = value.chars().enumerate().find(|(_, c)| is_refused_char(*c)) {
        return Err(ApiError::new(
            StatusCode::BAD_REQUEST,
            "invalid_characters",
            ErrorCategory::Validation,
            format!(
                "The field {field} holds a control character (U+{:04X}) at character {}; \
                 control characters such as NUL, tab and line breaks are not accepted.",
                c as u32,
                position + 1
            ),
            format!("Remove the control characters from {field} and send it again."),
        ));
    }
    let max = max_chars(name);
    let length = value.chars().count();
    if length > max {
        return Err(ApiError::new(
            StatusCode::BAD_REQUEST,
            "too_long",
            ErrorCategory::Validation,
            format!("The field {field} is {length} characters long; at most {max} are accepted."),
            format!("Shorten {field} to {max} characters or fewer."),
        ));
    }
    Ok(())
}

/// Checks every string in a request body, object keys included, refusing the first control
/// character or over-long value with a 400 that names the field.
pub fn check_body(value: &Value) -> Result<(), ApiError> {
    walk(value, "body", "")
}

fn walk(value: &Value, path: &str, name: &str) -> Result<(), ApiError> {
    match value {
        Value::String(text) => check_text(path, name, text),
        Value::Array(values) => values
            .iter()
            .enumerate()
            .try_for_each(|(i, v)| walk(v, &format!("{path}[{i}]"), name)),
        Value::Object(fields) => fields.iter().try_for_each(|(key, v)| {
            let path = if path == "body" {
                key.clone()
            } else {
                format!("{path}.{key}")
            };
            check_text(&path, "", key)?;
            walk(v, &path, key)
        }),
        Value::Null | Value::Bool(_) | Value::Number(_) => Ok(()),
    }
}

/// Sets `maxLength` on the string properties of every request body schema of `openapi`, from
/// [`FIELD_LIMITS`].
pub fn document_limits(openapi: &mut utoipa::openapi::OpenApi) {
    use utoipa::openapi::{RefOr, Schema};
    let mut request_schemas = Vec::new();
    for item in openapi.paths.paths.values() {
        let operations = [&item.get, &item.put, &item.post, &item.delete, &item.patch];
        for operation in operations.into_iter().flatten() {
            let Some(RefOr::T(body)) = &operation.request_body else {
                continue;
            };
            for content in body.content.values() {
                if let RefOr::T(content) = content
                    && let Some(RefOr::Ref(reference)) = &content.schema
                    && let Some(name) = reference.ref_location.rsplit('/').next()
                {
                    request_schemas.push(name.to_string());
                }
            }
        }
    }
    let Some(components) = openapi.components.as_mut() else {
        return;
    };
    for name in request_schemas {
        let Some(RefOr::T(Schema::Object(object))) = components.schemas.get_mut(&name) else {
            continue;
        };
        for (field, property) in object.properties.iter_mut() {
            if let RefOr::T(Schema::Object(property)) = property
                && is_string(property)
            {
                property.max_length = Some(max_chars(field));
            }
        }
    }
}

fn is_string(object: &utoipa::openapi::schema::Object) -> bool {
    use utoipa::openapi::schema::{SchemaType, Type};
    match &object.schema_type {
        SchemaType::Type(Type::String) => true,
        SchemaType::Array(types) => types.contains(&Type::String),
        _ => false,
    }
}

/// Counts one request against `limiter`, refusing it with 429 when the limit is reached.
pub(crate) async fn within_limit(limiter: &RateLimiter, key: &str) -> ApiResult<()> {
    let decision = limiter.check(key).await;
    if decision.allowed {
        Ok(())
    } else {
        Err(ApiError::limited(decision))
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    #[test]
    fn control_characters_are_refused_with_the_field_named() {
        for bad in [
            "a\u{0}b",
            "tab\there",
            "line\nbreak",
            "bell\u{7}",
            "del\u{7f}",
        ] {
            let error = check_body(&json!({"name": bad})).unwrap_err();
            assert_eq!(error.status, StatusCode::BAD_REQUEST);
            assert_eq!(error.detail.code, "invalid_characters");
            assert!(error.detail.message.contains("name"), "{:?}", error.detail);
        }
        let error = check_body(&json!({"ids": ["ok", "x\u{0}"]})).unwrap_err();
        assert!(
            error.detail.message.contains("ids[1]"),
            "{:?}",
            error.detail
        );
        let error = check_body(&json!({"a\u{0}": 1})).unwrap_err();
        assert_eq!(error.detail.code, "invalid_characters");
        assert!(check_body(&json!({"name": "José 東京 ✓", "n": 1, "b": null})).is_ok());
    }

    #[test]
    fn lengths_are_counted_in_characters_per_field() {
        assert!(check_body(&json!({"title": "é".repeat(MAX_TITLE_CHARS)})).is_ok());
        let error = check_body(&json!({"title": "x".repeat(MAX_TITLE_CHARS + 1)})).unwrap_err();
        assert_eq!(error.detail.code, "too_long");
        assert!(error.detail.message.contains("title"));
        assert!(check_body(&json!({"url": "x".repeat(MAX_URL_CHARS)})).is_ok());
        assert!(check_body(&json!({"url": "x".repeat(MAX_URL_CHARS + 1)})).is_err());
        assert!(check_body(&json!({"unlisted": "x".repeat(MAX_OTHER_CHARS + 1)})).is_err());
    }
}
