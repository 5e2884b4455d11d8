//! Rules on what is learned about an item after it arrived (issue 33). An item's tags are
//! found a moment after it is stored (the tagging queue) and its popularity is counted later
//! still, so a rule with `tag:` or `popularity:` could not hold when the item arrived, when
//! rules run. When tags or a count are saved, each subscriber's rules run again for the item
//! as it was and as it is now, and only the difference acts ([`tidings_rules::Change`]): the
//! item is hidden, shown (a keep-only rule it failed now keeps it, and it arrives in the
//! user's arrival order now), or gets marks no rule made before. A mark the user undid is not
//! made again when the same thing is learned twice, and a rule saved after the item arrived
//! does not act on it, as saving a rule acts only on items that arrive afterwards.
//!
//! The change is decided before the transaction that saves the tags or counts, and written in
//! it, so the two commit together.

use std::collections::{BTreeSet, HashMap};
use std::sync::Arc;

use tidings_rules::{Change, Outcome, Rule, evaluate};

use crate::batch::{bound_ids, json_param};
use crate::rules::{FeedRuleRow, FeedRules};
use crate::{Engine, Result, Store, unix_now, with_db};

/// What was learned about an item.
#[derive(Debug, Clone)]
pub(crate) enum Learned {
    /// Its tags, all of them (they replace the ones it had).
    Tags(Vec<String>),
    /// Its popularity count.
    Popularity(i64),
}

impl Learned {
    /// What a rule's spec says when it looks at this kind of fact: a cheap test in SQL that
    /// keeps out the users whose rules cannot care (the compiled rules decide).
    fn spec_pattern(&self) -> &'static str {
        match self {
            Learned::Tags(_) => "%tag:%",
            Learned::Popularity(_) => "%popularity:%",
        }
    }
}

/// What rules decided anew for one user's item: (user, item, change).
pub(crate) type LateChange = (i64, i64, Change);

/// A rule row for a user's feed with the time the rule was last saved.
type TimedRuleRow = (
    i64,
    i64,
    Option<i64>,
    Option<i64>,
    Option<i64>,
    String,
    i64,
    i64,
);

impl Store {
    /// What the subscribers' rules decide anew now that `learned` is known of these items
    /// (keyed by item), before it is saved. Only the users with an enabled rule in scope that
    /// may look at what was learned, saved before the item arrived, are read.
    pub(crate) async fn late_rule_changes(
        &self,
        learned: &HashMap<i64, Learned>,
    ) -> Result<Vec<LateChange>> {
        let Some(pattern) = learned.values().next().map(Learned::spec_pattern) else {
            return Ok(Vec::new());
        };
        if !self.rules_ready().await {
            return Ok(Vec::new());
        }
        let ids = json_param(&learned.keys().collect::<Vec<_>>())?;
        let sql = format!(
            "SELECT DISTINCT s.user_id, i.id FROM items i
             JOIN subscriptions s ON s.feed_id = i.feed_id
             JOIN rules r ON r.user_id = s.user_id
             WHERE i.id IN {} AND r.enabled AND (r.feed_id IS NULL OR r.feed_id = i.feed_id)
               AND r.updated_at <= i.fetched_at AND LOWER(r.spec) LIKE $1
             ORDER BY s.user_id, i.id",
            bound_ids(self.engine(), 2)
        );
        let pairs: Vec<(i64, i64)> = with_db!(self, read, |db| {
            sqlx::query_as(sqlx::AssertSqlSafe(sql))
                .bind(pattern)
                .bind(&ids)
                .fetch_all(db)
                .await?
        });
        let mut by_user: Vec<(i64, Vec<i64>)> = Vec::new();
        for (user_id, item_id) in pairs {
            match by_user.last_mut() {
                Some((user, items)) if *user == user_id => items.push(item_id),
                _ => by_user.push((user_id, vec![item_id])),
            }
        }
        let mut changes = Vec::new();
        for (user_id, items) in by_user {
            changes.extend(self.user_late_changes(user_id, &items, learned).await?);
        }
        Ok(changes)
    }

