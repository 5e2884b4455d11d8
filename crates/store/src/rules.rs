//! Rules (issue 33): a user's saved conditions and actions, kept in order; run on each new
//! item of a feed for each subscriber inside the fetch's own transaction (so a hidden item is
//! never seen, not even by an app syncing at that moment); previewed over the user's recent
//! items; and applied once to what is there, with an undo.
//!
//! The conditions and their matching are `tidings-rules`' (pure); this module reads the
//! items and writes what the rules decided. A hidden item is read for its user (every count
//! and unread view leaves it out already), carries `item_states.is_hidden` (the listings of
//! all items leave it out) and has no row in the user's arrival order (the sync APIs list
//! only what is there; a trigger keeps it out on every path that would add it back).

use std::collections::{BTreeSet, HashMap};
use std::sync::Arc;

use tidings_rules::{
    Action, Outcome, PreparedItem, Rule, RuleError, RuleItem, RuleSpec, Scope, evaluate,
};

use crate::batch::{bound_ids, json_param as json};
use crate::label_names::LabelNames;
use crate::reading::{FROM_ITEMS, IS_READ, SUMMARY_COLUMNS, SqlValue};
use crate::search_index::ItemText;
use crate::{ItemSummary, NewItem, Result, RuleCache, Store, StoreError, in_tx, unix_now, with_db};

/// The most rules one user may have.
pub const MAX_RULES_PER_USER: i64 = 500;
/// The longest rule name, in characters.
pub const MAX_RULE_NAME_CHARS: usize = 100;
/// The user's most recent items a preview looks at.
pub const PREVIEW_ITEMS: i64 = 1_000;
/// Items read per step when a rule is applied to what is there.
pub(crate) const APPLY_BATCH: i64 = 500;
/// How long an application can be undone, in seconds.
pub const UNDO_SECONDS: i64 = 7 * 24 * 3600;

/// A saved rule.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct StoredRule {
    /// Its id.
    pub id: i64,
    /// The name the user gave it.
    pub name: String,
    /// Whether it runs on arriving items.
    pub enabled: bool,
    /// Its place in the user's order (smaller first).
    pub position: i64,
    /// Its scope, conditions and actions.
    pub spec: RuleSpec,
    /// When it was made (Unix seconds).
    pub created_at: i64,
    /// When it last changed (Unix seconds).
    pub updated_at: i64,
}

/// A rule to save.
#[derive(Debug, Clone)]
pub struct RuleInput {
    /// Its name (1 to 100 characters).
    pub name: String,
    /// Whether it runs on arriving items.
    pub enabled: bool,
    /// Its place; `None`: after the user's other rules.
    pub position: Option<i64>,
    /// Its scope, conditions and actions.
    pub spec: RuleSpec,
}

/// What a preview found.
#[derive(Debug, Clone)]
pub struct RulePreview {
    /// How many of the items looked at the rule catches (for keep-only: would hide).
    pub matched: usize,
    /// How many items were looked at.
    pub looked_at: usize,
    /// The caught items, newest first (at most 50).
    pub items: Vec<ItemSummary>,
}

/// What applying a rule once changed.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct RuleApplication {
    /// Items whose state or labels changed.
    pub changed: u64,
    /// The id to undo it with ([`Store::undo_rule_application`]).
    pub undo_id: i64,
}

/// One item's state before an application, to put back.
#[derive(Debug, Clone, Default, PartialEq, Eq, serde::Serialize, serde::Deserialize)]
struct ItemBefore {
    item_id: i64,
    /// (is_read, is_starred, is_hidden) of its state row; `None`: it had none.
    state: Option<(bool, bool, bool)>,
    /// Labels the application added.
    labels: Vec<String>,
    /// Its arrival row (seq, arrived_us) that hiding removed.
    arrival: Option<(i64, i64)>,
}

/// Turns a rule's refusal into the store's.
fn invalid(error: RuleError) -> StoreError {
    StoreError::Invalid(error.to_string())
}

impl Store {
    /// The user's rules, in order.
    pub async fn list_rules(&self, user_id: i64) -> Result<Vec<StoredRule>> {
        let rows: Vec<RuleRow> = with_db!(self, read, |db| {
            sqlx::query_as(
                "SELECT id, name, enabled, position, feed_id, group_id, spec, created_at, updated_at
                 FROM rules WHERE user_id = $1 ORDER BY position, id",
            )
            .bind(user_id)
            .fetch_all(db)
            .await?
        });
        rows.into_iter().map(stored_rule).collect()
    }

    /// One of the user's rules.
    pub async fn get_rule(&self, user_id: i64, id: i64) -> Result<StoredRule> {
        let row: Option<RuleRow> = with_db!(self, read, |db| {
            sqlx::query_as(
                "SELECT id, name, enabled, position, feed_id, group_id, spec, created_at, updated_at
                 FROM rules WHERE user_id = $1 AND id = $2",
            )
            .bind(user_id)
            .bind(id)
            .fetch_optional(db)
            .await?
        });
        stored_rule(row.ok_or(StoreError::NotFound("rule"))?)
    }

