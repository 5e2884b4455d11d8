//! OPML import and export (F37), reusing the worker's OPML code that `tidings opml` uses.

use axum::body::Bytes;
use axum::extract::rejection::BytesRejection;
use axum::extract::{DefaultBodyLimit, State};
use axum::http::{HeaderMap, HeaderValue, StatusCode, header};
use axum::response::{IntoResponse, Response};
use serde::{Deserialize, Serialize};
use tidings_store::{ImportJob, ImportJobStatus, StoreError};
use tidings_worker::{
    ImportError, ImportOptions, MAX_RUNNING_IMPORTS, OPML_JOB_KIND, OpmlJobSummary,
    start_opml_import,
};
use utoipa::ToSchema;
use utoipa_axum::router::OpenApiRouter;
use utoipa_axum::routes;

use crate::base::auth::Auth;
use crate::base::error::{ApiError, ApiResult, ErrorBody, ErrorCategory, capitalize};
use crate::base::extract::{Json, Path};
use crate::base::limits::MAX_OPML_BYTES;
use crate::base::state::AppState;
use crate::base::time::time;

pub(crate) fn router() -> OpenApiRouter<AppState> {
    OpenApiRouter::new()
        .routes(routes!(export, import))
        .routes(routes!(history))
        .routes(routes!(import_status))
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
#[derive(Debug, Serialize, Deserialize, ToSchema)]
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

/// An import, started.
#[derive(Debug, Serialize, ToSchema)]
pub struct ImportStarted {
    /// The import's id: follow it at `GET /opml/imports/{id}`.
    pub import_id: i64,
    /// `running`.
    pub status: &'static str,
    /// Feed outlines in the file.
    pub total: i64,
}

/// An import and how far it got.
#[derive(Debug, Serialize, ToSchema)]
pub struct ImportJobView {
    /// The import's id.
    pub import_id: i64,
    /// `running`; `done` (every feed settled, and the items of the new ones stored);
    /// `interrupted` (the server stopped while it ran: what it did is kept, importing the
    /// file again does the rest); `failed` (the database failed; `error` says how).
    pub status: String,
    /// The uploaded file's name, when given (`X-File-Name`).
    pub file_name: Option<String>,
    /// Feed outlines in the file.
    pub total: i64,
    /// Feeds settled so far (checked, or settled without a request).
    pub checked: i64,
    /// Subscriptions added so far.
    pub added: i64,
    /// Feeds skipped so far (already subscribed, listed twice).
    pub skipped: i64,
    /// Feeds not imported so far: refused (not allowed, over a limit) or failed (certainly no
    /// feed: 404, 410, not a feed), each with its reason in its entry.
    pub failed: i64,
    /// Of `failed`, those refused before any request; set once done.
    pub refused: Option<usize>,
    /// Feeds not imported because the file lists more than 1,000; set once done.
    pub over_file_limit: Option<usize>,
    /// Feeds not imported because the subscription limit was reached; set once done.
    pub over_subscription_limit: Option<usize>,
    /// What a limit left out, in plain words; absent when nothing was.
    pub notice: Option<String>,
    /// Why a failed import failed.
    pub error: Option<String>,
    /// When it started.
    pub created_at: String,
    /// When it ended.
    pub finished_at: Option<String>,
    /// One entry per feed, in file order, once done (empty while running).
    pub entries: Vec<ImportEntryView>,
}

fn job_view(job: ImportJob) -> ImportJobView {
    let summary: OpmlJobSummary = job
        .summary
        .as_deref()
        .and_then(|summary| serde_json::from_str(summary).ok())
        .unwrap_or_default();
    let finished = job.summary.is_some();
    let entries = match job.status {
        ImportJobStatus::Running => Vec::new(),
        _ => serde_json::from_str(&job.entries).unwrap_or_default(),
    };
    ImportJobView {
        import_id: job.id,
        status: job.status.as_str().to_owned(),
        file_name: job.source,
        total: job.progress.total,
        checked: job.progress.checked,
        added: job.progress.added,
        skipped: job.progress.skipped,
        failed: job.progress.failed,
        refused: finished.then_some(summary.refused),
        over_file_limit: finished.then_some(summary.over_file_limit),
        over_subscription_limit: finished.then_some(summary.over_subscription_limit),
        notice: summary.notice.map(|notice| capitalize(&notice) + "."),
        error: job.error,
        created_at: time(job.created_at),
        finished_at: job.finished_at.map(time),
        entries,
    }
}

/// Import an OPML file (the request body, up to 5 MB and 1,000 feeds) in the background: the
/// answer comes at once with the import's id, and `GET /opml/imports/{id}` follows it. Every
/// feed is subscribed in the group named by its folder, titled as in the file, and fetched
/// once (its items stored), many at once under the same per-host limits as the worker's
/// fetches; a feed that is certainly no feed (404, 410, not a feed) is not kept, one whose
/// fetch failed in a way that may pass (429, 5xx, a time-out) is kept with its error.
/// Duplicates, refusals, failures and what a limit left out are reported per URL once the
/// import is done, and the import is kept in the user's history. A user runs at most three
/// imports at once.
#[utoipa::path(post, path = "/opml", tag = "opml",
    request_body(content = String, content_type = "text/x-opml", description = "The OPML file"),
    responses(
        (status = 202, description = "Started; follow it at `GET /opml/imports/{import_id}`", body = ImportStarted),
        (status = 413, description = "Larger than 5 MB", body = ErrorBody),
        (status = 400, description = "Not OPML", body = ErrorBody),
        (status = 429, description = "Three imports of this user are running already", body = ErrorBody),
    ))]
