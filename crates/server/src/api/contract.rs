//! What the OpenAPI document promises beyond each handler's own annotation, added in one place
//! so that no operation can forget it:
//! - the answers the shared machinery gives: the extractors (400, 413, 415), authentication
//!   (401), the read-only key and CSRF checks (403), unknown ids (404), the rate limiters
//!   (429, with their headers), the request-head limits (414, 431), server faults (500) and
//!   an unreachable database (503);
//! - the security of every operation that needs credentials;
//! - formats (`date-time`, `uri`), the values of every field that takes one of a few words,
//!   integer ranges and list lengths.
//!
//! A handler that declares one of these statuses itself keeps its own, more precise,
//! description. A schema-driven fuzzer (`crates/server/tests/api_contract.rs`) checks that
//! every answer is one the document declares, in the declared shape.

use serde_json::Value;
use tidings_store::{ApiKeyScope, FetchStatus, FullTextMode};
use tidings_worker::ImportStatus;
use utoipa::openapi::header::HeaderBuilder;
use utoipa::openapi::path::{Operation, Parameter, ParameterIn};
use utoipa::openapi::response::ResponseBuilder;
use utoipa::openapi::schema::{KnownFormat, Object, SchemaFormat, SchemaType, Type};
use utoipa::openapi::security::SecurityRequirement;
use utoipa::openapi::{ContentBuilder, OpenApi, Ref, RefOr, Response, Schema};

use crate::base::limits::MAX_BODY_BYTES;

/// Completes `openapi` (with paths under `/api/v1`): common answers, security, formats and
/// enumerations.
pub fn complete(openapi: &mut OpenApi) {
    for item in openapi.paths.paths.values_mut() {
        let operations = [
            (false, &mut item.get),
            (true, &mut item.put),
            (true, &mut item.post),
            (true, &mut item.delete),
            (true, &mut item.patch),
        ];
        for (writes, operation) in operations {
            let Some(operation) = operation else { continue };
            complete_operation(operation, writes);
            for parameter in operation.parameters.iter_mut().flatten() {
                if let RefOr::T(parameter) = parameter {
                    describe_parameter(parameter);
                }
            }
        }
    }
    if let Some(components) = openapi.components.as_mut() {
        for (name, schema) in components.schemas.iter_mut() {
            if let RefOr::T(Schema::Object(object)) = schema {
                describe_properties(name, object);
            }
        }
    }
}

/// Whether an operation is open without credentials: its annotation says `security(())`.
fn is_public(operation: &Operation) -> bool {
    operation.security.as_ref().is_some_and(|requirements| {
        requirements
            .iter()
            .any(|r| r == &SecurityRequirement::default())
    })
}

fn complete_operation(operation: &mut Operation, writes: bool) {
    let public = is_public(operation);
    if !public {
        operation.security = Some(vec![
            SecurityRequirement::new::<_, [&str; 0], &str>("session", []),
            SecurityRequirement::new::<_, [&str; 0], &str>("api_key", []),
        ]);
    }
    let has_path_id = operation
        .parameters
        .iter()
        .flatten()
        .any(|p| matches!(p, RefOr::T(p) if p.parameter_in == ParameterIn::Path));
    let has_query = operation
        .parameters
        .iter()
        .flatten()
        .any(|p| matches!(p, RefOr::T(p) if p.parameter_in == ParameterIn::Query));
    let body_types: Vec<String> = match &operation.request_body {
        Some(RefOr::T(body)) => body.content.keys().cloned().collect(),
        _ => Vec::new(),
    };
    let json_body = body_types.iter().any(|t| t == "application/json");

    if has_query || !body_types.is_empty() {
        add(
            operation,
            400,
            "The request is wrong: malformed JSON, a missing, unknown or mistyped field or \
             parameter, a value out of range or over its length, or a control character. The \
             message names the field or parameter.",
        );
    }
    if !public {
        add(
            operation,
            401,
            "No valid credentials: sign in (session cookie) or send an API key.",
        );
    }
    if writes {
        add(
            operation,
            403,
            if public {
                "The request carries the session cookie but not this server's Origin (CSRF \
                 protection)."
            } else {
                "A read-only API key cannot change anything; a request with the session cookie \
                 must carry this server's Origin (CSRF protection)."
            },
        );
    }
    if has_path_id {
        add(
            operation,
            404,
            "No such object of the user's: the id is unknown, deleted or another user's.",
        );
    }
    if !body_types.is_empty() {
        add(
            operation,
            413,
            &format!(
                "The body is too large ({} MB at most; 5 MB for OPML imports).",
                MAX_BODY_BYTES / (1024 * 1024)
            ),
        );
    }
    if json_body {
        add(
            operation,
            415,
            "The body is not sent as Content-Type: application/json.",
        );
    }
    add(operation, 414, "The URL is over 8 KiB.");
    if !operation.responses.responses.contains_key("429") {
        operation
            .responses
            .responses
            .insert("429".into(), RefOr::T(rate_limited()));
    }
    add(operation, 431, "The request headers are over 32 KiB.");
    add(
        operation,
        500,
        "The server failed; the message holds a reference for the administrator.",
    );
    if !operation.responses.responses.contains_key("503") {
        operation
            .responses
            .responses
            .insert("503".into(), RefOr::T(database_unavailable()));
    }
}

