//! A rule's conditions: the search language with fields, a regular expression on a field, an
//! age. Every condition of a rule must hold.
//!
//! The query is tidings' search language (words, `"phrases"`, `-excluded`; every script through
//! the search tokenizer, so `東京` in a rule catches what a search for it finds), where a term
//! may name a field: `title:`, `content:` and `author:` take words or a phrase matched in that
//! field alone; `url:` a piece of the link; `tag:` one of the item's tags or categories,
//! `category:` one of the feed's categories; `enclosure:` the start of an enclosure's type
//! (`audio`, `video/mp4`, or `any`); `popularity:` a count compared (`>=100`, `<5`; a bare
//! number means at least). A `-` before a field term excludes what it names.

use regex::{Regex, RegexBuilder};
use tidings_text::{SearchQuery, SearchTerm, strip_negation};

use crate::error::RuleError;
use crate::item::{PreparedItem, bounded};

/// The longest query of a rule, in characters.
pub const MAX_RULE_QUERY_CHARS: usize = 1_000;
/// The most terms (words, phrases and field terms) of a rule's query.
pub const MAX_RULE_TERMS: usize = 30;
/// The longest regular expression, in characters.
pub const MAX_PATTERN_CHARS: usize = 1_000;
/// The most memory a compiled regular expression may take: a pattern beyond it is refused
/// when the rule is saved, never at match time.
pub const MAX_REGEX_BYTES: usize = 512 * 1024;

/// A field a regular expression looks at.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum TextField {
    /// The title.
    Title,
    /// The text.
    Content,
    /// The author.
    Author,
    /// The link.
    Url,
    /// The item's tags and the feed's categories for it: the regular expression holds when it
    /// matches one of them.
    Tag,
}

impl TextField {
    /// Reads a field's name as the API writes it.
    pub fn parse(name: &str) -> Result<TextField, RuleError> {
        match name.trim().to_ascii_lowercase().as_str() {
            "title" => Ok(TextField::Title),
            "content" => Ok(TextField::Content),
            "author" => Ok(TextField::Author),
            "url" => Ok(TextField::Url),
            "tag" => Ok(TextField::Tag),
            _ => Err(RuleError::BadRegexField(name.to_string())),
        }
    }

    /// Reads a regular expression's fields as the API writes them: one name, or several
    /// joined by commas (`url,title,author,tag`), any of which the pattern may match.
    pub fn parse_list(names: &str) -> Result<Vec<TextField>, RuleError> {
        let mut fields = Vec::new();
        for name in names.split(',') {
            let field = TextField::parse(name)?;
            if !fields.contains(&field) {
                fields.push(field);
            }
        }
        Ok(fields)
    }

    /// The field's name as the API writes it.
    pub fn name(self) -> &'static str {
        match self {
            TextField::Title => "title",
            TextField::Content => "content",
            TextField::Author => "author",
            TextField::Url => "url",
            TextField::Tag => "tag",
        }
    }

    /// Whether `regex` matches the field's (bounded) text, or for tags one of them.
    fn is_match(self, regex: &Regex, item: &PreparedItem<'_>) -> bool {
        let text = match self {
            TextField::Title => item.item.title,
            TextField::Content => item.item.content,
            TextField::Author => item.item.author,
            TextField::Url => item.item.url,
            TextField::Tag => {
                return item
                    .item
                    .tags
                    .iter()
                    .chain(item.item.categories)
                    .any(|tag| regex.is_match(bounded(tag)));
            }
        };
        regex.is_match(bounded(text))
    }
}

/// One condition of a query.
#[derive(Debug, Clone)]
enum Test {
    /// A word or phrase of the title and text together, as a search finds it.
    Words(SearchTerm),
    /// A word or phrase of one field.
    FieldWords(TextField, SearchTerm),
    /// A piece of the link (lowercased).
    UrlContains(String),
    /// One of the item's tags or categories (normalized).
    Tag(String),
    /// One of the feed's categories (normalized).
    Category(String),
    /// The start of an enclosure's type (lowercased); empty: any enclosure.
    Enclosure(String),
    /// The popularity count compared: at least (`true`) or below (`false`) the number.
    Popularity(bool, i64),
}