    /// Saves a new rule after checking it (its conditions and actions compile, its scope and
    /// channels are the user's); it acts on items that arrive afterwards.
    pub async fn create_rule(&self, user_id: i64, input: &RuleInput) -> Result<StoredRule> {
        let name = self.check_rule(user_id, input).await?;
        let spec = spec_json(&input.spec)?;
        let now = unix_now();
        let id: i64 = in_tx!(self, |tx| {
            let count: i64 = sqlx::query_scalar("SELECT COUNT(*) FROM rules WHERE user_id = $1")
                .bind(user_id)
                .fetch_one(&mut *tx)
                .await?;
            if count >= MAX_RULES_PER_USER {
                return Err(StoreError::LimitReached {
                    what: "rules",
                    limit: MAX_RULES_PER_USER,
                });
            }
            let last: Option<i64> =
                sqlx::query_scalar("SELECT MAX(position) FROM rules WHERE user_id = $1")
                    .bind(user_id)
                    .fetch_one(&mut *tx)
                    .await?;
            let position = input.position.unwrap_or(last.map_or(0, |p| p + 1));
            sqlx::query_scalar(
                "INSERT INTO rules (user_id, name, enabled, position, feed_id, group_id, spec,
                                    created_at, updated_at)
                 VALUES ($1, $2, $3, $4, $5, $6, $7, $8, $8) RETURNING id",
            )
            .bind(user_id)
            .bind(&name)
            .bind(input.enabled)
            .bind(position)
            .bind(input.spec.scope.feed_id)
            .bind(input.spec.scope.group_id)
            .bind(&spec)
            .bind(now)
            .fetch_one(&mut *tx)
            .await?
        });
        self.get_rule(user_id, id).await
    }

    /// Replaces a rule's name, switch, place, scope, conditions and actions.
    pub async fn update_rule(
        &self,
        user_id: i64,
        id: i64,
        input: &RuleInput,
    ) -> Result<StoredRule> {
        let name = self.check_rule(user_id, input).await?;
        let spec = spec_json(&input.spec)?;
        let current = self.get_rule(user_id, id).await?;
        let changed = with_db!(self, write, |db| {
            sqlx::query(
                "UPDATE rules SET name = $3, enabled = $4, position = $5, feed_id = $6,
                        group_id = $7, spec = $8, updated_at = $9,
                        -- Changed conditions (or switched on again) start their age pass
                        -- afresh from now; a new name or place keeps it.
                        aged_through = CASE WHEN spec = $8 AND enabled = $4
                            AND feed_id IS NOT DISTINCT FROM $6
                            AND group_id IS NOT DISTINCT FROM $7
                            THEN aged_through ELSE NULL END
                 WHERE user_id = $1 AND id = $2",
            )
            .bind(user_id)
            .bind(id)
            .bind(&name)
            .bind(input.enabled)
            .bind(input.position.unwrap_or(current.position))
            .bind(input.spec.scope.feed_id)
            .bind(input.spec.scope.group_id)
            .bind(&spec)
            .bind(unix_now())
            .execute(db)
            .await?
            .rows_affected()
        });
        if changed == 0 {
            return Err(StoreError::NotFound("rule"));
        }
        self.get_rule(user_id, id).await
    }

    /// Deletes a rule; what it did stays done.
    pub async fn delete_rule(&self, user_id: i64, id: i64) -> Result<()> {
        let deleted = with_db!(self, write, |db| {
            sqlx::query("DELETE FROM rules WHERE user_id = $1 AND id = $2")
                .bind(user_id)
                .bind(id)
                .execute(db)
                .await?
                .rows_affected()
        });
        if deleted == 0 {
            return Err(StoreError::NotFound("rule"));
        }
        Ok(())
    }

    /// Checks a rule to save: it compiles, its name is usable, its feed is one the user
    /// follows, its group and notification channels are the user's. Answers the trimmed name.
    async fn check_rule(&self, user_id: i64, input: &RuleInput) -> Result<String> {
        let rule = Rule::compile(0, &input.spec).map_err(invalid)?;
        let name = input.name.trim().to_string();
        let chars = name.chars().count();
        if chars == 0 || chars > MAX_RULE_NAME_CHARS {
            return Err(StoreError::Invalid(format!(
                "a rule's name is 1 to {MAX_RULE_NAME_CHARS} characters; this one has {chars}"
            )));
        }
        let Scope { feed_id, group_id } = input.spec.scope;
        if feed_id.is_some() && group_id.is_some() {
            return Err(StoreError::Invalid(
                "a rule's scope is a feed or a group, not both: give feed_id or group_id".into(),
            ));
        }
        self.check_feed_and_group(user_id, feed_id, group_id)
            .await?;
        for action in &rule.actions {
            if let Action::Notify(channel) = action {
                let found: Option<i64> = with_db!(self, read, |db| {
                    sqlx::query_scalar("SELECT id FROM webhooks WHERE user_id = $1 AND id = $2")
                        .bind(user_id)
                        .bind(*channel)
                        .fetch_optional(db)
                        .await?
                });
                found.ok_or(StoreError::NotFound("notification channel"))?;
            }
        }
        Ok(name)
    }

    /// What `spec` would catch among the user's [`PREVIEW_ITEMS`] most recent items (hidden
    /// ones left out): how many, and the newest 50 of them.
    pub async fn preview_rule(&self, user_id: i64, spec: &RuleSpec) -> Result<RulePreview> {
        let rule = Rule::compile(0, spec).map_err(invalid)?;
        let ids: Vec<i64> = with_db!(self, read, |db| {
            sqlx::query_scalar(
                "SELECT i.id FROM subscriptions s
                 JOIN items i ON i.feed_id = s.feed_id
                 LEFT JOIN item_states st ON st.user_id = s.user_id AND st.item_id = i.id
                 WHERE s.user_id = $1 AND NOT COALESCE(st.is_hidden, FALSE)
                 ORDER BY i.published_at DESC, i.id DESC LIMIT $2",
            )
            .bind(user_id)
            .bind(PREVIEW_ITEMS)
            .fetch_all(db)
            .await?
        });
        let now = unix_now();
        let mut caught = Vec::new();
        for chunk in ids.chunks(APPLY_BATCH as usize) {
            for item in self.rule_items(user_id, chunk).await? {
                let outcome = evaluate(
                    std::slice::from_ref(&rule),
                    &item.prepare(),
                    item.group_id,
                    now,
                );
                if outcome.hidden || !outcome.rules.is_empty() {
                    caught.push(item.id);
                }
            }
        }
        let shown: Vec<i64> = caught.iter().copied().take(50).collect();
        let mut items = self.summaries_of(user_id, &shown).await?;
        items.sort_by_key(|item| std::cmp::Reverse((item.published_at, item.id)));
        Ok(RulePreview {
            matched: caught.len(),
            looked_at: ids.len(),
            items,
        })
    }

    /// The listing rows of the user's items `ids` (for a preview).
    async fn summaries_of(&self, user_id: i64, ids: &[i64]) -> Result<Vec<ItemSummary>> {
        if ids.is_empty() {
            return Ok(Vec::new());
        }
        let sql = format!(
            "SELECT {SUMMARY_COLUMNS}, {IS_READ}, COALESCE(st.is_starred, FALSE), i.thumbnail_url,
                    i.language
             {FROM_ITEMS}
             WHERE s.feed_id = i.feed_id AND s.user_id = $1 AND i.id IN {}",
            bound_ids(self.engine(), 2)
        );
        self.run_listing(sql, &[SqlValue::Int(user_id), SqlValue::Text(json(&ids)?)])
            .await
    }
}

/// A rule's row: id, name, enabled, position, feed, group, spec, created, updated.
type RuleRow = (
    i64,
    String,
    bool,
    i64,
    Option<i64>,
    Option<i64>,
    String,
    i64,
    i64,
);

fn stored_rule(row: RuleRow) -> Result<StoredRule> {
    let (id, name, enabled, position, feed_id, group_id, spec, created_at, updated_at) = row;
    let mut spec: RuleSpec = serde_json::from_str(&spec)
        .map_err(|e| StoreError::Invalid(format!("rule {id} is stored damaged: {e}")))?;
    spec.scope = Scope { feed_id, group_id };
    Ok(StoredRule {
        id,
        name,
        enabled,
        position,
        spec,
        created_at,
        updated_at,
    })
}

/// A spec as stored: without its scope, which lives in columns.
fn spec_json(spec: &RuleSpec) -> Result<String> {
    let stored = RuleSpec {
        scope: Scope::default(),
        ..spec.clone()
    };
    serde_json::to_string(&stored).map_err(|e| StoreError::Invalid(e.to_string()))
}

/// Which of the items in a rule's scope a step looks at (all of them by default).
#[derive(Debug, Default)]
pub(crate) struct StepWindow {
    /// Published at or after this.
    pub(crate) published_from: Option<i64>,
    /// Published before this.
    pub(crate) published_before: Option<i64>,
    /// Unread only.
    pub(crate) unread_only: bool,
}

/// An item as rules read it from the database.
#[derive(Debug)]
pub(crate) struct StoredItem {
    pub(crate) id: i64,
    pub(crate) feed_id: i64,
    pub(crate) group_id: Option<i64>,
    title: String,
    author: String,
    url: String,
    /// Plain text.
    text: String,
    categories: Vec<String>,
    tags: Vec<String>,
    enclosure_types: Vec<String>,
    published_at: i64,
    popularity: Option<i64>,
    /// When it was first seen.
    pub(crate) fetched_at: i64,
}

