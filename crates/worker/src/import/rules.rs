//! Another reader's filters imported as tidings rules: Miniflux's block and keep rules
//! ([`super::miniflux_rules`]), FreshRSS' filter actions ([`super::freshrss_rules`]). Each
//! source turns its filters into [`HistoryRule`]s (or says why one does not map); here they
//! are saved for the user, scoped to their feed, unless the user has the same rule already,
//! so that importing twice adds nothing.

use std::collections::{HashMap, HashSet};

use tidings_store::{RuleInput, RuleSpec, Store, StoreError};

use super::report::KindReport;

/// The longest rule name tidings keeps (the store's limit).
const MAX_NAME_CHARS: usize = 100;

/// A filter of the other reader, as a tidings rule.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct HistoryRule {
    /// The URL of the feed it acts on, as the other reader has it; `None`: every feed.
    pub feed_url: Option<String>,
    /// What the rule is called in tidings and in the report (its source and its text).
    pub name: String,
    /// Its conditions and actions (the scope is set on import), or why tidings cannot do
    /// what it did.
    pub spec: Result<RuleSpec, String>,
}

impl HistoryRule {
    /// A rule that maps.
    pub(crate) fn mapped(feed_url: Option<&str>, name: String, spec: RuleSpec) -> HistoryRule {
        HistoryRule {
            feed_url: feed_url.map(str::to_owned),
            name,
            spec: Ok(spec),
        }
    }

    /// A filter that does not map, and why.
    pub(crate) fn unmapped(feed_url: Option<&str>, name: String, why: String) -> HistoryRule {
        HistoryRule {
            feed_url: feed_url.map(str::to_owned),
            name,
            spec: Err(why),
        }
    }
}

/// Where [`import_rules`] finds the user's feeds: by normalized URL, the ones they have
/// (`feeds`) and, in a dry run, the ones the import would subscribe to (`pending`).
pub(crate) struct RuleFeeds<'a> {
    /// The user's feeds after the subscriptions were imported.
    pub feeds: &'a HashMap<String, i64>,
    /// In a dry run, the feeds that would be subscribed.
    pub pending: &'a HashSet<String>,
}

/// Saves `rules` for `user_id` (in a dry run, counts them), each scoped to its feed, leaving
/// out the ones the user has already (same scope, conditions and actions, enabled or not).
/// A filter that does not map, or that tidings cannot run (a pattern its regular expressions
/// refuse), is noted as not kept; one whose feed is not subscribed fails. `report.names`
/// lists the rules added (a dry run: that would be).
pub(crate) async fn import_rules(
    store: &Store,
    user_id: i64,
    rules: &[HistoryRule],
    where_: &RuleFeeds<'_>,
    dry_run: bool,
    report: &mut KindReport,
) -> Result<(), StoreError> {
    if rules.is_empty() {
        return Ok(());
    }
    let mut existing: Vec<RuleSpec> = store
        .list_rules(user_id)
        .await?
        .into_iter()
        .map(|rule| rule.spec)
        .collect();
    for rule in rules {
        let mut spec = match &rule.spec {
            Ok(spec) => spec.clone(),
            Err(why) => {
                report.not_kept(format!("{}: {why}", rule.name));
                continue;
            }
        };
        let mut pending = false;
        if let Some(url) = rule.feed_url.as_deref() {
            // As the import's other feeds are matched: one spelling per address.
            let url = tidings_feed::normalize_feed_url_text(url);
            match where_.feeds.get(&url) {
                Some(&feed_id) => spec.scope.feed_id = Some(feed_id),
                // A dry run's feed that would be subscribed: no id yet, nothing to compare.
                None if where_.pending.contains(&url) => pending = true,
                None => {
                    report.fail(format!(
                        "{}: its feed {url} is not among your subscriptions (it could not be \
                         subscribed)",
                        rule.name
                    ));
                    continue;
                }
            }
        }
        if let Err(error) = tidings_rules::Rule::compile(0, &spec) {
            report.not_kept(format!("{}: tidings cannot run it: {error}", rule.name));
            continue;
        }
        if !pending && existing.contains(&spec) {
            report.unchanged += 1;
            continue;
        }
        if !dry_run {
            let input = RuleInput {
                name: rule.name.chars().take(MAX_NAME_CHARS).collect(),
                enabled: true,
                position: None,
                spec: spec.clone(),
            };
            match store.create_rule(user_id, &input).await {
                Ok(_) => {}
                Err(StoreError::Invalid(reason)) => {
                    report.fail(format!("{}: {reason}", rule.name));
                    continue;
                }
                Err(error @ (StoreError::LimitReached { .. } | StoreError::NotFound(_))) => {
                    report.fail(format!("{}: {error}", rule.name));
                    continue;
                }
                Err(error) => return Err(error),
            }
        }
        report.added += 1;
        report.names.push(rule.name.clone());
        existing.push(spec);
    }
    Ok(())
}
