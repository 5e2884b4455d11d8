//! Imports from another reader (issue 32, F37), the API of what `tidings import` does: a Google
//! Reader API server (FreshRSS, Miniflux, another tidings…), a Miniflux server, or a file
//! (OPML, a starred-items JSON), run as a background job like an OPML upload. What can be
//! checked before anything leaves the server (the address's shape, the address guard, the
//! credentials being given, the file's format) is a 400 at once; the rest (signing in,
//! reaching the server) fails the job with its reason. Credentials stay in the job's task:
//! they are not stored, logged nor answered back.

use axum::body::Bytes;
use axum::extract::rejection::BytesRejection;
use axum::extract::{DefaultBodyLimit, State};
use axum::http::{HeaderMap, HeaderValue, StatusCode, header};
use serde::{Deserialize, Serialize};
use tidings_store::{ImportJob, ImportJobStatus, StoreError};
use tidings_worker::{
    HISTORY_JOB_KIND, HistoryInput, HistoryOptions, HistoryReport, HistorySource, KindReport,
    MAX_RUNNING_IMPORTS, job_source_parts, read_history_file, start_history_import,
};
use utoipa::{IntoParams, ToSchema};
use utoipa_axum::router::OpenApiRouter;
use utoipa_axum::routes;

use crate::base::auth::Auth;
use crate::base::error::{ApiError, ApiResult, ErrorBody, ErrorCategory};
use crate::base::extract::{Json, Path, Query};
use crate::base::limits::MAX_OPML_BYTES;
use crate::base::state::AppState;
use crate::base::time::time;

pub(crate) fn router() -> OpenApiRouter<AppState> {
    OpenApiRouter::new()
        .routes(routes!(start, list))
        .routes(routes!(start_file))
        .routes(routes!(status))
        // A starred-items export may be larger than other bodies, as an OPML file may.
        .layer(DefaultBodyLimit::max(MAX_OPML_BYTES))
}

/// An import from another reader's server.
#[derive(Debug, Deserialize, ToSchema)]
#[serde(deny_unknown_fields)]
pub struct StartImport {
    /// `greader` (a Google Reader API server: FreshRSS, Miniflux, Inoreader-compatible, The
    /// Old Reader, another tidings) or `miniflux` (the Miniflux API, with per-feed settings).
    pub source: String,
    /// The server: for `greader` the API's root (FreshRSS: `https://rss.example/api/greader.php`),
    /// for `miniflux` its address (`https://miniflux.example`).
    pub url: String,
    /// `greader`: the user name there.
    pub login: Option<String>,
    /// `greader`: the (API) password there (FreshRSS: its API password; tidings: an API key).
    pub password: Option<String>,
    /// `miniflux`: an API key of the account there (Miniflux: Settings > API Keys).
    pub api_key: Option<String>,
    /// Say what would be imported, change nothing, fetch no feed.
    #[serde(default)]
    pub dry_run: bool,
}

/// The parameters of a file import.
#[derive(Debug, Default, Deserialize, IntoParams)]
#[into_params(parameter_in = Query)]
#[serde(deny_unknown_fields)]
pub struct FileImportParams {
    /// Say what would be imported, change nothing, fetch no feed.
    #[serde(default)]
    pub dry_run: bool,
}

/// An import, started.
#[derive(Debug, Serialize, ToSchema)]
pub struct HistoryImportStarted {
    /// The import's id: follow it at `GET /imports/{id}`.
    pub import_id: i64,
    /// `running`.
    pub status: &'static str,
}

/// What an import did (or in a dry run would do) to one kind of thing.
#[derive(Debug, Serialize, ToSchema)]
pub struct KindReportView {
    /// Added or changed (a dry run: would be).
    pub added: usize,
    /// Already so: nothing to do.
    pub unchanged: usize,
    /// Starred items whose feed is gone or no longer lists them, kept as bookmarks.
    pub kept_as_bookmark: usize,
    /// Not imported; `reasons` says why, one line each.
    pub failed: usize,
    /// Why each of `failed` was not imported.
    pub reasons: Vec<String>,
    /// Not carried over because tidings has no place for it (a setting it does not have, a
    /// label on an item kept as a bookmark): no failure, and no second run changes it.
    pub not_kept: usize,
    /// One line for each of `not_kept`.
    pub notes: Vec<String>,
    /// What was added (a dry run: would be), by name, for rules.
    pub names: Vec<String>,
}