impl StoredItem {
    pub(crate) fn prepare(&self) -> PreparedItem<'_> {
        PreparedItem::new(RuleItem {
            feed_id: self.feed_id,
            title: &self.title,
            content: &self.text,
            author: &self.author,
            url: &self.url,
            categories: &self.categories,
            tags: &self.tags,
            enclosure_types: &self.enclosure_types,
            published_at: self.published_at,
            popularity: self.popularity,
        })
    }
}

/// An item's row for rules: id, feed, group, title, author, url, content, categories,
/// enclosures, published, popularity, first seen.
type ItemRow = (
    i64,
    i64,
    Option<i64>,
    Option<String>,
    Option<String>,
    Option<String>,
    Option<String>,
    String,
    String,
    i64,
    Option<i64>,
    i64,
);

impl Store {
    /// The user's items `ids` as rules see them, with their tags.
    pub(crate) async fn rule_items(&self, user_id: i64, ids: &[i64]) -> Result<Vec<StoredItem>> {
        if ids.is_empty() {
            return Ok(Vec::new());
        }
        let list = json(&ids)?;
        let items_sql = format!(
            "SELECT i.id, i.feed_id, s.group_id, i.title, i.author, i.url,
                    COALESCE(i.content, i.summary), i.categories, i.enclosures, i.published_at,
                    p.count, i.fetched_at
             FROM items i JOIN subscriptions s ON s.feed_id = i.feed_id AND s.user_id = $1
             LEFT JOIN item_popularity p ON p.item_id = i.id
             WHERE i.id IN {}",
            bound_ids(self.engine(), 2)
        );
        let tags_sql = format!(
            "SELECT it.item_id, t.name FROM item_tags it JOIN tags t ON t.id = it.tag_id
             WHERE it.item_id IN {}",
            bound_ids(self.engine(), 1)
        );
        let rows: Vec<ItemRow> = with_db!(self, read, |db| {
            sqlx::query_as(sqlx::AssertSqlSafe(items_sql))
                .bind(user_id)
                .bind(&list)
                .fetch_all(db)
                .await?
        });
        let tag_rows: Vec<(i64, String)> = with_db!(self, read, |db| {
            sqlx::query_as(sqlx::AssertSqlSafe(tags_sql))
                .bind(&list)
                .fetch_all(db)
                .await?
        });
        let mut tags: HashMap<i64, Vec<String>> = HashMap::new();
        for (item_id, name) in tag_rows {
            tags.entry(item_id).or_default().push(name);
        }
        Ok(rows
            .into_iter()
            .map(|row| {
                let (id, feed_id, group_id, title, author, url, content, categories) =
                    (row.0, row.1, row.2, row.3, row.4, row.5, row.6, row.7);
                let (enclosures, published_at, popularity, fetched_at) =
                    (row.8, row.9, row.10, row.11);
                StoredItem {
                    id,
                    feed_id,
                    group_id,
                    title: title.unwrap_or_default(),
                    author: author.unwrap_or_default(),
                    url: url.unwrap_or_default(),
                    text: content
                        .as_deref()
                        .and_then(tidings_feed::text::plain_text)
                        .unwrap_or_default(),
                    categories: serde_json::from_str(&categories).unwrap_or_default(),
                    tags: tags.remove(&id).unwrap_or_default(),
                    enclosure_types: enclosure_types(&enclosures),
                    published_at,
                    popularity,
                    fetched_at,
                }
            })
            .collect())
    }
}

/// The MIME types of a stored enclosures list (JSON of `{url, mime_type, length}`).
fn enclosure_types(json: &str) -> Vec<String> {
    #[derive(serde::Deserialize)]
    struct Enclosure {
        mime_type: Option<String>,
    }
    serde_json::from_str::<Vec<Enclosure>>(json)
        .unwrap_or_default()
        .into_iter()
        .filter_map(|e| e.mime_type)
        .collect()
}

/// The rules of a feed's subscribers, compiled, per user: what a fetch with new items runs.
#[derive(Debug, Default)]
pub(crate) struct FeedRules {
    /// (user, the user's group of the feed, the user's enabled rules in order).
    users: Vec<(i64, Option<i64>, Vec<Arc<Rule>>)>,
}

/// The most compiled rules kept; beyond, the cache starts over (500 rules of 200 users).
const MAX_CACHED_RULES: usize = 100_000;

/// A rule's row for a fetch: id, user, the user's group of the feed, rule feed, rule group,
/// spec.
pub(crate) type FeedRuleRow = (i64, i64, Option<i64>, Option<i64>, Option<i64>, String);

/// The enabled rules of feed `$1`'s subscribers that can apply to it, in each user's order.
pub(crate) const FEED_RULES_SQL: &str =
    "SELECT r.id, r.user_id, s.group_id, r.feed_id, r.group_id, r.spec
     FROM rules r JOIN subscriptions s ON s.user_id = r.user_id AND s.feed_id = $1
     WHERE r.enabled AND (r.feed_id IS NULL OR r.feed_id = $1)
     ORDER BY r.user_id, r.position, r.id";

impl FeedRules {
    /// Compiles the rows, reusing `cache`'s compiled rules whose spec and scope are unchanged
    /// (a fetch would otherwise compile every subscriber's regular expressions again); a rule
    /// that no longer compiles (saved by an older version) is skipped with a warning rather
    /// than stopping the fetch.
    pub(crate) fn new(rows: Vec<FeedRuleRow>, cache: &RuleCache) -> FeedRules {
        let mut users: Vec<(i64, Option<i64>, Vec<Arc<Rule>>)> = Vec::new();
        let mut cache = cache
            .lock()
            .unwrap_or_else(std::sync::PoisonError::into_inner);
        if cache.len() > MAX_CACHED_RULES {
            cache.clear();
        }
        for (id, user_id, user_group, feed_id, group_id, spec) in rows {
            let scope = Scope { feed_id, group_id };
            let rule = match cache.get(&id) {
                Some((text, rule)) if *text == spec && rule.scope == scope => Arc::clone(rule),
                _ => {
                    let compiled = serde_json::from_str::<RuleSpec>(&spec)
                        .map_err(|e| e.to_string())
                        .and_then(|mut parsed| {
                            parsed.scope = scope;
                            Rule::compile(id, &parsed).map_err(|e| e.to_string())
                        });
                    match compiled {
                        Ok(rule) => {
                            let rule = Arc::new(rule);
                            cache.insert(id, (spec, Arc::clone(&rule)));
                            rule
                        }
                        Err(error) => {
                            tracing::warn!(rule = id, %error, "a rule that does not compile is skipped");
                            continue;
                        }
                    }
                }
            };
            match users.last_mut() {
                Some((user, _, rules)) if *user == user_id => rules.push(rule),
                _ => users.push((user_id, user_group, vec![rule])),
            }
        }
        FeedRules { users }
    }

    /// The first user's group of the feed and rules (a fetch's rules read for one user).
    pub(crate) fn into_first(self) -> Option<(Option<i64>, Vec<Arc<Rule>>)> {
        self.users
            .into_iter()
            .next()
            .map(|(_, group, rules)| (group, rules))
    }

