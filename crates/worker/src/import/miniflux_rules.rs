//! Miniflux's block and keep rules as tidings rules.
//!
//! What Miniflux does with them is in miniflux/v2's `internal/reader/filter/filter.go`
//! (`IsBlockedEntry`, called for each new entry by `internal/reader/processor/processor.go`
//! with `ParseRules(user.BlockFilterEntryRules, feed.BlockFilterEntryRules)` and the same for
//! keep rules):
//!
//! - an entry is blocked when one *block filter* line (the user's, `GET /v1/me`, then the
//!   feed's) matches, or when the feed's `blocklist_rules` regular expression matches its
//!   link, title, author or one of its tags;
//! - when there are *keep filter* lines (the user's and the feed's together), an entry is
//!   blocked unless one of them matches, and the feed's `keeplist_rules` is then ignored;
//!   otherwise, with a `keeplist_rules`, an entry is blocked unless it matches (same fields).
//!
//! A filter line is `FieldName=RegEx` (`EntryTitle`, `EntryURL`, `EntryCommentsURL`,
//! `EntryContent`, `EntryAuthor`, `EntryTag`, `EntryDate`; `internal/validator/filter.go`),
//! a line without `=` is ignored. Here every block line becomes a `hide` rule; each set of
//! keep lines becomes one `keep_only` rule (tidings' keep rules each hide what they do not
//! catch, so Miniflux's "any of these lines" must be one rule: lines on one field become one
//! pattern `(?:a)|(?:b)`). Go's RE2 syntax is nearly Rust's; a pattern tidings refuses is
//! reported when imported. `EntryDate=max-age:N` maps to an age; its other forms, and
//! `EntryCommentsURL` (tidings keeps no comments link), do not.

use tidings_store::{RegexSpec, RuleSpec};

use super::rules::HistoryRule;

/// The fields Miniflux's block and keep lists look at (`matchesEntryRegexRules`).
const LIST_FIELDS: &str = "url,title,author,tag";

/// A feed's filters as `GET /v1/feeds` gives them.
#[derive(Debug, Clone, Default)]
pub(crate) struct FeedFilters<'a> {
    /// The feed's URL.
    pub feed_url: &'a str,
    /// Its title, to name its rules by.
    pub title: &'a str,
    /// `blocklist_rules`: one regular expression.
    pub blocklist: &'a str,
    /// `keeplist_rules`: one regular expression.
    pub keeplist: &'a str,
    /// `block_filter_entry_rules`: lines.
    pub block_lines: &'a str,
    /// `keep_filter_entry_rules`: lines.
    pub keep_lines: &'a str,
}

