//! FreshRSS' filter actions "mark as read" as tidings rules.
//!
//! FreshRSS exports a feed's read filters in its OPML as `frss:filtersActionRead`, one search
//! query per line (`app/views/helpers/export/opml.phtml`); a new entry matching one is marked
//! read (`FreshRSS_FilterActionsTrait::applyFilterActions`). The queries are FreshRSS' search
//! language (`app/Models/Search.php`, `app/Models/BooleanSearch.php`, matched by
//! `FreshRSS_Entry::matches`): words and `"phrases"` in the title or content, `intitle:`,
//! `author:`, `inurl:`, `#tag`, each excluded by a leading `-` or `!`, any of them a
//! `/regular expression/` (flags `i`, `m`), and `OR` between parts. They become tidings rules
//! with the action `read`: words and phrases as tidings' search words, the fields as `title:`,
//! `author:`, `url:` and `tag:`, one regular expression as the rule's regex condition, and each
//! side of an `OR` as a rule of its own (read marks add up, so that is the same). What has no
//! tidings equivalent (dates, entry, feed and label ids, saved searches, parentheses, an
//! excluded or a second regular expression) is reported. FreshRSS matches a word as a piece of
//! the text, tidings as a whole word (as its search does), which the docs say.

use tidings_store::{RegexSpec, RuleSpec};

use super::rules::HistoryRule;

/// FreshRSS' operators tidings has no equivalent for, and why.
const UNMAPPED: [(&str, &str); 10] = [
    ("date:", "date ranges (only an age in days)"),
    ("pubdate:", "date ranges (only an age in days)"),
    ("e:", "FreshRSS entry ids"),
    ("f:", "FreshRSS feed ids"),
    ("l:", "FreshRSS label ids"),
    ("L:", "FreshRSS label ids"),
    ("labels:", "FreshRSS labels"),
    ("label:", "FreshRSS labels"),
    ("search:", "FreshRSS saved searches"),
    ("S:", "FreshRSS saved searches"),
];

/// One term of a query: excluded or not, what it looks at, its value.
struct Term<'a> {
    negated: bool,
    /// `""` (title or content), `intitle:`, `author:`, `inurl:` or `#`.
    operator: &'a str,
    value: Value,
}

/// A term's value: a word, a quoted phrase, or a regular expression with its flags.
enum Value {
    Word(String),
    Phrase(String),
    Regex(String, String),
}

/// The rules of a feed's read filters (`queries`, one FreshRSS search query each).
pub(crate) fn freshrss_read_rules(
    feed_url: &str,
    title: &str,
    queries: &[String],
) -> Vec<HistoryRule> {
    let mut out = Vec::new();
    for query in queries {
        let query = tidings_feed::text::decode_entities(query).into_owned();
        let parts = split_or(&query);
        for part in &parts {
            let name = format!("FreshRSS, {title}: read {part}");
            out.push(match translate(part) {
                Ok(spec) => HistoryRule::mapped(Some(feed_url), name, spec),
                Err(why) => HistoryRule::unmapped(Some(feed_url), name, why),
            });
        }
    }
    out
}

/// The sides of `OR` in a query, as FreshRSS splits them (`/\b(OR)\b/i`).
fn split_or(query: &str) -> Vec<String> {
    let mut parts = Vec::new();
    let mut current: Vec<&str> = Vec::new();
    for word in query.split_whitespace() {
        if word.eq_ignore_ascii_case("or") {
            parts.push(current.join(" "));
            current.clear();
        } else {
            current.push(word);
        }
    }
    parts.push(current.join(" "));
    parts.retain(|part| !part.is_empty());
    parts
}