    /// What each subscriber's rules decided for each new item (id, item, its text as the
    /// search index took it): one preparation per item, on the tokens the index made, and
    /// every user's rules on it. Only outcomes that change something.
    pub(crate) fn decide(
        &self,
        feed_id: i64,
        items: &[(i64, &NewItem, &ItemText)],
        now: i64,
    ) -> Vec<(i64, i64, Outcome)> {
        let mut decided = Vec::new();
        if self.users.is_empty() {
            return decided;
        }
        for (item_id, item, text) in items {
            let types: Vec<String> = item
                .enclosures
                .iter()
                .filter_map(|e| e.mime_type.clone())
                .collect();
            let rule_item = RuleItem {
                feed_id,
                title: item.title.as_deref().unwrap_or(""),
                content: &text.body,
                author: item.author.as_deref().unwrap_or(""),
                url: item.url.as_deref().unwrap_or(""),
                categories: &item.categories,
                tags: &[],
                enclosure_types: &types,
                published_at: item.published.unwrap_or(now),
                popularity: None,
            };
            let prepared =
                PreparedItem::with_tokens(rule_item, &text.title.tokens, &text.body_tokens.tokens);
            for (user_id, group_id, rules) in &self.users {
                let outcome = evaluate(rules, &prepared, *group_id, now);
                if !outcome.is_empty() {
                    decided.push((*user_id, *item_id, outcome));
                }
            }
        }
        decided
    }
}

/// Writes what the rules decided for a new item for one user, on `$db` (the fetch's
/// transaction); evaluates to `()`.
macro_rules! write_rule_outcome_on {
    ($db:expr, $user_id:expr, $item_id:expr, $outcome:expr, $now:expr) => {{
        let (user_id, item_id, now): (i64, i64, i64) = ($user_id, $item_id, $now);
        let outcome: &tidings_rules::Outcome = $outcome;
        if outcome.hidden || outcome.read || outcome.star {
            sqlx::query(
                "INSERT INTO item_states (user_id, item_id, is_read, is_starred, is_hidden, updated_at)
                 VALUES ($1, $2, $3, $4, $5, $6)
                 ON CONFLICT (user_id, item_id) DO UPDATE SET
                     is_read = item_states.is_read OR excluded.is_read,
                     is_starred = item_states.is_starred OR excluded.is_starred,
                     is_hidden = item_states.is_hidden OR excluded.is_hidden,
                     updated_at = excluded.updated_at",
            )
            .bind(user_id)
            .bind(item_id)
            .bind(outcome.hidden || outcome.read)
            .bind(outcome.star)
            .bind(outcome.hidden)
            .bind(now)
            .execute(&mut *$db)
            .await?;
        }
        if outcome.hidden {
            sqlx::query("DELETE FROM user_items WHERE user_id = $1 AND item_id = $2")
                .bind(user_id)
                .bind(item_id)
                .execute(&mut *$db)
                .await?;
        }
        for label in &outcome.labels {
            let inserted = sqlx::query(
                "INSERT INTO item_labels (user_id, item_id, label, created_at)
                 VALUES ($1, $2, $3, $4) ON CONFLICT DO NOTHING",
            )
            .bind(user_id)
            .bind(item_id)
            .bind(label.as_str())
            .bind(now)
            .execute(&mut *$db)
            .await?
            .rows_affected();
            if inserted > 0 {
                $crate::label_names::LabelNames::count_added_labels(
                    &mut *$db,
                    &[(user_id, label.as_str())],
                )
                .await?;
            }
        }
        for channel in &outcome.notify {
            // The channel must still be the user's: it may have been deleted since.
            sqlx::query(
                "INSERT INTO webhook_queue (webhook_id, item_id, queued_at)
                 SELECT id, $2, $3 FROM webhooks WHERE id = $1 AND user_id = $4
                 ON CONFLICT DO NOTHING",
            )
            .bind(*channel)
            .bind(item_id)
            .bind(now)
            .bind(user_id)
            .execute(&mut *$db)
            .await?;
        }
        if outcome.summarize {
            sqlx::query(
                "INSERT INTO summary_jobs (item_id, queued_at, not_before) VALUES ($1, $2, $2)
                 ON CONFLICT (item_id) DO NOTHING",
            )
            .bind(item_id)
            .bind(now)
            .execute(&mut *$db)
            .await?;
        }
    }};
}

/// The state rows, arrival rows and labels what rules decided asks for, each kind written in one
/// statement of a fixed text whatever the number of outcomes: prepared once per connection and
/// kept by sqlx's statement cache, where statements of `n` rows (a text per `n`) were prepared
/// again for nearly every fetch. SQLite is given the rows as one JSON array (`json_each`),
/// PostgreSQL as one array per column (`UNNEST`), all kinds in one statement (a round trip).
pub(crate) trait OutcomeWrites {
    /// Writes `decided` (user, item, outcome): state rows (hidden and read, read, starred),
    /// the removal of hidden items' arrival rows, labels, summaries, then notifications (rare,
    /// one by one). `fresh`: the items were inserted in this transaction, so that on
    /// PostgreSQL they have no arrival rows yet (they are numbered at commit, when the
    /// `user_items_hidden` trigger keeps the hidden ones out), and on both engines they are
    /// there and followed by the users they were judged for: otherwise labels go only on items
    /// still there and followed (PostgreSQL's label rows have no foreign keys since version 55
    /// to refuse the others; SQLite's would refuse them by failing the whole batch).
    async fn write_outcomes(
        &mut self,
        decided: &[(i64, i64, Outcome)],
        now: i64,
        fresh: bool,
    ) -> Result<()>;
}

/// The outcomes' rows by kind: states (user, item, read, starred, hidden), hidden (user,
/// item), labels (user, item, label), items to summarize (sorted, once each).
type OutcomeRows<'a> = (
    Vec<(i64, i64, bool, bool, bool)>,
    Vec<(i64, i64)>,
    Vec<(i64, i64, &'a str)>,
    Vec<i64>,
);

/// Splits `decided` into the rows of each kind of write, in its order.
fn outcome_rows(decided: &[(i64, i64, Outcome)]) -> OutcomeRows<'_> {
    let (mut states, mut hidden, mut labels, mut summarize) =
        (Vec::new(), Vec::new(), Vec::new(), Vec::new());
    for (user_id, item_id, o) in decided {
        let (user_id, item_id) = (*user_id, *item_id);
        if o.hidden || o.read || o.star {
            states.push((user_id, item_id, o.hidden || o.read, o.star, o.hidden));
        }
        if o.hidden {
            hidden.push((user_id, item_id));
        }
        labels.extend(o.labels.iter().map(|l| (user_id, item_id, l.as_str())));
        if o.summarize {
            summarize.push(item_id);
        }
    }
    summarize.sort_unstable();
    summarize.dedup();
    (states, hidden, labels, summarize)
}

/// Queues `item_id` for each of `channels` of user `user_id` on `$db`, one by one: a rule
/// that notifies is rare, and the channel must still be the user's (it may have been
/// deleted since the rule was read).
macro_rules! queue_notifications_on {
    ($db:expr, $decided:expr, $now:expr) => {{
        let decided: &[(i64, i64, Outcome)] = $decided;
        for (user_id, item_id, o) in decided {
            for channel in &o.notify {
                sqlx::query(
                    "INSERT INTO webhook_queue (webhook_id, item_id, queued_at)
                     SELECT id, $2, $3 FROM webhooks WHERE id = $1 AND user_id = $4
                     ON CONFLICT DO NOTHING",
                )
                .bind(*channel)
                .bind(*item_id)
                .bind($now)
                .bind(*user_id)
                .execute(&mut *$db)
                .await?;
            }
        }
    }};
}

