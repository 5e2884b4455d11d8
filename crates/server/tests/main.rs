//! The server's integration tests, one binary: the REST API, the sync APIs (with real clients),
//! single sign-on, the web UI in a real browser, and operations, each against a real server on
//! 127.0.0.1 over both storage engines. Cargo does not find test files by itself here
//! (`autotests = false`): a new file is declared below, which testkit checks.
//!
//! The tests share one process: a test that changes what the whole process shares (the global
//! log subscriber) runs in a process of its own (`tidings_testkit::process::alone`).

mod api_accounts;
mod api_contract;
mod api_duplicates;
mod api_feed_settings;
mod api_full_text;
mod api_hardening;
mod api_imports;
mod api_isolation;
mod api_opml_jobs;
mod api_popularity;
mod api_reading;
mod api_related;
mod api_rules;
mod api_scraped;
mod api_search;
mod api_second_factors;
mod api_subscriptions;
mod api_summaries;
mod api_tags;
mod api_translations;
mod api_usage;
mod api_webhooks;
mod browser;
mod database_outage;
mod error_logging;
mod health;
mod inbound_limits;
mod mail;
mod media_proxy;
mod metrics;
mod oidc_browser;
mod oidc_standin;
mod oidc_tokens;
mod shared_limits;
mod support;
mod sync_clients;
mod sync_fever;
mod sync_greader;
mod sync_miniflux;
mod sync_newsflash;
mod sync_replays;
mod ui_browser;
mod ui_duplicates;
mod ui_habits;
mod ui_languages;
mod ui_newsletters;
mod ui_offline;
mod ui_rules;
mod ui_second_factors;
mod ui_translations;
mod usernames;
mod websub;