/// What one filter line tests, in tidings' terms.
#[derive(Debug, Clone, PartialEq, Eq)]
enum Condition {
    /// A regular expression on a field.
    Regex(&'static str, String),
    /// Published more than this many days ago.
    OlderThan(i64),
}

impl Condition {
    fn spec(self, action: &str) -> RuleSpec {
        let mut spec = RuleSpec {
            actions: vec![action.to_owned()],
            ..RuleSpec::default()
        };
        match self {
            Condition::Regex(field, pattern) => {
                spec.regex = Some(RegexSpec {
                    field: field.to_owned(),
                    pattern,
                })
            }
            Condition::OlderThan(days) => spec.older_than_days = Some(days),
        }
        spec
    }
}

/// The non-blank lines of a rules text.
fn lines(text: &str) -> impl Iterator<Item = &str> {
    text.lines().map(str::trim).filter(|line| !line.is_empty())
}

/// One `FieldName=RegEx` line in tidings' terms, or why it does not map.
fn condition(line: &str) -> Result<Condition, String> {
    let Some((field, value)) = line.split_once('=') else {
        return Err("Miniflux ignores a line without `=`, so it did nothing".to_owned());
    };
    let value = value.trim().to_owned();
    let field = match field.trim() {
        "EntryTitle" => "title",
        "EntryURL" => "url",
        "EntryContent" => "content",
        "EntryAuthor" => "author",
        "EntryTag" => "tag",
        "EntryDate" => return date_condition(&value),
        "EntryCommentsURL" => {
            return Err("tidings does not keep an item's comments link".to_owned());
        }
        other => return Err(format!("Miniflux does not know the field {other:?}")),
    };
    if value.is_empty() {
        return Err("the line has no regular expression".to_owned());
    }
    Ok(Condition::Regex(field, value))
}

/// `EntryDate=max-age:30d` (or a whole number of days in hours, `48h`) as an age; Miniflux's
/// other date forms (`future`, `before:`, `after:`, `between:`) have no tidings equivalent.
fn date_condition(value: &str) -> Result<Condition, String> {
    let days = value.strip_prefix("max-age:").and_then(|age| {
        if let Some(days) = age.strip_suffix('d') {
            days.parse::<i64>().ok()
        } else {
            let hours = age.strip_suffix('h')?.parse::<i64>().ok()?;
            (hours % 24 == 0).then_some(hours / 24)
        }
    });
    match days {
        Some(days) if days >= 1 => Ok(Condition::OlderThan(days)),
        _ => Err(format!(
            "tidings' rules know an age in whole days (EntryDate=max-age:7d), not \
             EntryDate={value}"
        )),
    }
}

/// Every block line of `text` as a `hide` rule.
fn block_rules(text: &str, feed: Option<&str>, origin: &str, out: &mut Vec<HistoryRule>) {
    for line in lines(text) {
        let name = format!("{origin}: block {line}");
        out.push(match condition(line) {
            Ok(condition) => HistoryRule::mapped(feed, name, condition.spec("hide")),
            Err(why) => HistoryRule::unmapped(feed, name, why),
        });
    }
}

/// The keep lines of `text` as one `keep_only` rule: they must all map, and be on one field
/// (an age alone is one line).
fn keep_rule(text: &str, feed: Option<&str>, origin: &str) -> Option<HistoryRule> {
    let lines: Vec<&str> = lines(text).collect();
    let name = match lines.as_slice() {
        [] => return None,
        [line] => format!("{origin}: keep {line}"),
        many => format!("{origin}: keep {}", many.join(" or ")),
    };
    let mut conditions = Vec::with_capacity(lines.len());
    for line in &lines {
        match condition(line) {
            Ok(condition) => conditions.push(condition),
            Err(why) => {
                let why = format!(
                    "{line}: {why}; without it, a keep rule would hide what it kept, so none \
                     was made"
                );
                return Some(HistoryRule::unmapped(feed, name, why));
            }
        }
    }
    let spec = match conditions.as_slice() {
        [single] => single.clone().spec("keep_only"),
        _ => {
            let field = match &conditions[0] {
                Condition::Regex(field, _) => *field,
                Condition::OlderThan(_) => "",
            };
            let patterns: Option<Vec<String>> = conditions
                .iter()
                .map(|c| match c {
                    Condition::Regex(f, pattern) if *f == field => Some(format!("(?:{pattern})")),
                    _ => None,
                })
                .collect();
            let Some(patterns) = patterns else {
                let why = "Miniflux keeps an entry that matches any of these lines, which look \
                           at different fields; a tidings rule has one regular expression, so \
                           none was made (make one keep rule per field's lines in Miniflux, or \
                           write the rule by hand)";
                return Some(HistoryRule::unmapped(feed, name, why.to_owned()));
            };
            Condition::Regex(field, patterns.join("|")).spec("keep_only")
        }
    };
    Some(HistoryRule::mapped(feed, name, spec))
}

/// The rules of a Miniflux account: the user's block and keep filter lines (`GET /v1/me`,
/// Miniflux 2.2 and later), then each feed's block list, keep list and filter lines.
pub(crate) fn miniflux_rules(
    user_block: &str,
    user_keep: &str,
    feeds: &[FeedFilters<'_>],
) -> Vec<HistoryRule> {
    let mut out = Vec::new();
    block_rules(user_block, None, "Miniflux", &mut out);
    let user_keeps = lines(user_keep).next().is_some();
    out.extend(keep_rule(user_keep, None, "Miniflux"));
    for feed in feeds {
        let url = Some(feed.feed_url);
        let origin = format!("Miniflux, {}", feed.title);
        block_rules(feed.block_lines, url, &origin, &mut out);
        let blocklist = feed.blocklist.trim();
        if !blocklist.is_empty() {
            let spec = Condition::Regex(LIST_FIELDS, blocklist.to_owned()).spec("hide");
            let name = format!("{origin}: block list {blocklist}");
            out.push(HistoryRule::mapped(url, name, spec));
        }
        let feed_keeps = lines(feed.keep_lines).next().is_some();
        if feed_keeps && user_keeps {
            let name = format!("{origin}: keep {}", feed.keep_lines.trim());
            let why = "Miniflux keeps an entry matching your keep rules or this feed's; a \
                       tidings keep rule hides what it does not catch, so with your keep rule \
                       this one would hide what only it keeps: none was made (add its lines \
                       to your keep rule by hand where they are on the same field)";
            out.push(HistoryRule::unmapped(url, name, why.to_owned()));
        } else if feed_keeps {
            out.extend(keep_rule(feed.keep_lines, url, &origin));
        }
        let keeplist = feed.keeplist.trim();
        if keeplist.is_empty() {
            continue;
        }
        let name = format!("{origin}: keep list {keeplist}");
        if user_keeps || feed_keeps {
            let why = "Miniflux ignores a feed's keep list while there are keep filter rules, \
                       so it did nothing";
            out.push(HistoryRule::unmapped(url, name, why.to_owned()));
        } else {
            let spec = Condition::Regex(LIST_FIELDS, keeplist.to_owned()).spec("keep_only");
            out.push(HistoryRule::mapped(url, name, spec));
        }
    }
    out
}

#[cfg(test)]
mod tests {
    use super::*;

    fn regex(rule: &HistoryRule) -> (String, String, Vec<String>) {
        let spec = rule.spec.as_ref().unwrap();
        let regex = spec.regex.clone().unwrap();
        (regex.field, regex.pattern, spec.actions.clone())
    }

    #[test]
    fn block_lines_are_hide_rules_and_what_does_not_map_says_why() {
        let rules = miniflux_rules(
            "EntryTitle=(?i)sponsored\n\nEntryDate=max-age:30d\r\nEntryDate=future\n\
             EntryCommentsURL=x\nnonsense\nEntryTag=^ads$",
            "",
            &[],
        );
        assert_eq!(rules.len(), 6, "{rules:?}");
        assert_eq!(
            regex(&rules[0]),
            ("title".into(), "(?i)sponsored".into(), vec!["hide".into()])
        );
        assert_eq!(rules[0].feed_url, None);
        assert_eq!(rules[0].name, "Miniflux: block EntryTitle=(?i)sponsored");
        assert_eq!(rules[1].spec.as_ref().unwrap().older_than_days, Some(30));
        assert!(rules[2].spec.as_ref().unwrap_err().contains("whole days"));
        assert!(
            rules[3]
                .spec
                .as_ref()
                .unwrap_err()
                .contains("comments link")
        );
        assert!(rules[4].spec.as_ref().unwrap_err().contains("without `=`"));
        assert_eq!(regex(&rules[5]).0, "tag");
    }

    #[test]
    fn keep_lines_are_one_rule_when_they_share_a_field() {
        let rules = miniflux_rules("", "EntryTitle=(?i)rust\nEntryTitle=Go$", &[]);
        assert_eq!(
            regex(&rules[0]),
            (
                "title".into(),
                "(?:(?i)rust)|(?:Go$)".into(),
                vec!["keep_only".into()]
            )
        );
        let mixed = miniflux_rules("", "EntryTitle=rust\nEntryAuthor=ann", &[]);
        assert!(
            mixed[0]
                .spec
                .as_ref()
                .unwrap_err()
                .contains("different fields")
        );
        let partly = miniflux_rules("", "EntryTitle=rust\nEntryDate=future", &[]);
        assert!(
            partly[0]
                .spec
                .as_ref()
                .unwrap_err()
                .contains("none was made")
        );
    }

    #[test]
    fn feed_lists_look_at_link_title_author_and_tags() {
        let feed = FeedFilters {
            feed_url: "https://a.example/feed",
            title: "A",
            blocklist: "(?i)podcast",
            keeplist: "rust",
            ..FeedFilters::default()
        };
        let rules = miniflux_rules("", "", std::slice::from_ref(&feed));
        assert_eq!(rules.len(), 2);
        assert_eq!(
            regex(&rules[0]),
            (
                LIST_FIELDS.into(),
                "(?i)podcast".into(),
                vec!["hide".into()]
            )
        );
        assert_eq!(rules[0].feed_url.as_deref(), Some("https://a.example/feed"));
        assert_eq!(regex(&rules[1]).2, ["keep_only"]);
        // With keep filter lines, Miniflux ignores the keep list; a feed's keep lines beside
        // the user's cannot be one rule.
        let feed = FeedFilters {
            keep_lines: "EntryURL=/rust/",
            ..feed
        };
        let rules = miniflux_rules("", "EntryTitle=x", std::slice::from_ref(&feed));
        let why: Vec<&str> = rules
            .iter()
            .filter_map(|r| r.spec.as_ref().err())
            .map(String::as_str)
            .collect();
        assert_eq!(why.len(), 2, "{rules:?}");
        assert!(why[0].contains("your keep rules or this feed's"));
        assert!(why[1].contains("ignores a feed's keep list"));
    }
}
