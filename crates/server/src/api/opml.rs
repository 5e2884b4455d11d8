//! OPML import and export (F37), reusing the worker's OPML code that `tidings opml` uses.

use axum::body::Bytes;
use axum::extract::rejection::BytesRejection;
use axum::extract::{DefaultBodyLimit, State};
use axum::http::{HeaderMap, HeaderValue, StatusCode, header};
use axum::response::{IntoResponse, Response};
use serde::Serialize;
use tidings_worker::{ImportError, ImportOptions, ImportReport, import_opml};
use utoipa::ToSchema;
use utoipa_axum::router::OpenApiRouter;
use utoipa_axum::routes;

use crate::base::auth::Auth;
use crate::base::error::{ApiError, ApiResult, ErrorBody, ErrorCategory, capitalize};
use crate::base::extract::Json;
use crate::base::limits::MAX_OPML_BYTES;
use crate::base::state::AppState;
use crate::base::time::time;

pub(crate) fn router() -> OpenApiRouter<AppState> {
    OpenApiRouter::new()
        .routes(routes!(export, import))
        .routes(routes!(history))
        // Imports may be larger than other bodies.
        .layer(DefaultBodyLimit::max(MAX_OPML_BYTES))
}

/// Export the user's subscriptions as OPML 2.0, with groups as folders.
#[utoipa::path(get, path = "/opml", tag = "opml",
    responses((status = 200, description = "The OPML file", content_type = "text/x-opml")))]
async fn export(State(state): State<AppState>, auth: Auth) -> ApiResult<Response> {
    let title = format!("tidings subscriptions of {}", auth.user.username);
    let document = tidings_worker::export_opml(&state.store, auth.user.id, &title).await?;
    let mut response = document.into_response();
    let headers = response.headers_mut();
    headers.insert(
        header::CONTENT_TYPE,
        HeaderValue::from_static("text/x-opml; charset=utf-8"),
    );
    headers.insert(
        header::CONTENT_DISPOSITION,
        HeaderValue::from_static("attachment; filename=\"tidings.opml\""),
    );
    Ok(response)
}

/// One line of an import report.
#[derive(Debug, Serialize, ToSchema)]
pub struct ImportEntryView {
    /// The feed URL as written in the file.
    pub url: String,
    /// Its title in the file.
    pub title: Option<String>,
    /// The group it went into.
    pub group: Option<String>,
    /// `added`, `skipped`, `refused` (not allowed, or over a limit) or `failed` (certainly
    /// no feed: 404, 410, or not a feed). A feed whose first fetch failed in a way that may
    /// pass (429, 5xx, a time-out, a network error) is `added`, with that error as reason.
    pub status: String,
    /// Why it was skipped, refused or failed; for an added feed, the error of its first
    /// fetch if it had one.
    pub reason: Option<String>,
    /// What to do about a feed that was refused or failed.
    pub what_to_do: Option<String>,
    /// The new subscription, when added.
    pub subscription_id: Option<i64>,
}

/// The report of an import.
#[derive(Debug, Serialize, ToSchema)]
pub struct ImportReportView {
    /// The history entry's id.
    pub import_id: i64,
    /// Feed outlines in the file.
    pub outlines: usize,
    /// Subscriptions added.
    pub added: usize,
    /// Feeds skipped (already subscribed, listed twice).
    pub skipped: usize,
    /// Feeds refused, with the reason in their entry.
    pub refused: usize,
    /// Feeds that are certainly no feed (404, 410, not a feed), with the reason in their
    /// entry; not subscribed.
    pub failed: usize,
    /// Feeds not imported because the file lists more than 1,000.
    pub over_file_limit: usize,
    /// Feeds not imported because the subscription limit was reached.
    pub over_subscription_limit: usize,
    /// What a limit left out, in plain words; absent when nothing was.
    pub notice: Option<String>,
    /// One entry per feed, in file order.
    pub entries: Vec<ImportEntryView>,
}

