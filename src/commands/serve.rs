//! `tidings serve`: migrate, make sure someone can sign in, then serve HTTP until stopped.

use std::process::ExitCode;

use anyhow::Context;
use clap::Args;
use tidings_server::{AppState, ServerConfig, password, setup};
use tidings_store::{NewUser, Store, StoreError};

use super::daemon::{MetricsArgs, check_secret, parse_networks, shutdown_signal};
use crate::config::{self, ConfigError, GlobalConfig};

/// Arguments of `tidings serve`.
#[derive(Debug, Args)]
pub struct ServeArgs {
    /// Address and port to listen on.
    #[arg(long, env = "TIDINGS_LISTEN", default_value = "127.0.0.1:8080")]
    pub listen: String,

    /// The URL people reach the server at, used in the links it prints (default:
    /// http://LISTEN).
    #[arg(long, env = "TIDINGS_BASE_URL")]
    pub base_url: Option<String>,

    /// Run the fetch worker inside the server; false for API-only replicas beside
    /// `tidings worker` processes. `--worker` alone means true; `--worker=false` turns it off.
    #[arg(
        long,
        env = "TIDINGS_WORKER",
        default_value = "true",
        num_args = 0..=1,
        require_equals = true,
        default_missing_value = "true",
        value_name = "true|false"
    )]
    pub worker: String,

    /// Serve only the API and the UI, without the fetch worker: the same as `--worker=false`,
    /// whatever TIDINGS_WORKER says.
    #[arg(long)]
    pub no_worker: bool,

    #[command(flatten)]
    pub worker_settings: super::worker::WorkerArgs,

    #[command(flatten)]
    pub api: ApiArgs,
}

/// Settings of the API (F21, F25, F27, F29).
#[derive(Debug, Args)]
pub struct ApiArgs {
    /// Other sites' origins allowed to call the API from browsers (CORS), comma-separated,
    /// e.g. https://app.example.com. None by default.
    #[arg(long, env = "TIDINGS_CORS_ORIGINS", default_value = "")]
    pub cors_origins: String,

    /// Reverse proxies whose X-Forwarded-For and X-Forwarded-Proto are believed,
    /// comma-separated addresses or CIDR ranges, e.g. 127.0.0.1,10.0.0.0/8. None by default.
    #[arg(long, env = "TIDINGS_TRUSTED_PROXIES", default_value = "")]
    pub trusted_proxies: String,

    /// Subscriptions one user may have.
    #[arg(long, env = "TIDINGS_MAX_SUBSCRIPTIONS", default_value = "100")]
    pub max_subscriptions: String,

    /// Requests a minute one user's apps may make to the sync APIs (Google Reader, Fever,
    /// Miniflux); an app's first sync pages through every item.
    #[arg(long, env = "TIDINGS_SYNC_REQUESTS_PER_MINUTE", default_value = "600")]
    pub sync_requests_per_minute: String,

    /// Days after which an unused session ends.
    #[arg(long, env = "TIDINGS_SESSION_IDLE_DAYS", default_value = "14")]
    pub session_idle_days: String,

    /// Days after which any session ends.
    #[arg(long, env = "TIDINGS_SESSION_LIFETIME_DAYS", default_value = "60")]
    pub session_lifetime_days: String,

    /// The secret the media proxy signs its URLs with; give every replica the same one.
    /// Without it each process makes its own, and proxied URLs end with the process.
    #[arg(long, env = "TIDINGS_MEDIA_PROXY_KEY", hide_env_values = true)]
    pub media_proxy_key: Option<String>,

    /// Count, per day and without anything about who, the items' links opened, the tag pages
    /// viewed and the searches made, for administrators (`false`: nothing is counted).
    #[arg(
        long,
        env = "TIDINGS_USAGE_COUNTS",
        default_value = "true",
        num_args = 0..=1,
        require_equals = true,
        default_missing_value = "true",
        value_name = "true|false"
    )]
    pub usage_counts: String,

    #[command(flatten)]
    pub metrics: MetricsArgs,

    #[command(flatten)]
    pub oidc: super::serve_oidc::OidcArgs,

    #[command(flatten)]
    pub mail: super::serve_mail::MailArgs,
}