impl From<KindReport> for KindReportView {
    fn from(kind: KindReport) -> KindReportView {
        KindReportView {
            added: kind.added,
            unchanged: kind.unchanged,
            kept_as_bookmark: kind.kept_as_bookmark,
            failed: kind.failed,
            reasons: kind.reasons,
            not_kept: kind.not_kept,
            notes: kind.notes,
            names: kind.names,
        }
    }
}

/// A finished import's report, per kind.
#[derive(Debug, Serialize, ToSchema)]
pub struct HistoryReportView {
    /// Subscriptions (with their titles).
    pub subscriptions: KindReportView,
    /// Folders, tidings' groups.
    pub folders: KindReportView,
    /// Starred items.
    pub starred: KindReportView,
    /// Read and unread marks of the items tidings has.
    pub read_marks: KindReportView,
    /// Item labels.
    pub labels: KindReportView,
    /// Per-feed settings of new subscriptions (from Miniflux, or a tidings export).
    pub settings: KindReportView,
    /// Rules made of the other reader's filters: Miniflux's block and keep rules (from its
    /// API), FreshRSS' read filters (from its OPML export).
    pub rules: KindReportView,
}

impl From<HistoryReport> for HistoryReportView {
    fn from(report: HistoryReport) -> HistoryReportView {
        HistoryReportView {
            subscriptions: report.subscriptions.into(),
            folders: report.folders.into(),
            starred: report.starred.into(),
            read_marks: report.read_marks.into(),
            labels: report.labels.into(),
            settings: report.settings.into(),
            rules: report.rules.into(),
        }
    }
}

/// An import from another reader and how far it got.
#[derive(Debug, Serialize, ToSchema)]
pub struct HistoryImportView {
    /// The import's id.
    pub import_id: i64,
    /// `running`; `done` (`report` says what it did); `failed` (`error` says why: a refused
    /// sign-in, an unreachable server…); `interrupted` (the server stopped while it ran: what
    /// it did is kept, importing again does the rest).
    pub status: String,
    /// `greader`, `miniflux` or `file`.
    pub source: String,
    /// The server's address, or the file's name.
    pub from: Option<String>,
    /// Whether it is a dry run, which changes nothing.
    pub dry_run: bool,
    /// While running: `reading` (the other reader's history is being read) or `importing`.
    pub phase: Option<String>,
    /// The history's feeds and items, once read.
    pub total: i64,
    /// Of `total`, those settled so far.
    pub checked: i64,
    /// Things added (or kept as bookmarks), over every kind; set once done.
    pub added: i64,
    /// Things already there, over every kind; set once done.
    pub unchanged: i64,
    /// Things not imported, over every kind; set once done (`report` says why).
    pub failed: i64,
    /// Whether everything was imported; set once done.
    pub complete: Option<bool>,
    /// What the import did per kind, once done.
    pub report: Option<HistoryReportView>,
    /// Why a failed import failed, and what to do.
    pub error: Option<String>,
    /// When it started.
    pub created_at: String,
    /// When it ended.
    pub finished_at: Option<String>,
}

fn job_view(job: ImportJob) -> HistoryImportView {
    let (kind, from) = job_source_parts(job.source.as_deref());
    let dry_run = kind.ends_with(":dry-run");
    let source = kind.trim_end_matches(":dry-run").to_owned();
    let report: Option<HistoryReport> = job
        .summary
        .as_deref()
        .and_then(|summary| serde_json::from_str(summary).ok());
    let running = job.status == ImportJobStatus::Running;
    let phase = running.then(|| {
        if job.progress.total == 0 && source != "file" {
            "reading".to_owned()
        } else {
            "importing".to_owned()
        }
    });
    HistoryImportView {
        import_id: job.id,
        status: job.status.as_str().to_owned(),
        source,
        from,
        dry_run,
        phase,
        total: job.progress.total,
        checked: job.progress.checked,
        added: job.progress.added,
        unchanged: job.progress.skipped,
        failed: job.progress.failed,
        complete: report.as_ref().map(HistoryReport::complete),
        report: report.map(HistoryReportView::from),
        error: job.error,
        created_at: time(job.created_at),
        finished_at: job.finished_at.map(time),
    }
}

