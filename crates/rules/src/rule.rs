//! A rule as the API writes it ([`RuleSpec`]) and as it runs ([`Rule`]).

use serde::{Deserialize, Serialize};

use crate::action::Action;
use crate::condition::{FieldRegex, Query, TextField};
use crate::error::RuleError;
use crate::item::PreparedItem;

/// The oldest age a rule may name: a hundred years.
pub const MAX_AGE_DAYS: i64 = 36_500;

/// Which items a rule looks at.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default, Serialize, Deserialize)]
pub struct Scope {
    /// Only this feed's items.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub feed_id: Option<i64>,
    /// Only the items of feeds in this group.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub group_id: Option<i64>,
}

/// A regular expression condition as the API writes it.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct RegexSpec {
    /// `title`, `content`, `author`, `url` or `tag`; or several joined by commas
    /// (`url,title,author,tag`): the pattern holds when it matches any of them.
    pub field: String,
    /// The pattern (Rust's regex syntax: no look-around or back-references, so it runs in
    /// linear time).
    pub pattern: String,
}

/// A rule's conditions and actions as the API writes them (its id, name, order and owner
/// live beside it in the store).
#[derive(Debug, Clone, PartialEq, Eq, Default, Serialize, Deserialize)]
pub struct RuleSpec {
    /// Which items it looks at.
    #[serde(default)]
    pub scope: Scope,
    /// A condition in the search language with fields.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub query: Option<String>,
    /// A regular expression on a field.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub regex: Option<RegexSpec>,
    /// Items published more than this many days ago.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub older_than_days: Option<i64>,
    /// What it does, as written (`"hide"`, `"label:Work"`, …).
    #[serde(default)]
    pub actions: Vec<String>,
}

/// A compiled rule, ready to run on items.
#[derive(Debug, Clone)]
pub struct Rule {
    /// The rule's id in the store (0 for one being previewed).
    pub id: i64,
    /// Which items it looks at.
    pub scope: Scope,
    query: Option<Query>,
    regex: Option<FieldRegex>,
    older_than_days: Option<i64>,
    /// What it does.
    pub actions: Vec<Action>,
}

impl Rule {
    /// Compiles a rule; the error says what was wrong and what to do.
    pub fn compile(id: i64, spec: &RuleSpec) -> Result<Rule, RuleError> {
        let query = match spec.query.as_deref().map(str::trim) {
            Some(text) if !text.is_empty() => Some(Query::parse(text)?),
            _ => None,
        };
        let regex = match &spec.regex {
            Some(r) => Some(FieldRegex::on_any(
                TextField::parse_list(&r.field)?,
                &r.pattern,
            )?),
            None => None,
        };
        if let Some(days) = spec.older_than_days
            && !(1..=MAX_AGE_DAYS).contains(&days)
        {
            return Err(RuleError::BadAge(days));
        }
        if query.is_none() && regex.is_none() && spec.older_than_days.is_none() {
            return Err(RuleError::NoCondition);
        }
        let mut actions = Vec::with_capacity(spec.actions.len());
        for text in &spec.actions {
            let action = Action::parse(text)?;
            if !actions.contains(&action) {
                actions.push(action);
            }
        }
        if actions.is_empty() {
            return Err(RuleError::NoAction);
        }
        if actions.contains(&Action::Hide) && actions.contains(&Action::KeepOnly) {
            return Err(RuleError::HideAndKeepOnly);
        }
        Ok(Rule {
            id,
            scope: spec.scope,
            query,
            regex,
            older_than_days: spec.older_than_days,
            actions,
        })
    }

    /// Whether the rule looks at an item of `feed_id`, whose feed is in `group_id` for this
    /// user.
    pub fn in_scope(&self, feed_id: i64, group_id: Option<i64>) -> bool {
        self.scope.feed_id.is_none_or(|f| f == feed_id)
            && self.scope.group_id.is_none_or(|g| Some(g) == group_id)
    }

    /// Whether every condition holds for the item at `now` (seconds since the epoch).
    pub fn matches(&self, item: &PreparedItem<'_>, now: i64) -> bool {
        // The cheap tests first: the age, then words, then the regular expression.
        if let Some(days) = self.older_than_days
            && now.saturating_sub(item.item.published_at) <= days.saturating_mul(86_400)
        {
            return false;
        }
        if let Some(query) = &self.query
            && !query.matches(item)
        {
            return false;
        }
        self.regex.as_ref().is_none_or(|r| r.matches(item))
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn spec(json: &str) -> RuleSpec {
        serde_json::from_str(json).unwrap()
    }

    #[test]
    fn a_rule_needs_a_condition_and_an_action() {
        assert_eq!(
            Rule::compile(1, &spec(r#"{"actions":["read"]}"#)).unwrap_err(),
            RuleError::NoCondition
        );
        assert_eq!(
            Rule::compile(1, &spec(r#"{"query":"x"}"#)).unwrap_err(),
            RuleError::NoAction
        );
        assert_eq!(
            Rule::compile(1, &spec(r#"{"query":"x","actions":["hide","keep_only"]}"#)).unwrap_err(),
            RuleError::HideAndKeepOnly
        );
        for days in [0, -1, 36_501] {
            let json = format!(r#"{{"older_than_days":{days},"actions":["read"]}}"#);
            assert_eq!(
                Rule::compile(1, &spec(&json)).unwrap_err(),
                RuleError::BadAge(days)
            );
        }
        let rule = Rule::compile(1, &spec(r#"{"query":"x","actions":["read","read"]}"#)).unwrap();
        assert_eq!(rule.actions, [Action::Read]);
    }

    #[test]
    fn every_condition_must_hold() {
        use crate::item::RuleItem;
        let rule = Rule::compile(
            1,
            &spec(
                r#"{"query":"rust","regex":{"field":"title","pattern":"^Release"},
                    "older_than_days":2,"actions":["read"]}"#,
            ),
        )
        .unwrap();
        let now = 10 * 86_400;
        let make = |title, published_at| {
            PreparedItem::new(RuleItem {
                title,
                published_at,
                ..RuleItem::default()
            })
        };
        assert!(rule.matches(&make("Release of Rust", 0), now));
        assert!(!rule.matches(&make("Release of Rust", now - 86_400), now));
        assert!(!rule.matches(&make("Rust release", 0), now));
        assert!(!rule.matches(&make("Release of Go", 0), now));
    }

    #[test]
    fn scopes() {
        let all = Rule::compile(1, &spec(r#"{"query":"x","actions":["read"]}"#)).unwrap();
        let feed = Rule::compile(
            1,
            &spec(r#"{"scope":{"feed_id":5},"query":"x","actions":["read"]}"#),
        )
        .unwrap();
        let group = Rule::compile(
            1,
            &spec(r#"{"scope":{"group_id":9},"query":"x","actions":["read"]}"#),
        )
        .unwrap();
        assert!(all.in_scope(5, None));
        assert!(feed.in_scope(5, Some(9)) && !feed.in_scope(6, Some(9)));
        assert!(group.in_scope(6, Some(9)) && !group.in_scope(6, None));
    }
}
