//! Rules with an age ("older than N days") acting on items as they reach that age: the
//! periodic pass that auto-expires items (marks them read, or hides them) per feed, group or
//! everything. Arrival is handled at ingest (`rules`); this pass looks only at the items whose
//! age crossed a rule's bound since its last pass, so it costs what has aged, not the account.

use tidings_rules::{Action, Rule, RuleSpec, Scope, evaluate};

use crate::rules::{StepWindow, write_rule_outcomes_on};
use crate::{Result, Store, in_tx, with_db};

/// What one pass of the age rules did.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq, serde::Serialize)]
pub struct AgeRulesReport {
    /// Enabled rules with an age that were looked at.
    pub rules: u64,
    /// (user, item) pairs the rules changed.
    pub changed: u64,
}

/// An age rule's row: id, user, feed, group, spec, last change, bound of its last pass.
type AgeRuleRow = (i64, i64, Option<i64>, Option<i64>, String, i64, Option<i64>);

/// A rule whose age condition the pass looks after, with the window it looks at now.
struct AgeRule {
    rule: Rule,
    user_id: i64,
    updated_at: i64,
    /// Items published at or after this…
    after: i64,
    /// …and before this have passed the rule's age since its last pass (an age condition
    /// holds for items published before `now - age`, so the windows of passes follow each
    /// other without a gap or an overlap).
    through: i64,
    /// It only marks read (or hides): items already read need nothing from it unless it
    /// hides.
    only_reads: bool,
}

impl AgeRule {
    /// The rule of `row` with its window at `now`, when it has an age and something to do:
    /// keep-only rules are left out (an item reaching their age would be shown again, which a
    /// pass never does), and so are rules that no longer compile.
    fn of(row: AgeRuleRow, now: i64) -> Option<AgeRule> {
        let (id, user_id, feed_id, group_id, spec, updated_at, aged_through) = row;
        let mut spec: RuleSpec = serde_json::from_str(&spec).ok()?;
        let days = spec.older_than_days?;
        spec.scope = Scope { feed_id, group_id };
        let rule = match Rule::compile(id, &spec) {
            Ok(rule) => rule,
            Err(error) => {
                tracing::warn!(rule = id, %error, "a rule that does not compile is skipped");
                return None;
            }
        };
        if rule.actions.contains(&Action::KeepOnly) {
            return None;
        }
        let age = days.saturating_mul(86_400);
        // Never looked at: from the rule's last change on (what was already old then is for
        // "apply", as with any saved rule).
        let after = aged_through.unwrap_or(updated_at.saturating_sub(age));
        let only_reads = rule.actions.iter().all(|a| *a == Action::Read);
        Some(AgeRule {
            only_reads,
            rule,
            user_id,
            updated_at,
            after,
            through: now.saturating_sub(age),
        })
    }
}

impl Store {
    /// One pass of the rules with an age at `now`: each enabled rule with an age (hide, read,
    /// star or label) acts on the user's items that reached its age since its last pass
    /// (visible, not starred: hiding never takes away what the user saved), as it would have
    /// on their arrival; notifications and summaries are for arriving items only. The
    /// worker runs it every hour.
    pub async fn run_age_rules(&self, now: i64) -> Result<AgeRulesReport> {
        if !self.rules_ready().await {
            return Ok(AgeRulesReport::default());
        }
        // Specs are stored without empty fields, so only rules with an age hold its name.
        let rows: Vec<AgeRuleRow> = with_db!(self, read, |db| {
            sqlx::query_as(
                "SELECT id, user_id, feed_id, group_id, spec, updated_at, aged_through
                 FROM rules WHERE enabled AND spec LIKE '%\"older_than_days\"%'
                 ORDER BY id",
            )
            .fetch_all(db)
            .await?
        });
        let mut report = AgeRulesReport::default();
        for rule in rows.into_iter().filter_map(|row| AgeRule::of(row, now)) {
            report.rules += 1;
            if rule.through > rule.after {
                report.changed += self.age_rule_pass(&rule, now).await?;
            }
            // The rule is done up to its bound, unless it changed meanwhile (a change starts
            // its pass afresh).
            with_db!(self, write, |db| {
                sqlx::query("UPDATE rules SET aged_through = $1 WHERE id = $2 AND updated_at = $3")
                    .bind(rule.through.max(rule.after))
                    .bind(rule.rule.id)
                    .bind(rule.updated_at)
                    .execute(db)
                    .await?;
            });
        }
        Ok(report)
    }

    /// Runs one age rule on the items of its window, a batch at a time; answers how many
    /// changed.
    async fn age_rule_pass(&self, age: &AgeRule, now: i64) -> Result<u64> {
        let mut changed = 0u64;
        let mut last_id = 0i64;
        loop {
            // Unread ones only, for a rule that only marks read.
            let window = StepWindow {
                published_from: Some(age.after),
                published_before: Some(age.through),
                unread_only: age.only_reads,
            };
            let ids = self
                .rule_items_step(age.user_id, &age.rule.scope, last_id, &window)
                .await?;
            let Some(&last) = ids.last() else { break };
            last_id = last;
            let mut decided = Vec::new();
            for item in self.rule_items(age.user_id, &ids).await? {
                let mut outcome = evaluate(
                    std::slice::from_ref(&age.rule),
                    &item.prepare(),
                    item.group_id,
                    now,
                );
                outcome.notify.clear();
                outcome.summarize = false;
                if !outcome.is_empty() {
                    decided.push((age.user_id, item.id, outcome));
                }
            }
            changed += decided.len() as u64;
            if !decided.is_empty() {
                in_tx!(self, |tx| {
                    write_rule_outcomes_on!(tx, &decided, now);
                });
            }
        }
        Ok(changed)
    }
}