    /// One user's part of [`Store::late_rule_changes`]: their rules per feed, their items as
    /// they are (before) and as they will be (after).
    async fn user_late_changes(
        &self,
        user_id: i64,
        ids: &[i64],
        learned: &HashMap<i64, Learned>,
    ) -> Result<Vec<LateChange>> {
        let items = self.rule_items(user_id, ids).await?;
        // Deleted or unsubscribed since they were found: nothing to decide (and no empty
        // `IN ()` list, which is not SQL).
        if items.is_empty() {
            return Ok(Vec::new());
        }
        let feeds: BTreeSet<i64> = items.iter().map(|item| item.feed_id).collect();
        let feeds = json_param(&feeds)?;
        let sql = format!(
            "SELECT r.id, r.user_id, s.group_id, r.feed_id, r.group_id, r.spec, r.updated_at,
                    s.feed_id
             FROM rules r JOIN subscriptions s ON s.user_id = r.user_id
             WHERE r.user_id = $1 AND r.enabled AND s.feed_id IN {}
               AND (r.feed_id IS NULL OR r.feed_id = s.feed_id)
             ORDER BY s.feed_id, r.position, r.id",
            bound_ids(self.engine(), 2)
        );
        let rows: Vec<TimedRuleRow> = with_db!(self, read, |db| {
            sqlx::query_as(sqlx::AssertSqlSafe(sql))
                .bind(user_id)
                .bind(&feeds)
                .fetch_all(db)
                .await?
        });
        let saved_at: HashMap<i64, i64> = rows.iter().map(|r| (r.0, r.6)).collect();
        let mut per_feed: HashMap<i64, Vec<FeedRuleRow>> = HashMap::new();
        for (id, user, group, rule_feed, rule_group, spec, _, feed_id) in rows {
            per_feed
                .entry(feed_id)
                .or_default()
                .push((id, user, group, rule_feed, rule_group, spec));
        }
        let compiled: HashMap<i64, (Option<i64>, Vec<Arc<Rule>>)> = per_feed
            .into_iter()
            .filter_map(|(feed_id, rows)| {
                FeedRules::new(rows, &self.rule_cache)
                    .into_first()
                    .map(|(group, rules)| (feed_id, (group, rules)))
            })
            .collect();
        let now = unix_now();
        let mut changes = Vec::new();
        for item in &items {
            let (Some((group_id, rules)), Some(fact)) =
                (compiled.get(&item.feed_id), learned.get(&item.id))
            else {
                continue;
            };
            // The rules the user had when the item arrived.
            let rules: Vec<&Rule> = rules
                .iter()
                .filter(|r| saved_at.get(&r.id).is_some_and(|at| *at <= item.fetched_at))
                .map(|r| &**r)
                .collect();
            let mut prepared = item.prepare();
            let before = evaluate(&rules, &prepared, *group_id, now);
            match fact {
                Learned::Tags(names) => prepared.item.tags = names.as_slice(),
                Learned::Popularity(count) => prepared.item.popularity = Some(*count),
            }
            let after = evaluate(&rules, &prepared, *group_id, now);
            if let Some(change) = after.change_from(&before) {
                changes.push((user_id, item.id, change));
            }
        }
        Ok(changes)
    }
}

/// The changes as outcomes to write as any rule outcome (hidden, or the actions added), and
/// the items to show again with the actions they now get.
pub(crate) fn split_changes(
    changes: &[LateChange],
) -> (Vec<(i64, i64, Outcome)>, Vec<(i64, i64, Outcome)>) {
    let (mut outcomes, mut shown) = (Vec::new(), Vec::new());
    for (user_id, item_id, change) in changes {
        match change {
            Change::Hide => outcomes.push((
                *user_id,
                *item_id,
                Outcome {
                    hidden: true,
                    ..Outcome::default()
                },
            )),
            Change::Act(outcome) => outcomes.push((*user_id, *item_id, outcome.clone())),
            Change::Show(outcome) => shown.push((*user_id, *item_id, outcome.clone())),
        }
    }
    (outcomes, shown)
}

/// The statement that takes the next number and time of the arrival order (`sync_clock`):
/// PostgreSQL has a function for it that the arrival triggers use; SQLite's triggers do the
/// same update inline, with `$1` the time now in microseconds.
pub(crate) fn clock_take_sql(engine: Engine) -> &'static str {
    match engine {
        Engine::Postgres => "SELECT base + 1, at_us + 1 FROM tidings_sync_clock_take(1)",
        Engine::Sqlite => {
            "UPDATE sync_clock SET last_seq = last_seq + 1, last_us = MAX(last_us + 1, $1)
             RETURNING last_seq, last_us"
        }
    }
}

/// Writes what rules decided anew (`$changes`, [`LateChange`]s of items whose new facts are
/// saved in the same transaction `$db`): hidden items leave the user's arrival order, shown
/// ones are unhidden, unread, and arrive now (number and time from [`clock_take_sql`] for
/// `$engine`), then every action as at arrival. Evaluates to how many changed.
macro_rules! write_late_changes_on {
    ($db:expr, $changes:expr, $engine:expr, $now:expr) => {{
        let changes: &[$crate::rules_late::LateChange] = $changes;
        let (engine, now): ($crate::Engine, i64) = ($engine, $now);
        let (outcomes, shown) = $crate::rules_late::split_changes(changes);
        let mut unhidden_items = Vec::with_capacity(shown.len());
        for (user_id, item_id, outcome) in shown {
            let unhidden = sqlx::query(
                "UPDATE item_states SET is_hidden = $3, is_read = $3, updated_at = $4
                 WHERE user_id = $1 AND item_id = $2 AND is_hidden",
            )
            .bind(user_id)
            .bind(item_id)
            .bind(false)
            .bind(now)
            .execute(&mut *$db)
            .await?
            .rows_affected();
            if unhidden == 0 {
                continue;
            }
            let take = sqlx::query_as::<_, (i64, i64)>($crate::rules_late::clock_take_sql(engine));
            let (seq, arrived_us) = match engine {
                $crate::Engine::Sqlite => take.bind(now.saturating_mul(1_000_000)),
                $crate::Engine::Postgres => take,
            }
            .fetch_one(&mut *$db)
            .await?;
            sqlx::query(
                "INSERT INTO user_items (user_id, seq, item_id, arrived_us, feed_id, published_at)
                 SELECT s.user_id, $2, i.id, $4, i.feed_id, i.published_at FROM items i
                 JOIN subscriptions s ON s.feed_id = i.feed_id AND s.user_id = $1
                 WHERE i.id = $3 AND NOT s.suspended
                 ON CONFLICT DO NOTHING",
            )
            .bind(user_id)
            .bind(seq)
            .bind(item_id)
            .bind(arrived_us)
            .execute(&mut *$db)
            .await?;
            unhidden_items.push((user_id, item_id, outcome));
        }
        $crate::rules::write_rule_outcomes_on!($db, &outcomes, now);
        $crate::rules::write_rule_outcomes_on!($db, &unhidden_items, now);
        (outcomes.len() + unhidden_items.len()) as u64
    }};
}
pub(crate) use write_late_changes_on;
