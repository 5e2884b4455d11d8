//! The `tidings` command line as a library: its settings, its subcommands and the process
//! around them. The `tidings` binary (`main.rs`) runs [`cli::main`];
//! `tidings-bench` (crates/bench) shares the settings, the database opening and the process
//! set-up, so that a bench reads `--database-url` and the outbound flags exactly as the
//! product does without the product carrying the benches.

pub mod allocator;
pub mod cli;
pub mod commands;
pub mod config;
pub mod entry;
pub mod output;
