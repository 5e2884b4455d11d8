//! Rules for tidings: what a user decided once to hide, mark read, star, label, be told
//! about or have summarized, checked against each item. Pure: no I/O.
//!
//! A rule ([`RuleSpec`], compiled to a [`Rule`]) has a scope (everything, a group, a feed),
//! conditions that must all hold (the search language with fields, a regular expression on a
//! field, an age) and actions. An item is prepared once ([`PreparedItem`]: its token streams,
//! made by the search tokenizer, so every script matches as a search does) and every rule of
//! every subscriber looks at that one preparation: [`evaluate`] gives one user's
//! [`Outcome`]. Regular expressions use an engine without backtracking, with a bounded
//! compiled size and a bounded text, so no rule can stall a fetch.

#![warn(missing_docs)]

mod action;
mod condition;
mod error;
mod item;
mod outcome;
mod rule;

pub use action::{Action, MAX_LABEL_CHARS};
pub use condition::{
    FieldRegex, MAX_PATTERN_CHARS, MAX_REGEX_BYTES, MAX_RULE_QUERY_CHARS, MAX_RULE_TERMS, Query,
    TextField,
};
pub use error::RuleError;
pub use item::{MAX_TEXT_BYTES, PreparedItem, RuleItem, bounded};
pub use outcome::{Change, Outcome, evaluate};
pub use rule::{MAX_AGE_DAYS, RegexSpec, Rule, RuleSpec, Scope};