/// A required text field, trimmed, or the 400 that says what to give.
fn required(value: Option<String>, field: &str, action: &str) -> Result<String, ApiError> {
    match value.map(|value| value.trim().to_owned()) {
        Some(value) if !value.is_empty() => Ok(value),
        _ => Err(ApiError::validation(
            format!("The field {field} is missing or empty."),
            action,
        )),
    }
}

/// The server's address, checked before anything leaves this server: a web address the
/// address guard lets through (a private one is refused unless the administrator allows it).
fn checked_url(state: &AppState, text: &str) -> Result<String, ApiError> {
    let text = text.trim();
    let url = url::Url::parse(text)
        .ok()
        .filter(|url| matches!(url.scheme(), "http" | "https") && url.has_host())
        .ok_or_else(|| {
            ApiError::validation(
                format!("The field url is not a web address: {text:?}."),
                "Give the other reader's address with http:// or https://, such as \
                 https://rss.example/api/greader.php (FreshRSS) or https://miniflux.example.",
            )
        })?;
    if !url.username().is_empty() || url.password().is_some() {
        return Err(ApiError::validation(
            "The field url holds a user name or password.",
            "Give the address without them, and the credentials in their own fields.",
        ));
    }
    let policy = &state.fetcher.client().config().address_policy;
    policy.check_url(&url).map_err(|refusal| {
        ApiError::new(
            StatusCode::BAD_REQUEST,
            "url_refused",
            ErrorCategory::Validation,
            format!("The field url is an address this server may not reach: {refusal}."),
            "Give the reader's public address; to import from a reader on a private network, \
             an administrator can allow it with TIDINGS_ALLOW_PRIVATE_NETWORKS=true or \
             TIDINGS_ALLOWED_NETWORKS.",
        )
    })?;
    Ok(text.to_owned())
}

/// The source a request names, with its credentials, or the 400 that says what is missing.
fn source_of(state: &AppState, body: StartImport) -> Result<HistorySource, ApiError> {
    match body.source.as_str() {
        "greader" => Ok(HistorySource::GReader {
            url: checked_url(state, &body.url)?,
            login: required(
                body.login,
                "login",
                "Give your user name on the other reader.",
            )?,
            password: required(
                body.password,
                "password",
                "Give the password of the other reader's Google Reader API (FreshRSS: \
                 Settings > Profile > API password; tidings: an API key).",
            )?,
        }),
        "miniflux" => Ok(HistorySource::Miniflux {
            url: checked_url(state, &body.url)?,
            api_key: required(
                body.api_key,
                "api_key",
                "Create an API key in Miniflux (Settings > API Keys) and give it.",
            )?,
        }),
        other => Err(ApiError::validation(
            format!("The field source is {other:?}, which is no source tidings imports from."),
            "Use greader (FreshRSS and other Google Reader API servers) or miniflux; send a \
             file to POST /imports/file.",
        )),
    }
}

/// Starts the job and makes the 202 that answers it.
async fn start_job(
    state: &AppState,
    user_id: i64,
    input: HistoryInput,
    dry_run: bool,
) -> ApiResult<(StatusCode, HeaderMap, Json<HistoryImportStarted>)> {
    let options = HistoryOptions {
        dry_run,
        max_subscriptions: Some(state.config.max_subscriptions),
        source_name: input.place().map(str::to_owned),
        progress: None,
    };
    let started =
        start_history_import(&state.fetcher, user_id, input, options, MAX_RUNNING_IMPORTS)
            .await
            .map_err(|error| match error {
                StoreError::LimitReached { limit, .. } => ApiError::imports_running(limit),
                other => other.into(),
            })?;
    let mut headers = HeaderMap::new();
    if let Ok(location) = HeaderValue::from_str(&format!("/api/v1/imports/{}", started.job.id)) {
        headers.insert(header::LOCATION, location);
    }
    Ok((
        StatusCode::ACCEPTED,
        headers,
        Json(HistoryImportStarted {
            import_id: started.job.id,
            status: "running",
        }),
    ))
}