/// A condition and whether it is excluded (`-`).
#[derive(Debug, Clone)]
struct Term {
    test: Test,
    negated: bool,
}

/// A rule's compiled query.
#[derive(Debug, Clone)]
pub struct Query {
    terms: Vec<Term>,
}

impl Query {
    /// Compiles a query; the error says what was wrong.
    pub fn parse(text: &str) -> Result<Query, RuleError> {
        let chars = text.chars().count();
        if chars > MAX_RULE_QUERY_CHARS {
            return Err(RuleError::BadQuery(format!(
                "it is {chars} characters long; at most {MAX_RULE_QUERY_CHARS} are allowed"
            )));
        }
        let raw = split(text);
        if raw.len() > MAX_RULE_TERMS {
            return Err(RuleError::BadQuery(format!(
                "it has {} terms; at most {MAX_RULE_TERMS} are allowed",
                raw.len()
            )));
        }
        let mut terms = Vec::with_capacity(raw.len());
        for raw in raw {
            if let Some(test) = compile_term(&raw)? {
                terms.push(Term {
                    test,
                    negated: raw.negated,
                });
            }
        }
        if !terms.iter().any(|t| !t.negated) {
            return Err(RuleError::BadQuery(
                "it has nothing to look for (only excluded terms, or no letters or digits)"
                    .to_string(),
            ));
        }
        Ok(Query { terms })
    }

    /// Whether the item matches: every term holds, excluded ones do not.
    pub fn matches(&self, item: &PreparedItem<'_>) -> bool {
        // Set lookups first: a word the item lacks settles the query before any scan (most
        // items lack most of a rule's words, and an item meets hundreds of rules at ingest).
        let lacks_a_word = self.terms.iter().any(|t| {
            !t.negated
                && matches!(&t.test, Test::Words(term) | Test::FieldWords(
                    TextField::Title | TextField::Content,
                    term,
                ) if !term.prefix && !term.tokens.iter().all(|w| item.may_hold(w)))
        });
        !lacks_a_word && self.terms.iter().all(|t| t.test.holds(item) != t.negated)
    }
}

impl Test {
    fn holds(&self, item: &PreparedItem<'_>) -> bool {
        match self {
            Test::Words(term) => {
                // Most items lack most words: a set lookup rules them out without a scan.
                let present = term.prefix || term.tokens.iter().all(|t| item.may_hold(t));
                if present && !term.prefix && term.tokens.len() == 1 {
                    // One whole token present: no order to check (the set holds 64-bit
                    // hashes: a false match is vanishingly rare).
                    return true;
                }
                // In the title or in the text (a phrase does not run from one into the other).
                present
                    && (term.occurrences(&item.title_words) > 0
                        || term.occurrences(&item.content_words) > 0)
            }
            Test::FieldWords(field, term) => {
                let tokens: &[String] = match field {
                    TextField::Title => &item.title_words,
                    TextField::Content => &item.content_words,
                    TextField::Author => &item.author_words,
                    TextField::Url => return item.url_lower.contains(&term.tokens.join(" ")),
                    // Words name no tag field (`tag:` is a test of its own).
                    TextField::Tag => return false,
                };
                term.occurrences(tokens) > 0
            }
            Test::UrlContains(piece) => item.url_lower.contains(piece.as_str()),
            Test::Tag(name) => item
                .item
                .tags
                .iter()
                .chain(item.item.categories)
                .any(|t| normalize_name(t) == *name),
            Test::Category(name) => item
                .item
                .categories
                .iter()
                .any(|t| normalize_name(t) == *name),
            Test::Enclosure(prefix) => item
                .item
                .enclosure_types
                .iter()
                .any(|t| t.to_ascii_lowercase().starts_with(prefix.as_str())),
            Test::Popularity(at_least, n) => match item.item.popularity {
                Some(count) if *at_least => count >= *n,
                Some(count) => count < *n,
                None => false,
            },
        }
    }
}

