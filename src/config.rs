//! Configuration (F60): every setting is a flag and a `TIDINGS_*` environment variable. Values
//! arrive as text and are checked here, so that a bad one stops the start with exit code 2 and
//! a message naming the variable, the value and what is accepted.

use std::net::SocketAddr;

use clap::Args;

/// The exit code for a bad configuration or command line.
pub const EXIT_CONFIG: u8 = 2;

/// A setting with a value that is not accepted.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct ConfigError {
    /// The environment variable.
    pub variable: &'static str,
    /// The flag setting the same thing.
    pub flag: &'static str,
    /// The value given.
    pub value: String,
    /// What would be accepted.
    pub expected: String,
}

impl std::fmt::Display for ConfigError {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        write!(
            f,
            "invalid value {:?} for {} ({}): expected {}",
            self.value, self.variable, self.flag, self.expected
        )
    }
}

impl std::error::Error for ConfigError {}

/// Settings every subcommand shares.
#[derive(Debug, Clone, Args)]
pub struct GlobalArgs {
    /// Database: sqlite://PATH (the file is created if missing), sqlite::memory:, or
    /// postgres://USER[:PASSWORD]@HOST[:PORT]/DATABASE.
    #[arg(
        long,
        env = "TIDINGS_DATABASE_URL",
        default_value = "sqlite://tidings.db",
        global = true,
        hide_env_values = true
    )]
    pub database_url: String,

    /// Most database connections per process (PostgreSQL pool; SQLite readers), 1-500.
    #[arg(
        long,
        env = "TIDINGS_DATABASE_MAX_CONNECTIONS",
        default_value = "10",
        global = true
    )]
    pub database_max_connections: String,

    /// Milliseconds an operation waits to reach PostgreSQL before the request is answered 503
    /// (the database is unreachable), 50-60000. A pool that is only busy queues up to 10 s.
    #[arg(
        long,
        env = "TIDINGS_DATABASE_ACQUIRE_TIMEOUT_MS",
        default_value = "750",
        global = true
    )]
    pub database_acquire_timeout_ms: String,

    /// Log level: error, warn, info, debug or trace, or a filter such as
    /// "info,tidings_store=debug".
    #[arg(long, env = "TIDINGS_LOG_LEVEL", default_value = "info", global = true)]
    pub log_level: String,

    /// Log format: text (for people) or json (one object per line, for collectors).
    #[arg(
        long,
        env = "TIDINGS_LOG_FORMAT",
        default_value = "text",
        global = true
    )]
    pub log_format: String,
}

/// The log output format.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum LogFormat {
    /// Human-readable lines.
    Text,
    /// One JSON object per line.
    Json,
}

/// The checked shared settings.
#[derive(Debug, Clone)]
pub struct GlobalConfig {
    /// The database URL.
    pub database_url: String,
    /// The connection limit.
    pub database_max_connections: u32,
    /// How long an operation waits for a PostgreSQL connection.
    pub database_acquire_timeout: std::time::Duration,
    /// The tracing filter directive.
    pub log_filter: tracing_subscriber::EnvFilter,
    /// The log format.
    pub log_format: LogFormat,
}

impl GlobalArgs {
    /// Checks every shared setting.
    pub fn check(&self) -> Result<GlobalConfig, ConfigError> {
        Ok(GlobalConfig {
            database_url: check_database_url(&self.database_url)?,
            database_max_connections: check_number(
                &self.database_max_connections,
                1..=500,
                "TIDINGS_DATABASE_MAX_CONNECTIONS",
                "--database-max-connections",
            )?,
            database_acquire_timeout: std::time::Duration::from_millis(check_number(
                &self.database_acquire_timeout_ms,
                50..=60_000,
                "TIDINGS_DATABASE_ACQUIRE_TIMEOUT_MS",
                "--database-acquire-timeout-ms",
            )?),
            log_filter: check_log_level(&self.log_level)?,
            log_format: match self.log_format.trim().to_ascii_lowercase().as_str() {
                "text" => LogFormat::Text,
                "json" => LogFormat::Json,
                _ => {
                    return Err(ConfigError {
                        variable: "TIDINGS_LOG_FORMAT",
                        flag: "--log-format",
                        value: self.log_format.clone(),
                        expected: "text or json".into(),
                    });
                }
            },
        })
    }
}

