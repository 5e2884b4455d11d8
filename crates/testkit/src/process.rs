//! Child processes in tests: guarded so that a failed test leaves none running, stopped the
//! gentle or the hard way, and a test run alone in a process of its own when it changes what
//! the whole process shares (the environment, the global log subscriber).

use std::process::{Child, Command, ExitStatus, Output};
use std::time::{Duration, Instant};

/// A spawned process that is killed (SIGKILL) and reaped when dropped, so that a test that
/// panics leaves no process running behind it. Derefs to the [`Child`].
pub struct KillOnDrop(Option<Child>);

impl KillOnDrop {
    /// Guards `child`.
    pub fn new(child: Child) -> KillOnDrop {
        KillOnDrop(Some(child))
    }

    /// The process, no longer guarded: for a caller that waits for it itself.
    pub fn into_inner(mut self) -> Child {
        self.0.take().expect("a guarded child")
    }
}

impl std::ops::Deref for KillOnDrop {
    type Target = Child;
    fn deref(&self) -> &Child {
        self.0.as_ref().expect("a guarded child")
    }
}

impl std::ops::DerefMut for KillOnDrop {
    fn deref_mut(&mut self) -> &mut Child {
        self.0.as_mut().expect("a guarded child")
    }
}

impl Drop for KillOnDrop {
    fn drop(&mut self) {
        if let Some(mut child) = self.0.take() {
            let _ = child.kill();
            let _ = child.wait();
        }
    }
}

/// Starts `command`, guarded by [`KillOnDrop`].
pub fn spawn(command: &mut Command) -> KillOnDrop {
    let program = command.get_program().to_string_lossy().into_owned();
    KillOnDrop::new(
        command
            .spawn()
            .unwrap_or_else(|error| panic!("start {program}: {error}")),
    )
}

/// Sends `signal` (a name `kill` knows: TERM, KILL) to `child`.
fn signal(child: &Child, signal: &str) {
    let _ = Command::new("kill")
        .args([format!("-{signal}"), child.id().to_string()])
        .status();
}

/// Stops a child with SIGTERM and waits for it; whether it ended successfully.
pub fn stop(child: KillOnDrop) -> bool {
    let mut child = child.into_inner();
    signal(&child, "TERM");
    child.wait().is_ok_and(|status| status.success())
}

/// Sends SIGKILL (`kill -9`): the process ends at once, giving nothing back.
pub fn kill_hard(child: KillOnDrop) {
    let mut child = child.into_inner();
    signal(&child, "KILL");
    let _ = child.wait();
}

/// Sends SIGTERM and waits (off the async executor) for the process to end; returns its exit
/// status and how long it took from the signal.
pub async fn terminate(child: KillOnDrop) -> (ExitStatus, Duration) {
    let mut child = child.into_inner();
    let signalled = Instant::now();
    signal(&child, "TERM");
    tokio::task::spawn_blocking(move || {
        let status = child.wait().expect("wait for the child process");
        (status, signalled.elapsed())
    })
    .await
    .expect("the waiting task ends")
}

/// Runs `command` to its end off the async executor.
pub async fn run(command: &mut Command) -> Output {
    let placeholder = Command::new(command.get_program());
    let mut command = std::mem::replace(command, placeholder);
    tokio::task::spawn_blocking(move || command.output().expect("the command runs"))
        .await
        .expect("the running task ends")
}

/// The environment variable that names the one test a child test process runs alone.
const ALONE: &str = "TIDINGS_TESTKIT_ALONE";

/// For a test that must be alone in its process (it sets the environment, or installs the
/// global log subscriber): whether this is that process. Otherwise it runs the test binary
/// again with only `test` (its full name, `module::function`) and whatever `configure` adds
/// (environment variables), prints that run's output, and fails unless the run passed with
/// `test` in it; the caller then returns.
///
/// It blocks while the child runs: a test whose child reaches servers of the parent calls it
/// from `tokio::task::spawn_blocking` on a multi-threaded runtime.
pub fn alone(test: &str, configure: impl FnOnce(&mut Command)) -> bool {
    if std::env::var(ALONE).is_ok_and(|name| name == test) {
        return true;
    }
    let binary = std::env::current_exe().expect("the test binary's path");
    let mut command = Command::new(binary);
    command
        .args([test, "--exact", "--nocapture", "--test-threads=1"])
        .env(ALONE, test);
    configure(&mut command);
    let output = command.output().expect("run the test binary again");
    let stdout = String::from_utf8_lossy(&output.stdout);
    let stderr = String::from_utf8_lossy(&output.stderr);
    println!("{test}, alone in its own process:\n{stdout}{stderr}");
    assert!(output.status.success(), "{test} failed in its own process");
    assert!(
        stdout.contains("1 passed"),
        "{test} did not run in its own process (is the name complete?)"
    );
    false
}

#[cfg(test)]
mod tests {
    use super::*;

    /// Set only for the child process of the test below.
    const MARK: &str = "TESTKIT_CHILD_MARK";

    #[test]
    fn a_test_runs_alone_with_its_own_environment() {
        let test = "process::tests::a_test_runs_alone_with_its_own_environment";
        if alone(test, |child| {
            child.env(MARK, "child");
        }) {
            assert_eq!(std::env::var(MARK).as_deref(), Ok("child"));
            return;
        }
        assert!(
            std::env::var(MARK).is_err(),
            "the parent's environment is unchanged"
        );
    }

    #[test]
    fn a_guarded_child_is_killed_when_dropped() {
        let child = spawn(Command::new("sleep").arg("60"));
        let pid = child.id().to_string();
        drop(child);
        let alive = Command::new("kill")
            .args(["-0", &pid])
            .stderr(std::process::Stdio::null())
            .status()
            .unwrap();
        assert!(!alive.success(), "sleep {pid} still runs");
    }
}