/// The 503 answer while the database is unreachable (`database_unavailable`), with the time
/// to wait before trying again.
fn database_unavailable() -> Response {
    let mut response = error_response(
        "The database is unreachable (code database_unavailable); try again after Retry-After \
         seconds. tidings reconnects by itself.",
    );
    response.headers.insert(
        "Retry-After".into(),
        RefOr::T(
            HeaderBuilder::new()
                .schema(Some(Object::with_type(Type::Integer)))
                .build(),
        ),
    );
    response
}

/// Adds an error answer with the API's error body, unless the handler declares the status.
fn add(operation: &mut Operation, status: u16, description: &str) {
    let key = status.to_string();
    if operation.responses.responses.contains_key(&key) {
        return;
    }
    operation
        .responses
        .responses
        .insert(key, RefOr::T(error_response(description)));
}

fn error_response(description: &str) -> Response {
    ResponseBuilder::new()
        .description(description)
        .content(
            "application/json",
            ContentBuilder::new()
                .schema(Some(Ref::from_schema_name("ErrorBody")))
                .build(),
        )
        .build()
}

/// The 429 answer with the headers every limiter sets.
fn rate_limited() -> Response {
    let integer = || {
        HeaderBuilder::new()
            .schema(Some(Object::with_type(Type::Integer)))
            .build()
    };
    let mut response = error_response(
        "A rate limit was reached (see X-RateLimit-Scope for which); wait Retry-After seconds.",
    );
    for name in [
        "Retry-After",
        "X-RateLimit-Limit",
        "X-RateLimit-Remaining",
        "X-RateLimit-Reset",
    ] {
        response.headers.insert(name.into(), RefOr::T(integer()));
    }
    response.headers.insert(
        "X-RateLimit-Scope".into(),
        RefOr::T(
            HeaderBuilder::new()
                .schema(Some(Object::with_type(Type::String)))
                .description(Some(
                    "user, icons, address, subscribe, sign-in, sign-in-account or feed-refresh",
                ))
                .build(),
        ),
    );
    response
}

/// Whether a field or parameter of this name holds a time (RFC 3339).
fn is_time(name: &str) -> bool {
    name.ends_with("_at") || matches!(name, "as_of" | "since" | "until" | "before")
}

/// The properties of response schemas that always hold an absolute URL (`uri`) or a URL
/// relative to the server (`uri-reference`). Request fields take addresses as people type
/// them (`example.com`), so they have no format.
const URI_PROPERTIES: &[(&str, &str, &str)] = &[
    ("SubscriptionView", "feed_url", "uri"),
    ("SubscriptionView", "favicon_url", "uri-reference"),
    ("ItemSummaryView", "thumbnail_url", "uri"),
];

