//! The storage crate's integration tests, one binary: each module is one area of the store,
//! run on both engines (SQLite, and PostgreSQL when `TIDINGS_TEST_POSTGRES_URL` is set).
//! Cargo does not find test files by itself here (`autotests = false`): a new file is declared
//! below, which testkit's `every_crate_declares_each_test_file` checks.

mod accounts;
mod arrival_dates;
mod duplicates;
mod embeddings;
mod fetching;
mod full_text;
mod identities;
mod import_jobs;
mod label_names;
mod languages;
mod popularity;
mod postgres_tls;
mod reading;
mod rules;
mod scraped;
mod search;
mod storage;
mod store_fetch;
mod subscription_backlog;
mod summaries;
mod suspend;
mod sync;
mod tags;
mod translations;
mod usage;
mod webhooks;
mod websub;