impl ApiArgs {
    /// Checks the settings and builds the server's configuration.
    pub fn check(
        &self,
        base_url: url::Url,
        media_proxy: tidings_server::media::MediaProxyMode,
    ) -> Result<ServerConfig, ConfigError> {
        let mut server = ServerConfig::new(base_url);
        for origin in self
            .cors_origins
            .split(',')
            .map(str::trim)
            .filter(|o| !o.is_empty())
        {
            let parsed = url::Url::parse(origin).ok().filter(|u| {
                matches!(u.scheme(), "http" | "https")
                    && u.host().is_some()
                    && u.path() == "/"
                    && u.query().is_none()
            });
            match parsed {
                Some(url) => server.cors_origins.push(url.origin().ascii_serialization()),
                None => {
                    return Err(ConfigError {
                        variable: "TIDINGS_CORS_ORIGINS",
                        flag: "--cors-origins",
                        value: origin.to_string(),
                        expected: "comma-separated origins such as https://app.example.com \
                                   (scheme, host and optional port, no path)"
                            .into(),
                    });
                }
            }
        }
        server.trusted_proxies = parse_networks(
            &self.trusted_proxies,
            "TIDINGS_TRUSTED_PROXIES",
            "--trusted-proxies",
        )?;
        server.metrics_access = self.metrics.check()?;
        server.max_subscriptions = config::check_number(
            &self.max_subscriptions,
            1..=100_000,
            "TIDINGS_MAX_SUBSCRIPTIONS",
            "--max-subscriptions",
        )?;
        server.sync_requests_per_minute = config::check_number(
            &self.sync_requests_per_minute,
            1..=1_000_000,
            "TIDINGS_SYNC_REQUESTS_PER_MINUTE",
            "--sync-requests-per-minute",
        )?;
        let idle: u64 = config::check_number(
            &self.session_idle_days,
            1..=365,
            "TIDINGS_SESSION_IDLE_DAYS",
            "--session-idle-days",
        )?;
        let lifetime: u64 = config::check_number(
            &self.session_lifetime_days,
            1..=3650,
            "TIDINGS_SESSION_LIFETIME_DAYS",
            "--session-lifetime-days",
        )?;
        let key = check_secret(
            self.media_proxy_key.as_deref(),
            32,
            "TIDINGS_MEDIA_PROXY_KEY",
            "--media-proxy-key",
        )?;
        server.media_proxy = tidings_server::media::MediaProxy::new(media_proxy, key);
        server.usage_counts =
            config::check_bool(&self.usage_counts, "TIDINGS_USAGE_COUNTS", "--usage-counts")?;
        server.oidc = self.oidc.check()?;
        (server.mail, _) = self.mail.check()?;
        server.session_idle = std::time::Duration::from_secs(idle * 86_400);
        server.session_lifetime = std::time::Duration::from_secs(lifetime * 86_400);
        Ok(server)
    }
}