/// The state rows' upsert: a row already there (an item that arrived late under a read
/// watermark has an unread one) keeps what it had and gains what the rules add.
const STATES_CONFLICT: &str = "ON CONFLICT (user_id, item_id) DO UPDATE SET
         is_read = item_states.is_read OR excluded.is_read,
         is_starred = item_states.is_starred OR excluded.is_starred,
         is_hidden = item_states.is_hidden OR excluded.is_hidden,
         updated_at = excluded.updated_at";

/// SQLite: the state rows from a JSON array of `[user, item, read, starred, hidden]`, then
/// the time (`?` values bound in order: anonymous ones cost SQLite no search by name). `WHERE
/// TRUE` tells SQLite's parser that `ON CONFLICT` is the upsert, not a join's.
fn sqlite_states_sql() -> String {
    format!(
        "INSERT INTO item_states (user_id, item_id, is_read, is_starred, is_hidden, updated_at)
         SELECT value ->> 0, value ->> 1, value ->> 2, value ->> 3, value ->> 4, ?
         FROM json_each(?) WHERE TRUE {STATES_CONFLICT}"
    )
}

/// SQLite: hidden items' arrival rows, from a JSON array of `[item, user]`, found through the
/// `(item_id, user_id)` index (with the pairs as `(user_id, item_id)` SQLite scanned every
/// user's arrivals).
const SQLITE_HIDDEN_SQL: &str = "DELETE FROM user_items
     WHERE (item_id, user_id) IN (SELECT value ->> 0, value ->> 1 FROM json_each(?))";

/// SQLite: labels from a JSON array of `[user, item, label]`, then the time, for a fetch's
/// own new items (inserted by this transaction, so theirs and their subscribers', and without
/// labels before: every row is added, and counted as such, [`LabelNames`]).
const SQLITE_LABELS_SQL: &str = "INSERT INTO item_labels (user_id, item_id, label, created_at)
     SELECT value ->> 0, value ->> 1, value ->> 2, ? FROM json_each(?) WHERE TRUE
     ON CONFLICT DO NOTHING";

/// SQLite: [`SQLITE_LABELS_SQL`] for items that were there before the transaction, read
/// outside it (a backlog, an age rule's window): only those still there and still followed by
/// their user, as on PostgreSQL, where label rows have no foreign keys (version 55). Here the
/// keys would refuse an item deleted meanwhile by failing the whole batch; the join skips it.
/// Answers the rows it added (not those that were there), which [`LabelNames`] counts.
const SQLITE_LABELS_EXISTING_SQL: &str =
    "INSERT INTO item_labels (user_id, item_id, label, created_at)
     SELECT s.user_id, i.id, value ->> 2, ? FROM json_each(?)
     JOIN items i ON i.id = value ->> 1
     JOIN subscriptions s ON s.user_id = value ->> 0 AND s.feed_id = i.feed_id
     WHERE TRUE ON CONFLICT DO NOTHING
     RETURNING user_id, label";

/// SQLite: summary jobs for a JSON array of items, queued now.
const SQLITE_SUMMARIES_SQL: &str = "INSERT INTO summary_jobs (item_id, queued_at, not_before)
     SELECT value, ?, ? FROM json_each(?) WHERE TRUE ON CONFLICT (item_id) DO NOTHING";

impl OutcomeWrites for sqlx::SqliteConnection {
    async fn write_outcomes(
        &mut self,
        decided: &[(i64, i64, Outcome)],
        now: i64,
        fresh: bool,
    ) -> Result<()> {
        let (states, hidden, mut labels, summarize) = outcome_rows(decided);
        if fresh {
            // Each row once, so that each is counted once; by item, as the key lies.
            labels.sort_unstable_by_key(|&(u, i, l)| (i, u, l));
            labels.dedup();
        }
        if !states.is_empty() {
            let rows: Vec<(i64, i64, u8, u8, u8)> = states
                .iter()
                .map(|&(u, i, r, s, h)| (u, i, u8::from(r), u8::from(s), u8::from(h)))
                .collect();
            sqlx::query(sqlx::AssertSqlSafe(sqlite_states_sql()))
                .bind(now)
                .bind(json(&rows)?)
                .execute(&mut *self)
                .await?;
        }
        // The arrival rows were written as the items were inserted (a row trigger).
        if !hidden.is_empty() {
            let rows: Vec<(i64, i64)> = hidden.iter().map(|&(u, i)| (i, u)).collect();
            sqlx::query(SQLITE_HIDDEN_SQL)
                .bind(json(&rows)?)
                .execute(&mut *self)
                .await?;
        }
        if !labels.is_empty() && fresh {
            sqlx::query(SQLITE_LABELS_SQL)
                .bind(now)
                .bind(json(&labels)?)
                .execute(&mut *self)
                .await?;
            // The items are new, so every (distinct) row is added.
            let added: Vec<(i64, &str)> = labels.iter().map(|&(u, _, l)| (u, l)).collect();
            self.count_added_labels(&added).await?;
        } else if !labels.is_empty() {
            let added: Vec<(i64, String)> = sqlx::query_as(SQLITE_LABELS_EXISTING_SQL)
                .bind(now)
                .bind(json(&labels)?)
                .fetch_all(&mut *self)
                .await?;
            let added: Vec<(i64, &str)> = added.iter().map(|(u, l)| (*u, l.as_str())).collect();
            self.count_added_labels(&added).await?;
        }
        if !summarize.is_empty() {
            sqlx::query(SQLITE_SUMMARIES_SQL)
                .bind(now)
                .bind(now)
                .bind(json(&summarize)?)
                .execute(&mut *self)
                .await?;
        }
        queue_notifications_on!(self, decided, now);
        Ok(())
    }
}

/// PostgreSQL: every kind in one statement, each from arrays bound as columns: states
/// (`$1`-`$5`: user, item, read, starred, hidden), hidden items' arrival rows (`$6`, `$7`:
/// user, item), labels (`$8`-`$10`: user, item, label), summaries (`$11`), the time `$12`.
/// `fresh`: the items are the transaction's own new ones (see [`OutcomeWrites`]); otherwise
/// labels go only on items still there and followed by their user, whose rows are locked as a
/// foreign key would lock them (label rows have none since version 55), so that a deletion
/// committing meanwhile leaves no label behind.
fn postgres_outcomes_sql(fresh: bool) -> String {
    let labels_from = if fresh {
        "SELECT u, i, l, $12 FROM UNNEST($8::bigint[], $9::bigint[], $10::text[]) AS t(u, i, l)"
    } else {
        "SELECT s.user_id, it.id, t.l, $12
             FROM UNNEST($8::bigint[], $9::bigint[], $10::text[]) AS t(u, i, l)
             JOIN items it ON it.id = t.i
             JOIN subscriptions s ON s.user_id = t.u AND s.feed_id = it.feed_id
             FOR KEY SHARE OF it, s"
    };
    format!(
        "WITH states AS (
             INSERT INTO item_states (user_id, item_id, is_read, is_starred, is_hidden, updated_at)
             SELECT u, i, r, s, h, $12
             FROM UNNEST($1::bigint[], $2::bigint[], $3::boolean[], $4::boolean[], $5::boolean[])
                 AS t(u, i, r, s, h)
             {STATES_CONFLICT}
         ), arrivals AS (
             DELETE FROM user_items a
             USING UNNEST($6::bigint[], $7::bigint[]) AS h(u, i)
             WHERE a.item_id = h.i AND a.user_id = h.u
         ), labels AS (
             INSERT INTO item_labels (user_id, item_id, label, created_at)
             {labels_from}
             ON CONFLICT DO NOTHING
         ), summaries AS (
             INSERT INTO summary_jobs (item_id, queued_at, not_before)
             SELECT i, $12, $12 FROM UNNEST($11::bigint[]) AS t(i)
             ON CONFLICT (item_id) DO NOTHING
         )
         SELECT 1"
    )
}