/// The words a field takes, by schema (or operation parameter) and field.
fn enumerations() -> Vec<(&'static str, &'static str, Vec<Value>)> {
    let words = |words: &[&str]| words.iter().map(|w| Value::from(*w)).collect::<Vec<_>>();
    let serialized = |values: Vec<Value>| values;
    let fetch_statuses = serialized(
        [
            FetchStatus::Active,
            FetchStatus::Backoff,
            FetchStatus::Stopped,
        ]
        .iter()
        .map(|s| {
            // A new status fails to compile here until it is listed above.
            match s {
                FetchStatus::Active | FetchStatus::Backoff | FetchStatus::Stopped => {}
            }
            serde_json::to_value(s).unwrap_or(Value::Null)
        })
        .collect(),
    );
    let scopes: Vec<Value> = [ApiKeyScope::Read, ApiKeyScope::ReadWrite]
        .iter()
        .map(|s| {
            match s {
                ApiKeyScope::Read | ApiKeyScope::ReadWrite => {}
            }
            serde_json::to_value(s).unwrap_or(Value::Null)
        })
        .collect();
    let import_statuses: Vec<Value> = [
        ImportStatus::Added,
        ImportStatus::Skipped,
        ImportStatus::Refused,
        ImportStatus::Failed,
    ]
    .iter()
    .map(|s| {
        match s {
            ImportStatus::Added
            | ImportStatus::Skipped
            | ImportStatus::Refused
            | ImportStatus::Failed => {}
        }
        serde_json::to_value(s).unwrap_or(Value::Null)
    })
    .collect();
    let full_text_modes: Vec<Value> = FullTextMode::ALL
        .iter()
        .map(|mode| Value::from(mode.as_str()))
        .collect();
    vec![
        ("SubscriptionView", "status", fetch_statuses),
        ("ApiKeyView", "scope", scopes.clone()),
        ("CreateApiKey", "scope", scopes),
        ("PreferencesView", "theme", words(&tidings_store::THEMES)),
        ("UpdatePreferences", "theme", words(&tidings_store::THEMES)),
        (
            "PreferencesView",
            "default_view",
            words(&tidings_store::DEFAULT_VIEWS),
        ),
        (
            "UpdatePreferences",
            "default_view",
            words(&tidings_store::DEFAULT_VIEWS),
        ),
        (
            "PreferencesView",
            "summarize",
            words(&tidings_store::SUMMARIZE_MODES),
        ),
        (
            "UpdatePreferences",
            "summarize",
            words(&tidings_store::SUMMARIZE_MODES),
        ),
        (
            "SummarizeResult",
            "status",
            words(&crate::api::summaries::SUMMARIZE_STATUSES),
        ),
        (
            "GeneratedSummaryView",
            "provider",
            words(&["local", "openai", "anthropic"]),
        ),
        ("ImportEntryView", "status", import_statuses),
        ("RefreshOutcome", "result", words(&["fetched", "busy"])),
        ("SubscriptionView", "full_text", full_text_modes.clone()),
        ("Subscribe", "full_text", full_text_modes.clone()),
        ("UpdateSubscription", "full_text", full_text_modes),
        ("query", "filter", words(crate::base::item_list::FILTERS)),
        ("query", "order", words(crate::base::item_list::ORDERS)),
        ("query", "include", words(crate::base::item_list::INCLUDES)),
        (
            "query",
            "window",
            words(&crate::api::popularity::window_names()),
        ),
    ]
}

/// The range of every bounded integer, by schema (or operation parameter) and field:
/// minimum, maximum and the step, as the handlers and the store check them.
fn integer_bounds() -> Vec<(&'static str, &'static str, i64, i64, Option<i64>)> {
    use tidings_store::{MAX_PAGE_SIZE, MAX_PREFERRED_PAGE_SIZE, MIN_PREFERRED_PAGE_SIZE};
    // tidings_store::check_interval's range (a unit test holds the two together).
    let interval = (30, 720, Some(30));
    vec![
        ("query", "limit", 1, MAX_PAGE_SIZE, None),
        ("query", "days", 1, crate::api::usage::MAX_REPORT_DAYS, None),
        (
            "query",
            "min_count",
            0,
            crate::api::popularity::MAX_MIN_COUNT,
            None,
        ),
        (
            "UpdatePreferences",
            "page_size",
            MIN_PREFERRED_PAGE_SIZE,
            MAX_PREFERRED_PAGE_SIZE,
            None,
        ),
        (
            "Subscribe",
            "interval_minutes",
            interval.0,
            interval.1,
            interval.2,
        ),
        (
            "UpdateSubscription",
            "interval_minutes",
            interval.0,
            interval.1,
            interval.2,
        ),
        (
            "UpdateGroup",
            "position",
            0,
            crate::api::groups::MAX_POSITION,
            None,
        ),
    ]
}

fn describe_parameter(parameter: &mut Parameter) {
    if parameter.parameter_in != ParameterIn::Query {
        return;
    }
    let name = parameter.name.clone();
    let Some(RefOr::T(Schema::Object(object))) = parameter.schema.as_mut() else {
        return;
    };
    describe_field("query", &name, object);
    if name == "q" && is_string(object) {
        object.max_length = Some(tidings_text::MAX_QUERY_CHARS);
    }
}

/// The most elements a request's list field takes, by schema and field.
const ARRAY_LIMITS: &[(&str, &str, usize)] = &[("MarkRead", "ids", tidings_store::MAX_MARK_IDS)];

fn describe_properties(schema: &str, object: &mut Object) {
    for (field, property) in object.properties.iter_mut() {
        match property {
            RefOr::T(Schema::Object(property)) => describe_field(schema, field, property),
            RefOr::T(Schema::Array(array)) => {
                if let Some((_, _, most)) = ARRAY_LIMITS
                    .iter()
                    .find(|(s, f, _)| *s == schema && *f == field)
                {
                    array.max_items = Some(*most);
                }
            }
            _ => {}
        }
    }
}