/// A term as written: excluded or not, its field, its value (quotes removed).
#[derive(Debug, PartialEq)]
struct RawTerm {
    negated: bool,
    field: Option<String>,
    value: String,
    quoted: bool,
}

/// The fields a query term may name.
const FIELDS: [&str; 8] = [
    "title",
    "content",
    "author",
    "url",
    "tag",
    "category",
    "enclosure",
    "popularity",
];

/// Splits a query at whitespace, keeping `"quoted phrases"` (an unclosed quote runs to the
/// end) and `field:value` / `field:"quoted value"` whole, each with its `-`.
fn split(text: &str) -> Vec<RawTerm> {
    let mut terms = Vec::new();
    let mut rest = text;
    loop {
        rest = rest.trim_start();
        if rest.is_empty() {
            break;
        }
        let negated;
        (negated, rest) = strip_negation(rest);
        let mut field = None;
        if let Some((name, after)) = rest.split_once(':') {
            let name_lower = name.to_ascii_lowercase();
            if FIELDS.contains(&name_lower.as_str()) && !after.starts_with(char::is_whitespace) {
                field = Some(name_lower);
                rest = after;
            }
        }
        let (value, quoted) = if let Some(inner) = rest.strip_prefix('"') {
            let end = inner.find('"').unwrap_or(inner.len());
            let value = &inner[..end];
            rest = inner.get(end + 1..).unwrap_or("");
            (value, true)
        } else {
            let end = rest.find(char::is_whitespace).unwrap_or(rest.len());
            let value = &rest[..end];
            rest = &rest[end..];
            (value, false)
        };
        terms.push(RawTerm {
            negated,
            field,
            value: value.to_string(),
            quoted,
        });
    }
    terms
}

/// Compiles one term; `None` for a word with no letter or digit (ignored, as a search does).
fn compile_term(raw: &RawTerm) -> Result<Option<Test>, RuleError> {
    let bad = |why: &str| RuleError::BadFieldValue {
        term: format!("{}:{}", raw.field.as_deref().unwrap_or(""), raw.value),
        why: why.to_string(),
    };
    let Some(field) = raw.field.as_deref() else {
        return Ok(words(&raw.value, raw.quoted)?.map(Test::Words));
    };
    let value = raw.value.trim();
    if value.is_empty() {
        return Err(bad("the field has no value: write it after the colon"));
    }
    let test = match field {
        "title" | "content" | "author" => {
            let field = TextField::parse(field)?;
            match words(value, raw.quoted)? {
                Some(term) => Test::FieldWords(field, term),
                None => return Err(bad("the value has no letter or digit to look for")),
            }
        }
        "url" => Test::UrlContains(value.to_lowercase()),
        "tag" => Test::Tag(normalize_name(value)),
        "category" => Test::Category(normalize_name(value)),
        "enclosure" if value.eq_ignore_ascii_case("any") => Test::Enclosure(String::new()),
        "enclosure" => Test::Enclosure(value.to_ascii_lowercase()),
        "popularity" => {
            let (at_least, number) = if let Some(n) = value.strip_prefix(">=") {
                (true, n.parse::<i64>().ok())
            } else if let Some(n) = value.strip_prefix('>') {
                (true, n.parse::<i64>().ok().and_then(|n| n.checked_add(1)))
            } else if let Some(n) = value.strip_prefix("<=") {
                (false, n.parse::<i64>().ok().and_then(|n| n.checked_add(1)))
            } else if let Some(n) = value.strip_prefix('<') {
                (false, n.parse::<i64>().ok())
            } else {
                (true, value.parse::<i64>().ok())
            };
            match number {
                Some(n) if n >= 0 => Test::Popularity(at_least, n),
                _ => {
                    return Err(bad(
                        "write a count compared, as popularity:>=100 or popularity:<5",
                    ));
                }
            }
        }
        _ => return Err(RuleError::UnknownField(field.to_string())),
    };
    Ok(Some(test))
}

