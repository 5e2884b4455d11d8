//! The root package's integration tests, one binary: the `tidings` command (feeds, the
//! foundation, logs, operator commands, scale, the worker), the container files, the docs'
//! settings table against the code, and the house rules on the source. Cargo does not find
//! test files by itself here (`autotests = false`): a new file is declared below, which
//! testkit checks.

mod cli_feed;
mod cli_foundation;
mod cli_import;
mod cli_import_miniflux;
mod cli_logs;
mod cli_operator;
mod cli_rules;
mod cli_scale;
mod cli_worker;
mod container_files;
mod house;
mod readme_settings;
mod support;