fn check_database_url(value: &str) -> Result<String, ConfigError> {
    let url = value.trim();
    let error = |expected: &str| ConfigError {
        variable: "TIDINGS_DATABASE_URL",
        flag: "--database-url",
        value: tidings_store::redact_url(value),
        expected: expected.into(),
    };
    if url == "sqlite::memory:" {
        return Ok(url.to_string());
    }
    if let Some(path) = url.strip_prefix("sqlite://") {
        if path.is_empty() || path.starts_with('?') {
            return Err(error(
                "a file path after sqlite://, e.g. sqlite://tidings.db",
            ));
        }
        return Ok(url.to_string());
    }
    if url.starts_with("postgres://") || url.starts_with("postgresql://") {
        return match url::Url::parse(url) {
            Ok(parsed) if parsed.host_str().is_some_and(|h| !h.is_empty()) => Ok(url.to_string()),
            _ => Err(error(
                "a PostgreSQL URL with a host, e.g. postgres://tidings@127.0.0.1:5432/tidings",
            )),
        };
    }
    Err(error(
        "sqlite://PATH, sqlite::memory: or postgres://USER@HOST:PORT/DATABASE",
    ))
}

fn check_log_level(value: &str) -> Result<tracing_subscriber::EnvFilter, ConfigError> {
    let error = || ConfigError {
        variable: "TIDINGS_LOG_LEVEL",
        flag: "--log-level",
        value: value.to_string(),
        expected: "error, warn, info, debug, trace, or a filter such as info,tidings_store=debug"
            .into(),
    };
    let directive = value.trim();
    if directive.is_empty() {
        return Err(error());
    }
    // Every comma-separated part must be a level, optionally after `target=`.
    let levels = ["error", "warn", "info", "debug", "trace", "off"];
    for part in directive.split(',') {
        let level = part
            .rsplit('=')
            .next()
            .unwrap_or("")
            .trim()
            .to_ascii_lowercase();
        if !levels.contains(&level.as_str()) {
            return Err(error());
        }
    }
    tracing_subscriber::EnvFilter::try_new(directive).map_err(|_| error())
}

/// Parses a whole number within `range`, naming the setting when it is not one.
pub fn check_number<T>(
    value: &str,
    range: std::ops::RangeInclusive<T>,
    variable: &'static str,
    flag: &'static str,
) -> Result<T, ConfigError>
where
    T: std::str::FromStr + PartialOrd + std::fmt::Display + Copy,
{
    match value.trim().parse::<T>() {
        Ok(n) if range.contains(&n) => Ok(n),
        _ => Err(ConfigError {
            variable,
            flag,
            value: value.to_string(),
            expected: format!("a whole number from {} to {}", range.start(), range.end()),
        }),
    }
}

/// Parses the address to listen on.
pub fn check_listen(value: &str) -> Result<SocketAddr, ConfigError> {
    check_listen_as(value, "TIDINGS_LISTEN", "--listen")
}

/// Parses a listen address of `variable` / `flag`.
pub fn check_listen_as(
    value: &str,
    variable: &'static str,
    flag: &'static str,
) -> Result<SocketAddr, ConfigError> {
    value.trim().parse().map_err(|_| ConfigError {
        variable,
        flag,
        value: value.to_string(),
        expected: "an IP address and port such as 127.0.0.1:8080, 0.0.0.0:8080 or [::]:8080".into(),
    })
}

/// Parses the public URL the server is reached at (for links it prints).
pub fn check_base_url(value: &str) -> Result<url::Url, ConfigError> {
    match url::Url::parse(value.trim()) {
        Ok(url) if matches!(url.scheme(), "http" | "https") && url.host().is_some() => Ok(url),
        _ => Err(ConfigError {
            variable: "TIDINGS_BASE_URL",
            flag: "--base-url",
            value: value.to_string(),
            expected: "an http(s) URL such as https://reader.example.com".into(),
        }),
    }
}

