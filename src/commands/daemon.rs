//! What the long-running commands (`serve` and `worker`) share, one floor below both: who may
//! read `/metrics`, the settings it is read from, and the signal that stops them.

use anyhow::Context;
use clap::Args;

use crate::config::ConfigError;

/// Who may read `/metrics`: of `serve`, and of `tidings worker`'s own listener.
#[derive(Debug, Args)]
pub struct MetricsArgs {
    /// Networks whose clients may read /metrics, comma-separated addresses or CIDR ranges
    /// (default: loopback, 127.0.0.0/8 and ::1).
    #[arg(
        long,
        env = "TIDINGS_METRICS_ALLOWED_NETWORKS",
        default_value = "127.0.0.0/8,::1"
    )]
    pub metrics_allowed_networks: String,

    /// A token that lets any client read /metrics with `Authorization: Bearer TOKEN`
    /// (16 characters or more). None by default.
    #[arg(long, env = "TIDINGS_METRICS_TOKEN", hide_env_values = true)]
    pub metrics_token: Option<String>,
}

impl MetricsArgs {
    /// Checks the networks and the token (exit 2 naming the variable on a bad value).
    pub fn check(&self) -> Result<tidings_server::metrics::MetricsAccess, ConfigError> {
        let networks = parse_networks(
            &self.metrics_allowed_networks,
            "TIDINGS_METRICS_ALLOWED_NETWORKS",
            "--metrics-allowed-networks",
        )?;
        let token = check_secret(
            self.metrics_token.as_deref(),
            16,
            "TIDINGS_METRICS_TOKEN",
            "--metrics-token",
        )?;
        Ok(tidings_server::metrics::MetricsAccess::new(networks, token))
    }
}

/// The secret of `variable` / `flag`, trimmed, when it is set; refused when shorter than
/// `min_len` (the message hides the value).
pub(crate) fn check_secret<'v>(
    value: Option<&'v str>,
    min_len: usize,
    variable: &'static str,
    flag: &'static str,
) -> Result<Option<&'v str>, ConfigError> {
    match value.map(str::trim) {
        Some(secret) if secret.len() < min_len => Err(ConfigError {
            variable,
            flag,
            value: "(hidden)".into(),
            expected: format!("a secret of at least {min_len} characters"),
        }),
        secret => Ok(secret),
    }
}

/// Parses a comma-separated list of addresses and CIDR ranges of `variable` / `flag`.
pub(crate) fn parse_networks(
    value: &str,
    variable: &'static str,
    flag: &'static str,
) -> Result<Vec<tidings_fetch::IpNetwork>, ConfigError> {
    value
        .split(',')
        .map(str::trim)
        .filter(|part| !part.is_empty())
        .map(|part| {
            part.parse::<tidings_fetch::IpNetwork>()
                .map_err(|_| ConfigError {
                    variable,
                    flag,
                    value: part.to_string(),
                    expected: "comma-separated IP addresses or CIDR ranges such as \
                               127.0.0.1,10.0.0.0/8"
                        .into(),
                })
        })
        .collect()
}

/// A future that completes on Ctrl-C or SIGTERM, so that requests in flight can finish. The
/// handlers are registered before it returns, so a signal that arrives as soon as the server
/// says it is listening is not lost.
pub(crate) fn shutdown_signal()
-> anyhow::Result<impl std::future::Future<Output = ()> + Send + 'static> {
    #[cfg(unix)]
    {
        use tokio::signal::unix::{SignalKind, signal};
        let mut interrupt = signal(SignalKind::interrupt()).context("cannot handle SIGINT")?;
        let mut terminate = signal(SignalKind::terminate()).context("cannot handle SIGTERM")?;
        Ok(async move {
            tokio::select! {
                _ = interrupt.recv() => {},
                _ = terminate.recv() => {},
            }
            tracing::info!("shutting down");
        })
    }
    #[cfg(not(unix))]
    {
        Ok(async {
            let _ = tokio::signal::ctrl_c().await;
            tracing::info!("shutting down");
        })
    }
}