/// Runs `tidings serve`.
pub async fn run(config: &GlobalConfig, args: ServeArgs) -> anyhow::Result<ExitCode> {
    let listen = config::check_listen(&args.listen)?;
    let explicit_base_url = match &args.base_url {
        Some(url) => Some(config::check_base_url(url)?),
        None => None,
    };
    let mut worker_settings = args.worker_settings.check()?;
    worker_settings.set_websub_base_url(explicit_base_url.as_ref())?;
    // Checked now so that a bad value stops the start before anything is created; the base
    // URL is filled in once the listener is bound.
    let mut server_config = args.api.check(
        config::check_base_url(&format!("http://{}", reachable(listen)))?,
        worker_settings.media_proxy,
    )?;
    let admin = admin_from_env()?;
    let run_worker =
        config::check_bool(&args.worker, "TIDINGS_WORKER", "--worker")? && !args.no_worker;

    // Registered first, so that a stop while waiting for the database ends the wait.
    let mut shutdown = Box::pin(shutdown_signal()?);
    let Some(store) =
        super::open_store_waiting(config, super::OpenMode::CreateIfMissing, &mut shutdown).await?
    else {
        tracing::info!("stopped before the database answered");
        return Ok(ExitCode::SUCCESS);
    };
    if let Some((username, password)) = admin {
        ensure_admin(&store, &username, &password).await?;
    }

    let listener = tokio::net::TcpListener::bind(listen)
        .await
        .with_context(|| format!("cannot listen on {listen}"))?;
    let bound = listener.local_addr()?;
    let smtp_listener = bind_smtp(&args.api.mail).await?;
    let base_url = match explicit_base_url {
        Some(url) => url,
        None => config::check_base_url(&format!("http://{}/", reachable(bound)))?,
    };
    server_config.base_url = base_url.clone();
    server_config.usage_retention_days = worker_settings.worker.usage_retention_days;
    if let Some(oidc) = &server_config.oidc {
        tracing::info!(
            issuer = %oidc.issuer,
            "single sign-on through {} ({}): register {} as the redirect URI there",
            oidc.display_name,
            oidc.issuer,
            tidings_server::oidc::login::redirect_uri(&base_url)
        );
    }
    if let Some(token) = setup::issue_setup_token(&store).await? {
        let mut link = base_url.clone();
        link.set_path(&format!(
            "{}setup",
            base_url.path().trim_end_matches('/').to_owned() + "/"
        ));
        link.set_query(Some(&format!("token={token}")));
        tracing::warn!(
            "no account exists yet: open {link} to create the first administrator \
             (the link works until an administrator exists), or run `tidings user add NAME --admin`"
        );
    }
    let database = super::describe_database(config, &store);
    tracing::info!(
        address = %bound,
        url = %base_url,
        database = %database,
        worker = run_worker,
        version = env!("CARGO_PKG_VERSION"),
        "tidings {} is running: open {base_url} (listening on {bound}; database {database}; {})",
        env!("CARGO_PKG_VERSION"),
        if run_worker {
            "the fetch worker runs in this process"
        } else {
            "no fetch worker in this process (TIDINGS_WORKER=false): run `tidings worker` beside it"
        }
    );
    let worker = if run_worker {
        Some(super::worker::BackgroundWorker::spawn(
            &worker_settings,
            store.clone(),
        )?)
    } else {
        None
    };
    // Subscribing and manual refreshes fetch through the same settings and counters as the
    // background worker.
    let metrics = worker
        .as_ref()
        .map(|w| std::sync::Arc::clone(&w.metrics))
        .unwrap_or_default();
    let api_fetcher = worker_settings.fetcher(store.clone(), metrics)?;
    // One stop for both halves, so that the HTTP server's grace and the worker's run at the
    // same time and the process stops within the longer of the two.
    let (stop, stopped) = tokio::sync::watch::channel(false);
    let stop = std::sync::Arc::new(stop);
    let on_signal = std::sync::Arc::clone(&stop);
    tokio::spawn(async move {
        shutdown.await;
        on_signal.send_replace(true);
    });
    let until_stopped = |mut stopped: tokio::sync::watch::Receiver<bool>| async move {
        // An error means the sender is gone, which also means stop.
        let _ = stopped.wait_for(|stop| *stop).await;
    };
    let state = AppState::new(store.clone(), server_config, api_fetcher);
    if let Some(smtp) = smtp_listener {
        tokio::spawn(tidings_server::mail::smtp::serve(
            smtp,
            state.clone(),
            until_stopped(stopped.clone()),
        ));
    }
    let http = async {
        let served = tidings_server::serve(listener, state, until_stopped(stopped.clone())).await;
        stop.send_replace(true);
        served
    };
    let background = async {
        if let Some(worker) = worker {
            until_stopped(stopped.clone()).await;
            worker.stop().await;
        }
    };
    let (served, ()) = tokio::join!(http, background);
    served.context("the HTTP server stopped")?;
    store.close().await;
    tracing::info!("stopped");
    Ok(ExitCode::SUCCESS)
}