/// A word or phrase of the search language, tokenized as the index is; `None` when it has no
/// letter or digit.
fn words(value: &str, quoted: bool) -> Result<Option<SearchTerm>, RuleError> {
    let text = if quoted {
        format!("\"{value}\"")
    } else {
        value.to_string()
    };
    match SearchQuery::parse(&text) {
        Ok(query) => Ok(query.terms.into_iter().next()),
        Err(tidings_text::QueryError::NothingToFind) => Ok(None),
        Err(error) => Err(RuleError::BadQuery(error.to_string())),
    }
}

/// A tag's or category's name as compared: trimmed and lowercased (tags are stored folded).
fn normalize_name(name: &str) -> String {
    name.trim().to_lowercase()
}

/// A regular expression on one field, or on several (it holds when it matches any of them).
#[derive(Debug, Clone)]
pub struct FieldRegex {
    fields: Vec<TextField>,
    regex: Regex,
}

impl FieldRegex {
    /// Compiles `pattern` for `field`, refusing one too long or too large to compile small.
    /// The engine never backtracks, so matching takes time linear in the (bounded) text.
    pub fn new(field: TextField, pattern: &str) -> Result<FieldRegex, RuleError> {
        FieldRegex::on_any(vec![field], pattern)
    }

    /// Compiles `pattern` for several fields, any of which it may match (Miniflux's block and
    /// keep lists look at the link, the title, the author and the tags at once).
    pub fn on_any(fields: Vec<TextField>, pattern: &str) -> Result<FieldRegex, RuleError> {
        if fields.is_empty() {
            return Err(RuleError::BadRegexField(String::new()));
        }
        let chars = pattern.chars().count();
        if chars == 0 {
            return Err(RuleError::BadRegex("the pattern is empty".to_string()));
        }
        if chars > MAX_PATTERN_CHARS {
            return Err(RuleError::BadRegex(format!(
                "the pattern is {chars} characters long; at most {MAX_PATTERN_CHARS} are allowed"
            )));
        }
        let regex = RegexBuilder::new(pattern)
            .size_limit(MAX_REGEX_BYTES)
            .dfa_size_limit(MAX_REGEX_BYTES)
            .build()
            .map_err(|error| RuleError::BadRegex(one_line(&error.to_string())))?;
        Ok(FieldRegex { fields, regex })
    }

    /// The fields it looks at.
    pub fn fields(&self) -> &[TextField] {
        &self.fields
    }

    /// The pattern as written.
    pub fn pattern(&self) -> &str {
        self.regex.as_str()
    }

    /// Whether one of the fields' (bounded) texts matches.
    pub fn matches(&self, item: &PreparedItem<'_>) -> bool {
        self.fields.iter().any(|f| f.is_match(&self.regex, item))
    }
}

