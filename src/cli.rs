//! The `tidings` command line: its subcommands, parsed and run. Here rather than in `main.rs`
//! so that its unit tests run with the library's, in one test binary.

use std::process::ExitCode;

use clap::{Parser, Subcommand};

use crate::commands;
use crate::config::GlobalArgs;

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
    Serve(Box<commands::serve::ServeArgs>),
    /// Apply pending database migrations and exit.
    Migrate(commands::migrate::MigrateArgs),
    /// Write a consistent copy of the SQLite database while tidings runs (PostgreSQL: pg_dump).
    Backup(commands::backup::BackupArgs),
    /// Manage user accounts.
    #[command(subcommand)]
    User(commands::user::UserCommand),
    /// Run the fetch worker alone (several may share one PostgreSQL database).
    Worker(commands::worker::WorkerCommandArgs),
    /// Fetch feeds now, bypassing the schedule, and print what happened to each.
    Refresh(commands::refresh::RefreshArgs),
    /// Re-derive feeds' items from their stored raw bodies, without fetching, so that a parser
    /// fix reaches existing feeds at once.
    Reparse(commands::reparse::ReparseArgs),
    /// Put stopped feeds back on schedule: every user's (--all) or one user's (--user NAME).
    Resume(commands::resume::ResumeArgs),
    /// A shared feed's operator settings: suspended for everyone, and the proxy it is
    /// fetched through.
    #[command(subcommand)]
    Feed(commands::feed_settings::FeedCommand),
    /// Import or export a user's subscriptions as OPML.
    #[command(subcommand)]
    Opml(commands::opml::OpmlCommand),
    /// Import a user's history (subscriptions, folders, stars, read marks, labels) from
    /// another reader; running it twice changes nothing.
    #[command(subcommand)]
    Import(commands::import::ImportCommand),
    /// A user's rules: list, add, test what one would catch, apply one once.
    #[command(subcommand)]
    Rules(commands::rules::RulesCommand),
    /// List the feeds of a page, best first: fetch URL, or read a saved page with
    /// --html FILE --url URL.
    Discover(commands::discover::DiscoverArgs),
    /// Parse a feed file and print it as JSON, HTML sanitized.
    Parse(commands::feed::ParseArgs),
    /// Sanitize HTML from standard input to standard output.
    Sanitize(commands::feed::SanitizeArgs),
}

/// Parses the command line and runs the subcommand it names; the process's exit code.
pub fn main() -> ExitCode {
    // clap exits with code 2 and its own message on a malformed command line.
    let cli = Cli::parse();
    crate::entry::run("tidings", &cli.global, |config| async move {
        match cli.command {
            Command::Serve(args) => commands::serve::run(&config, *args).await,
            Command::Migrate(args) => commands::migrate::run(&config, args).await,
            Command::Backup(args) => commands::backup::run(&config, args).await,
            Command::User(command) => commands::user::run(&config, command).await,
            Command::Worker(args) => commands::worker::run(&config, args).await,
            Command::Refresh(args) => commands::refresh::run(&config, args).await,
            Command::Reparse(args) => commands::reparse::run(&config, args).await,
            Command::Resume(args) => commands::resume::run(&config, args).await,
            Command::Feed(command) => commands::feed_settings::run(&config, command).await,
            Command::Opml(command) => commands::opml::run(&config, command).await,
            Command::Import(command) => commands::import::run(&config, command).await,
            Command::Rules(command) => commands::rules::run(&config, command).await,
            Command::Discover(args) => commands::discover::run(&config, args).await,
            Command::Parse(args) => commands::feed::run_parse(&args),
            Command::Sanitize(args) => commands::feed::run_sanitize(&args),
        }
    })
}

#[cfg(test)]
mod tests {
    use clap::Parser;

    use super::{Cli, Command};

    fn parse(args: &[&str]) -> Cli {
        Cli::try_parse_from(args).unwrap_or_else(|error| panic!("{args:?}: {error}"))
    }

    #[test]
    fn yes_no_options_work_as_bare_flags_and_with_a_value() {
        let worker = |args: &[&str]| match parse(args).command {
            Command::Serve(serve) => serve.worker,
            other => panic!("{other:?}"),
        };
        assert_eq!(worker(&["tidings", "serve", "--worker"]), "true");
        assert_eq!(worker(&["tidings", "serve", "--worker=false"]), "false");
        // A bare flag does not swallow the next argument.
        assert_eq!(
            worker(&["tidings", "serve", "--worker", "--listen", "127.0.0.1:0"]),
            "true"
        );
        let allow = |args: &[&str]| match parse(args).command {
            Command::Serve(serve) => serve.worker_settings.fetch.allow_private_networks,
            Command::Discover(discover) => {
                assert_eq!(discover.target.as_deref(), Some("http://10.0.0.5/"));
                discover.fetch.allow_private_networks
            }
            Command::Refresh(refresh) => refresh.worker.fetch.allow_private_networks,
            other => panic!("{other:?}"),
        };
        assert_eq!(
            allow(&["tidings", "serve", "--allow-private-networks"]),
            "true"
        );
        assert_eq!(
            allow(&["tidings", "serve", "--allow-private-networks=false"]),
            "false"
        );
        assert_eq!(
            allow(&[
                "tidings",
                "discover",
                "--allow-private-networks",
                "http://10.0.0.5/"
            ]),
            "true"
        );
        assert_eq!(
            allow(&["tidings", "refresh", "--all", "--allow-private-networks"]),
            "true"
        );
    }
}