fn report_view(report: ImportReport, options: &ImportOptions) -> ImportReportView {
    ImportReportView {
        notice: report
            .limit_notice(options)
            .map(|notice| capitalize(&notice) + "."),
        import_id: report.import_id,
        outlines: report.outlines,
        added: report.added,
        skipped: report.skipped,
        refused: report.refused,
        failed: report.failed,
        over_file_limit: report.over_file_limit,
        over_subscription_limit: report.over_subscription_limit,
        entries: report
            .entries
            .into_iter()
            .map(|entry| ImportEntryView {
                status: serde_json::to_value(entry.status)
                    .ok()
                    .and_then(|v| v.as_str().map(str::to_string))
                    .unwrap_or_default(),
                url: entry.url,
                title: entry.title,
                group: entry.group,
                reason: entry.reason,
                what_to_do: entry.what_to_do,
                subscription_id: entry.subscription_id,
            })
            .collect(),
    }
}

/// Import an OPML file (the request body, up to 5 MB and 1,000 feeds): every feed is
/// subscribed in the group named by its folder, titled as in the file, and fetched once; a
/// feed that is certainly no feed (404, 410, not a feed) is not kept, one whose fetch failed
/// in a way that may pass (429, 5xx, a time-out) is kept with its error. Duplicates, refusals, failures and
/// what a limit left out are reported per URL, and the import is kept in the user's history.
#[utoipa::path(post, path = "/opml", tag = "opml",
    request_body(content = String, content_type = "text/x-opml", description = "The OPML file"),
    responses(
        (status = 200, body = ImportReportView),
        (status = 413, description = "Larger than 5 MB", body = ErrorBody),
        (status = 400, description = "Not OPML", body = ErrorBody),
    ))]
async fn import(
    State(state): State<AppState>,
    auth: Auth,
    headers: HeaderMap,
    body: Result<Bytes, BytesRejection>,
) -> ApiResult<Json<ImportReportView>> {
    let body = body.map_err(crate::base::extract::bytes_rejection)?;
    if body.iter().all(u8::is_ascii_whitespace) {
        return Err(ApiError::validation(
            "The request body is empty: send the OPML file as the body.",
            "For example: curl --data-binary @subscriptions.opml -H 'Content-Type: text/x-opml' …",
        ));
    }
    let file_name = headers
        .get("x-file-name")
        .and_then(|v| v.to_str().ok())
        .map(|name| name.chars().take(200).collect::<String>());
    let options = ImportOptions {
        file_name,
        max_subscriptions: Some(state.config.max_subscriptions),
        ..ImportOptions::default()
    };
    let report = import_opml(&state.fetcher, auth.user.id, &body, &options)
        .await
        .map_err(|error| match error {
            ImportError::Opml(reason) => ApiError::new(
                StatusCode::BAD_REQUEST,
                "invalid_opml",
                ErrorCategory::Validation,
                format!("The file is not usable OPML: {reason}"),
                "Export the subscriptions again from your old reader and upload that file.",
            ),
            ImportError::Store(store) => store.into(),
        })?;
    Ok(Json(report_view(report, &options)))
}

/// One past import.
#[derive(Debug, Serialize, ToSchema)]
pub struct ImportHistoryEntry {
    /// The import's id.
    pub id: i64,
    /// When it ran.
    pub created_at: String,
    /// The uploaded file's name, when given (`X-File-Name`).
    pub file_name: Option<String>,
    /// Feed outlines in the file.
    pub outlines: i64,
    /// Added.
    pub added: i64,
    /// Skipped.
    pub skipped: i64,
    /// Refused.
    pub failed: i64,
}

/// The imports.
#[derive(Debug, Serialize, ToSchema)]
pub struct ImportHistory {
    /// Newest first.
    pub imports: Vec<ImportHistoryEntry>,
}

/// The user's OPML import history.
#[utoipa::path(get, path = "/opml/imports", tag = "opml",
    responses((status = 200, body = ImportHistory)))]
async fn history(State(state): State<AppState>, auth: Auth) -> ApiResult<Json<ImportHistory>> {
    let records = state.store.list_opml_imports(auth.user.id).await?;
    Ok(Json(ImportHistory {
        imports: records
            .into_iter()
            .map(|r| ImportHistoryEntry {
                id: r.id,
                created_at: time(r.created_at),
                file_name: r.file_name,
                outlines: r.outlines,
                added: r.added,
                skipped: r.skipped,
                failed: r.failed,
            })
            .collect(),
    }))
}
