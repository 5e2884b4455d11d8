//! The Dockerfile and compose.yaml: no Docker engine runs where the tests do, so the compose
//! file is validated by `docker-compose config` (Debian's `docker-compose`, which needs no
//! daemon), and the Dockerfile is checked for what `docs/operations.md` promises of it.

use std::path::Path;
use std::process::Command;

use tidings_testkit::skip;

fn read(name: &str) -> String {
    std::fs::read_to_string(Path::new(env!("CARGO_MANIFEST_DIR")).join(name))
        .unwrap_or_else(|error| panic!("{name}: {error}"))
}

#[test]
fn compose_file_is_valid_and_runs_both_roles_on_postgres() {
    let output = Command::new("docker-compose")
        .current_dir(env!("CARGO_MANIFEST_DIR"))
        .args(["-f", "compose.yaml", "config"])
        .env("POSTGRES_PASSWORD", "compose-test-password")
        .output();
    let Ok(output) = output else {
        skip::skip(
            "container_files::compose_file_is_valid",
            "docker-compose is not installed (apt-get install docker-compose)",
        );
        return;
    };
    let stdout = String::from_utf8_lossy(&output.stdout);
    assert!(
        output.status.success(),
        "docker-compose config refused compose.yaml: {}",
        String::from_utf8_lossy(&output.stderr)
    );
    for expected in [
        "postgres://tidings:compose-test-password@postgres:5432/tidings",
        "condition: service_healthy",
        "- serve",
        "- worker",
        "TIDINGS_WORKER: \"false\"",
    ] {
        assert!(
            stdout.contains(expected),
            "{expected} missing from\n{stdout}"
        );
    }
    // Without the password the file refuses to start rather than run with an empty one.
    let output = Command::new("docker-compose")
        .current_dir(env!("CARGO_MANIFEST_DIR"))
        .args(["-f", "compose.yaml", "config"])
        .env_remove("POSTGRES_PASSWORD")
        .output()
        .unwrap();
    assert!(!output.status.success());
    assert!(String::from_utf8_lossy(&output.stderr).contains("set POSTGRES_PASSWORD"));
}

#[test]
fn dockerfile_builds_in_stages_and_runs_unprivileged_with_a_healthcheck() {
    let dockerfile = read("Dockerfile");
    let stages = dockerfile
        .lines()
        .filter(|line| line.starts_with("FROM "))
        .count();
    assert_eq!(stages, 2, "a build stage and a runtime stage");
    assert!(dockerfile.contains("FROM debian:bookworm-slim"));
    assert!(dockerfile.contains("COPY --from=build"));
    assert!(dockerfile.contains("\nUSER tidings\n"), "not root");
    assert!(dockerfile.contains("HEALTHCHECK") && dockerfile.contains("GET /healthz"));
    assert!(dockerfile.contains("VOLUME [\"/data\"]"));
    // The Rust version of the build stage is the one the workspace asks for.
    let manifest = read("Cargo.toml");
    let rust_version = manifest
        .lines()
        .find_map(|line| line.strip_prefix("rust-version = "))
        .unwrap()
        .trim_matches('"');
    assert!(
        dockerfile.contains(&format!("FROM rust:{rust_version}-")),
        "the build stage should use Rust {rust_version}"
    );
}

#[test]
fn every_setting_the_container_files_use_is_documented() {
    let configuration = read("docs/configuration.md");
    for file in ["Dockerfile", "compose.yaml"] {
        let text = read(file);
        for variable in text
            .split(|c: char| !(c.is_ascii_alphanumeric() || c == '_'))
            .filter(|word| word.starts_with("TIDINGS_"))
        {
            assert!(
                configuration.contains(&format!("| `{variable}` |")),
                "{file} sets {variable}, which docs/configuration.md does not document"
            );
        }
    }
}