async fn import(
    State(state): State<AppState>,
    auth: Auth,
    headers: HeaderMap,
    body: Result<Bytes, BytesRejection>,
) -> ApiResult<(StatusCode, HeaderMap, Json<ImportStarted>)> {
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
    let started = start_opml_import(
        &state.fetcher,
        auth.user.id,
        &body,
        options,
        MAX_RUNNING_IMPORTS,
    )
    .await
    .map_err(|error| match error {
        ImportError::Opml(reason) => ApiError::new(
            StatusCode::BAD_REQUEST,
            "invalid_opml",
            ErrorCategory::Validation,
            format!("The file is not usable OPML: {reason}"),
            "Export the subscriptions again from your old reader and upload that file.",
        ),
        ImportError::Store(StoreError::LimitReached { limit, .. }) => {
            ApiError::imports_running(limit)
        }
        ImportError::Store(store) => store.into(),
    })?;
    let mut response_headers = HeaderMap::new();
    if let Ok(location) = HeaderValue::from_str(&format!("/api/v1/opml/imports/{}", started.job.id))
    {
        response_headers.insert(header::LOCATION, location);
    }
    Ok((
        StatusCode::ACCEPTED,
        response_headers,
        Json(ImportStarted {
            import_id: started.job.id,
            status: "running",
            total: started.job.progress.total,
        }),
    ))
}

/// One OPML import of the user, with its per-URL report once done.
#[utoipa::path(get, path = "/opml/imports/{id}", tag = "opml",
    params(("id" = i64, Path, description = "The import's id (`import_id`)")),
    responses(
        (status = 200, body = ImportJobView),
        (status = 404, description = "No such import of this user", body = ErrorBody),
    ))]
async fn import_status(
    State(state): State<AppState>,
    auth: Auth,
    Path(id): Path<i64>,
) -> ApiResult<Json<ImportJobView>> {
    let job = state
        .store
        .import_job(auth.user.id, id)
        .await?
        .filter(|job| job.kind == OPML_JOB_KIND)
        .ok_or_else(|| ApiError::not_found("Import"))?;
    Ok(Json(job_view(job)))
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
    /// Refused or failed.
    pub failed: i64,
    /// `running`, `done`, `interrupted` or `failed` (see `GET /opml/imports/{id}`).
    pub status: String,
}

/// The imports.
#[derive(Debug, Serialize, ToSchema)]
pub struct ImportHistory {
    /// Newest first.
    pub imports: Vec<ImportHistoryEntry>,
}

/// The user's OPML imports, newest first (the last 100), running ones included.
#[utoipa::path(get, path = "/opml/imports", tag = "opml",
    responses((status = 200, body = ImportHistory)))]
async fn history(State(state): State<AppState>, auth: Auth) -> ApiResult<Json<ImportHistory>> {
    let jobs = state
        .store
        .list_import_jobs(auth.user.id, Some(OPML_JOB_KIND))
        .await?;
    Ok(Json(ImportHistory {
        imports: jobs
            .into_iter()
            .map(|job| ImportHistoryEntry {
                id: job.id,
                created_at: time(job.created_at),
                file_name: job.source,
                outlines: job.progress.total,
                added: job.progress.added,
                skipped: job.progress.skipped,
                failed: job.progress.failed,
                status: job.status.as_str().to_owned(),
            })
            .collect(),
    }))
}