/// One side of an `OR` as a rule that marks read, or why it does not map.
fn translate(part: &str) -> Result<RuleSpec, String> {
    let mut query: Vec<String> = Vec::new();
    let mut regex: Option<RegexSpec> = None;
    let mut rest = part.trim_start();
    while !rest.is_empty() {
        let (term, after) = next_term(rest)?;
        rest = after.trim_start();
        let minus = if term.negated { "-" } else { "" };
        let field = match term.operator {
            "intitle:" => "title",
            "author:" => "author",
            "inurl:" => "url",
            "#" => "tag",
            _ => "",
        };
        match term.value {
            Value::Regex(pattern, flags) => {
                if term.negated {
                    return Err("tidings cannot exclude by a regular expression".to_owned());
                }
                if regex.is_some() {
                    return Err("a tidings rule has one regular expression".to_owned());
                }
                let flags = if flags.is_empty() {
                    String::new()
                } else {
                    format!("(?{flags})")
                };
                regex = Some(RegexSpec {
                    field: if field.is_empty() {
                        "title,content"
                    } else {
                        field
                    }
                    .to_owned(),
                    pattern: format!("{flags}{pattern}"),
                });
            }
            Value::Word(word) if field.is_empty() => query.push(format!("{minus}{word}")),
            Value::Word(word) if field == "tag" => {
                // FreshRSS reads a `+` in a tag as a space (`Search::decodeSpaces`).
                query.push(format!("{minus}tag:{}", quoted(&word.replace('+', " "))));
            }
            Value::Word(word) => query.push(format!("{minus}{field}:{}", quoted(&word))),
            Value::Phrase(phrase) if field.is_empty() => {
                query.push(format!("{minus}\"{}\"", phrase.replace('"', " ")));
            }
            Value::Phrase(phrase) => query.push(format!("{minus}{field}:{}", quoted(&phrase))),
        }
    }
    let query = query.join(" ");
    if query.is_empty() && regex.is_none() {
        return Err("the query looks for nothing".to_owned());
    }
    Ok(RuleSpec {
        query: Some(query).filter(|q| !q.is_empty()),
        regex,
        actions: vec!["read".to_owned()],
        ..RuleSpec::default()
    })
}

/// `value` as a tidings field value: quoted when it holds a space.
fn quoted(value: &str) -> String {
    if value.contains(char::is_whitespace) {
        format!("\"{}\"", value.replace('"', " "))
    } else {
        value.replace('"', "")
    }
}

/// The first term of `text` (which starts with no space) and what follows it.
fn next_term(text: &str) -> Result<(Term<'_>, &str), String> {
    let (negated, text) = match text.strip_prefix(['-', '!']) {
        Some(after) if !after.is_empty() && !after.starts_with(char::is_whitespace) => {
            (true, after)
        }
        _ => (false, text),
    };
    for (operator, why) in UNMAPPED {
        if text.starts_with(operator) {
            return Err(format!("`{operator}`: tidings' rules have no {why}"));
        }
    }
    let operator = ["intitle:", "author:", "inurl:", "#"]
        .into_iter()
        .find(|operator| text.starts_with(operator))
        .unwrap_or("");
    let text = &text[operator.len()..];
    let (value, rest) = value_of(text, operator);
    if let Value::Word(text) | Value::Phrase(text) = &value
        && (text.contains('(') || text.contains(')'))
    {
        return Err("tidings' rules have no parentheses: write it as several rules".to_owned());
    }
    Ok((
        Term {
            negated,
            operator,
            value,
        },
        rest,
    ))
}