impl OutcomeWrites for sqlx::PgConnection {
    async fn write_outcomes(
        &mut self,
        decided: &[(i64, i64, Outcome)],
        now: i64,
        fresh: bool,
    ) -> Result<()> {
        let (states, mut hidden, labels, summarize) = outcome_rows(decided);
        if fresh {
            // Numbered at commit, after these state rows: the trigger keeps hidden ones out.
            hidden.clear();
        }
        if !states.is_empty() || !hidden.is_empty() || !labels.is_empty() || !summarize.is_empty() {
            sqlx::query(sqlx::AssertSqlSafe(postgres_outcomes_sql(fresh)))
                .bind(states.iter().map(|s| s.0).collect::<Vec<i64>>())
                .bind(states.iter().map(|s| s.1).collect::<Vec<i64>>())
                .bind(states.iter().map(|s| s.2).collect::<Vec<bool>>())
                .bind(states.iter().map(|s| s.3).collect::<Vec<bool>>())
                .bind(states.iter().map(|s| s.4).collect::<Vec<bool>>())
                .bind(hidden.iter().map(|h| h.0).collect::<Vec<i64>>())
                .bind(hidden.iter().map(|h| h.1).collect::<Vec<i64>>())
                .bind(labels.iter().map(|l| l.0).collect::<Vec<i64>>())
                .bind(labels.iter().map(|l| l.1).collect::<Vec<i64>>())
                .bind(labels.iter().map(|l| l.2).collect::<Vec<&str>>())
                .bind(summarize)
                .bind(now)
                .execute(&mut *self)
                .await?;
        }
        queue_notifications_on!(self, decided, now);
        Ok(())
    }
}

/// Writes what the rules decided, `$decided` (user, item, outcome), on `$db` (a transaction
/// or its connection) for items that were there before it ([`OutcomeWrites`]); evaluates to
/// `()`.
macro_rules! write_rule_outcomes_on {
    ($db:expr, $decided:expr, $now:expr) => {
        $crate::rules::OutcomeWrites::write_outcomes(&mut *$db, $decided, $now, false).await?
    };
}
pub(crate) use write_rule_outcomes_on;

/// Runs the rules of feed `$feed_id`'s subscribers on its new items `$new` (item id, the
/// item's write, with its item and its tokenized text) in the fetch's transaction `$tx`; `$rules` is whether the schema has rules
/// ([`Store::rules_ready`]) and the store's compiled rules. Evaluates to how many (user, item)
/// outcomes were written.
macro_rules! apply_rules_on {
    ($tx:expr, $rules:expr, $feed_id:expr, $new:expr, $now:expr) => {{
        let ((ready, cache), feed_id, now): ((bool, &$crate::RuleCache), i64, i64) =
            ($rules, $feed_id, $now);
        let mut written = 0u64;
        if ready && !$new.is_empty() {
            let rows: Vec<$crate::rules::FeedRuleRow> =
                sqlx::query_as($crate::rules::FEED_RULES_SQL)
                    .bind(feed_id)
                    .fetch_all(&mut *$tx)
                    .await?;
            if !rows.is_empty() {
                let rules = $crate::rules::FeedRules::new(rows, cache);
                let new: Vec<(i64, &$crate::NewItem, &$crate::search_index::ItemText)> = $new
                    .iter()
                    .map(|(id, write)| (*id, write.prepared.item, &write.text))
                    .collect();
                let decided = rules.decide(feed_id, &new, now);
                $crate::rules::OutcomeWrites::write_outcomes(&mut *$tx, &decided, now, true)
                    .await?;
                written = decided.len() as u64;
            }
        }
        written
    }};
}
pub(crate) use apply_rules_on;

/// The labels the user has on an item, on `$db`.
macro_rules! existing_labels_on {
    ($db:expr, $user_id:expr, $item_id:expr) => {{
        let labels: Vec<String> =
            sqlx::query_scalar("SELECT label FROM item_labels WHERE user_id = $1 AND item_id = $2")
                .bind($user_id)
                .bind($item_id)
                .fetch_all(&mut *$db)
                .await?;
        labels.into_iter().collect::<BTreeSet<String>>()
    }};
}

/// Puts one item's state, labels and arrival back as `$before` says, on `$db`.
macro_rules! restore_item_on {
    ($db:expr, $user_id:expr, $before:expr) => {{
        let before: &ItemBefore = $before;
        let user_id: i64 = $user_id;
        match before.state {
            None => {
                sqlx::query("DELETE FROM item_states WHERE user_id = $1 AND item_id = $2")
                    .bind(user_id)
                    .bind(before.item_id)
                    .execute(&mut *$db)
                    .await?;
            }
            Some((read, starred, hidden)) => {
                sqlx::query(
                    "UPDATE item_states SET is_read = $3, is_starred = $4, is_hidden = $5,
                            updated_at = $6
                     WHERE user_id = $1 AND item_id = $2",
                )
                .bind(user_id)
                .bind(before.item_id)
                .bind(read)
                .bind(starred)
                .bind(hidden)
                .bind(unix_now())
                .execute(&mut *$db)
                .await?;
            }
        }
        for label in &before.labels {
            sqlx::query(
                "DELETE FROM item_labels WHERE user_id = $1 AND item_id = $2 AND label = $3",
            )
            .bind(user_id)
            .bind(before.item_id)
            .bind(label.as_str())
            .execute(&mut *$db)
            .await?;
        }
        // Back in its place in the arrival order, if the item and the subscription are there.
        if let Some((seq, arrived_us)) = before.arrival {
            sqlx::query(
                "INSERT INTO user_items (user_id, seq, item_id, arrived_us, feed_id, published_at)
                 SELECT $1, $2, i.id, $4, i.feed_id, i.published_at FROM items i
                 JOIN subscriptions s ON s.feed_id = i.feed_id AND s.user_id = $1
                 WHERE i.id = $3
                 ON CONFLICT DO NOTHING",
            )
            .bind(user_id)
            .bind(seq)
            .bind(before.item_id)
            .bind(arrived_us)
            .execute(&mut *$db)
            .await?;
        }
    }};
}

impl Store {
    /// Whether the schema has rules (checked until it does, then remembered).
    pub(crate) async fn rules_ready(&self) -> bool {
        self.schema_ready(&self.rules_ready, "SELECT COUNT(*) FROM rules WHERE id < 0")
            .await
    }