/// Import subscriptions, folders, starred items, read marks and labels from another reader's
/// server, in the background: the answer comes at once with the import's id, and
/// `GET /imports/{id}` follows it. Running it twice changes nothing; a dry run says what it
/// would do. Starred items whose feed is gone are kept as bookmarks. The server's address
/// passes the same guard as a feed's. The credentials are used for this import only: they are
/// not stored and never shown again. A user runs at most three imports at once.
#[utoipa::path(post, path = "/imports", tag = "opml", request_body = StartImport,
    responses(
        (status = 202, description = "Started; follow it at `GET /imports/{import_id}`", body = HistoryImportStarted),
        (status = 400, description = "An unknown source, a URL that is no web address or is refused, a missing credential", body = ErrorBody),
        (status = 429, description = "Three imports of this user are running already", body = ErrorBody),
    ))]
async fn start(
    State(state): State<AppState>,
    auth: Auth,
    Json(body): Json<StartImport>,
) -> ApiResult<(StatusCode, HeaderMap, Json<HistoryImportStarted>)> {
    let dry_run = body.dry_run;
    let source = source_of(&state, body)?;
    start_job(&state, auth.user.id, HistoryInput::Remote(source), dry_run).await
}

/// Import a file in the background, as `POST /imports` does a server: OPML (subscriptions and
/// folders, a tidings export's settings too) or a starred-items JSON (Google Reader Takeout's
/// `starred.json`, FreshRSS' or Inoreader's export), told apart by content; the request body,
/// up to 5 MB. `X-File-Name` names it in the report.
#[utoipa::path(post, path = "/imports/file", tag = "opml", params(FileImportParams),
    request_body(content = String, content_type = "application/octet-stream", description = "The file"),
    responses(
        (status = 202, description = "Started; follow it at `GET /imports/{import_id}`", body = HistoryImportStarted),
        (status = 400, description = "Neither OPML nor a starred-items JSON", body = ErrorBody),
        (status = 413, description = "Larger than 5 MB", body = ErrorBody),
        (status = 429, description = "Three imports of this user are running already", body = ErrorBody),
    ))]
async fn start_file(
    State(state): State<AppState>,
    auth: Auth,
    Query(params): Query<FileImportParams>,
    headers: HeaderMap,
    body: Result<Bytes, BytesRejection>,
) -> ApiResult<(StatusCode, HeaderMap, Json<HistoryImportStarted>)> {
    let body = body.map_err(crate::base::extract::bytes_rejection)?;
    let history = read_history_file(&body).map_err(|reason| {
        ApiError::new(
            StatusCode::BAD_REQUEST,
            "invalid_file",
            ErrorCategory::Validation,
            format!("The file cannot be imported: {reason}."),
            "Send the OPML file or the starred-items JSON your old reader exported, as it is.",
        )
    })?;
    let name = headers
        .get("x-file-name")
        .and_then(|v| v.to_str().ok())
        .map(|name| name.chars().take(200).collect::<String>());
    let input = HistoryInput::File { name, history };
    start_job(&state, auth.user.id, input, params.dry_run).await
}

/// One import from another reader of the user: its progress, then its report per kind.
#[utoipa::path(get, path = "/imports/{id}", tag = "opml",
    params(("id" = i64, Path, description = "The import's id (`import_id`)")),
    responses(
        (status = 200, body = HistoryImportView),
        (status = 404, description = "No such import of this user", body = ErrorBody),
    ))]
async fn status(
    State(state): State<AppState>,
    auth: Auth,
    Path(id): Path<i64>,
) -> ApiResult<Json<HistoryImportView>> {
    let job = state
        .store
        .import_job(auth.user.id, id)
        .await?
        .filter(|job| job.kind == HISTORY_JOB_KIND)
        .ok_or_else(|| ApiError::not_found("Import"))?;
    Ok(Json(job_view(job)))
}

/// The user's imports from other readers.
#[derive(Debug, Serialize, ToSchema)]
pub struct HistoryImportList {
    /// Newest first, the last 100, running ones included.
    pub imports: Vec<HistoryImportView>,
}

/// The user's imports from other readers, newest first: a page picks a running one up again.
#[utoipa::path(get, path = "/imports", tag = "opml",
    responses((status = 200, body = HistoryImportList)))]
async fn list(State(state): State<AppState>, auth: Auth) -> ApiResult<Json<HistoryImportList>> {
    let jobs = state
        .store
        .list_import_jobs(auth.user.id, Some(HISTORY_JOB_KIND))
        .await?;
    Ok(Json(HistoryImportList {
        imports: jobs.into_iter().map(job_view).collect(),
    }))
}
