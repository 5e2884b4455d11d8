//! A failing request leaves one log line, with the cause (issue 11: a database error passed
//! through the store, the API error and the HTTP trace layer, and each logged it).
//!
//! The log is captured by a subscriber installed for the whole process, the way `tidings serve`
//! installs its own, so the test runs alone in a process of its own (the other tests of the
//! binary would log into it, and install no subscriber of their own), and runs the engines one
//! after the other: lines of two tests at once could not be told apart.

use std::sync::{Arc, Mutex};

use crate::support::{TestApp, call};
use reqwest::{Method, StatusCode};

/// The log lines written so far, shared with the subscriber.
#[derive(Clone, Default)]
struct CapturedLog(Arc<Mutex<Vec<u8>>>);

impl CapturedLog {
    /// Takes the lines written since the last call.
    fn take(&self) -> Vec<String> {
        let bytes = std::mem::take(&mut *self.0.lock().unwrap());
        String::from_utf8_lossy(&bytes)
            .lines()
            .map(str::to_string)
            .collect()
    }
}

impl std::io::Write for CapturedLog {
    fn write(&mut self, buf: &[u8]) -> std::io::Result<usize> {
        self.0.lock().unwrap().extend_from_slice(buf);
        Ok(buf.len())
    }

    fn flush(&mut self) -> std::io::Result<()> {
        Ok(())
    }
}

impl<'a> tracing_subscriber::fmt::MakeWriter<'a> for CapturedLog {
    type Writer = CapturedLog;

    fn make_writer(&'a self) -> CapturedLog {
        self.clone()
    }
}

/// Breaks the database under a running server (its preferences table goes), asks for the
/// preferences, and returns the answer and the warning and error lines logged meanwhile.
async fn failing_request(
    db: &tidings_testkit::TestDb,
    log: &CapturedLog,
) -> (StatusCode, String, Vec<String>) {
    let app = TestApp::start(db).await;
    app.user("ann", false).await;
    let browser = app.signed_in("ann").await;
    app.store
        .execute_raw("DROP TABLE user_preferences")
        .await
        .unwrap();
    log.take();
    let (status, _, body) = call(&browser, Method::GET, &app.url("/preferences"), None).await;
    // The trace layer logs when the response is done, which may be a moment after the client
    // has it.
    tokio::time::sleep(std::time::Duration::from_millis(300)).await;
    let lines = log
        .take()
        .into_iter()
        .filter(|line| line.contains("ERROR") || line.contains("WARN"))
        .collect();
    let message = body["error"]["message"].as_str().unwrap_or("").to_string();
    (status, message, lines)
}

fn check(engine: &str, (status, message, lines): (StatusCode, String, Vec<String>), cause: &str) {
    assert_eq!(
        status,
        StatusCode::INTERNAL_SERVER_ERROR,
        "{engine}: {message}"
    );
    let reference = message
        .split("reference ")
        .nth(1)
        .and_then(|rest| rest.get(..8))
        .unwrap_or_else(|| panic!("{engine}: no reference in {message:?}"));
    assert_eq!(
        lines.len(),
        1,
        "{engine}: one line per failure, got {lines:#?}"
    );
    assert!(
        lines[0].contains(reference) && lines[0].contains(cause),
        "{engine}: the line names the reference {reference} and the cause {cause:?}: {}",
        lines[0]
    );
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_database_error_is_logged_once_with_its_cause() {
    let test = "error_logging::a_database_error_is_logged_once_with_its_cause";
    let alone = tokio::task::spawn_blocking(|| tidings_testkit::process::alone(test, |_| {}));
    if !alone.await.unwrap() {
        return;
    }
    let log = CapturedLog::default();
    tracing_subscriber::fmt()
        .with_writer(log.clone())
        .with_ansi(false)
        .with_max_level(tracing::Level::INFO)
        .init();

    let sqlite = tidings_testkit::TestDb::sqlite();
    let outcome = failing_request(&sqlite, &log).await;
    check("sqlite", outcome, "no such table: user_preferences");

    let Some(postgres) =
        tidings_testkit::TestDb::postgres("a_database_error_is_logged_once_with_its_cause").await
    else {
        return;
    };
    tidings_testkit::run_on(postgres, async |db| {
        let outcome = failing_request(db, &log).await;
        check(
            "postgres",
            outcome,
            "relation \"user_preferences\" does not exist",
        );
    })
    .await;
}
