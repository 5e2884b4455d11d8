//! `tidings-bench`: the benchmarks, feed farms and the soak test of tidings. They measure the
//! product (its worker, store, API and parsers) and live apart from it, so that the shipped
//! `tidings` binary carries none of their code or dependencies. Figures they produced are in
//! crates/server/BENCHMARKS.md and the other crates' BENCHMARKS.md.

mod api;
mod documents;
mod duplicates;
mod extract;
mod fetch;
mod heavy_user;
mod import;
mod mix;
mod paired;
mod parse;
mod quantiles;
mod related;
mod retention;
mod rules;
mod search;
mod soak;
mod soak_farm;
mod store;
mod sync;

use std::process::ExitCode;

use clap::{Parser, Subcommand};
use tidings::config::{GlobalArgs, GlobalConfig};

/// Measure tidings: the fetch worker against local feed farms, the reading and sync APIs,
/// search, related items, parsing and extraction, and a soak under faults.
#[derive(Debug, Parser)]
#[command(name = "tidings-bench", version, about, propagate_version = true)]
struct Cli {
    #[command(flatten)]
    global: GlobalArgs,
    #[command(subcommand)]
    command: BenchCommand,
}

/// The benches, farms and the soak test.
#[derive(Debug, Subcommand)]
enum BenchCommand {
    /// Fetch N local feeds twice (full, then all 304) and report throughput, memory and size.
    /// Without --database-url the run uses a temporary SQLite file; with a PostgreSQL URL it
    /// works in a schema of its own, dropped at the end.
    Fetch(fetch::FetchBenchArgs),
    /// Build the reading API's data set in the configured database: feeds, items, users who
    /// follow every feed, and their API keys in a file.
    Generate(api::GenerateArgs),
    /// Measure the reading API of a running server: first unread page, counts and
    /// mark-feed-read from concurrent clients, with median / p95 / p99 per endpoint.
    Api(api::ApiBenchArgs),
    /// Load a running server's Google Reader API (tidings or FreshRSS) as apps do: ids,
    /// contents, subscriptions and unread counts from concurrent clients, with requests/s,
    /// median / p95 and the server's CPU per request; then one app's first sync.
    Sync(sync::SyncBenchArgs),
    /// Time one heavy user's first screen of the UI, "Mark all read" and its undo, and
    /// Fever's unread ids through a running server, on the data set of `generate --users 1`
    /// (issue 38).
    HeavyUser(heavy_user::HeavyUserArgs),
    /// Give the configured database N more users with one user's subscriptions and an API
    /// key each, for `sync`.
    SyncUsers(sync::SyncUsersArgs),
    /// Time storing new items into the feed with the most subscribers and into the one with
    /// the fewest, on the data set of `generate --feeds-per-user`.
    SyncIngest(sync::SyncIngestArgs),
    /// Time storing new items into many feeds with 1,000 rules across 100 users, against the
    /// same with the rules off (issue 33).
    RulesIngest(rules::RulesIngestArgs),
    /// Time storing new items into many feeds with copies of the same stories among them,
    /// clustered against the same with clustering off (issue 35).
    DuplicatesIngest(duplicates::DuplicatesIngestArgs),
    /// Time the rule editor's live preview for one user with 100,000 items (issue 33).
    RulesPreview(rules::RulesPreviewArgs),
    /// Time searches (single word, two words, CJK, phrase, filtered, by relevance) on the data
    /// set of `generate`, through the store, with p95 per kind and the index's size.
    Search(search::SearchBenchArgs),
    /// Embed every item of the data set of `generate` with the local embedder, then time the
    /// related-items search as the first bench user: index load, p50 / p95, memory.
    Related(related::RelatedBenchArgs),
    /// Parse (and sanitize) every feed file of a folder in rounds and report MB/s and items/s;
    /// --generate first writes a realistic mix of feeds there.
    Parse(parse::ParseBenchArgs),
    /// Extract the article of every saved page of a folder in rounds and report ms per page,
    /// MB/s, and how much of each article (and of the rest of its page) was kept.
    Extract(extract::ExtractBenchArgs),
    /// Subscribe a new user of the configured database to a farm of local feeds, then serve
    /// the farm on 127.0.0.1 until stopped: to measure `tidings refresh --all`, `tidings
    /// worker` and `tidings serve` against it (with TIDINGS_ALLOW_PRIVATE_NETWORKS=true).
    Farm(fetch::FarmArgs),
    /// Import the OPML of the world's mix farm (`fetch --mix`) into a `tidings serve` child
    /// process on a fresh database, as a background job: the time to everything imported
    /// and stored and the server's peak memory; with --reader-python, reader's (Python) first
    /// update of the same farm too (issue 32).
    Import(import::ImportBenchArgs),
    /// Time retention deleting a day's expired items of the data set of `generate`, and
    /// the first screen's latency for readers meanwhile (issue 38). It deletes: run it on a
    /// copy.
    Retention(retention::RetentionArgs),
    /// A simulated deployment on a private PostgreSQL under faults (workers killed, the
    /// database away), checked for lost or duplicated items, error logs and memory growth.
    Soak(soak::SoakArgs),
}

/// Runs one bench.
async fn run(config: &GlobalConfig, command: BenchCommand) -> anyhow::Result<ExitCode> {
    match command {
        BenchCommand::Fetch(args) => fetch::fetch(config, args).await,
        BenchCommand::Generate(args) => api::generate(config, args).await,
        BenchCommand::Api(args) => api::api(args).await,
        BenchCommand::Sync(args) => sync::sync(args).await,
        BenchCommand::HeavyUser(args) => heavy_user::run(args).await,
        BenchCommand::SyncUsers(args) => sync::sync_users(config, args).await,
        BenchCommand::SyncIngest(args) => sync::sync_ingest(config, args).await,
        BenchCommand::RulesIngest(args) => rules::run(config, args).await,
        BenchCommand::Retention(args) => retention::run(config, args).await,
        BenchCommand::RulesPreview(args) => rules::preview(config, args).await,
        BenchCommand::DuplicatesIngest(args) => duplicates::run(config, args).await,
        BenchCommand::Search(args) => search::run(config, args).await,
        BenchCommand::Related(args) => related::run(config, args).await,
        BenchCommand::Parse(args) => parse::run(&args),
        BenchCommand::Extract(args) => extract::run(&args),
        BenchCommand::Farm(args) => fetch::farm(config, args).await,
        BenchCommand::Import(args) => import::run(config, args).await,
        BenchCommand::Soak(args) => soak::run(args).await,
    }
}

fn main() -> ExitCode {
    // clap exits with code 2 and its own message on a malformed command line.
    let cli = Cli::parse();
    tidings::entry::run("tidings-bench", &cli.global, |config| async move {
        run(&config, cli.command).await
    })
}
