//! `tidings`: a self-hosted, multi-user RSS / Atom / JSON Feed reader in one binary.

mod commands;
mod config;

use std::process::ExitCode;

use clap::{Parser, Subcommand};

use crate::config::{EXIT_CONFIG, GlobalArgs, GlobalConfig, LogFormat};

/// A self-hosted, multi-user RSS / Atom / JSON Feed reader.
#[derive(Debug, Parser)]
#[command(name = "tidings", version, about, propagate_version = true)]
struct Cli {
    #[command(flatten)]
    global: GlobalArgs,
    #[command(subcommand)]
    command: Command,
}

#[derive(Debug, Subcommand)]
enum Command {
    /// Run the server: the web UI, the API and health checks, migrating the database first.
    Serve(commands::serve::ServeArgs),
    /// Apply pending database migrations and exit.
    Migrate(commands::migrate::MigrateArgs),
    /// Manage user accounts.
    #[command(subcommand)]
    User(commands::user::UserCommand),
    /// Run the fetch worker alone (several may share one PostgreSQL database).
    Worker(commands::worker::WorkerCommandArgs),
    /// Fetch feeds now, bypassing the schedule, and print what happened to each.
    Refresh(commands::refresh::RefreshArgs),
    /// Import or export a user's subscriptions as OPML.
    #[command(subcommand)]
    Opml(commands::opml::OpmlCommand),
    /// List the feeds of a page, best first: fetch URL, or read a saved page with
    /// --html FILE --url URL.
    Discover(commands::discover::DiscoverArgs),
    /// Parse a feed file and print it as JSON, HTML sanitized.
    Parse(commands::feed::ParseArgs),
    /// Sanitize HTML from standard input to standard output.
    Sanitize(commands::feed::SanitizeArgs),
    /// Measure the fetch worker against a local feed server.
    #[command(subcommand)]
    Bench(commands::bench::BenchCommand),
}

fn main() -> ExitCode {
    // clap exits with code 2 and its own message on a malformed command line.
    let cli = Cli::parse();
    let config = match cli.global.check() {
        Ok(config) => config,
        Err(error) => {
            eprintln!("tidings: {error}");
            return ExitCode::from(EXIT_CONFIG);
        }
    };
    init_logging(&config);
    // reqwest is built without a default TLS provider; install ring once for the process.
    let _ = rustls::crypto::ring::default_provider().install_default();

    let runtime = match tokio::runtime::Builder::new_multi_thread()
        .enable_all()
        .build()
    {
        Ok(runtime) => runtime,
        Err(error) => {
            eprintln!("tidings: cannot start the async runtime: {error}");
            return ExitCode::FAILURE;
        }
    };
    let result = runtime.block_on(async {
        match cli.command {
            Command::Serve(args) => commands::serve::run(&config, args).await,
            Command::Migrate(args) => commands::migrate::run(&config, args).await,
            Command::User(command) => commands::user::run(&config, command).await,
            Command::Worker(args) => commands::worker::run(&config, args).await,
            Command::Refresh(args) => commands::refresh::run(&config, args).await,
            Command::Opml(command) => commands::opml::run(&config, command).await,
            Command::Discover(args) => commands::discover::run(&config, args).await,
            Command::Parse(args) => commands::feed::run_parse(&args),
            Command::Sanitize(args) => commands::feed::run_sanitize(&args),
            Command::Bench(command) => commands::bench::run(&config, command).await,
        }
    });
    match result {
        Ok(code) => code,
        Err(error) => match error.downcast_ref::<config::ConfigError>() {
            Some(config_error) => {
                eprintln!("tidings: {config_error}");
                ExitCode::from(EXIT_CONFIG)
            }
            None => {
                eprintln!("tidings: {error:#}");
                ExitCode::FAILURE
            }
        },
    }
}

fn init_logging(config: &GlobalConfig) {
    let builder = tracing_subscriber::fmt()
        .with_env_filter(config.log_filter.clone())
        .with_ansi(std::io::IsTerminal::is_terminal(&std::io::stderr()))
        .with_writer(std::io::stderr);
    let result = match config.log_format {
        LogFormat::Text => builder.try_init(),
        LogFormat::Json => builder.json().flatten_event(true).try_init(),
    };
    if let Err(error) = result {
        eprintln!("tidings: logging could not be set up: {error}");
    }
}