    /// Runs the user's enabled rules on feed `feed_id`'s items that just arrived for them
    /// (a shared feed's backlog when they subscribe), as on any arriving item; notifications
    /// and summaries are left out, as for a backlog they would be a flood. Answers how many
    /// items a rule changed.
    pub async fn run_rules_on_backlog(&self, user_id: i64, feed_id: i64) -> Result<u64> {
        if !self.rules_ready().await {
            return Ok(0);
        }
        let rows: Vec<FeedRuleRow> = with_db!(self, read, |db| {
            sqlx::query_as(
                "SELECT r.id, r.user_id, s.group_id, r.feed_id, r.group_id, r.spec
                 FROM rules r JOIN subscriptions s ON s.user_id = r.user_id AND s.feed_id = $1
                 WHERE r.user_id = $2 AND r.enabled AND (r.feed_id IS NULL OR r.feed_id = $1)
                 ORDER BY r.position, r.id",
            )
            .bind(feed_id)
            .bind(user_id)
            .fetch_all(db)
            .await?
        });
        if rows.is_empty() {
            return Ok(0);
        }
        let rules = FeedRules::new(rows, &self.rule_cache);
        let Some((_, group_id, rules)) = rules.users.first() else {
            return Ok(0);
        };
        let scope = Scope {
            feed_id: Some(feed_id),
            group_id: None,
        };
        let now = unix_now();
        let (mut after, mut changed) = (0i64, 0u64);
        loop {
            let ids = self.rule_apply_step(user_id, &scope, after).await?;
            let Some(&last) = ids.last() else { break };
            after = last;
            let mut decided = Vec::new();
            for item in self.rule_items(user_id, &ids).await? {
                let mut outcome = evaluate(rules, &item.prepare(), *group_id, now);
                outcome.notify.clear();
                outcome.summarize = false;
                if !outcome.is_empty() {
                    decided.push((user_id, item.id, outcome));
                }
            }
            if !decided.is_empty() {
                in_tx!(self, |tx| {
                    write_rule_outcomes_on!(tx, &decided, now);
                });
                changed += decided.len() as u64;
            }
        }
        Ok(changed)
    }
}

impl Store {
    /// Applies rule `id` once to the user's items (hidden and starred ones left alone: hiding
    /// never takes away what the user saved), recording the state before so that
    /// [`Store::undo_rule_application`] can put it back. Hide, keep-only, read, star and
    /// label act; notifications and summaries are for arriving items only.
    pub async fn apply_rule(&self, user_id: i64, id: i64) -> Result<RuleApplication> {
        let stored = self.get_rule(user_id, id).await?;
        let rule = Rule::compile(id, &stored.spec).map_err(invalid)?;
        let now = unix_now();
        let mut changes: Vec<ItemBefore> = Vec::new();
        let mut after = 0i64;
        loop {
            let ids = self
                .rule_apply_step(user_id, &stored.spec.scope, after)
                .await?;
            let Some(&last) = ids.last() else { break };
            after = last;
            let mut decided = Vec::new();
            for item in self.rule_items(user_id, &ids).await? {
                let outcome = evaluate(
                    std::slice::from_ref(&rule),
                    &item.prepare(),
                    item.group_id,
                    now,
                );
                if outcome.hidden || outcome.read || outcome.star || !outcome.labels.is_empty() {
                    decided.push((item.id, outcome));
                }
            }
            changes.extend(self.write_application_step(user_id, &decided, now).await?);
        }
        let changed = changes.len() as u64;
        let json =
            serde_json::to_string(&changes).map_err(|e| StoreError::Invalid(e.to_string()))?;
        with_db!(self, write, |db| {
            sqlx::query("DELETE FROM rule_applications WHERE created_at < $1")
                .bind(now - UNDO_SECONDS)
                .execute(db)
                .await?;
        });
        let undo_id: i64 = with_db!(self, write, |db| {
            sqlx::query_scalar(
                "INSERT INTO rule_applications (user_id, rule_id, created_at, changes)
                 VALUES ($1, $2, $3, $4) RETURNING id",
            )
            .bind(user_id)
            .bind(id)
            .bind(now)
            .bind(&json)
            .fetch_one(db)
            .await?
        });
        Ok(RuleApplication { changed, undo_id })
    }

    /// The next ids (above `after`) of the user's visible, unstarred items in `scope`.
    async fn rule_apply_step(&self, user_id: i64, scope: &Scope, after: i64) -> Result<Vec<i64>> {
        self.rule_items_step(user_id, scope, after, &StepWindow::default())
            .await
    }

    /// The next ids (above `after`) of the user's visible, unstarred items in `scope` inside
    /// `window`: what a rule applied to existing items, or aging ones, looks at next.
    pub(crate) async fn rule_items_step(
        &self,
        user_id: i64,
        scope: &Scope,
        after: i64,
        window: &StepWindow,
    ) -> Result<Vec<i64>> {
        Ok(with_db!(self, read, |db| {
            sqlx::query_scalar(
                "SELECT i.id FROM subscriptions s
                 JOIN items i ON i.feed_id = s.feed_id
                 LEFT JOIN item_states st ON st.user_id = s.user_id AND st.item_id = i.id
                 WHERE s.user_id = $1 AND i.id > $2
                   AND ($3 IS NULL OR s.feed_id = $3) AND ($4 IS NULL OR s.group_id = $4)
                   AND NOT COALESCE(st.is_hidden, FALSE) AND NOT COALESCE(st.is_starred, FALSE)
                   AND ($6 IS NULL OR i.published_at >= $6) AND ($7 IS NULL OR i.published_at < $7)
                   AND (NOT $8 OR NOT COALESCE(st.is_read, FALSE))
                 ORDER BY i.id LIMIT $5",
            )
            .bind(user_id)
            .bind(after)
            .bind(scope.feed_id)
            .bind(scope.group_id)
            .bind(APPLY_BATCH)
            .bind(window.published_from)
            .bind(window.published_before)
            .bind(window.unread_only)
            .fetch_all(db)
            .await?
        }))
    }

    /// Writes one step of an application, answering each changed item's state before.
    async fn write_application_step(
        &self,
        user_id: i64,
        decided: &[(i64, Outcome)],
        now: i64,
    ) -> Result<Vec<ItemBefore>> {
        let mut befores = Vec::new();
        if decided.is_empty() {
            return Ok(befores);
        }
        // Label rows have no foreign keys on PostgreSQL (version 55): the item's and the
        // subscription's rows are locked as a foreign key would lock them, so that a deletion
        // committing meanwhile leaves no label behind (the item is then skipped).
        let lock = match self.engine() {
            crate::Engine::Postgres => "FOR KEY SHARE OF i, s",
            crate::Engine::Sqlite => "",
        };
        in_tx!(self, |tx| {
            for (item_id, outcome) in decided {
                let row: Option<(Option<bool>, Option<bool>, Option<bool>, bool)> =
                    sqlx::query_as(sqlx::AssertSqlSafe(format!(
                        "SELECT st.is_read, st.is_starred, st.is_hidden, {IS_READ}
                         FROM items i
                         JOIN subscriptions s ON s.feed_id = i.feed_id AND s.user_id = $1
                         LEFT JOIN item_states st ON st.user_id = $1 AND st.item_id = i.id
                         WHERE i.id = $2 {lock}"
                    )))
                    .bind(user_id)
                    .bind(*item_id)
                    .fetch_optional(&mut *tx)
                    .await?;
                // Gone or unsubscribed since it was read: nothing to change.
                let Some((read, starred, hidden, is_read_now)) = row else {
                    continue;
                };
                let state = match (read, starred, hidden) {
                    (Some(read), Some(starred), Some(hidden)) => Some((read, starred, hidden)),
                    _ => None,
                };
                let labels = existing_labels_on!(tx, user_id, *item_id);
                let arrival: Option<(i64, i64)> = if outcome.hidden {
                    sqlx::query_as(
                        "SELECT seq, arrived_us FROM user_items WHERE user_id = $1 AND item_id = $2",
                    )
                    .bind(user_id)
                    .bind(*item_id)
                    .fetch_optional(&mut *tx)
                    .await?
                } else {
                    None
                };
                let added: Vec<String> = outcome
                    .labels
                    .iter()
                    .filter(|l| !labels.contains(*l))
                    .cloned()
                    .collect();
                let starred_before = state.is_some_and(|(_, starred, _)| starred);
                let changes_state = outcome.hidden
                    || outcome.read && !is_read_now
                    || outcome.star && !starred_before;
                if !changes_state && added.is_empty() {
                    continue;
                }
                write_rule_outcome_on!(tx, user_id, *item_id, outcome, now);
                befores.push(ItemBefore {
                    item_id: *item_id,
                    state,
                    labels: added,
                    arrival,
                });
            }
        });
        Ok(befores)
    }

