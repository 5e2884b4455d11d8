//! What a rule does to the items it catches.

use std::fmt;

use crate::error::RuleError;

/// The longest label a rule may add, in characters (labels are group-like names).
pub const MAX_LABEL_CHARS: usize = 100;

/// One action of a rule, as the API writes it (`"hide"`, `"label:NAME"`, `"notify:7"`).
#[derive(Debug, Clone, PartialEq, Eq, Hash)]
pub enum Action {
    /// The item never shows for this user, in any view or sync API.
    Hide,
    /// The inverse of hide: in the rule's scope, items the rule does not catch are hidden.
    KeepOnly,
    /// Marked read.
    Read,
    /// Starred.
    Star,
    /// Given this label (the Google Reader API's `user/-/label/NAME`).
    Label(String),
    /// Sent to the user's notification channel with this id.
    Notify(i64),
    /// Queued for a summary.
    Summarize,
}

impl Action {
    /// Reads an action as the API writes it; the error says what is accepted.
    pub fn parse(text: &str) -> Result<Action, RuleError> {
        let text = text.trim();
        let (name, argument) = match text.split_once(':') {
            Some((name, argument)) => (name, Some(argument.trim())),
            None => (text, None),
        };
        let action = match (name.to_ascii_lowercase().as_str(), argument) {
            ("hide", None) => Action::Hide,
            ("keep_only", None) => Action::KeepOnly,
            ("read", None) => Action::Read,
            ("star", None) => Action::Star,
            ("summarize", None) => Action::Summarize,
            ("label", Some(label)) => Action::Label(parse_label(label)?),
            ("notify", Some(channel)) => match channel.parse::<i64>() {
                Ok(id) if id > 0 => Action::Notify(id),
                _ => {
                    return Err(RuleError::BadAction {
                        action: text.to_string(),
                        why: "a notification action names its channel by id, as `notify:7`"
                            .to_string(),
                    });
                }
            },
            _ => {
                return Err(RuleError::BadAction {
                    action: text.to_string(),
                    why: "the actions are hide, keep_only, read, star, label:NAME, \
                          notify:CHANNEL_ID and summarize"
                        .to_string(),
                });
            }
        };
        Ok(action)
    }

    /// Whether the action hides (or, for keep-only, decides what is hidden): a rule with such
    /// an action changes what the user sees at all, so it is checked first.
    pub fn is_visibility(&self) -> bool {
        matches!(self, Action::Hide | Action::KeepOnly)
    }
}

impl fmt::Display for Action {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            Action::Hide => f.write_str("hide"),
            Action::KeepOnly => f.write_str("keep_only"),
            Action::Read => f.write_str("read"),
            Action::Star => f.write_str("star"),
            Action::Label(label) => write!(f, "label:{label}"),
            Action::Notify(id) => write!(f, "notify:{id}"),
            Action::Summarize => f.write_str("summarize"),
        }
    }
}

/// A label's name, trimmed; refused when empty, too long, or holding a `/` (the Google Reader
/// API's stream ids are `user/-/label/NAME`, so a slash would make another stream).
fn parse_label(label: &str) -> Result<String, RuleError> {
    let bad = |why: &str| RuleError::BadAction {
        action: format!("label:{label}"),
        why: why.to_string(),
    };
    if label.is_empty() {
        return Err(bad(
            "the label has no name: write it after the colon, as `label:Work`",
        ));
    }
    if label.chars().count() > MAX_LABEL_CHARS {
        return Err(bad("the label is longer than 100 characters"));
    }
    if label.contains('/') || label.chars().any(char::is_control) {
        return Err(bad("a label cannot hold `/` or control characters"));
    }
    Ok(label.to_string())
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn every_action_reads_back_as_written() {
        for text in [
            "hide",
            "keep_only",
            "read",
            "star",
            "label:Work",
            "label:仕事",
            "notify:7",
            "summarize",
        ] {
            assert_eq!(Action::parse(text).unwrap().to_string(), text);
        }
        assert_eq!(Action::parse(" HIDE ").unwrap(), Action::Hide);
    }

    #[test]
    fn bad_actions_say_what_is_accepted() {
        for text in [
            "delete",
            "label:",
            "label:a/b",
            "notify:x",
            "notify:-1",
            "hide:now",
        ] {
            let error = Action::parse(text).unwrap_err().to_string();
            assert!(error.contains(text.trim()), "{error}");
        }
        let long = format!("label:{}", "x".repeat(101));
        assert!(Action::parse(&long).is_err());
    }
}
