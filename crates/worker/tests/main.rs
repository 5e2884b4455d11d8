//! The worker's integration tests, one binary: fetching, politeness, the jobs after a fetch
//! (full text, tags, related items, summaries, notifications, favicons, popularity) and the
//! worker pool, against local HTTP servers on both storage engines. Cargo does not find test
//! files by itself here (`autotests = false`): a new file is declared below, which testkit
//! checks.

mod embedding;
mod favicons;
mod fetching;
mod full_text;
mod import_reports;
mod import_rules;
mod notifications;
mod politeness;
mod popularity;
mod reparse;
mod scraping;
mod subscribing;
mod summaries;
mod support;
mod tagging;
mod translations;
mod usage_retention;
mod workers;