/// Parses a yes/no setting: true/false, yes/no, on/off, 1/0 (any case).
pub fn check_bool(
    value: &str,
    variable: &'static str,
    flag: &'static str,
) -> Result<bool, ConfigError> {
    match value.trim().to_ascii_lowercase().as_str() {
        "true" | "yes" | "on" | "1" => Ok(true),
        "false" | "no" | "off" | "0" => Ok(false),
        _ => Err(ConfigError {
            variable,
            flag,
            value: value.to_string(),
            expected: "true or false".into(),
        }),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn args() -> GlobalArgs {
        GlobalArgs {
            database_url: "sqlite://tidings.db".into(),
            database_max_connections: "10".into(),
            database_acquire_timeout_ms: "750".into(),
            log_level: "info".into(),
            log_format: "text".into(),
        }
    }

    #[test]
    fn defaults_are_valid() {
        let config = args().check().unwrap();
        assert_eq!(config.database_url, "sqlite://tidings.db");
        assert_eq!(config.database_max_connections, 10);
        assert_eq!(config.log_format, LogFormat::Text);
    }

    #[test]
    fn bad_values_name_the_variable_and_what_is_accepted() {
        let cases: Vec<(GlobalArgs, &str)> = vec![
            (
                GlobalArgs {
                    database_url: "mysql://x".into(),
                    ..args()
                },
                "TIDINGS_DATABASE_URL",
            ),
            (
                GlobalArgs {
                    database_url: "sqlite://".into(),
                    ..args()
                },
                "TIDINGS_DATABASE_URL",
            ),
            (
                GlobalArgs {
                    database_url: "postgres://".into(),
                    ..args()
                },
                "TIDINGS_DATABASE_URL",
            ),
            (
                GlobalArgs {
                    database_max_connections: "0".into(),
                    ..args()
                },
                "TIDINGS_DATABASE_MAX_CONNECTIONS",
            ),
            (
                GlobalArgs {
                    database_max_connections: "many".into(),
                    ..args()
                },
                "TIDINGS_DATABASE_MAX_CONNECTIONS",
            ),
            (
                GlobalArgs {
                    database_acquire_timeout_ms: "10".into(),
                    ..args()
                },
                "TIDINGS_DATABASE_ACQUIRE_TIMEOUT_MS",
            ),
            (
                GlobalArgs {
                    log_level: "loud".into(),
                    ..args()
                },
                "TIDINGS_LOG_LEVEL",
            ),
            (
                GlobalArgs {
                    log_level: "info,x=nope".into(),
                    ..args()
                },
                "TIDINGS_LOG_LEVEL",
            ),
            (
                GlobalArgs {
                    log_format: "xml".into(),
                    ..args()
                },
                "TIDINGS_LOG_FORMAT",
            ),
        ];
        for (args, variable) in cases {
            let message = args.check().unwrap_err().to_string();
            assert!(message.contains(variable), "{message}");
            assert!(message.contains("expected"), "{message}");
        }
        let message = check_listen("nonsense").unwrap_err().to_string();
        assert!(message.contains("TIDINGS_LISTEN") && message.contains("\"nonsense\""));
        assert!(check_listen("[::1]:0").is_ok());
        assert!(check_base_url("ftp://x").is_err());
        assert!(check_base_url("https://reader.example.com/sub/").is_ok());
    }

    #[test]
    fn a_password_in_the_database_url_is_not_echoed() {
        let bad = GlobalArgs {
            database_url: "postgres://u:hunter2@/".into(),
            ..args()
        };
        let message = bad.check().unwrap_err().to_string();
        assert!(!message.contains("hunter2"), "{message}");
    }

    #[test]
    fn yes_no_settings_accept_the_usual_spellings() {
        assert_eq!(check_bool("TRUE", "TIDINGS_X", "--x"), Ok(true));
        assert_eq!(check_bool(" off ", "TIDINGS_X", "--x"), Ok(false));
        let message = check_bool("maybe", "TIDINGS_X", "--x")
            .unwrap_err()
            .to_string();
        assert!(message.contains("TIDINGS_X") && message.contains("true or false"));
    }

    #[test]
    fn log_filters_accept_targets() {
        assert!(check_log_level("info,tidings_store=debug").is_ok());
        assert!(check_log_level("WARN").is_ok());
    }
}
