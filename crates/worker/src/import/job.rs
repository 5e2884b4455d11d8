//! A history import as a background job (issue 32), for the server's `POST /api/v1/imports`:
//! the job reads the other reader's history (through the feeds' address guard: the address is
//! a user's), then [`apply_history`]s it, counting on the job's progress; its summary is the
//! [`HistoryReport`]. The credentials live in the job's task only: the job's row records the
//! kind of source and its address, never a login, password or key.

use tidings_store::{ImportJobProgress, NewImportJob, StoreError};

use super::{History, HistoryOptions, HistoryReport, HistorySource, ProgressSink, apply_history};
use crate::Fetcher;
use crate::import_job::{JobProgress, JobReport, StartedJob, spawn_import_job};

/// The kind of a history import job.
pub const HISTORY_JOB_KIND: &str = "history";

/// What a history import job reads.
#[derive(Debug, Clone)]
pub enum HistoryInput {
    /// Another reader's server, read by the job.
    Remote(HistorySource),
    /// A file read before the job started (so that a file that is neither OPML nor a
    /// starred-items JSON is refused at once): its name, and what it holds.
    File {
        /// The file's name, for people.
        name: Option<String>,
        /// Its history.
        history: History,
    },
}

impl HistoryInput {
    /// The kind of source: `greader`, `miniflux` or `file`.
    pub fn kind(&self) -> &'static str {
        match self {
            HistoryInput::Remote(source) => source.kind(),
            HistoryInput::File { .. } => "file",
        }
    }

    /// Where from, for people and the job's row: the server's address or the file's name.
    pub fn place(&self) -> Option<&str> {
        match self {
            HistoryInput::Remote(source) => Some(source.url()),
            HistoryInput::File { name, .. } => name.as_deref(),
        }
    }
}

/// The job row's `source` of a history import: the kind (with `:dry-run` for a dry run), a
/// space, then the address or file name; [`job_source_parts`] reads it back.
fn job_source(input: &HistoryInput, dry_run: bool) -> String {
    let kind = match dry_run {
        true => format!("{}:dry-run", input.kind()),
        false => input.kind().to_owned(),
    };
    match input.place() {
        Some(place) => format!("{kind} {place}"),
        None => kind,
    }
}

/// The kind of source (`greader`, `miniflux`, `file`, each with `:dry-run` for a dry run) and
/// its address or file name, from a history job's `source`.
pub fn job_source_parts(source: Option<&str>) -> (String, Option<String>) {
    let source = source.unwrap_or_default();
    match source.split_once(' ') {
        Some((kind, place)) => (kind.to_owned(), Some(place.to_owned())),
        None => (source.to_owned(), None),
    }
}

/// Starts a history import for `user_id` as a job and answers at once (refused with
/// [`StoreError::LimitReached`] when the user has `max_running` imports running). The job's
/// counters: `total` is the history's feeds and items once read (0 while the other reader is
/// being read), `checked` how many of them are settled; at the end `added`, `skipped` and
/// `failed` sum the report's kinds. A source that cannot be read fails the job with its reason
/// (a refused sign-in, an unreachable server, an address the guard refuses).
pub async fn start_history_import(
    fetcher: &Fetcher,
    user_id: i64,
    input: HistoryInput,
    options: HistoryOptions,
    max_running: i64,
) -> Result<StartedJob, StoreError> {
    let source = job_source(&input, options.dry_run);
    let total = match &input {
        HistoryInput::File { history, .. } => (history.feeds.len() + history.items.len()) as i64,
        HistoryInput::Remote(_) => 0,
    };
    let new = NewImportJob {
        kind: HISTORY_JOB_KIND,
        source: Some(&source),
        total,
        owner: &fetcher.config().owner,
    };
    let fetcher_for_job = fetcher.clone();
    spawn_import_job(fetcher.store(), user_id, &new, max_running, |progress| {
        run(fetcher_for_job, user_id, input, options, progress)
    })
    .await
}

/// The job's work: read, then apply with progress.
async fn run(
    fetcher: Fetcher,
    user_id: i64,
    input: HistoryInput,
    mut options: HistoryOptions,
    progress: JobProgress,
) -> Result<JobReport, String> {
    let history = match input {
        HistoryInput::Remote(source) => source
            .read(Some(fetcher.client()))
            .await
            .map_err(|error| error.to_string())?,
        HistoryInput::File { history, .. } => history,
    };
    let sink = progress.clone();
    options.progress = Some(ProgressSink(std::sync::Arc::new(move |done, total| {
        sink.update(|counters| {
            counters.total = total as i64;
            counters.checked = done as i64;
        });
    })));
    let report = apply_history(&fetcher, user_id, &history, &options)
        .await
        .map_err(|error| error.to_string())?;
    Ok(job_report(&report, progress.now().total))
}

/// What a history job hands back: counters summed over the kinds, the report as summary.
fn job_report(report: &HistoryReport, total: i64) -> JobReport {
    let sum = |count: fn(&super::KindReport) -> usize| -> i64 {
        report
            .kinds()
            .iter()
            .map(|(_, kind)| count(kind) as i64)
            .sum()
    };
    JobReport {
        progress: ImportJobProgress {
            total,
            checked: total,
            added: sum(|kind| kind.added + kind.kept_as_bookmark),
            skipped: sum(|kind| kind.unchanged),
            failed: sum(|kind| kind.failed),
        },
        entries: "[]".to_owned(),
        summary: serde_json::to_string(report).ok(),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_job_row_names_the_source_and_its_address_and_no_secret() {
        let input = HistoryInput::Remote(HistorySource::GReader {
            url: "https://rss.example/api/greader.php".into(),
            login: "me".into(),
            password: "secret-password".into(),
        });
        let source = job_source(&input, false);
        assert_eq!(source, "greader https://rss.example/api/greader.php");
        assert_eq!(
            job_source_parts(Some(&source)),
            (
                "greader".to_owned(),
                Some("https://rss.example/api/greader.php".to_owned())
            )
        );
        let file = HistoryInput::File {
            name: Some("my starred.json".into()),
            history: History::default(),
        };
        assert_eq!(
            job_source_parts(Some(&job_source(&file, true))),
            (
                "file:dry-run".to_owned(),
                Some("my starred.json".to_owned())
            )
        );
    }
}
