//! Why a rule was refused: each message says what was wrong and what to do.

use std::fmt;

/// A rule that cannot be compiled.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum RuleError {
    /// An action the rules do not have, or with a bad argument.
    BadAction {
        /// The action as written.
        action: String,
        /// What is wrong and what is accepted.
        why: String,
    },
    /// The rule has no action.
    NoAction,
    /// The rule has no condition: it would catch every item.
    NoCondition,
    /// The search-language condition is not valid.
    BadQuery(String),
    /// A `field:value` term names no field the rules know.
    UnknownField(String),
    /// A `field:value` term has no usable value.
    BadFieldValue {
        /// The term as written.
        term: String,
        /// What is expected.
        why: String,
    },
    /// The regular expression is not valid or too large.
    BadRegex(String),
    /// The regular expression names a field the rules do not know.
    BadRegexField(String),
    /// `older_than_days` is out of range.
    BadAge(i64),
    /// `keep_only` and `hide` in one rule contradict each other.
    HideAndKeepOnly,
}

impl fmt::Display for RuleError {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            RuleError::BadAction { action, why } => write!(f, "the action {action:?}: {why}"),
            RuleError::NoAction => f.write_str(
                "the rule has no action: give at least one of hide, keep_only, read, star, \
                 label:NAME, notify:CHANNEL_ID, summarize",
            ),
            RuleError::NoCondition => f.write_str(
                "the rule has no condition and would catch every item: give a query, a \
                 regular expression or older_than_days",
            ),
            RuleError::BadQuery(why) => write!(f, "the query: {why}"),
            RuleError::UnknownField(field) => write!(
                f,
                "the query's field {field:?} is not known: use title:, content:, author:, url:, \
                 tag:, category:, enclosure: or popularity:"
            ),
            RuleError::BadFieldValue { term, why } => write!(f, "the query's {term:?}: {why}"),
            RuleError::BadRegex(why) => write!(f, "the regular expression: {why}"),
            RuleError::BadRegexField(field) => write!(
                f,
                "the regular expression's field {field:?} is not known: use title, content, \
                 author, url or tag, or several joined by commas (url,title)"
            ),
            RuleError::BadAge(days) => write!(
                f,
                "older_than_days is {days}: give a whole number of days from 1 to 36500"
            ),
            RuleError::HideAndKeepOnly => f.write_str(
                "a rule cannot both hide what it catches and keep only what it catches: \
                 keep one of the two",
            ),
        }
    }
}

impl std::error::Error for RuleError {}
