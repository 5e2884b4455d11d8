//! A PostgreSQL server of one's own: `initdb` into a temporary folder and `pg_ctl` on a free
//! port, for the fault tests and `tidings-bench soak`, which stop and start the database under a
//! running tidings and so must never use a server that others share.
//!
//! It needs the PostgreSQL server programs (on Debian the `postgresql` package, which puts them
//! in `/usr/lib/postgresql/VERSION/bin`). PostgreSQL refuses to run as root, so when this
//! process is root the programs run as the `postgres` user through `runuser`.

use std::path::{Path, PathBuf};
use std::process::Command;

/// What is missing when the server programs are not installed.
pub const NO_SERVER_PROGRAMS: &str = "initdb and pg_ctl are not installed (looked in \
     /usr/lib/postgresql/*/bin; on Debian: apt-get install postgresql)";

/// Why a private server could not be started or stopped.
#[derive(Debug, thiserror::Error)]
pub enum PrivatePostgresError {
    /// The server programs are not installed.
    #[error("{NO_SERVER_PROGRAMS}")]
    NotInstalled,
    /// A program could not be run or failed; the message holds its output and the server log.
    #[error("{0}")]
    Failed(String),
}

/// A PostgreSQL instance in a temporary folder, stopped (and its folder removed) when dropped.
#[derive(Debug)]
pub struct PrivatePostgres {
    bin: PathBuf,
    dir: tempfile::TempDir,
    port: u16,
    /// Whether the programs run as the `postgres` user (PostgreSQL refuses to run as root).
    as_postgres: bool,
}

impl PrivatePostgres {
    /// Creates an instance (`initdb`, trust authentication for local connections, no fsync)
    /// and starts it on a free port of 127.0.0.1.
    pub fn start() -> Result<PrivatePostgres, PrivatePostgresError> {
        let instance = PrivatePostgres::initialized()?;
        instance.up()?;
        Ok(instance)
    }

    /// Like [`PrivatePostgres::start`], but the server takes TCP connections over TLS only
    /// (`hostssl` in pg_hba.conf, a self-signed certificate made by the `openssl` command),
    /// as some installations want even on loopback.
    pub fn start_tls_only() -> Result<PrivatePostgres, PrivatePostgresError> {
        let instance = PrivatePostgres::initialized()?;
        let data = instance.data();
        let key = data.join("server.key");
        let certificate = data.join("server.crt");
        let made = instance
            .command_as_owner("openssl")
            .args([
                "req", "-x509", "-newkey", "rsa:2048", "-nodes", "-days", "1",
            ])
            .args(["-subj", "/CN=localhost", "-keyout"])
            .arg(&key)
            .arg("-out")
            .arg(&certificate)
            .output()
            .map_err(|error| failed("run openssl (apt-get install openssl)", error))?;
        if !made.status.success() {
            return Err(PrivatePostgresError::Failed(format!(
                "openssl req failed: {}",
                String::from_utf8_lossy(&made.stderr)
            )));
        }
        let private = instance
            .command_as_owner("chmod")
            .arg("600")
            .arg(&key)
            .status()
            .map_err(|error| failed("run chmod", error))?;
        if !private.success() {
            return Err(PrivatePostgresError::Failed(
                "chmod 600 server.key failed".into(),
            ));
        }
        let append = |file: &str, text: &str| {
            use std::io::Write;
            std::fs::OpenOptions::new()
                .append(true)
                .open(data.join(file))
                .and_then(|mut f| f.write_all(text.as_bytes()))
                .map_err(|error| failed(&format!("write {file}"), error))
        };
        append("postgresql.conf", "\nssl = on\n")?;
        std::fs::write(
            data.join("pg_hba.conf"),
            "local all all trust\nhostssl all all 127.0.0.1/32 trust\n",
        )
        .map_err(|error| failed("write pg_hba.conf", error))?;
        instance.up()?;
        Ok(instance)
    }

    /// A new instance's data folder made by `initdb`, not started.
    fn initialized() -> Result<PrivatePostgres, PrivatePostgresError> {
        let bin = server_programs().ok_or(PrivatePostgresError::NotInstalled)?;
        let as_postgres = is_root();
        let dir = tempfile::Builder::new()
            .prefix("tidings-postgres-")
            .tempdir()
            .map_err(|error| failed("create a temporary folder", error))?;
        if as_postgres {
            let owned = Command::new("chown")
                .args(["-R", "postgres:postgres"])
                .arg(dir.path())
                .status()
                .map_err(|error| failed("run chown", error))?;
            if !owned.success() {
                return Err(PrivatePostgresError::Failed(format!(
                    "chown -R postgres:postgres {} failed",
                    dir.path().display()
                )));
            }
        }
        let port = std::net::TcpListener::bind("127.0.0.1:0")
            .and_then(|listener| listener.local_addr())
            .map_err(|error| failed("find a free port", error))?
            .port();
        let instance = PrivatePostgres {
            bin,
            dir,
            port,
            as_postgres,
        };
        let data = instance.data();
        instance.program(
            "initdb",
            &[
                "-D",
                &data.to_string_lossy(),
                "-U",
                "postgres",
                "-A",
                "trust",
                "-E",
                "UTF8",
                "--no-sync",
            ],
        )?;
        Ok(instance)
    }

