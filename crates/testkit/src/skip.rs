//! The one rule for tests that cannot run here: say which test, and why, on the real standard
//! error (the harness does not capture it, so every run shows the skip), and under `CI=true`
//! fail instead, because CI is where everything a test needs is installed and a skip there
//! would be a pass that checked nothing.
//!
//! Shared by every test suite of the workspace, so the rule is one.

use std::io::Write;

/// Whether this run is CI's (`CI=true`), where skipping is not allowed.
pub fn in_ci() -> bool {
    std::env::var("CI").is_ok_and(|value| value.trim().eq_ignore_ascii_case("true"))
}

/// Reports that `test` cannot run for `reason` (what is missing and how to provide it). Returns
/// normally outside CI, so the caller returns early; panics under `CI=true`.
pub fn skip(test: &str, reason: &str) {
    report(test, reason, in_ci());
}

/// [`skip`] with the CI question answered by the caller (for testing the rule itself).
pub fn report(test: &str, reason: &str, ci: bool) {
    let _ = writeln!(std::io::stderr(), "SKIPPED {test}: {reason}");
    if ci {
        panic!("{test} was skipped under CI=true ({reason}); CI must run every test");
    }
}

/// The reason given when `TIDINGS_TEST_POSTGRES_URL` is unset.
pub const NO_POSTGRES: &str = "TIDINGS_TEST_POSTGRES_URL is not set \
     (e.g. postgres://postgres@127.0.0.1:5432/test)";