fn describe_field(schema: &str, field: &str, object: &mut Object) {
    if let Some((_, _, minimum, maximum, step)) = integer_bounds()
        .into_iter()
        .find(|(s, f, ..)| *s == schema && *f == field)
    {
        object.minimum = Some(minimum.into());
        object.maximum = Some(maximum.into());
        object.multiple_of = step.map(Into::into);
    }
    if !is_string(object) {
        return;
    }
    if is_time(field) {
        object.format = Some(SchemaFormat::KnownFormat(KnownFormat::DateTime));
    }
    if let Some((_, _, format)) = URI_PROPERTIES
        .iter()
        .find(|(s, f, _)| *s == schema && *f == field)
    {
        object.format = Some(SchemaFormat::Custom((*format).to_string()));
    }
    if let Some((_, _, values)) = enumerations()
        .into_iter()
        .find(|(s, f, _)| *s == schema && *f == field)
    {
        let mut values = values;
        if is_nullable(object) {
            values.push(Value::Null);
        }
        object.enum_values = Some(values);
    }
}

fn is_string(object: &Object) -> bool {
    match &object.schema_type {
        SchemaType::Type(Type::String) => true,
        SchemaType::Array(types) => types.contains(&Type::String),
        _ => false,
    }
}

fn is_nullable(object: &Object) -> bool {
    matches!(&object.schema_type, SchemaType::Array(types) if types.contains(&Type::Null))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_documented_interval_is_the_one_the_store_checks() {
        for (schema, field, minimum, maximum, step) in integer_bounds() {
            if field != "interval_minutes" {
                continue;
            }
            let step = step.unwrap();
            assert!(tidings_store::check_interval(minimum).is_ok(), "{schema}");
            assert!(tidings_store::check_interval(maximum).is_ok(), "{schema}");
            assert!(tidings_store::check_interval(minimum - step).is_err());
            assert!(tidings_store::check_interval(maximum + step).is_err());
            assert!(tidings_store::check_interval(minimum + step / 2).is_err());
        }
    }

    /// Every entry of the tables names a field the document has, so that renaming a field
    /// cannot silently drop its format or its values.
    #[test]
    fn every_operation_declares_the_database_outage_answer() {
        // The store answers 503 `database_unavailable` from any query (see
        // tests/database_outage.rs), so every operation can.
        let document = serde_json::to_value(crate::api::openapi()).unwrap();
        let mut operations = 0;
        for (path, item) in document["paths"].as_object().unwrap() {
            for (method, operation) in item.as_object().unwrap() {
                let answer = &operation["responses"]["503"];
                assert!(
                    answer["headers"]["Retry-After"].is_object(),
                    "{method} {path}: {answer}"
                );
                operations += 1;
            }
        }
        assert!(operations > 40, "{operations}");
    }

    #[test]
    fn every_table_entry_matches_a_field() {
        let document = serde_json::to_value(crate::api::openapi()).unwrap();
        let schemas = &document["components"]["schemas"];
        for (schema, field, _) in URI_PROPERTIES {
            let property = &schemas[schema]["properties"][field];
            assert!(
                property["format"].is_string(),
                "{schema}.{field}: {property}"
            );
        }
        for (schema, field, most) in ARRAY_LIMITS {
            let property = &schemas[schema]["properties"][field];
            assert_eq!(property["maxItems"], *most, "{schema}.{field}: {property}");
        }
        for (schema, field, minimum, maximum, _) in integer_bounds() {
            let found = if schema == "query" {
                document["paths"]
                    .as_object()
                    .unwrap()
                    .values()
                    .flat_map(|item| item.as_object().unwrap().values())
                    .flat_map(|op| op["parameters"].as_array().cloned().unwrap_or_default())
                    .any(|p| p["name"] == field && p["schema"]["maximum"] == maximum)
            } else {
                schemas[schema]["properties"][field]["minimum"] == minimum
            };
            assert!(found, "{schema}.{field}");
        }
        for (schema, field, values) in enumerations() {
            if schema == "query" {
                let found = document["paths"]
                    .as_object()
                    .unwrap()
                    .values()
                    .flat_map(|item| item.as_object().unwrap().values())
                    .flat_map(|op| op["parameters"].as_array().cloned().unwrap_or_default())
                    .any(|p| p["name"] == field && p["schema"]["enum"].is_array());
                assert!(found, "query parameter {field}");
            } else {
                let property = &schemas[schema]["properties"][field];
                let listed = property["enum"].as_array();
                assert!(
                    listed.is_some_and(|l| values.iter().all(|v| l.contains(v))),
                    "{schema}.{field}: {property}"
                );
            }
        }
    }
}