/// The regex crate's multi-line error message as one line.
fn one_line(message: &str) -> String {
    message
        .lines()
        .map(str::trim)
        .filter(|l| !l.is_empty())
        .collect::<Vec<_>>()
        .join(" ")
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::item::RuleItem;

    fn item<'a>(title: &'a str, content: &'a str) -> PreparedItem<'a> {
        PreparedItem::new(RuleItem {
            title,
            content,
            author: "Ada Lovelace",
            url: "https://Example.com/Sports/2026/final",
            ..RuleItem::default()
        })
    }

    #[test]
    fn words_phrases_and_exclusions_match_as_a_search_does() {
        let it = item("Rust 2.0 released", "The compiler is faster. 東京都の天気");
        for (query, expected) in [
            ("rust", true),
            ("RUST released", true),
            ("\"rust 2 0\"", true),
            ("\"released rust\"", false),
            ("rust -faster", false),
            ("python", false),
            ("東京", true),
            ("天気", true),
            ("東", true),
            ("大阪", false),
            ("ｒｕｓｔ", true),
        ] {
            let q = Query::parse(query).unwrap();
            assert_eq!(q.matches(&it), expected, "{query}");
        }
    }

    #[test]
    fn fields_look_at_their_field_alone() {
        let it = item("Match report", "a football final");
        for (query, expected) in [
            ("title:report", true),
            ("title:football", false),
            ("content:football", true),
            ("author:lovelace", true),
            ("author:\"ada lovelace\"", true),
            ("url:/sports/", true),
            ("-url:sports report", false),
            ("report -title:football", true),
        ] {
            assert_eq!(
                Query::parse(query).unwrap().matches(&it),
                expected,
                "{query}"
            );
        }
    }

    #[test]
    fn tags_categories_enclosures_and_popularity() {
        let categories = vec!["Sports".to_string()];
        let tags = vec!["world cup".to_string()];
        let types = vec!["audio/mpeg".to_string()];
        let it = PreparedItem::new(RuleItem {
            title: "x",
            categories: &categories,
            tags: &tags,
            enclosure_types: &types,
            popularity: Some(120),
            ..RuleItem::default()
        });
        for (query, expected) in [
            ("tag:sports", true),
            ("tag:\"World Cup\"", true),
            ("category:sports", true),
            ("category:\"world cup\"", false),
            ("enclosure:audio", true),
            ("enclosure:video", false),
            ("enclosure:any", true),
            ("popularity:>=120", true),
            ("popularity:>120", false),
            ("popularity:<200", true),
            ("popularity:100", true),
        ] {
            assert_eq!(
                Query::parse(query).unwrap().matches(&it),
                expected,
                "{query}"
            );
        }
        let unknown = PreparedItem::new(RuleItem::default());
        assert!(!Query::parse("popularity:<5").unwrap().matches(&unknown));
        assert!(!Query::parse("enclosure:any").unwrap().matches(&unknown));
    }

    #[test]
    fn bad_queries_say_what_was_wrong() {
        for query in [
            "-only",
            "title:",
            "popularity:many",
            "title:!!",
            &"x ".repeat(31),
            &"x".repeat(1001),
        ] {
            assert!(Query::parse(query).is_err(), "{query}");
        }
        // A colon after a name the rules do not know is an ordinary word.
        assert!(
            Query::parse("re:invent")
                .unwrap()
                .matches(&item("re:Invent keynote", ""))
        );
    }

    #[test]
    fn a_regular_expression_cannot_stall() {
        // Catastrophic for a backtracking engine; linear here.
        let regex = FieldRegex::new(TextField::Content, "(a+)+$").unwrap();
        let text = format!("{}!", "a".repeat(100_000));
        let it = item("", &text);
        let started = std::time::Instant::now();
        assert!(!regex.matches(&it));
        assert!(started.elapsed() < std::time::Duration::from_secs(2));
        assert!(FieldRegex::new(TextField::Title, "(").is_err());
        assert!(FieldRegex::new(TextField::Title, "").is_err());
        // A pattern whose compiled form is huge is refused when saved.
        assert!(FieldRegex::new(TextField::Title, r"\w{1000}\w{1000}\w{1000}").is_err());
        assert!(TextField::parse("body").is_err());
    }

    #[test]
    fn a_regular_expression_on_several_fields_holds_when_one_matches() {
        let categories = vec!["Sponsored".to_string()];
        let it = PreparedItem::new(RuleItem {
            title: "Weekly deals",
            author: "Ada Lovelace",
            url: "https://example.com/news/1",
            categories: &categories,
            ..RuleItem::default()
        });
        let fields = TextField::parse_list("url, title,author,tag,url").unwrap();
        assert_eq!(fields.len(), 4);
        for (pattern, expected) in [
            ("^Sponsored$", true),
            ("(?i)deals", true),
            ("/news/", true),
            ("Lovelace", true),
            ("nowhere", false),
        ] {
            let regex = FieldRegex::on_any(fields.clone(), pattern).unwrap();
            assert_eq!(regex.matches(&it), expected, "{pattern}");
        }
        // One field alone sees only its own text.
        let tag = FieldRegex::new(TextField::Tag, "^Sponsored$").unwrap();
        assert!(tag.matches(&it));
        assert!(
            !FieldRegex::new(TextField::Title, "^Sponsored$")
                .unwrap()
                .matches(&it)
        );
        assert!(TextField::parse_list("title,body").is_err());
        assert!(TextField::parse_list("").is_err());
    }
}
