//! What the sync API tests share: API keys, and the real clients they drive (Python packages
//! in a virtual environment named by `TIDINGS_TEST_SYNC_PYTHON`, Debian's newsboat). A test
//! whose client is missing skips with the reason printed, except under `CI=true`, where it
//! fails: CI installs them (`.ci/run`).

#![allow(dead_code)]

use std::io::Write;
use std::path::PathBuf;
use std::process::Command;

use reqwest::{Client, Method, StatusCode};
use serde_json::json;

use crate::support::{TestApp, call};

/// The variable naming the Python interpreter of the clients' virtual environment.
pub const PYTHON_ENV: &str = "TIDINGS_TEST_SYNC_PYTHON";

fn missing(test: &str, reason: &str) -> Option<PathBuf> {
    if std::env::var("CI").is_ok_and(|v| v == "true") {
        panic!("{test}: {reason} (CI installs it: see .ci/run)");
    }
    let _ = writeln!(std::io::stderr(), "SKIPPED {test}: {reason}");
    None
}

/// The Python interpreter that can import `module`, or `None` (skip) when there is none.
pub fn python_with(test: &str, module: &str) -> Option<PathBuf> {
    let Ok(python) = std::env::var(PYTHON_ENV) else {
        return missing(
            test,
            &format!(
                "{PYTHON_ENV} is not set (a virtual environment's python with the clients: \
                 pip install miniflux freshrss-api; pip install --ignore-requires-python google-reader)"
            ),
        );
    };
    let imports = Command::new(&python)
        .args(["-c", &format!("import {module}")])
        .output();
    match imports {
        Ok(out) if out.status.success() => Some(PathBuf::from(python)),
        Ok(out) => missing(
            test,
            &format!(
                "{python} cannot import {module}: {}",
                String::from_utf8_lossy(&out.stderr).trim()
            ),
        ),
        Err(e) => missing(test, &format!("{python} does not run: {e}")),
    }
}

/// The path of a program on PATH, or `None` (skip) when it is missing.
pub fn program(test: &str, name: &str) -> Option<PathBuf> {
    let found = std::env::var_os("PATH").and_then(|paths| {
        std::env::split_paths(&paths)
            .map(|dir| dir.join(name))
            .find(|path| path.is_file())
    });
    match found {
        Some(path) => Some(path),
        None => missing(
            test,
            &format!("{name} is not installed (apt-get install {name})"),
        ),
    }
}

/// Runs a Python script with arguments; panics with its output unless it succeeds. Returns
/// its standard output.
pub fn run_python(python: &std::path::Path, script: &str, args: &[&str]) -> String {
    let out = Command::new(python)
        .arg("-c")
        .arg(script)
        .args(args)
        .output()
        .expect("run python");
    let stdout = String::from_utf8_lossy(&out.stdout).into_owned();
    assert!(
        out.status.success(),
        "the Python client failed:\n{stdout}\n{}",
        String::from_utf8_lossy(&out.stderr)
    );
    stdout
}

/// Creates an API key for the user signed in with `browser`; returns the secret.
pub async fn api_key(app: &TestApp, browser: &Client, scope: &str) -> String {
    let (status, _, body) = call(
        browser,
        Method::POST,
        &app.url("/api-keys"),
        Some(json!({"name": format!("app {scope}"), "scope": scope})),
    )
    .await;
    assert_eq!(status, StatusCode::CREATED, "{body}");
    body["key"].as_str().unwrap().to_string()
}

/// Every key of `reference` (a real server's answer) is in `ours` with the same JSON type,
/// recursively through objects and the first element of arrays.
pub fn assert_same_shape(reference: &serde_json::Value, ours: &serde_json::Value, at: &str) {
    use serde_json::Value;
    let kind = |v: &Value| match v {
        Value::Null => "null",
        Value::Bool(_) => "bool",
        Value::Number(_) => "number",
        Value::String(_) => "string",
        Value::Array(_) => "array",
        Value::Object(_) => "object",
    };
    match (reference, ours) {
        // A map keyed by ids (e.g. counters per feed): the values' types must agree.
        (Value::Object(want), Value::Object(have))
            if !want.is_empty() && want.keys().all(|k| k.parse::<i64>().is_ok()) =>
        {
            assert!(
                have.keys().all(|k| k.parse::<i64>().is_ok()),
                "{at}: keys are not ids in {ours}"
            );
            if let (Some(w), Some(h)) = (want.values().next(), have.values().next()) {
                assert_same_shape(w, h, &format!("{at}[id]"));
            }
        }
        (Value::Object(want), Value::Object(have)) => {
            for (key, value) in want {
                let Some(found) = have.get(key) else {
                    panic!("{at}.{key} is missing from {ours}");
                };
                assert_same_shape(value, found, &format!("{at}.{key}"));
            }
        }
        (Value::Array(want), Value::Array(have)) => {
            if let (Some(w), Some(h)) = (want.first(), have.first()) {
                assert_same_shape(w, h, &format!("{at}[0]"));
            }
        }
        // A nullable field may be null on one side.
        (Value::Null, _) | (_, Value::Null) => {}
        (want, have) => assert_eq!(kind(want), kind(have), "{at}: {have} vs {want}"),
    }
}