/// The SMTP listener's socket when `TIDINGS_SMTP_LISTEN` is set (issue 36).
async fn bind_smtp(
    mail: &super::serve_mail::MailArgs,
) -> anyhow::Result<Option<tokio::net::TcpListener>> {
    let (settings, listen) = mail.check()?;
    let Some(listen) = listen else {
        return Ok(None);
    };
    let listener = tokio::net::TcpListener::bind(listen)
        .await
        .with_context(|| format!("cannot listen for SMTP on {listen}"))?;
    tracing::info!(
        address = %listener.local_addr()?,
        domain = settings.domain.as_deref().unwrap_or_default(),
        "receiving newsletters by SMTP on {} for @{}",
        listener.local_addr()?,
        settings.domain.as_deref().unwrap_or_default()
    );
    Ok(Some(listener))
}

/// The address a browser on this machine can open for a listener on `address`: an unspecified
/// address (`0.0.0.0`, `[::]`, all interfaces) is not one, so the loopback address stands in.
fn reachable(address: std::net::SocketAddr) -> std::net::SocketAddr {
    let ip = match address.ip() {
        std::net::IpAddr::V4(v4) if v4.is_unspecified() => std::net::Ipv4Addr::LOCALHOST.into(),
        std::net::IpAddr::V6(v6) if v6.is_unspecified() => std::net::Ipv6Addr::LOCALHOST.into(),
        ip => ip,
    };
    std::net::SocketAddr::new(ip, address.port())
}

/// `TIDINGS_ADMIN_USERNAME` and `TIDINGS_ADMIN_PASSWORD`, which come as a pair.
fn admin_from_env() -> Result<Option<(String, String)>, ConfigError> {
    let read = |name: &str| std::env::var(name).ok().filter(|v| !v.trim().is_empty());
    match (
        read("TIDINGS_ADMIN_USERNAME"),
        read("TIDINGS_ADMIN_PASSWORD"),
    ) {
        (Some(user), Some(password)) => Ok(Some((user, password))),
        (None, None) => Ok(None),
        (Some(_), None) => Err(ConfigError {
            variable: "TIDINGS_ADMIN_PASSWORD",
            flag: "(environment only)",
            value: String::new(),
            expected: "a password, because TIDINGS_ADMIN_USERNAME is set".into(),
        }),
        (None, Some(_)) => Err(ConfigError {
            variable: "TIDINGS_ADMIN_USERNAME",
            flag: "(environment only)",
            value: String::new(),
            expected: "a user name, because TIDINGS_ADMIN_PASSWORD is set".into(),
        }),
    }
}

/// Creates the administrator named in the environment unless that user exists already (an
/// existing user is left as it is: the environment does not reset passwords).
async fn ensure_admin(store: &Store, username: &str, password: &str) -> anyhow::Result<()> {
    if store.user_credentials(username).await?.is_some() {
        return Ok(());
    }
    if let Err(reason) = password::check_password_policy(password, username) {
        return Err(ConfigError {
            variable: "TIDINGS_ADMIN_PASSWORD",
            flag: "(environment only)",
            value: "(hidden)".into(),
            expected: format!("a password that meets the policy: {reason}"),
        }
        .into());
    }
    let hash = super::user::hash_off_thread(password.to_string()).await?;
    let created = store
        .create_user(&NewUser {
            username: username.to_string(),
            password_hash: Some(hash),
            is_admin: true,
        })
        .await;
    match created {
        Ok(user) => {
            tracing::info!(user = %user.username, "created the administrator from TIDINGS_ADMIN_USERNAME");
            Ok(())
        }
        // Another replica starting at the same moment created it first.
        Err(StoreError::Conflict(_)) => Ok(()),
        Err(StoreError::Invalid(reason)) => Err(ConfigError {
            variable: "TIDINGS_ADMIN_USERNAME",
            flag: "(environment only)",
            value: username.to_string(),
            expected: reason,
        }
        .into()),
        Err(error) => Err(error.into()),
    }
}

#[cfg(test)]
mod tests {
    use super::reachable;

    #[test]
    fn the_url_to_open_is_never_an_unspecified_address() {
        let cases = [
            ("0.0.0.0:8080", "127.0.0.1:8080"),
            ("[::]:8080", "[::1]:8080"),
            ("192.168.1.5:80", "192.168.1.5:80"),
            ("[::1]:9000", "[::1]:9000"),
        ];
        for (listen, expected) in cases {
            assert_eq!(reachable(listen.parse().unwrap()).to_string(), expected);
        }
    }
}