    fn data(&self) -> PathBuf {
        self.dir.path().join("data")
    }

    /// The port it listens on (127.0.0.1).
    pub fn port(&self) -> u16 {
        self.port
    }

    /// `postgres://…` for the instance's `postgres` database.
    pub fn url(&self) -> String {
        self.database_url("postgres")
    }

    /// `postgres://…` for one database of the instance.
    pub fn database_url(&self, database: &str) -> String {
        format!("postgres://postgres@127.0.0.1:{}/{database}", self.port)
    }

    /// The server's log file.
    pub fn log_path(&self) -> PathBuf {
        self.dir.path().join("server.log")
    }

    /// Starts the server and waits until it accepts connections.
    pub fn up(&self) -> Result<(), PrivatePostgresError> {
        let options = format!(
            "-p {} -k {} -c listen_addresses=127.0.0.1 -c fsync=off",
            self.port,
            self.dir.path().display()
        );
        self.program(
            "pg_ctl",
            &[
                "-D",
                &self.data().to_string_lossy(),
                "-l",
                &self.log_path().to_string_lossy(),
                "-o",
                &options,
                "-w",
                "start",
            ],
        )
    }

    /// Stops the server the hard way, as a crash or a pulled cable would: connections are cut
    /// and nothing is flushed.
    pub fn down(&self) -> Result<(), PrivatePostgresError> {
        self.program(
            "pg_ctl",
            &[
                "-D",
                &self.data().to_string_lossy(),
                "-m",
                "immediate",
                "-w",
                "stop",
            ],
        )
    }

    /// Runs one of the server programs; a failure carries its output and the server's log.
    fn program(&self, name: &str, args: &[&str]) -> Result<(), PrivatePostgresError> {
        let done = self
            .command(name)
            .args(args)
            .output()
            .map_err(|error| failed(&format!("run {name}"), error))?;
        if done.status.success() {
            return Ok(());
        }
        let log = std::fs::read_to_string(self.log_path()).unwrap_or_default();
        Err(PrivatePostgresError::Failed(format!(
            "{name} {args:?} failed: {}{}\nserver log:\n{log}",
            String::from_utf8_lossy(&done.stdout),
            String::from_utf8_lossy(&done.stderr)
        )))
    }

    /// A command of the system (by name, from `PATH`) run as the owner of the data folder:
    /// `postgres` when we are root.
    fn command_as_owner(&self, name: &str) -> Command {
        if self.as_postgres {
            let mut command = Command::new("runuser");
            command.args(["-u", "postgres", "--", name]);
            command
        } else {
            Command::new(name)
        }
    }

    /// A command running one of the server programs, as `postgres` when we are root.
    fn command(&self, name: &str) -> Command {
        let program = self.bin.join(name);
        if self.as_postgres {
            let mut command = Command::new("runuser");
            command.args(["-u", "postgres", "--"]).arg(program);
            command
        } else {
            Command::new(program)
        }
    }
}

impl Drop for PrivatePostgres {
    fn drop(&mut self) {
        let _ = self
            .command("pg_ctl")
            .args([
                "-D",
                &self.data().to_string_lossy(),
                "-m",
                "immediate",
                "stop",
            ])
            .output();
    }
}

fn failed(what: &str, error: std::io::Error) -> PrivatePostgresError {
    PrivatePostgresError::Failed(format!("cannot {what}: {error}"))
}

/// Whether this process runs as root (`id -u` is 0).
fn is_root() -> bool {
    Command::new("id")
        .arg("-u")
        .output()
        .is_ok_and(|out| String::from_utf8_lossy(&out.stdout).trim() == "0")
}

/// The newest installed PostgreSQL's folder of server programs.
pub fn server_programs() -> Option<PathBuf> {
    newest_server_programs(Path::new("/usr/lib/postgresql"))
}

fn newest_server_programs(root: &Path) -> Option<PathBuf> {
    let mut found: Vec<(u32, PathBuf)> = std::fs::read_dir(root)
        .ok()?
        .filter_map(|entry| {
            let entry = entry.ok()?;
            let version = entry.file_name().to_str()?.parse::<u32>().ok()?;
            let bin = entry.path().join("bin");
            (bin.join("initdb").exists() && bin.join("pg_ctl").exists()).then_some((version, bin))
        })
        .collect();
    found.sort();
    found.pop().map(|(_, bin)| bin)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_newest_complete_installation_is_chosen() {
        let root = tempfile::tempdir().unwrap();
        for (version, complete) in [("15", true), ("17", true), ("18", false), ("notes", true)] {
            let bin = root.path().join(version).join("bin");
            std::fs::create_dir_all(&bin).unwrap();
            std::fs::write(bin.join("initdb"), "").unwrap();
            if complete {
                std::fs::write(bin.join("pg_ctl"), "").unwrap();
            }
        }
        assert_eq!(
            newest_server_programs(root.path()),
            Some(root.path().join("17").join("bin"))
        );
        assert_eq!(newest_server_programs(&root.path().join("missing")), None);
    }
}