/// A term's value at the start of `text`: `/regex/flags` (an unescaped closing slash, flags
/// `i` and `m`), a `"phrase"` or `'phrase'`, else a word up to the next space.
fn value_of<'a>(text: &'a str, operator: &str) -> (Value, &'a str) {
    if let Some(body) = text.strip_prefix('/') {
        let mut escaped = false;
        for (index, c) in body.char_indices() {
            match c {
                '\\' if !escaped => escaped = true,
                '/' if !escaped => {
                    let after = &body[index + 1..];
                    let flags_end = after
                        .find(|c: char| c != 'i' && c != 'm')
                        .unwrap_or(after.len());
                    let (flags, rest) = after.split_at(flags_end);
                    if rest.is_empty() || rest.starts_with(char::is_whitespace) {
                        let mut flags: Vec<char> = flags.chars().collect();
                        flags.dedup();
                        let pattern = body[..index].replace("\\/", "/");
                        return (Value::Regex(pattern, flags.into_iter().collect()), rest);
                    }
                    break;
                }
                _ => escaped = false,
            }
        }
    }
    for quote in ['"', '\''] {
        if let Some(body) = text.strip_prefix(quote)
            && let Some(end) = body.find(quote)
        {
            return (Value::Phrase(body[..end].to_owned()), &body[end + 1..]);
        }
    }
    // `inurl:` takes everything up to a space; the others stop at a quote too.
    let stop = |c: char| c.is_whitespace() || (operator != "inurl:" && operator != "#" && c == '"');
    let end = text.find(stop).unwrap_or(text.len());
    let end = if end == 0 { text.len().min(1) } else { end };
    (Value::Word(text[..end].to_owned()), &text[end..])
}

#[cfg(test)]
mod tests {
    use super::*;

    fn rules(query: &str) -> Vec<Result<RuleSpec, String>> {
        freshrss_read_rules("https://a.example/feed", "A", &[query.to_owned()])
            .into_iter()
            .map(|rule| rule.spec)
            .collect()
    }

    fn query_of(query: &str) -> String {
        let spec = rules(query).remove(0).unwrap();
        assert_eq!(spec.actions, ["read"]);
        spec.query.unwrap_or_default()
    }

    #[test]
    fn fields_words_phrases_and_exclusions_map_to_the_query() {
        for (freshrss, tidings) in [
            ("intitle:sponsored", "title:sponsored"),
            ("\"daily digest\" -inurl:keep", "\"daily digest\" -url:keep"),
            (
                "intitle:\"Week in review\" #\"long read\"",
                "title:\"Week in review\" tag:\"long read\"",
            ),
            ("#long+read !author:bot", "tag:\"long read\" -author:bot"),
            ("rust -'go lang' &amp;", "rust -\"go lang\" &"),
            ("intitle:'a b'", "title:\"a b\""),
        ] {
            assert_eq!(query_of(freshrss), tidings, "{freshrss}");
        }
    }

    #[test]
    fn or_makes_one_rule_per_side_and_regular_expressions_are_conditions() {
        let specs = rules("author:bot OR #ads");
        assert_eq!(specs.len(), 2);
        assert_eq!(
            specs[0].as_ref().unwrap().query.as_deref(),
            Some("author:bot")
        );
        assert_eq!(specs[1].as_ref().unwrap().query.as_deref(), Some("tag:ads"));
        let spec = rules("/(?i)^deal/").remove(0).unwrap();
        let regex = spec.regex.unwrap();
        assert_eq!(
            (regex.field.as_str(), regex.pattern.as_str()),
            ("title,content", "(?i)^deal")
        );
        assert_eq!(spec.query, None);
        let spec = rules("inurl:/promo\\/x/i news").remove(0).unwrap();
        let regex = spec.regex.unwrap();
        assert_eq!(
            (regex.field.as_str(), regex.pattern.as_str()),
            ("url", "(?i)promo/x")
        );
        assert_eq!(spec.query.as_deref(), Some("news"));
    }

    #[test]
    fn what_does_not_map_says_why() {
        for (query, why) in [
            ("date:P1W", "date range"),
            ("-intitle:/^x/ y", "exclude by a regular expression"),
            ("/a/ /b/", "one regular expression"),
            ("(a OR b) c", "parentheses"),
            ("f:12", "feed ids"),
            ("label:work", "labels"),
        ] {
            let error = rules(query).remove(0).unwrap_err();
            assert!(error.contains(why), "{query}: {error}");
        }
    }
}