    /// Puts back what application `undo_id` changed, as it was before, and forgets it.
    /// Answers how many items were restored.
    pub async fn undo_rule_application(&self, user_id: i64, undo_id: i64) -> Result<u64> {
        let json: Option<String> = with_db!(self, read, |db| {
            sqlx::query_scalar(
                "SELECT changes FROM rule_applications WHERE user_id = $1 AND id = $2",
            )
            .bind(user_id)
            .bind(undo_id)
            .fetch_optional(db)
            .await?
        });
        let json = json.ok_or(StoreError::NotFound("rule application"))?;
        let changes: Vec<ItemBefore> = serde_json::from_str(&json)
            .map_err(|e| StoreError::Invalid(format!("the application is stored damaged: {e}")))?;
        let mut restored = 0u64;
        for chunk in changes.chunks(APPLY_BATCH as usize) {
            in_tx!(self, |tx| {
                for before in chunk {
                    restore_item_on!(tx, user_id, before);
                    restored += 1;
                }
            });
        }
        with_db!(self, write, |db| {
            sqlx::query("DELETE FROM rule_applications WHERE user_id = $1 AND id = $2")
                .bind(user_id)
                .bind(undo_id)
                .execute(db)
                .await?;
        });
        Ok(restored)
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::{NewSubscription, NewUser};

    /// The statements cached by every reading connection, summed, and how many connections
    /// those are.
    async fn cached_statements(store: &Store) -> Result<(usize, usize)> {
        use sqlx::Connection;
        /// The cached statements of all a pool's connections, each held until all are read.
        /// A connection released a moment ago goes back to the pool in a task of its own:
        /// counted while on its way it would be missed, and its statements taken for new
        /// ones at the next count (CI saw 17 "new" on 5 connections), so wait until every
        /// connection is idle first.
        macro_rules! idle_cached {
            ($pool:expr) => {{
                for _ in 0..200 {
                    if $pool.num_idle() >= $pool.size() as usize {
                        break;
                    }
                    tokio::time::sleep(std::time::Duration::from_millis(10)).await;
                }
                let mut held = Vec::new();
                let mut cached = 0;
                for _ in 0..$pool.size() {
                    let conn = $pool.acquire().await?;
                    cached += conn.cached_statements_size();
                    held.push(conn);
                }
                (cached, held.len())
            }};
        }
        Ok(match &*store.pools {
            crate::Pools::Sqlite { reader, .. } => idle_cached!(reader),
            crate::Pools::Postgres(pool) => idle_cached!(pool),
        })
    }

    /// Reading the items of many different batches prepares the same two statements: the ids
    /// are bound, not written into the text, which made each batch a statement of its own,
    /// prepared anew and kept in every reading connection's cache (a worker's ten readers held
    /// a hundred each). On SQLite, and on PostgreSQL when `TIDINGS_TEST_POSTGRES_URL` names a
    /// server.
    #[tokio::test]
    async fn checking_rules_on_many_batches_prepares_one_statement_each() {
        crate::test_engines::on_each_engine(async |store: &Store| {
            let user = crate::test_engines::migrated_with_user(store, "ann").await;
            store.rule_items(user, &[1]).await.unwrap();
            let (before, _) = cached_statements(store).await.unwrap();
            for n in 0..150 {
                let ids: Vec<i64> = (n..n + 1 + n % 7).collect();
                assert!(store.rule_items(user, &ids).await.unwrap().is_empty());
            }
            // At most the two statements on each connection that ran them, and a few the
            // store runs besides; a list in the text adds one for each of the 150 calls, up
            // to each cache's capacity.
            let (after, connections) = cached_statements(store).await.unwrap();
            assert!(
                after.saturating_sub(before) <= 2 * connections + 4,
                "{before} statements cached before, {after} after, on {connections} connections"
            );
        })
        .await;
    }

    /// Outcomes written for items that were there before the transaction (a backlog, an age
    /// rule's window: read outside it) label only items still there and still followed by
    /// their user, and the others are skipped, not an error: PostgreSQL's label rows have no
    /// foreign keys (version 55) to refuse them. On SQLite, and on PostgreSQL when
    /// `TIDINGS_TEST_POSTGRES_URL` names a server.
    #[tokio::test]
    async fn labels_of_earlier_items_go_only_on_items_still_there_and_followed() {
        crate::test_engines::on_each_engine(async |store: &Store| {
            labels_only_on_followed_items(store).await.unwrap();
        })
        .await;
    }

    async fn labels_only_on_followed_items(store: &Store) -> Result<()> {
        store.migrate().await?;
        let mut users = Vec::new();
        for name in ["ann", "bob"] {
            let user = NewUser {
                username: name.into(),
                password_hash: None,
                is_admin: false,
            };
            users.push(store.create_user(&user).await?.id);
        }
        let (ann, bob) = (users[0], users[1]);
        let subscription = store
            .subscribe(
                ann,
                &NewSubscription {
                    feed_url: "https://a.example/".into(),
                    ..Default::default()
                },
            )
            .await?;
        let feed_id = subscription.feed_id;
        let items: Vec<NewItem> = (0..2)
            .map(|n| NewItem {
                guid: Some(format!("a-{n}")),
                title: Some(format!("Item {n}")),
                published: Some(1_700_000_000 + n),
                ..NewItem::default()
            })
            .collect();
        store.upsert_items(feed_id, &items, 1_700_000_000).await?;
        let ids: Vec<i64> = with_db!(store, read, |db| {
            sqlx::query_scalar("SELECT id FROM items WHERE feed_id = $1 ORDER BY id")
                .bind(feed_id)
                .fetch_all(db)
                .await?
        });
        assert_eq!(ids.len(), 2);
        let (kept, gone) = (ids[0], ids[1]);
        store
            .execute_raw(&format!("DELETE FROM items WHERE id = {gone}"))
            .await?;
        let labelled = Outcome {
            labels: ["Later".to_string()].into(),
            ..Outcome::default()
        };
        // Ann's item still there, ann's item deleted meanwhile, an item bob does not follow.
        let decided = vec![
            (ann, kept, labelled.clone()),
            (ann, gone, labelled.clone()),
            (bob, kept, labelled),
        ];
        let now = unix_now();
        in_tx!(store, |tx| {
            write_rule_outcomes_on!(tx, &decided, now);
        });
        let rows: Vec<(i64, i64)> = with_db!(store, read, |db| {
            sqlx::query_as("SELECT user_id, item_id FROM item_labels ORDER BY user_id, item_id")
                .fetch_all(db)
                .await?
        });
        assert_eq!(rows, vec![(ann, kept)]);
        Ok(())
    }
}
